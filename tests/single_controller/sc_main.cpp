// main of the single-controller tests: run under `mpirun -np 1+W`. Rank 0 is the driver and
// runs every test; ranks 1..W serve inside distributed::initialize and never reach
// RUN_ALL_TESTS (they exit when the driver ends).
#include <gtest/gtest.h>

#include <cstdio>

#include "tessel/distributed.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessel::distributed::initialize({.mode = tessel::distributed::Mode::single_controller});
  int rc = RUN_ALL_TESTS();
  if (rc != 0) std::fprintf(stderr, "driver: tests failed\n");
  return rc;
}
