// Executables and their buffer plan.
//
// The plan is made once, when the executable is built. A buffer belongs to a run when it
// is an intermediate or a donated argument's; when such a buffer dies (its last reader ran)
// and it is not a program output, its memory is free for the run to reuse:
//  - in place: a step whose primitive declares it (Primitive::inplace) writes its output
//    into an input that dies at that very step (scatter onto a dead operand skips the copy);
//  - by size: a later output of the same allocator size class takes the memory.
// Memory nobody takes goes back to the allocator where it died. Constants, literals,
// arguments that are not donated and program outputs are never written or reused.
// Donation is decided per call: an argument's array passed once is invalidated, and its
// memory is the run's if the run holds the only reference to the buffer when it starts;
// otherwise the steps planned onto it get fresh memory.
#include "compiler/executable.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "compiler/fused_kernel.h"
#include "compiler/jit_entry.h"
#include "core/buffer.h"
#include "core/value_copies.h"
#include "core/config.h"
#include "core/log.h"
#include "ir/loop_steps.h"
#include "runtime/launch.h"
#include "tessel/error.h"

namespace tessel::compiler {

using detail::Buffer;
using detail::Memory;

struct Executable::RunState {
  explicit RunState(size_t n) : ptr(n, nullptr), owned(n), direct(n, nullptr), attach(n, nullptr) {}
  std::vector<void*> ptr;             // by slot: where its data is
  std::vector<Memory> owned;          // by slot: memory the run owns (intermediates, donated inputs)
  std::vector<void*> direct;          // by slot: caller memory an output is written to (run_sync)
  std::vector<Buffer*> attach;        // by slot: the output buffer that receives its memory (run)
};

Executable::Executable(std::shared_ptr<const ir::Program> program, std::vector<int> donated)
    : program_(std::move(program)), donated_(std::move(donated)) {
  const ir::Program& p = *program_;
  donated_.resize(p.invars.size(), -1);
  std::unordered_map<const ir::VarNode*, int> slot_of;
  auto add_slot = [&](SlotKind k, const Aval& av) {
    slot_kind_.push_back(k);
    slot_aval_.push_back(av);
    const_buffer_.emplace_back();
    const_arrays_.emplace_back();
    return int(slot_kind_.size() - 1);
  };
  for (auto& v : p.invars) slot_of[v.get()] = add_slot(SlotKind::kInput, v->aval);
  for (size_t i = 0; i < p.constvars.size(); ++i) {
    const auto* c = detail::require_concrete(p.consts[i], "jit (constant)");
    int s = add_slot(SlotKind::kConst, p.constvars[i]->aval);
    const_buffer_[size_t(s)] = c->buffer();
    const_arrays_[size_t(s)] = p.consts[i];
    slot_of[p.constvars[i].get()] = s;
  }
  auto slot_for = [&](const ir::Atom& a) {
    if (!a.is_literal()) return slot_of.at(a.var().get());
    Array lit = detail::scalar_array(a.literal(), a.aval().weak_type);
    int s = add_slot(SlotKind::kConst, a.aval());
    const_buffer_[size_t(s)] = detail::as_concrete(lit)->buffer();
    const_arrays_[size_t(s)] = lit;
    return s;
  };
  // Saturating: a while loop of unknown steps counts as all the work there is.
  auto add_work = [this](size_t bytes) { work_bytes_ = ir::add_work_bytes(work_bytes_, bytes); };
  for (const ir::Equation& e : p.eqns) {
    if (!e.prim->cpu_kernel)
      throw NotImplementedError("jit: primitive '" + e.prim->name +
                                "' has no CPU kernel, so it cannot run inside a compiled program");
    Step st{e.prim, {}, {}, {}, {}, &e.params};
    for (auto& a : e.inputs) {
      st.ins.push_back(slot_for(a));
      st.in_avals.push_back(a.aval());
      add_work(a.aval().nbytes());
    }
    for (auto& o : e.outputs) {
      int s = add_slot(SlotKind::kIntermediate, o->aval);
      slot_of[o.get()] = s;
      st.outs.push_back(s);
      st.out_avals.push_back(o->aval);
      add_work(o->aval.nbytes());
    }
    add_work(ir::nested_work_bytes(*e.prim, e.inputs.size(), e.params));  // a loop's steps
    steps_.push_back(std::move(st));
  }
  const size_t n = slot_kind_.size();
  last_use_.assign(n, -1);
  for (size_t i = 0; i < steps_.size(); ++i)
    for (int s : steps_[i].ins) last_use_[size_t(s)] = int(i);
  is_output_.assign(n, 0);
  for (auto& a : p.outvars) {
    if (a.is_literal()) {
      outputs_.push_back(Output{-1, a.literal(), a.aval().weak_type});
    } else {
      int s = slot_of.at(a.var().get());
      outputs_.push_back(Output{s, Scalar(), false});
      is_output_[size_t(s)] = 1;
    }
  }
  plan_run_ = make_plan(true);
  plan_sync_ = make_plan(false);
  if (config::get_flag(config::kOverlapExchange)) {
    overlap_run_ = make_overlap(plan_run_);
    overlap_sync_ = make_overlap(plan_sync_);
  }
}

// Overlapping a halo exchange with the rows that do not need it: a collective_permute is
// posted (its rows copied out or sent), the steps after it that do not read what it
// receives run, and so do the rows of the first loop nest that reads it which read none of
// the received rows (the interior of a piece, codegen's rows_without_reads); then the
// permute finishes and the loop nest's edge rows run. Slices and reshapes of the received
// message are postponed to that point. Each device thus waits for its neighbour only after
// its own interior, so devices may drift apart by that much work without waiting. The
// schedule only reorders work between the plan's steps; a step whose memory plan would
// touch a buffer still in use (a take or release of a received or postponed value) or
// that may communicate (an effect, a nested program) finishes the permutes first. Other
// collectives never run while a permute is pending (the process-group contract).
std::vector<Executable::OverlapStep> Executable::make_overlap(const std::vector<StepPlan>& plan) const {
  const ir::Program& p = *program_;
  std::vector<OverlapStep> how(steps_.size());
  std::vector<char> late(slot_kind_.size(), 0), guarded(slot_kind_.size(), 0);
  bool open = false, any = false;
  auto close = [&] {
    std::fill(late.begin(), late.end(), 0);
    std::fill(guarded.begin(), guarded.end(), 0);
    open = false;
  };
  for (size_t t = 0; t < steps_.size(); ++t) {
    const Step& st = steps_[t];
    const StepPlan& sp = plan[t];
    // A take of guarded memory would overwrite it before the flush; a release would free it
    // (except where the step itself runs at or after the flush: a postponed or split step).
    bool takes_guarded = false, releases_guarded = false, reads_late = false;
    for (int r : sp.take) takes_guarded |= r >= 0 && guarded[size_t(r)];
    for (int r : sp.release) releases_guarded |= bool(guarded[size_t(r)]);
    const bool conflict = takes_guarded || releases_guarded;
    for (int s : st.ins) reads_late |= bool(late[size_t(s)]);
    const bool quiet = st.prim->effects == ir::kNoEffect && !st.prim->regions && !st.prim->comm_bytes &&
                       !st.prim->inlinable_call;
    if (st.prim->post) {
      if (conflict || reads_late) {
        how[t].how = Overlap::kFlush;
        close();
        continue;  // (a permute of received rows waits for them, then runs whole)
      }
      how[t].how = Overlap::kStart;
      open = any = true;
      for (int s : st.outs) late[size_t(s)] = guarded[size_t(s)] = 1;
      continue;
    }
    if (!open) continue;
    if (quiet && reads_late && st.prim->fusion == ir::FusionKind::kShape) {
      // A slice or reshape of the message runs at the flush, after the postponed steps
      // before it, so its memory plan (a take of their memory, in place or not) holds.
      how[t].how = Overlap::kDefer;
      for (int s : st.ins) guarded[size_t(s)] = 1;
      for (int s : st.outs) late[size_t(s)] = guarded[size_t(s)] = 1;
      continue;
    }
    if (!quiet || takes_guarded || (!reads_late && releases_guarded)) {
      how[t].how = Overlap::kFlush;
      close();
      continue;
    }
    if (!reads_late) continue;  // runs while the permutes are on their way
    std::vector<char> in_late;
    for (int s : st.ins) in_late.push_back(late[size_t(s)]);
    bool in_place = false;
    for (char c : sp.in_place) in_place |= bool(c);
    if (!in_place) {
      if (auto split = split_rows(p.eqns[t], in_late)) {
        how[t] = {Overlap::kSplit, split->begin, split->end, split->rows, std::move(in_late)};
        close();
        continue;
      }
    }
    how[t].how = Overlap::kFlush;
    close();
  }
  // A window from a post to its flush in which nothing runs early (no step in between, no
  // split at its end) gains nothing: it runs as written.
  size_t first = 0;
  bool in_window = false, useful = false;
  auto settle = [&](size_t end, bool closer_useful) {  // true: the window was demoted
    const bool demote = in_window && !useful && !closer_useful;
    if (demote)
      for (size_t u = first; u < end; ++u) how[u].how = Overlap::kRun;
    in_window = useful = false;
    return demote;
  };
  for (size_t t = 0; t < how.size(); ++t) {
    switch (how[t].how) {
      case Overlap::kStart:
        if (!in_window) first = t, in_window = true;
        break;
      case Overlap::kDefer: break;
      case Overlap::kRun: useful |= in_window; break;
      case Overlap::kSplit: settle(t, true); break;
      case Overlap::kFlush: {
        const bool was_open = in_window;
        if (settle(t, false) || !was_open) how[t].how = Overlap::kRun;  // nothing posted to wait for
        break;
      }
    }
  }
  settle(how.size(), false);
  any = false;
  for (const OverlapStep& o : how) any |= o.how != Overlap::kRun;
  if (!any) return {};
  return how;
}

bool Executable::reusable(size_t s) const {
  if (is_output_[s]) return false;
  return slot_kind_[s] == SlotKind::kIntermediate || (slot_kind_[s] == SlotKind::kInput && donated_[s] >= 0);
}

std::vector<Executable::StepPlan> Executable::make_plan(bool outputs_own_memory) const {
  const size_t n = slot_kind_.size();
  auto size_class = [&](int s) { return detail::allocator_size_class(slot_aval_[size_t(s)].nbytes()); };
  std::map<size_t, std::vector<int>> pool;  // dead slots by size class, last died at the back
  std::vector<char> taken(n, 0);
  std::vector<int> died_at(n, -2);  // the step after which a slot's memory is free (-1: from the start)
  auto dies = [&](int s, int t) {
    pool[size_class(s)].push_back(s);
    died_at[size_t(s)] = t;
  };
  for (size_t s = 0; s < n; ++s)
    if (slot_kind_[s] == SlotKind::kInput && reusable(s) && last_use_[s] < 0) dies(int(s), -1);
  std::vector<StepPlan> plan(steps_.size());
  for (size_t t = 0; t < steps_.size(); ++t) {
    const Step& st = steps_[t];
    StepPlan& sp = plan[t];
    sp.take.assign(st.outs.size(), -1);
    sp.in_place.assign(st.outs.size(), 0);
    for (size_t k = 0; k < st.outs.size(); ++k) {
      const int s = st.outs[k];
      if (!outputs_own_memory && is_output_[size_t(s)]) continue;  // written into the caller's memory
      if (st.prim->inplace) {
        for (size_t j : st.prim->inplace(k, st.in_avals, st.out_avals, *st.params)) {
          const int r = st.ins[j];
          if (!reusable(size_t(r)) || last_use_[size_t(r)] != int(t) || taken[size_t(r)] ||
              std::count(st.ins.begin(), st.ins.end(), r) != 1 ||
              slot_aval_[size_t(r)].nbytes() != slot_aval_[size_t(s)].nbytes())
            continue;
          sp.take[k] = r;
          sp.in_place[k] = 1;
          taken[size_t(r)] = 1;
          break;
        }
      }
      if (sp.take[k] >= 0) continue;
      auto it = pool.find(size_class(s));
      if (it == pool.end() || it->second.empty()) continue;
      sp.take[k] = it->second.back();
      it->second.pop_back();
      taken[size_t(sp.take[k])] = 1;
    }
    for (int r : st.ins)
      if (reusable(size_t(r)) && last_use_[size_t(r)] == int(t) && !taken[size_t(r)] && died_at[size_t(r)] == -2)
        dies(r, int(t));
    for (int s : st.outs)
      if (reusable(size_t(s)) && last_use_[size_t(s)] < 0) dies(s, int(t));
  }
  // Memory nobody takes goes back where it died.
  for (size_t s = 0; s < n; ++s)
    if (died_at[s] != -2 && !taken[s] && !plan.empty()) plan[size_t(std::max(died_at[s], 0))].release.push_back(int(s));
  return plan;
}

std::vector<Array> Executable::run(std::span<const Array> args, const RunOptions& options) const {
  const ir::Program& p = *program_;
  if (args.size() != p.invars.size())
    throw ValueError(p.name + ": the compiled program takes " + std::to_string(p.invars.size()) + " arrays, got " +
                     std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].aval_ref().same_type(p.invars[i]->aval))
      throw ShapeError(p.name + ": argument " + std::to_string(i) + " has type " + args[i].aval().to_string() +
                       " but the program was compiled for " + p.invars[i]->aval.to_string());
  std::vector<detail::ConcreteArray*> cs;
  for (const Array& a : args) {
    detail::require_concrete(a, "jit");  // (on one local device here; throws if donated)
    cs.push_back(detail::as_concrete(a));
  }
  detail::DeviceImpl* dev = options.device ? options.device : detail::result_device(p.name, args);
  bool committed = options.commit_outputs;
  for (auto* c : cs) committed |= c->committed;

