// tessel against JAX (docs/parity.md): every case of tests/parity/data/*.txt, written by
// tests/parity/generate.py with JAX, runs through its entry of the registry (parity.h,
// cases_*.cpp) eagerly, under jit, under vmap (a batch of two copies), and through jvp and
// vjp when the case records them (eagerly only for the functions marked eager_only; vjp
// alone for those marked reverse_mode_only); the results must match JAX's values, dtypes and shapes
// (integers, booleans and random bits exactly, floats within the case's tolerance). One test
// per function key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/config.h"
#include "parity/parity.h"
#include "tessel/jit.h"
#include "tessel/transforms.h"

namespace ts = tessel;
using namespace tessel;
using namespace tessel::parity;

namespace tessel::parity {

// ---- the registry and parameters ----

namespace {
std::map<std::string, Fn>& mutable_registry() {
  static std::map<std::string, Fn> r;
  return r;
}
}  // namespace

void reg(const std::string& func, Fn fn) {
  if (!mutable_registry().emplace(func, std::move(fn)).second)
    throw std::logic_error("parity: two registry entries for '" + func + "'");
}
const std::map<std::string, Fn>& registry() { return mutable_registry(); }

namespace {
using Reasons = std::map<std::string, std::string>;
Reasons& known_differences() {
  static Reasons m;
  return m;
}
Reasons& eager_only_functions() {
  static Reasons m;
  return m;
}
Reasons& reverse_mode_only_functions() {
  static Reasons m;
  return m;
}
const std::string* reason_of(const Reasons& m, const std::string& func) {
  auto it = m.find(func);
  return it == m.end() ? nullptr : &it->second;
}
}  // namespace
void known_difference(const std::string& func, const std::string& reason) { known_differences()[func] = reason; }
const std::string* known_difference_reason(const std::string& func) { return reason_of(known_differences(), func); }
void eager_only(const std::string& func, const std::string& reason) { eager_only_functions()[func] = reason; }
const std::string* eager_only_reason(const std::string& func) { return reason_of(eager_only_functions(), func); }
void reverse_mode_only(const std::string& func, const std::string& reason) { reverse_mode_only_functions()[func] = reason; }
const std::string* reverse_mode_only_reason(const std::string& func) {
  return reason_of(reverse_mode_only_functions(), func);
}

void Params::set(const std::string& key, std::string type, std::string value) {
  values_[key] = {std::move(type), std::move(value)};
}
const std::pair<std::string, std::string>& Params::get(const std::string& key, const char* type) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::out_of_range("parity: the case has no parameter '" + key + "'");
  if (type && it->second.first != type)
    throw std::invalid_argument("parity: parameter '" + key + "' is " + it->second.first + ", read as " + type);
  return it->second;
}
bool Params::is_none(const std::string& key) const { return get(key, nullptr).first == "none"; }
int64_t Params::i(const std::string& key) const { return std::stoll(get(key, "int").second); }
std::optional<int64_t> Params::opt_i(const std::string& key) const {
  if (is_none(key)) return std::nullopt;
  return i(key);
}
double Params::f(const std::string& key) const {
  const auto& [type, v] = get(key, nullptr);
  if (type == "int") return double(std::stoll(v));
  return std::strtod(get(key, "float").second.c_str(), nullptr);
}
bool Params::flag(const std::string& key) const { return get(key, "bool").second == "1"; }
std::string Params::s(const std::string& key) const { return get(key, "str").second; }

namespace {
std::vector<int64_t> parse_ints(const std::string& v, char sep = ',') {
  std::vector<int64_t> out;
  if (v == "-") return out;
  std::stringstream ss(v);
  for (std::string tok; std::getline(ss, tok, sep);) out.push_back(std::stoll(tok));
  return out;
}
}  // namespace

std::vector<int64_t> Params::ints(const std::string& key) const { return parse_ints(get(key, "ints").second); }
std::optional<std::vector<int64_t>> Params::opt_ints(const std::string& key) const {
  if (is_none(key)) return std::nullopt;
  return ints(key);
}
std::vector<double> Params::floats(const std::string& key) const {
  std::vector<double> out;
  const std::string& v = get(key, "floats").second;
  if (v == "-") return out;
  std::stringstream ss(v);
  for (std::string tok; std::getline(ss, tok, ',');) out.push_back(std::strtod(tok.c_str(), nullptr));
  return out;
}
std::vector<std::vector<int64_t>> Params::intss(const std::string& key) const {
  std::vector<std::vector<int64_t>> out;
  const std::string& v = get(key, "intss").second;
  if (v == "-") return out;
  std::stringstream ss(v);
  for (std::string tok; std::getline(ss, tok, ';');) out.push_back(parse_ints(tok));
  return out;
}

}  // namespace tessel::parity

