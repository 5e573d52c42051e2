#pragma once
// The rest of jax.lax (docs/lax.md): JAX's general gather and scatter with their dimension
// numbers, lax's element-wise integer and rounding functions, shape and slicing helpers,
// general reductions and scans over callables, ragged products, the convolution shape
// helpers, patches and unshared convolutions, and the collectives written in terms of the
// ones in tessel/shard_map.h. Names and arguments follow jax.lax, in namespace tessel::lax
// where a tessel (jnp) function of the same name means something else (lax::round rounds
// half away from zero; lax::div truncates integers).
//
// Everything here is a composition of tessel's primitives, so it works eagerly and under
// jit, vmap and (where JAX differentiates it) jvp and grad.
//
//   namespace lax = ts::lax;
//   lax::GatherDimensionNumbers dn{.offset_dims = {1}, .collapsed_slice_dims = {0}, .start_index_map = {0}};
//   ts::Array rows = lax::gather(x, idx, dn, {1, x.dim(1)});      // x[idx[:, 0]]
//   ts::Array y = lax::scatter_add(x, idx, u, {.update_window_dims = {1}, .inserted_window_dims = {0},
//                                              .scatter_dims_to_operand_dims = {0}});
//   ts::Array c = lax::associative_scan(ts::add, x);              // cumsum in log depth
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessel/array.h"
#include "tessel/conv.h"
#include "tessel/linalg.h"
#include "tessel/ops.h"
#include "tessel/shard_map.h"

