#include "compiler/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ops/op_util.h"

namespace tessel::compiler {

extern const char* const kScalarSource;  // generated from src/backend/cpu/scalar.h

namespace {

// ---- affine index maps (ir/index_map.h) ----

using ir::Affine;
using ir::IndexMap;

std::string affine_text(const Affine& a) {
  if (a.constant()) return std::to_string(a.off);
  std::string s = "i" + std::to_string(a.var);
  if (a.coef != 1) s = "(" + std::to_string(a.coef) + " * " + s + ")";
  if (a.off > 0) s = "(" + s + " + " + std::to_string(a.off) + ")";
  if (a.off < 0) s = "(" + s + " - " + std::to_string(-a.off) + ")";
  return s;
}

std::string map_key(const IndexMap& m) {
  std::string k;
  for (const Affine& a : m)
    k += a.constant() ? "c" + std::to_string(a.off) + ","
                      : std::to_string(a.var) + "*" + std::to_string(a.coef) + "+" + std::to_string(a.off) + ",";
  return k;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/// The values [first, second) of the loop variable of `e` (coef != 0) where lo <= e < hi.
std::pair<int64_t, int64_t> var_interval(const Affine& e, int64_t lo, int64_t hi) {
  if (e.coef > 0) return {ceil_div(lo - e.off, e.coef), ceil_div(hi - e.off, e.coef)};
  return {floor_div(e.off - hi, -e.coef) + 1, floor_div(e.off - lo, -e.coef) + 1};
}

/// The epilogue of a reduction over trailing axes whose primitive has a generated form for
/// its operand (reduce_sum/max/min of a float dtype); empty otherwise.
std::optional<ir::ReductionEpilogue> reduction_of(const ir::Equation& e) {
  if (!e.prim->reduction_epilogue) return std::nullopt;
  const Aval& x = e.inputs[0].aval();
  if (!ops::codegen_type(x.dtype) || x.shape.empty()) return std::nullopt;
  const auto& axes = e.params.get_ints("axes");
  if (axes.empty()) return std::nullopt;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != x.ndim() - int64_t(axes.size()) + int64_t(k)) return std::nullopt;
  return e.prim->reduction_epilogue(x.dtype);
}

/// The epilogue of a column reduction (codegen.h's is_column_reduction); empty otherwise.
std::optional<ir::ReductionEpilogue> column_reduction_of(const ir::Equation& e) {
  if (!e.prim->reduction_epilogue) return std::nullopt;
  const Aval& x = e.inputs[0].aval();
  if (!ops::codegen_type(x.dtype)) return std::nullopt;
  const auto& axes = e.params.get_ints("axes");
  if (axes.empty() || int64_t(axes.size()) >= x.ndim()) return std::nullopt;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != int64_t(k)) return std::nullopt;
  const ir::Combine how = reduction_combine(e);
  if (how != ir::Combine::kSum && how != ir::Combine::kMax && how != ir::Combine::kMin) return std::nullopt;
  return e.prim->reduction_epilogue(x.dtype);
}

/// The vectorized form of a fused reduction (generate_kernel's lanes): partial results of
/// the operand's type, folded with `combine` (a sum's lanes add in the operand's precision
/// and fold into its float64 accumulator; max and min fold as they accumulate).
struct Lanes {
  std::string type;
  std::string combine;
};
std::optional<Lanes> lanes_of(const ir::Equation& e) {
  auto r = reduction_of(e);
  if (!r) return std::nullopt;
  const ir::Combine how = reduction_combine(e);
  if (how != ir::Combine::kSum && how != ir::Combine::kMax && how != ir::Combine::kMin) return std::nullopt;
  return Lanes{ops::codegen_type(e.inputs[0].aval().dtype), how == ir::Combine::kSum ? "{a} += {v}" : r->combine};
}

std::string format_combine(const std::string& f, const std::string& a, const std::string& v) {
  std::string r = f;
  for (auto [key, val] : {std::pair<std::string, std::string>{"{a}", a}, {"{v}", v}})
    for (size_t at; (at = r.find(key)) != std::string::npos;) r.replace(at, key.size(), val);
  return r;
}

std::string literal_text(const Scalar& s, DType d) {
  const std::string type = ops::codegen_type(d);
  if (d == DType::bool_) return s.to<bool>() ? "true" : "false";
  if (is_floating(d)) {
    const double v = s.to<double>();
    if (std::isnan(v)) return type + "(__builtin_nan(\"\"))";
    if (std::isinf(v)) return type + (v > 0 ? "(__builtin_inf())" : "(-__builtin_inf())");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", v);
    return type + "(" + buf + ")";
  }
  return type + "(" + std::to_string(s.to<uint64_t>()) + "ULL)";  // modular, exact for every integer type
}

const ir::Equation* producer_in(const ir::Program& g, const ir::VarNode* v) {
  for (const ir::Equation& e : g.eqns)
    for (const ir::Var& o : e.outputs)
      if (o.get() == v) return &e;
  return nullptr;
}

// ---- the body emitter ----

enum class Truth { kFalse, kTrue, kRuntime };

/// A test with a fixed answer on the emitter's box, or C++ text evaluated per point.
struct Test {
  Truth truth = Truth::kTrue;
  std::string text;
};

Test all_of(const std::vector<Test>& tests) {
  Test r;
  for (const Test& t : tests) {
    if (t.truth == Truth::kFalse) return {Truth::kFalse, ""};
    if (t.truth == Truth::kRuntime) {
      r.truth = Truth::kRuntime;
      r.text += (r.text.empty() ? "" : " && ") + t.text;
    }
  }
  return r;
}

/// Emits the statements computing a group's outputs at one point of the domain, knowing
/// that the loop variables lie in `box` (per variable [lo, hi)): tests decided on the box
/// are resolved at generation time. Records where undecided tests change answer (`cuts`).
class BodyEmitter {
 public:
  BodyEmitter(const ir::Program& g, std::vector<int64_t> lo, std::vector<int64_t> hi,
              std::vector<std::vector<int64_t>>* cuts, GroupCost* cost = nullptr)
      : g_(g), lo_(std::move(lo)), hi_(std::move(hi)), cuts_(cuts), cost_(cost) {
    if (!lo_.empty()) row_guard_ = {lo_[0], hi_[0]};
    for (size_t i = 0; i < g.invars.size(); ++i) input_[g.invars[i].get()] = i;
    for (const ir::Equation& e : g.eqns)
      for (const ir::Var& v : e.outputs) producer_[v.get()] = &e;
    scopes_.emplace_back();
  }

  /// Buffers of rank >= 2 are indexed at their row modulo a ring (codegen.h's
  /// ring_indexable): the row index is and-ed with the buffer's row mask (`rmi<k>`,
  /// `rmo<k>`, declared by generate_kernel).
  void mask_rows(const std::vector<bool>& masked) { masked_ = masked; }

  /// Reductions fold into lane l_ of their lanes (`lane<k>[l_]`, generate_kernel's vectorized
  /// reduction loop) instead of their accumulator.
  void fold_into_lanes() { lanes_ = true; }

  /// How a division by a value that does not change along the innermost loop
  /// (ir::Primitive::quotient) is emitted: the loop is versioned per row (versioned_loop) so
  /// that no point pays for both a multiply and a divide.
  enum class Quotients {
    kPerPoint,  // x * (1 / s) where 1 / s is normal, else x / s, tested at each point
    kHoisted,   // x * r with r = 1 / s before the loop (hoisted()): rows where hoisted().ok holds
    kDivide,    // x / s: rows where it does not (the plain evaluation's rounding)
  };
  /// Sets how quotients are emitted; kHoisted names its locals with `prefix` and indents
  /// their statements by `indent`.
  void quotients(Quotients q, std::string prefix = "q_", int indent = 0) {
    quotients_ = q;
    hoist_prefix_ = std::move(prefix);
    hoist_indent_ = indent;
  }
  /// What kHoisted moved before the loop: declarations (reciprocals and the flag `ok`, false
  /// until `code` runs), statements computing them at the current row (to run only where
  /// the loop has points), and the flag saying every reciprocal is normal; all empty when
  /// nothing was hoisted.
  struct Hoisted {
    std::string decl, code, ok;
  };
  const Hoisted& hoisted() const { return hoisted_; }

