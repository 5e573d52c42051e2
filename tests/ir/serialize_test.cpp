// Program serialization (ir/serialize.h): programs traced from real functions survive the
// round trip — same printed text, same values when evaluated — and bad bytes or values that
// cannot travel give a ValueError that says what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/array_impl.h"
#include "ir/serialize.h"
#include "ir/trace.h"
#include "sharding/partitioner.h"
#include "tessel/tessel.h"
#include "value_error.h"

namespace ts = tessel;
namespace ir = tessel::ir;

namespace {

using tessel_test::value_error_of;

using Fn = std::function<std::vector<ts::Array>(std::span<const ts::Array>)>;

ir::Program trace(const Fn& f, const std::vector<ts::Array>& args) {
  std::vector<ts::Aval> avals;
  for (const auto& a : args) avals.push_back(a.aval());
  return ts::detail::trace_to_program(f, avals, "fn");
}

/// Serializes and deserializes `p`; the result prints the same and serializes to the same
/// bytes.
ir::Program round_trip(const ir::Program& p) {
  std::string bytes = ir::serialize(p);
  ir::Program q = ir::deserialize(bytes);
  EXPECT_EQ(ir::print_program(q), ir::print_program(p));
  EXPECT_EQ(ir::serialize(q), bytes) << "serializing the copy gives other bytes";
  return q;
}

std::string bytes_of(const ts::Array& a) {
  auto* c = ts::detail::require_concrete(a, "test");
  c->buffer()->wait();
  return std::string(static_cast<const char*>(c->buffer()->data()), a.nbytes());
}

void expect_identical(const std::vector<ts::Array>& got, const std::vector<ts::Array>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].aval(), want[i].aval()) << "output " << i;
    EXPECT_EQ(bytes_of(got[i]), bytes_of(want[i])) << "output " << i << ": " << got[i] << " vs " << want[i];
  }
}

/// Round trip, then the copy computes what the original computes (bit for bit: the same
/// kernels run on the same inputs).
ir::Program check(const Fn& f, const std::vector<ts::Array>& args) {
  ir::Program p = trace(f, args);
  ir::Program q = round_trip(p);
  expect_identical(ir::eval_program(q, args), ir::eval_program(p, args));
  return q;
}

ts::Array iota_f32(int64_t n, float scale = 0.25f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i) * scale - 1.0f;
  return ts::Array(v);
}

bool has_prim(const ir::Program& p, const std::string& name) {
  for (const auto& e : p.eqns) {
    if (e.prim->name == name) return true;
    for (const auto& [k, v] : e.params.items()) {
      if (auto* r = std::get_if<ir::ProgramRef>(&v); r && *r && has_prim(**r, name)) return true;
      if (auto* rs = std::get_if<std::vector<ir::ProgramRef>>(&v))
        for (const auto& r2 : *rs)
          if (r2 && has_prim(*r2, name)) return true;
    }
  }
  return false;
}

}  // namespace

TEST(SerializeRoundTrip, ElementwiseKeepsVarsWeakTypesAndValues) {
  ts::Array x = iota_f32(6), y = iota_f32(6, 0.5f);
  ir::Program q = check(
      [](std::span<const ts::Array> a) {
        ts::Array s = ts::sin(a[0]) * 2.0 + a[1] / (ts::exp(a[0]) + 1.0f);
        ts::Array m = ts::where(a[0] > a[1], s, -s);
        return std::vector<ts::Array>{m, s, ts::astype(m, ts::i32) + 3};
      },
      {x, y});
  // A var used by several equations is one var.
  ASSERT_GE(q.eqns.size(), 2u);
  EXPECT_EQ(q.eqns[0].inputs[0].var(), q.invars[0]);
}

