#pragma once
// jax.nn.initializers: functions that make parameter arrays from a PRNG key, a shape and a
// dtype, drawn exactly as JAX draws them (the same ts::random samplers with the same scale
// arithmetic), so a model initialized in tessel with key k has JAX's weights for key k.
//
//   namespace init = ts::nn::initializers;
//   init::Initializer w_init = init::glorot_uniform();
//   ts::Array w = w_init(ts::random::key(0), {784, 512});            // float32
//   ts::Array b = init::zeros(ts::random::key(0), {512});
//   ts::Array k = init::he_normal({.in_axis = {-2}, .out_axis = {-1}})(key, {3, 3, 64, 128});
#include <functional>
#include <optional>
#include <string>

#include "tessel/array.h"
#include "tessel/export.h"
#include "tessel/ops.h"

namespace tessel::nn::initializers {

/// An initializer: call it with a key, a shape and optionally a dtype (its default dtype
/// otherwise), as JAX's `init(key, shape, dtype)`.
class TESSEL_API Initializer {
 public:
  /// The drawing function, called with the dtype already resolved.
  using Fn = std::function<Array(const Array& key, const Shape& shape, DType dtype)>;
  Initializer(Fn fn, DType default_dtype) : fn_(std::move(fn)), dtype_(default_dtype) {}
  /// Draws an array of `shape` and `dtype` (the initializer's default when not given).
  Array operator()(const Array& key, const Shape& shape, std::optional<DType> dtype = std::nullopt) const {
    return fn_(key, shape, dtype.value_or(dtype_));
  }
  /// The dtype used when the call gives none.
  DType dtype() const { return dtype_; }

 private:
  Fn fn_;
  DType dtype_;
};

/// Zeros of `shape` and `dtype`; the key is ignored (jax.nn.initializers.zeros).
TESSEL_API Array zeros(const Array& key, const Shape& shape, DType dtype = DType::float32);
/// Ones of `shape` and `dtype`; the key is ignored (jax.nn.initializers.ones).
TESSEL_API Array ones(const Array& key, const Shape& shape, DType dtype = DType::float32);
/// An initializer filling with `value` (jax.nn.initializers.constant).
TESSEL_API Initializer constant(const Array& value, DType dtype = DType::float32);
/// Uniform in [0, scale) (jax.nn.initializers.uniform).
TESSEL_API Initializer uniform(double scale = 1e-2, DType dtype = DType::float32);
/// Normal with mean 0 and standard deviation `stddev` (jax.nn.initializers.normal).
TESSEL_API Initializer normal(double stddev = 1e-2, DType dtype = DType::float32);
/// stddev * a standard normal truncated to (lower, upper) (jax.nn.initializers.truncated_normal;
/// like JAX, stddev is not corrected for the truncation).
TESSEL_API Initializer truncated_normal(double stddev = 1e-2, DType dtype = DType::float32, double lower = -2.0,
                                        double upper = 2.0);

/// Which axes of a weight array are its inputs, outputs and batch (variance_scaling's
/// in_axis, out_axis, batch_axis); the remaining axes are the receptive field.
struct FanAxes {
  Axes in_axis = {-2};   ///< input dimension(s); the default needs a rank >= 2 shape
  Axes out_axis = {-1};  ///< output dimension(s)
  Axes batch_axis = {};  ///< axes ignored by the fan computation
};

/// JAX's fans of a weight shape: (fan_in, fan_out) = (in size, out size) times the receptive
/// field size (the product of the other non-batch dimensions).
TESSEL_API std::pair<double, double> compute_fans(const Shape& shape, const FanAxes& axes = {});

/// Scale-adapted initializer (jax.nn.initializers.variance_scaling): variance scale / n, n
/// by `mode` ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"), drawn by `distribution`:
/// "truncated_normal" (within 2 standard deviations, rescaled so the truncated variance is
/// exact), "normal" or "uniform". Real dtypes only.
TESSEL_API Initializer variance_scaling(double scale, const std::string& mode, const std::string& distribution,
                                        const FanAxes& axes = {}, DType dtype = DType::float32);
/// variance_scaling(1, "fan_avg", "uniform") (jax.nn.initializers.glorot_uniform, xavier_uniform).
TESSEL_API Initializer glorot_uniform(const FanAxes& axes = {}, DType dtype = DType::float32);
/// variance_scaling(1, "fan_avg", "truncated_normal") (glorot_normal, xavier_normal).
TESSEL_API Initializer glorot_normal(const FanAxes& axes = {}, DType dtype = DType::float32);
/// variance_scaling(1, "fan_in", "uniform") (jax.nn.initializers.lecun_uniform).
TESSEL_API Initializer lecun_uniform(const FanAxes& axes = {}, DType dtype = DType::float32);
/// variance_scaling(1, "fan_in", "truncated_normal") (jax.nn.initializers.lecun_normal).
TESSEL_API Initializer lecun_normal(const FanAxes& axes = {}, DType dtype = DType::float32);
/// variance_scaling(2, "fan_in", "uniform") (he_uniform, kaiming_uniform).
TESSEL_API Initializer he_uniform(const FanAxes& axes = {}, DType dtype = DType::float32);
/// variance_scaling(2, "fan_in", "truncated_normal") (he_normal, kaiming_normal).
TESSEL_API Initializer he_normal(const FanAxes& axes = {}, DType dtype = DType::float32);
/// Same as glorot_uniform.
TESSEL_API Initializer xavier_uniform(const FanAxes& axes = {}, DType dtype = DType::float32);
/// Same as glorot_normal.
TESSEL_API Initializer xavier_normal(const FanAxes& axes = {}, DType dtype = DType::float32);
/// Same as he_uniform.
TESSEL_API Initializer kaiming_uniform(const FanAxes& axes = {}, DType dtype = DType::float32);
/// Same as he_normal.
TESSEL_API Initializer kaiming_normal(const FanAxes& axes = {}, DType dtype = DType::float32);
/// scale * a random orthogonal matrix, reshaped so the vectors along `column_axis` are
/// orthonormal (jax.nn.initializers.orthogonal); shapes need rank >= 2.
TESSEL_API Initializer orthogonal(double scale = 1.0, int64_t column_axis = -1, DType dtype = DType::float32);
/// Delta-orthogonal convolution kernels (jax.nn.initializers.delta_orthogonal): zeros with an
/// orthogonal (in, out) matrix at the spatial centre; shapes of rank 3, 4 or 5 with
/// shape[-2] <= shape[-1].
TESSEL_API Initializer delta_orthogonal(double scale = 1.0, int64_t column_axis = -1, DType dtype = DType::float32);

}  // namespace tessel::nn::initializers
