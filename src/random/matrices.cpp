// Matrix-valued samplers of jax.random as compositions over normal draws and tessel's
// decompositions: multivariate_normal (a Cholesky, eigh or SVD factor of the covariance
// times standard normals) and orthogonal (the Q of a QR of a normal matrix, signs fixed by
// R's diagonal so the draw is Haar-distributed and unique).
#include "random/sampler_util.h"
#include "tessel/linalg.h"

namespace tessel::random {
using namespace sampler;

Array multivariate_normal(const Array& key, const Array& mean, const Array& cov, std::optional<Shape> shape,
                          std::optional<DType> dtype, const std::string& method) {
  check_key("multivariate_normal", key);
  if (method != "cholesky" && method != "eigh" && method != "svd")
    throw ValueError("multivariate_normal: method must be \"cholesky\", \"eigh\" or \"svd\", got \"" + method + "\"");
  if (is_complex(mean.dtype()) || is_complex(cov.dtype()))
    throw DTypeError("multivariate_normal: mean and cov must be real, got " + mean.aval().to_string() + " and " +
                     cov.aval().to_string());
  // jnp's promote_dtypes_inexact: integers become float32, two floats their common type.
  DType common = promote_types(mean.dtype(), mean.aval().weak_type, cov.dtype(), cov.aval().weak_type).dtype;
  if (!is_floating(common)) common = DType::float32;
  Array mu = astype(mean, common), sigma = astype(cov, common);
  const DType dt = dtype ? *dtype : common;
  check_float("multivariate_normal", dt);
  if (mu.ndim() < 1)
    throw ValueError("multivariate_normal: mean must have at least one dimension, got " + mu.aval().to_string());
  const int64_t n = mu.shape().back();
  if (sigma.ndim() < 2 || sigma.shape()[size_t(sigma.ndim() - 1)] != n || sigma.shape()[size_t(sigma.ndim() - 2)] != n)
    throw ShapeError("multivariate_normal: cov must have shape (..., n, n) with n = " + std::to_string(n) +
                     " (mean's last dimension), got " + shape_to_string(sigma.shape()));
  const Shape mean_batch(mu.shape().begin(), mu.shape().end() - 1);
  const Shape cov_batch(sigma.shape().begin(), sigma.shape().end() - 2);
  Shape s = sample_shape("multivariate_normal", shape, {mean_batch, cov_batch});
  Array factor;
  if (method == "svd") {
    linalg::SvdResult usv = linalg::svd(sigma);
    factor = usv.u * expand_dims(sqrt(usv.s), {-2});
  } else if (method == "eigh") {
    linalg::EighResult wv = linalg::eigh(sigma);
    factor = wv.eigenvectors * expand_dims(sqrt(wv.eigenvalues), {-2});
  } else {
    factor = linalg::cholesky(sigma);
  }
  s.push_back(n);
  Array z = normal(key, s, dt);
  return mu + einsum("...ij,...j->...i", {factor, z});
}

Array orthogonal(const Array& key, int64_t n, const Shape& shape, DType dtype, std::optional<int64_t> m) {
  check_key("orthogonal", key);
  const DType dt = detail::checked_dtype(dtype, "orthogonal");
  if (!is_floating(dt) && !is_complex(dt))
    throw DTypeError(std::string("orthogonal: dtype must be floating or complex, got ") + dtype_name(dt));
  const int64_t cols = m ? *m : n;
  if (n < 0 || cols < 0)
    throw ValueError("orthogonal: the matrix size must be non-negative, got n = " + std::to_string(n) +
                     ", m = " + std::to_string(cols));
  Shape zs = shape;
  zs.push_back(std::max(n, cols));
  zs.push_back(std::min(n, cols));
  Array z = normal(key, zs, dt);
  linalg::QrResult qr = linalg::qr(z);
  Array x = qr.q * expand_dims(sign(linalg::diagonal(qr.r)), {-2});
  return n < cols ? swapaxes(x, -1, -2) : x;
}

}  // namespace tessel::random
