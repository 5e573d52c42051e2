// The factorization primitives (lax.linalg's): cholesky, triangular_solve, lu, qr, geqrf,
// eigh and svd, each with its abstract evaluation, CPU kernel (backend/cpu/lapack.h), JAX's jvp rule,
// batching rule and sharding rule side by side; triangular_solve is linear in b and has a
// transpose; geqrf (for jnp.linalg.qr's mode "raw") has no derivative, as JAX's. Every
// primitive treats leading dimensions as a batch of matrices.
//
// qr is one primitive (q and r together: LAPACK's geqrf + orgqr in one kernel) rather than
// JAX's geqrf + householder_product pair: the same results and rules, one kernel.
#include "ops/linalg_factor.h"

#include <cstring>
#include <numeric>

#include "backend/cpu/lapack.h"
#include "ops/linalg.h"
#include "ops/rule_util.h"
#include "tessel/linalg.h"

namespace tessel::ops {

// ---- matrix helpers (linalg_factor.h) ----

namespace {

/// Over the last two dimensions of `shape`: true where column - row >= k (`upper`), else
/// where column - row <= k.
Array band_mask(const Shape& shape, int64_t k, bool upper) {
  const int64_t nd = int64_t(shape.size());
  const Shape mat{shape[size_t(nd - 2)], shape[size_t(nd - 1)]};
  const Array row = iota(DType::int64, mat, 0), col = iota(DType::int64, mat, 1);
  const Array diff = col - row;
  return upper ? greater_equal(diff, Array(k)) : less_equal(diff, Array(k));
}

Array masked(const Array& x, const Array& mask) {
  return where(broadcast_to(mask, x.shape()), x, zeros_like(x));
}

}  // namespace

Shape batch_shape(const Shape& s, int64_t matrix_dims) { return Shape(s.begin(), s.end() - matrix_dims); }

Shape with_batch(const Shape& batch, std::initializer_list<int64_t> tail) {
  Shape s = batch;
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

int64_t batch_size(const Aval& x, int64_t matrix_dims) { return shape_size(batch_shape(x.shape, matrix_dims)); }

Array tril(const Array& x, int64_t k) { return masked(x, band_mask(x.shape(), k, false)); }
Array triu(const Array& x, int64_t k) { return masked(x, band_mask(x.shape(), k, true)); }
Array matrix_transpose(const Array& x) { return swapaxes(x, -1, -2); }
Array matrix_adjoint(const Array& x) {
  const Array t = matrix_transpose(x);
  return is_complex(x.dtype()) ? conj(t) : t;
}
Array symmetrize(const Array& x) { return (x + matrix_adjoint(x)) * Array(0.5); }

Array matrix_diagonal(const Array& x) {
  const Array d = diagonal_front(x, x.ndim() - 2, x.ndim() - 1);
  return moveaxis(d, 0, -1);
}

Array diagonal_matrix(const Array& d) {
  const int64_t n = d.dim(-1);
  Shape s = d.shape();
  s.push_back(n);
  const Array e = eye(n, std::nullopt, 0, d.dtype());
  return multiply(expand_dims(d, {d.ndim()}), broadcast_to(e, s));
}

Array identity_like(const Array& x, int64_t n) {
  return broadcast_to(eye(n, std::nullopt, 0, x.dtype()), with_batch(batch_shape(x.shape(), 2), {n, n}));
}

void check_matrix_shape(const std::string& op, const Shape& shape, bool square, const char* what) {
  if (shape.size() < 2)
    throw ShapeError(op + ": " + what + " must be a matrix or a batch of matrices (..., m, n) of rank >= 2, got shape " +
                     shape_to_string(shape));
  if (square && shape[shape.size() - 1] != shape[shape.size() - 2])
    throw ShapeError(op + ": " + what + " must hold square matrices (..., n, n), got shape " + shape_to_string(shape) +
                     "; the last two dimensions must be equal");
}

void check_matrices(const std::string& op, const Aval& x, bool square) {
  check_matrix_shape(op, x.shape, square);
  if (!cpu::lapack_supported(x.dtype))
    throw DTypeError(op + ": dtype " + dtype_name(x.dtype) +
                     " is not supported; LAPACK factors float32, float64, complex64 and complex128 (the "
                     "tessel::linalg functions convert other dtypes; use astype)");
}

Array to_lapack_dtype(const Array& x) {
  const DType d = x.dtype();
  if (cpu::lapack_supported(d)) return x;
  if (is_floating(d)) return convert(x, DType::float32);
  return convert(x, default_float);
}

Array permutation_matrix(const Array& permutation, DType dtype) {
  const int64_t m = permutation.dim(-1);
  Shape s = permutation.shape();
  s.push_back(m);
  const Array cols = broadcast_to(iota(DType::int32, {m}, 0), s);
  return convert(equal(expand_dims(permutation, {permutation.ndim()}), cols), dtype);
}


// ---- rules shared by the primitives whose kernels take leading dimensions as a batch ----

Batched batch_leading(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                      const BatchAxis& axis, const Params& p) {
  std::vector<Array> front;
  for (size_t i = 0; i < ins.size(); ++i) front.push_back(move_batch_dim(ins[i], dims[i], 0, axis.size));
  std::vector<Array> outs = detail::bind(self, front, p);
  return {outs, std::vector<int64_t>(outs.size(), 0)};
}

Batched batch_into_rhs(const ir::Primitive& self, std::span<const Array> ins, int64_t dim, bool into_columns,
                       const Params& p) {
  const Array& b = ins.back();
  const int64_t nd = b.ndim();
  // The batch goes after the columns (nd - 1) or before the rows (nd - 3), and merges with them.
  const int64_t at = into_columns ? nd - 1 : nd - 3, merged = into_columns ? nd - 2 : nd - 3;
  const Array y = moveaxis(b, dim, at);
  Shape flat = y.shape();
  flat[size_t(merged)] *= flat[size_t(merged + 1)];
  flat.erase(flat.begin() + (merged + 1));
  std::vector<Array> args(ins.begin(), ins.end() - 1);
  args.push_back(reshape(y, flat));
  return {{reshape(bind1(self, args, p), y.shape())}, {at}};
}

ir::ShardingRule leading_batch_rule(std::span<const Aval> ins, std::span<const Aval> outs, int64_t nb) {
  ir::ShardingRule r;
  std::vector<int> batch;
  for (int64_t i = 0; i < nb; ++i) batch.push_back(add_factor(r));
  auto label = [&](const Aval& a) {
    std::vector<int> dims(size_t(a.ndim()), ir::kWhole);
    for (int64_t i = 0; i < nb && i < a.ndim(); ++i) dims[size_t(i)] = batch[size_t(i)];
    return dims;
  };
  for (const Aval& a : ins) r.operands.push_back(label(a));
  for (const Aval& a : outs) r.results.push_back(label(a));
  return r;
}

ir::ShardingRule batch_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  return leading_batch_rule(ins, outs, ins[0].ndim() - 2);
}

namespace {

// ---- cholesky ----

std::vector<Aval> cholesky_aval(std::span<const Aval> ins, const Params&) {
  check_matrices("cholesky", ins[0], true);
  return {Aval(ins[0].shape, ins[0].dtype)};
}

void cholesky_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  cpu::cholesky(x.dtype, batch_size(x, 2), x.shape.back(), c.ins[0], c.outs[0],
                c.params.get<bool>("symmetrize_input"));
}

// L' = L phi(L^-1 dA L^-H), phi taking the lower triangle with its diagonal halved
// (Murray, arXiv:1602.07527), as JAX's cholesky_jvp_rule. With symmetrize_input (JAX
// symmetrizes before its primitive; tessel's kernel does it while copying) dA is the
// symmetrized tangent.
std::vector<Array> cholesky_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array> tangents,
                                std::span<const Array> outs, const Params& p) {
  const Array& l = outs[0];
  const Array da = p.get<bool>("symmetrize_input") ? symmetrize(tangents[0]) : tangents[0];
  using lax::linalg::triangular_solve;
  const Array tmp = triangular_solve(l, da, {.left_side = false, .lower = true, .transpose_a = true,
                                                      .conjugate_a = true});
  const Array inner = triangular_solve(l, tmp, {.left_side = true, .lower = true});
  const int64_t n = l.dim(-1);
  const Array halves = eye(n, std::nullopt, 0, l.dtype()) + Array(1.0).astype(l.dtype());
  const Array phi = tril(inner) / broadcast_to(halves, inner.shape());
  return {matmul(l, phi)};
}

