// Mutation fuzzing of every reader of bytes that another process sends (docs/program_ir.md
// "Fuzzing the readers"): serialized programs (ir::deserialize, then the verifier and the
// printer), driver messages (their header), worker replies (their error), pipeline
// instruction streams and array payloads (sharding + array). Seeds are made in this
// process (programs with loops, cond, scan, grad, vmap, nested and shared programs,
// constants, meshes and shardings); input k of a run is seed input k % n mutated with a
// generator seeded by (--seed, k), so `--only k` replays one input exactly.
//
// A reader may accept mutated bytes or throw a tessel::Error; anything else — another
// exception type, a crash, or what AddressSanitizer/UBSan report — is a finding: the run
// prints the input's number and hex and exits 1.
//
//   tessel_fuzz_readers [--inputs N] [--seed S] [--only K] [--target program|message|reply|stream|array]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/jit_primitive.h"
#include "distributed/controller.h"
#include "ir/serialize.h"
#include "ir/sharding_rule.h"
#include "ir/trace.h"
#include "pipeline/instructions.h"
#include "pipeline/slicing.h"
#include "tessel/tessel.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace ts = tessel;
namespace ir = tessel::ir;
namespace pp = tessel::pipeline;
namespace ppd = tessel::pipeline::detail;
namespace ctl = tessel::distributed::controller;

namespace {

using Fn = std::function<std::vector<ts::Array>(std::span<const ts::Array>)>;

std::string program_bytes(const Fn& f, const std::vector<ts::Array>& args, const char* name) {
  std::vector<ts::Aval> avals;
  for (const auto& a : args) avals.push_back(a.aval());
  return ir::serialize(ts::detail::trace_to_program(f, avals, name));
}

ts::Array ramp(int64_t n, float scale = 0.25f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i) * scale - 1.0f;
  return ts::Array(v);
}

std::vector<std::string> program_seeds() {
  std::vector<std::string> seeds;
  const ts::Array x = ramp(4), xs = ramp(6, 0.5f), m = ts::reshape(ramp(12), {3, 4});
  const ts::Array captured = ramp(4, 0.1f);  // becomes a constant of the program
  seeds.push_back(program_bytes(
      [&](std::span<const ts::Array> a) {
        ts::Array y = ts::sin(a[0]) * captured + 2.0f;
        return std::vector<ts::Array>{y, ts::astype(y, ts::i32) + 1, ts::astype(y, ts::f64) * 0.5};
      },
      {x}, "consts"));
  seeds.push_back(program_bytes(
      [](std::span<const ts::Array> a) {
        ts::Array w = ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 100.0; },
                                     [](const ts::Array& v) { return v * 1.5 + 1.0; }, a[0]);
        ts::Array f = ts::fori_loop(0, 3, [](const ts::Array& i, const ts::Array& v) { return v + ts::astype(i, ts::f32); },
                                    a[0]);
        return std::vector<ts::Array>{w, f};
      },
      {x}, "loops"));
  seeds.push_back(program_bytes(
      [](std::span<const ts::Array> a) {
        ts::Array c = ts::cond(
            ts::sum(a[0]) > 0.0, [](const ts::Array& v) { return v * 2.0; }, [](const ts::Array& v) { return -v; }, a[0]);
        auto [carry, ys] = ts::scan(
            [](const ts::Array& k, const ts::Array& e) {
              ts::Array next = ts::cond(
                  e > 0.0, [](const ts::Array& kk, const ts::Array& ee) { return kk * ee; },
                  [](const ts::Array& kk, const ts::Array& ee) { return kk + ts::sin(ee); }, k, e);
              return std::make_pair(next, next * e);
            },
            ts::Array(1.0f), a[1]);
        return std::vector<ts::Array>{c, carry, ys};
      },
      {x, xs}, "cond_scan"));
  auto loss = [](const ts::Array& v) { return ts::sum(ts::sin(v) * v + ts::tanh(v * v)); };
  seeds.push_back(program_bytes([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::grad(loss)(a[0])}; },
                                {x}, "grad"));
  seeds.push_back(program_bytes(
      [&](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::grad(ts::checkpoint(loss))(a[0])}; }, {x},
      "remat_grad"));
  seeds.push_back(program_bytes(
      [](std::span<const ts::Array> a) {
        auto per_row = [](const ts::Array& r) { return ts::sum(r * r) + ts::max(r, {0}); };
        return std::vector<ts::Array>{ts::vmap(per_row)(a[0])};
      },
      {m}, "vmap"));
  auto inner = ts::jit([](const ts::Array& v) { return ts::exp(v) * 2.0; }, {.name = "inner"});
  auto outer = ts::jit([inner](const ts::Array& v) { return inner(inner(v) + 1.0); }, {.name = "outer"});
  seeds.push_back(program_bytes([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{outer(a[0])}; }, {x},
                                "nested_jit"));
  seeds.push_back(program_bytes(
      [](std::span<const ts::Array> a) {
        ts::Array t = ts::transpose(a[0], ts::Axes{1, 0});
        ts::Array s = a[0][{ts::Slice(1, 3), ts::Slice(0, ts::none, 2)}];
        ts::Array c = ts::concatenate({s, s}, 1);
        ts::Array d = ts::dynamic_slice(a[0], {ts::Array(1), ts::Array(2)}, {2, 2});
        ts::Array u = a[0].at({0, ts::Slice(1, 4)}).add(ts::Array(std::vector<float>{1, 2, 3}));
        ts::Array p = ts::pad(a[0], {{1, 2}}, "constant", 0.0f);
        return std::vector<ts::Array>{t, ts::reshape(c, {8}), d, u, p, ts::matmul(a[0], t), ts::cumsum(a[0], 1),
                                      ts::argmax(a[0], 1), ts::broadcast_to(a[0][{0}], {2, 4})};
      },
      {m}, "shapes"));
  seeds.push_back(program_bytes(
      [](std::span<const ts::Array> a) {
        ts::Array ks = ts::random::split(a[0]);
        return std::vector<ts::Array>{ts::random::uniform(ts::reshape(ts::slice(ks, {0, 0}, {1, 2}), {2}), {3})};
      },
      {ts::random::key(7)}, "random"));
  if (ts::devices().size() >= 8) {
    ts::Mesh mesh = ts::make_mesh({4, 2}, {"x", "y"});
    auto g = ts::shard_map([](const ts::Array& v) { return ts::psum(ts::sin(v), "x"); }, mesh, {ts::P("x")}, {ts::P()});
    seeds.push_back(program_bytes([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{g(a[0])}; },
                                  {ramp(8)}, "shard_map"));
    ts::Sharding s = ts::NamedSharding(mesh, ts::P("x", "y"));
    auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b) + 1.0f; },
                     {.in_shardings = {s, ts::NamedSharding(mesh, ts::P("y", ts::none))}});
    seeds.push_back(program_bytes(
        [&](std::span<const ts::Array> v) {
          return std::vector<ts::Array>{ts::with_sharding_constraint(f(v[0], v[1]), ts::NamedSharding(mesh, ts::P("x")))};
        },
        {ts::reshape(ramp(32), {8, 4}), ts::reshape(ramp(8), {4, 2})}, "shardings"));
  }
  return seeds;
}

