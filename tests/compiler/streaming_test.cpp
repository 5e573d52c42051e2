// Streaming across loop nests (src/compiler/streaming.cpp): chains of loop nests that read
// each other at nearby rows run band by band as one `fused_chain` step, and give the same
// bytes as the loop nests run one after the other (TESSEL_FUSION_STREAM=0), for every
// dtype: the same generated kernels compute every row, whichever thread or band runs it.
// Checked on random chains of stencil-like loop nests over many shapes, bands and blocks,
// under jit, inside fori_loop, on 8 partitioned devices, and on the shallow-water step.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "compiler/codegen.h"
#include "compiler/executable.h"
#include "compiler/fusion.h"
#include "compiler/fusion_test_util.h"
#include "compiler/kernel_cache.h"
#include "compiler/passes.h"
#include "compiler/streaming.h"
#include "core/log.h"
#include "expect_error.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

#if __has_include("shallow_water.h")
#include "shallow_water.h"
#endif

namespace ts = tessel;
namespace {

using fusion_test::count_prim;
using fusion_test::Fn;
using fusion_test::run;

/// Sets an environment variable for the scope (jit reads TESSEL_FUSION_STREAM at each
/// compilation).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) unsetenv(name_);
    else setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

ts::ir::Program lower(const Fn& f, const std::vector<ts::Array>& args) { return fusion_test::lower(f, args, "chain"); }

/// Fuses every group, however small; streams chains with the given band and block sizes.
ts::compiler::FusionOptions options(bool stream, int64_t band_bytes = 512 << 10, int64_t block_rows = 0) {
  ts::compiler::FusionOptions o;
  o.min_elements = 0;
  o.stream = stream;
  o.stream_band_bytes = band_bytes;
  o.stream_block_rows = block_rows;
  return o;
}

/// Loop nests in the chains of `p`.
size_t chained_nests(const ts::ir::Program& p) {
  size_t n = 0;
  for (const auto& e : p.eqns)
    if (e.prim->name == "fused_chain") n += e.params.get<ts::ir::ProgramRef>("program")->eqns.size();
  return n;
}

/// The arrays' bytes (NaNs of one bit pattern compare equal; -0 and 0 differ).
std::vector<uint8_t> bytes(const ts::Array& a) {
  ts::Array c = ts::device_put(a, ts::devices()[0]);
  std::vector<uint8_t> b(a.nbytes());
  if (a.dtype() == ts::f32) std::memcpy(b.data(), c.to_vector<float>().data(), b.size());
  else if (a.dtype() == ts::f64) std::memcpy(b.data(), c.to_vector<double>().data(), b.size());
  else if (a.dtype() == ts::i32) std::memcpy(b.data(), c.to_vector<int32_t>().data(), b.size());
  else ADD_FAILURE() << "bytes: dtype " << ts::dtype_name(a.dtype());
  return b;
}

void expect_bitwise(const std::vector<ts::Array>& got, const std::vector<ts::Array>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape()) << what;
    const auto g = bytes(got[k]), w = bytes(want[k]);
    if (g == w) continue;
    // The first element that differs, for the message.
    const auto gv = ts::astype(ts::device_put(got[k], ts::devices()[0]), ts::f64).to_vector<double>();
    const auto wv = ts::astype(ts::device_put(want[k], ts::devices()[0]), ts::f64).to_vector<double>();
    size_t i = 0;
    while (i + 1 < gv.size() && std::memcmp(&gv[i], &wv[i], sizeof(double)) == 0) ++i;
    ADD_FAILURE() << what << ": output " << k << " " << got[k].aval().to_string() << " differs, first at flat index "
                  << i << ": " << gv[i] << " against " << wv[i];
  }
}

/// Within rounding of the unfused kernels (exact for integers).
void expect_close(const std::vector<ts::Array>& got, const std::vector<ts::Array>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    const auto a = ts::astype(ts::device_put(got[k], ts::devices()[0]), ts::f64).to_vector<double>();
    const auto b = ts::astype(ts::device_put(want[k], ts::devices()[0]), ts::f64).to_vector<double>();
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;
      ASSERT_NEAR(a[i], b[i], 1e-5 * (1 + std::abs(b[i]))) << what << ": output " << k << " element " << i;
    }
  }
}

/// Values of `dtype` in [-1, 1] (floats) or [-50, 50] (integers), no pattern along rows.
std::vector<ts::Array> inputs(ts::DType dtype, const ts::Shape& shape, int n, uint32_t seed) {
  std::vector<ts::Array> out;
  for (int k = 0; k < n; ++k) {
    ts::Array x = ts::sin(ts::reshape(ts::arange(0.0, double(ts::shape_size(shape)), 1.0, ts::f64), shape) *
                          (0.37 + 0.11 * k + 0.01 * seed));
    out.push_back(ts::is_floating(dtype) ? ts::astype(x, dtype) : ts::astype(ts::round(x * 50.0), dtype));
  }
  return out;
}

/// A chain of stencil-like stages over 2-D arrays: each stage combines reads of the
/// previous stages' results at offset rows and columns (slices of padded arrays, rows
/// shifted by concatenation, static scatters of row windows) with element-wise operations,
/// and every stage's result is returned, so each is a loop nest of its own that the next
/// reads. Floats add row reductions (fused epilogues): in the middle, broadcast back, and
/// at the end.
struct RandomChain {
  ts::DType dtype;
  uint32_t seed;
  int stages;
  bool return_all = true;  ///< else only the last stage (and the row reduction)

