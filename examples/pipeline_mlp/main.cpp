// pipeline_mlp: an 8-layer MLP trained by pipelined SGD steps under each pipeline schedule
// (docs/pipeline.md), from a single-controller driver with 2 workers:
//
//   mpirun -np 3 ./pipeline_mlp [all|gpipe|1f1b|eager_1f1b|interleaved_1f1b|zero_bubble_h1]
//                               [--steps N] [--out DIR]
//
// For every schedule it prints "schedule <name> step <i> loss <value>", each worker's idle
// fraction as the simulator predicts it for the plan and as measured on the last step, and
// writes that step's timeline as a Gantt chart (DIR/pipeline_<name>.png) and a Chrome trace
// (DIR/pipeline_<name>.json, for chrome://tracing or ui.perfetto.dev). It ends with
// "pipeline_mlp: ok" when the loss fell under every schedule (exit status 1 otherwise).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "gantt_png.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;

namespace {

constexpr int kWorkers = 2;
constexpr int kLayers = 8;
constexpr int64_t kIn = 8, kWidth = 64, kOut = 1;
constexpr int kMicrobatches = 8;  // a multiple of the workers, as Interleaved1F1B needs
constexpr int64_t kBatch = 128;   // 16 rows per microbatch
constexpr float kLearningRate = 0.1f;

/// One dense layer's parameters.
struct Layer {
  ts::Array w, b;
};

/// A regression batch; batch_argnums={1} splits both along rows.
struct Batch {
  ts::Array x, y;
};

}  // namespace

TESSEL_TREE(Layer, w, b);
TESSEL_TREE(Batch, x, y);

