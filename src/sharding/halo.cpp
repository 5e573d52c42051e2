// Halo exchange: partitioning windows along split dimensions, the permutation factors of
// ir::ShardingRule (slice, pad, concatenate, rev, windowed updates, iota's count).
//
// Along such a dimension, split over mesh axes into k pieces, result position o reads a
// *source* at o + shift: a slice reads its operand at o + start, a pad at o - low (the
// padding value outside the operand), a concatenate each operand at o - its offset, a
// windowed update its update at o - start. These reads are *segments* of the result's
// positions. Device d computes its piece of the result, positions [d*Po - Oo, d*Po + Po - Oo),
// and holds its piece of each source, [d*Pi - Oi, d*Pi + Pi - Oi) (Grid: piece size and
// origin; a window's result keeps its source's grid where it can, kept_window_grid, so
// x[1:-1] is each device's own piece). The rows it needs from other pieces (its halo; from
// pieces d-1 and d+1 for a stencil) arrive by one collective_permute per distance between
// pieces, each carrying only the rows some device needs from that distance; the device
// lays [received rows, own rows] out in order and takes each segment's rows at a start of
// its own: a static slice where every device's start is the same or the program is lowered
// for one device (Lowerer::position), else a dynamic_slice at a start from axis_index
// arithmetic or a small table. Between segments and the fill value, a lowering for one
// device concatenates rows; otherwise masks on the global position (iota + offset) choose.
// realign() is the same exchange with every position reading itself: a value moving to
// another grid.
//
// Pieces sit on a ring: the last piece's rows reach the first device in one hop, so a
// rotation (roll: a concatenate of two slices of one value) moves only the rotated rows.
// The Lowerer defers slices (and broadcasts of one-row slices, an edge padding's edges)
// that only feed a concatenate along a split dimension, and the concatenate reads their
// source directly. A source held whole (a replicated operand, a small update) is windowed
// on each device with no communication. rev swaps whole pieces (d -> k-1-d) and reverses
// each (on a grid that puts the padding first where the pieces do not divide the size);
// iota counts locally from each piece's offset. Where the reads would move as much
// as an all_gather, or a start is not a constant, the dimension is gathered as before.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/log.h"
#include "core/mesh_impl.h"
#include "ir/trace.h"
#include "ops/collectives.h"
#include "ops/op_util.h"
#include "sharding/lowering.h"
#include "tessel/error.h"
#include "tessel/ops.h"

