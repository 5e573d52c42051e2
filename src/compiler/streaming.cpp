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
// index, so they write the same bytes. The intermediates stay full-size buffers: every
// output of the chain is an output of its equation, so the executable's buffer plan never
// gives one the memory of an input the chain still reads (inputs and outputs of one step
// never share memory, and `fused_chain` declares no in-place rule).
#include "compiler/streaming.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "backend/cpu/parallel.h"
#include "compiler/codegen.h"
#include "compiler/fused_kernel.h"
#include "compiler/passes.h"
#include "core/log.h"
#include "ops/op_util.h"
#include "tessel/error.h"

namespace tessel::compiler {
namespace {

/// A loop nest of a chain reads the output of an earlier one (its `producer`, a position in
/// the chain) at rows i0 + [min, max].
struct Read {
  size_t producer;
  int64_t min, max;
};

/// One loop nest of a chain.
struct Member {
  std::shared_ptr<const ir::ParamObject> kernel;  // its FusedKernel (keeps the library loaded)
  KernelFnPtr fn = nullptr;
  std::vector<size_t> bufs;  // its inputs then outputs, as positions in the chain's inputs then outputs
  int64_t rows = 0;          // of its domain
  int64_t points = 0;        // of its domain
  int64_t below = 0;         // rows it computes below a thread's block
  int64_t above = 0;         // and above it
  int64_t align = 1;         // its calls start at multiples of this (row_alignment)
  std::vector<Read> reads;   // of earlier members' outputs
};

/// The `schedule` parameter of a `fused_chain` equation: its loop nests and band size.
class ChainSchedule final : public ir::ParamObject {
 public:
  ChainSchedule(std::vector<Member> members, int64_t rows, int64_t band_rows, int64_t block_rows)
      : members_(std::move(members)), rows_(rows), band_rows_(band_rows), block_rows_(block_rows) {}
  size_t hash() const override {
    size_t h = std::hash<int64_t>()(band_rows_);
    for (const Member& m : members_) h = h * 31 + std::hash<const void*>()(reinterpret_cast<const void*>(m.fn));
    return h;
  }
  bool equals(const ir::ParamObject& o) const override {
    auto* s = dynamic_cast<const ChainSchedule*>(&o);
    if (!s || s->band_rows_ != band_rows_ || s->block_rows_ != block_rows_ || s->members_.size() != members_.size())
      return false;
    for (size_t k = 0; k < members_.size(); ++k)
      if (s->members_[k].fn != members_[k].fn || s->members_[k].bufs != members_[k].bufs) return false;
    return true;
  }
  std::string to_string() const override {
    std::string s = std::to_string(members_.size()) + " loop nests over " + std::to_string(rows_) +
                    " rows in bands of " + std::to_string(band_rows_) + ", rows recomputed below/above a block:";
    for (const Member& m : members_) s += " " + std::to_string(m.below) + "/" + std::to_string(m.above);
    return s;
  }
  void write(ir::Writer&) const override {
    throw ValueError("a streamed chain of compiled kernels is machine code loaded in this process; serialize the "
                     "program before fusion (the receiving process compiles it again)");
  }

  /// Runs the chain on the kernel call's buffers (inputs, then outputs).
  void run(const ir::KernelCall& c) const {
    std::vector<void*> all;
    all.reserve(c.ins.size() + c.outs.size());
    for (const void* p : c.ins) all.push_back(const_cast<void*>(p));
    for (void* p : c.outs) all.push_back(p);
    std::vector<std::vector<void*>> bufs(members_.size());
    int64_t points = 0, halo = 0;
    for (size_t k = 0; k < members_.size(); ++k) {
      for (size_t b : members_[k].bufs) bufs[k].push_back(all[b]);
      points += members_[k].points;
      halo = std::max(halo, members_[k].below + members_[k].above);
    }
    // One block per thread, each worth at least ~16K points of work (as fused loop nests
    // split) and four times the rows it recomputes.
    int64_t blocks = std::min<int64_t>(cpu::num_threads(), points / 16384);
    blocks = std::max<int64_t>(1, std::min(blocks, rows_ / std::max<int64_t>(1, 4 * halo)));
    if (block_rows_ > 0) blocks = (rows_ + block_rows_ - 1) / block_rows_;
    cpu::parallel_for(blocks, 1, [&](int64_t k0, int64_t k1) { run_rows(bufs, k0 * rows_ / blocks, k1 * rows_ / blocks); });
  }

 private:
  /// Every loop nest's rows [b0 - below, b1 + above) (within [0, rows), widened to its
  /// alignment), band by band. The rows a loop nest needs are computed from the last loop
  /// nest back: its own rows of the block (or band), those its readers need, widened to
  /// its alignment.
  void run_rows(const std::vector<std::vector<void*>>& bufs, int64_t b0, int64_t b1) const {
    if (b0 >= b1) return;
    const size_t n = members_.size();
    std::vector<int64_t> done(n, b0), hi(n);
    for (size_t k = n; k-- > 0;) {
      const Member& m = members_[k];
      done[k] = std::min(m.rows, std::max<int64_t>(0, done[k]) / m.align * m.align);
      for (const Read& r : m.reads) done[r.producer] = std::min(done[r.producer], done[k] + r.min);
    }
    for (int64_t e = b0; e < b1;) {
      e = std::min(b1, e + band_rows_);
      hi.assign(n, e);
      for (size_t k = n; k-- > 0;) {
        const Member& m = members_[k];
        hi[k] = std::min(m.rows, (hi[k] + m.align - 1) / m.align * m.align);
        for (const Read& r : m.reads) hi[r.producer] = std::max(hi[r.producer], hi[k] + r.max);
      }
      for (size_t k = 0; k < n; ++k) {
        if (hi[k] <= done[k]) continue;
        members_[k].fn(bufs[k].data(), done[k], hi[k]);
        done[k] = hi[k];
      }
    }
  }