const ir::Primitive& cholesky_p = ir::register_primitive({.name = "cholesky",
                                                          .arity = {1, 1},
                                                          .abstract_eval = cholesky_aval,
                                                          .cpu_kernel = cholesky_kernel,
                                                          .jvp = cholesky_jvp,
                                                          .batch = batch_leading,
                                                          .sharding_rule = batch_sharding_rule});

// ---- triangular_solve ----

lax::linalg::TriangularSolveOptions solve_options(const Params& p) {
  return {.left_side = p.get<bool>("left_side"),
          .lower = p.get<bool>("lower"),
          .transpose_a = p.get<bool>("transpose_a"),
          .conjugate_a = p.get<bool>("conjugate_a"),
          .unit_diagonal = p.get<bool>("unit_diagonal")};
}

Params solve_params(const lax::linalg::TriangularSolveOptions& o) {
  return Params{{"left_side", o.left_side},     {"lower", o.lower},
                {"transpose_a", o.transpose_a}, {"conjugate_a", o.conjugate_a},
                {"unit_diagonal", o.unit_diagonal}};
}

std::vector<Aval> triangular_solve_aval(std::span<const Aval> ins, const Params& p) {
  const Aval &a = ins[0], &b = ins[1];
  const bool left = p.get<bool>("left_side");
  check_matrices("triangular_solve", a, true);
  check_matrices("triangular_solve", b, false);
  const std::string shapes = "a " + shape_to_string(a.shape) + " and b " + shape_to_string(b.shape);
  if (a.dtype != b.dtype)
    throw DTypeError("triangular_solve: a and b have different dtypes (" + std::string(dtype_name(a.dtype)) + " and " +
                     dtype_name(b.dtype) + "); convert them to one dtype");
  if (batch_shape(a.shape, 2) != batch_shape(b.shape, 2))
    throw ShapeError("triangular_solve: a and b must have the same batch dimensions, got " + shapes +
                     "; broadcast them first");
  const int64_t k = a.shape.back(), common = left ? b.shape[size_t(b.ndim() - 2)] : b.shape.back();
  if (k != common)
    throw ShapeError("triangular_solve: incompatible shapes " + shapes + ": a is " + std::to_string(k) + " x " +
                     std::to_string(k) + " but b has " + std::to_string(common) + (left ? " rows" : " columns") +
                     " (left_side = " + (left ? "true" : "false") + ")");
  return {Aval(b.shape, b.dtype)};
}

