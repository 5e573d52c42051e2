// Reduction primitives (reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and,
// reduce_or over a set of axes; argmax/argmin over one axis) and the jax.numpy reductions
// built on them (sum, prod, max, min, mean, var, any, all).
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "backend/cpu/reduction_ops.h"
#include "ops/rule_util.h"

namespace tessel::ops {
namespace {

using namespace cpu::reduce;

// ---- layout: the input seen as runs of kept and reduced dimensions ----

// Size-1 dimensions are dropped and adjacent dimensions of the same kind merged, so the
// kernel walks at most a few long loops. `out_strides` is 0 for reduced dimensions.
struct ReduceLayout {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  std::vector<int64_t> out_strides;
};

ReduceLayout make_layout(const Shape& shape, const Axes& axes) {
  ReduceLayout l;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    bool red = std::binary_search(axes.begin(), axes.end(), int64_t(i));
    if (!l.dims.empty() && l.reduced.back() == red) {
      l.dims.back() *= shape[i];
    } else {
      l.dims.push_back(shape[i]);
      l.reduced.push_back(red);
    }
  }
  if (l.dims.empty()) {  // a single element: a copy
    l.dims.push_back(1);
    l.reduced.push_back(false);
  }
  l.out_strides.assign(l.dims.size(), 0);
  int64_t acc = 1;
  for (size_t i = l.dims.size(); i-- > 0;) {
    if (l.reduced[i]) continue;
    l.out_strides[i] = acc;
    acc *= l.dims[i];
  }
  return l;
}

// Combines a contiguous row of n elements with 8 interleaved accumulators (which the
// compiler turns into vector registers). Sums also split rows longer than 1024 in halves
// (pairwise summation, as NumPy does with blocks of 128; larger blocks halve the time and
// still bound f32 error by ~(128 + log2 n) ulps).
// Max and min of floats combine a row without ordering -0 below +0 (see MaxMinOp), then
// settle the sign of a zero result.
template <class Op, class A>
constexpr bool settles_zero_sign = std::is_floating_point_v<A> && requires { Op::kMax; };
template <class Op, class A> A combine_in_row(A a, A b) {
  if constexpr (settles_zero_sign<Op, A>) return Op::combine_ignoring_zero_sign(a, b);
  else return Op::combine(a, b);
}

template <class Op, class A, class T> A reduce_row(const T* p, int64_t n) {
  if (n < 8) {
    A r = Op::template identity<A>();
    for (int64_t i = 0; i < n; ++i) r = Op::combine(r, load<A>(p[i]));
    return r;
  }
  if (Op::kPairwise && n > 1024) {
    int64_t h = n / 2;
    h -= h % 8;
    return Op::combine(reduce_row<Op, A>(p, h), reduce_row<Op, A>(p + h, n - h));
  }
  A r[8];
  for (int j = 0; j < 8; ++j) r[j] = load<A>(p[j]);
  int64_t i = 8;
  for (; i + 8 <= n; i += 8) {
    // Kept as a loop so the loop vectorizer (which handles max/min's selects, unlike
    // straight-line SLP) turns it into vector operations.
#pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) r[j] = combine_in_row<Op>(r[j], load<A>(p[i + j]));
  }
  A s = combine_in_row<Op>(combine_in_row<Op>(combine_in_row<Op>(r[0], r[1]), combine_in_row<Op>(r[2], r[3])),
                           combine_in_row<Op>(combine_in_row<Op>(r[4], r[5]), combine_in_row<Op>(r[6], r[7])));
  for (; i < n; ++i) s = combine_in_row<Op>(s, load<A>(p[i]));
  if constexpr (settles_zero_sign<Op, A>) {
    if (s == A(0)) {  // which zero: +0 for max if any element is +0, -0 for min if any is -0
      for (int64_t k = 0; k < n; ++k) {
        const A v = load<A>(p[k]);
        if (v == A(0) && std::signbit(v) != Op::kMax) return v;
      }
      return Op::kMax ? -A(0) : A(0);
    }
  }
  return s;
}

// ---- the kernel: blocks of the input reduced in parallel, in a fixed order ----
//
// Determinism: how the input is cut into blocks depends only on the shapes (the constants
// below), never on the thread count; every output element is combined from its blocks in
// block order by one thread. So results are the same bits for any TESSEL_NUM_THREADS, and
// integer, max, min, and/or results equal a serial loop's exactly. Float sums and products
// differ from a serial loop only in the grouping of the additions (see reduce_kernel_t).

// Elements a task holds at least (smaller reductions run on the calling thread).
constexpr int64_t kReduceTaskElems = int64_t(1) << 15;
// Elements per block when the leading reduced dimension is cut into blocks.
constexpr int64_t kReduceBlockElems = int64_t(1) << 16;
// Reductions with at least this many outputs are split over their outputs only.
constexpr int64_t kReduceSplitOutputs = int64_t(1) << 16;
// At most this many blocks of the reduced run (larger blocks beyond): bounds the partial
// results to combine at the end.
constexpr int64_t kReduceMaxBlocks = 64;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Combines a box of the input into the accumulators `acc`: dimension d has size dims[d],
// input stride in_st[d] and accumulator stride out_st[d] (0 where reduced); the innermost
// input stride is 1. Walks the input in memory order, a block of the two innermost dimensions
// at a time (the outer index advances like an odometer once per block): either rows that
// each collapse into one accumulator (inner dimension reduced) or rows that combine
// element-wise into one row of accumulators (inner dimension kept).
template <class Op, class A, class T>
void reduce_box(const T* in, std::span<const int64_t> dims, const std::vector<bool>& reduced,
                std::span<const int64_t> in_st, std::span<const int64_t> out_st, A* acc) {
  const size_t r = dims.size();
  const int64_t inner = dims[r - 1], mid = dims[r - 2], mid_in = in_st[r - 2], mid_out = out_st[r - 2];
  int64_t blocks = 1;
  for (size_t d = 0; d + 2 < r; ++d) blocks *= dims[d];
  if (blocks == 0 || mid == 0 || inner == 0) return;
  std::vector<int64_t> idx(r - 2, 0);
  int64_t in_off = 0, out_off = 0;
  for (int64_t bi = 0; bi < blocks; ++bi) {
    const T* p = in + in_off;
    if (reduced[r - 1]) {
      for (int64_t m = 0; m < mid; ++m, p += mid_in) {
        A v;
        if (inner < 8) {  // short rows: an inline loop beats the call
          v = load<A>(p[0]);
          for (int64_t j = 1; j < inner; ++j) v = Op::combine(v, load<A>(p[j]));
        } else {
          v = reduce_row<Op, A>(p, inner);
        }
        A& o = acc[out_off + m * mid_out];
        o = Op::combine(o, v);
      }
    } else {
      // Four rows at a time: a quarter of the read-modify-writes of the accumulator row,
      // which matters when rows are short.
      A* o = acc + out_off;
      const int64_t n = inner, s = mid_in;
      int64_t m = 0;
      for (; m + 4 <= mid; m += 4, p += 4 * s)
        for (int64_t j = 0; j < n; ++j)
          o[j] = Op::combine(o[j], Op::combine(Op::combine(load<A>(p[j]), load<A>(p[s + j])),
                                               Op::combine(load<A>(p[2 * s + j]), load<A>(p[3 * s + j]))));
      for (; m < mid; ++m, p += s)
        for (int64_t j = 0; j < n; ++j) o[j] = Op::combine(o[j], load<A>(p[j]));
    }
    for (size_t d = r - 2; d-- > 0;) {
      in_off += in_st[d];
      out_off += out_st[d];
      if (++idx[d] < dims[d]) break;
      in_off -= in_st[d] * dims[d];
      out_off -= out_st[d] * dims[d];
      idx[d] = 0;
    }
  }
}

// The input, merged into alternating runs of kept and reduced dimensions, is seen as
// (P, R, rest...): P kept (1 if the first run is reduced), R the leading reduced run, and
// the rest. Tasks are (p, block of R, chunk of the first dimension of rest):
// - Reductions with many outputs (P times rest's outputs >= kReduceSplitOutputs) keep R
//   whole: each output is then computed by one task exactly as a serial loop computes it.
// - Others (full reductions, sums over leading axes to a short row, a few long rows) cut R
//   into at most kReduceMaxBlocks blocks of at least 8 indices and kReduceBlockElems
//   elements. Each block
//   combines into its own row of partial results; the partials of each output then combine
//   in block order. For float sums this is one more level of the blocked pairwise summation
//   (the error bound is the serial loop's with n replaced by the block's length plus the
//   number of blocks, at most ~(kReduceBlockElems / rest + log2 n + R / block) ulps of the
//   sum of magnitudes; tests/ops/reduction_parallel_test.cpp checks it against float64).
template <class Op, class T> void reduce_kernel_t(const KernelCall& c) {
  using A = typename Op::template Acc<T>;
  const T* in = c.in<T>(0);
  T* out = c.out<T>(0);
  const int64_t out_n = c.out_avals[0].size(), in_n = c.in_avals[0].size();
  std::vector<A> tmp;
  A* acc;
  if constexpr (std::is_same_v<A, T>) {
    acc = out;
  } else {
    tmp.resize(size_t(out_n));
    acc = tmp.data();
  }
  auto for_outputs = [&](auto&& body) {  // body(lo, hi) over output ranges
    if (out_n <= kReduceTaskElems) body(int64_t(0), out_n);
    else cpu::parallel_for(out_n, kReduceTaskElems, body);
  };
  for_outputs([&](int64_t lo, int64_t hi) { std::fill(acc + lo, acc + hi, Op::template identity<A>()); });
  ReduceLayout l = make_layout(c.in_avals[0].shape, c.params.get_ints("axes"));
  bool any_reduced = false;
  for (bool red : l.reduced) any_reduced |= red;
  if (in_n > 0 && !any_reduced) {  // only size-1 axes reduced: a copy
    for_outputs([&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) acc[i] = Op::combine(acc[i], load<A>(in[i]));
    });
  } else if (in_n > 0) {
    if (l.reduced[0]) {  // (P = 1, R, rest...)
      l.dims.insert(l.dims.begin(), 1);
      l.reduced.insert(l.reduced.begin(), false);
      l.out_strides.insert(l.out_strides.begin(), 0);
    }
    const size_t r = l.dims.size();
    std::vector<int64_t> in_st(r, 1);
    for (size_t d = r - 1; d-- > 0;) in_st[d] = in_st[d + 1] * l.dims[d + 1];
    const int64_t P = l.dims[0], R = l.dims[1], sub = in_st[1], Q = out_n / P;
    // The blocks of R (shape-dependent only: this is what keeps the bits fixed).
    int64_t block = R;
    if (P * Q < kReduceSplitOutputs)
      block = std::min(R, std::max({int64_t(8), ceil_div(kReduceBlockElems, sub), ceil_div(R, kReduceMaxBlocks)}));
    const int64_t nb = ceil_div(R, block);
    // Chunks of rest's first dimension (they only choose which task computes an output).
    const int64_t qd = r > 2 ? l.dims[2] : 1, subq = r > 2 ? in_st[2] : 1;
    int64_t qchunk = qd;
    if (r > 2 && nb * P < 2 * cpu::num_threads()) {
      qchunk = std::clamp<int64_t>(ceil_div(kReduceTaskElems, block * subq), 1, qd);
      if (r == 3) qchunk = std::min(qd, ceil_div(qchunk, 16) * 16);  // whole vectors of the row
    }
    const int64_t nq = ceil_div(qd, qchunk), task_elems = block * qchunk * subq;
    if (nb == 1 && nq == 1) {  // tasks are runs of p: one box each
      auto body = [&](int64_t p0, int64_t p1) {
        std::vector<int64_t> dims = l.dims;
        dims[0] = p1 - p0;
        reduce_box<Op, A>(in + p0 * in_st[0], dims, l.reduced, in_st, l.out_strides, acc + p0 * Q);
      };
      const int64_t grain = std::max<int64_t>(1, kReduceTaskElems / std::max<int64_t>(1, in_st[0]));
      if (in_n <= kReduceTaskElems) body(0, P);
      else cpu::parallel_for(P, grain, body);
    } else {
      // Not std::vector: vector<bool> has no data().
      const size_t part_n = nb > 1 ? size_t(P * nb * Q) : 0;
      const std::unique_ptr<A[]> part(new A[part_n]);
      std::fill(part.get(), part.get() + part_n, Op::template identity<A>());
      auto body = [&](int64_t t0, int64_t t1) {
        std::vector<int64_t> dims = l.dims, ist = in_st, ost = l.out_strides;
        dims[0] = 1;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t p = t / (nb * nq), b = t / nq % nb, qc = t % nq;
          const int64_t r0 = b * block, q0 = qc * qchunk;
          dims[1] = std::min(R, r0 + block) - r0;
          if (r > 2) dims[2] = std::min(qd, q0 + qchunk) - q0;
          A* dst = (nb > 1 ? part.get() + (p * nb + b) * Q : acc + p * Q) + (r > 2 ? q0 * ost[2] : 0);
          reduce_box<Op, A>(in + p * in_st[0] + r0 * sub + q0 * subq, dims, l.reduced, ist, ost, dst);
        }
      };
      const int64_t tasks = P * nb * nq;
      if (in_n <= kReduceTaskElems) body(0, tasks);
      else cpu::parallel_for(tasks, std::max<int64_t>(1, kReduceTaskElems / std::max<int64_t>(1, task_elems)), body);
      if (nb > 1)  // each output from its blocks' partials, in block order
        for_outputs([&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) {
            const int64_t p = i / Q, q = i % Q;
            A v = acc[i];
            for (int64_t b = 0; b < nb; ++b) v = Op::combine(v, part[size_t((p * nb + b) * Q + q)]);
            acc[i] = v;
          }
        });
    }
  }
  if constexpr (!std::is_same_v<A, T>)
    for_outputs([&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = store<T>(acc[i]);
    });
}

