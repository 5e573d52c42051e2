// main of the multi-process tests: every rank runs every test (collectives need all of
// them); rank 0 prints the progress, the other ranks print only their failures (prefixed
// by the rank), and any rank's failure fails the job.
#include <gtest/gtest.h>

#include <cstdio>

#include "compiler/compile_failure_check.h"

#include "tessel/device.h"
#include "tessel/distributed.h"

namespace {

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessel::distributed::initialize();
  const int rank = tessel::process_index();
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  // A kernel that fails to compile fails the test (jit would silently run it unfused).
  ::testing::UnitTest::GetInstance()->listeners().Append(new compile_failure_check::CompileFailureCheck);
  int rc = RUN_ALL_TESTS();
  if (rc != 0) std::fprintf(stderr, "rank %d: tests failed\n", rank);
  return rc;
}
