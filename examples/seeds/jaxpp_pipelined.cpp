// The JaxPP design seed (../shared/seeds/jaxpp_design.md) in C++: its Runtime section's
// cell, a RemoteMpmdMesh of 4 workers and `pipelined(train_step, ...)` with
// num_microbatches, batch_argnums=(1,), donate_argnums=(0,) and a 1F1B schedule, driven
// from a single controller (docs/pipeline.md, docs/single_controller.md). The model is a
// 4-layer MLP with an enter_stage marker between layers, so each worker runs one stage; the
// returned state is a tree of ArrayRefs that the next step takes back.
//
// Run: mpirun -np 5 ./jaxpp_pipelined    (rank 0 is the driver, ranks 1..4 the workers)
//
// With --dp, the data-parallel variant: RemoteMpmdMesh(2, 2, ...) is a pipeline of 2 stages
// (one marker, 2 layers per stage) replicated on 2 x 2 workers; each replica takes half of
// the microbatches and the gradients are all-reduced between the replicas in the instruction
// stream (`all_reduce ... x2 replicas (mean)`). Same command line plus --dp.
//
// Each worker owns one device here (the seed's (1, 2) local meshes need TESSEL_CPU_DEVICES=2
// and would change nothing below but the mesh shape).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;

namespace {

constexpr int kWorkers = 4;
constexpr int kLayers = 4;  // one stage per layer, one stage per worker (--dp: 2 layers per stage)
int layers_per_stage = 1;
constexpr int kMicrobatches = 8;
constexpr int kBatch = 64;  // 8 rows per microbatch
constexpr int kSteps = 5;
constexpr float kLearningRate = 0.05f;
const std::vector<int64_t> kWidths = {16, 32, 32, 32, 4};  // in, hidden x 3, out

/// One dense layer's parameters.
struct Layer {
  ts::Array w, b;
};

/// The train state the seed's train_step carries (its `state`): here only the parameters.
struct TrainState {
  std::vector<Layer> layers;
};

/// One batch of inputs and regression targets; batch_argnums={1} splits both along rows.
struct Batch {
  ts::Array x, y;
};

}  // namespace

TESSEL_TREE(Layer, w, b);
TESSEL_TREE(TrainState, layers);
TESSEL_TREE(Batch, x, y);

namespace {

/// Small random weights (scaled by 1/sqrt(fan-in) so tanh stays out of saturation) and zero
/// biases, from a fixed key so every run prints the same losses.
TrainState init_state(const ts::Array& key) {
  TrainState s;
  for (int i = 0; i < kLayers; ++i) {
    ts::Array k = ts::random::fold_in(key, ts::Array(i));
    ts::Array w = ts::random::normal(k, {kWidths[i], kWidths[i + 1]}) / std::sqrt(float(kWidths[i]));
    s.layers.push_back({w, ts::zeros({kWidths[i + 1]}, ts::f32)});
  }
  return s;
}

/// Synthetic regression data: y = sin(x A) for a fixed random A.
Batch make_batch(const ts::Array& key) {
  ts::Array x = ts::random::normal(ts::random::fold_in(key, ts::Array(0)), {kBatch, kWidths.front()});
  ts::Array a = ts::random::normal(ts::random::fold_in(key, ts::Array(1)), {kWidths.front(), kWidths.back()}) / 4.0f;
  return {x, ts::sin(ts::matmul(x, a))};
}

/// The MLP's mean squared error. The enter_stage after every hidden layer (every second with
/// --dp) is all the model change pipelining needs: it cuts the program into stages (and its
/// transpose cuts the backward pass the same way).
ts::Array loss_fn(const TrainState& s, const Batch& batch) {
  ts::Array h = batch.x;
  for (int i = 0; i < kLayers; ++i) {
    h = ts::matmul(h, s.layers[i].w) + s.layers[i].b;
    if (i + 1 < kLayers) {
      h = ts::tanh(h);
      if ((i + 1) % layers_per_stage == 0) h = pp::enter_stage(h);
    }
  }
  ts::Array err = h - batch.y;
  return ts::mean(err * err);
}

/// The seed's train_step: (state, batch) -> (new state, loss), plain SGD. SGD is affine in
/// the gradient, so pipelined's average over microbatches gives the full-batch update.
std::tuple<TrainState, ts::Array> train_step(const TrainState& state, const Batch& batch) {
  auto [loss, grads] = ts::value_and_grad(loss_fn)(state, batch);
  TrainState next;
  for (size_t i = 0; i < state.layers.size(); ++i)
    next.layers.push_back({state.layers[i].w - kLearningRate * grads.layers[i].w,
                           state.layers[i].b - kLearningRate * grads.layers[i].b});
  return {next, loss};
}

/// max |a - b| over every leaf, relative to max |b|; fetching the leaves brings ArrayRefs'
/// values to the driver, so remote and local trees compare alike.
template <class T> double max_relative_difference(const T& a, const T& b) {
  std::vector<ts::Array> la = ts::tree_leaves(a), lb = ts::tree_leaves(b);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    std::vector<float> va = la[i].to_vector<float>(), vb = lb[i].to_vector<float>();
    for (size_t j = 0; j < va.size(); ++j) {
      diff = std::max(diff, double(std::abs(va[j] - vb[j])));
      scale = std::max(scale, double(std::abs(vb[j])));
    }
  }
  return diff / std::max(scale, 1e-30);
}

