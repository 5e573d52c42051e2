// The stage marker primitive and stage assignment (see stages.h).
#include "pipeline/stages.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "ir/trace.h"
#include "ops/rule_util.h"
#include "tessel/error.h"
#include "tessel/pipeline.h"

namespace tessel::pipeline {
namespace detail {
namespace {

bool forward(const ir::Params& p) { return p.get<std::string>("direction") == "forward"; }
ir::Params direction(bool fwd) { return ir::Params{{"direction", std::string(fwd ? "forward" : "backward")}}; }

std::vector<Aval> marker_aval(std::span<const Aval> ins, const ir::Params&) { return {ins.begin(), ins.end()}; }

void marker_kernel(const ir::KernelCall& c) {
  for (size_t i = 0; i < c.ins.size(); ++i)
    if (c.outs[i] != c.ins[i] && c.out_avals[i].nbytes()) std::memcpy(c.outs[i], c.ins[i], c.out_avals[i].nbytes());
}

std::vector<size_t> marker_inplace(size_t out, std::span<const Aval>, std::span<const Aval>, const ir::Params&) {
  return {out};
}

// The cotangents cross the boundary the other way: a marker of the opposite direction.
std::vector<Array> marker_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                    std::span<const Aval>, const ir::Params& p) {
  std::vector<Array> live;
  for (const Array& c : cts)
    if (c.valid()) live.push_back(c);
  if (live.empty()) return std::vector<Array>(cts.size());
  std::vector<Array> marked = tessel::detail::bind(self, live, direction(!forward(p)));
  std::vector<Array> out;
  size_t k = 0;
  for (const Array& c : cts) out.push_back(c.valid() ? marked[k++] : Array());
  return out;
}

ir::Batched marker_batch(const ir::Primitive& self, std::span<const Array> ins, std::span<const int64_t> dims,
                         const ir::BatchAxis&, const ir::Params& p) {
  return {tessel::detail::bind(self, ins, p), {dims.begin(), dims.end()}};
}

}  // namespace

const ir::Primitive& stage_marker() {
  static const ir::Primitive& p = ir::register_primitive({
      .name = "enter_stage",
      .abstract_eval = &marker_aval,
      .cpu_kernel = &marker_kernel,
      .inplace = &marker_inplace,
      .jvp = &ops::jvp_linear,
      .transpose = &marker_transpose,
      .batch = &marker_batch,
  });
  return p;
}
[[maybe_unused]] const ir::Primitive& registered = stage_marker();

StageAssignment assign_stages(const ir::Program& p) {
  StageAssignment r;
  for (const auto& e : p.eqns)
    if (e.prim == &stage_marker()) forward(e.params) ? ++r.forward_markers : ++r.backward_markers;
  if (r.backward_markers > r.forward_markers)
    throw ValueError("pipeline: the program has " + std::to_string(r.backward_markers) + " backward stage markers for " +
                     std::to_string(r.forward_markers) + " forward ones; every backward boundary is the transpose of a "
                     "forward enter_stage");
  r.num_stages = r.forward_markers + 1;
  // Markers fix their stages by their order: forward marker i leaves stage i; backward
  // markers come in reverse, the j-th leaving stage (forward markers - j). Other equations
  // run in the latest stage among their inputs.
  std::map<const void*, int> var_stage;
  auto stage_of = [&](const ir::Atom& a) {
    if (a.is_literal()) return -1;
    auto it = var_stage.find(a.var().get());
    return it == var_stage.end() ? -1 : it->second;
  };
  r.stage_of_equation.assign(p.eqns.size(), -1);
  int fwd = 0, bwd = 0;
  for (size_t i = 0; i < p.eqns.size(); ++i) {
    const auto& e = p.eqns[i];
    int s = -1, out_stage;
    if (e.prim == &stage_marker()) {
      const bool is_forward = forward(e.params);
      s = is_forward ? fwd++ : r.forward_markers - bwd++;
      out_stage = is_forward ? s + 1 : s - 1;
    } else {
      for (const auto& in : e.inputs) s = std::max(s, stage_of(in));
      out_stage = s;
    }
    r.stage_of_equation[i] = s;
    if (out_stage >= 0)
      for (const auto& o : e.outputs) var_stage[o.get()] = out_stage;
  }
  // Equations of program inputs and constants only: where their result is first used
  // (walking backwards, so chains of them follow their last link).
  for (size_t i = p.eqns.size(); i-- > 0;) {
    if (r.stage_of_equation[i] >= 0) continue;
    int first_use = -1;
    for (size_t j = i + 1; j < p.eqns.size() && first_use < 0; ++j)
      for (const auto& in : p.eqns[j].inputs)
        for (const auto& o : p.eqns[i].outputs)
          if (!in.is_literal() && in.var() == o) first_use = std::max(r.stage_of_equation[j], 0);
    r.stage_of_equation[i] = std::max(first_use, 0);
  }
  return r;
}

}  // namespace detail

Array enter_stage(const Array& x) { return enter_stage(std::vector<Array>{x})[0]; }

std::vector<Array> enter_stage(const std::vector<Array>& xs) {
  for (size_t i = 0; i < xs.size(); ++i)
    if (!xs[i].valid()) throw ValueError("enter_stage: value " + std::to_string(i) + " is an empty Array");
  if (xs.empty()) return {};
  return tessel::detail::bind(detail::stage_marker(), xs, ir::Params{{"direction", std::string("forward")}});
}

}  // namespace tessel::pipeline
