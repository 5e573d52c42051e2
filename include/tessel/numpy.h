#pragma once
// jax.numpy's functions that are compositions of tessel's primitives (src/numpy/, layer 9):
// element-wise helpers, NaN-aware reductions, statistics, construction and splitting,
// products and index helpers. Each follows JAX's formula step by step, so values agree with
// jax.numpy's to rounding and every function works under jit, grad (where JAX differentiates
// it) and vmap. The primitives and the jnp functions that need their own kernels are in
// tessel/ops.h, tessel/sort.h and tessel/linalg.h.
//
//   ts::Array h = ts::hypot(a, b);                 // sqrt(a^2 + b^2) without overflow
//   ts::Array m = ts::nanmean(x, {0});             // mean over axis 0, NaNs skipped
//   std::vector<ts::Array> parts = ts::split(x, 3, 1);  // three equal pieces along axis 1
//   ts::Array l = ts::tril(m, -1);                 // strictly lower triangle
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "tessel/array.h"
#include "tessel/linalg.h"
#include "tessel/ops.h"
#include "tessel/sort.h"
#include "tessel/transforms.h"

namespace tessel {

// ---- element-wise -------------------------------------------------------------------------

/// sqrt(x1^2 + x2^2) computed as max * sqrt(1 + (min/max)^2), so that it neither overflows
/// nor underflows; inf when either is infinite (jnp.hypot). Real inputs only.
TESSEL_API Array hypot(const Array& x1, const Array& x2);
/// |x1| with the sign bit of x2 (jnp.copysign; -0.0 counts as negative). Real inputs only.
TESSEL_API Array copysign(const Array& x1, const Array& x2);
/// Whether the sign bit is set (jnp.signbit): true for -0.0 and negative NaNs; for integers
/// x < 0; false for booleans.
TESSEL_API Array signbit(const Array& x);
/// The next representable value after x towards y (jnp.nextafter, lax.nextafter).
TESSEL_API Array nextafter(const Array& x, const Array& y);
/// The distance from x to the next representable value away from zero (jnp.spacing).
TESSEL_API Array spacing(const Array& x);
/// Mantissa in [0.5, 1) and int32 exponent with x = m * 2^e (jnp.frexp); 0, inf and NaN give
/// (x, 0). Denormals are normalized first.
TESSEL_API std::pair<Array, Array> frexp(const Array& x);
/// x1 * 2^x2 for an integer x2 (jnp.ldexp), exact where the result is representable.
TESSEL_API Array ldexp(const Array& x1, const Array& x2);
/// (fractional part, integral part) of x, both with x's sign (jnp.modf).
TESSEL_API std::pair<Array, Array> modf(const Array& x);
/// (floor_divide(x1, x2), remainder(x1, x2)) (jnp.divmod).
TESSEL_API std::pair<Array, Array> divmod(const Array& x1, const Array& x2);
/// log(exp(x1) + exp(x2)) without overflow (jnp.logaddexp), with JAX's derivative.
TESSEL_API Array logaddexp(const Array& x1, const Array& x2);
/// log2(2^x1 + 2^x2) without overflow (jnp.logaddexp2).
TESSEL_API Array logaddexp2(const Array& x1, const Array& x2);
/// sin(pi x) / (pi x), 1 at 0 (jnp.sinc). The first derivative at 0 is exact (0).
TESSEL_API Array sinc(const Array& x);
/// Degrees to radians, x * pi / 180 (jnp.deg2rad).
TESSEL_API Array deg2rad(const Array& x);
/// jnp.radians: deg2rad.
TESSEL_API Array radians(const Array& x);
/// Radians to degrees, x * 180 / pi (jnp.rad2deg).
TESSEL_API Array rad2deg(const Array& x);
/// jnp.degrees: rad2deg.
TESSEL_API Array degrees(const Array& x);
/// 0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0, NaN where x1 is NaN (jnp.heaviside).
TESSEL_API Array heaviside(const Array& x1, const Array& x2);
/// Greatest common divisor of integers, element-wise (jnp.gcd); gcd(0, 0) = 0.
TESSEL_API Array gcd(const Array& x1, const Array& x2);
/// Least common multiple of integers, element-wise (jnp.lcm); 0 where either is 0.
TESSEL_API Array lcm(const Array& x1, const Array& x2);
/// x1 ** x2 after promotion to an inexact dtype (jnp.float_power).
TESSEL_API Array float_power(const Array& x1, const Array& x2);
/// Rounds towards zero (jnp.trunc); integers and booleans unchanged.
TESSEL_API Array trunc(const Array& x);
/// jnp.fix: rounds towards zero, as trunc.
TESSEL_API Array fix(const Array& x);
/// Rounds half to even (jnp.rint); integers and booleans become the default float dtype.
TESSEL_API Array rint(const Array& x);
/// |x| as an inexact dtype (jnp.fabs); complex inputs are a DTypeError.
TESSEL_API Array fabs(const Array& x);
/// x unchanged (jnp.positive); booleans are a DTypeError, as in JAX.
TESSEL_API Array positive(const Array& x);
/// The larger of x1 and x2, ignoring a NaN in one of them (jnp.fmax).
TESSEL_API Array fmax(const Array& x1, const Array& x2);
/// The smaller of x1 and x2, ignoring a NaN in one of them (jnp.fmin).
TESSEL_API Array fmin(const Array& x1, const Array& x2);
/// Options of nan_to_num: the replacements (none: the dtype's largest / lowest finite value).
struct NanToNumOptions {
  double nan = 0.0;
  std::optional<double> posinf = std::nullopt;
  std::optional<double> neginf = std::nullopt;
};
/// NaN, +inf and -inf replaced by finite values (jnp.nan_to_num); complex parts separately;
/// integers unchanged.
TESSEL_API Array nan_to_num(const Array& x, const NanToNumOptions& options = {});
/// The argument of complex numbers, atan2(imag, real), in radians or degrees (jnp.angle).
TESSEL_API Array angle(const Array& z, bool deg = false);
/// Tolerances of isclose/allclose: |a - b| <= atol + rtol * |b|.
struct CloseOptions {
  double rtol = 1e-05;
  double atol = 1e-08;
  bool equal_nan = false;
};
/// Element-wise |a - b| <= atol + rtol * |b|, equal infinities close (jnp.isclose).
TESSEL_API Array isclose(const Array& a, const Array& b, const CloseOptions& options = {});
/// A boolean scalar: all(isclose(a, b)) (jnp.allclose).
TESSEL_API Array allclose(const Array& a, const Array& b, const CloseOptions& options = {});
/// A boolean scalar: same shape and equal elements (jnp.array_equal); NaN equals NaN with
/// equal_nan.
TESSEL_API Array array_equal(const Array& a1, const Array& a2, bool equal_nan = false);
/// A boolean scalar: broadcastable and equal after broadcasting (jnp.array_equiv).
TESSEL_API Array array_equiv(const Array& a1, const Array& a2);
/// x == -inf for floats, false for integers (jnp.isneginf); complex is a ValueError.
TESSEL_API Array isneginf(const Array& x);
/// x == +inf for floats, false for integers (jnp.isposinf); complex is a ValueError.
TESSEL_API Array isposinf(const Array& x);
/// Whether each element has a zero imaginary part (jnp.isreal; true for real dtypes).
TESSEL_API Array isreal(const Array& x);
/// Whether each element has a nonzero imaginary part (jnp.iscomplex; false for real dtypes).
TESSEL_API Array iscomplex(const Array& x);
/// Whether x's dtype is complex (jnp.iscomplexobj).
TESSEL_API bool iscomplexobj(const Array& x);
/// Whether x's dtype is not complex (jnp.isrealobj).
TESSEL_API bool isrealobj(const Array& x);
/// The number of set bits of |x|, as uint8 (jnp.bitwise_count).
TESSEL_API Array bitwise_count(const Array& x);

// ---- reductions ---------------------------------------------------------------------------

/// max - min over `axes` (jnp.ptp; empty: all axes).
TESSEL_API Array ptp(const Array& x, Axes axes = {}, bool keepdims = false);
/// The number of nonzero elements over `axes` as the default integer dtype (jnp.count_nonzero).
TESSEL_API Array count_nonzero(const Array& x, Axes axes = {}, bool keepdims = false);
/// The weighted mean over `axes` (jnp.average): weights broadcast to x, or 1-D along the one
/// reduced axis. Without weights, the mean.
TESSEL_API Array average(const Array& x, Axes axes = {}, const std::optional<Array>& weights = std::nullopt,
                         bool keepdims = false);
/// Sum treating NaN as 0 (jnp.nansum).
TESSEL_API Array nansum(const Array& x, Axes axes = {}, bool keepdims = false);
/// Product treating NaN as 1 (jnp.nanprod).
TESSEL_API Array nanprod(const Array& x, Axes axes = {}, bool keepdims = false);
/// Maximum ignoring NaNs; NaN where every element is NaN (jnp.nanmax).
TESSEL_API Array nanmax(const Array& x, Axes axes = {}, bool keepdims = false);
/// Minimum ignoring NaNs; NaN where every element is NaN (jnp.nanmin).
TESSEL_API Array nanmin(const Array& x, Axes axes = {}, bool keepdims = false);
/// Mean of the non-NaN elements (jnp.nanmean).
TESSEL_API Array nanmean(const Array& x, Axes axes = {}, bool keepdims = false);
/// Variance of the non-NaN elements with `ddof` (jnp.nanvar); NaN where too few remain.
TESSEL_API Array nanvar(const Array& x, Axes axes = {}, bool keepdims = false, double ddof = 0);
/// Standard deviation of the non-NaN elements (jnp.nanstd).
TESSEL_API Array nanstd(const Array& x, Axes axes = {}, bool keepdims = false, double ddof = 0);
/// argmax ignoring NaNs; -1 where every element is NaN (jnp.nanargmax).
TESSEL_API Array nanargmax(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// argmin ignoring NaNs; -1 where every element is NaN (jnp.nanargmin).
TESSEL_API Array nanargmin(const Array& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// Cumulative sum treating NaN as 0 (jnp.nancumsum).
TESSEL_API Array nancumsum(const Array& x, int64_t axis, bool reverse = false);
/// Cumulative product treating NaN as 1 (jnp.nancumprod).
TESSEL_API Array nancumprod(const Array& x, int64_t axis, bool reverse = false);
/// Cumulative sum along `axis` (required when x has more than one axis); with
/// include_initial a leading 0 (jnp.cumulative_sum).
TESSEL_API Array cumulative_sum(const Array& x, std::optional<int64_t> axis = std::nullopt, bool include_initial = false);
/// Cumulative product along `axis`; with include_initial a leading 1 (jnp.cumulative_prod).
TESSEL_API Array cumulative_prod(const Array& x, std::optional<int64_t> axis = std::nullopt,
                                 bool include_initial = false);

// ---- differences, integrals, statistics ---------------------------------------------------

/// The n-th forward difference along `axis` (jnp.diff), with optional values put before /
/// after x along that axis first.
TESSEL_API Array diff(const Array& x, int64_t n = 1, int64_t axis = -1, const std::optional<Array>& prepend = std::nullopt,
                      const std::optional<Array>& append = std::nullopt);
/// Differences of the flattened x, with optional values before and after (jnp.ediff1d).
TESSEL_API Array ediff1d(const Array& x, const std::optional<Array>& to_end = std::nullopt,
                         const std::optional<Array>& to_begin = std::nullopt);
/// Central differences inside, one-sided at the edges, along `axis` with uniform spacing
/// `dx` (jnp.gradient for one axis).
TESSEL_API Array gradient(const Array& f, int64_t axis, double dx = 1.0);
/// The gradient along every axis of f (jnp.gradient), one array per axis.
TESSEL_API std::vector<Array> gradient(const Array& f);
/// The trapezoidal rule along `axis` with sample points x (1-D, or x's shape) or uniform
/// spacing dx (jnp.trapezoid).
TESSEL_API Array trapezoid(const Array& y, const std::optional<Array>& x = std::nullopt, double dx = 1.0,
                           int64_t axis = -1);
/// Piecewise-linear interpolation of (xp, fp) at x, xp increasing (jnp.interp); left / right
/// default to fp's end values.
TESSEL_API Array interp(const Array& x, const Array& xp, const Array& fp, const std::optional<Array>& left = std::nullopt,
                        const std::optional<Array>& right = std::nullopt);
/// Phase unwrapping along `axis`: jumps larger than `discont` (default period / 2) replaced by
/// their complement modulo `period` (jnp.unwrap).
TESSEL_API Array unwrap(const Array& p, std::optional<double> discont = std::nullopt, int64_t axis = -1,
                        double period = 6.283185307179586);
/// The covariance matrix of the variables in m's rows (columns when rowvar is false), with
/// ddof (default 1, or 0 with bias) (jnp.cov, without weights).
TESSEL_API Array cov(const Array& m, bool rowvar = true, bool bias = false, std::optional<int64_t> ddof = std::nullopt);
/// Pearson correlation coefficients, cov / sqrt(diag x diag), clipped to [-1, 1] (jnp.corrcoef).
TESSEL_API Array corrcoef(const Array& m, bool rowvar = true);

/// The keyword arguments of jnp.histogramdd and jnp.histogram2d.
struct HistogramddOptions {
  /// (low, high) per dimension, or none for the dimension's data extremes; empty: none for
  /// every dimension.
  std::vector<std::optional<std::pair<double, double>>> range = {};
  /// One weight per sample point, shape (N,); empty: ones (the counts are then int32).
  Array weights = Array();
  /// Normalize to a density: counts over their total and each bin's volume.
  bool density = false;
};
/// The bins of one dimension: a count of equal-width bins, or increasing bin edges.
using HistogramBins = std::variant<int64_t, Array>;
/// jnp.histogramdd: the counts of the N points of sample (N, D) in a grid of bins, one entry
/// of `bins` per dimension, and each dimension's edges. The last bin of a dimension includes
/// its right edge; points outside the edges are dropped.
TESSEL_API std::pair<Array, std::vector<Array>> histogramdd(const Array& sample, const std::vector<HistogramBins>& bins,
                                                            const HistogramddOptions& options = {});
/// jnp.histogramdd with `bins` equal-width bins in every dimension.
TESSEL_API std::pair<Array, std::vector<Array>> histogramdd(const Array& sample, int64_t bins = 10,
                                                            const HistogramddOptions& options = {});
/// jnp.histogram2d: the histogram of the points (x[i], y[i]) and the x and y edges; `bins`
/// has one entry per axis.
TESSEL_API std::tuple<Array, Array, Array> histogram2d(const Array& x, const Array& y,
                                                       const std::vector<HistogramBins>& bins,
                                                       const HistogramddOptions& options = {});
/// jnp.histogram2d with `bins` equal-width bins along both axes.
TESSEL_API std::tuple<Array, Array, Array> histogram2d(const Array& x, const Array& y, int64_t bins = 10,
                                                       const HistogramddOptions& options = {});

// ---- construction -------------------------------------------------------------------------

/// Ones at and below diagonal k of an n x m matrix, zeros above (jnp.tri).
TESSEL_API Array tri(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0, DType dtype = default_float);
/// The lower triangle (at and below diagonal k) of the last two axes, zeros above (jnp.tril).
TESSEL_API Array tril(const Array& m, int64_t k = 0);
/// The upper triangle (at and above diagonal k) of the last two axes (jnp.triu).
TESSEL_API Array triu(const Array& m, int64_t k = 0);
/// The (row, column) indices of the lower triangle of an n x m matrix, row-major (jnp.tril_indices).
TESSEL_API std::pair<Array, Array> tril_indices(int64_t n, int64_t k = 0, std::optional<int64_t> m = std::nullopt);
/// The (row, column) indices of the upper triangle (jnp.triu_indices).
TESSEL_API std::pair<Array, Array> triu_indices(int64_t n, int64_t k = 0, std::optional<int64_t> m = std::nullopt);
/// tril_indices of a 2-D array's shape (jnp.tril_indices_from).
TESSEL_API std::pair<Array, Array> tril_indices_from(const Array& a, int64_t k = 0);
/// triu_indices of a 2-D array's shape (jnp.triu_indices_from).
TESSEL_API std::pair<Array, Array> triu_indices_from(const Array& a, int64_t k = 0);
/// The indices of the main diagonal of an n^ndim array, one array per axis (jnp.diag_indices).
TESSEL_API std::vector<Array> diag_indices(int64_t n, int64_t ndim = 2);
/// diag_indices of a square array (jnp.diag_indices_from).
TESSEL_API std::vector<Array> diag_indices_from(const Array& a);
/// The (row, column) indices where mask_func(ones((n, n)), k) is nonzero, row-major
/// (jnp.mask_indices): mask_func = triu gives triu_indices(n, k). Needs concrete values.
TESSEL_API std::pair<Array, Array> mask_indices(int64_t n, const std::function<Array(const Array&, int64_t)>& mask_func,
                                                int64_t k = 0);
/// An array of `shape` and `dtype` (jnp.empty; tessel fills it with zeros, as JAX does).
TESSEL_API Array empty(const Shape& shape, DType dtype = default_float);
/// x's shape (jnp.shape).
TESSEL_API Shape shape(const Array& x);
/// x as an array of `dtype` (jnp.asarray): x itself when it already has that dtype.
TESSEL_API Array asarray(const Array& x, std::optional<DType> dtype = std::nullopt);
/// A copy of x, converted to `dtype` when given (jnp.array).
TESSEL_API Array array(const Array& x, std::optional<DType> dtype = std::nullopt);
/// From 1-D v: a square matrix with v on diagonal k; from 2-D v: its diagonal k (jnp.diag).
TESSEL_API Array diag(const Array& v, int64_t k = 0);
/// A square matrix with the flattened v on diagonal k (jnp.diagflat).
TESSEL_API Array diagflat(const Array& v, int64_t k = 0);
/// Diagonal `offset` of the matrices in axes (axis1, axis2), appended as the last axis
/// (jnp.diagonal).
TESSEL_API Array diagonal(const Array& a, int64_t offset, int64_t axis1, int64_t axis2);
/// a with its main diagonal set to val (jnp.fill_diagonal with inplace=False): all axes of
/// equal size, or a tall 2-D matrix (wrap = false).
TESSEL_API Array fill_diagonal(const Array& a, const Array& val);
/// The n x n identity (jnp.identity).
TESSEL_API Array identity(int64_t n, DType dtype = default_float);
/// Coordinate arrays from 1-D vectors (jnp.meshgrid): "xy" (Cartesian: the first two axes
/// swapped) or "ij" indexing; sparse keeps size-1 axes instead of broadcasting.
TESSEL_API std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing = "xy",
                                       bool sparse = false);
/// One array per axis of `dimensions` holding that axis's index at each point (jnp.indices).
TESSEL_API std::vector<Array> indices(const Shape& dimensions, DType dtype = default_int, bool sparse = false);
/// Open-mesh index arrays from 1-D sequences: the i-th has shape 1 except along axis i (jnp.ix_).
TESSEL_API std::vector<Array> ix_(const std::vector<Array>& args);
/// base ** linspace(start, stop, num) (jnp.logspace).
TESSEL_API Array logspace(double start, double stop, int64_t num = 50, bool endpoint = true, double base = 10.0,
                          DType dtype = default_float);
/// Numbers evenly spaced on a log scale from start to stop (jnp.geomspace); start and stop
/// nonzero and of the same sign.
TESSEL_API Array geomspace(double start, double stop, int64_t num = 50, bool endpoint = true,
                           DType dtype = default_float);
/// The Vandermonde matrix of 1-D x: columns x^(N-1), ..., x^0 (or increasing) (jnp.vander).
TESSEL_API Array vander(const Array& x, std::optional<int64_t> n = std::nullopt, bool increasing = false);

// ---- splitting, joining, rearranging ------------------------------------------------------

/// `sections` equal pieces along `axis` (jnp.split with an int); sections must divide it.
TESSEL_API std::vector<Array> split(const Array& x, int64_t sections, int64_t axis = 0);
/// Pieces between the given split points along `axis` (jnp.split with indices).
TESSEL_API std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis = 0);
/// `sections` pieces along `axis`, the first size % sections one longer (jnp.array_split).
TESSEL_API std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis = 0);
/// split along axis 1 (axis 0 for 1-D) (jnp.hsplit).
TESSEL_API std::vector<Array> hsplit(const Array& x, int64_t sections);
/// split along axis 0 (jnp.vsplit).
TESSEL_API std::vector<Array> vsplit(const Array& x, int64_t sections);
/// split along axis 2 (jnp.dsplit).
TESSEL_API std::vector<Array> dsplit(const Array& x, int64_t sections);
/// The slices of x along `axis` (jnp.unstack).
TESSEL_API std::vector<Array> unstack(const Array& x, int64_t axis = 0);
/// Concatenation along axis 1 (axis 0 for 1-D arrays) (jnp.hstack).
TESSEL_API Array hstack(const std::vector<Array>& xs);
/// Concatenation along axis 0 of arrays made at least 2-D (jnp.vstack).
TESSEL_API Array vstack(const std::vector<Array>& xs);
/// Concatenation along axis 2 of arrays made at least 3-D (jnp.dstack).
TESSEL_API Array dstack(const std::vector<Array>& xs);
/// 1-D arrays as columns of a 2-D array; 2-D arrays joined along axis 1 (jnp.column_stack).
TESSEL_API Array column_stack(const std::vector<Array>& xs);
/// x with at least 1 axis (jnp.atleast_1d).
TESSEL_API Array atleast_1d(const Array& x);
/// x with at least 2 axes: (n,) becomes (1, n) (jnp.atleast_2d).
TESSEL_API Array atleast_2d(const Array& x);
/// x with at least 3 axes: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1) (jnp.atleast_3d).
TESSEL_API Array atleast_3d(const Array& x);
/// An array assembled from blocks (jnp.block): a list of arrays is joined along the last
/// axis, a list of such lists along the second to last, a third level along the third to
/// last; each block first gains leading axes of size 1 up to the nesting depth (and to the
/// highest rank among its neighbours). Sizes must agree along the joined axes only.
TESSEL_API Array block(const std::vector<Array>& blocks);
TESSEL_API Array block(const std::vector<std::vector<Array>>& blocks);
TESSEL_API Array block(const std::vector<std::vector<std::vector<Array>>>& blocks);
/// x rotated by 90 degrees k times in the plane of `axes`, from the first towards the second
/// (jnp.rot90).
TESSEL_API Array rot90(const Array& x, int64_t k = 1, std::pair<int64_t, int64_t> axes = {0, 1});
/// x reversed along axis 1 (jnp.fliplr).
TESSEL_API Array fliplr(const Array& x);
/// x reversed along axis 0 (jnp.flipud).
TESSEL_API Array flipud(const Array& x);
/// x flattened, repeated cyclically and reshaped to `shape` (jnp.resize).
TESSEL_API Array resize(const Array& x, const Shape& shape);
/// Axis `axis` moved to before position `start` (jnp.rollaxis).
TESSEL_API Array rollaxis(const Array& x, int64_t axis, int64_t start = 0);
/// x without the entries at `indices` along `axis` (flattened when none) (jnp.delete with
/// static indices; negative indices count from the end).
TESSEL_API Array delete_(const Array& x, const std::vector<int64_t>& indices, std::optional<int64_t> axis = std::nullopt);
/// x with `values` inserted before index `index` along `axis` (flattened when none)
/// (jnp.insert with one static index); values broadcast to the inserted slice.
TESSEL_API Array insert(const Array& x, int64_t index, const Array& values, std::optional<int64_t> axis = std::nullopt);
/// x with `values` appended along `axis` (both flattened when none) (jnp.append).
TESSEL_API Array append(const Array& x, const Array& values, std::optional<int64_t> axis = std::nullopt);
/// The arrays broadcast to their common shape (jnp.broadcast_arrays).
TESSEL_API std::vector<Array> broadcast_arrays(const std::vector<Array>& xs);
/// The number of axes (jnp.ndim).
TESSEL_API int64_t ndim(const Array& x);
/// The number of elements (jnp.size).
TESSEL_API int64_t size(const Array& x);
/// A copy of x: same values, its own buffer (jnp.copy).
TESSEL_API Array copy(const Array& x);