void triangular_solve_kernel(const KernelCall& c) {
  const Aval& b = c.in_avals[1];
  const auto o = solve_options(c.params);
  cpu::triangular_solve(b.dtype, batch_size(b, 2), b.shape[size_t(b.ndim() - 2)], b.shape.back(), c.ins[0], c.ins[1],
                        c.outs[0],
                        {.left_side = o.left_side, .lower = o.lower, .transpose_a = o.transpose_a,
                         .conjugate_a = o.conjugate_a, .unit_diagonal = o.unit_diagonal});
}

// d x = solve(a, db) - (the solve of d a applied to x), JAX's _triangular_solve_jvp_rule_a:
// the tangent of a restricted to its triangle (without the diagonal when unit), negated,
// transposed and conjugated as op(a), multiplied in the cheaper order.
Array triangular_solve_jvp_a(const Array& da, const Array& a, const Array& x, const Params& p) {
  const auto o = solve_options(p);
  const int64_t k = o.unit_diagonal ? 1 : 0;
  Array g = o.lower ? tril(da, -k) : triu(da, k);
  g = negative(g);
  if (o.transpose_a) g = matrix_transpose(g);
  if (o.conjugate_a && is_complex(g.dtype())) g = conj(g);
  auto a_inverse = [&](const Array& rhs) { return lax::linalg::triangular_solve(a, rhs, o); };
  const int64_t m = x.dim(-2), n = x.dim(-1);
  if (o.left_side) return m > n ? a_inverse(matmul(g, x)) : matmul(a_inverse(g), x);
  return m < n ? a_inverse(matmul(x, g)) : matmul(x, a_inverse(g));
}

std::vector<Array> triangular_solve_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                        std::span<const Array> tangents, std::span<const Array> outs,
                                        const Params& p) {
  Array r;
  if (!is_zero(tangents[1])) r = bind1(self, {primals[0], tangents[1]}, p);
  if (!is_zero(tangents[0])) r = add_tangents(r, triangular_solve_jvp_a(tangents[0], primals[0], outs[0], p));
  return {r};
}

// Linear in b: the cotangent of b solves with op(a) transposed.
std::vector<Array> triangular_solve_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                              std::span<const Array> args, std::span<const Aval>, const Params& p) {
  if (is_zero(args[0]))
    throw ValueError("triangular_solve: not linear in its matrix a (only in b); reverse mode cannot transpose it in a");
  if (is_zero(cts[0])) return {Array(), Array()};
  Params q = p;
  q.set("transpose_a", !p.get<bool>("transpose_a"));
  return {Array(), bind1(self, {args[0], cts[0]}, q)};
}

// Both batched: batch dimensions to the front. Only b batched: its batch dimension joins
// b's columns (left side) or rows (right side), so one solve with the unbatched a covers
// the whole batch, as JAX's rule does.
Batched triangular_solve_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                               const BatchAxis& axis, const Params& p) {
  if (dims[0] == kNotBatched) return batch_into_rhs(self, ins, dims[1], p.get<bool>("left_side"), p);
  return batch_leading(self, ins, dims, axis, p);
}

const ir::Primitive& triangular_solve_p = ir::register_primitive({.name = "triangular_solve",
                                                                  .arity = {2, 2},
                                                                  .abstract_eval = triangular_solve_aval,
                                                                  .cpu_kernel = triangular_solve_kernel,
                                                                  .jvp = triangular_solve_jvp,
                                                                  .transpose = triangular_solve_transpose,
                                                                  .batch = triangular_solve_batch,
                                                                  .sharding_rule = batch_sharding_rule});

// ---- lu ----

