// jit: caching, static arguments, simplification passes, nested calls, errors, and jit
// against eager on randomly generated programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>

#include "ir/primitive.h"
#include "compiler/kernel_cache.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST(Jit, RetracesForNewShapesAndDtypesOnly) {
  int traces = 0;
  auto f = ts::jit([&traces](const ts::Array& x) {
    ++traces;
    return x * 2.0;
  });
  f(ts::ones({3}));
  f(ts::ones({3}));
  EXPECT_EQ(traces, 1);
  f(ts::ones({4}));
  EXPECT_EQ(traces, 2);
  f(ts::ones({4}, ts::f64));
  EXPECT_EQ(traces, 3);
  EXPECT_EQ(f.cache_size(), 3u);
  auto g = f;  // copies share the cache
  g(ts::ones({3}));
  EXPECT_EQ(traces, 3);
}

TEST(Jit, StaticArgumentsKeyTheCache) {
  int traces = 0;
  auto f = ts::jit(
      [&traces](const ts::Array& x, int n, bool flip) {
        ++traces;
        ts::Array y = x;
        for (int i = 0; i < n; ++i) y = y + 1.0f;
        return flip ? -y : y;
      },
      {.static_argnums = {1, 2}});
  ts::Array x = ts::zeros({2});
  EXPECT_EQ(f(x, 3, false).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(f(x, 3, true).to_vector<float>(), (std::vector<float>{-3, -3}));
  EXPECT_EQ(f(x, 2, false).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(f(x, 3, false).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(traces, 3);
}

TEST(Jit, ArraysCannotBeStatic) {
  auto f = ts::jit([](const ts::Array& x) { return x; }, {.static_argnums = {0}});
  EXPECT_THROW(f(ts::ones({1})), ts::ValueError);
  auto g = ts::jit([](const ts::Array& x) { return x; }, {.static_argnums = {3}});
  EXPECT_THROW(g(ts::ones({1})), ts::IndexError);
}

TEST(Jit, TreesInAndOut) {
  auto f = ts::jit([](const std::vector<ts::Array>& xs, const std::pair<ts::Array, ts::Array>& p) {
    return std::make_tuple(xs[0] + xs[1], p.first * p.second, std::vector<ts::Array>{xs[1]});
  });
  auto [a, b, c] = f(std::vector<ts::Array>{ts::ones({2}), ts::full({2}, 3.0f)},
                     std::make_pair(ts::full({2}, 2.0f), ts::full({2}, 5.0f)));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{10, 10}));
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].to_vector<float>(), (std::vector<float>{3, 3}));
}

struct TwoFields {
  ts::Array u, v;
  int steps = 0;
};
TESSEL_TREE(TwoFields, u, v)

