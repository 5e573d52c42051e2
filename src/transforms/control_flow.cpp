// Control-flow primitives: cond (n-way, by index), while and scan, with their kernels (the
// bodies run as compiled programs inside one device task) and their transformation rules.
#include "transforms/control_flow.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "core/buffer.h"
#include "core/value_copies.h"
#include "ir/loop_steps.h"
#include "ops/rule_util.h"
#include "tessel/control_flow.h"
#include "tessel/error.h"
#include "transforms/batching.h"
#include "transforms/jvp.h"
#include "transforms/partial_eval.h"
#include "transforms/transpose.h"

namespace tessel::detail {

using ir::Params;
using ir::ProgramRef;

ProgramRef permute_inputs(const ir::Program& p, const std::vector<size_t>& order) {
  ir::Program q = p;
  q.invars.clear();
  for (size_t i : order) q.invars.push_back(p.invars[i]);
  return std::make_shared<const ir::Program>(std::move(q));
}

namespace {

ProgramRef permute_outputs(const ir::Program& p, const std::vector<size_t>& order) {
  ir::Program q = p;
  q.outvars.clear();
  for (size_t i : order) q.outvars.push_back(p.outvars[i]);
  return std::make_shared<const ir::Program>(std::move(q));
}

/// 0..n-1 split into consecutive groups of the given sizes, reordered as `groups`.
std::vector<size_t> group_order(const std::vector<size_t>& sizes, const std::vector<size_t>& groups) {
  std::vector<size_t> start(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) start[i] = start[i - 1] + sizes[i - 1];
  std::vector<size_t> order;
  for (size_t g : groups)
    for (size_t k = 0; k < sizes[g]; ++k) order.push_back(start[g] + k);
  return order;
}

/// Whether every effect of `p` (nested programs included) may repeat harmlessly — a host
/// tap's, which checkpoint replays (kRematReplay), JAX's debug effect: vmap may then run it
/// for every example under a batched predicate (examples a while_loop finished keep tapping
/// their final carry; both branches of a cond tap), as JAX does. Other effects (calls,
/// communication) must run exactly as written.
bool only_debug_effects(const ir::Program& p) {
  for (const ir::Equation& e : p.eqns) {
    if (e.prim->effects != ir::kNoEffect && !(e.prim->effects & ir::kRematReplay)) return false;
    bool nested = true;
    ir::for_each_program(e.params, [&](const ir::Program& q) { nested = nested && only_debug_effects(q); });
    if (!nested) return false;
  }
  return true;
}

std::vector<bool> valid_mask(std::span<const Array> xs) {
  std::vector<bool> m;
  for (auto& x : xs) m.push_back(x.valid());
  return m;
}

std::vector<Array> pick(std::span<const Array> xs, const std::vector<bool>& m, bool want = true) {
  std::vector<Array> r;
  for (size_t i = 0; i < xs.size(); ++i)
    if (m[i] == want) r.push_back(xs[i]);
  return r;
}

template <class T> std::vector<T> cat(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<bool> operator|(const std::vector<bool>& a, const std::vector<bool>& b) {
  std::vector<bool> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] || b[i];
  return r;
}

std::vector<Array> span_vec(std::span<const Array> xs, size_t from, size_t n) {
  return {xs.begin() + long(from), xs.begin() + long(from + n)};
}

void check_types(const std::string& op, const std::string& what, std::span<const Aval> got, std::span<const Aval> want) {
  ops::check_same_types(op, what, got, want, "make the types agree (e.g. with astype or broadcast_to)");
}

std::vector<Aval> avals_of(std::span<const Array> xs) {
  std::vector<Aval> r;
  for (auto& x : xs) r.push_back(x.aval());
  return r;
}

int64_t read_index(const ir::KernelCall& c) {
  int64_t idx = 0;
  visit_dtype(c.in_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) idx = int64_t(*c.in<T>(0));
  });
  return idx;
}

// ============================== cond ==============================

std::vector<Aval> cond_aval(std::span<const Aval> ins, const Params& params) {
  const auto& branches = params.get<std::vector<ProgramRef>>("branches");
  if (ins.empty() || branches.empty())
    throw ValueError("cond: needs a branch index operand and at least one branch, got " + std::to_string(ins.size()) +
                     " operands and " + std::to_string(branches.size()) + " branches");
  if (!is_integer(ins[0].dtype) || !ins[0].shape.empty())
    throw DTypeError("cond: the branch index must be an integer scalar, got " + ins[0].to_string());
  std::vector<Aval> out = branches[0]->out_avals();
  for (size_t b = 0; b < branches.size(); ++b) {
    check_types("cond", "operand", ins.subspan(1), branches[b]->in_avals());
    check_types("cond", "branch " + std::to_string(b) + " output", branches[b]->out_avals(), out);
  }
  return out;
}

void cond_kernel(const ir::KernelCall& c) {
  const auto& branches = c.params.get<std::vector<ProgramRef>>("branches");
  int64_t idx = std::clamp<int64_t>(read_index(c), 0, int64_t(branches.size()) - 1);
  ir::run_program(branches[size_t(idx)], c.ins.subspan(1), c.outs, c.device);
}

Params with_branches(const Params& params, std::vector<ProgramRef> b) {
  Params p = params;
  p.set("branches", std::move(b));
  return p;
}

std::vector<Array> cond_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            const Params& params) {
  const auto& branches = params.get<std::vector<ProgramRef>>("branches");
  std::vector<bool> nz = valid_mask(tangents.subspan(1));
  std::vector<bool> all(branches[0]->outvars.size(), true);
  std::vector<ProgramRef> jb;
  std::vector<bool> out_nz;
  for (auto& b : branches) {
    JvpProgram jp = jvp_program(*b, nz, all);
    jb.push_back(jp.program);
    out_nz = jp.out_nonzero;
  }
  std::vector<Array> args = cat(std::vector<Array>(primals.begin(), primals.end()), pick(tangents.subspan(1), nz));
  std::vector<Array> outs = bind(self, args, with_branches(params, jb));
  const size_t n = out_nz.size();
  std::vector<Array> r(outs.begin(), outs.begin() + long(n));
  for (size_t i = 0, k = n; i < n; ++i) r.push_back(out_nz[i] ? outs[k++] : Array());
  return r;
}

