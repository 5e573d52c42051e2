#include "compiler/fusion.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "backend/cpu/parallel.h"
#include "backend/cpu/scalar.h"
#include "compiler/codegen.h"
#include "compiler/fused_kernel.h"
#include "compiler/kernel_cache.h"
#include "compiler/loop_blocking.h"
#include "compiler/passes.h"
#include "compiler/product_merging.h"
#include "compiler/streaming.h"
#include "core/config.h"
#include "core/log.h"
#include "ir/serialize.h"
#include "ops/op_util.h"
#include "ops/shape.h"
#include "tessel/error.h"

namespace tessel::compiler {
namespace {

std::vector<Aval> fused_eval(std::span<const Aval> ins, const ir::Params& p) {
  const ir::Program& program = *p.get<ir::ProgramRef>("program");
  ops::check_same_types("fused", "operand", ins, program.in_avals(), "the fused program takes these types");
  return program.out_avals();
}

// Points per block of a fused full reduction (kept == 0) split over the arena.
constexpr int64_t kFullReductionBlock = int64_t(1) << 16;

/// The partial results of every block (slot b * stride + o holds what the kernel wrote for
/// block b, a T), combined in block order: sums in double (the generated kernel's
/// accumulator), max and min with scalar::max/min (NaN propagates).
template <class T> T combine_partials(ir::Combine how, const std::vector<double>& slots, size_t stride, size_t o) {
  double sum = 0;
  T ext{};
  for (size_t b = 0; b * stride < slots.size(); ++b) {
    T v;
    std::memcpy(&v, &slots[b * stride + o], sizeof(T));
    if (how == ir::Combine::kSum) sum += double(v);
    else ext = b == 0 ? v : how == ir::Combine::kMax ? scalar::max(ext, v) : scalar::min(ext, v);
  }
  return how == ir::Combine::kSum ? T(sum) : ext;
}

// A fused reduction over every dimension (a loss, a norm): the rows are cut into fixed
// blocks of about kFullReductionBlock points (by the shape only, so the bits do not depend on
// the thread count); each block runs the kernel into its own partial results, in parallel,
// and the partials are combined in block order. A sum then rounds once per block to the
// output dtype before the double sum of the partials: within a few ulps of the unblocked
// sum. False (nothing run) when one block holds every row.
bool run_blocked_full_reduction(const ir::KernelCall& c, const FusedKernel& k, const std::vector<void*>& bufs,
                                int64_t rows, int64_t row_points, int64_t align) {
  // Blocks start at multiples of the kernel's row alignment, as every call does.
  int64_t block_rows = std::max<int64_t>(1, kFullReductionBlock / std::max<int64_t>(1, row_points));
  block_rows = (block_rows + align - 1) / align * align;
  const int64_t nb = (rows + block_rows - 1) / block_rows;
  if (nb < 2) return false;
  const ir::Program& program = *c.params.get<ir::ProgramRef>("program");
  const size_t nin = c.ins.size(), nout = c.outs.size();
  std::vector<ir::Combine> how(nout, ir::Combine::kNone);
  for (size_t o = 0; o < nout; ++o) {
    const DType d = c.out_avals[o].dtype;
    if (program.outvars[o].is_literal() || (d != DType::float32 && d != DType::float64)) return false;
    for (const ir::Equation& e : program.eqns)
      if (!e.outputs.empty() && e.outputs[0].get() == program.outvars[o].var().get()) how[o] = reduction_combine(e);
    if (how[o] != ir::Combine::kSum && how[o] != ir::Combine::kMax && how[o] != ir::Combine::kMin) return false;
  }
  std::vector<double> slots(size_t(nb) * nout);  // one 8-byte slot per block and output
  KernelFnPtr fn = k.fn();
  cpu::parallel_for(nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<void*> local = bufs;
    for (int64_t b = b0; b < b1; ++b) {
      for (size_t o = 0; o < nout; ++o) local[nin + o] = &slots[size_t(b) * nout + o];
      fn(local.data(), b * block_rows, std::min(rows, (b + 1) * block_rows));
    }
  });
  for (size_t o = 0; o < nout; ++o) {
    if (c.out_avals[o].dtype == DType::float32) *static_cast<float*>(c.outs[o]) = combine_partials<float>(how[o], slots, nout, o);
    else *static_cast<double*>(c.outs[o]) = combine_partials<double>(how[o], slots, nout, o);
  }
  return true;
}

// At most this many blocks of rows in a loop nest with column reductions (larger blocks
// beyond): bounds the rows of partial results to allocate and combine.
constexpr int64_t kMaxColumnBlocks = 64;

/// Calls f(A{}, T{}) with a column reduction's accumulator type A (the reduction epilogue's
/// acc_type: double for sums, the operand's type for max and min) and output type T.
template <class F> void visit_column_types(ir::Combine how, DType d, F&& f) {
  if (d == DType::float64) f(double{}, double{});
  else if (how == ir::Combine::kSum) f(double{}, float{});
  else f(float{}, float{});
}

template <class A> A column_identity(ir::Combine how) {
  if (how == ir::Combine::kSum) return A(0);
  return how == ir::Combine::kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
}

// A loop nest with column reductions (codegen.h's is_column_reduction: bias and layer-norm
// gradients' sums over leading axes) runs by fixed blocks of rows (by the shape only, so the
// bits do not depend on the thread count), of about kFullReductionBlock points or more and at
// most kMaxColumnBlocks of them, in parallel. Each block accumulates into its own row of
// partial results (sums in double) and the rows then combine in block order, sums in double
// and rounded once to the output dtype (docs/performance.md gives the bound).
void run_column_blocks(const ir::KernelCall& c, const FusedKernel& k, const std::vector<void*>& bufs, int64_t rows,
                       int64_t row_points, int64_t align) {
  int64_t block_rows = std::max({int64_t(1), kFullReductionBlock / std::max<int64_t>(1, row_points),
                                 (rows + kMaxColumnBlocks - 1) / kMaxColumnBlocks});
  block_rows = (block_rows + align - 1) / align * align;
  const int64_t nb = std::max<int64_t>(1, (rows + block_rows - 1) / block_rows);
  const size_t nin = c.ins.size(), nout = c.outs.size();
  std::vector<std::vector<double>> parts(nout);  // per column output: nb rows of accumulators
  for (size_t o = 0; o < nout; ++o)
    if (k.column(o) != ir::Combine::kNone) parts[o].resize(size_t(nb * c.out_avals[o].size()));
  KernelFnPtr fn = k.fn();
  cpu::parallel_for(nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<void*> local = bufs;
    for (int64_t b = b0; b < b1; ++b) {
      for (size_t o = 0; o < nout; ++o) {
        const ir::Combine how = k.column(o);
        if (how == ir::Combine::kNone) continue;
        visit_column_types(how, c.out_avals[o].dtype, [&](auto a, auto) {
          using A = decltype(a);
          const int64_t n = c.out_avals[o].size();
          A* row = reinterpret_cast<A*>(parts[o].data()) + b * n;
          std::fill(row, row + n, column_identity<A>(how));
          local[nin + o] = row;
        });
      }
      fn(local.data(), b * block_rows, std::min(rows, (b + 1) * block_rows));
    }
  });
  for (size_t o = 0; o < nout; ++o) {
    const ir::Combine how = k.column(o);
    if (how == ir::Combine::kNone) continue;
    visit_column_types(how, c.out_avals[o].dtype, [&](auto a, auto t) {
      using A = decltype(a);
      using T = decltype(t);
      const int64_t n = c.out_avals[o].size();
      const A* part = reinterpret_cast<const A*>(parts[o].data());
      T* out = static_cast<T*>(c.outs[o]);
      cpu::parallel_for(n, 4096, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
          A v = part[j];
          for (int64_t b = 1; b < nb; ++b) {
            const A w = part[b * n + j];
            v = how == ir::Combine::kSum ? v + w : how == ir::Combine::kMax ? scalar::max(v, w) : scalar::min(v, w);
          }
          out[j] = T(v);
        }
      });
    });
  }
}