template <class Op> constexpr bool bitwise_op = std::is_same_v<Op, AndOp> || std::is_same_v<Op, OrOp>;

template <class Op> void reduce_kernel(const KernelCall& c) {
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (!bitwise_op<Op> || std::is_integral_v<T>) reduce_kernel_t<Op, T>(c);
  });
}

// ---- abstract evaluation ----

// Checks that `axes` is canonical (sorted, unique, in range) for the primitive.
void check_axes(const std::string& op, const Axes& axes, int64_t ndim) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= ndim || (i > 0 && axes[i] <= axes[i - 1]))
      throw IndexError(op + ": axes " + shape_to_string(axes) + " must be distinct, sorted and within [0, " +
                       std::to_string(ndim) + ") for an operand of rank " + std::to_string(ndim) +
                       "; jax.numpy-level functions canonicalize axes for you");
}

Shape remove_axes(const Shape& s, const Axes& axes) {
  Shape r;
  for (size_t i = 0; i < s.size(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(i))) r.push_back(s[i]);
  return r;
}

template <class Op> const char* reduce_name() {
  if constexpr (std::is_same_v<Op, SumOp>) return "reduce_sum";
  else if constexpr (std::is_same_v<Op, ProdOp>) return "reduce_prod";
  else if constexpr (std::is_same_v<Op, MaxOp>) return "reduce_max";
  else if constexpr (std::is_same_v<Op, MinOp>) return "reduce_min";
  else if constexpr (std::is_same_v<Op, AndOp>) return "reduce_and";
  else return "reduce_or";
}