TEST(SerializeRoundTrip, ShapesAndIndexingWithStaticParams) {
  ts::Array x = ts::reshape(iota_f32(24), {4, 6});
  ts::Array idx(std::vector<int32_t>{2, 0, 3});
  check(
      [](std::span<const ts::Array> a) {
        ts::Array t = ts::transpose(a[0], ts::Axes{1, 0});
        ts::Array s = a[0][{ts::Slice(1, 3), ts::Slice(0, ts::none, 2)}];
        ts::Array g = a[0][{a[1]}];
        ts::Array c = ts::concatenate({s, s}, 1);
        ts::Array d = ts::dynamic_slice(a[0], {ts::Array(1), ts::Array(2)}, {2, 3});
        ts::Array u = a[0].at({0, ts::Slice(1, 4)}).add(ts::Array(std::vector<float>{1, 2, 3}));
        return std::vector<ts::Array>{t, ts::reshape(c, {12}), g, d, u, ts::broadcast_to(a[0][{0}], {3, 6})};
      },
      {x, idx});
}

TEST(SerializeRoundTrip, DotReductionsAndCumsum) {
  ts::Array a = ts::reshape(iota_f32(12), {3, 4}), b = ts::reshape(iota_f32(8, 0.5f), {4, 2});
  check(
      [](std::span<const ts::Array> v) {
        ts::Array m = ts::matmul(v[0], v[1]);
        return std::vector<ts::Array>{m, ts::sum(v[0], {1}), ts::max(v[0], {0}), ts::argmax(v[0], 1),
                                      ts::cumsum(v[0], 1), ts::cumsum(v[0], 0, true)};
      },
      {a, b});
}

TEST(SerializeRoundTrip, FftOfComplexInput) {
  ts::Array x = ts::astype(iota_f32(8), ts::c64);
  check(
      [](std::span<const ts::Array> v) {
        return std::vector<ts::Array>{ts::fft::fft(v[0]), ts::fft::ifft(ts::fft::fft(v[0] * ts::complex64_t(1, 2)))};
      },
      {x});
}

TEST(SerializeRoundTrip, RandomBits) {
  ts::Array k = ts::random::key(42);
  check(
      [](std::span<const ts::Array> v) {
        ts::Array ks = ts::random::split(v[0]);
        return std::vector<ts::Array>{ts::random::uniform(ks[{0}], {5}), ts::random::normal(ks[{1}], {2, 3})};
      },
      {k});
}

TEST(SerializeRoundTrip, LiteralsOfEveryDtype) {
  for (int d = 0; d < ts::kNumDTypes; ++d) {
    ts::DType dt = ts::DType(d);
    ts::Scalar lit(2.5, dt);
    ir::Program p;
    p.invars = {ir::new_var(ts::Aval({2}, dt))};
    p.outvars = {ir::Atom(lit, false), ir::Atom(ts::Scalar(1.0, dt), true), ir::Atom(p.invars[0])};
    if (dt != ts::bool_) {
      ir::Var out = ir::new_var(ts::Aval({2}, dt));
      p.eqns.push_back(ir::Equation{&ir::lookup_primitive("add"), {ir::Atom(p.invars[0]), ir::Atom(lit, false)}, {out}, {}});
      p.outvars.push_back(ir::Atom(out));
    }
    ir::verify_program(p);
    ir::Program q = round_trip(p);
    ASSERT_EQ(q.outvars.size(), p.outvars.size());
    EXPECT_EQ(q.outvars[0].literal(), lit) << ts::dtype_name(dt);
    EXPECT_TRUE(q.outvars[1].aval().weak_type) << ts::dtype_name(dt);
    ts::Array x = ts::astype(ts::Array(std::vector<float>{1.5f, -2.0f}), dt);
    expect_identical(ir::eval_program(q, std::vector<ts::Array>{x}), ir::eval_program(p, std::vector<ts::Array>{x}));
  }
}

TEST(SerializeRoundTrip, ConstantsTravelAsValuesOnTheDefaultDevice) {
  ts::Array half = ts::astype(iota_f32(4), ts::f16), brain = ts::astype(iota_f32(4), ts::bf16);
  ts::Array cplx = ts::astype(iota_f32(4), ts::c128), ints(std::vector<int64_t>{7, -8, 9, 10});
  ts::Array x = iota_f32(4);
  ir::Program p = trace(
      [&](std::span<const ts::Array> a) {
        return std::vector<ts::Array>{a[0] + ts::astype(half, ts::f32) * ts::astype(brain, ts::f32),
                                      ts::astype(a[0], ts::c128) * cplx, ts::astype(a[0], ts::i64) + ints};
      },
      {x});
  ASSERT_EQ(p.consts.size(), 4u);
  ir::Program q = round_trip(p);
  ASSERT_EQ(q.consts.size(), p.consts.size());
  for (size_t i = 0; i < q.consts.size(); ++i) {
    EXPECT_EQ(q.consts[i].aval(), p.consts[i].aval());
    EXPECT_EQ(bytes_of(q.consts[i]), bytes_of(p.consts[i]));
    EXPECT_EQ(q.consts[i].device(), ts::devices()[0]);
  }
  expect_identical(ir::eval_program(q, std::vector<ts::Array>{x}), ir::eval_program(p, std::vector<ts::Array>{x}));
}

