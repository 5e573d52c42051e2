// Stage slicing and instruction streams, on one process: the segments of a staged training
// step, every schedule's streams checked (matched transfers, no use after free), the
// activation memory each schedule keeps in flight, and the slicing errors.
#include <gtest/gtest.h>

#include <set>

#include "compiler/jit_primitive.h"
#include "ir/serialize.h"
#include "pipeline/instructions.h"
#include "pipeline/slicing.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;
namespace ppd = tessel::pipeline::detail;

namespace {

// An MLP of `stages` layers with a marker between layers, value_and_grad of a mean loss.
ppd::StagedProgram staged_mlp(int stages, bool split) {
  std::vector<ts::Array> ws;
  for (int s = 0; s < stages; ++s) ws.push_back(ts::ones({4, 4}, ts::f32) * 0.1f);
  auto loss = [stages](const std::vector<ts::Array>& w, const ts::Array& x) {
    ts::Array h = x;
    for (int s = 0; s < stages; ++s) {
      if (s > 0) h = pp::enter_stage(h);
      h = ts::tanh(ts::matmul(h, w[size_t(s)]));
    }
    return ts::mean(h * h);
  };
  auto step = [&](const std::vector<ts::Array>& w, const ts::Array& x) { return ts::value_and_grad(loss)(w, x); };
  ts::Program p = ts::make_program(step, ws, ts::ones({2, 4}, ts::f32));
  std::vector<bool> batch(size_t(stages), false);
  batch.push_back(true);
  return ppd::slice_program(ts::compiler::program_of(p), batch, split);
}

int count(const ppd::Streams& s, int w, ppd::Op op) {
  int n = 0;
  for (const auto& in : s.per_worker[size_t(w)]) n += in.op == op;
  return n;
}

TEST(PipelineSlicing, EachStageGetsItsForwardAndBackward) {
  ppd::StagedProgram st = staged_mlp(3, false);
  EXPECT_EQ(st.num_stages, 3);
  ASSERT_EQ(st.segments.size(), 6u);
  for (int s = 0; s < 3; ++s) {
    const auto& f = st.segments[size_t(st.segment(pp::TaskKind::forward, s))];
    const auto& b = st.segments[size_t(st.segment(pp::TaskKind::backward, s))];
    int fwd_products = 0, bwd_products = 0;
    for (const auto& e : f.program->eqns) fwd_products += e.prim->name == "dot_general";
    for (const auto& e : b.program->eqns) bwd_products += e.prim->name == "dot_general";
    EXPECT_EQ(fwd_products, 1) << "stage " << s;
    // The weight gradient, and the input gradient except in the first stage.
    EXPECT_EQ(bwd_products, s == 0 ? 1 : 2) << "stage " << s;
  }
  // The loss is the last stage's forward output; the gradients come from the backwards.
  EXPECT_EQ(st.values[size_t(st.outputs[0])].producer, st.segment(pp::TaskKind::forward, 2));
  for (int s = 0; s < 3; ++s)
    EXPECT_EQ(st.values[size_t(st.outputs[size_t(1 + s)])].producer, st.segment(pp::TaskKind::backward, s));
  EXPECT_TRUE(st.output_per_microbatch[0]);
}

TEST(PipelineSlicing, ZeroBubbleSplitsTheBackward) {
  ppd::StagedProgram st = staged_mlp(2, true);
  const auto& bi1 = st.segments[size_t(st.segment(pp::TaskKind::backward_input, 1))];
  const auto& bw1 = st.segments[size_t(st.segment(pp::TaskKind::backward_weight, 1))];
  const auto& bi0 = st.segments[size_t(st.segment(pp::TaskKind::backward_input, 0))];
  EXPECT_FALSE(bi1.program->eqns.empty());
  EXPECT_FALSE(bw1.program->eqns.empty());
  EXPECT_TRUE(bi0.empty());  // nothing to send before stage 0
  EXPECT_EQ(st.values[size_t(st.outputs[2])].producer, st.segment(pp::TaskKind::backward_weight, 1));
}

// A weight read by the first and the last stage (a tied embedding): its gradient is the sum
// of both stages' contributions, an AllReduce between their workers, and its SGD update the
// epilogue.
ts::Program tied_program(int stages) {
  auto loss = [stages](const std::vector<ts::Array>& w, const ts::Array& x) {
    ts::Array h = ts::tanh(ts::matmul(x, w[0]));
    for (int s = 1; s < stages; ++s) h = ts::tanh(ts::matmul(pp::enter_stage(h), w[size_t(s)]));
    return ts::mean(ts::matmul(h, ts::transpose(w[0])));
  };
  auto step = [loss](const std::vector<ts::Array>& w, const ts::Array& x) {
    auto [l, g] = ts::value_and_grad(loss)(w, x);
    std::vector<ts::Array> next;
    for (size_t i = 0; i < w.size(); ++i) next.push_back(w[i] - 0.5f * g[i]);
    return std::make_tuple(next, l);
  };
  std::vector<ts::Array> w(size_t(stages), ts::ones({4, 4}, ts::f32) * 0.1f);
  return ts::make_program(step, w, ts::ones({2, 4}, ts::f32));
}

TEST(PipelineSlicing, AWeightSharedByTwoStagesBecomesACrossStageSum) {
  for (bool split : {false, true}) {
    ppd::StagedProgram st = ppd::slice_program(ts::compiler::program_of(tied_program(2)), {false, false, true}, split);
    ASSERT_EQ(st.sums.size(), 1u);
    ASSERT_EQ(st.sums[0].parts.size(), 2u);
    std::set<int> stages;
    for (int v : st.sums[0].parts) stages.insert(st.segments[size_t(st.values[size_t(v)].producer)].stage);
    EXPECT_EQ(stages, (std::set<int>{0, 1}));
    ASSERT_GE(st.epilogue, 0);
    EXPECT_EQ(st.segments[size_t(st.epilogue)].stage, 0);  // where the first part is computed
    // The updated tied weight comes from the epilogue; the other weight from a backward.
    EXPECT_EQ(st.values[size_t(st.outputs[0])].producer, st.epilogue);
    EXPECT_NE(st.values[size_t(st.outputs[1])].producer, st.epilogue);
  }
}

TEST(PipelineStreams, CrossStageSumsAreAllReducesInEverySchedule) {
  struct Case {
    pp::Schedule schedule;
    int workers, stages;
  };
  for (const Case& c : std::vector<Case>{{pp::GPipe{}, 2, 2},
                                         {pp::OneF1B{}, 3, 3},
                                         {pp::ZeroBubbleH1{}, 2, 2},
                                         {pp::Interleaved1F1B{2}, 2, 4}}) {
    const bool split = std::holds_alternative<pp::ZeroBubbleH1>(c.schedule);
    std::vector<bool> batch(size_t(c.stages), false);
    batch.push_back(true);
    ppd::StagedProgram st = ppd::slice_program(ts::compiler::program_of(tied_program(c.stages)), batch, split);
    pp::Plan plan = pp::make_plan(c.schedule, c.workers, c.stages, 4);
    ppd::Streams s = ppd::make_streams(st, plan, {});
    EXPECT_NO_THROW(ppd::check_streams(s, st)) << s.to_string();
    const int first = plan.stage_worker[0], last = plan.stage_worker[size_t(c.stages - 1)];
    for (int w = 0; w < c.workers; ++w)
      EXPECT_EQ(count(s, w, ppd::Op::all_reduce), w == first || w == last ? 1 : 0) << "worker " << w;
    EXPECT_NE(s.to_string().find("run epilogue"), std::string::npos);
    // A worker left out of the reduction makes the check fail.
    ppd::Streams broken = s;
    auto& wl = broken.per_worker[size_t(last)];
    wl.erase(std::find_if(wl.begin(), wl.end(), [](const auto& in) { return in.op == ppd::Op::all_reduce; }));
    EXPECT_THROW(ppd::check_streams(broken, st), ts::Error);
  }
}

// Data-parallel replicas: each gradient's all-reduce among the replicas is started after its
// last accumulation and waited for after the worker's last task. Under interleaved 1F1B a
// worker holds two stages, and the later stage's gradients finish first: their all-reduce
// travels while the earlier stage's backward tasks run. Without overlap it is one blocking
// all_reduce on the spot.
TEST(PipelineStreams, ReplicaReductionsOverlapTheRemainingBackwardTasks) {
  ppd::StagedProgram st = staged_mlp(4, false);
  pp::Plan plan = pp::make_plan(pp::Interleaved1F1B{2}, 2, 4, 4);
  ppd::Streams s = ppd::make_streams(st, plan, {}, 1, /*replicas=*/2);
  ASSERT_NO_THROW(ppd::check_streams(s, st)) << s.to_string();
  for (int w = 0; w < 2; ++w) {
    const auto& stream = s.per_worker[size_t(w)];
    EXPECT_EQ(count(s, w, ppd::Op::all_reduce), 0);
    EXPECT_EQ(count(s, w, ppd::Op::all_reduce_start), count(s, w, ppd::Op::all_reduce_wait));
    EXPECT_GT(count(s, w, ppd::Op::all_reduce_start), 0);
    // Backward tasks run between the first start and the first wait.
    auto start = std::find_if(stream.begin(), stream.end(), [](auto& in) { return in.op == ppd::Op::all_reduce_start; });
    auto wait = std::find_if(stream.begin(), stream.end(), [](auto& in) { return in.op == ppd::Op::all_reduce_wait; });
    const auto between = std::count_if(start, wait, [](auto& in) {
      return in.op == ppd::Op::run && in.task.kind == pp::TaskKind::backward;
    });
    EXPECT_GT(between, 0) << "worker " << w << "\n" << s.to_string();
    // Every wait comes after the worker's last task.
    auto last_run = std::find_if(stream.rbegin(), stream.rend(), [](auto& in) { return in.op == ppd::Op::run; });
    EXPECT_LT(last_run.base() - stream.begin(), wait - stream.begin());
  }
  ppd::Streams blocking = ppd::make_streams(st, plan, {}, 1, 2, /*overlap_reductions=*/false);
  ASSERT_NO_THROW(ppd::check_streams(blocking, st));
  EXPECT_EQ(count(blocking, 0, ppd::Op::all_reduce_start), 0);
  EXPECT_EQ(count(blocking, 0, ppd::Op::all_reduce), count(s, 0, ppd::Op::all_reduce_start));
  // A wait removed (or a start without its wait) fails the check; so does a wait twice.
  ppd::Streams broken = s;
  auto& w0 = broken.per_worker[0];
  auto wait = std::find_if(w0.begin(), w0.end(), [](auto& in) { return in.op == ppd::Op::all_reduce_wait; });
  ppd::Instruction again = *wait;
  w0.insert(wait, again);
  EXPECT_THROW(ppd::check_streams(broken, st), ts::Error);
  broken = s;
  auto& b0 = broken.per_worker[0];
  b0.erase(std::find_if(b0.begin(), b0.end(), [](auto& in) { return in.op == ppd::Op::all_reduce_wait; }));
  EXPECT_THROW(ppd::check_streams(broken, st), ts::Error);
  // The instructions travel as bytes.
  ts::ir::Writer wr;
  ppd::write_stream(wr, s.per_worker[0]);
  ts::ir::Reader rd(wr.bytes(), "test");
  std::vector<ppd::Instruction> back = ppd::read_stream(rd);
  ASSERT_EQ(back.size(), s.per_worker[0].size());
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i].to_string(), s.per_worker[0][i].to_string());
  EXPECT_NE(s.to_string().find("all_reduce_start [%"), std::string::npos) << s.to_string();
  EXPECT_NE(s.to_string().find("all_reduce_wait #"), std::string::npos);
}

