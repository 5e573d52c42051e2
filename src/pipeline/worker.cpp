// The workers' side of pipelined() (docs/pipeline.md "Instructions"): keeps the compiled
// stages and instruction stream the driver sent, and runs the stream once per call, one
// instruction at a time, with transfers between workers over MPI.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <sys/prctl.h>

#include "core/array_impl.h"
#include "core/buffer.h"
#include "core/device_impl.h"
#include "core/thread.h"
#include "distributed/controller.h"
#include "distributed/mpi.h"
#include "ir/sharding_rule.h"
#include "pipeline/instructions.h"
#include "pipeline/pipelined.h"
#include "tessel/error.h"
#include "tessel/ops.h"

namespace tessel::pipeline::detail {
namespace {
namespace ctl = distributed::controller;
namespace mpi = distributed::mpi;
using tessel::detail::Buffer;
using tessel::detail::ConcreteArray;
using tessel::detail::DeviceImpl;

// A compiled pipeline, as one worker keeps it.
struct Loaded {
  Sharding replicated;  // over this worker's local mesh
  int workers = 0, microbatches = 0, transfers = 0;  // stage workers (pp) and microbatches per replica
  int replicas = 1, replica = 0;                      // data parallelism: this worker's replica
  // The process of stage worker `w` of this worker's replica (worker r * pp + w is process + 1).
  int process_of(int w, int r) const { return r * workers + w + 1; }
  int process_of(int w) const { return process_of(w, replica); }
  std::map<int, std::shared_ptr<tessel::detail::JitEntry>> segments;
  std::map<int, std::pair<size_t, size_t>> segment_arity;  // inputs, outputs
  std::vector<Instruction> stream;
  std::vector<Sharding> out_shardings;
  std::vector<Aval> out_avals;
  // Steps run one at a time in the order the driver issued them, on the worker's step
  // thread, while the driver goes on; `finished` keeps each step's timeline (or error)
  // until it is reported (with the next step's acknowledgement, or by "pipeline.done").
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  mutable std::map<uint64_t, std::pair<std::string, std::exception_ptr>> finished;
};


constexpr int kAbortTag = 0;  // "step N failed here": stops the other workers' waits

double now_us() {
  using namespace std::chrono;
  return double(duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count()) / 1e3;
}

const char* kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::forward: return "forward";
    case TaskKind::backward: return "backward";
    case TaskKind::backward_input: return "backward_input";
    case TaskKind::backward_weight: return "backward_weight";
  }
  return "other";
}

// The transfers of consecutive steps use different tags, so a message a failed step left
// behind is never taken for one of a later step.
int wire_tag(const Loaded& p, uint64_t step, int transfer) {
  const int per_step = std::max(1, p.transfers);
  const int windows = std::max(1, std::min(64, (ctl::tag_limit() - 1) / per_step));
  return 1 + int(step % uint64_t(windows)) * per_step + transfer;
}

// How a step's thread waits for a transfer: polls without a system call for kWaitSpin (a
// value already on its way arrives within microseconds), then tests every kWaitPause,
// sleeping between, with the thread's timer slack cut to 1 us so that a pause is ~20 us
// and not the default 70. The waiting worker's peer is computing what it waits for: a
// waiter that polled with sched_yield for thousands of rounds (milliseconds) took a
// share of the cores from that computation, on a machine with fewer cores than threads.
constexpr auto kWaitSpin = std::chrono::microseconds(50), kWaitPause = std::chrono::microseconds(20);

// Waits for `req`, giving up (with the error every stopped worker reports) when another
// worker says that this step failed there.
void wait_watching(MPI_Request& req, uint64_t step) {
  MPI_Comm comm = ctl::peer_comm();
  thread_local const bool fine_sleeps = ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)fine_sleeps;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comm, &flag, &st);
    if (flag) {
      uint64_t failed = 0;
      MPI_Recv(&failed, 8, MPI_BYTE, st.MPI_SOURCE, kAbortTag, comm, MPI_STATUS_IGNORE);
      if (failed == step) {
        MPI_Cancel(&req);
        MPI_Request_free(&req);
        throw Error(std::string(kStoppedByPeer) + " " + std::to_string(st.MPI_SOURCE - 1) +
                    " failed in the same step");
      }
    }
    if (std::chrono::steady_clock::now() - start >= kWaitSpin) std::this_thread::sleep_for(kWaitPause);
  }
}

