// Pipelined steps (issue 9), in a single-controller job of a driver and 2 workers:
//   pipeline.bubble_gpipe / pipeline.bubble_1f1b   measured bubble: the workers' mean idle
//                          fraction over the step (time not running a stage task), 2 stages,
//                          8 microbatches, stages of 512-wide matrix products on 256 rows (compute
//                          dominates), best of 3 steps
//   pipeline.bubble_theoretical                     (P - 1) / (M + P - 1) = 1/9
//   pipeline.bubble_excess  the larger measured bubble over the theoretical (goal <= 1.15)
//   pipeline.instruction_overhead_us  mean time of one run or send instruction on a worker
//                          when stages are tiny (4 x 4): what dispatching an instruction
//                          costs (receives are left out: they wait for the peer) (goal <= 20)
//   pipeline.step_tiny_us  one whole step of the tiny pipeline (16 tasks per worker)
// Run alone: it starts itself under `mpirun -np 3` as the driver.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "bench_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;
namespace pp = tessel::pipeline;

namespace {

// `layers` tanh layers of width `width`, a marker halfway; value and gradients.
auto make_step(int layers) {
  return [layers](const std::vector<ts::Array>& w, const ts::Array& x) {
    auto loss = [layers](const std::vector<ts::Array>& w, const ts::Array& x) {
      ts::Array h = x;
      for (int i = 0; i < layers; ++i) {
        if (i == layers / 2) h = pp::enter_stage(h);
        h = ts::tanh(ts::matmul(h, w[size_t(i)]));
      }
      return ts::mean(h * h);
    };
    return ts::value_and_grad(loss)(w, x);
  };
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

double measured_bubble(const pp::Schedule& schedule, const pp::RemoteMpmdMesh& mesh) {
  const int layers = 4, width = 512, micro = 8, rows = 256;
  pp::PipelineOptions opts;
  opts.num_microbatches = micro;
  opts.batch_argnums = {1};
  opts.schedule = schedule;
  auto step = pp::pipelined(make_step(layers), mesh, opts);
  std::vector<ts::Array> w(size_t(layers), ts::ones({width, width}, ts::f32) * (1.0f / width));
  ts::Array x = ts::ones({micro * rows, width}, ts::f32);
  std::get<0>(step(w, x)).block_until_ready();  // compiles
  double best = 1;
  for (int r = 0; r < 3; ++r) {
    std::get<0>(step(w, x)).block_until_ready();
    best = std::min(best, mean(pp::idle_fractions(step.timeline(), mesh.num_workers())));
  }
  return best;
}

int driver() {
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
  pp::RemoteMpmdMesh mesh(2, {1}, {"x"});
  const double theory = pp::theoretical_bubble(2, 8);
  const double gpipe = measured_bubble(pp::GPipe{}, mesh), one = measured_bubble(pp::OneF1B{}, mesh);
  tb::report("pipeline.bubble_gpipe", gpipe, "fraction");
  tb::report("pipeline.bubble_1f1b", one, "fraction");
  tb::report("pipeline.bubble_theoretical", theory, "fraction");
  tb::report("pipeline.bubble_excess", std::max(gpipe, one) / theory, "ratio");

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
                          "OPENBLAS_NUM_THREADS=1 mpirun -np 3 --oversubscribe " +
                          tb::shell_quote(self) + " --driver";
  return std::system(cmd.c_str()) == 0 ? 0 : 1;
}
