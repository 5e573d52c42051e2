// Kernel compile failures are counted and fail the test during which they happen
// (compile_failure_check.h), unless the test announced them: this binary registers the check.
#include <gtest/gtest.h>

#include <string>

#include "compiler/compile_failure_check.h"
#include "compiler/kernel_cache.h"
#include "tessel/error.h"

namespace {

namespace tc = tessel::compiler;

// Registered before main (gtest_main): every test of tessel_tests is checked.
const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new compile_failure_check::CompileFailureCheck);
  return true;
}();

TEST(CodegenFailures, AFailedCompileThrowsWithTheCompilersMessageAndIsCounted) {
  if (!tc::codegen_enabled()) GTEST_SKIP() << "code generation is off";
  ASSERT_TRUE(kRegistered);
  const int64_t before = tc::codegen_stats().failures;
  compile_failure_check::expect_compile_failures(1);
  try {
    tc::load_or_compile("extern \"C\" int tessel_probe() { return undeclared_name_in_probe; }\n");
    FAIL() << "a source that does not compile loaded";
  } catch (const tessel::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("failed"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_name_in_probe"), std::string::npos) << what;
    EXPECT_NE(what.find("source kept at"), std::string::npos) << what;
  }
  EXPECT_EQ(tc::codegen_stats().failures, before + 1);
}

}  // namespace