namespace tessel::sharding {
namespace {

using detail::piece_size;

/// A split permutation dimension of the result (operands of the windowed primitives have
/// their windowed dimensions at the same index).
struct SplitDim {
  size_t dim;
  size_t factor;
  Axes axes;
  int64_t k;       // pieces
  int64_t m;       // the result's size along it
  int64_t po;      // the result's grid (Grid): piece size
  int64_t ro = 0;  // and origin
  /// The first result position of device d's piece.
  int64_t first(int64_t d) const { return d * po - ro; }
};

/// Result positions [begin, end) read source `source` at o + shift; a `row` segment reads
/// position `shift` at every o (an edge row repeated).
struct Segment {
  size_t source;
  int64_t begin, end, shift;
  bool row = false;
};

/// A per-device value segments read along one dimension: its global size there, whether
/// it is split there (over the dimension's axes) or whole on every device, and if split
/// its grid (piece d holds positions from d * pi - origin).
struct SourceShape {
  int64_t n;
  bool split;
  int64_t pi = 0;
  int64_t origin = 0;
};

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// ---- planning: which rows move, and where each device finds them ----

/// Rows [a, b) of the piece `hop` pieces along the ring (d + hop mod k), for the devices
/// marked in `receivers`; `offset` is where they start in each device's buffer.
struct Block {
  int64_t hop, a, b, offset = 0;
  std::vector<bool> receivers;
};

struct SourcePlan {
  std::vector<Block> blocks;  // in ring order; hop 0 is the device's own piece
  int64_t length = 0;         // of the buffer, before the zeros around it
  int64_t pad_lo = 0, pad_hi = 0;
};

struct SegmentPlan {
  std::vector<int64_t> start;  // per device: the window's start in the padded buffer
  std::vector<bool> used;      // per device: whether its piece holds positions of the segment
};

struct DimPlan {
  SplitDim s;
  std::vector<Segment> segments;
  std::vector<SourcePlan> sources;
  std::vector<SegmentPlan> reads;  // per segment
  std::vector<size_t> same_as;     // per segment: an earlier segment whose window it shares, or itself
};

/// The turns of the ring (0 or +-k*pi added to rows relative to the device's piece) that
/// reach source rows [r0, r1) in the fewest hops: one, or two that tie on a ring of two.
std::vector<int64_t> nearest_turns(int64_t r0, int64_t r1, int64_t k, int64_t pi) {
  std::vector<int64_t> best;
  int64_t best_hops = std::numeric_limits<int64_t>::max();
  for (int64_t turn : {int64_t(0), -k * pi, k * pi}) {
    const int64_t hops = std::max(std::abs(floor_div(r0 + turn, pi)), std::abs(floor_div(r1 - 1 + turn, pi)));
    if (hops < best_hops) best.clear(), best_hops = hops;
    if (hops == best_hops) best.push_back(turn);
  }
  return best;
}

/// Where a device finds source row `r` (relative to its piece) in its buffer.
int64_t buffer_index(const SourcePlan& p, int64_t r, int64_t pi) {
  const int64_t hop = floor_div(r, pi);
  for (const Block& b : p.blocks)
    if (b.hop == hop) return b.offset + (r - hop * pi - b.a);
  throw Error("internal: halo plan has no block for a row it reads");
}

/// One device's read of one segment: source rows [r0, r1) (relative to the device's piece
/// for a split source), landing at result row t0 of its piece.
struct Read {
  size_t segment;
  int64_t device, r0, r1, t0;
  std::vector<int64_t> turns;  // for a split source: the nearest turns of the ring
};

/// The reads of each device, segment by segment.
std::vector<Read> reads_of(const SplitDim& s, const std::vector<Segment>& segments,
                           const std::vector<SourceShape>& shapes) {
  std::vector<Read> reads;
  for (size_t j = 0; j < segments.size(); ++j) {
    const Segment& g = segments[j];
    const SourceShape& src = shapes[g.source];
    for (int64_t d = 0; d < s.k; ++d) {
      const int64_t o0 = std::max(g.begin, s.first(d)), o1 = std::min({g.end, s.first(d) + s.po, s.m});
      if (o0 >= o1) continue;
      const int64_t p0 = g.row ? g.shift : o0 + g.shift, p1 = g.row ? g.shift + 1 : o1 + g.shift;
      if (p0 < 0 || p1 > src.n) throw Error("internal: a halo segment reads outside its source");
      Read r{j, d, p0, p1, g.row ? 0 : o0 - s.first(d), {}};
      if (src.split) {
        const int64_t base = d * src.pi - src.origin;
        r.r0 -= base, r.r1 -= base;
        r.turns = nearest_turns(r.r0, r.r1, s.k, src.pi);
      }
      reads.push_back(std::move(r));
    }
  }
  return reads;
}

/// Takes one turn per read: where turns tie (a ring of two pieces), the one whose hops the
/// other reads of the source use, so that they share collective_permutes.
void choose_turns(std::vector<Read>& reads, const std::vector<Segment>& segments,
                  const std::vector<SourceShape>& shapes) {
  std::map<std::pair<size_t, int64_t>, int> votes;  // (source, hop) -> reads with one nearest turn using it
  auto hops = [&](const Read& r, int64_t turn, auto&& each) {
    const int64_t pi = shapes[segments[r.segment].source].pi;
    for (int64_t h = floor_div(r.r0 + turn, pi); h <= floor_div(r.r1 - 1 + turn, pi); ++h) each(h);
  };
  for (const Read& r : reads)
    if (r.turns.size() == 1) hops(r, r.turns[0], [&](int64_t h) { ++votes[{segments[r.segment].source, h}]; });
  for (Read& r : reads) {
    if (r.turns.empty()) continue;
    int64_t best = r.turns[0], best_votes = -1;
    for (int64_t turn : r.turns) {
      int64_t v = 0;
      hops(r, turn, [&](int64_t h) { v += votes[{segments[r.segment].source, h}]; });
      if (v > best_votes) best = turn, best_votes = v;
    }
    r.r0 += best, r.r1 += best;
  }
}

/// Lets segments of one source that read the same rows on every device that uses both
/// share one window (the two halves of a rotation often do): no select between them.
void share_windows(DimPlan& plan) {
  const size_t n = plan.segments.size();
  plan.same_as.resize(n);
  for (size_t j = 0; j < n; ++j) {
    plan.same_as[j] = j;
    const Segment& g = plan.segments[j];
    SegmentPlan& mine = plan.reads[j];
    for (size_t i = 0; i < j && plan.same_as[j] == j; ++i) {
      SegmentPlan& theirs = plan.reads[i];
      if (plan.same_as[i] != i || plan.segments[i].source != g.source || plan.segments[i].row != g.row) continue;
      bool agree = true;
      for (size_t d = 0; d < mine.used.size() && agree; ++d)
        agree = !mine.used[d] || !theirs.used[d] || mine.start[d] == theirs.start[d];
      if (!agree) continue;
      for (size_t d = 0; d < mine.used.size(); ++d)
        if (mine.used[d]) theirs.used[d] = true, theirs.start[d] = mine.start[d];
      plan.same_as[j] = i;
    }
  }
}

/// Plans the reads of one split dimension; nullopt when they would move as many rows as
/// gathering the dimension, unless `whatever_it_moves`.
std::optional<DimPlan> plan_dim(const SplitDim& s, const std::vector<Segment>& segments,
                                const std::vector<SourceShape>& shapes, bool whatever_it_moves = false) {
  const int64_t k = s.k;
  DimPlan plan{s, segments, std::vector<SourcePlan>(shapes.size()),
               std::vector<SegmentPlan>(segments.size(), {std::vector<int64_t>(size_t(k), 0),
                                                          std::vector<bool>(size_t(k), false)}),
               {}};
  std::vector<Read> reads = reads_of(s, segments, shapes);
  choose_turns(reads, segments, shapes);
  // The rows each hop brings: the union of what its receivers read there.
  std::vector<std::map<int64_t, Block>> blocks(shapes.size());
  for (const Read& r : reads) {
    const size_t i = segments[r.segment].source;
    if (!shapes[i].split) continue;
    const int64_t pi = shapes[i].pi;
    for (int64_t hop = floor_div(r.r0, pi); hop <= floor_div(r.r1 - 1, pi); ++hop) {
      const int64_t a = std::max(r.r0 - hop * pi, int64_t(0)), b = std::min(r.r1 - hop * pi, pi);
      auto [it, fresh] = blocks[i].try_emplace(hop, Block{hop, a, b, 0, std::vector<bool>(size_t(k), false)});
      it->second.a = std::min(it->second.a, a);
      it->second.b = std::max(it->second.b, b);
      it->second.receivers[size_t(r.device)] = true;
    }
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    SourcePlan& p = plan.sources[i];
    if (!shapes[i].split || blocks[i].empty()) {
      p.length = shapes[i].split ? shapes[i].pi : shapes[i].n;
      continue;
    }
    int64_t moved = 0;
    for (auto& [hop, b] : blocks[i]) {
      b.offset = p.length;
      p.length += b.b - b.a;
      if (hop != 0) moved += b.b - b.a;
      p.blocks.push_back(b);
    }
    if (!whatever_it_moves && moved > 0 && moved >= (k - 1) * shapes[i].pi) return std::nullopt;  // no better than a gather
  }
  // Window starts, and the zeros around each buffer that keep every window inside it.
  for (const Read& r : reads) {
    const Segment& g = segments[r.segment];
    const SourcePlan& p = plan.sources[g.source];
    const int64_t at = p.blocks.empty() ? r.r0 : buffer_index(p, r.r0, shapes[g.source].pi);
    plan.reads[r.segment].start[size_t(r.device)] = at - r.t0;
    plan.reads[r.segment].used[size_t(r.device)] = true;
  }
  for (size_t j = 0; j < segments.size(); ++j) {
    SourcePlan& p = plan.sources[segments[j].source];
    const int64_t width = segments[j].row ? 1 : s.po;
    p.pad_hi = std::max(p.pad_hi, width - p.length);  // a window no device uses still fits
    for (int64_t d = 0; d < k; ++d) {
      if (!plan.reads[j].used[size_t(d)]) continue;
      const int64_t start = plan.reads[j].start[size_t(d)];
      p.pad_lo = std::max(p.pad_lo, -start);
      p.pad_hi = std::max(p.pad_hi, start + width - p.length);
    }
  }
  for (size_t j = 0; j < segments.size(); ++j)
    for (auto& st : plan.reads[j].start) st += plan.sources[segments[j].source].pad_lo;
  share_windows(plan);
  return plan;
}

// ---- emission ----

/// An int32 scalar that is values[d] on the device with index d along `axes` (entries not
/// `used` are free): a literal when the used ones agree, axis_index * a + b when they lie
/// on a line, else an entry of a constant table.
Array per_device(const Axes& axes, const std::vector<int64_t>& values, const std::vector<bool>& used) {
  std::vector<int64_t> ds;
  for (size_t d = 0; d < values.size(); ++d)
    if (used[d]) ds.push_back(int64_t(d));
  if (ds.empty()) return Array(int32_t(0));
  auto value = [&](int64_t d) { return values[size_t(d)]; };
  if (std::all_of(ds.begin(), ds.end(), [&](int64_t d) { return value(d) == value(ds[0]); }))
    return Array(int32_t(value(ds[0])));
  const int64_t rise = value(ds[1]) - value(ds[0]), run = ds[1] - ds[0];
  if (rise % run == 0) {
    const int64_t slope = rise / run, at0 = value(ds[0]) - slope * ds[0];
    if (std::all_of(ds.begin(), ds.end(), [&](int64_t d) { return value(d) == at0 + slope * d; })) {
      Array r = detail::axis_index(axes);
      if (slope != 1) r = r * Array(int32_t(slope));
      return at0 == 0 ? r : r + Array(int32_t(at0));
    }
  }
  std::vector<int32_t> table(values.size(), 0);
  for (int64_t d : ds) table[size_t(d)] = int32_t(value(d));
  return reshape(dynamic_slice(Array(table), {detail::axis_index(axes)}, {1}), {});
}

/// The global position along `dim` of each element of a per-device value of `shape` whose
/// dimension `dim` is this device's piece of the result's grid (int32, or int64 past 2^31).
Array global_positions(const Lowerer& l, const Shape& shape, const SplitDim& s) {
  const DType dt = s.k * s.po < (int64_t(1) << 31) ? DType::int32 : DType::int64;
  Array offset;
  if (std::optional<int64_t> d = l.known_index(s.axes)) {
    offset = Array(Scalar(s.first(*d), dt));
  } else {
    offset = astype(detail::axis_index(s.axes), dt) * Array(Scalar(s.po, dt));
    if (s.ro != 0) offset = offset - Array(Scalar(s.ro, dt));
  }
  return iota(dt, shape, int64_t(s.dim)) + offset;
}

/// Whether positions `o` lie in [begin, end) (null when every position of [0, m) does).
Array within(const Array& o, int64_t begin, int64_t end, int64_t m) {
  Array r;
  if (begin > 0) r = greater_equal(o, Array(Scalar(begin, o.dtype())));
  if (end < m) {
    Array below = less(o, Array(Scalar(end, o.dtype())));
    r = r.valid() ? logical_and(r, below) : below;
  }
  return r;
}

/// `in` where this device's positions along s (of a piece of `shape`) lie in [begin, end),
/// `out` (a piece or a scalar) elsewhere; positions outside [0, s.m) count as inside a
/// range that reaches that end. Lowered for one device the positions are known: the rows of
/// each, concatenated, which a fused loop nest reads with no test in its interior (a select
/// would compute both values at every point). Otherwise a select on the global positions.
Array where_positions(const Lowerer& l, const SplitDim& s, int64_t begin, int64_t end, const Array& in,
                      const Array& out, const Shape& shape) {
  std::optional<int64_t> d = l.known_index(s.axes);
  if (!d) {
    Array inside = within(global_positions(l, shape, s), begin, end, s.m);
    return inside.valid() ? where(inside, in, out) : in;
  }
  const int64_t first = s.first(*d);
  const int64_t lo = begin > 0 ? std::clamp<int64_t>(begin - first, 0, s.po) : 0;
  const int64_t hi = end < s.m ? std::clamp<int64_t>(end - first, 0, s.po) : s.po;
  const Array typed = out.dtype() == in.dtype() ? out : astype(out, in.dtype());
  const Array whole_out = typed.shape() == shape ? typed : broadcast_to(typed, shape);
  if (lo >= hi) return whole_out;
  if (lo == 0 && hi == s.po) return in;
  std::vector<Array> parts;
  const int64_t dim = int64_t(s.dim);
  if (lo > 0) parts.push_back(slice_in_dim(whole_out, 0, lo, 1, dim));
  parts.push_back(slice_in_dim(in, lo, hi, 1, dim));
  if (hi < s.po) parts.push_back(slice_in_dim(whole_out, hi, s.po, 1, dim));
  return concatenate(parts, dim);
}

/// Rows [b.a, b.b) of the piece b.hop pieces along the ring, received by b's receivers (one
/// collective_permute; the own rows for hop 0). Windows of one program that read the same
/// rows of the same value share one exchange (collectives are effects: never merged later).
Array block_rows(Lowerer& l, const Array& local, const Block& b, const SplitDim& s) {
  const bool whole_piece = b.a == 0 && b.b == local.shape()[s.dim];
  Array rows = whole_piece ? local : slice_in_dim(local, b.a, b.b, 1, int64_t(s.dim));
  if (b.hop == 0) return rows;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::string key = "halo dim " + std::to_string(s.dim) + " rows " + std::to_string(b.a) + ":" + std::to_string(b.b);
  for (int64_t d = 0; d < s.k; ++d)
    if (b.receivers[size_t(d)]) {
      pairs.emplace_back(((d + b.hop) % s.k + s.k) % s.k, d);
      key += " " + std::to_string(pairs.back().first) + "->" + std::to_string(d);
    }
  return l.derived(local, key, [&] { return detail::collective_permute(rows, s.axes, pairs); });
}

/// The buffer of a split source: the blocks of other pieces received and its own rows, in
/// ring order.
Array buffer_of(Lowerer& l, const Array& local, const SourcePlan& p, const SplitDim& s) {
  std::vector<Array> parts;
  for (const Block& b : p.blocks) parts.push_back(block_rows(l, local, b, s));
  return parts.size() == 1 ? parts[0] : concatenate(parts, int64_t(s.dim));
}

/// The `size` rows of `b` along s.dim from this device's start (start[d] on device d; only
/// `used` ones matter): a static slice when the devices agree or the program is lowered for
/// one device, else a dynamic_slice at a start from the device index (which fused loop
/// nests read at a run-time offset). (Choosing among static slices by the device index
/// would make every loop nest that reads the window compute its source once per choice.)
Array window(const Lowerer& l, const Array& b, const SplitDim& s, const std::vector<int64_t>& start,
             const std::vector<bool>& used, int64_t size) {
  const int64_t n = b.shape()[s.dim];
  auto clamped = [&](int64_t st) { return ops::window_start(st, n, size); };
  std::optional<int64_t> common;  // this device's start, or the one every used device agrees on
  bool agree = true;
  if (std::optional<int64_t> d = l.known_index(s.axes)) {
    common = used[size_t(*d)] ? clamped(start[size_t(*d)]) : 0;
  } else {
    for (size_t d = 0; d < start.size() && agree; ++d)
      if (used[d]) {
        agree = !common || *common == clamped(start[d]);
        common = clamped(start[d]);
      }
  }
  if (agree) return slice_in_dim(b, common.value_or(0), common.value_or(0) + size, 1, int64_t(s.dim));
  std::vector<Array> starts(size_t(b.ndim()), Array(int32_t(0)));
  starts[s.dim] = per_device(s.axes, start, used);
  Shape sizes = b.shape();
  sizes[s.dim] = size;
  return dynamic_slice(b, starts, sizes);
}

/// Per segment, the rows it reads at this device's result positions (size po along the
/// dimension; a row segment's row repeated).
std::vector<Array> read(Lowerer& l, const DimPlan& plan, const std::vector<Array>& sources) {
  const SplitDim& s = plan.s;
  std::vector<Array> buffers;
  for (size_t i = 0; i < sources.size(); ++i) {
    const SourcePlan& p = plan.sources[i];
    Array b = p.blocks.empty() ? sources[i] : buffer_of(l, sources[i], p, s);
    if (p.pad_lo > 0 || p.pad_hi > 0) {
      std::vector<std::pair<int64_t, int64_t>> widths(size_t(b.ndim()), {0, 0});
      widths[s.dim] = {p.pad_lo, p.pad_hi};
      b = pad(b, widths);
    }
    buffers.push_back(b);
  }
  std::vector<Array> out;
  for (size_t j = 0; j < plan.segments.size(); ++j) {
    if (plan.same_as[j] != j) {
      out.push_back(out[plan.same_as[j]]);
      continue;
    }
    const Segment& g = plan.segments[j];
    const Array& b = buffers[g.source];
    Shape sizes = b.shape();
    sizes[s.dim] = g.row ? 1 : s.po;
    Array w = window(l, b, s, plan.reads[j].start, plan.reads[j].used, sizes[s.dim]);
    if (g.row) {
      sizes[s.dim] = s.po;
      tessel::Axes dims(size_t(w.ndim()));
      for (size_t d = 0; d < dims.size(); ++d) dims[d] = int64_t(d);
      w = broadcast_in_dim(w, sizes, dims);
    }
    out.push_back(w);
  }
  return out;
}

/// `shape` with dimension s.dim the result's piece size.
Shape realigned(Shape shape, const SplitDim& s) {
  shape[s.dim] = s.po;
  return shape;
}

/// This device's piece of `shape` along the dimension: each segment's rows where its
/// positions lie, `fill` (a scalar, or null when the segments cover every position)
/// elsewhere.
Array assemble(const Lowerer& l, const DimPlan& plan, const std::vector<Array>& rows, const Array& fill,
               const Shape& shape) {
  if (rows.empty()) return broadcast_to(fill, shape);
  size_t first = 0;
  Array r = fill;
  if (!r.valid()) r = rows[first++];
  for (size_t j = first; j < rows.size(); ++j) {
    if (rows[j].impl() == r.impl()) continue;  // a window shared with the segment before
    r = where_positions(l, plan.s, plan.segments[j].begin, plan.segments[j].end, rows[j], r, shape);
  }
  return r;
}

// ---- the lowering of each windowed primitive ----

/// What lower_window works on: the equation, its factors, and the split permutation
/// dimensions of its result.
struct Window {
  Lowerer& l;
  const ir::Equation& e;
  const ir::ShardingRule& rule;
  std::vector<Axes>& factors;
  std::vector<SplitDim> dims;

