// The functions of tessel.numpy, tessel.lax, tessel.nn and tessel.random that map one to
// one onto C++ functions. Element-wise functions are bound from tables (one row per name);
// functions with NumPy-style keyword arguments have one binding each.
#include <cmath>
#include <string>

#include "common.h"
#include "tessel/lax_extra.h"
#include "tessel/nn.h"
#include "tessel/numpy.h"
#include "tessel/random.h"
#include "tessel/sort.h"
#include "tessel/special.h"
#include "tessel/transforms.h"

namespace tessel::python {
namespace {

using UnaryFn = Array (*)(const Array&);
using BinaryFn = Array (*)(const Array&, const Array&);
using ReduceFn = Array (*)(const Array&, Axes, bool);
using VarianceFn = Array (*)(const Array&, Axes, bool, double);

struct Named1 {
  const char* name;
  UnaryFn fn;
};
struct Named2 {
  const char* name;
  BinaryFn fn;
};

#define TS_UNARY(name) Named1{#name, static_cast<UnaryFn>(&tessel::name)}
#define TS_BINARY(name) Named2{#name, static_cast<BinaryFn>(&tessel::name)}

// jax.numpy's element-wise functions of one argument (and a few shape functions of one).
const Named1 kNumpyUnary[] = {
    TS_UNARY(negative), TS_UNARY(abs), TS_UNARY(sign), TS_UNARY(floor), TS_UNARY(ceil), TS_UNARY(exp),
    TS_UNARY(exp2), TS_UNARY(expm1), TS_UNARY(log), TS_UNARY(log1p), TS_UNARY(log2), TS_UNARY(log10),
    TS_UNARY(sqrt), TS_UNARY(cbrt), TS_UNARY(square), TS_UNARY(reciprocal), TS_UNARY(sin), TS_UNARY(cos),
    TS_UNARY(tan), TS_UNARY(arcsin), TS_UNARY(arccos), TS_UNARY(arctan), TS_UNARY(sinh), TS_UNARY(cosh),
    TS_UNARY(tanh), TS_UNARY(arcsinh), TS_UNARY(arccosh), TS_UNARY(arctanh), TS_UNARY(logical_not),
    TS_UNARY(bitwise_not), TS_UNARY(isnan), TS_UNARY(isinf), TS_UNARY(isfinite), TS_UNARY(real), TS_UNARY(imag),
    TS_UNARY(conj), TS_UNARY(signbit), TS_UNARY(spacing), TS_UNARY(sinc), TS_UNARY(deg2rad), TS_UNARY(radians),
    TS_UNARY(rad2deg), TS_UNARY(degrees), TS_UNARY(trunc), TS_UNARY(fix), TS_UNARY(rint), TS_UNARY(fabs),
    TS_UNARY(positive), TS_UNARY(isneginf), TS_UNARY(isposinf), TS_UNARY(isreal), TS_UNARY(iscomplex),
    TS_UNARY(atleast_1d), TS_UNARY(atleast_2d), TS_UNARY(atleast_3d), TS_UNARY(fliplr), TS_UNARY(flipud),
    TS_UNARY(copy), TS_UNARY(matrix_transpose), TS_UNARY(ravel), TS_UNARY(bitwise_count),
};

// jax.numpy's element-wise functions of two arguments (broadcasting, weakly typed scalars).
const Named2 kNumpyBinary[] = {
    TS_BINARY(add), TS_BINARY(subtract), TS_BINARY(multiply), TS_BINARY(divide), TS_BINARY(true_divide),
    TS_BINARY(floor_divide), TS_BINARY(remainder), TS_BINARY(fmod), TS_BINARY(maximum), TS_BINARY(minimum),
    TS_BINARY(equal), TS_BINARY(not_equal), TS_BINARY(less), TS_BINARY(less_equal), TS_BINARY(greater),
    TS_BINARY(greater_equal), TS_BINARY(logical_and), TS_BINARY(logical_or), TS_BINARY(logical_xor),
    TS_BINARY(bitwise_and), TS_BINARY(bitwise_or), TS_BINARY(bitwise_xor), TS_BINARY(left_shift),
    TS_BINARY(right_shift), TS_BINARY(hypot), TS_BINARY(copysign), TS_BINARY(nextafter), TS_BINARY(ldexp),
    TS_BINARY(logaddexp), TS_BINARY(logaddexp2), TS_BINARY(heaviside), TS_BINARY(gcd), TS_BINARY(lcm),
    TS_BINARY(float_power), TS_BINARY(fmax), TS_BINARY(fmin), TS_BINARY(matmul), TS_BINARY(dot), TS_BINARY(vdot),
    TS_BINARY(outer), TS_BINARY(inner), TS_BINARY(kron), Named2{"power", static_cast<BinaryFn>(&tessel::pow)},
    Named2{"arctan2", static_cast<BinaryFn>(&tessel::atan2)}, TS_BINARY(polyval),
};

// jax.lax's element-wise functions under their lax names.
const Named1 kLaxUnary[] = {
    Named1{"neg", &tessel::negative}, TS_UNARY(abs), TS_UNARY(sign), TS_UNARY(floor), TS_UNARY(ceil),
    TS_UNARY(exp), TS_UNARY(exp2), TS_UNARY(expm1), TS_UNARY(log), TS_UNARY(log1p), TS_UNARY(sqrt),
    TS_UNARY(rsqrt), TS_UNARY(cbrt), TS_UNARY(square), TS_UNARY(sin), TS_UNARY(cos), TS_UNARY(tan),
    Named1{"asin", &tessel::arcsin}, Named1{"acos", &tessel::arccos}, Named1{"atan", &tessel::arctan},
    TS_UNARY(sinh), TS_UNARY(cosh), TS_UNARY(tanh), Named1{"asinh", &tessel::arcsinh},
    Named1{"acosh", &tessel::arccosh}, Named1{"atanh", &tessel::arctanh}, TS_UNARY(erf), TS_UNARY(erfc),
    TS_UNARY(erf_inv), TS_UNARY(logistic), TS_UNARY(lgamma), TS_UNARY(digamma), Named1{"is_finite", &tessel::isfinite},
    Named1{"bitwise_not", &tessel::bitwise_not}, Named1{"not_", &tessel::bitwise_not}, TS_UNARY(real),
    TS_UNARY(imag), TS_UNARY(conj), TS_UNARY(stop_gradient), Named1{"population_count", &tessel::lax::population_count}, Named1{"clz", &tessel::lax::clz},
    TS_UNARY(bessel_i0e), TS_UNARY(bessel_i1e), Named1{"round", static_cast<UnaryFn>(&tessel::round)},
};

const Named2 kLaxBinary[] = {
    TS_BINARY(add), Named2{"sub", &tessel::subtract}, Named2{"mul", &tessel::multiply}, Named2{"div", &tessel::lax::div},
    TS_BINARY(rem), TS_BINARY(pow), Named2{"max", &tessel::maximum}, Named2{"min", &tessel::minimum},
    TS_BINARY(atan2), Named2{"eq", &tessel::equal}, Named2{"ne", &tessel::not_equal}, Named2{"lt", &tessel::less},
    Named2{"le", &tessel::less_equal}, Named2{"gt", &tessel::greater}, Named2{"ge", &tessel::greater_equal},
    Named2{"bitwise_and", &tessel::bitwise_and}, Named2{"bitwise_or", &tessel::bitwise_or},
    Named2{"bitwise_xor", &tessel::bitwise_xor}, Named2{"shift_left", &tessel::left_shift},
    Named2{"shift_right_arithmetic", &tessel::right_shift}, Named2{"shift_right_logical", &tessel::lax::shift_right_logical}, TS_BINARY(nextafter),
    TS_BINARY(igamma), TS_BINARY(igammac), TS_BINARY(zeta), TS_BINARY(polygamma), Named2{"batch_matmul", &tessel::lax::batch_matmul},
    Named2{"complex", &tessel::complex},
};

// jax.nn's activations of one argument.
#define TS_NN(name) Named1{#name, static_cast<UnaryFn>(&tessel::nn::name)}
const Named1 kNnUnary[] = {
    TS_NN(relu), TS_NN(relu6), TS_NN(sigmoid), TS_NN(log_sigmoid), TS_NN(softplus), TS_NN(sparse_plus),
    TS_NN(sparse_sigmoid), TS_NN(soft_sign), TS_NN(silu), TS_NN(swish), TS_NN(mish), TS_NN(selu),
    TS_NN(hard_tanh), TS_NN(hard_sigmoid), TS_NN(hard_silu), TS_NN(hard_swish), TS_NN(log1mexp),
};
#undef TS_NN

struct NamedReduce {
  const char* name;
  ReduceFn fn;
};
// Reductions over `axis` (None: all axes) with keepdims.
const NamedReduce kReductions[] = {
    {"sum", &tessel::sum},       {"prod", &tessel::prod},       {"max", &tessel::max},
    {"min", &tessel::min},       {"mean", &tessel::mean},       {"any", &tessel::any},
    {"all", &tessel::all},       {"nansum", &tessel::nansum},   {"nanprod", &tessel::nanprod},
    {"nanmax", &tessel::nanmax}, {"nanmin", &tessel::nanmin},   {"nanmean", &tessel::nanmean},
    {"ptp", &tessel::ptp},       {"count_nonzero", &tessel::count_nonzero},
};
struct NamedVariance {
  const char* name;
  VarianceFn fn;
};
const NamedVariance kVariances[] = {
    {"var", &tessel::var}, {"std", &tessel::std}, {"nanvar", &tessel::nanvar}, {"nanstd", &tessel::nanstd}};

/// Converts the operands of a binary function: a Python scalar meets the other operand's
/// dtype weakly (JAX's rule), whichever side it is on.
std::pair<Array, Array> binary_operands(nb::handle a, nb::handle b) {
  if (nb::isinstance<Array>(a) || !nb::isinstance<Array>(b)) {
    Array x = to_array(a);
    return {x, to_array_like(b, x)};
  }
  Array y = to_array(b);
  return {to_array_like(a, y), y};
}

/// Applies an axis argument to a reduction: None reduces all axes, () none.
template <class F> Array reduce_over(const Array& x, nb::handle axis, F&& f) {
  std::optional<Axes> axes = to_axes(axis);
  if (axes && axes->empty()) return x;
  return f(axes.value_or(Axes{}));
}

Array with_dtype(const Array& x, nb::handle dtype) { return dtype.is_none() ? x : x.astype(dtype_from_py(dtype)); }

std::vector<Array> to_arrays(nb::handle seq) {
  std::vector<Array> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(to_array(h));
  return out;
}

nb::tuple to_tuple(const std::vector<Array>& xs) {
  nb::list l;
  for (const Array& x : xs) l.append(nb::cast(x));
  return nb::tuple(l);
}

void bind_unary(nb::module_& m, const Named1* begin, const Named1* end) {
  for (const Named1* f = begin; f != end; ++f) {
    UnaryFn fn = f->fn;
    m.def(f->name, [fn](nb::handle x) { return fn(to_array(x)); }, nb::arg("x"));
  }
}

void bind_binary(nb::module_& m, const Named2* begin, const Named2* end) {
  for (const Named2* f = begin; f != end; ++f) {
    BinaryFn fn = f->fn;
    m.def(f->name, [fn](nb::handle x, nb::handle y) {
      auto [a, b] = binary_operands(x, y);
      return fn(a, b);
    }, nb::arg("x"), nb::arg("y"));
  }
}

void bind_numpy_functions(nb::module_& m) {
  bind_unary(m, std::begin(kNumpyUnary), std::end(kNumpyUnary));
  bind_binary(m, std::begin(kNumpyBinary), std::end(kNumpyBinary));
  for (const NamedReduce& r : kReductions) {
    ReduceFn fn = r.fn;
    m.def(r.name, [fn](nb::handle a, nb::handle axis, nb::handle dtype, bool keepdims) {
      Array x = with_dtype(to_array(a), dtype);
      return reduce_over(x, axis, [&](Axes axes) { return fn(x, axes, keepdims); });
    }, nb::arg("a"), nb::arg("axis").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
       nb::arg("keepdims") = false);
  }
  for (const NamedVariance& r : kVariances) {
    VarianceFn fn = r.fn;
    m.def(r.name, [fn](nb::handle a, nb::handle axis, nb::handle dtype, double ddof, bool keepdims) {
      Array x = with_dtype(to_array(a), dtype);
      return reduce_over(x, axis, [&](Axes axes) { return fn(x, axes, keepdims, ddof); });
    }, nb::arg("a"), nb::arg("axis").none() = nb::none(), nb::arg("dtype").none() = nb::none(),
       nb::arg("ddof") = 0.0, nb::arg("keepdims") = false);
  }
  m.def("argmax", [](nb::handle a, std::optional<int64_t> axis, bool keepdims) {
    return argmax(to_array(a), axis, keepdims);
  }, nb::arg("a"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  m.def("argmin", [](nb::handle a, std::optional<int64_t> axis, bool keepdims) {
    return argmin(to_array(a), axis, keepdims);
  }, nb::arg("a"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  using CumulativeFn = Array (*)(const Array&, int64_t, bool);
  const std::pair<const char*, CumulativeFn> cumulative[] = {
      {"cumsum", &cumsum}, {"cumprod", &cumprod}, {"nancumsum", &nancumsum}, {"nancumprod", &nancumprod}};
  for (auto [name, fn] : cumulative)
    m.def(name, [fn](nb::handle a, std::optional<int64_t> axis, nb::handle dtype) {
      Array x = with_dtype(to_array(a), dtype);
      return axis ? fn(x, *axis, false) : fn(ravel(x), 0, false);
    }, nb::arg("a"), nb::arg("axis").none() = nb::none(), nb::arg("dtype").none() = nb::none());

  // creation
  m.def("asarray", [](nb::handle a, nb::handle dtype) { return with_dtype(to_array(a), dtype); }, nb::arg("a"),
        nb::arg("dtype").none() = nb::none());
  m.def("zeros", [](nb::handle shape, nb::handle dtype) {
    return zeros(to_shape(shape), optional_dtype(dtype).value_or(default_float));
  }, nb::arg("shape"), nb::arg("dtype").none() = nb::none());
  m.def("ones", [](nb::handle shape, nb::handle dtype) {
    return ones(to_shape(shape), optional_dtype(dtype).value_or(default_float));
  }, nb::arg("shape"), nb::arg("dtype").none() = nb::none());
  m.def("full", [](nb::handle shape, nb::handle value, nb::handle dtype) {
    return full(to_shape(shape), to_array(value), optional_dtype(dtype));
  }, nb::arg("shape"), nb::arg("fill_value"), nb::arg("dtype").none() = nb::none());
  m.def("zeros_like", [](nb::handle a, nb::handle dtype) { return zeros_like(with_dtype(to_array(a), dtype)); },
        nb::arg("a"), nb::arg("dtype").none() = nb::none());
  m.def("ones_like", [](nb::handle a, nb::handle dtype) { return ones_like(with_dtype(to_array(a), dtype)); },
        nb::arg("a"), nb::arg("dtype").none() = nb::none());
  m.def("full_like", [](nb::handle a, nb::handle value, nb::handle dtype) {
    Array x = with_dtype(to_array(a), dtype);
    return full(x.shape(), to_array_like(value, x), x.dtype());
  }, nb::arg("a"), nb::arg("fill_value"), nb::arg("dtype").none() = nb::none());
  m.def("arange", [](double start, std::optional<double> stop, std::optional<double> step, nb::handle dtype,
                     bool integral) {
    DType d = optional_dtype(dtype).value_or(integral ? default_int : default_float);
    if (!stop) return arange(0.0, start, step.value_or(1.0), d);
    return arange(start, *stop, step.value_or(1.0), d);
  }, nb::arg("start"), nb::arg("stop").none() = nb::none(), nb::arg("step").none() = nb::none(),
     nb::arg("dtype").none() = nb::none(), nb::arg("integral") = false);
  m.def("linspace", [](double start, double stop, int64_t num, bool endpoint, nb::handle dtype) {
    return linspace(start, stop, num, endpoint, optional_dtype(dtype).value_or(default_float));
  }, nb::arg("start"), nb::arg("stop"), nb::arg("num") = 50, nb::arg("endpoint") = true,
     nb::arg("dtype").none() = nb::none());
  m.def("eye", [](int64_t n, std::optional<int64_t> cols, int64_t k, nb::handle dtype) {
    return eye(n, cols, k, optional_dtype(dtype).value_or(default_float));
  }, nb::arg("N"), nb::arg("M").none() = nb::none(), nb::arg("k") = 0, nb::arg("dtype").none() = nb::none());

  // shapes
  m.def("reshape", [](nb::handle a, nb::handle shape) { return reshape(to_array(a), to_shape(shape)); },
        nb::arg("a"), nb::arg("shape"));
  m.def("transpose", [](nb::handle a, nb::handle axes) { return transpose(to_array(a), to_axes(axes)); },
        nb::arg("a"), nb::arg("axes").none() = nb::none());
  m.def("moveaxis", [](nb::handle a, int64_t s, int64_t d) { return moveaxis(to_array(a), s, d); }, nb::arg("a"),
        nb::arg("source"), nb::arg("destination"));
  m.def("swapaxes", [](nb::handle a, int64_t x, int64_t y) { return swapaxes(to_array(a), x, y); }, nb::arg("a"),
        nb::arg("axis1"), nb::arg("axis2"));
  m.def("squeeze", [](nb::handle a, nb::handle axis) { return squeeze(to_array(a), to_axes(axis)); }, nb::arg("a"),
        nb::arg("axis").none() = nb::none());
  m.def("expand_dims", [](nb::handle a, nb::handle axis) { return expand_dims(to_array(a), *to_axes(axis)); },
        nb::arg("a"), nb::arg("axis"));
  m.def("broadcast_to", [](nb::handle a, nb::handle shape) { return broadcast_to(to_array(a), to_shape(shape)); },
        nb::arg("a"), nb::arg("shape"));
  m.def("concatenate", [](nb::handle xs, int64_t axis) { return concatenate(to_arrays(xs), axis); },
        nb::arg("arrays"), nb::arg("axis") = 0);
  m.def("pad", [](nb::handle a, nb::handle pad_width, const std::string& mode, nb::handle constant_values) {
    // NumPy's pad_width: an int, one (before, after) pair, or one pair per axis.
    nb::object w = nb::module_::import_("numpy").attr("asarray")(pad_width, nb::arg("dtype") = "int64");
    std::vector<std::pair<int64_t, int64_t>> widths;
    std::vector<int64_t> flat = nb::cast<std::vector<int64_t>>(w.attr("ravel")());
    if (flat.size() == 1) widths.emplace_back(flat[0], flat[0]);
    else
      for (size_t k = 0; k + 1 < flat.size(); k += 2) widths.emplace_back(flat[k], flat[k + 1]);
    Array x = to_array(a);
    return pad(x, widths, mode, to_array_like(constant_values, x).astype(x.dtype()).scalar());
  }, nb::arg("array"), nb::arg("pad_width"), nb::arg("mode") = "constant", nb::arg("constant_values") = 0,
     "jnp.pad: pad_width an int, a (before, after) pair or one pair per axis; NumPy's modes.");
  m.def("stack", [](nb::handle xs, int64_t axis) { return stack(to_arrays(xs), axis); }, nb::arg("arrays"),
        nb::arg("axis") = 0);
  m.def("hstack", [](nb::handle xs) { return hstack(to_arrays(xs)); }, nb::arg("tup"));
  m.def("vstack", [](nb::handle xs) { return vstack(to_arrays(xs)); }, nb::arg("tup"));
  m.def("flip", [](nb::handle a, nb::handle axis) { return flip(to_array(a), to_axes(axis)); }, nb::arg("m"),
        nb::arg("axis").none() = nb::none());
  m.def("roll", [](nb::handle a, int64_t shift, std::optional<int64_t> axis) {
    Array x = to_array(a);
    return axis ? roll(x, shift, *axis) : roll(ravel(x), shift, 0).reshape(x.shape());
  }, nb::arg("a"), nb::arg("shift"), nb::arg("axis").none() = nb::none());
  m.def("tile", [](nb::handle a, nb::handle reps) { return tile(to_array(a), to_shape(reps)); }, nb::arg("A"),
        nb::arg("reps"));
  m.def("split", [](nb::handle a, nb::handle sections, int64_t axis) {
    Array x = to_array(a);
    if (PyLong_Check(sections.ptr())) return to_tuple(split(x, nb::cast<int64_t>(sections), axis));
    return to_tuple(split(x, to_shape(sections), axis));
  }, nb::arg("ary"), nb::arg("indices_or_sections"), nb::arg("axis") = 0);
  m.def("broadcast_shapes", [](nb::args shapes) {
    std::vector<Shape> s;
    for (nb::handle h : shapes) s.push_back(to_shape(h));
    Shape r = broadcast_shapes(s);
    nb::list l;
    for (int64_t d : r) l.append(d);
    return nb::tuple(l);
  });

  // selection, sorting, linear algebra
  m.def("where", [](nb::handle c, nb::handle x, nb::handle y) {
    auto [a, b] = binary_operands(x, y);
    return where(to_array(c), a, b);
  }, nb::arg("condition"), nb::arg("x"), nb::arg("y"));
  m.def("clip", [](nb::handle a, nb::handle lo, nb::handle hi) {
    Array x = to_array(a);
    Array l = lo.is_none() ? x : to_array_like(lo, x);
    Array h = hi.is_none() ? x : to_array_like(hi, x);
    return clip(x, l, h);
  }, nb::arg("a"), nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
  m.def("take", [](nb::handle a, nb::handle indices, std::optional<int64_t> axis, std::optional<std::string> mode) {
    IndexOptions options;
    if (mode) options.mode = *mode;
    return take(to_array(a), to_array(indices), axis, options);
  }, nb::arg("a"), nb::arg("indices"), nb::arg("axis").none() = nb::none(), nb::arg("mode").none() = nb::none());
  m.def("take_along_axis", [](nb::handle a, nb::handle indices, std::optional<int64_t> axis) {
    return take_along_axis(to_array(a), to_array(indices), axis);
  }, nb::arg("arr"), nb::arg("indices"), nb::arg("axis").none());
  m.def("sort", [](nb::handle a, std::optional<int64_t> axis, bool stable, bool descending) {
    return sort(to_array(a), axis, stable, descending);
  }, nb::arg("a"), nb::arg("axis").none() = -1, nb::arg("stable") = true, nb::arg("descending") = false);
  m.def("argsort", [](nb::handle a, std::optional<int64_t> axis, bool stable, bool descending) {
    return argsort(to_array(a), axis, stable, descending);
  }, nb::arg("a"), nb::arg("axis").none() = -1, nb::arg("stable") = true, nb::arg("descending") = false);
  m.def("einsum", [](const std::string& spec, nb::args operands) { return einsum(spec, to_arrays(operands)); },
        nb::arg("subscripts"), nb::arg("operands"));
  m.def("tril", [](nb::handle a, int64_t k) { return tril(to_array(a), k); }, nb::arg("m"), nb::arg("k") = 0);
  m.def("triu", [](nb::handle a, int64_t k) { return triu(to_array(a), k); }, nb::arg("m"), nb::arg("k") = 0);
  m.def("diag", [](nb::handle a, int64_t k) { return diag(to_array(a), k); }, nb::arg("v"), nb::arg("k") = 0);
  m.def("isclose", [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan) {
    auto [x, y] = binary_operands(a, b);
    return isclose(x, y, CloseOptions{.rtol = rtol, .atol = atol, .equal_nan = equal_nan});
  }, nb::arg("a"), nb::arg("b"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false);
  m.def("allclose", [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan) {
    auto [x, y] = binary_operands(a, b);
    return allclose(x, y, CloseOptions{.rtol = rtol, .atol = atol, .equal_nan = equal_nan});
  }, nb::arg("a"), nb::arg("b"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("equal_nan") = false);
  m.def("result_type", [](nb::args xs) { return dtype_to_py(result_type(to_arrays(xs))); });
  m.def("promote_types", [](nb::handle a, nb::handle b) {
    return dtype_to_py(promote_types(dtype_from_py(a), dtype_from_py(b)));
  }, nb::arg("a"), nb::arg("b"));
}

void bind_lax_functions(nb::module_& m) {
  bind_unary(m, std::begin(kLaxUnary), std::end(kLaxUnary));
  bind_binary(m, std::begin(kLaxBinary), std::end(kLaxBinary));
  m.def("convert_element_type", [](nb::handle x, nb::handle dtype) { return to_array(x).astype(dtype_from_py(dtype)); },
        nb::arg("operand"), nb::arg("new_dtype"));
  m.def("broadcast_in_dim", [](nb::handle x, nb::handle shape, nb::handle dims) {
    return broadcast_in_dim(to_array(x), to_shape(shape), to_shape(dims));
  }, nb::arg("operand"), nb::arg("shape"), nb::arg("broadcast_dimensions"));
  m.def("slice", [](nb::handle x, nb::handle start, nb::handle limit, nb::handle strides) {
    return slice(to_array(x), to_shape(start), to_shape(limit), strides.is_none() ? Shape{} : to_shape(strides));
  }, nb::arg("operand"), nb::arg("start_indices"), nb::arg("limit_indices"), nb::arg("strides").none() = nb::none());
  m.def("dynamic_slice", [](nb::handle x, nb::handle start, nb::handle sizes) {
    return dynamic_slice(to_array(x), to_arrays(start), to_shape(sizes));
  }, nb::arg("operand"), nb::arg("start_indices"), nb::arg("slice_sizes"));
  m.def("dynamic_update_slice", [](nb::handle x, nb::handle update, nb::handle start) {
    return dynamic_update_slice(to_array(x), to_array(update), to_arrays(start));
  }, nb::arg("operand"), nb::arg("update"), nb::arg("start_indices"));
  m.def("select", [](nb::handle p, nb::handle a, nb::handle b) { return select(to_array(p), to_array(a), to_array(b)); },
        nb::arg("pred"), nb::arg("on_true"), nb::arg("on_false"));
  m.def("clamp", [](nb::handle lo, nb::handle x, nb::handle hi) {
    Array v = to_array(x);
    return clamp(to_array_like(lo, v), v, to_array_like(hi, v));
  }, nb::arg("min"), nb::arg("x"), nb::arg("max"));
  m.def("iota", [](nb::handle dtype, int64_t size) { return iota(dtype_from_py(dtype), Shape{size}, 0); },
        nb::arg("dtype"), nb::arg("size"));
  m.def("reduce_sum", [](nb::handle x, nb::handle axes) { return sum(to_array(x), to_shape(axes)); },
        nb::arg("operand"), nb::arg("axes"));
  m.def("reduce_max", [](nb::handle x, nb::handle axes) { return max(to_array(x), to_shape(axes)); },
        nb::arg("operand"), nb::arg("axes"));
  m.def("reduce_min", [](nb::handle x, nb::handle axes) { return min(to_array(x), to_shape(axes)); },
        nb::arg("operand"), nb::arg("axes"));
}

void bind_random_functions(nb::module_& m) {
  m.def("key", [](int64_t seed) { return random::key(seed); }, nb::arg("seed"),
        "A PRNG key from an integer seed (jax.random.key).");
  m.def("PRNGKey", [](int64_t seed) { return random::key(seed); }, nb::arg("seed"));
  m.def("split", [](nb::handle key, int64_t num) { return random::split(to_array(key), num); }, nb::arg("key"),
        nb::arg("num") = 2);
  m.def("fold_in", [](nb::handle key, nb::handle data) { return random::fold_in(to_array(key), to_array(data)); },
        nb::arg("key"), nb::arg("data"));
  m.def("uniform", [](nb::handle key, nb::handle shape, nb::handle dtype, nb::handle minval, nb::handle maxval) {
    DType d = optional_dtype(dtype).value_or(default_float);
    Array lo = to_array(minval), hi = to_array(maxval);
    return random::uniform(to_array(key), to_shape(shape), d, lo, hi);
  }, nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype").none() = nb::none(),
     nb::arg("minval") = 0.0, nb::arg("maxval") = 1.0);
  m.def("normal", [](nb::handle key, nb::handle shape, nb::handle dtype) {
    return random::normal(to_array(key), to_shape(shape), optional_dtype(dtype).value_or(default_float));
  }, nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype").none() = nb::none());
  m.def("bits", [](nb::handle key, nb::handle shape, nb::handle dtype) {
    return random::bits(to_array(key), to_shape(shape), optional_dtype(dtype).value_or(DType::uint32));
  }, nb::arg("key"), nb::arg("shape") = nb::tuple(), nb::arg("dtype").none() = nb::none());
}

}  // namespace

void bind_numpy(nb::module_& m) {
  nb::module_ np = m.def_submodule("numpy_functions", "C++ functions behind tessel.numpy");
  bind_numpy_functions(np);
  nb::module_ lax = m.def_submodule("lax_functions", "C++ functions behind tessel.lax");
  bind_lax_functions(lax);
  nb::module_ nn = m.def_submodule("nn_functions", "C++ functions behind tessel.nn");
  bind_unary(nn, std::begin(kNnUnary), std::end(kNnUnary));
  nn.def("gelu", [](nb::handle x, bool approximate) { return nn::gelu(to_array(x), approximate); }, nb::arg("x"),
         nb::arg("approximate") = true);
  nn.def("softmax", [](nb::handle x, nb::handle axis) { return nn::softmax(to_array(x), *to_axes(axis)); },
         nb::arg("x"), nb::arg("axis") = -1);
  nn.def("log_softmax", [](nb::handle x, nb::handle axis) { return nn::log_softmax(to_array(x), *to_axes(axis)); },
         nb::arg("x"), nb::arg("axis") = -1);
  nn.def("logsumexp", [](nb::handle x, nb::handle axis) {
    return nn::logsumexp(to_array(x), to_axes(axis).value_or(Axes{}));
  }, nb::arg("a"), nb::arg("axis").none() = nb::none());
  nb::module_ rnd = m.def_submodule("random_functions", "C++ functions behind tessel.random");
  bind_random_functions(rnd);
}

}  // namespace tessel::python