TEST(PipelineSlicing, AnEpilogueReadingTheBatchIsRejected) {
  auto loss = [](const ts::Array& w, const ts::Array& x) {
    ts::Array h = pp::enter_stage(ts::tanh(ts::matmul(x, w)));
    return ts::mean(ts::matmul(h, w));
  };
  auto step = [loss](const ts::Array& w, const ts::Array& x) { return ts::grad(loss)(w, x) * ts::mean(x); };
  ts::Program p = ts::make_program(step, ts::ones({4, 4}, ts::f32), ts::ones({2, 4}, ts::f32));
  try {
    ppd::slice_program(ts::compiler::program_of(p), {false, true}, false);
    FAIL() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("epilogue"), std::string::npos) << e.what();
  }
}

TEST(PipelineStreams, EveryScheduleGivesMatchedStreams) {
  struct Case {
    pp::Schedule schedule;
    int workers, stages, microbatches;
  };
  std::vector<Case> cases = {{pp::GPipe{}, 2, 2, 4},        {pp::OneF1B{}, 2, 2, 4},     {pp::OneF1B{}, 4, 4, 8},
                             {pp::Eager1F1B{}, 3, 3, 5},    {pp::ZeroBubbleH1{}, 2, 2, 4},
                             {pp::Interleaved1F1B{2}, 2, 4, 4}};
  for (const Case& c : cases) {
    ppd::StagedProgram st = staged_mlp(c.stages, std::holds_alternative<pp::ZeroBubbleH1>(c.schedule));
    pp::Plan plan = pp::make_plan(c.schedule, c.workers, c.stages, c.microbatches);
    ppd::Streams s = ppd::make_streams(st, plan, {});
    EXPECT_NO_THROW(ppd::check_streams(s, st)) << plan.to_string();
    int sends = 0, recvs = 0;
    for (int w = 0; w < c.workers; ++w) {
      sends += count(s, w, ppd::Op::send);
      recvs += count(s, w, ppd::Op::recv);
      EXPECT_GT(count(s, w, ppd::Op::run), 0);
    }
    EXPECT_EQ(sends, recvs);
    // Each boundary carries an activation forward and a cotangent back per microbatch.
    EXPECT_EQ(sends, 2 * (c.stages - 1) * c.microbatches) << plan.to_string();
    EXPECT_EQ(s.num_transfers, sends);
  }
}