std::vector<Array> cond_partial_eval(const ir::Primitive& self, Trace& trace, std::span<const Array> ins,
                                     const Params& params) {
  auto& pe = static_cast<PartialEvalTrace&>(trace);
  const auto& branches = params.get<std::vector<ProgramRef>>("branches");
  std::span<const Array> ops = ins.subspan(1);
  std::vector<bool> unknown;
  for (auto& x : ops) unknown.push_back(pe.owns(x));
  std::vector<bool> out_u(branches[0]->outvars.size(), false);
  std::vector<SplitProgram> splits;
  for (auto& b : branches) {
    splits.push_back(partial_eval_program(*b, unknown));
    out_u = out_u | splits.back().out_unknown;
  }
  // One split for all branches: a branch that could compute an output others cannot is
  // split again with that output forced unknown.
  std::vector<std::vector<Aval>> res_avals;
  std::vector<Aval> all_res;
  for (size_t i = 0; i < branches.size(); ++i) {
    if (splits[i].out_unknown != out_u) splits[i] = partial_eval_program(*branches[i], unknown, nullptr, out_u);
    auto ko = splits[i].known->out_avals();
    res_avals.emplace_back(ko.end() - long(splits[i].num_residuals), ko.end());
    all_res = cat(all_res, res_avals.back());
  }
  std::vector<Array> known_ops = pick(ops, unknown, false), unknown_ops = pick(ops, unknown, true);
  std::vector<ProgramRef> kb, ub;
  for (size_t i = 0, offset = 0; i < branches.size(); offset += res_avals[i].size(), ++i) {
    const SplitProgram& sp = splits[i];
    // Every known branch returns the residuals of all branches (zeros for the others').
    kb.push_back(std::make_shared<const ir::Program>(trace_to_program(
        [&](std::span<const Array> xs) {
          std::vector<Array> outs = ir::eval_program(*sp.known, xs);
          std::vector<Array> r(outs.begin(), outs.end() - long(sp.num_residuals));
          for (size_t j = 0; j < branches.size(); ++j) {
            if (j == i) r = cat(r, std::vector<Array>(outs.end() - long(sp.num_residuals), outs.end()));
            else
              for (auto& a : res_avals[j]) r.push_back(zeros(a.shape, a.dtype));
          }
          return r;
        },
        avals_of(known_ops), "cond_known")));
    ub.push_back(std::make_shared<const ir::Program>(trace_to_program(
        [&](std::span<const Array> xs) {
          std::vector<Array> args = cat(span_vec(xs, offset, res_avals[i].size()),
                                        span_vec(xs, all_res.size(), xs.size() - all_res.size()));
          return ir::eval_program(*sp.unknown, args);
        },
        cat(all_res, avals_of(unknown_ops)), "cond_unknown")));
  }
  std::vector<Array> kouts = bind(self, cat({ins[0]}, known_ops), with_branches(params, kb));
  const size_t n_known = kouts.size() - all_res.size();
  std::vector<Array> uargs = cat(cat({ins[0]}, std::vector<Array>(kouts.begin() + long(n_known), kouts.end())), unknown_ops);
  std::vector<Array> uouts = pe.record(self, uargs, with_branches(params, ub)), r;
  for (size_t i = 0, k = 0, u = 0; i < out_u.size(); ++i) r.push_back(out_u[i] ? uouts[u++] : kouts[k++]);
  return r;
}

std::vector<Array> cond_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array> args,
                                  std::span<const Aval>, const Params& params) {
  const auto& branches = params.get<std::vector<ProgramRef>>("branches");
  std::span<const Array> ops = args.subspan(1);
  std::vector<bool> linear;
  for (auto& a : ops) linear.push_back(!a.valid());
  std::vector<ProgramRef> tb;
  for (auto& b : branches) tb.push_back(transpose_program(*b, linear));
  std::vector<Array> targs = cat({args[0]}, pick(ops, linear, false));
  auto out_avals = branches[0]->out_avals();
  for (size_t i = 0; i < cts.size(); ++i) targs.push_back(ops::instantiate_zeros(cts[i], out_avals[i]));
  std::vector<Array> outs = bind(self, targs, with_branches(params, tb));
  std::vector<Array> r{Array()};
  for (size_t i = 0, k = 0; i < ops.size(); ++i) r.push_back(linear[i] ? outs[k++] : Array());
  return r;
}

ir::Batched cond_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const ir::BatchAxis& axis, const Params& params) {
  const auto& branches = params.get<std::vector<ProgramRef>>("branches");
  std::vector<int64_t> op_dims(dims.begin() + 1, dims.end());
  std::vector<ProgramRef> bb;
  for (auto& b : branches) bb.push_back(batch_program(*b, op_dims, axis, {}, true).program);
  std::vector<int64_t> out_dims(branches[0]->outvars.size(), 0);
  if (dims[0] == ir::kNotBatched) return {bind(self, ins, with_branches(params, bb)), out_dims};
  // A batched predicate: run every branch and select per example (as JAX does).
  for (auto& b : branches)
    if (!only_debug_effects(*b))
      throw NotImplementedError("cond: under vmap the predicate depends on the mapped inputs, so every branch would "
                                "run; branches with side effects other than host taps (calls, io_callback, "
                                "communication) cannot be batched this way. Make the predicate unbatched or move "
                                "the effect out of the cond");
  Array idx = ops::move_batch_dim(ins[0], dims[0], 0, axis.size);
  idx = clip(idx, Array(0).astype(idx.dtype()), Array(int64_t(branches.size()) - 1).astype(idx.dtype()));
  std::vector<Array> result;
  std::vector<Array> operands(ins.begin() + 1, ins.end());
  for (size_t b = 0; b < bb.size(); ++b) {
    std::vector<Array> outs = ir::eval_program(*bb[b], operands);
    if (b == 0) {
      result = outs;
      continue;
    }
    Array take = equal(idx, Array(int64_t(b)).astype(idx.dtype()));
    for (size_t j = 0; j < outs.size(); ++j) {
      Axes d0{0};
      result[j] = where(broadcast_in_dim(take, outs[j].shape(), d0), outs[j], result[j]);
    }
  }
  return {result, out_dims};
}

// ============================== while ==============================

struct WhileParts {
  size_t cn, bn, nc;
};
WhileParts while_parts(size_t nins, const Params& p) {
  const int64_t cn = p.get_int("cond_nconsts"), bn = p.get_int("body_nconsts");
  if (cn < 0 || bn < 0 || uint64_t(cn) > nins || uint64_t(bn) > nins - uint64_t(cn))
    throw ValueError("while_loop: cond_nconsts=" + std::to_string(cn) + " and body_nconsts=" + std::to_string(bn) +
                     " do not fit the " + std::to_string(nins) + " operands");
  return {size_t(cn), size_t(bn), nins - size_t(cn) - size_t(bn)};
}

