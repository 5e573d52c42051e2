// The host-callback primitives (include/tessel/host.h, docs/host_callbacks.md):
//
//   host_tap[callback, transforms, device_index, per_example](leaves...) -> token bool[0]
//       hands host copies of the leaves to the callback on the device's receiver thread
//       (src/runtime/host_callbacks.cpp); the device goes on at once.
//   host_call[callback, results](leaves...) -> results...        (side effect, ordered)
//   host_io_call[callback, results](leaves...) -> results...     (side effect)
//   host_pure_call[callback, results](leaves...) -> results...   (pure: dropped when unused)
//       run the callback on the device's stream, after the device's earlier taps, and
//       copy its results (checked against `results`: avals and tree structure) into the
//       computation. A call without results returns a token bool[0], as a tap does.
//
// Rules: a tap passes only primal values (jvp: zero tangent for its token; partial
// evaluation runs it with the primal computation), and under vmap taps the batched values
// once, recording ("batch", batch_dims) in its transforms — or, `per_example`
// (debug::print, debug::callback, like jax.debug), once per example. A tap's effect may
// repeat (kRematReplay), so vmap runs it under a batched while_loop or cond predicate too
// (transforms/control_flow.cpp). A call has no
// derivative (the error names custom_jvp/custom_vjp) and under vmap calls the host once
// per batch element.
// Under a sharded jit (`spmd` rules) the operands are gathered whole and only the mesh's
// device `device_index` calls back; a call's result reaches the other devices by a sum in
// which they contribute zeros.
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>

#include "core/array_format.h"
#include "core/array_impl.h"
#include "core/buffer.h"
#include "core/device_impl.h"
#include "core/dtype_check.h"
#include "core/log.h"
#include "ir/serialize.h"
#include "ops/op_util.h"
#include "ops/collectives.h"
#include "ops/rule_util.h"
#include "runtime/host_callbacks.h"
#include "tessel/host.h"
#include "tessel/ops.h"
#include "tessel/sharding.h"