// Rows of the domain's first dimension are split over the shared arena, in chunks of at
// least ~16K points so each chunk outweighs its scheduling, starting at multiples of
// row_alignment (so the values do not depend on the number of threads); a reduction over
// every dimension runs by fixed blocks of rows (run_blocked_full_reduction), and so does a
// loop nest with column reductions (run_column_blocks).
/// Rows [r0, r1) of the kernel's domain (all of them for a rank-0 domain: [0, 1); always all
/// of them for a kernel with column reductions, which split_rows never splits).
void fused_rows_range(const ir::KernelCall& c, int64_t r0, int64_t r1) {
  const auto& k = c.params.get_object<FusedKernel>("kernel");
  std::vector<void*> bufs;
  bufs.reserve(c.ins.size() + c.outs.size() + 1);
  for (const void* p : c.ins) bufs.push_back(const_cast<void*>(p));
  for (void* p : c.outs) bufs.push_back(p);
  bufs.push_back(nullptr);  // no row masks: full-size buffers (codegen.h's generate_kernel)
  const Shape& domain = k.shape().domain;
  const int64_t rows = domain.empty() ? 1 : domain[0];
  int64_t row_points = 1;
  for (size_t d = 1; d < domain.size(); ++d) row_points *= domain[d];
  const int64_t align = row_alignment(k.shape()), units = (r1 - r0 + align - 1) / align;
  if (k.has_columns()) return run_column_blocks(c, k, bufs, rows, row_points, align);
  if (k.shape().kept == 0 && !domain.empty() && run_blocked_full_reduction(c, k, bufs, rows, row_points, align)) return;
  const int64_t grain = k.shape().kept == 0
                            ? std::max<int64_t>(units, 1)
                            : std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_points * align));
  KernelFnPtr fn = k.fn();
  cpu::parallel_for(units, grain, [&](int64_t u0, int64_t u1) {
    fn(bufs.data(), r0 + u0 * align, std::min(r1, r0 + u1 * align));
  });
}

void fused_kernel(const ir::KernelCall& c) {
  const Shape& domain = c.params.get_object<FusedKernel>("kernel").shape().domain;
  fused_rows_range(c, 0, domain.empty() ? 1 : domain[0]);
}

const ir::Primitive& fused_p = ir::register_primitive({
    .name = "fused", .abstract_eval = fused_eval, .cpu_kernel = fused_kernel});

// A row-phased loop nest (codegen.h): its `program` holds every phase's equations, its
// kernel runs the phases over each row in turn; rows split over the arena as a fused
// reduction's do.
const ir::Primitive& fused_rows_p = ir::register_primitive({
    .name = "fused_rows", .abstract_eval = fused_eval, .cpu_kernel = fused_kernel});

using VarSet = std::unordered_set<const ir::VarNode*>;

/// Which equations fuse and which values are stored (materialized) rather than recomputed.
struct Plan {
  const ir::Program& p;
  std::vector<bool> fusible;                                     // per equation
  std::unordered_map<const ir::VarNode*, size_t> producer;       // value -> equation index
  std::unordered_map<const ir::VarNode*, ir::Var> var_of;        // every value of p
  VarSet stored;
  /// Line roots (loop nests over fewer than min_elements points that read a large value:
  /// the line a halo exchange sends) computed from the values their large inputs were
  /// computed from, through stored values: they then wait for no loop nest over the large
  /// domain, which can run after the exchange together with the others (hoist_small_steps).
  VarSet recomputing;
  VarSet read_at_run_time_offsets;  // stored for the loop nests that read them so: never recomputed

