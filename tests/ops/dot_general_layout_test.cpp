// dot_general on every operand layout the kernel distinguishes — contracting dimension first
// or last, batch dimensions anywhere, several contracting or free dimensions that do or do
// not merge, vectors with strides, products large enough to be split over threads, empty
// contractions — for BLAS, half and integer dtypes, eagerly and under jit (with operands
// transposed inside the jitted function), against a naive loop written here.
#include <gtest/gtest.h>

#include <complex>

#include "tessel/tessel.h"

namespace ts = tessel;
using C = std::complex<double>;

namespace {

struct Layout {
  const char* name;
  ts::Shape a, b;
  ts::DotDims dims;
};

const Layout kLayouts[] = {
    {"mk_kn", {40, 30}, {30, 20}, {{1}, {0}, {}, {}}},
    {"km_kn", {30, 40}, {30, 20}, {{0}, {0}, {}, {}}},
    {"mk_nk", {40, 30}, {20, 30}, {{1}, {1}, {}, {}}},
    {"km_nk", {30, 40}, {20, 30}, {{0}, {1}, {}, {}}},
    {"small_km_nk", {3, 4}, {5, 3}, {{0}, {1}, {}, {}}},
    {"batch_front", {5, 12, 10}, {5, 10, 9}, {{2}, {1}, {0}, {0}}},
    {"batch_middle", {12, 5, 10}, {10, 5, 9}, {{2}, {0}, {1}, {1}}},
    {"batch_last", {12, 10, 5}, {9, 10, 5}, {{1}, {1}, {2}, {2}}},
    {"batch_last_transposed", {10, 12, 5}, {10, 9, 5}, {{0}, {0}, {2}, {2}}},
    {"two_batch_dims_crossed", {3, 12, 4, 10}, {4, 10, 3, 9}, {{3}, {1}, {0, 2}, {2, 0}}},
    {"contracting_merge", {12, 6, 7}, {6, 7, 9}, {{1, 2}, {0, 1}, {}, {}}},
    {"contracting_out_of_order", {12, 6, 7}, {7, 6, 9}, {{1, 2}, {1, 0}, {}, {}}},
    {"free_dims_split", {6, 20, 7}, {20, 9}, {{1}, {0}, {}, {}}},
    {"free_dims_merge", {6, 7, 20}, {20, 3, 9}, {{2}, {0}, {}, {}}},
    {"vector_lhs", {40}, {40, 70}, {{0}, {0}, {}, {}}},
    {"vector_rhs", {70, 40}, {40}, {{1}, {0}, {}, {}}},
    {"vector_lhs_strided", {60, 4}, {4, 60, 30}, {{0}, {1}, {1}, {0}}},
    {"vector_rhs_strided", {4, 30, 60}, {60, 4}, {{2}, {0}, {0}, {1}}},
    {"inner_product", {300}, {300}, {{0}, {0}, {}, {}}},
    {"split_rows", {300, 64}, {64, 90}, {{1}, {0}, {}, {}}},
    {"split_columns", {20, 64}, {64, 700}, {{1}, {0}, {}, {}}},
    {"split_columns_transposed", {64, 20}, {700, 64}, {{0}, {1}, {}, {}}},
    {"many_small_batches", {200, 4, 5}, {200, 5, 3}, {{2}, {1}, {0}, {0}}},
    {"few_large_batches", {3, 130, 40}, {40, 3, 120}, {{2}, {0}, {0}, {1}}},
    {"no_contraction", {3, 5}, {4, 3}, {{}, {}, {0}, {1}}},
    {"empty_contraction", {4, 0}, {0, 5}, {{1}, {0}, {}, {}}},
    {"empty_contraction_batched", {2, 0, 4}, {2, 3, 0}, {{1}, {2}, {0}, {0}}},
    {"empty_batch", {0, 4, 5}, {0, 5, 3}, {{2}, {1}, {0}, {0}}},
};

const ts::DType kDtypes[] = {ts::f32, ts::f64, ts::c64, ts::c128, ts::f16, ts::bf16,
                             ts::i32, ts::i64, ts::i8,  ts::u8,   ts::bool_};

// Small integers (exact in every dtype), complex parts for complex dtypes, 0/1 for bool.
std::vector<C> values(ts::DType dt, int64_t n, int seed) {
  std::vector<C> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double re = double((i * 7 + seed * 3) % 11) - 5;
    if (dt == ts::bool_) re = double((i * 5 + seed) % 3 == 0);
    if (ts::is_unsigned_int(dt)) re += 5;
    const double im = ts::is_complex(dt) ? double((i * 5 + seed) % 7) - 3 : 0;
    v[size_t(i)] = C(re, im);
  }
  return v;
}