// A two-stage MLP training step, sliced for a pipeline: its segments and streams.
ppd::StagedProgram staged_mlp(bool split) {
  std::vector<ts::Array> ws = {ts::ones({4, 4}, ts::f32) * 0.1f, ts::ones({4, 4}, ts::f32) * 0.2f};
  auto loss = [](const std::vector<ts::Array>& w, const ts::Array& x) {
    ts::Array h = ts::tanh(ts::matmul(x, w[0]));
    h = ts::tanh(ts::matmul(pp::enter_stage(h), w[1]));
    return ts::mean(h * h);
  };
  auto step = [&](const std::vector<ts::Array>& w, const ts::Array& x) { return ts::value_and_grad(loss)(w, x); };
  ts::Program p = ts::make_program(step, ws, ts::ones({2, 4}, ts::f32));
  return ppd::slice_program(ts::compiler::program_of(p), {false, false, true}, split);
}

std::vector<std::string> stream_seeds() {
  std::vector<std::string> seeds;
  for (bool split : {false, true}) {
    ppd::StagedProgram st = staged_mlp(split);
    pp::Schedule sched = split ? pp::Schedule(pp::ZeroBubbleH1{}) : pp::Schedule(pp::OneF1B{});
    ppd::Streams s = ppd::make_streams(st, pp::make_plan(sched, 2, 2, 3), {true});
    for (const auto& stream : s.per_worker) {
      ir::Writer w;
      ppd::write_stream(w, stream);
      seeds.push_back(w.take());
    }
  }
  return seeds;
}

std::vector<std::string> staged_program_seeds() {
  std::vector<std::string> seeds;
  for (const auto& seg : staged_mlp(true).segments)
    if (seg.program) seeds.push_back(ir::serialize(*seg.program));
  return seeds;
}

std::vector<std::string> message_seeds() {
  return {ctl::write_message({"program.run", 0, {}}, "payload"), ctl::write_message({"array.fetch", 17, {3, 4, 5}}, ""),
          ctl::write_message({"colocated.call", 0, {1}}, std::string(40, '\1'))};
}

std::vector<std::string> reply_seeds() {
  std::vector<std::string> seeds;
  for (auto e : {std::make_exception_ptr(ts::ShapeError("shape")), std::make_exception_ptr(ts::ValueError("value")),
                 std::make_exception_ptr(std::runtime_error("other"))}) {
    ir::Writer w;
    w.u8(0);
    ctl::write_error(w, e);
    seeds.push_back(w.take());
  }
  seeds.push_back(std::string(1, '\1') + "result bytes");
  return seeds;
}

