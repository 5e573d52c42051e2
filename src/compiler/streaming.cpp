// Streaming across loop nests: chains of `fused` equations run band by band.
//
// A chain's loop nests iterate over rows (the first dimension of their domains, numbered
// from 0 in each, R the most of them) and a later one reads an earlier one's output only at
// rows i0 + c with c in a small range. Its kernel splits the rows into one contiguous block per thread; within its
// block [b0, b1) a thread walks bands of S rows, and for each band runs every loop nest of
// the chain, in order, on the rows its inputs now allow: loop nest k computes its rows up
// to e + above[k] (e the band's end), where above[k] is how far past the block the loop
// nests after it read it, transitively; likewise it starts at b0 - below[k]. The rows past
// a block's edges are computed by both neighbouring threads (recomputation instead of
// waiting for the neighbour): both run the same generated code on the same rows of the
// same inputs, and the generated kernels choose their interior or edge body by the row
// index, so they write the same bytes. An intermediate that something after the chain still
// reads (or the program returns) is an output of the chain's equation, a full-size buffer:
// the executable's buffer plan gives it the memory of an input only where `fused_chain`'s
// in-place rule allows (ChainSchedule::inplace_inputs, opt-in: the input dies at the chain;
// the output's rows go through a window of rows and reach the buffer only once no loop nest
// reads those rows of the input again, so no row is read after it was written over). An
// intermediate only later loop nests of the chain read is no buffer of the program: each thread keeps its rows in a small window of its own (Window), the rows
// its readers have yet to read, so it stays in cache and never reaches memory.
#include "compiler/streaming.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "backend/cpu/parallel.h"
#include "core/config.h"
#include "compiler/codegen.h"
#include "compiler/fused_kernel.h"
#include "compiler/passes.h"
#include "core/log.h"
#include "ops/op_util.h"
#include "tessel/error.h"

namespace tessel::compiler {
namespace {

/// Bytes of one row of an array (of its first dimension; rank-0 arrays count nothing).
int64_t row_bytes(const Aval& a) {
  if (a.shape.empty() || a.shape[0] == 0) return 0;
  return int64_t(a.nbytes()) / a.shape[0];
}

/// A loop nest of a chain reads the output of an earlier one (its `producer`, a position in
/// the chain) at rows i0 + [min, max].
struct Read {
  size_t producer;
  int64_t min, max;
};

/// One loop nest of a chain.
struct Member {
  std::shared_ptr<const ir::ParamObject> kernel;  // its FusedKernel (keeps the library loaded)
  ir::ProgramRef program;                          // its loop nest's program
  KernelFnPtr fn = nullptr;
  std::vector<size_t> bufs;  // its inputs then outputs, as positions in the chain's inputs, outputs, then windows
  int64_t rows = 0;          // of its domain
  int64_t points = 0;        // of its domain
  int64_t below = 0;         // rows it computes below a thread's block
  int64_t above = 0;         // and above it
  int64_t align = 1;         // its calls start at multiples of this (row_alignment)
  bool full = false;         // its outputs have its domain's shape (rank >= 2, no reduction)
  std::vector<Read> reads;   // of earlier members' outputs
  std::vector<RowOffsets> in_rows;  // per input (bufs' first entries): rows it reads at
};

/// A block's rows [own0, own1) of an output written over an input, and those of them that
/// other blocks read of the input ([own0, h0) and [h1, own1)): the thread keeps those aside
/// (`below`, `above`), and they are written over the input once every block is done.
struct HeldRows {
  int64_t own0 = 0, own1 = 0, h0 = 0, h1 = 0;
  std::vector<std::byte> below, above;
};

/// An intermediate of a chain that only later loop nests of the chain read (no buffer of the
/// program): the loop nest writing it, the bytes of one of its rows, and whether it lives in
/// a ring of rows (every loop nest touching it indexes it at its row modulo a mask:
/// codegen.h's ring_indexable) rather than a Window.
struct WindowSpec {
  size_t producer = 0;
  int64_t row_bytes = 0;
  bool ring = false;
};

/// Scratch memory of the calling thread for its rings of rows, kept between chain runs (a
/// step's rings take the same bytes every time: no allocation, no fresh pages per step).
std::byte* ring_scratch(size_t bytes) {
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  thread_local std::unique_ptr<std::byte[], Free> data;
  thread_local size_t size = 0;
  if (bytes > size) {
    data.reset(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t(64))));
    size = bytes;
  }
  return data.get();
}

/// The rows [base, base + rows) of an intermediate a thread keeps while its chain runs: the
/// rows computed that a reader has yet to read, and room for the next band's. Its loop
/// nests get a pointer that places row r of the full array at `data + (r - base) *
/// row_bytes`, so the generated code indexes it as the full-size buffer; they touch only
/// rows inside the window (codegen.h's row_offsets bound every read).
class Window {
 public:
  explicit Window(int64_t row_bytes) : row_bytes_(row_bytes) {}
  /// Makes room for rows [keep, end) with rows [keep, done) kept (computed, still to be
  /// read); rows before `keep` are dropped. The window holds twice the rows first asked
  /// for, so the kept rows move back to its start only every few bands.
  void reserve(int64_t keep, int64_t done, int64_t end) {
    if (!data_) base_ = keep;
    keep = std::clamp(keep, base_, std::max(base_, done));
    if (end - base_ <= rows_) return;
    const int64_t kept = std::max<int64_t>(0, done - keep);
    if (end - keep > rows_) {  // grow (the first band of a block; later ones fit)
      rows_ = std::max(2 * (end - keep), 2 * rows_);
      auto bigger = std::unique_ptr<std::byte[]>(new std::byte[size_t(rows_ * row_bytes_)]);  // uninitialized
      if (kept > 0) std::memcpy(bigger.get(), at(keep), size_t(kept * row_bytes_));
      data_ = std::move(bigger);
    } else if (kept > 0) {
      std::memmove(data_.get(), at(keep), size_t(kept * row_bytes_));
    }
    base_ = keep;
  }
  /// The pointer the generated code indexes as the full array (row r at its offset r).
  void* origin() { return data_.get() - base_ * row_bytes_; }
  /// Row `row`, which the window holds.
  std::byte* at(int64_t row) { return data_.get() + (row - base_) * row_bytes_; }