// Tells the other workers that `step` failed here, so that none waits for this one.
void abort_peers(const Loaded& p, uint64_t step) {
  const int me = mpi::world_rank();
  for (int w = 0; w < p.workers * p.replicas; ++w)
    if (w + 1 != me) MPI_Send(&step, 8, MPI_BYTE, w + 1, kAbortTag, ctl::peer_comm());
}

// What read_stream cannot know: the segments and workers an instruction names exist, and a
// run reads and writes as many slots as its segment has inputs and outputs.
void check_loaded_stream(const Loaded& p) {
  for (const Instruction& in : p.stream) {
    if (in.op == Op::run) {
      auto it = p.segment_arity.find(in.segment);
      if (it == p.segment_arity.end())
        throw ValueError("pipelined: instruction '" + in.to_string() + "' runs segment " + std::to_string(in.segment) +
                         ", which the driver did not send");
      if (it->second != std::pair<size_t, size_t>(in.ins.size(), in.outs.size()))
        throw ValueError("pipelined: instruction '" + in.to_string() + "' does not match its segment's " +
                         std::to_string(it->second.first) + " inputs and " + std::to_string(it->second.second) +
                         " outputs");
    }
    for (int g : in.group)
      if (g >= p.workers)
        throw ValueError("pipelined: instruction '" + in.to_string() + "' names worker " + std::to_string(g) +
                         " of a pipeline of " + std::to_string(p.workers));
    if ((in.op == Op::send || in.op == Op::recv) && in.peer >= p.workers)
      throw ValueError("pipelined: instruction '" + in.to_string() + "' names worker " + std::to_string(in.peer) +
                       " of a pipeline of " + std::to_string(p.workers));
  }
}

Array on_local_mesh(const Loaded& p, Array x) {
  if (p.replicated.mesh().size() > 1) x = device_put(x, p.replicated);
  return x;
}

// The AllReduce instruction: every member sends its contribution (zeros when it has none)
// to every other and adds all of them in the group's order, so that each member holds the
// same bits. Transfers go through host memory like sends. Started (posted) and finished
// (waited for, then added) apart, so that an all_reduce_start travels while tasks run.
struct PendingReduce {
  Instruction in;
  std::vector<int> members;  // processes, ascending
  Array mine;                // kept until the sends completed
  std::map<int, std::shared_ptr<Buffer>> theirs;
  std::vector<MPI_Request> reqs;
  // Cancels what is still posted (on a failed step), before the buffers go.
  void cancel() {
    for (MPI_Request& r : reqs)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
  }
};

PendingReduce start_all_reduce(const Loaded& p, uint64_t step, const Instruction& in, Array mine, DeviceImpl* device) {
  PendingReduce r;
  r.in = in;
  const int me = mpi::world_rank();
  for (int rep = 0; rep < p.replicas; ++rep)
    if (in.across_replicas || rep == p.replica)
      for (int g : in.group) r.members.push_back(p.process_of(g, rep));
  std::sort(r.members.begin(), r.members.end());
  if (!mine.valid()) mine = tessel::zeros(in.aval.shape, in.aval.dtype);
  r.mine = device_put(mine, Device(device));
  const ConcreteArray* c = tessel::detail::require_concrete(r.mine, "pipelined all_reduce");
  c->buffer()->wait();
  const size_t nbytes = in.aval.nbytes();
  mpi::Block block(MPI_BYTE, int64_t(nbytes));
  MPI_Comm comm = ctl::peer_comm();
  const int tag = wire_tag(p, step, in.tag);
  try {
    for (int q : r.members) {
      if (q == me) continue;
      auto buf = Buffer::allocate(nbytes, device);
      MPI_Request req;
      mpi::check(MPI_Irecv(buf->data(), block.count(), block.type(), q, tag, comm, &req), "MPI_Irecv", "pipelined");
      r.reqs.push_back(req);
      r.theirs[q] = buf;
      mpi::check(MPI_Isend(c->buffer()->data(), block.count(), block.type(), q, tag, comm, &req), "MPI_Isend",
                 "pipelined");
      r.reqs.push_back(req);
    }
  } catch (...) {
    r.cancel();
    throw;
  }
  return r;
}