  std::vector<ts::Array> operator()(std::span<const ts::Array> in) const {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
    const int64_t R = in[0].shape()[0], C = in[0].shape()[1];
    const bool flt = ts::is_floating(dtype);
    std::vector<ts::Array> done(in.begin(), in.end()), outs;
    auto shifted = [&](const ts::Array& a) -> ts::Array {
      switch (pick(4)) {
        case 0: {  // a[i + di, j + dj] with a padded edge
          const int64_t di = pick(5), dj = pick(3);
          ts::Array p = ts::pad(a, {{2, 2}, {1, 1}}, pick(2) ? "edge" : "constant");
          return ts::slice(p, {di, dj}, {di + R, dj + C});
        }
        case 1: {  // rows shifted down by one, the first row repeated
          if (R < 2) return a;
          return ts::concatenate({ts::slice(a, {0, 0}, {1, C}), ts::slice(a, {0, 0}, {R - 1, C})}, 0);
        }
        case 2: {  // rows shifted up by one, the last row zero
          ts::Array tail = ts::zeros({1, C}, a.dtype());
          return R < 2 ? tail : ts::concatenate({ts::slice(a, {1, 0}, {R, C}), tail}, 0);
        }
        default: {  // a window of rows of a written into a shifted copy of itself
          if (R < 3) return a;
          const int64_t i0 = 1 + pick(int(R - 2)), i1 = i0 + 1 + pick(int(R - i0 - 1));
          return a.at({ts::Slice(i0, i1), ts::Slice()}).add(ts::slice(a, {i0 - 1, 0}, {i1 - 1, C}));
        }
      }
    };
    for (int s = 0; s < stages; ++s) {
      const ts::Array& a = done[done.size() - 1];
      const ts::Array& b = done[done.size() - 1 - size_t(pick(int(std::min<size_t>(done.size(), 3))))];
      ts::Array x = shifted(a), y = shifted(b);
      ts::Array r;
      switch (pick(5)) {
        case 0: r = x + y; break;
        case 1: r = flt ? x * y - 0.25 * a : x * 3 - y; break;
        case 2: r = ts::where(x > y, x, b - y); break;
        case 3: r = flt ? ts::tanh(x + y) : ts::maximum(x, y) - ts::minimum(a, y); break;
        default:
          if (flt) {  // minus the row's maximum: a reduction inside the chain, read back by rows
            ts::Array m = ts::max(x + y, {1}, /*keepdims=*/true);
            r = 0.5 * (x + y - ts::broadcast_to(m, {R, C}));
          } else {
            r = (x - y) * 2;
          }
      }
      r = ts::astype(r, dtype);
      done.push_back(r);
      outs.push_back(r);
    }
    if (!return_all) outs = {done.back()};
    if (flt) outs.push_back(ts::sum(done.back() * done.back(), {1}));  // a row reduction ends the chain
    return outs;
  }
};

struct ChainCase {
  ts::DType dtype;
  int64_t rows, cols;
};

class StreamingRandomChains : public ::testing::TestWithParam<ChainCase> {};

TEST_P(StreamingRandomChains, EqualTheLoopNestsRunOneAfterTheOther) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ChainCase c = GetParam();
  for (uint32_t seed : {1u, 2u}) {
    const RandomChain chain{c.dtype, seed, 6};
    const auto args = inputs(c.dtype, {c.rows, c.cols}, 2, seed);
    const ts::ir::Program p = lower(chain, args);
    const ts::ir::Program plain = ts::compiler::fuse(p, options(false));
    ASSERT_EQ(count_prim(plain, "fused_chain"), 0u);
    const auto want = run(plain, args);
    expect_close(want, run(p, args), "loop nests against the unfused kernels");
    // One row per band, a few rows per band, the default band; one block per thread, and
    // blocks of 1, 3 and 16 rows (many block edges, each recomputing its neighbours' rows).
    for (int64_t band : {int64_t(1), int64_t(3 * 8 * c.cols), int64_t(512 << 10)})
      for (int64_t block : {int64_t(0), int64_t(1), int64_t(3), int64_t(16)}) {
        const ts::ir::Program streamed = ts::compiler::fuse(p, options(true, band, block));
        EXPECT_GE(chained_nests(streamed), 2u) << ts::ir::print_program(streamed);
        const std::string what = "seed " + std::to_string(seed) + ", band " + std::to_string(band) + " bytes, blocks of " +
                                 std::to_string(block) + " rows";
        expect_bitwise(run(streamed, args), want, what);
      }
  }
}

/// Outputs of the loop nests in the chains of `p` that are no outputs of their chain (values
/// only later loop nests of the chain read: windows of rows, not buffers of the program).
size_t windowed_values(const ts::ir::Program& p) {
  size_t n = 0;
  for (const auto& e : p.eqns) {
    if (e.prim->name != "fused_chain") continue;
    size_t computed = 0;
    for (const auto& m : e.params.get<ts::ir::ProgramRef>("program")->eqns) computed += m.outputs.size();
    n += computed - e.outputs.size();
  }
  return n;
}