 private:
  int64_t row_bytes_;
  int64_t base_ = 0;  // the row at data_[0]
  int64_t rows_ = 0;  // rows data_ holds
  std::unique_ptr<std::byte[]> data_;
};

/// What a block of rows [b0, b1) of a chain runs, worked out once (a chain's blocks are the
/// same at every step): the rows of each ring window (0 for the other windows), every loop
/// nest call in order, and where each band ends.
struct BlockPlan {
  struct Call {
    size_t member;
    int64_t lo, hi;  // rows [lo, hi)
  };
  std::vector<int64_t> ring_rows;
  std::vector<Call> calls;
  std::vector<std::pair<size_t, int64_t>> bands;  // per band: the end of its calls, its last row + 1
  bool copying = false;  // some window copies its rows (not a ring): reserved before each call
};

/// The block plans of one chain, by (b0, b1); shared by the threads running its blocks.
struct BlockPlans {
  /// Blocks kept at most: a chain runs the same few blocks at every step (one per thread;
  /// a partitioned program's interior and edges a few more).
  static constexpr size_t kMaxPlans = 64;
  std::mutex mu;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<const BlockPlan>> plans;
};

/// The `schedule` parameter of a `fused_chain` equation: its loop nests and band size.
class ChainSchedule final : public ir::ParamObject {
 public:
  ChainSchedule(std::vector<Member> members, std::vector<WindowSpec> windows, int64_t rows, int64_t band_rows,
                int64_t block_rows)
      : members_(std::move(members)),
        windows_(std::move(windows)),
        rows_(rows),
        band_rows_(band_rows),
        block_rows_(block_rows) {}
  size_t hash() const override {
    size_t h = std::hash<int64_t>()(band_rows_);
    for (const Member& m : members_) h = h * 31 + std::hash<const void*>()(reinterpret_cast<const void*>(m.fn));
    return h;
  }
  bool equals(const ir::ParamObject& o) const override {
    auto* s = dynamic_cast<const ChainSchedule*>(&o);
    if (!s || s->band_rows_ != band_rows_ || s->block_rows_ != block_rows_ || s->members_.size() != members_.size() ||
        s->windows_.size() != windows_.size())
      return false;
    for (size_t k = 0; k < members_.size(); ++k)
      if (s->members_[k].fn != members_[k].fn || s->members_[k].bufs != members_[k].bufs) return false;
    return true;
  }
  std::string to_string() const override {
    std::string s = std::to_string(members_.size()) + " loop nests over " + std::to_string(rows_) +
                    " rows in bands of " + std::to_string(band_rows_) + ", rows recomputed below/above a block:";
    for (const Member& m : members_) s += " " + std::to_string(m.below) + "/" + std::to_string(m.above);
    const auto rings = std::count_if(windows_.begin(), windows_.end(), [](const WindowSpec& w) { return w.ring; });
    return s + ", " + std::to_string(windows_.size()) + " intermediates in windows of rows (" + std::to_string(rings) +
           " in rings)";
  }
  void write(ir::Writer&) const override {
    throw ValueError("a streamed chain of compiled kernels is machine code loaded in this process; serialize the "
                     "program before fusion (the receiving process compiles it again)");
  }

  /// The inputs (positions among the chain's inputs) whose buffer output `out` may be
  /// written into (Primitive::inplace): those of its type when the loop nest writing it
  /// computes whole rows of it (rank >= 2, no reduction, calls at any row) and every loop
  /// nest reading the input reads it at rows near its own. Run in place, the writer writes
  /// the output's rows to a window of rows of its thread's (which the output's readers
  /// read), and a row goes to the buffer once no loop nest of the thread will read that row
  /// of the input again: a band or so behind, while the input's row is still in cache (so
  /// no line of a fresh output is read from memory before it is written). Rows of its block
  /// that other threads read of the input are kept aside and written when all are done.
  std::vector<size_t> inplace_inputs(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals) const {
    const size_t position = in_avals.size() + out;
    const Member* writer = nullptr;
    for (const Member& m : members_)
      if (std::find(m.bufs.begin() + ptrdiff_t(m.in_rows.size()), m.bufs.end(), position) != m.bufs.end()) writer = &m;
    if (!writer || !writer->full || writer->align != 1) return {};
    std::vector<size_t> r;
    for (size_t j = 0; j < in_avals.size(); ++j) {
      if (!in_avals[j].same_type(out_avals[out]) || in_avals[j].shape.size() < 2) continue;
      bool row_local = true;
      for (const Member& m : members_)
        for (size_t b = 0; b < m.in_rows.size(); ++b) row_local &= m.bufs[b] != j || m.in_rows[b].rows;
      if (row_local) r.push_back(j);
    }
    return r;
  }