  /// Where a row-phased loop nest (generate_row_phased_kernel) keeps a value: an array
  /// indexed like the value (an input or output buffer), a scalar holding the value of the
  /// current row (a reduction of an earlier phase), or a row buffer indexed by the last loop
  /// variable (an element-wise value of an earlier phase).
  struct Source {
    enum Kind { kArray, kScalar, kRow } kind = kArray;
    std::string name;
  };
  /// Reads the group's inputs from `sources` (those it names), writes each element-wise
  /// output k to every target of `targets[k]` (kArray or kRow), and names accumulators and
  /// lanes with `prefix`.
  void place(std::unordered_map<const ir::VarNode*, Source> sources, std::vector<std::vector<Source>> targets,
             std::string prefix) {
    sources_ = std::move(sources);
    targets_ = std::move(targets);
    prefix_ = std::move(prefix);
  }
  /// Records every index map at which each input is read (reads at run-time offsets record
  /// an empty map).
  void record_input_maps(std::unordered_map<const ir::VarNode*, std::vector<IndexMap>>* maps) { input_maps_ = maps; }

  /// Statements storing every output at the point (i0, ..., i<r-1>), indented by `indent`.
  std::string emit(int indent) {
    indent_ = indent;
    const Shape domain = group_shape(g_).domain;
    IndexMap identity;
    for (size_t d = 0; d < domain.size(); ++d) identity.push_back({int(d), 1, 0});
    for (size_t k = 0; k < g_.outvars.size(); ++k) {
      const ir::Equation* root = producer_.at(g_.outvars[k].var().get());
      if (auto r = column_reduction_of(*root)) {  // into the call's row of accumulators
        const size_t lead = root->params.get_ints("axes").size();
        const Shape row(domain.begin() + long(lead), domain.end());
        const IndexMap at(identity.begin() + long(lead), identity.end());
        std::string v = value(root->inputs[0], identity);
        if (!targets_.empty() && targets_[k].empty()) continue;  // read by no one
        const std::string out = targets_.empty() ? "out" + std::to_string(k) : targets_[k][0].name;
        line(format_combine(r->combine, out + "[" + flat_index(row, at) + "]", v) + ";");
        continue;
      }
      if (auto r = reduction_of(*root)) {  // accumulate the reduced operand
        std::string v = value(root->inputs[0], identity);
        if (lanes_) line(format_combine(lanes_of(*root)->combine, prefix_ + "lane" + std::to_string(k) + "[l_]", v) + ";");
        else line(format_combine(r->combine, prefix_ + "acc" + std::to_string(k), v) + ";");
        continue;
      }
      std::string v = value(g_.outvars[k], identity);
      if (targets_.empty()) {
        line("out" + std::to_string(k) + "[" + flat_index(domain, identity, nullptr, row_mask("rmo", k)) +
             "] = " + v + ";");
        continue;
      }
      for (const Source& t : targets_[k])
        line(t.name + "[" + (t.kind == Source::kRow ? affine_text(identity.back()) : flat_index(domain, identity)) +
             "] = " + v + ";");
    }
    return std::move(code_);
  }

 private:
  void line(const std::string& s) { code_ += std::string(size_t(indent_), ' ') + s + "\n"; }

  std::string fresh() { return "v" + std::to_string(next_++); }

  /// The name of the row mask of buffer `prefix`<k> ("in" k or "out" k; "" when not masked).
  std::string row_mask(const char* prefix, size_t k) const {
    const size_t position = prefix[2] == 'i' ? k : g_.invars.size() + k;
    return position < masked_.size() && masked_[position] ? prefix + std::to_string(k) : std::string();
  }

  /// The flat offset of index `m` in a dense array of `shape`, plus `offsets[d]` (names of
  /// run-time values; empty entries add nothing) in each dimension when given.
  std::string flat_index(const Shape& shape, const IndexMap& m, const std::vector<std::string>* offsets = nullptr,
                         const std::string& row_mask = "") {
    std::string s;
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (shape[d] != 1) {
        std::string term = affine_text(m[d]);
        if (offsets && !(*offsets)[d].empty()) term = "(" + term + " + " + (*offsets)[d] + ")";
        if (d == 0 && !row_mask.empty()) term = "((" + term + ") & " + row_mask + ")";
        if (stride != 1) term += " * " + std::to_string(stride);
        s = s.empty() ? term : term + " + " + s;
      }
      stride *= shape[d];
    }
    return s.empty() ? "0" : s;
  }

  /// lo <= e < hi on the box.
  Test in_range(const Affine& e, int64_t lo, int64_t hi) {
    if (e.constant()) return {e.off >= lo && e.off < hi ? Truth::kTrue : Truth::kFalse, ""};
    const size_t v = size_t(e.var);
    if (lo_[v] >= hi_[v]) return {Truth::kTrue, ""};  // no points: any answer
    int64_t a = e.coef * lo_[v] + e.off, b = e.coef * (hi_[v] - 1) + e.off;
    if (a > b) std::swap(a, b);
    if (a >= lo && b < hi) return {Truth::kTrue, ""};
    if (b < lo || a >= hi) return {Truth::kFalse, ""};
    if (cuts_) {
      const auto [a_cut, b_cut] = var_interval(e, lo, hi);
      (*cuts_)[v].push_back(a_cut);
      (*cuts_)[v].push_back(b_cut);
    }
    const std::string x = affine_text(e);
    std::string t;
    if (a < lo) t = "(" + x + " >= " + std::to_string(lo) + ")";
    if (b >= hi) t += (t.empty() ? "" : " && ") + std::string("(") + x + " < " + std::to_string(hi) + ")";
    return {Truth::kRuntime, t};
  }

  struct Case {
    Test test;
    std::function<std::string()> value;  // emitted only where the test holds
    std::vector<ir::RangeTest> when;     // the range tests of `test`
  };

  /// The value of the first case whose test holds (the last case is the default).
  std::string select(const std::string& type, std::vector<Case> cases) {
    std::vector<Case> live;
    for (auto& c : cases) {
      if (c.test.truth == Truth::kFalse) continue;
      live.push_back(std::move(c));
      if (live.back().test.truth == Truth::kTrue) break;
    }
    if (live.size() == 1) return live[0].value();
    const std::string name = fresh();
    line(type + " " + name + ";");
    emit_chain(name, live, 0);
    return name;
  }

  void emit_chain(const std::string& name, std::vector<Case>& cases, size_t i) {
    // A branch's statements (in a scope of their own) run where its `if` holds: on the box
    // narrowed by its tests. The last branch (the default) runs where the others fail.
    auto branch = [&](size_t k, bool tested) {
      indent_ += 2;
      ++branch_depth_;
      scopes_.emplace_back();
      const std::vector<int64_t> lo = lo_, hi = hi_;
      if (tested) narrow_box(cases[k].when);
      std::string v = cases[k].value();
      lo_ = lo;
      hi_ = hi;
      line(name + " = " + v + ";");
      scopes_.pop_back();
      --branch_depth_;
      indent_ -= 2;
    };
    if (i + 1 == cases.size()) {
      branch(i, false);
      return;
    }
    line("if (" + cases[i].test.text + ") {");
    branch(i, true);
    line("} else {");
    indent_ += 2;
    emit_chain(name, cases, i + 1);
    indent_ -= 2;
    line("}");
  }

  std::string memo(const std::string& key, std::string name) {
    scopes_.back()[key] = name;
    return name;
  }

