// Wide halos: a whole program (a loop body, possibly several steps of it, or a straight-line
// program) lowered on each device's extended piece after one exchange of every halo it needs.
//
// halo.cpp exchanges, equation by equation, the rows a window reads from other pieces; a
// program with chained windows (a stencil step that reads the halo of a value computed from
// another halo) then has one exchange per link, each a point where devices wait for each
// other and where the compiler's streaming of consecutive loop nests (compiler/streaming.cpp)
// ends. Here every value carries a *range* of positions along the split dimension per
// device: a backward pass from the outputs (each device's own piece) finds the rows each
// value must have for every window to read locally; the inputs' ranges (the piece plus
// rows on either side: the total reach) arrive by one collective_permute per direction (all
// inputs' rows in one message); then each equation is computed on its range, an output
// on its piece (straight into the output) and, apart, on the rows beyond its piece that
// other equations read. Rows near a piece's edge are computed by both devices
// (recomputation instead of waiting), as hand-written codes with ghost zones do.
//
// Positions are integers: a range [a, b) of a value of global size n along the dimension
// holds positions a mod n, ..., (b - 1) mod n, so a periodic read (roll's wrapped row) takes
// the *representative* of the source position nearest the reading position, and the input
// exchange brings the last piece's rows to the first device from one hop around the ring.
// Windows (slice, pad, concatenate, dynamic_slice at constant starts, a broadcast row) read
// segments as halo.cpp's do; windowed updates (scatter without index arrays,
// dynamic_update_slice at constant starts) combine their rows; other equations are computed
// row by row on their range. Anything else (reductions along the dimension, nested
// programs, a value split along another dimension) returns nullopt and the program is
// lowered equation by equation.
//
// Sizes the pieces do not divide: a device's own positions are its piece without the
// padding (the last piece holds fewer rows), its neighbour below sends its last real rows
// (the last piece's end is position n - 1, one before the first piece's position 0 = n),
// and an output's padding rows are zeros. The last device's lowering then differs from the
// others', so this takes a lowering per device (a position).
#include "sharding/wide_halo.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/array_impl.h"
#include "core/log.h"
#include "core/mesh_impl.h"
#include "ir/sharding_rule.h"
#include "ir/trace.h"
#include "ops/collectives.h"
#include "ops/op_util.h"
#include "tessel/error.h"
#include "tessel/ops.h"

namespace tessel::sharding {
namespace {

struct Range {
  int64_t a = 0, b = 0;
  bool empty() const { return a >= b; }
  int64_t size() const { return b - a; }
  void hull(const Range& r) {
    if (r.empty()) return;
    if (empty()) *this = r;
    else a = std::min(a, r.a), b = std::max(b, r.b);
  }
};

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/// The representative p + t*n of source position p nearest to reading position `near`.
int64_t nearest(int64_t p, int64_t n, int64_t near) {
  const int64_t t = floor_div(near - p, n);
  const int64_t lo = p + t * n, hi = lo + n;
  return near - lo <= hi - near ? lo : hi;
}

/// The pieces of range r within one turn of [0, m): [turn*m + c0, turn*m + c1).
struct TurnPiece {
  int64_t turn, c0, c1;
};
std::vector<TurnPiece> turn_pieces(const Range& r, int64_t m) {
  std::vector<TurnPiece> out;
  for (int64_t o = r.a; o < r.b;) {
    const int64_t t = floor_div(o, m), end = std::min(r.b, (t + 1) * m);
    out.push_back({t, o - t * m, end - t * m});
    o = end;
  }
  return out;
}

/// Result positions [begin, end) read operand `source` at o + shift (a `row` segment reads
/// position shift at every o); positions no segment covers take the fill value.
struct Segment {
  ir::Atom source;
  int64_t begin, end, shift;
  bool row = false;
};

/// kSkipped: a slice (or a broadcast of a one-row slice) that only feeds a concatenate
/// along the split dimension, which reads its source directly: a rotation then reads
/// its operand at o - shift mod n on every device alike.
enum class Kind { kWhole, kRows, kWindow, kUpdate, kIdentity, kSkipped };

/// What is decided about one equation, for every device.
struct Step {
  Kind kind = Kind::kWhole;
  std::vector<int> op_dim;         // kRows: per operand, its dimension holding the rows (-1: none)
  std::vector<Segment> segments;   // kWindow
  int fill = -1;                   // kWindow: the operand holding the fill value (pad), or -1
  int64_t win_begin = 0, win_end = 0;  // kUpdate: the window along the dimension
};

class WideHalo {
 public:
  WideHalo(const ir::Program& p, const Mesh& mesh, WholeFn whole) : p_(p), mesh_(mesh), whole_(std::move(whole)) {}

