// The `eig` primitive (lax.linalg.eig_p): eigenvalues and, on request, left and right
// eigenvectors of general square matrices (..., n, n), complex as JAX gives them on CPU. The
// kernel calls LAPACK's geev (backend/cpu/lapack.h); leading dimensions are a batch.
//
// Derivatives: as JAX, eigenvalues only. With no eigenvectors requested, dw_i = (V^-1 dA V)_ii
// for the right eigenvectors V (computed for the rule); the eigenvectors of a non-symmetric
// matrix have no derivative here (JAX gives one only on an explicit opt-in, since it is valid
// only under assumptions it cannot check), so differentiating them throws.
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
  std::vector<Aval> out{Aval(Shape(x.shape.begin(), x.shape.end() - 1), c)};
  if (left_of(p)) out.push_back(Aval(x.shape, c));
  if (right_of(p)) out.push_back(Aval(x.shape, c));
  return out;
}

void eig_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  if (c.out_avals[0].size() == 0) return;  // an empty batch, or 0 x 0 matrices
  const int64_t n = x.shape.back();
  const int64_t batch = c.out_avals[0].size() / n;
  size_t next = 1;
  void* vl = left_of(c.params) ? c.outs[next++] : nullptr;
  void* vr = right_of(c.params) ? c.outs[next++] : nullptr;
  cpu::eig(x.dtype, batch, n, c.ins[0], c.outs[0], vl, vr);
}

std::vector<Array> eig_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                           std::span<const Array> outs, const Params& p) {
  if (left_of(p) || right_of(p))
    throw ValueError(
        "eig: derivatives of the eigenvectors of a non-symmetric matrix are not available (JAX gives them only on an "
        "explicit opt-in, as they are valid only under assumptions it cannot check); differentiate the eigenvalues "
        "(linalg::eigvals) or, for Hermitian matrices, use linalg::eigh");
  // dw_i = (V^-1 dA V)_ii, with the right eigenvectors V of A.
  const auto vs = detail::bind(self, std::vector<Array>{primals[0]},
                               Params{{"compute_left_eigenvectors", false}, {"compute_right_eigenvectors", true}});
  const Array& v = vs[1];
  const Array da = convert(tangents[0], v.dtype());
  (void)outs;
  // Solved through lu directly: linalg::solve is a custom_jvp function, which reverse mode
  // could not transpose where it is applied to a tangent.
  const auto f = lax::linalg::lu(v);
  return {sum(multiply(lu_solve_matrices(f.lu, f.permutation, da, 0), matrix_transpose(v)), {-1})};
}

/// The kernel treats leading dimensions as a batch: the batch dimension moves to the front.
Batched eig_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                  const BatchAxis&, const Params& p) {
  const std::vector<Array> outs = detail::bind(self, std::vector<Array>{moveaxis(ins[0], dims[0], 0)}, p);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

const ir::Primitive& eig_p = ir::register_primitive({.name = "eig",
                                                     .arity = {1, 1},
                                                     .abstract_eval = eig_aval,
                                                     .cpu_kernel = eig_kernel,
                                                     .jvp = eig_jvp,
                                                     .batch = eig_batch});

}  // namespace
}  // namespace tessel::ops

namespace tessel::lax::linalg {

EigResult eig(const Array& x, bool compute_left_eigenvectors, bool compute_right_eigenvectors) {
  ops::check_matrices("lax.linalg.eig", x.aval(), true);
  const std::vector<Array> outs =
      ops::bind(ops::eig_p, std::vector<Array>{x},
                ops::Params{{"compute_left_eigenvectors", compute_left_eigenvectors},
                            {"compute_right_eigenvectors", compute_right_eigenvectors}});
  EigResult r{outs[0], {}, {}};
  size_t next = 1;
  if (compute_left_eigenvectors) r.left_eigenvectors = outs[next++];
  if (compute_right_eigenvectors) r.right_eigenvectors = outs[next++];
  return r;
}

}  // namespace tessel::lax::linalg

namespace tessel::linalg {

EigResult eig(const Array& a) {
  ops::check_square("linalg.eig", a);
  const auto r = lax::linalg::eig(ops::to_lapack_dtype(a), false, true);
  return {r.eigenvalues, r.right_eigenvectors};
}

Array eigvals(const Array& a) {
  ops::check_square("linalg.eigvals", a);
  return lax::linalg::eig(ops::to_lapack_dtype(a), false, false).eigenvalues;
}

}  // namespace tessel::linalg