std::vector<Aval> while_aval(std::span<const Aval> ins, const Params& params) {
  auto [cn, bn, nc] = while_parts(ins.size(), params);
  const auto& cond = *params.get<ProgramRef>("cond");
  const auto& body = *params.get<ProgramRef>("body");
  std::vector<Aval> carry(ins.begin() + long(cn + bn), ins.end());
  std::vector<Aval> cin(ins.begin(), ins.begin() + long(cn)), bin(ins.begin() + long(cn), ins.begin() + long(cn + bn));
  check_types("while_loop", "cond_fun input", cat(cin, carry), cond.in_avals());
  auto co = cond.out_avals();
  if (co.size() != 1 || co[0].dtype != DType::bool_ || !co[0].shape.empty())
    throw DTypeError("while_loop: cond_fun must return one boolean scalar, got " + ops::avals_to_string(co));
  check_types("while_loop", "body_fun input", cat(bin, carry), body.in_avals());
  check_types("while_loop", "body_fun output (the new carry)", body.out_avals(), carry);
  return carry;
}

/// Where a loop's iterations read their carry and write the next one, so that no carry is
/// copied per iteration: the first iteration reads the loop's operands where they lie, and
/// the iterations then alternate between the loop's result buffers and one scratch set,
/// arranged when the trip count is known so that the last one writes the results (with it
/// unknown, a final copy out of the scratch set is needed every other trip count). A carry
/// the body returns unchanged (`kept`) stays in the operand's buffer throughout: the body's
/// program returns it in place (Executable::run_sync copies nothing onto itself), and it is
/// copied to the result once at the end.
class LoopCarry {
 public:
  /// The carry of the loop `c`: its operands from input `first` on, its results the first
  /// outputs of `c`, one per element of `kept`.
  LoopCarry(const ir::KernelCall& c, size_t first, std::vector<bool> kept, std::optional<int64_t> trips)
      : avals_(c.out_avals.subspan(0, kept.size())), kept_(std::move(kept)), trips_(trips), dev_(c.device),
        cur_(c.ins.begin() + long(first), c.ins.begin() + long(first + kept_.size())), next_(kept_.size()),
        targets_(kept_.size()) {
    for (size_t k = 0; k < kept_.size(); ++k) {
      // A result over one of the loop's operands (the executable plans none today) would be
      // overwritten while an iteration still reads that operand: use scratch memory instead.
      bool overlaps = false;
      for (size_t j = 0; j < c.ins.size(); ++j) overlaps |= ranges_overlap(c.outs[k], avals_[k], c.ins[j], c.in_avals[j]);
      targets_[k][0] = overlaps ? nullptr : c.outs[k];
      results_.push_back(c.outs[k]);
    }
  }
  /// The carry the current iteration reads.
  std::span<const void* const> reads() const { return cur_; }
  /// Where the current iteration writes the next carry.
  std::span<void* const> writes() {
    aim();
    return next_;
  }
  /// After an iteration: what it wrote becomes the carry.
  void advance() {
    std::ranges::copy(next_, cur_.begin());
    ++done_;
  }
  /// After the last iteration: copies into the results what is not there yet.
  void finish() {
    for (size_t k = 0; k < cur_.size(); ++k) {
      if (cur_[k] == results_[k] || avals_[k].nbytes() == 0) continue;
      std::memcpy(results_[k], cur_[k], avals_[k].nbytes());
      count_value_copy(avals_[k].nbytes());
    }
  }

 private:
  static bool ranges_overlap(const void* a, const Aval& av, const void* b, const Aval& bv) {
    const auto* pa = static_cast<const std::byte*>(a);
    const auto* pb = static_cast<const std::byte*>(b);
    return av.nbytes() > 0 && bv.nbytes() > 0 && pa < pb + bv.nbytes() && pb < pa + av.nbytes();
  }
  void aim() {
    // Iteration `done_` writes the results when an even number of iterations follow it:
    // targets 0 and 1 alternate, and the results are target 0.
    const size_t t = (trips_ ? *trips_ - 1 - done_ : done_) % 2 == 0 ? 0 : 1;
    for (size_t k = 0; k < cur_.size(); ++k) {
      if (kept_[k]) {
        next_[k] = const_cast<void*>(cur_[k]);
        continue;
      }
      void*& target = targets_[k][t];
      if (!target) {
        bufs_.push_back(Buffer::allocate(avals_[k].nbytes(), dev_, &avals_[k]));
        target = bufs_.back()->data();
      }
      next_[k] = target;
    }
  }
  std::span<const Aval> avals_;
  std::vector<bool> kept_;
  std::optional<int64_t> trips_;
  DeviceImpl* dev_;
  std::vector<const void*> cur_;
  std::vector<void*> next_;
  std::vector<std::array<void*, 2>> targets_;  // per carry: the results (or scratch), scratch
  std::vector<void*> results_;
  std::vector<std::shared_ptr<Buffer>> bufs_;
  int64_t done_ = 0;
};

/// Per carry of a loop body (carry k is input `first + k` and output k): whether the body
/// returns it unchanged.
std::vector<bool> kept_carries(const ir::Program& body, size_t first, size_t n) {
  std::vector<bool> kept(n, false);
  for (size_t k = 0; k < n && k < body.outvars.size(); ++k) {
    const ir::Atom& out = body.outvars[k];
    kept[k] = !out.is_literal() && out.var() == body.invars[first + k];
  }
  return kept;
}

void while_kernel(const ir::KernelCall& c) {
  auto [cn, bn, nc] = while_parts(c.ins.size(), c.params);
  const ProgramRef& cond = c.params.get<ProgramRef>("cond");
  const ProgramRef& body = c.params.get<ProgramRef>("body");
  LoopCarry carry(c, cn + bn, kept_carries(*body, bn, nc), std::nullopt);
  std::vector<const void*> cin(c.ins.begin(), c.ins.begin() + long(cn + nc)),
      bin(c.ins.begin() + long(cn), c.ins.begin() + long(cn + bn + nc));
  bool go = false;
  void* go_ptr = &go;
  for (;;) {
    std::ranges::copy(carry.reads(), cin.begin() + long(cn));
    ir::run_program(cond, cin, std::span<void* const>(&go_ptr, 1), c.device);
    if (!go) break;
    std::ranges::copy(carry.reads(), bin.begin() + long(bn));
    ir::run_program(body, bin, carry.writes(), c.device);
    carry.advance();
  }
  carry.finish();
}

Params while_params(const Params& params, ProgramRef cond, ProgramRef body, size_t cn, size_t bn) {
  Params p = params;
  p.set("cond", std::move(cond));
  p.set("body", std::move(body));
  p.set("cond_nconsts", int64_t(cn));
  p.set("body_nconsts", int64_t(bn));
  return p;
}

/// `p` taking extra trailing inputs it ignores.
ProgramRef with_unused_inputs(const ir::Program& p, std::span<const Aval> extra) {
  ir::Program q = p;
  for (auto& a : extra) q.invars.push_back(ir::new_var(a));
  return std::make_shared<const ir::Program>(std::move(q));
}

