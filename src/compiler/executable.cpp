#include "compiler/executable.h"

#include <cstring>
#include <sstream>
#include <unordered_map>

#include "core/log.h"
#include "runtime/launch.h"
#include "tessel/error.h"

namespace tessel::compiler {

using detail::Buffer;

Executable::Executable(std::shared_ptr<const ir::Program> program) : program_(std::move(program)) {
  const ir::Program& p = *program_;
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
    auto* c = detail::require_concrete(p.consts[i], "jit (constant)");
    int s = add_slot(SlotKind::kConst, p.constvars[i]->aval);
    const_buffer_[size_t(s)] = c->buffer;
    const_arrays_[size_t(s)] = p.consts[i];
    slot_of[p.constvars[i].get()] = s;
  }
  auto slot_for = [&](const ir::Atom& a) {
    if (!a.is_literal()) return slot_of.at(a.var().get());
    Array lit = detail::scalar_array(a.literal(), a.aval().weak_type);
    int s = add_slot(SlotKind::kConst, a.aval());
    const_buffer_[size_t(s)] = detail::as_concrete(lit)->buffer;
    const_arrays_[size_t(s)] = lit;
    return s;
  };
  std::vector<int> last_use;
  for (const ir::Equation& e : p.eqns) {
    if (!e.prim->cpu_kernel)
      throw NotImplementedError("jit: primitive '" + e.prim->name +
                                "' has no CPU kernel, so it cannot run inside a compiled program");
    Step st{e.prim, {}, {}, {}, {}, &e.params, {}};
    for (auto& a : e.inputs) {
      st.ins.push_back(slot_for(a));
      st.in_avals.push_back(a.aval());
    }
    for (auto& o : e.outputs) {
      int s = add_slot(SlotKind::kIntermediate, o->aval);
      slot_of[o.get()] = s;
      st.outs.push_back(s);
      st.out_avals.push_back(o->aval);
      work_bytes_ += o->aval.nbytes();
    }
    steps_.push_back(std::move(st));
  }
  last_use.assign(slot_kind_.size(), -1);
  for (size_t i = 0; i < steps_.size(); ++i)
    for (int s : steps_[i].ins) last_use[size_t(s)] = int(i);
  for (size_t s = 0; s < slot_kind_.size(); ++s)
    if (slot_kind_[s] == SlotKind::kIntermediate && last_use[s] >= 0) steps_[size_t(last_use[s])].release.push_back(int(s));
  for (auto& a : p.outvars) {
    if (a.is_literal()) outputs_.push_back(Output{-1, a.literal(), a.aval().weak_type});
    else outputs_.push_back(Output{slot_of.at(a.var().get()), Scalar(), false});
  }
}