  /// The block of rows [b0, b1) whose loop nests' rows (those recomputed around the block
  /// included) read none of the chain's inputs marked in `late`; nullopt when none.
  std::optional<std::pair<int64_t, int64_t>> interior(const std::vector<char>& late) const {
    const size_t n = members_.size();
    std::vector<int64_t> lo(n, 0), hi(n);
    for (size_t k = 0; k < n; ++k) {
      const Member& m = members_[k];
      hi[k] = m.rows;
      std::vector<char> reads_late(m.in_rows.size(), 0);
      bool any = false;
      for (size_t b = 0; b < m.in_rows.size(); ++b) any |= reads_late[b] = m.bufs[b] < late.size() && late[m.bufs[b]];
      if (!any) continue;
      std::tie(lo[k], hi[k]) = rows_without_reads(*m.program, reads_late);
      if (lo[k] >= hi[k]) return std::nullopt;
    }
    // Both ends move monotonically with the block's, so bisect for the widest block.
    auto starts_clean = [&](int64_t b0) {
      const std::vector<int64_t> f = first_rows(b0);
      for (size_t k = 0; k < n; ++k)
        if (f[k] < lo[k]) return false;
      return true;
    };
    auto ends_clean = [&](int64_t b1) {
      const std::vector<int64_t> e = band_ends(b1);
      for (size_t k = 0; k < n; ++k)
        if (e[k] > hi[k]) return false;
      return true;
    };
    if (!starts_clean(rows_)) return std::nullopt;
    int64_t a = 0, b = rows_;
    while (a < b) {
      const int64_t m = (a + b) / 2;
      if (starts_clean(m)) b = m;
      else a = m + 1;
    }
    const int64_t b0 = a;
    a = 0, b = rows_;
    while (a < b) {
      const int64_t m = (a + b + 1) / 2;
      if (ends_clean(m)) a = m;
      else b = m - 1;
    }
    if (b0 >= a) return std::nullopt;
    return std::pair{b0, a};
  }

  int64_t rows() const { return rows_; }

  /// Runs rows [r0, r1) of the chain (no output over an input), split over the arena's
  /// threads like a whole run.
  void run_block(const ir::KernelCall& c, int64_t r0, int64_t r1) const {
    if (r0 >= r1) return;
    std::vector<void*> all;
    std::vector<std::vector<void*>> bufs;
    int64_t points = 0, halo = 0;
    gather_buffers(c, all, bufs, points, halo);
    const int64_t rows = r1 - r0;
    int64_t blocks = std::min<int64_t>(cpu::num_threads(), points / rows_ * rows / 16384);
    blocks = std::max<int64_t>(1, std::min(blocks, rows / std::max<int64_t>(1, 4 * halo)));
    const size_t outside = all.size();
    cpu::parallel_for(blocks, 1, [&](int64_t k0, int64_t k1) {
      run_rows(bufs, outside, {}, nullptr, all, r0 + k0 * rows / blocks, r0 + k1 * rows / blocks);
    });
  }