TEST(SerializeRoundTrip, JitInJitSharesTheNestedProgram) {
  auto inner = ts::jit([](const ts::Array& x) { return ts::exp(x) * 2.0; }, {.name = "inner"});
  auto outer = ts::jit([inner](const ts::Array& x) { return inner(inner(x) + 1.0); }, {.name = "outer"});
  ir::Program q = check([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{outer(a[0])}; }, {iota_f32(5)});
  ASSERT_EQ(q.eqns.size(), 1u);
  const ir::Program& o = *q.eqns[0].params.get<ir::ProgramRef>("program");
  std::vector<ir::ProgramRef> calls;
  for (const auto& e : o.eqns)
    if (e.params.has("program")) calls.push_back(e.params.get<ir::ProgramRef>("program"));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], calls[1]) << "one program referenced twice stays one program";
}

TEST(SerializeRoundTrip, GradVjpAndJvpPrograms) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::sin(x) * x + ts::tanh(x * x)); };
  ts::Array x = iota_f32(5), t = iota_f32(5, 0.1f);
  check([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::grad(f)(a[0])}; }, {x});
  check(
      [&](std::span<const ts::Array> a) {
        auto [y, pullback] = ts::vjp([](const ts::Array& z) { return ts::sin(z) * z; }, a[0]);
        return std::vector<ts::Array>{y, pullback(a[1])};
      },
      {x, t});
  check(
      [&](std::span<const ts::Array> a) {
        auto [y, ty] = ts::jvp(f, a[0], a[1]);
        return std::vector<ts::Array>{y, ty};
      },
      {x, t});
}

TEST(SerializeRoundTrip, VmapProgram) {
  ts::Array xs = ts::reshape(iota_f32(12), {3, 4});
  check(
      [](std::span<const ts::Array> a) {
        auto per_row = [](const ts::Array& r) { return ts::sum(r * r) + ts::max(r, {0}); };
        return std::vector<ts::Array>{ts::vmap(per_row)(a[0])};
      },
      {xs});
}

TEST(SerializeRoundTrip, ControlFlowBodies) {
  ts::Array x = iota_f32(4), xs = iota_f32(6, 0.5f);
  ir::Program q = check(
      [](std::span<const ts::Array> a) {
        ts::Array c = ts::cond(
            ts::sum(a[0]) > 0.0, [](const ts::Array& v) { return v * 2.0; }, [](const ts::Array& v) { return -v; },
            a[0]);
        ts::Array w = ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 100.0; },
                                     [](const ts::Array& v) { return v * 1.5 + 1.0; }, a[0]);
        ts::Array fl = ts::fori_loop(0, 3, [](const ts::Array& i, const ts::Array& v) { return v + ts::astype(i, ts::f32); },
                                     a[0]);
        auto [carry, ys] = ts::scan(
            [](const ts::Array& k, const ts::Array& e) {
              ts::Array next = ts::cond(
                  e > 0.0, [](const ts::Array& kk, const ts::Array& ee) { return kk * ee; },
                  [](const ts::Array& kk, const ts::Array& ee) { return kk + ts::sin(ee); }, k, e);
              return std::make_pair(next, next * e);
            },
            ts::Array(1.0f), a[1]);
        return std::vector<ts::Array>{c, w, fl, carry, ys};
      },
      {x, xs});
  EXPECT_TRUE(has_prim(q, "cond"));
  EXPECT_TRUE(has_prim(q, "while"));
  EXPECT_TRUE(has_prim(q, "scan"));
}