ts::Array make(const std::vector<C>& v, const ts::Shape& shape, ts::DType dt) {
  std::vector<ts::complex128_t> z(v.begin(), v.end());
  const ts::Array a(z, shape);
  return ts::is_complex(dt) ? a.astype(dt) : ts::real(a).astype(dt);
}

std::vector<int64_t> unravel(int64_t flat, const ts::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const ts::Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

int64_t size_of(const ts::Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

bool contains(const ts::Axes& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

ts::Axes free_of(int64_t ndim, const ts::Axes& batch, const ts::Axes& contracting) {
  ts::Axes r;
  for (int64_t i = 0; i < ndim; ++i)
    if (!contains(batch, i) && !contains(contracting, i)) r.push_back(i);
  return r;
}

// The result element in the dtype's arithmetic: integers wrap, bool is "any product".
C in_dtype(C exact, ts::DType dt) {
  if (dt == ts::bool_) return C(exact.real() != 0, 0);
  if (!ts::is_integer(dt)) return exact;
  const auto v = int64_t(exact.real());
  if (dt == ts::i8) return C(double(int8_t(uint8_t(uint64_t(v)))), 0);
  if (dt == ts::u8) return C(double(uint8_t(uint64_t(v))), 0);
  return C(double(v), 0);
}

// dot_general by its definition: out[batch, a_free, b_free] = sum over the contracting
// index of a[...] * b[...].
std::vector<C> reference(const std::vector<C>& a, const ts::Shape& sa, const std::vector<C>& b, const ts::Shape& sb,
                         const ts::DotDims& d, ts::DType dt, ts::Shape& out_shape) {
  const ts::Axes af = free_of(int64_t(sa.size()), d.lhs_batch, d.lhs_contracting),
                 bf = free_of(int64_t(sb.size()), d.rhs_batch, d.rhs_contracting);
  out_shape.clear();
  ts::Shape kshape;
  for (auto i : d.lhs_batch) out_shape.push_back(sa[size_t(i)]);
  for (auto i : af) out_shape.push_back(sa[size_t(i)]);
  for (auto i : bf) out_shape.push_back(sb[size_t(i)]);
  for (auto i : d.lhs_contracting) kshape.push_back(sa[size_t(i)]);
  std::vector<C> out(size_t(size_of(out_shape)));
  for (int64_t o = 0; o < int64_t(out.size()); ++o) {
    const auto oi = unravel(o, out_shape);
    std::vector<int64_t> ia(sa.size()), ib(sb.size());
    size_t p = 0;
    for (size_t i = 0; i < d.lhs_batch.size(); ++i, ++p)
      ia[size_t(d.lhs_batch[i])] = ib[size_t(d.rhs_batch[i])] = oi[p];
    for (auto i : af) ia[size_t(i)] = oi[p++];
    for (auto i : bf) ib[size_t(i)] = oi[p++];
    C s = 0;
    for (int64_t kf = 0; kf < size_of(kshape); ++kf) {
      const auto ki = unravel(kf, kshape);
      for (size_t i = 0; i < ki.size(); ++i)
        ia[size_t(d.lhs_contracting[i])] = ib[size_t(d.rhs_contracting[i])] = ki[i];
      s += a[size_t(ravel(ia, sa))] * b[size_t(ravel(ib, sb))];
    }
    out[size_t(o)] = in_dtype(s, dt);
  }
  return out;
}

std::vector<C> read(const ts::Array& a) {
  const auto z = a.astype(ts::c128).to_vector<ts::complex128_t>();
  return std::vector<C>(z.begin(), z.end());
}

double tol_of(ts::DType dt) {
  if (dt == ts::f16) return 2e-3;
  if (dt == ts::bf16) return 1e-2;
  if (dt == ts::f32 || dt == ts::c64) return 1e-6;
  if (dt == ts::f64 || dt == ts::c128) return 1e-12;
  return 0;
}

void expect_close(const ts::Array& got, const ts::Shape& shape, const std::vector<C>& want, ts::DType dt) {
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(got.dtype(), dt);
  const auto g = read(got);
  ASSERT_EQ(g.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (std::abs(g[i] - want[i]) > tol_of(dt) * (1 + std::abs(want[i])))
      ADD_FAILURE() << "element " << i << ": " << g[i] << " != " << want[i], ++bad;
}

std::string dtype_suffix(ts::DType dt) { return ts::dtype_name(dt); }

class DotGeneralLayout : public testing::TestWithParam<std::tuple<Layout, ts::DType>> {};

std::string layout_name(const testing::TestParamInfo<std::tuple<Layout, ts::DType>>& i) {
  return std::string(std::get<0>(i.param).name) + "_" + dtype_suffix(std::get<1>(i.param));
}

}  // namespace

TEST_P(DotGeneralLayout, EagerMatchesNaiveLoop) {
  const auto& [c, dt] = GetParam();
  const auto av = values(dt, size_of(c.a), 1), bv = values(dt, size_of(c.b), 2);
  ts::Shape shape;
  const auto want = reference(av, c.a, bv, c.b, c.dims, dt, shape);
  expect_close(ts::dot_general(make(av, c.a, dt), make(bv, c.b, dt), c.dims), shape, want, dt);
}

TEST_P(DotGeneralLayout, JitOfTransposedOperandsMatchesNaiveLoop) {
  // The operands are passed reversed and transposed back inside the jitted function, so the
  // kernel sees the layouts transpose produces there.
  const auto& [c, dt] = GetParam();
  const auto av = values(dt, size_of(c.a), 3), bv = values(dt, size_of(c.b), 4);
  ts::Shape shape;
  const auto want = reference(av, c.a, bv, c.b, c.dims, dt, shape);
  const ts::DotDims dims = c.dims;
  auto f = ts::jit([dims](const ts::Array& at, const ts::Array& bt) {
    return ts::dot_general(ts::transpose(at), ts::transpose(bt), dims);
  });
  expect_close(f(ts::transpose(make(av, c.a, dt)), ts::transpose(make(bv, c.b, dt))), shape, want, dt);
}

INSTANTIATE_TEST_SUITE_P(Layouts, DotGeneralLayout,
                         testing::Combine(testing::ValuesIn(kLayouts), testing::ValuesIn(kDtypes)), layout_name);

TEST(DotGeneralLayoutCases, VmapOverEveryOperandAxisMatchesLoop) {
  // Both operands batched at every combination of axes: the batch rule adds the mapped axes
  // as batch dimensions where they are.
  const ts::Shape as{6, 5}, bs{5, 4};
  for (int64_t ia = 0; ia <= 2; ++ia)
    for (int64_t ib = 0; ib <= 2; ++ib) {
      ts::Shape sa = as, sb = bs;
      sa.insert(sa.begin() + ia, 3);
      sb.insert(sb.begin() + ib, 3);
      const ts::Array a = make(values(ts::f32, size_of(sa), 5), sa, ts::f32);
      const ts::Array b = make(values(ts::f32, size_of(sb), 6), sb, ts::f32);
      const auto mm = [](const ts::Array& x, const ts::Array& y) { return ts::matmul(x, y); };
      const ts::Array r = ts::vmap(mm, {ia, ib})(a, b);
      ASSERT_EQ(r.shape(), (ts::Shape{3, 6, 4}));
      for (int64_t i = 0; i < 3; ++i) {
        const ts::Array at = ts::take(a, ts::Array(int32_t(i)), ia), bt = ts::take(b, ts::Array(int32_t(i)), ib);
        EXPECT_EQ(ts::take(r, ts::Array(int32_t(i)), 0).to_vector<float>(), ts::matmul(at, bt).to_vector<float>())
            << ia << ", " << ib;
      }
    }
}

TEST(DotGeneralLayoutCases, GradientsOfMatmulNeedNoTranspose) {
  // d(a @ b)/da = g @ b^T and d/db = a^T @ g come out in the operands' layouts directly.
  const ts::Array a = make(values(ts::f32, 12, 1), {3, 4}, ts::f32), b = make(values(ts::f32, 20, 2), {4, 5}, ts::f32);
  const auto loss = [](const ts::Array& x, const ts::Array& y) { return ts::sum(ts::matmul(x, y)); };
  for (const std::string& text :
       {ts::make_program(ts::grad<0>(loss), a, b).to_string(), ts::make_program(ts::grad<1>(loss), a, b).to_string()})
    EXPECT_EQ(text.find("transpose"), std::string::npos) << text;
  const auto [ga, gb] = ts::grad<0, 1>(loss)(a, b);
  const ts::Array ones = ts::ones({3, 5});
  EXPECT_EQ(ga.to_vector<float>(), ts::matmul(ones, ts::transpose(b)).to_vector<float>());
  EXPECT_EQ(gb.to_vector<float>(), ts::matmul(ts::transpose(a), ones).to_vector<float>());
}
