// Pipeline schedules: every schedule over several shapes is complete and deadlock-free in
// simulation, bubbles and activation memory are what each schedule promises, and broken
// schedules are rejected with the reason.
#include <gtest/gtest.h>

#include "tessel/error.h"
#include "tessel/pipeline.h"
#include "tessel/pipeline_measure.h"

namespace pp = tessel::pipeline;

namespace {

struct Shape {
  int workers, stages, microbatches;
};

void expect_valid(const pp::Schedule& s, const Shape& sh) {
  pp::Plan plan = pp::make_plan(s, sh.workers, sh.stages, sh.microbatches);
  SCOPED_TRACE(plan.to_string());
  pp::Simulation sim = pp::simulate(plan);
  EXPECT_GT(sim.makespan, 0);
  EXPECT_GE(sim.bubble_fraction, 0);
  EXPECT_LT(sim.bubble_fraction, 1);
}

TEST(PipelineSchedule, EveryScheduleRunsInSimulation) {
  for (Shape sh : {Shape{2, 2, 1}, Shape{2, 2, 8}, Shape{4, 4, 4}, Shape{4, 4, 6}, Shape{3, 3, 7}}) {
    SCOPED_TRACE(std::to_string(sh.workers) + " workers, " + std::to_string(sh.microbatches) + " microbatches");
    expect_valid(pp::GPipe{}, sh);
    expect_valid(pp::OneF1B{}, sh);
    expect_valid(pp::Eager1F1B{}, sh);
    expect_valid(pp::ZeroBubbleH1{}, sh);
  }
  for (Shape sh : {Shape{2, 4, 2}, Shape{2, 4, 8}, Shape{4, 8, 8}, Shape{2, 6, 4}})
    expect_valid(pp::Interleaved1F1B{.stages_per_worker = sh.stages / sh.workers}, sh);
}

TEST(PipelineSchedule, GPipeAnd1F1BHaveTheTheoreticalBubble) {
  for (auto s : {pp::Schedule(pp::GPipe{}), pp::Schedule(pp::OneF1B{})}) {
    pp::Simulation sim = pp::simulate(pp::make_plan(s, 2, 2, 8));
    EXPECT_NEAR(sim.bubble_fraction, pp::theoretical_bubble(2, 8), 1e-12);
    EXPECT_NEAR(pp::theoretical_bubble(2, 8), 1.0 / 9.0, 1e-12);
  }
}

TEST(PipelineSchedule, OneF1BBoundsActivationsByTheStageCount) {
  const int S = 4, M = 12;
  pp::Simulation gpipe = pp::simulate(pp::make_plan(pp::GPipe{}, S, S, M));
  pp::Simulation f1b = pp::simulate(pp::make_plan(pp::OneF1B{}, S, S, M));
  pp::Simulation zb = pp::simulate(pp::make_plan(pp::ZeroBubbleH1{}, S, S, M));
  for (int s = 0; s < S; ++s) {
    EXPECT_EQ(gpipe.peak_in_flight[size_t(s)], M);
    EXPECT_LE(f1b.peak_in_flight[size_t(s)], S - s) << "stage " << s;
    EXPECT_LE(zb.peak_in_flight[size_t(s)], S - s) << "stage " << s;
  }
}

TEST(PipelineSchedule, InterleavingAndZeroBubbleShrinkTheBubble) {
  const double f1b = pp::simulate(pp::make_plan(pp::OneF1B{}, 4, 4, 8)).bubble_fraction;
  EXPECT_LT(pp::simulate(pp::make_plan(pp::ZeroBubbleH1{}, 4, 4, 8)).bubble_fraction, f1b);
  EXPECT_LT(pp::simulate(pp::make_plan(pp::Interleaved1F1B{.stages_per_worker = 2}, 4, 8, 8)).bubble_fraction, f1b);
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const tessel::ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(PipelineSchedule, ShapesASchedulesCannotRunAreErrors) {
  EXPECT_NE(error_of([] { pp::make_plan(pp::OneF1B{}, 2, 4, 8); }).find("Interleaved1F1B{.stages_per_worker = 2}"),
            std::string::npos);
  EXPECT_NE(error_of([] { pp::make_plan(pp::Interleaved1F1B{.stages_per_worker = 2}, 2, 4, 3); })
                .find("3 microbatches do not divide among 2 workers"),
            std::string::npos);
  EXPECT_NE(error_of([] { pp::make_plan(pp::GPipe{}, 2, 2, 0); }).find("must be positive"), std::string::npos);
}

TEST(PipelineSchedule, BrokenPlansAreRejected) {
  pp::Plan plan = pp::make_plan(pp::OneF1B{}, 2, 2, 2);
  // Stage 1 runs its backward before its forward: it waits for itself.
  pp::Plan reordered = plan;
  std::swap(reordered.tasks[1][0], reordered.tasks[1][1]);
  std::string e = error_of([&] { pp::simulate(reordered); });
  EXPECT_NE(e.find("deadlocks"), std::string::npos) << e;
  EXPECT_NE(e.find("worker 1 waits at B(s=1,m=0) for F(s=1,m=0)"), std::string::npos) << e;
  pp::Plan missing = plan;
  missing.tasks[0].pop_back();
  EXPECT_NE(error_of([&] { pp::simulate(missing); }).find("never scheduled"), std::string::npos);
  pp::Plan twice = plan;
  twice.tasks[0].push_back(twice.tasks[0][0]);
  EXPECT_NE(error_of([&] { pp::simulate(twice); }).find("scheduled twice"), std::string::npos);
  pp::Plan wrong_worker = plan;
  wrong_worker.tasks[1].push_back(wrong_worker.tasks[0].back());
  wrong_worker.tasks[0].pop_back();
  EXPECT_NE(error_of([&] { pp::simulate(wrong_worker); }).find("is placed on worker 0"), std::string::npos);
}

TEST(PipelineSchedule, PlansPrintOneLinePerWorker) {
  EXPECT_EQ(pp::make_plan(pp::OneF1B{}, 2, 2, 2).to_string(),
            "worker 0: F(s=0,m=0) F(s=0,m=1) B(s=0,m=0) B(s=0,m=1)\n"
            "worker 1: F(s=1,m=0) B(s=1,m=0) F(s=1,m=1) B(s=1,m=1)\n");
}

// simulate with given durations: unit ones give the unit-time result; a slower last stage
// makes the other worker wait (a larger bubble than theory); measured_task_times reads a
// timeline back into per-task durations (and falls back to its kind and stage's mean).
TEST(PipelineSchedule, SimulateWithMeasuredTaskTimes) {
  const pp::Plan plan = pp::make_plan(pp::OneF1B{}, 2, 2, 8);
  const pp::Simulation unit = pp::simulate(plan);
  const pp::Simulation same = pp::simulate(plan, [](const pp::Task& t) { return t.kind == pp::TaskKind::forward ? 1.0 : 2.0; });
  EXPECT_DOUBLE_EQ(same.makespan, unit.makespan);
  EXPECT_DOUBLE_EQ(same.bubble_fraction, pp::theoretical_bubble(2, 8));
  const pp::Simulation slow_last =
      pp::simulate(plan, [](const pp::Task& t) { return (t.kind == pp::TaskKind::forward ? 1.0 : 2.0) * (t.stage == 1 ? 2 : 1); });
  EXPECT_GT(slow_last.bubble_fraction, pp::theoretical_bubble(2, 8));
  EXPECT_GT(slow_last.idle_fraction[0], slow_last.idle_fraction[1]);
  EXPECT_THROW(pp::simulate(plan, [](const pp::Task&) { return -1.0; }), tessel::ValueError);

  std::vector<pp::TimelineEvent> events;
  double t = 0;
  for (int w = 0; w < 2; ++w)
    for (const pp::Task& task : plan.tasks[size_t(w)]) {
      const double took = task.kind == pp::TaskKind::forward ? 10 : 20 + task.microbatch;
      events.push_back({w, task.to_string(), task.kind == pp::TaskKind::forward ? "forward" : "backward", task.stage,
                        task.microbatch, t, t + took});
      events.push_back({w, "send", "send", -1, -1, t + took, t + took + 5});  // not a task: left out
      t += took + 5;
    }
  const pp::TaskTimes times = pp::measured_task_times(events);
  EXPECT_DOUBLE_EQ(times({pp::TaskKind::backward, 1, 3}), 23);
  EXPECT_DOUBLE_EQ(times({pp::TaskKind::forward, 0, 7}), 10);
  EXPECT_DOUBLE_EQ(times({pp::TaskKind::backward, 0, 42}), 23.5);  // unmeasured: the mean of B(s=0)
  EXPECT_EQ(times.per_task.size(), 32u);
  EXPECT_THROW(times({pp::TaskKind::backward_weight, 0, 0}), tessel::ValueError);
  EXPECT_GT(pp::simulate(plan, times).makespan, 0);
}

}  // namespace
