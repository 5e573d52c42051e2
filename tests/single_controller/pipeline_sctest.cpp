// pipelined() in a single-controller job (driver + 2 workers, 2 devices each): every
// schedule over several (stages, microbatches) gives the plain jitted step's loss and
// parameters; results are ArrayRefs that go back in (donated); local meshes of 2 devices
// with sharded parameters; the errors of a bad step or batch.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "distributed/controller.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;
namespace ctl = tessel::distributed::controller;

// 1 while the worker's server waits as for long work (a pipelined step runs there), else 0.
ts::Array serving_beside_a_step(const ts::Array& x) {
  return ts::device_put(ts::Array(int(ctl::serving_wait() == ctl::Wait::long_work)), x.sharding());
}
TESSEL_REGISTER_COLOCATED(serving_beside_a_step);

namespace {

// An SGD step on `model.loss`: affine in the gradients, so averaging over microbatches is
// exact.
template <class Model>
std::tuple<std::vector<ts::Array>, ts::Array> sgd_step(const Model& model, const std::vector<ts::Array>& w,
                                                       const ts::Array& x, const ts::Array& y) {
  auto [l, g] = ts::value_and_grad([&model](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) {
    return model.loss(w, x, y);
  })(w, x, y);
  std::vector<ts::Array> next;
  for (size_t i = 0; i < w.size(); ++i) next.push_back(w[i] - 0.5f * g[i]);
  return {next, l};
}

// An MLP of `layers` layers with `stages` stages (markers spread evenly), a mean squared
// loss, and an SGD step: affine in the gradients, so averaging over microbatches is exact.
struct Mlp {
  int layers, stages;
  ts::Array loss(const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) const {
    ts::Array h = x;
    for (int i = 0; i < layers; ++i) {
      if (i > 0 && i % (layers / stages) == 0) h = pp::enter_stage(h);
      h = ts::tanh(ts::matmul(h, w[size_t(i)]));
    }
    ts::Array d = h - y;
    return ts::mean(d * d);
  }
  std::tuple<std::vector<ts::Array>, ts::Array> step(const std::vector<ts::Array>& w, const ts::Array& x,
                                                     const ts::Array& y) const {
    return sgd_step(*this, w, x, y);
  }
};

// The Mlp's SGD step as a callable, and pipelined over `mesh` with the parameters donated.
struct MlpStep {
  Mlp mlp;
  std::tuple<std::vector<ts::Array>, ts::Array> operator()(const std::vector<ts::Array>& w, const ts::Array& x,
                                                          const ts::Array& y) const {
    return mlp.step(w, x, y);
  }
};
auto donating_pipeline(const MlpStep& step, const pp::RemoteMpmdMesh& mesh, int microbatches) {
  pp::PipelineOptions opts;
  opts.num_microbatches = microbatches;
  opts.batch_argnums = {1, 2};
  opts.donate_argnums = {0};
  return pp::pipelined(step, mesh, opts);
}

std::vector<ts::Array> weights(int layers, int width) {
  std::vector<ts::Array> w;
  for (int i = 0; i < layers; ++i)
    w.push_back(ts::sin(ts::reshape(ts::arange(width * width, ts::f32), {width, width}) * float(0.37 + i)) *
                (1.0f / std::sqrt(float(width))));
  return w;
}

void expect_close(const ts::Array& got, const ts::Array& want, const std::string& what) {
  auto a = got.to_vector<float>(), b = want.to_vector<float>();
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f * (1 + std::fabs(b[i]))) << what << " [" << i << "]";
}

std::string name_of(const pp::Schedule& s) {
  const char* names[] = {"GPipe", "OneF1B", "Eager1F1B", "Interleaved1F1B", "ZeroBubbleH1"};
  return names[s.index()];
}

// A schedule with its stage and microbatch counts.
struct Case {
  pp::Schedule schedule;
  int stages, microbatches;
};