  /// Runs the chain on the kernel call's buffers (inputs, then outputs).
  void run(const ir::KernelCall& c) const {
    std::vector<void*> all;
    std::vector<std::vector<void*>> bufs;
    int64_t points = 0, halo = 0;
    gather_buffers(c, all, bufs, points, halo);
    // Inputs the executable gave an output's memory (inplace_inputs).
    std::vector<InPlace> in_place;
    for (size_t j = 0; j < c.ins.size(); ++j)
      for (size_t o = 0; o < c.outs.size(); ++o) {
        if (c.outs[o] != c.ins[j]) continue;
        InPlace ip{j, 0, row_bytes(c.in_avals[j]), c.in_avals[j].shape[0], c.ins.size() + o};
        for (size_t k = 0; k < members_.size(); ++k) {
          const Member& m = members_[k];
          if (std::count(m.bufs.begin() + ptrdiff_t(m.in_rows.size()), m.bufs.end(), ip.output)) ip.writer = k;
        }
        in_place.push_back(ip);
      }
    // One block per thread, each worth at least ~16K points of work (as fused loop nests
    // split) and four times the rows it recomputes.
    int64_t blocks = std::min<int64_t>(cpu::num_threads(), points / 16384);
    blocks = std::max<int64_t>(1, std::min(blocks, rows_ / std::max<int64_t>(1, 4 * halo)));
    if (block_rows_ > 0) blocks = (rows_ + block_rows_ - 1) / block_rows_;
    auto b0 = [&](int64_t k) { return k * rows_ / blocks; };
    const size_t outside = all.size();
    if (in_place.empty()) {
      cpu::parallel_for(blocks, 1, [&](int64_t k0, int64_t k1) {
        run_rows(bufs, outside, in_place, nullptr, all, b0(k0), b0(k1));
      });
      return;
    }
    std::vector<std::vector<HeldRows>> held(static_cast<size_t>(blocks));
    for (size_t w = 0; w < in_place.size(); ++w) {
      const InPlace& ip = in_place[w];
      // The rows of the input each block reads.
      std::vector<std::pair<int64_t, int64_t>> reads(static_cast<size_t>(blocks));
      for (int64_t k = 0; k < blocks; ++k) {
        if (b0(k) >= b0(k + 1)) continue;
        const std::vector<int64_t> last = band_ends(b0(k + 1));
        reads[size_t(k)] = rows_read(ip, first_rows(b0(k)), last, last);
      }
      for (int64_t k = 0; k < blocks; ++k) {
        HeldRows h;
        const int64_t writer_rows = members_[ip.writer].rows;
        h.own0 = std::min(b0(k), writer_rows);
        h.own1 = std::min(b0(k + 1), writer_rows);
        h.h0 = h.own0;
        h.h1 = h.own1;
        for (int64_t m = 0; m < blocks; ++m) {
          const auto [lo, up] = reads[size_t(m)];
          if (lo >= up) continue;
          if (m < k) h.h0 = std::max(h.h0, std::min(up, h.own1));
          if (m > k) h.h1 = std::min(h.h1, std::max(lo, h.own0));
        }
        h.h1 = std::max(h.h1, h.h0);
        h.below.resize(size_t((h.h0 - h.own0) * ip.row_bytes));
        h.above.resize(size_t((h.own1 - h.h1) * ip.row_bytes));
        held[size_t(k)].push_back(std::move(h));
      }
    }
    cpu::parallel_for(blocks, 1, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k)  // (each block with its own rows kept aside)
        run_rows(bufs, outside, in_place, &held[size_t(k)], all, b0(k), b0(k + 1));
    });
    for (const std::vector<HeldRows>& block : held)
      for (size_t w = 0; w < in_place.size(); ++w) {
        const HeldRows& h = block[w];
        auto* buffer = static_cast<std::byte*>(all[in_place[w].output]);
        const int64_t rb = in_place[w].row_bytes;
        if (!h.below.empty()) std::memcpy(buffer + h.own0 * rb, h.below.data(), h.below.size());
        if (!h.above.empty()) std::memcpy(buffer + h.h1 * rb, h.above.data(), h.above.size());
      }
  }

 private:
  /// The call's inputs then outputs (`all`), each loop nest's buffers (windows: null, per
  /// thread), the points of all loop nests and the most rows one recomputes.
  void gather_buffers(const ir::KernelCall& c, std::vector<void*>& all, std::vector<std::vector<void*>>& bufs,
                      int64_t& points, int64_t& halo) const {
    all.reserve(c.ins.size() + c.outs.size());
    for (const void* p : c.ins) all.push_back(const_cast<void*>(p));
    for (void* p : c.outs) all.push_back(p);
    bufs.resize(members_.size());
    for (size_t k = 0; k < members_.size(); ++k) {
      for (size_t b : members_[k].bufs) bufs[k].push_back(b < all.size() ? all[b] : nullptr);
      points += members_[k].points;
      halo = std::max(halo, members_[k].below + members_[k].above);
    }
  }

  /// An input the chain writes an output over: its position, the loop nest writing it, the
  /// bytes of one of its rows, its rows, and the output's position among the chain's
  /// inputs and outputs.
  struct InPlace {
    size_t input;
    size_t writer;
    int64_t row_bytes;
    int64_t rows;
    size_t output = 0;
  };

  /// The first row each loop nest computes in a block starting at row b0.
  std::vector<int64_t> first_rows(int64_t b0) const {
    const size_t n = members_.size();
    std::vector<int64_t> done(n, b0);
    for (size_t k = n; k-- > 0;) {
      const Member& m = members_[k];
      done[k] = std::min(m.rows, std::max<int64_t>(0, done[k]) / m.align * m.align);
      for (const Read& r : m.reads) done[r.producer] = std::min(done[r.producer], done[k] + r.min);
    }
    return done;
  }

  /// The row each loop nest computes up to in a band ending at row e.
  std::vector<int64_t> band_ends(int64_t e) const {
    const size_t n = members_.size();
    std::vector<int64_t> hi(n, e);
    for (size_t k = n; k-- > 0;) {
      const Member& m = members_[k];
      hi[k] = std::min(m.rows, (hi[k] + m.align - 1) / m.align * m.align);
      for (const Read& r : m.reads) hi[r.producer] = std::max(hi[r.producer], hi[k] + r.max);
    }
    return hi;
  }

  /// The rows [lo, up) of in-place input `ip` that loop nests read: from the least row any
  /// loop nest still to reach its rows `last` reads from `done` on (the input's rows when
  /// none is), up to the most that those computing rows [done, hi) read (within the
  /// input's rows).
  std::pair<int64_t, int64_t> rows_read(const InPlace& ip, const std::vector<int64_t>& done,
                                        const std::vector<int64_t>& hi, const std::vector<int64_t>& last) const {
    int64_t lo = ip.rows, up = 0;
    for (size_t k = 0; k < members_.size(); ++k) {
      const Member& m = members_[k];
      for (size_t b = 0; b < m.in_rows.size(); ++b) {
        if (m.bufs[b] != ip.input) continue;
        if (done[k] < last[k]) lo = std::min(lo, done[k] + m.in_rows[b].min);
        if (hi[k] > done[k]) up = std::max(up, hi[k] + m.in_rows[b].max);
      }
    }
    lo = std::clamp<int64_t>(lo, 0, ip.rows);
    return {lo, std::clamp<int64_t>(up, lo, ip.rows)};
  }

  /// Writes rows [r0, r1) of the output written over input `ip` from `window` to the
  /// buffer, those other blocks read of the input to `held` instead.
  static void write_back(const InPlace& ip, HeldRows& held, const std::vector<void*>& all, Window& window, int64_t r0,
                         int64_t r1) {
    auto* buffer = static_cast<std::byte*>(all[ip.output]);
    const int64_t rb = ip.row_bytes;
    auto copy = [&](int64_t a, int64_t b, std::byte* to) {
      if (b > a) std::memcpy(to, window.at(a), size_t((b - a) * rb));
    };
    const int64_t m0 = std::clamp(held.h0, r0, r1), m1 = std::clamp(held.h1, m0, r1);
    copy(r0, m0, held.below.data() + (r0 - held.own0) * rb);
    copy(m0, m1, buffer + m0 * rb);
    copy(m1, r1, held.above.data() + (m1 - held.h1) * rb);
  }

  /// Every loop nest's rows [b0 - below, b1 + above) (within [0, rows), widened to its
  /// alignment), band by band. The rows a loop nest needs are computed from the last loop
  /// nest back: its own rows of the block (or band), those its readers need, widened to
  /// its alignment. `outside`: the chain's inputs and outputs (positions from there on in a
  /// member's bufs are windows, this call's own). Outputs written over inputs (`in_place`)
  /// go to windows of rows, and from there to the buffer (or this block's `held` rows)
  /// once no loop nest of the block will read those rows of the input.
  void run_rows(std::vector<std::vector<void*>> bufs, size_t outside, const std::vector<InPlace>& in_place,
                std::vector<HeldRows>* held, const std::vector<void*>& all, int64_t b0, int64_t b1) const {
    if (b0 >= b1) return;
    const size_t n = members_.size();
    // Row masks per member and buffer (generate_kernel): -1 but for rings.
    std::vector<std::vector<int64_t>> masks(n);
    for (size_t k = 0; k < n; ++k) {
      masks[k].assign(bufs[k].size(), -1);
      bufs[k].push_back(masks[k].data());
    }
    std::unique_ptr<const BlockPlan> uncached;
    const BlockPlan& plan = block_plan(b0, b1, outside, uncached);
    // Rings of rows: 2^j rows each, at least the most rows a band keeps and computes
    // (BlockPlan::ring_rows), at fixed places for the whole block.
    const std::vector<int64_t>& ring_rows = plan.ring_rows;
    size_t ring_bytes = 0;
    for (size_t w = 0; w < windows_.size(); ++w) ring_bytes += size_t(ring_rows[w] * windows_[w].row_bytes + 63) / 64 * 64;
    std::byte* ring = ring_bytes > 0 ? ring_scratch(ring_bytes) : nullptr;
    for (size_t w = 0; w < windows_.size(); ++w) {
      if (ring_rows[w] == 0) continue;
      for (size_t c = windows_[w].producer; c < n; ++c)
        for (size_t b = 0; b + 1 < bufs[c].size(); ++b)
          if (members_[c].bufs[b] == outside + w) {
            bufs[c][b] = ring;
            masks[c][b] = ring_rows[w] - 1;
          }
      ring += size_t(ring_rows[w] * windows_[w].row_bytes + 63) / 64 * 64;
    }
    if (in_place.empty() && !plan.copying) {  // nothing to do between the calls
      for (const BlockPlan::Call& c : plan.calls) members_[c.member].fn(bufs[c.member].data(), c.lo, c.hi);
      return;
    }
    std::vector<Window> windows;
    for (const WindowSpec& w : windows_) windows.emplace_back(w.row_bytes);
    std::vector<Window> stages;  // of the outputs written over inputs
    std::vector<int64_t> written;  // their rows written to the buffer up to
    for (size_t w = 0; w < in_place.size(); ++w) {
      stages.emplace_back(in_place[w].row_bytes);
      written.push_back((*held)[w].own0);
    }
    std::vector<int64_t> done = first_rows(b0);
    const std::vector<int64_t> last = in_place.empty() ? std::vector<int64_t>{} : band_ends(b1);
    size_t next = 0;
    for (const auto& [calls_end, e] : plan.bands) {
      for (; next < calls_end; ++next) {
        const size_t k = plan.calls[next].member;
        const int64_t hi = plan.calls[next].hi;
        for (size_t w = 0; w < windows_.size(); ++w) {
          if (windows_[w].producer != k || ring_rows[w] > 0) continue;
          windows[w].reserve(window_keep(w, done, outside), done[k], hi);
          for (size_t c = k; c < n; ++c)
            for (size_t b = 0; b < members_[c].bufs.size(); ++b)
              if (members_[c].bufs[b] == outside + w) bufs[c][b] = windows[w].origin();
        }
        for (size_t w = 0; w < in_place.size(); ++w) {
          const InPlace& ip = in_place[w];
          if (ip.writer != k) continue;
          // Kept: rows its readers have yet to read, and those not yet in the buffer.
          int64_t keep = std::min(done[k], std::max(written[w], (*held)[w].own0));
          for (size_t c = k + 1; c < n; ++c)
            for (size_t b = 0; b < members_[c].in_rows.size(); ++b)
              if (members_[c].bufs[b] == ip.output)
                keep = std::min(keep, std::max<int64_t>(0, done[c] + members_[c].in_rows[b].min));
          stages[w].reserve(keep, done[k], hi);
          for (size_t c = k; c < n; ++c)
            for (size_t b = 0; b < members_[c].bufs.size(); ++b)
              if (members_[c].bufs[b] == ip.output) bufs[c][b] = stages[w].origin();
        }
        members_[k].fn(bufs[k].data(), done[k], hi);
        done[k] = hi;
      }
      // Rows of outputs no loop nest of the block reads again of the input go to the buffer.
      for (size_t w = 0; w < in_place.size(); ++w) {
        const InPlace& ip = in_place[w];
        const int64_t free = e < b1 ? rows_read(ip, done, done, last).first : ip.rows;
        const int64_t to = std::min({free, done[ip.writer], (*held)[w].own1});
        if (to > written[w]) write_back(ip, (*held)[w], all, stages[w], written[w], to);
        written[w] = std::max(written[w], to);
      }
    }
  }

  /// The plan of block [b0, b1): from the chain's cache, or made (and cached while the cache
  /// has room; otherwise left in `uncached`, which the reference then points into).
  const BlockPlan& block_plan(int64_t b0, int64_t b1, size_t outside, std::unique_ptr<const BlockPlan>& uncached) const {
    {
      std::lock_guard<std::mutex> lock(plans_->mu);
      if (auto it = plans_->plans.find({b0, b1}); it != plans_->plans.end()) return *it->second;
    }
    auto plan = std::make_unique<BlockPlan>();
    // A ring holds, at every band, the rows its producer computes and those before them
    // its readers have yet to read, rounded up to a power of two: rows r and r + 2^j then
    // never share a slot while both are needed.
    std::vector<int64_t>& span = plan->ring_rows;
    span.assign(windows_.size(), 0);
    std::vector<int64_t> done = first_rows(b0);
    for (int64_t e = b0; e < b1;) {
      e = std::min(b1, e + band_rows_);
      const std::vector<int64_t> hi = band_ends(e);
      for (size_t k = 0; k < members_.size(); ++k) {
        if (hi[k] <= done[k]) continue;
        for (size_t w = 0; w < windows_.size(); ++w)
          if (windows_[w].ring && windows_[w].producer == k)
            span[w] = std::max(span[w], hi[k] - window_keep(w, done, outside));
        plan->calls.push_back({k, done[k], hi[k]});
        done[k] = hi[k];
      }
      plan->bands.emplace_back(plan->calls.size(), e);
    }
    for (int64_t& rows : span)
      if (rows > 0) rows = int64_t(std::bit_ceil(uint64_t(rows)));
    plan->copying = std::count(span.begin(), span.end(), 0) > 0;
    std::lock_guard<std::mutex> lock(plans_->mu);
    if (plans_->plans.size() >= BlockPlans::kMaxPlans) {
      uncached = std::move(plan);
      return *uncached;
    }
    auto [it, fresh] = plans_->plans.try_emplace({b0, b1}, std::move(plan));
    return *it->second;  // (another thread's equal plan when it was first)
  }

  /// The first row of window `w` that a reader has yet to read (its next row plus its least
  /// offset), or its producer's next row: rows before it are no longer needed.
  int64_t window_keep(size_t w, const std::vector<int64_t>& done, size_t outside) const {
    const size_t k = windows_[w].producer;
    int64_t keep = done[k];
    for (size_t c = k + 1; c < members_.size(); ++c)
      for (const Read& r : members_[c].reads)
        if (r.producer == k && reads_window(c, w, outside)) keep = std::min(keep, std::max<int64_t>(0, done[c] + r.min));
    return keep;
  }

  /// Whether member `c` reads window `w`.
  bool reads_window(size_t c, size_t w, size_t outside) const {
    return std::find(members_[c].bufs.begin(), members_[c].bufs.end(), outside + w) != members_[c].bufs.end();
  }

  std::vector<Member> members_;
  std::vector<WindowSpec> windows_;
  int64_t rows_;
  int64_t band_rows_;
  int64_t block_rows_;  // 0: one block per thread
  std::shared_ptr<BlockPlans> plans_ = std::make_shared<BlockPlans>();
};