template <class Op> std::vector<Aval> reduce_aval(std::span<const Aval> ins, const Params& p) {
  const std::string op = reduce_name<Op>();
  const Aval& x = ins[0];
  if constexpr (bitwise_op<Op>)
    check_dtype(op, x.dtype, is_bool(x.dtype) || is_integer(x.dtype), "bool or an integer dtype");
  const Axes& axes = p.get_ints("axes");
  check_axes(op, axes, x.ndim());
  return {Aval(remove_axes(x.shape, axes), x.dtype, x.weak_type)};
}

// ---- transformation rules ----

/// The kept (not reduced) dimensions of a rank-`ndim` operand.
Axes kept_dims(int64_t ndim, const Axes& axes) {
  Axes r;
  for (int64_t i = 0; i < ndim; ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) r.push_back(i);
  return r;
}

/// reduce_sum over `axes` (none: x itself), for float tangents.
Array sum_axes(const Array& x, const Axes& axes) { return axes.empty() ? x : sum(x, axes); }

// reduce_sum is linear: the cotangent is the output cotangent broadcast back along the
// reduced axes.
std::vector<Array> reduce_sum_transpose(const ir::Primitive&, std::span<const Array> cts, std::span<const Array>,
                                        std::span<const Aval> avals, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  const Aval& x = avals[0];
  return {broadcast_in_dim(cts[0], x.shape, kept_dims(x.ndim(), p.get_ints("axes")))};
}

