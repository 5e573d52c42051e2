// Eager evaluation: each primitive dispatches at once to its device stream through a per-op
// cache of abstract evaluation results; tiny ops run inline when the stream is idle.
#include <array>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/array_impl.h"
#include "core/config.h"
#include "core/cache.h"
#include "core/log.h"
#include "ir/abstract_eval.h"
#include "ir/loop_steps.h"
#include "ir/trace.h"
#include "runtime/launch.h"
#include "runtime/eager.h"
#include "tessel/error.h"

namespace tessel::detail {
namespace {

// What abstract evaluation gives for one primitive on inputs of given avals and params.
struct OpEntry {
  const ir::Primitive* prim;
  std::vector<Aval> in_avals;
  ir::Params params;
  std::vector<Aval> out_avals;

  bool matches(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& ps) const {
    if (prim != &p || in_avals.size() != ins.size() || !(params == ps)) return false;
    for (size_t i = 0; i < ins.size(); ++i)
      if (!(in_avals[i] == ins[i].impl()->aval)) return false;
    return true;
  }
};
using OpRef = std::shared_ptr<const OpEntry>;
struct SameOp {
  bool operator()(const OpRef& a, const OpRef& b) const {
    return a->prim == b->prim && a->in_avals == b->in_avals && a->params == b->params;
  }
};

size_t hash_avals(const ir::Primitive* p, std::span<const Array> ins, size_t params_hash) {
  size_t h = std::hash<const void*>()(p) ^ params_hash;
  for (const Array& a : ins) h = hash_aval(h, a.impl()->aval);
  return h;
}

// Shared by all threads, in front of it a lookaside per thread that a repeated op hits
// without a lock. Entries are shared: a queued kernel holds the one it runs with, so
// eviction and clear_caches never free what a kernel still reads. The cache is never
// destroyed: threads' lookasides report to it when they end, at exit too.
constexpr size_t kOpCacheCapacity = 4096;  // distinct (primitive, params, input avals)
constexpr size_t kOpFrontSlots = 128;      // per thread
using OpCache = Cache<OpRef, OpRef, std::hash<OpRef>, SameOp>;
using OpFront = CacheFront<OpRef, kOpFrontSlots>;

OpCache& op_cache() {
  static auto* cache = new OpCache("eager.ops", kOpCacheCapacity);
  return *cache;
}

// This thread's lookaside, or null once the thread's thread_locals were destroyed (work
// that runs on the main thread during exit's teardown then uses the shared table alone).
// Plain pointers: reading them is valid at any time, unlike an object with a destructor.
thread_local OpFront* t_front = nullptr;
thread_local bool t_front_gone = false;
OpFront* op_front() {
  if (t_front) [[likely]] return t_front;
  if (t_front_gone) return nullptr;
  struct Owner {
    ~Owner() {
      delete t_front;
      t_front = nullptr;
      t_front_gone = true;
    }
  };
  thread_local Owner owner;
  t_front = new OpFront(op_cache());
  return t_front;
}

OpRef lookup(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  OpFront* front = op_front();
  const size_t h = hash_avals(&p, ins, params.hash());
  auto matches = [&](const OpRef& e) { return e->matches(p, ins, params); };
  if (front)
    if (const OpRef* e = front->find(h, matches)) return *e;
  std::optional<OpRef> e = op_cache().find_if(h, matches);
  if (!e) {
    auto made = std::make_shared<OpEntry>();
    made->prim = &p;
    for (const Array& a : ins) made->in_avals.push_back(a.impl()->aval);
    made->params = params;
    made->out_avals = ir::abstract_eval(p, made->in_avals, params);
    OpRef ref = std::move(made);
    e = op_cache().insert(h, ref, ref);
  }
  if (front) front->put(h, *e);
  return *e;
}

}  // namespace

namespace {

// Runs the kernel on buffers whose inputs are computed (or waits for them: rethrows an
// input's error), then marks the outputs ready, or failed with the kernel's error.
void run_kernel(const ir::Primitive& p, const std::vector<Aval>& in_avals, const std::vector<Aval>& out_avals,
                const ir::Params& params, std::span<const std::shared_ptr<Buffer>> in_bufs,
                std::span<const std::shared_ptr<Buffer>> out_bufs, DeviceImpl* dev) {
  constexpr size_t kOnStack = 8;
  const void* in_stack[kOnStack];
  void* out_stack[kOnStack];
  std::vector<const void*> in_heap;
  std::vector<void*> out_heap;
  if (in_bufs.size() > kOnStack) in_heap.resize(in_bufs.size());
  if (out_bufs.size() > kOnStack) out_heap.resize(out_bufs.size());
  const void** ins = in_heap.empty() ? in_stack : in_heap.data();
  void** outs = out_heap.empty() ? out_stack : out_heap.data();
  try {
    for (size_t i = 0; i < in_bufs.size(); ++i) {
      in_bufs[i]->wait();  // orders work across streams; rethrows an input's error
      ins[i] = in_bufs[i]->data();
    }
    for (size_t i = 0; i < out_bufs.size(); ++i) outs[i] = out_bufs[i]->data();
    p.cpu_kernel(ir::KernelCall{in_avals, std::span<const void* const>(ins, in_bufs.size()), out_avals,
                                std::span<void* const>(outs, out_bufs.size()), params, dev});
    for (auto& b : out_bufs) b->set_ready();
  } catch (...) {
    for (auto& b : out_bufs) b->set_error(std::current_exception());
  }
}

// What a kernel run at once on the caller's thread reads (nothing is copied or packaged).
struct InlineRun {
  const ir::Primitive* prim;
  const OpEntry* entry;
  std::span<const std::shared_ptr<Buffer>> ins, outs;
  DeviceImpl* dev;
  static void run(void* self) {
    const auto& r = *static_cast<const InlineRun*>(self);
    run_kernel(*r.prim, r.entry->in_avals, r.entry->out_avals, r.entry->params, r.ins, r.outs, r.dev);
  }
};

}  // namespace

namespace {

// The buffers of one operation's inputs or outputs: on the stack for the few that most
// operations have, so that an operation run inline allocates no vector for them.
class BufferList {
 public:
  explicit BufferList(size_t n) {
    if (n > kOnStack) heap_.reserve(n);
  }
  void push_back(std::shared_ptr<Buffer> b) {
    if (heap_.capacity() == 0 && n_ < kOnStack) stack_[n_++] = std::move(b);
    else heap_.push_back(std::move(b));
  }
  std::span<const std::shared_ptr<Buffer>> span() const {
    return heap_.empty() ? std::span<const std::shared_ptr<Buffer>>(stack_.data(), n_) : heap_;
  }
  const std::shared_ptr<Buffer>& back() const { return span().back(); }
  /// The buffers as the vector a queued launch keeps (moved out).
  std::vector<std::shared_ptr<Buffer>> take() {
    if (!heap_.empty()) return std::move(heap_);
    return {std::make_move_iterator(stack_.begin()), std::make_move_iterator(stack_.begin() + n_)};
  }

