// tessel's side of tests/parity/cases_linalg.py (include/tessel/linalg.h). Factors unique
// only up to a phase per column get the generator's gauge fix (the same formulas).
#include "parity/parity.h"
#include "tessel/linalg.h"

namespace ts = tessel;
namespace la = tessel::linalg;
namespace sla = tessel::scipy::linalg;
namespace lla = tessel::lax::linalg;
using namespace tessel::parity;

namespace {
/// Per column, the phase that makes its largest-magnitude entry real positive (..., 1, n).
Array column_phase(const Array& v) {
  Array p = ts::take_along_axis(v, ts::argmax(ts::abs(v), -2, true), -2);
  return ts::conj(p) / ts::abs(p);
}
Array fix_columns(const Array& v) { return v * column_phase(v); }
/// The phases that make R's diagonal real positive (..., k).
Array diagonal_phase(const Array& r) {
  Array d = la::diagonal(r);
  return ts::conj(d) / ts::abs(d);
}
Array fix_r(const Array& r) {
  Array d = diagonal_phase(r);
  return r * ts::expand_dims(d, {d.ndim()});
}
Out fix_qr(const Array& q, const Array& r) {
  Array d = diagonal_phase(r);
  return {q * ts::expand_dims(ts::conj(d), {d.ndim() - 1}), fix_r(r)};
}
Out fix_svd(const Array& u, const Array& s, const Array& vh) {
  Array c = column_phase(u);
  return {u * c, s, vh * ts::conj(ts::swapaxes(c, -1, -2))};
}
/// T and Z with each Schur vector's phase fixed as fix_columns does (T -> D^H T D).
Out fix_schur(const Array& t, const Array& z) {
  Array d = column_phase(z);  // (..., 1, n)
  return {ts::conj(ts::swapaxes(d, -1, -2)) * t * d, z * d};
}
/// jnp.linalg's `ord` parameter: a number, "inf", or a name ("fro", "nuc").
la::NormOrd norm_ord(const Params& p) {
  if (p.type("ord") == "int") return la::NormOrd(int(p.i("ord")));
  if (p.s("ord") == "inf") return la::NormOrd(la::inf);
  return la::NormOrd(p.s("ord"));
}
}  // namespace

