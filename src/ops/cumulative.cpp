// Cumulative primitives cumsum, cumprod, cummax, cummin, cumlogsumexp (lax's names; params
// axis and reverse), sharing one scan kernel and the monoids of the reductions.
#include <memory>
#include <numbers>

#include "backend/cpu/reduction_ops.h"
#include "ops/rule_util.h"
#include "tessel/conv.h"

namespace tessel::ops {
namespace {

using namespace cpu::reduce;

// Elements a task of the scans holds at least, and the block of a two-pass scan.
constexpr int64_t kScanTaskElems = int64_t(1) << 15;
constexpr int64_t kScanBlock = int64_t(1) << 16;
// Longest reverse scan XLA's CPU backend computes window by window (JAX's parity data: up to
// 17 positions; longer ones it rewrites into a tree, which this kernel does not follow).
constexpr int64_t kXlaWindowScanMax = 17;

// Scans positions [k0, k1) (in scan order: reversed when `reverse`) of one row of length n
// starting at `src`/`dst` with element stride 1, from the running value `a`; returns it.
template <class Op, class A, class T>
A scan_row(const T* src, T* dst, int64_t n, int64_t k0, int64_t k1, bool reverse, A a) {
  for (int64_t step = k0; step < k1; ++step) {
    const int64_t k = reverse ? n - 1 - step : step;
    a = Op::combine(a, load<A>(src[k]));
    dst[k] = store<T>(a);
  }
  return a;
}

// The operand is seen as (outer, n, inner) around the scanned axis. With inner == 1 each
// row is scanned with one running accumulator; otherwise whole rows of `inner` accumulators
// advance together, so memory is still read in order. Each element is read before its
// output is written, so the kernel also works in place.
//
// Parallel: rows (inner == 1) or (row, chunk of columns) pairs are split over the arena, each
// scanned exactly as serially. A few long rows (outer < 16, inner == 1, n >= 2 kScanBlock)
// take a two-pass blocked scan instead: the blocks of kScanBlock positions are reduced in
// parallel, their totals combined in order into each block's starting value, and the blocks
// scanned in parallel from it. The blocking depends on the shape only, so the bits do not
// depend on the thread count; integer, max and min scans equal the serial scan exactly, and
// float sums and products differ from it only in the grouping of each block's start value
// (a sum of block totals instead of a running sum: rounding error of the same order).
template <class Op, class T> void scan_kernel_t(const KernelCall& c) {
  using A = typename Op::template Acc<T>;
  const Shape& s = c.in_avals[0].shape;
  const size_t axis = size_t(c.params.get_int("axis"));
  const bool reverse = c.params.get<bool>("reverse");
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= s[i];
  for (size_t i = axis + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t n = s.empty() ? 1 : s[axis], total = outer * n * inner;
  const T* in = c.in<T>(0);
  T* out = c.out<T>(0);
  auto run = [&](int64_t tasks, int64_t task_elems, auto&& body) {
    if (total <= kScanTaskElems) body(int64_t(0), tasks);
    else cpu::parallel_for(tasks, std::max<int64_t>(1, kScanTaskElems / std::max<int64_t>(1, task_elems)), body);
  };
  if (reverse && n > 1 && n <= kXlaWindowScanMax) {
    // As XLA computes JAX's reverse scan there (a reduce_window): each output is its window's
    // left-to-right fold, ((x[k] . x[k+1]) . ...) . x[n-1], not a running value from the end.
    // Ascending k reads only positions >= k after writing k, so it also works in place.
    run(outer, n * inner, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t k = 0; k < n; ++k)
          for (int64_t j = 0; j < inner; ++j) {
            A a = Op::template identity<A>();
            for (int64_t m = k; m < n; ++m) a = Op::combine(a, load<A>(in[(o * n + m) * inner + j]));
            out[(o * n + k) * inner + j] = store<T>(a);
          }
    });
    return;
  }
  if (inner == 1 && outer < 16 && n >= 2 * kScanBlock) {
    const int64_t nb = (n + kScanBlock - 1) / kScanBlock;
    const std::unique_ptr<A[]> start(new A[size_t(outer * nb)]);
    run(outer * nb, kScanBlock, [&](int64_t t0, int64_t t1) {  // block totals
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / nb, k0 = t % nb * kScanBlock, k1 = std::min(n, k0 + kScanBlock);
        A a = Op::template identity<A>();
        for (int64_t step = k0; step < k1; ++step) a = Op::combine(a, load<A>(in[o * n + (reverse ? n - 1 - step : step)]));
        start[size_t(t)] = a;
      }
    });
    for (int64_t o = 0; o < outer; ++o) {  // totals -> each block's starting value, in order
      A a = Op::template identity<A>();
      for (int64_t b = 0; b < nb; ++b) {
        const A block_total = start[size_t(o * nb + b)];
        start[size_t(o * nb + b)] = a;
        a = Op::combine(a, block_total);
      }
    }
    run(outer * nb, kScanBlock, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t o = t / nb, k0 = t % nb * kScanBlock;
        scan_row<Op>(in + o * n, out + o * n, n, k0, std::min(n, k0 + kScanBlock), reverse, start[size_t(t)]);
      }
    });
    return;
  }
  if (inner == 1) {  // one running value per row, kept in a register
    run(outer, n, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) scan_row<Op>(in + o * n, out + o * n, n, 0, n, reverse, Op::template identity<A>());
    });
    return;
  }
  const int64_t chunk = std::min<int64_t>(inner, std::max<int64_t>(64, kScanTaskElems / std::max<int64_t>(1, n)));
  const int64_t chunks = (inner + chunk - 1) / chunk;
  run(outer * chunks, chunk * n, [&](int64_t t0, int64_t t1) {
    // Not std::vector: vector<bool> elements are proxies.
    const std::unique_ptr<A[]> acc(new A[size_t(chunk)]);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, j0 = t % chunks * chunk, m = std::min(inner, j0 + chunk) - j0;
      std::fill(acc.get(), acc.get() + m, Op::template identity<A>());
      for (int64_t step = 0; step < n; ++step) {
        const int64_t k = reverse ? n - 1 - step : step;
        const int64_t base = (o * n + k) * inner + j0;
        for (int64_t j = 0; j < m; ++j) {
          acc[size_t(j)] = Op::combine(acc[size_t(j)], load<A>(in[base + j]));
          out[base + j] = store<T>(acc[size_t(j)]);
        }
      }
    }
  });
}