std::vector<Aval> lu_aval(std::span<const Aval> ins, const Params&) {
  const Aval& x = ins[0];
  check_matrices("lu", x, false);
  const int64_t m = x.shape[size_t(x.ndim() - 2)], n = x.shape.back();
  const Shape batch = batch_shape(x.shape, 2);
  return {Aval(x.shape, x.dtype), Aval(with_batch(batch, {std::min(m, n)}), DType::int32),
          Aval(with_batch(batch, {m}), DType::int32)};
}

void lu_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  cpu::lu(x.dtype, batch_size(x, 2), x.shape[size_t(x.ndim() - 2)], x.shape.back(), c.ins[0], c.outs[0],
          c.out<int32_t>(1), c.out<int32_t>(2));
}

// De Hoog, Anderssen and Lukas: with F = L^-1 P dA U^-1, dL = L tril(F, -1) and
// dU = triu(F) U; L is padded to m x m and U to n x n (identity blocks) for wide or tall
// matrices, as JAX's _lu_jvp_inner.
std::vector<Array> lu_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array> tangents,
                          std::span<const Array> outs, const Params&) {
  const Array &lu = outs[0], &perm = outs[2];
  const int64_t m = lu.dim(-2), n = lu.dim(-1), k = std::min(m, n), nd = lu.ndim();
  std::vector<std::array<int64_t, 3>> pad_l(size_t(nd), {0, 0, 0}), pad_u(size_t(nd), {0, 0, 0});
  pad_l.back()[1] = m - k;
  pad_u[size_t(nd - 2)][1] = n - k;
  Shape lo = lu.shape(), hi = lu.shape();
  std::fill(lo.begin(), lo.end(), 0);
  hi[size_t(nd - 1)] = k;
  const Array l = lax_pad(tril(slice(lu, lo, hi), -1), Scalar(0.0), pad_l) + identity_like(lu, m);
  hi = lu.shape();
  hi[size_t(nd - 2)] = k;
  Array u = lax_pad(triu(slice(lu, lo, hi)), Scalar(0.0), pad_u);
  if (n > k) {
    std::vector<std::array<int64_t, 3>> pad_e(size_t(nd), {0, 0, 0});
    pad_e[size_t(nd - 2)][0] = pad_e[size_t(nd - 1)][0] = k;
    u = u + lax_pad(identity_like(lu, n - k), Scalar(0.0), pad_e);
  }
  const Array pda = permute_rows(tangents[0], perm);
  using lax::linalg::triangular_solve;
  const Array la = triangular_solve(l, pda, {.left_side = true, .lower = true, .unit_diagonal = true});
  const Array lau = triangular_solve(u, la, {.left_side = false, .lower = false});
  return {matmul(l, tril(lau, -1)) + matmul(triu(lau), u), Array(), Array()};
}

const ir::Primitive& lu_p = ir::register_primitive({.name = "lu",
                                                    .arity = {1, 1},
                                                    .abstract_eval = lu_aval,
                                                    .cpu_kernel = lu_kernel,
                                                    .jvp = lu_jvp,
                                                    .batch = batch_leading,
                                                    .sharding_rule = batch_sharding_rule});

// ---- lu_pivots_to_permutation ----

std::vector<Aval> pivots_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  const int64_t m = p.get_int("permutation_size");
  if (x.ndim() < 1 || x.dtype != DType::int32)
    throw DTypeError("lu_pivots_to_permutation: pivots must be int32 (..., k), got " + avals_to_string(ins));
  if (m < x.shape.back())
    throw ValueError("lu_pivots_to_permutation: permutation_size " + std::to_string(m) +
                     " is smaller than the number of pivots " + std::to_string(x.shape.back()));
  Shape s = x.shape;
  s.back() = m;
  return {Aval(s, DType::int32)};
}

void pivots_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  const int64_t k = x.shape.back(), m = c.out_avals[0].shape.back(), batch = batch_size(x, 1);
  const int32_t* piv = c.in<int32_t>(0);
  int32_t* perm = c.out<int32_t>(0);
  for (int64_t b = 0; b < batch; ++b) {
    int32_t* p = perm + b * m;
    std::iota(p, p + m, 0);
    for (int64_t i = 0; i < k; ++i) {
      const int32_t j = piv[b * k + i];
      if (j >= 0 && j < m) std::swap(p[i], p[j]);  // out-of-range pivots are ignored, as JAX's
    }
  }
}

ir::ShardingRule pivots_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params&) {
  return leading_batch_rule(ins, outs, ins[0].ndim() - 1);
}

const ir::Primitive& lu_pivots_to_permutation_p =
    ir::register_primitive({.name = "lu_pivots_to_permutation",
                            .arity = {1, 1},
                            .abstract_eval = pivots_aval,
                            .cpu_kernel = pivots_kernel,
                            .jvp = jvp_zero,
                            .batch = batch_leading,
                            .sharding_rule = pivots_sharding_rule});