namespace {

using Params = std::vector<Layer>;

/// A schedule with the name used on the command line and in file names.
struct NamedSchedule {
  std::string name;
  pp::Schedule schedule;
};

/// The five schedules, in the order docs/pipeline.md lists them.
std::vector<NamedSchedule> all_schedules() {
  return {{"gpipe", pp::GPipe{}},
          {"1f1b", pp::OneF1B{}},
          {"eager_1f1b", pp::Eager1F1B{}},
          {"interleaved_1f1b", pp::Interleaved1F1B{.stages_per_worker = 2}},
          {"zero_bubble_h1", pp::ZeroBubbleH1{}}};
}

/// The stages a schedule runs on kWorkers workers: the model must be cut into exactly that
/// many, or make_plan rejects it.
int stages_for(const pp::Schedule& schedule) {
  if (auto* s = std::get_if<pp::Interleaved1F1B>(&schedule)) return kWorkers * s->stages_per_worker;
  return kWorkers;
}

/// Fixed-seed weights scaled by 1/sqrt(fan-in) (tanh neither saturates nor vanishes through
/// 8 layers) and zero biases. Every schedule starts from these same parameters.
Params init_params() {
  ts::Array key = ts::random::key(0);
  Params p;
  for (int i = 0; i < kLayers; ++i) {
    const int64_t fan_in = i == 0 ? kIn : kWidth, fan_out = i + 1 == kLayers ? kOut : kWidth;
    ts::Array w = ts::random::normal(ts::random::fold_in(key, ts::Array(i)), {fan_in, fan_out});
    p.push_back({w / std::sqrt(float(fan_in)), ts::zeros({fan_out}, ts::f32)});
  }
  return p;
}

/// Synthetic data, y = sin(x a) for a fixed random a, so there is something to fit.
Batch make_batch() {
  ts::Array key = ts::random::key(1);
  ts::Array x = ts::random::normal(ts::random::fold_in(key, ts::Array(0)), {kBatch, kIn});
  ts::Array a = ts::random::normal(ts::random::fold_in(key, ts::Array(1)), {kIn, kOut}) / std::sqrt(float(kIn));
  return {x, ts::sin(ts::matmul(x, a))};
}

/// Mean squared error of the MLP cut into `num_stages` equal stages: an enter_stage marker
/// after every (kLayers / num_stages)-th layer (2 stages: after layer 4; 4 stages: after
/// layers 2, 4 and 6), so the stage count is the schedule's whatever it is.
ts::Array loss_fn(const Params& p, const Batch& batch, int num_stages) {
  const int layers_per_stage = kLayers / num_stages;
  ts::Array h = batch.x;
  for (int i = 0; i < kLayers; ++i) {
    h = ts::matmul(h, p[i].w) + p[i].b;
    if (i + 1 == kLayers) break;
    h = ts::tanh(h);
    if ((i + 1) % layers_per_stage == 0) h = pp::enter_stage(h);
  }
  ts::Array err = h - batch.y;
  return ts::mean(err * err);
}

/// One SGD step inside the pipeline: the update is affine in the gradient, so averaging it
/// over microbatches (what pipelined does to outputs) is the full-batch update.
auto make_train_step(int num_stages) {
  return [num_stages](const Params& p, const Batch& batch) {
    auto [loss, g] = ts::value_and_grad([num_stages](const Params& q, const Batch& b) {
      return loss_fn(q, b, num_stages);
    })(p, batch);
    Params next;
    for (size_t i = 0; i < p.size(); ++i)
      next.push_back({p[i].w - kLearningRate * g[i].w, p[i].b - kLearningRate * g[i].b});
    return std::make_tuple(next, loss);
  };
}

/// "w0 0.31, w1 0.28": one idle fraction per worker.
std::string format_fractions(const std::vector<double>& f) {
  std::string s;
  char buf[32];
  for (size_t w = 0; w < f.size(); ++w) {
    std::snprintf(buf, sizeof buf, "%sw%zu %.2f", w ? ", " : "", w, f[w]);
    s += buf;
  }
  return s;
}

/// Trains `steps` steps under `named`, writes the last step's timeline and returns whether
/// the loss fell.
bool run_schedule(const NamedSchedule& named, const pp::RemoteMpmdMesh& mesh, const Batch& batch, int steps,
                  const std::string& out_dir) {
  const int num_stages = stages_for(named.schedule);
  pp::PipelineOptions options;
  options.num_microbatches = kMicrobatches;
  options.batch_argnums = {1};
  options.donate_argnums = {0};  // each step's parameters are replaced by its result
  options.schedule = named.schedule;
  auto step = pp::pipelined(make_train_step(num_stages), mesh, options);

  Params params = init_params();
  float first = 0, last = 0;
  for (int i = 0; i < steps; ++i) {
    auto [next, loss] = step(params, batch);
    last = loss.item<float>();
    if (i == 0) first = last;
    std::cout << "schedule " << named.name << " step " << i << " loss " << last << "\n";
    params = next;  // ArrayRefs: the parameters stay on the workers between steps
  }

  const pp::Simulation sim = pp::simulate(step.plan());
  const std::vector<pp::TimelineEvent> events = step.timeline();
  // The simulator's unit-time tasks against wall-clock: stages this small are dominated by
  // dispatch and transfer latency, so the measured idle time is well above the simulated.
  const std::vector<double> measured = pp::idle_fractions(events, kWorkers);
  std::cout << "schedule " << named.name << " stages " << num_stages << " idle fraction simulated "
            << format_fractions(sim.idle_fraction) << "; measured " << format_fractions(measured) << "\n";
  const std::string base = out_dir + "/pipeline_" + named.name;
  pipeline_mlp::write_gantt_png(base + ".png", events, kWorkers);
  pp::write_chrome_trace(base + ".json", events);
  std::cout << "schedule " << named.name << " wrote " << base << ".png and " << base << ".json\n";

  const bool fell = last < first;
  if (!fell) std::cout << "schedule " << named.name << ": the loss did not fall (" << first << " -> " << last << ")\n";
  return fell;
}

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "%s\nusage: mpirun -np 3 pipeline_mlp [all|gpipe|1f1b|eager_1f1b|interleaved_1f1b|zero_bubble_h1]\n"
               "                                [--steps N] [--out DIR]\n",
               error.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});

  std::string which = "all", out_dir = ".";
  int steps = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" || arg == "--steps") {
      if (i + 1 == argc) usage(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--out") out_dir = value;
      else steps = std::atoi(value.c_str());
    } else if (arg.rfind("--", 0) == 0) {
      usage("unknown option " + arg);
    } else {
      which = arg;
    }
  }
  if (steps < 2) usage("--steps must be at least 2 (the loss is compared between the first and last)");

  std::vector<NamedSchedule> chosen;
  for (auto& s : all_schedules())
    if (which == "all" || which == s.name) chosen.push_back(s);
  if (chosen.empty()) usage("unknown schedule '" + which + "'");

  pp::RemoteMpmdMesh mesh(kWorkers, {1}, {"data"});
  const Batch batch = make_batch();
  bool ok = true;
  for (auto& s : chosen) ok = run_schedule(s, mesh, batch, steps, out_dir) && ok;
  if (!ok) return 1;
  std::cout << "pipeline_mlp: ok\n";
  return 0;
}