/// log(exp(a) + exp(b)) without overflow: the monoid of cumlogsumexp (floating types only).
struct LogAddExpOp {
  static constexpr bool kPairwise = false;
  template <class T> using Acc = compute_t<T>;
  template <class A> static A identity() { return -std::numeric_limits<A>::infinity(); }
  template <class A> static A combine(A a, A b) {
    if (a == b) return a + A(std::numbers::ln2);  // also +-inf, where a - b is NaN
    const A hi = a > b ? a : b, lo = a > b ? b : a;
    return hi + std::log1p(std::exp(lo - hi));  // NaN propagates through lo - hi
  }
};

template <class Op> void scan_kernel(const KernelCall& c) {
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (!std::is_same_v<Op, LogAddExpOp> || is_float_v<T>) scan_kernel_t<Op, T>(c);
  });
}

template <class Op> const char* scan_name() {
  if constexpr (std::is_same_v<Op, SumOp>) return "cumsum";
  else if constexpr (std::is_same_v<Op, ProdOp>) return "cumprod";
  else if constexpr (std::is_same_v<Op, MaxOp>) return "cummax";
  else if constexpr (std::is_same_v<Op, MinOp>) return "cummin";
  else return "cumlogsumexp";
}

template <class Op> std::vector<Aval> scan_aval(std::span<const Aval> ins, const Params& p) {
  const int64_t axis = p.get_int("axis");
  if (axis < 0 || axis >= ins[0].ndim())
    throw IndexError(std::string(scan_name<Op>()) + ": axis " + std::to_string(axis) +
                     " is out of range for an operand of rank " + std::to_string(ins[0].ndim()));
  if constexpr (std::is_same_v<Op, LogAddExpOp>)
    if (!is_floating(ins[0].dtype))
      throw DTypeError(std::string("cumlogsumexp: the operand must be a real floating-point array, got ") +
                       dtype_name(ins[0].dtype) + "; convert it first (ts::cumlogsumexp converts integers)");
  return {ins[0]};
}