// ---- products -----------------------------------------------------------------------------

/// Sum over the last axes of a and b of their product (jnp.inner); scalars multiply.
TESSEL_API Array inner(const Array& a, const Array& b);
/// The Kronecker product (jnp.kron).
TESSEL_API Array kron(const Array& a, const Array& b);
/// Matrix-vector products over the last axes, batch axes broadcast (jnp.matvec).
TESSEL_API Array matvec(const Array& m, const Array& v);
/// Vector-matrix products over the last axes, batch axes broadcast (jnp.vecmat).
TESSEL_API Array vecmat(const Array& v, const Array& m);
/// jnp.vecdot: linalg::vecdot.
TESSEL_API Array vecdot(const Array& a, const Array& b, int64_t axis = -1);
/// jnp.matrix_transpose: linalg::matrix_transpose.
TESSEL_API Array matrix_transpose(const Array& x);
/// jnp.cross: linalg::cross with its axes.
TESSEL_API Array cross(const Array& a, const Array& b, const linalg::CrossAxes& axes = {});

// ---- index helpers ------------------------------------------------------------------------

/// The multi-indices of flat indices into `shape`, one array per axis (jnp.unravel_index);
/// out-of-range flat indices are clipped as in JAX.
TESSEL_API std::vector<Array> unravel_index(const Array& indices, const Shape& shape);
/// The flat indices of multi-indices into `dims` (jnp.ravel_multi_index), mode "raise"
/// (checked when the indices are concrete), "wrap" or "clip".
TESSEL_API Array ravel_multi_index(const std::vector<Array>& multi_index, const Shape& dims,
                                   const std::string& mode = "raise");

