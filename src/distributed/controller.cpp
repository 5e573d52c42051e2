// The single-controller channel (see controller.h). Every message from the driver is
// [handler name][reply tag][payload] on a communicator of its own with tag kControlTag;
// replies come back on the tag the message named: [status][payload or error]. Workers that
// die before they could answer send a death notice (kDeathTag) when they can; otherwise the
// driver sees the process gone (workers on the driver's host) while it polls.
#include "distributed/controller.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/blocking.h"
#include "core/config.h"
#include "core/log.h"
#include "core/thread.h"
#include "distributed/collectives.h"
#include "distributed/liveness.h"
#include "distributed/mpi.h"
#include "tessel/error.h"

namespace tessel::distributed::controller {
namespace {

constexpr int kControlTag = 1;
constexpr int kDeathTag = 2;
// Messages up to kInlineBytes travel whole on kControlTag, into the receive each worker
// keeps posted; a longer one is announced there (kAnnounceTag: its size) and follows on
// kBodyTag, which the worker then receives at its size.
constexpr int kAnnounceTag = 3;
constexpr int kBodyTag = 4;
constexpr int kInlineBytes = 16 << 10;
// A reply up to kInlineReply bytes travels whole into the receive the driver posted before
// it sent the request; a longer one is announced there ([kAnnouncedReply][u64 size]) and
// follows whole on the same tag. A reply's first byte: 1 ok, 0 an error, 2 an announcement.
constexpr int kInlineReply = 4 << 10;
constexpr char kAnnouncedReply = 2;
constexpr int kFirstReplyTag = 16;
constexpr int kHostBytes = 256;

enum class Role { none, driver, worker };

struct WorkerInfo {
  int pid = 0;
  std::string host;
  std::atomic<bool> dead{false};
  std::string death;  // why, once dead
};

struct State {
  Role role = Role::none;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm peers = MPI_COMM_NULL;  // worker-to-worker traffic of upper layers
  int size = 1;
  std::vector<std::unique_ptr<WorkerInfo>> procs;  // by rank (entry 0: the driver)
  std::mutex send_mu;                              // one global order of driver messages
  std::atomic<uint64_t> next_id{1};
  std::atomic<int> next_tag{kFirstReplyTag};
  int tag_limit = 32767;
  std::mutex pending_mu;
  std::vector<std::vector<uint64_t>> pending_deletes;  // by process, sent with the next message
  std::atomic<bool> stopped{false};
  // worker side
  std::mutex table_mu;
  struct Entry {
    Array array;
    std::exception_ptr error;
  };
  std::unordered_map<uint64_t, Entry> table;
  // Reuse, so that a call's result costs the table no allocation: nodes of dropped entries
  // (at most kSpareNodes), and the arrays the driver dropped, destroyed while the server
  // waits for the next message (off the path of the message that dropped them), or once
  // kMaxDeferredFrees wait.
  std::vector<decltype(table)::node_type> spare_nodes;
  std::vector<Array> dropped;
  std::atomic<bool> any_dropped{false};  // read by the idle server without the lock
  std::unordered_map<uint64_t, std::shared_ptr<const void>> objects;  // programs, pipelines, ...
  std::mutex later_mu;
  std::condition_variable later_cv;
  int later_running = 0;
  std::atomic<bool> stop_requested{false};
};
State& state() {
  static auto* s = new State();  // outlives exit handlers that may still send
  return *s;
}

// A message header as it lies in the message's bytes (MessageHeader without copies): the
// handler's name, the reply tag, and how many ids to free follow it.
struct HeaderView {
  std::string_view kind;
  int reply_tag = 0;
  size_t deletes = 0;
};
HeaderView read_header_view(ir::Reader& r);

// Handlers by name, found by hashing the name as it lies in the message (every message
// looks one up).
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
};
std::unordered_map<std::string, Handler, NameHash, std::equal_to<>>& handlers() {
  static auto* h = new std::unordered_map<std::string, Handler, NameHash, std::equal_to<>>();
  return *h;
}

// ---- waiting: spin briefly (the next message is usually close), then sleep longer ----

// TESSEL_CONTROL_SPIN_US: how long a prompt wait spins before it sleeps.
std::chrono::microseconds control_spin() {
  static const auto spin = std::chrono::microseconds(config::get_int(config::kControlSpinUs));
  return spin;
}
}  // namespace

Backoff::Backoff(Wait wait)
    : spin_(wait == Wait::long_work ? kLongWorkSpin : control_spin()),
      max_sleep_(wait == Wait::long_work ? kLongWorkMaxSleep : std::chrono::microseconds(500)) {}

bool Backoff::spinning() const { return std::chrono::steady_clock::now() - start_ < spin_; }

void Backoff::pause() {
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < spin_) {
    // Poll without a system call at first (a reply is usually microseconds away), then
    // yield the core to the threads doing the work.
    if (now - start_ >= std::chrono::microseconds(100)) std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(sleep_);
  if (sleep_ < max_sleep_) sleep_ = std::min(sleep_ * 2, max_sleep_);
}

namespace {

std::string worker_name(int p) {
  const State& s = state();
  // With heartbeats on, the host's address too (hosts may share a name: containers).
  if (std::string d = liveness::describe(p); d.find('(') != std::string::npos) return "worker " + d;
  std::string r = "worker process " + std::to_string(p);
  if (p < int(s.procs.size()) && s.procs[size_t(p)]) r += " (pid " + std::to_string(s.procs[size_t(p)]->pid) + " on " + s.procs[size_t(p)]->host + ")";
  return r;
}

void mark_dead(int p, const std::string& why) {
  static std::mutex mu;  // one writer of `death`, before `dead` publishes it
  std::lock_guard lock(mu);
  WorkerInfo& w = *state().procs.at(size_t(p));
  if (w.dead) return;
  w.death = why;
  w.dead = true;
  TESSEL_DEBUG_LOG("controller: " + worker_name(p) + " is gone: " + why);
}

// A worker on this host whose process is gone (or a zombie) is dead.
bool process_gone(int p) {
  const State& s = state();
  const WorkerInfo& w = *s.procs[size_t(p)];
  if (w.host != s.procs[0]->host) return false;  // another host: only its death notice tells
  if (::kill(w.pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(w.pid) + "/stat");
  std::string pid, comm;
  char st = 0;
  if (stat >> pid >> comm >> st) return st == 'Z' || st == 'X';
  return false;
}

// Reads the death notices that arrived. MPI_Iprobe moves MPI's progress on only when it
// matches nothing, so a notice already here may be matched only by a later call: probe
// until several calls in a row find nothing.
void read_death_notices() {
  State& s = state();
  for (int misses = 0; misses < 4;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kDeathTag, s.comm, &flag, &status) != MPI_SUCCESS) return;
    if (!flag) {
      ++misses;
      continue;
    }
    misses = 0;
    int n = 0;
    MPI_Get_count(&status, MPI_CHAR, &n);
    std::string why(size_t(n), '\0');
    MPI_Recv(why.data(), n, MPI_CHAR, status.MPI_SOURCE, kDeathTag, s.comm, MPI_STATUS_IGNORE);
    mark_dead(status.MPI_SOURCE, why);
  }
}

