#pragma once
// Helpers shared by the ts::comm collectives tests (comm_collectives*_mpitest.cpp).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace comm = tessel::comm;

namespace comm_test {

inline int rank() { return comm::world().rank(); }
inline int nproc() { return comm::world().size(); }

// Rows process p contributes to allgatherv/gatherv: 1, 2, 3, 1, ...
inline int64_t vcount(int p) { return p % 3 + 1; }
inline std::vector<int64_t> vcounts() {
  std::vector<int64_t> c;
  for (int p = 0; p < nproc(); ++p) c.push_back(vcount(p));
  return c;
}

// Rows process p sends to process j in the alltoallv tests (some are 0).
inline int64_t a2a_count(int p, int j) { return (p + 2 * j) % 3; }
inline std::vector<int64_t> send_counts() {
  std::vector<int64_t> c;
  for (int j = 0; j < nproc(); ++j) c.push_back(a2a_count(rank(), j));
  return c;
}
inline std::vector<int64_t> recv_counts() {
  std::vector<int64_t> c;
  for (int j = 0; j < nproc(); ++j) c.push_back(a2a_count(j, rank()));
  return c;
}
inline int64_t sum_of(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t e : v) s += e;
  return s;
}

// f() throws E naming every piece of `parts` (eagerly: before any MPI call).
template <class E> void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "expected an error naming " << parts[0];
  } catch (const E& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    FAIL() << "wrong error type: " << e.what();
  }
}

}  // namespace comm_test
