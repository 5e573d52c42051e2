// Stage slicing (see slicing.h).
#include "pipeline/slicing.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "compiler/passes.h"
#include "pipeline/stages.h"
#include "tessel/error.h"

namespace tessel::pipeline::detail {
namespace {

bool is_marker(const ir::Equation& e, const char* direction) {
  return e.prim == &stage_marker() && e.params.get<std::string>("direction") == direction;
}

// The segments as nodes of one microbatch's dependency graph: which may feed which.
class SegmentOrder {
 public:
  SegmentOrder(int stages, bool split) : stages_(stages), split_(split), n_(stages * (split ? 3 : 2)) {
    reach_.assign(size_t(n_ * n_), false);
    auto edge = [&](int a, int b) { reach_[size_t(a * n_ + b)] = true; };
    const TaskKind back = split ? TaskKind::backward_input : TaskKind::backward;
    for (int s = 0; s < stages; ++s) {
      if (s + 1 < stages) edge(index(TaskKind::forward, s), index(TaskKind::forward, s + 1));
      edge(index(TaskKind::forward, s), index(back, s));
      if (s > 0) edge(index(back, s), index(back, s - 1));
      if (split) edge(index(back, s), index(TaskKind::backward_weight, s));
    }
    for (int i = 0; i < n_; ++i) reach_[size_t(i * n_ + i)] = true;
    for (int k = 0; k < n_; ++k)
      for (int i = 0; i < n_; ++i)
        if (reach_[size_t(i * n_ + k)])
          for (int j = 0; j < n_; ++j)
            if (reach_[size_t(k * n_ + j)]) reach_[size_t(i * n_ + j)] = true;
  }
  int size() const { return n_; }
  int index(TaskKind k, int stage) const {
    switch (k) {
      case TaskKind::forward: return stage;
      case TaskKind::backward:
      case TaskKind::backward_input: return stages_ + stage;
      case TaskKind::backward_weight: return 2 * stages_ + stage;
    }
    return 0;
  }
  TaskKind kind(int seg) const {
    if (seg < stages_) return TaskKind::forward;
    if (seg < 2 * stages_) return split_ ? TaskKind::backward_input : TaskKind::backward;
    return TaskKind::backward_weight;
  }
  int stage(int seg) const { return seg % stages_; }
  bool ordered(int from, int to) const { return reach_[size_t(from * n_ + to)]; }

