// tessel's side of tests/parity/cases_numpy_composed.py (include/tessel/numpy.h): one
// registry entry per function key.
#include "parity/parity.h"
#include "tessel/numpy.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
/// jnp's `axis` of a reduction as tessel's Axes (None: all axes, which tessel spells {}).
ts::Axes axes_of(const Params& p) {
  if (p.is_none("axis")) return {};
  if (p.type("axis") == "int") return {p.i("axis")};
  return p.ints("axis");
}
Out outs(std::vector<Array> v) { return v; }
Out pair_out(std::pair<Array, Array> v) { return {std::move(v.first), std::move(v.second)}; }
std::optional<double> opt_f(const Params& p, const std::string& key) {
  if (!p.has(key) || p.is_none(key)) return std::nullopt;
  return p.f(key);
}
using Unary = Array (*)(const Array&);
using Binary = Array (*)(const Array&, const Array&);
using Reduction = Array (*)(const Array&, ts::Axes, bool);
using Moment = Array (*)(const Array&, ts::Axes, bool, double);
using Splitter = std::vector<Array> (*)(const Array&, int64_t);
using Stacker = Array (*)(const std::vector<Array>&);
}  // namespace

TESSEL_PARITY_CASES(numpy_composed) {
  // ---- element-wise ----
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Binary>>{
           {"hypot", ts::hypot}, {"copysign", ts::copysign}, {"logaddexp", ts::logaddexp},
           {"logaddexp2", ts::logaddexp2}, {"heaviside", ts::heaviside}, {"float_power", ts::float_power},
           {"fmax", ts::fmax}, {"fmin", ts::fmin}, {"nextafter", ts::nextafter}, {"gcd", ts::gcd}, {"lcm", ts::lcm},
           {"ldexp", ts::ldexp}, {"array_equiv", ts::array_equiv}})
    reg(name, binary(f));
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Unary>>{
           {"signbit", ts::signbit}, {"spacing", ts::spacing}, {"sinc", ts::sinc}, {"deg2rad", ts::deg2rad},
           {"rad2deg", ts::rad2deg}, {"trunc", ts::trunc}, {"fix", ts::fix}, {"rint", ts::rint}, {"fabs", ts::fabs},
           {"isneginf", ts::isneginf}, {"isposinf", ts::isposinf}, {"isreal", ts::isreal},
           {"iscomplex", ts::iscomplex}, {"bitwise_count", ts::bitwise_count}, {"fliplr", ts::fliplr},
           {"flipud", ts::flipud}, {"atleast_1d", ts::atleast_1d}, {"atleast_2d", ts::atleast_2d},
           {"atleast_3d", ts::atleast_3d}})
    reg(name, unary(f));
  reg("nan_to_num", [](const In& x, const Params&) { return out(ts::nan_to_num(x[0])); });
  reg("nan_to_num_values", [](const In& x, const Params& p) {
    return out(ts::nan_to_num(x[0], {.nan = p.f("nan"), .posinf = p.f("posinf"), .neginf = p.f("neginf")}));
  });
  reg("frexp", [](const In& x, const Params&) { return pair_out(ts::frexp(x[0])); });
  reg("modf", [](const In& x, const Params&) { return pair_out(ts::modf(x[0])); });
  reg("divmod", [](const In& x, const Params&) { return pair_out(ts::divmod(x[0], x[1])); });
  reg("angle", [](const In& x, const Params& p) { return out(ts::angle(x[0], p.has("deg") && p.flag("deg"))); });
  const auto close = [](const Params& p) {
    ts::CloseOptions o;
    if (p.has("rtol")) o = {.rtol = p.f("rtol"), .atol = p.f("atol"), .equal_nan = p.flag("equal_nan")};
    return o;
  };
  reg("isclose", [close](const In& x, const Params& p) { return out(ts::isclose(x[0], x[1], close(p))); });
  reg("allclose", [close](const In& x, const Params& p) { return out(ts::allclose(x[0], x[1], close(p))); });
  reg("array_equal", [](const In& x, const Params& p) {
    return out(ts::array_equal(x[0], x[1], p.has("equal_nan") && p.flag("equal_nan")));
  });

  // ---- reductions ----
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Reduction>>{
           {"nansum", ts::nansum}, {"nanprod", ts::nanprod}, {"nanmax", ts::nanmax}, {"nanmin", ts::nanmin},
           {"nanmean", ts::nanmean}, {"ptp", ts::ptp}, {"count_nonzero", ts::count_nonzero}})
    reg(name, [f](const In& x, const Params& p) { return out(f(x[0], axes_of(p), p.flag("keepdims"))); });
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Moment>>{{"nanvar", ts::nanvar}, {"nanstd", ts::nanstd}})
    reg(name, [f](const In& x, const Params& p) { return out(f(x[0], axes_of(p), p.flag("keepdims"), p.f("ddof"))); });
  reg("nanargmax", [](const In& x, const Params& p) { return out(ts::nanargmax(x[0], p.opt_i("axis"), p.flag("keepdims"))); });
  reg("nanargmin", [](const In& x, const Params& p) { return out(ts::nanargmin(x[0], p.opt_i("axis"), p.flag("keepdims"))); });
  reg("nancumsum", [](const In& x, const Params& p) { return out(ts::nancumsum(x[0], p.i("axis"))); });
  reg("nancumprod", [](const In& x, const Params& p) { return out(ts::nancumprod(x[0], p.i("axis"))); });
  reg("average", [](const In& x, const Params& p) { return out(ts::average(x[0], axes_of(p), x[1])); });
  reg("cumulative_sum", [](const In& x, const Params& p) {
    return out(ts::cumulative_sum(x[0], p.opt_i("axis"), p.flag("include_initial")));
  });
  reg("cumulative_prod", [](const In& x, const Params& p) {
    return out(ts::cumulative_prod(x[0], p.opt_i("axis"), p.flag("include_initial")));
  });

  // ---- differences and statistics ----
  reg("diff", [](const In& x, const Params& p) {
    return out(x.size() == 3 ? ts::diff(x[0], p.i("n"), p.i("axis"), x[1], x[2]) : ts::diff(x[0], p.i("n"), p.i("axis")));
  });
  reg("ediff1d", [](const In& x, const Params&) {
    return out(x.size() == 3 ? ts::ediff1d(x[0], x[1], x[2]) : ts::ediff1d(x[0]));
  });
  reg("gradient", [](const In& x, const Params& p) { return out(ts::gradient(x[0], p.i("axis"))); });
  reg("gradient_all", [](const In& x, const Params&) { return outs(ts::gradient(x[0])); });
  reg("trapezoid", [](const In& x, const Params& p) { return out(ts::trapezoid(x[0], std::nullopt, p.f("dx"), p.i("axis"))); });
  reg("trapezoid_x", [](const In& x, const Params& p) { return out(ts::trapezoid(x[0], x[1], 1.0, p.i("axis"))); });
  reg("interp", [](const In& x, const Params&) { return out(ts::interp(x[0], x[1], x[2])); });
  reg("interp_lr", [](const In& x, const Params&) { return out(ts::interp(x[0], x[1], x[2], x[3], x[4])); });
  reg("unwrap", [](const In& x, const Params& p) {
    if (!p.has("axis")) return out(ts::unwrap(x[0]));
    return out(ts::unwrap(x[0], opt_f(p, "discont"), p.i("axis"), p.f("period")));
  });
  reg("cov", [](const In& x, const Params& p) {
    return out(ts::cov(x[0], !p.has("rowvar") || p.flag("rowvar"), p.has("bias") && p.flag("bias")));
  });
  reg("corrcoef", [](const In& x, const Params&) { return out(ts::corrcoef(x[0])); });

  // ---- construction ----
  reg("tri", [](const In&, const Params& p) { return out(ts::tri(p.i("N"), p.opt_i("M"), p.i("k"), p.dtype("dtype"))); });
  reg("tril", [](const In& x, const Params& p) { return out(ts::tril(x[0], p.i("k"))); });
  reg("triu", [](const In& x, const Params& p) { return out(ts::triu(x[0], p.i("k"))); });
  reg("tril_indices", [](const In&, const Params& p) { return pair_out(ts::tril_indices(p.i("n"), p.i("k"), p.opt_i("m"))); });
  reg("triu_indices", [](const In&, const Params& p) { return pair_out(ts::triu_indices(p.i("n"), p.i("k"), p.opt_i("m"))); });
  reg("diag", [](const In& x, const Params& p) { return out(ts::diag(x[0], p.i("k"))); });
  reg("diagflat", [](const In& x, const Params& p) { return out(ts::diagflat(x[0], p.i("k"))); });
  reg("diagonal", [](const In& x, const Params& p) {
    return out(ts::diagonal(x[0], p.i("offset"), p.i("axis1"), p.i("axis2")));
  });
  reg("fill_diagonal", [](const In& x, const Params&) { return out(ts::fill_diagonal(x[0], x[1])); });
  reg("identity", [](const In&, const Params& p) { return out(ts::identity(p.i("n"), p.dtype("dtype"))); });
  reg("meshgrid", [](const In& x, const Params& p) { return outs(ts::meshgrid(x, p.s("indexing"), p.flag("sparse"))); });
  reg("indices", [](const In&, const Params& p) {
    return outs(ts::indices(p.ints("dimensions"), ts::DType::int32, p.flag("sparse")));
  });
  reg("ix_", [](const In& x, const Params&) { return outs(ts::ix_(x)); });
  reg("logspace", [](const In&, const Params& p) {
    return out(ts::logspace(p.f("start"), p.f("stop"), p.i("num"), p.flag("endpoint"), p.f("base")));
  });
  reg("geomspace", [](const In&, const Params& p) {
    return out(ts::geomspace(p.f("start"), p.f("stop"), p.i("num"), p.flag("endpoint")));
  });
  reg("vander", [](const In& x, const Params& p) { return out(ts::vander(x[0], p.opt_i("N"), p.flag("increasing"))); });

  // ---- splitting, joining, rearranging ----
  reg("split", [](const In& x, const Params& p) { return outs(ts::split(x[0], p.i("n"), p.i("axis"))); });
  reg("split_at", [](const In& x, const Params& p) { return outs(ts::split(x[0], p.ints("idx"), p.i("axis"))); });
  reg("array_split", [](const In& x, const Params& p) { return outs(ts::array_split(x[0], p.i("n"), p.i("axis"))); });
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Splitter>>{
           {"hsplit", ts::hsplit}, {"vsplit", ts::vsplit}, {"dsplit", ts::dsplit}})
    reg(name, [f](const In& x, const Params& p) { return outs(f(x[0], p.i("n"))); });
  reg("unstack", [](const In& x, const Params& p) { return outs(ts::unstack(x[0], p.i("axis"))); });
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Stacker>>{
           {"hstack", ts::hstack}, {"vstack", ts::vstack}, {"dstack", ts::dstack}, {"column_stack", ts::column_stack}})
    reg(name, [f](const In& x, const Params&) { return out(f(x)); });
  reg("rot90", [](const In& x, const Params& p) {
    const auto a = p.ints("axes");
    return out(ts::rot90(x[0], p.i("k"), {a.at(0), a.at(1)}));
  });
  reg("resize", [](const In& x, const Params& p) { return out(ts::resize(x[0], p.ints("new_shape"))); });
  reg("rollaxis", [](const In& x, const Params& p) { return out(ts::rollaxis(x[0], p.i("axis"), p.i("start"))); });
  reg("delete_", [](const In& x, const Params& p) { return out(ts::delete_(x[0], p.ints("obj"), p.opt_i("axis"))); });
  reg("insert", [](const In& x, const Params& p) { return out(ts::insert(x[0], p.i("obj"), x[1], p.opt_i("axis"))); });
  reg("append", [](const In& x, const Params& p) { return out(ts::append(x[0], x[1], p.opt_i("axis"))); });
  reg("broadcast_arrays", [](const In& x, const Params&) { return outs(ts::broadcast_arrays(x)); });
  reg("unravel_index", [](const In& x, const Params& p) { return outs(ts::unravel_index(x[0], p.ints("shape"))); });
  reg("ravel_multi_index", [](const In& x, const Params& p) {
    return out(ts::ravel_multi_index({x[0], x[1]}, p.ints("dims"), p.s("mode")));
  });

  // ---- products, polynomials, windows ----
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Binary>>{
           {"inner", ts::inner}, {"kron", ts::kron}, {"matvec", ts::matvec}, {"vecmat", ts::vecmat},
           {"polyval", ts::polyval}, {"polyadd", ts::polyadd}, {"polysub", ts::polysub}})
    reg(name, binary(f));
  reg("polyder", [](const In& x, const Params& p) { return out(ts::polyder(x[0], p.i("m"))); });
  reg("polyint", [](const In& x, const Params& p) { return out(ts::polyint(x[0], p.i("m"))); });
  reg("polyint_k", [](const In& x, const Params& p) { return out(ts::polyint(x[0], p.i("m"), x[1])); });
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Array (*)(int64_t)>>{
           {"bartlett", ts::bartlett}, {"blackman", ts::blackman}, {"hamming", ts::hamming}, {"hanning", ts::hanning}})
    reg(name, [f](const In&, const Params& p) { return out(f(p.i("M"))); });
  // ---- selection, scatters, bits, more polynomials ----
  reg("compress", [](const In& x, const Params& p) {
    return out(ts::compress(x[0], x[1], p.opt_i("axis"), {.size = p.i("size"), .fill_value = ts::Scalar(-1.0f)}));
  });
  reg("extract", [](const In& x, const Params& p) {
    return out(ts::extract(x[0], x[1], {.size = p.i("size"), .fill_value = ts::Scalar(-1.0f)}));
  });
  reg("choose", [](const In& x, const Params& p) { return out(ts::choose(x[0], {x[1], x[2], x[3]}, p.s("mode"))); });
  reg("place", [](const In& x, const Params&) { return out(ts::place(x[0], x[1], x[2])); });
  reg("put", [](const In& x, const Params& p) {
    return out(ts::put(x[0], x[1], x[2], p.is_none("mode") ? std::string() : p.s("mode")));
  });
  reg("put_along_axis", [](const In& x, const Params& p) { return out(ts::put_along_axis(x[0], x[1], x[2], p.i("axis"))); });
  reg("packbits", [](const In& x, const Params& p) { return out(ts::packbits(x[0], p.opt_i("axis"), p.s("bitorder"))); });
  reg("unpackbits", [](const In& x, const Params& p) {
    return out(ts::unpackbits(x[0], p.opt_i("axis"), p.opt_i("count"), p.s("bitorder")));
  });
  reg("polymul", binary(ts::polymul));
  reg("polydiv", [](const In& x, const Params&) { return pair_out(ts::polydiv(x[0], x[1])); });
  reg("polyfit", [](const In& x, const Params& p) { return out(ts::polyfit(x[0], x[1], p.i("deg"))); });
  reg("poly", unary(ts::poly));
  reg("roots", [](const In& x, const Params&) { return out(ts::sort_complex(ts::roots(x[0], false))); });
}
