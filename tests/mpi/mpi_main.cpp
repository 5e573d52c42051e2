// main of the multi-process tests: every rank runs every test (collectives need all of
// them); only rank 0 prints the progress, any rank's failure fails the job.
#include <gtest/gtest.h>

#include <cstdio>

#include "tessel/distributed.h"
#include "tessel/device.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessel::distributed::initialize();
  if (tessel::process_index() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  if (rc != 0) std::fprintf(stderr, "rank %d: tests failed\n", tessel::process_index());
  return rc;
}
