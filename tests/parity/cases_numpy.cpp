// tessel's side of tests/parity/cases_numpy.py (include/tessel/ops.h and random.h's
// erf_inv): one registry entry per function key.
#include "parity/parity.h"
#include "tessel/random.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
/// jnp.pad's widths: ((before, after), ...).
std::vector<std::pair<int64_t, int64_t>> pairs(const std::vector<std::vector<int64_t>>& v) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& p : v) out.emplace_back(p.at(0), p.at(1));
  return out;
}
/// jnp's `axis` of a reduction as tessel's Axes (None: all axes, which tessel spells {}).
ts::Axes reduced_axes(const Params& p) { return p.opt_ints("axis").value_or(ts::Axes{}); }
/// A reduction over `axis` with `keepdims`.
Fn reduction(Array (*f)(const Array&, ts::Axes, bool)) {
  return [f](const In& x, const Params& p) { return out(f(x[0], reduced_axes(p), p.flag("keepdims"))); };
}
/// A cumulative op along `axis`, optionally reversed.
Fn cumulative(Array (*f)(const Array&, int64_t, bool)) {
  return [f](const In& x, const Params& p) { return out(f(x[0], p.i("axis"), p.flag("reverse"))); };
}
/// argmax/argmin along `axis` (None: flattened).
Fn arg_reduction(Array (*f)(const Array&, std::optional<int64_t>, bool)) {
  return [f](const In& x, const Params& p) { return out(f(x[0], p.opt_i("axis"), p.flag("keepdims"))); };
}
/// var/std with ddof.
Fn moment(Array (*f)(const Array&, ts::Axes, bool, double)) {
  return [f](const In& x, const Params& p) { return out(f(x[0], reduced_axes(p), p.flag("keepdims"), p.f("ddof"))); };
}
}  // namespace