  const Shape& result_shape() const { return e.outputs[0]->aval.shape; }

  /// Gathers dimension `s` instead (clears its factor), saying why.
  void gather(const SplitDim& s, const std::string& why) {
    TESSEL_INFO_LOG("partition '" + l.program().name + "': " + e.prim->name + " along dimension " +
                    std::to_string(s.dim) + " split over " + axes_text(s.axes) + ": " + why +
                    "; gathering the dimension");
    factors[s.factor].clear();
  }
  void gather_all(const std::string& why) {
    for (auto& s : dims) gather(s, why);
    dims.clear();
  }

  /// Whether `a` (of the equation's operands or their sources) is split along `s` once laid
  /// out for the window: an operand held whole there stays whole.
  bool split_along(const ir::Atom& a, const SplitDim& s) const {
    if (a.is_literal()) return false;
    const Layout& have = l.get(a).layout;
    return !have.partial.empty() || !have.dims[s.dim].empty();
  }
  /// The grid a source split along `s` keeps for the window: its own where it is split over
  /// the dimension's axes (no reshard needed), else the canonical one it is resharded to.
  Grid kept_grid(const ir::Atom& a, const SplitDim& s) const {
    const int64_t n = a.aval().shape[s.dim];
    const Layout& have = l.get(a).layout;
    if (have.partial.empty() && have.dims[s.dim] == s.axes) return grid_of(have, s.dim, n, l.mesh());
    return Grid{piece_size(n, s.k), 0};
  }
  /// What the window reads of source `a` along `s` (once laid out by source()).
  SourceShape shape_along(const ir::Atom& a, const SplitDim& s) const {
    const int64_t n = a.aval().shape[s.dim];
    if (!split_along(a, s)) return {n, false, n, 0};
    const Grid g = kept_grid(a, s);
    return {n, true, g.piece, g.origin};
  }
  /// `a` laid out by `rule_dims` (a rule's factor ids), except along split dimensions where
  /// it is whole, with the grids it keeps there.
  Array source(const ir::Atom& a, const std::vector<int>& rule_dims) {
    Layout want{project(rule_dims, factors), {}, ir::Combine::kNone};
    for (auto& s : dims) {
      if (!split_along(a, s)) want.dims[s.dim].clear();
      else set_grid(want, s.dim, kept_grid(a, s), a.aval().shape[s.dim], l.mesh());
    }
    return l.to_layout(a, want);
  }
  Layout result_layout() const {
    Layout r{project(rule.results[0], factors), {}, ir::Combine::kNone};
    for (auto& s : dims) set_grid(r, s.dim, Grid{s.po, s.ro}, s.m, l.mesh());
    return r;
  }
  Aval local_result() const {
    const Aval& g = e.outputs[0]->aval;
    return Aval(local_shape(l.mesh(), result_layout(), g.shape), g.dtype, g.weak_type);
  }
  /// The primitive bound on per-device operands, its parameters localized for them.
  Array bind_local(const std::vector<Array>& ins, ir::Params params) const {
    std::vector<Aval> in_avals, out_avals{local_result()};
    for (auto& a : ins) in_avals.push_back(a.aval());
    if (e.prim->localize) params = e.prim->localize(params, in_avals, out_avals);
    return detail::bind(*e.prim, ins, params)[0];
  }
  void set_result(const Array& v) {
    if (v.shape() != local_result().shape)
      throw Error("internal: the halo lowering of '" + e.prim->name + "' gave a per-device result of shape " +
                  shape_to_string(v.shape()) + ", expected " + shape_to_string(local_result().shape));
    l.set(e.outputs[0], Local{v, result_layout()});
  }

