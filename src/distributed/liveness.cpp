// Heartbeats over UDP between the processes of a job (see liveness.h).
#include "distributed/liveness.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/log.h"
#include "tessel/error.h"

namespace tessel::distributed::liveness {
namespace {

constexpr int kMaxAddrs = 4;
constexpr int kHostChars = 48;

// What each process tells the others when the job starts (gathered as plain bytes).
struct Card {
  uint64_t token = 0;  // rank 0's is the job's: datagrams of another job are ignored
  int32_t pid = 0;
  uint16_t port = 0;   // network order
  uint16_t naddrs = 0;
  uint32_t addrs[kMaxAddrs] = {};  // IPv4, network order
  char host[kHostChars] = {};
};

// One datagram: the job, the sender, and whether it ends normally.
struct Beat {
  uint64_t token;
  int32_t rank;
  int32_t bye;
};

using Clock = std::chrono::steady_clock;

struct State {
  int rank = 0, size = 1;
  int fd = -1;
  std::chrono::milliseconds timeout{0};
  std::vector<Card> cards;
  std::unique_ptr<std::atomic<int64_t>[]> last_seen;  // steady_clock ns since epoch
  std::unique_ptr<std::atomic<bool>[]> ended;
  Clock::time_point started;
  std::atomic<bool> running{false};
  std::thread thread;
  std::atomic<int> blocking_calls{0};         // BlockingCall objects alive
  std::atomic<const char*> blocking_prefix{""}, blocking_op{"a blocking MPI call"};  // the latest one's
};
State& state() {
  static auto* s = new State();  // used by exit handlers
  return *s;
}

int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

// This host's IPv4 addresses that are up, loopback last (a process with no other address
// is reachable only on its own host).
std::vector<uint32_t> own_addresses() {
  std::vector<uint32_t> out, loop;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      uint32_t a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
      ((i->ifa_flags & IFF_LOOPBACK) ? loop : out).push_back(a);
    }
    freeifaddrs(list);
  }
  if (out.empty()) out = loop.empty() ? std::vector<uint32_t>{htonl(INADDR_LOOPBACK)} : loop;
  if (out.size() > size_t(kMaxAddrs)) out.resize(size_t(kMaxAddrs));
  return out;
}

void send_beat(State& s, bool bye) {
  Beat b{s.cards[0].token, s.rank, bye ? 1 : 0};
  for (int r = 0; r < s.size; ++r) {
    if (r == s.rank) continue;
    const Card& c = s.cards[size_t(r)];
    for (int k = 0; k < c.naddrs; ++k) {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = c.port;
      to.sin_addr.s_addr = c.addrs[k];
      // Best effort: an unreachable peer is what the receiver's silence reports.
      (void)::sendto(s.fd, &b, sizeof b, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), sizeof to);
    }
  }
}

[[noreturn]] void abort_blocked_call(State& s, int peer);

// Sends a heartbeat each interval and records the ones that arrive; ends the job when a
// blocking call is in flight and a peer fell silent (BlockingCall).
void run(State& s) {
  const auto interval = std::clamp(s.timeout / 5, std::chrono::milliseconds(20), std::chrono::milliseconds(1000));
  auto next = Clock::now();
  while (s.running.load(std::memory_order_relaxed)) {
    if (Clock::now() >= next) {
      send_beat(s, false);
      next = Clock::now() + interval;
      if (s.blocking_calls.load(std::memory_order_acquire) > 0)
        if (int peer = first_silent(); peer >= 0) abort_blocked_call(s, peer);
    }
    pollfd p{s.fd, POLLIN, 0};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    if (::poll(&p, 1, int(std::max<int64_t>(wait, 1))) <= 0) continue;
    Beat b;
    while (::recv(s.fd, &b, sizeof b, MSG_DONTWAIT) == ssize_t(sizeof b)) {
      if (b.token != s.cards[0].token || b.rank < 0 || b.rank >= s.size) continue;
      s.last_seen[size_t(b.rank)].store(now_ns(), std::memory_order_relaxed);
      if (b.bye) s.ended[size_t(b.rank)].store(true);
    }
  }
}

