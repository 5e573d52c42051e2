// The `eig` primitive (lax.linalg.eig_p): eigenvalues and, on request, left and right
// eigenvectors of general square matrices (..., n, n), complex as JAX gives them on CPU. The
// kernel calls LAPACK's geev (backend/cpu/lapack.h); leading dimensions are a batch.
//
// Derivatives, as JAX's rule: the eigenvalues' dw_i = (V^-1 dA V)_ii for the right
// eigenvectors V (computed for the rule when not requested); the eigenvectors' only on the
// explicit opt-in enable_eigvec_derivs (they are valid only for distinct eigenvalues, which
// the rule cannot check), otherwise differentiating them throws.
#include "backend/cpu/lapack.h"
#include "ops/linalg_composed.h"
#include "ops/linalg_factor.h"
#include "ops/rule_util.h"
#include "tessel/linalg.h"

namespace tessel::ops {
namespace {

bool left_of(const Params& p) { return p.get<bool>("compute_left_eigenvectors"); }
bool right_of(const Params& p) { return p.get<bool>("compute_right_eigenvectors"); }

std::vector<Aval> eig_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  check_matrices("eig", x, true);
  const DType c = complex_dtype(real_dtype(x.dtype));
  std::vector<Aval> out{Aval(batch_shape(x.shape, 1), c)};
  if (left_of(p)) out.push_back(Aval(x.shape, c));
  if (right_of(p)) out.push_back(Aval(x.shape, c));
  return out;
}

void eig_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  if (c.out_avals[0].size() == 0) return;  // an empty batch, or 0 x 0 matrices
  const int64_t n = x.shape.back();
  size_t next = 1;
  void* vl = left_of(c.params) ? c.outs[next++] : nullptr;
  void* vr = right_of(c.params) ? c.outs[next++] : nullptr;
  cpu::eig(x.dtype, batch_size(x, 2), n, c.ins[0], c.outs[0], vl, vr);
}

bool eigvec_derivs_of(const Params& p) { return p.get<bool>("enable_eigvec_derivs"); }

/// (V^-1 dA V) for the eigenvectors V of A, solved through lu directly: linalg::solve is a
/// custom_jvp function, which reverse mode could not transpose where it meets a tangent.
Array rotated_tangent(const Array& v, const Array& da) {
  const auto f = lax::linalg::lu(v);
  return matmul(lu_solve_matrices(f.lu, f.permutation, da, 0), v);
}

/// First-order perturbation of the eigenpairs (w, v) (distinct eigenvalues; JAX's
/// _eig_vec_jvp): with P = V^-1 dA V, dw = diag(P) and dV = V (F * P) + V diag(c), where
/// F_ij = 1 / (w_j - w_i) off the diagonal and c keeps LAPACK's normalisation (unit 2-norm,
/// real largest-magnitude component) to first order.
std::pair<Array, Array> eigenvector_jvp(const Array& w, const Array& v, const Array& da) {
  const int64_t n = w.dim(-1);
  const Array eye_n = eye(n, std::nullopt, 0, w.dtype());
  const Array f = subtract(reciprocal(add(eye_n, subtract(expand_dims(w, {w.ndim() - 1}), expand_dims(w, {w.ndim()})))), eye_n);
  const Array p = rotated_tangent(v, da);
  const Array u = matmul(v, multiply(f, p));
  const Array k = argmax(abs(v), v.ndim() - 2, true);  // the largest component of each column
  const Array mask = astype(equal(iota(DType::int32, v.shape(), v.ndim() - 2), k), v.dtype());
  const Array c = complex(negative(real(sum(multiply(conj(v), u), {-2}))),
                          divide(negative(imag(sum(multiply(mask, u), {-2}))), real(sum(multiply(mask, v), {-2}))));
  return {matrix_diagonal(p), add(u, multiply(v, expand_dims(c, {c.ndim() - 1})))};
}

std::vector<Array> eig_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                           std::span<const Array> outs, const Params& p) {
  const bool left = left_of(p), right = right_of(p);
  if ((left || right) && !eigvec_derivs_of(p))
    throw ValueError(
        "eig: derivatives of the eigenvectors of a non-symmetric matrix are valid only under assumptions tessel "
        "cannot check (distinct eigenvalues; JAX's issue 2748); opt in with lax::linalg::eig(x, ..., "
        "enable_eigvec_derivs = true), differentiate the eigenvalues (linalg::eigvals) or, for Hermitian matrices, "
        "use linalg::eigh");
  // The right eigenvectors V are needed in every case: dw_i = (V^-1 dA V)_ii.
  const Array v = right ? outs.back()
                        : detail::bind(self, std::vector<Array>{primals[0]},
                                       Params{{"compute_left_eigenvectors", false},
                                              {"compute_right_eigenvectors", true},
                                              {"enable_eigvec_derivs", false}})[1];
  const Array da = convert(tangents[0], v.dtype());
  if (!left && !right) return {matrix_diagonal(rotated_tangent(v, da))};
  const auto [dw, dv] = eigenvector_jvp(outs[0], v, da);
  std::vector<Array> r{dw};
  if (left) r.push_back(eigenvector_jvp(conj(outs[0]), outs[1], matrix_adjoint(da)).second);
  if (right) r.push_back(dv);
  return r;
}

const ir::Primitive& eig_p = ir::register_primitive({.name = "eig",
                                                     .arity = {1, 1},
                                                     .abstract_eval = eig_aval,
                                                     .cpu_kernel = eig_kernel,
                                                     .jvp = eig_jvp,
                                                     .batch = batch_leading,
                                                     .sharding_rule = batch_sharding_rule});

}  // namespace
}  // namespace tessel::ops

namespace tessel::lax::linalg {

EigResult eig(const Array& x, bool compute_left_eigenvectors, bool compute_right_eigenvectors,
              bool enable_eigvec_derivs) {
  ops::check_matrices("lax.linalg.eig", x.aval(), true);
  const std::vector<Array> outs =
      ops::bind(ops::eig_p, std::vector<Array>{x},
                ops::Params{{"compute_left_eigenvectors", compute_left_eigenvectors},
                            {"compute_right_eigenvectors", compute_right_eigenvectors},
                            {"enable_eigvec_derivs", enable_eigvec_derivs}});
  EigResult r{outs[0], {}, {}};
  size_t next = 1;
  if (compute_left_eigenvectors) r.left_eigenvectors = outs[next++];
  if (compute_right_eigenvectors) r.right_eigenvectors = outs[next++];
  return r;
}

}  // namespace tessel::lax::linalg

namespace tessel::linalg {

EigResult eig(const Array& a) {
  ops::check_matrix_shape("linalg.eig", a.shape(), true);
  const auto r = lax::linalg::eig(ops::to_lapack_dtype(a), false, true);
  return {r.eigenvalues, r.right_eigenvectors};
}

Array eigvals(const Array& a) {
  ops::check_matrix_shape("linalg.eigvals", a.shape(), true);
  return lax::linalg::eig(ops::to_lapack_dtype(a), false, false).eigenvalues;
}

}  // namespace tessel::linalg
