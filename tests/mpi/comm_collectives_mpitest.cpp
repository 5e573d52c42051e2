// ts::comm collectives across processes: reduce, scan, bcast, allgather, gather, scatter,
// alltoall, allgatherv, gatherv, alltoallv. Values for several dtypes and shapes (scalars,
// 2-D, non-contiguous slices), eager and jit; in place under jit; inside loops and
// conditionals; on a split communicator. Transformations and errors:
// comm_collectives_transforms_mpitest.cpp. CTest runs both again with
// TESSEL_MPI_MAX_COUNT=7, so the chunked and derived-datatype paths run too.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "comm_collectives_util.h"

namespace {

using namespace comm_test;

// ---- test data: element i of process p's input is val(p, i), small integers ----

double val(int p, int64_t i) { return double((3 * i + 5 * p + 1) % 13); }

const std::vector<ts::DType> kDtypes = {ts::f32, ts::f64, ts::i32, ts::bool_, ts::f16, ts::bf16, ts::c64};

// An input: an array of shape `full`, of which the operation sees x[:, 1:3] when `slice`.
struct Case {
  std::string name;
  ts::Shape full;
  bool slice = false;
};

ts::Shape shape_of(const Case& c) { return c.slice ? ts::Shape{c.full[0], 2} : c.full; }

// What the operation sees of process p's input, row-major.
std::vector<double> host(const Case& c, int p) {
  std::vector<double> v;
  if (!c.slice) {
    for (int64_t i = 0; i < ts::shape_size(c.full); ++i) v.push_back(val(p, i));
    return v;
  }
  for (int64_t r = 0; r < c.full[0]; ++r)
    for (int64_t k = 1; k < 3; ++k) v.push_back(val(p, r * c.full[1] + k));
  return v;
}

// Values as they are in dtype d: bool keeps parity.
double in_dtype(ts::DType d, double v) { return d == ts::bool_ ? double(int64_t(v) % 2) : v; }
std::vector<double> in_dtype(ts::DType d, std::vector<double> v) {
  for (double& e : v) e = in_dtype(d, e);
  return v;
}

// Process p's full input array in dtype d (complex: v + 2v i).
ts::Array input(const Case& c, int p, ts::DType d) {
  const int64_t n = ts::shape_size(c.full);
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(in_dtype(d, val(p, i)));
  ts::Array a = ts::Array(v, {n}).reshape(c.full);
  if (ts::is_complex(d)) return ts::complex(a, a * 2.0).astype(d);
  return a.astype(d);
}

ts::Array view(const Case& c, const ts::Array& x) {
  return c.slice ? x.index({ts::Slice(), ts::Slice(1, 3)}) : x;
}

// Checks y's type and values (complex: real part `want`, imaginary part 2 * want).
void expect_values(const ts::Array& y, ts::DType d, const ts::Shape& shape, const std::vector<double>& want,
                   const std::string& what) {
  ASSERT_EQ(y.dtype(), d) << what;
  ASSERT_EQ(y.shape(), shape) << what;
  const bool cplx = ts::is_complex(d);
  std::vector<double> re = (cplx ? ts::real(y) : y).astype(ts::f64).to_vector<double>();
  ASSERT_EQ(re.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(re[i], want[i]) << what << ", element " << i;
  if (!cplx) return;
  std::vector<double> im = ts::imag(y).astype(ts::f64).to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(im[i], 2 * want[i]) << what << ", imaginary part " << i;
}

// f(x) eagerly and under jit.
template <class F> std::vector<std::pair<std::string, ts::Array>> eager_and_jit(const F& f, const ts::Array& x) {
  return {{"eager", f(x)}, {"jit", ts::jit(f)(x)}};
}

std::string label(ts::DType d, const Case& c, const std::string& how) {
  return std::string(ts::dtype_name(d)) + " " + c.name + " " + how;
}

std::vector<double> cat(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

std::vector<double> rows(const std::vector<double>& v, int64_t row, int64_t start, int64_t n) {
  return std::vector<double>(v.begin() + start * row, v.begin() + (start + n) * row);
}

ts::Shape prepend(int64_t n, ts::Shape s) {
  s.insert(s.begin(), n);
  return s;
}

const std::vector<Case> kCases = {{"scalar", {}}, {"2-D", {3, 4}}, {"x[:, 1:3]", {4, 5}, true}};

// Reductions: SUM, and LOR for bool (whose expected value is the max of 0/1 values).
comm::Op reduction_for(ts::DType d) { return d == ts::bool_ ? comm::LOR : comm::SUM; }
double combine(ts::DType d, double a, double b) { return d == ts::bool_ ? std::max(a, b) : a + b; }

// ======================================= values =======================================

TEST(CommCollectives, ReduceEveryDtypeAndShape) {
  const int root = nproc() - 1;
  for (ts::DType d : kDtypes)
    for (const Case& c : kCases) {
      auto f = [&](const ts::Array& x) { return comm::reduce(view(c, x), reduction_for(d), root); };
      std::vector<double> want = in_dtype(d, host(c, rank()));
      if (rank() == root) {
        want = in_dtype(d, host(c, 0));
        for (int p = 1; p < nproc(); ++p) {
          auto other = in_dtype(d, host(c, p));
          for (size_t i = 0; i < want.size(); ++i) want[i] = combine(d, want[i], other[i]);
        }
      }
      for (auto& [how, y] : eager_and_jit(f, input(c, rank(), d)))
        expect_values(y, d, shape_of(c), want, label(d, c, how));
    }
}

TEST(CommCollectives, ScanIsInclusiveEveryDtypeAndShape) {
  for (ts::DType d : kDtypes)
    for (const Case& c : kCases) {
      auto f = [&](const ts::Array& x) { return comm::scan(view(c, x), reduction_for(d)); };
      std::vector<double> want = in_dtype(d, host(c, 0));
      for (int p = 1; p <= rank(); ++p) {
        auto other = in_dtype(d, host(c, p));
        for (size_t i = 0; i < want.size(); ++i) want[i] = combine(d, want[i], other[i]);
      }
      for (auto& [how, y] : eager_and_jit(f, input(c, rank(), d)))
        expect_values(y, d, shape_of(c), want, label(d, c, how));
    }
}

TEST(CommCollectives, ScanProdAndMax) {
  ts::Array x = ts::full({2}, float(rank() + 1), ts::f32);
  float fact = 1;
  for (int p = 1; p <= rank() + 1; ++p) fact *= float(p);
  for (float v : comm::scan(x, comm::PROD).to_vector<float>()) EXPECT_EQ(v, fact);
  for (float v : comm::scan(x, comm::MAX).to_vector<float>()) EXPECT_EQ(v, float(rank() + 1));
}

TEST(CommCollectives, BcastEveryDtypeAndShape) {
  const int root = nproc() - 1;
  for (ts::DType d : kDtypes)
    for (const Case& c : kCases) {
      auto f = [&](const ts::Array& x) { return comm::bcast(view(c, x), root); };
      for (auto& [how, y] : eager_and_jit(f, input(c, rank(), d)))
        expect_values(y, d, shape_of(c), in_dtype(d, host(c, root)), label(d, c, how));
    }
}

TEST(CommCollectives, AllgatherEveryDtypeAndShape) {
  for (ts::DType d : kDtypes)
    for (const Case& c : kCases) {
      auto f = [&](const ts::Array& x) { return comm::allgather(view(c, x)); };
      std::vector<double> want;
      for (int p = 0; p < nproc(); ++p) want = cat(want, in_dtype(d, host(c, p)));
      for (auto& [how, y] : eager_and_jit(f, input(c, rank(), d)))
        expect_values(y, d, prepend(nproc(), shape_of(c)), want, label(d, c, how));
    }
}

TEST(CommCollectives, GatherEveryDtypeAndShape) {
  const int root = nproc() - 1;
  for (ts::DType d : kDtypes)
    for (const Case& c : kCases) {
      auto f = [&](const ts::Array& x) { return comm::gather(view(c, x), root); };
      std::vector<double> want;
      for (int p = 0; p < nproc(); ++p) want = cat(want, in_dtype(d, host(c, p)));
      if (rank() != root) want = in_dtype(d, host(c, rank()));
      const ts::Shape shape = rank() == root ? prepend(nproc(), shape_of(c)) : shape_of(c);
      for (auto& [how, y] : eager_and_jit(f, input(c, rank(), d))) expect_values(y, d, shape, want, label(d, c, how));
    }
}

// Inputs with a leading dimension of the communicator's size.
std::vector<Case> leading_cases(int64_t lead) {
  return {{"1-D", {lead}}, {"2-D", {lead, 3}}, {"x[:, 1:3]", {lead, 5}, true}};
}

TEST(CommCollectives, ScatterEveryDtypeAndShape) {
  const int root = 1 % nproc();
  for (ts::DType d : kDtypes)
    for (const Case& c : leading_cases(nproc())) {
      const ts::Shape full = shape_of(c), out(full.begin() + 1, full.end());
      // The other processes pass an array shaped like their result.
      auto f = [&](const ts::Array& x) { return comm::scatter(rank() == root ? view(c, x) : x, root); };
      ts::Array x = rank() == root ? input(c, root, d) : ts::zeros(out, d);
      const int64_t row = ts::shape_size(out);
      for (auto& [how, y] : eager_and_jit(f, x))
        expect_values(y, d, out, in_dtype(d, rows(host(c, root), row, rank(), 1)), label(d, c, how));
    }
}

TEST(CommCollectives, AlltoallEveryDtypeAndShape) {
  for (ts::DType d : kDtypes)
    for (const Case& c : leading_cases(nproc())) {
      auto f = [&](const ts::Array& x) { return comm::alltoall(view(c, x)); };
      const int64_t row = ts::shape_size(shape_of(c)) / nproc();
      std::vector<double> want;  // entry j: process j's entry for this process
      for (int j = 0; j < nproc(); ++j) want = cat(want, in_dtype(d, rows(host(c, j), row, rank(), 1)));
      for (auto& [how, y] : eager_and_jit(f, input(c, rank(), d)))
        expect_values(y, d, shape_of(c), want, label(d, c, how));
    }
}

TEST(CommCollectives, AllgathervEveryDtypeAndShape) {
  for (ts::DType d : kDtypes)
    for (size_t k = 0; k < 3; ++k) {
      const Case mine = leading_cases(vcount(rank()))[k];
      auto f = [&](const ts::Array& x) { return comm::allgatherv(view(mine, x), vcounts()); };
      std::vector<double> want;
      int64_t total = 0;
      for (int p = 0; p < nproc(); ++p) {
        want = cat(want, in_dtype(d, host(leading_cases(vcount(p))[k], p)));
        total += vcount(p);
      }
      ts::Shape shape = shape_of(mine);
      shape[0] = total;
      for (auto& [how, y] : eager_and_jit(f, input(mine, rank(), d))) expect_values(y, d, shape, want, label(d, mine, how));
    }
}

TEST(CommCollectives, GathervEveryDtypeAndShape) {
  const int root = 0;
  for (ts::DType d : kDtypes)
    for (size_t k = 0; k < 3; ++k) {
      const Case mine = leading_cases(vcount(rank()))[k];
      auto f = [&](const ts::Array& x) { return comm::gatherv(view(mine, x), vcounts(), root); };
      std::vector<double> want = in_dtype(d, host(mine, rank()));
      ts::Shape shape = shape_of(mine);
      if (rank() == root) {
        want.clear();
        shape[0] = 0;
        for (int p = 0; p < nproc(); ++p) {
          want = cat(want, in_dtype(d, host(leading_cases(vcount(p))[k], p)));
          shape[0] += vcount(p);
        }
      }
      for (auto& [how, y] : eager_and_jit(f, input(mine, rank(), d))) expect_values(y, d, shape, want, label(d, mine, how));
    }
}

TEST(CommCollectives, AlltoallvEveryDtypeAndShape) {
  for (ts::DType d : kDtypes)
    for (size_t k = 0; k < 3; ++k) {
      auto case_of = [&](int p) {
        int64_t n = 0;
        for (int j = 0; j < nproc(); ++j) n += a2a_count(p, j);
        return leading_cases(n)[k];
      };
      const Case mine = case_of(rank());
      auto f = [&](const ts::Array& x) { return comm::alltoallv(view(mine, x), send_counts(), recv_counts()); };
      const ts::Shape in_shape = shape_of(mine);
      const int64_t row = ts::shape_size(ts::Shape(in_shape.begin() + 1, in_shape.end()));
      std::vector<double> want;
      for (int j = 0; j < nproc(); ++j) {
        int64_t start = 0;  // rows process j sends to the processes before this one
        for (int q = 0; q < rank(); ++q) start += a2a_count(j, q);
        want = cat(want, in_dtype(d, rows(host(case_of(j), j), row, start, a2a_count(j, rank()))));
      }
      ts::Shape shape = in_shape;
      shape[0] = sum_of(recv_counts());
      for (auto& [how, y] : eager_and_jit(f, input(mine, rank(), d))) expect_values(y, d, shape, want, label(d, mine, how));
    }
}

// Sizes that need several chunks (or derived datatypes) when TESSEL_MPI_MAX_COUNT is small.
TEST(CommCollectives, LargeBlocks) {
  const int64_t n = 1001;
  ts::Array x = ts::arange(n, ts::f32) + float(rank());
  const float base = float(nproc() * (nproc() - 1) / 2);
  auto red = comm::reduce(x, comm::SUM, 0).to_vector<float>();
  auto sc = comm::scan(x, comm::SUM).to_vector<float>();
  auto bc = comm::bcast(x, nproc() - 1).to_vector<float>();
  auto ag = comm::allgather(x).to_vector<float>();
  auto a2a = comm::alltoall(ts::reshape(ts::arange(nproc() * n, ts::f32) + float(1000000 * rank()), {nproc(), n}))
                 .to_vector<float>();
  auto agv = comm::allgatherv(ts::reshape(x, {n, 1}), std::vector<int64_t>(size_t(nproc()), n)).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = size_t(i);
    if (rank() == 0) {
      EXPECT_EQ(red[k], float(nproc() * i) + base);
    }
    EXPECT_EQ(sc[k], float((rank() + 1) * i + rank() * (rank() + 1) / 2));
    EXPECT_EQ(bc[k], float(i + nproc() - 1));
    for (int p = 0; p < nproc(); ++p) {
      EXPECT_EQ(ag[size_t(p * n + i)], float(i + p));
      EXPECT_EQ(agv[size_t(p * n + i)], float(i + p));
      EXPECT_EQ(a2a[size_t(p * n + i)], float(1000000 * p + rank() * n + i));
    }
  }
}

TEST(CommCollectives, InPlaceWhenTheInputDiesUnderJit) {
  // Inside jit the inputs of these equations are dead intermediates: the kernels may run
  // in place (MPI_IN_PLACE); the values must not change.
  auto f = [](const ts::Array& x) {
    ts::Array a = comm::alltoall(x * 1.0f);
    ts::Array b = comm::scan(a * 1.0f, comm::SUM);
    ts::Array c = comm::bcast(b * 1.0f, 0);
    return comm::reduce(c * 1.0f, comm::SUM, 0);
  };
  ts::Array x = ts::reshape(ts::arange(nproc() * 3, ts::f32), {nproc(), 3}) + float(rank());
  auto want = f(x).to_vector<float>();
  auto got = ts::jit(f)(x).to_vector<float>();
  EXPECT_EQ(got, want);
}

// ================================ loops and conditionals ================================

TEST(CommCollectives, InsideForiLoop) {
  const int root = nproc() - 1;
  auto body = [&](const ts::Array&, const ts::Array& v) { return comm::alltoall(comm::bcast(v, root) + v); };
  auto f = [&](const ts::Array& x) { return ts::fori_loop(0, 3, body, x); };
  ts::Array x = ts::reshape(ts::arange(nproc() * 2, ts::f32), {nproc(), 2}) + float(10 * rank());
  ts::Array want = x;
  for (int i = 0; i < 3; ++i) want = body(ts::Array(i), want);
  for (auto& [how, y] : eager_and_jit(f, x)) EXPECT_EQ(y.to_vector<float>(), want.to_vector<float>()) << how;
}

TEST(CommCollectives, InsideScanWithAllgatherAndGather) {
  const int root = 0;
  // Carry: the running total of every process's x_t; ys: gather of x_t.
  auto f = [&](const ts::Array& xs) {
    return ts::scan(
        [&](const ts::Array& c, const ts::Array& x) {
          return std::make_pair(c + ts::sum(comm::allgather(x)), comm::gather(x, root));
        },
        ts::zeros({}, ts::f32), xs);
  };
  ts::Array xs = ts::reshape(ts::arange(6, ts::f32), {3, 2}) + float(rank());
  for (bool jitted : {false, true}) {
    auto [total, ys] = jitted ? ts::jit(f)(xs) : f(xs);
    EXPECT_EQ(total.item<float>(), float(nproc() * 15 + 6 * nproc() * (nproc() - 1) / 2));
    if (rank() == root) {
      ASSERT_EQ(ys.shape(), (ts::Shape{3, nproc(), 2}));
      auto v = ys.to_vector<float>();
      for (int t = 0; t < 3; ++t)
        for (int p = 0; p < nproc(); ++p)
          for (int i = 0; i < 2; ++i) EXPECT_EQ(v[size_t((t * nproc() + p) * 2 + i)], float(2 * t + i + p));
    } else {
      EXPECT_EQ(ys.to_vector<float>(), xs.to_vector<float>());
    }
  }
}

TEST(CommCollectives, InsideCondBothBranches) {
  const int root = nproc() - 1;
  auto f = [&](const ts::Array& pred, const ts::Array& x) {
    return ts::cond(
        pred, [&](const ts::Array& v) { return comm::reduce(v, comm::SUM, root); },
        [&](const ts::Array& v) {
          // Every process gathers; the others pass their result's type to scatter.
          ts::Array all = comm::allgather(v);
          return comm::scatter(rank() == root ? all : v, root);
        },
        x);
  };
  ts::Array x = ts::full({3}, float(rank() + 1), ts::f32);
  for (bool jitted : {false, true})
    for (bool p : {true, false}) {
      ts::Array pred(p);
      ts::Array y = jitted ? ts::jit(f)(pred, x) : f(pred, x);
      const float want = p ? (rank() == root ? float(nproc() * (nproc() + 1) / 2) : float(rank() + 1)) : float(rank() + 1);
      for (float v : y.to_vector<float>()) EXPECT_EQ(v, want) << "jit " << jitted << " pred " << p;
    }
}

TEST(CommCollectives, AlltoallvInsideWhileLoop) {
  // Symmetric counts: the shape stays, and two exchanges give x back. Three (run-time
  // bounds, so a while_loop) give one exchange.
  std::vector<int64_t> counts;
  for (int j = 0; j < nproc(); ++j) counts.push_back((rank() + j) % 3);
  const int64_t rows_n = sum_of(counts);
  ts::Array x = ts::reshape(ts::arange(rows_n * 2, ts::f32), {rows_n, 2}) + float(100 * rank());
  auto f = [&](const ts::Array& hi, const ts::Array& v0) {
    return ts::fori_loop(ts::Array(int32_t(0)), hi,
                         [&](const ts::Array&, const ts::Array& v) { return comm::alltoallv(v, counts, counts); }, v0);
  };
  ts::Array once = comm::alltoallv(x, counts, counts);
  EXPECT_EQ(f(ts::Array(int32_t(3)), x).to_vector<float>(), once.to_vector<float>());
  EXPECT_EQ(ts::jit(f)(ts::Array(int32_t(3)), x).to_vector<float>(), once.to_vector<float>());
  EXPECT_EQ(ts::jit(f)(ts::Array(int32_t(2)), x).to_vector<float>(), x.to_vector<float>());
}

// comm.reduce with a root that exists in the world but not in `c`.
void expect_error_root_outside(const comm::Comm& c) {
  try {
    comm::reduce(ts::ones({1}, ts::f32), comm::SUM, c.size(), c);
    ADD_FAILURE() << "expected a ValueError";
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(c.to_string()), std::string::npos) << e.what();
  }
}

TEST(CommCollectives, OnASplitCommunicator) {
  // Processes of the same parity form one communicator, ranked by world rank.
  comm::Comm sub = comm::world().split(rank() % 2, rank());
  std::vector<int> members;
  for (int p = 0; p < nproc(); ++p)
    if (p % 2 == rank() % 2) members.push_back(p);
  const int m = int(members.size());
  ASSERT_EQ(sub.size(), m);
  ts::Array x = ts::full({2}, float(rank()), ts::f32);
  auto ag = ts::jit([&](const ts::Array& v) { return comm::allgather(v, sub); })(x).to_vector<float>();
  for (int j = 0; j < m; ++j) EXPECT_EQ(ag[size_t(2 * j)], float(members[size_t(j)]));
  for (float v : comm::bcast(x, m - 1, sub).to_vector<float>()) EXPECT_EQ(v, float(members.back()));
  auto a2a = comm::alltoall(ts::full({m}, float(rank()), ts::f32), sub).to_vector<float>();
  for (int j = 0; j < m; ++j) EXPECT_EQ(a2a[size_t(j)], float(members[size_t(j)]));
  ts::Array gv = comm::gatherv(ts::reshape(x, {1, 2}), std::vector<int64_t>(size_t(m), 1), 0, sub);
  if (sub.rank() == 0) {
    ASSERT_EQ(gv.shape(), (ts::Shape{m, 2}));
    auto v = gv.to_vector<float>();
    for (int j = 0; j < m; ++j) EXPECT_EQ(v[size_t(2 * j + 1)], float(members[size_t(j)]));
  }
  expect_error_root_outside(sub);
}

}  // namespace