std::vector<Array> Executable::run(std::span<const Array> args) const {
  const ir::Program& p = *program_;
  if (args.size() != p.invars.size())
    throw ValueError(p.name + ": the compiled program takes " + std::to_string(p.invars.size()) + " arrays, got " +
                     std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (!args[i].aval_ref().same_type(p.invars[i]->aval))
      throw ShapeError(p.name + ": argument " + std::to_string(i) + " has type " + args[i].aval().to_string() +
                       " but the program was compiled for " + p.invars[i]->aval.to_string());
  detail::DeviceImpl* dev = detail::result_device(p.name, args);
  bool committed = false;
  std::vector<std::shared_ptr<Buffer>> in_bufs;
  for (const Array& a : args) {
    auto* c = detail::require_concrete(a, "jit");
    committed |= c->committed;
    in_bufs.push_back(c->buffer);
  }
  // Output buffers exist before the computation runs, so handles return at once.
  std::vector<Array> outs(outputs_.size());
  std::vector<std::shared_ptr<Buffer>> slot_out(slot_kind_.size());
  std::vector<std::shared_ptr<Buffer>> fresh;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Output& o = outputs_[i];
    if (o.slot < 0) {
      outs[i] = detail::scalar_array(o.literal, o.weak);
      continue;
    }
    size_t s = size_t(o.slot);
    switch (slot_kind_[s]) {
      case SlotKind::kInput: outs[i] = args[s]; break;
      case SlotKind::kConst: outs[i] = const_arrays_[s]; break;
      case SlotKind::kIntermediate:
        if (!slot_out[s]) {
          slot_out[s] = Buffer::allocate(slot_aval_[s].nbytes(), dev);
          fresh.push_back(slot_out[s]);
        }
        outs[i] = detail::make_concrete(slot_aval_[s], dev, slot_out[s], committed);
        break;
    }
  }
  if (steps_.empty()) return outs;
  auto self = shared_from_this();
  auto task = [self, dev, in_bufs = std::move(in_bufs), slot_out = std::move(slot_out), fresh = std::move(fresh)]() {
    try {
      std::vector<void*> ptr(self->slot_kind_.size(), nullptr), direct(self->slot_kind_.size(), nullptr);
      for (size_t i = 0; i < in_bufs.size(); ++i) {
        in_bufs[i]->wait();
        ptr[i] = in_bufs[i]->data();
      }
      for (size_t s = 0; s < slot_out.size(); ++s)
        if (slot_out[s]) direct[s] = slot_out[s]->data();
      self->run_steps(ptr, direct, dev);
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

void Executable::run_steps(std::vector<void*>& ptr, const std::vector<void*>& direct, detail::DeviceImpl* dev) const {
  const size_t n = slot_kind_.size();
  std::vector<std::shared_ptr<Buffer>> held(n);
  std::vector<const void*> ins;
  std::vector<void*> outs;
  for (size_t s = 0; s < n; ++s)
    if (const_buffer_[s]) {
      const_buffer_[s]->wait();
      ptr[s] = const_buffer_[s]->data();
    }
  for (const Step& st : steps_) {
    ins.clear();
    outs.clear();
    for (int s : st.ins) ins.push_back(ptr[size_t(s)]);
    for (int s : st.outs) {
      if (!direct[size_t(s)]) {
        held[size_t(s)] = Buffer::allocate(slot_aval_[size_t(s)].nbytes(), dev);
        ptr[size_t(s)] = held[size_t(s)]->data();
      } else {
        ptr[size_t(s)] = direct[size_t(s)];
      }
      outs.push_back(ptr[size_t(s)]);
    }
    st.prim->cpu_kernel(ir::KernelCall{st.in_avals, ins, st.out_avals, outs, *st.params, dev});
    for (int s : st.release) held[size_t(s)].reset();
  }
}

void Executable::run_sync(std::span<const void* const> ins, std::span<void* const> outs, detail::DeviceImpl* dev) const {
  const size_t n = slot_kind_.size();
  std::vector<void*> ptr(n, nullptr), direct(n, nullptr);
  for (size_t i = 0; i < ins.size(); ++i) ptr[i] = const_cast<void*>(ins[i]);
  // Intermediate outputs are computed in place; the rest (inputs, constants, literals,
  // repeated outputs) are copied after the steps.
  std::vector<bool> copied(outputs_.size(), true);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    int s = outputs_[i].slot;
    if (s >= 0 && slot_kind_[size_t(s)] == SlotKind::kIntermediate && !direct[size_t(s)]) {
      direct[size_t(s)] = outs[i];
      copied[i] = false;
    }
  }
  run_steps(ptr, direct, dev);
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!copied[i]) continue;
    const Output& o = outputs_[i];
    if (o.slot < 0) {
      Array lit = detail::scalar_array(o.literal, o.weak);
      std::memcpy(outs[i], detail::as_concrete(lit)->buffer->data(), lit.nbytes());
    } else {
      std::memcpy(outs[i], ptr[size_t(o.slot)], slot_aval_[size_t(o.slot)].nbytes());
    }
  }
}

std::string Executable::to_text() const {
  size_t n_in = 0, n_const = 0, n_mid = 0, live = 0, peak = 0;
  for (auto k : slot_kind_) {
    n_in += k == SlotKind::kInput;
    n_const += k == SlotKind::kConst;
    n_mid += k == SlotKind::kIntermediate;
  }
  for (const Step& st : steps_) {
    for (size_t i = 0; i < st.outs.size(); ++i) live += st.out_avals[i].nbytes();
    peak = std::max(peak, live);
    for (int s : st.release) live -= slot_aval_[size_t(s)].nbytes();
  }
  std::ostringstream os;
  os << "# executable '" << program_->name << "' on cpu: " << steps_.size() << " kernel steps, " << n_in
     << " inputs, " << n_const << " constants, " << n_mid << " intermediate buffers, peak " << peak
     << " bytes live\n"
     << ir::print_program(*program_);
  return os.str();
}

}  // namespace tessel::compiler
