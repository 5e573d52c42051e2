#pragma once
// A Gantt chart of a measured pipeline timeline as a PNG: one lane per worker, so the
// bubbles of a schedule can be seen at a glance (the Chrome trace holds the details).
#include <string>
#include <vector>

#include "tessel/pipeline.h"

namespace pipeline_mlp {

/// Draws `events` on lanes 0..num_workers-1 (time on the x axis, from the earliest start to
/// the latest end), bars coloured by kind: forward blue, backward green, backward_input
/// orange, backward_weight purple, a shade per microbatch so neighbours stay apart; send and
/// recv as thin grey bars, other work thinner still. Throws std::invalid_argument for a
/// non-positive worker count or an event on another worker, std::runtime_error naming the
/// path when the file cannot be written.
void write_gantt_png(const std::string& path, const std::vector<tessel::pipeline::TimelineEvent>& events,
                     int num_workers);

}  // namespace pipeline_mlp