// reduce_prod (JAX's _reduce_jvp): the reduced axes are flattened into one leading axis and
// halved pairwise, applying the product rule at each level. Exact for zeros, unlike
// sum(t / x) * prod(x).
std::vector<Array> reduce_prod_jvp(const ir::Primitive&, std::span<const Array> primals,
                                   std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const Array& x = primals[0];
  const Axes& axes = p.get_ints("axes");
  const Axes kept = kept_dims(x.ndim(), axes);
  int64_t n = 1, m = 1;
  for (auto a : axes) n *= x.dim(a);
  for (auto a : kept) m *= x.dim(a);
  if (n == 0) return {Array()};  // the empty product is the constant 1
  Axes perm = axes;
  perm.insert(perm.end(), kept.begin(), kept.end());
  Array xs = reshape(transpose(x, perm), {n, m}), ts = reshape(transpose(tangents[0], perm), {n, m});
  while (n > 1) {
    if (n % 2 == 1) {  // pad with the identity (tangent zero) to an even count
      xs = lax_pad(xs, 1, {{0, 1, 0}, {0, 0, 0}});
      ts = lax_pad(ts, 0, {{0, 1, 0}, {0, 0, 0}});
      ++n;
    }
    const int64_t h = n / 2;
    const Array a = slice_in_dim(xs, 0, h), b = slice_in_dim(xs, h, n);
    ts = add(multiply(slice_in_dim(ts, 0, h), b), multiply(a, slice_in_dim(ts, h, n)));
    xs = multiply(a, b);
    n = h;
  }
  return {reshape(ts, outs[0].shape())};
}

