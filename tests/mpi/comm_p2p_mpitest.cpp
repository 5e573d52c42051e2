// ts::comm::send / recv / sendrecv across processes: pairs (0<->1, 2<->3, ...) and rings,
// every dtype and several shapes, non-contiguous inputs, eager and jit, program order inside
// jit, loops and conditionals (the mpi4jax paper's exchange_data), autodiff and vmap rules,
// the Status envelope and the errors raised before MPI is called.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace comm = tessel::comm;

namespace {

int rank() { return comm::world().rank(); }
int nproc() { return comm::world().size(); }
int partner() { return rank() ^ 1; }  // the tests run on an even number of processes
int next() { return (rank() + 1) % nproc(); }
int prev() { return (rank() + nproc() - 1) % nproc(); }

// A value that identifies the process `r` it was made on, exactly representable in `d`.
ts::Array value(int r, const ts::Shape& shape, ts::DType d) {
  const int64_t n = ts::shape_size(shape);
  ts::Array i = ts::arange(n, ts::i32).reshape(shape);
  if (d == ts::bool_) return (i + r) % 2 == 0;
  ts::Array x = (i + 10 * r + 1).astype(d);
  if (ts::is_complex(d)) x = x * ts::Array(ts::complex64_t(1.0f, -2.0f));
  return x;
}

::testing::AssertionResult same(const ts::Array& got, const ts::Array& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "got " << got.aval().to_string() << ", want " << want.aval().to_string();
  if (!ts::all(ts::equal(got, want)).item<bool>())
    return ::testing::AssertionFailure() << "got\n" << got << "\nwant\n" << want;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const ts::Array& got, const ts::Array& want) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "got " << got.aval().to_string() << ", want " << want.aval().to_string();
  auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= 1e-5 * (1 + std::abs(w[i]))))
      return ::testing::AssertionFailure() << "got\n" << got << "\nwant\n" << want;
  return ::testing::AssertionSuccess();
}

// The paper's exchange_data: the even process sends then receives, the odd one receives
// then sends. Reordering either pair deadlocks (messages above the eager limit).
ts::Array exchange(const ts::Array& x) {
  if (rank() % 2 == 0) {
    comm::send(x, partner());
    return comm::recv(x, {.source = partner()});
  }
  ts::Array y = comm::recv(x, {.source = partner()});
  comm::send(x, partner());
  return y;
}

ts::Array ring(const ts::Array& x) { return comm::sendrecv(x, x, prev(), next()); }

const std::vector<ts::DType> kAllDtypes = {ts::bool_, ts::i8,  ts::i16, ts::i32, ts::i64, ts::u8,  ts::u32,
                                           ts::f16,   ts::bf16, ts::f32, ts::f64, ts::c64, ts::c128};
const std::vector<ts::Shape> kShapes = {{}, {5}, {3, 4}};

TEST(CommP2p, SendRecvEveryDtypeAndShapeEagerAndJit) {
  auto jitted = ts::jit(exchange);
  for (ts::DType d : kAllDtypes)
    for (const ts::Shape& s : kShapes) {
      SCOPED_TRACE(std::string(ts::dtype_name(d)) + ts::shape_to_string(s));
      ts::Array x = value(rank(), s, d), want = value(partner(), s, d);
      EXPECT_TRUE(same(exchange(x), want));
      EXPECT_TRUE(same(jitted(x), want));
    }
}

TEST(CommP2p, SendrecvRingEveryDtypeAndShapeEagerAndJit) {
  auto jitted = ts::jit(ring);
  for (ts::DType d : kAllDtypes)
    for (const ts::Shape& s : kShapes) {
      SCOPED_TRACE(std::string(ts::dtype_name(d)) + ts::shape_to_string(s));
      ts::Array x = value(rank(), s, d), want = value(prev(), s, d);
      EXPECT_TRUE(same(ring(x), want));
      EXPECT_TRUE(same(jitted(x), want));
    }
}