Array finish_all_reduce(PendingReduce& r, uint64_t step, DeviceImpl* device) {
  try {
    for (MPI_Request& req : r.reqs) wait_watching(req, step);
  } catch (...) {
    r.cancel();
    throw;
  }
  const int me = mpi::world_rank();
  Array sum;
  for (int q : r.members) {
    Array part = r.mine;
    if (q != me) {
      r.theirs[q]->set_ready();
      part = tessel::detail::make_concrete(r.in.aval, device, r.theirs[q], true);
    }
    sum = sum.valid() ? sum + part : part;
  }
  if (r.in.across_replicas && r.in.count > 1) sum = sum / Array(double(r.in.count));
  return sum;
}

// Drives a step's posted transfers while its thread computes a task. MPI moves a message
// above its eager size only inside MPI calls of the two processes, so a receive whose data
// arrives during a task was copied only at the next task boundary or at its wait, on the
// critical path (most of the measured bubble beyond the simulated one: docs/pipeline.md).
// While a task runs, a helper thread tests the posted requests every kEvery, sleeping
// between; it sleeps on a condition variable once none is left or no task runs. Started
// only for a step that posts a large transfer (small ones complete on their own). `mu` is
// held by the step's thread except while it computes: the helper's tests and the step's
// own MPI calls on these requests never overlap.
class TransferProgress {
 public:
  static constexpr size_t kLargeBytes = 4096;  // Open MPI's shared-memory eager limit
  static constexpr auto kEvery = std::chrono::microseconds(50);