// ---- permute_rows (the row permutation of an LU factorization, applied to right-hand sides) ----

// Rows of x (..., m, k) in the order of an int32 permutation (..., m) with the same batch
// dimensions: out[i] = x[perm[i]], or with `inverse` out[perm[i]] = x[i]. A copy of whole
// rows, where the product with a permutation matrix costs m^2 k (a third of a solve of a
// batch of 8 x 8 systems) and a general gather indexes every element. Linear in x.
std::vector<Aval> permute_rows_aval(std::span<const Aval> ins, const Params&) {
  const Aval &x = ins[0], &perm = ins[1];
  check_matrix_shape("permute_rows", x.shape, false);
  Shape want = batch_shape(x.shape, 2);
  want.push_back(x.shape[size_t(x.ndim() - 2)]);
  if (perm.dtype != DType::int32 || perm.shape != want)
    throw ShapeError("permute_rows: the permutation must be int32 of shape " + shape_to_string(want) +
                     " for rows of shape " + shape_to_string(x.shape) + ", got " + avals_to_string(ins));
  return {Aval(x.shape, x.dtype)};
}

void permute_rows_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  const int64_t m = x.shape[size_t(x.ndim() - 2)], row = x.shape.back() * int64_t(itemsize(x.dtype));
  const int64_t batch = batch_size(x, 2);
  const bool inverse = c.params.get<bool>("inverse");
  const auto* in = static_cast<const char*>(c.ins[0]);
  const int32_t* perm = c.in<int32_t>(1);
  auto* out = static_cast<char*>(c.outs[0]);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i) {
      const int64_t p = perm[b * m + i];
      if (p < 0 || p >= m) continue;  // not a permutation (never from lu): that row stays unset
      const int64_t from = inverse ? i : p, to = inverse ? p : i;
      std::memcpy(out + (b * m + to) * row, in + (b * m + from) * row, size_t(row));
    }
}

std::vector<Array> permute_rows_jvp(const ir::Primitive& self, std::span<const Array> primals,
                                    std::span<const Array> tangents, std::span<const Array>, const Params& p) {
  return jvp_linear_in_first(1, self, primals, tangents, p);
}

// The transpose of a permutation is its inverse.
std::vector<Array> permute_rows_transpose(const ir::Primitive& self, std::span<const Array> cts,
                                          std::span<const Array> args, std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array(), Array()};
  Params q = p;
  q.set("inverse", !p.get<bool>("inverse"));
  return {bind1(self, {cts[0], args[1]}, q), Array()};
}

const ir::Primitive& permute_rows_p = ir::register_primitive({.name = "permute_rows",
                                                              .arity = {2, 2},
                                                              .abstract_eval = permute_rows_aval,
                                                              .cpu_kernel = permute_rows_kernel,
                                                              .jvp = permute_rows_jvp,
                                                              .transpose = permute_rows_transpose,
                                                              .batch = batch_leading,
                                                              .sharding_rule = batch_sharding_rule});

// ---- qr ----

std::vector<Aval> qr_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  check_matrices("qr", x, false);
  const int64_t m = x.shape[size_t(x.ndim() - 2)], n = x.shape.back(), k = std::min(m, n);
  const bool full = p.get<bool>("full_matrices");
  const Shape batch = batch_shape(x.shape, 2);
  return {Aval(with_batch(batch, {m, full ? m : k}), x.dtype), Aval(with_batch(batch, {full ? m : k, n}), x.dtype)};
}

void qr_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  cpu::qr(x.dtype, batch_size(x, 2), x.shape[size_t(x.ndim() - 2)], x.shape.back(), c.ins[0], c.outs[0], c.outs[1],
          c.params.get<bool>("full_matrices"));
}

Array last_cols(const Array& x, int64_t lo, int64_t hi) { return slice_in_dim(x, lo, hi, 1, x.ndim() - 1); }
Array last_rows(const Array& x, int64_t lo, int64_t hi) { return slice_in_dim(x, lo, hi, 1, x.ndim() - 2); }

// Thin QR (m >= n; q m x n): with C = Q^H dX R^-1 and its skew-Hermitian part Ω from the
// strictly lower triangle (plus the imaginary diagonal for complex), dQ = Q (Ω - C) + dX R^-1
// and dR = (C - Ω) R (Townsend's derivation, as JAX's _thin_qr_jvp).
std::pair<Array, Array> thin_qr_jvp(const Array& q, const Array& r, const Array& dx) {
  const Array dx_rinv = lax::linalg::triangular_solve(r, dx);  // right side, upper
  const Array c = matmul(matrix_adjoint(q), dx_rinv);
  const Array c_low = tril(c, -1);
  Array omega = c_low - matrix_adjoint(c_low);
  if (is_complex(c.dtype())) {
    const Array imag_diag = c - real(c).astype(c.dtype());
    omega = omega + masked(imag_diag, band_mask(c.shape(), 0, true) & band_mask(c.shape(), 0, false));
  }
  const Array dq = matmul(q, omega - c) + dx_rinv;
  const Array dr = matmul(c - omega, r);
  return {dq, dr};
}