  explicit Plan(const ir::Program& prog) : p(prog), fusible(prog.eqns.size()) {
    for (const auto& v : p.invars) var_of[v.get()] = v;
    for (const auto& v : p.constvars) var_of[v.get()] = v;
    for (size_t i = 0; i < p.eqns.size(); ++i)
      for (const auto& v : p.eqns[i].outputs) {
        producer[v.get()] = i;
        var_of[v.get()] = v;
      }
  }
  bool is_inline(const ir::VarNode* v) const {
    auto it = producer.find(v);
    return it != producer.end() && fusible[it->second] && !stored.count(v);
  }
  /// Whether a recomputing line root computes `v` inline although it is stored: a value of
  /// a fusible equation other than a reduction (which folds along its own loop), not read
  /// at run-time offsets (which read a stored buffer).
  bool recomputable(const ir::VarNode* v) const {
    auto it = producer.find(v);
    return it != producer.end() && fusible[it->second] && !is_fusible_reduction(p.eqns[it->second]) &&
           !read_at_run_time_offsets.count(v);
  }
  /// (A loop nest's roots all recompute or none does: closure follows one rule for all.)
  bool recomputes(const ir::VarNode* root) const { return recomputing.count(root) > 0; }
  bool is_root(size_t i) const { return fusible[i] && stored.count(p.eqns[i].outputs[0].get()); }
  void store_inputs_of(size_t i) {
    for (const ir::Atom& a : p.eqns[i].inputs)
      if (!a.is_literal()) stored.insert(a.var().get());
  }

  /// The equations computing `roots` inline (program order) and the values they read; a
  /// root that another of `roots` reads (a column sum's operand, fusion.cpp's schedule) is
  /// computed inline there too.
  void closure(const std::vector<const ir::VarNode*>& roots, std::vector<size_t>& eqns,
               std::vector<ir::Var>& inputs) const {
    const VarSet root_set(roots.begin(), roots.end());
    std::unordered_set<size_t> seen;
    VarSet seen_inputs;
    std::vector<size_t> stack;
    const bool through = !roots.empty() && recomputes(roots[0]);
    for (auto* r : roots) stack.push_back(producer.at(r));
    while (!stack.empty()) {
      size_t i = stack.back();
      stack.pop_back();
      if (!seen.insert(i).second) continue;
      for (const ir::Atom& a : p.eqns[i].inputs) {
        if (a.is_literal()) continue;
        const ir::VarNode* v = a.var().get();
        if (is_inline(v) || root_set.count(v) || (through && recomputable(v))) stack.push_back(producer.at(v));
        else if (seen_inputs.insert(v).second) inputs.push_back(a.var());
      }
    }
    eqns.assign(seen.begin(), seen.end());
    std::sort(eqns.begin(), eqns.end());
  }

  ir::Program group(const std::vector<const ir::VarNode*>& roots) const {
    std::vector<size_t> eqns;
    ir::Program g;
    closure(roots, eqns, g.invars);
    for (size_t i : eqns) g.eqns.push_back(p.eqns[i]);
    for (auto* r : roots) g.outvars.push_back(ir::Atom(var_of.at(r)));
    g.name = p.name + "_fused";
    return g;
  }
};

/// Points a root's loop nest visits (a reduction visits its operand).
int64_t group_points(const ir::Equation& e) {
  return is_fusible_reduction(e) || is_column_reduction(e) ? e.inputs[0].aval().size() : e.outputs[0]->aval.size();
}

/// True when the loop nest of root `i` computes a value of `min_elements` points or more
/// inline: a small root read from a large computed value (a halo line sent by MPI, a corner
/// of a stencil's result) stays a small loop nest, since as an unfused kernel it would force
/// the whole large value into memory. So does one reading a large stored value that a
/// fusible equation computes (it may recompute it: recompute_line).
bool reads_large_inline_value(const Plan& plan, size_t i, int64_t min_elements) {
  std::vector<size_t> eqns;
  std::vector<ir::Var> inputs;
  plan.closure({plan.p.eqns[i].outputs[0].get()}, eqns, inputs);
  for (size_t j : eqns)
    if (j != i && plan.p.eqns[j].outputs[0]->aval.size() >= std::max<int64_t>(min_elements, 1)) return true;
  for (const ir::Var& v : inputs)  // a stored one a line root may recompute (Plan::recomputing)
    if (plan.recomputable(v.get()) && v->aval.size() >= std::max<int64_t>(min_elements, 1)) return true;
  return false;
}

/// The recompute budget of the loop nest computing `root` (FusionOptions::small_point_cost).
int64_t point_budget(const ir::Equation& root, const FusionOptions& opt) {
  const Aval& out = root.outputs[0]->aval;
  const int64_t bytes = group_points(root) * int64_t(itemsize(out.dtype));
  return bytes <= kSmallDomainBytes ? std::min(opt.max_point_cost, opt.small_point_cost) : opt.max_point_cost;
}

/// Work per point from which a value that several loop nests of small domains recompute is
/// stored instead (one store and a load per reader from a ring of rows in cache, against
/// its operations again in every further loop nest).
constexpr int64_t kSharedValueCost = 4;

