#pragma once
// Stage markers and stage assignment (docs/pipeline.md): `enter_stage` is an identity
// primitive whose transpose marks the matching boundary of the backward pass; the stage of
// each equation of a traced (possibly differentiated) program follows from the markers.
#include <vector>

#include "ir/program.h"

namespace tessel::pipeline::detail {

/// The marker primitive ("enter_stage", parameter "direction": "forward" or "backward").
const ir::Primitive& stage_marker();

/// The stage of each top-level equation of `p`: forward marker i runs at the end of stage i;
/// backward markers come in the reverse order (the j-th at the start of the backward of
/// stage forward_markers - j, leaving for the stage before); any other equation is in the
/// latest stage among its inputs; equations that read only program inputs and constants go
/// to the stage of their first user (stage 0 when unused). ValueError for more backward
/// than forward markers.
struct StageAssignment {
  std::vector<int> stage_of_equation;
  int num_stages = 1;
  int forward_markers = 0, backward_markers = 0;
};
StageAssignment assign_stages(const ir::Program& p);

}  // namespace tessel::pipeline::detail
