// The `tridiagonal_solve` primitive (lax.linalg.tridiagonal_solve): x with A x = b for
// tridiagonal A given by its three diagonals dl, d, du (..., m) and b (..., m, n); the
// kernel calls gtsv (backend/cpu/lapack.h). Linear in b (transpose: the solve with A^T);
// jvp, batching and sharding rules as JAX's.
#include "backend/cpu/lapack.h"
#include "ops/linalg_factor.h"
#include "ops/rule_util.h"
#include "tessel/linalg.h"

namespace tessel::ops {
namespace {

std::vector<Aval> tridiagonal_solve_aval(std::span<const Aval> ins, const Params&) {
  const Aval &dl = ins[0], &d = ins[1], &du = ins[2], &b = ins[3];
  const std::string shapes = "dl " + shape_to_string(dl.shape) + ", d " + shape_to_string(d.shape) + ", du " +
                             shape_to_string(du.shape) + " and b " + shape_to_string(b.shape);
  check_matrices("tridiagonal_solve", b, false);
  if (dl.shape != d.shape || du.shape != d.shape)
    throw ShapeError("tridiagonal_solve: the three diagonals must have one shape (..., m), got " + shapes);
  if (batch_shape(b.shape, 1) != d.shape)
    throw ShapeError("tridiagonal_solve: b must be (..., m, n) with the diagonals' shape (..., m) in front, got " +
                     shapes);
  for (const Aval& x : {dl, d, du})
    if (x.dtype != b.dtype)
      throw DTypeError("tridiagonal_solve: the diagonals and b must have one dtype, got " + avals_to_string(ins));
  return {Aval(b.shape, b.dtype)};
}

void tridiagonal_solve_kernel(const KernelCall& c) {
  const Aval& b = c.in_avals[3];
  cpu::tridiagonal_solve(b.dtype, batch_size(b, 2), b.shape[size_t(b.ndim() - 2)], b.shape.back(), c.ins[0], c.ins[1], c.ins[2],
                         c.ins[3], c.outs[0]);
}

/// Rows [lo, hi) of the matrices of x (..., m, n), or elements of vectors (..., m).
Array rows(const Array& x, int64_t lo, int64_t hi, int64_t from_end) {
  return slice_in_dim(x, lo, hi, 1, x.ndim() - from_end);
}

/// A x for the tridiagonal A of (dl, d, du) and matrices x (..., m, n).
Array tridiagonal_product(const Array& dl, const Array& d, const Array& du, const Array& x) {
  const int64_t m = x.dim(-2), nd = x.ndim();
  Array y = expand_dims(d, {d.ndim()}) * x;
  if (m < 2) return y;
  std::vector<std::array<int64_t, 3>> below(size_t(nd), {0, 0, 0}), above(size_t(nd), {0, 0, 0});
  below[size_t(nd - 2)][0] = 1;  // row i gets dl[i] x[i-1]
  above[size_t(nd - 2)][1] = 1;  // row i gets du[i] x[i+1]
  const Array sub = expand_dims(rows(dl, 1, m, 1), {dl.ndim()}) * rows(x, 0, m - 1, 2);
  const Array super = expand_dims(rows(du, 0, m - 1, 1), {du.ndim()}) * rows(x, 1, m, 2);
  return y + lax_pad(sub, Scalar(0.0), below) + lax_pad(super, Scalar(0.0), above);
}

// dx = A^-1 (db - dA x).
std::vector<Array> tridiagonal_solve_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                         std::span<const Array> tangents, std::span<const Array> outs,
                                         const Params& p) {
  Array rhs = tangents[3];
  if (!is_zero(tangents[0]) || !is_zero(tangents[1]) || !is_zero(tangents[2])) {
    std::vector<Array> dd;
    for (int i = 0; i < 3; ++i) dd.push_back(instantiate_zeros(tangents[size_t(i)], primals[size_t(i)].aval()));
    const Array prod = tridiagonal_product(dd[0], dd[1], dd[2], outs[0]);
    rhs = is_zero(rhs) ? negative(prod) : rhs - prod;
  }
  return {bind1(self, {primals[0], primals[1], primals[2], rhs}, p)};
}

// Linear in b: A^T has sub-diagonal du shifted down one and super-diagonal dl shifted up.
std::vector<Array> tridiagonal_solve_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                               std::span<const Array> args, std::span<const Aval>, const Params& p) {
  for (int i = 0; i < 3; ++i)
    if (is_zero(args[size_t(i)]))
      throw ValueError("tridiagonal_solve: not linear in its diagonals (only in b); reverse mode cannot transpose it");
  if (is_zero(cts[0])) return {Array(), Array(), Array(), Array()};
  const Array &dl = args[0], &du = args[2];
  const int64_t m = dl.dim(-1), nd = dl.ndim();
  std::vector<std::array<int64_t, 3>> front(size_t(nd), {0, 0, 0}), back(size_t(nd), {0, 0, 0});
  front.back()[0] = 1;
  back.back()[1] = 1;
  const Array dl_t = lax_pad(rows(du, 0, m - 1, 1), Scalar(0.0), front);
  const Array du_t = lax_pad(rows(dl, 1, m, 1), Scalar(0.0), back);
  return {Array(), Array(), Array(), bind1(self, {dl_t, args[1], du_t, cts[0]}, p)};
}

// Only b batched: its batch joins its columns (one solve); otherwise all to the front.
Batched tridiagonal_solve_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                                const BatchAxis& axis, const Params& p) {
  if (dims[0] == kNotBatched && dims[1] == kNotBatched && dims[2] == kNotBatched)
    return batch_into_rhs(self, ins, dims[3], true, p);
  return batch_leading(self, ins, dims, axis, p);
}

// SPMD: the batch dimensions (all but the diagonals' last) pass through; the rest stays whole.
ir::ShardingRule tridiagonal_solve_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs,
                                                 const Params&) {
  return leading_batch_rule(ins, outs, ins[0].ndim() - 1);
}

const ir::Primitive& tridiagonal_solve_p = ir::register_primitive({.name = "tridiagonal_solve",
                                                                   .arity = {4, 4},
                                                                   .abstract_eval = tridiagonal_solve_aval,
                                                                   .cpu_kernel = tridiagonal_solve_kernel,
                                                                   .jvp = tridiagonal_solve_jvp,
                                                                   .transpose = tridiagonal_solve_transpose,
                                                                   .batch = tridiagonal_solve_batch,
                                                                   .sharding_rule = tridiagonal_solve_sharding_rule});

}  // namespace
}  // namespace tessel::ops

namespace tessel::lax::linalg {

Array tridiagonal_solve(const Array& dl, const Array& d, const Array& du, const Array& b) {
  return ops::bind1(ops::tridiagonal_solve_p, {dl, d, du, b});
}

}  // namespace tessel::lax::linalg