std::vector<Array> qr_jvp(const ir::Primitive&, std::span<const Array> primals, std::span<const Array> tangents,
                          std::span<const Array> outs, const Params& p) {
  const Array &x = primals[0], &dx = tangents[0], &q = outs[0], &r = outs[1];
  const int64_t m = x.dim(-2), n = x.dim(-1);
  const bool full = p.get<bool>("full_matrices");
  if (m < n) {  // wide: X = Q [R1 R2]; R1 square, R2 = Q^H X2
    auto [dq, dr1] = thin_qr_jvp(q, last_cols(r, 0, m), last_cols(dx, 0, m));
    const Array dr2 = matmul(matrix_adjoint(dq), last_cols(x, m, n)) + matmul(matrix_adjoint(q), last_cols(dx, m, n));
    return {dq, concatenate({dr1, dr2}, -1)};
  }
  const Array q_mn = full ? last_cols(q, 0, n) : q, r_nn = full ? last_rows(r, 0, n) : r;
  auto [dq_mn, dr_nn] = thin_qr_jvp(q_mn, r_nn, dx);
  if (!full || m == n) return {dq_mn, dr_nn};
  // The complement Q_mp of a full Q (Roberts & Roberts, arXiv:2409.13374, eqs. 32-33):
  // Z = Q_pn (Q_nn - I)^-1, dQ_mp = dQ_mn Z^H - (Q_mn + Q_mp Z) (dQ_pn - Z dQ_nn)^H.
  const Array q_nn = last_rows(q_mn, 0, n), q_pn = last_rows(q_mn, n, m), q_mp = last_cols(q, n, m);
  const Array dq_nn = last_rows(dq_mn, 0, n), dq_pn = last_rows(dq_mn, n, m);
  const auto f = lax::linalg::lu(q_nn - identity_like(q_nn, n));
  const Array z_h = lu_solve_matrices(f.lu, f.permutation, matrix_adjoint(q_pn), 2);
  const Array z = matrix_adjoint(z_h);
  const Array dq_mp = matmul(dq_mn, z_h) - matmul(q_mn + matmul(q_mp, z), matrix_adjoint(dq_pn - matmul(z, dq_nn)));
  Shape zshape = dr_nn.shape();
  zshape[size_t(zshape.size() - 2)] = m - n;
  return {concatenate({dq_mn, dq_mp}, -1), concatenate({dr_nn, zeros(zshape, dr_nn.dtype())}, -2)};
}

const ir::Primitive& qr_p = ir::register_primitive({.name = "qr",
                                                    .arity = {1, 1},
                                                    .abstract_eval = qr_aval,
                                                    .cpu_kernel = qr_kernel,
                                                    .jvp = qr_jvp,
                                                    .batch = batch_leading,
                                                    .sharding_rule = batch_sharding_rule});

// ---- geqrf (LAPACK's packed QR, for jnp.linalg.qr's mode "raw"; no derivative, as JAX's) ----

std::vector<Aval> geqrf_aval(std::span<const Aval> ins, const Params&) {
  const Aval& x = ins[0];
  check_matrices("geqrf", x, false);
  const int64_t m = x.shape[size_t(x.ndim() - 2)], n = x.shape.back();
  return {Aval(x.shape, x.dtype), Aval(with_batch(batch_shape(x.shape, 2), {std::min(m, n)}), x.dtype)};
}

void geqrf_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  cpu::geqrf(x.dtype, batch_size(x, 2), x.shape[size_t(x.ndim() - 2)], x.shape.back(), c.ins[0], c.outs[0], c.outs[1]);
}

const ir::Primitive& geqrf_p = ir::register_primitive({.name = "geqrf",
                                                       .arity = {1, 1},
                                                       .abstract_eval = geqrf_aval,
                                                       .cpu_kernel = geqrf_kernel,
                                                       .batch = batch_leading,
                                                       .sharding_rule = batch_sharding_rule});

// ---- eigh ----

std::vector<Aval> eigh_aval(std::span<const Aval> ins, const Params&) {
  const Aval& x = ins[0];
  check_matrices("eigh", x, true);
  return {Aval(x.shape, x.dtype), Aval(batch_shape(x.shape, 1), real_dtype(x.dtype))};
}

void eigh_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  cpu::eigh(x.dtype, batch_size(x, 2), x.shape.back(), c.ins[0], c.outs[0], c.outs[1], c.params.get<bool>("lower"));
}