// Inputs and regression targets of `rows` x `width`.
std::pair<ts::Array, ts::Array> regression_batch(int rows, int width) {
  return {ts::reshape(ts::cos(ts::arange(rows * width, ts::f32)), {rows, width}),
          ts::reshape(ts::sin(ts::arange(rows * width, ts::f32) * 0.3f), {rows, width}) * 0.5f};
}

// The case's schedule and microbatches, x and y split.
pp::PipelineOptions options_for(const Case& c) {
  pp::PipelineOptions opts;
  opts.num_microbatches = c.microbatches;
  opts.batch_argnums = {1, 2};
  opts.schedule = c.schedule;
  return opts;
}

TEST(Pipelined, EveryScheduleMatchesThePlainStep) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const std::vector<Case> cases = {{pp::GPipe{}, W, 2 * W},      {pp::OneF1B{}, W, 2 * W},
                                   {pp::OneF1B{}, W, 1},         {pp::Eager1F1B{}, W, 3},
                                   {pp::ZeroBubbleH1{}, W, 2 * W}, {pp::Interleaved1F1B{2}, 2 * W, 2 * W}};
  const int width = 8;
  for (const Case& c : cases) {
    const int batch = 4 * c.microbatches;
    Mlp mlp{2 * c.stages, c.stages};
    auto w = weights(mlp.layers, width);
    auto [x, y] = regression_batch(batch, width);
    auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return mlp.step(w, x, y); };
    auto [w_ref, loss_ref] = ts::jit(plain)(w, x, y);
    auto step = pp::pipelined(plain, mesh, options_for(c));
    auto [w_new, loss] = step(w, x, y);
    const std::string what = name_of(c.schedule) + " stages " + std::to_string(c.stages) + " microbatches " +
                             std::to_string(c.microbatches);
    expect_close(loss, loss_ref, what + " loss");
    ASSERT_EQ(w_new.size(), w_ref.size());
    for (size_t i = 0; i < w_new.size(); ++i) expect_close(w_new[i], w_ref[i], what + " w" + std::to_string(i));
    // Each stage's weights stay on the worker that runs it.
    for (size_t i = 0; i < w_new.size(); ++i) {
      const int stage = int(i) / (mlp.layers / c.stages);
      EXPECT_EQ(w_new[i].devices()[0].process_index(), step.plan().stage_worker[size_t(stage)] + 1) << what;
    }
    EXPECT_NE(step.instructions().find("send"), std::string::npos);
    EXPECT_FALSE(step.timeline().empty());
  }
}

// Activations and gradients of 64 x 128 floats (32 KiB a transfer, above MPI's eager size):
// while a task computes, a helper thread drives the transfers the step posted, and several
// steps in a row still give the plain step's results in every schedule.
TEST(Pipelined, LargeTransfersMatchThePlainStep) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const std::vector<Case> cases = {{pp::GPipe{}, W, 2 * W}, {pp::OneF1B{}, W, 2 * W}, {pp::ZeroBubbleH1{}, W, 2 * W}};
  const int width = 128, rows = 64;
  for (const Case& c : cases) {
    Mlp mlp{2 * c.stages, c.stages};
    auto [x, y] = regression_batch(rows * c.microbatches, width);
    auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return mlp.step(w, x, y); };
    auto step = pp::pipelined(plain, mesh, options_for(c));
    std::vector<ts::Array> w = weights(mlp.layers, width), w_ref = w;
    const std::string what = name_of(c.schedule) + " width " + std::to_string(width);
    for (int k = 0; k < 3; ++k) {
      auto [w_next_ref, loss_ref] = ts::jit(plain)(w_ref, x, y);
      auto [w_next, loss] = step(w, x, y);
      expect_close(loss, loss_ref, what + " step " + std::to_string(k) + " loss");
      for (size_t i = 0; i < w_next.size(); ++i)
        expect_close(w_next[i], w_next_ref[i], what + " step " + std::to_string(k) + " w" + std::to_string(i));
      w = w_next;
      w_ref = w_next_ref;
    }
  }
}