  // Donation: the array gives its buffer to this run and is left holding a marker that
  // makes every later use throw. The run reuses the memory only if, when it starts, it
  // holds the buffer alone: not if another array shares it, a program keeps it as a
  // constant, or an operation still reading it has not finished.
  std::vector<std::shared_ptr<Buffer>> in_bufs(args.size());
  std::vector<char> donated(args.size(), 0);
  for (size_t i = 0; i < args.size(); ++i) {
    auto* c = cs[i];
    // An array passed twice is not donated (one of its uses is not donated).
    bool twice = false;
    for (size_t j = 0; j < args.size() && donated_[i] >= 0; ++j) twice |= j != i && args[j].impl() == args[i].impl();
    if (donated_[i] < 0 || twice) {
      in_bufs[i] = c->buffer();
      continue;
    }
    donated[i] = 1;
    const std::shared_ptr<Buffer>& own = c->buffer();
    in_bufs[i] = c->exchange_buffer(Buffer::donated(
        own->nbytes(), own->device(), [program = program_, aval = c->aval, argnum = donated_[i]] {
          return "this array (" + aval.to_string() + ") was donated to jit '" + program->name + "' (argument " +
                 std::to_string(argnum) + " is in donate_argnums), so its buffer may hold other values now and it "
                 "cannot be used any more. To keep using it, leave the argument out of donate_argnums, or donate a "
                 "copy and keep the original";
        }));
  }
  // Output buffers exist before the computation runs, so handles return at once; their
  // memory is attached by the step that computes them.
  std::vector<Array> outs(outputs_.size());
  std::vector<std::shared_ptr<Buffer>> slot_out(slot_kind_.size());
  std::vector<std::shared_ptr<Buffer>> fresh;
  std::vector<Array> donated_out(args.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Output& o = outputs_[i];
    if (o.slot < 0) {
      outs[i] = detail::scalar_array(o.literal, o.weak);
      continue;
    }
    size_t s = size_t(o.slot);
    switch (slot_kind_[s]) {
      case SlotKind::kInput:
        if (!donated[s]) {
          outs[i] = args[s];
        } else {  // a donated argument returned as it is: a new array takes over its buffer
          if (!donated_out[s].valid())
            donated_out[s] = detail::make_concrete(cs[s]->aval, in_bufs[s]->device(), in_bufs[s], cs[s]->committed);
          outs[i] = donated_out[s];
        }
        break;
      case SlotKind::kConst: outs[i] = const_arrays_[s]; break;
      case SlotKind::kIntermediate:
        if (!slot_out[s]) {
          slot_out[s] = Buffer::deferred(slot_aval_[s].nbytes(), dev);
          fresh.push_back(slot_out[s]);
        }
        outs[i] = detail::make_concrete(slot_aval_[s], dev, slot_out[s], committed);
        break;
    }
  }
  if (steps_.empty()) return outs;
  auto self = shared_from_this();
  auto task = [self, dev, in_bufs = std::move(in_bufs), donated = std::move(donated), slot_out = std::move(slot_out),
               fresh = std::move(fresh), context = options.context]() {
    try {
      std::optional<detail::ScopedSpmdContext> scope;
      if (context) scope.emplace(context.get());
      RunState rs(self->slot_kind_.size());
      for (size_t i = 0; i < in_bufs.size(); ++i) {
        in_bufs[i]->wait();
        rs.ptr[i] = in_bufs[i]->data();
        // Nobody can take a new reference to a donated buffer (its array let go of it), so
        // a count of one stays one: this run owns the memory.
        if (donated[i] && self->reusable(i) && in_bufs[i].use_count() == 1 && in_bufs[i]->device() == dev) {
          std::atomic_thread_fence(std::memory_order_acquire);  // after the last reader let go
          rs.owned[i] = in_bufs[i]->take_memory();
        }
      }
      for (size_t s = 0; s < slot_out.size(); ++s)
        if (slot_out[s]) rs.attach[s] = slot_out[s].get();
      self->run_steps(rs, self->plan_run_, dev);
      for (auto& b : fresh) b->set_ready();
    } catch (...) {
      for (auto& b : fresh) b->set_error(std::current_exception());
    }
  };
  TESSEL_DEBUG_LOG("run '" + p.name + "' (" + std::to_string(steps_.size()) + " steps) on cpu:" +
                   std::to_string(dev->id()));
  detail::run_on_stream(dev, work_bytes_, std::move(task));
  return outs;
}