// ---- transformation rules ----

// cumsum is linear; its transpose is the cumsum in the other direction.
std::vector<Array> cumsum_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                    std::span<const Aval>, const Params& p) {
  if (is_zero(cts[0])) return {Array()};
  Params q = p;
  q.set("reverse", !p.get<bool>("reverse"));
  return {bind1(self, {cts[0]}, q)};
}

/// logaddexp element-wise (for the jvp of cumlogsumexp), as LogAddExpOp computes it.
Array logaddexp_arrays(const Array& a, const Array& b) {
  const Array hi = maximum(a, b), lo = minimum(a, b);
  const Array r = add(hi, log1p(exp(subtract(lo, hi))));
  return where(equal(a, b), a + std::numbers::ln2, r);
}

/// `x` shifted by `s` along `axis` in the scan's direction (towards later positions), the
/// vacated positions filled with `fill`.
Array shift(const Array& x, int64_t s, int64_t axis, bool reverse, Scalar fill) {
  std::vector<std::array<int64_t, 3>> cfg(size_t(x.ndim()), {0, 0, 0});
  cfg[size_t(axis)] = reverse ? std::array<int64_t, 3>{-s, s, 0} : std::array<int64_t, 3>{s, -s, 0};
  return lax_pad(x, fill, cfg);
}

// cumprod, cummax and cummin differentiate through the scan that JAX writes them as: a
// prefix scan by doubling (log2 n steps, each combining every element with the partial
// result `s` places earlier), with the jvp of the combining function at every step. This
// stays exact where the operand has zeros (unlike cumsum(t / x) * y).
template <class Op> std::vector<Array> scan_jvp(const ir::Primitive&, std::span<const Array> primals,
                                                std::span<const Array> tangents, std::span<const Array>,
                                                const Params& p) {
  const int64_t axis = p.get_int("axis"), n = primals[0].dim(axis);
  const bool reverse = p.get<bool>("reverse");
  Array y = primals[0], t = tangents[0];
  if constexpr (!std::is_same_v<Op, ProdOp> && !std::is_same_v<Op, LogAddExpOp>)
    if (is_complex(y.dtype()))
      throw NotImplementedError(std::string(scan_name<Op>()) +
                                ": differentiation of complex operands is not implemented (their order is not "
                                "differentiable); differentiate real and imaginary parts separately");
  const Scalar identity = std::is_same_v<Op, ProdOp> ? Scalar(1.0)
                          : std::is_same_v<Op, MaxOp> || std::is_same_v<Op, LogAddExpOp>
                              ? Scalar(-std::numeric_limits<double>::infinity())
                                                      : Scalar(std::numeric_limits<double>::infinity());
  for (int64_t s = 1; s < n; s *= 2) {
    const Array ye = shift(y, s, axis, reverse, identity), te = shift(t, s, axis, reverse, 0.0);
    if constexpr (std::is_same_v<Op, ProdOp>) {
      t = add(multiply(te, y), multiply(ye, t));
      y = multiply(ye, y);
    } else if constexpr (std::is_same_v<Op, LogAddExpOp>) {
      // d logaddexp(a, b) = da * exp(a - r) + db * exp(b - r), r = logaddexp(a, b).
      const Array r = logaddexp_arrays(ye, y);
      t = add(multiply(te, exp(subtract(ye, r))), multiply(t, exp(subtract(y, r))));
      y = r;
    } else {
      // The earlier partial result wins only when strictly better: ties take the later
      // element's tangent (a choice: the extremum is not differentiable there).
      const Array earlier = std::is_same_v<Op, MaxOp> ? greater(ye, y) : less(ye, y);
      t = where(earlier, te, t);
      y = where(earlier, ye, y);
    }
  }
  return {t};
}