void abort_blocked_call(State& s, int peer) {
  std::fprintf(stderr,
               "tessel: %s%s on process %d: %s is gone: %s. A blocking MPI call cannot return without it, so "
               "the job ends here (MPI_Abort); restart it from its last checkpoint\n",
               s.blocking_prefix.load(), s.blocking_op.load(), s.rank, describe(peer).c_str(), silent(peer).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort returned: nothing else can end the blocked call
}

std::string address_text(uint32_t a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

}  // namespace

void start(MPI_Comm world, int rank, int size) {
  State& s = state();
  if (size <= 1 || s.running) return;
  s.timeout = std::chrono::milliseconds(config::get_int(config::kPeerTimeoutMs));
  // Every process takes part in the gather below, whatever its setting: a job whose
  // processes disagree about TESSEL_PEER_TIMEOUT_MS=0 still joins.
  Card mine;
  mine.pid = int32_t(::getpid());
  ::gethostname(mine.host, sizeof mine.host - 1);
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof any;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&any), &len) != 0) {
      ::close(fd);
      fd = -1;
    } else {
      mine.port = any.sin_port;
    }
  }
  if (fd >= 0 && s.timeout.count() > 0) {
    auto addrs = own_addresses();
    mine.naddrs = uint16_t(addrs.size());
    std::copy(addrs.begin(), addrs.end(), mine.addrs);
  }
  mine.token = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  s.cards.assign(size_t(size), Card{});
  if (MPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, s.cards.data(), int(sizeof mine), MPI_BYTE, world) != MPI_SUCCESS ||
      fd < 0 || s.timeout.count() == 0) {
    if (fd >= 0) ::close(fd);
    if (fd < 0) TESSEL_WARN_LOG("liveness: no UDP socket; processes dying on other hosts will not be detected");
    return;
  }
  s.rank = rank;
  s.size = size;
  s.fd = fd;
  s.last_seen = std::make_unique<std::atomic<int64_t>[]>(size_t(size));
  s.ended = std::make_unique<std::atomic<bool>[]>(size_t(size));
  s.started = Clock::now();
  for (int r = 0; r < size; ++r) s.last_seen[size_t(r)].store(now_ns());
  s.running = true;
  s.thread = std::thread([&s] { run(s); });
}

void stop() noexcept {
  State& s = state();
  if (!s.running.exchange(false)) return;
  if (s.thread.joinable()) s.thread.join();
  send_beat(s, true);
  ::close(s.fd);
  s.fd = -1;
}

std::string silent(int rank) {
  State& s = state();
  if (!s.running.load(std::memory_order_relaxed) || rank == s.rank || rank < 0 || rank >= s.size) return {};
  if (s.ended[size_t(rank)].load()) return {};
  const int64_t quiet = now_ns() - s.last_seen[size_t(rank)].load(std::memory_order_relaxed);
  if (quiet < std::chrono::duration_cast<std::chrono::nanoseconds>(s.timeout).count()) return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", double(quiet) * 1e-9);
  return std::string("no heartbeat from it for ") + buf + " s (TESSEL_PEER_TIMEOUT_MS=" +
         std::to_string(s.timeout.count()) + "): its host is down or unreachable, or the process was killed";
}

int first_silent() {
  State& s = state();
  if (!s.running.load(std::memory_order_relaxed)) return -1;
  for (int r = 0; r < s.size; ++r)
    if (!silent(r).empty()) return r;
  return -1;
}

std::string describe(int rank) {
  State& s = state();
  std::string r = "process " + std::to_string(rank);
  if (rank < 0 || size_t(rank) >= s.cards.size()) return r;
  const Card& c = s.cards[size_t(rank)];
  std::string host(c.host, strnlen(c.host, sizeof c.host));
  if (c.naddrs > 0) host += "/" + address_text(c.addrs[0]);
  return r + " (pid " + std::to_string(c.pid) + " on host " + host + ")";
}

void check(int rank, const char* op) {
  std::string why = silent(rank);
  if (why.empty()) return;
  throw Error(std::string(op) + ": " + describe(rank) + " is gone: " + why +
              ". Its devices and the values on them are lost; restart the job");
}

void check_all(const char* op) {
  if (int r = first_silent(); r >= 0) check(r, op);
}

BlockingCall::BlockingCall(const char* prefix, const char* op) noexcept {
  State& s = state();
  s.blocking_prefix.store(prefix);
  s.blocking_op.store(op);
  s.blocking_calls.fetch_add(1, std::memory_order_release);
}

BlockingCall::~BlockingCall() { state().blocking_calls.fetch_sub(1, std::memory_order_release); }

}  // namespace tessel::distributed::liveness