void Executable::allocate_outputs(RunState& rs, size_t t, const StepPlan& sp, detail::DeviceImpl* dev,
                                  std::vector<void*>& outs) const {
  const Step& st = steps_[t];
  outs.clear();
  for (size_t k = 0; k < st.outs.size(); ++k) {
    const size_t s = size_t(st.outs[k]);
    if (rs.direct[s]) {
      rs.ptr[s] = rs.direct[s];
    } else {
      const size_t nbytes = slot_aval_[s].nbytes();
      const int r = sp.take[k];
      // The planned memory may be missing: a donated argument that was not donatable.
      Memory m = r >= 0 && rs.owned[size_t(r)] && rs.owned[size_t(r)].capacity() >= nbytes
                     ? std::move(rs.owned[size_t(r)])
                     : Memory::for_value(nbytes, dev, &slot_aval_[s]);
      if (rs.attach[s]) {
        rs.attach[s]->attach(std::move(m));
        rs.ptr[s] = rs.attach[s]->data();
      } else {
        rs.owned[s] = std::move(m);
        rs.ptr[s] = rs.owned[s].data();
      }
    }
    outs.push_back(rs.ptr[s]);
  }
}

void Executable::run_step(RunState& rs, size_t t, const StepPlan& sp, detail::DeviceImpl* dev) const {
  const Step& st = steps_[t];
  std::vector<void*> outs;
  allocate_outputs(rs, t, sp, dev, outs);
  std::vector<const void*> ins;
  for (int s : st.ins) ins.push_back(rs.ptr[size_t(s)]);
  st.prim->cpu_kernel(ir::KernelCall{st.in_avals, ins, st.out_avals, outs, *st.params, dev});
  for (int s : sp.release) rs.owned[size_t(s)].reset();
}