 private:
  static constexpr size_t kOnStack = 4;
  std::array<std::shared_ptr<Buffer>, kOnStack> stack_;
  size_t n_ = 0;
  std::vector<std::shared_ptr<Buffer>> heap_;
};

}  // namespace

std::vector<Array> eager_eval(const ir::Primitive& p, std::span<const Array> ins, const ir::Params& params) {
  if (p.eager_impl) return p.eager_impl(ins, params);
  if (!p.cpu_kernel) throw NotImplementedError(p.name + ": this primitive has no CPU kernel");
  OpRef entry = lookup(p, ins, params);
  const OpEntry& e = *entry;
  DeviceImpl* dev = result_device(p.name, ins);
  bool committed = false, inputs_ready = true;
  // Bytes read and written: a reduction of a large array writes little but is not small
  // work, and must not run on the caller's thread (dispatch stays asynchronous).
  size_t work_bytes = 0;
  BufferList in_bufs(ins.size());
  for (const Array& a : ins) {
    auto* c = static_cast<ConcreteArray*>(a.impl().get());
    const std::shared_ptr<Buffer>& b = c->buffer();
    b->check_not_donated();
    committed |= c->committed;
    inputs_ready &= b->ready() && !b->failed();
    work_bytes += c->aval.nbytes();
    in_bufs.push_back(b);
  }
  std::vector<Array> outs;
  outs.reserve(e.out_avals.size());
  BufferList out_bufs(e.out_avals.size());
  for (const Aval& av : e.out_avals) {
    out_bufs.push_back(Buffer::allocate(av.nbytes(), dev, &av));
    work_bytes += av.nbytes();
    outs.push_back(make_concrete(av, dev, out_bufs.back(), committed));
  }
  // Control flow: a loop's steps count too (a while loop: large work).
  if (p.regions) work_bytes = ir::add_work_bytes(work_bytes, ir::nested_work_bytes(p, ins.size(), e.params));
  TESSEL_DEBUG_LOG("dispatch " + p.name + " " + (e.params.empty() ? "" : "[" + e.params.to_string() + "] ") +
                   std::to_string(ins.size()) + " inputs -> " + e.out_avals[0].to_string() + " on cpu:" +
                   std::to_string(dev->id()));
  // A small operation on computed inputs and an idle stream runs here and now, without the
  // task (its closure, the shared launch record, the std::function) that a queued one needs.
  if (inputs_ready) {
    InlineRun run{&p, &e, in_bufs.span(), out_bufs.span(), dev};
    if (run_inline_if_idle(dev, work_bytes, &InlineRun::run, &run)) return outs;
  }
  launch_kernel(dev, work_bytes, KernelLaunch{&p, &e.in_avals, &e.out_avals, &e.params, in_bufs.take(),
                                              out_bufs.take(), std::move(entry)});
  return outs;
}

DeviceImpl* result_device(const std::string& op, std::span<const Array> ins) {
  DeviceImpl* committed_dev = nullptr;
  for (const Array& a : ins) {
    auto* c = static_cast<ConcreteArray*>(a.impl().get());
    if (!c->committed) continue;
    if (committed_dev && committed_dev != c->device())
      throw ValueError(op + ": arguments are committed to different devices, cpu:" +
                       std::to_string(committed_dev->id()) + " and cpu:" + std::to_string(c->device()->id()) +
                       "; move them to one device with device_put first");
    committed_dev = c->device();
  }
  if (committed_dev) return committed_dev;
  // Uncommitted inputs: compute where the first non-scalar input lives.
  for (const Array& a : ins) {
    auto* c = static_cast<ConcreteArray*>(a.impl().get());
    if (!c->aval.shape.empty()) return c->device();
  }
  return default_device();
}

void launch_kernel(DeviceImpl* dev, size_t work_bytes, KernelLaunch launch) {
  auto task = [l = std::make_shared<KernelLaunch>(std::move(launch)), dev] {
    run_kernel(*l->prim, *l->in_avals, *l->out_avals, *l->params, l->ins, l->outs, dev);
  };
  run_on_stream(dev, work_bytes, std::move(task));
}

}  // namespace tessel::detail