// First-order perturbation theory for distinct eigenvalues (JAX's _eigh_jvp_rule): with
// M = V^H dA V, dw = Re diag(M) and dV = V (F * M), F_ij = 1 / (w_j - w_i) off the diagonal.
std::vector<Array> eigh_jvp(const ir::Primitive&, std::span<const Array>, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params&) {
  const Array &v = outs[0], &w_real = outs[1];
  const DType dt = v.dtype();
  const Array w = w_real.astype(dt);
  const int64_t n = v.dim(-1);
  const Array eye_n = eye(n, std::nullopt, 0, dt);
  const Array gaps = expand_dims(w, {w.ndim() - 1}) - expand_dims(w, {w.ndim()});  // w_j - w_i at (i, j)
  const Array f = reciprocal(gaps + eye_n) - eye_n;
  const Array vav = matmul(matmul(matrix_adjoint(v), tangents[0]), v);
  const Array dv = matmul(v, f * vav);
  const Array dw = matrix_diagonal(is_complex(dt) ? real(vav) : vav);
  return {dv, dw};
}

const ir::Primitive& eigh_p = ir::register_primitive({.name = "eigh",
                                                      .arity = {1, 1},
                                                      .abstract_eval = eigh_aval,
                                                      .cpu_kernel = eigh_kernel,
                                                      .jvp = eigh_jvp,
                                                      .batch = batch_leading,
                                                      .sharding_rule = batch_sharding_rule});

// ---- svd ----

std::vector<Aval> svd_aval(std::span<const Aval> ins, const Params& p) {
  const Aval& x = ins[0];
  check_matrices("svd", x, false);
  const int64_t m = x.shape[size_t(x.ndim() - 2)], n = x.shape.back(), k = std::min(m, n);
  const Shape batch = batch_shape(x.shape, 2);
  std::vector<Aval> out{Aval(with_batch(batch, {k}), real_dtype(x.dtype))};
  if (p.get<bool>("compute_uv")) {
    const bool full = p.get<bool>("full_matrices");
    out.push_back(Aval(with_batch(batch, {m, full ? m : k}), x.dtype));
    out.push_back(Aval(with_batch(batch, {full ? n : k, n}), x.dtype));
  }
  return out;
}

void svd_kernel(const KernelCall& c) {
  const Aval& x = c.in_avals[0];
  const bool uv = c.params.get<bool>("compute_uv");
  cpu::svd(x.dtype, batch_size(x, 2), x.shape[size_t(x.ndim() - 2)], x.shape.back(), c.ins[0], c.outs[0],
           uv ? c.outs[1] : nullptr, uv ? c.outs[2] : nullptr, c.params.get<bool>("full_matrices"));
}

// JAX's _svd_jvp_rule (thin SVD; full U or V only for square matrices): with
// dS = U^H dA V, ds = Re diag(dS); dU and dV from F_ij = 1 / (s_j^2 - s_i^2) and, for
// non-square matrices, the projection of dA onto the complement of U's (or V's) columns.
std::vector<Array> svd_jvp(const ir::Primitive& self, std::span<const Array> primals,
                           std::span<const Array> tangents, std::span<const Array>, const Params& p) {
  const Array &a = primals[0], &da = tangents[0];
  const bool uv = p.get<bool>("compute_uv"), full = p.get<bool>("full_matrices");
  const int64_t m = a.dim(-2), n = a.dim(-1);
  if (uv && full && m != n)
    throw ValueError("svd: the derivative of a full_matrices SVD of non-square matrices (shape " +
                     shape_to_string(a.shape()) + ") is not defined, as in JAX; use full_matrices = false");
  const std::vector<Array> thin =
      detail::bind(self, std::vector<Array>{a}, Params{{"full_matrices", false}, {"compute_uv", true}});
  const Array &s = thin[0], &u = thin[1], &vt = thin[2];
  const DType dt = a.dtype(), rt = s.dtype();
  const Array ut = matrix_adjoint(u), v = matrix_adjoint(vt);
  const Array ds_full = matmul(matmul(ut, da), v);
  const Array ds = matrix_diagonal(is_complex(dt) ? real(ds_full) : ds_full);
  if (!uv) return {ds};
  const int64_t k = s.dim(-1);
  const Array s_row = expand_dims(s, {s.ndim() - 1});  // (..., 1, k)
  const Array s_col = matrix_transpose(s_row);          // (..., k, 1)
  const Array diffs = (s_row + s_col) * (s_row - s_col);
  const Array eye_k = eye(k, std::nullopt, 0, rt);
  const Array f = (reciprocal(diffs + eye_k) - eye_k).astype(dt);
  const Array dss = s_row.astype(dt) * ds_full, sds = s_col.astype(dt) * ds_full;
  const Array s_zero = equal(s, zeros_like(s)).astype(rt);
  const Array s_inv = reciprocal(s + s_zero) - s_zero;
  const Array half = Array(0.5).astype(dt);
  const Array dudv_diag = half * (ds_full - matrix_adjoint(ds_full)) * diagonal_matrix(s_inv).astype(dt);
  Array du = matmul(u, f * (dss + matrix_adjoint(dss)) + dudv_diag);
  Array dv = matmul(v, f * (sds + matrix_adjoint(sds)));
  if (m > n) {
    const Array dav = matmul(da, v);
    du = du + (dav - matmul(u, matmul(ut, dav))) / s_row.astype(dt);
  }
  if (n > m) {
    const Array dahu = matmul(matrix_adjoint(da), u);
    dv = dv + (dahu - matmul(v, matmul(vt, dahu))) / s_row.astype(dt);
  }
  return {ds, du, matrix_adjoint(dv)};
}