void Executable::run_steps(RunState& rs, const std::vector<StepPlan>& plan, detail::DeviceImpl* dev) const {
  for (size_t s = 0; s < slot_kind_.size(); ++s)
    if (const_buffer_[s]) {
      const_buffer_[s]->wait();
      rs.ptr[s] = const_buffer_[s]->data();
    }
  const std::vector<OverlapStep>& overlap = &plan == &plan_run_ ? overlap_run_ : overlap_sync_;
  if (overlap.empty()) {
    for (size_t t = 0; t < steps_.size(); ++t) run_step(rs, t, plan[t], dev);
    return;
  }
  std::vector<std::function<void()>> started;  // the second halves of posted exchanges
  std::vector<size_t> postponed;
  std::vector<int> held;  // memory of posted exchanges' outputs the plan releases at once
  auto flush = [&] {
    for (const std::function<void()>& finish : started) finish();
    started.clear();
    for (int s : held) rs.owned[size_t(s)].reset();
    held.clear();
    for (size_t t : postponed) run_step(rs, t, plan[t], dev);
    postponed.clear();
  };
  // Inputs still on their way point here while a split loop nest runs the rows that do not
  // read them (a valid address: nothing is read from it).
  alignas(64) static const std::byte kNothing[64] = {};
  std::vector<void*> outs;
  std::vector<const void*> ins;
  for (size_t t = 0; t < steps_.size(); ++t) {
    const Step& st = steps_[t];
    const OverlapStep& o = overlap[t];
    switch (o.how) {
      case Overlap::kRun: run_step(rs, t, plan[t], dev); break;
      case Overlap::kFlush:
        flush();
        run_step(rs, t, plan[t], dev);
        break;
      case Overlap::kDefer: postponed.push_back(t); break;
      case Overlap::kStart: {
        allocate_outputs(rs, t, plan[t], dev, outs);
        ins.clear();
        for (int s : st.ins) ins.push_back(rs.ptr[size_t(s)]);
        started.push_back(st.prim->post(ir::KernelCall{st.in_avals, ins, st.out_avals, outs, *st.params, dev}));
        for (int s : plan[t].release) {
          if (std::find(st.outs.begin(), st.outs.end(), s) != st.outs.end()) held.push_back(s);  // written at the flush
          else rs.owned[size_t(s)].reset();
        }
        break;
      }
      case Overlap::kSplit: {
        allocate_outputs(rs, t, plan[t], dev, outs);
        ins.clear();
        for (size_t j = 0; j < st.ins.size(); ++j) {
          const void* ptr = rs.ptr[size_t(st.ins[j])];
          ins.push_back(o.late[j] || !ptr ? static_cast<const void*>(kNothing) : ptr);
        }
        run_step_rows(*st.prim, ir::KernelCall{st.in_avals, ins, st.out_avals, outs, *st.params, dev}, o.begin, o.end);
        flush();
        ins.clear();
        for (int s : st.ins) ins.push_back(rs.ptr[size_t(s)]);
        const ir::KernelCall c{st.in_avals, ins, st.out_avals, outs, *st.params, dev};
        run_step_rows(*st.prim, c, 0, o.begin);
        run_step_rows(*st.prim, c, o.end, o.rows);
        for (int s : plan[t].release) rs.owned[size_t(s)].reset();
        break;
      }
    }
  }
  flush();
}