  /// Plans the lowering; false (with the reason in why_) when the program does not fit.
  bool plan(const std::vector<Layout>& in_layouts, const std::vector<std::optional<Layout>>& out_layouts) {
    for (const ir::Var& v : p_.constvars) sd_[v.get()] = -1;  // whole on every device
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      const Layout& l = in_layouts[i];
      if (!l.partial.empty() || !l.grids.empty()) return fail("an input is partial or on another grid");
      int dim = -1;
      for (size_t d = 0; d < l.dims.size(); ++d)
        if (!l.dims[d].empty()) {
          if (dim >= 0 || (!axes_.empty() && l.dims[d] != axes_)) return fail("inputs are split along several dimensions");
          dim = int(d);
          axes_ = l.dims[d];
        }
      sd_[p_.invars[i].get()] = dim;
    }
    if (axes_.empty()) return fail("no input is split");
    k_ = detail::axes_size(mesh_, axes_);
    if (k_ < 2) return fail("one piece");
    for (const ir::Var& v : p_.invars)
      if (sd_[v.get()] >= 0 && !every_piece_holds_rows(v->aval.shape[size_t(sd_[v.get()])]))
        return fail("an input has pieces of padding only");
    for (size_t i = 0; i < p_.eqns.size(); ++i) {
      for (const ir::Atom& a : p_.eqns[i].inputs)
        if (!a.is_literal()) ++uses_[a.var().get()];
      for (const ir::Var& v : p_.eqns[i].outputs) producer_[v.get()] = i;
    }
    for (const ir::Atom& a : p_.outvars)
      if (!a.is_literal()) ++uses_[a.var().get()];
    steps_.reserve(p_.eqns.size());
    for (const ir::Equation& e : p_.eqns)
      if (!classify(e)) return false;
    if (!pending_.empty()) return fail("a repeated row that no concatenate along the split dimension reads");
    for (size_t j = 0; j < p_.outvars.size(); ++j) {
      const ir::Atom& a = p_.outvars[j];
      if (a.is_literal()) return fail("an output is a literal");
      const int dim = sd_.at(a.var().get());
      Layout mine{std::vector<Axes>(a.aval().shape.size()), {}, ir::Combine::kNone};
      if (dim >= 0) {
        if (!every_piece_holds_rows(a.aval().shape[size_t(dim)])) return fail("an output has pieces of padding only");
        mine.dims[size_t(dim)] = axes_;
      }
      if (j < out_layouts.size() && out_layouts[j] && !(*out_layouts[j] == mine))
        return fail("an output is wanted in another layout");
      out_layouts_.push_back(mine);
    }
    // Every device's ranges, and the rows each input exchange moves.
    ranges_.resize(size_t(k_));
    for (int64_t d = 0; d < k_; ++d) analyse(d);
    return plan_exchange();
  }

  const std::string& why() const { return why_; }
  const std::vector<Layout>& out_layouts() const { return out_layouts_; }
  size_t exchanges() const { return groups_.size(); }
  int64_t pieces() const { return k_; }
  const Axes& axes() const { return axes_; }

  /// The per-device outputs of device `d` from its per-device inputs (canonical pieces).
  std::vector<Array> emit(int64_t d, std::span<const Array> args) {
    values_.clear();
    const auto& R = ranges_[size_t(d)];
    std::vector<Array> received = exchange(d, args);
    for (size_t i = 0; i < p_.constvars.size(); ++i) values_[p_.constvars[i].get()] = {p_.consts[i], {}};
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      const ir::VarNode* v = p_.invars[i].get();
      const int dim = sd_.at(v);
      if (dim < 0) {
        values_[v] = {args[i], {}};
        continue;
      }
      values_[v] = {received[i], buffer_range_[i][size_t(d)]};
      auto it = R.find(v);
      if (it != R.end() && !it->second.empty()) values_[v] = {rows_of(ir::Atom(p_.invars[i]), it->second), it->second};
    }
    pieces_.clear();
    for (const ir::Atom& a : p_.outvars) {
      const int dim = sd_.at(a.var().get());
      if (dim < 0) continue;
      // The value behind the output's layout constraints too: it is the one computed.
      for (const ir::VarNode* v = a.var().get();;) {
        pieces_[v] = {own(a.aval().shape[size_t(dim)], d), Array()};
        auto f = producer_.find(v);
        if (f == producer_.end() || steps_[f->second].kind != Kind::kIdentity) break;
        v = p_.eqns[f->second].inputs[0].var().get();
      }
    }
    for (size_t i = 0; i < p_.eqns.size(); ++i) lower(p_.eqns[i], steps_[i], R);
    std::vector<Array> outs;
    for (const ir::Atom& a : p_.outvars) {
      const int dim = sd_.at(a.var().get());
      if (dim < 0) {
        outs.push_back(values_.at(a.var().get()).first);
        continue;
      }
      const auto& [piece, computed] = pieces_.at(a.var().get());
      const Array rows = computed.valid() ? computed : rows_of(a, piece);
      // The last piece of a size the pieces do not divide: its padding rows are zeros.
      const int64_t padding = piece_rows(a.aval().shape[size_t(dim)]) - piece.size();
      if (padding == 0) {
        outs.push_back(rows);
      } else {
        std::vector<std::pair<int64_t, int64_t>> widths(rows.shape().size(), {0, 0});
        widths[size_t(dim)].second = padding;
        outs.push_back(pad(rows, widths));
      }
    }
    return outs;
  }

 private:
  /// Equations on whole values that the partitioner's Lowerer must lower (effects such as
  /// host taps, nested programs, self-partitioning ones).
  static bool needs_lowerer(const ir::Equation& e) {
    return e.prim->regions || e.prim->spmd || e.prim->name == "axis_index";
  }
  bool fail(const std::string& why) {
    why_ = why;
    return false;
  }
  int sd(const ir::Atom& a) const { return a.is_literal() ? -1 : sd_.at(a.var().get()); }

