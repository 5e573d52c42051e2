// A call's outputs: pending arrays that the hosts fill later, the checks of the results
// that fill them, and the wire format of a call's target and output specs.
#include <cstring>
#include <exception>

#include "colocated/colocated_impl.h"
#include "core/array_impl.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/sharding_rule.h"

namespace tessel::colocated::detail {

namespace ctl = distributed::controller;

// ---- specs and outputs ----

OutputTemplate::OutputTemplate(const Spec& spec)
    : aval(spec.shape, spec.dtype), local(spec.sharding.shard_shape(spec.shape), spec.dtype), sharding(spec.sharding) {
  for (const Device& d : spec.sharding.device_set()) local_devices.push_back(d.impl()->is_local() ? d.impl() : nullptr);
}

// An output array whose local pieces the call fills later; on the driver of a
// single-controller job its remote pieces are kept by `remote` under `remote_id`.
Array make_pending(const OutputTemplate& t, const std::vector<int>& remote, uint64_t remote_id) {
  std::vector<std::shared_ptr<tessel::detail::Buffer>> shards;
  shards.reserve(t.local_devices.size());
  for (auto* d : t.local_devices) shards.push_back(d ? tessel::detail::Buffer::deferred(t.local.nbytes(), d) : nullptr);
  auto out = std::make_shared<tessel::detail::ConcreteArray>(t.aval, t.sharding, t.local, std::move(shards));
  if (!remote.empty()) out->remote = ctl::make_ref(remote_id, remote);
  return Array(std::move(out));
}

namespace {

// A result tree of another structure than the one callers were given (a std::map's keys or
// a std::vector's size that changed for the same input specs).
void check_structure(const std::string& name, const std::string& got, const std::string& want) {
  if (!want.empty() && got != want)
    throw ValueError(name + ": the function returned a result of tree structure '" + got + "', but an earlier call "
                     "with the same input specs returned '" + want + "' (its callers rebuilt that one); return the "
                     "same containers, sizes and keys for the same input specs");
}

void check_results(const std::string& name, const std::vector<Array>& results, const Specs& specs) {
  if (results.size() != specs.size())
    throw ValueError(name + ": the function returned " + std::to_string(results.size()) + " arrays, but its output specs list " +
                     std::to_string(specs.size()) + "; make out_specs_fn describe every output leaf");
  for (size_t j = 0; j < results.size(); ++j) {
    const auto* c = tessel::detail::as_concrete(results[j]);  // null for empty arrays and tracers
    if (!c) throw ValueError(name + ": output " + std::to_string(j) + " is not a concrete array");
    if (c->aval.shape == specs[j].shape && c->aval.dtype == specs[j].dtype && c->sharding() == specs[j].sharding)
      continue;
    Spec got = Spec::of(results[j]);
    if (!(got == specs[j]))
      throw ValueError(name + ": output " + std::to_string(j) + " is " + got.to_string() + ", but its spec says " +
                       specs[j].to_string() + "; return arrays as out_specs_fn describes them (device_put them)");
  }
}

}  // namespace


// Gives the pending outputs the results' local pieces (or records the error there). A
// result piece held by nothing but the results (a value the function computed) gives its
// memory to the output; one held elsewhere too (an input returned as it is, a value the
// function kept) is copied.
void fill(const std::vector<Array>& pending, std::vector<Array>&& results, std::exception_ptr error) {
  for (size_t j = 0; j < pending.size(); ++j) {
    auto outs = tessel::detail::piece_buffers(pending[j]);
    std::vector<std::shared_ptr<tessel::detail::Buffer>> ins;
    if (!error) {
      ins = tessel::detail::piece_buffers(results[j]);
      results[j] = Array();  // the pieces' last holders are `ins` now, where nothing else holds them
    }
    for (size_t pos = 0; pos < outs.size(); ++pos) {
      auto& out = outs[pos];
      if (!out) continue;
      try {
        if (error) std::rethrow_exception(error);
        auto& in = ins.at(pos);
        if (!in) throw Error("internal: colocated: a result lacks a piece this process owns");
        in->wait();
        // use_count 1: `ins` holds the only reference, so nobody can read the memory taken.
        if (in.use_count() == 1 && !in->is_donated() && in->data()) {
          out->attach(in->take_memory());
        } else {
          out->attach(tessel::detail::Memory(out->nbytes()));
          if (out->nbytes()) std::memcpy(out->data(), in->data(), out->nbytes());
        }
        out->set_ready();
      } catch (...) {
        out->set_error(std::current_exception());
      }
    }
  }
}

std::vector<Array> run_checked(const std::function<Outputs()>& run, const Expected& expected, std::exception_ptr& error) {
  try {
    Outputs results = run();
    check_results(expected.name, results.leaves, expected.specs);
    check_structure(expected.name, results.structure, expected.structure);
    return std::move(results.leaves);
  } catch (...) {
    error = std::current_exception();
    return {};
  }
}

void run_and_fill(const std::function<Outputs()>& run, const std::vector<Array>& pending, const Expected& expected) {
  std::exception_ptr error;
  std::vector<Array> results = run_checked(run, expected, error);
  fill(pending, std::move(results), error);
}

// The output made of a checked result (same shape, dtype and sharding; its weak type may
// differ, and the output has the template's). Its pieces are the result's, computed or not,
// also those held elsewhere too (an input returned as it is, a value the function kept):
// buffers are never written once made, and donating one array of several sharing a buffer
// gives the donation a copy (its memory is taken only from a sole holder). Only a piece on
// another device than the output's (none, once the result was checked) is copied.
Array output_of(const OutputTemplate& t, Array&& result) {
  const auto* c = tessel::detail::as_concrete(result);
  if (!c) throw Error("internal: colocated: a checked result is not concrete");
  const bool sole = result.impl().use_count() == 1;
  // The common case, a value the function computed on the output's one device that nothing
  // else holds: it becomes the output as it is, given the output's aval (its weak type may
  // differ) and committed, as the general path below would make it (no new array, no
  // vector of pieces).
  if (sole && c->on_one_local_device() && !c->remote && t.local_devices.size() == 1 &&
      t.local_devices[0] == c->device() && c->buffer().use_count() == 1 && !c->buffer()->is_donated()) {
    auto* own = const_cast<tessel::detail::ConcreteArray*>(c);  // sole: nobody else sees it change
    own->aval = t.aval;
    own->committed = true;
    return std::move(result);
  }
  std::span<const std::shared_ptr<tessel::detail::Buffer>> pieces = c->shards();
  std::vector<std::shared_ptr<tessel::detail::Buffer>> shards(t.local_devices.size());
  for (size_t pos = 0; pos < shards.size(); ++pos) {
    if (!t.local_devices[pos]) continue;
    if (pos >= pieces.size() || !pieces[pos]) throw Error("internal: colocated: a result lacks a piece this process owns");
    const std::shared_ptr<tessel::detail::Buffer>& in = pieces[pos];
    if (!in->is_donated() && in->device() == t.local_devices[pos]) {
      shards[pos] = in;
      continue;
    }
    in->wait();
    auto copy = tessel::detail::Buffer::allocate(in->nbytes(), t.local_devices[pos]);
    if (in->nbytes()) std::memcpy(copy->data(), in->data(), in->nbytes());
    copy->set_ready();
    shards[pos] = std::move(copy);
  }
  result = Array();
  return Array(std::make_shared<tessel::detail::ConcreteArray>(t.aval, t.sharding, t.local, std::move(shards)));
}

void store_results(const std::vector<OutputTemplate>& outputs, std::span<const uint64_t> ids,
                   std::vector<Array>&& results, std::exception_ptr error) {
  for (size_t j = 0; j < ids.size(); ++j) {
    try {
      if (error) std::rethrow_exception(error);
      ctl::store(ids[j], output_of(outputs[j], std::move(results[j])));
    } catch (...) {
      ctl::store_error(ids[j], std::current_exception());
    }
  }
}

// The task that runs `run` and fills `pending` with its results, which must be as `expected`
// says (its specs, and its structure when not empty).
std::function<void()> filling(std::function<Outputs()> run, std::vector<Array> pending,
                              std::shared_ptr<const Expected> expected) {
  return [run = std::move(run), pending = std::move(pending), expected = std::move(expected)] {
    run_and_fill(run, pending, *expected);
  };
}

// ---- the target as it travels ----

void write_target(ir::Writer& w, const Target& t) {
  w.str(t.registered);
  w.boolean(t.object != nullptr);
  if (!t.object) return;
  w.u64(t.object->id());
  w.str(t.object->registered());
  w.str(t.object->ctor_bytes());
}

void write_frame(ir::Writer& w, const Specs& specs, const std::string& structure,
                 const std::vector<std::string>& arg_structures, const Target& target) {
  write_specs(w, specs);
  w.str(structure);
  w.count(arg_structures.size());
  for (auto& s : arg_structures) w.str(s);
  write_target(w, target);
}

void write_specs(ir::Writer& w, const Specs& specs) {
  w.count(specs.size());
  for (auto& s : specs) {
    ir::write_aval(w, Aval(s.shape, s.dtype));
    ir::write_sharding(w, s.sharding);
  }
}

Specs read_specs(ir::Reader& r) {
  Specs specs(r.count(8));
  for (auto& s : specs) {
    Aval a = ir::read_aval(r);
    s = Spec(a.shape, a.dtype, ir::read_sharding(r));
  }
  return specs;
}

}  // namespace tessel::colocated::detail