std::vector<std::string> array_seeds() {
  std::vector<std::string> seeds;
  std::vector<ts::Sharding> shardings = {ts::SingleDeviceSharding(ts::devices()[0])};
  if (ts::devices().size() >= 8) {
    ts::Mesh mesh = ts::make_mesh({4, 2}, {"x", "y"});
    shardings.push_back(ts::NamedSharding(mesh, ts::P("x", "y")));
    shardings.push_back(ts::NamedSharding(mesh, ts::P(ts::none, "x")));
  }
  for (const auto& s : shardings) {
    ir::Writer w;
    ir::write_sharding(w, s);
    ir::write_array(w, ts::reshape(ramp(32), {8, 4}));
    seeds.push_back(w.take());
  }
  return seeds;
}

// ---- the readers under test ----

void read_program(std::string_view bytes) {
  ir::Program p = ir::deserialize(bytes);
  ir::verify_program(p);
  (void)ir::print_program(p);
  if (ir::deserialize(ir::serialize(p)).eqns.size() != p.eqns.size()) throw std::logic_error("round trip lost equations");
}

void read_message(std::string_view bytes) {
  ir::Reader r(bytes, "worker message");
  ctl::MessageHeader h = ctl::read_message_header(r);
  (void)h;
}

void read_reply(std::string_view bytes) {
  ir::Reader r(bytes, "reply");
  if (r.u8() == 1) return;
  ctl::throw_error(r, "worker");
}

void read_stream_bytes(std::string_view bytes) {
  ir::Reader r(bytes, "pipeline stream");
  for (const auto& in : ppd::read_stream(r)) (void)in.to_string();
}

void read_array_payload(std::string_view bytes) {
  ir::Reader r(bytes, "array.put");
  ts::Sharding s = ir::read_sharding(r);
  ts::Array x = ir::read_array(r);
  (void)s.to_string();
  (void)x.aval().to_string();
}

struct Target {
  const char* name;
  int weight;
  std::vector<std::string> seeds;
  void (*read)(std::string_view);
};

// ---- mutations ----

uint64_t interesting_word(std::mt19937_64& rng, size_t input_size) {
  static const uint64_t values[] = {0,          1,          2,          7,          8,           255,
                                    256,        0x7fff,     0x8000,     0xffff,     0x7fffffff,  0x80000000,
                                    0xffffffff, 1ull << 32, 1ull << 40, 1ull << 62, ~0ull >> 1,  1ull << 63,
                                    ~0ull,      ~0ull - 1,  3037000500, 1ull << 22, 0x100000000};
  const size_t n = sizeof(values) / sizeof(values[0]);
  size_t k = rng() % (n + 2);
  if (k == n) return input_size;
  if (k == n + 1) return rng();
  return values[k];
}

void mutate(std::string& b, std::mt19937_64& rng, const std::vector<std::string>& seeds) {
  auto pos = [&](size_t extra = 0) { return b.size() + extra == 0 ? size_t(0) : size_t(rng() % (b.size() + extra)); };
  switch (rng() % 9) {
    case 0:  // flip a bit
      if (!b.empty()) b[pos()] ^= char(1u << (rng() % 8));
      break;
    case 1:  // a random byte
      if (!b.empty()) b[pos()] = char(rng());
      break;
    case 2:  // truncate
      b.resize(pos(1));
      break;
    case 3: {  // insert random bytes
      std::string ins(1 + rng() % 16, '\0');
      for (auto& c : ins) c = char(rng());
      b.insert(pos(1), ins);
      break;
    }
    case 4: {  // erase a range
      if (b.empty()) break;
      size_t at = pos();
      b.erase(at, 1 + rng() % 16);
      break;
    }
    case 5:
    case 6: {  // an interesting 64-bit value (counts, lengths, indices, dimensions)
      if (b.size() < 8) break;
      uint64_t v = interesting_word(rng, b.size());
      size_t at = size_t(rng() % (b.size() - 7));
      for (int i = 0; i < 8; ++i) b[at + size_t(i)] = char(v >> (8 * i));
      break;
    }
    case 7: {  // an interesting byte (tags, dtypes, booleans, enums)
      static const unsigned char bytes[] = {0, 1, 2, 6, 7, 8, 9, 10, 16, 0x7f, 0x80, 0xff};
      if (!b.empty()) b[pos()] = char(bytes[rng() % sizeof(bytes)]);
      break;
    }
    default: {  // splice a chunk of a seed in
      const std::string& other = seeds[rng() % seeds.size()];
      if (other.empty() || b.empty()) break;
      size_t from = size_t(rng() % other.size()), len = std::min<size_t>(other.size() - from, 1 + rng() % 64);
      size_t at = pos();
      b.replace(at, std::min(len, b.size() - at), other, from, len);
      break;
    }
  }
}

