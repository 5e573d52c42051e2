// Every primitive family partitioned: jit with input (and output) shardings gives the values
// of plain eager evaluation, for replicated operands, one mesh axis (8 devices), two axes
// (a 2x4 mesh, one per dimension or both on one dimension), and sizes that do not divide
// (dimensions of 10 and 13 over 4 or 8 devices: padded pieces), including reductions and
// contractions over split dimensions.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/primitive.h"
#include "ir/trace.h"
#include "sharding/sharding_test_util.h"
#include "tessel/tessel.h"

namespace ts = tessel;
using sharding_test::range_f32;

namespace {

/// Deterministic values in [-1, 1) with no pattern along any dimension.
ts::Array wavy(const ts::Shape& shape) {
  return ts::sin(range_f32(shape, 0.7f, 0.3f)) * ts::cos(range_f32(shape, 0.13f));
}

/// `got` (any layout) equals `want` within `tol` (relative), NaN matching NaN.
void expect_close(const ts::Array& got, const ts::Array& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const ts::Array g = ts::device_put(got, ts::SingleDeviceSharding(want.device()));
  if (ts::is_complex(want.dtype())) {
    expect_close(ts::real(g), ts::real(want), tol);
    expect_close(ts::imag(g), ts::imag(want), tol);
    return;
  }
  const auto x = ts::astype(g, ts::f64).to_vector<double>(), y = ts::astype(want, ts::f64).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(y[i])) {
      ASSERT_TRUE(std::isnan(x[i])) << "at flat index " << i << ": got " << x[i] << ", want NaN";
      continue;
    }
    ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "at flat index " << i;
  }
}

const ts::Mesh& mesh8() {
  static const ts::Mesh m = ts::make_mesh({8}, {"x"});
  return m;
}
const ts::Mesh& mesh24() {
  static const ts::Mesh m = ts::make_mesh({2, 4}, {"x", "y"});
  return m;
}

/// A spec of `rank` dimensions with `e` at dimension `d` (clamped to the last one).
ts::PartitionSpec spec_at(size_t rank, size_t d, const ts::SpecEntry& e) {
  std::vector<ts::SpecEntry> v(rank);
  if (rank > 0) v[std::min(d, rank - 1)] = e;
  return ts::PartitionSpec(v);
}

struct Case {
  std::string name;
  std::vector<std::optional<ts::Sharding>> in;
  std::vector<std::optional<ts::Sharding>> out;
};

/// The layouts tried for arguments `args` and a result of rank `out_rank`.
std::vector<Case> cases_for(const std::vector<ts::Array>& args, size_t out_rank) {
  size_t max_rank = 0;
  for (auto& a : args) max_rank = std::max(max_rank, size_t(a.ndim()));
  std::vector<Case> cases;
  auto each = [&](const std::string& name, const ts::Mesh& m, auto spec_of) {
    Case c{name, {}, {}};
    for (size_t i = 0; i < args.size(); ++i)
      c.in.push_back(ts::Sharding(ts::NamedSharding(m, spec_of(i, size_t(args[i].ndim())))));
    cases.push_back(c);
  };
  each("replicated", mesh8(), [](size_t, size_t) { return ts::P(); });
  for (size_t d = 0; d < std::max<size_t>(max_rank, 1); ++d)
    each("x at dim " + std::to_string(d), mesh8(), [d](size_t, size_t r) { return spec_at(r, d, "x"); });
  each("P(x, y)", mesh24(), [](size_t, size_t r) {
    if (r < 2) return spec_at(r, 0, "y");
    std::vector<ts::SpecEntry> v(r);
    v[0] = "x";
    v[1] = "y";
    return ts::PartitionSpec(v);
  });
  const size_t both_axes = cases.size();
  each("P((x, y)) at dim 0", mesh24(), [](size_t, size_t r) { return spec_at(r, 0, ts::axes("x", "y")); });
  each("P((y, x)) at the last dim", mesh24(),
       [](size_t, size_t r) { return spec_at(r, r == 0 ? 0 : r - 1, ts::axes("y", "x")); });
  each("first argument only, y at dim 0", mesh24(),
       [](size_t i, size_t r) { return i == 0 ? spec_at(r, 0, "y") : ts::P(); });
  // Output layouts: gathered, split although the inputs are not, split over both axes.
  Case c = cases[1];
  c.name = "x at dim 0 -> replicated result";
  c.out = {ts::Sharding(ts::NamedSharding(mesh8(), ts::P()))};
  cases.push_back(c);
  if (out_rank > 0) {
    c = cases[0];
    c.name = "replicated -> result x at dim 0";
    c.out = {ts::Sharding(ts::NamedSharding(mesh8(), spec_at(out_rank, 0, "x")))};
    cases.push_back(c);
    c = cases[both_axes];
    c.name = "P((x, y)) at dim 0 -> result P((y, x)) at the last dim";
    c.out = {ts::Sharding(ts::NamedSharding(mesh24(), spec_at(out_rank, out_rank - 1, ts::axes("y", "x"))))};
    cases.push_back(c);
  }
  return cases;
}