// ---- selection, scatters, bits ------------------------------------------------------------

/// The slices of a along `axis` (flattened when none) where condition is true
/// (jnp.compress). Without options.size the condition must be concrete; with it, the result
/// has that length, padded with options.fill_value (default 0).
TESSEL_API Array compress(const Array& condition, const Array& a, std::optional<int64_t> axis = std::nullopt,
                          const SizeOptions& options = {});
/// The elements of arr where condition is true, both flattened (jnp.extract).
TESSEL_API Array extract(const Array& condition, const Array& arr, const SizeOptions& options = {});
/// choices[a[i]][i] at each position, all broadcast together (jnp.choose); mode "raise"
/// (checked when a is concrete), "wrap" or "clip".
TESSEL_API Array choose(const Array& a, const std::vector<Array>& choices, const std::string& mode = "raise");
/// arr with its elements where mask is true replaced by vals, repeated cyclically, in order
/// (jnp.place with inplace=False).
TESSEL_API Array place(const Array& arr, const Array& mask, const Array& vals);
/// a with a.flat[ind] = v, v repeated cyclically (jnp.put with inplace=False); mode ""
/// drops out-of-bounds indices, "clip" and "wrap" bring them into range.
TESSEL_API Array put(const Array& a, const Array& ind, const Array& v, const std::string& mode = "");
/// arr with values written where take_along_axis(arr, indices, axis) reads (jnp.put_along_axis
/// with inplace=False); `mode` as Array::at's.
TESSEL_API Array put_along_axis(const Array& arr, const Array& indices, const Array& values, int64_t axis,
                                const std::string& mode = "");