  // `test` tests every posted request, true while any is still pending; called with `mu` held.
  explicit TransferProgress(std::function<bool()> test) : test_(std::move(test)) {}
  TransferProgress(const TransferProgress&) = delete;
  TransferProgress& operator=(const TransferProgress&) = delete;
  ~TransferProgress() {
    {
      std::lock_guard lock(mu);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  std::mutex mu;

  // A transfer of `nbytes` was posted (with `mu` held).
  void posted(size_t nbytes) { large_ |= nbytes >= kLargeBytes; }

  // Lets the helper test while a task computes: releases `lock` (on `mu`) for the scope's
  // life, and takes it back at its end, also when the task throws.
  class Computing {
   public:
    Computing(TransferProgress& p, std::unique_lock<std::mutex>& lock) : p_(p), lock_(lock) {
      if (p_.large_ && !p_.thread_.joinable())
        p_.thread_ = tessel::detail::start_thread("a pipelined step's transfer progress", [&p = p_] { p.run(); });
      p_.computing_ = true;
      ++p_.task_;
      lock_.unlock();
      p_.cv_.notify_one();
    }
    ~Computing() {
      lock_.lock();
      p_.computing_ = false;
    }

   private:
    TransferProgress& p_;
    std::unique_lock<std::mutex>& lock_;
  };

 private:
  void run() {
    std::unique_lock lock(mu);
    uint64_t tested = 0;  // the last task whose transfers were all done
    while (!stop_) {
      cv_.wait(lock, [&] { return stop_ || (computing_ && task_ != tested); });
      while (!stop_ && computing_) {
        if (!test_()) {
          tested = task_;
          break;
        }
        lock.unlock();
        std::this_thread::sleep_for(kEvery);
        lock.lock();
      }
    }
  }

  std::function<bool()> test_;
  std::condition_variable cv_;
  std::thread thread_;
  bool large_ = false, computing_ = false, stop_ = false;
  uint64_t task_ = 0;
};

std::vector<TimelineEvent> run_stream(const Loaded& p, uint64_t step, const std::vector<uint64_t>& in_ids,
                                      std::vector<Array>& results) {
  std::map<int64_t, Array> slots;
  struct Pending {
    MPI_Request req;
    Array keep;
  };
  std::vector<Pending> sends;
  struct PendingRecv {
    MPI_Request req = MPI_REQUEST_NULL;
    std::shared_ptr<Buffer> buffer;
    Aval aval;
  };
  std::map<int64_t, PendingRecv> recvs;  // posted, not yet waited for
  std::map<int, PendingReduce> reductions;  // started, not yet waited for (by tag)
  std::vector<TimelineEvent> events;
  MPI_Comm comm = ctl::peer_comm();
  DeviceImpl* first = p.replicated.mesh().devices()[0].impl();
  auto slot = [&](int64_t s) -> const Array& { return slots.at(s); };
  // MPI moves a large message only inside MPI calls of its two processes: a worker about to
  // compute lets the transfers it has posted go on first (a receive whose sender is ready
  // copies its data now, not at its wait), at every task boundary.
  // True while any posted transfer is not done.
  auto progress = [&] {
    int done = 0;
    bool pending = false;
    for (auto& [slot_id, r] : recvs)
      if (r.req != MPI_REQUEST_NULL) MPI_Test(&r.req, &done, MPI_STATUS_IGNORE), pending |= r.req != MPI_REQUEST_NULL;
    for (auto& [tag, r] : reductions)
      for (MPI_Request& req : r.reqs)
        if (req != MPI_REQUEST_NULL) MPI_Test(&req, &done, MPI_STATUS_IGNORE), pending |= req != MPI_REQUEST_NULL;
    std::erase_if(sends, [&](Pending& s) {
      return s.req == MPI_REQUEST_NULL || (MPI_Test(&s.req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done);
    });
    return pending || !sends.empty();
  };
  // Declared after what `progress` touches, so that its helper ends first.
  TransferProgress transfers(progress);
  std::unique_lock transfers_lock(transfers.mu);
  try {
    for (const Instruction& in : p.stream) {
      const double t0 = now_us();
      switch (in.op) {
        case Op::rename_in: {
          const uint64_t id = in_ids.at(size_t(in.ext));
          slots[in.outs[0]] = ctl::lookup(id, "pipelined");
          if (in.donated)
            ctl::store_error(id, std::make_exception_ptr(ValueError(
                                     "this array was donated to a pipelined step (donate_argnums) and its memory "
                                     "reused; use the step's results instead")));
          break;
        }
        case Op::recv: {  // posted now, completed by its wait (the transfer overlaps the tasks between)
          auto buf = Buffer::allocate(in.aval.nbytes(), first);
          mpi::Block block(MPI_BYTE, int64_t(in.aval.nbytes()));
          PendingRecv& r = recvs[in.outs[0]];
          r.buffer = buf;
          r.aval = in.aval;
          mpi::check(MPI_Irecv(buf->data(), block.count(), block.type(), p.process_of(in.peer), wire_tag(p, step, in.tag), comm, &r.req),
                     "MPI_Irecv", "pipelined");
          transfers.posted(in.aval.nbytes());
          break;
        }
        case Op::wait: {
          auto it = recvs.find(in.outs[0]);
          if (it == recvs.end()) throw Error("internal: pipelined: wait for slot %" + std::to_string(in.outs[0]) + " without a receive");
          wait_watching(it->second.req, step);
          it->second.buffer->set_ready();
          slots[in.outs[0]] = on_local_mesh(p, tessel::detail::make_concrete(it->second.aval, first, it->second.buffer, true));
          recvs.erase(it);
          events.push_back({0, in.to_string(), "recv", -1, -1, t0, now_us()});
          break;
        }
        case Op::run: {
          progress();
          std::vector<Array> args;
          for (int64_t s : in.ins) args.push_back(slot(s));
          std::vector<Array> outs;
          {
            TransferProgress::Computing computing(transfers, transfers_lock);
            outs = tessel::detail::jit_call(*p.segments.at(in.segment), args);
            for (const Array& o : outs) o.block_until_ready();
          }
          for (size_t k = 0; k < outs.size(); ++k) slots[in.outs[k]] = outs[k];
          if (in.task.microbatch < 0)  // the epilogue: once per step, after the stage tasks
            events.push_back({0, "epilogue", "epilogue", in.task.stage, -1, t0, now_us()});
          else
            events.push_back({0, in.task.to_string(), kind_name(in.task.kind), in.task.stage, in.task.microbatch, t0, now_us()});
          break;
        }
        case Op::send: {
          Array a = slot(in.ins[0]);
          const ConcreteArray* c = tessel::detail::require_concrete(a, "pipelined send");
          c->buffer()->wait();
          mpi::Block block(MPI_BYTE, int64_t(a.aval().nbytes()));
          MPI_Request req;
          mpi::check(MPI_Isend(c->buffer()->data(), block.count(), block.type(), p.process_of(in.peer), wire_tag(p, step, in.tag),
                               comm, &req),
                     "MPI_Isend", "pipelined");
          sends.push_back({req, a});
          transfers.posted(a.aval().nbytes());
          events.push_back({0, in.to_string(), "send", -1, -1, t0, now_us()});
          break;
        }
        case Op::accumulate: {
          const Array& v = slot(in.ins[0]);
          switch (in.mode) {
            case AccumulateMode::keep:
            case AccumulateMode::first: slots[in.outs[0]] = v; break;
            case AccumulateMode::add: slots[in.outs[0]] = slot(in.ins[1]) + v; break;
            case AccumulateMode::add_and_scale: slots[in.outs[0]] = (slot(in.ins[1]) + v) / Array(double(in.count)); break;
          }
          break;
        }
        case Op::rename_out: {
          if (p.replica != 0) break;  // replica 0 returns the results (the replicas hold the same)
          Array a = slot(in.ins[0]);
          const Sharding& target = p.out_shardings.at(size_t(in.ext));
          if (!(a.sharding() == target)) a = device_put(a, target);
          a.block_until_ready();
          results.at(size_t(in.ext)) = a;
          break;
        }
        case Op::del: slots.erase(in.ins[0]); break;
        case Op::all_reduce: {
          PendingReduce r = start_all_reduce(p, step, in, in.ins.empty() ? Array() : slot(in.ins[0]), first);
          slots[in.outs[0]] = on_local_mesh(p, finish_all_reduce(r, step, first));
          events.push_back({0, in.to_string(), "all_reduce", -1, -1, t0, now_us()});
          break;
        }
        case Op::all_reduce_start:
          reductions.emplace(in.tag, start_all_reduce(p, step, in, slot(in.ins[0]), first));
          transfers.posted(in.aval.nbytes());
          break;
        case Op::all_reduce_wait: {
          auto it = reductions.find(in.tag);
          if (it == reductions.end()) throw Error("internal: pipelined: all_reduce_wait #" + std::to_string(in.tag) + " without its start");
          slots[in.outs[0]] = on_local_mesh(p, finish_all_reduce(it->second, step, first));
          reductions.erase(it);
          events.push_back({0, in.to_string(), "all_reduce", -1, -1, t0, now_us()});
          break;
        }
      }
    }
    for (auto& s : sends) wait_watching(s.req, step);
  } catch (...) {
    abort_peers(p, step);
    for (auto& s : sends)
      if (s.req != MPI_REQUEST_NULL) MPI_Request_free(&s.req);
    // Posted receives: cancel, and wait for the cancellation before their buffers go (one
    // already matched completes instead).
    for (auto& [slot_id, r] : recvs)
      if (r.req != MPI_REQUEST_NULL) {
        MPI_Cancel(&r.req);
        MPI_Wait(&r.req, MPI_STATUS_IGNORE);
      }
    for (auto& [tag, r] : reductions) r.cancel();
    throw;
  }
  return events;
}

// The steps of `p` that are over and not yet reported (all of them, or only `only`), as the
// driver reads them: count, then per step its seq, whether it failed, and its timeline or
// error. Reported steps are forgotten. Call with p.mu held.
std::string take_finished(const Loaded& p, std::optional<uint64_t> only = std::nullopt) {
  ir::Writer w;
  std::vector<uint64_t> seqs;
  for (auto& [seq, result] : p.finished)
    if (!only || seq == *only) seqs.push_back(seq);
  w.count(seqs.size());
  for (uint64_t seq : seqs) {
    auto& [bytes, error] = p.finished[seq];
    w.u64(seq);
    w.boolean(error != nullptr);
    if (error) ctl::write_error(w, error);
    else w.str(bytes);
    p.finished.erase(seq);
  }
  return w.take();
}

// Runs the worker's pipelined steps on a thread of its own, one at a time in the order they
// arrived: the driver issues each pipeline's steps in order and collects one pipeline's
// before it calls another. The serving thread only queues a step and answers at once, so
// that the driver's next call (the next step in flight, a read) is not held up by the one
// running: a step run on the serving thread held them until a follower took over serving
// (0.5 ms and more), longer than a small step itself. Each step queued or running counts
// as long work (ctl::LongWork): the server sleeps between polls meanwhile instead of
// spinning on the cores the step needs.
class StepRunner {
 public:
  // Queues `step`; throws ResourceExhaustedError when there is no thread to run it.
  void push(std::function<void()> step) {
    auto busy = std::make_shared<ctl::LongWork>();
    std::lock_guard lock(mu_);
    if (!started_) {
      tessel::detail::start_thread("the pipelined steps of this worker", [this] { loop(); }).detach();
      started_ = true;
    }
    queue_.push_back([step = std::move(step), busy] { step(); });
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      std::function<void()> step = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      step();  // catches its own errors
      step = nullptr;  // its LongWork ends before the next wait
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool started_ = false;
};
StepRunner& step_runner() {
  static auto* r = new StepRunner();  // never destroyed: its thread waits until the process ends
  return *r;
}

// The pipeline the driver loaded under `key`; null (and `reply` failed) when there is none.
std::shared_ptr<const Loaded> find_loaded(uint64_t key, const ctl::Reply& reply) {
  if (std::shared_ptr<const Loaded> p = ctl::kept_as<Loaded>(key)) return p;
  reply.fail(std::make_exception_ptr(Error("internal: worker has no pipeline " + std::to_string(key))));
  return nullptr;
}

[[maybe_unused]] const bool handlers_registered = [] {
  ctl::register_handler("pipeline.load", [](ir::Reader& r, ctl::Reply reply) {
    ctl::run_while_others_serve([&] {
      try {
        auto p = std::make_shared<Loaded>();
        const uint64_t key = r.u64();
        p->replicated = ir::read_sharding(r);
        p->workers = int(r.i64());
        p->replicas = int(r.i64());
        p->replica = int(r.i64());
        p->microbatches = int(r.i64());
        p->transfers = int(r.i64());
        for (size_t k = r.count(8); k-- > 0;) {
          const int seg = int(r.i64());
          auto prog = std::make_shared<const ir::Program>(ir::deserialize(r.str()));
          tessel::detail::FlatFn fn = [prog](std::span<const Array> xs) { return ir::eval_program(*prog, xs); };
          auto entry = tessel::detail::jit_compile(fn, prog->in_avals(), prog->name);
          // Compile now (the first call then only runs): a call on zeros laid out as
          // received values are.
          std::vector<Array> zeros;
          for (const Aval& a : prog->in_avals()) zeros.push_back(on_local_mesh(*p, device_put(tessel::zeros(a.shape, a.dtype),
                                                                                          p->replicated.mesh().devices()[0])));
          for (Array& o : tessel::detail::jit_call(*entry, zeros)) o.block_until_ready();
          p->segments[seg] = entry;
          p->segment_arity[seg] = {prog->invars.size(), prog->outvars.size()};
        }
        p->stream = read_stream(r);
        check_loaded_stream(*p);
        for (size_t k = r.count(1); k-- > 0;) p->out_shardings.push_back(ir::read_sharding(r));
        for (size_t k = r.count(1); k-- > 0;) p->out_avals.push_back(ir::read_aval(r));
        ctl::keep(key, p);  // until the driver's pipeline is gone (it forgets the key)
        reply.ok();
      } catch (...) {
        reply.fail(std::current_exception());
      }
    });
  });
  // A step: its results are stored at once as arrays whose buffers the step fills (reading
  // one waits for it; a failed step leaves its error in them), the driver's call is
  // answered, and the stream runs in its turn while the driver goes on.
  ctl::register_handler("pipeline.step", [](ir::Reader& r, ctl::Reply reply) {
    const uint64_t key = r.u64(), step = r.u64(), seq = r.u64();
    std::vector<uint64_t> in_ids(r.count(8)), out_ids;
    for (auto& id : in_ids) id = r.u64();
    out_ids.resize(r.count(8));
    for (auto& id : out_ids) id = r.u64();
    std::shared_ptr<const Loaded> p = find_loaded(key, reply);
    if (!p) return;
    std::vector<std::vector<std::shared_ptr<Buffer>>> pending;  // per result, its buffers to fill
    for (size_t k = 0; k < out_ids.size(); ++k) {
      const Sharding& s = p->out_shardings.at(k);
      const Aval& aval = p->out_avals.at(k);
      const Aval local(s.shard_shape(aval.shape), aval.dtype, aval.weak_type);
      std::vector<std::shared_ptr<Buffer>> bufs;
      for (const Device& d : s.mesh().devices()) bufs.push_back(Buffer::deferred(local.nbytes(), d.impl()));
      Array a = bufs.size() == 1 ? tessel::detail::make_concrete(aval, bufs[0]->device(), bufs[0], true)
                                 : Array(std::make_shared<ConcreteArray>(aval, s, local, bufs));
      ctl::store(out_ids[k], a);
      pending.push_back(std::move(bufs));
    }
    // Runs on the worker's step thread, in its turn, while the driver goes on.
    auto run = [p, seq, step, in_ids = std::move(in_ids), out_ids = std::move(out_ids), pending] {
      std::string bytes;
      std::exception_ptr error;
      try {
        std::vector<Array> results(out_ids.size());
        std::vector<TimelineEvent> events = run_stream(*p, step, in_ids, results);
        for (size_t k = 0; k < results.size(); ++k) {
          std::vector<std::shared_ptr<Buffer>> have = tessel::detail::piece_buffers(results[k]);
          for (size_t d = 0; d < pending[k].size(); ++d) {
            auto copy = Buffer::allocate(pending[k][d]->nbytes(), pending[k][d]->device());
            have.at(d)->wait();
            if (copy->nbytes()) std::memcpy(copy->data(), have[d]->data(), copy->nbytes());
            pending[k][d]->attach(copy->take_memory());
            pending[k][d]->set_ready();
          }
        }
        ir::Writer w;
        w.count(events.size());
        for (const auto& e : events) {
          w.str(e.name);
          w.str(e.kind);
          w.i64(e.stage);
          w.i64(e.microbatch);
          w.f64(e.start_us);
          w.f64(e.end_us);
        }
        bytes = w.take();
      } catch (...) {
        error = std::current_exception();
        for (auto& bufs : pending)
          for (auto& b : bufs)
            if (!b->ready()) b->set_error(error);
      }
      std::lock_guard lock(p->mu);
      p->finished[seq] = {std::move(bytes), error};
      p->cv.notify_all();
    };
    try {
      step_runner().push(std::move(run));
    } catch (...) {  // no thread to run it: the step fails (its results say so), and the call
      for (auto& bufs : pending)
        for (auto& b : bufs) b->set_error(std::current_exception());
      reply.fail(std::current_exception());
      return;
    }
    std::lock_guard lock(p->mu);
    reply.ok(take_finished(*p));  // with the earlier steps that are over meanwhile
  });
  // The driver waits for a step it has not heard of: its timeline, or its error.
  ctl::register_handler("pipeline.done", [](ir::Reader& r, ctl::Reply reply) {
    const uint64_t key = r.u64(), seq = r.u64();
    std::shared_ptr<const Loaded> p = find_loaded(key, reply);
    if (!p) return;
    ctl::reply_later(reply, [p, seq] {
      std::unique_lock lock(p->mu);
      p->cv.wait(lock, [&] { return p->finished.count(seq) > 0; });
      return take_finished(*p, seq);
    });
  });
  return true;
}();

}  // namespace
}  // namespace tessel::pipeline::detail