/// f(args...) jitted with every layout of cases_for equals f(args...) evaluated eagerly.
template <class F, class... A>
void check(const std::string& what, double tol, const F& f, const A&... args) {
  const ts::Array want = f(args...);
  for (const Case& c : cases_for({ts::Array(args)...}, size_t(want.ndim()))) {
    SCOPED_TRACE(what + ", " + c.name);
    ts::Array got;
    try {
      got = ts::jit(f, {.in_shardings = c.in, .out_shardings = c.out})(args...);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
      continue;
    }
    expect_close(got, want, tol);
    if (!c.out.empty()) {
      EXPECT_EQ(got.sharding(), *c.out[0]);
    }
  }
}

}  // namespace

TEST(PartitionFamilies, CasesCoverTheLayouts) {
  auto cases = cases_for({range_f32({10, 13}), range_f32({})}, 2);
  ASSERT_EQ(cases.size(), 10u);
  EXPECT_EQ(cases[0].in[0]->spec().to_string(), "P()");
  EXPECT_EQ(cases[2].in[0]->spec().to_string(), "P(None, 'x')");
  EXPECT_EQ(cases[3].in[0]->spec().to_string(), "P('x', 'y')");
  EXPECT_EQ(cases[4].in[0]->spec().to_string(), "P(('x', 'y'), None)");
  EXPECT_EQ(cases[5].in[0]->spec().to_string(), "P(None, ('y', 'x'))");
  EXPECT_EQ(cases[9].in[0]->spec().to_string(), "P(('x', 'y'), None)");
  EXPECT_EQ(cases[9].out[0]->spec().to_string(), "P(None, ('y', 'x'))");
  EXPECT_EQ(cases[3].in[1]->spec().to_string(), "P()");  // rank 0
}

TEST(PartitionFamilies, ElementwiseArithmetic) {
  const ts::Array x = wavy({10, 13}) * 4.0f, y = wavy({10, 13}) + 1.5f;
  check(
      "arithmetic", 1e-5,
      [](const ts::Array& a, const ts::Array& b) {
        return (a + b) * (a - b) / b + ts::maximum(a, b) - ts::minimum(a, b * 0.5f) + ts::pow(ts::abs(a) + 1.0f, b) +
               ts::atan2(a, b) + ts::rem(a, b) + ts::negative(a);
      },
      x, y);
  check(
      "transcendental", 1e-5,
      [](const ts::Array& a) {
        const ts::Array u = ts::tanh(a) * 0.9f;
        return ts::sin(a) + ts::cos(a) + ts::exp(u) + ts::log1p(ts::abs(a)) + ts::sqrt(ts::abs(a)) +
               ts::rsqrt(ts::abs(a) + 1.0f) + ts::cbrt(a) + ts::arcsin(u) + ts::arctan(a) + ts::erf(a) +
               ts::erf_inv(u) + ts::logistic(a) + ts::floor(a) + ts::round(a) + ts::sign(a) + ts::square(a);
      },
      x);
  check(
      "scalars", 1e-6, [](const ts::Array& a) { return a * 2.0f + 1.0f - ts::Array(3.0f) / (ts::abs(a) + 1.0f); }, x);
  check(
      "rank 0", 1e-6, [](const ts::Array& a, const ts::Array& b) { return a * b + 1.0f; }, ts::Array(2.5f),
      ts::Array(-1.0f));
}

