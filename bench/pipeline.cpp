// Pipelined steps (issues 9 and 22), in a single-controller job of a driver and 2 workers:
//   pipeline.bubble_gpipe / pipeline.bubble_1f1b   measured bubble: the workers' mean idle
//                          fraction over the step (time not running a stage task), 2 stages,
//                          8 microbatches, stages of 512-wide matrix products on 256 rows (compute
//                          dominates), best of 5 steps. The stages are balanced: 2 layers each,
//                          and the step also differentiates the input, so stage 0's backward
//                          computes its input gradient as stage 1's does (4 products each)
//   pipeline.stage_imbalance  the slower stage's forward + backward time over the faster's
//   pipeline.bubble_theoretical                     (P - 1) / (M + P - 1) = 1/9
//   pipeline.bubble_simulated_gpipe / _1f1b  `simulate` fed with the task times measured in
//                          that same step: the bubble of the schedule on these very stages
//   pipeline.bubble_excess  the larger measured bubble over the theoretical (goal <= 1.15)
//   pipeline.bubble_vs_simulated  the larger of measured over simulated (goal <= 1.1)
//   pipeline.async_steps_speedup  8 tiny steps issued back to back (calls return at once,
//                          the losses read at the end) against 8 steps each read before the
//                          next call
//   pipeline.dp2_speedup    one training step (2 stages of 256-wide products, 8 microbatches
//                          of 64 rows) on pp=2 x dp=2 workers against pp=2 x dp=1, same global
//                          batch, best of 5 each; printed with the core count (the job is 1 + 4
//                          processes: below 5 cores it is oversubscribed)
//   pipeline.instruction_overhead_us  mean time of one run or send instruction on a worker
//                          when stages are tiny (4 x 4): what dispatching an instruction
//                          costs (receives are left out: they wait for the peer) (goal <= 20)
//   pipeline.step_tiny_us  one whole step of the tiny pipeline (16 tasks per worker)
// TESSEL_BENCH_TRACE=prefix writes the measured GPipe and 1F1B steps (the ones reported) as
// Chrome traces, prefix_gpipe.json and prefix_1f1b.json.
// Run alone: it starts itself under `mpirun -np 5` as the driver (2 workers for the bubble
// and overhead figures, 4 for the data-parallel one).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "bench_util.h"
#include "tessel/pipeline_measure.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;
namespace pp = tessel::pipeline;