namespace tessel::lax {

// ---- element-wise ------------------------------------------------------------------------

/// lax.div: x / y rounded towards zero for integers (C's division; an integer x / 0 gives
/// what XLA's CPU gives: all bits set), true division for inexact dtypes. Operands promote
/// as jnp's (C++ scalars are weak) and broadcast.
TESSEL_API Array div(const Array& x, const Array& y);

/// lax.RoundingMethod.
enum class RoundingMethod { kAwayFromZero = 0, kToNearestEven = 1 };
/// lax.round: rounds to the nearest integer, halves away from zero (the default) or to even.
/// Floating dtypes only; the derivative is zero.
TESSEL_API Array round(const Array& x, RoundingMethod rounding_method = RoundingMethod::kAwayFromZero);

/// lax.integer_pow: x ** y for a static integer y by repeated multiplication (a negative y
/// gives 1 / x ** -y; integers need y >= 0). Differentiable: y * x ** (y - 1).
TESSEL_API Array integer_pow(const Array& x, int64_t y);

/// lax.shift_right_logical: shifts the bits of integer x right by y, filling with zeros
/// (also for signed dtypes); shifts of the bit width or more give 0.
TESSEL_API Array shift_right_logical(const Array& x, const Array& y);

/// lax.clz: the number of leading zero bits of each integer, in x's dtype.
TESSEL_API Array clz(const Array& x);

/// lax.population_count: the number of set bits of each integer (two's complement for
/// negative values), in x's dtype.
TESSEL_API Array population_count(const Array& x);

/// lax.mulhi: the high half of the double-width product x * y of integers of one dtype
/// (signed or unsigned), in that dtype.
TESSEL_API Array mulhi(const Array& x, const Array& y);

/// lax.reduce_precision: x rounded (to nearest even) to a float format with `exponent_bits`
/// exponent and `mantissa_bits` mantissa bits, as XLA does: values past the format's range
/// become +-inf, below its smallest normal +-0; NaN stays NaN. Its derivative is the
/// identity (JAX also rounds the tangent: the two differ by that one rounding).
TESSEL_API Array reduce_precision(const Array& x, int exponent_bits, int mantissa_bits);

/// lax.select_n: cases[which] element-wise. `which` is bool (two cases) or int32 (any number
/// of cases, each value in [0, cases.size())); the cases share one shape and dtype, `which`
/// is a scalar or of that shape.
TESSEL_API Array select_n(const Array& which, const std::vector<Array>& cases);

// ---- reductions -------------------------------------------------------------------------

/// lax.argmax: the index of the largest element along `axis` (first of ties; NaN counts as
/// the largest), as `index_dtype` (an integer dtype).
TESSEL_API Array argmax(const Array& operand, int64_t axis, DType index_dtype = DType::int32);
/// lax.argmin: the index of the smallest element along `axis`, as `index_dtype`.
TESSEL_API Array argmin(const Array& operand, int64_t axis, DType index_dtype = DType::int32);

/// A reduction's combining function over several operands: (accumulators, values) ->
/// accumulators, element-wise, one array per operand.
using ReduceComputation = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;
/// lax.reduce over several operands of one shape: folds `dimensions` (distinct axes) with
/// `computation`, starting from `init_values` (scalars, one per operand, of the operands'
/// dtypes). The fold is a balanced tree of element-wise calls (log2(n) of them per axis), so
/// `computation` must be associative and commutative (as XLA requires) and run on arrays.
TESSEL_API std::vector<Array> reduce(const std::vector<Array>& operands, const std::vector<Array>& init_values,
                                     const ReduceComputation& computation, const Axes& dimensions);
/// lax.reduce of one operand with a binary element-wise function (ts::add, ts::maximum, ...).
TESSEL_API Array reduce(const Array& operand, const Array& init_value,
                        const std::function<Array(const Array&, const Array&)>& computation, const Axes& dimensions);
/// lax.reduce_xor: the bitwise xor of integers (the parity of booleans) over `axes`.
TESSEL_API Array reduce_xor(const Array& operand, const Axes& axes);

// ---- scans and maps ------------------------------------------------------------------------

/// An associative function on several arrays at once (one per element of the scanned
/// tuple): (a, b) -> a (op) b, element-wise over the leading slices.
using AssociativeFn = std::function<std::vector<Array>(const std::vector<Array>&, const std::vector<Array>&)>;
/// lax.associative_scan: the inclusive prefix scan of `fn` over `axis` of `elems` (one
/// array or several of one length along it), by JAX's parallel algorithm (odd/even
/// recursion: O(log n) calls of fn on slices), so results equal JAX's. `reverse` scans from
/// the end.
TESSEL_API std::vector<Array> associative_scan(const AssociativeFn& fn, const std::vector<Array>& elems,
                                               bool reverse = false, int64_t axis = 0);
/// associative_scan of one array with a binary function (ts::add gives cumsum).
TESSEL_API Array associative_scan(const std::function<Array(const Array&, const Array&)>& fn, const Array& elems,
                                  bool reverse = false, int64_t axis = 0);

/// lax.map: f applied to each slice of xs along its leading axis, results stacked, run
/// sequentially by a scan (one slice at a time); with batch_size, by a scan over vmapped
/// batches of that many slices (the remainder vmapped once at the end).
TESSEL_API Array map(const std::function<Array(const Array&)>& f, const Array& xs,
                     std::optional<int64_t> batch_size = std::nullopt);

// ---- shape ------------------------------------------------------------------------------

/// lax.broadcast: x with new leading dimensions `sizes`.
TESSEL_API Array broadcast(const Array& operand, const Shape& sizes);
/// lax.broadcast_to_rank: x with leading size-1 dimensions added up to rank `rank`.
TESSEL_API Array broadcast_to_rank(const Array& x, int64_t rank);
/// lax.broadcast_like: x broadcast to like_arr's shape.
TESSEL_API Array broadcast_like(const Array& arr, const Array& like_arr);
/// lax.collapse: dimensions [start_dimension, stop_dimension) merged into one (none: to the
/// end; negative values count from the end).
TESSEL_API Array collapse(const Array& operand, int64_t start_dimension,
                          std::optional<int64_t> stop_dimension = std::nullopt);
/// lax.empty: an array of `shape` and `dtype` (tessel fills it with zeros).
TESSEL_API Array empty(const Shape& shape, DType dtype = default_float);
/// lax.optimization_barrier: its operands unchanged, derivatives too. No barrier is placed:
/// JAX's only constrains XLA's scheduling, and tessel's fusion and CSE may still combine
/// work across this call.
TESSEL_API std::vector<Array> optimization_barrier(const std::vector<Array>& operands);

// ---- slicing and indexing ------------------------------------------------------------------

/// lax.index_in_dim: x[..., index, ...] along `axis` (negative index counts from the end);
/// keepdims keeps the axis with size 1.
TESSEL_API Array index_in_dim(const Array& operand, int64_t index, int64_t axis = 0, bool keepdims = true);
/// lax.dynamic_slice_in_dim: `slice_size` elements from the traced `start_index` along
/// `axis` (clamped so the window fits, as dynamic_slice).
TESSEL_API Array dynamic_slice_in_dim(const Array& operand, const Array& start_index, int64_t slice_size,
                                      int64_t axis = 0);
/// lax.dynamic_index_in_dim: the traced `index` along `axis`; keepdims keeps the axis.
TESSEL_API Array dynamic_index_in_dim(const Array& operand, const Array& index, int64_t axis = 0, bool keepdims = true);
/// lax.dynamic_update_slice_in_dim: `update` written at the traced `start_index` along
/// `axis` (other dimensions from 0).
TESSEL_API Array dynamic_update_slice_in_dim(const Array& operand, const Array& update, const Array& start_index,
                                             int64_t axis);
/// lax.dynamic_update_index_in_dim: `update` (with or without the indexed axis) written at
/// the traced `index` along `axis`.
TESSEL_API Array dynamic_update_index_in_dim(const Array& operand, const Array& update, const Array& index,
                                             int64_t axis);
/// lax.index_take: src[idxs[0], idxs[1], ...] with idxs[k] (1-D integer arrays of one
/// length) indexing axes[k]; the result's leading axis runs over the index tuples, followed
/// by src's other axes.
TESSEL_API Array index_take(const Array& src, const std::vector<Array>& idxs, const Axes& axes);

/// lax.GatherDimensionNumbers: how a gather's start indices and slices map to the operand
/// and result (the index vector is the last dimension of start_indices, as in lax.gather).
struct GatherDimensionNumbers {
  /// The result's dimensions that hold the slices' (non-collapsed) dimensions, ascending.
  Axes offset_dims;
  /// Operand dimensions of slice size 1 dropped from the result.
  Axes collapsed_slice_dims;
  /// start_index_map[k]: the operand dimension entry k of an index vector starts at.
  Axes start_index_map;
  /// Operand dimensions (slice size 1) indexed by the position along the matching
  /// start_indices_batching_dims of start_indices.
  Axes operand_batching_dims = {};
  Axes start_indices_batching_dims = {};
};
/// lax.GatherScatterMode as a string: "clip" (indices clamped so the slice fits), "fill"
/// (alias "drop", the default of the scatters: a slice that does not fit reads fill_value /
/// a window that does not fit is dropped) or "promise_in_bounds" (the default of gather, as
/// JAX's: the caller promises in-range indices; gather clamps, scatter drops).
struct GatherOptions {
  std::string mode = "promise_in_bounds";
  /// The value read by out-of-bounds slices in "fill" mode; default NaN for inexact dtypes,
  /// the minimum of signed, the maximum of unsigned integers, true for bool (as JAX).
  std::optional<Scalar> fill_value = std::nullopt;
  bool indices_are_sorted = false;  ///< a hint, ignored
  bool unique_indices = false;      ///< a hint, ignored
};
/// lax.gather: slices of `slice_sizes` (one per operand dimension) starting at each index
/// vector of `start_indices` (integers; last dimension = the vector), arranged by
/// `dimension_numbers` exactly as XLA's Gather. Differentiable in the operand.
TESSEL_API Array gather(const Array& operand, const Array& start_indices, const GatherDimensionNumbers& dimension_numbers,
                        const Shape& slice_sizes, const GatherOptions& options = {});

/// lax.ScatterDimensionNumbers: how a scatter's indices and updates map to the operand.
struct ScatterDimensionNumbers {
  /// The dimensions of `updates` that hold the window (ascending); the others are the
  /// scatter (batch) dimensions, matching scatter_indices' leading dimensions.
  Axes update_window_dims;
  /// Operand dimensions of window size 1 that updates do not have.
  Axes inserted_window_dims;
  /// scatter_dims_to_operand_dims[k]: the operand dimension entry k of an index vector
  /// starts at.
  Axes scatter_dims_to_operand_dims;
  Axes operand_batching_dims = {};
  Axes scatter_indices_batching_dims = {};
};
/// The keyword arguments of the scatter functions (mode as GatherOptions::mode).
struct ScatterOptions {
  std::string mode = "fill";
  bool indices_are_sorted = false;  ///< a hint, ignored
  bool unique_indices = false;      ///< a hint, ignored
};
/// lax.scatter: operand with each update window written at its index (XLA's Scatter; of
/// duplicate indices the last update wins). Differentiable in operand and updates.
TESSEL_API Array scatter(const Array& operand, const Array& scatter_indices, const Array& updates,
                         const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {});
/// lax.scatter_add: updates added at their indices (duplicates accumulate).
TESSEL_API Array scatter_add(const Array& operand, const Array& scatter_indices, const Array& updates,
                             const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {});
/// lax.scatter_sub: updates subtracted at their indices.
TESSEL_API Array scatter_sub(const Array& operand, const Array& scatter_indices, const Array& updates,
                             const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {});
/// lax.scatter_mul: the operand multiplied by the updates at their indices.
TESSEL_API Array scatter_mul(const Array& operand, const Array& scatter_indices, const Array& updates,
                             const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {});
/// lax.scatter_min: the minimum of operand and updates at their indices.
TESSEL_API Array scatter_min(const Array& operand, const Array& scatter_indices, const Array& updates,
                             const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {});
/// lax.scatter_max: the maximum of operand and updates at their indices.
TESSEL_API Array scatter_max(const Array& operand, const Array& scatter_indices, const Array& updates,
                             const ScatterDimensionNumbers& dimension_numbers, const ScatterOptions& options = {});
/// lax.scatter_apply: func (element-wise) applied to the operand's elements at the indices,
/// whose windows the dimension numbers and `update_shape` (the shape updates would have:
/// scatter dims and window) describe. As in XLA, an element k updates hit gets func applied
/// k times (a loop runs the repeats). Not differentiable (nor is JAX's).
TESSEL_API Array scatter_apply(const Array& operand, const Array& scatter_indices,
                               const std::function<Array(const Array&)>& func,
                               const ScatterDimensionNumbers& dimension_numbers, const Shape& update_shape = {},
                               const ScatterOptions& options = {});

// ---- random bits ---------------------------------------------------------------------------

/// lax.RandomAlgorithm: XLA's bit generators. The default is Philox on CPU, as in JAX.
enum class RandomAlgorithm { kDefault = 0, kThreeFry = 1, kPhilox = 2 };
/// lax.rng_bit_generator: (new key, bits of `shape` and unsigned `dtype`) from a uint32[4]
/// key, bit for bit as XLA's CPU: Philox4x32-10 with key (k0, k1) on the 128-bit counters
/// (k0 | k1 << 32) << 64 | c, plus the block index, c = k2 | k3 << 32, one 32-bit word per
/// element (two, low first, for 64-bit dtypes; narrower dtypes keep the low bits); the new
/// key advances c by the blocks used. kThreeFry: XLA's Threefry-2x32 (20 rounds) keyed by
/// (k0, k1) on the counters c + i (uint32 and uint64 only, as XLA; the new key advances c).
TESSEL_API std::pair<Array, Array> rng_bit_generator(const Array& key, const Shape& shape, DType dtype = DType::uint32,
                                                     RandomAlgorithm algorithm = RandomAlgorithm::kDefault);

// ---- products ------------------------------------------------------------------------------

/// lax.batch_matmul: matrix products over the last two axes of operands of one rank >= 2
/// with equal leading (batch) dimensions.
TESSEL_API Array batch_matmul(const Array& lhs, const Array& rhs);
/// lax.ragged_dot: lhs (m, k) times rhs (g, k, n) where the rows of lhs come in g
/// consecutive groups of group_sizes (int32 (g,)) rows, group i using rhs[i]; rows after
/// the last group are 0. Result (m, n).
TESSEL_API Array ragged_dot(const Array& lhs, const Array& rhs, const Array& group_sizes,
                            std::optional<DType> preferred_element_type = std::nullopt);
/// lax.RaggedDotDimensionNumbers: a dot_general whose lhs dimension lhs_ragged_dimensions[0]
/// is split in groups of group_sizes. Ragged non-contracting dimension: rhs has a group
/// dimension (rhs_group_dimensions[0]); ragged contracting dimension: the result gains a
/// leading group dimension; ragged batch dimension: an ordinary dot_general.
struct RaggedDotDimensionNumbers {
  DotDims dot_dimension_numbers;
  Axes lhs_ragged_dimensions;
  Axes rhs_group_dimensions;
};
/// lax.ragged_dot_general: group_sizes is (g,), or (batch..., g) per batch of the product
/// for a ragged non-contracting dimension.
TESSEL_API Array ragged_dot_general(const Array& lhs, const Array& rhs, const Array& group_sizes,
                                    const RaggedDotDimensionNumbers& dimension_numbers,
                                    std::optional<DType> preferred_element_type = std::nullopt);

/// lax.approx_max_k: the k largest values along `reduction_dimension` and their int32
/// indices, computed exactly (as JAX on CPU; the recall arguments are accepted and checked).
TESSEL_API std::pair<Array, Array> approx_max_k(const Array& operand, int64_t k, int64_t reduction_dimension = -1,
                                                double recall_target = 0.95, int64_t reduction_input_size_override = -1,
                                                bool aggregate_to_topk = true);
/// lax.approx_min_k: the k smallest values (smallest first) and their indices, exactly.
TESSEL_API std::pair<Array, Array> approx_min_k(const Array& operand, int64_t k, int64_t reduction_dimension = -1,
                                                double recall_target = 0.95, int64_t reduction_input_size_override = -1,
                                                bool aggregate_to_topk = true);

// ---- convolution shape helpers and patches ------------------------------------------------

/// lax.conv_dimension_numbers: the dimension numbers as permutations (lhs, rhs, out specs)
/// for operands of these shapes: the default ones (0, 1, 2, ...) when `dimension_numbers` is
/// default, else `dimension_numbers` itself after checking the ranks.
TESSEL_API ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                                       const ConvDimensionNumbers& dimension_numbers = {});
/// lax.conv_general_permutations: the (lhs, rhs, out) permutations of layout strings such as
/// ("NHWC", "HWIO", "NHWC") relative to (N, C, spatial...) order.
TESSEL_API std::vector<Axes> conv_general_permutations(const std::string& lhs, const std::string& rhs,
                                                       const std::string& out);
