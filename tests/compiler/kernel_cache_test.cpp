// The kernel cache's trust checks (src/compiler/kernel_cache.cpp, docs/performance.md): a
// cache directory or shared object that another user could have written is refused, and
// nothing is loaded from it. "Another user" is uid 65534 (nobody); chown needs root, which
// the test machine has (the tests skip otherwise).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "compiler/kernel_cache.h"

namespace {

namespace fs = std::filesystem;
using tessel::compiler::codegen_enabled;
using tessel::compiler::codegen_stats;
using tessel::compiler::kernel_key;
using tessel::compiler::load_or_compile;

constexpr uid_t kOtherUser = 65534;

// The honest kernel returns `value`; a planted one returns 666 and, when loaded, leaves a
// marker file behind (its static constructor runs at dlopen).
std::string honest_source(const std::string& test, int value) {
  return "// " + test + "\nextern \"C\" int tessel_probe() { return " + std::to_string(value) + "; }\n";
}

class KernelCacheTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!codegen_enabled()) GTEST_SKIP() << "code generation is off (no compiler)";
    if (geteuid() != 0) GTEST_SKIP() << "making files of another user needs root";
    root_ = fs::temp_directory_path() / ("tessel-cache-trust-" + std::to_string(getpid()) + "-" + name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    marker_ = root_ / "planted-code-ran";
    const char* old = std::getenv("TESSEL_CACHE_DIR");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
  }
  void TearDown() override {
    if (saved_) setenv("TESSEL_CACHE_DIR", saved_->c_str(), 1);
    else unsetenv("TESSEL_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // Compiles a shared object whose tessel_probe returns 666 and whose constructor creates
  // marker_, as `path`.
  void plant(const fs::path& path) {
    const fs::path src = root_ / "planted.cpp";
    std::ofstream(src) << "#include <fstream>\n"
                       << "__attribute__((constructor)) static void mark() { std::ofstream(\"" << marker_.string()
                       << "\") << 1; }\n"
                       << "extern \"C\" int tessel_probe() { return 666; }\n";
    const std::string cmd = "c++ -shared -fPIC -o '" + path.string() + "' '" + src.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  static std::string name() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }

  // Loads `source` through the cache and returns what its tessel_probe returns.
  int probe(const std::string& source) {
    auto lib = load_or_compile(source);
    return reinterpret_cast<int (*)()>(lib->symbol("tessel_probe"))();
  }

  fs::path root_, marker_;
  std::optional<std::string> saved_;
};

TEST_F(KernelCacheTrust, OwnDirectoryIsCreatedPrivateAndReusedAcrossLoads) {
  const fs::path dir = root_ / "cache";
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  const std::string src = honest_source(name(), 7);
  EXPECT_EQ(probe(src), 7);
  struct stat st{};
  ASSERT_EQ(lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(fs::exists(dir / (kernel_key(src) + ".so")));
  tessel::compiler::forget_loaded_libraries();
  const auto before = codegen_stats();
  EXPECT_EQ(probe(src), 7);
  EXPECT_EQ(codegen_stats().disk_loads, before.disk_loads + 1);  // the trusted file was loaded, not rebuilt
  EXPECT_EQ(codegen_stats().compiles, before.compiles);
}

TEST_F(KernelCacheTrust, DirectoryOfAnotherUserIsRefused) {
  const fs::path dir = root_ / "cache";
  fs::create_directories(dir);
  const std::string src = honest_source(name(), 1);
  plant(dir / (kernel_key(src) + ".so"));
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(chown(dir.c_str(), kOtherUser, kOtherUser), 0);
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  const auto before = codegen_stats();
  EXPECT_EQ(probe(src), 1);
  EXPECT_FALSE(fs::exists(marker_)) << "the planted library's code ran";
  EXPECT_EQ(codegen_stats().compiles, before.compiles + 1);  // compiled in a private directory instead
  EXPECT_EQ(codegen_stats().disk_loads, before.disk_loads);
}

TEST_F(KernelCacheTrust, DirectoryWritableByOthersIsRefused) {
  const fs::path dir = root_ / "cache";
  fs::create_directories(dir);
  const std::string src = honest_source(name(), 2);
  plant(dir / (kernel_key(src) + ".so"));
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);  // ours, but anyone could have put the file there
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  EXPECT_EQ(probe(src), 2);
  EXPECT_FALSE(fs::exists(marker_)) << "the planted library's code ran";
}

TEST_F(KernelCacheTrust, DefaultTmpDirectoryMadeByAnotherUserIsRefused) {
  // The demo's case: no HOME or XDG_CACHE_HOME, and <tmp>/tessel-kernels-<uid> made
  // beforehand by nobody with mode 0777.
  const fs::path tmp = root_ / "tmp";
  const fs::path dir = tmp / ("tessel-kernels-" + std::to_string(getuid()));
  fs::create_directories(dir);
  const std::string src = honest_source(name(), 3);
  plant(dir / (kernel_key(src) + ".so"));
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  ASSERT_EQ(chown(dir.c_str(), kOtherUser, kOtherUser), 0);
  const char* keep[] = {"HOME", "XDG_CACHE_HOME", "TMPDIR"};
  std::optional<std::string> saved[3];
  for (int i = 0; i < 3; ++i)
    if (const char* v = std::getenv(keep[i])) saved[i] = v;
  unsetenv("TESSEL_CACHE_DIR");
  unsetenv("HOME");
  unsetenv("XDG_CACHE_HOME");
  setenv("TMPDIR", tmp.c_str(), 1);
  EXPECT_EQ(tessel::compiler::kernel_cache_dir(), dir.string());
  const int got = probe(src);
  for (int i = 0; i < 3; ++i)
    if (saved[i]) setenv(keep[i], saved[i]->c_str(), 1);
    else unsetenv(keep[i]);
  EXPECT_EQ(got, 3);
  EXPECT_FALSE(fs::exists(marker_)) << "the planted library's code ran";
}

TEST_F(KernelCacheTrust, SharedObjectOfAnotherUserIsRefusedAndReplaced) {
  const fs::path dir = root_ / "cache";
  fs::create_directories(dir);
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  const std::string src = honest_source(name(), 4);
  const fs::path so = dir / (kernel_key(src) + ".so");
  plant(so);
  ASSERT_EQ(chown(so.c_str(), kOtherUser, kOtherUser), 0);
  EXPECT_EQ(probe(src), 4);
  EXPECT_FALSE(fs::exists(marker_)) << "the planted library's code ran";
  struct stat st{};
  ASSERT_EQ(lstat(so.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());  // compiled again in its place
}

TEST_F(KernelCacheTrust, SharedObjectWritableByOthersIsRefused) {
  const fs::path dir = root_ / "cache";
  fs::create_directories(dir);
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  const std::string src = honest_source(name(), 5);
  const fs::path so = dir / (kernel_key(src) + ".so");
  plant(so);
  ASSERT_EQ(chmod(so.c_str(), 0666), 0);
  EXPECT_EQ(probe(src), 5);
  EXPECT_FALSE(fs::exists(marker_)) << "the planted library's code ran";
}

TEST_F(KernelCacheTrust, SymbolicLinksAreNeverFollowed) {
  // A link as the shared object, to a library elsewhere.
  const fs::path dir = root_ / "cache";
  fs::create_directories(dir);
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  const fs::path elsewhere = root_ / "elsewhere.so";
  plant(elsewhere);
  setenv("TESSEL_CACHE_DIR", dir.c_str(), 1);
  const std::string src = honest_source(name(), 6);
  const fs::path so = dir / (kernel_key(src) + ".so");
  fs::create_symlink(elsewhere, so);
  EXPECT_EQ(probe(src), 6);
  EXPECT_FALSE(fs::exists(marker_)) << "the linked library's code ran";
  EXPECT_FALSE(fs::is_symlink(so));  // replaced by the compiled file
  EXPECT_TRUE(fs::exists(elsewhere));

  // A link as the cache directory, to a directory holding a planted library.
  const fs::path target = root_ / "target";
  fs::create_directories(target);
  ASSERT_EQ(chmod(target.c_str(), 0700), 0);
  const std::string src2 = honest_source(std::string(name()) + " (directory)", 8);
  plant(target / (kernel_key(src2) + ".so"));
  const fs::path link = root_ / "linked-cache";
  fs::create_directory_symlink(target, link);
  setenv("TESSEL_CACHE_DIR", link.c_str(), 1);
  EXPECT_EQ(probe(src2), 8);
  EXPECT_FALSE(fs::exists(marker_)) << "a library in the linked directory ran";
}

}  // namespace
