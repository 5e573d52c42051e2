// Maximum errors of the special functions in ulp, against SciPy's float64 values on dense grids
// (tests/parity/accuracy/special.txt, written by tests/parity/cases_special.py). Each function is
// evaluated in float32 and float64 on the same float32-representable points; the error of a
// value is |tessel - reference| in units of the last place of the reference in that dtype.
// The test prints the table of docs/special.md and fails when a function gets worse than the
// bound documented there.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tessel/ops.h"
#include "tessel/scipy_special.h"
#include "tessel/special.h"

namespace ts = tessel;
namespace sp = tessel::scipy::special;

namespace {

struct Grid {
  std::vector<std::vector<double>> inputs;
  std::vector<double> ref;
};

/// The grids of tests/parity/accuracy/<file> (special.txt, special_extra.txt), added to `grids`.
void read_grids(const char* file, std::map<std::string, Grid>& grids) {
  std::ifstream in(std::filesystem::path(TESSEL_SOURCE_DIR) / "tests/parity/accuracy" / file);
  std::string line;
  auto parse = [](const std::string& l) {
    std::vector<double> v;
    std::istringstream ss(l);
    std::string t;
    while (ss >> t) v.push_back(t == "nan" ? NAN : t == "inf" ? INFINITY : t == "-inf" ? -INFINITY : std::strtod(t.c_str(), nullptr));
    return v;
  };
  while (std::getline(in, line)) {
    if (line.rfind("acc ", 0) != 0) continue;
    std::istringstream ss(line.substr(4));
    std::string name;
    int n_in = 0;
    ss >> name >> n_in;
    Grid g;
    for (int i = 0; i < n_in; ++i) {
      std::getline(in, line);
      g.inputs.push_back(parse(line));
    }
    std::getline(in, line);
    g.ref = parse(line);
    grids[name] = std::move(g);
  }
}
std::map<std::string, Grid> read_grids() {
  std::map<std::string, Grid> grids;
  read_grids("special.txt", grids);
  read_grids("special_extra.txt", grids);
  return grids;
}

using Fn = std::function<ts::Array(const std::vector<ts::Array>&)>;

/// The functions of the table, by grid name.
const std::vector<std::pair<std::string, Fn>>& functions() {
  static const std::vector<std::pair<std::string, Fn>> fns = {
      {"lgamma", [](auto& x) { return ts::lgamma(x[0]); }},
      {"digamma", [](auto& x) { return ts::digamma(x[0]); }},
      {"gamma", [](auto& x) { return sp::gamma(x[0]); }},
      {"polygamma_1", [](auto& x) { return ts::polygamma(x[0], x[1]); }},
      {"polygamma_2", [](auto& x) { return ts::polygamma(x[0], x[1]); }},
      {"polygamma_3", [](auto& x) { return ts::polygamma(x[0], x[1]); }},
      {"zeta", [](auto& x) { return ts::zeta(x[0], x[1]); }},
      {"igamma", [](auto& x) { return ts::igamma(x[0], x[1]); }},
      {"igammac", [](auto& x) { return ts::igammac(x[0], x[1]); }},
      {"betainc", [](auto& x) { return ts::betainc(x[0], x[1], x[2]); }},
      {"bessel_i0e", [](auto& x) { return ts::bessel_i0e(x[0]); }},
      {"bessel_i1e", [](auto& x) { return ts::bessel_i1e(x[0]); }},
      {"i0", [](auto& x) { return sp::i0(x[0]); }},
      {"i1", [](auto& x) { return sp::i1(x[0]); }},
      {"erfcx", [](auto& x) { return sp::erfcx(x[0]); }},
      {"ndtr", [](auto& x) { return sp::ndtr(x[0]); }},
      {"ndtri", [](auto& x) { return sp::ndtri(x[0]); }},
      {"log_ndtr", [](auto& x) { return sp::log_ndtr(x[0]); }},
      {"expi", [](auto& x) { return sp::expi(x[0]); }},
      {"exp1", [](auto& x) { return sp::exp1(x[0]); }},
      {"expn_2", [](auto& x) { return sp::expn(x[0], x[1]); }},
      {"expn_5", [](auto& x) { return sp::expn(x[0], x[1]); }},
      {"spence", [](auto& x) { return sp::spence(x[0]); }},
      {"erfinv", [](auto& x) { return sp::erfinv(x[0]); }},
      {"dawsn", [](auto& x) { return sp::dawsn(x[0]); }},
      {"sici_si", [](auto& x) { return sp::sici(x[0]).first; }},
      {"sici_ci", [](auto& x) { return sp::sici(x[0]).second; }},
      {"fresnel_s", [](auto& x) { return sp::fresnel(x[0]).first; }},
      {"fresnel_c", [](auto& x) { return sp::fresnel(x[0]).second; }},
      {"owens_t", [](auto& x) { return sp::owens_t(x[0], x[1]); }},
      {"hyp1f1", [](auto& x) { return sp::hyp1f1(x[0], x[1], x[2]); }},
      {"hyp2f1", [](auto& x) { return sp::hyp2f1(x[0], x[1], x[2], x[3]); }},
      {"bessel_jn_0", [](auto& x) { return sp::bessel_jn(x[0], 0).index({int64_t(0)}); }},
      {"bessel_jn_1", [](auto& x) { return sp::bessel_jn(x[0], 1).index({int64_t(1)}); }},
      {"bessel_jn_3", [](auto& x) { return sp::bessel_jn(x[0], 3).index({int64_t(3)}); }},
  };
  return fns;
}

/// The documented bounds (docs/special.md): float32 and float64 maximum ulp, about 1.5x the
/// measured maxima, so a regression fails without flakiness across CPUs (libmvec forms).
const std::map<std::string, std::pair<double, double>> kBounds = {
    {"lgamma", {4000, 1000}},    {"digamma", {500, 500}},    {"gamma", {250, 300}},       {"polygamma_1", {20, 20}},
    {"polygamma_2", {20, 20}},   {"polygamma_3", {30, 20}},  {"zeta", {10, 4}},           {"igamma", {700, 2500}},
    {"igammac", {3e5, 700}},     {"betainc", {900, 2000}},   {"bessel_i0e", {8, 4}},      {"bessel_i1e", {16, 4}},
    {"i0", {8, 4}},              {"i1", {16, 6}},            {"erfcx", {100, 6}},         {"ndtr", {200, 700}},
    {"ndtri", {6, 6}},           {"log_ndtr", {3e5, 3e14}},  {"expi", {25, 300}},         {"exp1", {20, 60}},
    {"expn_2", {25, 100}},       {"expn_5", {30, 60}},       {"spence", {10, 4}},         {"erfinv", {10, 30}},
    {"dawsn", {6, 20}},          {"sici_si", {4, 4}},        {"sici_ci", {300, 30}},      {"fresnel_s", {6, 4}},
    {"fresnel_c", {10, 4}},      {"owens_t", {30, 250}},     {"hyp1f1", {7e8, 2e9}},      {"hyp2f1", {150, 60}},
    {"bessel_jn_0", {5e3, 5e7}}, {"bessel_jn_1", {300, 7e7}}, {"bessel_jn_3", {800, 7e7}},
};

/// The spacing of T's floats at |v| (the smallest normal's spacing below it).
template <class T> double ulp_of(double v) {
  const T t = T(std::abs(v));
  const T m = std::max(t, std::numeric_limits<T>::min());
  return double(std::nextafter(m, std::numeric_limits<T>::infinity())) - double(m);
}

struct Error {
  double max_ulp = 0, at = NAN;
  int mismatched_specials = 0;  // NaN / inf disagreements
};

template <class T> Error measure(const Fn& f, const Grid& g, ts::DType dt) {
  std::vector<ts::Array> xs;
  for (const auto& v : g.inputs) xs.push_back(ts::astype(ts::Array(v, ts::Shape{int64_t(v.size())}), dt));
  std::vector<double> got = ts::astype(f(xs), ts::DType::float64).to_vector<double>();
  Error e;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = g.ref[i];
    // References outside T's range are compared as T would round them.
    const double rt = double(T(r));
    if (!std::isfinite(rt) || !std::isfinite(got[i])) {
      if (!(std::isnan(rt) && std::isnan(got[i])) && rt != got[i]) ++e.mismatched_specials;
      continue;
    }
    const double err = std::abs(got[i] - r) / ulp_of<T>(r);
    if (err > e.max_ulp) e.max_ulp = err, e.at = g.inputs.back()[i];
  }
  return e;
}