TEST(Pipelined, ResultsGoBackInAndDonatedOnesAreGone) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const MlpStep plain{Mlp{W, W}};
  auto step = donating_pipeline(plain, mesh, 4);
  auto w = weights(W, 8);
  ts::Array x = ts::ones({16, 8}, ts::f32) * 0.3f, y = ts::zeros({16, 8}, ts::f32);
  auto [w1, l1] = step(w, x, y);
  auto [w2, l2] = step(w1, x, y);  // ArrayRefs in, donated
  auto [r1, rl1] = ts::jit(plain)(w, x, y);
  auto [r2, rl2] = ts::jit(plain)(r1, x, y);
  expect_close(l2, rl2, "second loss");
  for (size_t i = 0; i < w2.size(); ++i) expect_close(w2[i], r2[i], "second step w" + std::to_string(i));
  EXPECT_LT(l2.item<float>(), l1.item<float>());
  try {
    (void)w1[0].to_vector<float>();
    FAIL() << "a donated ArrayRef was still readable";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find("donated"), std::string::npos) << e.what();
  }
  // jit on ArrayRefs runs on their worker.
  ts::Array doubled = ts::jit([](const ts::Array& a) { return a * 2.0f; })(w2[0]);
  expect_close(doubled, r2[0] * 2.0f, "jit on an ArrayRef");
}

TEST(Pipelined, ShardedParametersOnLocalMeshesOfTwoDevices) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {2}, {"model"});
  EXPECT_EQ(mesh.global_mesh().shape(), (ts::Shape{W, 2}));
  Mlp mlp{W, W};
  auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return mlp.step(w, x, y); };
  pp::PipelineOptions opts;
  opts.num_microbatches = 2;
  opts.batch_argnums = {1, 2};
  for (int i = 0; i < W; ++i) opts.in_shardings.push_back(ts::P(ts::none, "model"));
  auto w = weights(W, 8);
  ts::Array x = ts::ones({8, 8}, ts::f32) * 0.2f, y = ts::ones({8, 8}, ts::f32) * 0.1f;
  auto [w_new, loss] = pp::pipelined(plain, mesh, opts)(w, x, y);
  auto [w_ref, loss_ref] = ts::jit(plain)(w, x, y);
  expect_close(loss, loss_ref, "loss");
  for (size_t i = 0; i < w_new.size(); ++i) expect_close(w_new[i], w_ref[i], "w" + std::to_string(i));
}

// A tied embedding: w[0] ([8, 6]) embeds in the first stage and, transposed, projects back in
// the last; its gradient is the sum of both stages' contributions (an AllReduce between their
// workers) and its SGD update runs once, after the microbatches (the epilogue).
struct TiedMlp {
  int stages;
  ts::Array loss(const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) const {
    ts::Array h = ts::tanh(ts::matmul(x, w[0]));
    for (int s = 1; s < stages; ++s) h = ts::tanh(ts::matmul(pp::enter_stage(h), w[size_t(s)]));
    ts::Array d = ts::matmul(h, ts::transpose(w[0])) - y;
    return ts::mean(d * d);
  }
  std::tuple<std::vector<ts::Array>, ts::Array> step(const std::vector<ts::Array>& w, const ts::Array& x,
                                                     const ts::Array& y) const {
    return sgd_step(*this, w, x, y);
  }
};