/// The first `n` lines of `text`: the whole stream is a few hundred lines.
std::string head(const std::string& text, int n) {
  std::istringstream in(text);
  std::string line, out;
  for (int i = 0; i < n && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
  const bool data_parallel = argc > 1 && std::string(argv[1]) == "--dp";
  if (data_parallel) layers_per_stage = 2;

  // 4 stage workers, or (--dp) 2 stage workers x 2 replicas.
  pp::RemoteMpmdMesh mesh = data_parallel ? pp::RemoteMpmdMesh(kWorkers / 2, 2, {1, 1}, {"data", "model"})
                                          : pp::RemoteMpmdMesh(kWorkers, {1, 1}, {"data", "model"});
  if (data_parallel)
    std::cout << "pp " << mesh.pipeline_workers() << " x dp " << mesh.replicas() << " workers\n";
  ts::Mesh global = mesh.global_mesh();
  std::cout << "global mesh shape " << ts::shape_to_string(global.shape()) << ": " << global.to_string() << "\n";

  ts::Array key = ts::random::key(0);
  TrainState state = init_state(ts::random::fold_in(key, ts::Array(1)));
  Batch batch = make_batch(ts::random::fold_in(key, ts::Array(2)));

  // The reference: the same step, unpipelined, on the driver. Taken before the first
  // pipelined call because that call donates (invalidates) `state`.
  auto [ref_state, ref_loss] = ts::jit(train_step)(state, batch);

  // Field by field rather than `{.num_microbatches = ..., .schedule = ...}`: skipping the
  // in/out_shardings between them is a -Wmissing-field-initializers warning under GCC 12.
  pp::PipelineOptions options;
  options.num_microbatches = kMicrobatches;
  options.batch_argnums = {1};
  options.donate_argnums = {0};
  options.schedule = pp::OneF1B{};
  auto pipe_train_step = pp::pipelined(train_step, mesh, options);

  bool ok = true;
  std::vector<float> losses;
  for (int step = 0; step < kSteps; ++step) {
    auto [next, loss] = pipe_train_step(state, batch);
    losses.push_back(loss.item<float>());
    std::cout << "step " << step << " loss " << losses.back() << "\n";
    if (step == 0) {
      const double dloss = std::abs(losses[0] - ref_loss.item<float>()) / std::abs(ref_loss.item<float>());
      const double dstate = max_relative_difference(next, ref_state);
      std::cout << "vs jit(train_step): loss " << ref_loss.item<float>() << ", relative difference " << dloss
                << "; max relative difference of the new state " << dstate << "\n";
      ok = ok && dloss < 1e-5 && dstate < 1e-5;
    }
    state = next;  // ArrayRefs on the workers: the next step reads them where they are
  }
  ok = ok && losses.back() < losses.front();

  std::cout << "instructions (first lines):\n" << head(pipe_train_step.instructions(), 15) << "  ...\n";
  if (data_parallel) {  // the gradient averages between the replicas
    std::istringstream in(pipe_train_step.instructions());
    for (std::string line; std::getline(in, line);)
      if (line.find("all_reduce") != std::string::npos || line.find("worker") == 0) std::cout << line << "\n";
  }
  if (!ok) {
    std::cout << "jaxpp_pipelined: FAILED\n";
    return 1;
  }
  std::cout << "jaxpp_pipelined: ok\n";
  return 0;
}