TEST(PartitionFamilies, ElementwiseComparisonsSelectAndConversions) {
  const ts::Array x = wavy({10, 13}) * 4.0f, y = wavy({13}).reshape({13}) * 3.0f;
  const ts::Array yb = ts::broadcast_to(y, {10, 13});
  check(
      "where", 1e-6, [](const ts::Array& a, const ts::Array& b) { return ts::where(a > b, a, b * 2.0f); }, x, yb);
  check(
      "comparisons", 0,
      [](const ts::Array& a, const ts::Array& b) {
        return ts::logical_or(ts::logical_and(a >= b, a != b), ts::logical_xor(a < 0.5f, ts::logical_not(a <= b)));
      },
      x, yb);
  check(
      "clip", 1e-6, [](const ts::Array& a) { return ts::clip(a, ts::Array(-1.0f), ts::Array(2.0f)); }, x);
  check(
      "convert", 0, [](const ts::Array& a) { return ts::astype(ts::astype(a * 10.0f, ts::i32), ts::f32); }, x);
  check(
      "bitcast", 0, [](const ts::Array& a) { return ts::bitcast_convert_type(a, ts::i32); }, x);
  check(
      "integers", 0,
      [](const ts::Array& a) {
        const ts::Array i = ts::astype(a * 100.0f, ts::i32);
        return ((i & 0x7f) | ts::right_shift(i, ts::Array(2))) ^ ts::left_shift(i, ts::Array(1)) ^ ~i;
      },
      x);
  check(
      "complex", 1e-6,
      [](const ts::Array& a, const ts::Array& b) {
        const ts::Array z = ts::complex(a, b);
        return ts::conj(z) * z + ts::complex(ts::imag(z), ts::real(z));
      },
      x, yb);
  check(
      "stop_gradient", 1e-6, [](const ts::Array& a) { return ts::stop_gradient(a) * a; }, x);
  check(
      "is_finite", 0, [](const ts::Array& a) { return ts::isfinite(ts::log(a)); }, x);
}

TEST(PartitionFamilies, BroadcastInDim) {
  const ts::Array x = wavy({10, 13}), col = wavy({10}), row = wavy({1, 13});
  check(
      "column", 1e-6,
      [](const ts::Array& a, const ts::Array& c) {
        return a * ts::broadcast_in_dim(c, {10, 13}, {0});
      },
      x, col);
  check(
      "size-1 row", 1e-6,
      [](const ts::Array& a, const ts::Array& r) {
        return a + ts::broadcast_to(r, {10, 13});
      },
      x, row);
  check(
      "new dimensions", 1e-6,
      [](const ts::Array& c) {
        return ts::broadcast_in_dim(c, {3, 10, 13}, {1});
      },
      col);
  check(
      "outer", 1e-6,
      [](const ts::Array& c) {
        return c.reshape({10, 1}) * c.reshape({1, 10});
      },
      col);
  check(
      "from a scalar", 0,
      [](const ts::Array& a) {
        return a + ts::full({10, 13}, 2.0f);
      },
      x);
}

TEST(PartitionFamilies, Reshape) {
  const ts::Array x = wavy({10, 12, 6});
  for (ts::Shape s : {ts::Shape{10, 72}, ts::Shape{10, 3, 4, 6}, ts::Shape{120, 6}, ts::Shape{10, 12, 6, 1},
                      ts::Shape{1, 10, 12, 1, 6}, ts::Shape{720}, ts::Shape{6, 2, 60}, ts::Shape{5, 2, 12, 6}})
    check(
        "reshape to " + ts::shape_to_string(s), 0, [s](const ts::Array& a) { return ts::reshape(a * 2.0f, s); }, x);
  check(
      "squeeze", 0, [](const ts::Array& a) { return ts::squeeze(a) + 1.0f; }, wavy({1, 13, 1}));
}