TEST(PipelineStreams, TheCheckCatchesUnmatchedTransfersAndUseAfterFree) {
  ppd::StagedProgram st = staged_mlp(2, false);
  ppd::Streams s = ppd::make_streams(st, pp::make_plan(pp::OneF1B{}, 2, 2, 2), {});
  ppd::Streams no_recv = s;
  auto& w1 = no_recv.per_worker[1];
  w1.erase(std::find_if(w1.begin(), w1.end(), [](const auto& in) { return in.op == ppd::Op::recv; }));
  EXPECT_THROW(ppd::check_streams(no_recv, st), ts::Error);
  ppd::Streams early_free = s;
  auto& w0 = early_free.per_worker[0];
  auto run = std::find_if(w0.begin(), w0.end(), [](const auto& in) { return in.op == ppd::Op::run; });
  ppd::Instruction del;
  del.op = ppd::Op::del;
  del.ins = {run->ins[0]};
  w0.insert(run, del);
  try {
    ppd::check_streams(early_free, st);
    FAIL() << "expected an Error";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find("after it was freed"), std::string::npos) << e.what();
  }
}

TEST(PipelineStreams, OneF1BBoundsTheActivationsInFlight) {
  const int P = 4, M = 8;
  ppd::StagedProgram st = staged_mlp(P, false);
  ppd::Streams one = ppd::make_streams(st, pp::make_plan(pp::OneF1B{}, P, P, M), {});
  ppd::Streams gpipe = ppd::make_streams(st, pp::make_plan(pp::GPipe{}, P, P, M), {});
  std::vector<int> peak_1f1b = ppd::peak_live_microbatches(one, st);
  std::vector<int> peak_gpipe = ppd::peak_live_microbatches(gpipe, st);
  for (int w = 0; w < P; ++w) {
    EXPECT_LE(peak_1f1b[size_t(w)], P - w) << "worker " << w;
    EXPECT_EQ(peak_gpipe[size_t(w)], M) << "worker " << w;
  }
}

TEST(PipelineStreams, PrintAndTravel) {
  ppd::StagedProgram st = staged_mlp(2, false);
  ppd::Streams s = ppd::make_streams(st, pp::make_plan(pp::GPipe{}, 2, 2, 2), {true});
  const std::string text = s.to_string();
  EXPECT_NE(text.find("worker 1:"), std::string::npos);
  EXPECT_NE(text.find("run F0(m=0)"), std::string::npos);
  EXPECT_NE(text.find("send"), std::string::npos);
  EXPECT_NE(text.find("(donated)"), std::string::npos);
  ts::ir::Writer w;
  ppd::write_stream(w, s.per_worker[0]);
  ts::ir::Reader r(w.bytes(), "test");
  auto back = ppd::read_stream(r);
  ASSERT_EQ(back.size(), s.per_worker[0].size());
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i].to_string(), s.per_worker[0][i].to_string());
}

}  // namespace