/// Windows of the chains of `p` kept in rings of rows (the schedules' "(N in rings)").
size_t ring_windows(const ts::ir::Program& p) {
  const std::string text = ts::ir::print_program(p);
  size_t n = 0;
  for (size_t at = text.find(" in rings)"); at != std::string::npos; at = text.find(" in rings)", at + 1)) {
    const size_t open = text.rfind('(', at);
    n += std::stoul(text.substr(open + 1, at - open - 1));
  }
  return n;
}

// Only the last stage is returned and every value read at several offsets is stored (a
// recompute budget of 1): the stages in between are loop nests that only later loop nests
// of the chain read, kept by each thread in windows of rows, rings of rows where the rows
// are long enough. The results are the same bits as the loop nests run one after the
// other over full-size buffers (a ring one power of two too small fails this).
TEST_P(StreamingRandomChains, IntermediatesInWindowsOfRowsEqualFullBuffers) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ChainCase c = GetParam();
  for (uint32_t seed : {3u, 4u}) {
    const RandomChain chain{c.dtype, seed, 6, /*return_all=*/false};
    const auto args = inputs(c.dtype, {c.rows, c.cols}, 2, seed);
    const ts::ir::Program p = lower(chain, args);
    ts::compiler::FusionOptions plain_options = options(false);
    plain_options.max_point_cost = 1;
    plain_options.small_point_cost = 1;
    const auto want = run(ts::compiler::fuse(p, plain_options), args);
    expect_close(want, run(p, args), "loop nests against the unfused kernels");
    for (int64_t band : {int64_t(1), int64_t(3 * 8 * c.cols), int64_t(512 << 10)})
      for (int64_t block : {int64_t(0), int64_t(1), int64_t(5)}) {
        ts::compiler::FusionOptions o = options(true, band, block);
        o.max_point_cost = 1;
        o.small_point_cost = 1;
        const ts::ir::Program streamed = ts::compiler::fuse(p, o);
        if (c.rows > 1) {
          EXPECT_GE(windowed_values(streamed), 1u) << ts::ir::print_program(streamed);
        }
        // Rows of 64 points or more: windows are rings of rows (indexed at row & mask).
        if (c.rows > 1 && c.cols >= 64) {
          EXPECT_GE(ring_windows(streamed), 1u) << ts::ir::print_program(streamed);
        }
        const std::string what = "seed " + std::to_string(seed) + ", band " + std::to_string(band) + " bytes, blocks of " +
                                 std::to_string(block) + " rows";
        expect_bitwise(run(streamed, args), want, what);
      }
  }
}

// A chain works out what each block runs (its loop nests' rows band by band, its rings'
// sizes) once and keeps it for later runs (BlockPlan; up to 64 blocks, the rest worked out
// at each run). Run again on other inputs of the same types, with one block per thread and
// with blocks of one row (more blocks than it keeps), a compiled program gives the bits
// of the loop nests run one after the other on those inputs at every run.
TEST_P(StreamingRandomChains, BlockPlansKeptBetweenRunsGiveTheSameBits) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ChainCase c = GetParam();
  const RandomChain chain{c.dtype, 5u, 6, /*return_all=*/false};
  const ts::ir::Program p = lower(chain, inputs(c.dtype, {c.rows, c.cols}, 2, 5u));
  ts::compiler::FusionOptions plain_options = options(false);
  plain_options.max_point_cost = 1;
  plain_options.small_point_cost = 1;
  const ts::ir::Program plain = ts::compiler::fuse(p, plain_options);
  for (int64_t block : {int64_t(0), int64_t(1)}) {
    ts::compiler::FusionOptions o = options(true, 3 * 8 * c.cols, block);
    o.max_point_cost = 1;
    o.small_point_cost = 1;
    const ts::ir::Program streamed = ts::compiler::fuse(p, o);
    for (uint32_t seed : {6u, 7u, 8u}) {
      const auto args = inputs(c.dtype, {c.rows, c.cols}, 2, seed);
      expect_bitwise(run(streamed, args), run(plain, args),
                     "run with seed " + std::to_string(seed) + ", blocks of " + std::to_string(block) + " rows");
    }
  }
}

/// A random chain followed by a stage that reads both inputs again at rows 3 below and 2
/// above its own (edge-padded), after loop nests that read them at other rows: run with the
/// inputs donated, that stage's result (and maybe others) is written over an input while
/// earlier loop nests, later bands and neighbouring blocks still read the input's rows.
struct RereadingChain {
  RandomChain chain;

  std::vector<ts::Array> operator()(std::span<const ts::Array> in) const {
    std::vector<ts::Array> outs = chain(in);
    const int64_t R = in[0].shape()[0], C = in[0].shape()[1];
    const ts::Array below = ts::slice(ts::pad(in[0], {{3, 0}, {0, 0}}, "edge"), {0, 0}, {R, C});
    const ts::Array above = ts::slice(ts::pad(in[1], {{0, 2}, {0, 0}}, "edge"), {2, 0}, {R + 2, C});
    const ts::Array& last = outs[ts::is_floating(chain.dtype) ? outs.size() - 2 : outs.size() - 1];
    outs.push_back(ts::astype(below - above + last + in[0], chain.dtype));
    return outs;
  }
};