TESSEL_PARITY_CASES(linalg) {
  // ---- jax.numpy.linalg ----
  reg("linalg.cholesky", [](const In& x, const Params& p) { return out(la::cholesky(x[0], p.flag("upper"))); });
  reg("linalg.solve", binary(la::solve));
  reg("linalg.inv", unary(la::inv));
  reg("linalg.det", unary(la::det));
  reg("linalg.slogdet", [](const In& x, const Params&) {
    auto r = la::slogdet(x[0]);
    return Out{r.sign, r.logabsdet};
  });
  reg("linalg.eigvalsh", [](const In& x, const Params&) { return out(la::eigvalsh(x[0])); });
  reg("linalg.eigh", [](const In& x, const Params&) {
    auto r = la::eigh(x[0]);
    return Out{r.eigenvalues, fix_columns(r.eigenvectors)};
  });
  reg("linalg.svdvals", unary(la::svdvals));
  reg("linalg.svd", [](const In& x, const Params&) {
    auto r = la::svd(x[0], false);
    return fix_svd(r.u, r.s, r.vh);
  });
  reg("linalg.qr", [](const In& x, const Params& p) {
    auto r = la::qr(x[0], p.s("mode"));
    return p.s("mode") == "r" ? out(fix_r(r.r)) : fix_qr(r.q, r.r);
  });
  reg("linalg.pinv", [](const In& x, const Params&) { return out(la::pinv(x[0])); });
  reg("linalg.matrix_rank", [](const In& x, const Params&) { return out(la::matrix_rank(x[0])); });
  reg("linalg.cond", [](const In& x, const Params&) { return out(la::cond(x[0])); });
  reg("linalg.lstsq", [](const In& x, const Params&) {
    auto r = la::lstsq(x[0], x[1]);
    return Out{r.solution, r.residuals, r.rank, r.singular_values};
  });
  reg("linalg.matrix_power", [](const In& x, const Params& p) { return out(la::matrix_power(x[0], p.i("n"))); });
  reg("linalg.eigvals", unary(la::eigvals));
  reg("linalg.eig", [](const In& x, const Params&) {
    auto r = la::eig(x[0]);
    return Out{r.eigenvalues, fix_columns(r.eigenvectors)};
  });
  reg("linalg.vector_norm", [](const In& x, const Params& p) {
    return out(la::vector_norm(x[0], norm_ord(p), p.opt_ints("axis"), p.flag("keepdims")));
  });
  reg("linalg.matrix_norm", [](const In& x, const Params& p) { return out(la::matrix_norm(x[0], norm_ord(p))); });
  reg("linalg.norm", [](const In& x, const Params&) { return out(la::norm(x[0])); });
  reg("linalg.cross", [](const In& x, const Params&) { return out(la::cross(x[0], x[1])); });
  reg("linalg.multi_dot", [](const In& x, const Params&) { return out(la::multi_dot(x)); });
  reg("linalg.diagonal", [](const In& x, const Params& p) { return out(la::diagonal(x[0], p.i("offset"))); });
  reg("linalg.matrix_transpose", unary(la::matrix_transpose));
  reg("linalg.vecdot", [](const In& x, const Params& p) { return out(la::vecdot(x[0], x[1], p.i("axis"))); });
  reg("linalg.outer", binary(la::outer));
  reg("linalg.tensordot", [](const In& x, const Params& p) { return out(la::tensordot(x[0], x[1], p.i("axes"))); });
  reg("tensordot", [](const In& x, const Params& p) {
    return out(ts::tensordot(x[0], x[1], p.ints("a_axes"), p.ints("b_axes")));
  });
  reg("linalg.trace", [](const In& x, const Params& p) { return out(la::trace(x[0], p.i("offset"))); });
  reg("linalg.tensorsolve", [](const In& x, const Params&) { return out(la::tensorsolve(x[0], x[1])); });
  reg("linalg.tensorinv", [](const In& x, const Params& p) { return out(la::tensorinv(x[0], p.i("ind"))); });

  // ---- jax.scipy.linalg ----
  reg("scipy.linalg.solve_triangular", [](const In& x, const Params& p) {
    return out(sla::solve_triangular(x[0], x[1], int(p.i("trans")), p.flag("lower"), p.flag("unit_diagonal")));
  });
  reg("scipy.linalg.cho_factor", [](const In& x, const Params& p) { return out(sla::cho_factor(x[0], p.flag("lower")).c); });
  reg("scipy.linalg.cho_solve", [](const In& x, const Params& p) {
    return out(sla::cho_solve(sla::cho_factor(x[0], p.flag("lower")), x[1]));
  });
  reg("scipy.linalg.lu", [](const In& x, const Params&) {
    auto r = sla::lu(x[0]);
    return Out{r.p, r.l, r.u};
  });
  reg("scipy.linalg.lu_factor", [](const In& x, const Params&) {
    auto r = sla::lu_factor(x[0]);
    return Out{r.lu, r.piv};
  });
  reg("scipy.linalg.lu_solve", [](const In& x, const Params& p) {
    return out(sla::lu_solve(sla::lu_factor(x[0]), x[1], int(p.i("trans"))));
  });
  reg("scipy.linalg.qr", [](const In& x, const Params& p) {
    auto r = sla::qr(x[0], p.s("mode"));
    return fix_qr(r.q, r.r);
  });
  reg("scipy.linalg.svd", [](const In& x, const Params&) {
    auto r = sla::svd(x[0], false);
    return fix_svd(r.u, r.s, r.vh);
  });
  reg("scipy.linalg.expm", [](const In& x, const Params&) { return out(sla::expm(x[0])); });
  reg("scipy.linalg.polar", [](const In& x, const Params& p) {
    auto r = sla::polar(x[0], p.s("side"));
    return Out{r.unitary, r.posdef};
  });
  reg("scipy.linalg.toeplitz", [](const In& x, const Params&) {
    return out(x.size() == 2 ? sla::toeplitz(x[0], x[1]) : sla::toeplitz(x[0]));
  });
  reg("scipy.linalg.hankel", [](const In& x, const Params&) { return out(sla::hankel(x[0], x[1])); });
  reg("scipy.linalg.circulant", unary(sla::circulant));
  reg("scipy.linalg.block_diag", [](const In& x, const Params&) { return out(sla::block_diag(x)); });

  // ---- lax.linalg ----
  reg("lax.linalg.cholesky", [](const In& x, const Params&) { return out(lla::cholesky(x[0])); });
  reg("lax.linalg.triangular_solve", [](const In& x, const Params& p) {
    return out(lla::triangular_solve(x[0], x[1],
                                     {.left_side = p.flag("left_side"), .lower = p.flag("lower"),
                                      .transpose_a = p.flag("transpose_a"), .conjugate_a = p.flag("conjugate_a"),
                                      .unit_diagonal = p.flag("unit_diagonal")}));
  });
  reg("lax.linalg.lu", [](const In& x, const Params&) {
    auto r = lla::lu(x[0]);
    return Out{r.lu, r.pivots, r.permutation};
  });
  reg("lax.linalg.lu_pivots_to_permutation", [](const In& x, const Params& p) {
    return out(lla::lu_pivots_to_permutation(x[0], p.i("permutation_size")));
  });
  reg("lax.linalg.qr", [](const In& x, const Params& p) {
    auto r = lla::qr(x[0], p.flag("full_matrices"));
    return fix_qr(r.q, r.r);
  });
  reg("lax.linalg.eigh", [](const In& x, const Params&) {
    auto r = lla::eigh(x[0]);
    return Out{fix_columns(r.eigenvectors), r.eigenvalues};
  });
  reg("lax.linalg.tridiagonal_solve",
      [](const In& x, const Params&) { return out(lla::tridiagonal_solve(x[0], x[1], x[2], x[3])); });
  reg("scipy.linalg.eigh_tridiagonal", [](const In& x, const Params& p) {
    return out(sla::eigh_tridiagonal(x[0], x[1], p.flag("eigvals_only")).eigenvalues);
  });
  reg("scipy.linalg.sqrtm", unary(sla::sqrtm));
  reg("lax.linalg.svd", [](const In& x, const Params& p) {
    if (!p.flag("compute_uv")) return out(lla::svd(x[0], false, false).s);
    auto r = lla::svd(x[0], false);
    return fix_svd(r.u, r.s, r.vh);
  });
  reg("lax.linalg.eig", [](const In& x, const Params& p) {
    if (p.has("compute_left_eigenvectors")) return out(lla::eig(x[0], false, false).eigenvalues);
    auto r = lla::eig(x[0]);
    return Out{r.eigenvalues, fix_columns(r.left_eigenvectors), fix_columns(r.right_eigenvectors)};
  });
  reg("lax.linalg.schur", [](const In& x, const Params&) {
    auto r = lla::schur(x[0]);
    return fix_schur(r.t, r.z);
  });
  reg("scipy.linalg.schur", [](const In& x, const Params& p) {
    auto r = sla::schur(x[0], p.s("output"));
    return fix_schur(r.t, r.z);
  });
}
