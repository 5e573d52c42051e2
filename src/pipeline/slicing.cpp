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

  // The epilogue: sums of values of segments that no schedule orders (a tied weight's
  // gradient contributions) and everything reading them; it runs once, after the
  // microbatches, on averaged values.
  auto is_sum = [&](const ir::Equation& e) {
    return (e.prim->name == "add" || e.prim->name == "add_any") && e.inputs.size() == 2 && !e.inputs[0].is_literal() &&
           !e.inputs[1].is_literal();
  };
  std::vector<char> in_epilogue(n, 0), sum_node(n, 0);
  for (size_t i = 0; i < n; ++i) {
    bool reads_epilogue = false, unordered = false;
    for (const auto& in : p.eqns[i].inputs)
      if (long j = producer_of(in); j >= 0) {
        if (in_epilogue[size_t(j)]) reads_epilogue = true;
        else if (!order.ordered(seg_of[size_t(j)], seg_of[i])) unordered = true;
      }
    if (!reads_epilogue && !unordered) continue;
    in_epilogue[i] = 1;
    // A sum node adds segment values and other sum nodes' results only.
    bool parts_only = is_sum(p.eqns[i]);
    for (const auto& in : p.eqns[i].inputs) {
      long j = producer_of(in);
      parts_only = parts_only && j >= 0 && (!in_epilogue[size_t(j)] || sum_node[size_t(j)]);
    }
    sum_node[i] = parts_only;
    if (is_marker(p.eqns[i], "forward") || is_marker(p.eqns[i], "backward") || (unordered && !parts_only)) {
      long from = -1;
      for (const auto& in : p.eqns[i].inputs)
        if (long j = producer_of(in); j >= 0 && !in_epilogue[size_t(j)] && !order.ordered(seg_of[size_t(j)], seg_of[i]))
          from = j;
      throw ValueError("pipelined: equation '" + p.eqns[i].prim->name + "' of " +
                       segment_name(order.kind(seg_of[i]), order.stage(seg_of[i])) + " reads a value of " +
                       (from >= 0 ? segment_name(order.kind(seg_of[size_t(from)]), order.stage(seg_of[size_t(from)]))
                                  : std::string("the sum of a weight's gradients across stages")) +
                       ", which no schedule runs before it (only the gradient sum of a weight used by several stages "
                       "may cross stages this way, and a stage marker may not follow it); move the marker or give "
                       "the value one stage");
    }
  }
  const int epilogue_seg = order.size();
  int epilogue_stage = S;  // the earliest stage computing a part
  for (size_t i = 0; i < n; ++i)
    if (sum_node[i])
      for (const auto& in : p.eqns[i].inputs)
        if (long j = producer_of(in); j >= 0 && !in_epilogue[size_t(j)])
          epilogue_stage = std::min(epilogue_stage, order.stage(seg_of[size_t(j)]));
  for (size_t i = 0; i < n; ++i)
    if (in_epilogue[i]) seg_of[i] = epilogue_seg;

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
      r.values.push_back(Value{v->aval, producing_segment, -1, producing_segment != epilogue_seg});
      var_of.push_back(v);
    }
    return it->second;
  };
  auto seg_desc = [&](int seg) {
    return seg == epilogue_seg ? std::string("the epilogue") : segment_name(order.kind(seg), order.stage(seg));
  };
  // Which step inputs and equations depend on the batch (their values differ between
  // microbatches).
  std::set<const ir::VarNode*> batch_vars;
  for (size_t i = 0; i < p.invars.size(); ++i)
    if (i < input_is_batch.size() && input_is_batch[i]) batch_vars.insert(p.invars[i].get());
  for (const auto& e : p.eqns)
    for (const auto& in : e.inputs)
      if (!in.is_literal() && batch_vars.count(in.var().get())) {
        for (const auto& o : e.outputs) batch_vars.insert(o.get());
        break;
      }

  // Which values each segment reads and writes, checked against the order of segments.
  const size_t num_segs = size_t(order.size()) + 1;
  std::vector<std::set<int>> seg_in(num_segs), seg_out(num_segs);
  std::vector<std::vector<size_t>> seg_consts(num_segs);
  std::map<size_t, size_t> sum_of_equation;  // sum node -> index in r.sums
  for (size_t i = 0; i < n; ++i) {
    const int seg = seg_of[i];
    if (sum_node[i]) {
      CrossStageSum sum;
      for (const auto& in : p.eqns[i].inputs) {
        const long j = producer_of(in);
        if (in_epilogue[size_t(j)]) {  // another sum's parts
          const CrossStageSum& inner = r.sums[sum_of_equation.at(size_t(j))];
          sum.parts.insert(sum.parts.end(), inner.parts.begin(), inner.parts.end());
          sum.part_depends_on_batch.insert(sum.part_depends_on_batch.end(), inner.part_depends_on_batch.begin(),
                                           inner.part_depends_on_batch.end());
          continue;
        }
        const int v = value_for(in.var(), seg_of[size_t(j)]);
        seg_out[size_t(seg_of[size_t(j)])].insert(v);
        sum.parts.push_back(v);
        sum.part_depends_on_batch.push_back(batch_vars.count(in.var().get()) > 0);
      }
      sum.result = value_for(p.eqns[i].outputs[0], epilogue_seg);
      sum_of_equation[i] = r.sums.size();
      r.sums.push_back(std::move(sum));
      continue;
    }
    for (const auto& in : p.eqns[i].inputs) {
      if (in.is_literal()) continue;
      if (auto c = constvar.find(in.var().get()); c != constvar.end()) {
        auto& cs = seg_consts[size_t(seg)];
        if (std::find(cs.begin(), cs.end(), c->second) == cs.end()) cs.push_back(c->second);
        continue;
      }
      long j = producer_of(in);
      if (j < 0) {
        const int v = value_of.at(in.var().get());
        if (seg == epilogue_seg && r.values[size_t(v)].per_microbatch)
          throw ValueError("pipelined: equation '" + p.eqns[i].prim->name + "' of the epilogue (what follows the sum of "
                           "a weight's gradients across stages) reads step input " +
                           std::to_string(r.values[size_t(v)].step_input) + ", which is split into microbatches; "
                           "the epilogue runs once per step: let it read only the summed gradients and inputs that "
                           "are not in batch_argnums");
        seg_in[size_t(seg)].insert(v);
        continue;
      }
      const int from = seg_of[size_t(j)];
      if (sum_node[size_t(j)]) {  // a cross-stage sum: an input of the epilogue
        seg_in[size_t(seg)].insert(value_for(in.var(), epilogue_seg));
        continue;
      }
      if (from == seg) continue;
      if (seg == epilogue_seg)
        throw ValueError("pipelined: equation '" + p.eqns[i].prim->name + "' of the epilogue (what follows the sum of a "
                         "weight's gradients across stages) reads a value of " + seg_desc(from) + " of each microbatch; "
                         "the epilogue runs once per step on the summed gradients: compute that value from them or "
                         "from the step's inputs instead");
      const int v = value_for(in.var(), from);
      seg_out[size_t(from)].insert(v);
      seg_in[size_t(seg)].insert(v);
    }
  }
  for (size_t k = 0; k < p.outvars.size(); ++k) {
    const ir::Atom& o = p.outvars[k];
    if (o.is_literal() || constvar.count(o.var().get()))
      throw ValueError("pipelined: output " + std::to_string(k) + " of the step is a constant; return only values the "
                       "step computes (or its inputs)");
    long j = producer_of(o);
    const int v = j < 0 ? value_of.at(o.var().get()) : value_for(o.var(), seg_of[size_t(j)]);
    if (j >= 0 && !sum_node[size_t(j)]) seg_out[size_t(seg_of[size_t(j)])].insert(v);
    r.outputs.push_back(v);
    r.output_per_microbatch.push_back(batch_vars.count(o.var().get()) > 0);
  }

  const bool has_epilogue = epilogue_stage < S;
  for (int seg = 0; seg < order.size() + (has_epilogue ? 1 : 0); ++seg) {
    auto prog = std::make_shared<ir::Program>();
    const bool epi = seg == epilogue_seg;
    prog->name = p.name + "_" + (epi ? std::string("epilogue") : seg_desc(seg));
    Segment sg{epi ? TaskKind::backward : order.kind(seg), epi ? epilogue_stage : order.stage(seg), nullptr,
               {seg_in[size_t(seg)].begin(), seg_in[size_t(seg)].end()},
               {seg_out[size_t(seg)].begin(), seg_out[size_t(seg)].end()}};
    for (int v : sg.inputs) prog->invars.push_back(var_of[size_t(v)]);
    for (size_t c : seg_consts[size_t(seg)]) {
      prog->constvars.push_back(p.constvars[c]);
      prog->consts.push_back(p.consts[c]);
    }
    for (size_t i = 0; i < n; ++i)
      if (seg_of[i] == seg && !sum_node[i]) prog->eqns.push_back(p.eqns[i]);
    for (int v : sg.outputs) prog->outvars.push_back(var_of[size_t(v)]);
    ir::verify_program(*prog);
    sg.program = std::move(prog);
    r.segments.push_back(std::move(sg));
  }
  if (has_epilogue) r.epilogue = epilogue_seg;
  return r;
}

}  // namespace tessel::pipeline::detail