// reduce_max / reduce_min (JAX's chooser rule): the tangent at the position of the extremum,
// averaged over ties.
std::vector<Array> reduce_chooser_jvp(const ir::Primitive&, std::span<const Array> primals,
                                      std::span<const Array> tangents, std::span<const Array> outs, const Params& p) {
  const Array& x = primals[0];
  const Axes& axes = p.get_ints("axes");
  const Array at = astype(equal(x, broadcast_in_dim(outs[0], x.shape(), kept_dims(x.ndim(), axes))),
                          tangents[0].dtype());
  return {divide(sum_axes(multiply(at, tangents[0]), axes), sum_axes(at, axes))};
}

/// An axis of the unbatched operand, renumbered for the operand batched at `bd`.
int64_t batched_axis(int64_t a, int64_t bd) { return a < bd ? a : a + 1; }

// Reductions over `axes`: the axes move past the batch dimension, which loses one position
// for every reduced axis before it.
Batched reduce_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                     const BatchAxis&, const Params& p) {
  const int64_t bd = dims[0];
  Axes axes;
  int64_t out = bd;
  for (auto a : p.get_ints("axes")) {
    axes.push_back(batched_axis(a, bd));
    if (axes.back() < bd) --out;
  }
  Params q = p;
  q.set("axes", axes);
  return {detail::bind(self, ins, q), {out}};
}

// ---- SPMD: kept dimensions pass through; each reduced dimension is a reduction factor:
// every device reduces its piece and a collective combines the partial results ----

/// How partial results of reduction Op combine on operands of dtype `d`, if a collective
/// can: on bool, sum is `or` (max) and prod `and` (min); and/or on integers are bitwise,
/// which no collective computes (those axes stay whole).
template <class Op> std::optional<ir::Combine> reduce_combine(DType d) {
  const bool b = is_bool(d);
  if constexpr (std::is_same_v<Op, SumOp>) return b ? ir::Combine::kMax : ir::Combine::kSum;
  else if constexpr (std::is_same_v<Op, ProdOp>) return b ? ir::Combine::kMin : ir::Combine::kProd;
  else if constexpr (std::is_same_v<Op, MaxOp>) return ir::Combine::kMax;
  else if constexpr (std::is_same_v<Op, MinOp>) return ir::Combine::kMin;
  else if (!b) return std::nullopt;
  else if constexpr (std::is_same_v<Op, AndOp>) return ir::Combine::kMin;
  else return ir::Combine::kMax;
}

template <class Op>
ir::ShardingRule reduce_sharding_rule(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  const Axes& axes = p.get_ints("axes");
  const std::optional<ir::Combine> combine = reduce_combine<Op>(ins[0].dtype);
  ir::ShardingRule r;
  std::vector<int> in, out;
  for (int64_t d = 0; d < ins[0].ndim(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) {
      in.push_back(add_factor(r));
      out.push_back(in.back());
    } else {
      in.push_back(combine ? add_factor(r, *combine) : ir::kWhole);
    }
  }
  r.operands = {in};
  r.results = {out};
  return r;
}

// Code generation: sum, max and min of a float operand (over trailing axes) fuse as the
// epilogue of the loop nest that computes the operand. Sums keep partial sums in the operand's
// precision over short runs (vector lanes) and accumulate those in double (docs/performance.md
// gives the bound); max and min select, propagating NaN.
template <class Op> std::optional<ir::ReductionEpilogue> reduce_epilogue(DType d) {
  const char* t = codegen_type(d);
  if (!is_floating(d) || !t) return std::nullopt;
  if constexpr (std::is_same_v<Op, SumOp>) {
    return ir::ReductionEpilogue{"double", "0.0", "{a} += double({v})"};
  } else {
    constexpr bool max = std::is_same_v<Op, MaxOp>;
    return ir::ReductionEpilogue{t, std::string(t) + (max ? "(-__builtin_inf())" : "(__builtin_inf())"),
                                 std::string("{a} = tessel::scalar::") + (max ? "max" : "min") + "({a}, {v})"};
  }
}

template <class Op> ir::Primitive reduce_primitive() {
  ir::Primitive p{.name = reduce_name<Op>(), .arity = {1, 1}, .abstract_eval = reduce_aval<Op>, .cpu_kernel = reduce_kernel<Op>,
                  .fusion = ir::FusionKind::kReduction, .batch = reduce_batch,
                  .sharding_rule = reduce_sharding_rule<Op>};
  if constexpr (std::is_same_v<Op, SumOp>) p.jvp = jvp_linear, p.transpose = reduce_sum_transpose;
  if constexpr (std::is_same_v<Op, ProdOp>) p.jvp = reduce_prod_jvp;
  if constexpr (std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>) p.jvp = reduce_chooser_jvp;
  if constexpr (std::is_same_v<Op, SumOp> || std::is_same_v<Op, MaxOp> || std::is_same_v<Op, MinOp>)
    p.reduction_epilogue = reduce_epilogue<Op>;
  return p;
}