TEST(PartitionFamilies, TransposeRevConcatenatePad) {
  const ts::Array x = wavy({10, 13, 3}), y = wavy({10, 5, 3});
  check(
      "transpose", 0,
      [](const ts::Array& a) {
        return ts::transpose(a, ts::Axes{2, 0, 1});
      },
      x);
  check(
      "swapaxes", 0, [](const ts::Array& a) { return ts::swapaxes(a, 0, 1) * 2.0f; }, x);
  check(
      "rev 0", 0, [](const ts::Array& a) { return ts::flip(a, ts::Axes{0}); }, x);
  check(
      "rev 1, 2", 0,
      [](const ts::Array& a) {
        return ts::flip(a, ts::Axes{1, 2}) + a;
      },
      x);
  check(
      "concatenate 1", 0,
      [](const ts::Array& a, const ts::Array& b) {
        return ts::concatenate({a, b, a}, 1);
      },
      x, y);
  check(
      "concatenate 0", 0,
      [](const ts::Array& a) {
        return ts::concatenate({a, a * 2.0f}, 0);
      },
      x);
  check(
      "pad", 0,
      [](const ts::Array& a) {
        return ts::pad(a, {{1, 2}, {0, 0}, {0, 1}});
      },
      x);
  check(
      "lax_pad interior and crop", 0,
      [](const ts::Array& a) {
        return ts::lax_pad(a, 5.0f, {{0, 0, 0}, {-2, 1, 1}, {0, 0, 0}});
      },
      x);
  check(
      "roll", 0, [](const ts::Array& a) { return ts::roll(a, 3, 1); }, x);
}

TEST(PartitionFamilies, Slices) {
  const ts::Array x = wavy({10, 13});
  check(
      "slice", 0,
      [](const ts::Array& a) {
        return ts::slice(a, {0, 2}, {10, 11}, {1, 3});
      },
      x);
  check(
      "slice rows", 0, [](const ts::Array& a) { return ts::slice_in_dim(a, 1, 8, 2, 0) * 3.0f; }, x);
  check(
      "slice full", 0,
      [](const ts::Array& a) {
        return ts::slice(a, {0, 0}, {10, 13}, {1, 1}) + 1.0f;
      },
      x);
  check(
      "index", 0,
      [](const ts::Array& a) {
        return a[{ts::Slice(), ts::Slice(3, 9)}];
      },
      x);
  const ts::Array i = ts::Array(int32_t(4)), j = ts::Array(int32_t(7)), u = wavy({10, 4}) + 5.0f;
  check(
      "dynamic_slice", 0,
      [](const ts::Array& a, const ts::Array& s, const ts::Array& t) {
        return ts::dynamic_slice(a, {s, t}, {10, 4});
      },
      x, i, j);
  check(
      "dynamic_slice rows", 0,
      [](const ts::Array& a, const ts::Array& s, const ts::Array& t) {
        return ts::dynamic_slice(a, {s, t}, {3, 13});
      },
      x, i, j);
  check(
      "dynamic_update_slice", 0,
      [](const ts::Array& a, const ts::Array& b, const ts::Array& s, const ts::Array& t) {
        return ts::dynamic_update_slice(a, b, {s, t});
      },
      x, u, i, j);
  check(
      "dynamic_update_slice block", 0,
      [](const ts::Array& a, const ts::Array& b, const ts::Array& s, const ts::Array& t) {
        return ts::dynamic_update_slice(a, b, {s, t});
      },
      x, wavy({3, 4}), i, j);
}