// Reads death notices that arrived; marks workers whose process is gone dead. A worker
// that sent a notice did so before it ended, so once its process is gone its notice is
// here: read again before giving the plain reason.
void check_peers() {
  State& s = state();
  read_death_notices();
  for (int q = 1; q < s.size; ++q) {
    if (s.procs[size_t(q)]->dead) continue;
    if (process_gone(q)) {
      read_death_notices();
      if (!s.procs[size_t(q)]->dead) mark_dead(q, "its process exited or was killed");
    } else if (std::string why = liveness::silent(q); !why.empty()) {
      // Another host (killed there, the host gone, its link down): only silence tells.
      read_death_notices();
      if (!s.procs[size_t(q)]->dead) mark_dead(q, why);
    }
  }
}

// The first dead process of `watch` (a wait on one worker may depend on others: a launch
// over a mesh spanning several), or -1.
int dead_among(int p, const std::vector<int>& watch) {
  const State& s = state();
  if (s.procs[size_t(p)]->dead) return p;
  for (int q : watch)
    if (q > 0 && q < s.size && s.procs[size_t(q)]->dead) return q;
  return -1;
}

[[noreturn]] void throw_dead(int p, const std::string& op) {
  throw Error(op + ": " + worker_name(p) + " is gone (" + state().procs[size_t(p)]->death +
              "); its devices and the arrays on them are lost. Restart the job; under Open MPI pass "
              "`--mca orte_abort_on_non_zero_status 0` to mpirun so that one worker's end does not end the driver too");
}

// Sends `bytes` to worker p (whole, or announced and then in full: kInlineBytes), polling so
// that a dead receiver cannot hold the driver forever.
void send_to(int p, const std::string& bytes, const std::string& op) {
  State& s = state();
  if (s.procs[size_t(p)]->dead) throw_dead(p, op);
  MPI_Request reqs[2];
  int n = 0;
  uint64_t size = bytes.size();
  if (bytes.size() <= size_t(kInlineBytes)) {
    mpi::check(MPI_Isend(bytes.data(), int(bytes.size()), MPI_CHAR, p, kControlTag, s.comm, &reqs[n++]), "MPI_Isend", op);
  } else {
    if (bytes.size() > size_t(std::numeric_limits<int>::max()))
      throw ValueError(op + ": a message of " + std::to_string(bytes.size()) +
                       " bytes is more than MPI sends at once (2^31 - 1); send the value in parts");
    mpi::check(MPI_Isend(&size, int(sizeof size), MPI_CHAR, p, kAnnounceTag, s.comm, &reqs[n++]), "MPI_Isend", op);
    mpi::check(MPI_Isend(bytes.data(), int(bytes.size()), MPI_CHAR, p, kBodyTag, s.comm, &reqs[n++]), "MPI_Isend", op);
  }
  int sent = 0;  // a short message usually leaves at once: no clock read for it
  mpi::check(MPI_Testall(n, reqs, &sent, MPI_STATUSES_IGNORE), "MPI_Testall", op);
  if (sent) return;
  Backoff backoff;
  auto last_check = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    mpi::check(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE), "MPI_Testall", op);
    if (done) return;
    if (std::chrono::steady_clock::now() - last_check > std::chrono::milliseconds(20)) {
      check_peers();
      if (s.procs[size_t(p)]->dead) {
        for (int k = 0; k < n; ++k)
          if (reqs[k] != MPI_REQUEST_NULL) {
            MPI_Cancel(&reqs[k]);
            MPI_Request_free(&reqs[k]);
          }
        throw_dead(p, op);
      }
      last_check = std::chrono::steady_clock::now();
    }
    backoff.pause();
  }
}

// The header of the driver's next message to `p` (under send_mu): its kind and reply tag,
// and the ids `p` may drop, taken from the pending ones. Header and pending list swap their
// vectors, so both keep their capacity: no allocation per message once they have grown.
const MessageHeader& next_header_locked(int p, const std::string& kind, int reply_tag) {
  State& s = state();
  static auto* header = new MessageHeader();  // only used under send_mu
  header->kind = kind;
  header->reply_tag = reply_tag;
  header->deletes.clear();
  std::lock_guard lock(s.pending_mu);
  if (size_t(p) < s.pending_deletes.size()) std::swap(header->deletes, s.pending_deletes[size_t(p)]);
  return *header;
}

// The buffer each thread frames its messages in: its capacity stays from message to message
// (no allocation per message); never freed, so that exit handlers may still send.
std::string& framing_buffer() {
  thread_local std::string* buffer = new std::string();
  return *buffer;
}

// After a large message the buffer lets its memory go (an array put may be gigabytes).
void trim_framing_buffer(std::string& bytes) {
  if (bytes.capacity() > size_t(4 * kInlineBytes)) std::string().swap(bytes);
}

// Only small arrays wait (a call's scalar result): a large one's memory goes at once.
constexpr size_t kSpareNodes = 64, kMaxDeferredFrees = 256, kMaxDeferredBytes = 64 << 10;

// Destroys the arrays the driver dropped (outside the table's lock; the two vectors swap,
// so neither allocates once grown).
void free_dropped() {
  State& s = state();
  if (!s.any_dropped.load(std::memory_order_relaxed)) return;
  thread_local std::vector<Array> dying;
  {
    std::lock_guard lock(s.table_mu);
    std::swap(dying, s.dropped);
    s.any_dropped.store(false, std::memory_order_relaxed);
  }
  dying.clear();
}