  /// Plans every split dimension with `segments_of` (nullopt: not partitionable, with the
  /// reason in `why`) reading sources of `shapes_of`; gathers those whose reads do not fit.
  template <class SegmentsOf, class ShapesOf>
  std::vector<DimPlan> plan(SegmentsOf segments_of, ShapesOf shapes_of) {
    std::vector<DimPlan> plans;
    std::vector<SplitDim> kept;
    for (const SplitDim& s : dims) {
      std::string why = "its halo would move as much as gathering it";
      std::optional<std::vector<Segment>> segs = segments_of(s, why);
      std::optional<DimPlan> p = segs ? plan_dim(s, *segs, shapes_of(s)) : std::nullopt;
      if (!p) {
        gather(s, why);
        continue;
      }
      plans.push_back(std::move(*p));
      kept.push_back(s);
    }
    dims = kept;
    return plans;
  }
};

/// A literal start index along `dim` of a window of `size` rows of `n`, as dynamic_slice
/// and dynamic_update_slice clamp it; nullopt when it is not a literal.
std::optional<int64_t> constant_start(const ir::Atom& a, int64_t n, int64_t size) {
  if (!a.is_literal()) return std::nullopt;
  return ops::window_start(a.literal().to<int64_t>(), n, size);
}

/// slice, dynamic_slice and pad: the operand realigned dimension by dimension (a pad fills
/// with its value), then the primitive with identity windows along those dimensions.
bool lower_one_source(Window& w) {
  const ir::Equation& e = w.e;
  const std::string& name = e.prim->name;
  const ir::Atom& x = e.inputs[0];
  const Shape& xs = x.aval().shape;
  auto segments_of = [&](const SplitDim& s, std::string& why) -> std::optional<std::vector<Segment>> {
    const int64_t n = xs[s.dim];
    if (name == "slice") return std::vector<Segment>{{0, 0, s.m, e.params.get_ints("start_indices")[s.dim]}};
    if (name == "dynamic_slice") {
      std::optional<int64_t> start = constant_start(e.inputs[1 + s.dim], n, s.m);
      if (!start) {
        why = "its start is not a constant";
        return std::nullopt;
      }
      return std::vector<Segment>{{0, 0, s.m, *start}};
    }
    const int64_t lo = e.params.get_ints("padding_config")[3 * s.dim];
    const int64_t begin = std::max<int64_t>(lo, 0), end = std::min(lo + n, s.m);
    if (begin >= end) return std::vector<Segment>{};
    return std::vector<Segment>{{0, begin, end, -lo}};
  };
  auto shapes_of = [&](const SplitDim& s) { return std::vector<SourceShape>{w.shape_along(x, s)}; };
  std::vector<DimPlan> plans = w.plan(segments_of, shapes_of);
  if (plans.empty()) return false;

  Array v = w.source(x, w.rule.operands[0]);
  Array fill = name == "pad" ? w.l.get(e.inputs[1]).value : Array();
  for (const DimPlan& p : plans) v = assemble(w.l, p, read(w.l, p, {v}), fill, realigned(v.shape(), p.s));
  // The primitive itself, with identity windows along the realigned dimensions (none at all
  // when a slice keeps the whole piece).
  if (name != "pad" && v.shape() == w.local_result().shape) {
    w.set_result(v);
    return true;
  }
  ir::Params params = e.params;
  std::vector<Array> ins{v};
  if (name == "slice") {
    Shape start = params.get_ints("start_indices"), limit = params.get_ints("limit_indices");
    for (const DimPlan& p : plans) start[p.s.dim] = 0, limit[p.s.dim] = p.s.po;
    params.set("start_indices", start).set("limit_indices", limit);
  } else if (name == "dynamic_slice") {
    for (size_t i = 1; i < e.inputs.size(); ++i) ins.push_back(w.l.get(e.inputs[i]).value);
    for (const DimPlan& p : plans) ins[1 + p.s.dim] = Array(Scalar(0, e.inputs[1 + p.s.dim].aval().dtype));
  } else {
    std::vector<int64_t> cfg = params.get_ints("padding_config");
    for (const DimPlan& p : plans) cfg[3 * p.s.dim] = cfg[3 * p.s.dim + 1] = 0;
    if (std::all_of(cfg.begin(), cfg.end(), [](int64_t c) { return c == 0; })) {
      w.set_result(v);
      return true;
    }
    params.set("padding_config", cfg);
    ins.push_back(fill);
  }
  w.set_result(w.bind_local(ins, params));
  return true;
}

/// scatter without index arrays and dynamic_update_slice: the update realigned to the
/// operand's pieces, the primitive applied with identity windows, and the operand kept
/// outside the window.
bool lower_update(Window& w) {
  const ir::Equation& e = w.e;
  const bool scatter = e.prim->name == "scatter";
  const ir::Atom &x = e.inputs[0], &u = e.inputs[1];
  const Shape& us = u.aval().shape;
  std::vector<std::pair<int64_t, int64_t>> window(w.result_shape().size());  // [begin, end) per dimension
  auto segments_of = [&](const SplitDim& s, std::string& why) -> std::optional<std::vector<Segment>> {
    std::optional<int64_t> start = scatter ? std::optional<int64_t>(e.params.get_ints("start_indices")[s.dim])
                                           : constant_start(e.inputs[2 + s.dim], s.m, us[s.dim]);
    if (!start) {
      why = "its start is not a constant";
      return std::nullopt;
    }
    window[s.dim] = {*start, *start + us[s.dim]};
    if (us[s.dim] == 0) return std::vector<Segment>{};
    return std::vector<Segment>{{0, *start, *start + us[s.dim], -*start}};
  };
  auto shapes_of = [&](const SplitDim& s) { return std::vector<SourceShape>{w.shape_along(u, s)}; };
  std::vector<DimPlan> plans = w.plan(segments_of, shapes_of);
  if (plans.empty()) return false;

  Array xv = w.l.to_layout(x, w.result_layout());
  if (shape_size(us) == 0) {  // nothing to update
    w.set_result(xv);
    return true;
  }
  Array uv = w.source(u, w.rule.operands[1]);
  for (const DimPlan& p : plans) uv = assemble(w.l, p, read(w.l, p, {uv}), Array(), realigned(uv.shape(), p.s));
  ir::Params params = e.params;
  std::vector<Array> ins{xv, uv};
  if (scatter) {
    Shape start = params.get_ints("start_indices"), limit = params.get_ints("limit_indices");
    for (const DimPlan& p : plans) start[p.s.dim] = 0, limit[p.s.dim] = p.s.po;
    params.set("start_indices", start).set("limit_indices", limit);
  } else {
    for (size_t i = 2; i < e.inputs.size(); ++i) ins.push_back(w.l.get(e.inputs[i]).value);
    for (const DimPlan& p : plans) ins[2 + p.s.dim] = Array(Scalar(0, e.inputs[2 + p.s.dim].aval().dtype));
  }
  // The update's result inside the window along every split dimension, the operand elsewhere.
  Array r = w.bind_local(ins, params);
  for (const DimPlan& p : plans)
    r = where_positions(w.l, p.s, window[p.s.dim].first, window[p.s.dim].second, r, xv, xv.shape());
  w.set_result(r);
  return true;
}

/// Where a concatenate's operand reads from: a deferred slice of a value reads that value
/// at its start, a deferred broadcast of a one-row slice repeats that row, any other
/// operand reads itself.
struct Through {
  ir::Atom source;
  int64_t start = 0;
  bool row = false;
};

Through read_through(const Lowerer& l, const ir::Atom& a, size_t dim) {
  const ir::Equation* f = l.deferred(a);
  if (!f) return {a};
  if (f->prim->name == "slice") return {f->inputs[0], f->params.get_ints("start_indices")[dim]};
  const ir::Equation* g = l.deferred(f->inputs[0]);  // broadcast_in_dim of a one-row slice
  return {g->inputs[0], g->params.get_ints("start_indices")[dim], true};
}

/// concatenate along a split dimension: each operand a segment at its offset.
bool lower_concatenate(Window& w) {
  const ir::Equation& e = w.e;
  const SplitDim s = w.dims[0];
  std::vector<ir::Atom> sources;
  auto source_index = [&](const ir::Atom& a) {
    auto it = std::find(sources.begin(), sources.end(), a);
    if (it != sources.end()) return size_t(it - sources.begin());
    sources.push_back(a);
    return sources.size() - 1;
  };
  std::vector<Segment> segments;
  int64_t offset = 0;
  for (const ir::Atom& a : e.inputs) {
    const int64_t len = a.aval().shape[s.dim];
    const Through t = read_through(w.l, a, s.dim);
    if (len > 0) segments.push_back({source_index(t.source), offset, offset + len, t.row ? t.start : t.start - offset, t.row});
    offset += len;
  }
  auto segments_of = [&](const SplitDim&, std::string&) { return std::optional<std::vector<Segment>>(segments); };
  auto shapes_of = [&](const SplitDim&) {
    std::vector<SourceShape> shapes;
    for (const ir::Atom& a : sources) shapes.push_back(w.shape_along(a, s));
    return shapes;
  };
  std::vector<DimPlan> plans = w.plan(segments_of, shapes_of);
  if (plans.empty()) return false;
  std::vector<Array> values;
  for (const ir::Atom& a : sources) values.push_back(w.source(a, w.rule.operands[0]));
  w.set_result(assemble(w.l, plans[0], read(w.l, plans[0], values), Array(), w.local_result().shape));
  return true;
}

/// rev along split dimensions: device d takes piece k-1-d of the canonical source, then every
/// device reverses its piece. Where the pieces do not divide the size n, the source's padding
/// rows (after position n - 1) come first, so the result's grid starts k*P - n positions
/// before 0 (its origin, set by lower_window): piece d then holds result positions
/// [d*P - origin, d*P + P - origin), the mirror of source piece k-1-d, and nothing else
/// moves; the result realigns to canonical pieces where it leaves the lowering.
bool lower_rev(Window& w) {
  Array x = w.l.to_layout(w.e.inputs[0], Layout{project(w.rule.operands[0], w.factors), {}, ir::Combine::kNone});
  for (const SplitDim& s : w.dims) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t d = 0; d < s.k; ++d) pairs.emplace_back(s.k - 1 - d, d);
    x = detail::collective_permute(x, s.axes, pairs);
  }
  w.set_result(w.bind_local({x}, w.e.params));
  return true;
}