/// Stores one value that loop nests whose domains stay in cache (the small recompute
/// budget, `point_budget`) would each compute inline: of the values whose evaluation runs
/// at least kSharedValueCost of arithmetic (with what it pulls in) that two or more such loop nests
/// compute, the one whose recomputation costs most. True if it stored one. (A value that
/// one loop nest reads at several offsets is the recompute budget's business; this one is
/// the common subexpression of different loop nests, which the C++ compiler cannot merge.)
bool store_shared_value(Plan& plan, const FusionOptions& opt) {
  const ir::Program& p = plan.p;
  struct Shared {
    int nests = 0;
    int64_t cost = 0;  // arithmetic per evaluation
  };
  std::unordered_map<const ir::VarNode*, Shared> shared;
  // The arithmetic one evaluation of `v` runs (its inline equations, each once): the range
  // tests of the pads and scatters around it are resolved in the interior body.
  std::unordered_map<const ir::VarNode*, int64_t> arithmetic;
  auto arithmetic_of = [&](const ir::VarNode* v) {
    auto [it, fresh] = arithmetic.try_emplace(v, 0);
    if (!fresh) return it->second;
    std::vector<size_t> eqns;
    std::vector<ir::Var> inputs;
    plan.closure({v}, eqns, inputs);
    for (size_t j : eqns)
      if (!p.eqns[j].prim->index_map) it->second += p.eqns[j].prim->point_cost;
    return it->second;
  };
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    if (!plan.is_root(i) || group_points(p.eqns[i]) < opt.min_elements) continue;
    if (point_budget(p.eqns[i], opt) >= opt.max_point_cost) continue;  // a large domain
    const ir::VarNode* root = p.eqns[i].outputs[0].get();
    const GroupCost cost = group_cost(plan.group({root}));
    for (const auto& [v, c] : cost.vars) {
      if (v == root || c.maps < 1) continue;
      const size_t j = plan.producer.at(v);
      if (group_points(p.eqns[j]) < opt.min_elements || p.eqns[j].prim->point_cost == 0) continue;
      const int64_t each = arithmetic_of(v);
      if (each < kSharedValueCost) continue;
      Shared& s = shared[v];
      s.nests++;
      s.cost = std::max(s.cost, each);
    }
  }
  const ir::VarNode* best = nullptr;
  int64_t best_saving = 0;
  for (const auto& [v, s] : shared) {
    const int64_t saving = int64_t(s.nests - 1) * s.cost;
    // (ties by program order, so that plans do not depend on hashing)
    if (s.nests >= 2 && (saving > best_saving ||
                         (saving == best_saving && best && plan.producer.at(v) < plan.producer.at(best)))) {
      best_saving = saving;
      best = v;
    }
  }
  if (!best) return false;
  plan.stored.insert(best);
  return true;
}

/// Work per point up to which a line root recomputes through stored values (Plan::recomputing):
/// a line is a few thousand points, so this is little work, but it is code to compile.
constexpr int64_t kLineRecomputeCost = 4096;

/// Makes root `i` recompute through stored values when it is a line root (fewer than
/// min_elements points; the smaller roots left fusible read a large value) and its loop nest
/// then costs at most kLineRecomputeCost per point. True if it does.
bool recompute_line(Plan& plan, size_t i, const FusionOptions& opt) {
  if (group_points(plan.p.eqns[i]) >= opt.min_elements) return false;
  const ir::VarNode* root = plan.p.eqns[i].outputs[0].get();
  if (plan.recomputing.count(root)) return true;
  plan.recomputing.insert(root);
  const int64_t cost = group_cost(plan.group({root})).total;
  TESSEL_DEBUG_LOG("fusion: line root " + std::to_string(i) + " recomputes at " + std::to_string(cost) + " per point");
  if (cost <= kLineRecomputeCost) return true;
  plan.recomputing.erase(root);
  return false;
}

/// Decides what fuses: stores every value a non-fused consumer or the program's output
/// needs; demotes roots too small to be worth a kernel; and, where a group would recompute
/// more than `max_point_cost` per point, stores the value whose recomputation costs most.
void plan_materialization(Plan& plan, const FusionOptions& opt) {
  const ir::Program& p = plan.p;
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const bool reduction = is_fusible_reduction(p.eqns[i]) || is_column_reduction(p.eqns[i]);
    plan.fusible[i] = can_generate(p.eqns[i]) || reduction;
    if (reduction) plan.stored.insert(p.eqns[i].outputs[0].get());  // always a root
  }
  // An update (a static scatter) writing a small region of a stored array stays an unfused
  // step: the executable can run it in place on a dead buffer, writing only the region (a
  // fused loop would copy the whole array).
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const ir::Equation& e = p.eqns[i];
    if (!plan.fusible[i] || !e.prim->region_update || e.inputs[0].is_literal()) continue;
    auto it = plan.producer.find(e.inputs[0].var().get());
    const bool operand_stored = it == plan.producer.end() || !plan.fusible[it->second];
    if (operand_stored && 2 * e.inputs[1].aval().size() < e.inputs[0].aval().size()) plan.fusible[i] = false;
  }
  for (const ir::Atom& a : p.outvars)
    if (!a.is_literal()) plan.stored.insert(a.var().get());
  for (size_t i = 0; i < p.eqns.size(); ++i)
    if (!plan.fusible[i] || reads_at_run_time_offsets(p.eqns[i])) {
      plan.store_inputs_of(i);
      if (plan.fusible[i])
        for (const ir::Atom& a : p.eqns[i].inputs)
          if (!a.is_literal()) plan.read_at_run_time_offsets.insert(a.var().get());
    }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < p.eqns.size(); ++i)
      if (plan.is_root(i) && group_points(p.eqns[i]) < std::max<int64_t>(opt.min_elements, 1) &&
          !reads_large_inline_value(plan, i, opt.min_elements)) {
        plan.fusible[i] = false;
        plan.store_inputs_of(i);
        changed = true;
      }
    if (changed) continue;
    // An expensive value (a transcendental) that several loop nests would each recompute is
    // stored once instead. Small loop nests (a line of it) do not count.
    std::unordered_map<const ir::VarNode*, int> nests_reading;
    for (size_t i = 0; i < p.eqns.size(); ++i) {
      if (!plan.is_root(i) || group_points(p.eqns[i]) < opt.min_elements) continue;
      std::vector<size_t> eqns;
      std::vector<ir::Var> inputs;
      plan.closure({p.eqns[i].outputs[0].get()}, eqns, inputs);
      for (size_t j : eqns)
        if (j != i && p.eqns[j].prim->point_cost >= ir::kExpensivePointCost)
          nests_reading[p.eqns[j].outputs[0].get()]++;
    }
    for (const auto& [v, n] : nests_reading)
      if (n >= 2) {
        plan.stored.insert(v);
        changed = true;
      }
    if (changed) continue;
    if (opt.store_shared_values && store_shared_value(plan, opt)) {
      changed = true;
      continue;
    }
    for (size_t i = 0; i < p.eqns.size(); ++i) {
      if (!plan.is_root(i)) continue;
      const ir::VarNode* root = p.eqns[i].outputs[0].get();
      if (recompute_line(plan, i, opt)) continue;
      const int64_t budget = point_budget(p.eqns[i], opt);
      for (;;) {
        GroupCost cost = group_cost(plan.group({root}));
        if (cost.total <= budget) break;
        const ir::VarNode* best = nullptr;
        double best_saving = 0;
        for (const auto& [v, c] : cost.vars) {
          if (v == root || c.maps < 2) continue;
          const double saving = double(c.maps - 1) * double(c.inclusive) / c.maps;
          if (saving > best_saving) {
            best_saving = saving;
            best = v;
          }
        }
        if (!best) break;
        plan.stored.insert(best);
        changed = true;
      }
    }
  }
}