  /// The local holding `key` in this scope or an enclosing one, or null.
  const std::string* memoized(const std::string& key) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      if (auto it = s->find(key); it != s->end()) return &it->second;
    return nullptr;
  }

  /// How deep invariant_along follows a denominator's producers before answering "varies".
  static constexpr int kInvariantDepth = 8;

  /// The loop variable of the innermost loop: the domain's last dimension. Not the last
  /// index of a value's map: a value of higher rank than the domain (a 2-D quotient whose
  /// row a rank-1 loop nest reads through a slice) is indexed by more variables than loop.
  int innermost_var() const { return int(lo_.size()) - 1; }

  /// Whether the element of `a` at index map `m` is the same for every value of loop variable
  /// `var` (the innermost): a literal, a row's value of an earlier phase, an input read at an
  /// index that does not use `var`, or a value computed from such elements only.
  bool invariant_along(const ir::Atom& a, const IndexMap& m, int var, int depth) const {
    if (a.is_literal()) return true;
    if (depth == 0) return false;
    auto uses_var = [var](const IndexMap& at) {
      return std::any_of(at.begin(), at.end(), [var](const Affine& x) { return !x.constant() && x.var == var; });
    };
    const ir::VarNode* v = a.var().get();
    if (input_.count(v)) {
      auto src = sources_.find(v);
      // A row buffer is read at the loop variable; an array (an input or output buffer of a
      // row-phased kernel) is indexed like the value, as an input of the group is.
      if (src != sources_.end() && src->second.kind != Source::kArray) return src->second.kind == Source::kScalar;
      return !uses_var(m);
    }
    auto producer = producer_.find(v);
    if (producer == producer_.end()) return false;
    const ir::Equation& e = *producer->second;
    if (e.prim->codegen)
      return std::all_of(e.inputs.begin(), e.inputs.end(),
                         [&](const ir::Atom& x) { return invariant_along(x, operand_map(x, m), var, depth - 1); });
    if (!e.prim->index_map) return false;  // a reduction: folded along the loop
    std::vector<Aval> in_avals;
    for (const ir::Atom& x : e.inputs) in_avals.push_back(x.aval());
    for (const ir::IndexCase& c : e.prim->index_map(m, in_avals, v->aval, e.params)) {
      if (c.operand == ir::kIndexValue || !c.dynamic.empty() || uses_var(c.at)) return false;
      for (const ir::RangeTest& t : c.when)
        if (!t.index.constant() && t.index.var == var) return false;
      if (!invariant_along(e.inputs[size_t(c.operand)], c.at, var, depth - 1)) return false;
      if (!c.combine.empty() && !invariant_along(e.inputs[0], m, var, depth - 1)) return false;
    }
    return true;
  }

  /// Emits the local |s| and returns the test that 1 / s stays in the normal range (|s| not
  /// below the smallest normal nor above its reciprocal: beyond, the reciprocal would lose
  /// digits or overflow, and the point must divide).
  std::string reciprocal_in_range(const std::string& s, const std::string& type, DType dtype) {
    const bool f32 = dtype == DType::float32;
    const std::string lo = f32 ? "0x1p-126f" : "0x1p-1022", hi = f32 ? "0x1p126f" : "0x1p1022";
    const std::string magnitude = fresh();
    line("const " + type + " " + magnitude + " = " + s + " < 0 ? -" + s + " : " + s + ";");
    return "(" + magnitude + " >= " + lo + " && " + magnitude + " <= " + hi + ")";
  }

  /// x / s where s does not change along the innermost loop, point by point: x times the
  /// reciprocal of s (XLA's x / broadcast(s) -> x * broadcast(1 / s); at most 1 ulp from the
  /// quotient) where reciprocal_in_range holds, else the divide.
  std::string quotient_by_reciprocal(const std::string& x, const std::string& s, const std::string& type, DType dtype) {
    const std::string recip = fresh(), name = fresh();
    line("const " + type + " " + recip + " = " + type + "(1) / " + s + ";");
    const std::string ok = reciprocal_in_range(s, type, dtype);
    line(type + " " + name + ";");
    line("if (" + ok + ") " + name + " = " + x + " * " + recip + "; else " + name + " = " + x + " / " + s + ";");
    return name;
  }

  /// The reciprocal of the denominator `s` at `m` (invariant along the innermost loop) in a
  /// local computed before the loop (Quotients::kHoisted): its statements go to hoisted_.code,
  /// in a scope of their own, and its range test into hoisted_.ok's flag. Each denominator is
  /// hoisted once per emitter.
  std::string hoisted_reciprocal(const ir::Atom& s, const IndexMap& m, const std::string& type, DType dtype) {
    const std::string key = s.is_literal() ? literal_text(s.literal(), dtype)
                                           : std::to_string(s.var()->id) + ":" + map_key(m);
    if (auto it = hoisted_names_.find(key); it != hoisted_names_.end()) return it->second;
    const std::string ok = hoist_prefix_ + "ok", r = hoist_prefix_ + "r" + std::to_string(hoisted_names_.size());
    if (hoisted_.ok.empty()) {
      hoisted_.ok = ok;
      hoisted_.decl += "bool " + ok + " = false; ";
      hoisted_code_ = std::string(size_t(hoist_indent_), ' ') + ok + " = true;\n";
    }
    hoisted_.decl += type + " " + r + " = 0; ";
    std::swap(code_, hoisted_code_);
    std::swap(scopes_, hoisted_scopes_);
    std::swap(indent_, hoist_indent_);
    quotients_ = Quotients::kPerPoint;  // a quotient inside the denominator: once per row
    const std::string v = value(s, m);
    line(r + " = " + type + "(1) / " + v + ";");
    line(ok + " = " + ok + " && " + reciprocal_in_range(v, type, dtype) + ";");
    quotients_ = Quotients::kHoisted;
    std::swap(indent_, hoist_indent_);
    std::swap(scopes_, hoisted_scopes_);
    std::swap(code_, hoisted_code_);
    hoisted_.code = hoisted_code_;
    return hoisted_names_[key] = r;
  }

  /// The element of `a` at index map `m`, as an expression (usually a local's name).
  std::string value(const ir::Atom& a, const IndexMap& m) {
    if (a.is_literal()) return literal_text(a.literal(), a.aval().dtype);
    const ir::VarNode* var = a.var().get();
    const std::string key = std::to_string(var->id) + ":" + map_key(m);
    if (const std::string* known = memoized(key)) return *known;
    const std::string type = ops::codegen_type(var->aval.dtype);
    if (auto it = input_.find(var); it != input_.end()) {
      note_row_read(it->second, m, false);
      if (input_maps_) (*input_maps_)[var].push_back(m);
      auto src = sources_.find(var);
      if (src != sources_.end() && src->second.kind == Source::kScalar) return memo(key, src->second.name);
      std::string name = fresh();
      const std::string array = src != sources_.end() ? src->second.name : "in" + std::to_string(it->second);
      const std::string at = src != sources_.end() && src->second.kind == Source::kRow
                                 ? affine_text(m.back())
                                 : flat_index(var->aval.shape, m, nullptr, row_mask("rmi", it->second));
      line("const " + type + " " + name + " = " + array + "[" + at + "];");
      return memo(key, name);
    }
    const ir::Equation& e = *producer_.at(var);
    if (!cost_) return memo(key, compute(e, m, type));
    const int64_t before = cost_->total;
    std::string v = compute(e, m, type);
    cost_->total += e.prim->point_cost;
    GroupCost::Var& c = cost_->vars[var];
    c.maps++;
    c.inclusive += cost_->total - before;
    return memo(key, v);
  }

  /// The operand map of an operand broadcast against the output (rank 0 reads index ()).
  static IndexMap operand_map(const ir::Atom& x, const IndexMap& m) {
    return x.aval().shape.empty() ? IndexMap{} : m;
  }

  std::string compute(const ir::Equation& e, const IndexMap& m, const std::string& type) {
    const Aval& out = e.outputs[0]->aval;
    if (e.prim->codegen) {
      bool invariant_quotient =
          e.prim->quotient && (out.dtype == DType::float32 || out.dtype == DType::float64) &&
          e.inputs[1].aval().dtype == out.dtype && !m.empty() && !lo_.empty() &&
          invariant_along(e.inputs[1], operand_map(e.inputs[1], m), innermost_var(), kInvariantDepth);
      if (invariant_quotient && e.inputs[1].is_literal()) {
        // A constant denominator: its range is known here, and the C++ compiler folds the
        // reciprocal (correctly rounded, as at run time), in every version of the loop.
        const double d = std::fabs(e.inputs[1].literal().to<double>());
        const bool f32 = out.dtype == DType::float32;
        if (d >= (f32 ? 0x1p-126 : 0x1p-1022) && d <= (f32 ? 0x1p126 : 0x1p1022)) {
          const std::string x = value(e.inputs[0], operand_map(e.inputs[0], m)), name = fresh();
          line("const " + type + " " + name + " = " + x + " * (" + type + "(1) / " +
               literal_text(e.inputs[1].literal(), out.dtype) + ");");
          return name;
        }
        invariant_quotient = false;  // NaN, zero, subnormal or huge: the divide
      }
      if (quotients_ == Quotients::kDivide) invariant_quotient = false;
      // Hoisted only outside range-test branches: before the loop, a branch's reads are not
      // known to be in bounds.
      if (invariant_quotient && quotients_ == Quotients::kHoisted && branch_depth_ == 0) {
        const std::string x = value(e.inputs[0], operand_map(e.inputs[0], m));
        const std::string r = hoisted_reciprocal(e.inputs[1], operand_map(e.inputs[1], m), type, out.dtype);
        const std::string name = fresh();
        line("const " + type + " " + name + " = " + x + " * " + r + ";");
        return name;
      }
      std::vector<std::string> xs;
      std::vector<Aval> in_avals;
      for (const ir::Atom& x : e.inputs) {
        xs.push_back(value(x, operand_map(x, m)));
        in_avals.push_back(x.aval());
      }
      if (invariant_quotient) return quotient_by_reciprocal(xs[0], xs[1], type, out.dtype);
      std::string expr = e.prim->codegen(xs, in_avals, out, e.params);
      std::string name = fresh();
      line("const " + type + " " + name + " = " + expr + ";");
      return name;
    }
    if (!e.prim->index_map) throw Error("internal: code generation has no rule for '" + e.prim->name + "'");
    std::vector<Aval> in_avals;
    for (const ir::Atom& x : e.inputs) in_avals.push_back(x.aval());
    std::vector<Case> cases;
    for (ir::IndexCase& c : e.prim->index_map(m, in_avals, out, e.params)) {
      if (c.operand != ir::kIndexValue && (c.operand < 0 || size_t(c.operand) >= e.inputs.size()))
        throw Error("internal: the index map of '" + e.prim->name + "' reads operand " + std::to_string(c.operand));
      std::vector<Test> tests;
      std::pair<int64_t, int64_t> rows = row_guard_;  // where the tests may hold, for note_row_read
      for (const ir::RangeTest& t : c.when) {
        tests.push_back(in_range(t.index, t.lo, t.hi));
        if (t.index.var == 0 && t.index.coef != 0) {
          const auto [a, b] = var_interval(t.index, t.lo, t.hi);
          rows = {std::max(rows.first, a), std::min(rows.second, b)};
        }
      }
      std::vector<ir::RangeTest> when = c.when;
      cases.push_back({all_of(tests), [this, &e, c = std::move(c), m, type, rows] {
                         const auto outer = row_guard_;
                         row_guard_ = rows;
                         std::string v = case_value(e, c, m, type);
                         row_guard_ = outer;
                         return v;
                       },
                       std::move(when)});
    }
    return select(type, std::move(cases));
  }

  /// Narrows the box to where every test of `when` holds: the statements of a case run only
  /// there, so tests nested in them that the narrowed box decides (a pad inside a slice of a
  /// concatenate testing the same rows again) are resolved when generating, not per point.
  void narrow_box(const std::vector<ir::RangeTest>& when) {
    for (const ir::RangeTest& t : when) {
      if (t.index.constant()) continue;
      const size_t v = size_t(t.index.var);
      const auto [a, b] = var_interval(t.index, t.lo, t.hi);
      lo_[v] = std::max(lo_[v], a);
      hi_[v] = std::max(lo_[v], std::min(hi_[v], b));
    }
  }

  /// The value of one case of an index map at the output index `m`.
  std::string case_value(const ir::Equation& e, const ir::IndexCase& c, const IndexMap& m, const std::string& type) {
    if (c.operand == ir::kIndexValue) return type + "(" + affine_text(c.at[0]) + ")";
    if (!c.dynamic.empty()) return dynamic_read(e, c, type);
    std::string v = value(e.inputs[size_t(c.operand)], c.at);
    if (c.combine.empty()) return v;
    return type + "(tessel::scalar::" + c.combine + "(" + value(e.inputs[0], m) + ", " + v + "))";
  }

  /// A case reading an input of the group at offsets known when the kernel runs
  /// (ir::DynamicOffset). Each offset is computed once, before the loops (the prologue), so
  /// the reads stay affine in the loop variables and vectorize.
  std::string dynamic_read(const ir::Equation& e, const ir::IndexCase& c, const std::string& type) {
    auto input_index = [&](const ir::Atom& a) {
      auto in = a.is_literal() ? input_.end() : input_.find(a.var().get());
      if (in == input_.end())
        throw Error("internal: '" + e.prim->name + "' reads a value computed in its own loop nest at a run-time offset");
      return std::to_string(in->second);
    };
    const ir::Atom& x = e.inputs[size_t(c.operand)];
    const std::string in = input_index(x);
    std::vector<std::string> offsets;
    IndexMap read = c.at;  // with the literal offsets added, for note_row_read
    bool run_time_row = false;
    for (const ir::DynamicOffset& o : c.dynamic) {
      if (o.operand < 0) {
        offsets.emplace_back();
        continue;
      }
      const ir::Atom& start = e.inputs[size_t(o.operand)];
      if (start.is_literal()) {
        const int64_t at = ops::window_start(start.literal().to<int64_t>(), o.extent, o.window);
        read[offsets.size()].off += at;
        offsets.push_back(std::to_string(at));
        continue;
      }
      run_time_row |= offsets.empty();
      // ops::window_start, as generated code.
      const std::string extent = std::to_string(o.extent), max = std::to_string(o.extent - o.window);
      const std::string k = input_index(start), name = "off" + k + "_" + extent + "_" + max;
      const std::string v = "int64_t(in" + k + "[0])";
      prologue_[name] = "std::clamp<int64_t>(" + v + " < 0 ? " + v + " + " + extent + " : " + v + ", 0, " + max + ")";
      offsets.push_back(name);
    }
    note_row_read(input_.at(x.var().get()), read, run_time_row);
    if (input_maps_) (*input_maps_)[x.var().get()].push_back(IndexMap{});
    const std::string name = fresh();
    line("const " + type + " " + name + " = in" + in + "[" +
         flat_index(x.aval().shape, c.at, &offsets, row_mask("rmi", input_.at(x.var().get()))) + "];");
    return name;
  }

 public:
  /// The run-time offsets the emitted statements read: name -> initializer, to declare
  /// before the loops.
  const std::map<std::string, std::string>& prologue() const { return prologue_; }
  /// Records the first-dimension offset of every input read into `rows` (one entry per
  /// input, each starting as {true, INT64_MAX, INT64_MIN}).
  void record_row_reads(std::vector<RowOffsets>* rows) { rows_ = rows; }
  /// Marks in `reads` (one entry per input) every input read somewhere in the box.
  void record_reads(std::vector<char>* reads) { reads_ = reads; }

 private:
  /// Input `input` read at `m`; `dynamic_row`: its first index has a run-time offset. The
  /// read happens where i0 lies in row_guard_, so its first index r(i0) (affine in i0, or
  /// constant) is i0 + c with c between the values of r(i0) - i0 at the guard's ends.
  void note_row_read(size_t input, const IndexMap& m, bool dynamic_row) {
    if (reads_ && row_guard_.first < row_guard_.second) (*reads_)[input] = 1;
    if (!rows_) return;
    RowOffsets& r = (*rows_)[input];
    if (dynamic_row || m.empty() || (!m[0].constant() && m[0].var != 0)) {
      r.rows = false;
      return;
    }
    const auto [lo, hi] = row_guard_;
    if (lo >= hi) return;  // never read
    const int64_t slope = m[0].constant() ? -1 : m[0].coef - 1;
    const int64_t c0 = slope * lo + m[0].off, c1 = slope * (hi - 1) + m[0].off;
    r.min = std::min({r.min, c0, c1});
    r.max = std::max({r.max, c0, c1});
  }

  std::map<std::string, std::string> prologue_;
  std::vector<RowOffsets>* rows_ = nullptr;
  std::vector<char>* reads_ = nullptr;
  /// The rows [first, second) of the domain where the statements being emitted run (the
  /// range tests of the enclosing index-map cases on i0).
  std::pair<int64_t, int64_t> row_guard_;

  const ir::Program& g_;
  std::vector<int64_t> lo_, hi_;
  std::vector<std::vector<int64_t>>* cuts_;
  GroupCost* cost_;
  std::unordered_map<const ir::VarNode*, size_t> input_;
  std::unordered_map<const ir::VarNode*, const ir::Equation*> producer_;
  std::vector<std::unordered_map<std::string, std::string>> scopes_;
  std::string code_;
  int indent_ = 0;
  int next_ = 0;
  bool lanes_ = false;
  std::vector<bool> masked_;  // per input then output: indexed at its row & its mask
  std::unordered_map<const ir::VarNode*, Source> sources_;
  std::vector<std::vector<Source>> targets_;
  std::string prefix_;
  std::unordered_map<const ir::VarNode*, std::vector<IndexMap>>* input_maps_ = nullptr;
  Quotients quotients_ = Quotients::kPerPoint;
  int branch_depth_ = 0;  // range-test branches around the statements being emitted
  std::string hoist_prefix_;
  int hoist_indent_ = 0;
  Hoisted hoisted_;
  std::string hoisted_code_;
  std::vector<std::unordered_map<std::string, std::string>> hoisted_scopes_{1};
  std::unordered_map<std::string, std::string> hoisted_names_;
};

