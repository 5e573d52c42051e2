// Sharding propagation and lowering to the per-device program (see partitioner.h).
#include "sharding/partitioner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "compiler/passes.h"
#include "core/array_impl.h"
#include "core/log.h"
#include "ir/trace.h"
#include "runtime/spmd_context.h"
#include "core/mesh_impl.h"
#include "sharding/lowering.h"
#include "sharding/reshard.h"
#include "sharding/wide_halo.h"
#include "tessel/error.h"

namespace tessel::sharding {

bool Layout::is_replicated() const {
  if (!partial.empty()) return false;
  for (auto& d : dims)
    if (!d.empty()) return false;
  return true;
}

std::string Layout::to_string() const {
  std::string r = "{";
  for (size_t d = 0; d < dims.size(); ++d) {
    r += d ? ", " : "";
    if (dims[d].empty()) r += "_";
    for (size_t k = 0; k < dims[d].size(); ++k) r += (k ? "*" : "") + dims[d][k];
  }
  for (const auto& [d, g] : grids)
    r += " | dim " + std::to_string(d) + " pieces of " + std::to_string(g.piece) + " from " + std::to_string(-g.origin);
  if (!partial.empty()) {
    r += " | partial " + std::string(ir::combine_name(partial_op)) + " over";
    for (auto& a : partial) r += " " + a;
  }
  return r + "}";
}

Layout layout_of(const Sharding& s, size_t rank) {
  s.check_rank(rank, "sharding");
  Layout l;
  for (size_t d = 0; d < rank; ++d) l.dims.push_back(s.spec()[d].axes());
  return l;
}

Sharding sharding_of_layout(const Mesh& mesh, const Layout& l) {
  size_t n = l.dims.size();
  while (n > 0 && l.dims[n - 1].empty()) --n;
  std::vector<SpecEntry> entries;
  for (size_t d = 0; d < n; ++d) entries.push_back(SpecEntry(l.dims[d]));
  return NamedSharding(mesh, PartitionSpec(std::move(entries)));
}

std::optional<Mesh> program_mesh(const ir::Program& p, const std::vector<std::optional<Mesh>>& arg_meshes,
                                 const std::string& name) {
  std::optional<Mesh> mesh;
  std::string from;
  auto take = [&](const Mesh& m, const std::string& what) {
    if (!mesh) {
      mesh = m;
      from = what;
    } else if (*mesh != m) {
      bool same_devices = mesh->devices() == m.devices();
      throw ValueError(name + ": " + from + " uses " + mesh->to_string() + " but " + what + " uses " + m.to_string() +
                       (same_devices ? " (the same devices arranged differently)" : " over other devices") +
                       "; a program works on one mesh: lay out every argument and sharding over the same mesh "
                       "(device_put the arguments first)");
    }
  };
  for (size_t i = 0; i < arg_meshes.size(); ++i)
    if (arg_meshes[i]) take(*arg_meshes[i], "argument " + std::to_string(i));
  // Equations here and in nested programs (loop bodies, branches, calls).
  std::function<void(const ir::Program&)> visit = [&](const ir::Program& q) {
    for (const auto& e : q.eqns) {
      if (e.prim->spmd && e.prim->spmd->mesh)
        if (auto m = e.prim->spmd->mesh(e.params)) take(*m, e.prim->name);
      ir::for_each_program(e.params, visit);
    }
  };
  visit(p);
  return mesh;
}

// ---- propagation ----

ir::ShardingRule rule_for(const ir::Equation& e, std::span<const Aval> ins, std::span<const Aval> outs) {
  ir::ShardingRule r;
  if (e.prim->sharding_rule) {
    r = e.prim->sharding_rule(ins, outs, e.params);
    bool ok = r.operands.size() == ins.size() && r.results.size() == outs.size();
    for (size_t i = 0; ok && i < ins.size(); ++i) ok = r.operands[i].size() == ins[i].shape.size();
    for (size_t i = 0; ok && i < outs.size(); ++i) ok = r.results[i].size() == outs[i].shape.size();
    if (!ok) throw Error("internal: the sharding rule of '" + e.prim->name + "' does not match its operands' ranks");
    return r;
  }
  for (const Aval& a : ins) r.operands.push_back(std::vector<int>(a.shape.size(), ir::kWhole));
  for (const Aval& a : outs) r.results.push_back(std::vector<int>(a.shape.size(), ir::kWhole));
  return r;
}

std::vector<Aval> in_avals(const ir::Equation& e) {
  std::vector<Aval> r;
  for (auto& a : e.inputs) r.push_back(a.aval());
  return r;
}
std::vector<Aval> out_avals(const ir::Equation& e) {
  std::vector<Aval> r;
  for (auto& v : e.outputs) r.push_back(v->aval);
  return r;
}

namespace {

// The mesh axes of each factor of an equation, from the layouts of its operands and
// results: constraints on results first, then constraints and layouts of operands, then
// what the results' users want. Reduction factors are decided first, so a contraction over
// a split dimension stays local (its partial result is combined later, by reduce-scatter
// when the result is split over the same axes). An axis splits one factor only, and a
// factor with a divisor (ShardingRule::divides) takes only axes whose pieces divide it.
std::vector<Axes> assign_factors(const ir::ShardingRule& rule, const std::vector<const Hint*>& operands,
                                 const std::vector<const Hint*>& results, const Mesh& mesh,
                                 std::span<const Aval> ins, std::span<const Aval> outs) {
  size_t nf = rule.factors.size();
  struct Candidate {
    Axes axes;
    int priority;
    size_t bytes;  // of the value that has this layout: what taking another layout would move
  };
  std::vector<std::vector<Candidate>> cands(nf);
  auto collect = [&](const std::vector<std::vector<int>>& dims, const std::vector<const Hint*>& hints,
                     std::span<const Aval> avals, bool result) {
    for (size_t i = 0; i < dims.size(); ++i) {
      const Hint* h = hints[i];
      if (!h || !h->known) continue;
      for (size_t d = 0; d < dims[i].size(); ++d) {
        int f = dims[i][d];
        if (f < 0 || h->dims[d].empty()) continue;
        int prio = result ? (h->fixed ? 3 : 0) : (h->fixed ? 2 : 1);
        cands[size_t(f)].push_back({h->dims[d], prio, avals[i].nbytes()});
      }
    }
  };
  collect(rule.operands, operands, ins, false);
  collect(rule.results, results, outs, true);
  std::vector<size_t> order(nf);
  for (size_t f = 0; f < nf; ++f) order[f] = f;
  // A factor's strongest candidate, and of those the largest value: factors compete for
  // mesh axes in that order, so a conflict moves the smaller values.
  auto best = [&](size_t f) {
    std::pair<int, size_t> b{-1, 0};
    for (auto& c : cands[f]) b = std::max(b, std::pair<int, size_t>{c.priority, c.bytes});
    return b;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    bool ra = rule.factors[a] != ir::Combine::kNone, rb = rule.factors[b] != ir::Combine::kNone;
    if (ra != rb) return ra;
    return best(a) > best(b);
  });
  std::vector<Axes> out(nf);
  Axes used;
  ir::Combine reduction = ir::Combine::kNone;
  for (size_t f : order) {
    auto& cs = cands[f];
    // Of equally strong candidates, the layout of the largest value: the others, which move
    // to it, are smaller, so the plan moves the fewest bytes.
    std::stable_sort(cs.begin(), cs.end(), [](const Candidate& a, const Candidate& b) {
      return a.priority != b.priority ? a.priority > b.priority : a.bytes > b.bytes;
    });
    if (rule.factors[f] != ir::Combine::kNone && reduction != ir::Combine::kNone && rule.factors[f] != reduction)
      continue;  // partial results combine one way only
    const int64_t divisor = rule.divisor(f);
    for (auto& c : cs) {
      Axes take;
      int64_t pieces = 1;
      for (auto& a : c.axes) {
        if (std::find(used.begin(), used.end(), a) != used.end()) break;
        if (divisor > 0 && divisor % (pieces * mesh.axis_size(a)) != 0) break;  // pieces must line up
        pieces *= mesh.axis_size(a);
        take.push_back(a);
      }
      if (take.empty()) continue;
      out[f] = take;
      used.insert(used.end(), take.begin(), take.end());
      if (rule.factors[f] != ir::Combine::kNone) reduction = rule.factors[f];
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<Axes> project(const std::vector<int>& dims, const std::vector<Axes>& factors) {
  std::vector<Axes> r;
  for (int f : dims) r.push_back(f >= 0 ? factors[size_t(f)] : Axes{});
  return r;
}

namespace {

// The layout suggested to operand i: its factors' axes, except that a permutation factor's
// axes are not suggested to an operand smaller than the result along it (a concatenated
// part, a windowed update, the values a pad surrounds). Held whole, such an operand is
// windowed on every device without communication; split, its few rows would sit on pieces
// far from the positions that read them.
std::vector<Axes> operand_suggestion(const ir::ShardingRule& rule, size_t i, const std::vector<Axes>& factors,
                                     std::span<const Aval> ins, std::span<const Aval> outs) {
  std::vector<Axes> dims = project(rule.operands[i], factors);
  for (size_t d = 0; d < dims.size(); ++d) {
    const int f = rule.operands[i][d];
    if (f < 0 || !rule.permutation(size_t(f))) continue;
    for (size_t j = 0; j < rule.results.size(); ++j)
      for (size_t rd = 0; rd < rule.results[j].size(); ++rd)
        if (rule.results[j][rd] == f && ins[i].shape[d] < outs[j].shape[rd]) dims[d].clear();
  }
  return dims;
}

bool uses_axis(const std::vector<Axes>& dims, const std::string& a) {
  for (auto& d : dims)
    if (std::find(d.begin(), d.end(), a) != d.end()) return true;
  return false;
}

class Propagator {
 public:
  Propagator(const ir::Program& p, const Mesh& mesh) : p_(p), mesh_(mesh) {}

  Hints run(const std::vector<std::optional<Layout>>& inputs) {
    for (size_t i = 0; i < p_.invars.size(); ++i)
      if (i < inputs.size() && inputs[i]) hints_[p_.invars[i].get()] = Hint{inputs[i]->dims, true, true};
    for (auto& v : p_.constvars) hints_[v.get()] = Hint{std::vector<Axes>(v->aval.shape.size()), true, true};
    for (int iter = 0; iter < 16; ++iter) {
      changed_ = false;
      for (auto& e : p_.eqns) visit(e);
      for (auto it = p_.eqns.rbegin(); it != p_.eqns.rend(); ++it) visit(*it);
      if (!changed_) break;
    }
    return std::move(hints_);
  }

 private:
  const Hint* hint(const ir::Atom& a) {
    if (a.is_literal()) return nullptr;
    auto it = hints_.find(a.var().get());
    return it == hints_.end() ? nullptr : &it->second;
  }
  Hint& slot(const ir::Var& v) {
    Hint& h = hints_[v.get()];
    if (h.dims.size() != v->aval.shape.size()) h.dims.resize(v->aval.shape.size());
    return h;
  }
  // Suggests `dims` for v: fills dimensions that have no axes yet, never overriding a constraint.
  void suggest(const ir::Var& v, const std::vector<Axes>& dims, bool fixed) {
    Hint& h = slot(v);
    if (h.fixed) return;
    if (fixed) {
      h = Hint{dims, true, true};
      changed_ = true;
      return;
    }
    if (!h.known) {
      h.known = true;
      changed_ = true;
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!h.dims[d].empty() || dims[d].empty()) continue;
      bool clash = false;
      for (auto& a : dims[d]) clash |= uses_axis(h.dims, a);
      if (clash) continue;
      h.dims[d] = dims[d];
      changed_ = true;
    }
  }

  void visit(const ir::Equation& e) {
    std::vector<Aval> ins = in_avals(e), outs = out_avals(e);
    if (e.prim->spmd) return visit_spmd(e, ins, outs);
    if (e.prim->regions) return visit_nested(e);
    ir::ShardingRule rule = rule_for(e, ins, outs);
    std::vector<const Hint*> oh, rh;
    bool any_known = false;
    for (auto& a : e.inputs) {
      oh.push_back(hint(a));
      any_known |= oh.back() && oh.back()->known;
    }
    for (auto& v : e.outputs) {
      rh.push_back(hint(ir::Atom(v)));
      any_known |= rh.back() && rh.back()->known;
    }
    if (!any_known) return;
    std::vector<Axes> factors = assign_factors(rule, oh, rh, mesh_, ins, outs);
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (!e.inputs[i].is_literal()) suggest(e.inputs[i].var(), operand_suggestion(rule, i, factors, ins, outs), false);
    for (size_t j = 0; j < e.outputs.size(); ++j) suggest(e.outputs[j], project(rule.results[j], factors), false);
  }

  // Forwards only: the results of a loop or cond take the layouts its regions give them.
  void visit_nested(const ir::Equation& e) {
    std::vector<const Hint*> oh;
    bool any_known = false;
    for (auto& a : e.inputs) {
      oh.push_back(hint(a));
      any_known |= oh.back() && oh.back()->known;
    }
    if (!any_known) return;
    auto res = propagate_nested(e, mesh_, oh);
    for (size_t j = 0; j < res.size(); ++j)
      if (res[j]) suggest(e.outputs[j], *res[j], false);
  }

  void visit_spmd(const ir::Equation& e, std::span<const Aval> ins, std::span<const Aval> outs) {
    const ir::SpmdRules& r = *e.prim->spmd;
    auto as_sharding = [&](const Hint* h) -> std::optional<Sharding> {
      if (!h || !h->known) return std::nullopt;
      return sharding_of_layout(mesh_, Layout{h->dims, {}, ir::Combine::kNone});
    };
    if (r.infer) {
      std::vector<std::optional<Sharding>> known;
      for (auto& a : e.inputs) known.push_back(as_sharding(hint(a)));
      auto res = r.infer(mesh_, known, ins, outs, e.params);
      for (size_t j = 0; j < res.size() && j < e.outputs.size(); ++j)
        if (res[j]) suggest(e.outputs[j], layout_of(*res[j], outs[j].shape.size()).dims, true);
    }
    if (r.propagate_user) {
      std::vector<std::optional<Sharding>> wanted;
      for (auto& v : e.outputs) wanted.push_back(as_sharding(hint(ir::Atom(v))));
      auto res = r.propagate_user(mesh_, wanted, ins, outs, e.params);
      for (size_t i = 0; i < res.size() && i < e.inputs.size(); ++i)
        if (res[i] && !e.inputs[i].is_literal()) suggest(e.inputs[i].var(), layout_of(*res[i], ins[i].shape.size()).dims, false);
    }
  }

  const ir::Program& p_;
  const Mesh& mesh_;
  Hints hints_;
  bool changed_ = false;
};

}  // namespace

Hints propagate(const ir::Program& p, const Mesh& mesh, const std::vector<std::optional<Layout>>& inputs) {
  return Propagator(p, mesh).run(inputs);
}

// ---- lowering ----

namespace {

// `to` splits every dimension at least as finely as `from`, with `from`'s axes first: each
// device's piece of `to` lies inside its piece of `from`, so resharding is local slicing.
bool slices_locally(const Layout& from, const Layout& to) {
  if (!from.partial.empty() || !to.partial.empty() || from.dims.size() != to.dims.size() || !from.grids.empty() ||
      !to.grids.empty())
    return false;
  for (size_t d = 0; d < from.dims.size(); ++d)
    if (to.dims[d].size() < from.dims[d].size() || !std::equal(from.dims[d].begin(), from.dims[d].end(), to.dims[d].begin()))
      return false;
  return true;
}

}  // namespace

Shape local_dims_shape(const Mesh& mesh, const std::vector<Axes>& dims, const Shape& global) {
  Shape s = global;
  for (size_t d = 0; d < s.size(); ++d) s[d] = detail::piece_size(s[d], detail::axes_size(mesh, dims[d]));
  return s;
}

Grid grid_of(const Layout& l, size_t d, int64_t n, const Mesh& mesh) {
  auto it = l.grids.find(d);
  if (it != l.grids.end()) return it->second;
  return Grid{detail::piece_size(n, detail::axes_size(mesh, l.dims[d])), 0};
}

void set_grid(Layout& l, size_t d, Grid g, int64_t n, const Mesh& mesh) {
  l.grids.erase(d);
  if (!(g == grid_of(l, d, n, mesh))) l.grids[d] = g;
}

Layout canonical(Layout l) {
  l.grids.clear();
  return l;
}

Shape local_shape(const Mesh& mesh, const Layout& l, const Shape& global) {
  Shape s = local_dims_shape(mesh, l.dims, global);
  for (const auto& [d, g] : l.grids) s[d] = g.piece;
  return s;
}

std::vector<Array> Lowerer::run(std::span<const Array> args, const std::vector<Layout>& in_layouts,
                                const std::vector<std::optional<Layout>>& out_layouts_wanted) {
  for (size_t i = 0; i < p_.invars.size(); ++i) env_[p_.invars[i].get()] = Local{args[i], in_layouts[i]};
  for (size_t i = 0; i < p_.constvars.size(); ++i)
    env_[p_.constvars[i].get()] = Local{p_.consts[i], Layout{std::vector<Axes>(p_.consts[i].shape().size()), {}, {}}};
  // A program whose windows all read along one split dimension: one exchange of every halo,
  // then each device computes on its extended piece (wide_halo.cpp). Only where the
  // outputs take the layouts propagation chose for them.
  auto whole = [this](const ir::Equation& e, const std::vector<Array>& ins) {
    auto replicated = [](const Aval& a) { return Layout{std::vector<Axes>(a.shape.size()), {}, ir::Combine::kNone}; };
    for (size_t i = 0; i < e.inputs.size(); ++i)
      if (!e.inputs[i].is_literal()) env_[e.inputs[i].var().get()] = Local{ins[i], replicated(e.inputs[i].aval())};
    lower(e);
    std::vector<Array> outs;
    for (const ir::Var& v : e.outputs) outs.push_back(to_layout(ir::Atom(v), replicated(v->aval)));
    return outs;
  };
  if (std::optional<WideHaloResult> w =
          lower_wide_halo(p_, mesh_, position_, args, in_layouts, out_layouts_wanted, whole)) {
    bool agree = true;
    for (size_t j = 0; j < p_.outvars.size() && agree; ++j)
      if (j >= out_layouts_wanted.size() || !out_layouts_wanted[j])
        agree = p_.outvars[j].is_literal() || wanted(p_.outvars[j].var()).dims == w->out_layouts[j].dims;
    if (agree) {
      out_layouts = w->out_layouts;
      return w->outputs;
    }
  }
  deferred_.clear();
  defer_window_feeders(*this);
  for (auto& e : p_.eqns) lower(e);
  std::vector<Array> outs;
  out_layouts.clear();
  for (size_t j = 0; j < p_.outvars.size(); ++j) {
    const ir::Atom& a = p_.outvars[j];
    Local l = get(a);
    const std::optional<Layout> want = j < out_layouts_wanted.size() ? out_layouts_wanted[j] : std::nullopt;
    if (want && !a.is_literal()) {
      l.value = to_layout(a, *want);
      l.layout = *want;
    } else if (want) {  // a literal output: every device holds it whole
      l.layout = *want;
      l.value = reshard(l.value, Layout{}, *want, a.aval().shape, mesh_);
    } else if (!l.layout.partial.empty() || !l.layout.grids.empty()) {
      // Through to_layout: shared with other users, and between outputs. Outside the
      // partitioner pieces are canonical.
      l.layout = Layout{l.layout.dims, {}, ir::Combine::kNone};
      l.value = to_layout(a, l.layout);
    }
    outs.push_back(l.value);
    out_layouts.push_back(l.layout);
  }
  return outs;
}

Local Lowerer::get(const ir::Atom& a) const {
  if (a.is_literal()) return Local{detail::scalar_array(a.literal(), a.aval().weak_type), Layout{}};
  return env_.at(a.var().get());
}

const Hint* Lowerer::hint(const ir::Atom& a) const {
  if (a.is_literal()) return nullptr;
  auto it = hints_.find(a.var().get());
  return it == hints_.end() ? nullptr : &it->second;
}

Layout Lowerer::wanted(const ir::Var& v) const {
  const Hint* h = hint(ir::Atom(v));
  Layout l;
  l.dims = h && h->known ? h->dims : std::vector<Axes>(v->aval.shape.size());
  return l;
}

// A value resharded for several users (equations, the program's outputs) is resharded once
// per layout (collectives are effects, so CSE would not merge repeated ones). The memo is
// this program's: a nested program is partitioned by a Lowerer of its own, and the values
// of one trace never leak into another.
Array Lowerer::to_layout(const ir::Atom& a, const Layout& want) {
  Local l = get(a);
  if (a.is_literal() || l.layout == want) return l.value;
  auto key = std::make_pair(a.var().get(), want.to_string());
  auto it = resharded_.find(key);
  if (it != resharded_.end()) return it->second.value;
  // A layout this value already has elsewhere in the program, from which `want` is only
  // local slicing, saves a collective: a value gathered for one user is sliced for another.
  for (auto s = resharded_.lower_bound(std::make_pair(a.var().get(), std::string())); s != resharded_.end() &&
                                                                                     s->first.first == a.var().get();
       ++s)
    if (slices_locally(s->second.layout, want)) {
      l = s->second;
      break;
    }
  Array r = relayout(l.value, l.layout, want, a.aval().shape);
  resharded_.emplace(key, Local{r, want});
  return r;
}

// Grids change by realigning pieces between neighbours; everything else by the reshard
// planner, which knows canonical pieces only.
Array Lowerer::relayout(const Array& x, const Layout& from, const Layout& to, const Shape& global) {
  if (from.dims == to.dims && from.partial.empty() && to.partial.empty()) return realign(*this, x, from, to, global);
  if (!from.grids.empty() && !from.partial.empty())
    throw Error("internal: a partial per-device value " + from.to_string() + " has non-canonical pieces");
  Array r = from.grids.empty() ? x : realign(*this, x, from, canonical(from), global);
  r = reshard(r, canonical(from), canonical(to), global, mesh_);
  return to.grids.empty() ? r : realign(*this, r, canonical(to), to, global);
}

const ir::Equation* Lowerer::deferred(const ir::Atom& a) const {
  if (a.is_literal()) return nullptr;
  auto it = deferred_.find(a.var().get());
  return it == deferred_.end() ? nullptr : it->second;
}

// Keyed by the source's identity; the entry holds the source, so that its address is not
// reused by another value while the program is lowered.
Array Lowerer::derived(const Array& from, const std::string& key, const std::function<Array()>& make) {
  auto k = std::make_pair(static_cast<const void*>(from.impl().get()), key);
  auto it = derived_.find(k);
  if (it == derived_.end()) it = derived_.emplace(k, std::make_pair(from, make())).first;
  return it->second.second;
}

void Lowerer::lower_deferred(const ir::Atom& a) {
  const ir::Equation* e = deferred(a);
  if (!e) return;
  deferred_.erase(a.var().get());
  lower(*e);
}

void Lowerer::lower(const ir::Equation& e) {
  if (!e.outputs.empty() && deferred(ir::Atom(e.outputs[0]))) return;  // its user lowers it (halo.cpp)
  if (e.prim->spmd) return lower_spmd(e);
  if (e.prim->regions) return lower_nested(*this, e);
  std::vector<Aval> ins = in_avals(e), outs = out_avals(e);
  ir::ShardingRule rule = rule_for(e, ins, outs);
  std::vector<const Hint*> oh, rh;
  for (auto& a : e.inputs) oh.push_back(hint(a));
  for (auto& v : e.outputs) rh.push_back(hint(ir::Atom(v)));
  std::vector<Axes> factors = assign_factors(rule, oh, rh, mesh_, ins, outs);
  if (lower_window(*this, e, rule, factors)) return;  // split permutation factors: halo.cpp
  for (auto& a : e.inputs) lower_deferred(a);
  if (detail::info_logging()) log_fallbacks(e, rule, factors);

  const std::map<size_t, Grid> grids = factor_grids(e, rule, factors);
  auto layout = [&](const std::vector<int>& dims, const Shape& shape) {
    Layout r{project(dims, factors), {}, ir::Combine::kNone};
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] >= 0 && grids.count(size_t(dims[d])) && !r.dims[d].empty())
        set_grid(r, d, grids.at(size_t(dims[d])), shape[d], mesh_);
    return r;
  };
  std::vector<Array> local_ins;
  std::vector<Aval> local_in_avals;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    Array x = to_layout(e.inputs[i], layout(rule.operands[i], ins[i].shape));
    // Padding of a split dimension must not take part in a reduction over it.
    for (size_t d = 0; d < rule.operands[i].size(); ++d) {
      int f = rule.operands[i][d];
      if (f < 0 || factors[size_t(f)].empty() || rule.factors[size_t(f)] == ir::Combine::kNone) continue;
      int64_t n = ins[i].shape[d];
      if (n % detail::axes_size(mesh_, factors[size_t(f)]) != 0)
        x = mask_padding(x, int64_t(d), factors[size_t(f)], n, mesh_, rule.factors[size_t(f)]);
    }
    local_ins.push_back(x);
    local_in_avals.push_back(x.aval());
  }
  std::vector<Layout> out_layouts;
  std::vector<Aval> local_outs;
  for (size_t j = 0; j < outs.size(); ++j) {
    out_layouts.push_back(layout(rule.results[j], outs[j].shape));
    local_outs.push_back(Aval(local_shape(mesh_, out_layouts[j], outs[j].shape), outs[j].dtype, outs[j].weak_type));
  }
  ir::Params params = e.prim->localize ? e.prim->localize(e.params, local_in_avals, local_outs) : e.params;
  std::vector<Array> res = detail::bind(*e.prim, local_ins, params);
  Layout partial;
  for (size_t f = 0; f < factors.size(); ++f)
    if (rule.factors[f] != ir::Combine::kNone && !factors[f].empty()) {
      partial.partial.insert(partial.partial.end(), factors[f].begin(), factors[f].end());
      partial.partial_op = rule.factors[f];
    }
  for (size_t j = 0; j < outs.size(); ++j) {
    if (res[j].shape() != local_outs[j].shape)
      throw Error("internal: partitioning '" + e.prim->name + "' gave a per-device result of shape " +
                  shape_to_string(res[j].shape()) + ", expected " + shape_to_string(local_outs[j].shape) +
                  " (its sharding rule and localize disagree)");
    out_layouts[j].partial = partial.partial;
    out_layouts[j].partial_op = partial.partial_op;
    env_[e.outputs[j].get()] = Local{res[j], out_layouts[j]};
  }
}