/// A step of the fused program: one original equation, or a loop nest of several roots.
struct Step {
  size_t eqn = 0;                              // when roots is empty
  std::vector<const ir::VarNode*> roots;       // a loop nest
  Shape domain;                                // and its kept dimensions (reductions)
  size_t kept = 0;
};

/// The stored values a step reads: an unfused equation's operands, a loop nest's roots'
/// inputs (`reads_of_root`).
bool step_reads(const Plan& plan, const Step& st, const ir::VarNode* v,
                const std::unordered_map<const ir::VarNode*, VarSet>& reads_of_root) {
  if (st.roots.empty()) {
    for (const ir::Atom& a : plan.p.eqns[st.eqn].inputs)
      if (!a.is_literal() && a.var().get() == v) return true;
    return false;
  }
  for (auto* r : st.roots)
    if (reads_of_root.at(r).count(v)) return true;
  return false;
}

/// Moves each root into the latest later loop nest of its shape that runs before anything
/// reading the root (going from the last loop nest back), so that roots an unrelated step
/// separates in program order share one loop nest. In a partitioned program the halo
/// exchanges (collectives) sit between the computations of the fields they feed; each
/// field's loop nest would otherwise read every input again.
void sink_roots(const Plan& plan, std::vector<Step>& steps, const FusionOptions& opt,
                const std::unordered_map<const ir::VarNode*, VarSet>& reads_of_root) {
  for (size_t s = steps.size(); s-- > 0;) {
    if (steps[s].roots.empty()) continue;
    const std::vector<const ir::VarNode*> roots = steps[s].roots;
    // A column sum and the root it reads stay together (the sum reads it inline).
    auto linked = [&](const ir::VarNode* r) {
      for (const ir::VarNode* o : steps[s].roots)
        if (o != r && (reads_of_root.at(o).count(r) || reads_of_root.at(r).count(o))) return true;
      return false;
    };
    for (const ir::VarNode* r : roots) {
      if (linked(r)) continue;
      size_t target = s;
      for (size_t u = s + 1; u < steps.size(); ++u) {
        const Step& st = steps[u];
        if (step_reads(plan, st, r, reads_of_root)) break;
        if (!st.roots.empty() && st.domain == steps[s].domain && st.kept == steps[s].kept &&
            int64_t(st.roots.size()) < opt.max_outputs && plan.recomputes(st.roots[0]) == plan.recomputes(r))
          target = u;
      }
      if (target == s) continue;
      steps[target].roots.push_back(r);
      std::erase(steps[s].roots, r);
    }
    if (steps[s].roots.empty()) steps.erase(steps.begin() + std::ptrdiff_t(s));
  }
}