namespace tessel::host {

std::string Transform::to_string() const {
  std::string s = "('" + name + "', {'batch_dims': (";
  for (size_t i = 0; i < batch_dims.size(); ++i) {
    if (i) s += ", ";
    s += batch_dims[i] ? std::to_string(*batch_dims[i]) : "None";
  }
  return s + (batch_dims.size() == 1 ? ",)})" : ")})");
}

std::string to_string(const Transforms& transforms) {
  std::string s = "[";
  for (size_t i = 0; i < transforms.size(); ++i) s += (i ? ", " : "") + transforms[i].to_string();
  return s + "]";
}

namespace detail {
namespace {

using ir::KernelCall;
using ir::Params;

// ---- parameters ----

/// The user's callback, compared by identity (two binds of one id_tap are one callback).
class CallbackParam final : public ir::ParamObject {
 public:
  CallbackParam(std::string name, LeafTap tap, LeafCall call, bool with_device)
      : name(std::move(name)), tap(std::move(tap)), call(std::move(call)), with_device(with_device) {}
  size_t hash() const override { return std::hash<const void*>()(this); }
  bool equals(const ir::ParamObject& o) const override { return this == &o; }
  std::string to_string() const override { return name; }
  void write(ir::Writer&) const override {
    ir::throw_closure_param("the host callback '" + name + "'",
                            "run programs with host callbacks in the process that traced them (colocated and "
                            "pipeline workers can run callbacks registered there, not the caller's)");
  }
  std::string name;
  LeafTap tap;
  LeafCall call;
  bool with_device;
};

class TransformsParam final : public ir::ParamObject {
 public:
  explicit TransformsParam(Transforms t) : value(std::move(t)) {}
  size_t hash() const override { return std::hash<std::string>()(host::to_string(value)); }
  bool equals(const ir::ParamObject& o) const override {
    auto* t = dynamic_cast<const TransformsParam*>(&o);
    return t && t->value == value;
  }
  std::string to_string() const override { return host::to_string(value); }
  std::string_view serial_kind() const override { return "host_transforms"; }
  void write(ir::Writer& w) const override {
    w.count(value.size());
    for (auto& t : value) {
      w.str(t.name);
      w.count(t.batch_dims.size());
      for (auto& d : t.batch_dims) {
        w.boolean(d.has_value());
        if (d) w.i64(*d);
      }
    }
  }
  Transforms value;
};
[[maybe_unused]] const bool transforms_registered =
    ir::register_param_reader("host_transforms", [](ir::Reader& r) -> std::shared_ptr<const ir::ParamObject> {
      Transforms out(r.count(16));
      for (auto& t : out) {
        t.name = r.str();
        t.batch_dims.resize(r.count(1));
        for (auto& d : t.batch_dims)
          if (r.boolean()) d = r.i64();
      }
      return std::make_shared<TransformsParam>(std::move(out));
    });

const CallbackParam& callback_of(const Params& p) {
  return p.get_object<CallbackParam>("callback");
}
const Transforms& transforms_of(const Params& p) {
  return p.get_object<TransformsParam>("transforms").value;
}
/// A call's results: the avals of their leaves and their tree structure (tree_structure).
class ResultsParam final : public ir::ParamObject {
 public:
  ResultsParam(std::vector<ShapeDtype> avals, std::string structure)
      : avals(std::move(avals)), structure(std::move(structure)) {}
  size_t hash() const override { return std::hash<std::string>()(to_string()); }
  bool equals(const ir::ParamObject& o) const override {
    auto* r = dynamic_cast<const ResultsParam*>(&o);
    return r && r->avals == avals && r->structure == structure;
  }
  std::string to_string() const override {
    std::string s = "(";
    for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].to_string();
    return s + (avals.size() == 1 ? ",)" : ")");
  }
  std::vector<ShapeDtype> avals;
  std::string structure;  // empty: no results (ts::none)
};

const ResultsParam& results_of(const Params& p) {
  return static_cast<const ResultsParam&>(*p.get<std::shared_ptr<const ir::ParamObject>>("results"));
}

/// Only this device calls back (a sharded jit's gathered operand), or every device (-1).
bool fires_on(const Params& p, const tessel::detail::DeviceImpl* device) {
  return !p.has("only_device") || p.get_int("only_device") == device->id();
}

/// Host copies of a kernel's inputs: the callback may keep them.
std::vector<Array> host_copies(const KernelCall& c, size_t& bytes) {
  std::vector<Array> leaves;
  leaves.reserve(c.ins.size());
  bytes = 0;
  for (size_t i = 0; i < c.ins.size(); ++i) {
    const size_t n = c.in_avals[i].nbytes();
    auto buf = tessel::detail::Buffer::allocate(n, c.device);
    if (n) std::memcpy(buf->data(), c.ins[i], n);
    buf->set_ready();
    leaves.push_back(tessel::detail::make_concrete(c.in_avals[i], c.device, std::move(buf), false));
    bytes += n;
  }
  return leaves;
}

// ---- host_tap ----

std::vector<Aval> tap_aval(std::span<const Aval>, const Params&) { return {Aval({0}, DType::bool_)}; }

void tap_kernel(const KernelCall& c) {
  if (!fires_on(c.params, c.device)) return;
  size_t bytes = 0;
  std::vector<Array> leaves = host_copies(c, bytes);
  auto cb = c.params.get<std::shared_ptr<const ir::ParamObject>>("callback");
  auto transforms = c.params.get<std::shared_ptr<const ir::ParamObject>>("transforms");
  tessel::detail::DeviceImpl* device = c.device;
  const std::string& name = callback_of(c.params).name;
  TESSEL_DEBUG_LOG("host " + name + " on cpu:" + std::to_string(device->id()) + ": " +
                   std::to_string(leaves.size()) + " values, " + std::to_string(bytes) + " bytes");
  tessel::detail::host::push(device, bytes, name, [cb, transforms, device, leaves = std::move(leaves)]() mutable {
    const auto& callback = static_cast<const CallbackParam&>(*cb);
    callback.tap(std::move(leaves), static_cast<const TransformsParam&>(*transforms).value, Device(device));
  });
}

/// Runs `bind_example(operands)` once per example of a batch, in order: batched operands
/// indexed (their batch dimension moved first, once), the others as they are.
template <class F>
void for_each_example(std::span<const Array> ins, std::span<const int64_t> dims, int64_t size, F&& bind_example) {
  std::vector<Array> leading;
  for (size_t i = 0; i < ins.size(); ++i)
    leading.push_back(dims[i] == ir::kNotBatched ? ins[i] : ops::move_batch_dim(ins[i], dims[i], 0, size));
  for (int64_t b = 0; b < size; ++b) {
    std::vector<Array> example;
    for (size_t i = 0; i < ins.size(); ++i)
      example.push_back(dims[i] == ir::kNotBatched ? leading[i] : leading[i][{b}]);
    bind_example(example);
  }
}

// One batched tap: the transforms record which dimension of each leaf is the batch. A
// per-example tap (jax.debug's) instead runs once per example, in order.
ir::Batched tap_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                      const ir::BatchAxis& axis, const Params& p) {
  if (p.has("per_example") && p.get<bool>("per_example")) {
    Array token = zeros({0}, DType::bool_);
    for_each_example(ins, dims, axis.size,
                     [&](const std::vector<Array>& example) { token = ops::bind(self, example, p)[0]; });
    return {{token}, {ir::kNotBatched}};
  }
  Transform t{"batch", {}};
  for (int64_t d : dims) t.batch_dims.push_back(d == ir::kNotBatched ? std::nullopt : std::optional<int64_t>(d));
  Transforms all = transforms_of(p);
  all.push_back(std::move(t));
  Params q = p;
  q.set("transforms", std::make_shared<const TransformsParam>(std::move(all)));
  return {ops::bind(self, ins, q), {ir::kNotBatched}};
}

// ---- host_call, host_io_call, host_pure_call ----

// The results' avals, or a token when there are none (every primitive has an output).
std::vector<Aval> call_aval(std::span<const Aval>, const Params& p) {
  const ResultsParam& r = results_of(p);
  if (r.avals.empty()) return {Aval({0}, DType::bool_)};
  return r.avals;
}

/// Checks what callback `name` returned against its results' structure and avals.
void check_call_result(const std::string& name, const CallResult& got, const ResultsParam& want) {
  if (got.structure != want.structure)
    throw ValueError("host callback '" + name + "' returned a result of tree structure '" + got.structure +
                    "' but its result_shape has structure '" + want.structure +
                    "'; return the containers result_shape describes (same sizes and keys), or fix result_shape");
  if (got.leaves.size() != want.avals.size())
    throw ShapeError("host callback '" + name + "' returned " + std::to_string(got.leaves.size()) +
                     " arrays but its result_shape lists " + std::to_string(want.avals.size()));
  for (size_t i = 0; i < got.leaves.size(); ++i) {
    const Array& a = got.leaves[i];
    const Aval& w = want.avals[i];
    const std::string which = want.avals.size() == 1 ? "" : " result " + std::to_string(i) + " as";
    if (!a.valid())
      throw ValueError("host callback '" + name + "' returned" + which + " an empty Array; it must return " +
                       w.to_string());
    if (a.shape() != w.shape || a.dtype() != w.dtype)
      throw ShapeError("host callback '" + name + "' returned" + which + " " + Aval(a.shape(), a.dtype()).to_string() +
                       " but its result_shape is " + w.to_string() +
                       "; return an array of that shape and dtype (astype/reshape it) or fix result_shape");
  }
}

void call_kernel(const KernelCall& c) {
  const CallbackParam& cb = callback_of(c.params);
  const ResultsParam& want = results_of(c.params);
  if (!fires_on(c.params, c.device)) {  // a sharded jit's other devices contribute zeros
    for (size_t j = 0; j < c.outs.size(); ++j)
      if (c.out_avals[j].nbytes()) std::memset(c.outs[j], 0, c.out_avals[j].nbytes());
    return;
  }
  size_t bytes = 0;
  std::vector<Array> leaves = host_copies(c, bytes);
  CallResult result;
  tessel::detail::host::run_in_order(c.device, [&] {
    try {
      result = cb.call(std::move(leaves), Device(c.device));
    } catch (const std::exception& e) {
      // Without results nothing reads the failure: barrier_wait reports it, as for a tap.
      if (want.avals.empty()) tessel::detail::host::record_failure(cb.name, e.what());
      throw Error("host callback '" + cb.name + "' threw: " + e.what());
    } catch (...) {
      throw Error("host callback '" + cb.name + "' threw an exception that is not a std::exception");
    }
  });
  check_call_result(cb.name, result, want);
  for (size_t j = 0; j < result.leaves.size(); ++j) {
    const tessel::detail::ConcreteArray* r = tessel::detail::require_concrete(result.leaves[j], "a host callback's result");
    r->buffer()->wait();
    if (const size_t n = c.out_avals[j].nbytes()) std::memcpy(c.outs[j], r->buffer()->data(), n);
  }
}

std::vector<Array> call_jvp(const ir::Primitive& self, std::span<const Array>, std::span<const Array>,
                            const Params& p) {
  throw NotImplementedError(self.name + " ('" + callback_of(p).name +
                            "'): a host callback has no derivative; wrap it in ts::custom_jvp or ts::custom_vjp "
                            "and give the derivative there (it may call back to the host too)");
}

// Sequentially, once per batch element: the callback sees the per-example shapes it was
// written for.
ir::Batched call_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                       const ir::BatchAxis& axis, const Params& p) {
  std::vector<std::vector<Array>> per_output;
  for_each_example(ins, dims, axis.size, [&](const std::vector<Array>& example) {
    std::vector<Array> outs = ops::bind(self, example, p);
    per_output.resize(outs.size());
    for (size_t j = 0; j < outs.size(); ++j) per_output[j].push_back(outs[j]);
  });
  std::vector<Array> stacked;
  for (auto& results : per_output) stacked.push_back(stack(results));
  return {stacked, std::vector<int64_t>(stacked.size(), 0)};
}