TEST(Jit, RegisteredStructsAreTrees) {
  auto f = ts::jit([](const TwoFields& s) { return TwoFields{s.v, s.u + s.v, s.steps + 1}; });
  TwoFields s{ts::ones({2}), ts::full({2}, 2.0f), 7};
  TwoFields r = f(s);
  EXPECT_EQ(r.u.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(r.v.to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(r.steps, 8);  // static members come from the traced result
}

TEST(Jit, CapturedArraysBecomeConstants) {
  ts::Array c = ts::arange(3).astype(ts::f32);
  auto f = ts::jit([c](const ts::Array& x) { return x + c; });
  EXPECT_EQ(f(ts::ones({3})).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(contains(f.lower(ts::ones({3})).as_text(), "{ lambda a:f32[3] ; b:f32[3]. let"));
}

TEST(Jit, DeadCodeIsRemovedButResultsKept) {
  auto f = [](const ts::Array& x) {
    ts::Array unused = ts::exp(x) * 3.0;
    (void)unused;
    return ts::sin(x);
  };
  auto text = ts::jit(f).lower(ts::ones({2})).as_text();
  EXPECT_FALSE(contains(text, "exp")) << text;
  EXPECT_TRUE(contains(text, "sin")) << text;
  EXPECT_EQ(ts::make_program(f, ts::ones({2})).num_equations(), 3u);  // make_program is unsimplified
}

TEST(Jit, CommonSubexpressionsAreMerged) {
  auto f = [](const ts::Array& x) { return ts::sin(x) + ts::sin(x); };
  auto p = ts::jit(f).lower(ts::ones({2})).program();
  EXPECT_EQ(p.primitive_names(), (std::vector<std::string>{"sin", "add"})) << p;
  EXPECT_EQ(ts::jit(f)(ts::zeros({2})).to_vector<float>(), (std::vector<float>{0, 0}));
}

namespace {
// An identity with a side effect (counts its runs), to check that passes respect effects.
std::atomic<int> g_effect_runs{0};
void count_kernel(const ts::ir::KernelCall& c) {
  ++g_effect_runs;
  std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
}
std::vector<ts::Aval> same_aval(std::span<const ts::Aval> in, const ts::ir::Params&) { return {in[0]}; }
const ts::ir::Primitive& effect_p = ts::ir::register_primitive(
    {.name = "test_effect", .abstract_eval = same_aval, .cpu_kernel = count_kernel, .effects = ts::ir::kSideEffect});
}  // namespace

TEST(Jit, EffectfulEquationsAreNeitherDroppedNorMergedNorFolded) {
  auto f = [](const ts::Array& x) {
    ts::Array unused = ts::detail::bind1(effect_p, {x});
    ts::Array a = ts::detail::bind1(effect_p, {x});
    ts::Array b = ts::detail::bind1(effect_p, {x});
    ts::Array lit = ts::detail::bind1(effect_p, {ts::Array(1.0f)});  // literal input: not folded
    (void)unused;
    return a + b + lit;
  };
  auto jf = ts::jit(f);
  auto names = jf.lower(ts::ones({2})).program().primitive_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "test_effect"), 4) << jf.lower(ts::ones({2})).as_text();
  g_effect_runs = 0;
  EXPECT_EQ(jf(ts::ones({2})).to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(g_effect_runs.load(), 4);
}

TEST(Jit, ConstantsAreFolded) {
  auto f = [](const ts::Array& x) {
    ts::Array k = ts::Array(2.0f) * ts::Array(3.0f) + ts::Array(1.0f);  // all literals
    return x * k;
  };
  auto p = ts::jit(f).lower(ts::ones({2})).program();
  EXPECT_EQ(p.primitive_names(), (std::vector<std::string>{"mul"})) << p;
  EXPECT_TRUE(contains(p.to_string(), "mul a 7.0:f32[]")) << p;
}

TEST(Jit, NestedJitIsRecordedAndInlined) {
  auto inner = ts::jit([](const ts::Array& x) { return ts::exp(x); }, {.name = "inner"});
  auto outer = ts::jit([inner](const ts::Array& x) { return inner(x) * 2.0; });
  ts::Array x(std::vector<double>{0.0, 1.0});
  auto r = outer(x).to_vector<double>();
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 2.0 * std::exp(1.0));
  EXPECT_EQ(outer.lower(x).program().primitive_names(), (std::vector<std::string>{"exp", "mul"}));
  EXPECT_TRUE(contains(ts::make_program([inner](const ts::Array& y) { return inner(y); }, x).to_string(), "jit["));
}

TEST(Jit, CompiledTextDescribesTheExecutable) {
  auto f = ts::jit([](const ts::Array& x) { return ts::cos(x) + 1.0; });
  std::string text = f.lower(ts::ones({4})).compile().as_text();
  EXPECT_TRUE(contains(text, "2 kernel steps")) << text;
  EXPECT_TRUE(contains(text, "cos")) << text;
}

TEST(Jit, CompiledRejectsWrongArguments) {
  auto compiled = ts::jit([](const ts::Array& x) { return x + 1.0; }).lower(ts::ones({2})).compile();
  EXPECT_EQ(compiled({ts::ones({2})})[0].to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_THROW(compiled({ts::ones({3})}), ts::ShapeError);
  EXPECT_THROW(compiled({}), ts::ValueError);
}

TEST(Jit, TraceTimeErrorsNameTheOp) {
  auto f = ts::jit([](const ts::Array& x, const ts::Array& y) { return x + y; });
  try {
    f(ts::ones({3, 2}), ts::ones({4}));
    FAIL();
  } catch (const ts::ShapeError& e) {
    EXPECT_TRUE(contains(e.what(), "add")) << e.what();
    EXPECT_TRUE(contains(e.what(), "(3, 2)")) << e.what();
  }
}

TEST(Jit, ErrorsInsideTheComputationReachTheCaller) {
  // An op that fails at run time (not trace time) surfaces on block/to_vector.
  auto f = ts::jit([](const ts::Array& x) { return x + 1.0; });
  ts::Array ok = f(ts::ones({2}));
  EXPECT_NO_THROW(ok.block_until_ready());
}

TEST(Jit, OutputsMayBeInputsOrConstants) {
  auto f = ts::jit([](const ts::Array& x) { return std::make_tuple(x, ts::Array(3.0f), x * 0.0 + 1.0); });
  ts::Array x = ts::ones({2});
  auto [a, b, c] = f(x);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_FLOAT_EQ(b.item<float>(), 3.0f);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(Jit, RunsOnTheCommittedDevice) {
  auto devs = ts::devices();
  ASSERT_GE(devs.size(), 2u);
  ts::Array x = ts::device_put(ts::ones({2}), devs[1]);
  auto f = ts::jit([](const ts::Array& a) { return a * 3.0; });
  ts::Array y = f(x);
  EXPECT_EQ(y.device(), devs[1]);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 3}));
}