const ir::Primitive& reduce_sum_p = ir::register_primitive(reduce_primitive<SumOp>());
const ir::Primitive& reduce_prod_p = ir::register_primitive(reduce_primitive<ProdOp>());
const ir::Primitive& reduce_max_p = ir::register_primitive(reduce_primitive<MaxOp>());
const ir::Primitive& reduce_min_p = ir::register_primitive(reduce_primitive<MinOp>());
const ir::Primitive& reduce_and_p = ir::register_primitive(reduce_primitive<AndOp>());
const ir::Primitive& reduce_or_p = ir::register_primitive(reduce_primitive<OrOp>());
// ---- argmax / argmin ----

// True when v should replace the current best: NaN wins (and the first NaN stays), ties
// keep the earlier index.
template <bool IsMax, class A> inline bool better(const A& v, const A& best) {
  if (is_nan(best)) return false;
  if (is_nan(v)) return true;
  return IsMax ? greater(v, best) : greater(best, v);
}

// The first position of the best element of p[0], p[stride], ... p[(n - 1) * stride],
// counted from `first`.
template <bool IsMax, class A, class T> std::pair<A, int64_t> arg_scan(const T* p, int64_t n, int64_t stride, int64_t first) {
  A b = A(p[0]);
  int64_t bi = first;
  for (int64_t k = 1; k < n; ++k)
    if (better<IsMax>(A(p[k * stride]), b)) b = A(p[k * stride]), bi = first + k;
  return {b, bi};
}

// Parallel over the outputs: runs of `inner` columns (or of whole rows when inner == 1).
// A few long rows are also cut into fixed blocks of kReduceBlockElems whose winners are
// compared in block order; `better` keeps the earlier of equals and the first NaN, so the
// result is the serial scan's, whatever the thread count.
template <bool IsMax, class T, class I> void arg_kernel_t(const KernelCall& c) {
  using A = compute_t<T>;
  const Shape& s = c.in_avals[0].shape;
  const size_t axis = size_t(c.params.get_int("axis"));
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= s[i];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t n = s[axis], total = outer * n * inner;
  const T* in = c.in<T>(0);
  I* out = c.out<I>(0);
  if (inner == 1) {
    const int64_t block = outer < kReduceSplitOutputs ? std::min(n, kReduceBlockElems) : n, nb = ceil_div(n, block);
    const std::unique_ptr<std::pair<A, int64_t>[]> win(new std::pair<A, int64_t>[size_t(outer * nb)]);
    auto body = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / nb, k0 = t % nb * block;
        win[size_t(t)] = arg_scan<IsMax, A>(in + o * n + k0, std::min(n, k0 + block) - k0, 1, k0);
      }
    };
    if (total <= kReduceTaskElems) body(0, outer * nb);
    else cpu::parallel_for(outer * nb, std::max<int64_t>(1, kReduceTaskElems / block), body);
    for (int64_t o = 0; o < outer; ++o) {
      std::pair<A, int64_t> w = win[size_t(o * nb)];
      for (int64_t b = 1; b < nb; ++b)
        if (better<IsMax>(win[size_t(o * nb + b)].first, w.first)) w = win[size_t(o * nb + b)];
      out[o] = I(w.second);
    }
    return;
  }
  // Columns: chunks of a row of `inner` accumulators advance down the n rows together.
  const int64_t chunk = std::min<int64_t>(inner, std::max<int64_t>(16, kReduceTaskElems / std::max<int64_t>(1, n)));
  const int64_t chunks = ceil_div(inner, chunk);
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<A> best(static_cast<size_t>(chunk));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, j0 = t % chunks * chunk, m = std::min(inner, j0 + chunk) - j0;
      const T* p = in + o * n * inner + j0;
      I* r = out + o * inner + j0;
      for (int64_t j = 0; j < m; ++j) best[size_t(j)] = A(p[j]), r[j] = 0;
      for (int64_t k = 1; k < n; ++k) {
        const T* row = p + k * inner;
        for (int64_t j = 0; j < m; ++j)
          if (better<IsMax, A>(A(row[j]), best[size_t(j)])) best[size_t(j)] = A(row[j]), r[j] = I(k);
      }
    }
  };
  if (total <= kReduceTaskElems) body(0, outer * chunks);
  else cpu::parallel_for(outer * chunks, 1, body);
}