// ---- under a sharded jit ----

// Every result is replicated: a token, or the one call's result.
std::vector<std::optional<Sharding>> host_infer(const Mesh& mesh, std::span<const std::optional<Sharding>>,
                                                std::span<const Aval>, std::span<const Aval> outs, const Params&) {
  return std::vector<std::optional<Sharding>>(outs.size(), NamedSharding(mesh, PartitionSpec()));
}

// The operands gathered whole; the mesh's device `device_index` alone calls back. A call's
// other devices contribute zeros to a sum that hands them its result.
template <const char* kName>
void host_partition(ir::SpmdBuilder& b, std::span<const Aval> ins, std::span<const Aval> outs, const Params& p) {
  const Mesh& mesh = b.mesh();
  const Sharding whole = NamedSharding(mesh, PartitionSpec());
  const int64_t index = p.get_int("device_index");
  if (index < 0 || index >= mesh.size())
    throw ValueError("host callback '" + callback_of(p).name + "': device_index " + std::to_string(index) +
                     " is outside the mesh " + mesh.to_string() + " of " + std::to_string(mesh.size()) +
                     " devices; give an index in [0, " + std::to_string(mesh.size()) + ")");
  std::vector<Array> locals;
  for (size_t i = 0; i < ins.size(); ++i) locals.push_back(b.operand(i, whole));
  Params q = p;
  q.set("only_device", int64_t(mesh.devices()[size_t(index)].id()));
  std::vector<Array> louts = ops::bind(ir::lookup_primitive(kName), locals, q);
  for (size_t j = 0; j < louts.size(); ++j) {
    if (outs[j].size() > 0 && mesh.size() > 1)
      louts[j] = tessel::detail::all_reduce(louts[j], mesh.axis_names(), ir::Combine::kSum);
    b.set_result(j, louts[j], whole);
  }
}

