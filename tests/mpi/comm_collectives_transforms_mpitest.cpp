// Transformations of the ts::comm collectives across processes: vmap of every operation
// against the operation per example; derivatives (jvp, grad, inside loops and jit)
// against values computed by hand, under the convention of include/tessel/comm.h; and
// argument errors (type and message), before any MPI call.
#include "comm_collectives_util.h"

namespace {

using namespace comm_test;

// ======================================== vmap ========================================

// vmap(f) over axis `axis` of xs equals f of each slice, stacked (eagerly and under jit).
template <class F> void expect_vmap_matches(const F& f, const ts::Array& xs, int64_t axis, const std::string& what) {
  std::vector<ts::Array> each;
  for (int64_t b = 0; b < xs.shape()[size_t(axis)]; ++b) each.push_back(f(ts::take(xs, ts::Array(int32_t(b)), axis)));
  const std::vector<float> want = ts::stack(each).to_vector<float>();
  const ts::Array mapped = ts::vmap(f, {axis})(xs), jitted = ts::jit(ts::vmap(f, {axis}))(xs);
  EXPECT_EQ(mapped.to_vector<float>(), want) << what << " in_axes " << axis;
  EXPECT_EQ(jitted.to_vector<float>(), want) << what << " jit, in_axes " << axis;
}

// xs: a batch of 3 along `axis` of per-example arrays of shape `example`, per-process data.
ts::Array batch_of(const ts::Shape& example, int64_t axis) {
  ts::Shape s = example;
  s.insert(s.begin() + axis, 3);
  return ts::reshape(ts::arange(ts::shape_size(s), ts::f32), s) * float(rank() + 1) + float(rank());
}

TEST(CommCollectivesVmap, EveryOperationMatchesPerExampleCalls) {
  const int root = nproc() - 1;
  const int64_t n = nproc();
  std::vector<int64_t> counts = vcounts();
  for (int64_t axis : {0, 1}) {
    expect_vmap_matches([&](const ts::Array& x) { return comm::reduce(x, comm::SUM, root); }, batch_of({2, 2}, axis), axis, "reduce");
    expect_vmap_matches([&](const ts::Array& x) { return comm::scan(x, comm::SUM); }, batch_of({2, 2}, axis), axis, "scan");
    expect_vmap_matches([&](const ts::Array& x) { return comm::bcast(x, root); }, batch_of({2, 2}, axis), axis, "bcast");
    expect_vmap_matches([&](const ts::Array& x) { return comm::allgather(x); }, batch_of({2, 2}, axis), axis, "allgather");
    expect_vmap_matches([&](const ts::Array& x) { return comm::gather(x, root); }, batch_of({2, 2}, axis), axis, "gather");
    // The other processes' placeholder must be batched too: take it from x.
    expect_vmap_matches([&](const ts::Array& x) { return comm::scatter(rank() == root ? x : x.index({0}), root); },
                        batch_of({n, 2}, axis), axis, "scatter");
    expect_vmap_matches([&](const ts::Array& x) { return comm::alltoall(x); }, batch_of({n, 2}, axis), axis, "alltoall");
    expect_vmap_matches([&](const ts::Array& x) { return comm::allgatherv(x, counts); },
                        batch_of({vcount(rank()), 2}, axis), axis, "allgatherv");
    expect_vmap_matches([&](const ts::Array& x) { return comm::gatherv(x, counts, root); },
                        batch_of({vcount(rank()), 2}, axis), axis, "gatherv");
    expect_vmap_matches([&](const ts::Array& x) { return comm::alltoallv(x, send_counts(), recv_counts()); },
                        batch_of({sum_of(send_counts()), 2}, axis), axis, "alltoallv");
  }
  // A scalar example: the batch is the only dimension.
  expect_vmap_matches([&](const ts::Array& x) { return comm::allgather(x); }, batch_of({}, 0), 0, "allgather scalar");
  expect_vmap_matches([&](const ts::Array& x) { return comm::scatter(rank() == root ? x : x.index({0}), root); },
                      batch_of({n}, 0), 0, "scatter to scalars");
}

// =================================== differentiation ===================================

std::vector<float> grad_of(const std::function<ts::Array(const ts::Array&)>& f, const ts::Array& x) {
  return ts::grad(f)(x).to_vector<float>();
}

void expect_all(const std::vector<float>& v, float want, const std::string& what) {
  for (size_t i = 0; i < v.size(); ++i) EXPECT_FLOAT_EQ(v[i], want) << what << ", element " << i;
}

TEST(CommCollectivesGrad, ReduceGradOfTheRootsResultReachesEveryProcess) {
  const int root = nproc() - 1;
  // Only the root's value counts: L = sum(S^2), S = sum_p x_p, so dL/dx_p = 2 S everywhere.
  auto f = [&](const ts::Array& x) {
    ts::Array s = comm::reduce(x, comm::SUM, root);
    return rank() == root ? ts::sum(s * s) : ts::sum(s) * 0.0f;
  };
  ts::Array x = ts::full({3}, float(rank() + 1), ts::f32);
  const float s = float(nproc() * (nproc() + 1) / 2);
  expect_all(grad_of(f, x), 2 * s, "reduce grad");
  expect_all(grad_of(ts::jit(f), x), 2 * s, "reduce grad of jit");
  // The others' results are their own x: their part of the objective adds its cotangent.
  auto g = [&](const ts::Array& x) { return ts::sum(comm::reduce(x, comm::SUM, root) * 3.0f); };
  expect_all(grad_of(g, x), rank() == root ? 3.0f : 6.0f, "reduce grad, every process's result counted");
}

TEST(CommCollectivesGrad, ReduceGradWithUnusedResultOffRoot) {
  // The natural way to write a root-only objective: the others return a constant. Their
  // cotangent is zero, yet they must take part in the transpose's communication.
  const int root = 0;
  auto f = [&](const ts::Array& x) {
    ts::Array s = comm::reduce(x, comm::SUM, root);
    return rank() == root ? ts::sum(s * s) : ts::zeros({}, ts::f32);
  };
  ts::Array x = ts::full({2}, float(rank() + 1), ts::f32);
  expect_all(grad_of(f, x), 2 * float(nproc() * (nproc() + 1) / 2), "reduce grad, constant off root");
}

TEST(CommCollectivesGrad, ScanGradIsTheReverseScan) {
  // L = sum_r (r + 1) * sum(scan(x)_r): dL/dx_p = sum_{r >= p} (r + 1).
  auto f = [](const ts::Array& x) { return ts::sum(comm::scan(x, comm::SUM)) * float(rank() + 1); };
  float want = 0;
  for (int r = rank(); r < nproc(); ++r) want += float(r + 1);
  ts::Array x = ts::full({2, 2}, 0.5f, ts::f32);
  expect_all(grad_of(f, x), want, "scan grad");
  expect_all(grad_of(ts::jit(f), x), want, "scan grad of jit");
}

TEST(CommCollectivesGrad, BcastGradGoesToTheRoot) {
  const int root = nproc() - 1;
  // Replicated result: the root's x gets d sum(y^2)/dy = 2 y; the others' x was not used.
  auto f = [&](const ts::Array& x) {
    ts::Array y = comm::bcast(x, root);
    return ts::sum(y * y);
  };
  ts::Array x = ts::full({3}, float(rank() + 1), ts::f32);
  expect_all(grad_of(f, x), rank() == root ? 2.0f * float(root + 1) : 0.0f, "bcast grad");
}

TEST(CommCollectivesGrad, GradThroughForiLoopOfScans) {
  // f = sum(S(S(S(x)))) with S the prefix sum over processes: the gradient is S^T applied
  // three times to ones, S^T v [p] = sum_{r >= p} v[r] (the scan's transpose inside the loop's).
  auto f = [](const ts::Array& x) {
    return ts::sum(ts::fori_loop(0, 3, [](const ts::Array&, const ts::Array& v) { return comm::scan(v, comm::SUM); }, x));
  };
  std::vector<double> v(size_t(nproc()), 1.0);
  for (int k = 0; k < 3; ++k)
    for (int p = 0; p < nproc(); ++p)
      for (int r = p + 1; r < nproc(); ++r) v[size_t(p)] += v[size_t(r)];
  ts::Array x = ts::ones({2}, ts::f32);
  expect_all(grad_of(f, x), float(v[size_t(rank())]), "grad through fori_loop");
  expect_all(ts::jit(ts::grad(f))(x).to_vector<float>(), float(v[size_t(rank())]), "jit of grad through fori_loop");
}

TEST(CommCollectivesGrad, AllgatherGradIsThisProcesssSlice) {
  // L = sum_p (p + 1) * sum(x_p), the same on every process: dL/dx_p = p + 1.
  auto f = [](const ts::Array& x) {
    ts::Array w = ts::reshape(ts::arange(nproc(), ts::f32) + 1.0f, {nproc(), 1});
    return ts::sum(comm::allgather(x) * w);
  };
  ts::Array x = ts::ones({4}, ts::f32);
  expect_all(grad_of(f, x), float(rank() + 1), "allgather grad");
  expect_all(grad_of(ts::jit(f), x), float(rank() + 1), "allgather grad of jit");
}

TEST(CommCollectivesGrad, GatherAndScatterGradsAreEachOthersAdjoints) {
  const int root = nproc() - 1;
  // gather: root's objective weighs entry p by p + 1; the others weigh their x by 10.
  auto g = [&](const ts::Array& x) {
    ts::Array y = comm::gather(x, root);
    if (rank() != root) return ts::sum(y) * 10.0f;
    return ts::sum(y * ts::reshape(ts::arange(nproc(), ts::f32) + 1.0f, {nproc(), 1}));
  };
  ts::Array x = ts::ones({2}, ts::f32);
  expect_all(grad_of(g, x), rank() == root ? float(root + 1) : float(rank() + 11), "gather grad");
  // scatter: process r weighs its entry by r + 1: the root's x gets row p = p + 1.
  auto s = [&](const ts::Array& x) { return ts::sum(comm::scatter(x, root)) * float(rank() + 1); };
  ts::Array xs = rank() == root ? ts::ones({nproc(), 2}, ts::f32) : ts::ones({2}, ts::f32);
  std::vector<float> gs = grad_of(s, xs);
  EXPECT_EQ(ts::jit(ts::grad(s))(xs).to_vector<float>(), gs) << "jit of grad";
  if (rank() == root) {
    for (int p = 0; p < nproc(); ++p)
      for (int i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(gs[size_t(2 * p + i)], float(p + 1));
  } else {
    expect_all(gs, 0.0f, "scatter grad off root");
  }
}

TEST(CommCollectivesGrad, AlltoallGradIsAlltoall) {
  // Process r weighs the entry from process j by 10 r + j: dL/dx_p[r] = 10 r + p.
  auto f = [](const ts::Array& x) {
    ts::Array w = ts::reshape(ts::arange(nproc(), ts::f32) + float(10 * rank()), {nproc(), 1});
    return ts::sum(comm::alltoall(x) * w);
  };
  ts::Array x = ts::ones({nproc(), 2}, ts::f32);
  for (auto& g : {grad_of(f, x), grad_of(ts::jit(f), x)})
    for (int r = 0; r < nproc(); ++r)
      for (int i = 0; i < 2; ++i) EXPECT_FLOAT_EQ(g[size_t(2 * r + i)], float(10 * r + rank()));
}

TEST(CommCollectivesGrad, VmapOfGrad) {
  // Per-example gradients of the alltoall and gather objectives above: the same for every
  // example, since both are linear.
  const int root = 0;
  auto f = [&](const ts::Array& x) {
    ts::Array w = ts::reshape(ts::arange(nproc(), ts::f32) + float(10 * rank()), {nproc(), 1});
    ts::Array g = comm::gather(x, root);
    return ts::sum(comm::alltoall(x) * w) + ts::sum(g) * 2.0f;
  };
  ts::Array xs = ts::ones({3, nproc(), 2}, ts::f32);
  std::vector<float> one = grad_of(f, ts::ones({nproc(), 2}, ts::f32));
  std::vector<float> all = ts::vmap(ts::grad(f))(xs).to_vector<float>();
  ASSERT_EQ(all.size(), 3 * one.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_FLOAT_EQ(all[i], one[i % one.size()]) << i;
}

TEST(CommCollectivesGrad, VariantGrads) {
  const std::vector<int64_t> counts = vcounts();
  int64_t off = 0;  // this process's first row in the gathered result
  for (int p = 0; p < rank(); ++p) off += counts[size_t(p)];
  const int64_t mine = counts[size_t(rank())];
  ts::Array x = ts::ones({mine, 2}, ts::f32);
  auto row_index = [](int64_t n) { return ts::reshape(ts::arange(n, ts::f32), {n, 1}); };
  // allgatherv: every process weighs gathered row k by k; this process's row i is k = off + i.
  auto ag = [&](const ts::Array& v) {
    ts::Array y = comm::allgatherv(v, counts);
    return ts::sum(y * row_index(y.shape()[0]));
  };
  std::vector<float> g = grad_of(ag, x);
  for (int64_t i = 0; i < mine; ++i) EXPECT_FLOAT_EQ(g[size_t(2 * i)], float(off + i)) << "allgatherv row " << i;
  // gatherv to root 0: root weighs row k by k + 1; the others weigh their x by 100.
  auto gv = [&](const ts::Array& v) {
    ts::Array y = comm::gatherv(v, counts, 0);
    return rank() == 0 ? ts::sum(y * (row_index(y.shape()[0]) + 1.0f)) : ts::sum(y) * 100.0f;
  };
  g = grad_of(gv, x);
  for (int64_t i = 0; i < mine; ++i)
    EXPECT_FLOAT_EQ(g[size_t(2 * i + 1)], float(off + i + 1) + (rank() == 0 ? 0.0f : 100.0f)) << "gatherv row " << i;
  // alltoallv: process j weighs what it receives by j + 1: rows sent to j get j + 1.
  auto av = [&](const ts::Array& v) { return ts::sum(comm::alltoallv(v, send_counts(), recv_counts())) * float(rank() + 1); };
  ts::Array xa = ts::ones({sum_of(send_counts()), 2}, ts::f32);
  g = grad_of(av, xa);
  size_t k = 0;
  for (int j = 0; j < nproc(); ++j)
    for (int64_t i = 0; i < a2a_count(rank(), j) * 2; ++i) EXPECT_FLOAT_EQ(g[k++], float(j + 1)) << "alltoallv to " << j;
}

TEST(CommCollectivesGrad, JvpOfLinearOperationsAppliesThemToTangents) {
  const int root = 0;
  ts::Array x = ts::full({nproc()}, float(rank()), ts::f32), t = ts::full({nproc()}, float(rank() + 1), ts::f32);
  std::vector<std::pair<std::string, std::function<ts::Array(const ts::Array&)>>> fs = {
      {"reduce", [&](const ts::Array& v) { return comm::reduce(v, comm::SUM, root); }},
      {"scan", [](const ts::Array& v) { return comm::scan(v, comm::SUM); }},
      {"bcast", [&](const ts::Array& v) { return comm::bcast(v, root); }},
      {"allgather", [](const ts::Array& v) { return comm::allgather(v); }},
      {"gather", [&](const ts::Array& v) { return comm::gather(v, root); }},
      {"scatter", [&](const ts::Array& v) { return comm::scatter(rank() == root ? v : v.index({0}), root); }},
      {"alltoall", [](const ts::Array& v) { return comm::alltoall(v); }},
  };
  for (auto& [name, f] : fs) {
    auto [y, ty] = ts::jvp(f, x, t);
    EXPECT_EQ(y.to_vector<float>(), f(x).to_vector<float>()) << name;
    EXPECT_EQ(ty.to_vector<float>(), f(t).to_vector<float>()) << name;
  }
}

TEST(CommCollectivesGrad, NonlinearOpsHaveNoDerivative) {
  ts::Array x = ts::ones({2}, ts::f32);
  auto expect_not_implemented = [](const std::function<void()>& f, const std::string& op, const std::string& what) {
    try {
      f();
      FAIL() << "expected NotImplementedError for " << op;
    } catch (const ts::NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_not_implemented([&] { ts::grad([](const ts::Array& v) { return ts::sum(comm::reduce(v, comm::MAX, 0)); })(x); },
                         "comm.reduce", "MAX");
  expect_not_implemented([&] { ts::jvp([](const ts::Array& v) { return comm::scan(v, comm::PROD); }, x, x); },
                         "comm.scan", "PROD");
}

// ======================================== errors ========================================

// ============================== transpose of the transpose ==============================

using LinearFn = std::function<ts::Array(const ts::Array&)>;

// Per-process data of `shape` (small integers: float sums are exact).
ts::Array data_of(const ts::Shape& shape, int seed) {
  return ts::reshape(ts::arange(ts::shape_size(shape), ts::f32), shape) * float(rank() + seed) - float(2 * rank());
}

float global_dot(const ts::Array& a, const ts::Array& b) {
  return comm::allreduce(ts::sum(a * b), comm::SUM).item<float>();
}

// linear_transpose(linear_transpose(f)) is f again, eagerly and under jit. For an operation
// with the exact adjoint (`exact`), f^T is also f's adjoint over the job:
// sum_p <f(x)_p, y_p> == sum_p <x_p, f^T(y)_p>.
void expect_round_trip(const LinearFn& f, const ts::Shape& x_shape, bool exact, const std::string& what) {
  const ts::Array x = data_of(x_shape, 1), x2 = data_of(x_shape, 2);
  const ts::Array fx = f(x);
  auto ft = ts::linear_transpose(f, x);
  auto ftt = ts::linear_transpose(ft, fx);
  EXPECT_EQ(ftt(x2).to_vector<float>(), f(x2).to_vector<float>()) << what << ": transpose of the transpose";
  EXPECT_EQ(ts::jit(ftt)(x2).to_vector<float>(), f(x2).to_vector<float>()) << what << ": under jit";
  if (!exact) return;
  const ts::Array y = data_of(fx.shape(), 3);
  EXPECT_FLOAT_EQ(global_dot(f(x2), y), global_dot(x2, ft(y))) << what << ": <f(x), y> = <x, f^T(y)>";
}

TEST(CommCollectivesTranspose, TransposeOfTransposeIsTheOriginalForEveryOperation) {
  const int root = nproc() - 1;
  const int64_t n = nproc();
  const int prev = (rank() + nproc() - 1) % nproc(), next = (rank() + 1) % nproc();
  const std::vector<int64_t> counts = vcounts();
  // Replicated results (mpi4jax's convention: their transposes do not communicate).
  expect_round_trip([](const ts::Array& x) { return comm::allreduce(x, comm::SUM); }, {3}, false, "allreduce");
  expect_round_trip([](const ts::Array& x) { return comm::allgather(x); }, {2, 2}, false, "allgather");
  expect_round_trip([&](const ts::Array& x) { return comm::allgatherv(x, counts); }, {vcount(rank()), 2}, false,
                    "allgatherv");
  expect_round_trip([&](const ts::Array& x) { return comm::bcast(x, root); }, {3}, false, "bcast");
  // Exact adjoints.
  expect_round_trip([&](const ts::Array& x) { return comm::reduce(x, comm::SUM, root); }, {3}, true, "reduce");
  expect_round_trip([&](const ts::Array& x) { return comm::reduce(x, comm::SUM, 0); }, {3}, true, "reduce to 0");
  expect_round_trip([](const ts::Array& x) { return comm::scan(x, comm::SUM); }, {3}, true, "scan");
  expect_round_trip([&](const ts::Array& x) { return comm::gather(x, root); }, {2}, true, "gather");
  expect_round_trip([&](const ts::Array& x) { return comm::scatter(x, root); }, rank() == root ? ts::Shape{n, 2} : ts::Shape{2},
                    true, "scatter");
  expect_round_trip([](const ts::Array& x) { return comm::alltoall(x); }, {n, 2}, true, "alltoall");
  expect_round_trip([&](const ts::Array& x) { return comm::gatherv(x, counts, root); }, {vcount(rank()), 2}, true,
                    "gatherv");
  expect_round_trip([](const ts::Array& x) { return comm::alltoallv(x, send_counts(), recv_counts()); },
                    {sum_of(send_counts()), 2}, true, "alltoallv");
  expect_round_trip([&](const ts::Array& x) { return comm::sendrecv(x, x, prev, next); }, {3}, true, "sendrecv ring");
}

// The transposed replicated-result operations (adjoint=replicated_transposed) under vmap
// match their per-example calls, and their values are the convention's: the identity, this
// process's rows, the root's value and zeros elsewhere.
TEST(CommCollectivesTranspose, TransposedOperationsUnderVmap) {
  const int root = nproc() - 1;
  const int64_t n = nproc();
  const std::vector<int64_t> counts = vcounts();
  auto t_allreduce = ts::linear_transpose([](const ts::Array& x) { return comm::allreduce(x, comm::SUM); },
                                          data_of({2, 2}, 1));
  auto t_allgather = ts::linear_transpose([](const ts::Array& x) { return comm::allgather(x); }, data_of({2, 2}, 1));
  auto t_allgatherv =
      ts::linear_transpose([&](const ts::Array& x) { return comm::allgatherv(x, counts); }, data_of({vcount(rank()), 2}, 1));
  auto t_bcast = ts::linear_transpose([&](const ts::Array& x) { return comm::bcast(x, root); }, data_of({2, 2}, 1));
  const ts::Array stacked = data_of({n, 2, 2}, 4);
  EXPECT_EQ(t_allgather(stacked).to_vector<float>(), stacked.index({rank()}).to_vector<float>());
  const ts::Array two = data_of({2, 2}, 4);
  EXPECT_EQ(t_bcast(two).to_vector<float>(), (rank() == root ? two : two * 0.0f).to_vector<float>());
  for (int64_t axis : {0, 1}) {
    expect_vmap_matches(t_allreduce, batch_of({2, 2}, axis), axis, "transposed allreduce");
    expect_vmap_matches(t_allgather, batch_of({n, 2, 2}, axis), axis, "transposed allgather");
    expect_vmap_matches(t_allgatherv, batch_of({sum_of(counts), 2}, axis), axis, "transposed allgatherv");
    expect_vmap_matches(t_bcast, batch_of({2, 2}, axis), axis, "transposed bcast");
  }
}

// The example: a matrix-vector product whose columns are split over the processes,
// y = allreduce(A_p x_p). Transposed twice it must still sum over the processes.
TEST(CommCollectivesTranspose, SplitColumnMatvecTransposedTwiceKeepsTheSum) {
  const ts::Array a = data_of({4, 3}, 1);  // this process's columns
  auto matvec = [&](const ts::Array& x) { return comm::allreduce(ts::matmul(a, x), comm::SUM); };
  const ts::Array x = data_of({3}, 2);
  auto t = ts::linear_transpose(matvec, x);
  auto tt = ts::linear_transpose(t, matvec(x));
  const std::vector<float> want = matvec(x).to_vector<float>();
  EXPECT_EQ(tt(x).to_vector<float>(), want);
  // The sum is there: with more than one process, it differs from the local product.
  if (nproc() > 1) {
    EXPECT_NE(ts::matmul(a, x).to_vector<float>(), want);
  }
  // And the transpose itself is the local A_p^T (the replicated convention).
  const ts::Array y = data_of({4}, 3);
  EXPECT_EQ(t(y).to_vector<float>(), ts::matmul(ts::transpose(a), y).to_vector<float>());
}

TEST(CommCollectivesErrors, RootOutsideTheCommunicatorThrows) {
  ts::Array x = ts::ones({nproc()}, ts::f32);
  const std::string n = std::to_string(nproc());
  expect_error<ts::ValueError>([&] { comm::reduce(x, comm::SUM, nproc()); }, {"comm.reduce", "root " + n, "[0, " + n + ")"});
  expect_error<ts::ValueError>([&] { comm::bcast(x, -1); }, {"comm.bcast", "root -1"});
  expect_error<ts::ValueError>([&] { comm::gather(x, nproc() + 3); }, {"comm.gather", "root"});
  expect_error<ts::ValueError>([&] { comm::scatter(x, -2); }, {"comm.scatter", "root -2"});
  expect_error<ts::ValueError>([&] { comm::gatherv(ts::ones({1}, ts::f32), std::vector<int64_t>(size_t(nproc()), 1), nproc()); },
                               {"comm.gatherv", "root"});
  // Under jit the error comes at trace time, the same.
  expect_error<ts::ValueError>([&] { ts::jit([&](const ts::Array& v) { return comm::bcast(v, nproc()); })(x); },
                               {"comm.bcast", "root " + n});
}

TEST(CommCollectivesErrors, BadShapesThrow) {
  const std::string n = std::to_string(nproc());
  expect_error<ts::ShapeError>([&] { comm::alltoall(ts::ones({nproc() + 1, 2}, ts::f32)); },
                               {"comm.alltoall", "(" + n + ", ...)", "(" + std::to_string(nproc() + 1) + ", 2)"});
  expect_error<ts::ShapeError>([&] { comm::alltoall(ts::ones({}, ts::f32)); }, {"comm.alltoall", "()"});
  // Under vmap the error names the per-example shape.
  expect_error<ts::ShapeError>([&] { ts::vmap([](const ts::Array& v) { return comm::alltoall(v); })(ts::ones({3}, ts::f32)); },
                               {"comm.alltoall", "got ()"});
  expect_error<ts::ShapeError>(
      [&] {
        ts::vmap([](const ts::Array& v) { return comm::allgatherv(v, std::vector<int64_t>(size_t(nproc()), 1)); })(
            ts::ones({2, 3, 4}, ts::f32));
      },
      {"comm.allgatherv", "(3, 4)", "counts["});
  // Only the root checks its input's shape (the others' x gives the result's type), so only
  // the root calls: it throws before any communication.
  if (rank() == 0)
    expect_error<ts::ShapeError>([&] { comm::scatter(ts::ones({nproc() + 2, 2}, ts::f32), 0); },
                                 {"comm.scatter", "input on root", "(" + n + ", ...)", "(" + std::to_string(nproc() + 2) + ", 2)"});
}

TEST(CommCollectivesErrors, BadCountsThrow) {
  const std::vector<int64_t> ones(size_t(nproc()), 1);
  ts::Array x = ts::ones({1, 2}, ts::f32);
  expect_error<ts::ValueError>([&] { comm::allgatherv(x, {1}); }, {"comm.allgatherv", "counts", "one count"});
  std::vector<int64_t> negative = ones;
  negative.back() = -1;
  expect_error<ts::ValueError>([&] { comm::gatherv(x, negative, 0); }, {"comm.gatherv", "negative", "-1"});
  expect_error<ts::ShapeError>([&] { comm::allgatherv(ts::ones({2, 2}, ts::f32), ones); },
                               {"comm.allgatherv", "(2, 2)", "counts[" + std::to_string(rank()) + "]"});
  expect_error<ts::ShapeError>([&] { comm::gatherv(ts::ones({}, ts::f32), ones, 0); }, {"comm.gatherv", "scalar"});
  expect_error<ts::ValueError>([&] { comm::alltoallv(x, ones, {1, 2, 3, 4, 5}); }, {"comm.alltoallv", "recv_counts"});
  std::vector<int64_t> two = ones;
  two[0] = 2;
  expect_error<ts::ShapeError>([&] { comm::alltoallv(x, two, ones); }, {"comm.alltoallv", "sum(send_counts)"});
}

TEST(CommCollectivesErrors, OpNotDefinedForDtypeThrows) {
  expect_error<ts::DTypeError>([] { comm::reduce(ts::ones({2}, ts::f32), comm::BXOR, 0); }, {"comm.reduce", "BXOR", "float32"});
  expect_error<ts::DTypeError>([] { comm::scan(ts::ones({2}, ts::c64), comm::MAX); }, {"comm.scan", "MAX", "complex"});
  expect_error<ts::DTypeError>([] { comm::reduce(ts::ones({2}, ts::bool_), comm::SUM, 0); }, {"comm.reduce", "SUM", "bool"});
}

}  // namespace