void Executable::run_sync(std::span<const void* const> ins, std::span<void* const> outs,
                          detail::DeviceImpl* dev) const {
  RunState rs(slot_kind_.size());
  for (size_t i = 0; i < ins.size(); ++i) rs.ptr[i] = const_cast<void*>(ins[i]);
  // Intermediate outputs are computed in place; the rest (inputs, constants, literals,
  // repeated outputs) are copied after the steps.
  std::vector<bool> copied(outputs_.size(), true);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    int s = outputs_[i].slot;
    if (s >= 0 && slot_kind_[size_t(s)] == SlotKind::kIntermediate && !rs.direct[size_t(s)]) {
      rs.direct[size_t(s)] = outs[i];
      copied[i] = false;
    }
  }
  run_steps(rs, plan_sync_, dev);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!copied[i]) continue;
    const Output& o = outputs_[i];
    if (o.slot < 0) {
      Array lit = detail::scalar_array(o.literal, o.weak);
      std::memcpy(outs[i], detail::as_concrete(lit)->buffer()->data(), lit.nbytes());
      detail::count_value_copy(lit.nbytes());
    } else if (outs[i] != rs.ptr[size_t(o.slot)]) {
      // (An input returned into its own buffer stays: a loop's carry the body keeps.)
      std::memcpy(outs[i], rs.ptr[size_t(o.slot)], slot_aval_[size_t(o.slot)].nbytes());
      detail::count_value_copy(slot_aval_[size_t(o.slot)].nbytes());
    }
  }
}