TESSEL_PARITY_CASES(numpy) {
  // ---- element-wise ----
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Array (*)(const Array&)>>{
           {"negative", ts::negative}, {"abs", ts::abs}, {"sign", ts::sign}, {"floor", ts::floor},
           {"ceil", ts::ceil}, {"round", ts::round}, {"exp", ts::exp}, {"exp2", ts::exp2}, {"expm1", ts::expm1},
           {"log", ts::log}, {"log1p", ts::log1p}, {"log2", ts::log2}, {"log10", ts::log10}, {"sqrt", ts::sqrt},
           {"rsqrt", ts::rsqrt}, {"cbrt", ts::cbrt}, {"square", ts::square}, {"reciprocal", ts::reciprocal},
           {"sin", ts::sin}, {"cos", ts::cos}, {"tan", ts::tan}, {"arcsin", ts::arcsin}, {"arccos", ts::arccos},
           {"arctan", ts::arctan}, {"sinh", ts::sinh}, {"cosh", ts::cosh}, {"tanh", ts::tanh},
           {"arcsinh", ts::arcsinh}, {"arccosh", ts::arccosh}, {"arctanh", ts::arctanh}, {"erf", ts::erf},
           {"erfc", ts::erfc}, {"erf_inv", ts::erf_inv}, {"logistic", ts::logistic}, {"isnan", ts::isnan},
           {"isinf", ts::isinf}, {"isfinite", ts::isfinite}, {"real", ts::real}, {"imag", ts::imag},
           {"conj", ts::conj}, {"logical_not", ts::logical_not}, {"bitwise_not", ts::bitwise_not}})
    reg(name, unary(f));
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Array (*)(const Array&, const Array&)>>{
           {"add", ts::add}, {"subtract", ts::subtract}, {"multiply", ts::multiply}, {"divide", ts::divide},
           {"floor_divide", ts::floor_divide}, {"remainder", ts::remainder}, {"rem", ts::rem}, {"fmod", ts::fmod},
           {"pow", ts::pow}, {"maximum", ts::maximum}, {"minimum", ts::minimum}, {"atan2", ts::atan2},
           {"equal", ts::equal}, {"not_equal", ts::not_equal}, {"less", ts::less}, {"less_equal", ts::less_equal},
           {"greater", ts::greater}, {"greater_equal", ts::greater_equal}, {"logical_and", ts::logical_and},
           {"logical_or", ts::logical_or}, {"logical_xor", ts::logical_xor}, {"bitwise_and", ts::bitwise_and},
           {"bitwise_or", ts::bitwise_or}, {"bitwise_xor", ts::bitwise_xor}, {"left_shift", ts::left_shift},
           {"right_shift", ts::right_shift}, {"complex", ts::complex}, {"true_divide", ts::true_divide}})
    reg(name, binary(f));
  reg("where", [](const In& x, const Params&) { return out(ts::where(x[0], x[1], x[2])); });
  reg("clip", [](const In& x, const Params&) { return out(ts::clip(x[0], x[1], x[2])); });
  reg("astype", [](const In& x, const Params& p) { return out(ts::astype(x[0], p.dtype("dtype"))); });

  // ---- reductions and cumulative ops ----
  reg("sum", reduction(ts::sum));
  reg("prod", reduction(ts::prod));
  reg("mean", reduction(ts::mean));
  reg("max", reduction(ts::max));
  reg("min", reduction(ts::min));
  reg("any", reduction(ts::any));
  reg("all", reduction(ts::all));
  reg("argmax", arg_reduction(ts::argmax));
  reg("argmin", arg_reduction(ts::argmin));
  reg("var", moment(ts::var));
  reg("std", moment(ts::std));
  reg("cumsum", cumulative(ts::cumsum));
  reg("cumprod", cumulative(ts::cumprod));
  reg("cummax", cumulative(ts::cummax));
  reg("cummin", cumulative(ts::cummin));

  // ---- shapes ----
  reg("reshape", [](const In& x, const Params& p) { return out(ts::reshape(x[0], p.ints("shape"))); });
  reg("transpose", [](const In& x, const Params& p) { return out(ts::transpose(x[0], p.ints("axes"))); });
  reg("moveaxis",
      [](const In& x, const Params& p) { return out(ts::moveaxis(x[0], p.i("source"), p.i("destination"))); });
  reg("swapaxes", [](const In& x, const Params& p) { return out(ts::swapaxes(x[0], p.i("axis1"), p.i("axis2"))); });
  reg("flip", [](const In& x, const Params& p) { return out(ts::flip(x[0], p.ints("axis"))); });
  reg("roll", [](const In& x, const Params& p) { return out(ts::roll(x[0], p.i("shift"), p.i("axis"))); });
  reg("tile", [](const In& x, const Params& p) { return out(ts::tile(x[0], p.ints("reps"))); });
  reg("repeat", [](const In& x, const Params& p) { return out(ts::repeat(x[0], p.i("repeats"), p.opt_i("axis"))); });
  reg("expand_dims", [](const In& x, const Params& p) { return out(ts::expand_dims(x[0], p.ints("axis"))); });
  reg("squeeze", [](const In& x, const Params& p) { return out(ts::squeeze(x[0], p.ints("axis"))); });
  reg("broadcast_to", [](const In& x, const Params& p) { return out(ts::broadcast_to(x[0], p.ints("shape"))); });
  reg("concatenate", [](const In& x, const Params& p) { return out(ts::concatenate(x, p.i("axis"))); });
  reg("stack", [](const In& x, const Params& p) { return out(ts::stack(x, p.i("axis"))); });
  reg("pad", [](const In& x, const Params& p) { return out(ts::pad(x[0], pairs(p.intss("pad_width")), p.s("mode"))); });
  reg("lax_pad", [](const In& x, const Params& p) {
    std::vector<std::array<int64_t, 3>> config;
    for (const auto& c : p.intss("padding_config")) config.push_back({c.at(0), c.at(1), c.at(2)});
    return out(ts::lax_pad(x[0], ts::Scalar(-1.0f), config));
  });

  // ---- indexing ----
  reg("slice", [](const In& x, const Params& p) {
    return out(ts::slice(x[0], p.ints("start_indices"), p.ints("limit_indices"), p.ints("strides")));
  });
  reg("dynamic_slice",
      [](const In& x, const Params& p) { return out(ts::dynamic_slice(x[0], {x[1], x[2]}, p.ints("slice_sizes"))); });
  reg("dynamic_update_slice",
      [](const In& x, const Params&) { return out(ts::dynamic_update_slice(x[0], x[1], {x[2], x[3]})); });
  reg("take", [](const In& x, const Params& p) {
    return out(ts::take(x[0], x[1], p.opt_i("axis"), {.mode = p.s("mode")}));
  });
  reg("take_along_axis", [](const In& x, const Params& p) {
    return out(ts::take_along_axis(x[0], x[1], p.opt_i("axis"), {.mode = p.s("mode")}));
  });

  // ---- products ----
  reg("matmul", binary(ts::matmul));
  reg("dot", binary(ts::dot));
  reg("vdot", binary(ts::vdot));
  reg("outer", binary(ts::outer));
  reg("dot_general", [](const In& x, const Params& p) {
    return out(ts::dot_general(x[0], x[1], {p.ints("lc"), p.ints("rc"), p.ints("lb"), p.ints("rb")}));
  });
  reg("einsum", [](const In& x, const Params& p) { return out(ts::einsum(p.s("subscripts"), x)); });
  reg("trace", [](const In& x, const Params& p) {
    return out(ts::trace(x[0], p.i("offset"), p.i("axis1"), p.i("axis2")));
  });

  // ---- lax-level and creation helpers ----
  reg("select", [](const In& x, const Params&) { return out(ts::select(x[0], x[1], x[2])); });
  reg("clamp", [](const In& x, const Params&) { return out(ts::clamp(x[0], x[1], x[2])); });
  reg("broadcast_in_dim", [](const In& x, const Params& p) {
    return out(ts::broadcast_in_dim(x[0], p.ints("shape"), p.ints("broadcast_dimensions")));
  });
  reg("slice_in_dim", [](const In& x, const Params& p) {
    return out(ts::slice_in_dim(x[0], p.i("start_index"), p.i("limit_index"), p.i("stride"), p.i("axis")));
  });
  reg("ravel", unary(ts::ravel));
  reg("zeros_like", unary(ts::zeros_like));
  reg("ones_like", unary(ts::ones_like));
  reg("empty_like", unary(ts::empty_like));
  reg("full_like", [](const In& x, const Params& p) {
    return out(ts::full_like(x[0], p.type("fill_value") == "int" ? ts::Scalar(p.i("fill_value"))
                                                                  : ts::Scalar(p.f("fill_value"))));
  });
  reg("full", [](const In&, const Params& p) {
    return out(ts::full(p.ints("shape"), Array(p.f("fill_value")), p.dtype("dtype")));
  });
  reg("bitcast_convert_type",
      [](const In& x, const Params& p) { return out(ts::bitcast_convert_type(x[0], p.dtype("new_dtype"))); });

  // ---- creation ----
  reg("arange", [](const In&, const Params& p) {
    return out(ts::arange(p.f("start"), p.f("stop"), p.f("step"), p.dtype("dtype")));
  });
  reg("linspace", [](const In&, const Params& p) {
    return out(ts::linspace(p.f("start"), p.f("stop"), p.i("num"), p.flag("endpoint"), p.dtype("dtype")));
  });
  reg("eye", [](const In&, const Params& p) { return out(ts::eye(p.i("N"), p.i("M"), p.i("k"), p.dtype("dtype"))); });
  reg("iota", [](const In&, const Params& p) {
    return out(ts::iota(p.dtype("dtype"), p.ints("shape"), p.i("dimension")));
  });
}