 private:
  int stages_;
  bool split_;
  int n_;
  std::vector<bool> reach_;
};

}  // namespace

std::string segment_name(TaskKind kind, int stage) {
  const char* k = kind == TaskKind::forward            ? "F"
                  : kind == TaskKind::backward         ? "B"
                  : kind == TaskKind::backward_input   ? "Bi"
                                                       : "Bw";
  return k + std::to_string(stage);
}

int StagedProgram::segment(TaskKind kind, int stage) const {
  if ((kind == TaskKind::backward) == split_backward && kind != TaskKind::forward)
    throw Error("internal: pipeline segment " + segment_name(kind, stage) + " does not exist in this slicing");
  return SegmentOrder(num_stages, split_backward).index(kind, stage);
}

StagedProgram slice_program(const ir::Program& traced, const std::vector<bool>& input_is_batch, bool split_backward) {
  const ir::Program p = compiler::inline_calls(traced);
  const StageAssignment stages = assign_stages(p);
  const int S = stages.num_stages;
  const size_t n = p.eqns.size();
  const SegmentOrder order(S, split_backward);

  std::map<const ir::VarNode*, size_t> producer;  // var -> equation
  for (size_t i = 0; i < n; ++i)
    for (const auto& o : p.eqns[i].outputs) producer[o.get()] = i;
  auto producer_of = [&](const ir::Atom& a) -> long {
    if (a.is_literal()) return -1;
    auto it = producer.find(a.var().get());
    return it == producer.end() ? -1 : long(it->second);
  };

  // Within-stage ancestor closure of `roots` into `mark`.
  auto close_over = [&](std::vector<size_t> roots, std::vector<char>& mark, const std::function<bool(size_t)>& allowed) {
    while (!roots.empty()) {
      size_t i = roots.back();
      roots.pop_back();
      if (mark[i] || !allowed(i)) continue;
      mark[i] = 1;
      for (const auto& in : p.eqns[i].inputs)
        if (long j = producer_of(in); j >= 0) roots.push_back(size_t(j));
    }
  };

  // Forward of stage s: what its outgoing marker needs; of the last stage, what the outputs
  // that no constant-only (cotangent seed) equation feeds need.
  std::vector<char> constant_fed(n, 0);
  for (size_t i = 0; i < n; ++i) {
    bool any_var = false, fed = false;
    for (const auto& in : p.eqns[i].inputs)
      if (!in.is_literal()) {
        any_var = true;
        if (long j = producer_of(in); j >= 0 && constant_fed[size_t(j)]) fed = true;
      }
    constant_fed[i] = fed || (!any_var && stages.stage_of_equation[i] == S - 1);
  }
  std::vector<char> is_forward(n, 0);
  for (int s = 0; s < S; ++s) {
    std::vector<size_t> roots;
    if (s + 1 < S) {
      for (size_t i = 0; i < n; ++i)
        if (is_marker(p.eqns[i], "forward") && stages.stage_of_equation[i] == s) roots.push_back(i);
    } else {
      for (const auto& o : p.outvars)
        if (long j = producer_of(o); j >= 0 && stages.stage_of_equation[size_t(j)] == s && !constant_fed[size_t(j)])
          roots.push_back(size_t(j));
    }
    close_over(roots, is_forward, [&](size_t i) { return stages.stage_of_equation[i] == s; });
  }
  // Input half of stage s's backward: what its outgoing backward marker needs.
  std::vector<char> is_input_half(n, 0);
  if (split_backward)
    for (size_t i = 0; i < n; ++i)
      if (is_marker(p.eqns[i], "backward")) {
        const int s = stages.stage_of_equation[i];
        close_over({i}, is_input_half, [&](size_t k) { return stages.stage_of_equation[k] == s && !is_forward[k]; });
      }
  std::vector<int> seg_of(n);
  for (size_t i = 0; i < n; ++i) {
    const int s = stages.stage_of_equation[i];
    TaskKind k = is_forward[i]        ? TaskKind::forward
                 : !split_backward    ? TaskKind::backward
                 : is_input_half[i]   ? TaskKind::backward_input
                                      : TaskKind::backward_weight;
    seg_of[i] = order.index(k, s);
  }

  StagedProgram r;
  r.num_stages = S;
  r.split_backward = split_backward;
  std::map<const ir::VarNode*, int> value_of;
  std::vector<ir::Var> var_of;  // per value
  std::map<const ir::VarNode*, size_t> constvar;
  for (size_t c = 0; c < p.constvars.size(); ++c) constvar[p.constvars[c].get()] = c;
  for (size_t i = 0; i < p.invars.size(); ++i) {
    value_of[p.invars[i].get()] = int(r.values.size());
    const bool batch = i < input_is_batch.size() && input_is_batch[i];
    r.values.push_back(Value{p.invars[i]->aval, -1, int(i), batch});
    var_of.push_back(p.invars[i]);
  }
  auto value_for = [&](const ir::Var& v, int producing_segment) {
    auto [it, fresh] = value_of.try_emplace(v.get(), int(r.values.size()));
    if (fresh) {
      r.values.push_back(Value{v->aval, producing_segment, -1, true});
      var_of.push_back(v);
    }
    return it->second;
  };
  auto seg_desc = [&](int seg) {
    return segment_name(order.kind(seg), order.stage(seg));
  };

  // Which values each segment reads and writes, checked against the order of segments.
  std::vector<std::set<int>> seg_in(size_t(order.size())), seg_out(size_t(order.size()));
  std::vector<std::vector<size_t>> seg_consts(size_t(order.size()));
  for (size_t i = 0; i < n; ++i) {
    const int seg = seg_of[i];
    for (const auto& in : p.eqns[i].inputs) {
      if (in.is_literal()) continue;
      if (auto c = constvar.find(in.var().get()); c != constvar.end()) {
        auto& cs = seg_consts[size_t(seg)];
        if (std::find(cs.begin(), cs.end(), c->second) == cs.end()) cs.push_back(c->second);
        continue;
      }
      long j = producer_of(in);
      if (j < 0) {
        seg_in[size_t(seg)].insert(value_of.at(in.var().get()));
        continue;
      }
      const int from = seg_of[size_t(j)];
      if (from == seg) continue;
      if (!order.ordered(from, seg))
        throw ValueError("pipelined: equation '" + p.eqns[i].prim->name + "' of " + seg_desc(seg) + " reads a value of " +
                         seg_desc(from) + ", which no schedule runs before it (a weight used by two stages, or a "
                         "forward that reads a backward value); give every weight one stage, or move the marker");
      const int v = value_for(in.var(), from);
      seg_out[size_t(from)].insert(v);
      seg_in[size_t(seg)].insert(v);
    }
  }
  // Which outputs depend on the batch (their values differ between microbatches).
  std::set<const ir::VarNode*> batch_vars;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (i < input_is_batch.size() && input_is_batch[i]) batch_vars.insert(p.invars[i].get());
  for (const auto& e : p.eqns)
    for (const auto& in : e.inputs)
      if (!in.is_literal() && batch_vars.count(in.var().get())) {
        for (const auto& o : e.outputs) batch_vars.insert(o.get());
        break;
      }
  for (size_t k = 0; k < p.outvars.size(); ++k) {
    const ir::Atom& o = p.outvars[k];
    if (o.is_literal() || constvar.count(o.var().get()))
      throw ValueError("pipelined: output " + std::to_string(k) + " of the step is a constant; return only values the "
                       "step computes (or its inputs)");
    long j = producer_of(o);
    const int v = j < 0 ? value_of.at(o.var().get()) : value_for(o.var(), seg_of[size_t(j)]);
    if (j >= 0) seg_out[size_t(seg_of[size_t(j)])].insert(v);
    r.outputs.push_back(v);
    r.output_per_microbatch.push_back(batch_vars.count(o.var().get()) > 0);
  }

  for (int seg = 0; seg < order.size(); ++seg) {
    auto prog = std::make_shared<ir::Program>();
    prog->name = p.name + "_" + seg_desc(seg);
    Segment sg{order.kind(seg), order.stage(seg), nullptr, {seg_in[size_t(seg)].begin(), seg_in[size_t(seg)].end()},
               {seg_out[size_t(seg)].begin(), seg_out[size_t(seg)].end()}};
    for (int v : sg.inputs) prog->invars.push_back(var_of[size_t(v)]);
    for (size_t c : seg_consts[size_t(seg)]) {
      prog->constvars.push_back(p.constvars[c]);
      prog->consts.push_back(p.consts[c]);
    }
    for (size_t i = 0; i < n; ++i)
      if (seg_of[i] == seg) prog->eqns.push_back(p.eqns[i]);
    for (int v : sg.outputs) prog->outvars.push_back(var_of[size_t(v)]);
    ir::verify_program(*prog);
    sg.program = std::move(prog);
    r.segments.push_back(std::move(sg));
  }
  return r;
}

}  // namespace tessel::pipeline::detail