TEST(PartitionFamilies, GatherAndScatter) {
  const ts::Array x = wavy({10, 13});
  const ts::Array idx = ts::Array(std::vector<int32_t>{12, 0, 5, 5, -1, 3, 7}).reshape({7});
  const ts::Array idx2 = ts::astype(ts::abs(range_f32({10, 6}, 7.0f)), ts::i32) % 13;
  check(
      "take axis 1", 0, [](const ts::Array& a, const ts::Array& k) { return ts::take(a, k, 1); }, x, idx);
  check(
      "take axis 0", 0, [](const ts::Array& a, const ts::Array& k) { return ts::take(a, k % 10, 0); }, x, idx);
  check(
      "take_along_axis", 0, [](const ts::Array& a, const ts::Array& k) { return ts::take_along_axis(a, k, 1); }, x,
      idx2);
  check(
      "index with an array", 0,
      [](const ts::Array& a, const ts::Array& k) {
        return a[{ts::Slice(), k}];
      },
      x, idx);
  check(
      "scatter add", 1e-6,
      [](const ts::Array& a, const ts::Array& k) {
        return a.at({ts::Slice(), k}).add(ts::ones({10, 7}));
      },
      x, idx);
  check(
      "scatter set rows", 0,
      [](const ts::Array& a, const ts::Array& k) {
        return a.at({k % 10}).set(ts::full({7, 13}, -2.0f));
      },
      x, idx);
}

TEST(PartitionFamilies, Iota) {
  const ts::Array x = wavy({10, 13});
  check(
      "iota", 0,
      [](const ts::Array& a) {
        return a + ts::astype(ts::iota(ts::i32, {10, 13}, 1), ts::f32) * 10.0f +
               ts::astype(ts::iota(ts::i32, {10, 13}, 0), ts::f32);
      },
      x);
  check(
      "arange", 0, [](const ts::Array& a) { return a * ts::arange(0.0, 13.0, 1.0, ts::f32); }, x);
  check(
      "eye", 0,
      [](const ts::Array& a) {
        return a[{ts::Slice(0, 10), ts::Slice(0, 10)}] + ts::eye(10);
      },
      x);
}

TEST(PartitionFamilies, Cumulative) {
  const ts::Array x = wavy({10, 13}) + 1.1f;
  check(
      "cumsum 0", 1e-5, [](const ts::Array& a) { return ts::cumsum(a, 0); }, x);
  check(
      "cumsum 1 reverse", 1e-5, [](const ts::Array& a) { return ts::cumsum(a, 1, true); }, x);
  check(
      "cumprod", 1e-5, [](const ts::Array& a) { return ts::cumprod(a, 1); }, x);
  check(
      "cummax", 0, [](const ts::Array& a) { return ts::cummax(a, 0); }, x);
  check(
      "cummin", 0, [](const ts::Array& a) { return ts::cummin(a, 1, true); }, x);
}

