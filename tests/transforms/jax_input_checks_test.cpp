// Inputs JAX rejects are rejected here too, with messages that name the fix: fori_loop
// with an integer and a floating bound, jvp/jacrev/jacfwd with integer primals (JAX wants
// a float0 tangent, tessel an empty Array), scan with a negative length. Values recorded
// from JAX 0.10.2.
#include <gtest/gtest.h>

#include <string>

#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

template <class E, class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const auto add_index = [](const ts::Array& i, const ts::Array& c) { return c + i; };

}  // namespace

TEST(JaxInputChecks, ForiLoopRefusesAnIntegerAndAFloatBound) {
  // JAX: TypeError "lower and upper arguments to fori_loop must have equal types, got int32
  // and float32" for fori_loop(0, 5.0, ...), fori_loop(0, 5.5, ...) and int32/float32 arrays.
  const ts::Array init(0.0f);
  std::string m = error_of<ts::DTypeError>([&] { (void)ts::fori_loop(0, 5.0, add_index, init); });
  EXPECT_TRUE(contains(m, "fori_loop: the lower and upper bounds must have the same dtype, got int32 (weak) and float32 "
                          "(weak); give both bounds as integers"))
      << m;
  m = error_of<ts::DTypeError>([&] { (void)ts::fori_loop(0, 5.5, add_index, init); });
  EXPECT_TRUE(contains(m, "fori_loop")) << m;
  m = error_of<ts::DTypeError>([&] {
    (void)ts::fori_loop(ts::Array(ts::Scalar(0, ts::i32)), ts::Array(ts::Scalar(5, ts::f32)), add_index, init);
  });
  EXPECT_TRUE(contains(m, "got int32 and float32")) << m;
  // Two strong integer dtypes that differ: JAX refuses int32 with int16 too.
  m = error_of<ts::DTypeError>([&] {
    (void)ts::fori_loop(ts::Array(ts::Scalar(0, ts::i32)), ts::Array(ts::Scalar(5, ts::i16)), add_index, init);
  });
  EXPECT_TRUE(contains(m, "got int32 and int16")) << m;
  // Under jit, with the upper bound traced.
  m = error_of<ts::DTypeError>([&] {
    (void)ts::jit([&](const ts::Array& u) { return ts::fori_loop(ts::Array(0), u, add_index, init); })(
        ts::Array(5.0f));
  });
  EXPECT_TRUE(contains(m, "fori_loop")) << m;
}

TEST(JaxInputChecks, ForiLoopAcceptsWhatJaxAccepts) {
  const ts::Array init(0.0f);
  // JAX: fori_loop(0.0, 5.0, lambda i, c: c + i, 0.0) == 10.0.
  EXPECT_EQ(ts::fori_loop(0.0, 5.0, add_index, init).item<float>(), 10.0f);
  // JAX: fori_loop(0, jnp.int16(5), ...) == 10.0 (a weak integer takes the other bound's type).
  EXPECT_EQ(ts::fori_loop(ts::Array(0), ts::Array(ts::Scalar(5, ts::i16)), add_index, init).item<float>(), 10.0f);
  EXPECT_EQ(ts::fori_loop(0, 5, add_index, init).item<float>(), 10.0f);
  EXPECT_EQ(ts::fori_loop(int64_t(2), 5, add_index, init).item<float>(), 9.0f);
  EXPECT_EQ(ts::fori_loop(5, 0, add_index, init).item<float>(), 0.0f);  // JAX: 0.0, no iteration
}

TEST(JaxInputChecks, JvpRefusesATangentForAnIntegerPrimal) {
  const auto twice = [](const ts::Array& x) { return x * 2; };
  // JAX: TypeError "... in case of int/bool primal dtype the tangent dtype must be float0".
  std::string m = error_of<ts::DTypeError>(
      [&] { (void)ts::jvp(twice, ts::Array(ts::Scalar(3, ts::i32)), ts::Array(ts::Scalar(1, ts::i32))); });
  EXPECT_TRUE(contains(m, "jvp: primal leaf 0 has dtype int32 and tangent dtype int32; integer and bool inputs have no "
                          "tangent. Pass an empty ts::Array() as its tangent"))
      << m;
  m = error_of<ts::DTypeError>(
      [&] { (void)ts::jvp(twice, ts::Array(ts::Scalar(3, ts::i32)), ts::Array(ts::Scalar(1.0f, ts::f32))); });
  EXPECT_TRUE(contains(m, "tangent dtype float32")) << m;
  m = error_of<ts::DTypeError>([&] { (void)ts::jvp(twice, ts::Array(true), ts::Array(true)); });
  EXPECT_TRUE(contains(m, "has dtype bool")) << m;
}

TEST(JaxInputChecks, JvpTakesAnEmptyTangentForAnIntegerPrimal) {
  // JAX: jvp(lambda x, n: x * n, (3.0, 2), (1.0, float0 zero)) == (6.0, 2.0).
  const auto scale = [](const ts::Array& x, const ts::Array& n) { return x * n; };
  auto [y, t] = ts::jvp(scale, std::tuple<ts::Array, ts::Array>(ts::Array(3.0f), ts::Array(ts::Scalar(2, ts::i32))),
                        std::tuple<ts::Array, ts::Array>(ts::Array(1.0f), ts::Array()));
  EXPECT_EQ(y.item<float>(), 6.0f);
  EXPECT_EQ(t.item<float>(), 2.0f);
}

TEST(JaxInputChecks, JacobiansRefuseIntegerInputs) {
  const auto twice = [](const ts::Array& x) { return x * 2; };
  const ts::Array ints = ts::arange(3, ts::i32);
  // JAX: "jacrev requires real- or complex-valued inputs ... but got int32. ... use vjp".
  std::string m = error_of<ts::DTypeError>([&] { (void)ts::jacrev(twice)(ints); });
  EXPECT_TRUE(contains(m, "jacrev: argument leaf 0 has dtype int32; gradients are defined for floating and complex "
                          "inputs only. Convert it with astype, or use vjp directly"))
      << m;
  // JAX: "jacfwd requires real-valued inputs ... but got int32 ... use jax.jvp directly".
  m = error_of<ts::DTypeError>([&] { (void)ts::jacfwd(twice)(ints); });
  EXPECT_TRUE(contains(m, "jacfwd: argument leaf 0 has dtype int32")) << m;
  // Floating inputs still work: d(2x)/dx = 2 I.
  EXPECT_EQ(ts::jacrev(twice)(ts::arange(2, ts::f32)).to_vector<float>(), (std::vector<float>{2, 0, 0, 2}));
}

TEST(JaxInputChecks, ScanRefusesANegativeLength) {
  const auto step = [](const ts::Array& c, const std::nullopt_t&) { return std::make_pair(c + 1, c); };
  std::string m = error_of<ts::ValueError>([&] { (void)ts::scan(step, ts::Array(0.0f), std::nullopt, {.length = -1}); });
  EXPECT_TRUE(contains(m, "scan: length must be >= 0, got -1")) << m;
  // JAX: scan(..., length=0) returns the initial carry and empty ys.
  auto [c, ys] = ts::scan(step, ts::Array(0.0f), std::nullopt, {.length = 0});
  EXPECT_EQ(c.item<float>(), 0.0f);
  EXPECT_EQ(ys.shape(), (ts::Shape{0}));
}