namespace {

// ---- the data files ----

/// One array of a data line: `<tag> <dtype> <shape> <values...>` (float0: a JAX zero
/// cotangent of an integer output, read as an empty Array).
Array parse_array(std::istringstream& in, const std::string& where) {
  std::string dtype_name, shape_text;
  in >> dtype_name >> shape_text;
  if (dtype_name == "float0") return Array();
  Shape shape = shape_text == "-" ? Shape{} : parse_ints(shape_text);
  DType dt = dtype_from_name(dtype_name);
  const size_t n = size_t(shape_size(shape));
  std::vector<std::string> tok;
  const size_t per = ts::is_complex(dt) ? 2 : 1;
  tok.reserve(n * per);
  for (std::string t; in >> t;) tok.push_back(t);
  if (tok.size() != n * per)
    throw std::runtime_error(where + ": " + std::to_string(tok.size()) + " values for " + dtype_name + " " +
                             shape_text);
  auto real = [&](size_t k) { return std::strtod(tok[k].c_str(), nullptr); };
  switch (dt) {
    case DType::float32: {
      std::vector<float> v(n);
      for (size_t k = 0; k < n; ++k) v[k] = float(real(k));
      return Array::from_bytes(v.data(), shape, dt);
    }
    case DType::float64: {
      std::vector<double> v(n);
      for (size_t k = 0; k < n; ++k) v[k] = real(k);
      return Array::from_bytes(v.data(), shape, dt);
    }
    case DType::complex64: {
      std::vector<ts::complex64_t> v(n);
      for (size_t k = 0; k < n; ++k) v[k] = {float(real(2 * k)), float(real(2 * k + 1))};
      return Array::from_bytes(v.data(), shape, dt);
    }
    case DType::complex128: {
      std::vector<ts::complex128_t> v(n);
      for (size_t k = 0; k < n; ++k) v[k] = {real(2 * k), real(2 * k + 1)};
      return Array::from_bytes(v.data(), shape, dt);
    }
    default: {
      const bool half = dt == DType::float16 || dt == DType::bfloat16;
      if (!half && !ts::is_integer(dt) && !ts::is_bool(dt))
        throw std::runtime_error(where + ": the parity data format has no " + dtype_name + " arrays yet");
      // Half floats (their values are exact in the text), integers and booleans: through a
      // byte buffer of the dtype's width.
      std::vector<uint8_t> bytes(n * ts::itemsize(dt));
      for (size_t k = 0; k < n; ++k) {
        Scalar s = half                       ? Scalar(real(k), dt)
                   : ts::is_unsigned_int(dt) ? Scalar(uint64_t(std::stoull(tok[k])), dt)
                                             : Scalar(int64_t(std::stoll(tok[k])), dt);
        s.store(bytes.data() + k * ts::itemsize(dt));
      }
      return Array::from_bytes(bytes.data(), shape, dt);
    }
  }
}

struct Case {
  std::string name, func, file;
  int line = 0;
  Params params;
  double rtol = 0, atol = 0, grtol = 0, gatol = 0;
  // `machine_tol FUNC rtol atol`: the case is exact on a processor that reproduces every case of
  // FUNC bit for bit (its values depend on the processor, as XLA's rsqrt estimate does), and
  // within (machine_rtol, machine_atol) elsewhere.
  std::string machine_func;
  double machine_rtol = 0, machine_atol = 0;
  std::vector<Array> in, out;
  std::vector<Array> jit_out;  // jax.jit's outputs, recorded where they differ from `out`
  // `jit_tol rtol atol`: jit is compared with jit_out within this tolerance (XLA rewrites more
  // than tessel's jit does there; the generator names why), else within the case's.
  std::optional<std::pair<double, double>> jit_tol;
  bool has_grad = false;
  std::vector<int64_t> diff;
  std::vector<Array> jvp_in, jvp_out, vjp_in, vjp_out;
};

struct Data {
  std::vector<Case> cases;
  std::map<std::string, std::string> jax_version;  // per file
};

std::filesystem::path data_dir() { return std::filesystem::path(TESSEL_SOURCE_DIR) / "tests/parity/data"; }

/// The data files, in order.
std::vector<std::filesystem::path> data_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(data_dir()))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

