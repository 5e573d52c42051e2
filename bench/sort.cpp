// Sorting 16M random float32 through tessel (ts::sort and ts::argsort, eager: one sort
// primitive each) against the best sorts the C++ standard library gives a programmer, in
// the same run; and against JAX (jit of jnp.sort / jnp.argsort on CPU) when
// TESSEL_JAX_PYTHON names a Python with JAX (bench/baselines/jax_sort.py).
//
// Baselines, the fastest of each kind measured: for sort, std::sort with
// std::execution::par (libstdc++ over oneTBB) and a hand-written parallel sort (one
// std::sort per thread, then pairwise std::merge in parallel); for argsort, std::stable_sort
// of positions by value with std::execution::par, and std::sort(par) of (value, position)
// pairs (which gives the stable order too). Rounds alternate between tessel and the
// baselines and the best of each is kept, so load from other processes hits both alike.
//
// Output: per-call times, sort.f32_16m_sort_vs_std and sort.f32_16m_argsort_vs_std
// (baseline time / tessel time), sort.f32_16m_vs_std (the smaller of the two), and with JAX
// sort.sort_vs_jax, sort.argsort_vs_jax and sort.vs_jax (the smaller).
#include <algorithm>
#include <cstdlib>
#include <execution>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "backend/cpu/parallel.h"
#include "bench_util.h"
#include "tessel/sort.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace tb = tessel::bench;

namespace {

constexpr int64_t kN = int64_t(1) << 24;
constexpr int kRounds = 3;

std::vector<float> random_values(size_t n) {
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

/// One std::sort per thread over its chunk, then rounds of pairwise std::merge, each
/// round's merges in parallel threads.
template <class T> void threaded_sort(std::vector<T>& v, std::vector<T>& tmp, int threads) {
  std::vector<size_t> bounds;
  for (int t = 0; t <= threads; ++t) bounds.push_back(v.size() * size_t(t) / size_t(threads));
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { std::sort(v.begin() + long(bounds[size_t(t)]), v.begin() + long(bounds[size_t(t) + 1])); });
  }
  std::vector<T>* src = &v;
  std::vector<T>* dst = &tmp;
  while (bounds.size() > 2) {
    std::vector<size_t> next;
    std::vector<std::jthread> pool;
    for (size_t i = 0; i + 1 < bounds.size(); i += 2) {
      next.push_back(bounds[i]);
      if (i + 2 < bounds.size()) {
        pool.emplace_back([=] {
          std::merge(src->begin() + long(bounds[i]), src->begin() + long(bounds[i + 1]), src->begin() + long(bounds[i + 1]),
                     src->begin() + long(bounds[i + 2]), dst->begin() + long(bounds[i]));
        });
      } else {
        std::copy(src->begin() + long(bounds[i]), src->begin() + long(bounds[i + 1]), dst->begin() + long(bounds[i]));
      }
    }
    next.push_back(bounds.back());
    pool.clear();
    std::swap(src, dst);
    bounds = next;
  }
  if (src != &v) v.swap(tmp);
}

double timed(const auto& f) { return tb::seconds_per_call(f, 1, 1); }

}  // namespace

int main() {
  const int threads = ts::cpu::num_threads();
  const std::vector<float> values = random_values(size_t(kN));
  const ts::Array x = ts::Array(values);
  x.block_until_ready();
  (void)ts::sort(x).block_until_ready();  // warm-up: the arena, first-touch of the pools

  double t_sort = 1e30, t_argsort = 1e30, b_sort = 1e30, b_argsort = 1e30;
  std::vector<float> v, tmp(values.size());
  std::vector<int32_t> idx(values.size());
  std::vector<std::pair<float, int32_t>> pairs(values.size()), ptmp(values.size());
  for (int r = 0; r < kRounds; ++r) {
    t_sort = std::min(t_sort, timed([&] { ts::sort(x).block_until_ready(); }));
    t_argsort = std::min(t_argsort, timed([&] { ts::argsort(x).block_until_ready(); }));
    v = values;
    b_sort = std::min(b_sort, timed([&] { std::sort(std::execution::par, v.begin(), v.end()); }));
    v = values;
    b_sort = std::min(b_sort, timed([&] { threaded_sort(v, tmp, threads); }));
    std::iota(idx.begin(), idx.end(), 0);
    b_argsort = std::min(b_argsort, timed([&] {
      std::stable_sort(std::execution::par, idx.begin(), idx.end(),
                       [&](int32_t a, int32_t b) { return values[size_t(a)] < values[size_t(b)]; });
    }));
    b_argsort = std::min(b_argsort, timed([&] {
      for (size_t i = 0; i < values.size(); ++i) pairs[i] = {values[i], int32_t(i)};
      std::sort(std::execution::par, pairs.begin(), pairs.end());
      for (size_t i = 0; i < values.size(); ++i) idx[i] = pairs[i].second;
    }));
  }
  tb::report("sort.threads", threads, "threads");
  tb::report("sort.f32_16m_sort_ms", t_sort * 1e3, "ms");
  tb::report("sort.f32_16m_sort_std_ms", b_sort * 1e3, "ms");
  tb::report("sort.f32_16m_argsort_ms", t_argsort * 1e3, "ms");
  tb::report("sort.f32_16m_argsort_std_ms", b_argsort * 1e3, "ms");
  tb::report("sort.f32_16m_sort_vs_std", b_sort / t_sort, "x");
  tb::report("sort.f32_16m_argsort_vs_std", b_argsort / t_argsort, "x");
  tb::report("sort.f32_16m_vs_std", std::min(b_sort / t_sort, b_argsort / t_argsort), "x");

  if (const char* py = std::getenv("TESSEL_JAX_PYTHON"); py && *py) {
    const auto jax = tb::run_baseline(tb::shell_quote(py) + " " + tb::shell_quote(TESSEL_SOURCE_DIR "/bench/baselines/jax_sort.py") +
                                      " " + std::to_string(kN) + " " + std::to_string(kRounds));
    if (jax.count("jax_sort_s") && jax.count("jax_argsort_s")) {
      const double js = jax.at("jax_sort_s"), ja = jax.at("jax_argsort_s");
      tb::report("sort.f32_16m_sort_jax_ms", js * 1e3, "ms");
      tb::report("sort.f32_16m_argsort_jax_ms", ja * 1e3, "ms");
      tb::report("sort.sort_vs_jax", js / t_sort, "x");
      tb::report("sort.argsort_vs_jax", ja / t_argsort, "x");
      tb::report("sort.vs_jax", std::min(js / t_sort, ja / t_argsort), "x");
    }
  }
  return 0;
}