TEST(CommP2p, NonContiguousInputsTravelAsTheirValues) {
  using ts::Slice;
  ts::Array m = value(rank(), {4, 6}, ts::f32), pm = value(partner(), {4, 6}, ts::f32);
  const std::vector<std::function<ts::Array(const ts::Array&)>> views = {
      [](const ts::Array& a) { return a[{Slice(), 1}]; },                       // a column
      [](const ts::Array& a) { return a.T(); },                                 // a transpose
      [](const ts::Array& a) { return a[{Slice(0, 4, 2), Slice(1, 6, 2)}]; },  // strided
  };
  for (const auto& view : views) {
    EXPECT_TRUE(same(exchange(view(m)), view(pm)));
    EXPECT_TRUE(same(ts::jit([&](const ts::Array& a) { return exchange(view(a)); })(m), view(pm)));
    EXPECT_TRUE(same(ts::jit([&](const ts::Array& a) { return ring(view(a)); })(m), view(value(prev(), {4, 6}, ts::f32))));
  }
}

TEST(CommP2p, ExchangeDataInsideJitKeepsProgramOrder) {
  // 1 MiB: MPI_Send waits for the matching receive (rendezvous), so an order that sends
  // on both sides first, or receives on both sides first, would hang.
  const int64_t n = int64_t(1) << 18;
  auto f = ts::jit(exchange);
  ts::Array x = ts::arange(n, ts::f32) + float(rank());
  for (int k = 0; k < 3; ++k) {
    auto v = f(x + float(k)).to_vector<float>();
    EXPECT_EQ(v[0], float(partner() + k));
    EXPECT_EQ(v[size_t(n - 1)], float(n - 1 + partner() + k));
  }
}

TEST(CommP2p, SendRecvInsideForiLoopRunInProgramOrder) {
  // Each iteration: carry <- partner's carry + 1.
  auto body = [](const ts::Array&, const ts::Array& c) { return exchange(c) + 1.0f; };
  auto run_static = [&](const ts::Array& x) { return ts::fori_loop(0, 5, body, x); };
  auto run_dynamic = [&](const ts::Array& x) { return ts::fori_loop(ts::Array(0), ts::Array(5), body, x); };
  ts::Array x = ts::full({1 << 16}, float(10 * rank()), ts::f32);
  const float want = float(10 * partner() + 5);
  for (const ts::Array& y : {run_static(x), ts::jit(run_static)(x), ts::jit(run_dynamic)(x)}) {
    auto v = y.to_vector<float>();
    EXPECT_EQ(v.front(), want);
    EXPECT_EQ(v.back(), want);
  }
}

TEST(CommP2p, SendRecvInsideCondBranchesRunInProgramOrder) {
  // The branch is chosen at run time: the even process sends first, the odd one receives first.
  auto f = [](const ts::Array& is_even, const ts::Array& x) {
    return ts::cond(
        is_even,
        [](const ts::Array& a) {
          comm::send(a, partner());
          return comm::recv(a, {.source = partner()});
        },
        [](const ts::Array& a) {
          ts::Array y = comm::recv(a, {.source = partner()});
          comm::send(a, partner());
          return y;
        },
        x);
  };
  ts::Array is_even(rank() % 2 == 0);
  ts::Array x = ts::arange(int64_t(1) << 16, ts::f64) * double(rank() + 1);
  ts::Array want = ts::arange(int64_t(1) << 16, ts::f64) * double(partner() + 1);
  EXPECT_TRUE(same(f(is_even, x), want));
  EXPECT_TRUE(same(ts::jit(f)(is_even, x), want));
}

TEST(CommP2p, RingOfSendrecvInsideScan) {
  // After k steps around the ring, process r holds process (r - k)'s value.
  auto f = [](const ts::Array& x) {
    return ts::scan([](const ts::Array& c, const std::nullopt_t&) { return std::make_pair(ring(c), std::tuple<>()); },
                    x, std::nullopt, {.length = 3})
        .first;
  };
  ts::Array x = value(rank(), {7}, ts::i64);
  const int source = ((rank() - 3) % nproc() + nproc()) % nproc();
  EXPECT_TRUE(same(ts::jit(f)(x), value(source, {7}, ts::i64)));
}

