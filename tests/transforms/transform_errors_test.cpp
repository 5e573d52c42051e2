// Misuse of the transformations fails with the right tessel error subclass and a message
// that names the operation (and, where there is one, the fix).
#include <cstring>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ir/primitive.h"
#include "ir/trace.h"
#include "tessel/control_flow.h"
#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;
using T1 = std::tuple<ts::Array>;
using Step = std::pair<ts::Array, ts::Array>;

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }
ts::Array f64s(std::vector<double> v) { return ts::Array(v); }

/// Runs f, which must throw exactly E (or a subclass) with every one of `needles` in its message.
template <class E, class F> void expect_error(const F& f, std::vector<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << " mentioning '" << needles.at(0) << "'; nothing was thrown";
  } catch (const E& e) {
    for (const auto& n : needles) EXPECT_TRUE(contains(e.what(), n)) << "'" << n << "' missing in: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
  }
}

ts::Array x3() { return f64s({0.1, 0.2, 0.3}); }

// ======================================== grad ========================================

TEST(TransformErrors, GradOfANonScalarOutput) {
  auto f = [](const ts::Array& x) { return ts::sin(x); };
  expect_error<ts::ShapeError>([&] { ts::grad(f)(x3()); }, {"grad", "scalar", "f64[3]"});
  expect_error<ts::ShapeError>([&] { ts::value_and_grad(f)(x3()); }, {"value_and_grad", "scalar"});
  expect_error<ts::ShapeError>([&] { ts::jit(ts::grad(f))(x3()); }, {"grad", "scalar"});
  // An integer scalar output is not differentiable either.
  expect_error<ts::ShapeError>([&] { ts::grad([](const ts::Array& x) { return ts::argmax(x, 0); })(x3()); },
                               {"grad", "floating"});
}

TEST(TransformErrors, GradWithRespectToAnIntegerArgument) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::astype(x, ts::f64)); };
  expect_error<ts::DTypeError>([&] { ts::grad(f)(ts::Array(std::vector<int32_t>{1, 2})); }, {"grad", "int32"});
  // The integer argument is fine when it is not differentiated.
  auto g = [](const ts::Array& x, const ts::Array& n) { return ts::sum(x * ts::astype(n, ts::f64)); };
  EXPECT_NO_THROW(ts::grad<0>(g)(x3(), ts::Array(std::vector<int32_t>{1, 2, 3})));
  expect_error<ts::DTypeError>([&] { ts::grad<0, 1>(g)(x3(), ts::Array(std::vector<int32_t>{1, 2, 3})); },
                               {"grad", "argument leaf 1"});
}

TEST(TransformErrors, GradHasAuxMismatch) {
  auto plain = [](const ts::Array& x) { return ts::sum(x); };
  auto with_aux = [](const ts::Array& x) { return std::make_pair(ts::sum(x), x); };
  expect_error<ts::ValueError>([&] { ts::grad(plain, {.has_aux = true})(x3()); }, {"grad", "has_aux"});
  expect_error<ts::ValueError>([&] { ts::grad(with_aux)(x3()); }, {"grad", "has_aux"});
}

TEST(TransformErrors, JvpTangentOfTheWrongShape) {
  auto f = [](const ts::Array& x) { return ts::sin(x); };
  expect_error<ts::ShapeError>([&] { ts::jvp(f, x3(), f64s({1.0, 2.0})); }, {"jvp", "tangent"});
  expect_error<ts::ShapeError>([&] { ts::jvp(f, x3(), ts::ones({3}, ts::f32)); }, {"jvp", "tangent"});
}

// ======================================== vmap ========================================

TEST(TransformErrors, VmapMismatchedMappedSizes) {
  auto f = [](const ts::Array& a, const ts::Array& b) { return a + b; };
  expect_error<ts::ShapeError>([&] { ts::vmap(f)(ts::ones({3, 2}), ts::ones({4, 2})); }, {"vmap", "3", "4"});
  expect_error<ts::ShapeError>([&] { ts::vmap(f, {0, 1})(ts::ones({3, 2}), ts::ones({3, 2})); }, {"vmap", "size"});
  expect_error<ts::ShapeError>([&] { ts::vmap(f, {0, 0}, {}, 5)(ts::ones({3, 2}), ts::ones({3, 2})); },
                               {"vmap", "axis_size"});
}