  /// The rows of each piece of a dimension of size n (canonical pieces: the last one padded
  /// when k_ does not divide n).
  int64_t piece_rows(int64_t n) const { return (n + k_ - 1) / k_; }
  /// The positions of that dimension device d holds, padding left out.
  Range own(int64_t n, int64_t d) const {
    const int64_t P = piece_rows(n);
    return {d * P, std::min(d * P + P, n)};
  }
  /// Whether every piece holds some rows (ceil(13 / 8) = 2: the eighth piece would hold none).
  bool every_piece_holds_rows(int64_t n) const { return (k_ - 1) * piece_rows(n) < n; }

  // ---- planning ----

  /// The segment of a concatenate's operand `a` at [offset, offset + len): reading through
  /// a slice along `dim` only (or a broadcast of a one-row one) that nothing else reads.
  Segment read_through(const ir::Atom& a, size_t dim, int64_t offset, int64_t len) {
    Segment plain{a, offset, offset + len, -offset};
    const ir::Equation* f = only_feeder(a);
    if (f && slices_only(*f, dim)) {
      skip(f);
      return {f->inputs[0], offset, offset + len, f->params.get_ints("start_indices")[dim] - offset};
    }
    if (f && repeats_row(*f, dim)) {
      const ir::Equation* g = only_feeder(f->inputs[0]);
      if (g && slices_only(*g, dim)) {
        skip(f);
        skip(g);
        return {g->inputs[0], offset, offset + len, g->params.get_ints("start_indices")[dim], true};
      }
    }
    return plain;
  }
  /// The equation computing `a` when `a` has no other reader.
  const ir::Equation* only_feeder(const ir::Atom& a) const {
    if (a.is_literal()) return nullptr;
    auto u = uses_.find(a.var().get());
    auto p = producer_.find(a.var().get());
    if (u == uses_.end() || u->second != 1 || p == producer_.end()) return nullptr;
    return &p_.eqns[p->second];
  }
  void skip(const ir::Equation* f) {
    steps_[size_t(f - p_.eqns.data())].kind = Kind::kSkipped;
    pending_.erase(f);
  }
  bool classify(const ir::Equation& e) {
    Step s;
    const std::string& name = e.prim->name;
    bool any_split = false;
    for (const ir::Atom& a : e.inputs) any_split |= sd(a) >= 0;
    if (!any_split) {
      if (needs_lowerer(e) && !whole_) return fail("'" + name + "' cannot be computed whole here");
      for (const ir::Var& v : e.outputs) sd_[v.get()] = -1;
      steps_.push_back(s);
      return true;
    }
    if (e.outputs.size() != 1) return fail("'" + name + "' has several results");
    const ir::Var& out = e.outputs[0];
    if (name == "sharding_constraint") {
      const Sharding& sh = e.params.get_object<ir::ShardingParam>("sharding").value;
      Layout want = layout_of(sh, out->aval.shape.size());
      Layout mine{std::vector<Axes>(out->aval.shape.size()), {}, ir::Combine::kNone};
      mine.dims[size_t(sd(e.inputs[0]))] = axes_;
      if (!(want.dims == mine.dims)) return fail("a sharding constraint lays a value out otherwise");
      s.kind = Kind::kIdentity;
      sd_[out.get()] = sd(e.inputs[0]);
      steps_.push_back(s);
      return true;
    }
    if (repeats_row(e, size_t(sd(e.inputs[0]))) && out->aval.shape[size_t(sd(e.inputs[0]))] > 1) {
      // Edge rows (pad(x, 2, "edge")): the concatenate after it reads the repeated row's
      // source directly (read_through) and skips it; pending until then.
      s.kind = Kind::kSkipped;
      sd_[out.get()] = sd(e.inputs[0]);
      pending_.insert(&e);
      steps_.push_back(s);
      return true;
    }
    if (e.prim->regions || e.prim->spmd || !e.prim->sharding_rule) return fail("'" + name + "' has no row rule");
    const std::vector<Aval> ins = in_avals_of(e), outs{out->aval};
    const ir::ShardingRule rule = e.prim->sharding_rule(ins, outs, e.params);
    // The factor of the first split operand's split dimension.
    int f = -1;
    size_t first = 0;
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (sd(e.inputs[i]) >= 0) {
        first = i;
        f = rule.operands[i][size_t(sd(e.inputs[i]))];
        break;
      }
    if (f < 0) return fail("'" + name + "' keeps the split dimension whole");
    int rdim = -1;
    for (size_t r = 0; r < rule.results[0].size(); ++r)
      if (rule.results[0][r] == f) rdim = int(r);
    if (rdim < 0 || rule.factors[size_t(f)] != ir::Combine::kNone) return fail("'" + name + "' reduces the split dimension");
    const int64_t m = out->aval.shape[size_t(rdim)];
    if (!rule.permutation(size_t(f))) {
      s.kind = Kind::kRows;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        int dim = -1;
        if (!e.inputs[i].is_literal())
          for (size_t d = 0; d < rule.operands[i].size(); ++d)
            if (rule.operands[i][d] == f) dim = int(d);
        if (sd(e.inputs[i]) >= 0 && sd(e.inputs[i]) != dim) return fail("'" + name + "' mixes split dimensions");
        // Rows are rows: a reshape merging the dimension with others is not row by row.
        if (dim >= 0 && e.inputs[i].aval().shape[size_t(dim)] != m) return fail("'" + name + "' regroups the split dimension");
        s.op_dim.push_back(dim);
      }
    } else if (name == "slice" || name == "dynamic_slice" || name == "pad" || name == "concatenate") {
      if (int(first) != 0 && name != "concatenate") return fail("'" + name + "' has a split start");
      const size_t D = size_t(rdim);
      for (size_t i = 0; i < e.inputs.size(); ++i)
        if (sd(e.inputs[i]) >= 0 && sd(e.inputs[i]) != rdim) return fail("'" + name + "' mixes split dimensions");
      s.kind = Kind::kWindow;
      if (name == "slice") {
        if (e.params.get_ints("strides")[D] != 1) return fail("a strided slice");
        s.segments.push_back({e.inputs[0], 0, m, e.params.get_ints("start_indices")[D]});
      } else if (name == "dynamic_slice") {
        for (size_t i = 1; i < e.inputs.size(); ++i)
          if (!e.inputs[i].is_literal()) return fail("a dynamic_slice at a start that is not a constant");
        const int64_t n = e.inputs[0].aval().shape[D];
        s.segments.push_back({e.inputs[0], 0, m, ops::window_start(e.inputs[1 + D].literal().to<int64_t>(), n, m)});
      } else if (name == "pad") {
        const auto& cfg = e.params.get_ints("padding_config");
        if (cfg[3 * D + 2] != 0) return fail("interior padding");
        const int64_t lo = cfg[3 * D], n = e.inputs[0].aval().shape[D];
        const int64_t begin = std::max<int64_t>(lo, 0), end = std::min(lo + n, m);
        if (begin < end) s.segments.push_back({e.inputs[0], begin, end, -lo});
        s.fill = 1;
      } else {
        if (size_t(e.params.get_int("dimension")) != D) return fail("a concatenate along another dimension");
        int64_t offset = 0;
        for (size_t i = 0; i < e.inputs.size(); ++i) {
          const int64_t len = e.inputs[i].aval().shape[D];
          if (len > 0) s.segments.push_back(read_through(e.inputs[i], D, offset, len));
          offset += len;
        }
      }
    } else if (name == "broadcast_in_dim" && e.inputs[0].aval().shape[size_t(sd(e.inputs[0]))] == 1) {
      s.kind = Kind::kWindow;  // a row repeated (edge padding)
      if (size_t(e.params.get_ints("broadcast_dimensions")[size_t(sd(e.inputs[0]))]) != size_t(rdim))
        return fail("a broadcast moves the split dimension");
      s.segments.push_back({e.inputs[0], 0, m, 0, true});
    } else if (name == "scatter" || name == "dynamic_update_slice") {
      const size_t D = size_t(rdim);
      if ((sd(e.inputs[0]) >= 0 && sd(e.inputs[0]) != rdim) || (sd(e.inputs[1]) >= 0 && sd(e.inputs[1]) != rdim))
        return fail("'" + name + "' mixes split dimensions");
      const int64_t len = e.inputs[1].aval().shape[D];
      int64_t start = 0;
      if (name == "scatter") {
        if (e.inputs.size() != 2 || !e.params.get_ints("axes").empty() || e.params.get_ints("strides")[D] != 1)
          return fail("a scatter with index arrays or strides");
        start = e.params.get_ints("start_indices")[D];
      } else {
        for (size_t i = 2; i < e.inputs.size(); ++i)
          if (!e.inputs[i].is_literal()) return fail("a dynamic_update_slice at a start that is not a constant");
        start = ops::window_start(e.inputs[2 + D].literal().to<int64_t>(), m, len);
      }
      s.kind = Kind::kUpdate;
      s.win_begin = start;
      s.win_end = start + len;
    } else {
      return fail("'" + name + "' moves positions along the split dimension");
    }
    sd_[out.get()] = rdim;
    steps_.push_back(s);
    return true;
  }

  static std::vector<Aval> in_avals_of(const ir::Equation& e) {
    std::vector<Aval> r;
    for (const ir::Atom& a : e.inputs) r.push_back(a.aval());
    return r;
  }

  /// Calls `each(segment or fill, o0, o1, source rows)` for the parts of result range `r`
  /// of a window, in order of position (a fill part has segment null).
  template <class Each>
  void window_parts(const ir::Equation& e, const Step& s, const Range& r, Each each) const {
    struct Part {
      const Segment* g;
      int64_t o0, o1;
      Range src;
    };
    const int64_t m = e.outputs[0]->aval.shape[size_t(sd_.at(e.outputs[0].get()))];
    std::vector<const Segment*> segs;
    for (const Segment& g : s.segments) segs.push_back(&g);
    std::sort(segs.begin(), segs.end(), [](const Segment* x, const Segment* y) { return x->begin < y->begin; });
    std::vector<Part> parts;
    // Consecutive reads of one source at consecutive representatives (a rotation across the
    // end of its turn) are one part.
    auto add = [&](const Part& p) {
      if (!parts.empty() && p.g && parts.back().g && !p.g->row && !parts.back().g->row &&
          p.g->source == parts.back().g->source && parts.back().src.b == p.src.a && parts.back().o1 == p.o0) {
        parts.back().o1 = p.o1;
        parts.back().src.b = p.src.b;
        return;
      }
      if (!parts.empty() && !p.g && !parts.back().g && parts.back().o1 == p.o0) {
        parts.back().o1 = p.o1;
        return;
      }
      parts.push_back(p);
    };
    for (const TurnPiece& t : turn_pieces(r, m)) {
      int64_t o = t.c0;
      for (const Segment* g : segs) {
        const int64_t o0 = std::max(o, g->begin), o1 = std::min(t.c1, g->end);
        if (o0 >= o1) continue;
        if (o0 > o) add({nullptr, t.turn * m + o, t.turn * m + o0, Range{}});
        const int64_t n = g->source.aval().shape[size_t(sd_.at(e.outputs[0].get()))];
        const int64_t p0 = g->row ? g->shift : o0 + g->shift, len = g->row ? 1 : o1 - o0;
        const int64_t rep = nearest(p0, n, t.turn * m + o0);
        add({g, t.turn * m + o0, t.turn * m + o1, Range{rep, rep + len}});
        o = o1;
      }
      if (o < t.c1) add({nullptr, t.turn * m + o, t.turn * m + t.c1, Range{}});
    }
    for (const Part& p : parts) each(p.g, p.o0, p.o1, p.src);
  }

  /// The window of an update within result range r, per turn piece: [o0, o1) of the result
  /// and the update's rows.
  template <class Each>
  void update_parts(const ir::Equation& e, const Step& s, const Range& r, Each each) const {
    const int64_t m = e.outputs[0]->aval.shape[size_t(sd_.at(e.outputs[0].get()))];
    const int64_t n = e.inputs[1].aval().shape[size_t(sd_.at(e.outputs[0].get()))];
    for (const TurnPiece& t : turn_pieces(r, m)) {
      const int64_t w0 = std::max(t.c0, s.win_begin), w1 = std::min(t.c1, s.win_end);
      if (w0 >= w1) {
        each(t, w0, w1, Range{});
        continue;
      }
      const int64_t rep = nearest(w0 - s.win_begin, n, t.turn * m + w0);
      each(t, w0, w1, Range{rep, rep + (w1 - w0)});
    }
  }

  /// Device d's ranges: from its outputs' pieces back through every equation.
  void analyse(int64_t d) {
    auto& R = ranges_[size_t(d)];
    for (const ir::Atom& a : p_.outvars) {
      const int dim = sd(a);
      if (dim < 0) continue;
      R[a.var().get()].hull(own(a.aval().shape[size_t(dim)], d));
    }
    for (size_t i = p_.eqns.size(); i-- > 0;) {
      const ir::Equation& e = p_.eqns[i];
      const Step& s = steps_[i];
      if (s.kind == Kind::kWhole || s.kind == Kind::kSkipped) continue;
      auto it = R.find(e.outputs[0].get());
      if (it == R.end() || it->second.empty()) continue;
      const Range r = it->second;
      auto need = [&](const ir::Atom& a, const Range& want) {
        if (sd(a) >= 0) R[a.var().get()].hull(want);
      };
      switch (s.kind) {
        case Kind::kIdentity: need(e.inputs[0], r); break;
        case Kind::kRows:
          for (const ir::Atom& a : e.inputs) need(a, r);
          break;
        case Kind::kWindow:
          window_parts(e, s, r, [&](const Segment* g, int64_t, int64_t, const Range& src) {
            if (g) need(g->source, src);
          });
          break;
        case Kind::kUpdate:
          need(e.inputs[0], r);
          update_parts(e, s, r, [&](const TurnPiece&, int64_t, int64_t, const Range& src) {
            if (!src.empty()) need(e.inputs[1], src);
          });
          break;
        case Kind::kWhole:
        case Kind::kSkipped: break;
      }
    }
  }

  /// One group of rows sent to one set of receivers in one collective_permute.
  struct Part {
    size_t input;
    int64_t hop;   // the sender is hop pieces along the ring from the receiver
    int64_t rows;  // the sender's first rows (hop 1) or its last rows, padding left out (hop -1)
  };
  struct Group {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    DType dtype;
    std::vector<Part> parts;
  };

  /// The rows each device needs of each split input from its neighbours: one block per
  /// direction (the union of what the receivers need), grouped by receivers and dtype.
  bool plan_exchange() {
    buffer_range_.assign(p_.invars.size(), std::vector<Range>(size_t(k_)));
    std::map<std::pair<std::vector<std::pair<int64_t, int64_t>>, int>, Group> groups;
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      const ir::VarNode* v = p_.invars[i].get();
      const int dim = sd_.at(v);
      if (dim < 0) continue;
      const int64_t n = v->aval.shape[size_t(dim)];
      int64_t below = 0, above = 0;
      std::vector<bool> wants_below(static_cast<size_t>(k_), false), wants_above(static_cast<size_t>(k_), false);
      for (int64_t d = 0; d < k_; ++d) {
        auto it = ranges_[size_t(d)].find(v);
        if (it == ranges_[size_t(d)].end() || it->second.empty()) continue;
        const Range mine = own(n, d);
        const int64_t lo = it->second.a - mine.a, hi = it->second.b - mine.b;
        if (lo < 0) below = std::max(below, -lo), wants_below[size_t(d)] = true;
        if (hi > 0) above = std::max(above, hi), wants_above[size_t(d)] = true;
      }
      // Reads past half the neighbour's rows would recompute more than they save.
      for (int64_t d = 0; d < k_; ++d)
        if ((wants_below[size_t(d)] && 2 * below > own(n, (d + k_ - 1) % k_).size()) ||
            (wants_above[size_t(d)] && 2 * above > own(n, (d + 1) % k_).size()))
          return fail("a device reads past half its neighbours' pieces");
      for (int64_t d = 0; d < k_; ++d) {
        const Range mine = own(n, d);
        buffer_range_[i][size_t(d)] = {mine.a - (wants_below[size_t(d)] ? below : 0),
                                       mine.b + (wants_above[size_t(d)] ? above : 0)};
      }
      auto add = [&](int64_t hop, const std::vector<bool>& receivers, int64_t rows) {
        std::vector<std::pair<int64_t, int64_t>> pairs;
        for (int64_t d = 0; d < k_; ++d)
          if (receivers[size_t(d)]) pairs.emplace_back(((d + hop) % k_ + k_) % k_, d);
        if (pairs.empty()) return;
        std::sort(pairs.begin(), pairs.end());
        Group& g = groups[{pairs, int(v->aval.dtype)}];
        g.pairs = pairs;
        g.dtype = v->aval.dtype;
        g.parts.push_back({i, hop, rows});
      };
      if (below > 0) add(-1, wants_below, below);
      if (above > 0) add(1, wants_above, above);
    }
    for (auto& [key, g] : groups) groups_.push_back(std::move(g));
    return true;
  }

  // ---- emission ----

  /// The rows device d sends of part `p` (its first rows, or its last ones before its
  /// padding; a device that sends nothing sends rows of the same shape).
  Array sent_rows(int64_t d, std::span<const Array> args, const Part& p) const {
    const int dim = sd_.at(p_.invars[p.input].get());
    const int64_t a = p.hop > 0 ? 0 : std::max<int64_t>(0, own(p_.invars[p.input]->aval.shape[size_t(dim)], d).size() - p.rows);
    return slice_in_dim(args[p.input], a, a + p.rows, 1, dim);
  }

  /// Per split input, device d's buffer (rows received from below, its piece without
  /// padding, rows from above) covering buffer_range_[i][d].
  std::vector<Array> exchange(int64_t d, std::span<const Array> args) {
    std::map<std::pair<size_t, int64_t>, Array> got;  // (input, hop) -> rows
    for (const Group& g : groups_) {
      if (g.parts.size() == 1) {  // one block: sent as it is
        const Part& p = g.parts[0];
        got[{p.input, p.hop}] = detail::collective_permute(sent_rows(d, args, p), axes_, g.pairs);
        continue;
      }
      // Several blocks (inputs, or both directions on a ring of two): one message.
      std::vector<Array> flat;
      for (const Part& p : g.parts) {
        const Array rows = sent_rows(d, args, p);
        flat.push_back(reshape(rows, {shape_size(rows.shape())}));
      }
      const Array sent = flat.size() == 1 ? flat[0] : concatenate(flat, 0);
      const Array recv = detail::collective_permute(sent, axes_, g.pairs);
      int64_t at = 0;
      for (size_t j = 0; j < g.parts.size(); ++j) {
        const Part& p = g.parts[j];
        const int64_t len = flat[j].shape()[0];
        const int dim = sd_.at(p_.invars[p.input].get());
        Shape shape = args[p.input].shape();
        shape[size_t(dim)] = p.rows;
        got[{p.input, p.hop}] = reshape(slice_in_dim(recv, at, at + len, 1, 0), shape);
        at += len;
      }
    }
    std::vector<Array> out(p_.invars.size());
    for (size_t i = 0; i < p_.invars.size(); ++i) {
      const int dim = sd_.at(p_.invars[i].get());
      if (dim < 0) continue;
      const Range mine = own(p_.invars[i]->aval.shape[size_t(dim)], d), r = buffer_range_[i][size_t(d)];
      std::vector<Array> parts;
      if (r.a < mine.a) parts.push_back(got.at({i, -1}));
      const int64_t P = args[i].shape()[size_t(dim)];
      parts.push_back(mine.size() == P ? args[i] : slice_in_dim(args[i], 0, mine.size(), 1, dim));
      if (r.b > mine.b) parts.push_back(got.at({i, 1}));
      out[i] = parts.size() == 1 ? parts[0] : concatenate(parts, dim);
    }
    return out;
  }

  /// Rows `want` of split value `a` (or of a whole value's dimension `dim`, by turns).
  Array rows_of(const ir::Atom& a, const Range& want, int dim = -1) const {
    if (a.is_literal()) throw Error("internal: wide halo reads rows of a literal");
    const auto& [value, have] = values_.at(a.var().get());
    if (sd(a) >= 0) {
      dim = sd(a);
      if (want.a < have.a || want.b > have.b)
        throw Error("internal: wide halo reads rows [" + std::to_string(want.a) + ", " + std::to_string(want.b) +
                    ") of a value holding [" + std::to_string(have.a) + ", " + std::to_string(have.b) + ")");
      if (want.a == have.a && want.b == have.b) return value;
      return slice_in_dim(value, want.a - have.a, want.b - have.a, 1, dim);
    }
    const int64_t m = value.shape()[size_t(dim)];
    if (want.a == 0 && want.b == m) return value;
    std::vector<Array> parts;
    for (const TurnPiece& t : turn_pieces(want, m)) parts.push_back(slice_in_dim(value, t.c0, t.c1, 1, dim));
    return parts.size() == 1 ? parts[0] : concatenate(parts, dim);
  }

  Array operand(const ir::Atom& a) const {
    if (a.is_literal()) return detail::scalar_array(a.literal(), a.aval().weak_type);
    return values_.at(a.var().get()).first;
  }

  /// `e` bound on per-device operands whose result has `rows` rows along dimension `dim`.
  static Array bind_rows(const ir::Equation& e, const std::vector<Array>& ins, ir::Params params, int dim, int64_t rows) {
    Aval out = e.outputs[0]->aval;
    out.shape[size_t(dim)] = rows;
    std::vector<Aval> in_avals;
    for (const Array& a : ins) in_avals.push_back(a.aval());
    if (e.prim->localize) params = e.prim->localize(params, in_avals, std::vector<Aval>{out});
    return detail::bind(*e.prim, ins, params)[0];
  }

  void lower(const ir::Equation& e, const Step& s, const std::unordered_map<const ir::VarNode*, Range>& R) {
    if (s.kind == Kind::kWhole) {
      std::vector<Array> ins;
      for (const ir::Atom& a : e.inputs) ins.push_back(operand(a));
      std::vector<Array> outs = needs_lowerer(e) ? whole_(e, ins) : detail::bind(*e.prim, ins, e.params);
      for (size_t j = 0; j < outs.size(); ++j) values_[e.outputs[j].get()] = {outs[j], {}};
      return;
    }
    const ir::VarNode* out = e.outputs[0].get();
    auto it = R.find(out);
    if (it == R.end() || it->second.empty()) return;  // no device reads it here
    const Range r = it->second;
    const int D = sd_.at(out);
    auto rows = [&](const Range& q) {
      switch (s.kind) {
        case Kind::kIdentity: return rows_of(e.inputs[0], q);
        case Kind::kRows: {
          std::vector<Array> ins;
          for (size_t i = 0; i < e.inputs.size(); ++i)
            ins.push_back(s.op_dim[i] >= 0 ? rows_of(e.inputs[i], q, s.op_dim[i]) : operand(e.inputs[i]));
          return bind_rows(e, ins, e.params, D, q.size());
        }
        case Kind::kWindow: return lower_window(e, s, q);
        case Kind::kUpdate: return lower_update(e, s, q);
        case Kind::kWhole:
        case Kind::kSkipped: break;
      }
      throw Error("internal: wide halo lowers an equation computed whole by rows");
    };
    // An output that other equations read beyond its piece: its piece is computed on its
    // own, straight into the output, and the rows beyond it apart (a side value of a few
    // rows). Computed whole and then trimmed, the output would be a slice of a value that the
    // compiler either stores twice or recomputes in every loop nest reading it.
    auto piece = pieces_.find(out);
    if (s.kind == Kind::kIdentity && piece != pieces_.end()) {  // an output's own piece, if computed apart
      auto in = pieces_.find(e.inputs[0].var().get());
      if (in != pieces_.end() && in->second.second.valid() && in->second.first.a == piece->second.first.a &&
          in->second.first.b == piece->second.first.b && r.a == piece->second.first.a && r.b == piece->second.first.b) {
        values_[out] = {in->second.second, r};
        return;
      }
    }
    if (piece != pieces_.end() && (r.a < piece->second.first.a || r.b > piece->second.first.b)) {
      const Range mine = piece->second.first;
      std::vector<Array> parts;
      if (r.a < mine.a) parts.push_back(rows({r.a, mine.a}));
      piece->second.second = rows(mine);
      parts.push_back(piece->second.second);
      if (r.b > mine.b) parts.push_back(rows({mine.b, r.b}));
      values_[out] = {concatenate(parts, D), r};
      return;
    }
    values_[out] = {rows(r), r};
  }

  /// A window's rows: each part read from its source (and the primitive applied along the
  /// other dimensions), or the fill value, concatenated in order.
  Array lower_window(const ir::Equation& e, const Step& s, const Range& r) {
    const std::string& name = e.prim->name;
    const int D = sd_.at(e.outputs[0].get());
    std::vector<Array> parts;
    window_parts(e, s, r, [&](const Segment* g, int64_t o0, int64_t o1, const Range& src) {
      Shape shape = e.outputs[0]->aval.shape;
      shape[size_t(D)] = o1 - o0;
      if (!g) {
        parts.push_back(broadcast_to(astype(operand(e.inputs[size_t(s.fill)]), e.outputs[0]->aval.dtype), shape));
        return;
      }
      Array rows = rows_of(g->source, src, D);
      if (g->row && name == "concatenate") {  // a broadcast row read through
        Shape sizes = rows.shape();
        sizes[size_t(D)] = o1 - o0;
        tessel::Axes dims(sizes.size());
        for (size_t i = 0; i < dims.size(); ++i) dims[i] = int64_t(i);
        rows = broadcast_in_dim(rows, sizes, dims);
      }
      if (name == "concatenate") {
        parts.push_back(rows);
      } else if (name == "broadcast_in_dim") {
        parts.push_back(bind_rows(e, {rows}, e.params, D, o1 - o0));
      } else if (name == "slice") {
        ir::Params params = e.params;
        Shape start = params.get_ints("start_indices"), limit = params.get_ints("limit_indices");
        start[size_t(D)] = 0, limit[size_t(D)] = o1 - o0;
        params.set("start_indices", start).set("limit_indices", limit);
        parts.push_back(bind_rows(e, {rows}, params, D, o1 - o0));
      } else if (name == "dynamic_slice") {
        std::vector<Array> ins{rows};
        for (size_t i = 1; i < e.inputs.size(); ++i) ins.push_back(operand(e.inputs[i]));
        ins[1 + size_t(D)] = Array(Scalar(0, e.inputs[1 + size_t(D)].aval().dtype));
        parts.push_back(bind_rows(e, ins, e.params, D, o1 - o0));
      } else {  // pad
        ir::Params params = e.params;
        std::vector<int64_t> cfg = params.get_ints("padding_config");
        cfg[3 * size_t(D)] = cfg[3 * size_t(D) + 1] = 0;
        params.set("padding_config", cfg);
        parts.push_back(bind_rows(e, {rows, operand(e.inputs[1])}, params, D, o1 - o0));
      }
    });
    return parts.size() == 1 ? parts[0] : concatenate(parts, D);
  }

  /// An update's rows: per turn piece, the operand's rows with the update's applied inside
  /// the window.
  Array lower_update(const ir::Equation& e, const Step& s, const Range& r) {
    const int D = sd_.at(e.outputs[0].get());
    const int64_t m = e.outputs[0]->aval.shape[size_t(D)];
    std::vector<Array> parts;
    update_parts(e, s, r, [&](const TurnPiece& t, int64_t w0, int64_t w1, const Range& src) {
      Array x = rows_of(e.inputs[0], {t.turn * m + t.c0, t.turn * m + t.c1}, D);
      if (src.empty()) {
        parts.push_back(x);
        return;
      }
      Array u = rows_of(e.inputs[1], src, D);
      ir::Params params = e.params;
      std::vector<Array> ins{x, u};
      if (e.prim->name == "scatter") {
        Shape start = params.get_ints("start_indices"), limit = params.get_ints("limit_indices");
        start[size_t(D)] = w0 - t.c0, limit[size_t(D)] = w1 - t.c0;
        params.set("start_indices", start).set("limit_indices", limit);
      } else {
        for (size_t i = 2; i < e.inputs.size(); ++i) ins.push_back(operand(e.inputs[i]));
        ins[2 + size_t(D)] = Array(Scalar(w0 - t.c0, e.inputs[2 + size_t(D)].aval().dtype));
      }
      parts.push_back(bind_rows(e, ins, params, D, t.c1 - t.c0));
    });
    return parts.size() == 1 ? parts[0] : concatenate(parts, D);
  }

  const ir::Program& p_;
  const Mesh& mesh_;
  WholeFn whole_;
  Axes axes_;
  int64_t k_ = 0;
  std::string why_;
  std::unordered_map<const ir::VarNode*, int> sd_;  // split dimension per value (-1: whole)
  std::vector<Step> steps_;
  std::unordered_set<const ir::Equation*> pending_;  // repeated rows not yet read through
  std::unordered_map<const ir::VarNode*, int> uses_;
  std::unordered_map<const ir::VarNode*, size_t> producer_;
  std::vector<std::unordered_map<const ir::VarNode*, Range>> ranges_;  // per device
  std::vector<std::vector<Range>> buffer_range_;                       // per input, per device
  std::vector<Group> groups_;
  std::vector<Layout> out_layouts_;
  std::unordered_map<const ir::VarNode*, std::pair<Array, Range>> values_;
  // Per split output of the device being emitted: its piece, and the value computed on it
  // when the output's range is wider (undefined until then).
  std::unordered_map<const ir::VarNode*, std::pair<Range, Array>> pieces_;
};

}  // namespace