// Donated inputs: the chain's outputs are written over the inputs that die at it
// (fused_chain's in-place rule), each thread reading the rows of an input written over
// from copies it makes first (and its neighbours' rows from copies saved before the
// chain starts). The results are the same bytes as the loop nests run one after the other.
TEST_P(StreamingRandomChains, InPlaceOverDonatedInputsEqualsFreshBuffers) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  ScopedEnv in_place("TESSEL_FUSION_STREAM_INPLACE", "1");
  const ChainCase c = GetParam();
  for (uint32_t seed : {5u, 6u}) {
    for (const bool all : {true, false}) {
      const RereadingChain chain{{c.dtype, seed, 5, all}};
      const ts::ir::Program p = lower(chain, inputs(c.dtype, {c.rows, c.cols}, 2, seed));
      const auto want = run(ts::compiler::fuse(p, options(false)), inputs(c.dtype, {c.rows, c.cols}, 2, seed));
      for (int64_t band : {int64_t(1), int64_t(3 * 8 * c.cols), int64_t(512 << 10)})
        for (int64_t block : {int64_t(0), int64_t(1), int64_t(3), int64_t(16)}) {
          const ts::ir::Program streamed = ts::compiler::fuse(p, options(true, band, block));
          auto exe = std::make_shared<ts::compiler::Executable>(std::make_shared<const ts::ir::Program>(streamed),
                                                                std::vector<int>{0, 1});
          const std::string text = exe->to_text();
          // Every row has 64 points or more (calls at any row) where the columns allow it.
          if (c.rows > 1 && c.cols >= 64) {
            EXPECT_NE(text.find("fused_chain): output"), std::string::npos) << text;
          }
          const std::string what = "seed " + std::to_string(seed) + (all ? ", all stages" : ", last stage") +
                                   ", band " + std::to_string(band) + " bytes, blocks of " + std::to_string(block) +
                                   " rows";
          expect_bitwise(exe->run(inputs(c.dtype, {c.rows, c.cols}, 2, seed)), want, what);
        }
    }
  }
}

std::string chain_case_name(const ::testing::TestParamInfo<ChainCase>& info) {
  return std::string(ts::dtype_name(info.param.dtype)) + "_" + std::to_string(info.param.rows) + "x" +
         std::to_string(info.param.cols);
}

// A value that several loop nests of a small domain would each compute inline (the common
// subexpression of different loop nests, FusionOptions::store_shared_values) is stored once.
// The results agree with it recomputed in every loop nest: bit for bit for integers, within
// rounding for floats (a transcendental function may round a vector lane and a lone
// element differently, and a stored value's loop nest has other edges than its readers');
// and the streamed chain gives the bytes of its loop nests run one after the other. Only
// the last stage is returned, so the stages in between are inline values that later
// stages read at several offsets and loop nests.
TEST_P(StreamingRandomChains, SharedValuesStoredOnceEqualRecomputed) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ChainCase c = GetParam();
  for (uint32_t seed : {1u, 2u}) {
    const RandomChain chain{c.dtype, seed, 7, /*return_all=*/false};
    const auto args = inputs(c.dtype, {c.rows, c.cols}, 2, seed);
    const ts::ir::Program p = lower(chain, args);
    ts::compiler::FusionOptions recompute = options(false);
    recompute.store_shared_values = false;
    const auto recomputed = run(ts::compiler::fuse(p, recompute), args);
    const auto want = run(ts::compiler::fuse(p, options(false)), args);
    const std::string what = "seed " + std::to_string(seed);
    if (ts::is_floating(c.dtype)) expect_close(want, recomputed, what + ": stored once against recomputed");
    else expect_bitwise(want, recomputed, what + ": stored once against recomputed");
    expect_close(want, run(p, args), what + ": against the unfused kernels");
    expect_bitwise(run(ts::compiler::fuse(p, options(true, 3 * 8 * c.cols, 3)), args), want, what + ": streamed");
  }
}

// The rule fires: `w` costs 5 operations per point, and the first loop nest (r1, a stencil
// of w) and the second (a stencil of r1 plus w) both read it, so with the rule on it is a
// loop nest's output that both read, and the second no longer recomputes it.
TEST(Streaming, ValueOfTwoLoopNestsIsStoredOnce) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const Fn f = [](std::span<const ts::Array> in) {
    const ts::Slice all, mid(1, -1), north(2, ts::none), south(0, -2);
    const ts::Array w = (in[0] * 1.5f + in[1] * 0.5f) * in[0] - in[1] * in[1];
    const ts::Array r1 = w[{mid, all}] + w[{north, all}] - w[{south, all}];
    const ts::Array r1p = ts::pad(r1, {{1, 1}, {0, 0}});
    const ts::Array r2 = r1p[{north, all}] - r1p[{south, all}] + w[{north, all}];
    return std::vector<ts::Array>{r1, r2};
  };
  const auto args = inputs(ts::f32, {66, 128}, 2, 7);
  const ts::ir::Program p = lower(f, args);
  ts::compiler::FusionOptions recompute = options(true);
  recompute.store_shared_values = false;
  const ts::ir::Program without = ts::compiler::fuse(p, recompute), with = ts::compiler::fuse(p, options(true));
  EXPECT_EQ(count_prim(without, "fused"), 2u) << ts::ir::print_program(without);
  EXPECT_EQ(count_prim(with, "fused"), 3u) << ts::ir::print_program(with);
  EXPECT_EQ(ring_windows(with), 1u) << ts::ir::print_program(with);  // w, in a ring of rows
  const auto want = run(without, args);
  expect_bitwise(run(with, args), want, "w stored once");
  expect_close(want, run(p, args), "against the unfused kernels");
  // A domain larger than kSmallDomainBytes keeps recomputing it (the large budget).
  const auto large = inputs(ts::f32, {1026, 512}, 2, 7);
  EXPECT_EQ(count_prim(ts::compiler::fuse(lower(f, large), options(true)), "fused"), 2u);
}