/// Reads the data files. With `only_func`, the arrays, parameters and tolerances of the other
/// functions' cases are skipped (those cases keep their name, key and place): parsing all
/// 9 MB of numbers in every test process cost each of the ~4,000 CTest entries about 0.15 s.
/// Each line is still parsed in full by the one test of its function, and by
/// ParityData.RecordsTheJaxVersionAndCaseNamesAreUnique.
Data read_data(const std::string* only_func) {
  Data d;
  for (const auto& path : data_files()) {
    std::ifstream f(path);
    std::string line;
    int lineno = 0;
    Case c;
    bool skip = false;  // the current case's lines after `case` are not read
    while (std::getline(f, line)) {
      ++lineno;
      if (line.empty() || line[0] == '#') continue;
      const std::string tag = line.substr(0, line.find(' '));
      const bool known = tag == "jax_version" || tag == "case" || tag == "param" || tag == "tol" ||
                         tag == "machine_tol" || tag == "jit_tol" || tag == "gtol" || tag == "diff" || tag == "in" || tag == "out" || tag == "jit_out" || tag == "jvp_in" ||
                         tag == "jvp_out" || tag == "vjp_in" || tag == "vjp_out" || tag == "end";
      const std::string where = path.filename().string() + ":" + std::to_string(lineno);
      if (!known) throw std::runtime_error(where + ": unknown line tag '" + tag + "'");
      if (skip && tag != "case" && tag != "end" && tag != "jax_version") continue;
      std::istringstream in(line);
      in.ignore(std::streamsize(tag.size()));
      if (tag == "jax_version") in >> d.jax_version[path.filename().string()];
      else if (tag == "case") {
        c = Case{};
        in >> c.name >> c.func;
        c.file = path.filename().string();
        c.line = lineno;
        skip = only_func && c.func != *only_func;
      } else if (tag == "param") {
        std::string key, type, value;
        in >> key >> type;
        std::getline(in >> std::ws, value);
        c.params.set(key, type, value);
      } else if (tag == "tol" || tag == "gtol") {
        std::string r, a;
        in >> r >> a;
        (tag == "tol" ? c.rtol : c.grtol) = std::strtod(r.c_str(), nullptr);
        (tag == "tol" ? c.atol : c.gatol) = std::strtod(a.c_str(), nullptr);
      } else if (tag == "jit_tol") {
        std::string r, a;
        in >> r >> a;
        c.jit_tol = std::make_pair(std::strtod(r.c_str(), nullptr), std::strtod(a.c_str(), nullptr));
      } else if (tag == "machine_tol") {
        std::string r, a;
        in >> c.machine_func >> r >> a;
        c.machine_rtol = std::strtod(r.c_str(), nullptr);
        c.machine_atol = std::strtod(a.c_str(), nullptr);
      } else if (tag == "diff") {
        std::string v;
        in >> v;
        c.has_grad = true;
        c.diff = parse_ints(v);
      } else if (tag == "in") c.in.push_back(parse_array(in, where));
      else if (tag == "out") c.out.push_back(parse_array(in, where));
      else if (tag == "jit_out") c.jit_out.push_back(parse_array(in, where));
      else if (tag == "jvp_in") c.jvp_in.push_back(parse_array(in, where));
      else if (tag == "jvp_out") c.jvp_out.push_back(parse_array(in, where));
      else if (tag == "vjp_in") c.vjp_in.push_back(parse_array(in, where));
      else if (tag == "vjp_out") c.vjp_out.push_back(parse_array(in, where));
      else if (tag == "end") d.cases.push_back(std::move(c));
    }
  }
  return d;
}

/// Every case in full (read once per process, by the tests that need them all).
const Data& data() {
  static const Data d = read_data(nullptr);
  return d;
}