std::vector<Array> while_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                             const Params& params) {
  auto [cn, bn, nc] = while_parts(primals.size(), params);
  const auto& cond = *params.get<ProgramRef>("cond");
  const auto& body = *params.get<ProgramRef>("body");
  std::vector<bool> const_nz = valid_mask(tangents.subspan(cn, bn)), carry_nz = valid_mask(tangents.subspan(cn + bn));
  JvpProgram jp;
  for (;;) {
    jp = jvp_program(body, cat(const_nz, carry_nz), cat(std::vector<bool>(0), carry_nz));
    std::vector<bool> grown = carry_nz | jp.out_nonzero;
    if (grown == carry_nz) break;
    carry_nz = grown;
  }
  size_t ntc = 0, ntk = 0;
  for (bool b : const_nz) ntc += b;
  for (bool b : carry_nz) ntk += b;
  ProgramRef jbody = permute_inputs(*jp.program, group_order({bn, nc, ntc, ntk}, {0, 2, 1, 3}));
  std::vector<Array> carry = span_vec(primals, cn + bn, nc), tcarry;
  std::vector<Aval> tcarry_avals;
  for (size_t i = 0; i < nc; ++i)
    if (carry_nz[i]) {
      tcarry.push_back(ops::instantiate_zeros(tangents[cn + bn + i], carry[i].aval()));
      tcarry_avals.push_back(carry[i].aval());
    }
  ProgramRef jcond = with_unused_inputs(cond, tcarry_avals);
  std::vector<Array> ins = span_vec(primals, 0, cn + bn);
  ins = cat(cat(cat(ins, pick(tangents.subspan(cn, bn), const_nz)), carry), tcarry);
  std::vector<Array> outs = bind(self, ins, while_params(params, jcond, jbody, cn, bn + ntc));
  std::vector<Array> r(outs.begin(), outs.begin() + long(nc));
  for (size_t i = 0, k = nc; i < nc; ++i) r.push_back(carry_nz[i] ? outs[k++] : Array());
  return r;
}

std::vector<Array> while_partial_eval(const ir::Primitive&, Trace&, std::span<const Array>, const Params&) {
  throw NotImplementedError(
      "while_loop: reverse-mode differentiation (grad, vjp, jacrev) is not supported, because the number of "
      "iterations is not known in advance. Use fori_loop with int (static) bounds or scan, which reverse mode can "
      "differentiate, or forward mode (jvp, jacfwd)");
}

ir::Batched while_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                        const ir::BatchAxis& axis, const Params& params) {
  auto [cn, bn, nc] = while_parts(ins.size(), params);
  const auto& cond = *params.get<ProgramRef>("cond");
  const auto& body = *params.get<ProgramRef>("body");
  std::vector<int64_t> cdims(dims.begin(), dims.begin() + long(cn)), bdims(dims.begin() + long(cn), dims.begin() + long(cn + bn));
  std::vector<bool> carry_b;
  for (size_t i = 0; i < nc; ++i) carry_b.push_back(dims[cn + bn + i] != ir::kNotBatched);
  auto carry_dims = [&] {
    std::vector<int64_t> d;
    for (bool b : carry_b) d.push_back(b ? 0 : ir::kNotBatched);
    return d;
  };
  BatchedProgram bb, cb;
  for (;;) {
    bb = batch_program(body, cat(bdims, carry_dims()), axis, carry_b);
    std::vector<bool> grown = carry_b;
    for (size_t i = 0; i < nc; ++i) grown[i] = grown[i] || bb.out_dims[i] != ir::kNotBatched;
    cb = batch_program(cond, cat(cdims, carry_dims()), axis);
    if (cb.out_dims[0] != ir::kNotBatched) grown.assign(nc, true);  // a batched predicate steps every carry
    if (grown == carry_b) break;
    carry_b = grown;
  }
  std::vector<Array> carry;
  for (size_t i = 0; i < nc; ++i)
    carry.push_back(carry_b[i] ? ops::move_batch_dim(ins[cn + bn + i], dims[cn + bn + i], 0, axis.size) : ins[cn + bn + i]);
  std::vector<int64_t> out_dims = carry_dims();
  std::vector<Array> consts(ins.begin(), ins.begin() + long(cn + bn));
  if (cb.out_dims[0] == ir::kNotBatched)
    return {bind(self, cat(consts, carry), while_params(params, cb.program, bb.program, cn, bn)), out_dims};
  if (!only_debug_effects(body) || !only_debug_effects(cond))
    throw NotImplementedError("while_loop: under vmap the loop condition depends on the mapped inputs, so the body "
                              "runs for finished examples too; side effects other than host taps (host::call, "
                              "io_callback, communication) cannot be batched this way. Make the condition "
                              "unbatched, or move the effect out of the loop");
  // A batched predicate: loop while any example continues; finished examples keep their
  // carry (and their taps see it again, as in JAX).
  std::vector<Aval> cconst_avals = avals_of(span_vec(ins, 0, cn)), bconst_avals = avals_of(span_vec(ins, cn, bn)),
                    carry_avals = avals_of(carry);
  ProgramRef any_cond = std::make_shared<const ir::Program>(trace_to_program(
      [&](std::span<const Array> xs) { return std::vector<Array>{any(ir::eval_program(*cb.program, xs)[0])}; },
      cat(cconst_avals, carry_avals), "while_any"));
  ProgramRef masked_body = std::make_shared<const ir::Program>(trace_to_program(
      [&](std::span<const Array> xs) {
        std::vector<Array> cc = span_vec(xs, 0, cn), bc = span_vec(xs, cn, bn), cur = span_vec(xs, cn + bn, nc);
        Array go = ir::eval_program(*cb.program, cat(cc, cur))[0];
        std::vector<Array> next = ir::eval_program(*bb.program, cat(bc, cur));
        for (size_t i = 0; i < nc; ++i) next[i] = where(broadcast_in_dim(go, next[i].shape(), {0}), next[i], cur[i]);
        return next;
      },
      cat(cat(cconst_avals, bconst_avals), carry_avals), "while_masked_body"));
  std::vector<Array> new_ins = cat(cat(span_vec(ins, 0, cn), consts), carry);
  return {bind(self, new_ins, while_params(params, any_cond, masked_body, cn, cn + bn)), out_dims};
}

// ============================== scan ==============================

struct ScanParts {
  size_t nconsts, ncarry, nxs;
  int64_t length;
  bool reverse;
};
ScanParts scan_parts(size_t nins, const Params& p) {
  const int64_t nc = p.get_int("num_consts"), nk = p.get_int("num_carry"), length = p.get_int("length");
  if (nc < 0 || nk < 0 || uint64_t(nc) > nins || uint64_t(nk) > nins - uint64_t(nc) || length < 0)
    throw ValueError("scan: num_consts=" + std::to_string(nc) + ", num_carry=" + std::to_string(nk) + " and length=" +
                     std::to_string(length) + " do not fit the " + std::to_string(nins) + " operands");
  return {size_t(nc), size_t(nk), nins - size_t(nc) - size_t(nk), length, p.get<bool>("reverse")};
}