TEST(CommP2p, StatusIsFilled) {
  const int64_t n = 6;
  ts::Array x = value(rank(), {n}, ts::f32);
  auto run = [&](comm::Status* st) {
    if (rank() % 2 == 0) {
      comm::send(x, partner(), {.tag = 7 + rank()});
      return comm::recv(x, {.source = comm::ANY_SOURCE, .tag = comm::ANY_TAG, .status = st});
    }
    ts::Array y = comm::recv(x, {.source = comm::ANY_SOURCE, .tag = comm::ANY_TAG, .status = st});
    comm::send(x, partner(), {.tag = 7 + rank()});
    return y;
  };
  comm::Status st;
  EXPECT_TRUE(same(run(&st), value(partner(), {n}, ts::f32)));  // eager: filled on return
  EXPECT_EQ(st.source, partner());
  EXPECT_EQ(st.tag, 7 + partner());
  EXPECT_EQ(st.count, n);

  comm::Status jst;
  auto f = ts::jit([&](const ts::Array&) { return run(&jst); });
  for (int k = 0; k < 2; ++k) {
    jst = comm::Status{};
    f(x).block_until_ready();  // under jit: filled each time the program runs
    EXPECT_EQ(jst.source, partner());
    EXPECT_EQ(jst.tag, 7 + partner());
    EXPECT_EQ(jst.count, n);
  }

  // ANY_SOURCE above would also match the ring's message from prev(): let every pair
  // finish first.
  comm::barrier();
  comm::Status sst;
  ts::Array big = value(rank(), {2, 5}, ts::c128);
  EXPECT_TRUE(same(comm::sendrecv(big, big, prev(), next(), {.sendtag = 3, .status = &sst}),
                   value(prev(), {2, 5}, ts::c128)));
  EXPECT_EQ(sst.source, prev());
  EXPECT_EQ(sst.tag, 3);
  EXPECT_EQ(sst.count, 10);
}

TEST(CommP2p, SendrecvReceivesIntoTheShapeOfRecvLike) {
  // Only recv_like's shape and dtype matter: the same elements arrive in its shape.
  ts::Array x = value(rank(), {3}, ts::f64);
  EXPECT_TRUE(same(comm::sendrecv(x, ts::zeros({1, 3}, ts::f64), prev(), next()),
                   value(prev(), {3}, ts::f64).reshape({1, 3})));
  EXPECT_TRUE(same(ts::jit([](const ts::Array& a) { return comm::sendrecv(a, ts::zeros({3, 1}, ts::f64), prev(), next()); })(x),
                   value(prev(), {3}, ts::f64).reshape({3, 1})));
}

// ---- autodiff ----

ts::Array weights(int r) { return ts::arange(5, ts::f32) + float(r + 1); }

TEST(CommP2p, SendrecvGradSwapsSourceAndDest) {
  // loss_r = sum(w_r * x_prev(r)^2): x_r feeds next(r)'s loss, so the gradient that comes
  // back to r is 2 x_r w_next(r), carried by the transposed exchange (next -> r).
  auto loss = [](const ts::Array& x) { return ts::sum(weights(rank()) * comm::sendrecv(x * x, x, prev(), next())); };
  ts::Array x = ts::arange(5, ts::f32) * 0.5f + float(rank());
  ts::Array want = 2.0f * x * weights(next());
  EXPECT_TRUE(all_close(ts::grad(loss)(x), want));
  EXPECT_TRUE(all_close(ts::jit(ts::grad(loss))(x), want));
  EXPECT_TRUE(all_close(ts::grad(ts::jit(loss))(x), want));
}