// A split factor that every operand and result has at one size (not a window's, not a
// contraction's) takes the grid most of the operands split that way have (canonical on a
// tie): element-wise work on windows stays on the windows' pieces, and the other operands
// realign to them. An equation with partial results keeps canonical pieces (partial values
// never move between pieces).
std::map<size_t, Grid> Lowerer::factor_grids(const ir::Equation& e, const ir::ShardingRule& rule,
                                             const std::vector<Axes>& factors) const {
  std::map<size_t, Grid> grids;
  for (size_t f = 0; f < factors.size(); ++f)
    if (!factors[f].empty() && rule.factors[f] != ir::Combine::kNone) return grids;
  std::map<size_t, int64_t> size;  // per split factor: its size, -1 where operands and results differ
  auto note = [&](const std::vector<int>& dims, const Shape& shape) {
    for (size_t d = 0; d < dims.size(); ++d) {
      const int f = dims[d];
      if (f < 0 || factors[size_t(f)].empty()) continue;
      auto [it, fresh] = size.try_emplace(size_t(f), shape[d]);
      if (!fresh && it->second != shape[d]) it->second = -1;
    }
  };
  for (size_t i = 0; i < e.inputs.size(); ++i) note(rule.operands[i], e.inputs[i].aval().shape);
  for (size_t j = 0; j < e.outputs.size(); ++j) note(rule.results[j], e.outputs[j]->aval.shape);
  for (const auto& [f, n] : size) {
    if (n < 0 || rule.permutation(f)) continue;
    std::vector<std::pair<Grid, int>> votes;  // in operand order
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (e.inputs[i].is_literal()) continue;
      const Layout& have = env_.at(e.inputs[i].var().get()).layout;
      for (size_t d = 0; d < rule.operands[i].size(); ++d) {
        if (rule.operands[i][d] != int(f) || !have.partial.empty() || have.dims[d] != factors[f]) continue;
        const Grid g = grid_of(have, d, n, mesh_);
        auto it = std::find_if(votes.begin(), votes.end(), [&](const auto& v) { return v.first == g; });
        if (it == votes.end()) votes.emplace_back(g, 1);
        else ++it->second;
      }
    }
    const Grid canonical_grid{detail::piece_size(n, detail::axes_size(mesh_, factors[f])), 0};
    const std::pair<Grid, int>* best = nullptr;
    for (const auto& v : votes)
      if (!best || v.second > best->second || (v.second == best->second && v.first == canonical_grid)) best = &v;
    if (best && !(best->first == canonical_grid)) grids[f] = best->first;
  }
  return grids;
}