namespace {
/// Whether `p` (or a program nested in it) exchanges halo rows: only then can its
/// executable overlap anything.
bool has_permute(const ir::Program& p) {
  for (const ir::Equation& e : p.eqns) {
    if (e.prim->post) return true;
    bool nested = false;
    ir::for_each_program(e.params, [&](const ir::Program& q) { nested = nested || has_permute(q); });
    if (nested) return true;
  }
  return false;
}
}  // namespace

// Which exchanges are posted early and which rows run before the wait, here and in the
// nested programs' executables (a fori_loop's body overlaps in every iteration).
void Executable::overlap_lines(std::ostream& lines, const std::string& prefix) const {
  for (size_t t = 0; t < overlap_run_.size(); ++t) {
    const OverlapStep& o = overlap_run_[t];
    const std::string step = prefix + "step " + std::to_string(t) + " (" + steps_[t].prim->name + "): ";
    switch (o.how) {
      case Overlap::kRun: break;
      case Overlap::kStart: lines << step << "posted; the steps after it run until its rows are needed\n"; break;
      case Overlap::kDefer: lines << step << "postponed until the exchange finishes (reads received rows)\n"; break;
      case Overlap::kFlush: lines << step << "waits for the posted exchanges first\n"; break;
      case Overlap::kSplit: {
        std::string edges;
        if (o.begin > 0) edges = "[0, " + std::to_string(o.begin) + ")";
        if (o.end < o.rows) edges += (edges.empty() ? "[" : " and [") + std::to_string(o.end) + ", " + std::to_string(o.rows) + ")";
        lines << step << "interior rows [" << o.begin << ", " << o.end << ") of " << o.rows
              << " run while the exchange is in flight; edge rows " << edges << " after it finishes\n";
        break;
      }
    }
  }
  for (size_t t = 0; t < steps_.size(); ++t) {
    if (!steps_[t].params) continue;
    const std::string step = prefix + "step " + std::to_string(t) + " (" + steps_[t].prim->name + ") ";
    auto nested = [&](const std::string& name, const ir::ProgramRef& q) {
      if (q && has_permute(*q)) detail::call_executable(q)->overlap_lines(lines, step + name + ": ");
    };
    for (const auto& [key, v] : steps_[t].params->items()) {
      if (auto* r = std::get_if<ir::ProgramRef>(&v)) nested(key, *r);
      if (auto* rs = std::get_if<std::vector<ir::ProgramRef>>(&v))
        for (size_t i = 0; i < rs->size(); ++i) nested(key + "[" + std::to_string(i) + "]", (*rs)[i]);
    }
  }
}