TEST(TransformErrors, VmapInAxesCountMismatch) {
  auto f = [](const ts::Array& a, const ts::Array& b) { return a + b; };
  expect_error<ts::ValueError>([&] { ts::vmap(f, {0})(ts::ones({3}), ts::ones({3})); }, {"vmap", "in_axes", "2"});
  expect_error<ts::ValueError>([&] { ts::vmap(f, {0, 0, 0})(ts::ones({3}), ts::ones({3})); }, {"vmap", "in_axes"});
}

TEST(TransformErrors, VmapWithoutAMappedArgumentNeedsAxisSize) {
  auto f = [](const ts::Array& a) { return a * 2.0; };
  expect_error<ts::ValueError>([&] { ts::vmap(f, {ts::none})(ts::ones({3})); }, {"vmap", "axis_size"});
  ts::Array r = ts::vmap(f, {ts::none}, {}, 4)(ts::ones({3}));  // with axis_size it broadcasts
  EXPECT_EQ(r.shape(), (ts::Shape{4, 3}));
}

TEST(TransformErrors, VmapAxesOutOfRange) {
  auto f = [](const ts::Array& a) { return a * 2.0; };
  expect_error<ts::IndexError>([&] { ts::vmap(f, {2})(ts::ones({3, 2})); }, {"vmap", "in_axes"});
  expect_error<ts::IndexError>([&] { ts::vmap(f, {0}, {3})(ts::ones({3, 2})); }, {"vmap", "out_axes"});
  expect_error<ts::ValueError>([&] { ts::vmap(f, {0}, {ts::none})(ts::ones({3, 2})); }, {"vmap", "out_axes"});
}

// ==================================== control flow ====================================

TEST(TransformErrors, ReverseModeThroughWhileLoop) {
  auto f = [](const ts::Array& x) {
    return ts::sum(ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 10.0; },
                                  [](const ts::Array& v) { return v * 1.5; }, x));
  };
  for (const char* op : {"grad", "vjp", "jit(grad)", "fori_loop with Array bounds"}) {
    SCOPED_TRACE(op);
    expect_error<ts::NotImplementedError>(
        [&] {
          std::string o = op;
          if (o == "grad") ts::grad(f)(x3());
          else if (o == "vjp") ts::vjp(f, x3());
          else if (o == "jit(grad)") ts::jit(ts::grad(f))(x3());
          else
            ts::grad([](const ts::Array& x) {
              return ts::sum(ts::fori_loop(ts::Array(0), ts::Array(3),
                                           [](const ts::Array&, const ts::Array& v) { return ts::sin(v); }, x));
            })(x3());
        },
        {"while_loop", "reverse-mode", "fori_loop", "scan"});
  }
  EXPECT_NO_THROW(ts::jvp(f, x3(), x3()));  // forward mode is supported
}

TEST(TransformErrors, CondBranchesReturningDifferentTypes) {
  auto shapes = [](const ts::Array& x) {
    return ts::cond(
        ts::sum(x) > 0.0, [](const ts::Array& a) { return a; },
        [](const ts::Array& a) { return ts::concatenate({a, a}); }, x);
  };
  expect_error<ts::ShapeError>([&] { shapes(x3()); }, {"cond", "branch 1 output", "f64[6]", "f64[3]"});
  expect_error<ts::ShapeError>([&] { ts::jit(shapes)(x3()); }, {"cond", "branch 1 output"});
  auto dtypes = [](const ts::Array& x) {
    return ts::cond(
        ts::sum(x) > 0.0, [](const ts::Array& a) { return a; }, [](const ts::Array& a) { return ts::astype(a, ts::f32); },
        x);
  };
  expect_error<ts::DTypeError>([&] { dtypes(x3()); }, {"cond", "branch 1 output", "f32[3]"});
  std::vector<std::function<Step(const ts::Array&)>> branches{
      [](const ts::Array& a) { return Step(a, a); }, [](const ts::Array& a) { return Step(a, a); },
      [](const ts::Array& a) { return Step(a, ts::sum(a)); }};
  expect_error<ts::ShapeError>([&] { ts::switch_(ts::Array(1), branches, x3()); }, {"cond", "branch 2 output 1"});
}