/// The largest interval between consecutive cut points of each loop variable.
void interior_box(const Shape& domain, std::vector<std::vector<int64_t>>& cuts, std::vector<int64_t>& lo,
                  std::vector<int64_t>& hi) {
  for (size_t v = 0; v < domain.size(); ++v) {
    auto& c = cuts[v];
    c.push_back(0);
    c.push_back(domain[v]);
    for (auto& x : c) x = std::clamp<int64_t>(x, 0, domain[v]);
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    int64_t best = 0;
    lo[v] = hi[v] = 0;
    for (size_t k = 0; k + 1 < c.size(); ++k)
      if (c[k + 1] - c[k] > best) {
        best = c[k + 1] - c[k];
        lo[v] = c[k];
        hi[v] = c[k + 1];
      }
  }
}

/// The index-map cases of an index-mapping equation at its own output index.
std::vector<ir::IndexCase> identity_cases(const ir::Equation& e) {
  const Aval& out = e.outputs[0]->aval;
  IndexMap identity;
  for (size_t d = 0; d < out.shape.size(); ++d) identity.push_back({int(d), 1, 0});
  std::vector<Aval> avals;
  for (const ir::Atom& a : e.inputs) avals.push_back(a.aval());
  return e.prim->index_map(identity, avals, out, e.params);
}

}  // namespace

