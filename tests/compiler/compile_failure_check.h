#pragma once
// A generated kernel that fails to compile makes jit warn and run the program's unfused
// kernels: right values, but slow, and easy to miss in a test. The test binaries register
// CompileFailureCheck, which fails every test during which the kernel compiler failed
// (compiler::codegen_stats().failures) more often than the test announced with
// expect_compile_failures.
#include <gtest/gtest.h>

#include <cstdint>

#include "compiler/kernel_cache.h"

namespace compile_failure_check {

/// Kernel compile failures the running test provokes on purpose; reset before each test.
inline int64_t expected_failures = 0;
/// Announces that the running test makes the kernel compiler fail `n` times.
inline void expect_compile_failures(int64_t n) { expected_failures = n; }

/// The listener: appended to gtest's listeners (after the result printer, whose end events
/// then run after this one's, so the failure is reported with the test).
class CompileFailureCheck : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    expected_failures = 0;
    before_ = tessel::compiler::codegen_stats().failures;
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    EXPECT_EQ(tessel::compiler::codegen_stats().failures - before_, expected_failures)
        << "generated kernels failed to compile during this test, so jit ran them unfused; the compiler's "
           "message and the kept source are in the warning above";
  }
  int64_t before_ = 0;
};

}  // namespace compile_failure_check