TEST(TransformErrors, CondPredicateMustBeAScalar) {
  auto id = [](const ts::Array& a) { return a; };
  expect_error<ts::ShapeError>([&] { ts::cond(x3() > 0.0, id, id, x3()); }, {"cond", "scalar"});
  std::vector<std::function<ts::Array(const ts::Array&)>> branches{id, id};
  expect_error<ts::DTypeError>([&] { ts::switch_(ts::Array(1.0), branches, x3()); }, {"cond", "integer"});
  std::vector<std::function<ts::Array(const ts::Array&)>> none;
  expect_error<ts::ValueError>([&] { ts::switch_(ts::Array(0), none, x3()); }, {"switch_", "branch"});
}

TEST(TransformErrors, ScanBodyChangingTheCarryType) {
  auto shape_change = [](const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(ts::concatenate({c, c}), x); },
                    ts::Array(std::vector<double>{0.0}), xs);
  };
  expect_error<ts::ShapeError>([&] { shape_change(f64s({1.0, 2.0})); }, {"scan", "carry", "f64[2]", "f64[1]"});
  auto dtype_change = [](const ts::Array& xs) {
    return ts::scan([](const ts::Array& c, const ts::Array& x) { return Step(ts::astype(c + x, ts::f32), x); },
                    ts::Array(ts::Scalar(0.0)), xs);
  };
  expect_error<ts::DTypeError>([&] { dtype_change(f64s({1.0, 2.0})); }, {"scan", "carry", "f32"});
  expect_error<ts::DTypeError>([&] { ts::jit(dtype_change)(f64s({1.0, 2.0})); }, {"scan", "carry"});
}

TEST(TransformErrors, ScanLengthProblems) {
  auto body = [](const ts::Array& c, const ts::Array& x) { return Step(c + x, c); };
  auto nobody = [](const ts::Array& c, const std::nullopt_t&) { return Step(c, c); };
  expect_error<ts::ValueError>([&] { ts::scan(nobody, ts::Array(0.0), ts::none); }, {"scan", "length"});
  expect_error<ts::ShapeError>([&] { ts::scan(body, ts::Array(0.0), f64s({1.0, 2.0}), {.length = 3}); },
                               {"scan", "length"});
  expect_error<ts::ShapeError>([&] { ts::scan(body, ts::Array(0.0), ts::Array(1.0)); }, {"scan", "leading axis"});
  expect_error<ts::ShapeError>(
      [&] {
        ts::scan([](const ts::Array& c, const Step& x) { return Step(c + x.first + x.second, c); },
                 ts::Array(ts::Scalar(0.0)), Step(f64s({1.0, 2.0}), f64s({1.0, 2.0, 3.0})));
      },
      {"scan", "leading sizes"});
}

TEST(TransformErrors, WhileLoopConditionAndBodyTypes) {
  auto float_cond = [](const ts::Array& x) {
    return ts::while_loop([](const ts::Array& v) { return ts::sum(v); }, [](const ts::Array& v) { return v; }, x);
  };
  expect_error<ts::DTypeError>([&] { float_cond(x3()); }, {"while_loop", "cond_fun", "bool"});
  auto vector_cond = [](const ts::Array& x) {
    return ts::while_loop([](const ts::Array& v) { return v > 1.0; }, [](const ts::Array& v) { return v; }, x);
  };
  expect_error<ts::DTypeError>([&] { vector_cond(x3()); }, {"while_loop", "cond_fun", "scalar"});
  auto growing = [](const ts::Array& x) {
    return ts::while_loop([](const ts::Array& v) { return ts::sum(v) < 1.0; },
                          [](const ts::Array& v) { return ts::concatenate({v, v}); }, x);
  };
  expect_error<ts::ShapeError>([&] { growing(x3()); }, {"while_loop", "body_fun", "carry"});
}