/// Moves each small step (a loop nest over fewer than min_elements points, or an unfused
/// equation whose operands and results are all that small: a halo line, its message) before
/// the loop nests over large domains that run just before it and compute nothing it reads.
/// A halo exchange then no longer separates the large loop nests of the fields around it,
/// which run together (and stream as one chain) after the exchanges. Small steps keep their
/// order among themselves, so effects keep theirs.
void hoist_small_steps(const Plan& plan, std::vector<Step>& steps, const FusionOptions& opt,
                       const std::unordered_map<const ir::VarNode*, VarSet>& reads_of_root) {
  const int64_t small = std::max<int64_t>(opt.min_elements, 1);
  auto points = [](const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  auto is_small = [&](const Step& st) {
    if (!st.roots.empty()) return points(st.domain) < small;
    const ir::Equation& e = plan.p.eqns[st.eqn];
    for (const ir::Atom& a : e.inputs)
      if (a.aval().size() >= small) return false;
    for (const ir::Var& o : e.outputs)
      if (o->aval.size() >= small) return false;
    return true;
  };
  auto reads_from = [&](const Step& reader, const Step& nest) {
    for (const ir::VarNode* r : nest.roots)
      if (step_reads(plan, reader, r, reads_of_root)) return true;
    return false;
  };
  for (size_t s = 1; s < steps.size(); ++s) {
    if (!is_small(steps[s])) continue;
    for (size_t t = s; t > 0 && !steps[t - 1].roots.empty() && !is_small(steps[t - 1]) &&
                       !reads_from(steps[t], steps[t - 1]);
         --t)
      std::swap(steps[t - 1], steps[t]);
  }
}

/// Orders the program into steps: unfused equations in place; each root joins the latest
/// loop nest of its shape that runs after everything it reads (else starts its own); a
/// column sum may also join the loop nest computing what it reads, which then computes both
/// at each point (its operand is read from memory by no one); then roots sink into later
/// loop nests (sink_roots).
std::vector<Step> schedule(const Plan& plan, const FusionOptions& opt) {
  const ir::Program& p = plan.p;
  std::vector<Step> steps;
  std::unordered_map<const ir::VarNode*, VarSet> reads_of_root;
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    if (!plan.fusible[i]) {
      steps.push_back(Step{i, {}, {}, 0});
      continue;
    }
    if (!plan.is_root(i)) continue;
    const ir::VarNode* root = p.eqns[i].outputs[0].get();
    std::vector<size_t> eqns;
    std::vector<ir::Var> inputs;
    plan.closure({root}, eqns, inputs);
    VarSet& reads = reads_of_root[root];
    for (const auto& v : inputs) reads.insert(v.get());
    const ir::Equation& e = p.eqns[i];
    const bool reduction = is_fusible_reduction(e), column = is_column_reduction(e);
    const Shape& domain = reduction || column ? e.inputs[0].aval().shape : root->aval.shape;
    const size_t kept = reduction ? domain.size() - e.params.get_ints("axes").size() : domain.size();
    Step* target = nullptr;
    for (size_t s = steps.size(); s-- > 0;) {
      Step& st = steps[s];
      bool produces = false;
      if (st.roots.empty()) {
        for (const auto& o : p.eqns[st.eqn].outputs) produces |= reads.count(o.get()) > 0;
      } else {
        for (auto* r : st.roots) produces |= reads.count(r) > 0;
      }
      const bool joins = !st.roots.empty() && st.domain == domain && st.kept == kept &&
                         int64_t(st.roots.size()) < opt.max_outputs &&
                         plan.recomputes(st.roots[0]) == plan.recomputes(root);
      if (produces) {
        // computes what the sum reads (element-wise values, not another sum): sums them in place
        bool elementwise = true;
        for (auto* r : st.roots) {
          const ir::Equation& q = p.eqns[plan.producer.at(r)];
          elementwise &= !reads.count(r) || !(is_fusible_reduction(q) || is_column_reduction(q));
        }
        if (column && joins && elementwise) target = &st;
        break;
      }
      if (joins) {
        target = &st;
        break;
      }
    }
    if (target) target->roots.push_back(root);
    else steps.push_back(Step{0, {root}, domain, kept});
  }
  hoist_small_steps(plan, steps, opt, reads_of_root);
  sink_roots(plan, steps, opt, reads_of_root);
  return steps;
}

/// Widest row (the domain's last dimension, in bytes of float64) a row-phased loop nest runs
/// over: its phases re-read the row from the first level cache, and its row buffers live on
/// the stack.
constexpr int64_t kMaxPhasedRowBytes = 32 << 10;

/// A unit of the fused program: an unfused equation, one loop nest, or several loop nests
/// run as the phases of a row-phased loop nest (codegen.h).
struct Unit {
  size_t eqn = 0;                  // an unfused equation, when `groups` is empty
  std::vector<ir::Program> groups; // one loop nest, or the phases in order
  std::vector<ir::Var> invars, outvars;  // of a row-phased loop nest
};

/// Whether the loop nests `run` (consecutive steps, in order) are worth one row-phased loop
/// nest: several, one of them a reduction, and a later one reading what an earlier computed.
bool worth_phasing(const std::vector<ir::Program>& run) {
  if (run.size() < 2) return false;
  bool reduces = false, linked = false;
  std::unordered_set<const ir::VarNode*> computed;
  for (const ir::Program& g : run) {
    const GroupShape shape = group_shape(g);
    reduces |= shape.kept < shape.domain.size();
    for (const ir::Var& v : g.invars) linked |= computed.count(v.get()) > 0;
    for (const ir::Atom& o : g.outvars) computed.insert(o.var().get());
  }
  return reduces && linked;
}