TEST(CommP2p, SendrecvGradWithTagsAndPairs) {
  // Tags swap in the transpose: a pair exchange with distinct send and receive tags.
  auto loss = [](const ts::Array& x) {
    ts::Array y = comm::sendrecv(x, x, partner(), partner(), {.sendtag = 10 + rank(), .recvtag = 10 + partner()});
    return ts::sum(y * y * float(rank() + 1));
  };
  ts::Array x = ts::full({4}, float(rank() + 1), ts::f32);
  // d/dx_r of the partner's loss (rank p): 2 x_r (p + 1).
  EXPECT_TRUE(all_close(ts::grad(loss)(x), 2.0f * x * float(partner() + 1)));
}

TEST(CommP2p, SendrecvJvpSendsTheTangents) {
  ts::Array x = value(rank(), {4}, ts::f32), t = value(rank(), {4}, ts::f32) * 3.0f;
  auto [y, ty] = ts::jvp(ring, x, t);
  EXPECT_TRUE(same(y, value(prev(), {4}, ts::f32)));
  EXPECT_TRUE(same(ty, value(prev(), {4}, ts::f32) * 3.0f));
  auto [y2, ty2] = ts::jvp(ts::jit(ring), x, t);
  EXPECT_TRUE(same(ty2, value(prev(), {4}, ts::f32) * 3.0f));
}

TEST(CommP2p, ReceivedValuesAreConstantsOfTheReceiver) {
  // The even process sends a constant; the odd one differentiates through the receive.
  auto f = [](const ts::Array& x) {
    if (rank() % 2 == 0) {
      comm::send(ts::full({3}, 2.0f, ts::f32), partner());
      return ts::sum(x * x);
    }
    return ts::sum(x * comm::recv(x, {.source = partner()}));
  };
  ts::Array x = ts::full({3}, 1.5f, ts::f32);
  ts::Array want = rank() % 2 == 0 ? 2.0f * x : ts::full({3}, 2.0f, ts::f32);
  EXPECT_TRUE(all_close(ts::grad(f)(x), want));
}