// ==================================== custom rules ====================================

TEST(TransformErrors, CustomJvpTangentDtypeMismatch) {
  auto f32_tangent = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                                    [](const T1& p, const T1& t) {
                                      const ts::Array& x = std::get<0>(p);
                                      return std::make_pair(ts::sin(x), ts::astype(std::get<0>(t), ts::f32));
                                    });
  auto loss = [&](const ts::Array& x) { return ts::sum(f32_tangent(x)); };
  expect_error<ts::DTypeError>([&] { ts::jvp(f32_tangent, x3(), x3()); }, {"custom_jvp", "tangent", "f32", "f64"});
  expect_error<ts::DTypeError>([&] { ts::grad(loss)(x3()); }, {"custom_jvp", "tangent"});
  expect_error<ts::DTypeError>([&] { ts::jit(ts::grad(loss))(x3()); }, {"custom_jvp", "tangent"});
  auto wrong_shape = ts::custom_jvp([](const ts::Array& x) { return ts::sin(x); },
                                    [](const T1& p, const T1& t) {
                                      return std::make_pair(ts::sin(std::get<0>(p)), ts::sum(std::get<0>(t)));
                                    });
  expect_error<ts::ShapeError>([&] { ts::jvp(wrong_shape, x3(), x3()); }, {"custom_jvp", "tangent"});
}

TEST(TransformErrors, CustomJvpClosingOverADifferentiatedValue) {
  auto f = [](const ts::Array& x, const ts::Array& y) {
    auto cj = ts::custom_jvp([&](const ts::Array& z) { return z * y; },
                             [&](const T1& p, const T1& t) {
                               return std::make_pair(std::get<0>(p) * y, std::get<0>(t) * y);
                             });
    return ts::sum(cj(x));
  };
  EXPECT_NO_THROW(ts::grad<0>(f)(x3(), x3()));  // y is not differentiated
  expect_error<ts::ValueError>([&] { ts::grad<1>(f)(x3(), x3()); }, {"custom_jvp", "closes over", "argument"});
}

TEST(TransformErrors, CustomVjpBwdReturningTheWrongShape) {
  auto cv = ts::custom_vjp([](const ts::Array& x) { return ts::sin(x); },
                           [](const ts::Array& x) { return std::make_pair(ts::sin(x), ts::cos(x)); },
                           [](const ts::Array& r, const ts::Array& ct) { return ts::sum(ct * r); });
  auto loss = [&](const ts::Array& x) { return ts::sum(cv(x)); };
  expect_error<ts::ShapeError>([&] { ts::grad(loss)(x3()); }, {"custom_vjp", "bwd", "f64[]", "f64[3]"});
  expect_error<ts::ShapeError>([&] { ts::jit(ts::grad(loss))(x3()); }, {"custom_vjp", "bwd"});
  auto cv_dtype = ts::custom_vjp([](const ts::Array& x) { return ts::sin(x); },
                                 [](const ts::Array& x) { return std::make_pair(ts::sin(x), ts::cos(x)); },
                                 [](const ts::Array& r, const ts::Array& ct) { return ts::astype(ct * r, ts::f32); });
  expect_error<ts::DTypeError>([&] { ts::grad([&](const ts::Array& x) { return ts::sum(cv_dtype(x)); })(x3()); },
                               {"custom_vjp", "bwd"});
}

