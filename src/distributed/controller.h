#pragma once
// The driver/worker control channel of a single-controller job (ARCHITECTURE.md
// "Processes", docs/single_controller.md): under `mpirun -np 1+W`, rank 0 runs main as the
// driver; ranks 1..W serve. The driver sends messages (a handler name and bytes) to the
// workers in the order it makes them; each worker runs the handler registered under that
// name, in arrival order, and may reply. Upper layers register their handlers (arrays and
// programs in src/sharding/spmd.cpp, colocated calls in src/colocated/, pipeline stages),
// so the channel knows nothing about what travels.
//
// Workers keep the arrays the driver names by id in a table; the driver's handles to them
// carry a detail::RemoteRef whose destruction frees them. A worker that dies is noticed
// while the driver waits on it (its death notice, or its process gone on this host), and the
// driver's operation throws an Error naming it.
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "core/array_impl.h"
#include "ir/serialize.h"

namespace tessel::distributed::controller {

/// True in the driver (rank 0) of a single-controller job.
bool is_driver();
/// True in a worker of a single-controller job (inside its serve loop).
bool is_worker();

/// A communicator over every process of the job (ranks as in MPI_COMM_WORLD), apart from
/// the channel's: for traffic between workers that upper layers arrange themselves (pipeline
/// transfers). Errors return instead of aborting. MPI_COMM_NULL outside a single-controller job.
MPI_Comm peer_comm();
/// The largest tag MPI allows (MPI_TAG_UB).
int tag_limit();

/// Joins a single-controller job (after MPI joined the processes): the driver returns; a
/// worker serves until the driver ends, then exits the process (status 0).
void start();
/// Driver: tells every live worker to finish and waits until each acknowledged (exit and
/// distributed::shutdown call it before MPI ends). When a worker died during the job, the
/// others may wait on it forever, so it ends the job instead (MPI_Abort, status 1). Does
/// nothing elsewhere.
void stop_workers();

// ---- messages (driver side) ----

/// What precedes a message's payload: the handler's name, the tag the reply travels on (0:
/// no reply wanted) and the ids of arrays the driver dropped, taken out of the worker's table
/// before the handler runs (a small array's memory goes when the worker is next idle).
struct MessageHeader {
  std::string kind;
  int reply_tag = 0;
  std::vector<uint64_t> deletes;
};
/// A message as it travels: the header, then the payload.
std::string write_message(const MessageHeader& header, std::string_view payload);
/// The same into `out` (its old contents replaced, its capacity kept: no allocation once it
/// has grown).
void write_message_into(std::string& out, const MessageHeader& header, std::string_view payload);
/// Reads the header at the front of a message (the payload follows in `r`). Throws
/// ValueError for bytes that are not a header (truncated, a reply tag MPI cannot use).
MessageHeader read_message_header(ir::Reader& r);

/// A new id for an array or object held by workers (unique in the job).
uint64_t new_id();
/// Sends handler `kind` with `payload` to each of `processes`, atomically with respect to
/// other sends (every worker sees sends in one global order). Throws Error naming a worker
/// that is gone.
void post(const std::vector<int>& processes, const std::string& kind, std::string_view payload);
/// How a waiting thread polls. `prompt`: the answer is usually microseconds away, so it polls
/// for TESSEL_CONTROL_SPIN_US before sleeping (that setting agrees in every process).
/// `long_work`: the answer waits for work of milliseconds (a pipelined step), so the driver
/// polls for kLongWorkSpin alone, then sleeps in steps of at most kLongWorkMaxSleep: on a
/// machine with a core per worker and no more, a spinning driver would take a worker's core.
enum class Wait { prompt, long_work };
inline constexpr std::chrono::microseconds kLongWorkSpin{50}, kLongWorkMaxSleep{100};

/// Polls with pauses that grow as the wait gets longer (see Wait).
class Backoff {
 public:
  explicit Backoff(Wait wait = Wait::prompt);
  /// One pause between two polls: none, a yield, or a sleep, by the time waited so far.
  void pause();
  /// True while the pauses are polls or yields (no sleep yet).
  bool spinning() const;
  /// How long the next sleep lasts (once no longer spinning).
  std::chrono::microseconds next_sleep() const { return sleep_; }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::microseconds spin_, max_sleep_, sleep_{5};
};

/// Sends to one worker and waits for its reply (the handler's `Reply`, polled as `wait`
/// says); rethrows the worker's error with its type (a message naming the worker appended).
/// Throws Error when the worker, or one of `watch` (workers the answer depends on), dies
/// meanwhile.
std::string request(int process, const std::string& kind, std::string_view payload,
                    const std::vector<int>& watch = {}, Wait wait = Wait::prompt);

// ---- handlers (worker side) ----

/// Worker: how its server waits for the next message now: Wait::long_work while work that
/// handed serving over (run_while_others_serve, e.g. a pipelined step) still runs, so that
/// the server does not spin on the cores that work needs; else Wait::prompt.
Wait serving_wait();

/// Worker: marks long work that runs off the serving thread (a pipelined step on a thread of
/// its own) for the object's life. Meanwhile serving_wait says Wait::long_work, as for work
/// handed over by run_while_others_serve, and a read of a value not yet computed waits on a
/// thread of its own at once instead of spinning the serving thread first (the value is
/// most likely that work's, and the spin takes a core from it).
class LongWork {
 public:
  LongWork();
  ~LongWork();
  LongWork(const LongWork&) = delete;
  LongWork& operator=(const LongWork&) = delete;
};

/// The answer to one message: call `ok` or `fail` once, from any thread (a handler that
/// must wait hands its Reply to another thread, so the worker goes on serving). Messages
/// sent with `post` ignore it.
class Reply {
 public:
  explicit Reply(int tag = 0) : tag_(tag) {}
  void ok(std::string_view payload = {}) const;
  /// ok() with the payload appended by `write(std::string& out)` straight into the reply's
  /// frame, a buffer the thread keeps (no copy, no allocation once it has grown). When
  /// `write` throws, nothing is sent (the caller's fail() answers).
  template <class F> void ok_writing(F&& write) const {
    if (!tag_) return;
    std::string& out = ok_frame();
    write(out);
    send_frame(out);
  }
  void fail(std::exception_ptr error) const;
  bool wanted() const { return tag_ != 0; }

