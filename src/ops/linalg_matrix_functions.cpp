// Functions of matrices in jax.scipy.linalg: expm, by scaling and squaring around a Padé
// approximant exactly as JAX computes it (Higham 2005: the degree picked from the 1-norm, 3
// to 13 in float64 and 3 to 7 in float32), so values and derivatives follow JAX's. The
// derivative is that of the computation (through its solve, switch and squaring loop), as
// in JAX, whose expm has no rule of its own.
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/linalg_composed.h"
#include "ops/linalg_factor.h"
#include "tessel/control_flow.h"
#include "tessel/linalg.h"
#include "tessel/transforms.h"

namespace tessel::ops {
namespace {

using UV = std::array<Array, 2>;

/// The Padé approximant of degree m = 2 * (b.size() / 2) - 1 (3, 5, 7 or 9) as its odd part
/// U = A (b1 I + b3 A^2 + ...) and even part V = b0 I + b2 A^2 + ... (exp(A) ~ (V - U)^-1 (V + U)).
UV pade(const Array& a, const std::vector<double>& b) {
  const int64_t n = a.dim(-1);
  const Array ident = eye(n, std::nullopt, 0, a.dtype());
  const Array a2 = matmul(a, a);
  Array power = ident, odd = multiply(ident, Array(b[1])), even = multiply(ident, Array(b[0]));
  for (size_t k = 2; k + 1 < b.size(); k += 2) {
    power = k == 2 ? a2 : matmul(power, a2);
    odd = add(odd, multiply(power, Array(b[k + 1])));
    even = add(even, multiply(power, Array(b[k])));
  }
  return {matmul(a, odd), even};
}

/// Degree 13, evaluated with A^6 factored out of the high terms (6 products instead of 8).
UV pade13(const Array& a) {
  const double b[] = {64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
                      129060195264000.,   10559470521600.,    670442572800.,     33522128640.,
                      1323241920.,        40840800.,          960960.,           16380.,
                      182.,               1.};
  const int64_t n = a.dim(-1);
  const Array ident = eye(n, std::nullopt, 0, a.dtype());
  const Array a2 = matmul(a, a), a4 = matmul(a2, a2), a6 = matmul(a4, a2);
  auto terms = [&](double c6, double c4, double c2, double c0) {
    return add(add(add(multiply(a6, Array(c6)), multiply(a4, Array(c4))), multiply(a2, Array(c2))),
               multiply(ident, Array(c0)));
  };
  auto high = [&](double c6, double c4, double c2) {
    return add(add(multiply(a6, Array(c6)), multiply(a4, Array(c4))), multiply(a2, Array(c2)));
  };
  const Array u = matmul(a, add(matmul(a6, high(b[13], b[11], b[9])), terms(b[7], b[5], b[3], b[1])));
  const Array v = add(matmul(a6, high(b[12], b[10], b[8])), terms(b[6], b[4], b[2], b[0]));
  return {u, v};
}

const std::vector<double> kPade3{120., 60., 12., 1.};
const std::vector<double> kPade5{30240., 15120., 3360., 420., 30., 1.};
const std::vector<double> kPade7{17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.};
const std::vector<double> kPade9{17643225600., 8821612800., 2075673600., 302702400., 30270240.,
                                 2162160.,     110880.,      3960.,        90.,         1.};

/// expm of one inexact square matrix.
Array expm_matrix(const Array& a_in, bool upper_triangular, int64_t max_squarings) {
  const bool wide = real_dtype(a_in.dtype()) == DType::float64;
  const DType real = real_dtype(a_in.dtype());
  // Below theta_m the degree-m approximant is accurate to the dtype's unit roundoff
  // (Higham's table); above the largest, the matrix is scaled by 2^-s first.
  const double max_norm = wide ? 5.371920351148152 : 3.925724783138660;
  const std::vector<double> thetas = wide ? std::vector<double>{1.495585217958292e-2, 2.539398330063230e-1,
                                                                9.504178996162932e-1, 2.097847961257068e+0}
                                          : std::vector<double>{4.258730016922831e-1, 1.880152677804762e+0};
  const Array norm1 = tessel::linalg::matrix_norm(a_in, 1);
  const Array squarings = maximum(Array(Scalar(0.0, real)), floor(log2(divide(norm1, Array(max_norm)))));
  const Array a = divide(a_in, convert(pow(Array(Scalar(2.0, real)), squarings), a_in.dtype()));
  Array degree = zeros({}, DType::int32);
  for (double t : thetas) degree = add(degree, astype(greater_equal(norm1, Array(t)), DType::int32));
  std::vector<std::function<UV(const Array&)>> branches{[](const Array& x) { return pade(x, kPade3); },
                                                       [](const Array& x) { return pade(x, kPade5); },
                                                       [](const Array& x) { return pade(x, kPade7); }};
  if (wide) {
    branches.push_back([](const Array& x) { return pade(x, kPade9); });
    branches.push_back(pade13);
  }
  const UV uv = switch_(degree, branches, a);
  const Array p = add(uv[0], uv[1]), q = subtract(uv[1], uv[0]);
  auto nan = [](const Array& pp, const Array&) { return full_like(pp, std::numeric_limits<double>::quiet_NaN()); };
  auto compute = [&](const Array& pp, const Array& qq) {
    Array r = upper_triangular ? scipy::linalg::solve_triangular(qq, pp) : tessel::linalg::solve(qq, pp);
    // Undo the scaling: square `squarings` times, in a loop of fixed length.
    return fori_loop(int64_t(0), max_squarings, [&](const Array& i, const Array& c) {
      return cond(less(i, squarings), [](const Array& x) { return matmul(x, x); }, [](const Array& x) { return x; }, c);
    }, r);
  };
  return cond(greater(squarings, Array(Scalar(double(max_squarings), real))), nan, compute, p, q);
}

}  // namespace
}  // namespace tessel::ops

namespace tessel::scipy::linalg {

Array expm(const Array& a_in, bool upper_triangular, int64_t max_squarings) {
  const std::string op = "scipy.linalg.expm";
  ops::check_matrix_shape(op, a_in.shape(), true);
  if (max_squarings < 0) throw ValueError(op + ": max_squarings must be >= 0, got " + std::to_string(max_squarings));
  const Array a = ops::to_inexact(a_in);
  if (is_floating(a.dtype()) && itemsize(a.dtype()) == 2)
    throw DTypeError(op + ": " + std::string(dtype_name(a.dtype())) +
                     " is not supported (JAX neither); convert to float32 first");
  auto one = [=](const Array& m) { return ops::expm_matrix(m, upper_triangular, max_squarings); };
  if (a.ndim() == 2) return one(a);
  // A batch: each matrix picks its own degree and squarings, as jnp.vectorize gives JAX.
  const int64_t n = a.dim(-1);
  const Array flat = reshape(a, {a.size() / std::max<int64_t>(n * n, 1), n, n});
  return reshape(vmap(one)(flat), a.shape());
}

}  // namespace tessel::scipy::linalg