/// iota along its split counted dimension: each device counts from its piece's offset.
bool lower_iota(Window& w) {
  const Aval out = w.local_result();
  w.set_result(astype(global_positions(w.l, out.shape, w.dims[0]), out.dtype));
  return true;
}

// ---- the slices a concatenate reads through ----

/// The grid a window's result takes along `s`: its source's (operand 0's), shifted by the
/// window's start, where the source is split there the same way, the window has stride 1
/// and every piece keeps some of the result's positions. Each device's result is then
/// mostly its own piece of the source: x[1:-1] moves nothing, pad(x[1:-1]) neither, and
/// x.at[1:-1].set(y) is a local select when y kept x's pieces. Nullopt: canonical pieces.
std::optional<Grid> kept_window_grid(const Lowerer& l, const ir::Equation& e, const SplitDim& s) {
  const std::string& name = e.prim->name;
  static const std::set<std::string> windows{"slice", "dynamic_slice", "pad", "scatter", "dynamic_update_slice"};
  if (!windows.count(name) || e.inputs[0].is_literal()) return std::nullopt;
  const ir::Atom& source = e.inputs[0];
  const int64_t n = source.aval().shape[s.dim];
  int64_t shift = 0;  // result position o reads source position o + shift; updates keep operand 0's
  if (name == "slice") {
    if (e.params.get_ints("strides")[s.dim] != 1) return std::nullopt;
    shift = e.params.get_ints("start_indices")[s.dim];
  } else if (name == "dynamic_slice") {
    std::optional<int64_t> start = constant_start(e.inputs[1 + s.dim], n, s.m);
    if (!start) return std::nullopt;
    shift = *start;
  } else if (name == "pad") {
    const auto& cfg = e.params.get_ints("padding_config");
    if (cfg[3 * s.dim + 2] != 0) return std::nullopt;
    shift = -cfg[3 * s.dim];
  }
  const Layout& have = l.get(source).layout;
  if (!have.partial.empty() || have.dims[s.dim] != s.axes) return std::nullopt;
  const Grid g = grid_of(have, s.dim, n, l.mesh()), r{g.piece, g.origin + shift};
  if (r.origin < 0 || r.origin >= r.piece || (s.k - 1) * r.piece - r.origin >= s.m || s.k * r.piece - r.origin < s.m)
    return std::nullopt;
  return r;
}

}  // namespace