// One row; fewer rows than a band; rows a block count does not divide; a single column;
// many rows of few columns; float64 and int32.
INSTANTIATE_TEST_SUITE_P(Shapes, StreamingRandomChains,
                         ::testing::Values(ChainCase{ts::f32, 1, 40}, ChainCase{ts::f32, 7, 33},
                                           ChainCase{ts::f32, 203, 129}, ChainCase{ts::f32, 61, 1},
                                           ChainCase{ts::f64, 97, 45}, ChainCase{ts::i32, 1, 9},
                                           ChainCase{ts::i32, 131, 70}),
                         chain_case_name);

// A rank-1 domain is vectorized along its rows, and short rows may be: calls of a loop nest
// start at multiples of 64 rows, so a transcendental function (libmvec, whose vector lanes
// and lone elements may round differently) gives each row the same bits whichever thread,
// band or block computes it.
TEST(Streaming, DomainsOfOneAndThreeDimensions) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  for (const ts::Shape& shape : {ts::Shape{1000}, ts::Shape{150, 4, 5}, ts::Shape{70, 3, 40}}) {
    Fn f = [](std::span<const ts::Array> in) {
      const ts::Shape& sh = in[0].shape();
      auto shift = [&](const ts::Array& a, int64_t by) {  // a[i0 + by, ...], edge rows repeated
        std::vector<std::pair<int64_t, int64_t>> pads(sh.size(), {0, 0});
        pads[0] = {2, 2};
        ts::Shape start(sh.size(), 0), limit = sh;
        start[0] = 2 + by;
        limit[0] = sh[0] + 2 + by;
        return ts::slice(ts::pad(a, pads, "edge"), start, limit);
      };
      ts::Array s = ts::tanh(in[0] + shift(in[1], -1));
      ts::Array t = ts::exp(s - shift(s, 2)) * in[1];
      ts::Array u = ts::sin(shift(t, 1) + shift(s, -2));
      return std::vector<ts::Array>{s, t, u};
    };
    const auto args = inputs(ts::f32, shape, 2, 8);
    const ts::ir::Program p = lower(f, args);
    const auto want = run(ts::compiler::fuse(p, options(false)), args);
    for (int64_t block : {int64_t(0), int64_t(3), int64_t(37)}) {
      const ts::ir::Program streamed = ts::compiler::fuse(p, options(true, 1 << 10, block));
      EXPECT_EQ(chained_nests(streamed), 3u) << ts::ir::print_program(streamed);
      expect_bitwise(run(streamed, args), want, "blocks of " + std::to_string(block) + " rows");
    }
  }
}

// Differences along the rows shrink them: loop nests over 199, 198 and 197 rows chain,
// rows numbered from 0 in each.
TEST(Streaming, LoopNestsOverFewerRowsChain) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  for (const ts::DType dtype : {ts::f32, ts::i32}) {
    Fn f = [](std::span<const ts::Array> in) {
      auto diff = [](const ts::Array& a) {
        const int64_t R = a.shape()[0], C = a.shape()[1];
        return ts::slice(a, {1, 0}, {R, C}) - ts::slice(a, {0, 0}, {R - 1, C});
      };
      ts::Array d1 = diff(in[0] * in[1]);
      ts::Array d2 = diff(d1) * ts::slice(in[1], {1, 0}, {199, 90});
      ts::Array d3 = diff(d2) + ts::slice(d1, {2, 0}, {199, 90});
      return std::vector<ts::Array>{d1, d2, d3};
    };
    const auto args = inputs(dtype, {200, 90}, 2, 9);
    const ts::ir::Program p = lower(f, args);
    const auto want = run(ts::compiler::fuse(p, options(false)), args);
    expect_close(want, run(p, args), "loop nests against the unfused kernels");
    for (int64_t block : {int64_t(0), int64_t(3), int64_t(16)}) {
      const ts::ir::Program streamed = ts::compiler::fuse(p, options(true, 4 << 10, block));
      EXPECT_EQ(chained_nests(streamed), 3u) << ts::ir::print_program(streamed);
      expect_bitwise(run(streamed, args), want, "blocks of " + std::to_string(block) + " rows");
    }
  }
}

/// Two stages over x: s = x + x shifted by one row; then `read(s)` combined with x.
ts::ir::Program two_stages(const std::function<ts::Array(const ts::Array&)>& read, const ts::Array& x) {
  Fn f = [&](std::span<const ts::Array> in) {
    const int64_t R = in[0].shape()[0], C = in[0].shape()[1];
    ts::Array s = in[0] + ts::slice(ts::pad(in[0], {{1, 1}, {0, 0}}, "edge"), {2, 0}, {R + 2, C});
    return std::vector<ts::Array>{s, read(s) * 2.0f + in[0]};
  };
  return lower(f, {x});
}