/// The steps as units: runs of loop nests over the same rows that can_join_row_phases
/// accepts become row-phased loop nests; their outputs are the values a unit outside the run
/// or the program's output reads. An unfused step without effects that no later loop nest of
/// the run reads moves after the run (a layer norm gradient's column sums: each reads a
/// value of the run, and would otherwise cut it in three).
std::vector<Unit> phase_rows(const Plan& plan, const std::vector<Step>& steps) {
  std::vector<Unit> units;
  std::vector<ir::Program> run;
  std::unordered_map<const ir::VarNode*, bool> earlier;  // run's roots: is it a reduction
  std::vector<size_t> deferred;                          // unfused steps moved after the run
  VarSet deferred_outputs;
  Shape domain;
  auto reads_deferred = [&](const ir::Program& g) {
    for (const ir::Var& v : g.invars)
      if (deferred_outputs.count(v.get())) return true;
    return false;
  };
  auto flush = [&] {
    if (!worth_phasing(run)) {
      for (ir::Program& g : run) units.push_back(Unit{0, {std::move(g)}, {}, {}});
    } else {
      Unit u{0, std::move(run), {}, {}};
      VarSet seen;
      for (const ir::Program& g : u.groups)
        for (const ir::Var& v : g.invars)
          if (!earlier.count(v.get()) && seen.insert(v.get()).second) u.invars.push_back(v);
      units.push_back(std::move(u));
    }
    run.clear();
    earlier.clear();
    for (size_t i : deferred) units.push_back(Unit{i, {}, {}, {}});
    deferred.clear();
    deferred_outputs.clear();
  };
  for (const Step& st : steps) {
    if (st.roots.empty()) {
      if (!run.empty() && plan.p.eqns[st.eqn].effects() == ir::kNoEffect) {
        deferred.push_back(st.eqn);
        for (const ir::Var& o : plan.p.eqns[st.eqn].outputs) deferred_outputs.insert(o.get());
        continue;
      }
      flush();
      units.push_back(Unit{st.eqn, {}, {}, {}});
      continue;
    }
    ir::Program g = plan.group(st.roots);
    const bool fits = st.domain.size() >= 2 && st.domain.back() * 8 <= kMaxPhasedRowBytes;
    if (!run.empty() &&
        !(fits && st.domain == domain && !reads_deferred(g) && can_join_row_phases(g, domain, earlier)))
      flush();
    if (run.empty()) {
      domain = st.domain;
      if (!fits || !can_join_row_phases(g, domain, earlier)) {
        units.push_back(Unit{0, {std::move(g)}, {}, {}});
        continue;
      }
    }
    for (const ir::Atom& o : g.outvars) earlier[o.var().get()] = st.kept < st.domain.size();
    run.push_back(std::move(g));
  }
  flush();
  // A phased unit's outputs: its roots read by another unit or by the program's output.
  VarSet read_outside;
  for (const ir::Atom& a : plan.p.outvars)
    if (!a.is_literal()) read_outside.insert(a.var().get());
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i].groups.empty()) {
      for (const ir::Atom& a : plan.p.eqns[units[i].eqn].inputs)
        if (!a.is_literal()) read_outside.insert(a.var().get());
    } else if (units[i].groups.size() == 1) {
      for (const ir::Var& v : units[i].groups[0].invars) read_outside.insert(v.get());
    } else {
      for (const ir::Var& v : units[i].invars) read_outside.insert(v.get());
    }
  }
  for (Unit& u : units) {
    if (u.groups.size() < 2) continue;
    for (const ir::Program& g : u.groups)
      for (const ir::Atom& o : g.outvars)
        if (read_outside.count(o.var().get())) u.outvars.push_back(o.var());
  }
  return units;
}

/// The program of a row-phased unit: every phase's equations (each once: phases may
/// recompute a value), reading the unit's inputs.
ir::Program phased_program(const Unit& u, const std::string& name) {
  ir::Program g;
  g.invars = u.invars;
  VarSet defined;
  for (const ir::Program& phase : u.groups)
    for (const ir::Equation& e : phase.eqns)
      if (defined.insert(e.outputs[0].get()).second) g.eqns.push_back(e);
  for (const ir::Var& v : u.outvars) g.outvars.push_back(ir::Atom(v));
  g.name = name;
  return g;
}

}  // namespace

FusedKernel::FusedKernel(std::shared_ptr<KernelLibrary> lib, std::string name, GroupShape shape,
                         std::vector<bool> ring_buffers, std::vector<ir::Combine> columns)
    : lib_(std::move(lib)),
      fn_(reinterpret_cast<KernelFnPtr>(lib_->symbol(name))),
      name_(std::move(name)),
      shape_(std::move(shape)),
      ring_buffers_(std::move(ring_buffers)),
      columns_(std::move(columns)) {}

size_t FusedKernel::hash() const { return std::hash<const void*>()(reinterpret_cast<const void*>(fn_)); }

bool FusedKernel::equals(const ir::ParamObject& o) const {
  auto* k = dynamic_cast<const FusedKernel*>(&o);
  return k && k->fn_ == fn_;
}

void FusedKernel::write(ir::Writer&) const {
  throw ValueError("the compiled kernel " + name_ +
                   " is machine code loaded in this process; serialize the program before fusion (the "
                   "receiving process compiles it again)");
}

bool is_fused(const ir::Equation& e) { return e.prim == &fused_p; }

void run_fused_rows(const ir::KernelCall& c, int64_t r0, int64_t r1) { fused_rows_range(c, r0, r1); }

int64_t row_alignment(const GroupShape& shape) {
  int64_t row_points = 1;
  for (size_t d = 1; d < shape.domain.size(); ++d) row_points *= shape.domain[d];
  return row_points < kRowAlignment ? kRowAlignment : 1;
}

FusionOptions fusion_options() {
  FusionOptions o;
  o.min_elements = config::get_int(config::kFusionMinElements);
  o.max_point_cost = config::get_int(config::kFusionMaxPointCost);
  o.small_point_cost = config::get_int(config::kFusionSmallPointCost);
  o.max_outputs = std::max<int64_t>(1, config::get_int(config::kFusionMaxOutputs));
  o.stream = config::get_flag(config::kFusionStream);
  o.stream_band_bytes = config::get_int(config::kFusionStreamBandBytes);
  return o;
}