Aval unstacked(const Aval& a) {
  Aval r = a;
  r.shape.erase(r.shape.begin());
  return r;
}
Aval stacked(const Aval& a, int64_t n) {
  Aval r = a;
  r.shape.insert(r.shape.begin(), n);
  return r;
}

std::vector<Aval> scan_aval(std::span<const Aval> ins, const Params& params) {
  ScanParts s = scan_parts(ins.size(), params);
  const auto& body = *params.get<ProgramRef>("program");
  std::vector<Aval> want(ins.begin(), ins.begin() + long(s.nconsts + s.ncarry));
  for (size_t i = s.nconsts + s.ncarry; i < ins.size(); ++i) {
    if (ins[i].shape.empty() || ins[i].shape[0] != s.length)
      throw ShapeError("scan: xs leaf " + std::to_string(i - s.nconsts - s.ncarry) + " has shape " +
                       ins[i].to_string() + " but the scan has length " + std::to_string(s.length) +
                       "; every xs leaf needs a leading axis of that length");
    want.push_back(unstacked(ins[i]));
  }
  check_types("scan", "body input", want, body.in_avals());
  auto outs = body.out_avals();
  std::vector<Aval> carry(ins.begin() + long(s.nconsts), ins.begin() + long(s.nconsts + s.ncarry));
  check_types("scan", "body carry output", std::span<const Aval>(outs).subspan(0, std::min(s.ncarry, outs.size())),
              carry);
  std::vector<Aval> r = carry;
  for (size_t i = s.ncarry; i < outs.size(); ++i) r.push_back(stacked(outs[i], s.length));
  return r;
}

void scan_kernel(const ir::KernelCall& c) {
  ScanParts s = scan_parts(c.ins.size(), c.params);
  const ProgramRef& body = c.params.get<ProgramRef>("program");
  LoopCarry carry(c, s.nconsts, kept_carries(*body, s.nconsts, s.ncarry), s.length);
  std::vector<const void*> in(c.ins.begin(), c.ins.end());
  std::vector<void*> out(c.outs.begin(), c.outs.end());
  const size_t ny = c.outs.size() - s.ncarry;
  for (int64_t step = 0; step < s.length; ++step) {
    int64_t i = s.reverse ? s.length - 1 - step : step;
    std::ranges::copy(carry.reads(), in.begin() + long(s.nconsts));
    std::ranges::copy(carry.writes(), out.begin());
    for (size_t k = 0; k < s.nxs; ++k) {
      size_t idx = s.nconsts + s.ncarry + k;
      size_t slice = c.in_avals[idx].nbytes() / size_t(s.length);
      in[idx] = static_cast<const char*>(c.ins[idx]) + size_t(i) * slice;
    }
    for (size_t k = 0; k < ny; ++k) {
      size_t slice = c.out_avals[s.ncarry + k].nbytes() / size_t(s.length);
      out[s.ncarry + k] = static_cast<char*>(c.outs[s.ncarry + k]) + size_t(i) * slice;
    }
    ir::run_program(body, in, out, c.device);
    carry.advance();
  }
  carry.finish();
}

Params scan_params(const Params& params, ProgramRef body, size_t nconsts, size_t ncarry, std::optional<bool> reverse = {}) {
  Params p = params;
  p.set("program", std::move(body));
  p.set("num_consts", int64_t(nconsts));
  p.set("num_carry", int64_t(ncarry));
  if (reverse) p.set("reverse", *reverse);
  return p;
}

size_t count(const std::vector<bool>& m) {
  size_t n = 0;
  for (bool b : m) n += b;
  return n;
}

std::vector<Array> scan_jvp(const ir::Primitive& self, std::span<const Array> primals, std::span<const Array> tangents,
                            const Params& params) {
  ScanParts s = scan_parts(primals.size(), params);
  const auto& body = *params.get<ProgramRef>("program");
  std::vector<bool> const_nz = valid_mask(tangents.subspan(0, s.nconsts)),
                    carry_nz = valid_mask(tangents.subspan(s.nconsts, s.ncarry)),
                    xs_nz = valid_mask(tangents.subspan(s.nconsts + s.ncarry));
  JvpProgram jp;
  for (;;) {
    jp = jvp_program(body, cat(cat(const_nz, carry_nz), xs_nz), carry_nz);
    std::vector<bool> out_carry(jp.out_nonzero.begin(), jp.out_nonzero.begin() + long(s.ncarry));
    std::vector<bool> grown = carry_nz | out_carry;
    if (grown == carry_nz) break;
    carry_nz = grown;
  }
  size_t ntc = count(const_nz), ntk = count(carry_nz), ntx = count(xs_nz);
  size_t ny = body.outvars.size() - s.ncarry;
  std::vector<bool> ys_nz(jp.out_nonzero.begin() + long(s.ncarry), jp.out_nonzero.end());
  size_t nty = count(ys_nz);
  ProgramRef jb = permute_inputs(*jp.program, group_order({s.nconsts, s.ncarry, s.nxs, ntc, ntk, ntx}, {0, 3, 1, 4, 2, 5}));
  jb = permute_outputs(*jb, group_order({s.ncarry, ny, ntk, nty}, {0, 2, 1, 3}));
  std::vector<Array> carry = span_vec(primals, s.nconsts, s.ncarry), tcarry;
  for (size_t i = 0; i < s.ncarry; ++i)
    if (carry_nz[i]) tcarry.push_back(ops::instantiate_zeros(tangents[s.nconsts + i], carry[i].aval()));
  std::vector<Array> ins = cat(span_vec(primals, 0, s.nconsts), pick(tangents.subspan(0, s.nconsts), const_nz));
  ins = cat(cat(cat(ins, carry), tcarry), span_vec(primals, s.nconsts + s.ncarry, s.nxs));
  ins = cat(ins, pick(tangents.subspan(s.nconsts + s.ncarry), xs_nz));
  std::vector<Array> outs = bind(self, ins, scan_params(params, jb, s.nconsts + ntc, s.ncarry + ntk));
  std::vector<Array> r = span_vec(outs, 0, s.ncarry);
  r = cat(r, span_vec(outs, s.ncarry + ntk, ny));
  for (size_t i = 0, k = s.ncarry; i < s.ncarry; ++i) r.push_back(carry_nz[i] ? outs[k++] : Array());
  for (size_t i = 0, k = s.ncarry + ntk + ny; i < ny; ++i) r.push_back(ys_nz[i] ? outs[k++] : Array());
  return r;
}