TEST(SerializeRoundTrip, CheckpointAndItsGradient) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::sin(ts::sin(x)) * x); };
  ts::Array x = iota_f32(5);
  check([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::checkpoint(f)(a[0])}; }, {x});
  check([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::grad(ts::checkpoint(f))(a[0])}; }, {x});
}

TEST(SerializeErrors, CustomJvpRuleIsAClosureButItsGradientTravels) {
  using T1 = std::tuple<ts::Array>;
  auto g = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                          [](const T1& p, const T1& t) {
                            const ts::Array& x = std::get<0>(p);
                            return std::make_pair(ts::sin(x), ts::cos(x) * 3.0 * std::get<0>(t));
                          });
  ts::Array x = iota_f32(4);
  ir::Program p = trace([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{g(a[0])}; }, {x});
  std::string err = value_error_of([&] { ir::serialize(p); });
  EXPECT_NE(err.find("custom jvp rule holds a C++ closure, which cannot be sent to another process"), std::string::npos)
      << err;
  EXPECT_NE(err.find("parameter 'jvp'"), std::string::npos) << err;
  EXPECT_NE(err.find("custom_jvp"), std::string::npos) << err;
  // Once differentiated, the rule is plain equations.
  auto loss = [&](const ts::Array& z) { return ts::sum(g(z)); };
  ir::Program q = check([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::grad(loss)(a[0])}; }, {x});
  EXPECT_FALSE(has_prim(q, "custom_jvp_call"));
}

TEST(SerializeErrors, HostCallbackNamesTheCallback) {
  ts::Array x = iota_f32(3);
  ir::Program p = trace(
      [](std::span<const ts::Array> a) {
        return std::vector<ts::Array>{ts::host::id_tap([](const ts::Array&, const ts::host::Transforms&) {}, a[0] * 2.0)};
      },
      {x});
  std::string err = value_error_of([&] { ir::serialize(p); });
  EXPECT_NE(err.find("host callback"), std::string::npos) << err;
  EXPECT_NE(err.find("holds a C++ closure, which cannot be sent to another process"), std::string::npos) << err;
  EXPECT_NE(err.find("parameter 'callback'"), std::string::npos) << err;
}

TEST(SerializeSharded, JitWithInShardingsAndItsPartitionedProgram) {
  if (ts::devices().size() < 8) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES=8";
  ts::Mesh mesh = ts::make_mesh({4, 2}, {"x", "y"});
  ts::Sharding s = ts::NamedSharding(mesh, ts::P("x", "y"));
  auto f = ts::jit([](const ts::Array& a, const ts::Array& b) { return ts::matmul(a, b) + 1.0f; },
                   {.in_shardings = {s, ts::NamedSharding(mesh, ts::P("y", ts::none))}});
  ts::Array a = ts::reshape(iota_f32(32), {8, 4}), b = ts::reshape(iota_f32(8, 0.5f), {4, 2});
  Fn fn = [&](std::span<const ts::Array> v) {
    ts::Array r = f(v[0], v[1]);
    return std::vector<ts::Array>{ts::with_sharding_constraint(r, ts::NamedSharding(mesh, ts::P("x")))};
  };
  ir::Program q = check(fn, {a, b});
  EXPECT_NE(ir::print_program(q).find("sharding"), std::string::npos);

  // The per-device program the partitioner makes (collectives over mesh axes) travels too.
  ir::ProgramRef body_ref;
  for (const auto& e : q.eqns)
    if (e.prim->name == "jit") body_ref = e.params.get<ir::ProgramRef>("program");
  ASSERT_TRUE(body_ref) << ir::print_program(q);
  const ir::Program& body = *body_ref;
  std::vector<ts::sharding::Layout> layouts = {ts::sharding::layout_of(s, 2),
                                               ts::sharding::layout_of(ts::NamedSharding(mesh, ts::P("y")), 2)};
  auto part = ts::sharding::partition(body, mesh, layouts);
  round_trip(*part.program);
}