std::vector<Aval> chain_eval(std::span<const Aval> ins, const ir::Params& p) {
  const ir::Program& program = *p.get<ir::ProgramRef>("program");
  ops::check_same_types("fused_chain", "operand", ins, program.in_avals(), "the chain's program takes these types");
  return program.out_avals();
}

void chain_kernel(const ir::KernelCall& c) { c.params.get_object<ChainSchedule>("schedule").run(c); }

std::vector<size_t> chain_inplace(size_t out, std::span<const Aval> in_avals, std::span<const Aval> out_avals,
                                  const ir::Params& p) {
  // Only with TESSEL_FUSION_STREAM_INPLACE=1: copying each output row out of its window
  // measured slower than the write-allocate traffic it saves on the shallow-water step
  // (docs/performance.md).
  if (!config::get_flag(config::kFusionStreamInplace)) return {};
  return p.get_object<ChainSchedule>("schedule").inplace_inputs(out, in_avals, out_avals);
}

const ir::Primitive& fused_chain_p = ir::register_primitive(
    {.name = "fused_chain", .abstract_eval = chain_eval, .cpu_kernel = chain_kernel, .inplace = chain_inplace});

const FusedKernel& kernel_of(const ir::Equation& e) { return e.params.get_object<FusedKernel>("kernel"); }