// Scans along `axis`: the axis moves past the batch dimension; the output is batched where
// the input is.
Batched scan_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                   const BatchAxis&, const Params& p) {
  const int64_t bd = dims[0], a = p.get_int("axis");
  Params q = p;
  q.set("axis", a < bd ? a : a + 1);
  return {detail::bind(self, ins, q), {bd}};
}

/// SPMD: the scanned axis stays whole; the others pass through.
ir::ShardingRule scan_sharding_rule(std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  std::vector<DimRule> dims(outs[0].shape.size(), DimRule::kPass);
  dims[size_t(p.get_int("axis"))] = DimRule::kWhole;
  return aligned_sharding_rule(ins, outs, dims);
}

template <class Op> ir::Primitive scan_primitive() {
  ir::Primitive p{.name = scan_name<Op>(), .arity = {1, 1}, .abstract_eval = scan_aval<Op>, .cpu_kernel = scan_kernel<Op>,
                  .batch = scan_batch, .sharding_rule = scan_sharding_rule};
  if constexpr (std::is_same_v<Op, SumOp>) p.jvp = jvp_linear, p.transpose = cumsum_transpose;
  else p.jvp = scan_jvp<Op>;
  return p;
}

const ir::Primitive& cumsum_p = ir::register_primitive(scan_primitive<SumOp>());
const ir::Primitive& cumprod_p = ir::register_primitive(scan_primitive<ProdOp>());
const ir::Primitive& cummax_p = ir::register_primitive(scan_primitive<MaxOp>());
const ir::Primitive& cummin_p = ir::register_primitive(scan_primitive<MinOp>());
const ir::Primitive& cumlogsumexp_p = ir::register_primitive(scan_primitive<LogAddExpOp>());

/// `numpy`: as jnp.cumsum and jnp.cumprod do, bool accumulates in the default int (other
/// dtypes keep theirs: int8 stays int8 and wraps) and the result is strong; otherwise as
/// lax.cummax and lax.cummin do, the operand's type is kept.
Array cumulative(const char* op, const ir::Primitive& p, const Array& x, int64_t axis_in, bool reverse,
                 bool numpy) {
  const int64_t axis = canonicalize_axis(op, axis_in, x.ndim());
  const Array xc = numpy ? convert(x, is_bool(x.dtype()) ? default_int : strong_dtype(x)) : x;
  return bind1(p, {xc}, Params{{"axis", axis}, {"reverse", reverse}});
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {
Array cumsum(const Array& x, int64_t axis, bool reverse) {
  return ops::cumulative("cumsum", ops::cumsum_p, x, axis, reverse, true);
}
Array cumprod(const Array& x, int64_t axis, bool reverse) {
  return ops::cumulative("cumprod", ops::cumprod_p, x, axis, reverse, true);
}
Array cummax(const Array& x, int64_t axis, bool reverse) {
  return ops::cumulative("cummax", ops::cummax_p, x, axis, reverse, false);
}
Array cummin(const Array& x, int64_t axis, bool reverse) {
  return ops::cumulative("cummin", ops::cummin_p, x, axis, reverse, false);
}
Array cumlogsumexp(const Array& x, int64_t axis, bool reverse) {
  // Integers and bool become the default float, as lax.cumlogsumexp's callers convert them.
  const Array xf = is_floating(x.dtype()) ? x : ops::convert(x, default_float);
  return ops::cumulative("cumlogsumexp", ops::cumlogsumexp_p, xf, axis, reverse, false);
}
}  // namespace tessel
