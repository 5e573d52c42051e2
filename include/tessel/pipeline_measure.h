#pragma once
// A fair bubble measure (docs/pipeline.md "Simulation"): the schedule simulated with the
// durations its tasks really took, so that a measured bubble is compared with what this
// schedule gives on these very stages (unequal stages included) rather than with the
// unit-time theory.
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "tessel/export.h"
#include "tessel/pipeline.h"

namespace tessel::pipeline {

/// Per task, how long it ran (microseconds), taken from a timeline.
struct TESSEL_API TaskTimes {
  std::map<std::tuple<TaskKind, int, int>, double> per_task;  ///< (kind, stage, microbatch) -> us
  std::map<std::pair<TaskKind, int>, double> mean;            ///< (kind, stage) -> mean us
  /// The measured duration of `t`; the mean of its kind and stage when `t` itself was not
  /// measured. ValueError naming the task when neither was.
  double operator()(const Task& t) const;
};

/// The durations of the stage tasks of `events` (TimelineEvent::kind "forward", "backward",
/// "backward_input" or "backward_weight"; communication and bookkeeping are left out).
TESSEL_API TaskTimes measured_task_times(const std::vector<TimelineEvent>& events);

/// `simulate(plan)` with task `t` taking `duration(t)` (any unit, > 0 or 0) instead of unit
/// forwards and backwards of 2: the makespan and bubble of this schedule on stages that
/// take these times, with transfers free. ValueError for a negative or non-finite duration
/// (naming the task), and for the plans `simulate(plan)` rejects.
TESSEL_API Simulation simulate(const Plan& plan, const std::function<double(const Task&)>& duration);

}  // namespace tessel::pipeline
