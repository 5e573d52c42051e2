// Where the time of asynchronous pipelined steps goes (docs/pipeline.md "Steps in flight"):
// the tiny step of bench/pipeline.cpp, 8 steps issued back to back against 8 synchronous
// ones, with the driver's time to issue each call (the call's return) and to read each loss.
// Not a bench_* program: a diagnostic. Run: mpirun -np 3 pipeline_async [rounds [sync|async]].
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessel/pipeline_measure.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace pp = tessel::pipeline;

namespace {
double now_us() {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count()) / 1e3;
}
}  // namespace

int main(int argc, char** argv) {
  ts::distributed::initialize({.mode = ts::distributed::Mode::single_controller});
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string only = argc > 2 ? argv[2] : "";  // "sync" or "async": that mode alone
  pp::RemoteMpmdMesh mesh(2, {1}, {"x"});
  pp::PipelineOptions opts;
  opts.num_microbatches = 8;
  opts.batch_argnums = {1};
  auto step = [](const std::vector<ts::Array>& w, const ts::Array& x) {
    auto loss = [](const std::vector<ts::Array>& wx) {
      ts::Array h = wx.back();
      for (int i = 0; i < 2; ++i) {
        if (i == 1) h = pp::enter_stage(h);
        h = ts::tanh(ts::matmul(h, wx[size_t(i)]));
      }
      return ts::mean(h * h);
    };
    std::vector<ts::Array> wx = w;
    wx.push_back(x);
    return ts::value_and_grad(loss)(wx);
  };
  auto tiny = pp::pipelined(step, mesh, opts);
  std::vector<ts::Array> w(2, ts::ones({4, 4}, ts::f32) * 0.1f);
  ts::Array x = ts::ones({32, 4}, ts::f32);
  std::get<0>(tiny(w, x)).block_until_ready();
  for (int r = 0; r < rounds; ++r)
    for (bool back_to_back : {false, true}) {
      if ((only == "sync" && back_to_back) || (only == "async" && !back_to_back)) continue;
      std::vector<double> issue, read;
      std::vector<ts::Array> losses;
      const double t0 = now_us();
      for (int k = 0; k < 8; ++k) {
        const double a = now_us();
        losses.push_back(std::get<0>(tiny(w, x)));
        const double b = now_us();
        issue.push_back(b - a);
        if (!back_to_back) {
          losses.back().block_until_ready();
          read.push_back(now_us() - b);
        }
      }
      for (auto& l : losses)
        if (back_to_back) {
          const double a = now_us();
          l.block_until_ready();
          read.push_back(now_us() - a);
        }
      const double total = now_us() - t0;
      std::printf("%s total %7.0f us  issue:", back_to_back ? "async" : "sync ", total);
      for (double v : issue) std::printf(" %5.0f", v);
      std::printf("  read:");
      for (double v : read) std::printf(" %5.0f", v);
      std::printf("\n");
    }
  return 0;
}