TEST(Streaming, ReadsAtOtherRowsEndTheChain) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const ts::Array x = inputs(ts::f32, {80, 80}, 1, 3)[0];
  const std::vector<std::pair<std::string, std::function<ts::Array(const ts::Array&)>>> reads = {
      {"transposed", [](const ts::Array& s) { return ts::transpose(s); }},
      {"reversed rows", [](const ts::Array& s) { return ts::flip(s, ts::Axes{0}); }},
      {"row 0 broadcast", [](const ts::Array& s) { return ts::broadcast_to(ts::slice(s, {0, 0}, {1, 80}), {80, 80}); }},
      {"every other row", [](const ts::Array& s) {
         return ts::concatenate({ts::slice(s, {0, 0}, {80, 80}, {2, 1}), ts::slice(s, {1, 0}, {80, 80}, {2, 1})}, 0);
       }},
      {"rolled by 35 rows", [](const ts::Array& s) { return ts::roll(s, 35, 0); }},
  };
  for (const auto& [what, read] : reads) {
    const ts::ir::Program p = two_stages(read, x);
    const ts::ir::Program fused = ts::compiler::fuse(p, options(true));
    EXPECT_EQ(count_prim(fused, "fused_chain"), 0u) << what << "\n" << ts::ir::print_program(fused);
    EXPECT_EQ(count_prim(fused, "fused"), 2u) << what << "\n" << ts::ir::print_program(fused);
    expect_close(run(fused, {x}), run(p, {x}), what);
  }
  // Rows a few apart stream.
  const ts::ir::Program near = two_stages(
      [](const ts::Array& s) { return ts::slice(ts::pad(s, {{4, 4}, {0, 0}}), {8, 0}, {88, 80}); }, x);
  const ts::ir::Program fused = ts::compiler::fuse(near, options(true, 512 << 10, 3));
  EXPECT_EQ(chained_nests(fused), 2u) << ts::ir::print_program(fused);
  expect_bitwise(run(fused, {x}), run(ts::compiler::fuse(near, options(false)), {x}), "4 rows further");
}

TEST(Streaming, RowOffsetsOfAStencil) {
  // out[i, j] = s[i - 1, j] + s[i + 2, j + 1] + t[j, i] + u[0, j], over the rows 1 .. R-3 of s.
  Fn f = [](std::span<const ts::Array> in) {
    const ts::Array &s = in[0], &t = in[1], &u = in[2];
    ts::Array a = ts::slice(s, {0, 0}, {8, 10}), b = ts::slice(s, {3, 1}, {11, 11});
    return std::vector<ts::Array>{a + b + ts::transpose(t) + ts::broadcast_to(ts::slice(u, {0, 0}, {1, 10}), {8, 10})};
  };
  const auto s = inputs(ts::f32, {11, 11}, 1, 1)[0], t = inputs(ts::f32, {10, 8}, 1, 2)[0],
             u = inputs(ts::f32, {4, 10}, 1, 3)[0];
  const ts::ir::Program p = lower(f, {s, t, u});
  const auto offsets = ts::compiler::row_offsets(p);
  ASSERT_EQ(offsets.size(), 3u);
  EXPECT_TRUE(offsets[0].rows);
  EXPECT_EQ(offsets[0].min, 0);
  EXPECT_EQ(offsets[0].max, 3);
  EXPECT_FALSE(offsets[1].rows);  // transposed: row index i1
  EXPECT_TRUE(offsets[2].rows);   // row 0 for every i0 in [0, 8): i0 + [-7, 0]
  EXPECT_EQ(offsets[2].min, -7);
  EXPECT_EQ(offsets[2].max, 0);
}

TEST(Streaming, RowOffsetsOfGuardedReads) {
  // An edge pad of two rows reads row 0 for i0 in [0, 2) and row 9 for i0 in [12, 14); the
  // rows between, i0 - 2. The reversed rows 3 .. 5 placed at rows 0 .. 2 are 5 - i0 =
  // i0 + (5 - 2 i0), c from 5 down to 1; the rows after, i0.
  Fn f = [](std::span<const ts::Array> in) {
    ts::Array padded = ts::pad(in[0], {{2, 2}, {0, 0}}, "edge");
    ts::Array flipped = ts::concatenate({ts::flip(ts::slice(in[1], {3, 0}, {6, 4}), ts::Axes{0}),
                                         ts::slice(in[1], {3, 0}, {14, 4})}, 0);
    return std::vector<ts::Array>{padded + flipped};
  };
  const auto offsets = ts::compiler::row_offsets(lower(f, {inputs(ts::f32, {10, 4}, 1, 1)[0], inputs(ts::f32, {14, 4}, 1, 2)[0]}));
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_TRUE(offsets[0].rows);
  EXPECT_EQ(offsets[0].min, -4);  // row 9 at i0 = 13
  EXPECT_EQ(offsets[0].max, 0);
  EXPECT_TRUE(offsets[1].rows);
  EXPECT_EQ(offsets[1].min, 0);
  EXPECT_EQ(offsets[1].max, 5);
}

TEST(Streaming, EquationsBetweenLoopNestsMoveBeforeTheChain) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  // The cumulative sum does not fuse and reads no loop nest's output: it moves before the
  // chain, whose second loop nest reads it.
  Fn f = [](std::span<const ts::Array> in) {
    const int64_t R = in[0].shape()[0], C = in[0].shape()[1];
    ts::Array s = ts::tanh(in[0]) + ts::slice(ts::pad(in[0], {{1, 1}, {0, 0}}), {0, 0}, {R, C});
    ts::Array c = ts::cumsum(in[1], 0);
    ts::Array t = c * ts::slice(ts::pad(s, {{1, 1}, {0, 0}}), {2, 0}, {R + 2, C});
    return std::vector<ts::Array>{s, t};
  };
  const auto args = inputs(ts::f32, {50, 30}, 2, 4);
  const ts::ir::Program p = lower(f, args);
  const ts::ir::Program fused = ts::compiler::fuse(p, options(true));
  ASSERT_EQ(chained_nests(fused), 2u) << ts::ir::print_program(fused);
  EXPECT_EQ(fused.eqns.back().prim->name, "fused_chain") << ts::ir::print_program(fused);
  expect_bitwise(run(fused, args), run(ts::compiler::fuse(p, options(false)), args), "moved cumsum");
}