/// Whether `e` slices dimension `dim` with stride 1 and takes every other dimension in full.
bool slices_only(const ir::Equation& e, size_t dim) {
  if (e.prim->name != "slice") return false;
  const Shape& s = e.inputs[0].aval().shape;
  const auto &start = e.params.get_ints("start_indices"), &limit = e.params.get_ints("limit_indices"),
             &strides = e.params.get_ints("strides");
  for (size_t d = 0; d < s.size(); ++d)
    if (strides[d] != 1 || (d != dim && (start[d] != 0 || limit[d] != s[d]))) return false;
  return true;
}

/// Whether `e` repeats a size-1 dimension `dim` and changes nothing else (an edge row).
bool repeats_row(const ir::Equation& e, size_t dim) {
  if (e.prim->name != "broadcast_in_dim") return false;
  const Shape &in = e.inputs[0].aval().shape, &out = e.outputs[0]->aval.shape;
  const auto& dims = e.params.get_ints("broadcast_dimensions");
  if (in.size() != out.size() || in[dim] != 1) return false;
  for (size_t d = 0; d < in.size(); ++d)
    if (dims[d] != int64_t(d) || (d != dim && in[d] != out[d])) return false;
  return true;
}

Array realign(Lowerer& l, const Array& x, const Layout& from, const Layout& to, const Shape& global) {
  Array v = x;
  for (size_t d = 0; d < global.size(); ++d) {
    if (from.dims[d].empty()) continue;
    const Grid have = grid_of(from, d, global[d], l.mesh()), want = grid_of(to, d, global[d], l.mesh());
    if (have == want) continue;
    const int64_t k = detail::axes_size(l.mesh(), from.dims[d]);
    const SplitDim s{d, 0, from.dims[d], k, global[d], want.piece, want.origin};
    // Every position reads itself: the new pieces' positions from the old pieces.
    std::optional<DimPlan> plan = plan_dim(s, {Segment{0, 0, global[d], 0}},
                                           {SourceShape{global[d], true, have.piece, have.origin}}, true);
    v = assemble(l, *plan, read(l, *plan, {v}), Array(), realigned(v.shape(), s));
  }
  return v;
}