TEST(PartitionFamilies, Reductions) {
  const ts::Array x = wavy({10, 13}) * 3.0f, p = wavy({10, 13}) * 0.2f + 1.0f, b = wavy({10, 13}) > 0.8f;
  for (ts::Axes axes : {ts::Axes{0}, ts::Axes{1}, ts::Axes{0, 1}}) {
    const std::string over = " over " + ts::shape_to_string(axes);
    check(
        "sum" + over, 1e-5, [axes](const ts::Array& a) { return ts::sum(a, axes); }, x);
    check(
        "prod" + over, 1e-5, [axes](const ts::Array& a) { return ts::prod(a, axes); }, p);
    check(
        "max" + over, 0, [axes](const ts::Array& a) { return ts::max(a, axes); }, x);
    check(
        "min" + over, 0, [axes](const ts::Array& a) { return ts::min(a, axes); }, x);
    check(
        "mean and var" + over, 1e-5, [axes](const ts::Array& a) { return ts::mean(a, axes) + ts::var(a, axes); }, x);
    check(
        "any" + over, 0, [axes](const ts::Array& a) { return ts::any(a, axes); }, b);
    check(
        "all" + over, 0, [axes](const ts::Array& a) { return ts::all(ts::logical_not(a), axes); }, b);
    check(
        "integer sum" + over, 0, [axes](const ts::Array& a) { return ts::sum(ts::astype(a * 50.0f, ts::i32), axes); },
        x);
    check(
        "integer max" + over, 0, [axes](const ts::Array& a) { return ts::max(ts::astype(a * 50.0f, ts::i32), axes); },
        x);
  }
  // Negative values only: padding must not win a max; all positive: nor a min.
  check(
      "max of negatives", 0, [](const ts::Array& a) { return ts::max(-ts::abs(a) - 1.0f, {0}); }, x);
  check(
      "min of positives", 0, [](const ts::Array& a) { return ts::min(ts::abs(a) + 1.0f, {1}); }, x);
  check(
      "sum keepdims", 1e-5, [](const ts::Array& a) { return a - ts::sum(a, {1}, true); }, x);
  for (int64_t axis : {0, 1}) {
    check(
        "argmax " + std::to_string(axis), 0, [axis](const ts::Array& a) { return ts::argmax(a, axis); }, x);
    check(
        "argmin " + std::to_string(axis), 0, [axis](const ts::Array& a) { return ts::argmin(a, axis); }, x);
  }
  // Other dtypes: wrapping small integers, unsigned extremes, complex (lexicographic max),
  // half precision (partial sums are rounded to it: a looser tolerance), double.
  const ts::Array big = wavy({10, 13}) * 120.0f;
  for (auto [dtype, tol] : std::vector<std::pair<ts::DType, double>>{
           {ts::i8, 0}, {ts::u8, 0}, {ts::i64, 0}, {ts::f16, 2e-2}, {ts::f64, 1e-12}, {ts::c64, 1e-5}}) {
    const std::string name = ts::dtype_name(dtype);
    auto as = [dtype](const ts::Array& a) {
      if (ts::is_complex(dtype)) return ts::complex(a, a * 0.5f - 1.0f).astype(dtype);
      return ts::astype(ts::is_floating(dtype) ? a * (3.0f / 120.0f) : a, dtype);
    };
    check(
        "sum of " + name, tol,
        [as](const ts::Array& a) {
          return ts::detail::bind1(ts::ir::lookup_primitive("reduce_sum"), {as(a)}, {{"axes", ts::Axes{0}}});
        },
        big);
    check(
        "max of " + name, tol,
        [as](const ts::Array& a) {
          return ts::detail::bind1(ts::ir::lookup_primitive("reduce_max"), {as(a)}, {{"axes", ts::Axes{1}}});
        },
        big);
    check(
        "min of " + name, tol,
        [as](const ts::Array& a) {
          return ts::detail::bind1(ts::ir::lookup_primitive("reduce_min"), {as(a)}, {{"axes", ts::Axes{0, 1}}});
        },
        big);
  }
  // The bool and bitwise reductions, bound directly.
  const ts::Array ints = ts::astype(x * 1000.0f, ts::i32);
  const ts::ir::Params over0{{"axes", ts::Axes{0}}};
  for (const char* name : {"reduce_and", "reduce_or", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min"}) {
    check(
        std::string(name) + " of bool", 0,
        [name, over0](const ts::Array& a) { return ts::detail::bind1(ts::ir::lookup_primitive(name), {a}, over0); }, b);
    check(
        std::string(name) + " of int32", 0,
        [name, over0](const ts::Array& a) { return ts::detail::bind1(ts::ir::lookup_primitive(name), {a}, over0); },
        ints);
  }
}

TEST(PartitionFamilies, DotGeneral) {
  const ts::Array a = wavy({10, 13}), b = wavy({13, 6});
  check(
      "matmul", 1e-5, [](const ts::Array& l, const ts::Array& r) { return ts::matmul(l, r); }, a, b);
  check(
      "matmul, rhs transposed", 1e-5,
      [](const ts::Array& l, const ts::Array& r) {
        return ts::einsum("ik,jk->ij", {l, r});
      },
      a, wavy({6, 13}));
  check(
      "batched", 1e-5,
      [](const ts::Array& l, const ts::Array& r) {
        return ts::einsum("bij,bjk->bik", {l, r});
      },
      wavy({3, 10, 13}), wavy({3, 13, 5}));
  check(
      "batch in the middle, two contractions", 1e-5,
      [](const ts::Array& l, const ts::Array& r) {
        return ts::einsum("ibjk,kjbl->bil", {l, r});
      },
      wavy({5, 3, 4, 10}), wavy({10, 4, 3, 7}));
  check(
      "vector dot", 1e-5, [](const ts::Array& l, const ts::Array& r) { return ts::dot(l, r); }, wavy({13}), wavy({13}));
  check(
      "matrix-vector", 1e-5, [](const ts::Array& l, const ts::Array& r) { return ts::matmul(l, r); }, a, wavy({13}));
  check(
      "outer", 1e-6, [](const ts::Array& l, const ts::Array& r) { return ts::outer(l, r); }, wavy({10}), wavy({13}));
  check(
      "integers", 0,
      [](const ts::Array& l, const ts::Array& r) {
        return ts::matmul(ts::astype(l * 20.0f, ts::i32), ts::astype(r * 20.0f, ts::i32));
      },
      a, b);
  check(
      "bool", 0,
      [](const ts::Array& l, const ts::Array& r) {
        return ts::dot_general(l > 0.5f, r > 0.5f, {{1}, {0}, {}, {}});
      },
      a, b);
}

TEST(PartitionFamilies, FftRandomAndLoops) {
  const ts::Array x = wavy({10, 13});
  check(
      "fft", 1e-4, [](const ts::Array& a) { return ts::fft::fft(ts::astype(a, ts::c64), std::nullopt, 1); }, x);
  check(
      "fft over the split axis", 1e-4,
      [](const ts::Array& a) { return ts::fft::fft(ts::astype(a, ts::c64), std::nullopt, 0); }, x);
  check(
      "random", 0,
      [](const ts::Array& a) {
        return a + ts::random::uniform(ts::random::key(3), {10, 13});
      },
      x);
  check(
      "scan", 1e-5,
      [](const ts::Array& a) {
        auto [carry, ys] = ts::scan([](const ts::Array& c, const ts::Array& r) { return std::make_pair(c + r, c * r); },
                                    ts::zeros({13}), a);
        return ys + carry;
      },
      x);
  check(
      "fori_loop", 1e-5,
      [](const ts::Array& a) {
        return ts::fori_loop(
            0, 3, [](const ts::Array&, const ts::Array& c) { return c * 0.5f + 1.0f; }, a);
      },
      x);
  check(
      "while", 1e-5,
      [](const ts::Array& a) {
        return ts::fori_loop(
            ts::Array(int32_t(0)), ts::Array(int32_t(3)),
            [](const ts::Array&, const ts::Array& c) { return c * 0.5f + 1.0f; }, a);
      },
      x);
}

namespace {

/// The per-device program of f jitted with `in` shardings.
template <class F, class... A>
std::string lowered(const F& f, std::vector<std::optional<ts::Sharding>> in, const A&... args) {
  return ts::jit(f, {.in_shardings = std::move(in)}).lower(args...).compile().as_text();
}

bool communicates(const std::string& text) {
  for (const char* c : {"all_gather", "all_to_all", "all_reduce", "reduce_scatter", "collective_permute"})
    if (text.find(c) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(PartitionFamilies, RulesKeepSplitDimensionsLocal) {
  const ts::Sharding rows = ts::NamedSharding(mesh8(), ts::P("x")), rep = ts::NamedSharding(mesh8(), ts::P());
  const ts::Array x = wavy({10, 13}), x3 = wavy({10, 12, 6}), col = wavy({10});
  const ts::Array idx = ts::Array(std::vector<int32_t>{12, 0, 5, 5, 3, 7});
  auto local1 = [&](const std::string& what, const auto& f, const ts::Array& a) {
    const std::string text = lowered(f, {rows}, a);
    EXPECT_FALSE(communicates(text)) << what << ":\n" << text;
  };
  local1(
      "elementwise", [](const ts::Array& a) { return ts::sin(a) * a + 1.0f; }, x);
  local1(
      "reshape",
      [](const ts::Array& a) {
        return ts::reshape(a, {10, 72});
      },
      x3);
  local1(
      "reshape, size-1 dims",
      [](const ts::Array& a) {
        return ts::reshape(a, {10, 1, 12, 6});
      },
      x3);
  local1(
      "transpose",
      [](const ts::Array& a) {
        return ts::transpose(a, ts::Axes{1, 0}) * 2.0f;
      },
      x);
  local1(
      "rev", [](const ts::Array& a) { return ts::flip(a, ts::Axes{1}); }, x);
  local1(
      "concatenate",
      [](const ts::Array& a) {
        return ts::concatenate({a, a}, 1);
      },
      x);
  local1(
      "pad",
      [](const ts::Array& a) {
        return ts::pad(a, {{0, 0}, {2, 1}});
      },
      x);
  local1(
      "slice",
      [](const ts::Array& a) {
        return ts::slice(a, {0, 1}, {10, 9}, {1, 2});
      },
      x);
  local1(
      "dynamic_slice",
      [](const ts::Array& a) {
        return ts::dynamic_slice(a, {ts::Array(0), ts::Array(3)}, {10, 4});
      },
      x);
  local1(
      "dynamic_update_slice",
      [](const ts::Array& a) {
        return ts::dynamic_update_slice(a, ts::zeros({10, 2}), {ts::Array(0), ts::Array(3)});
      },
      x);
  local1(
      "gather", [&](const ts::Array& a) { return ts::take(a, idx, 1); }, x);
  local1(
      "scatter",
      [&](const ts::Array& a) {
        return a.at({ts::Slice(), idx}).add(ts::ones({10, 6}));
      },
      x);
  local1(
      "iota",
      [](const ts::Array& a) {
        return a + ts::astype(ts::iota(ts::i32, {10, 13}, 1), ts::f32);
      },
      x);
  local1(
      "broadcast",
      [](const ts::Array& c) {
        return ts::broadcast_in_dim(c, {10, 13}, {0}) * 2.0f;
      },
      col);
  local1(
      "cumsum", [](const ts::Array& a) { return ts::cumsum(a, 1); }, x);
  local1(
      "reduce over a whole dimension", [](const ts::Array& a) { return ts::sum(a, {1}) + ts::max(a, {1}); }, x);
  local1(
      "argmax", [](const ts::Array& a) { return ts::argmax(a, 1); }, x);
  // fft: the batch dimensions stay split, the transformed ones whole.
  local1(
      "fft", [](const ts::Array& a) { return ts::fft::fft(ts::astype(a, ts::c64)); }, x);
  local1(
      "rfft2 of a batch of planes", [](const ts::Array& a) { return ts::fft::rfft2(a); }, x3);
  local1(
      "irfft", [](const ts::Array& a) { return ts::fft::irfft(ts::fft::rfft(a)); }, x);
  // Indices split, operand replicated: each device gathers its piece of the indices.
  EXPECT_FALSE(communicates(
      lowered([](const ts::Array& a, const ts::Array& k) { return ts::take(a, k, 1); }, {rep, rows}, x, idx)));
  // dot_general: batch and free dimensions stay local; a split contraction is one all-reduce.
  EXPECT_FALSE(communicates(lowered(
      [](const ts::Array& l, const ts::Array& r) {
        return ts::einsum("bij,bjk->bik", {l, r});
      },
      {rows, rows}, wavy({10, 3, 4}), wavy({10, 4, 5}))));
  EXPECT_FALSE(communicates(
      lowered([](const ts::Array& l, const ts::Array& r) { return ts::matmul(l, r); }, {rows, rep}, x, wavy({13, 5}))));
  const std::string text = lowered([](const ts::Array& a) { return ts::sum(a, {0}); }, {rows}, x);
  EXPECT_NE(text.find("all_reduce"), std::string::npos) << text;
  EXPECT_EQ(text.find("all_gather"), std::string::npos) << text;
  // An fft along the split dimension gathers it (a distributed FFT is custom_partitioning's job).
  const std::string fft0 = lowered([](const ts::Array& a) { return ts::fft::fft(ts::astype(a, ts::c64), std::nullopt, 0); },
                                   {rows}, x);
  EXPECT_NE(fft0.find("all_gather"), std::string::npos) << fft0;
}

TEST(PartitionFamilies, BoolOrOverPaddedPieces) {
  // `or` combines partial results by max: the padding of a split dimension must read false.
  const ts::Array f = ts::zeros({10}, ts::bool_);
  auto any = ts::jit([](const ts::Array& a) { return ts::any(a); },
                     {.in_shardings = {ts::NamedSharding(mesh8(), ts::P("x"))}});
  EXPECT_FALSE(any(f).item<bool>());
  EXPECT_TRUE(any(f.at({9}).set(ts::Array(true))).item<bool>());
}
