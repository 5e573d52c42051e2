// The program IR: printing, verification, tracing errors.
#include <gtest/gtest.h>

#include "ir/program.h"
#include "ir/trace.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

std::string program_text(const ts::Program& p) { return p.to_string(); }

}  // namespace

TEST(ProgramPrinter, PrintsLikeMakeJaxpr) {
  auto f = [](const ts::Array& x) { return ts::sin(x) * 2.0; };
  ts::Array x(std::vector<float>{1, 2, 3});
  EXPECT_EQ(program_text(ts::make_program(f, x)),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[3] = sin a\n"
            "    c:f32[3] = mul b 2.0:f32[]\n"
            "  in (c,) }");
}

TEST(ProgramPrinter, ShowsParamsConstantsAndMultipleOutputs) {
  ts::Array captured(std::vector<float>{1, 2, 3});
  auto f = [captured](const ts::Array& x) {
    return std::make_tuple(ts::sum(x + captured, {0}), ts::reshape(x, {3, 1}));
  };
  ts::Array x(std::vector<float>{1, 2, 3});
  std::string text = program_text(ts::make_program(f, x));
  EXPECT_NE(text.find("{ lambda a:f32[3] ; b:f32[3]. let"), std::string::npos) << text;
  EXPECT_NE(text.find("reduce_sum[axes=(0,)]"), std::string::npos) << text;
  EXPECT_NE(text.find("reshape[new_sizes=(3, 1)]"), std::string::npos) << text;
  EXPECT_NE(text.find("in (e, c) }"), std::string::npos) << text;
}

TEST(ProgramPrinter, IndentsNestedJitPrograms) {
  auto inner = ts::jit([](const ts::Array& x) { return ts::exp(x); }, {.name = "inner"});
  auto f = [inner](const ts::Array& x) { return inner(x) + 1.0; };
  ts::Array x(std::vector<double>{1, 2});
  std::string text = program_text(ts::make_program(f, x));
  EXPECT_EQ(text,
            "{ lambda ; a:f64[2]. let\n"
            "    b:f64[2] = jit[\n"
            "      name=inner\n"
            "      program={ lambda ; c:f64[2]. let\n"
            "          d:f64[2] = exp c\n"
            "        in (d,) }\n"
            "    ] a\n"
            "    e:f64[2] = add b 1.0:f64[]\n"
            "  in (e,) }");
}

TEST(ProgramVerifier, AcceptsTracedPrograms) {
  auto f = [](const ts::Array& x) { return ts::matmul(x, ts::transpose(x)) + 1.0f; };
  ts::Array x = ts::ones({3, 2});
  EXPECT_NO_THROW(ts::make_program(f, x));
}

TEST(ProgramVerifier, RejectsMistypedEquation) {
  namespace ir = ts::ir;
  ts::Array x = ts::ones({3});
  // Trace a valid program, then corrupt an output type.
  auto prog = ts::detail::trace_to_program(
      [](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::sin(a[0])}; },
      std::vector<ts::Aval>{x.aval()});
  prog.eqns[0].outputs[0]->aval = ts::Aval({4}, ts::f32);
  try {
    ir::verify_program(prog);
    FAIL() << "expected an error";
  } catch (const ts::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sin output 0 has type f32[3] but is declared f32[4]"), std::string::npos) << m;
  }
}

TEST(ProgramVerifier, RejectsUseBeforeDefinition) {
  namespace ir = ts::ir;
  ts::Array x = ts::ones({3});
  auto prog = ts::detail::trace_to_program(
      [](std::span<const ts::Array> a) { return std::vector<ts::Array>{ts::cos(ts::sin(a[0]))}; },
      std::vector<ts::Aval>{x.aval()});
  std::swap(prog.eqns[0], prog.eqns[1]);
  EXPECT_THROW(ir::verify_program(prog), ts::Error);
}

TEST(Tracing, LeakedTracerIsAnError) {
  ts::Array leaked;
  auto f = [&leaked](const ts::Array& x) {
    leaked = x;
    return x + 1.0;
  };
  ts::jit(f)(ts::ones({2}));
  try {
    (void)(leaked + 1.0);
    FAIL() << "expected an error";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()).find("leaked tracer"), std::string::npos) << e.what();
  }
}

TEST(Tracing, ConcreteValueOfTracerIsAnError) {
  auto f = [](const ts::Array& x) { return x * x.item<float>(); };
  EXPECT_THROW(ts::jit(f)(ts::ones({1})), ts::ConcretizationError);
}

TEST(Tracing, OneArrayTypeWorksEagerlyAndTraced) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::square(x) - x, {}); };
  ts::Array x(std::vector<double>{1, 2, 3});
  EXPECT_DOUBLE_EQ(f(x).item<double>(), 8.0);
  EXPECT_DOUBLE_EQ(ts::jit(f)(x).item<double>(), 8.0);
}