/// filt without its leading ("f") and/or trailing ("b") zeros (jnp.trim_zeros, 1-D, concrete).
TESSEL_API Array trim_zeros(const Array& filt, const std::string& trim = "fb");
/// The sorted values in exactly one of the two arrays (jnp.setxor1d without `size`: concrete
/// inputs only).
TESSEL_API Array setxor1d(const Array& ar1, const Array& ar2, bool assume_unique = false);
/// The elements of a (nonzero as 1 bits) packed 8 to a uint8 along `axis` (flattened when
/// none), "big" (first element in the high bit) or "little" bit order (jnp.packbits).
TESSEL_API Array packbits(const Array& a, std::optional<int64_t> axis = std::nullopt, const std::string& bitorder = "big");
/// The bits of uint8 a as uint8 0/1 values along `axis` (flattened when none), the first
/// `count` of them (padded with 0 when count is longer) (jnp.unpackbits).
TESSEL_API Array unpackbits(const Array& a, std::optional<int64_t> axis = std::nullopt,
                            std::optional<int64_t> count = std::nullopt, const std::string& bitorder = "big");

// ---- dtypes -------------------------------------------------------------------------------

/// The dtype jax.numpy's promotion gives the arrays together (jnp.result_type).
TESSEL_API DType result_type(const std::vector<Array>& xs);
/// Whether values of `from` convert to `to` under the numpy casting rule "no", "equiv",
/// "safe" (default: every value of `from` is exact in `to`, as numpy counts it: int64 ->
/// float64 is safe, int32 -> float32 is not), "same_kind" or "unsafe" (jnp.can_cast, which
/// is numpy's, with ml_dtypes' bfloat16 rules).
TESSEL_API bool can_cast(DType from, DType to, const std::string& casting = "safe");
/// Whether d is of the array-API kind "bool", "signed integer", "unsigned integer",
/// "integral", "real floating", "complex floating" or "numeric" (jnp.isdtype).
TESSEL_API bool isdtype(DType d, const std::string& kind);
/// Whether d is in numpy's category "generic", "number", "integer", "signedinteger",
/// "unsignedinteger", "inexact", "floating", "complexfloating" or "bool", or is the dtype
/// of that name (jnp.issubdtype).
TESSEL_API bool issubdtype(DType d, const std::string& category);