std::string axes_text(const Axes& axes) {
  std::string r;
  for (size_t k = 0; k < axes.size(); ++k) r += (k == 0 ? "" : k + 1 == axes.size() ? " and " : ", ") + axes[k];
  return r;
}

// Never silently: one info line per reason an equation is computed on gathered operands
// (a dimension its rule keeps whole, or no rule at all), naming the operands it gathers.
// Gathers that resolve conflicts between layouts are choices, not fallbacks, and are not
// reported.
void Lowerer::log_fallbacks(const ir::Equation& e, const ir::ShardingRule& rule, const std::vector<Axes>& factors) {
  std::vector<std::pair<std::string, std::string>> lines;  // reason, operands gathered; in order
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (e.inputs[i].is_literal()) continue;
    const Layout& have = env_.at(e.inputs[i].var().get()).layout;
    const Shape& global = e.inputs[i].aval().shape;
    for (size_t d = 0; d < rule.operands[i].size(); ++d) {
      const int f = rule.operands[i][d];
      if (have.dims[d].empty()) continue;
      std::string along = e.prim->name + " along dimension " + std::to_string(d) + " split over " + axes_text(have.dims[d]);
      std::string reason;
      if (f >= 0) {  // a factor whose divisor the pieces miss (a reshape's merged dimension)
        const int64_t divisor = rule.divisor(size_t(f)), pieces = detail::axes_size(mesh_, have.dims[d]);
        if (divisor == 0 || divisor % pieces == 0 || factors[size_t(f)] == have.dims[d]) continue;
        reason = along + ": " + std::to_string(pieces) + " pieces do not divide " + std::to_string(divisor) +
                 ", the size its pieces must line up with";
      } else {
        reason = e.prim->sharding_rule ? along + ": no partitioned form"
                                       : e.prim->name + ": no partitioned form (computed whole on every device)";
      }
      Aval gathered(local_dims_shape(mesh_, project(rule.operands[i], factors), global), e.inputs[i].aval().dtype);
      std::string operand = "operand " + std::to_string(i) + " " + have.to_string() + " into " + gathered.to_string() +
                            " (" + detail::bytes_text(int64_t(gathered.nbytes())) + " per device)";
      auto it = std::find_if(lines.begin(), lines.end(), [&](auto& l) { return l.first == reason; });
      if (it == lines.end()) {
        lines.emplace_back(reason, operand);
      } else if (it->second.find("operand " + std::to_string(i) + " ") == std::string::npos) {
        it->second += ", " + operand;
      }
    }
  }
  for (auto& [reason, operands] : lines)
    TESSEL_INFO_LOG("partition '" + p_.name + "': " + reason + "; gathering " + operands);
}