  std::vector<Member> members_;
  int64_t rows_;
  int64_t band_rows_;
  int64_t block_rows_;  // 0: one block per thread
};

std::vector<Aval> chain_eval(std::span<const Aval> ins, const ir::Params& p) {
  const ir::Program& program = *p.get<ir::ProgramRef>("program");
  ops::check_same_types("fused_chain", "operand", ins, program.in_avals(), "the chain's program takes these types");
  return program.out_avals();
}

void chain_kernel(const ir::KernelCall& c) { c.params.get_object<ChainSchedule>("schedule").run(c); }

const ir::Primitive& fused_chain_p = ir::register_primitive({
    .name = "fused_chain", .abstract_eval = chain_eval, .cpu_kernel = chain_kernel});

const FusedKernel& kernel_of(const ir::Equation& e) { return e.params.get_object<FusedKernel>("kernel"); }

/// A loop nest that can be a member of a chain: one that keeps its domain's first dimension.
bool streamable(const ir::Equation& e) {
  if (!is_fused(e)) return false;
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

/// Bytes of one row of an array (of its first dimension; rank-0 arrays count nothing).
int64_t row_bytes(const Aval& a) {
  if (a.shape.empty() || a.shape[0] == 0) return 0;
  return int64_t(a.nbytes()) / a.shape[0];
}

/// The `fused_chain` equation running the chain's members of `p`.
ir::Equation chain_equation(const ir::Program& p, const Chain& chain, int64_t band_bytes, int64_t block_rows) {
  auto g = std::make_shared<ir::Program>();
  g->name = p.name + "_chain";
  std::unordered_map<const ir::VarNode*, size_t> output_pos;
  for (size_t i : chain.members())
    for (const ir::Var& v : p.eqns[i].outputs) {
      output_pos[v.get()] = g->outvars.size();
      g->outvars.push_back(ir::Atom(v));
    }
  std::unordered_map<const ir::VarNode*, size_t> input_pos;
  for (size_t i : chain.members())
    for (const ir::Atom& a : p.eqns[i].inputs) {
      const ir::VarNode* v = a.var().get();
      if (output_pos.count(v) || input_pos.count(v)) continue;
      input_pos[v] = g->invars.size();
      g->invars.push_back(a.var());
    }
  std::vector<Member> members;
  int64_t bytes_per_row = 0;
  for (const ir::Var& v : g->invars) bytes_per_row += row_bytes(v->aval);
  for (const ir::Atom& a : g->outvars) bytes_per_row += row_bytes(a.aval());
  for (size_t k = 0; k < chain.size(); ++k) {
    const ir::Equation& e = p.eqns[chain.members()[k]];
    g->eqns.push_back(e);
    Member m;
    m.kernel = e.params.get<std::shared_ptr<const ir::ParamObject>>("kernel");
    m.fn = kernel_of(e).fn();
    for (const ir::Atom& a : e.inputs) {
      auto out = output_pos.find(a.var().get());
      m.bufs.push_back(out != output_pos.end() ? g->invars.size() + out->second : input_pos.at(a.var().get()));
    }
    for (const ir::Var& v : e.outputs) m.bufs.push_back(g->invars.size() + output_pos.at(v.get()));
    m.rows = kernel_of(e).shape().domain[0];
    m.points = 1;
    for (int64_t d : kernel_of(e).shape().domain) m.points *= d;
    m.align = row_alignment(kernel_of(e).shape());
    m.reads = chain.reads()[k];
    m.below = chain.below()[k];
    m.above = chain.above()[k];
    members.push_back(std::move(m));
  }
  const int64_t band_rows = std::max<int64_t>(1, band_bytes / std::max<int64_t>(1, bytes_per_row));
  auto schedule = std::make_shared<const ChainSchedule>(std::move(members), chain.rows(), band_rows, block_rows);
  TESSEL_DEBUG_LOG("streaming '" + p.name + "': " + schedule->to_string());
  ir::Equation e{&fused_chain_p, {}, {}, ir::Params{{"program", ir::ProgramRef(g)},
                                                   {"schedule", std::shared_ptr<const ir::ParamObject>(schedule)}}};
  for (const ir::Var& v : g->invars) e.inputs.push_back(ir::Atom(v));
  for (const ir::Atom& a : g->outvars) e.outputs.push_back(a.var());
  return e;
}

}  // namespace

ir::Program stream_chains(const ir::Program& p, int64_t band_bytes, int64_t block_rows) {
  ir::Program out = without_equations(p);
  Chain chain(p);
  std::vector<size_t> moved;  // equations between members that read no member's output
  size_t chains = 0;
  auto flush = [&] {
    // Equations after the last member stay after the chain.
    const size_t last = chain.empty() ? 0 : chain.members().back();
    if (chain.size() >= 2) {
      for (size_t i : moved)
        if (i < last) out.eqns.push_back(p.eqns[i]);
      out.eqns.push_back(chain_equation(p, chain, band_bytes, block_rows));
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