bool lower_window(Lowerer& l, const ir::Equation& e, const ir::ShardingRule& rule, std::vector<Axes>& factors) {
  if (e.outputs.size() != 1) return false;
  Window w{l, e, rule, factors, {}};
  const Shape& shape = e.outputs[0]->aval.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int f = rule.results[0][d];
    if (f < 0 || !rule.permutation(size_t(f)) || factors[size_t(f)].empty()) continue;
    const int64_t k = detail::axes_size(l.mesh(), factors[size_t(f)]);
    if (k == 1) continue;  // one piece: every device holds the whole dimension, nothing moves
    SplitDim s{d, size_t(f), factors[size_t(f)], k, shape[d], piece_size(shape[d], k)};
    if (std::optional<Grid> g = kept_window_grid(l, e, s)) s.po = g->piece, s.ro = g->origin;
    if (e.prim->name == "rev") {  // see lower_rev
      s.ro = k * s.po - s.m;
      if (s.ro >= s.po) {
        w.gather(s, "its first piece would hold padding only");
        continue;
      }
    }
    w.dims.push_back(s);
  }
  if (w.dims.empty()) return false;
  static const std::unordered_map<std::string, bool (*)(Window&)> lowerings{
      {"slice", lower_one_source},  {"dynamic_slice", lower_one_source}, {"pad", lower_one_source},
      {"scatter", lower_update},    {"dynamic_update_slice", lower_update}, {"concatenate", lower_concatenate},
      {"rev", lower_rev},           {"iota", lower_iota}};
  auto it = lowerings.find(e.prim->name);
  if (it != lowerings.end()) return it->second(w);
  w.gather_all("no halo lowering");
  return false;
}