const ir::Primitive& svd_p = ir::register_primitive({.name = "svd",
                                                     .arity = {1, 1},
                                                     .abstract_eval = svd_aval,
                                                     .cpu_kernel = svd_kernel,
                                                     .jvp = svd_jvp,
                                                     .batch = batch_leading,
                                                     .sharding_rule = batch_sharding_rule});

}  // namespace

Array permute_rows(const Array& x, const Array& permutation, bool inverse) {
  check_matrix_shape("permute_rows", x.shape(), false);
  const int64_t m = x.dim(-2), k = x.dim(-1);
  if (permutation.ndim() < 1 || permutation.dim(-1) != m || permutation.dtype() != DType::int32)
    throw ShapeError("permute_rows: the permutation must be int32 (..., " + std::to_string(m) + ") for rows of shape " +
                     shape_to_string(x.shape()) + ", got " + dtype_name(permutation.dtype()) + " " +
                     shape_to_string(permutation.shape()));
  const Shape batch = tessel::broadcast_shapes({batch_shape(x.shape(), 2), batch_shape(permutation.shape(), 1)});
  return bind1(permute_rows_p, {broadcast_to(x, with_batch(batch, {m, k})), broadcast_to(permutation, with_batch(batch, {m}))},
               Params{{"inverse", inverse}});
}

Array lu_solve_matrices(const Array& lu, const Array& permutation, const Array& b, int trans) {
  using lax::linalg::triangular_solve;
  if (trans == 0) {
    const Array pb = permute_rows(b, permutation);
    const Array y = triangular_solve(lu, pb, {.left_side = true, .lower = true, .unit_diagonal = true});
    return triangular_solve(lu, y, {.left_side = true, .lower = false});
  }
  // A = P^T L U, so op(A) x = b is op(U) op(L) P x = b.
  const bool conj_a = trans == 2;
  const Array y = triangular_solve(lu, b, {.left_side = true, .lower = false, .transpose_a = true, .conjugate_a = conj_a});
  const Array z = triangular_solve(lu, y, {.left_side = true, .lower = true, .transpose_a = true, .conjugate_a = conj_a,
                                           .unit_diagonal = true});
  return permute_rows(z, permutation, /*inverse=*/true);
}

}  // namespace tessel::ops

namespace tessel::lax::linalg {

Array cholesky(const Array& x, bool symmetrize_input) {
  ops::check_matrices("lax.linalg.cholesky", x.aval(), true);
  return ops::bind1(ops::cholesky_p, {x}, ops::Params{{"symmetrize_input", symmetrize_input}});
}

Array triangular_solve(const Array& a, const Array& b, const TriangularSolveOptions& o) {
  return ops::bind1(ops::triangular_solve_p, {a, b}, ops::solve_params(o));
}

LuResult lu(const Array& x) {
  auto r = ops::bind(ops::lu_p, std::vector<Array>{x});
  return {r[0], r[1], r[2]};
}

QrResult qr(const Array& x, bool full_matrices) {
  auto r = ops::bind(ops::qr_p, std::vector<Array>{x}, ops::Params{{"full_matrices", full_matrices}});
  return {r[0], r[1]};
}

Array lu_pivots_to_permutation(const Array& pivots, int64_t permutation_size) {
  return ops::bind1(ops::lu_pivots_to_permutation_p, {pivots}, ops::Params{{"permutation_size", permutation_size}});
}

GeqrfResult geqrf(const Array& x) {
  auto r = ops::bind(ops::geqrf_p, std::vector<Array>{x});
  return {r[0], r[1]};
}

EighResult eigh(const Array& x, const EighOptions& o) {
  ops::check_matrices("lax.linalg.eigh", x.aval(), true);
  auto r = ops::bind(ops::eigh_p, std::vector<Array>{o.symmetrize_input ? ops::symmetrize(x) : x},
                     ops::Params{{"lower", o.lower}, {"sort_eigenvalues", o.sort_eigenvalues}});
  return {r[0], r[1]};
}

SvdResult svd(const Array& x, bool full_matrices, bool compute_uv) {
  auto r = ops::bind(ops::svd_p, std::vector<Array>{x},
                     ops::Params{{"full_matrices", full_matrices}, {"compute_uv", compute_uv}});
  if (!compute_uv) return {Array(), r[0], Array()};
  return {r[1], r[0], r[2]};
}

}  // namespace tessel::lax::linalg