/// lax.conv_shape_tuple: the output shape of a convolution of operands in canonical order
/// (N, C, spatial...) / (O, I, spatial...), padding "SAME"/"VALID"/"SAME_LOWER" or pairs.
TESSEL_API Shape conv_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& strides,
                                  const WindowPadding& pads, int64_t batch_group_count = 1);
/// lax.conv_general_shape_tuple: the output shape for operands laid out by
/// `dimension_numbers`.
TESSEL_API Shape conv_general_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& window_strides,
                                          const WindowPadding& padding, const ConvDimensionNumbers& dimension_numbers);
/// lax.conv_transpose_shape_tuple: the output shape of conv_transpose.
TESSEL_API Shape conv_transpose_shape_tuple(const Shape& lhs_shape, const Shape& rhs_shape, const Shape& window_strides,
                                            const WindowPadding& padding,
                                            const ConvDimensionNumbers& dimension_numbers);
/// lax.padtype_to_pads: (low, high) pads of "SAME", "SAME_LOWER" or "VALID" for windows of
/// `window_shape` moving by `window_strides` over `in_shape`.
TESSEL_API std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const Shape& in_shape, const Shape& window_shape,
                                                                    const Shape& window_strides,
                                                                    const std::string& padding);
/// lax.reduce_window_shape_tuple: the output shape of reduce_window (dilations empty: 1).
TESSEL_API Shape reduce_window_shape_tuple(const Shape& operand_shape, const Shape& window_dimensions,
                                           const Shape& window_strides,
                                           const std::vector<std::pair<int64_t, int64_t>>& padding,
                                           const Shape& base_dilation = {}, const Shape& window_dilation = {});