bool can_generate(const ir::Equation& e) {
  if (e.effects() != ir::kNoEffect || e.outputs.size() != 1) return false;
  for (const ir::Atom& a : e.inputs)
    if (!ops::codegen_type(a.aval().dtype)) return false;
  const Aval& out = e.outputs[0]->aval;
  if (!ops::codegen_type(out.dtype)) return false;
  if (e.prim->codegen) {
    std::vector<std::string> xs(e.inputs.size(), "x");
    std::vector<Aval> avals;
    for (const ir::Atom& a : e.inputs) avals.push_back(a.aval());
    return !e.prim->codegen(xs, avals, out, e.params).empty();
  }
  if (e.prim->index_map) return !identity_cases(e).empty();
  return false;
}

bool reads_at_run_time_offsets(const ir::Equation& e) {
  if (!e.prim->index_map || e.outputs.size() != 1) return false;
  for (const ir::IndexCase& c : identity_cases(e))
    if (!c.dynamic.empty()) return true;
  return false;
}

std::string kernel_prelude() { return std::string(kScalarSource) + "\n#include <algorithm>\n#include <cstdint>\n"; }

namespace {

/// The generic body (over the whole domain), and the interior box its tests leave. The
/// declarations of the run-time offsets it reads are added to `prologue`; `row_cuts`, when
/// given, gets the rows where a test changes (sorted, with 0 and the row count).
std::string generic_body(const ir::Program& g, int indent, std::vector<int64_t>& lo, std::vector<int64_t>& hi,
                         std::map<std::string, std::string>* prologue = nullptr,
                         const std::vector<bool>& masked = {}, std::vector<int64_t>* row_cuts = nullptr) {
  const Shape domain = group_shape(g).domain;
  std::vector<std::vector<int64_t>> cuts(domain.size());
  lo.assign(domain.size(), 0);
  hi.assign(domain.begin(), domain.end());
  BodyEmitter emitter(g, lo, hi, &cuts);
  emitter.mask_rows(masked);
  std::string body = emitter.emit(indent);
  if (prologue) prologue->insert(emitter.prologue().begin(), emitter.prologue().end());
  interior_box(domain, cuts, lo, hi);
  if (row_cuts && !cuts.empty()) *row_cuts = cuts[0];
  return body;
}

/// Most bands of edge rows (generate_kernel) one loop nest specialises: each is one more
/// copy of the body to compile.
constexpr size_t kMaxEdgeRowBands = 4;

/// The bands of rows outside [lo, hi) between consecutive `row_cuts` (on each, every test of
/// the rows is decided), the largest first, at most kMaxEdgeRowBands.
std::vector<std::pair<int64_t, int64_t>> edge_row_bands(const std::vector<int64_t>& row_cuts, int64_t lo, int64_t hi) {
  std::vector<std::pair<int64_t, int64_t>> bands;
  for (size_t k = 0; k + 1 < row_cuts.size(); ++k)
    if (row_cuts[k] < row_cuts[k + 1] && (row_cuts[k + 1] <= lo || row_cuts[k] >= hi))
      bands.emplace_back(row_cuts[k], row_cuts[k + 1]);
  std::stable_sort(bands.begin(), bands.end(),
                   [](const auto& x, const auto& y) { return x.second - x.first > y.second - y.first; });
  if (bands.size() > kMaxEdgeRowBands) bands.resize(kMaxEdgeRowBands);
  return bands;
}

/// The opening of the loop over dimension `d` of `domain` (the first over [r0, r1)).
std::string loop_header(const Shape& domain, size_t d, int indent) {
  const std::string i = "i" + std::to_string(d);
  return std::string(size_t(indent), ' ') + "for (int64_t " + i + " = " + (d == 0 ? "r0" : "0") + "; " + i + " < " +
         (d == 0 ? "r1" : std::to_string(domain[d])) + "; ++" + i + ") {\n";
}

/// Lanes of a vectorized reduction loop (generate_kernel): independent partial results, as
/// many as a 64-byte vector holds floats, so each lane's chain of adds runs in a vector register.
constexpr int kLanes = 16;
/// Values a lane of a reduction in a narrower type than its accumulator (a float sum) folds
/// before the lanes fold into the accumulator's precision: docs/performance.md's error bound.
constexpr int kLaneRun = 16;

/// Whether every reduction of `g` has a vectorized form (ir::ReductionEpilogue's lanes).
bool has_lanes(const ir::Program& g) {
  for (const ir::Atom& o : g.outvars) {
    const ir::Equation* e = o.is_literal() ? nullptr : producer_in(g, o.var().get());
    if (!e || !lanes_of(*e)) return false;
  }
  return true;
}

/// The loop over [from, to) of the last (reduced) dimension `il`, vectorized: kLanes
/// consecutive points fold into kLanes independent partial results (`lanes_body`, emitted
/// with BodyEmitter::fold_into_lanes), which fold after every kLaneRun rounds into wide lanes
/// of the accumulator's type when that is wider, then pairwise into the accumulator; the
/// points past the last whole round run `body` (folding into the accumulator). The grouping
/// depends only on `from`, so the values do not depend on how rows are split between calls.
std::string lane_loop(const ir::Program& g, const std::string& il, const std::string& from, const std::string& to,
                      const std::string& lanes_body, const std::string& body, int indent,
                      const std::string& prefix = "") {
  auto ind = [](int n) { return std::string(size_t(n), ' '); };
  const std::string W = std::to_string(kLanes);
  const std::string each = "for (int l_ = 0; l_ < " + W + "; ++l_) ";
  // The lanes live in a vector-typed variable between chunks (`lane_v`), copied into the
  // array `lane` that the chunk's body folds into and back after it: GCC keeps a vector
  // variable in a register, where the array alone stayed in memory, each chunk's combine
  // waiting on the previous chunk's store (a store-forwarding chain that cost the softmax
  // forward 18%). The copies are register moves; the grouping and values are unchanged.
  std::string decl, reset, fold_run, finish, load_lanes, store_lanes;
  for (size_t k = 0; k < g.outvars.size(); ++k) {
    const ir::Equation& root = *producer_in(g, g.outvars[k].var().get());
    const ir::ReductionEpilogue r = *reduction_of(root);
    const Lanes lanes = *lanes_of(root);
    const std::string K = std::to_string(k), lane = prefix + "lane" + K, wide = prefix + "wide" + K;
    decl += ind(indent + 2) + lanes.type + " " + lane + "[" + W + "];\n";
    decl += ind(indent + 2) + "typedef " + lanes.type + " " + lane + "_t __attribute__((vector_size(" + W +
            " * sizeof(" + lanes.type + "))));\n" + ind(indent + 2) + lane + "_t " + lane + "_v;\n";
    load_lanes += ind(indent + 4) + "__builtin_memcpy(" + lane + ", &" + lane + "_v, sizeof " + lane + ");\n";
    store_lanes += "__builtin_memcpy(&" + lane + "_v, " + lane + ", sizeof " + lane + "); ";
    reset += lane + "[l_] = " + r.identity + "; ";
    std::string tree = lane;  // the array whose entries combine pairwise into the accumulator
    if (lanes.type != r.acc_type) {
      tree = wide;
      decl += ind(indent + 2) + r.acc_type + " " + wide + "[" + W + "];\n";
      reset += wide + "[l_] = " + r.identity + "; ";
      const std::string fold = format_combine(r.combine, wide + "[l_]", lane + "[l_]") + "; ";
      fold_run += fold + lane + "[l_] = " + r.identity + "; ";
      finish += ind(indent + 2) + each + "{ " + fold + "}\n";
    }
    finish += ind(indent + 2) + "for (int s_ = " + std::to_string(kLanes / 2) + "; s_ > 0; s_ /= 2)\n" +
              ind(indent + 4) + "for (int l_ = 0; l_ < s_; ++l_) " +
              format_combine(r.combine, tree + "[l_]", tree + "[l_ + s_]") + ";\n" + ind(indent + 2) +
              format_combine(r.combine, prefix + "acc" + K, tree + "[0]") + ";\n";
  }
  std::string s = ind(indent) + "{\n" + decl + ind(indent + 2) + each + "{ " + reset + "}\n" + ind(indent + 2) +
                  store_lanes + "\n" + ind(indent + 2) + "int64_t b_ = " + from + ";\n" + ind(indent + 2) +
                  "const int64_t e_ = " + to + ";\n" + ind(indent + 2) + "for (int run_ = 0; b_ + " + W +
                  " <= e_; b_ += " + W + ") {\n" + load_lanes + "#pragma GCC unroll 1\n" + ind(indent + 4) +
                  "for (int64_t l_ = 0; l_ < " + W + "; ++l_) {\n" + ind(indent + 6) + "const int64_t " + il +
                  " = b_ + l_;\n" + lanes_body + ind(indent + 4) + "}\n" + ind(indent + 4) + store_lanes + "\n";
  if (!fold_run.empty())
    s += ind(indent + 4) + "if (++run_ == " + std::to_string(kLaneRun) + ") {\n" + ind(indent + 6) + "run_ = 0;\n" +
         ind(indent + 6) + each + "{ " + fold_run + "}\n" + ind(indent + 6) + store_lanes + "\n" + ind(indent + 4) +
         "}\n";
  else
    s += ind(indent + 4) + "(void)run_;\n";
  s += ind(indent + 2) + "}\n" + finish;
  s += ind(indent + 2) + "for (int64_t " + il + " = b_; " + il + " < e_; ++" + il + ") {\n" + body + ind(indent + 2) +
       "}\n" + ind(indent) + "}\n";
  return s;
}

/// Builds the loop `make` returns, with divisions by values that do not change along it
/// (BodyEmitter::Quotients) versioned per row: the reciprocals and their range test are
/// computed once before the loop (where `has_points`), and the row runs the version that
/// multiplies by them when every one is normal, else the version that divides. A single
/// body testing per point grew too large for GCC to unswitch, and its if-conversion computed
/// both the product and the divide at every point. `make` fills `hoisted` (when given) with
/// what each of its emitters hoisted.
using LoopMaker = std::function<std::string(BodyEmitter::Quotients, std::vector<BodyEmitter::Hoisted>*)>;
std::string versioned_loop(const LoopMaker& make, const std::string& has_points, int indent) {
  auto ind = [](int n) { return std::string(size_t(n), ' '); };
  std::vector<BodyEmitter::Hoisted> hoisted;
  std::string fast = make(BodyEmitter::Quotients::kHoisted, &hoisted);
  std::string decl, code, ok;
  for (const BodyEmitter::Hoisted& h : hoisted) {
    if (h.ok.empty()) continue;
    decl += h.decl;
    code += ind(indent + 4) + "{\n" + h.code + ind(indent + 4) + "}\n";
    ok += (ok.empty() ? "" : " && ") + h.ok;
  }
  if (ok.empty()) return fast;
  return ind(indent) + "{\n" + ind(indent + 2) + decl + "\n" + ind(indent + 2) + "if (" + has_points + ") {\n" + code +
         ind(indent + 2) + "}\n" + ind(indent + 2) + "if (" + ok + ") {\n" + fast + ind(indent + 2) + "} else {\n" +
         make(BodyEmitter::Quotients::kDivide, nullptr) + ind(indent + 2) + "}\n" + ind(indent) + "}\n";
}

}  // namespace