constexpr uint32_t kTapEffects = ir::kSideEffect | ir::kOrdered | ir::kRematReplay;

constexpr char kTapName[] = "host_tap", kCallName[] = "host_call", kIoCallName[] = "host_io_call",
               kPureCallName[] = "host_pure_call";
const ir::SpmdRules tap_rules{.infer = host_infer, .partition = host_partition<kTapName>};
const ir::SpmdRules call_rules{.infer = host_infer, .partition = host_partition<kCallName>};
const ir::SpmdRules io_call_rules{.infer = host_infer, .partition = host_partition<kIoCallName>};
const ir::SpmdRules pure_call_rules{.infer = host_infer, .partition = host_partition<kPureCallName>};

const ir::Primitive& tap_p = ir::register_primitive({
    .name = kTapName,
    .abstract_eval = tap_aval,
    .cpu_kernel = tap_kernel,
    .effects = kTapEffects,
    .jvp = ops::jvp_zero,
    .batch = tap_batch,
    .spmd = &tap_rules,
});

ir::Primitive call_primitive(const char* name, uint32_t effects, const ir::SpmdRules* rules) {
  return {.name = name,
          .abstract_eval = call_aval,
          .cpu_kernel = call_kernel,
          .effects = effects,
          .jvp_with_primals = call_jvp,
          .batch = call_batch,
          .spmd = rules};
}