TEST(SerializeSharded, ShardMapWithPsumKeepsTheMesh) {
  if (ts::devices().size() < 8) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES=8";
  ts::Mesh mesh = ts::make_mesh({8}, {"x"});
  auto g = ts::shard_map([](const ts::Array& x) { return ts::psum(ts::sin(x), "x"); }, mesh, {ts::P("x")}, {ts::P()});
  ir::Program q = check([&](std::span<const ts::Array> v) { return std::vector<ts::Array>{g(v[0])}; }, {iota_f32(16)});
  bool saw_mesh = false;
  for (const auto& e : q.eqns)
    for (const auto& [k, v] : e.params.items())
      if (auto* o = std::get_if<std::shared_ptr<const ir::ParamObject>>(&v); o && *o)
        if (auto* m = dynamic_cast<const ir::MeshParam*>(o->get())) {
          saw_mesh = true;
          EXPECT_EQ(m->value, mesh);
        }
  EXPECT_TRUE(saw_mesh);
}

TEST(SerializeErrors, TruncatedInputAtEveryLength) {
  ir::Program p = trace(
      [](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::sum(ts::sin(a[0]) * 2.0, {0})}; }, {iota_f32(3)});
  std::string bytes = ir::serialize(p);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string err = value_error_of([&] { ir::deserialize(std::string_view(bytes).substr(0, n)); });
    EXPECT_EQ(err.rfind("deserialize", 0), 0u) << "length " << n << ": " << err;
  }
  EXPECT_NE(value_error_of([&] { ir::deserialize(bytes + "x"); }).find("trailing bytes"), std::string::npos);
}

TEST(SerializeErrors, BadMagicVersionAndPrimitive) {
  ir::Program p = trace([](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::sin(a[0])}; }, {iota_f32(3)});
  const std::string bytes = ir::serialize(p);

  std::string magic = bytes;
  magic[0] ^= 0x20;
  EXPECT_NE(value_error_of([&] { ir::deserialize(magic); }).find("not a serialized tessel program"), std::string::npos);

  std::string version = bytes;
  version[ir::kSerialMagic.size()] = char(ir::kSerialVersion + 1);
  std::string err = value_error_of([&] { ir::deserialize(version); });
  EXPECT_NE(err.find("format version " + std::to_string(ir::kSerialVersion + 1)), std::string::npos) << err;

  std::string prim = bytes;
  size_t at = prim.find("sin");
  ASSERT_NE(at, std::string::npos);
  prim[at + 2] = 'Q';
  err = value_error_of([&] { ir::deserialize(prim); });
  EXPECT_NE(err.find("unknown primitive 'siQ'"), std::string::npos) << err;
}

TEST(SerializeErrors, UnknownParameterKindAndFlippedBytesNeverCrash) {
  if (ts::devices().size() < 8) GTEST_SKIP() << "needs TESSEL_CPU_DEVICES=8";
  ts::Mesh mesh = ts::make_mesh({8}, {"x"});
  auto g = ts::shard_map([](const ts::Array& x) { return ts::psum(x, "x"); }, mesh, {ts::P("x")}, {ts::P()});
  ir::Program p = trace([&](std::span<const ts::Array> v) { return std::vector<ts::Array>{g(v[0])}; }, {iota_f32(16)});
  const std::string bytes = ir::serialize(p);
  std::string kind = bytes;
  size_t at = kind.find("mesh", kind.find("mesh") + 1);  // the kind, after the parameter's key
  ASSERT_NE(at, std::string::npos);
  kind[at] = 'Z';
  std::string err = value_error_of([&] { ir::deserialize(kind); });
  EXPECT_NE(err.find("unknown parameter kind 'Zesh'"), std::string::npos) << err;

  // Every single-byte corruption either still reads or throws ValueError.
  for (size_t i = ir::kSerialMagic.size() + 4; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = char(~bad[i]);
    err = value_error_of([&] { ir::deserialize(bad); });
    EXPECT_TRUE(err == "no error" || err.rfind("deserialize", 0) == 0) << "byte " << i << ": " << err;
  }
}

TEST(SerializeErrors, TracerConstantsAreRejected) {
  ts::Array x = iota_f32(3);
  std::string err;
  ts::grad([&](const ts::Array& z) {
    ir::Program inner = trace([&](std::span<const ts::Array> a) { return std::vector<ts::Array>{a[0] * z}; }, {x});
    err = value_error_of([&] { ir::serialize(inner); });
    return ts::sum(z);
  })(x);
  EXPECT_NE(err.find("is a tracer"), std::string::npos) << err;
}