/// The keyword arguments of conv_general_dilated_patches and conv_general_dilated_local.
struct ConvPatchesOptions {
  Shape lhs_dilation = {};
  Shape rhs_dilation = {};
  ConvDimensionNumbers dimension_numbers = {};
  Precision precision = Precision::kDefault;
  std::optional<DType> preferred_element_type = std::nullopt;
};
/// lax.conv_general_dilated_patches: the receptive field of each output position of a
/// convolution with a kernel of spatial shape `filter_shape`, flattened into the feature
/// dimension (C * prod(filter_shape) features, channel-major), by a grouped convolution with
/// an identity kernel as JAX does.
TESSEL_API Array conv_general_dilated_patches(const Array& lhs, const Shape& filter_shape, const Shape& window_strides,
                                              const WindowPadding& padding, const ConvPatchesOptions& options = {});
/// lax.conv_general_dilated_local: an unshared convolution: each output position has its own
/// kernel; rhs holds them with its spatial dimensions of the output's size and its input
/// feature dimension of size C * prod(filter_shape).
TESSEL_API Array conv_general_dilated_local(const Array& lhs, const Array& rhs, const Shape& window_strides,
                                            const WindowPadding& padding, const Shape& filter_shape,
                                            const ConvPatchesOptions& options = {});