 private:
  static std::string& ok_frame();          // the thread's reply buffer, holding the ok status
  void send_frame(std::string& out) const;  // sends it (and lets a large one's memory go)
  int tag_;
};
using Handler = std::function<void(ir::Reader& payload, Reply reply)>;
/// Registers the handler of `kind` (from a static initializer; every process of the build
/// registers the same ones). Returns true; throws if `kind` is taken.
bool register_handler(const std::string& kind, Handler handler);
/// From a handler: runs `fn` on this (serving) thread while another thread takes over
/// serving, so that messages behind it are not held up; if `fn` ends before another thread
/// took over, this one simply goes on serving (no thread hand-over for short work).
/// `on_takeover`, when given, runs on the thread that takes over, before it serves anything
/// (while `fn` may still run): what the messages behind this one need from it (the ids of
/// its outputs) that `fn` itself would only provide once done.
void run_while_others_serve(const std::function<void()>& fn, const std::function<void()>& on_takeover = {});
/// Runs `fn` on a thread of its own and sends its result (or error) as the reply: for
/// handlers that wait (on buffers, on user code) without holding up the messages behind.
/// With `ready` (nothing to wait for) it runs `fn` at once instead.
void reply_later(Reply reply, std::function<std::string()> fn, bool ready = false);

// ---- arrays held by workers ----

/// Worker: keeps `a` under `id` (replacing nothing: ids are fresh).
void store(uint64_t id, Array a);
/// Worker: keeps the error that producing `id` raised; `lookup` rethrows it.
void store_error(uint64_t id, std::exception_ptr error);
/// Worker: the array kept under `id`; rethrows the error that producing it raised; Error
/// naming `what` for an id that is not (or no longer) kept. (`what` is a view: every call
/// and fetch looks its arrays up, mostly with a literal.)
Array lookup(uint64_t id, std::string_view what);
// ---- objects held by workers (programs, pipelines, call frames) ----

/// Worker: keeps `object` under `id` (an id from the driver's new_id) until the driver
/// forgets it, or the worker stops.
void keep(uint64_t id, std::shared_ptr<const void> object);
/// Worker: the object kept under `id`, or null (never kept, or forgotten).
std::shared_ptr<const void> kept(uint64_t id);
/// Worker: the object kept under `id` as a T (kept with that type), or null.
template <class T> std::shared_ptr<const T> kept_as(uint64_t id) { return std::static_pointer_cast<const T>(kept(id)); }
/// Driver: `processes` may drop what they keep under `id` (an object, or an array's
/// pieces): the forget travels in the header of the next message to each of them, which
/// drops it before its handler runs. Call it when the driver's object (a program, a
/// pipeline) dies; the workers' memory then stays bounded by what the driver holds.
void forget(const std::vector<int>& processes, uint64_t id) noexcept;
/// Driver: how many arrays and objects worker `process` keeps, and its resident memory
/// (bytes), after the forgets sent so far reached it (the "stats" request).
struct WorkerStats {
  uint64_t arrays = 0, objects = 0, resident_bytes = 0;
};
WorkerStats worker_stats(int process);

/// Driver: the processes other than this one that own a device of `devices`, ascending.
std::vector<int> remote_processes(const std::vector<Device>& devices);
/// Driver: a reference to pieces kept under `id` by `processes`.
/// With `long_work` (the result of long work: a pipelined step's output), reading the value
/// waits with Wait::long_work (see long_work).
std::shared_ptr<const detail::RemoteRef> make_ref(uint64_t id, std::vector<int> processes, bool long_work = false);
/// Driver: whether the array `id` was made by make_ref with long_work and is still alive.
bool long_work(uint64_t id);
/// Driver: the id of `a`'s remote pieces; Error naming `what` when it has none (an array
/// made outside the single-controller channel).
uint64_t remote_id(const Array& a, const std::string& what);

/// Writes and reads the error that a reply carries (its tessel type and message).
void write_error(ir::Writer& w, std::exception_ptr error);
[[noreturn]] void throw_error(ir::Reader& r, const std::string& where);

}  // namespace tessel::distributed::controller