TEST(Pipelined, TiedEmbeddingMatchesThePlainStepInEverySchedule) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const std::vector<Case> cases = {{pp::GPipe{}, W, 2 * W},        {pp::OneF1B{}, W, 2 * W},
                                   {pp::Eager1F1B{}, W, 3},        {pp::ZeroBubbleH1{}, W, 2 * W},
                                   {pp::Interleaved1F1B{2}, 2 * W, 2 * W}};
  for (const Case& c : cases) {
    const int batch = 2 * c.microbatches;
    TiedMlp mlp{c.stages};
    std::vector<ts::Array> w{ts::sin(ts::reshape(ts::arange(48, ts::f32), {8, 6}) * 0.7f) * 0.5f};
    for (int s = 1; s < c.stages; ++s) w.push_back(weights(s + 1, 6).back());
    auto [x, y] = regression_batch(batch, 8);
    auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return mlp.step(w, x, y); };
    auto [w_ref, loss_ref] = ts::jit(plain)(w, x, y);
    auto step = pp::pipelined(plain, mesh, options_for(c));
    auto [w_new, loss] = step(w, x, y);
    const std::string what = "tied " + name_of(c.schedule);
    expect_close(loss, loss_ref, what + " loss");
    ASSERT_EQ(w_new.size(), w_ref.size());
    for (size_t i = 0; i < w_new.size(); ++i) expect_close(w_new[i], w_ref[i], what + " w" + std::to_string(i));
    EXPECT_NE(step.instructions().find("all_reduce"), std::string::npos) << what;
    // The results go back in: a second step from the ArrayRefs.
    auto [w2, loss2] = step(w_new, x, y);
    auto [w2_ref, loss2_ref] = ts::jit(plain)(w_ref, x, y);
    expect_close(loss2, loss2_ref, what + " second loss");
    expect_close(w2[0], w2_ref[0], what + " second step tied weight");
  }
}

// Data parallelism: pp stage workers x 2 replicas (pp = 2 under `mpirun -np 5`, 1 under
// -np 3), each replica on half of the microbatches, the gradients all-reduced among the
// replicas: the plain jitted step's loss and parameters for every schedule, for the MLP and
// the tied embedding, over two steps (the second from the returned ArrayRefs).
TEST(PipelinedDp, ReplicasMatchThePlainStepInEverySchedule) {
  const int workers = ts::process_count() - 1, dp = 2, pp = workers >= 4 ? 2 : 1;
  if (workers < dp) GTEST_SKIP() << "needs 2 workers";
  pp::RemoteMpmdMesh mesh(pp, dp, {1}, {"model"});
  EXPECT_EQ(mesh.num_workers(), pp * dp);
  EXPECT_EQ(mesh.replicas(), dp);
  std::vector<pp::Schedule> schedules = {pp::GPipe{}, pp::OneF1B{}, pp::Eager1F1B{}, pp::ZeroBubbleH1{}};
  if (pp > 1) schedules.push_back(pp::Interleaved1F1B{2});
  for (const pp::Schedule& schedule : schedules) {
    const int stages = pp * (std::holds_alternative<pp::Interleaved1F1B>(schedule) ? 2 : 1), micro = 4, batch = 8;
    for (bool tied : {false, true}) {
      Mlp mlp{stages, stages};
      TiedMlp tmlp{stages};
      std::vector<ts::Array> w = weights(stages, 8);
      auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) {
        return tied ? tmlp.step(w, x, y) : mlp.step(w, x, y);
      };
      ts::Array x = ts::reshape(ts::cos(ts::arange(batch * 8, ts::f32)), {batch, 8});
      ts::Array y = ts::reshape(ts::sin(ts::arange(batch * 8, ts::f32) * 0.3f), {batch, 8}) * 0.5f;
      pp::PipelineOptions opts;
      opts.num_microbatches = micro;
      opts.batch_argnums = {1, 2};
      opts.donate_argnums = {0};
      opts.schedule = schedule;
      auto step = pp::pipelined(plain, mesh, opts);
      auto [w1, l1] = step(w, x, y);
      auto [w2, l2] = step(w1, x, y);
      auto [r1, rl1] = ts::jit(plain)(w, x, y);
      auto [r2, rl2] = ts::jit(plain)(r1, x, y);
      const std::string what = std::string(tied ? "tied " : "") + name_of(schedule) + " pp " + std::to_string(pp) + " dp 2";
      expect_close(l1, rl1, what + " loss");
      expect_close(l2, rl2, what + " second loss");
      for (size_t i = 0; i < w2.size(); ++i) expect_close(w2[i], r2[i], what + " w" + std::to_string(i));
      EXPECT_NE(step.instructions().find("replicas (mean)"), std::string::npos) << what;
    }
  }
  pp::PipelineOptions odd;
  odd.num_microbatches = 3;
  odd.batch_argnums = {1, 2};
  Mlp mlp{pp, pp};
  auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return mlp.step(w, x, y); };
  try {
    pp::pipelined(plain, mesh, odd)(weights(pp, 4), ts::ones({6, 4}, ts::f32), ts::ones({6, 4}, ts::f32));
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("give a multiple of 2"), std::string::npos) << e.what();
  }
}

