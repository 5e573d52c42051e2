// Enumeration values made by a cast (`static_cast<DType>(99)`) are refused at the API
// boundary with an error naming the operation and the value, for every public enum:
// DType, comm::Op, fft::FftType, distributed::Mode, pipeline::TaskKind and
// CheckpointPolicy. Before, astype(DType(99)) read tables out of bounds and reported
// "out of memory allocating <a different number each run> bytes".
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tessel/comm.h"
#include "tessel/distributed.h"
#include "tessel/fft.h"
#include "tessel/pipeline.h"
#include "tessel/random.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

// Runs `f` and requires an error of type E whose message contains `op` and `value`.
template <class E = ts::Error>
void expect_refused(const std::string& op, const std::string& value, const std::function<void()>& f) {
  SCOPED_TRACE(op);
  try {
    f();
    ADD_FAILURE() << op << ": no error";
  } catch (const E& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(op), std::string::npos) << m;
    EXPECT_NE(m.find(value), std::string::npos) << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << op << ": threw " << typeid(e).name() << ": " << e.what();
  }
}

const ts::DType kBad = static_cast<ts::DType>(99);

}  // namespace

TEST(InvalidEnums, DTypeIsRefusedByEveryEntryPoint) {
  const ts::Array x = ts::arange(4, ts::f32);
  const ts::Array key = ts::random::key(0);
  const std::string v = "DType(99) is not a dtype";
  expect_refused<ts::DTypeError>("astype", v, [&] { (void)ts::astype(x, kBad); });
  expect_refused<ts::DTypeError>("astype", v, [&] { (void)x.astype(kBad); });
  expect_refused<ts::DTypeError>("zeros", v, [&] { (void)ts::zeros({2}, kBad); });
  expect_refused<ts::DTypeError>("ones", v, [&] { (void)ts::ones({2}, kBad); });
  expect_refused<ts::DTypeError>("full", v, [&] { (void)ts::full({2}, 1.0, kBad); });
  expect_refused<ts::DTypeError>("iota", v, [&] { (void)ts::iota(kBad, {3}); });
  expect_refused<ts::DTypeError>("arange", v, [&] { (void)ts::arange(3, kBad); });
  expect_refused<ts::DTypeError>("arange", v, [&] { (void)ts::arange(0.0, 3.0, 1.0, kBad); });
  expect_refused<ts::DTypeError>("linspace", v, [&] { (void)ts::linspace(0, 1, 5, true, kBad); });
  expect_refused<ts::DTypeError>("eye", v, [&] { (void)ts::eye(3, std::nullopt, 0, kBad); });
  expect_refused<ts::DTypeError>("Array::from_bytes", v, [&] {
    float data[2] = {1, 2};
    (void)ts::Array::from_bytes(data, {2}, kBad);
  });
  expect_refused<ts::DTypeError>("fft.fftfreq", v, [&] { (void)ts::fft::fftfreq(4, 1.0, kBad); });
  expect_refused<ts::DTypeError>("fft.rfftfreq", v, [&] { (void)ts::fft::rfftfreq(4, 1.0, kBad); });
  expect_refused<ts::DTypeError>("bitcast_convert_type", v, [&] { (void)ts::bitcast_convert_type(x, kBad); });
  expect_refused<ts::DTypeError>("bits", v, [&] { (void)ts::random::bits(key, {2}, kBad); });
  expect_refused<ts::DTypeError>("uniform", v, [&] { (void)ts::random::uniform(key, {2}, kBad); });
  expect_refused<ts::DTypeError>("normal", v, [&] { (void)ts::random::normal(key, {2}, kBad); });
  expect_refused<ts::DTypeError>("pure_callback", v, [&] {
    (void)ts::pure_callback([](const ts::Array& a) { return a; }, ts::ShapeDtype({4}, kBad), x);
  });
  expect_refused<ts::DTypeError>("promote_types", v, [&] { (void)ts::promote_types(kBad, ts::f32); });
  // The dtype functions themselves never read past their tables.
  expect_refused<ts::DTypeError>("itemsize", v, [&] { (void)ts::itemsize(kBad); });
  expect_refused<ts::DTypeError>("dtype_name", v, [&] { (void)ts::dtype_name(kBad); });
  expect_refused<ts::DTypeError>("dtype_short_name", v, [&] { (void)ts::dtype_short_name(kBad); });
  expect_refused<ts::DTypeError>("visit_dtype", v, [&] { ts::visit_dtype(kBad, [](auto) {}); });
  // Every valid dtype still passes.
  for (int d = 0; d < ts::kNumDTypes; ++d) EXPECT_EQ(ts::zeros({1}, ts::DType(d)).dtype(), ts::DType(d));
}

TEST(InvalidEnums, DTypeMessageNamesTheFix) {
  try {
    (void)ts::arange(4, ts::f32).astype(kBad);
    FAIL() << "no error";
  } catch (const ts::DTypeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "astype: DType(99) is not a dtype (an integer cast to DType?); use one of the named dtypes, such as "
              "ts::f32, ts::i32 or ts::bool_, or dtype_from_name(\"float32\")");
  }
}

TEST(InvalidEnums, CommOpIsRefused) {
  const ts::Array x = ts::arange(4, ts::f32);
  const auto bad = static_cast<ts::comm::Op>(42);
  const std::string v = "Op(42) is not a reduction operator";
  expect_refused<ts::ValueError>("comm.allreduce", v, [&] { (void)ts::comm::allreduce(x, bad); });
  expect_refused<ts::ValueError>("comm.reduce", v, [&] { (void)ts::comm::reduce(x, bad, 0); });
  expect_refused<ts::ValueError>("comm.scan", v, [&] { (void)ts::comm::scan(x, bad); });
  EXPECT_EQ(ts::comm::to_string(bad), "Op(42)");
}

TEST(InvalidEnums, FftTypeIsRefused) {
  const ts::Array z = ts::astype(ts::arange(4, ts::f32), ts::c64);
  expect_refused<ts::ValueError>("lax_fft", "FftType(7) is not a transform type", [&] { (void)ts::fft::lax_fft(z, ts::fft::FftType(7), {4}); });
  expect_refused<ts::ValueError>("fft.fft", "unknown norm \"sideways\"", [&] { (void)ts::fft::fft(z, std::nullopt, -1, "sideways"); });
}

TEST(InvalidEnums, DistributedModeIsRefused) {
  expect_refused<ts::ValueError>("distributed::initialize", "Mode(5) is not a mode",
                                 [&] { ts::distributed::initialize({.mode = static_cast<ts::distributed::Mode>(5)}); });
}

TEST(InvalidEnums, PipelineTaskKindIsRefused) {
  ts::pipeline::Plan plan = ts::pipeline::make_plan(ts::pipeline::GPipe{}, 1, 1, 1);
  plan.tasks[0][0].kind = static_cast<ts::pipeline::TaskKind>(9);
  expect_refused<ts::ValueError>("simulate", "TaskKind(9)(s=0,m=0), whose kind is not a TaskKind",
                                 [&] { (void)ts::pipeline::simulate(plan); });
}

TEST(InvalidEnums, CheckpointPolicyIsRefused) {
  auto f = ts::checkpoint([](const ts::Array& x) { return ts::sin(x); },
                          {.policy = static_cast<ts::CheckpointPolicy>(3)});
  expect_refused<ts::ValueError>("checkpoint", "CheckpointPolicy(3) is not a policy",
                                 [&] { (void)f(ts::Array(1.0f)); });
}