template <bool IsMax> void arg_kernel(const KernelCall& c) {
  const bool i64 = c.out_avals[0].dtype == DType::int64;
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if (i64) arg_kernel_t<IsMax, T, int64_t>(c);
    else arg_kernel_t<IsMax, T, int32_t>(c);
  });
}

template <bool IsMax> std::vector<Aval> arg_aval(std::span<const Aval> ins, const Params& p) {
  const std::string op = IsMax ? "argmax" : "argmin";
  const Aval& x = ins[0];
  const int64_t axis = p.get_int("axis");
  check_axes(op, {axis}, x.ndim());
  if (x.shape[size_t(axis)] == 0)
    throw ValueError(op + ": attempt to get " + op + " of an empty sequence (axis " + std::to_string(axis) +
                     " of shape " + shape_to_string(x.shape) + " has size 0)");
  const DType idx = p.get<DType>("index_dtype");
  check_dtype(op, idx, idx == DType::int32 || idx == DType::int64, "index_dtype int32 or int64");
  return {Aval(remove_axes(x.shape, {axis}), idx)};
}

// argmax / argmin have integer outputs (zero tangents); batching renumbers the axis.
Batched arg_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                  const BatchAxis&, const Params& p) {
  const int64_t bd = dims[0], axis = batched_axis(p.get_int("axis"), bd);
  Params q = p;
  q.set("axis", axis);
  return {detail::bind(self, ins, q), {axis < bd ? bd - 1 : bd}};
}

// SPMD: the searched axis stays whole (indices are positions in it); the others pass through.
ir::ShardingRule arg_sharding_rule(std::span<const Aval> ins, std::span<const Aval>, const Params& p) {
  const int64_t axis = p.get_int("axis");
  ir::ShardingRule r;
  std::vector<int> in, out;
  for (int64_t d = 0; d < ins[0].ndim(); ++d) {
    if (d == axis) {
      in.push_back(ir::kWhole);
      continue;
    }
    in.push_back(add_factor(r));
    out.push_back(in.back());
  }
  r.operands = {in};
  r.results = {out};
  return r;
}

const ir::Primitive& argmax_p = ir::register_primitive(
    {.name = "argmax", .arity = {1, 1}, .abstract_eval = arg_aval<true>, .cpu_kernel = arg_kernel<true>,
     .fusion = ir::FusionKind::kReduction, .jvp = jvp_zero, .batch = arg_batch, .sharding_rule = arg_sharding_rule});
const ir::Primitive& argmin_p = ir::register_primitive(
    {.name = "argmin", .arity = {1, 1}, .abstract_eval = arg_aval<false>, .cpu_kernel = arg_kernel<false>,
     .fusion = ir::FusionKind::kReduction, .jvp = jvp_zero, .batch = arg_batch, .sharding_rule = arg_sharding_rule});

// ---- jax.numpy level ----

/// Reinserts reduced axes as size 1.
Array keep_dims(const Array& r, const Shape& in_shape, const Axes& axes) {
  Shape s = in_shape;
  for (auto a : axes) s[size_t(a)] = 1;
  return reshape(r, s);
}

Array bind_reduce(const ir::Primitive& p, const Array& x, const Axes& axes) {
  if (axes.empty()) return x;
  return bind1(p, {x}, Params{{"axes", axes}});
}

/// The jax.numpy reductions return strong dtypes: a weak operand takes its kind's default.
Array reduction(const char* op, const ir::Primitive& p, const Array& x, const Axes& axes_in, bool keepdims,
                std::optional<DType> dtype = std::nullopt) {
  const Axes axes = canonicalize_axes(op, axes_in, x.ndim(), true);
  const Array xc = convert(x, dtype.value_or(strong_dtype(x)));
  Array r = bind_reduce(p, xc, axes);
  return keepdims ? keep_dims(r, x.shape(), axes) : r;
}

int64_t reduced_count(const Shape& s, const Axes& axes) {
  int64_t n = 1;
  for (auto a : axes) n *= s[size_t(a)];
  return n;
}

/// max/min have no identity: an empty reduced axis is an error (as in jax.numpy).
Array extremum(const char* op, const ir::Primitive& p, const Array& x, const Axes& axes_in, bool keepdims) {
  const Axes axes = canonicalize_axes(op, axes_in, x.ndim(), true);
  for (auto a : axes)
    if (x.shape()[size_t(a)] == 0)
      throw ValueError(std::string(op) + ": zero-size reduction over axis " + std::to_string(a) + " of shape " +
                       shape_to_string(x.shape()) + " has no identity; reduce only over non-empty axes");
  return reduction(op, p, x, axes, keepdims);
}

