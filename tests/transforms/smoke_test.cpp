#include "transforms/check_transforms.h"

namespace {
using namespace transform_testing;

TEST(TransformSmoke, GradOfSinTimesX) {
  auto f = [](const ts::Array& x) { return ts::sum(ts::sin(x) * x); };
  ts::Array x = uniform({4}, 1);
  ts::Array g = ts::grad(f)(x);
  ts::Array want = ts::cos(x) * x + ts::sin(x);
  expect_close(g, want, 1e-12, "grad");
}

TEST(TransformSmoke, CheckGradsAddMul) {
  check_grads([](const std::vector<ts::Array>& a) { return a[0] * a[1] + a[0]; }, {uniform({3, 2}, 1), uniform({3, 2}, 2)});
}

TEST(TransformSmoke, VmapAdd) {
  check_vmap([](const std::vector<ts::Array>& a) { return a[0] + a[1]; }, {uniform({3, 2}, 1), uniform({2}, 2)},
             {0, ts::none}, 1);
}
}  // namespace