std::string Executable::to_text(const ir::EquationNote& note) const {
  const size_t n = slot_kind_.size();
  size_t n_in = 0, n_const = 0, n_mid = 0, live = 0, peak = 0, n_in_place = 0, n_reused = 0;
  for (auto k : slot_kind_) {
    n_in += k == SlotKind::kInput;
    n_const += k == SlotKind::kConst;
    n_mid += k == SlotKind::kIntermediate;
  }
  // What each slot is, for the plan's lines; bytes of run-owned memory each slot holds.
  std::vector<std::string> what(n);
  for (size_t s = 0; s < n && slot_kind_[s] == SlotKind::kInput; ++s)
    what[s] = "program input " + std::to_string(s) +
              (donated_[s] >= 0 ? " (donated argument " + std::to_string(donated_[s]) + ")" : "");
  std::vector<size_t> held(n, 0);
  std::ostringstream lines;
  for (size_t t = 0; t < steps_.size(); ++t) {
    const Step& st = steps_[t];
    const StepPlan& sp = plan_run_[t];
    for (size_t k = 0; k < st.outs.size(); ++k) {
      const size_t s = size_t(st.outs[k]);
      what[s] = "step " + std::to_string(t) + " output " + std::to_string(k);
      const int r = sp.take[k];
      if (r < 0) {
        held[s] = st.out_avals[k].nbytes();
        live += held[s];
        continue;
      }
      std::swap(held[s], held[size_t(r)]);
      if (sp.in_place[k]) {
        ++n_in_place;
        const auto j = std::find(st.ins.begin(), st.ins.end(), r) - st.ins.begin();
        lines << "#   step " << t << " (" << st.prim->name << "): output " << k << " written in place into input " << j
              << " (" << what[size_t(r)] << ")\n";
      } else {
        ++n_reused;
        lines << "#   step " << t << " (" << st.prim->name << "): output " << k << " reuses the memory of "
              << what[size_t(r)] << "\n";
      }
    }
    peak = std::max(peak, live);
    for (int s : sp.release) {
      live -= held[size_t(s)];
      held[size_t(s)] = 0;
    }
  }
  overlap_lines(lines, "#   ");
  std::ostringstream os;
  os << "# executable '" << program_->name << "' on cpu: " << steps_.size() << " kernel steps, " << n_in
     << " inputs, " << n_const << " constants, " << n_mid << " intermediate buffers, peak " << peak
     << " bytes live, " << n_in_place << " steps in place, " << n_reused << " buffers reused\n"
     << lines.str() << ir::print_program(*program_, note);
  return os.str();
}

}  // namespace tessel::compiler