// ---- functions over callables -------------------------------------------------------------

/// f applied to the 1-D slices of x along `axis` (jnp.apply_along_axis): f maps a vector to
/// an array, which takes the place of that axis in the result. Runs as one vmap.
template <class F> Array apply_along_axis(F f, int64_t axis, const Array& x) {
  const int64_t nd = int64_t(x.shape().size());
  if (nd == 0) throw ShapeError("apply_along_axis: x must have at least one axis; got a scalar");
  const int64_t a = axis < 0 ? axis + nd : axis;
  if (a < 0 || a >= nd) throw IndexError("apply_along_axis: axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(nd));
  const Array moved = moveaxis(x, a, -1);
  Shape batch(moved.shape().begin(), moved.shape().end() - 1);
  int64_t rows = 1;
  for (int64_t d : batch) rows *= d;
  const Array y = vmap([&f](const Array& v) { return Array(f(v)); })(reshape(moved, {rows, moved.shape().back()}));
  Shape out = batch;
  out.insert(out.end(), y.shape().begin() + 1, y.shape().end());
  Array r = reshape(y, out);
  // f's output axes go where `axis` was.
  for (int64_t k = 0; k < int64_t(y.shape().size()) - 1; ++k) r = moveaxis(r, int64_t(batch.size()) + k, a + k);
  return r;
}
/// f(x, axis) for each axis in turn, keeping the reduced axis (jnp.apply_over_axes): f must
/// keep x's rank or drop that one axis.
template <class F> Array apply_over_axes(F f, Array x, const std::vector<int64_t>& axes) {
  for (int64_t axis : axes) {
    const int64_t nd = int64_t(x.shape().size());
    const int64_t a = axis < 0 ? axis + nd : axis;
    Array y = f(x, a);
    if (int64_t(y.shape().size()) == nd - 1) y = expand_dims(y, {a});
    if (int64_t(y.shape().size()) != nd)
      throw ShapeError("apply_over_axes: f returned shape " + shape_to_string(y.shape()) + " for axis " + std::to_string(a) +
                       "; it must keep x's rank or drop that axis");
    x = y;
  }
  return x;
}
/// f called with one index array per axis of `shape` (jnp.fromfunction): f(indices) where
/// indices[i] holds each point's coordinate along axis i, of `dtype`.
template <class F> Array fromfunction(F f, const Shape& shape, DType dtype = default_float) {
  return f(indices(shape, dtype));
}
/// Piecewise definition (jnp.piecewise): at each element, funcs[k](x) for the first k whose
/// condition holds; with one more function than conditions, the last is the default (else 0).
/// Each function maps x element-wise (it is applied to the whole of x).
TESSEL_API Array piecewise(const Array& x, const std::vector<Array>& conditions,
                           const std::vector<std::function<Array(const Array&)>>& funcs);

// ---- polynomials and windows --------------------------------------------------------------

/// The polynomial with coefficients p (highest power first) at x, by Horner's rule
/// (jnp.polyval).
TESSEL_API Array polyval(const Array& p, const Array& x);
/// The sum of two polynomials (jnp.polyadd).
TESSEL_API Array polyadd(const Array& a1, const Array& a2);
/// The difference of two polynomials (jnp.polysub).
TESSEL_API Array polysub(const Array& a1, const Array& a2);
/// The m-th derivative of a polynomial (jnp.polyder).
TESSEL_API Array polyder(const Array& p, int64_t m = 1);
/// The m-th antiderivative of a polynomial with integration constants k (default 0) (jnp.polyint).
TESSEL_API Array polyint(const Array& p, int64_t m = 1, const std::optional<Array>& k = std::nullopt);
/// The product of two polynomials (jnp.polymul), by convolution.
TESSEL_API Array polymul(const Array& a1, const Array& a2);
/// (quotient, remainder) of polynomial long division u / v (jnp.polydiv).
TESSEL_API std::pair<Array, Array> polydiv(const Array& u, const Array& v);
/// The least-squares polynomial of degree deg through (x, y), highest power first; y may be
/// 2-D (one fit per column) (jnp.polyfit without weights).
TESSEL_API Array polyfit(const Array& x, const Array& y, int64_t deg, std::optional<double> rcond = std::nullopt);
/// The complex roots of a polynomial: eigenvalues of its companion matrix (jnp.roots). With
/// strip_zeros (concrete coefficients only) leading zeros are removed first; without it, each
/// leading zero gives a NaN root, and the function works under jit.
TESSEL_API Array roots(const Array& p, bool strip_zeros = true);
/// The coefficients of the monic polynomial with the given roots, or of a square matrix's
/// characteristic polynomial (jnp.poly).
TESSEL_API Array poly(const Array& seq_of_zeros);
/// The Bartlett (triangular) window of M points (jnp.bartlett).
TESSEL_API Array bartlett(int64_t M);
/// The Blackman window of M points (jnp.blackman).
TESSEL_API Array blackman(int64_t M);
/// The Hamming window of M points (jnp.hamming).
TESSEL_API Array hamming(int64_t M);
/// The Hann window of M points (jnp.hanning).
TESSEL_API Array hanning(int64_t M);

}  // namespace tessel