// ---- collectives (inside shard_map or a named vmap) ------------------------------------

/// lax.axis_size: the number of devices along the named axes.
TESSEL_API int64_t axis_size(const AxisNames& axis_name);
/// lax.pbroadcast: every device gets the x of the device at group index `source`.
TESSEL_API Array pbroadcast(const Array& x, const AxisNames& axis_name, int64_t source);
/// lax.pcast: x unchanged; JAX changes its varying-manual-axes type to `to` ("varying",
/// "invariant" or "unreduced"), which tessel's shard_map does not track.
TESSEL_API Array pcast(const Array& x, const AxisNames& axis_name, const std::string& to);
/// lax.pshuffle: device i gets the x of device perm[i] (perm a permutation of the group).
TESSEL_API Array pshuffle(const Array& x, const AxisNames& axis_name, const std::vector<int64_t>& perm);
/// lax.pswapaxes: swaps the mapped axis with dimension `axis` of x (whose size must equal
/// the group's): device i gets block i of every device, as all_to_all.
TESSEL_API Array pswapaxes(const Array& x, const AxisNames& axis_name, int64_t axis);

/// lax.ragged_all_to_all: each device sends the ragged slices
/// operand[input_offsets[i] : input_offsets[i] + send_sizes[i]] (K = k * group size slices,
/// slice i to device i / k) and returns `output` with the slices it receives written where
/// their senders' output_offsets say, recv_sizes[i] rows from device i / k. The offsets and
/// sizes are 1-D integer arrays of length K; composed of all_gather and selects, so it is
/// differentiable in operand and output.
TESSEL_API Array ragged_all_to_all(const Array& operand, const Array& output, const Array& input_offsets,
                                   const Array& send_sizes, const Array& output_offsets, const Array& recv_sizes,
                                   const AxisNames& axis_name);