/// mean and var compute in float32 for integers and half types (jnp's upcast), returning
/// the default float for integers and the input dtype otherwise.
struct MeanTypes {
  DType result, compute;
};
MeanTypes mean_types(DType d) {
  DType result = is_inexact(d) ? d : default_float;
  DType compute = (result == DType::float16 || result == DType::bfloat16) ? DType::float32 : result;
  return {result, compute};
}

Array mean_impl(const Array& xc, const Axes& axes) {
  return divide(bind_reduce(reduce_sum_p, xc, axes), Array(double(reduced_count(xc.shape(), axes))));
}

Array arg_reduction(bool is_max, const Array& x_in, std::optional<int64_t> axis_in, bool keepdims) {
  const char* op = is_max ? "argmax" : "argmin";
  if (!axis_in) {  // the index in the flattened array; keepdims keeps every axis as size 1
    Array r = arg_reduction(is_max, ravel(x_in), 0, false);
    return keepdims ? reshape(r, Shape(size_t(x_in.ndim()), 1)) : r;
  }
  const Array& x = x_in;
  const int64_t axis = canonicalize_axis(op, *axis_in, x.ndim());
  if (x.shape()[size_t(axis)] == 0)
    throw ValueError(std::string(op) + ": attempt to get " + op + " of an empty sequence (axis " +
                     std::to_string(axis) + " of shape " + shape_to_string(x.shape()) + " has size 0)");
  Array r = bind1(is_max ? argmax_p : argmin_p, {x}, Params{{"axis", axis}, {"index_dtype", DType::int32}});
  return keepdims ? keep_dims(r, x.shape(), {axis}) : r;
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array sum(const Array& x, Axes axes, bool keepdims) {
  return ops::reduction("sum", ops::reduce_sum_p, x, axes, keepdims,
                        cpu::reduce::promote_small_int(ops::strong_dtype(x)));
}
Array prod(const Array& x, Axes axes, bool keepdims) {
  return ops::reduction("prod", ops::reduce_prod_p, x, axes, keepdims,
                        cpu::reduce::promote_small_int(ops::strong_dtype(x)));
}
Array max(const Array& x, Axes axes, bool keepdims) { return ops::extremum("max", ops::reduce_max_p, x, axes, keepdims); }
Array min(const Array& x, Axes axes, bool keepdims) { return ops::extremum("min", ops::reduce_min_p, x, axes, keepdims); }
Array any(const Array& x, Axes axes, bool keepdims) {
  return ops::reduction("any", ops::reduce_or_p, x, axes, keepdims, DType::bool_);
}
Array all(const Array& x, Axes axes, bool keepdims) {
  return ops::reduction("all", ops::reduce_and_p, x, axes, keepdims, DType::bool_);
}

Array mean(const Array& x, Axes axes_in, bool keepdims) {
  const Axes axes = ops::canonicalize_axes("mean", axes_in, x.ndim(), true);
  const auto t = ops::mean_types(ops::strong_dtype(x));
  Array r = ops::convert(ops::mean_impl(ops::convert(x, t.compute), axes), t.result);
  return keepdims ? ops::keep_dims(r, x.shape(), axes) : r;
}

// var = sum(|x - mean(x)|^2) / (N - ddof); real for complex input. As jnp.var, NaN where
// N - ddof <= 0.
Array var(const Array& x, Axes axes_in, bool keepdims, double ddof) {
  const Axes axes = ops::canonicalize_axes("var", axes_in, x.ndim(), true);
  const auto t = ops::mean_types(ops::strong_dtype(x));
  const Array xc = ops::convert(x, t.compute);
  const Array centered = subtract(xc, ops::keep_dims(ops::mean_impl(xc, axes), x.shape(), axes));
  const Array sq = is_complex(t.compute) ? real(multiply(centered, conj(centered))) : multiply(centered, centered);
  const double normalizer = double(ops::reduced_count(x.shape(), axes)) - ddof;
  Array r = ops::bind_reduce(ops::reduce_sum_p, sq, axes);
  r = normalizer > 0 ? divide(r, Array(normalizer)) : full_like(r, std::numeric_limits<double>::quiet_NaN());
  r = ops::convert(r, real_dtype(t.result));
  return keepdims ? ops::keep_dims(r, x.shape(), axes) : r;
}

Array std(const Array& x, Axes axes, bool keepdims, double ddof) { return sqrt(var(x, std::move(axes), keepdims, ddof)); }

Array argmax(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return ops::arg_reduction(true, x, axis, keepdims);
}
Array argmin(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return ops::arg_reduction(false, x, axis, keepdims);
}

}  // namespace tessel