std::string hex(std::string_view b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

// The input being read, for the report of a crash (a signal, or a sanitizer's report).
volatile uint64_t g_current = 0;
volatile uint64_t g_seed = 0;
struct sigaction g_previous[32];

void say_which_input() {
  char line[160];
  int n = std::snprintf(line, sizeof line, "FINDING: crash on input %llu; replay with --seed %llu --only %llu\n",
                        (unsigned long long)g_current, (unsigned long long)g_seed, (unsigned long long)g_current);
  if (n > 0) (void)!write(2, line, size_t(n));
}

void on_crash(int sig) {
  say_which_input();
  sigaction(sig, &g_previous[sig], nullptr);  // the fault repeats into the sanitizer's (or the default) handler
  if (sig == SIGABRT) raise(sig);
}

void report_crashes() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction a = {};
    a.sa_handler = on_crash;
    sigaction(sig, &a, &g_previous[sig]);
  }
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(say_which_input);
#endif
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--inputs N] [--seed S] [--only K] [--target program|message|reply|stream|array]\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("TESSEL_CPU_DEVICES", "8", 0);  // the meshes of the sharded seeds
  uint64_t inputs = 10000, seed = 1;
  int64_t only = -1;
  std::string only_target;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage(argv[0]);
    if (a == "--inputs") inputs = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed") seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--only") only = std::strtoll(argv[++i], nullptr, 10);
    else if (a == "--target") only_target = argv[++i];
    else return usage(argv[0]);
  }

  std::vector<Target> targets = {{"program", 12, program_seeds(), read_program},
                                 {"message", 1, message_seeds(), read_message},
                                 {"reply", 1, reply_seeds(), read_reply},
                                 {"stream", 3, stream_seeds(), read_stream_bytes},
                                 {"array", 1, array_seeds(), read_array_payload}};
  for (auto& s : staged_program_seeds()) targets[0].seeds.push_back(s);
  std::vector<size_t> wheel;  // target of input k: wheel[k % size], by weight
  for (size_t t = 0; t < targets.size(); ++t)
    if (only_target.empty() || only_target == targets[t].name)
      for (int w = 0; w < targets[t].weight; ++w) wheel.push_back(t);
  if (wheel.empty()) return usage(argv[0]);
  // Every seed must read (a reply that carries an error reads as that error): otherwise
  // the harness fuzzes nothing but the first check.
  for (auto& t : targets)
    for (auto& s : t.seeds) try {
        t.read(s);
      } catch (const ts::Error& e) {
        if (std::string(t.name) != "reply") throw;
      }

  std::vector<uint64_t> accepted(targets.size()), rejected(targets.size());
  const auto start = std::chrono::steady_clock::now();
  g_seed = seed;
  report_crashes();
  const uint64_t first = only >= 0 ? uint64_t(only) : 0, end = only >= 0 ? uint64_t(only) + 1 : inputs;
  for (uint64_t k = first; k < end; ++k) {
    g_current = k;
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull ^ (k + 1) * 0xc2b2ae3d27d4eb4full);
    const size_t t = wheel[k % wheel.size()];
    Target& target = targets[t];
    std::string bytes = target.seeds[rng() % target.seeds.size()];
    for (int n = 1 + (rng() % 2 ? 0 : int(rng() % 4)); n-- > 0;) mutate(bytes, rng, target.seeds);
    if (only >= 0) std::fprintf(stderr, "input %llu (%s): %s\n", (unsigned long long)k, target.name, hex(bytes).c_str());
    try {
      target.read(bytes);
      ++accepted[t];
    } catch (const ts::Error&) {
      ++rejected[t];
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "FINDING: input %llu (target %s, seed %llu) threw %s, not a tessel::Error: %s\n"
                   "  replay: %s --seed %llu --only %llu\n  bytes: %s\n",
                   (unsigned long long)k, target.name, (unsigned long long)seed, typeid(e).name(), e.what(), argv[0],
                   (unsigned long long)seed, (unsigned long long)k, hex(bytes).c_str());
      return 1;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t total = 0;
  for (size_t t = 0; t < targets.size(); ++t) {
    total += accepted[t] + rejected[t];
    std::printf("fuzz %-8s seeds %2zu  accepted %8llu  rejected %8llu\n", targets[t].name, targets[t].seeds.size(),
                (unsigned long long)accepted[t], (unsigned long long)rejected[t]);
  }
  std::printf("fuzz readers: %llu inputs (seed %llu) in %.1f s, no findings\n", (unsigned long long)total,
              (unsigned long long)seed, secs);
  return 0;
}