// Drops the arrays and objects the driver forgot, the `n` ids next in `r` (ids are unique
// across both tables). The arrays' memory goes when the server is next idle (free_dropped).
void forget_ids(ir::Reader& r, size_t n) {
  State& s = state();
  if (n == 0) return;
  std::vector<std::shared_ptr<const void>> dying_objects;  // destroyed outside the lock
  std::vector<Array> dying_now;                             // large arrays, likewise
  bool many;
  {
    std::lock_guard lock(s.table_mu);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t id = r.u64();
      if (auto it = s.table.find(id); it != s.table.end()) {
        auto node = s.table.extract(it);
        Array& a = node.mapped().array;
        if (a.valid() && a.nbytes() > kMaxDeferredBytes) {
          dying_now.push_back(std::move(a));
        } else {
          s.dropped.push_back(std::move(a));
          s.any_dropped.store(true, std::memory_order_relaxed);
        }
        node.mapped().error = nullptr;
        if (s.spare_nodes.size() < kSpareNodes) s.spare_nodes.push_back(std::move(node));
      } else if (auto o = s.objects.find(id); o != s.objects.end()) {
        dying_objects.push_back(std::move(o->second));
        s.objects.erase(o);
      }
    }
    many = s.dropped.size() >= kMaxDeferredFrees;
  }
  if (many) free_dropped();
}

// Keeps `entry` under `id` (table_mu held), in a spare node when there is one.
void put_entry_locked(uint64_t id, State::Entry entry) {
  State& s = state();
  if (s.spare_nodes.empty()) {
    s.table[id] = std::move(entry);
    return;
  }
  auto node = std::move(s.spare_nodes.back());
  s.spare_nodes.pop_back();
  node.key() = id;
  node.mapped() = std::move(entry);
  auto placed = s.table.insert(std::move(node));
  if (!placed.inserted) placed.position->second = std::move(placed.node.mapped());  // ids are fresh: never
}

int next_reply_tag() {
  State& s = state();
  int t = s.next_tag.fetch_add(1);
  if (t >= s.tag_limit) {
    int expected = t + 1;
    s.next_tag.compare_exchange_strong(expected, kFirstReplyTag + 1);
    t = kFirstReplyTag;
  }
  return t;
}

// The receive of one reply, posted before its request is sent, so the reply lands in it
// without a probe; a long reply's announcement is followed by a second receive at its size.
struct ReplyReceive {
  // Not zeroed (the receive writes it). The inline-sized buffer is the thread's spare one
  // when it has one (no allocation per request), given back when the request ends. The
  // spare is a plain pointer, never freed: a thread_local object would be destroyed before
  // the exit handlers that still send requests.
  static char*& spare() {
    thread_local char* buffer = nullptr;
    return buffer;
  }
  ReplyReceive() : buffer(std::exchange(spare(), nullptr)) {
    if (!buffer) buffer = new char[size_t(kInlineReply)];
  }
  ~ReplyReceive() { release(); }
  ReplyReceive(const ReplyReceive&) = delete;
  ReplyReceive& operator=(const ReplyReceive&) = delete;
  char* buffer;
  size_t size = size_t(kInlineReply);
  MPI_Request req = MPI_REQUEST_NULL;
  void post(int p, int tag, const std::string& op) {
    mpi::check(MPI_Irecv(buffer, int(size), MPI_CHAR, p, tag, state().comm, &req), "MPI_Irecv", op);
  }
  // A new buffer of n bytes (no receive is pending).
  void resize(size_t n) {
    release();
    buffer = new char[n];
    size = n;
  }
  // A receive abandoned to a dead sender may still write into its buffer: it is never freed.
  void abandon() {
    if (req == MPI_REQUEST_NULL) return;
    MPI_Cancel(&req);
    MPI_Request_free(&req);
    buffer = nullptr;
  }

 private:
  void release() {
    if (!buffer) return;
    if (size == size_t(kInlineReply) && !spare()) spare() = buffer;
    else delete[] buffer;
    buffer = nullptr;
  }
};

// Waits for worker p's reply on `tag` (into `in`, posted already) and receives it, polling,
// so that a worker that dies is reported whenever it dies: also after its reply was
// announced and before it was read. A long reply is read from the sender's memory (Open
// MPI's shared-memory single copy, CMA), and that read never completes once the sender is
// gone, so a blocking MPI_Recv would hold the driver forever.
std::string wait_reply(int p, int tag, ReplyReceive& in, const std::string& op, const std::vector<int>& watch,
                       Wait wait) {
  Backoff backoff(wait);
  auto last_check = std::chrono::steady_clock::now();
  bool announced = false;
  for (;;) {
    int done = 0;
    MPI_Status status;
    if (int err = MPI_Test(&in.req, &done, &status); err != MPI_SUCCESS) {
      in.abandon();
      check_peers();  // a failed read from a dead worker names the worker
      if (int q = dead_among(p, watch); q >= 0) throw_dead(q, op);
      mpi::check(err, "MPI_Test", op);
    }
    if (done) {
      int n = 0;
      MPI_Get_count(&status, MPI_CHAR, &n);
      ir::Reader r(std::string_view(in.buffer, size_t(n)), op);
      const uint8_t kind = r.u8();
      if (kind == uint8_t(kAnnouncedReply) && !announced) {  // the whole reply follows, at its size
        const uint64_t size = r.u64();
        if (size > uint64_t(std::numeric_limits<int>::max())) throw Error("internal: " + op + ": a reply of " + std::to_string(size) + " bytes");
        announced = true;
        in.resize(size_t(size));
        in.post(p, tag, op);
        backoff = Backoff(wait);
        continue;
      }
      if (kind == 1) return std::string(r.raw(r.remaining()));
      throw_error(r, worker_name(p));
    }
    if (std::chrono::steady_clock::now() - last_check > std::chrono::milliseconds(20)) {
      check_peers();
      if (int q = dead_among(p, watch); q >= 0) {
        in.abandon();
        throw_dead(q, op);
      }
      last_check = std::chrono::steady_clock::now();
    }
    backoff.pause();
  }
}

// ---- the driver's side of remote arrays (core/remote.h) ----