std::vector<Array> scan_partial_eval(const ir::Primitive& self, Trace& trace, std::span<const Array> ins,
                                     const Params& params) {
  auto& pe = static_cast<PartialEvalTrace&>(trace);
  ScanParts s = scan_parts(ins.size(), params);
  const auto& body = *params.get<ProgramRef>("program");
  std::vector<bool> unknown;
  for (auto& x : ins) unknown.push_back(pe.owns(x));
  const size_t ny = body.outvars.size() - s.ncarry;
  SplitProgram sp;
  for (;;) {
    std::vector<bool> force(unknown.begin() + long(s.nconsts), unknown.begin() + long(s.nconsts + s.ncarry));
    force.resize(s.ncarry + ny, false);
    sp = partial_eval_program(body, unknown, nullptr, force);
    bool grown = false;
    for (size_t i = 0; i < s.ncarry; ++i)
      if (sp.out_unknown[i] && !unknown[s.nconsts + i]) unknown[s.nconsts + i] = grown = true;
    if (!grown) break;
  }
  auto part = [&](size_t from, size_t n, bool want) {
    return pick(span_vec(ins, from, n), std::vector<bool>(unknown.begin() + long(from), unknown.begin() + long(from + n)), want);
  };
  std::vector<Array> kc = part(0, s.nconsts, false), kk = part(s.nconsts, s.ncarry, false),
                     kx = part(s.nconsts + s.ncarry, s.nxs, false);
  std::vector<Array> uc = part(0, s.nconsts, true), uk = part(s.nconsts, s.ncarry, true),
                     ux = part(s.nconsts + s.ncarry, s.nxs, true);
  // Known scan: its residuals leave as extra stacked outputs.
  std::vector<Array> kouts = bind(self, cat(cat(kc, kk), kx), scan_params(params, sp.known, kc.size(), kk.size()));
  const size_t nres = sp.num_residuals;
  std::vector<Array> res(kouts.end() - long(nres), kouts.end());
  // Unknown scan: body inputs (residuals, consts, carry, xs) -> (consts, carry, residuals, xs).
  ProgramRef ub = permute_inputs(*sp.unknown, group_order({nres, uc.size(), uk.size(), ux.size()}, {1, 2, 0, 3}));
  std::vector<Array> uouts = pe.record(self, cat(cat(cat(uc, uk), res), ux), scan_params(params, ub, uc.size(), uk.size()));
  std::vector<Array> r;
  for (size_t i = 0, k = 0, u = 0; i < sp.out_unknown.size(); ++i) r.push_back(sp.out_unknown[i] ? uouts[u++] : kouts[k++]);
  return r;
}

std::vector<Array> scan_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array> args,
                                  std::span<const Aval>, const Params& params) {
  ScanParts s = scan_parts(args.size(), params);
  const auto& body = *params.get<ProgramRef>("program");
  std::vector<bool> const_lin = valid_mask(args.subspan(0, s.nconsts)), xs_lin = valid_mask(args.subspan(s.nconsts + s.ncarry));
  const_lin.flip();
  xs_lin.flip();
  const size_t ny = body.outvars.size() - s.ncarry;
  std::vector<Aval> body_in = body.in_avals(), body_out = body.out_avals();
  std::vector<Aval> res_c, lin_c, res_x, lin_x;
  for (size_t i = 0; i < s.nconsts; ++i) (const_lin[i] ? lin_c : res_c).push_back(body_in[i]);
  for (size_t i = 0; i < s.nxs; ++i) (xs_lin[i] ? lin_x : res_x).push_back(body_in[s.nconsts + s.ncarry + i]);
  std::vector<Aval> carry_avals(body_in.begin() + long(s.nconsts), body_in.begin() + long(s.nconsts + s.ncarry));
  std::vector<Aval> ct_y_avals(body_out.begin() + long(s.ncarry), body_out.end());
  // Transposed body: (residual consts, [const ct sums, carry ct], [residual xs, ys ct]) ->
  //                  ([const ct sums], carry ct), xs ct.
  auto tbody = std::make_shared<const ir::Program>(trace_to_program(
      [&](std::span<const Array> v) {
        size_t o = 0;
        std::vector<Array> rc = span_vec(v, o, res_c.size()), acc, ctk, rx, cty;
        o += res_c.size();
        acc = span_vec(v, o, lin_c.size()), o += lin_c.size();
        ctk = span_vec(v, o, s.ncarry), o += s.ncarry;
        rx = span_vec(v, o, res_x.size()), o += res_x.size();
        cty = span_vec(v, o, ny);
        std::vector<Array> bargs(body.invars.size());
        for (size_t i = 0, a = 0; i < s.nconsts; ++i)
          if (!const_lin[i]) bargs[i] = rc[a++];
        for (size_t i = 0, a = 0; i < s.nxs; ++i)
          if (!xs_lin[i]) bargs[s.nconsts + s.ncarry + i] = rx[a++];
        std::vector<Array> in_cts = backward_pass(body, bargs, cat(ctk, cty)), out;
        for (size_t i = 0, a = 0; i < s.nconsts; ++i)
          if (const_lin[i]) {
            out.push_back(ops::add_tangents(acc[a], in_cts[i]));
            ++a;
          }
        for (size_t i = 0; i < s.ncarry; ++i)
          out.push_back(ops::instantiate_zeros(in_cts[s.nconsts + i], carry_avals[i]));
        for (size_t i = 0; i < s.nxs; ++i)
          if (xs_lin[i]) out.push_back(ops::instantiate_zeros(in_cts[s.nconsts + s.ncarry + i], body_in[s.nconsts + s.ncarry + i]));
        return out;
      },
      cat(cat(cat(cat(res_c, lin_c), carry_avals), res_x), ct_y_avals), "transpose_" + body.name));
  std::vector<Array> ins = pick(args.subspan(0, s.nconsts), const_lin, false);
  for (auto& a : lin_c) ins.push_back(zeros(a.shape, a.dtype));
  for (size_t i = 0; i < s.ncarry; ++i) ins.push_back(ops::instantiate_zeros(cts[i], carry_avals[i]));
  ins = cat(ins, pick(args.subspan(s.nconsts + s.ncarry), xs_lin, false));
  for (size_t i = 0; i < ny; ++i) ins.push_back(ops::instantiate_zeros(cts[s.ncarry + i], stacked(ct_y_avals[i], s.length)));
  std::vector<Array> outs = bind(self, ins, scan_params(params, tbody, res_c.size(), lin_c.size() + s.ncarry, !s.reverse));
  std::vector<Array> r;
  for (size_t i = 0, a = 0; i < s.nconsts; ++i) r.push_back(const_lin[i] ? outs[a++] : Array());
  for (size_t i = 0; i < s.ncarry; ++i) r.push_back(args[s.nconsts + i].valid() ? Array() : outs[lin_c.size() + i]);
  for (size_t i = 0, a = lin_c.size() + s.ncarry; i < s.nxs; ++i) r.push_back(xs_lin[i] ? outs[a++] : Array());
  return r;
}