// The replicas' gradient all-reduces overlapped with the remaining backward tasks
// (all_reduce_start ... all_reduce_wait, the default) give the same bits as reducing on the
// spot (overlap_reductions = false), and the plain step's values, over two steps.
TEST(PipelinedDp, OverlappedReductionsEqualBlockingOnes) {
  const int workers = ts::process_count() - 1, dp = 2, pp = workers >= 4 ? 2 : 1;
  if (workers < dp) GTEST_SKIP() << "needs 2 workers";
  pp::RemoteMpmdMesh mesh(pp, dp, {1}, {"model"});
  std::vector<pp::Schedule> schedules = {pp::OneF1B{}, pp::ZeroBubbleH1{}};
  if (pp > 1) schedules.push_back(pp::Interleaved1F1B{2});
  for (const pp::Schedule& schedule : schedules) {
    const int stages = pp * (std::holds_alternative<pp::Interleaved1F1B>(schedule) ? 2 : 1), micro = 4;
    Mlp mlp{stages, stages};
    auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return mlp.step(w, x, y); };
    auto [x, y] = regression_batch(8, 8);
    std::vector<std::vector<float>> got[2];
    for (bool overlap : {true, false}) {
      pp::PipelineOptions opts;
      opts.num_microbatches = micro;
      opts.batch_argnums = {1, 2};
      opts.schedule = schedule;
      opts.overlap_reductions = overlap;
      auto step = pp::pipelined(plain, mesh, opts);
      auto [w1, l1] = step(weights(stages, 8), x, y);
      auto [w2, l2] = step(w1, x, y);
      const std::string text = step.instructions();
      EXPECT_EQ(text.find("all_reduce_start") != std::string::npos, overlap) << text;
      auto& out = got[overlap ? 1 : 0];
      out.push_back(l2.to_vector<float>());
      for (auto& a : w2) out.push_back(a.to_vector<float>());
      if (overlap) {
        auto [r1, rl1] = ts::jit(plain)(weights(stages, 8), x, y);
        auto [r2, rl2] = ts::jit(plain)(r1, x, y);
        expect_close(l2, rl2, name_of(schedule) + " overlapped loss");
        for (size_t i = 0; i < w2.size(); ++i) expect_close(w2[i], r2[i], name_of(schedule) + " overlapped w" + std::to_string(i));
      }
    }
    EXPECT_EQ(got[0], got[1]) << name_of(schedule) << ": overlapped and blocking reductions differ";
  }
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL() << "expected an error containing: " << part;
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// Calls return at once: 4 steps issued back to back (each taking the previous one's donated
// ArrayRefs) give what 4 steps read one by one give, and the plain step's values.
TEST(PipelinedAsync, StepsInFlightEqualSynchronousOnes) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const MlpStep plain{Mlp{2 * W, W}};
  auto step = donating_pipeline(plain, mesh, 4);
  ts::Array x = ts::reshape(ts::cos(ts::arange(16 * 8, ts::f32)), {16, 8});
  ts::Array y = ts::reshape(ts::sin(ts::arange(16 * 8, ts::f32)), {16, 8}) * 0.5f;
  std::vector<ts::Array> in_flight = weights(2 * W, 8), one_by_one = weights(2 * W, 8), ref = weights(2 * W, 8);
  std::vector<ts::Array> losses;
  for (int k = 0; k < 4; ++k) {  // nothing read: every call returns at once
    auto [next, loss] = step(in_flight, x, y);
    in_flight = next;
    losses.push_back(loss);
  }
  for (int k = 0; k < 4; ++k) {
    auto [next, loss] = step(one_by_one, x, y);
    loss.block_until_ready();
    one_by_one = next;
    auto [r, rl] = ts::jit(plain)(ref, x, y);
    ref = r;
    expect_close(losses[size_t(k)], rl, "step " + std::to_string(k) + " loss in flight");
    expect_close(loss, rl, "step " + std::to_string(k) + " loss one by one");
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    expect_close(in_flight[i], ref[i], "w" + std::to_string(i) + " after 4 steps in flight");
    expect_close(one_by_one[i], ref[i], "w" + std::to_string(i) + " after 4 steps one by one");
  }
  EXPECT_FALSE(step.timeline().empty());  // waits for the steps in flight
}