// The ids of live arrays made with long_work; `count` lets the common case (none) skip the lock.
struct LongWorkIds {
  std::mutex mu;
  std::unordered_set<uint64_t> ids;
  std::atomic<size_t> count{0};
};
LongWorkIds& long_work_ids() {
  static auto* l = new LongWorkIds();
  return *l;
}
void forget_long_work(uint64_t id) noexcept {
  LongWorkIds& l = long_work_ids();
  if (l.count.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(l.mu);
  if (l.ids.erase(id)) l.count.fetch_sub(1, std::memory_order_relaxed);
}

class DriverPieces final : public detail::RemotePieces {
 public:
  void release(uint64_t id, const std::vector<int>& processes) const noexcept override;
  void wait(const detail::ConcreteArray& a) const override;
  void fetch(const detail::ConcreteArray& a, const std::vector<int>& positions,
             std::vector<std::shared_ptr<detail::Buffer>>& shards) const override;
};

void DriverPieces::release(uint64_t id, const std::vector<int>& processes) const noexcept {
  forget_long_work(id);
  forget(processes, id);
}

void DriverPieces::wait(const detail::ConcreteArray& a) const {
  ir::Writer w;
  w.u64(a.remote->id);
  const Wait wait = long_work(a.remote->id) ? Wait::long_work : Wait::prompt;
  for (int p : a.remote->processes) request(p, "array.wait", w.bytes(), a.remote->processes, wait);
}

// The read's handler name, made once (every read of a worker's value sends it).
const std::string& fetch_kind() {
  static const auto* kind = new std::string("array.fetch");
  return *kind;
}

void DriverPieces::fetch(const detail::ConcreteArray& a, const std::vector<int>& positions,
                         std::vector<std::shared_ptr<detail::Buffer>>& shards) const {
  auto* dev = detail::default_device();
  const size_t nbytes = a.local_aval().nbytes();
  const Wait wait = long_work(a.remote->id) ? Wait::long_work : Wait::prompt;
  // Each piece arrives as it travels: the reply's bytes become the piece's buffer.
  auto receive = [&](ir::Reader& r, int pos) {
    auto bytes = r.raw(nbytes);
    auto buf = detail::Buffer::allocate(nbytes, dev);
    if (nbytes) std::memcpy(buf->data(), bytes.data(), nbytes);
    buf->set_ready();
    shards[size_t(pos)] = std::move(buf);
  };
  if (positions.size() == 1) {  // one piece (a value on one worker device): no grouping
    const int pos = positions[0];
    const int p = a.sharding().device_set()[size_t(pos)].process_index();
    char payload[24];  // [id][count 1][position], as ir::Writer writes them
    const uint64_t words[3] = {a.remote->id, 1, uint64_t(pos)};
    for (size_t i = 0; i < 24; ++i) payload[i] = char(uint8_t(words[i / 8] >> (8 * (i % 8))));
    std::string reply = request(p, fetch_kind(), std::string_view(payload, sizeof payload), a.remote->processes, wait);
    ir::Reader r(reply, "fetch");
    receive(r, pos);
    return;
  }
  std::map<int, std::vector<int>> by_process;
  for (int pos : positions) by_process[a.sharding().device_set()[size_t(pos)].process_index()].push_back(pos);
  for (auto& [p, list] : by_process) {
    ir::Writer w;
    w.u64(a.remote->id);
    w.count(list.size());
    for (int pos : list) w.u64(uint64_t(pos));
    std::string reply = request(p, fetch_kind(), w.bytes(), a.remote->processes, wait);
    ir::Reader r(reply, "fetch");
    for (int pos : list) receive(r, pos);
  }
}

// ---- worker ----

// A worker that cannot go on tells the driver why before it ends, so the driver's next
// operation on it reports that instead of waiting.
void worker_terminate() {
  std::string why = "it ended with an uncaught exception: " + exception_message(std::current_exception());
  std::fprintf(stderr, "[tessel %d] %s\n", mpi::world_rank(), why.c_str());
  std::fflush(stderr);
  // A short notice travels eagerly (in the message itself), so the driver's blocking read of
  // it (check_peers) never depends on this process still being there.
  constexpr size_t kMaxNotice = 1024;
  if (why.size() > kMaxNotice) why = why.substr(0, kMaxNotice - 3) + "...";
  MPI_Request req;
  if (MPI_Isend(why.data(), int(why.size()), MPI_CHAR, 0, kDeathTag, state().comm, &req) == MPI_SUCCESS) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    int done = 0;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  std::_Exit(1);
}

// The handler of `kind`, or null. The last few kinds served are compared first (a call
// and its read alternate): no hash of the name for them. The table is complete before any
// message arrives (handlers register at static initialization), so entries stay valid.
const Handler* find_handler(std::string_view kind) {
  using Entry = std::pair<const std::string, Handler>;
  constexpr size_t kRecent = 4;
  thread_local std::array<const Entry*, kRecent> recent{};
  for (size_t i = 0; i < kRecent && recent[i]; ++i)
    if (recent[i]->first == kind) return &recent[i]->second;
  auto it = handlers().find(kind);
  if (it == handlers().end()) return nullptr;
  std::move_backward(recent.begin(), recent.end() - 1, recent.end());
  recent[0] = &*it;
  return &it->second;
}

void dispatch(std::string_view bytes) {
  ir::Reader r(bytes, "worker message");
  HeaderView h;
  try {
    h = read_header_view(r);
    forget_ids(r, h.deletes);
  } catch (const Error& e) {  // no reply tag to answer on: the worker goes on serving
    TESSEL_WARN_LOG(std::string("controller: dropped a malformed message: ") + e.what());
    return;
  }
  const std::string_view kind = h.kind;
  Reply reply(h.reply_tag);
  try {
    const Handler* handler = find_handler(kind);
    if (!handler) throw Error("worker: no handler '" + std::string(kind) + "' in this process (a driver of another build?)");
    TESSEL_DEBUG_LOG("controller: serve " + std::string(kind));
    (*handler)(r, reply);
  } catch (...) {
    if (reply.wanted()) reply.fail(std::current_exception());
    else TESSEL_WARN_LOG("controller: message '" + std::string(kind) + "' failed: " + exception_message(std::current_exception()));
  }
}

// Serving threads: one at a time receives and dispatches messages (the server). A handler
// may run long work on the serving thread itself (run_while_others_serve): it asks a
// follower to take over and, when the work ends before one did, goes on serving; otherwise
// it becomes a follower. Short work then costs no thread hand-over, and long work does not
// hold up the messages behind it.
struct Serving {
  std::mutex mu;
  std::condition_variable cv;
  std::thread::id server;
  bool successor_wanted = false;
  std::chrono::steady_clock::time_point wanted_since;
  int idle_followers = 0;
  std::vector<std::thread> followers;
  const std::function<void()>* on_takeover = nullptr;  // of the work being handed over
  // Long work still running on threads that handed serving over, or marked by LongWork (a
  // pipelined step queued for, or running on, the worker's step thread). While there is
  // any, the server polls briefly and then sleeps (Wait::long_work) instead of spinning 2 ms
  // after each message: on a machine with few cores the spin took them from that work (a
  // pipelined step's compute), and the messages that arrive meanwhile (the next step, a
  // read that waits for this one) are not in a hurry.
  std::atomic<int> handed_over{0};
};
Serving& serving() {
  static auto* s = new Serving();
  return *s;
}

}  // namespace