/// A loop nest that can be a member of a chain: one that keeps its domain's first dimension.
bool streamable(const ir::Equation& e) {
  if (!is_fused(e) || kernel_of(e).has_columns()) return false;
  const GroupShape& s = kernel_of(e).shape();
  return !s.domain.empty() && s.kept >= 1 && s.domain[0] >= 1;
}

/// A chain being formed: its members (equation indices) and, per member, the rows it reads
/// of earlier members' outputs.
class Chain {
 public:
  explicit Chain(const ir::Program& p) : p_(p) {}
  bool empty() const { return members_.empty(); }
  size_t size() const { return members_.size(); }
  const std::vector<size_t>& members() const { return members_; }
  int64_t rows() const { return rows_; }
  const std::vector<int64_t>& below() const { return below_; }
  const std::vector<int64_t>& above() const { return above_; }
  /// Per member, its reads of earlier members' outputs.
  const std::vector<std::vector<Read>>& reads() const { return reads_; }

  /// Whether equation `i` reads a value computed by a member.
  bool reads_output(size_t i) const {
    for (const ir::Atom& a : p_.eqns[i].inputs)
      if (!a.is_literal() && member_of_.count(a.var().get())) return true;
    return false;
  }

  /// Appends streamable equation `i` if it can stream after the members; false otherwise.
  bool try_append(size_t i) {
    const ir::Equation& e = p_.eqns[i];
    const int64_t rows = kernel_of(e).shape().domain[0];
    if (members_.empty()) {
      reads_.emplace_back();
      add(i, rows);
      return true;
    }
    const ir::Program& group = *e.params.get<ir::ProgramRef>("program");
    const std::vector<RowOffsets> offsets = row_offsets(group);
    std::vector<Read> reads;
    for (size_t k = 0; k < e.inputs.size(); ++k) {
      auto it = member_of_.find(e.inputs[k].var().get());
      if (it == member_of_.end()) continue;
      if (!offsets[k].rows) return false;
      reads.push_back({it->second, offsets[k].min, offsets[k].max});
    }
    reads_.push_back(std::move(reads));
    std::vector<int64_t> below, above;
    halos(below, above);
    for (size_t k = 0; k < below.size(); ++k)
      if (below[k] > kMaxHaloRows || above[k] > kMaxHaloRows) {
        reads_.pop_back();
        return false;
      }
    add(i, rows);
    below_ = std::move(below);
    above_ = std::move(above);
    return true;
  }

