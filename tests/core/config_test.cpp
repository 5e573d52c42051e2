// The configuration table (src/core/config.h): integers are parsed and bounded in one place,
// with errors that name the variable, the value and the range; defaults and the time of
// reading follow the table; docs/configuration.md is the table's text; and no other source
// file reads the environment for a TESSEL_ variable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "core/config.h"
#include "value_error.h"

namespace cfg = tessel::config;
using tessel_test::value_error_of;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Sets (or, with nullopt, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(old_); }

 private:
  void set(const std::optional<std::string>& v) {
    if (v) setenv(name_, v->c_str(), 1);
    else unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST(Config, EveryVariableIsATesselVariableListedOnceInOrder) {
  std::set<std::string> names;
  size_t i = 0;
  for (const cfg::Entry& e : cfg::entries()) {
    EXPECT_EQ(size_t(e.var), i++);
    EXPECT_EQ(std::string(e.name).rfind("TESSEL_", 0), 0u) << e.name;
    EXPECT_TRUE(names.insert(e.name).second) << e.name << " is listed twice";
    EXPECT_NE(std::string(e.doc), "") << e.name;
    if (e.kind == cfg::Kind::kInteger && !e.derived_int) {
      EXPECT_GE(e.default_int, e.min) << e.name;
      EXPECT_LE(e.default_int, e.max) << e.name;
    }
  }
  EXPECT_EQ(i, cfg::kVarCount);
}

TEST(Config, IntegersOutOfRangeNameTheVariableTheValueAndTheRange) {
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kCpuDevices, "0"); }),
            "TESSEL_CPU_DEVICES=0 is out of range; use 1 to 1024, or unset it for 1");
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kCpuDevices, "1025"); }),
            "TESSEL_CPU_DEVICES=1025 is out of range; use 1 to 1024, or unset it for 1");
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kCpuDevices, "8 devices"); }),
            "TESSEL_CPU_DEVICES='8 devices' is not an integer; use 1 to 1024, or unset it for 1");
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kMpiMaxCount, "2147483648"); }),
            "TESSEL_MPI_MAX_COUNT=2147483648 is out of range; use 1 to 2147483647, or unset it for 2147483647");
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kFusionMaxPointCost, "-3"); }),
            "TESSEL_FUSION_MAX_POINT_COST=-3 is out of range; use 0 or more, or unset it for 256");
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kEagerInlineBytes, "lots"); }),
            "TESSEL_EAGER_INLINE_BYTES='lots' is not an integer; use any integer, or unset it for 65536");
  // A computed default is shown with how it is computed.
  const std::string threads = value_error_of([] { cfg::parse_int(cfg::kNumThreads, "0"); });
  EXPECT_EQ(threads.rfind("TESSEL_NUM_THREADS=0 is out of range; use 1 to 4096, or unset it for ", 0), 0u) << threads;
  EXPECT_NE(threads.find("(cores this process may use)"), std::string::npos) << threads;
}

TEST(Config, IntegersInRangeOrClampedAreValues) {
  EXPECT_EQ(cfg::parse_int(cfg::kCpuDevices, "1024"), 1024);
  EXPECT_EQ(cfg::parse_int(cfg::kCpuDevices, "+8"), 8);  // strtol's grammar, as always
  EXPECT_EQ(cfg::parse_int(cfg::kEagerInlineBytes, "-1"), -1);
  // The variables that always took values below their least one as that one.
  EXPECT_EQ(cfg::parse_int(cfg::kStreamMaxQueue, "-5"), 1);
  EXPECT_EQ(cfg::parse_int(cfg::kHostCallbackMaxQueueBytes, "0"), 1);
  EXPECT_EQ(cfg::parse_int(cfg::kControlSpinUs, "-7"), 0);
  EXPECT_EQ(value_error_of([] { cfg::parse_int(cfg::kHostCallbackSpinUs, "-1"); }),
            "TESSEL_HOST_CALLBACK_SPIN_US=-1 is out of range; use 0 to 1000000, or unset it for 20");
}