TEST(CommP2p, GradThroughSendIsNotImplemented) {
  auto f = [](const ts::Array& x) {
    comm::send(x, partner());  // every process fails here, before any MPI call
    return ts::sum(comm::recv(x, {.source = partner()}));
  };
  try {
    ts::grad(f)(ts::ones({2}, ts::f32));
    FAIL() << "expected NotImplementedError";
  } catch (const ts::NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("comm.send"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sendrecv"), std::string::npos) << e.what();
  }
}

TEST(CommP2p, SendrecvGradFromAnySourceIsNotImplemented) {
  auto f = [](const ts::Array& x) { return ts::sum(comm::sendrecv(x, x, comm::ANY_SOURCE, next())); };
  EXPECT_THROW(ts::grad(f)(ts::ones({2}, ts::f32)), ts::NotImplementedError);
}

// ---- vmap ----

TEST(CommP2p, VmapMovesTheWholeBatch) {
  ts::Array xs = ts::stack({value(rank(), {4}, ts::f32), value(rank() + 10, {4}, ts::f32),
                            value(rank() + 20, {4}, ts::f32)});
  ts::Array from_prev = ts::stack({value(prev(), {4}, ts::f32), value(prev() + 10, {4}, ts::f32),
                                   value(prev() + 20, {4}, ts::f32)});
  ts::Array from_partner = ts::stack({value(partner(), {4}, ts::f32), value(partner() + 10, {4}, ts::f32),
                                      value(partner() + 20, {4}, ts::f32)});
  EXPECT_TRUE(same(ts::vmap(ring)(xs), from_prev));
  EXPECT_TRUE(same(ts::jit(ts::vmap(ring))(xs), from_prev));
  EXPECT_TRUE(same(ts::vmap(exchange)(xs), from_partner));
  EXPECT_TRUE(same(ts::jit(ts::vmap(exchange))(xs), from_partner));
  // Batched along another axis: the result is batched like the input.
  EXPECT_TRUE(same(ts::vmap(ring, {1}, {1})(xs.T()), from_prev.T()));
  // An unbatched send buffer with a batched receive type: every batch entry is sent.
  auto bcast_ring = [](const ts::Array& like) { return comm::sendrecv(value(rank(), {4}, ts::f32), like, prev(), next()); };
  ts::Array got = ts::vmap(bcast_ring)(xs);
  EXPECT_TRUE(same(got, ts::stack({value(prev(), {4}, ts::f32), value(prev(), {4}, ts::f32), value(prev(), {4}, ts::f32)})));
}

TEST(CommP2p, VmapOfGradThroughSendrecv) {
  auto loss = [](const ts::Array& x) { return ts::sum(weights(rank()) * comm::sendrecv(x * x, x, prev(), next())); };
  ts::Array xs = ts::stack({ts::full({5}, 1.0f, ts::f32), ts::full({5}, 2.0f, ts::f32)});
  ts::Array want = 2.0f * xs * weights(next());
  EXPECT_TRUE(all_close(ts::vmap(ts::grad(loss))(xs), want));
}

// ---- errors before MPI ----

template <class E, class F> void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << parts[0];
  } catch (const E& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(CommP2p, BadRanksAndTagsThrowBeforeMpi) {
  ts::Array x = ts::ones({3}, ts::f32);
  const std::string n = std::to_string(nproc());
  expect_error<ts::ValueError>([&] { comm::send(x, nproc()); }, {"comm.send", "dest " + n, "[0, " + n + ")"});
  expect_error<ts::ValueError>([&] { comm::send(x, -1); }, {"comm.send", "dest -1"});
  expect_error<ts::ValueError>([&] { comm::send(x, 0, {.tag = -3}); }, {"comm.send", "tag -3"});
  expect_error<ts::ValueError>([&] { comm::recv(x, {.source = nproc() + 2}); }, {"comm.recv", "source", "ANY_SOURCE"});
  expect_error<ts::ValueError>([&] { comm::recv(x, {.source = 0, .tag = -7}); }, {"comm.recv", "tag -7", "ANY_TAG"});
  expect_error<ts::ValueError>([&] { comm::sendrecv(x, x, 0, nproc()); }, {"comm.sendrecv", "dest"});
  expect_error<ts::ValueError>([&] { comm::sendrecv(x, x, -5, 0); }, {"comm.sendrecv", "source -5"});
  expect_error<ts::ValueError>([&] { comm::sendrecv(x, x, 0, 0, {.sendtag = comm::ANY_TAG}); },
                               {"comm.sendrecv", "sendtag"});
  // Under jit the same errors come from tracing.
  expect_error<ts::ValueError>(
      [&] {
        ts::jit([](const ts::Array& a) {
          comm::send(a, nproc() + 1);
          return a;
        })(x);
      },
      {"comm.send", "dest"});
  expect_error<ts::ValueError>([&] { comm::send(ts::Array(), 0); }, {"comm.send", "empty"});
}

// A halo exchange inside jit, as the decomposed shallow-water step does it: each process
// sends its last 2 rows to the next and reads the previous one's in front of its own
// (a concatenation), then a stencil over rows. The compiled program posts the sendrecv
// (MPI_Isend/MPI_Irecv), computes the rows that read no received row, then waits
// (docs/sharding.md, "Overlapping the exchange"); the values equal the eager, blocking
// exchange's bit for bit, with the overlap and without it (TESSEL_OVERLAP_EXCHANGE=0 is
// read when an executable is built: the second jit compiles its own).
ts::Array halo_step(const ts::Array& u) {
  const int64_t n = u.shape()[0];
  const ts::Array halo = comm::sendrecv(ts::slice_in_dim(u, n - 2, n), ts::slice_in_dim(u, n - 2, n), prev(), next());
  const ts::Array y = ts::concatenate({halo, u}, 0);
  return ts::slice_in_dim(y, 2, n + 2) * 0.5f + ts::slice_in_dim(y, 1, n + 1) * 0.25f + ts::slice_in_dim(y, 0, n) * 0.25f;
}

TEST(CommP2p, HaloSendrecvInsideJitOverlapsTheRowsThatDoNotReadIt) {
  const ts::Array u = ts::sin(ts::arange(256 * 256, ts::f32).reshape({256, 256}) * 0.013f + float(rank())) * 2.0f;
  const ts::Array eager = halo_step(u);
  auto jitted = ts::jit(halo_step);
  const std::string text = jitted.lower(u).compile().as_text();
  EXPECT_NE(text.find("(comm_sendrecv): posted"), std::string::npos) << text;
  EXPECT_NE(text.find("interior rows [2, 256) of 256 run while the exchange is in flight"), std::string::npos) << text;
  EXPECT_TRUE(same(jitted(u), eager));
  // Twice more: the posted halves reuse nothing of a finished exchange.
  EXPECT_TRUE(same(jitted(jitted(u)), halo_step(eager)));
  setenv("TESSEL_OVERLAP_EXCHANGE", "0", 1);
  auto whole = ts::jit([](const ts::Array& x) { return halo_step(x) + 0.0f; });
  const std::string whole_text = whole.lower(u).compile().as_text();
  unsetenv("TESSEL_OVERLAP_EXCHANGE");
  EXPECT_EQ(whole_text.find("posted"), std::string::npos) << whole_text;
  EXPECT_TRUE(same(whole(u), eager));
}

// A posted sendrecv checks what arrives as the blocking kernel does: a message shorter than
// the receiving array fails the call with the sendrecv's error, and the next exchange works.
TEST(CommP2p, PostedSendrecvOfTheWrongSizeIsAnError) {
  auto f = [](const ts::Array& u) {
    const int64_t sent = rank() % 2 == 0 ? 256 : 128;  // the odd process sends half a row
    const ts::Array row = ts::slice(u, {u.shape()[0] - 1, 0}, {u.shape()[0], sent});
    const ts::Array got = comm::sendrecv(row, ts::zeros({1, 256}, ts::f32), partner(), partner());
    return ts::concatenate({got, u}, 0) * 2.0f;
  };
  const ts::Array u = ts::ones({256, 256}, ts::f32);
  auto jitted = ts::jit(f);
  EXPECT_NE(jitted.lower(u).compile().as_text().find("(comm_sendrecv): posted"), std::string::npos);
  if (rank() % 2 == 0) {
    try {
      jitted(u).block_until_ready();
      ADD_FAILURE() << "expected an error for a message of 128 elements";
    } catch (const ts::Error& e) {
      EXPECT_NE(std::string(e.what()).find("comm.sendrecv: received 128 elements"), std::string::npos) << e.what();
    }
  } else {
    try {
      jitted(u).block_until_ready();  // receives a whole row; its own message is the short one
    } catch (const ts::Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
  comm::barrier();
  EXPECT_TRUE(same(comm::sendrecv(u, u, partner(), partner()), u));
}

TEST(CommP2p, MessageOfTheWrongSizeIsAnError) {
  // Shorter than the receiving array: tessel's check; longer: MPI's truncation error.
  for (int64_t sent : {3, 8}) {
    if (rank() % 2 == 0) {
      comm::send(ts::ones({sent}, ts::f32), partner());
    } else {
      ts::Array y = comm::recv(ts::zeros({5}, ts::f32), {.source = partner()});
      try {
        y.block_until_ready();
        ADD_FAILURE() << "expected an error for a message of " << sent << " elements";
      } catch (const ts::Error& e) {
        EXPECT_NE(std::string(e.what()).find("comm.recv"), std::string::npos) << e.what();
        if (sent < 5) {
          EXPECT_NE(std::string(e.what()).find("received 3 elements"), std::string::npos) << e.what();
        }
      }
    }
  }
  comm::barrier();
}

}  // namespace