namespace {

// What a self-partitioning primitive sees of the lowering.
class Builder final : public ir::SpmdBuilder {
 public:
  Builder(Lowerer& l, const ir::Equation& e) : l_(l), e_(e) {}
  const Mesh& mesh() const override { return l_.mesh(); }
  Sharding operand_sharding(size_t i) const override {
    check(i, e_.inputs.size(), "operand");
    const ir::Atom& a = e_.inputs[i];
    if (a.is_literal()) return replicated_sharding();
    Layout l = l_.get(a).layout;
    if (!l.partial.empty()) l = l_.wanted(a.var());
    return sharding_of_layout(l_.mesh(), l);
  }
  Sharding result_sharding(size_t j) const override {
    check(j, e_.outputs.size(), "result");
    return sharding_of_layout(l_.mesh(), l_.wanted(e_.outputs[j]));
  }
  Array operand(size_t i, const Sharding& s) override {
    check(i, e_.inputs.size(), "operand");
    return l_.to_layout(e_.inputs[i], layout_for(s, e_.inputs[i].aval()));
  }
  void set_result(size_t j, const Array& local, const Sharding& s) override {
    check(j, e_.outputs.size(), "result");
    const Aval& global = e_.outputs[j]->aval;
    Layout l = layout_for(s, global);
    Shape want = local_dims_shape(l_.mesh(), l.dims, global.shape);
    if (local.shape() != want || local.dtype() != global.dtype)
      throw ValueError(e_.prim->name + ": the per-device result " + std::to_string(j) + " is " + local.aval().to_string() +
                       " but result " + std::to_string(j) + " (" + global.to_string() + ") laid out by " + s.to_string() +
                       " needs " + Aval(want, global.dtype).to_string() + " on each device; return per-device pieces of that shape");
    l_.set(e_.outputs[j], Local{local, l});
  }