// More steps back to back than may be in flight (8): the workers' step threads take them
// in the order issued, the 9th and 10th calls wait for the oldest, and every loss and the
// final weights equal the plain step's, under GPipe and 1F1B.
TEST(PipelinedAsync, MoreStepsThanMayBeInFlightEqualThePlainStep) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const MlpStep plain{Mlp{2 * W, W}};
  auto [x, y] = regression_batch(16, 8);
  for (const pp::Schedule& schedule : {pp::Schedule(pp::GPipe{}), pp::Schedule(pp::OneF1B{})}) {
    pp::PipelineOptions opts = options_for({schedule, W, 4});
    opts.donate_argnums = {0};
    auto step = pp::pipelined(plain, mesh, opts);
    std::vector<ts::Array> w = weights(2 * W, 8), ref = weights(2 * W, 8), losses;
    for (int k = 0; k < 10; ++k) {
      auto [next, loss] = step(w, x, y);
      w = next;
      losses.push_back(loss);
    }
    for (int k = 0; k < 10; ++k) {
      auto [r, rl] = ts::jit(plain)(ref, x, y);
      ref = r;
      expect_close(losses[size_t(k)], rl, name_of(schedule) + " step " + std::to_string(k) + " loss");
    }
    for (size_t i = 0; i < ref.size(); ++i) expect_close(w[i], ref[i], name_of(schedule) + " w" + std::to_string(i));
  }
}

// A step that fails on a worker (it reads an ArrayRef an earlier step donated) returns like
// any other; the failure comes with the next read of its results and, once the driver has
// collected the step, with the next call, naming the worker; the call after that runs.
TEST(PipelinedAsync, AFailureSurfacesOnTheNextReadAndCall) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  const MlpStep plain{Mlp{W, W}};
  auto step = donating_pipeline(plain, mesh, 2);
  ts::Array x = ts::ones({8, 8}, ts::f32) * 0.3f, y = ts::zeros({8, 8}, ts::f32);
  auto [w1, l1] = step(weights(W, 8), x, y);
  auto [w2, l2] = step(w1, x, y);   // donates w1
  auto [w3, l3] = step(w1, x, y);   // reads the donated w1: fails on the workers, returns here
  expect_error([&] { (void)l3.item<float>(); }, "donated");
  (void)step.timeline();  // collects every step in flight, the failed one included
  expect_error([&] { step(w2, x, y); }, "[pipelined step on worker 0, process 1]");
  auto [w4, l4] = step(w2, x, y);
  EXPECT_TRUE(std::isfinite(l4.item<float>()));
}