  void clear() {
    members_.clear();
    rows_ = 0;
    member_of_.clear();
    reads_.clear();
    below_.clear();
    above_.clear();
  }

 private:
  void add(size_t i, int64_t rows) {
    rows_ = std::max(rows_, rows);
    for (const ir::Var& v : p_.eqns[i].outputs) member_of_[v.get()] = members_.size();
    members_.push_back(i);
    below_.resize(members_.size(), 0);
    above_.resize(members_.size(), 0);
  }

  /// Rows each member (of reads_) computes beyond a block's edges: as far as the members
  /// after it read it from their own extended ranges.
  void halos(std::vector<int64_t>& below, std::vector<int64_t>& above) const {
    below.assign(reads_.size(), 0);
    above.assign(reads_.size(), 0);
    for (size_t c = reads_.size(); c-- > 0;)
      for (const Read& r : reads_[c]) {
        below[r.producer] = std::max(below[r.producer], below[c] - r.min);
        above[r.producer] = std::max(above[r.producer], above[c] + r.max);
      }
  }

  const ir::Program& p_;
  std::vector<size_t> members_;
  std::unordered_map<const ir::VarNode*, size_t> member_of_;  // output -> member position
  std::vector<std::vector<Read>> reads_;  // per member
  std::vector<int64_t> below_, above_;
  int64_t rows_ = 0;
};

/// The `fused_chain` equation running the chain's members of `p`. A value the members compute
/// is an output of the chain when `p` returns it (`returned`) or an equation of `p` other
/// than the members reads it (`readers`: the equations reading each value); the others
/// live in windows of rows (Window).
ir::Equation chain_equation(const ir::Program& p, const Chain& chain, int64_t band_bytes, int64_t block_rows,
                            const std::unordered_map<const ir::VarNode*, std::vector<size_t>>& readers,
                            const std::unordered_set<const ir::VarNode*>& returned) {
  auto g = std::make_shared<ir::Program>();
  g->name = p.name + "_chain";
  const std::unordered_set<size_t> in_chain(chain.members().begin(), chain.members().end());
  auto read_outside = [&](const ir::VarNode* v) {
    if (returned.count(v)) return true;
    auto it = readers.find(v);
    if (it == readers.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(), [&](size_t i) { return !in_chain.count(i); });
  };
  std::unordered_map<const ir::VarNode*, size_t> output_pos, window_pos;
  std::vector<WindowSpec> windows;
  for (size_t k = 0; k < chain.size(); ++k)
    for (const ir::Var& v : p.eqns[chain.members()[k]].outputs) {
      if (read_outside(v.get()) || row_bytes(v->aval) == 0) {
        output_pos[v.get()] = g->outvars.size();
        g->outvars.push_back(ir::Atom(v));
      } else {
        window_pos[v.get()] = windows.size();
        windows.push_back({k, row_bytes(v->aval)});
      }
    }
  std::unordered_map<const ir::VarNode*, size_t> input_pos;
  for (size_t i : chain.members())
    for (const ir::Atom& a : p.eqns[i].inputs) {
      const ir::VarNode* v = a.var().get();
      if (output_pos.count(v) || window_pos.count(v) || input_pos.count(v)) continue;
      input_pos[v] = g->invars.size();
      g->invars.push_back(a.var());
    }
  // Position of a value among the chain's inputs, outputs, then windows.
  const size_t outside = g->invars.size() + g->outvars.size();
  auto position = [&](const ir::VarNode* v) {
    if (auto w = window_pos.find(v); w != window_pos.end()) return outside + w->second;
    if (auto o = output_pos.find(v); o != output_pos.end()) return g->invars.size() + o->second;
    return input_pos.at(v);
  };
  std::vector<Member> members;
  int64_t bytes_per_row = 0;
  for (const ir::Var& v : g->invars) bytes_per_row += row_bytes(v->aval);
  for (const ir::Atom& a : g->outvars) bytes_per_row += row_bytes(a.aval());
  for (const WindowSpec& w : windows) bytes_per_row += w.row_bytes;
  for (size_t k = 0; k < chain.size(); ++k) {
    const ir::Equation& e = p.eqns[chain.members()[k]];
    g->eqns.push_back(e);
    Member m;
    m.kernel = e.params.get<std::shared_ptr<const ir::ParamObject>>("kernel");
    m.program = e.params.get<ir::ProgramRef>("program");
    m.fn = kernel_of(e).fn();
    for (const ir::Atom& a : e.inputs) m.bufs.push_back(position(a.var().get()));
    for (const ir::Var& v : e.outputs) m.bufs.push_back(position(v.get()));
    m.rows = kernel_of(e).shape().domain[0];
    m.points = 1;
    for (int64_t d : kernel_of(e).shape().domain) m.points *= d;
    m.align = row_alignment(kernel_of(e).shape());
    m.full = kernel_of(e).shape().domain.size() >= 2 && kernel_of(e).shape().kept == kernel_of(e).shape().domain.size();
    m.reads = chain.reads()[k];
    m.in_rows = row_offsets(*e.params.get<ir::ProgramRef>("program"));
    m.below = chain.below()[k];
    m.above = chain.above()[k];
    members.push_back(std::move(m));
  }
  // A window lives in a ring of rows when every loop nest touching it indexes it at its row
  // modulo a mask (no copies as bands advance).
  for (auto& [v, w] : window_pos) {
    WindowSpec& spec = windows[w];
    const ir::Equation& producer = p.eqns[chain.members()[spec.producer]];
    spec.ring = false;
    for (size_t o = 0; o < producer.outputs.size(); ++o)
      if (producer.outputs[o].get() == v) spec.ring = kernel_of(producer).ring_buffer(producer.inputs.size() + o);
    for (size_t k = spec.producer + 1; k < chain.size(); ++k) {
      const ir::Equation& e = p.eqns[chain.members()[k]];
      for (size_t i = 0; i < e.inputs.size(); ++i)
        if (!e.inputs[i].is_literal() && e.inputs[i].var().get() == v) spec.ring &= kernel_of(e).ring_buffer(i);
    }
  }
  const int64_t band_rows = std::max<int64_t>(1, band_bytes / std::max<int64_t>(1, bytes_per_row));
  auto schedule = std::make_shared<const ChainSchedule>(std::move(members), std::move(windows), chain.rows(), band_rows,
                                                        block_rows);
  TESSEL_DEBUG_LOG("streaming '" + p.name + "': " + schedule->to_string() + "; " + std::to_string(g->invars.size()) +
                   " inputs, " + std::to_string(g->outvars.size()) + " outputs");
  ir::Equation e{&fused_chain_p, {}, {}, ir::Params{{"program", ir::ProgramRef(g)},
                                                   {"schedule", std::shared_ptr<const ir::ParamObject>(schedule)}}};
  for (const ir::Var& v : g->invars) e.inputs.push_back(ir::Atom(v));
  for (const ir::Atom& a : g->outvars) e.outputs.push_back(a.var());
  return e;
}

}  // namespace