 private:
  Sharding replicated_sharding() const { return detail::replicated_sharding(l_.mesh()); }
  Layout layout_for(const Sharding& s, const Aval& a) const {
    if (!s.valid()) throw ValueError(e_.prim->name + ": a sharding is empty (default-constructed)");
    if (s.is_single_device() || s.mesh().devices() != l_.mesh().devices())
      throw ValueError(e_.prim->name + ": the sharding " + s.to_string() + " is not over the program's mesh " +
                       l_.mesh().to_string() + "; use NamedSharding(mesh, spec) with the program's mesh");
    s.check_rank(a.shape.size(), e_.prim->name);
    Layout l = layout_of(s, a.shape.size());
    if (s.mesh() != l_.mesh()) l = layout_of(NamedSharding(l_.mesh(), s.spec()), a.shape.size());
    return l;
  }
  void check(size_t i, size_t n, const char* what) const {
    if (i >= n)
      throw IndexError(e_.prim->name + ": " + what + " " + std::to_string(i) + " does not exist (there are " +
                       std::to_string(n) + ")");
  }
  Lowerer& l_;
  const ir::Equation& e_;
};

}  // namespace

void Lowerer::lower_spmd(const ir::Equation& e) {
  Builder b(*this, e);
  e.prim->spmd->partition(b, in_avals(e), out_avals(e), e.params);
  for (size_t j = 0; j < e.outputs.size(); ++j)
    if (!env_.count(e.outputs[j].get()))
      throw Error("internal: partitioning '" + e.prim->name + "' set no value for result " + std::to_string(j));
}