Wait serving_wait() { return serving().handed_over.load(std::memory_order_relaxed) > 0 ? Wait::long_work : Wait::prompt; }

LongWork::LongWork() { serving().handed_over.fetch_add(1, std::memory_order_relaxed); }
LongWork::~LongWork() { serving().handed_over.fetch_sub(1, std::memory_order_relaxed); }

namespace {

void serve_messages();

// Waits until this thread may serve (or the worker stops); true when it serves now. A
// follower takes over only from work that has run for a while (checked every 0.5 ms), so
// short work on the serving thread never wakes anyone.
bool follow() {
  Serving& sv = serving();
  constexpr auto kTakeOverAfter = std::chrono::microseconds(500);
  std::unique_lock lock(sv.mu);
  ++sv.idle_followers;
  while (!state().stop_requested &&
         !(sv.successor_wanted && std::chrono::steady_clock::now() - sv.wanted_since >= kTakeOverAfter))
    sv.cv.wait_for(lock, kTakeOverAfter);
  --sv.idle_followers;
  if (state().stop_requested) return false;
  sv.successor_wanted = false;
  if (const std::function<void()>* hook = std::exchange(sv.on_takeover, nullptr); hook && *hook) {
    try {
      (*hook)();
    } catch (...) {  // out of memory: the messages behind find no outputs and report that
      TESSEL_WARN_LOG("controller: taking over serving: " + exception_message(std::current_exception()));
    }
  }
  sv.server = std::this_thread::get_id();
  sv.handed_over.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void follower_main() {
  while (follow()) serve_messages();
}

// The receive a worker keeps posted for the driver's next message (only the serving thread
// touches it): a message arrives straight into its buffer, with no probe and no second
// matching. Two buffers take turns, so the handler reads its message in place while the
// next one arrives in the other. A handler that still reads its message after another
// thread took over serving keeps that buffer (shared), and the receive gets a fresh one.
// The operation named by the serving loop's MPI errors, made once (it polls often).
const std::string& serving_op() {
  static const auto* op = new std::string("worker");
  return *op;
}

struct PostedReceive {
  using Bytes = std::shared_ptr<char[]>;
  Bytes posted = make(), spare = make();
  MPI_Request req = MPI_REQUEST_NULL;
  static Bytes make() { return std::make_shared_for_overwrite<char[]>(size_t(kInlineBytes)); }
  void post() {
    mpi::check(MPI_Irecv(posted.get(), kInlineBytes, MPI_CHAR, 0, MPI_ANY_TAG, state().comm, &req), "MPI_Irecv",
               serving_op());
  }
  // The buffer the completed receive filled; the other one is posted next.
  Bytes take_filled() {
    if (spare.use_count() > 1) spare = make();                    // a handed-over handler still reads it
    else std::atomic_thread_fence(std::memory_order_acquire);      // its reads are over before MPI writes
    Bytes filled = std::exchange(posted, std::move(spare));
    spare = filled;
    return filled;
  }
  void cancel() {
    if (req == MPI_REQUEST_NULL) return;
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
};
PostedReceive& posted_receive() {
  static auto* r = new PostedReceive();
  return *r;
}

// A message, read where it arrived: `bytes` lies in `owner`.
struct Message {
  PostedReceive::Bytes owner;
  std::string_view bytes;
};

// The message that completed the posted receive: whole, or the size of one that follows.
Message take_message(PostedReceive& in, const MPI_Status& status) {
  State& s = state();
  int n = 0;
  MPI_Get_count(&status, MPI_CHAR, &n);
  PostedReceive::Bytes filled = in.take_filled();
  if (status.MPI_TAG != kAnnounceTag) return {filled, std::string_view(filled.get(), size_t(n))};
  uint64_t size = 0;
  if (n != int(sizeof size)) throw Error("internal: worker: a message announcement of " + std::to_string(n) + " bytes");
  std::memcpy(&size, filled.get(), sizeof size);
  auto body = std::make_shared_for_overwrite<char[]>(size_t(size));
  mpi::check(MPI_Recv(body.get(), int(size), MPI_CHAR, 0, kBodyTag, s.comm, MPI_STATUS_IGNORE), "MPI_Recv",
             serving_op());
  return {body, std::string_view(body.get(), size_t(size))};
}

// Receives and dispatches messages while this thread is the server.
void serve_messages() {
  State& s = state();
  Serving& sv = serving();
  PostedReceive& in = posted_receive();
  Wait wait = serving_wait();
  Backoff backoff(wait);
  auto last_check = std::chrono::steady_clock::now();
  while (!s.stop_requested) {
    int done = 0;
    MPI_Status status;
    mpi::check(MPI_Test(&in.req, &done, &status), "MPI_Test", serving_op());
    if (!done) {
      // Long work that ended (a pipelined step) is often followed by the driver's next
      // message at once: poll promptly again from then on.
      if (Wait now = serving_wait(); now != wait) backoff = Backoff(wait = now);
      free_dropped();  // idle: the dropped arrays' memory goes now
      if (auto now = std::chrono::steady_clock::now(); now - last_check > std::chrono::milliseconds(100)) {
        last_check = now;
        // A driver on another host that vanished sends nothing more: end instead of serving
        // nobody forever.
        if (std::string why = liveness::silent(0); !why.empty()) {
          std::fprintf(stderr, "[tessel %d] worker: the driver, %s, is gone: %s; this worker ends\n",
                       mpi::world_rank(), liveness::describe(0).c_str(), why.c_str());
          std::fflush(stderr);
          std::_Exit(1);
        }
      }
      backoff.pause();
      continue;
    }
    const Message message = take_message(in, status);
    in.post();  // the next message may arrive while this one runs
    dispatch(message.bytes);
    backoff = Backoff(wait = serving_wait());
    std::lock_guard lock(sv.mu);  // only a handler can have handed serving over
    if (sv.server != std::this_thread::get_id()) return;
  }
}

void serve() {
  Serving& sv = serving();
  {
    std::lock_guard lock(sv.mu);
    sv.server = std::this_thread::get_id();
  }
  posted_receive().post();
  do serve_messages();
  while (!state().stop_requested && follow());
  {
    std::lock_guard lock(sv.mu);
    sv.cv.notify_all();  // followers see the stop
  }
  for (auto& t : sv.followers) t.join();
  posted_receive().cancel();
}

// True once every buffer is computed, waiting up to 0.5 ms: the answer to a read that
// arrives just before its value is usually that close. While long work runs (serving_wait)
// it answers at once: the value is most likely that work's, and a spin would take a core
// from it.
bool ready_soon(const std::vector<std::shared_ptr<detail::Buffer>>& bufs) {
  auto all_ready = [&] {
    for (auto& b : bufs)
      if (b && !b->ready()) return false;
    return true;
  };
  if (serving_wait() == Wait::long_work) return all_ready();
  return detail::spin_until(all_ready, std::chrono::microseconds(500));
}

// This process's resident memory (/proc/self/statm), 0 where it cannot be read.
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * uint64_t(::sysconf(_SC_PAGESIZE));
}

// ---- built-in handlers ----

[[maybe_unused]] const bool builtins = [] {
  register_handler("stop", [](ir::Reader&, Reply reply) {
    State& s = state();
    {
      std::unique_lock lock(s.later_mu);
      s.later_cv.wait(lock, [&] { return s.later_running == 0; });
    }
    for (auto* d : detail::local_device_impls()) d->stream().synchronize();
    {
      std::lock_guard lock(s.table_mu);
      s.table.clear();
      s.objects.clear();
    }
    {
      std::lock_guard lock(serving().mu);
      s.stop_requested = true;
      serving().cv.notify_all();
    }
    reply.ok();
  });
  register_handler("array.wait", [](ir::Reader& r, Reply reply) {
    Array a = lookup(r.u64(), "block_until_ready");
    const bool ready = ready_soon(detail::piece_buffers(a));
    reply_later(reply, [a] {
      a.block_until_ready();
      return std::string();
    }, ready);
  });
  register_handler("array.fetch", [](ir::Reader& r, Reply reply) {
    Array a = lookup(r.u64(), "fetch");
    const detail::ConcreteArray* c = detail::as_concrete(a);
    if (!c) throw Error("internal: fetch of an array that is not concrete");
    // A single-device array made here is a plain one: its only piece is its buffer.
    std::span<const std::shared_ptr<detail::Buffer>> all = c->shards();
    // The pieces, in a vector this thread keeps (no allocation per read); emptied when the
    // handler ends, so that it holds no buffer after.
    thread_local std::vector<std::shared_ptr<detail::Buffer>> pieces;
    struct Clear {
      ~Clear() { pieces.clear(); }
    } clear_at_end;
    pieces.resize(r.count(8));
    for (auto& piece : pieces) {
      uint64_t pos = r.u64();
      if (pos >= all.size() || !all[pos]) throw Error("internal: fetch of a piece this worker lacks");
      piece = all[pos];
    }
    if (ready_soon(pieces)) {  // computed (or failed: wait() throws, and the handler's caller fails the reply)
      reply.ok_writing([&](std::string& out) {
        for (auto& b : pieces) {
          b->wait();
          out.append(static_cast<const char*>(b->data()), b->nbytes());
        }
      });
      return;
    }
    reply_later(reply, [pieces = pieces, keep = a] {
      ir::Writer w;
      for (auto& b : pieces) {
        b->wait();
        w.raw(b->data(), b->nbytes());
      }
      return w.take();
    });
  });
  register_handler("stats", [](ir::Reader&, Reply reply) {
    State& s = state();
    free_dropped();  // the memory of what was dropped is gone when the driver asks
    ir::Writer w;
    {
      std::lock_guard lock(s.table_mu);
      w.u64(s.table.size());
      w.u64(s.objects.size());
    }
    w.u64(resident_bytes());
    reply.ok(w.bytes());
  });
  return true;
}();

}  // namespace

// ---- public (internal) API ----

bool is_driver() { return state().role == Role::driver; }
bool is_worker() { return state().role == Role::worker; }
MPI_Comm peer_comm() { return state().peers; }
int tag_limit() { return state().tag_limit; }

void start() {
  State& s = state();
  if (s.role != Role::none) return;
  mpi::check(MPI_Comm_dup(MPI_COMM_WORLD, &s.comm), "MPI_Comm_dup", "distributed::initialize");
  MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
  mpi::check(MPI_Comm_dup(MPI_COMM_WORLD, &s.peers), "MPI_Comm_dup", "distributed::initialize");
  MPI_Comm_set_errhandler(s.peers, MPI_ERRORS_RETURN);
  s.size = mpi::world_size();
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) s.tag_limit = *ub;
  // Every process learns where the others run (the driver's liveness checks).
  int pid = int(::getpid());
  std::vector<int> pids(size_t(s.size));
  mpi::check(MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, s.comm), "MPI_Allgather", "distributed::initialize");
  char host[kHostBytes] = {};
  gethostname(host, kHostBytes - 1);
  std::vector<char> hosts(size_t(s.size) * kHostBytes);
  mpi::check(MPI_Allgather(host, kHostBytes, MPI_CHAR, hosts.data(), kHostBytes, MPI_CHAR, s.comm), "MPI_Allgather",
             "distributed::initialize");
  for (int p = 0; p < s.size; ++p) {
    auto w = std::make_unique<WorkerInfo>();
    w->pid = pids[size_t(p)];
    w->host = std::string(&hosts[size_t(p) * kHostBytes]);
    s.procs.push_back(std::move(w));
  }
  if (mpi::world_rank() == 0) {
    s.role = Role::driver;
    static const DriverPieces pieces;
    detail::install_remote_pieces(pieces);
    TESSEL_DEBUG_LOG("controller: driver of " + std::to_string(s.size - 1) + " workers");
    return;
  }
  s.role = Role::worker;
  std::set_terminate(worker_terminate);
  TESSEL_DEBUG_LOG("controller: worker serving");
  try {
    serve();
  } catch (...) {
    worker_terminate();
  }
  std::exit(0);  // exit handlers flush the devices and finalize MPI
}