TEST(TransformErrors, ForwardModeOfCustomVjp) {
  auto cv = ts::custom_vjp([](const ts::Array& x) { return ts::sin(x); },
                           [](const ts::Array& x) { return std::make_pair(ts::sin(x), ts::cos(x)); },
                           [](const ts::Array& r, const ts::Array& ct) { return ct * r; });
  expect_error<ts::NotImplementedError>([&] { ts::jvp(cv, x3(), x3()); }, {"custom_vjp", "forward-mode", "custom_jvp"});
  expect_error<ts::NotImplementedError>([&] { ts::jacfwd(cv)(x3()); }, {"custom_vjp", "forward-mode"});
}

// Under jit the jvp of a custom_vjp function compiles; the error surfaces when the result is read.
TEST(TransformErrors, ForwardModeOfCustomVjpUnderJit) {
  auto cv = ts::custom_vjp([](const ts::Array& x) { return ts::sin(x); },
                           [](const ts::Array& x) { return std::make_pair(ts::sin(x), ts::cos(x)); },
                           [](const ts::Array& r, const ts::Array& ct) { return ct * r; });
  expect_error<ts::NotImplementedError>(
      [&] {
        ts::jit([&](const ts::Array& x, const ts::Array& t) { return ts::jvp(cv, x, t).second; })(x3(), x3())
            .block_until_ready();
      },
      {"custom_vjp", "forward-mode"});
}

// ============================== primitives without a rule ==============================

std::vector<ts::Aval> same_aval(std::span<const ts::Aval> in, const ts::ir::Params&) { return {in[0]}; }
void copy_kernel(const ts::ir::KernelCall& c) { std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes()); }
const ts::ir::Primitive& no_rule_p =
    ts::ir::register_primitive({.name = "cftest_no_rule", .abstract_eval = same_aval, .cpu_kernel = copy_kernel});
// Linear (its jvp applies itself to the tangent) but without a transpose rule.
std::vector<ts::Array> self_jvp(const ts::ir::Primitive& self, std::span<const ts::Array>, std::span<const ts::Array> t,
                                std::span<const ts::Array>, const ts::ir::Params& params) {
  return ts::detail::bind(self, t, params);
}
const ts::ir::Primitive& no_transpose_p = ts::ir::register_primitive(
    {.name = "cftest_no_transpose", .abstract_eval = same_aval, .cpu_kernel = copy_kernel, .jvp = self_jvp});

TEST(TransformErrors, PrimitiveWithoutTheRuleATransformationNeeds) {
  auto no_rule = [](const ts::Array& x) { return ts::detail::bind1(no_rule_p, {x}); };
  EXPECT_EQ(ts::jit(no_rule)(x3()).to_vector<double>(), (std::vector<double>{0.1, 0.2, 0.3}));  // no rule needed
  expect_error<ts::NotImplementedError>([&] { ts::grad([&](const ts::Array& x) { return ts::sum(no_rule(x)); })(x3()); },
                                        {"cftest_no_rule", "jvp"});
  expect_error<ts::NotImplementedError>([&] { ts::jvp(no_rule, x3(), x3()); }, {"cftest_no_rule", "jvp"});
  expect_error<ts::NotImplementedError>([&] { ts::vmap(no_rule)(ts::ones({2, 3}, ts::f64)); },
                                        {"cftest_no_rule", "vmap", "batching rule"});
  // Inside a control-flow body the message still names the primitive.
  expect_error<ts::NotImplementedError>(
      [&] {
        ts::vmap([&](const ts::Array& x) {
          return ts::fori_loop(0, 2, [&](const ts::Array&, const ts::Array& v) { return no_rule(v); }, x);
        })(ts::ones({2, 3}, ts::f64));
      },
      {"cftest_no_rule", "batching rule"});
  auto no_transpose = [](const ts::Array& x) { return ts::detail::bind1(no_transpose_p, {x}); };
  EXPECT_NO_THROW(ts::jvp(no_transpose, x3(), x3()));
  expect_error<ts::NotImplementedError>(
      [&] { ts::grad([&](const ts::Array& x) { return ts::sum(no_transpose(x)); })(x3()); },
      {"cftest_no_transpose", "transpose"});
}

}  // namespace