TEST(SpecialAccuracy, MaximumUlpErrorsAgainstScipy) {
  const auto grids = read_grids();
  ASSERT_FALSE(grids.empty()) << "no grids in tests/parity/accuracy/special.txt";
  std::cout << "| function | points | float32 max ulp (at x) | float64 max ulp (at x) |\n|---|---|---|---|\n";
  for (const auto& [name, f] : functions()) {
    auto it = grids.find(name);
    ASSERT_NE(it, grids.end()) << name;
    const Error e32 = measure<float>(f, it->second, ts::DType::float32);
    const Error e64 = measure<double>(f, it->second, ts::DType::float64);
    std::cout << "| " << name << " | " << it->second.ref.size() << " | " << std::setprecision(3) << e32.max_ulp << " ("
              << std::setprecision(6) << e32.at << ") | " << std::setprecision(3) << e64.max_ulp << " ("
              << std::setprecision(6) << e64.at << ") |";
    if (e32.mismatched_specials || e64.mismatched_specials)
      std::cout << " nan/inf mismatches: " << e32.mismatched_specials << " / " << e64.mismatched_specials;
    std::cout << "\n";
    const auto [bound32, bound64] = kBounds.at(name);
    EXPECT_LE(e32.max_ulp, bound32) << name << " float32";
    EXPECT_LE(e64.max_ulp, bound64) << name << " float64";
    // expi overflows in float32 just below 88.7 < x < 93, where e^x does but Ei(x) does not.
    // bessel_jn's backward recurrence from order 50 overflows float32 for z below about 3 (NaN,
    // as in JAX).
    const int allowed32 = name == "expi" ? 1 : name.rfind("bessel_jn", 0) == 0 ? 50 : 0;
    EXPECT_LE(e32.mismatched_specials, allowed32) << name << " float32 NaN/inf";
    EXPECT_EQ(e64.mismatched_specials, 0) << name << " float64 NaN/inf";
  }
}

}  // namespace