GroupCost group_cost(const ir::Program& g) {
  std::vector<int64_t> lo, hi;
  generic_body(g, 0, lo, hi);
  GroupCost cost;
  BodyEmitter(g, lo, hi, nullptr, &cost).emit(0);
  return cost;
}

GroupShape group_shape(const ir::Program& g) {
  const ir::Equation* root = g.outvars[0].is_literal() ? nullptr : producer_in(g, g.outvars[0].var().get());
  if (root && reduction_of(*root)) {
    const Shape& in = root->inputs[0].aval().shape;
    return {in, in.size() - root->params.get_ints("axes").size()};
  }
  if (root && column_reduction_of(*root)) {  // visits every point, like an element-wise root
    const Shape& in = root->inputs[0].aval().shape;
    return {in, in.size()};
  }
  const Shape& out = g.outvars[0].aval().shape;
  return {out, out.size()};
}

bool is_fusible_reduction(const ir::Equation& e) { return reduction_of(e).has_value(); }

bool is_column_reduction(const ir::Equation& e) { return column_reduction_of(e).has_value(); }

ir::Combine reduction_combine(const ir::Equation& e) {
  if (!e.prim->sharding_rule) return ir::Combine::kNone;
  std::vector<Aval> ins, outs;
  for (const ir::Atom& a : e.inputs) ins.push_back(a.aval());
  for (const ir::Var& o : e.outputs) outs.push_back(o->aval);
  for (ir::Combine c : e.prim->sharding_rule(ins, outs, e.params).factors)
    if (c != ir::Combine::kNone) return c;
  return ir::Combine::kNone;
}

std::vector<RowOffsets> row_offsets(const ir::Program& g) {
  // The generic body over the whole domain emits every read that can happen somewhere (the
  // specialised interior body reads a subset of them).
  const Shape domain = group_shape(g).domain;
  std::vector<RowOffsets> rows(g.invars.size(), RowOffsets{true, INT64_MAX, INT64_MIN});
  BodyEmitter emitter(g, std::vector<int64_t>(domain.size(), 0), std::vector<int64_t>(domain.begin(), domain.end()),
                      nullptr);
  emitter.record_row_reads(&rows);
  emitter.emit(0);
  for (RowOffsets& r : rows)
    if (r.rows && r.min > r.max) r.min = r.max = 0;  // never read
  return rows;
}

namespace {
/// Whether a point of `g` with first index in [r0, r1) reads an input marked in `late`.
bool reads_late_in_rows(const ir::Program& g, const Shape& domain, const std::vector<char>& late, int64_t r0,
                        int64_t r1) {
  std::vector<int64_t> lo(domain.size(), 0), hi(domain.begin(), domain.end());
  lo[0] = r0, hi[0] = r1;
  std::vector<char> reads(g.invars.size(), 0);
  BodyEmitter emitter(g, lo, hi, nullptr);
  emitter.record_reads(&reads);
  emitter.emit(0);
  for (size_t k = 0; k < reads.size() && k < late.size(); ++k)
    if (reads[k] && late[k]) return true;
  return false;
}
}  // namespace

std::pair<int64_t, int64_t> rows_without_reads(const ir::Program& g, const std::vector<char>& late) {
  const Shape domain = group_shape(g).domain;
  if (domain.empty() || domain[0] < 2) return {0, 0};
  const int64_t rows = domain[0], mid = rows / 2;
  if (reads_late_in_rows(g, domain, late, mid, mid + 1)) return {0, 0};
  // A larger box emits every read a smaller one does, so both ends are found by bisection.
  int64_t lo = 0, hi = mid;  // the least a with [a, mid + 1) clean lies in [lo, hi]
  while (lo < hi) {
    const int64_t a = (lo + hi) / 2;
    if (reads_late_in_rows(g, domain, late, a, mid + 1)) lo = a + 1;
    else hi = a;
  }
  const int64_t begin = lo;
  lo = mid + 1, hi = rows;  // the most b with [mid, b) clean lies in [lo, hi]
  while (lo < hi) {
    const int64_t b = (lo + hi + 1) / 2;
    if (reads_late_in_rows(g, domain, late, mid, b)) hi = b - 1;
    else lo = b;
  }
  return {begin, lo};
}

bool can_join_row_phases(const ir::Program& g, const Shape& domain,
                         const std::unordered_map<const ir::VarNode*, bool>& earlier) {
  const size_t rank = domain.size();
  if (rank < 2 || g.outvars.empty()) return false;
  for (const ir::Atom& o : g.outvars)
    if (o.is_literal() || !producer_in(g, o.var().get())) return false;
  const GroupShape shape = group_shape(g);
  if (shape.domain != domain || shape.kept + 1 < rank) return false;
  if (shape.kept < rank && !has_lanes(g)) return false;
  std::vector<int64_t> lo, hi;
  std::map<std::string, std::string> prologue;
  generic_body(g, 0, lo, hi, &prologue);
  if (!prologue.empty()) return false;
  for (size_t d = 0; d < rank; ++d)
    if (lo[d] != 0 || hi[d] != domain[d]) return false;  // range tests somewhere
  std::unordered_map<const ir::VarNode*, std::vector<IndexMap>> maps;
  BodyEmitter emitter(g, lo, hi, nullptr);
  emitter.record_input_maps(&maps);
  emitter.emit(0);
  for (const auto& [v, reads] : maps) {
    auto it = earlier.find(v);
    if (it == earlier.end()) continue;
    const size_t want = it->second ? rank - 1 : rank;  // a row's reduction, or a point's value
    for (const IndexMap& m : reads) {
      if (m.size() != want) return false;
      for (size_t d = 0; d < want; ++d)
        if (m[d].var != int(d) || m[d].coef != 1 || m[d].off != 0) return false;
    }
  }
  return true;
}

