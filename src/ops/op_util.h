#pragma once
// Shared helpers for defining primitives and their jax.numpy-level wrappers.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/compute_type.h"
#include "backend/cpu/parallel.h"
#include "core/array_impl.h"
#include "ir/primitive.h"
#include "ir/trace.h"
#include "tessel/ops.h"

namespace tessel::ops {

using detail::bind;
using detail::bind1;
using ir::KernelCall;
using ir::Params;

/// `axis` in [0, ndim) (negative counts from the end), else IndexError naming `op`.
int64_t canonicalize_axis(const std::string& op, int64_t axis, int64_t ndim);
/// Axes canonicalized, sorted, checked for repeats; empty input means all axes when
/// `empty_means_all`.
Axes canonicalize_axes(const std::string& op, const Axes& axes, int64_t ndim, bool empty_means_all);
/// NumPy broadcasting of shapes, or ShapeError "op: cannot broadcast shapes (3, 2) and (4,)".
Shape broadcast_shapes(const std::string& op, const std::vector<Shape>& shapes);
/// jax.numpy promotion of the arguments' dtypes (weak-aware).
PromotedType result_type(const std::vector<Array>& xs);
/// convert_element_type primitive (no-op when nothing changes).
Array convert(const Array& x, DType dtype, bool weak = false);
/// The default dtype of d's kind (bool, int32, float32, complex64): the dtype a weak value
/// (a C++ scalar, like a Python scalar in JAX) gets when an operation must give it one.
DType kind_default(DType d);
/// The dtype jax.numpy reductions give `x`: its kind's default when x is weak (so
/// `sum(Array(2.0))` is a strong float32), else its own.
DType strong_dtype(const Array& x);
/// Converts every argument to their promoted dtype and broadcasts them to a common shape;
/// rank-0 arguments stay rank-0 (element-wise primitives accept scalars in any position).
std::vector<Array> promote_broadcast(const std::string& op, std::vector<Array> xs);
/// Same, with an explicit target dtype.
std::vector<Array> broadcast_all(const std::string& op, std::vector<Array> xs);
/// Throws DTypeError "op: dtype X is not supported; expected <what>" unless ok.
void check_dtype(const std::string& op, DType d, bool ok, const char* what);
/// Throws "op: what has type X, expected Y; fix" unless `got` has `want`'s shape and dtype
/// (DTypeError when only the dtype differs, else ShapeError).
void check_same_type(const std::string& op, const std::string& what, const Aval& got, const Aval& want,
                     const std::string& fix);
/// The same for lists (entry i is named "what i"); a ValueError when the lengths differ.
void check_same_types(const std::string& op, const std::string& what, std::span<const Aval> got,
                      std::span<const Aval> want, const std::string& fix);
/// Element-wise abstract evaluation: all inputs have one shape (or rank 0) and one dtype.
/// Output dtype = input dtype unless `out` is given.
Aval elementwise_aval(const std::string& op, std::span<const Aval> ins);
std::string avals_to_string(std::span<const Aval> avals);

/// Row-major strides (in elements).
std::vector<int64_t> strides_of(const Shape& s);

/// Where dynamic_slice and dynamic_update_slice start a window of `window` positions along a
/// dimension of `extent` given `start`: counted from the end when negative, then clamped so
/// that the window fits (as JAX does).
inline int64_t window_start(int64_t start, int64_t extent, int64_t window) {
  return std::clamp<int64_t>(start < 0 ? start + extent : start, 0, extent - window);
}

/// Elements per chunk when an unfused element-wise kernel is split over threads.
inline constexpr int64_t kElementwiseGrain = int64_t(1) << 16;

/// Applies f element-wise: `map_elementwise<Out, In1, In2>(call, f)`; rank-0 inputs broadcast.
/// Large arrays are split over the shared thread arena (f must be pure).
template <class R, class... Ts, class F> void map_elementwise(const KernelCall& c, F f) {
  const int64_t n = c.out_avals[0].size();
  R* out = c.out<R>(0);
  auto run = [&]<size_t... I>(std::index_sequence<I...>) {
    const std::tuple<const Ts*...> in{c.in<Ts>(I)...};
    const bool scalar[] = {(c.in_avals[I].shape.empty() && n != 1)...};
    bool any_scalar = false;
    for (bool s : scalar) any_scalar |= s;
    auto body = [&](int64_t lo, int64_t hi) {
      if (!any_scalar) {
        for (int64_t i = lo; i < hi; ++i) out[i] = f(std::get<I>(in)[i]...);
      } else {
        for (int64_t i = lo; i < hi; ++i) out[i] = f(std::get<I>(in)[scalar[I] ? 0 : i]...);
      }
    };
    // Small arrays (the common eager case) skip the std::function of parallel_for.
    if (n <= kElementwiseGrain) body(0, n);
    else cpu::parallel_for(n, kElementwiseGrain, body);
  };
  run(std::index_sequence_for<Ts...>{});
}

using cpu::compute_t;
using cpu::compute_type;
using cpu::is_complex_v;
using cpu::is_float_v;
using cpu::is_half_v;

/// The C++ type generated code uses for `d` ("float", "int32_t", "bool"), or nullptr for
/// the dtypes code generation leaves to the unfused kernels (half and complex types).
const char* codegen_type(DType d);
/// `fn(operands...)` converted to the output's C++ type, or "" when a dtype has no
/// generated form (a CodegenFn for primitives whose scalar function is scalar::<fn>).
std::string codegen_call(const std::string& fn, std::span<const std::string> operands, std::span<const Aval> in_avals,
                         const Aval& out);

}  // namespace tessel::ops