TEST(Config, VariablesReadAtEachCompilationSeeTheEnvironmentOfThatMoment) {
  {
    ScopedEnv unset("TESSEL_FUSION_MIN_ELEMENTS", std::nullopt);
    EXPECT_EQ(cfg::get_int(cfg::kFusionMinElements), 16384);
  }
  {
    ScopedEnv empty("TESSEL_FUSION_MIN_ELEMENTS", "");  // empty counts as unset
    EXPECT_EQ(cfg::get_int(cfg::kFusionMinElements), 16384);
  }
  {
    ScopedEnv set("TESSEL_FUSION_MIN_ELEMENTS", "5");
    EXPECT_EQ(cfg::get_int(cfg::kFusionMinElements), 5);
  }
  ScopedEnv trace("TESSEL_PIPELINE_TRACE", std::nullopt);
  EXPECT_EQ(cfg::get_path(cfg::kPipelineTrace), "");
  setenv("TESSEL_PIPELINE_TRACE", "/tmp/step.json", 1);
  EXPECT_EQ(cfg::get_path(cfg::kPipelineTrace), "/tmp/step.json");
}

TEST(Config, VariablesReadOnceKeepTheirFirstValue) {
  const std::string first = cfg::get_string(cfg::kCxx);
  ScopedEnv other("TESSEL_CXX", first + "-not-this-one");
  EXPECT_EQ(cfg::get_string(cfg::kCxx), first);
}

TEST(Config, CacheDirDefaultsToXdgCacheHomeThenHome) {
  ScopedEnv dir("TESSEL_CACHE_DIR", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(cfg::get_path(cfg::kCacheDir), "/xdg/tessel/kernels");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(cfg::get_path(cfg::kCacheDir), "/home/someone/.cache/tessel/kernels");
    ScopedEnv set("TESSEL_CACHE_DIR", "/elsewhere");
    EXPECT_EQ(cfg::get_path(cfg::kCacheDir), "/elsewhere");
  }
}

// docs/configuration.md's table is markdown_table(): every variable a row with its default,
// and no row for a variable the table lacks.
TEST(Config, DocsTableIsTheConfigTable) {
  const std::string doc = read_file(std::filesystem::path(TESSEL_SOURCE_DIR) / "docs/configuration.md");
  ASSERT_FALSE(doc.empty()) << "cannot read docs/configuration.md";
  const std::string want = cfg::markdown_table();
  for (const cfg::Entry& e : cfg::entries()) {
    const std::string row = "\n| `" + std::string(e.name) + "` | " + cfg::default_doc(e) + " | ";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/configuration.md has no row" << row.substr(1) << "...";
  }
  std::istringstream lines(doc);
  std::string table;
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `TESSEL_", 0) == 0) {
      const std::string name = line.substr(3, line.find('`', 3) - 3);
      bool known = false;
      for (const cfg::Entry& e : cfg::entries()) known = known || name == e.name;
      EXPECT_TRUE(known) << "docs/configuration.md documents " << name << ", which is not in src/core/config.cpp";
    }
    if (line == "| variable | default | meaning |") in_table = true;
    else if (in_table && line.rfind("|", 0) != 0) in_table = false;
    if (in_table) table += line + "\n";
  }
  EXPECT_TRUE(table == want) << "docs/configuration.md's table differs from src/core/config.cpp's; "
                               "its text should be:\n" << want;
}

// Only core/config.cpp reads the environment (and distributed/mpi.cpp, for the launcher's own
// variables: it asks whether mpirun started the process).
TEST(Config, NoOtherSourceReadsTheEnvironment) {
  const std::filesystem::path src = std::filesystem::path(TESSEL_SOURCE_DIR) / "src";
  size_t files = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = f.path().extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    ++files;
    const std::string rel = std::filesystem::relative(f.path(), src).generic_string();
    const std::string text = read_file(f.path());
    if (rel == "core/config.cpp") continue;
    if (rel == "distributed/mpi.cpp") {
      EXPECT_EQ(text.find("getenv(\"TESSEL_"), std::string::npos) << rel;
      continue;
    }
    EXPECT_EQ(text.find("getenv("), std::string::npos) << rel << " reads the environment: use core/config.h";
  }
  EXPECT_GT(files, 100u);
}