ir::Batched scan_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const ir::BatchAxis& axis, const Params& params) {
  ScanParts s = scan_parts(ins.size(), params);
  const auto& body = *params.get<ProgramRef>("program");
  std::vector<int64_t> cdims(dims.begin(), dims.begin() + long(s.nconsts)), xdims;
  std::vector<bool> carry_b;
  for (size_t i = 0; i < s.ncarry; ++i) carry_b.push_back(dims[s.nconsts + i] != ir::kNotBatched);
  for (size_t i = 0; i < s.nxs; ++i) xdims.push_back(dims[s.nconsts + s.ncarry + i] == ir::kNotBatched ? ir::kNotBatched : 0);
  BatchedProgram bp;
  for (;;) {
    std::vector<int64_t> kd;
    for (bool b : carry_b) kd.push_back(b ? 0 : ir::kNotBatched);
    bp = batch_program(body, cat(cat(cdims, kd), xdims), axis, carry_b);
    std::vector<bool> grown = carry_b;
    for (size_t i = 0; i < s.ncarry; ++i) grown[i] = grown[i] || bp.out_dims[i] != ir::kNotBatched;
    if (grown == carry_b) break;
    carry_b = grown;
  }
  std::vector<Array> args(ins.begin(), ins.begin() + long(s.nconsts));
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < s.ncarry; ++i) {
    const Array& x = ins[s.nconsts + i];
    args.push_back(carry_b[i] ? ops::move_batch_dim(x, dims[s.nconsts + i], 0, axis.size) : x);
    out_dims.push_back(carry_b[i] ? 0 : ir::kNotBatched);
  }
  for (size_t i = 0; i < s.nxs; ++i) {
    size_t k = s.nconsts + s.ncarry + i;
    args.push_back(dims[k] == ir::kNotBatched ? ins[k] : ops::move_batch_dim(ins[k], dims[k], 1, axis.size));
  }
  for (size_t i = s.ncarry; i < bp.out_dims.size(); ++i) out_dims.push_back(bp.out_dims[i] == 0 ? 1 : ir::kNotBatched);
  return {bind(self, args, scan_params(params, bp.program, s.nconsts, s.ncarry)), out_dims};
}

// ============================== regions (ir/regions.h) ==============================

ir::Regions cond_regions(size_t nins, const Params& params) {
  ir::Regions r;
  for (const ProgramRef& b : params.get<std::vector<ProgramRef>>("branches")) {
    ir::Region g{b, {}, {}};
    for (size_t i = 1; i < nins; ++i) g.inputs.push_back({ir::Port::kOperand, i});
    for (size_t j = 0; j < b->outvars.size(); ++j) g.outputs.push_back({ir::Port::kResult, j});
    r.regions.push_back(std::move(g));
  }
  r.with_programs = [](const Params& p, const std::vector<ProgramRef>& progs) { return with_branches(p, progs); };
  return r;
}

ir::Regions while_regions(size_t nins, const Params& params) {
  auto [cn, bn, nc] = while_parts(nins, params);
  ir::Regions r;
  ir::Region cond{params.get<ProgramRef>("cond"), {}, {{ir::Port::kPredicate, 0}}};
  ir::Region body{params.get<ProgramRef>("body"), {}, {}};
  for (size_t i = 0; i < cn; ++i) cond.inputs.push_back({ir::Port::kOperand, i});
  for (size_t i = 0; i < bn; ++i) body.inputs.push_back({ir::Port::kOperand, cn + i});
  for (size_t j = 0; j < nc; ++j) {
    cond.inputs.push_back({ir::Port::kCarry, j});
    body.inputs.push_back({ir::Port::kCarry, j});
    body.outputs.push_back({ir::Port::kCarry, j});
    r.carries.push_back({cn + bn + j, j});
  }
  r.regions = {std::move(cond), std::move(body)};
  r.with_programs = [](const Params& p, const std::vector<ProgramRef>& progs) {
    Params q = p;
    q.set("cond", progs[0]);
    q.set("body", progs[1]);
    return q;
  };
  return r;
}

ir::Regions scan_regions(size_t nins, const Params& params) {
  ScanParts s = scan_parts(nins, params);
  const ProgramRef& body = params.get<ProgramRef>("program");
  ir::Regions r;
  ir::Region g{body, {}, {}};
  for (size_t i = 0; i < s.nconsts; ++i) g.inputs.push_back({ir::Port::kOperand, i});
  for (size_t j = 0; j < s.ncarry; ++j) {
    g.inputs.push_back({ir::Port::kCarry, j});
    g.outputs.push_back({ir::Port::kCarry, j});
    r.carries.push_back({s.nconsts + j, j});
  }
  for (size_t k = 0; k < s.nxs; ++k) g.inputs.push_back({ir::Port::kOperandSlice, s.nconsts + s.ncarry + k});
  for (size_t k = s.ncarry; k < body->outvars.size(); ++k) g.outputs.push_back({ir::Port::kResultSlice, k});
  r.regions = {std::move(g)};
  r.with_programs = [](const Params& p, const std::vector<ProgramRef>& progs) {
    Params q = p;
    q.set("program", progs[0]);
    return q;
  };
  return r;
}

}  // namespace

const ir::Primitive& cond_p = ir::register_primitive({
    .name = "cond",
    .arity = {1, -1},
    .abstract_eval = cond_aval,
    .cpu_kernel = cond_kernel,
    .jvp_with_primals = cond_jvp,
    .transpose = cond_transpose,
    .batch = cond_batch,
    .partial_eval = cond_partial_eval,
    .regions = cond_regions,
});

const ir::Primitive& while_p = ir::register_primitive({
    .name = "while",
    .abstract_eval = while_aval,
    .cpu_kernel = while_kernel,
    .jvp_with_primals = while_jvp,
    .batch = while_batch,
    .partial_eval = while_partial_eval,
    .regions = while_regions,
});

const ir::Primitive& scan_p = ir::register_primitive({
    .name = "scan",
    .abstract_eval = scan_aval,
    .cpu_kernel = scan_kernel,
    .jvp_with_primals = scan_jvp,
    .transpose = scan_transpose,
    .batch = scan_batch,
    .partial_eval = scan_partial_eval,
    .regions = scan_regions,
});

// A forward scan runs its body `length` times in order (temporal blocking unrolls it).
[[maybe_unused]] const bool scan_steps_registered = ir::register_loop_steps(
    scan_p, {.steps = [](const Params& p) { return p.get<bool>("reverse") ? int64_t(-1) : p.get_int("length"); },
             .with_steps = [](const Params& p, int64_t steps) {
               Params q = p;
               q.set("length", steps);
               return q;
             }});

// ============================== public entry points ==============================