void defer_window_feeders(Lowerer& l) {
  const ir::Program& p = l.program();
  std::unordered_map<const ir::VarNode*, int> uses;
  std::unordered_map<const ir::VarNode*, const ir::Equation*> producer;
  for (const auto& e : p.eqns) {
    for (const auto& a : e.inputs)
      if (!a.is_literal()) ++uses[a.var().get()];
    for (const auto& v : e.outputs) producer[v.get()] = &e;
  }
  for (const auto& a : p.outvars)
    if (!a.is_literal()) ++uses[a.var().get()];
  // The equation computing `a` if `a` has no other user.
  auto only_feeder = [&](const ir::Atom& a) -> const ir::Equation* {
    if (a.is_literal() || uses[a.var().get()] != 1) return nullptr;
    auto it = producer.find(a.var().get());
    return it == producer.end() ? nullptr : it->second;
  };
  for (const auto& e : p.eqns) {
    if (e.prim->name != "concatenate") continue;
    const size_t dim = size_t(e.params.get_int("dimension"));
    const Hint* h = l.hint(ir::Atom(e.outputs[0]));
    if (!h || !h->known || h->dims[dim].empty()) continue;
    for (const auto& a : e.inputs) {
      const ir::Equation* f = only_feeder(a);
      if (f && slices_only(*f, dim)) {
        l.defer(*f);
      } else if (f && repeats_row(*f, dim)) {
        const ir::Equation* g = only_feeder(f->inputs[0]);
        if (g && slices_only(*g, dim)) {
          l.defer(*g);
          l.defer(*f);
        }
      }
    }
  }
}

}  // namespace tessel::sharding