/// A three-stage stencil step over (h, u): the shape of a time step.
std::pair<ts::Array, ts::Array> stencil_step(const ts::Array& h, const ts::Array& u) {
  const int64_t R = h.shape()[0], C = h.shape()[1];
  auto north = [&](const ts::Array& a) { return ts::slice(ts::pad(a, {{1, 1}, {0, 0}}, "edge"), {2, 0}, {R + 2, C}); };
  auto south = [&](const ts::Array& a) { return ts::slice(ts::pad(a, {{1, 1}, {0, 0}}, "edge"), {0, 0}, {R, C}); };
  auto east = [&](const ts::Array& a) { return ts::slice(ts::pad(a, {{0, 0}, {1, 1}}), {0, 2}, {R, C + 2}); };
  ts::Array flux = 0.5f * (h + north(h)) * u;
  ts::Array dh = flux - south(flux) + 0.1f * (east(h) - h);
  ts::Array h2 = h + 0.01f * dh;
  ts::Array u2 = 0.9f * u + 0.05f * (north(h2) - south(h2));
  return {h2, u2};
}

TEST(Streaming, JitStreamsAndAgreesWithStreamingOff) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  const auto args = inputs(ts::f32, {300, 200}, 2, 5);
  auto make = [] { return ts::jit([](const ts::Array& h, const ts::Array& u) { return stencil_step(h, u); }); };
  std::string on_text, off_text;
  std::pair<ts::Array, ts::Array> on, off;
  {
    auto f = make();
    on_text = f.lower(args[0], args[1]).compile().as_text();
    on = f(args[0], args[1]);
  }
  {
    ScopedEnv env("TESSEL_FUSION_STREAM", "0");
    auto f = make();
    off_text = f.lower(args[0], args[1]).compile().as_text();
    off = f(args[0], args[1]);
  }
  EXPECT_NE(on_text.find(" = fused_chain["), std::string::npos) << on_text;
  EXPECT_NE(on_text.find("loop nests over 300 rows in bands of"), std::string::npos) << on_text;
  EXPECT_EQ(off_text.find("fused_chain"), std::string::npos) << off_text;
  expect_bitwise({on.first, on.second}, {off.first, off.second}, "jit");
  // Donating the state: the chain writes both results over the dying inputs (while its
  // loop nests still read them at other rows), and gives the same bytes.
  ScopedEnv in_place("TESSEL_FUSION_STREAM_INPLACE", "1");
  auto donating = ts::jit([](const ts::Array& h, const ts::Array& u) { return stencil_step(h, u); },
                          {.donate_argnums = {0, 1}});
  ts::Array h = args[0] + 0.0f, u = args[1] + 0.0f;
  const std::string donated_text = donating.lower(h, u).compile().as_text();
  EXPECT_NE(donated_text.find("2 steps in place"), std::string::npos) << donated_text;
  auto d = donating(h, u);
  expect_bitwise({d.first, d.second}, {off.first, off.second}, "jit with donated arguments");
  for (int k = 0; k < 3; ++k) d = donating(d.first, d.second);  // (state = step(state))
  auto o = off;
  for (int k = 0; k < 3; ++k) o = stencil_step(o.first, o.second);
  expect_close({d.first, d.second}, {o.first, o.second}, "3 more donated steps");
}

TEST(Streaming, ForiLoopBodiesStream) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  using State = std::pair<ts::Array, ts::Array>;
  auto make = [] {
    return ts::jit([](const ts::Array& h, const ts::Array& u) {
      State s = ts::fori_loop(0, 5, [](const ts::Array&, const State& s) { return stencil_step(s.first, s.second); },
                              State(h, u));
      return s;
    });
  };
  const auto args = inputs(ts::f32, {257, 130}, 2, 6);
  const ts::detail::LogLevel before = ts::detail::log_level();
  ts::detail::set_log_level(ts::detail::LogLevel::kDebug);
  ::testing::internal::CaptureStderr();
  State on = make()(args[0], args[1]);
  on.first.block_until_ready();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ts::detail::set_log_level(before);
  EXPECT_NE(log.find("loop nests over 257 rows"), std::string::npos) << log;
  State off;
  {
    ScopedEnv env("TESSEL_FUSION_STREAM", "0");
    off = make()(args[0], args[1]);
  }
  expect_bitwise({on.first, on.second}, {off.first, off.second}, "fori_loop");
}