namespace {

struct Traced {
  ProgramRef program;
  std::vector<Array> captured;  // tracers the function closed over (leading inputs)
};

Traced trace_body(const FlatFn& fn, std::span<const Aval> avals, const std::string& name) {
  ir::Program p = trace_to_program(fn, avals, name);
  Traced t;
  t.program = std::make_shared<const ir::Program>(ir::hoist_tracer_consts(p, t.captured));
  return t;
}

std::vector<Aval> strong_avals(std::span<const Array> xs) {
  std::vector<Aval> r;
  for (auto& x : xs) r.push_back(Aval(x.shape(), x.dtype()));
  return r;
}

}  // namespace

std::vector<Array> cond_flat(const Array& index, std::span<const FlatFn> branches, std::span<const Array> operands) {
  if (!index.valid() || index.ndim() != 0)
    throw ShapeError("cond: the predicate / index must be a scalar, got " +
                     (index.valid() ? index.aval().to_string() : std::string("an empty Array")));
  Array idx;
  if (index.dtype() == DType::bool_) idx = astype(index, DType::int32);
  else if (is_integer(index.dtype())) idx = index;
  else
    throw DTypeError("cond: the predicate must be a bool (or the switch index an integer) scalar, got " +
                     index.aval().to_string());
  std::vector<Aval> avals = strong_avals(operands);
  std::vector<Traced> traced;
  std::vector<Aval> cap_avals;
  for (size_t b = 0; b < branches.size(); ++b) {
    traced.push_back(trace_body(branches[b], avals, "branch" + std::to_string(b)));
    for (auto& c : traced.back().captured) cap_avals.push_back(c.aval());
  }
  // Every branch takes every branch's captured values, then the operands.
  std::vector<ProgramRef> progs;
  std::vector<Array> ins{idx};
  size_t offset = 0;
  for (auto& t : traced) {
    ir::Program q = *t.program;
    std::vector<ir::Var> inv;
    for (size_t j = 0; j < cap_avals.size(); ++j)
      inv.push_back(j >= offset && j < offset + t.captured.size() ? q.invars[j - offset] : ir::new_var(cap_avals[j]));
    inv.insert(inv.end(), q.invars.begin() + long(t.captured.size()), q.invars.end());
    q.invars = inv;
    offset += t.captured.size();
    ins = cat(ins, t.captured);
    progs.push_back(std::make_shared<const ir::Program>(std::move(q)));
  }
  auto out0 = progs[0]->out_avals();
  for (size_t b = 1; b < progs.size(); ++b)
    check_types("cond", "branch " + std::to_string(b) + " output", progs[b]->out_avals(), out0);
  ins = cat(ins, std::vector<Array>(operands.begin(), operands.end()));
  return bind(cond_p, ins, Params{{"branches", progs}});
}

std::vector<Array> while_flat(const FlatFn& cond, const FlatFn& body, std::span<const Array> init) {
  std::vector<Aval> avals = strong_avals(init);
  Traced c = trace_body(cond, avals, "cond_fun"), b = trace_body(body, avals, "body_fun");
  auto co = c.program->out_avals();
  if (co.size() != 1 || co[0].dtype != DType::bool_ || !co[0].shape.empty())
    throw DTypeError("while_loop: cond_fun must return one boolean scalar, got " + ops::avals_to_string(co) +
                     "; compare to get a bool (e.g. i < n)");
  check_types("while_loop", "body_fun output (the new carry)", b.program->out_avals(), avals);
  std::vector<Array> ins = cat(cat(c.captured, b.captured), std::vector<Array>(init.begin(), init.end()));
  for (size_t i = 0; i < init.size(); ++i)
    if (init[i].weak_type()) ins[c.captured.size() + b.captured.size() + i] = astype(init[i], init[i].dtype());
  return bind(while_p, ins,
              Params{{"cond", c.program}, {"body", b.program}, {"cond_nconsts", int64_t(c.captured.size())},
                     {"body_nconsts", int64_t(b.captured.size())}});
}

DType fori_index_dtype(const Array& lower, const Array& upper) {
  if (!lower.valid() || !upper.valid()) throw ValueError("fori_loop: a loop bound is an empty Array; give it a value");
  const DType lo = lower.dtype(), hi = upper.dtype();
  if (lo == hi) return lo;
  // As in JAX: a weak signed integer (a C++ literal) takes the other bound's signed type.
  if (is_signed_int(lo) && is_signed_int(hi) && lower.weak_type() != upper.weak_type())
    return lower.weak_type() ? hi : lo;
  throw DTypeError(std::string("fori_loop: the lower and upper bounds must have the same dtype, got ") +
                   dtype_name(lo) + (lower.weak_type() ? " (weak)" : "") + " and " + dtype_name(hi) +
                   (upper.weak_type() ? " (weak)" : "") +
                   "; give both bounds as integers (C++ integers, or integer Arrays of one dtype), or convert one "
                   "with astype");
}

std::vector<Array> scan_flat(const FlatFn& body, std::span<const Array> init, std::span<const Array> xs,
                             std::optional<int64_t> length, bool reverse) {
  if (length && *length < 0)
    throw ValueError("scan: length must be >= 0, got " + std::to_string(*length) +
                     "; pass the number of steps (0 runs none and returns the initial carry)");
  int64_t n = -1;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].ndim() == 0)
      throw ShapeError("scan: xs leaf " + std::to_string(i) + " is a scalar; xs leaves need a leading axis to scan over");
    if (n >= 0 && xs[i].dim(0) != n)
      throw ShapeError("scan: xs leaves have different leading sizes, " + std::to_string(n) + " and " +
                       std::to_string(xs[i].dim(0)) + " (leaf " + std::to_string(i) + ")");
    n = xs[i].dim(0);
  }
  if (length && n >= 0 && *length != n)
    throw ShapeError("scan: length is " + std::to_string(*length) + " but the xs have leading size " + std::to_string(n));
  if (n < 0) {
    if (!length) throw ValueError("scan: there are no xs, so the number of steps is unknown; pass {.length = n}");
    n = *length;
  }
  std::vector<Aval> avals = strong_avals(init);
  for (auto& x : xs) avals.push_back(unstacked(Aval(x.shape(), x.dtype())));
  Traced b = trace_body(body, avals, "scan_body");
  auto outs = b.program->out_avals();
  if (outs.size() < init.size())
    throw ValueError("scan: the body returned fewer arrays than the carry has");
  check_types("scan", "body carry output", std::span<const Aval>(outs).subspan(0, init.size()), strong_avals(init));
  std::vector<Array> ins = b.captured;
  for (auto& x : init) ins.push_back(x.weak_type() ? astype(x, x.dtype()) : x);
  ins = cat(ins, std::vector<Array>(xs.begin(), xs.end()));
  return bind(scan_p, ins,
              Params{{"program", b.program}, {"num_consts", int64_t(b.captured.size())},
                     {"num_carry", int64_t(init.size())}, {"length", n}, {"reverse", reverse}});
}

}  // namespace tessel::detail