const ir::Primitive& call_p =
    ir::register_primitive(call_primitive(kCallName, ir::kSideEffect | ir::kOrdered, &call_rules));
const ir::Primitive& io_call_p = ir::register_primitive(call_primitive(kIoCallName, ir::kSideEffect, &io_call_rules));
const ir::Primitive& pure_call_p = ir::register_primitive(call_primitive(kPureCallName, ir::kNoEffect, &pure_call_rules));

std::mutex& emit_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void tap_leaves(LeafTap fn, const std::vector<Array>& leaves, const std::string& name, bool with_device,
                int device_index, bool per_example) {
  Params p{{"callback", std::make_shared<const CallbackParam>(name, std::move(fn), nullptr, with_device)},
           {"transforms", std::make_shared<const TransformsParam>(Transforms{})},
           {"device_index", int64_t(device_index)},
           {"per_example", per_example}};
  ops::bind(tap_p, leaves, p);
}

// The declared results with every dtype validated (a DType made by a cast is refused here).
std::vector<ShapeDtype> checked_results(std::vector<ShapeDtype> results, const std::string& name) {
  for (size_t i = 0; i < results.size(); ++i)
    results[i].dtype = tessel::detail::checked_dtype(results[i].dtype, name + ": the dtype of result " + std::to_string(i));
  return results;
}

std::vector<Array> call_leaves(LeafCall fn, const std::vector<Array>& leaves, const std::vector<ShapeDtype>& results,
                               const std::string& structure, const std::string& name, bool with_device,
                               int device_index, CallKind kind) {
  Params p{{"callback", std::make_shared<const CallbackParam>(name, nullptr, std::move(fn), with_device)},
           {"results", std::make_shared<const ResultsParam>(checked_results(results, name), structure)},
           {"device_index", int64_t(device_index)}};
  const ir::Primitive& prim = kind == CallKind::kPure ? pure_call_p : kind == CallKind::kOrdered ? call_p : io_call_p;
  std::vector<Array> outs = ops::bind(prim, leaves, p);
  if (results.empty()) outs.clear();  // the token
  return outs;
}

std::string format_array(const Array& a, int64_t threshold) { return tessel::detail::array_to_string(a, threshold); }

void emit(std::ostream* os, const std::string& text) {
  std::lock_guard lock(emit_mutex());
  std::ostream& out = os ? *os : std::cout;
  out << text;
  out.flush();
}

std::string print_header(const PrintOptions& opts, const Transforms& transforms, const Device* device) {
  std::map<std::string, std::string> kv = opts.kwargs;
  if (!opts.what.empty()) kv["what"] = opts.what;
  if (!transforms.empty()) kv["transforms"] = host::to_string(transforms);
  if (device) kv["device"] = device->to_string();
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : " ") + k + ": " + v;
  return s;
}

}  // namespace detail

void barrier_wait(const std::string& logging_name) { tessel::detail::host::barrier_wait(logging_name); }

}  // namespace tessel::host

namespace tessel::debug::detail {

std::string format(const std::string& fmt, const std::vector<Array>& values) {
  std::string out;
  size_t k = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt.compare(i, 2, "{}") == 0 && k < values.size()) {
      out += values[k++].to_string();
      ++i;
    } else {
      out += fmt[i];
    }
  }
  return out;
}

}  // namespace tessel::debug::detail