TEST(Streaming, PartitionedProgramsStream) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  if (ts::devices().size() < 8) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES=8";
  const ts::Mesh mesh = ts::make_mesh({8}, {"x"});
  const ts::NamedSharding rows(mesh, ts::P("x", ts::none)), cols(mesh, ts::P(ts::none, "x"));
  const auto args = inputs(ts::f32, {1600, 240}, 2, 7);  // 200 rows per device: they fuse
  for (const bool by_rows : {true, false}) {
    const ts::NamedSharding& layout = by_rows ? rows : cols;
    auto make = [&] {
      return ts::jit([](const ts::Array& h, const ts::Array& u) { return stencil_step(h, u); },
                     {.in_shardings = {layout, layout}, .out_shardings = {layout}});
    };
    std::string text;
    std::pair<ts::Array, ts::Array> on, off;
    {
      auto f = make();
      text = f.lower(args[0], args[1]).compile().as_text();
      on = f(args[0], args[1]);
    }
    {
      ScopedEnv env("TESSEL_FUSION_STREAM", "0");
      off = make()(args[0], args[1]);
    }
    // Split by columns, the loop nests of each device read each other at offset rows only
    // (the exchanged columns are inputs'): they stream. Split by rows, the halo rows are
    // computed first by line loop nests recomputing them, exchanged, and the large loop nests
    // then run after the exchanges: one chain (fusion.cpp's hoist_small_steps).
    EXPECT_NE(text.find(" = fused_chain["), std::string::npos) << text;
    if (by_rows) {
      const size_t chain = text.find(" = fused_chain[");
      EXPECT_EQ(text.find(" = fused_chain[", chain + 1), std::string::npos) << "one chain per device\n" << text;
      EXPECT_LT(text.find("= collective_permute["), chain) << "the exchanges run first\n" << text;
    }
    expect_bitwise({on.first, on.second}, {off.first, off.second}, by_rows ? "8 devices, rows" : "8 devices, columns");
    // Donated, each device's chain writes over its dying inputs: the same bytes.
    ScopedEnv in_place("TESSEL_FUSION_STREAM_INPLACE", "1");
    auto donating = ts::jit([](const ts::Array& h, const ts::Array& u) { return stencil_step(h, u); },
                            {.donate_argnums = {0, 1}, .in_shardings = {layout, layout}, .out_shardings = {layout}});
    const ts::Array h = ts::device_put(args[0] + 0.0f, layout), u = ts::device_put(args[1] + 0.0f, layout);
    if (!by_rows) {
      const std::string donated_text = donating.lower(h, u).compile().as_text();
      EXPECT_NE(donated_text.find("written in place into input"), std::string::npos) << donated_text;
    }
    const auto d = donating(h, u);
    expect_bitwise({d.first, d.second}, {off.first, off.second}, by_rows ? "8 devices, rows, donated" : "8 devices, columns, donated");
    const auto one = stencil_step(args[0], args[1]);
    expect_close({on.first, on.second}, {one.first, one.second}, "8 devices against one");
  }
}

TEST(Streaming, BandBytesMustBePositive) {
  for (const char* bad : {"0", "-5", "lots"}) {
    ScopedEnv env("TESSEL_FUSION_STREAM_BAND_BYTES", bad);
    tessel_test::expect_error<ts::ValueError>([] { (void)ts::compiler::fusion_options(); },
                                              {"TESSEL_FUSION_STREAM_BAND_BYTES", bad});
  }
  ScopedEnv env("TESSEL_FUSION_STREAM_BAND_BYTES", "4096");
  EXPECT_EQ(ts::compiler::fusion_options().stream_band_bytes, 4096);
  ScopedEnv off("TESSEL_FUSION_STREAM", "0");
  EXPECT_FALSE(ts::compiler::fusion_options().stream);
}

#if __has_include("shallow_water.h")
TEST(Streaming, ShallowWaterStepIsOneChain) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  namespace sw = shallow_water;
  const sw::ShallowWater model(sw::Config{.nx = 200, .ny = 100});
  auto make = [&] {
    return ts::jit([&model](const sw::State& s, bool first) { return model.step(s, first); }, {.static_argnums = {1}});
  };
  auto step = make();
  const sw::State s0 = model.initial_state();
  const std::string text = step.lower(s0, false).compile().as_text();
  // Arrays of 82 KB (TESSEL_FUSION_SMALL_POINT_COST): the fluxes, vorticity, kinetic
  // energy and updated fields are stored, each computed once into a ring of rows (also the
  // fields several loop nests would compute inline: FusionOptions::store_shared_values),
  // and the step's seven loop nests run as one chain: one kernel step. (Ten nests and eleven
  // intermediates before jit folded literal arithmetic as XLA does, which changes the costs
  // per point the fusion pass weighs: CPU time per step 0.92-0.94 of before at 360x180.)
  EXPECT_NE(text.find("1 kernel steps"), std::string::npos) << text;
  EXPECT_NE(text.find("7 loop nests over 102 rows"), std::string::npos) << text;
  EXPECT_NE(text.find("8 intermediates in windows of rows (8 in rings)"), std::string::npos) << text;
  {
    // With the default budget of larger arrays it recomputes them: three loop nests.
    ScopedEnv budget("TESSEL_FUSION_SMALL_POINT_COST", "256");
    const std::string recomputing = make().lower(s0, false).compile().as_text();
    EXPECT_NE(recomputing.find("3 loop nests over 102 rows"), std::string::npos) << recomputing;
  }
  sw::State on = step(step(s0, true), false), off;
  {
    ScopedEnv env("TESSEL_FUSION_STREAM", "0");
    auto plain = make();
    off = plain(plain(s0, true), false);
  }
  expect_bitwise(ts::tree_leaves(on), ts::tree_leaves(off), "shallow water");
}
#endif

}  // namespace
