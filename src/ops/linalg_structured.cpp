// The `schur` primitive (lax.linalg.schur_p, gees; no derivative, as in JAX) and the
// functions built on it or on eigh: jax.scipy.linalg.schur, sqrtm (Schur method) and
// eigh_tridiagonal. The kernel calls backend/cpu/lapack_schur.h; leading dimensions are a
// batch (batching and sharding rules from linalg_factor.h).
#include "backend/cpu/lapack_schur.h"
#include "ops/linalg_composed.h"
#include "ops/linalg_factor.h"
#include "ops/rule_util.h"
#include "tessel/control_flow.h"
#include "tessel/linalg.h"

namespace tessel::ops {
namespace {

// ---- schur ----

bool vectors_of(const Params& p) { return p.get<bool>("compute_schur_vectors"); }

std::vector<Aval> schur_aval(std::span<const Aval> ins, const Params& p) {
  check_matrices("schur", ins[0], true);
  std::vector<Aval> out{Aval(ins[0].shape, ins[0].dtype)};
  if (vectors_of(p)) out.push_back(Aval(ins[0].shape, ins[0].dtype));
  return out;
}

void schur_kernel(const KernelCall& c) {
  const Aval& a = c.in_avals[0];
  const int64_t n = a.shape.back();
  cpu::schur(a.dtype, batch_size(a, 2), n, c.ins[0], c.outs[0], vectors_of(c.params) ? c.outs[1] : nullptr);
}

// No jvp: as JAX's schur_p, the decomposition has none (its Schur vectors are not unique).
const ir::Primitive& schur_p = ir::register_primitive({.name = "schur",
                                                       .arity = {1, 1},
                                                       .abstract_eval = schur_aval,
                                                       .cpu_kernel = schur_kernel,
                                                       .batch = batch_leading,
                                                       .sharding_rule = batch_sharding_rule});

/// The square roots U (U^2 = T) of upper triangular matrices T (..., n, n) with
/// diag(U) = sqrt(diag(T)) (Björck and Hammarling): column j above the diagonal solves
/// (U[:j, :j] + U[j, j] I) u = T[:j, j], one triangular solve per column in a loop.
Array sqrtm_triangular(const Array& t) {
  const int64_t n = t.dim(-1);
  const Array root = sqrt(matrix_diagonal(t));
  const Array rows = iota(DType::int32, {n, 1}, 0), cols = iota(DType::int32, {1, n}, 1);
  const Array ident = eye(n, std::nullopt, 0, t.dtype());
  return fori_loop(int64_t(0), n, [&](const Array& j, const Array& u) {
    const Array above = less(rows, j), left = less(cols, j), pick = equal(cols, j);  // (n, 1), (1, n), (1, n)
    const Array rjj = sum(where(reshape(pick, {n}), root, zeros_like(root)), {-1}, true);  // U[j, j], (..., 1)
    // Outside the leading j x j block, the identity: those rows of the solution are 0.
    const Array block = where(logical_and(above, left), add(u, multiply(expand_dims(rjj, {rjj.ndim()}), ident)), ident);
    const Array rhs = where(above, sum(where(pick, t, zeros_like(t)), {-1}, true), zeros_like(rows).astype(t.dtype()));
    const Array col = tessel::scipy::linalg::solve_triangular(block, rhs, 0, false);  // (..., n, 1)
    return add(u, multiply(col, pick.astype(t.dtype())));
  }, diagonal_matrix(root));
}

}  // namespace
}  // namespace tessel::ops

namespace tessel::lax::linalg {

SchurResult schur(const Array& x, bool compute_schur_vectors) {
  ops::check_matrices("lax.linalg.schur", x.aval(), true);
  const auto outs = ops::bind(ops::schur_p, std::vector<Array>{x},
                              ops::Params{{"compute_schur_vectors", compute_schur_vectors}});
  return {outs[0], compute_schur_vectors ? outs[1] : Array()};
}

}  // namespace tessel::lax::linalg

namespace tessel::scipy::linalg {

lax::linalg::SchurResult schur(const Array& a, const std::string& output) {
  const std::string op = "scipy.linalg.schur";
  if (output != "real" && output != "complex")
    throw ValueError(op + ": output must be \"real\" or \"complex\", got \"" + output + "\"");
  ops::check_matrix_shape(op, a.shape(), true);
  Array x = ops::to_lapack_dtype(a);
  if (output == "complex") x = astype(x, complex_dtype(real_dtype(x.dtype())));
  return lax::linalg::schur(x, true);
}

Array sqrtm(const Array& a) {
  ops::check_matrix_shape("scipy.linalg.sqrtm", a.shape(), true);
  const auto [t, z] = schur(a, "complex");
  return matmul(matmul(z, ops::sqrtm_triangular(t)), ops::matrix_adjoint(z));
}

EighTridiagonalResult eigh_tridiagonal(const Array& d, const Array& e, bool eigvals_only, const std::string& select,
                                       std::pair<int64_t, int64_t> select_range) {
  const std::string op = "scipy.linalg.eigh_tridiagonal";
  if (d.ndim() < 1 || e.ndim() != d.ndim() || e.dim(-1) + 1 != std::max<int64_t>(d.dim(-1), 1) ||
      ops::batch_shape(d.shape(), 1) != ops::batch_shape(e.shape(), 1))
    throw ShapeError(op + ": d must be (..., n) and e (..., n - 1), got shapes " + shape_to_string(d.shape()) + " and " +
                     shape_to_string(e.shape()));
  if (select != "a" && select != "i")
    throw ValueError(op + ": select must be \"a\" (all eigenvalues) or \"i\" (an index range), got \"" + select +
                     "\" (the value range \"v\" has a data-dependent size)");
  const int64_t n = d.dim(-1);
  auto [lo, hi] = select == "a" ? std::pair<int64_t, int64_t>{0, n - 1} : select_range;
  if (lo < 0 || hi >= n || lo > hi + 1)
    throw ValueError(op + ": select_range (" + std::to_string(lo) + ", " + std::to_string(hi) +
                     ") must lie in [0, " + std::to_string(n - 1) + "]");
  // The dense Hermitian tridiagonal matrix, diagonalized by eigh.
  std::vector<Array> de = ops::promote_all({ops::to_lapack_dtype(d), ops::to_lapack_dtype(e)});
  // e padded to n entries on a diagonal, shifted down a row: (i, i - 1) holds e[i - 1].
  std::vector<std::array<int64_t, 3>> grow(size_t(d.ndim()), {0, 0, 0}), down(size_t(d.ndim() + 1), {0, 0, 0});
  grow.back() = {0, 1, 0};
  down[size_t(d.ndim() - 1)] = {1, -1, 0};
  const Array lower = lax_pad(ops::diagonal_matrix(lax_pad(de[1], Scalar(0), grow)), Scalar(0), down);
  const Array a = add(add(ops::diagonal_matrix(de[0]), lower), ops::matrix_adjoint(lower));
  EighTridiagonalResult r;
  if (eigvals_only) {
    r.eigenvalues = slice_in_dim(tessel::linalg::eigvalsh(a), lo, hi + 1, 1, -1);
  } else {
    const auto vw = tessel::linalg::eigh(a);
    r.eigenvalues = slice_in_dim(vw.eigenvalues, lo, hi + 1, 1, -1);
    r.eigenvectors = slice_in_dim(vw.eigenvectors, lo, hi + 1, 1, -1);
  }
  return r;
}

}  // namespace tessel::scipy::linalg