std::string generate_row_phased_kernel(const std::vector<ir::Program>& phases, const std::vector<ir::Var>& invars,
                                       const std::vector<ir::Var>& outvars, const std::string& name) {
  using Source = BodyEmitter::Source;
  const Shape domain = group_shape(phases.at(0)).domain;
  const size_t rank = domain.size(), last = rank - 1;
  auto str = [](int64_t v) { return std::to_string(v); };
  auto ind = [](int n) { return std::string(size_t(n), ' '); };
  const std::string il = "i" + str(int64_t(last)), n = str(domain[last]);
  std::unordered_map<const ir::VarNode*, Source> sources;
  std::unordered_map<const ir::VarNode*, std::string> out_of;
  std::string s = "extern \"C\" void " + name + "(void* const* bufs, int64_t r0, int64_t r1) {\n";
  for (size_t k = 0; k < invars.size(); ++k) {
    const std::string t = ops::codegen_type(invars[k]->aval.dtype), K = str(int64_t(k));
    s += "  const " + t + "* __restrict in" + K + " = static_cast<const " + t + "*>(bufs[" + K + "]);\n";
    sources[invars[k].get()] = {Source::kArray, "in" + K};
  }
  std::unordered_map<const ir::VarNode*, const ir::Equation*> producer;
  for (const ir::Program& g : phases)
    for (const ir::Equation& e : g.eqns) producer.emplace(e.outputs[0].get(), &e);
  for (size_t k = 0; k < outvars.size(); ++k) {
    const auto column = column_reduction_of(*producer.at(outvars[k].get()));  // a row of accumulators
    const std::string t = column ? column->acc_type : ops::codegen_type(outvars[k]->aval.dtype), K = str(int64_t(k));
    s += "  " + t + "* __restrict out" + K + " = static_cast<" + t + "*>(bufs[" + str(int64_t(invars.size() + k)) +
         "]);\n";
    out_of[outvars[k].get()] = "out" + K;
  }
  // Element-wise values a later phase reads: a row buffer each, on the stack of the call.
  std::unordered_set<const ir::VarNode*> read_later;
  for (size_t p = 1; p < phases.size(); ++p)
    for (const ir::Var& v : phases[p].invars) read_later.insert(v.get());
  std::string row_flat;  // the flat index of the current row among domain[:-1]
  for (size_t d = last, stride = 1; d-- > 0; stride *= size_t(domain[d]))
    row_flat = "i" + str(int64_t(d)) + (stride != 1 ? " * " + str(int64_t(stride)) : "") +
               (row_flat.empty() ? "" : " + " + row_flat);
  int indent = 2;
  std::string loops;
  for (size_t d = 0; d < last; ++d) {
    loops += loop_header(domain, d, indent);
    indent += 2;
  }
  std::vector<int64_t> lo(rank, 0), hi(domain.begin(), domain.end());
  for (size_t p = 0; p < phases.size(); ++p) {
    const ir::Program& g = phases[p];
    const bool reduces = group_shape(g).kept < rank;
    const std::string P = "p" + str(int64_t(p)) + "_";
    std::unordered_map<const ir::VarNode*, Source> in_sources;
    for (const ir::Var& v : g.invars) in_sources[v.get()] = sources.at(v.get());
    std::vector<std::vector<Source>> targets(g.outvars.size());
    std::string after;  // statements after the phase's loop: its reductions' values
    for (size_t k = 0; k < g.outvars.size(); ++k) {
      const ir::VarNode* v = g.outvars[k].var().get();
      const std::string t = ops::codegen_type(v->aval.dtype), K = str(int64_t(k));
      auto out = out_of.find(v);
      if (reduces) {
        const ir::ReductionEpilogue r = *reduction_of(*producer_in(g, v));
        loops += ind(indent) + r.acc_type + " " + P + "acc" + K + " = " + r.identity + ";\n";
        const std::string value = P + "r" + K;
        after += ind(indent) + "const " + t + " " + value + " = " + t + "(" + P + "acc" + K + ");\n";
        if (out != out_of.end()) after += ind(indent) + out->second + "[" + row_flat + "] = " + value + ";\n";
        sources[v] = {Source::kScalar, value};
        continue;
      }
      if (out != out_of.end()) targets[k].push_back({Source::kArray, out->second});
      if (read_later.count(v)) {
        const std::string row = P + "row" + K;
        s += "  " + t + " " + row + "[" + n + "];\n";
        targets[k].push_back({Source::kRow, row});
        sources[v] = {Source::kRow, row};
      }
    }
    const LoopMaker phase_loop = [&](BodyEmitter::Quotients q, std::vector<BodyEmitter::Hoisted>* hoisted) {
      BodyEmitter body(g, lo, hi, nullptr);
      body.place(in_sources, targets, P);
      body.quotients(q, P + "qb_", indent + 6);
      if (!reduces) {
        std::string loop = "#pragma GCC ivdep\n" + ind(indent) + "for (int64_t " + il + " = 0; " + il + " < " + n +
                           "; ++" + il + ") {\n" + body.emit(indent + 2) + ind(indent) + "}\n";
        if (hoisted) hoisted->push_back(body.hoisted());
        return loop;
      }
      BodyEmitter lanes(g, lo, hi, nullptr);
      lanes.place(in_sources, targets, P);
      lanes.fold_into_lanes();
      lanes.quotients(q, P + "ql_", indent + 6);
      std::string loop = lane_loop(g, il, "0", n, lanes.emit(indent + 6), body.emit(indent + 4), indent, P);
      if (hoisted) {
        hoisted->push_back(lanes.hoisted());
        hoisted->push_back(body.hoisted());
      }
      return loop;
    };
    loops += versioned_loop(phase_loop, "true", indent) + after;
  }
  for (size_t d = last; d-- > 0;) {
    indent -= 2;
    loops += ind(indent) + "}\n";
  }
  return s + loops + "}\n";
}

std::vector<bool> ring_buffers(const ir::Program& g, const std::unordered_set<const ir::VarNode*>& ring_values) {
  const GroupShape shape = group_shape(g);
  std::vector<bool> r;
  for (const ir::Var& v : g.invars) r.push_back(ring_values.count(v.get()) && ring_indexable(shape, v->aval, false));
  for (const ir::Atom& a : g.outvars)
    r.push_back(!a.is_literal() && ring_values.count(a.var().get()) && ring_indexable(shape, a.aval(), true) &&
                !(producer_in(g, a.var().get()) && is_column_reduction(*producer_in(g, a.var().get()))));
  return r;
}