std::optional<RowSplit> split_rows(const ir::Equation& e, const std::vector<char>& late) {
  if (e.prim == &fused_chain_p) {
    const ChainSchedule& chain = e.params.get_object<ChainSchedule>("schedule");
    auto block = chain.interior(late);
    if (!block) return std::nullopt;
    return RowSplit{block->first, block->second, chain.rows()};
  }
  if (!streamable(e)) return std::nullopt;
  const FusedKernel& k = kernel_of(e);
  const int64_t rows = k.shape().domain[0], align = row_alignment(k.shape());
  auto [begin, end] = rows_without_reads(*e.params.get<ir::ProgramRef>("program"), late);
  begin = (begin + align - 1) / align * align;
  if (end < rows) end = end / align * align;
  if (begin >= end) return std::nullopt;
  return RowSplit{begin, end, rows};
}

void run_step_rows(const ir::Primitive& prim, const ir::KernelCall& c, int64_t r0, int64_t r1) {
  if (&prim == &fused_chain_p) c.params.get_object<ChainSchedule>("schedule").run_block(c, r0, r1);
  else run_fused_rows(c, r0, r1);
}

ir::Program stream_chains(const ir::Program& p, int64_t band_bytes, int64_t block_rows) {
  ir::Program out = without_equations(p);
  std::unordered_map<const ir::VarNode*, std::vector<size_t>> readers;
  for (size_t i = 0; i < p.eqns.size(); ++i)
    for (const ir::Atom& a : p.eqns[i].inputs)
      if (!a.is_literal()) readers[a.var().get()].push_back(i);
  std::unordered_set<const ir::VarNode*> returned;
  for (const ir::Atom& a : p.outvars)
    if (!a.is_literal()) returned.insert(a.var().get());
  Chain chain(p);
  std::vector<size_t> moved;  // equations between members that read no member's output
  size_t chains = 0;
  auto flush = [&] {
    // Equations after the last member stay after the chain.
    const size_t last = chain.empty() ? 0 : chain.members().back();
    if (chain.size() >= 2) {
      for (size_t i : moved)
        if (i < last) out.eqns.push_back(p.eqns[i]);
      out.eqns.push_back(chain_equation(p, chain, band_bytes, block_rows, readers, returned));
      ++chains;
    } else {
      for (size_t i : chain.members()) out.eqns.push_back(p.eqns[i]);
    }
    for (size_t i : moved)
      if (i > last || chain.size() < 2) out.eqns.push_back(p.eqns[i]);
    moved.clear();
    chain.clear();
  };
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const ir::Equation& e = p.eqns[i];
    if (streamable(e)) {
      if (!chain.try_append(i)) {  // (always appends to an empty chain)
        flush();
        chain.try_append(i);
      }
      continue;
    }
    if (!chain.empty() && !chain.reads_output(i)) {
      moved.push_back(i);
      continue;
    }
    flush();
    out.eqns.push_back(e);
  }
  flush();
  if (chains > 0)
    TESSEL_DEBUG_LOG("streaming '" + p.name + "': " + std::to_string(chains) + " chains of loop nests");
  return chains > 0 ? out : p;
}

}  // namespace tessel::compiler