// ---- implicitly differentiated solves (forwarding to tessel::lax::linalg) --------------------

/// lax.custom_linear_solve: see tessel::lax::linalg::custom_linear_solve.
TESSEL_API Array custom_linear_solve(const linalg::LinearOperator& matvec, const std::vector<Array>& params,
                                     const Array& b, const linalg::LinearSolver& solve,
                                     const linalg::LinearSolver& transpose_solve = nullptr, bool symmetric = false);
/// lax.custom_root: see tessel::lax::linalg::custom_root.
TESSEL_API Array custom_root(const linalg::RootFunction& f, const std::vector<Array>& params,
                             const Array& initial_guess, const linalg::RootSolver& solve,
                             const linalg::LinearSolver& tangent_solve);

// ---- composites ----------------------------------------------------------------------------

/// lax.composite: `decomposition` under a name (and version) that a backend could replace
/// with its own implementation. tessel has no such replacement, so calling the result calls
/// the decomposition, with its derivatives (as JAX does on CPU).
template <class F> auto composite(F decomposition, std::string name, int64_t version = 0) {
  if (name.empty()) throw ValueError("composite: the name is empty; name the composite (\"my.softmax\")");
  if (version < 0) throw ValueError("composite: version " + std::to_string(version) + " is negative; use 0 or more");
  return [f = std::move(decomposition)](const auto&... args) { return f(args...); };
}

}  // namespace tessel::lax