namespace {

// `layers` tanh layers of width `width`, a marker halfway; the loss and its gradients with
// respect to the weights and the input (so that both stages compute an input gradient).
auto make_step(int layers) {
  return [layers](const std::vector<ts::Array>& w, const ts::Array& x) {
    auto loss = [layers](const std::vector<ts::Array>& wx) {
      ts::Array h = wx.back();
      for (int i = 0; i < layers; ++i) {
        if (i == layers / 2) h = pp::enter_stage(h);
        h = ts::tanh(ts::matmul(h, wx[size_t(i)]));
      }
      return ts::mean(h * h);
    };
    std::vector<ts::Array> wx = w;
    wx.push_back(x);
    return ts::value_and_grad(loss)(wx);
  };
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

struct Bubble {
  double measured = 1, simulated = 1, imbalance = 1;
  std::vector<pp::TimelineEvent> timeline;  // of the step measured
};

// The step of the smallest measured bubble among a few, with the bubble `simulate` gives
// for the task times of that same step.
Bubble measured_bubble(const pp::Schedule& schedule, const pp::RemoteMpmdMesh& mesh) {
  const int layers = 4, width = 512, micro = 8, rows = 256;
  pp::PipelineOptions opts;
  opts.num_microbatches = micro;
  opts.batch_argnums = {1};
  opts.schedule = schedule;
  auto step = pp::pipelined(make_step(layers), mesh, opts);
  std::vector<ts::Array> w(size_t(layers), ts::ones({width, width}, ts::f32) * (1.0f / width));
  ts::Array x = ts::ones({micro * rows, width}, ts::f32);
  std::get<0>(step(w, x)).block_until_ready();  // compiles
  Bubble best;
  for (int r = 0; r < 5; ++r) {
    std::get<0>(step(w, x)).block_until_ready();
    const auto timeline = step.timeline();
    const double measured = mean(pp::idle_fractions(timeline, mesh.num_workers()));
    if (measured >= best.measured) continue;
    const pp::TaskTimes times = pp::measured_task_times(timeline);
    best.measured = measured;
    best.timeline = timeline;
    best.simulated = pp::simulate(step.plan(), times).bubble_fraction;
    std::vector<double> stage(2, 0.0);
    for (auto& [key, us] : times.per_task) stage[size_t(std::get<1>(key))] += us;
    best.imbalance = std::max(stage[0], stage[1]) / std::min(stage[0], stage[1]);
  }
  return best;
}

int driver() {
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
  pp::RemoteMpmdMesh mesh(2, {1}, {"x"});
  const double theory = pp::theoretical_bubble(2, 8);
  const Bubble gpipe = measured_bubble(pp::GPipe{}, mesh), one = measured_bubble(pp::OneF1B{}, mesh);
  tb::report("pipeline.bubble_gpipe", gpipe.measured, "fraction");
  tb::report("pipeline.bubble_1f1b", one.measured, "fraction");
  tb::report("pipeline.stage_imbalance", std::max(gpipe.imbalance, one.imbalance), "ratio");
  tb::report("pipeline.bubble_theoretical", theory, "fraction");
  tb::report("pipeline.bubble_simulated_gpipe", gpipe.simulated, "fraction");
  tb::report("pipeline.bubble_simulated_1f1b", one.simulated, "fraction");
  tb::report("pipeline.bubble_excess", std::max(gpipe.measured, one.measured) / theory, "ratio");
  tb::report("pipeline.bubble_vs_simulated",
             std::max(gpipe.measured / gpipe.simulated, one.measured / one.simulated), "ratio");
  // The measured steps as Chrome traces (`PREFIX_gpipe.json`, `PREFIX_1f1b.json`), to see
  // where the idle time beyond the simulated bubble goes.
  if (const char* prefix = std::getenv("TESSEL_BENCH_TRACE")) {
    pp::write_chrome_trace(std::string(prefix) + "_gpipe.json", gpipe.timeline);
    pp::write_chrome_trace(std::string(prefix) + "_1f1b.json", one.timeline);
  }

  pp::PipelineOptions opts;
  opts.num_microbatches = 8;
  opts.batch_argnums = {1};
  auto tiny = pp::pipelined(make_step(2), mesh, opts);
  std::vector<ts::Array> w(2, ts::ones({4, 4}, ts::f32) * 0.1f);
  ts::Array x = ts::ones({32, 4}, ts::f32);
  std::get<0>(tiny(w, x)).block_until_ready();
  double dispatch = 1e30, step_us = 1e30;
  for (int r = 0; r < 20; ++r) {
    const double s = tb::seconds_per_call([&] { std::get<0>(tiny(w, x)).block_until_ready(); }, 1, 1);
    step_us = std::min(step_us, s * 1e6);
    double busy = 0;
    int n = 0;
    for (const auto& e : tiny.timeline())
      if (e.kind != "recv") {
        busy += e.end_us - e.start_us;
        ++n;
      }
    if (n) dispatch = std::min(dispatch, busy / n);
  }
  tb::report("pipeline.instruction_overhead_us", dispatch, "us");
  tb::report("pipeline.step_tiny_us", step_us, "us");

  // Asynchronous calls: 8 tiny steps issued back to back (then every loss read) against 8
  // steps each read before the next is issued.
  auto eight = [&](bool back_to_back) {
    std::vector<ts::Array> losses;
    for (int k = 0; k < 8; ++k) {
      losses.push_back(std::get<0>(tiny(w, x)));
      if (!back_to_back) losses.back().block_until_ready();
    }
    for (auto& l : losses) l.block_until_ready();
  };
  double sync_s = 1e30, async_s = 1e30;
  for (int r = 0; r < 5; ++r) {
    sync_s = std::min(sync_s, tb::seconds_per_call([&] { eight(false); }, 1, 1));
    async_s = std::min(async_s, tb::seconds_per_call([&] { eight(true); }, 1, 1));
  }
  tb::report("pipeline.eight_steps_sync_us", sync_s * 1e6, "us");
  tb::report("pipeline.eight_steps_async_us", async_s * 1e6, "us");
  tb::report("pipeline.async_steps_speedup", sync_s / async_s, "ratio");

  // Data parallelism: the same step and global batch on pp=2 x dp=1 and pp=2 x dp=2.
  auto step_seconds = [&](const pp::RemoteMpmdMesh& m) {
    const int width = 256, rows = 64, micro = 8;
    pp::PipelineOptions o;
    o.num_microbatches = micro;
    o.batch_argnums = {1};
    auto train = pp::pipelined(make_step(4), m, o);
    std::vector<ts::Array> wd(4, ts::ones({width, width}, ts::f32) * (1.0f / width));
    ts::Array xd = ts::ones({micro * rows, width}, ts::f32);
    std::get<0>(train(wd, xd)).block_until_ready();
    double best = 1e30;
    for (int r = 0; r < 5; ++r)
      best = std::min(best, tb::seconds_per_call([&] { std::get<0>(train(wd, xd)).block_until_ready(); }, 1, 1));
    return best;
  };
  const double dp1 = step_seconds(pp::RemoteMpmdMesh(2, 1, {1}, {"x"}));
  const double dp2 = step_seconds(pp::RemoteMpmdMesh(2, 2, {1}, {"x"}));
  std::printf("pp=2 x dp=2 runs 1 + 4 processes on %u cores%s\n", std::thread::hardware_concurrency(),
              std::thread::hardware_concurrency() < 5 ? " (oversubscribed)" : "");
  tb::report("pipeline.step_pp2_dp1_ms", dp1 * 1e3, "ms");
  tb::report("pipeline.step_pp2_dp2_ms", dp2 * 1e3, "ms");
  tb::report("pipeline.dp2_speedup", dp1 / dp2, "ratio");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--driver") return driver();
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TESSEL_CPU_DEVICES=1 "
                          "OPENBLAS_NUM_THREADS=1 mpirun -np 5 --oversubscribe " +
                          tb::shell_quote(self) + " --driver";
  return std::system(cmd.c_str()) == 0 ? 0 : 1;
}