// jit equals eager on randomly generated programs built from a pool of operations.
TEST(Jit, MatchesEagerOnRandomPrograms) {
  std::mt19937 rng(1234);
  using Op = std::function<ts::Array(const ts::Array&, const ts::Array&)>;
  std::vector<std::pair<std::string, Op>> ops = {
      {"add", [](auto& a, auto& b) { return a + b; }},
      {"sub", [](auto& a, auto& b) { return a - b; }},
      {"mul", [](auto& a, auto& b) { return a * b; }},
      {"max", [](auto& a, auto& b) { return ts::maximum(a, b); }},
      {"where", [](auto& a, auto& b) { return ts::where(a > b, a, b * 0.5); }},
      {"sin", [](auto& a, auto&) { return ts::sin(a); }},
      {"tanh", [](auto& a, auto&) { return ts::tanh(a); }},
      {"exp", [](auto& a, auto&) { return ts::exp(a * 0.1); }},
      {"scale", [](auto& a, auto&) { return a * 1.5 + 0.25; }},
      {"transpose2", [](auto& a, auto&) { return ts::transpose(ts::transpose(a)); }},
      {"roll", [](auto& a, auto&) { return ts::roll(a, 1, 1); }},
      {"rowsum", [](auto& a, auto&) { return a - ts::mean(a, {1}, true); }},
      {"flipslice", [](auto& a, auto&) { return ts::concatenate({ts::slice(a, {0, 1}, {4, 5}), ts::slice(a, {0, 0}, {4, 1})}, 1); }},
      {"matmul", [](auto& a, auto& b) { return ts::matmul(ts::matmul(a, ts::transpose(b)), a) * 0.01; }},
  };
  for (int trial = 0; trial < 25; ++trial) {
    std::vector<std::pair<int, std::array<int, 2>>> plan;  // op, operand indices
    int len = 3 + int(rng() % 8);
    for (int i = 0; i < len; ++i) plan.push_back({int(rng() % ops.size()), {int(rng() % (i + 2)), int(rng() % (i + 2))}});
    auto program = [&](const ts::Array& x, const ts::Array& y) {
      std::vector<ts::Array> vals{x, y};
      for (auto& [op, args] : plan) vals.push_back(ops[size_t(op)].second(vals[size_t(args[0])], vals[size_t(args[1])]));
      return std::make_tuple(vals.back(), ts::sum(vals[vals.size() - 2], {}));
    };
    std::vector<float> xs(20), ys(20);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& v : xs) v = u(rng);
    for (auto& v : ys) v = u(rng);
    ts::Array x(xs, {4, 5}), y(ys, {4, 5});
    auto [e0, e1] = program(x, y);
    auto [j0, j1] = ts::jit(program)(x, y);
    auto ev = e0.to_vector<float>(), jv = j0.to_vector<float>();
    ASSERT_EQ(ev.size(), jv.size());
    for (size_t i = 0; i < ev.size(); ++i) EXPECT_NEAR(ev[i], jv[i], 1e-5f * (1 + std::abs(ev[i]))) << "trial " << trial;
    EXPECT_NEAR(e1.item<float>(), j1.item<float>(), 1e-4f * (1 + std::abs(e1.item<float>())));
  }
}

// compile() builds the executable, generated kernels included, so that the first call
// compiles nothing (what `make demo`'s compile_seconds relies on).
TEST(LoweredCompile, GeneratesKernelsBeforeTheFirstCall) {
  if (!ts::compiler::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  // A constant no other test uses: a program no earlier test compiled in this process.
  auto f = ts::jit([](const ts::Array& h, const ts::Array& u) { return ts::sin(h) * u + 0.123456789f * h; });
  ts::Array h = ts::reshape(ts::arange(0.0, 1.0, 1.0 / (300 * 200), ts::f32), {300, 200});
  ts::Array u = ts::cos(h);
  const auto before = ts::compiler::codegen_stats();
  ts::Compiled compiled = f.lower(h, u).compile();
  const auto built = ts::compiler::codegen_stats();
  EXPECT_EQ(built.compiles + built.disk_loads, before.compiles + before.disk_loads + 1);
  auto out = f(h, u).to_vector<float>();
  const auto called = ts::compiler::codegen_stats();
  EXPECT_EQ(called.compiles + called.disk_loads, built.compiles + built.disk_loads);
  const float h0 = h.to_vector<float>()[123];
  EXPECT_NEAR(out[123], std::sin(h0) * std::cos(h0) + 0.123456789f * h0, 1e-6);
}