// Steps run on the workers' step threads: while one runs or waits its turn, each worker's
// server answers the driver's next calls at once (here a colocated call, which sees the
// steps as long work, so the server sleeps between polls), and polls promptly again once
// they are over.
TEST(PipelinedAsync, TheWorkersAnswerWhileAStepRuns) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  pp::PipelineOptions opts;
  opts.num_microbatches = 8;
  opts.batch_argnums = {1, 2};
  auto step = pp::pipelined(MlpStep{Mlp{2 * W, W}}, mesh, opts);
  auto [x, y] = regression_batch(8 * 256, 256);  // tens of milliseconds of products per worker
  auto mode = ts::colocated::colocated(serving_beside_a_step)
                  .specialize({.out_specs_fn = [](const ts::colocated::Specs& in) { return in; }});
  const ts::Array probe = ts::device_put(ts::Array(5), mesh.local_mesh(0).devices()[0]);
  EXPECT_EQ(mode(probe).item<int>(), 0) << "no step runs";
  auto [w1, l1] = step(weights(2 * W, 256), x, y);
  EXPECT_EQ(mode(probe).item<int>(), 1) << "the server while the step runs";
  // Steps in flight behind it count too: once worker 0 has given the first one's results
  // (its first stage's weights), the next three still run there.
  std::vector<ts::Array> w = w1, losses;
  for (int k = 0; k < 3; ++k) {
    auto [next, loss] = step(w, x, y);
    w = next;
    losses.push_back(loss);
  }
  EXPECT_TRUE(std::isfinite(l1.item<float>()));
  w1[0].block_until_ready();
  EXPECT_EQ(mode(probe).item<int>(), 1) << "the server while the steps in flight run";
  EXPECT_TRUE(std::isfinite(losses.back().item<float>()));
  int seen = 1;  // the step thread ends its long work just after filling the results
  for (auto start = std::chrono::steady_clock::now();
       (seen = mode(probe).item<int>()) != 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(1);)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(seen, 0) << "the server after the step";
}

TEST(Pipelined, ErrorsNameTheFix) {
  const int W = ts::process_count() - 1;
  pp::RemoteMpmdMesh mesh(W, {1}, {"model"});
  Mlp wrong{2 * W, 2 * W};  // twice the stages the schedule places
  auto plain = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return wrong.step(w, x, y); };
  pp::PipelineOptions opts;
  opts.num_microbatches = 4;
  opts.batch_argnums = {1, 2};
  auto w = weights(2 * W, 4);
  ts::Array x = ts::ones({8, 4}, ts::f32), y = ts::ones({8, 4}, ts::f32);
  expect_error([&] { pp::pipelined(plain, mesh, opts)(w, x, y); }, "enter_stage markers");
  Mlp right{W, W};
  auto ok = [&](const std::vector<ts::Array>& w, const ts::Array& x, const ts::Array& y) { return right.step(w, x, y); };
  opts.num_microbatches = 3;
  expect_error([&] { pp::pipelined(ok, mesh, opts)(weights(W, 4), x, y); }, "must divide its leading dimension");
  opts.num_microbatches = 2;
  opts.schedule = pp::Interleaved1F1B{2};
  expect_error([&] { pp::pipelined(ok, mesh, opts)(weights(W, 4), x, y); }, "needs " + std::to_string(2 * W));
  opts.schedule = pp::OneF1B{};
  opts.batch_argnums = {7};
  expect_error([&] { pp::pipelined(ok, mesh, opts)(weights(W, 4), x, y); }, "batch_argnums lists argument 7");
  expect_error([] { pp::RemoteMpmdMesh(64, {1}, {"x"}); }, "worker processes");
  expect_error([] { pp::RemoteMpmdMesh(2, 32, {1}, {"x"}); }, "2 stage workers x 32 replicas");
  expect_error([] { pp::RemoteMpmdMesh(2, 0, {1}, {"x"}); }, "give at least 1 of each");
  expect_error([] { pp::RemoteMpmdMesh(1, {16}, {"x"}); }, "TESSEL_CPU_DEVICES=16");
}

}  // namespace