std::vector<Layout> choose_input_layouts(const ir::Program& p, const Mesh& mesh,
                                         const std::vector<std::optional<Layout>>& known) {
  Hints hints = propagate(p, mesh, known);
  std::vector<Layout> r;
  for (size_t i = 0; i < p.invars.size(); ++i) {
    if (i < known.size() && known[i]) {
      r.push_back(*known[i]);
      continue;
    }
    auto it = hints.find(p.invars[i].get());
    Layout l;
    l.dims = it != hints.end() && it->second.known ? it->second.dims : std::vector<Axes>(p.invars[i]->aval.shape.size());
    r.push_back(l);
  }
  return r;
}

std::optional<int64_t> Lowerer::known_index(const Axes& axes) const {
  if (!position_) return std::nullopt;
  return detail::piece_index(mesh_, *position_, axes);
}

Partitioned partition(const ir::Program& p, const Mesh& mesh, const std::vector<Layout>& in_layouts,
                      std::optional<int> position) {
  std::vector<std::optional<Layout>> known(in_layouts.begin(), in_layouts.end());
  Lowerer lowerer(p, mesh, propagate(p, mesh, known), position);
  std::vector<Aval> local_in;
  for (size_t i = 0; i < p.invars.size(); ++i) {
    const Aval& g = p.invars[i]->aval;
    local_in.push_back(Aval(local_dims_shape(mesh, in_layouts[i].dims, g.shape), g.dtype, g.weak_type));
  }
  ir::Program local;
  {
    detail::ScopedTraceMesh scope(&mesh);
    local = detail::trace_to_program(
        [&](std::span<const Array> args) { return lowerer.run(args, in_layouts); }, local_in, p.name);
  }
  ir::verify_program(local);
  Partitioned r;
  r.mesh = mesh;
  r.program = std::make_shared<const ir::Program>(compiler::simplify(local));
  r.in_layouts = in_layouts;
  r.out_layouts = lowerer.out_layouts;
  TESSEL_DEBUG_LOG("partitioned '" + p.name + "' over " + mesh.to_string() + ": " + std::to_string(p.eqns.size()) +
                   " equations -> " + std::to_string(r.program->eqns.size()) + " per device");
  return r;
}

}  // namespace tessel::sharding