std::string generate_kernel(const ir::Program& g, const std::string& name,
                            const std::unordered_set<const ir::VarNode*>& ring_values) {
  const auto [domain, kept] = group_shape(g);
  const size_t rank = domain.size();
  const size_t outer = rank == 0 ? 0 : rank - 1;  // loops before the split last dimension
  std::vector<int64_t> lo, hi;
  std::map<std::string, std::string> prologue;
  // Buffers indexed at their row modulo a ring (ring_indexable).
  const std::vector<bool> masked = ring_buffers(g, ring_values);
  std::vector<int64_t> row_cuts;
  std::string generic = generic_body(g, 4, lo, hi, &prologue, masked, &row_cuts);
  if (rank > 0) {  // the run-time offsets the interior body reads (emitted below)
    BodyEmitter emitter(g, lo, hi, nullptr);
    emitter.mask_rows(masked);
    emitter.emit(2 * int(rank) + 6);
    prologue.insert(emitter.prologue().begin(), emitter.prologue().end());
  }
  // Rank 2 and more: the edge columns of the interior rows ([0, lo) and [hi, n) of the last
  // dimension, the rest in the interior box) run bodies specialised to their own boxes,
  // with the tests those boxes decide resolved, instead of the generic body per point
  // (which costs several times as much: at 360x180 the shallow-water step spent 13% of its
  // time there).
  std::string edge_body[2];
  if (rank >= 2) {
    const int64_t n = domain[rank - 1];
    const std::pair<int64_t, int64_t> edges[2] = {{0, lo[rank - 1]}, {hi[rank - 1], n}};
    for (int side = 0; side < 2; ++side) {
      if (edges[side].first >= edges[side].second) continue;
      std::vector<int64_t> box_lo = lo, box_hi = hi;
      box_lo[rank - 1] = edges[side].first;
      box_hi[rank - 1] = edges[side].second;
      BodyEmitter emitter(g, box_lo, box_hi, nullptr);
      emitter.mask_rows(masked);
      edge_body[side] = emitter.emit(2 * int(rank) + 6);
      prologue.insert(emitter.prologue().begin(), emitter.prologue().end());
    }
  }
  // Rank 2: the edge rows (outside the interior box's rows: next to a wrap, a pad or a
  // received halo) run, band by band of rows on which every test is decided, a body
  // specialised to the band over the interior columns, instead of the generic body at every
  // point (about 5 times the instructions: a 450-row piece of the shallow-water step spent 4%
  // of its instructions on its 4 edge rows).
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> row_band_body;
  if (rank == 2 && lo[1] < hi[1])
    for (const auto& band : edge_row_bands(row_cuts, lo[0], hi[0])) {
      BodyEmitter emitter(g, {band.first, lo[1]}, {band.second, hi[1]}, nullptr);
      emitter.mask_rows(masked);
      row_band_body.emplace_back(band, emitter.emit(2 * int(rank) + 6));
      prologue.insert(emitter.prologue().begin(), emitter.prologue().end());
    }
  auto ind = [](int n) { return std::string(size_t(n), ' '); };
  auto str = [](int64_t v) { return std::to_string(v); };

  std::string s = "extern \"C\" void " + name + "(void* const* bufs, int64_t r0, int64_t r1) {\n";
  for (size_t k = 0; k < g.invars.size(); ++k) {
    const std::string t = ops::codegen_type(g.invars[k]->aval.dtype);
    s += "  const " + t + "* __restrict in" + str(int64_t(k)) + " = static_cast<const " + t + "*>(bufs[" +
         str(int64_t(k)) + "]);\n";
  }
  for (const auto& [offset, init] : prologue) s += "  const int64_t " + offset + " = " + init + ";\n";
  if (std::count(masked.begin(), masked.end(), true) > 0) {
    // Row masks (ring_buffers), from the array after the outputs; none: every mask is -1
    // (all rows of a full-size buffer).
    const size_t n = g.invars.size() + g.outvars.size();
    s += "  const int64_t* rm_ = static_cast<const int64_t*>(bufs[" + str(int64_t(n)) + "]);\n";
    for (size_t position = 0; position < n; ++position) {
      if (!masked[position]) continue;
      const bool in = position < g.invars.size();
      const size_t k = in ? position : position - g.invars.size();
      s += "  const int64_t " + std::string(in ? "rmi" : "rmo") + str(int64_t(k)) + " = rm_ ? rm_[" +
           str(int64_t(position)) + "] : -1;\n";
    }
  }
  // Reductions (over the trailing dimensions from `kept` on) accumulate in locals, reset
  // when the kept indices change and stored after the reduced loops.
  std::string acc_init, acc_store;
  Shape kept_shape(domain.begin(), domain.begin() + long(kept));
  IndexMap kept_map;
  for (size_t d = 0; d < kept; ++d) kept_map.push_back({int(d), 1, 0});
  for (size_t k = 0; k < g.outvars.size(); ++k) {
    const ir::Equation* producer = g.outvars[k].is_literal() ? nullptr : producer_in(g, g.outvars[k].var().get());
    const auto column = producer ? column_reduction_of(*producer) : std::nullopt;
    const std::string t = column ? column->acc_type : ops::codegen_type(g.outvars[k].aval().dtype), K = str(int64_t(k));
    s += "  " + t + "* __restrict out" + K + " = static_cast<" + t + "*>(bufs[" + str(int64_t(g.invars.size() + k)) +
         "]);\n";
    if (kept == rank) continue;
    auto r = reduction_of(*producer_in(g, g.outvars[k].var().get()));
    s += "  " + r->acc_type + " acc" + K + " = " + r->identity + ";\n";
    acc_init += "acc" + K + " = " + r->identity + "; ";
    std::string flat;
    int64_t stride = 1;
    for (size_t d = kept; d-- > 0;) {
      flat = "i" + str(int64_t(d)) + (stride != 1 ? " * " + str(stride) : "") + (flat.empty() ? "" : " + " + flat);
      stride *= domain[d];
    }
    acc_store += "out" + K + "[" + (flat.empty() ? "0" : flat) + "] = " + t + "(acc" + K + "); ";
  }
  if (rank == 0) return s + "  (void)r0;\n  (void)r1;\n  {\n" + generic + "  }\n}\n";
  std::string params, args;
  for (size_t d = 0; d < rank; ++d) {
    params += (d ? ", " : "") + std::string("int64_t i") + str(int64_t(d));
    args += (d ? ", " : "") + std::string("i") + str(int64_t(d));
  }
  s += "  auto generic = [&](" + params + ") {\n" + generic + "  };\n";
  // Outer loops over dimensions 0 .. rank-2 (the first restricted to [r0, r1)); the last
  // dimension is split into edge / interior / edge segments when the outer indices are in
  // the interior box, where the specialised body runs.
  int indent = 2;
  if (kept == 0) s += ind(indent) + acc_init + "\n";
  std::string inside;
  for (size_t d = 0; d < outer; ++d) {
    const std::string i = "i" + str(int64_t(d));
    s += loop_header(domain, d, indent);
    indent += 2;
    if (d + 1 == kept) s += ind(indent) + acc_init + "\n";
    inside += (inside.empty() ? "" : " && ") + std::string("(") + i + " >= " + str(lo[d]) + " && " + i + " < " +
              str(hi[d]) + ")";
  }
  const size_t last = rank - 1;
  const std::string il = "i" + str(int64_t(last));
  const std::string a = outer == 0 ? "r0" : "0", b = outer == 0 ? "r1" : str(domain[last]);
  auto loop = [&](const std::string& from, const std::string& to, const std::string& body, bool vector) {
    return (vector ? "#pragma GCC ivdep\n" : "") + ind(indent + 2) + "for (int64_t " + il + " = " + from + "; " + il +
           " < " + to + "; ++" + il + ") " + body;
  };
  if (outer == 0) {
    // The loop over the rows is the vectorized one: its interior segment starts and ends at
    // multiples of kRowAlignment, so that calls starting at such multiples group the same
    // elements into vector lanes however the rows are split between them.
    const int64_t A = kRowAlignment;
    lo[last] = (lo[last] + A - 1) / A * A;
    hi[last] = std::max(lo[last], lo[last] + (hi[last] - lo[last]) / A * A);
  }
  const std::string L = str(lo[last]), H = str(hi[last]), call = "generic(" + args + ");\n";
  const std::string from = "std::max<int64_t>(" + a + ", " + L + ")", to = "std::min<int64_t>(" + b + ", " + H + ")";
  const LoopMaker interior_loop = [&](BodyEmitter::Quotients q, std::vector<BodyEmitter::Hoisted>* hoisted) {
    BodyEmitter body(g, lo, hi, nullptr);
    body.mask_rows(masked);
    body.quotients(q, "qb_", indent + 8);
    const std::string special = body.emit(2 * int(rank) + 6);
    std::string s = loop(from, to, "{\n" + special + ind(indent + 2) + "}\n", true);
    if (kept < rank && has_lanes(g)) {
      BodyEmitter lanes(g, lo, hi, nullptr);
      lanes.mask_rows(masked);
      lanes.fold_into_lanes();
      lanes.quotients(q, "ql_", indent + 8);
      s = lane_loop(g, il, from, to, lanes.emit(indent + 8), special, indent + 2);
      if (hoisted) hoisted->push_back(lanes.hoisted());
    }
    if (hoisted) hoisted->push_back(body.hoisted());
    return s;
  };
  // Rank 1: the loop is over the rows, so a value invariant along it is one for the call.
  const std::string interior = versioned_loop(interior_loop, from + " < " + to, indent + 2);
  auto edge = [&](int side) { return edge_body[side].empty() ? call : "{\n" + edge_body[side] + ind(indent + 2) + "}\n"; };
  std::string segments = loop(a, "std::min<int64_t>(" + b + ", " + L + ")", edge(0), false) + interior +
                         loop("std::max<int64_t>(" + a + ", " + H + ")", b, edge(1), false);
  if (inside.empty()) {
    s += segments;
  } else {
    s += ind(indent) + "if (" + inside + ") {\n" + segments;
    for (const auto& [band, body] : row_band_body)  // the edge columns stay generic: a few points
      s += ind(indent) + "} else if (i0 >= " + str(band.first) + " && i0 < " + str(band.second) + ") {\n" +
           loop(a, "std::min<int64_t>(" + b + ", " + L + ")", call, false) +
           loop(from, to, "{\n" + body + ind(indent + 2) + "}\n", true) +
           loop("std::max<int64_t>(" + a + ", " + H + ")", b, call, false);
    s += ind(indent) + "} else {\n" + loop(a, b, call, false) + ind(indent) + "}\n";
  }
  for (size_t d = outer; d-- > 0;) {
    if (d + 1 == kept) s += ind(indent) + acc_store + "\n";
    indent -= 2;
    s += ind(indent) + "}\n";
  }
  if (kept == 0) s += ind(indent) + acc_store + "\n";
  return s + "}\n";
}

}  // namespace tessel::compiler