namespace {

/// The values a streamed chain may keep in a ring of rows (streaming.cpp): those that loop
/// nests compute and only other single loop nests read (no unfused equation, row-phased loop
/// nest or the program's result). Their kernels index them at their row modulo a mask; the
/// other buffers are indexed plainly (a mask costs a little in the scalar edge bodies).
VarSet ring_candidates(const ir::Program& p, const std::vector<Unit>& units) {
  VarSet computed, excluded;
  for (const ir::Atom& a : p.outvars)
    if (!a.is_literal()) excluded.insert(a.var().get());
  for (const Unit& u : units) {
    if (u.groups.size() == 1) {
      for (const ir::Atom& a : u.groups[0].outvars)
        if (!a.is_literal()) computed.insert(a.var().get());
      continue;
    }
    if (u.groups.empty()) {
      for (const ir::Atom& a : p.eqns[u.eqn].inputs)
        if (!a.is_literal()) excluded.insert(a.var().get());
    } else {
      for (const ir::Var& v : u.invars) excluded.insert(v.get());
    }
  }
  VarSet r;
  for (const ir::VarNode* v : computed)
    if (!excluded.count(v)) r.insert(v);
  return r;
}

ir::Program fuse_loop_nests(const ir::Program& p, const FusionOptions& opt) {
  Plan plan(p);
  plan_materialization(plan, opt);
  std::vector<Unit> units = phase_rows(plan, schedule(plan, opt));
  // (Also when not streaming: the same kernels, so the same bits, either way.)
  const VarSet rings = ring_candidates(p, units);
  std::string source = kernel_prelude();
  size_t k = 0;
  for (const Unit& u : units) {
    if (u.groups.empty()) continue;
    const std::string name = "tessel_fused_" + std::to_string(k++);
    source += "\n" + (u.groups.size() == 1 ? generate_kernel(u.groups[0], name, rings)
                                           : generate_row_phased_kernel(u.groups, u.invars, u.outvars, name));
  }
  if (k == 0) return p;
  std::shared_ptr<KernelLibrary> lib;
  try {
    lib = load_or_compile(source);
  } catch (const Error& e) {
    TESSEL_WARN_LOG(std::string(e.what()) + "\n'" + p.name + "' runs unfused.");
    return p;
  }
  ir::Program out = without_equations(p);
  k = 0;
  for (Unit& u : units) {
    if (u.groups.empty()) {
      out.eqns.push_back(p.eqns[u.eqn]);
      continue;
    }
    const bool phased = u.groups.size() > 1;
    auto g = std::make_shared<const ir::Program>(phased ? phased_program(u, p.name + "_fused") : std::move(u.groups[0]));
    GroupShape shape = group_shape(phased ? u.groups[0] : *g);
    if (phased) shape.kept = shape.domain.size() - 1;
    std::vector<ir::Combine> columns;  // per output, when some are column reductions
    for (size_t o = 0; o < g->outvars.size(); ++o)
      for (const ir::Equation& e : g->eqns)
        if (!g->outvars[o].is_literal() && e.outputs[0].get() == g->outvars[o].var().get() && is_column_reduction(e)) {
          columns.resize(g->outvars.size(), ir::Combine::kNone);
          columns[o] = reduction_combine(e);
        }
    auto kernel = std::make_shared<const FusedKernel>(lib, "tessel_fused_" + std::to_string(k), shape,
                                                      phased ? std::vector<bool>{} : ring_buffers(*g, rings),
                                                      std::move(columns));
    ++k;
    ir::Params params{{"program", ir::ProgramRef(g)}, {"kernel", std::shared_ptr<const ir::ParamObject>(kernel)}};
    if (phased) params.set("phases", int64_t(u.groups.size()));
    ir::Equation e{phased ? &fused_rows_p : &fused_p, {}, {}, std::move(params)};
    for (const auto& v : g->invars) e.inputs.push_back(ir::Atom(v));
    for (const auto& a : g->outvars) e.outputs.push_back(a.var());
    out.eqns.push_back(std::move(e));
  }
  TESSEL_DEBUG_LOG("fusion '" + p.name + "': " + std::to_string(p.eqns.size()) + " equations -> " +
                   std::to_string(out.eqns.size()) + " steps, " + std::to_string(k) + " generated kernels");
  return opt.stream ? stream_chains(out, opt.stream_band_bytes, opt.stream_block_rows) : out;
}

/// A column reduction of a reshape that keeps the reduced leading dimensions and regroups
/// only the kept ones (attention's heads merged back into the model dimension) reduces the
/// reshape's operand instead and reshapes its small result: the reduction then joins the
/// loop nest computing that operand (the q, k and v bias gradients sum the heads'
/// gradients where they are computed, not after the reshape, which is read again).
ir::Program reduce_before_reshapes(const ir::Program& p) {
  std::unordered_map<const ir::VarNode*, const ir::Equation*> producer;
  for (const ir::Equation& e : p.eqns)
    for (const ir::Var& o : e.outputs) producer[o.get()] = &e;
  ir::Program out = without_equations(p);
  for (const ir::Equation& e : p.eqns) {
    const ir::Equation* r = nullptr;
    if (is_column_reduction(e) && !e.inputs[0].is_literal())
      if (auto it = producer.find(e.inputs[0].var().get()); it != producer.end() && it->second->prim == &ops::reshape_p)
        r = it->second;
    const Shape reshaped = r ? e.inputs[0].aval().shape : Shape{}, operand = r ? r->inputs[0].aval().shape : Shape{};
    const size_t k = r ? e.params.get_ints("axes").size() : 0;
    if (!r || r->inputs[0].is_literal() || operand.size() <= k ||
        !std::equal(operand.begin(), operand.begin() + long(k), reshaped.begin())) {
      out.eqns.push_back(e);
      continue;
    }
    const Aval in = r->inputs[0].aval();
    const Aval small = e.prim->abstract_eval(std::span<const Aval>(&in, 1), e.params).at(0);
    ir::Equation sum{e.prim, {r->inputs[0]}, {ir::new_var(small)}, e.params};
    ir::Equation shaped{&ops::reshape_p, {ir::Atom(sum.outputs[0])}, {e.outputs[0]},
                        ir::Params{{"new_sizes", e.outputs[0]->aval.shape}}};
    out.eqns.push_back(std::move(sum));
    out.eqns.push_back(std::move(shaped));
  }
  return out;
}

}  // namespace

ir::Program fuse(const ir::Program& p, const FusionOptions& opt) {
  if (!codegen_enabled()) return p;  // (merged products would copy their slices unfused)
  ir::Program merged = p;
  if (opt.merge_products) merge_products(merged);
  return fuse_loop_nests(block_loop_steps(reduce_before_reshapes(merged), opt.min_elements), opt);
}

}  // namespace tessel::compiler