void stop_workers() {
  State& s = state();
  if (s.role != Role::driver || s.stopped) return;
  check_peers();
  for (int p = 1; p < s.size; ++p)
    if (s.procs[size_t(p)]->dead) {
      // The others may wait forever on the dead one (a collective): end the job instead.
      std::fflush(stdout);
      std::fprintf(stderr, "[tessel 0] %s died during the job (%s); ending the job\n", worker_name(p).c_str(),
                   s.procs[size_t(p)]->death.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  for (int p = 1; p < s.size; ++p) {
    if (s.procs[size_t(p)]->dead) continue;
    try {
      request(p, "stop", {});
    } catch (const std::exception& e) {
      TESSEL_WARN_LOG(std::string("controller: stopping ") + worker_name(p) + " failed: " + e.what());
    }
  }
  s.stopped = true;
}

uint64_t new_id() { return state().next_id.fetch_add(1); }

// [handler name][reply tag][ids to free][payload], as ir::Writer writes them (str: a u64
// length and the bytes; integers little-endian), in one allocation: every message pays it.
std::string write_message(const MessageHeader& h, std::string_view payload) {
  std::string out;
  write_message_into(out, h, payload);
  return out;
}

void write_message_into(std::string& out, const MessageHeader& h, std::string_view payload) {
  out.clear();
  out.reserve(8 + h.kind.size() + 4 + 8 + 8 * h.deletes.size() + payload.size());
  auto le = [&out](auto v) {  // one append per integer (the byte loop compiles to one store)
    char bytes[sizeof(v)];
    for (size_t i = 0; i < sizeof(v); ++i) bytes[i] = char(uint8_t(uint64_t(v) >> (8 * i)));
    out.append(bytes, sizeof(v));
  };
  le(uint64_t(h.kind.size()));
  out += h.kind;
  le(uint32_t(h.reply_tag));
  le(uint64_t(h.deletes.size()));
  for (auto id : h.deletes) le(id);
  out += payload;
}

namespace {
HeaderView read_header_view(ir::Reader& r) {
  HeaderView h;
  h.kind = r.raw(r.count(1));
  const uint32_t tag = r.u32();
  if (tag != 0 && (tag < uint32_t(kFirstReplyTag) || tag > uint32_t(state().tag_limit)))
    r.fail("reply tag " + std::to_string(tag) + " is outside [" + std::to_string(kFirstReplyTag) + ", " +
           std::to_string(state().tag_limit) + "] (and not 0, no reply)");
  h.reply_tag = int(tag);
  h.deletes = r.count(8);
  return h;
}
}  // namespace

MessageHeader read_message_header(ir::Reader& r) {
  const HeaderView v = read_header_view(r);
  MessageHeader h{std::string(v.kind), v.reply_tag, std::vector<uint64_t>(v.deletes)};
  for (auto& id : h.deletes) id = r.u64();
  return h;
}

void post(const std::vector<int>& processes, const std::string& kind, std::string_view payload) {
  State& s = state();
  std::lock_guard lock(s.send_mu);
  std::string& bytes = framing_buffer();
  for (int p : processes) {
    write_message_into(bytes, next_header_locked(p, kind, 0), payload);
    send_to(p, bytes, kind);
  }
  trim_framing_buffer(bytes);
}

std::string request(int process, const std::string& kind, std::string_view payload, const std::vector<int>& watch,
                    Wait wait) {
  State& s = state();
  if (s.role != Role::driver) throw Error("internal: controller request '" + kind + "' outside a single-controller driver");
  if (process <= 0 || process >= s.size) throw Error("internal: controller request to process " + std::to_string(process));
  int tag = next_reply_tag();
  ReplyReceive in;
  in.post(process, tag, kind);
  try {
    std::lock_guard lock(s.send_mu);
    std::string& bytes = framing_buffer();
    write_message_into(bytes, next_header_locked(process, kind, tag), payload);
    send_to(process, bytes, kind);
    trim_framing_buffer(bytes);
  } catch (...) {
    in.abandon();
    throw;
  }
  return wait_reply(process, tag, in, kind, watch, wait);
}

namespace {
// Sends a reply: whole when the driver's posted receive holds it, else announced first.
void send_reply(int tag, const std::string& bytes) {
  State& s = state();
  if (bytes.size() > size_t(kInlineReply)) {
    ir::Writer w;
    w.u8(uint8_t(kAnnouncedReply));
    w.u64(bytes.size());
    MPI_Send(w.bytes().data(), int(w.bytes().size()), MPI_CHAR, 0, tag, s.comm);
  }
  MPI_Send(bytes.data(), int(bytes.size()), MPI_CHAR, 0, tag, s.comm);
}
}  // namespace

void Reply::ok(std::string_view payload) const {
  ok_writing([payload](std::string& out) { out += payload; });
}

std::string& Reply::ok_frame() {
  std::string& out = framing_buffer();
  out.clear();
  out += char(1);
  return out;
}

void Reply::send_frame(std::string& out) const {
  send_reply(tag_, out);
  trim_framing_buffer(out);
}

void Reply::fail(std::exception_ptr error) const {
  if (!tag_) return;
  ir::Writer w;
  w.u8(0);
  write_error(w, error);
  send_reply(tag_, w.bytes());
}

void run_while_others_serve(const std::function<void()>& fn, const std::function<void()>& on_takeover) {
  Serving& sv = serving();
  const auto me = std::this_thread::get_id();
  {
    std::lock_guard lock(sv.mu);
    if (sv.server != me) return fn();  // not on the serving thread
    sv.successor_wanted = true;
    sv.on_takeover = &on_takeover;
    sv.wanted_since = std::chrono::steady_clock::now();
    if (sv.idle_followers == 0) {
      try {
        sv.followers.push_back(detail::start_thread("a serving thread of this worker", follower_main));
      } catch (const ResourceExhaustedError&) {
        sv.successor_wanted = false;  // no thread to spare: serve again once fn is done
        sv.on_takeover = nullptr;
      }
    }
  }
  struct Done {  // also when fn throws: the hook points into the caller's frame
    Serving& sv;
    const std::function<void()>& hook;
    std::thread::id me;
    ~Done() {
      std::lock_guard lock(sv.mu);
      if (sv.on_takeover == &hook) sv.on_takeover = nullptr;
      if (sv.server == me) sv.successor_wanted = false;  // nobody took over: go on serving
      else sv.handed_over.fetch_sub(1, std::memory_order_relaxed);  // and this thread becomes a follower
    }
  } done{sv, on_takeover, me};
  fn();
}

bool register_handler(const std::string& kind, Handler handler) {
  if (!handlers().emplace(kind, std::move(handler)).second)
    throw Error("controller: a handler named '" + kind + "' is already registered");
  return true;
}

void reply_later(Reply reply, std::function<std::string()> fn, bool ready) {
  if (ready) {  // nothing to wait for: answer at once
    try {
      reply.ok(fn());
    } catch (...) {
      reply.fail(std::current_exception());
    }
    return;
  }
  State& s = state();
  {
    std::lock_guard lock(s.later_mu);
    ++s.later_running;
  }
  auto done = [] {
    State& st = state();
    std::lock_guard lock(st.later_mu);
    --st.later_running;
    st.later_cv.notify_all();
  };
  try {
    detail::start_thread("a reply computed later", [reply, fn = std::move(fn), done] {
      try {
        reply.ok(fn());
      } catch (...) {
        reply.fail(std::current_exception());
      }
      done();
    }).detach();
  } catch (...) {  // no thread: the caller gets the ResourceExhaustedError
    done();
    reply.fail(std::current_exception());
  }
}

void store(uint64_t id, Array a) {
  State& s = state();
  std::lock_guard lock(s.table_mu);
  put_entry_locked(id, State::Entry{std::move(a), nullptr});
}

void store_error(uint64_t id, std::exception_ptr error) {
  State& s = state();
  std::lock_guard lock(s.table_mu);
  put_entry_locked(id, State::Entry{Array(), std::move(error)});
}

void keep(uint64_t id, std::shared_ptr<const void> object) {
  State& s = state();
  std::lock_guard lock(s.table_mu);
  s.objects[id] = std::move(object);
}

std::shared_ptr<const void> kept(uint64_t id) {
  State& s = state();
  std::lock_guard lock(s.table_mu);
  auto it = s.objects.find(id);
  return it == s.objects.end() ? nullptr : it->second;
}

void forget(const std::vector<int>& processes, uint64_t id) noexcept {
  State& s = state();
  if (s.role != Role::driver || s.stopped) return;
  try {
    std::lock_guard lock(s.pending_mu);
    for (int p : processes) {
      if (p < 0) continue;
      if (size_t(p) >= s.pending_deletes.size()) s.pending_deletes.resize(size_t(p) + 1);
      s.pending_deletes[size_t(p)].push_back(id);
    }
  } catch (...) {  // out of memory: the worker keeps it until it stops
  }
}

WorkerStats worker_stats(int process) {
  std::string reply = request(process, "stats", {});
  ir::Reader r(reply, "stats");
  WorkerStats st;
  st.arrays = r.u64();
  st.objects = r.u64();
  st.resident_bytes = r.u64();
  return st;
}

Array lookup(uint64_t id, std::string_view what) {
  State& s = state();
  std::lock_guard lock(s.table_mu);
  auto it = s.table.find(id);
  if (it == s.table.end())
    throw Error(std::string(what) + ": worker process " + std::to_string(mpi::world_rank()) + " holds no array with id " +
                std::to_string(id) + " (freed already?)");
  if (it->second.error) std::rethrow_exception(it->second.error);
  return it->second.array;
}

std::vector<int> remote_processes(const std::vector<Device>& devices) {
  std::vector<int> r;
  for (const Device& d : devices)
    if (!d.impl()->is_local() && std::find(r.begin(), r.end(), d.process_index()) == r.end())
      r.push_back(d.process_index());
  std::sort(r.begin(), r.end());
  return r;
}

bool long_work(uint64_t id) {
  LongWorkIds& l = long_work_ids();
  if (l.count.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(l.mu);
  return l.ids.count(id) != 0;
}

std::shared_ptr<const detail::RemoteRef> make_ref(uint64_t id, std::vector<int> processes, bool long_work) {
  if (long_work) {
    LongWorkIds& l = long_work_ids();
    std::lock_guard lock(l.mu);
    if (l.ids.insert(id).second) l.count.fetch_add(1, std::memory_order_relaxed);
  }
  return std::make_shared<const detail::RemoteRef>(id, std::move(processes));
}

uint64_t remote_id(const Array& a, const std::string& what) {
  auto* s = detail::as_sharded(a);
  if (!s || !s->remote)
    throw Error("internal: " + what + ": an array with pieces on other processes has no remote id");
  return s->remote->id;
}

// Errors travel as their tessel type and message.
void write_error(ir::Writer& w, std::exception_ptr error) {
  uint8_t type = 0;
  std::string message = "unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const ShapeError& e) {
    type = 1, message = e.what();
  } catch (const DTypeError& e) {
    type = 2, message = e.what();
  } catch (const IndexError& e) {
    type = 3, message = e.what();
  } catch (const ValueError& e) {
    type = 4, message = e.what();
  } catch (const ConcretizationError& e) {
    type = 5, message = e.what();
  } catch (const NotImplementedError& e) {
    type = 6, message = e.what();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  w.u8(type);
  w.str(message);
}

void throw_error(ir::Reader& r, const std::string& where) {
  uint8_t type = r.u8();
  std::string m = r.str() + " [in " + where + "]";
  switch (type) {
    case 1: throw ShapeError(m);
    case 2: throw DTypeError(m);
    case 3: throw IndexError(m);
    case 4: throw ValueError(m);
    case 5: throw ConcretizationError(m);
    case 6: throw NotImplementedError(m);
    default: throw Error(m);
  }
}

}  // namespace tessel::distributed::controller