/// The function keys of the data, in order: the second word of each `case` line, found
/// without reading the other lines (every test process lists the parity tests at start-up).
std::vector<std::string> data_funcs() {
  static const std::vector<std::string> funcs = [] {
    std::set<std::string> s;
    for (const auto& path : data_files()) {
      std::ifstream f(path, std::ios::binary);
      std::string text(std::filesystem::file_size(path), '\0');
      f.read(text.data(), std::streamsize(text.size()));
      for (size_t at = 0; at < text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        if (text.compare(at, 5, "case ") == 0) {
          std::istringstream line(text.substr(at + 5, end - at - 5));
          std::string name, func;
          line >> name >> func;
          s.insert(func);
        }
        at = end + 1;
      }
    }
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return funcs;
}

// ---- comparison ----

/// One element within tolerance: NaN matches NaN, infinities match themselves, and an exact
/// comparison (rtol = atol = 0) also tells +0 from -0.
bool close(double got, double want, double rtol, double atol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  if (rtol == 0 && atol == 0) return got == want && std::signbit(got) == std::signbit(want);
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

/// Empty when `got` matches `want` (dtype, shape, values), else what differs.
std::string mismatch(const Array& got, const Array& want, double rtol, double atol) {
  if (!want.valid()) return "";  // a float0 zero: nothing to compare
  if (!got.valid()) return "tessel returned no array where JAX has " + ts::shape_to_string(want.shape());
  std::ostringstream os;
  if (got.dtype() != want.dtype()) os << "dtype " << got.dtype() << ", JAX " << want.dtype() << "; ";
  if (got.shape() != want.shape()) {
    os << "shape " << ts::shape_to_string(got.shape()) << ", JAX " << ts::shape_to_string(want.shape());
    return os.str();
  }
  const DType dt = want.dtype();
  int bad = 0;
  auto report = [&](size_t k, const std::string& g, const std::string& w) {
    if (bad++ < 5) os << "[" << k << "] " << g << " vs JAX " << w << "; ";
  };
  if (ts::is_inexact(dt)) {
    const bool cplx = ts::is_complex(dt);
    auto g = cplx ? got.astype(DType::complex128).to_vector<ts::complex128_t>()
                  : std::vector<ts::complex128_t>();
    auto w = cplx ? want.to_vector<ts::complex128_t>() : std::vector<ts::complex128_t>();
    if (!cplx) {
      auto gr = got.astype(DType::float64).to_vector<double>(), wr = want.astype(DType::float64).to_vector<double>();
      g.assign(gr.begin(), gr.end());
      w.assign(wr.begin(), wr.end());
    }
    for (size_t k = 0; k < w.size(); ++k) {
      if (!close(g[k].real(), w[k].real(), rtol, atol) || !close(g[k].imag(), w[k].imag(), rtol, atol)) {
        std::ostringstream gs, ws;
        gs.precision(17), ws.precision(17);
        gs << (cplx ? g[k] : g[k].real());
        ws << (cplx ? w[k] : w[k].real());
        report(k, gs.str(), ws.str());
      }
    }
  } else if (ts::is_unsigned_int(dt)) {
    auto g = got.to_vector<uint64_t>(), w = want.to_vector<uint64_t>();
    for (size_t k = 0; k < w.size(); ++k)
      if (g[k] != w[k]) report(k, std::to_string(g[k]), std::to_string(w[k]));
  } else {
    auto g = got.to_vector<int64_t>(), w = want.to_vector<int64_t>();
    for (size_t k = 0; k < w.size(); ++k)
      if (g[k] != w[k]) report(k, std::to_string(g[k]), std::to_string(w[k]));
  }
  if (bad) os << bad << " of " << want.size() << " elements differ (rtol " << rtol << ", atol " << atol << ")";
  return os.str();
}

/// Compares a list of results; `what` names the step (eager, jit, jvp, vjp). Appends what
/// differs to `failures`.
void compare(const Case& c, const char* what, const std::vector<Array>& got, const std::vector<Array>& want,
             double rtol, double atol, std::vector<std::string>& failures) {
  const std::string where = c.file + ":" + std::to_string(c.line) + " case " + c.name + " (" + what + ")";
  if (got.size() != want.size()) {
    failures.push_back(where + ": " + std::to_string(got.size()) + " results, JAX " + std::to_string(want.size()));
    return;
  }
  for (size_t k = 0; k < want.size(); ++k) {
    std::string m = mismatch(got[k], want[k], rtol, atol);
    if (!m.empty()) failures.push_back(where + ", result " + std::to_string(k) + ": " + m);
  }
}

/// Whether this processor computes every case of `func` exactly as the data records (once per
/// function and process).
bool machine_reproduces(const std::string& func) {
  static std::map<std::string, bool> known;
  if (auto it = known.find(func); it != known.end()) return it->second;
  auto entry = registry().find(func);
  bool same = entry != registry().end();
  int n = 0;
  for (const auto& c : read_data(&func).cases) {
    if (c.func != func || !same) continue;
    ++n;
    const std::vector<Array> got = entry->second(c.in, c.params);
    for (size_t k = 0; k < c.out.size() && same; ++k) same = k < got.size() && mismatch(got[k], c.out[k], 0, 0).empty();
  }
  return known[func] = same && n > 0;
}

void run_case(const Case& c0, const Fn& fn, std::vector<std::string>& failures) {
  Case c = c0;
  if (!c.machine_func.empty() && !machine_reproduces(c.machine_func)) {
    std::cout << c.name << ": this processor does not reproduce " << c.machine_func
              << " as recorded, so the case is compared within its machine_tol\n";
    c.rtol = c.machine_rtol, c.atol = c.machine_atol;
  }
  const Params& p = c.params;
  compare(c, "eager", fn(c.in, p), c.out, c.rtol, c.atol, failures);
  if (eager_only_reason(c.func)) return;
  auto jitted = ts::jit([&fn, &p](const std::vector<Array>& xs) { return fn(xs, p); });
  // JAX's jit contracts multiply-adds as tessel's does (unless TESSEL_FP_CONTRACT=0): its own
  // results where they differ from the eager ones.
  const bool contracts = ts::config::get_flag(ts::config::kFpContract);
  const bool with_jit_out = contracts && !c.jit_out.empty();
  const auto [jit_rtol, jit_atol] = with_jit_out && c.jit_tol ? *c.jit_tol : std::make_pair(c.rtol, c.atol);
  compare(c, "jit", jitted(c.in), with_jit_out ? c.jit_out : c.out, jit_rtol, jit_atol, failures);
  if (!c.in.empty()) {
    // vmap over a batch of two copies of the inputs: the batching rules give each copy the
    // case's outputs.
    std::vector<Array> batch, want;
    for (const auto& x : c.in) batch.push_back(ts::stack({x, x}));
    for (const auto& y : c.out) want.push_back(y.valid() ? ts::stack({y, y}) : y);
    auto batched = ts::vmap([&fn, &p](const std::vector<Array>& xs) { return fn(xs, p); });
    compare(c, "vmap", batched(batch), want, c.rtol, c.atol, failures);
  }
  if (!c.has_grad) return;
  // The function of the differentiated (inexact) inputs, the others held at the case's values.
  auto of_diff = [&](const std::vector<Array>& d) {
    std::vector<Array> full = c.in;
    for (size_t k = 0; k < c.diff.size(); ++k) full[size_t(c.diff[k])] = d[k];
    return fn(full, p);
  };
  std::vector<Array> primals;
  for (int64_t i : c.diff) primals.push_back(c.in[size_t(i)]);
  if (!reverse_mode_only_reason(c.func)) {
    auto [y, t] = ts::jvp(of_diff, std::tuple<std::vector<Array>>(primals), std::tuple<std::vector<Array>>(c.jvp_in));
    compare(c, "jvp primal", y, c.out, c.rtol, c.atol, failures);
    compare(c, "jvp tangent", t, c.jvp_out, c.grtol, c.gatol, failures);
  }
  auto [y2, pullback] = ts::vjp(of_diff, primals);
  compare(c, "vjp cotangent", pullback(c.vjp_in), c.vjp_out, c.grtol, c.gatol, failures);
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, MatchesJax) {
  const std::string& func = GetParam();
  auto it = registry().find(func);
  ASSERT_NE(it, registry().end()) << "no registry entry for '" << func << "' (add one to tests/parity/cases_*.cpp)";
  int n = 0;
  std::vector<std::string> failures;
  for (const auto& c : read_data(&func).cases) {
    if (c.func != func) continue;
    ++n;
    try {
      run_case(c, it->second, failures);
    } catch (const std::exception& e) {
      failures.push_back(c.file + ":" + std::to_string(c.line) + " case " + c.name + " threw: " + e.what());
    }
  }
  EXPECT_GT(n, 0);
  if (const std::string* reason = known_difference_reason(func)) {
    EXPECT_FALSE(failures.empty()) << "'" << func << "' now matches JAX: remove its known_difference (" << *reason
                                   << ")";
    for (const auto& f : failures) std::cout << "known difference (" << *reason << "): " << f << "\n";
    return;
  }
  for (const auto& f : failures) ADD_FAILURE() << f;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Jax, Parity, ::testing::ValuesIn(data_funcs()), test_name);

TEST(ParityData, EveryCaseHasARegistryEntry) {
  for (const auto& func : data_funcs())
    EXPECT_TRUE(registry().count(func)) << "the data has cases of '" << func
                                        << "' but no tests/parity/cases_*.cpp registers it";
}

TEST(ParityData, EveryRegistryEntryHasCases) {
  std::vector<std::string> funcs = data_funcs();
  for (const auto& [func, fn] : registry())
    EXPECT_TRUE(std::count(funcs.begin(), funcs.end(), func))
        << "'" << func << "' is registered but tests/parity/data has no case of it (run tests/parity/generate.py)";
}

TEST(ParityData, RecordsTheJaxVersionAndCaseNamesAreUnique) {
  ASSERT_FALSE(data().jax_version.empty()) << "no data files under " << data_dir();
  for (const auto& [file, version] : data().jax_version) EXPECT_EQ(version, "0.10.2") << file;
  std::set<std::string> names;
  for (const auto& c : data().cases) EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
}

}  // namespace