std::optional<WideHaloResult> lower_wide_halo(const ir::Program& p, const Mesh& mesh, std::optional<int> position,
                                              std::span<const Array> args, const std::vector<Layout>& in_layouts,
                                              const std::vector<std::optional<Layout>>& out_layouts,
                                              const WholeFn& whole) {
  // Without a position the lowering is traced once per device: the Lowerer's memos must not
  // see values of those traces.
  WideHalo w(p, mesh, position ? whole : WholeFn());
  if (!w.plan(in_layouts, out_layouts)) {
    TESSEL_DEBUG_LOG("partition '" + p.name + "': no wide halo: " + w.why());
    return std::nullopt;
  }
  WideHaloResult r;
  r.out_layouts = w.out_layouts();
  if (position) {
    r.outputs = w.emit(detail::piece_index(mesh, *position, w.axes()), args);
    return r;
  }
  // Without a position every device runs one program: only when each device's lowering is
  // the same program (a periodic stencil: every piece reads its neighbours alike).
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  std::string first;
  ir::Program program;
  for (int64_t d = 0; d < w.pieces(); ++d) {
    ir::Program q = detail::trace_to_program([&](std::span<const Array> xs) { return w.emit(d, xs); }, avals, p.name);
    const std::string text = ir::print_program(q);
    if (d == 0) first = text, program = std::move(q);
    else if (text != first) {
      TESSEL_DEBUG_LOG("partition '" + p.name + "': no wide halo: the devices' lowerings differ (no position)\n" + first + "\n" + text);
      return std::nullopt;
    }
  }
  r.outputs = ir::eval_program(program, args);
  return r;
}

}  // namespace tessel::sharding
