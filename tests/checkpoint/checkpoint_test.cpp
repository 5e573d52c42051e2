// ts::checkpoint on one process: bit-for-bit round trips of every dtype and of nested trees
// on 1, 2 and 4 virtual devices with any sharding at save and restore, metadata, mismatch
// errors naming the leaf, the manager, atomic commits, asynchronous saves, and damaged files
// (truncations and byte flips) giving errors. Multi-process runs: tests/mpi/checkpoint_mpitest.cpp.
#include "tessel/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "checkpoint/checkpoint_test_util.h"
#include "checkpoint/crc32c.h"
#include "expect_error.h"
#include "tessel/device.h"
#include "tessel/error.h"
#include "tessel/ops.h"
#include "tessel/sharding.h"

namespace ts = tessel;
namespace ck = tessel::checkpoints;
namespace fs = std::filesystem;
using namespace checkpoint_test;  // NOLINT: the test helpers
using tessel_test::expect_error;

namespace {

void expect_bits(const ts::Array& a, const HostArray& h, const ts::Sharding& want, const std::string& what) {
  EXPECT_EQ(bits_difference(a, h, want), "") << what;
}

class CheckpointIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessel_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// The layouts of a 2-D array over the first n devices: whole on one device, rows split,
// columns split, replicated, and (n = 4) a 2x2 grid.
std::vector<ts::Sharding> layouts(int n) {
  std::vector<ts::Sharding> out{ts::SingleDeviceSharding(ts::devices()[0])};
  ts::Mesh m = ts::make_mesh({n}, {"x"});
  out.push_back(ts::NamedSharding(m, ts::P("x", ts::none)));
  out.push_back(ts::NamedSharding(m, ts::P(ts::none, "x")));
  out.push_back(ts::NamedSharding(m, ts::P()));
  if (n == 4) out.push_back(ts::NamedSharding(ts::make_mesh({2, 2}, {"a", "b"}), ts::P("a", "b")));
  return out;
}

TEST_F(CheckpointIo, EveryDtypeRoundTripsBitForBitOnAnyLayout) {
  ASSERT_GE(ts::device_count(), 4) << "run with TESSEL_CPU_DEVICES=4 or more";
  for (int n : {1, 2, 4}) {
    std::vector<ts::Sharding> ls = layouts(n);
    for (size_t si = 0; si < ls.size(); ++si) {
      const ts::Sharding& save_as = ls[si];
      const ts::Sharding& restore_as = ls[(si + 1) % ls.size()];
      // 6 rows over 4 devices: pieces of 2, 2, 2, 0
      auto [tree, target, host] = dtype_trees({6, 4}, save_as, restore_as, 1);
      const std::string path = file("dtypes_" + std::to_string(n) + "_" + std::to_string(si) + ".h5");
      ck::save(path, tree);
      auto back = ck::restore(path, target);
      auto same = ck::restore(path, tree);
      for (auto& [k, h] : host) {
        expect_bits(back.at(k), h, restore_as, k + " saved " + save_as.to_string() + " restored " + restore_as.to_string());
        expect_bits(same.at(k), h, save_as, k + " on " + save_as.to_string());
      }
    }
  }
}

TEST_F(CheckpointIo, ScalarsEmptyArraysAndHigherRanks) {
  ts::Mesh m = ts::make_mesh({2}, {"x"});
  std::vector<HostArray> hs{pattern({}, ts::f64, 3), pattern({0, 5}, ts::f32, 4), pattern({2, 3, 4, 2}, ts::bf16, 5),
                            pattern({7}, ts::c128, 6)};
  std::vector<ts::Sharding> shs{ts::SingleDeviceSharding(ts::devices()[1]), ts::NamedSharding(m, ts::P(ts::none, "x")),
                                ts::NamedSharding(m, ts::P(ts::none, ts::none, "x")), ts::NamedSharding(m, ts::P("x"))};
  std::vector<ts::Array> tree;
  for (size_t i = 0; i < hs.size(); ++i) tree.push_back(place(hs[i], shs[i]));
  ck::save(file("odd.h5"), tree);
  auto back = ck::restore(file("odd.h5"), tree);
  for (size_t i = 0; i < hs.size(); ++i) expect_bits(back[i], hs[i], shs[i], "leaf " + std::to_string(i));
}

using Nested = std::tuple<std::map<std::string, std::vector<ts::Array>>, std::pair<ts::Array, int>, std::array<ts::Array, 2>>;

TEST_F(CheckpointIo, NestedTreesKeepPathsAndRestoreWithoutATarget) {
  Nested tree;
  std::vector<HostArray> hs;
  for (int i = 0; i < 6; ++i) hs.push_back(pattern({3, i + 1}, i % 2 ? ts::f16 : ts::i64, 10 + uint64_t(i)));
  const ts::Sharding one = ts::SingleDeviceSharding(ts::devices()[0]);
  std::get<0>(tree)["params/w"] = {place(hs[0], one), place(hs[1], one)};
  std::get<0>(tree)["."] = {place(hs[2], one)};
  std::get<1>(tree) = {place(hs[3], one), 7};
  std::get<2>(tree) = {place(hs[4], one), place(hs[5], one)};
  ck::save(file("nested.h5"), tree, {.step = 42, .metadata_json = R"({"lr": 0.1})"});

  ck::Metadata m = ck::read_metadata(file("nested.h5"));
  EXPECT_EQ(m.step, 42);
  EXPECT_EQ(m.metadata_json, R"({"lr": 0.1})");
  EXPECT_EQ(m.tessel_version, "0.1.0");
  EXPECT_EQ(m.tree_structure, ts::tree_structure(tree));
  EXPECT_EQ(m.leaf_paths, (std::vector<std::string>{"/0/%2E/0", "/0/params%2Fw/0", "/0/params%2Fw/1", "/1/0", "/2/0", "/2/1"}));
  ASSERT_EQ(m.leaves.size(), 6u);
  EXPECT_EQ(m.leaves[1].shape, (ts::Shape{3, 1}));

  Nested back = ck::restore<Nested>(file("nested.h5"));
  expect_bits(std::get<0>(back).at("params/w")[0], hs[0], one, "params/w[0]");
  expect_bits(std::get<0>(back).at("params/w")[1], hs[1], one, "params/w[1]");
  expect_bits(std::get<0>(back).at(".")[0], hs[2], one, ".[0]");
  expect_bits(std::get<1>(back).first, hs[3], one, "pair.first");
  expect_bits(std::get<2>(back)[1], hs[5], one, "array[1]");
  EXPECT_EQ(ck::leaf_paths("*"), std::vector<std::string>{"/value"});
}

TEST_F(CheckpointIo, MismatchedTargetsNameTheLeafAndBothValues) {
  std::map<std::string, ts::Array> tree{{"a", ts::zeros({2, 3}, ts::f32)}, {"b", ts::zeros({4}, ts::i32)}};
  ck::save(file("m.h5"), tree);
  auto shape = tree;
  shape["a"] = ts::zeros({3, 2}, ts::f32);
  expect_error<ts::ShapeError>([&] { ck::restore(file("m.h5"), shape); }, {"leaf /a", "(2, 3)", "(3, 2)"});
  auto dtype = tree;
  dtype["b"] = ts::zeros({4}, ts::f64);
  expect_error<ts::DTypeError>([&] { ck::restore(file("m.h5"), dtype); }, {"leaf /b", "int32", "float64"});
  std::map<std::string, ts::Array> other{{"a", ts::zeros({2, 3}, ts::f32)}, {"c", ts::zeros({4}, ts::i32)}};
  expect_error<ts::ValueError>([&] { ck::restore(file("m.h5"), other); }, {"tree structure", "/c", "/b"});
  expect_error<ts::ValueError>([&] { ck::restore(file("missing.h5"), tree); }, {"missing.h5", "cannot open"});
  expect_error<ts::ValueError>([&] { ck::save(file("m.h5"), tree); }, {"exists", "overwrite"});
  ck::save(file("m.h5"), tree, {.overwrite = true});
}

TEST_F(CheckpointIo, ManagerKeepsTheLastStepsAndCleansUpUnfinishedSaves) {
  ck::CheckpointManager mgr(file("run"), {.max_to_keep = 2, .save_interval_steps = 5});
  EXPECT_EQ(mgr.latest_step(), -1);
  std::ofstream(file("run/ckpt_3.h5.tmp")) << "a crashed save";
  std::vector<HostArray> hs;
  for (int64_t step = 0; step <= 20; ++step) {
    HostArray h = pattern({4}, ts::f32, uint64_t(step));
    bool saved = mgr.save(step, std::vector<ts::Array>{place(h, ts::SingleDeviceSharding(ts::devices()[0]))});
    EXPECT_EQ(saved, step % 5 == 0) << step;
    hs.push_back(h);
  }
  EXPECT_FALSE(fs::exists(file("run/ckpt_3.h5.tmp")));
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{15, 20}));
  EXPECT_EQ(mgr.latest_step(), 20);
  auto back = mgr.restore(15, std::vector<ts::Array>{ts::zeros({4}, ts::f32)});
  expect_bits(back[0], hs[15], ts::SingleDeviceSharding(ts::devices()[0]), "step 15");
  EXPECT_EQ(ck::read_metadata(mgr.path(20)).step, 20);
  expect_error<ts::ValueError>([&] { mgr.restore(5, back); }, {"no step 5", "15, 20"});
  EXPECT_FALSE(mgr.save(20, back)) << "a saved step is not saved again";
  expect_error<ts::ValueError>([&] { ck::CheckpointManager(file("x"), {.max_to_keep = -1}); }, {"max_to_keep"});
}

TEST_F(CheckpointIo, AsynchronousSavesWriteInTheBackgroundAndReportErrorsOnTheNextCall) {
  ts::Mesh m = ts::make_mesh({2}, {"x"});
  HostArray h = pattern({64, 8}, ts::f32, 9);
  ts::Sharding rows = ts::NamedSharding(m, ts::P("x"));
  ts::Array x = place(h, rows);
  ck::save(file("async.h5"), std::vector<ts::Array>{x}, {.async = true});
  x = ts::Array();  // the save holds the pieces
  ck::wait_until_finished();
  expect_bits(ck::restore(file("async.h5"), std::vector<ts::Array>{place(h, rows)})[0], h, rows, "async");

  ck::CheckpointManager mgr(file("amgr"), {.async = true});
  for (int64_t s = 0; s < 3; ++s) mgr.save(s, std::vector<ts::Array>{place(h, rows)});
  EXPECT_EQ(mgr.restore(2, std::vector<ts::Array>{place(h, rows)})[0].shape(), (ts::Shape{64, 8}));
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{0, 1, 2}));

  // A directory that does not exist: the background write fails, the next call says so.
  ck::save(file("nowhere/a.h5"), std::vector<ts::Array>{place(h, rows)}, {.async = true});
  expect_error<ts::Error>([&] { ck::wait_until_finished(); }, {"nowhere/a.h5"});
  ck::wait_until_finished();  // reported once
}

TEST_F(CheckpointIo, AFailedSaveKeepsThePreviousCheckpoint) {
  HostArray h = pattern({5}, ts::i32, 1);
  ts::Sharding one = ts::SingleDeviceSharding(ts::devices()[0]);
  ck::save(file("keep.h5"), std::vector<ts::Array>{place(h, one)});
  // The temporary name is a directory: creating the file fails after the old one was kept.
  fs::create_directories(file("keep.h5.tmp/x"));
  EXPECT_THROW(ck::save(file("keep.h5"), std::vector<ts::Array>{ts::zeros({5}, ts::i32)}, {.overwrite = true}), ts::Error);
  fs::remove_all(file("keep.h5.tmp"));
  expect_bits(ck::restore(file("keep.h5"), std::vector<ts::Array>{place(h, one)})[0], h, one, "kept");
}

// Mutation fuzzing of the reader: truncations and byte flips of a small checkpoint. Every
// change is a tessel::Error from restore and from verify (the file's checksum is checked
// before HDF5 parses it), never a crash. Reproducible by seed; TESSEL_CHECKPOINT_FUZZ=n runs more.
// The file checksum: CRC-32C's check value, the hardware path (three interleaved streams
// joined by multiplication modulo P) equal to the table on lengths around its block size,
// and pieces combined as the processes' slices are.
TEST(CheckpointCrc32c, KnownValuesStreamsAndCombine) {
  namespace crc = ck::crc32c;
  EXPECT_EQ(crc::extend(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc::extend(0, "", 0), 0u);
  // 32 bytes of zeros and of 0xFF: RFC 3720's iSCSI test vectors.
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(crc::extend(0, zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc::extend(0, ones.data(), 32), 0x62A8AB43u);
  std::mt19937_64 rng(7);
  std::vector<unsigned char> data(3 * 8192 * 2 + 1000);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  const uint32_t whole = crc::extend(0, data.data(), data.size());
  uint32_t bytewise = 0;  // one byte at a time never takes the interleaved path
  for (unsigned char b : data) bytewise = crc::extend(bytewise, &b, 1);
  EXPECT_EQ(whole, bytewise);
  for (size_t cut : {size_t(0), size_t(1), size_t(8191), size_t(3 * 8192), data.size() - 3, data.size()}) {
    const uint32_t a = crc::extend(0, data.data(), cut), b = crc::extend(0, data.data() + cut, data.size() - cut);
    EXPECT_EQ(crc::extend(a, data.data() + cut, data.size() - cut), whole) << cut;
    EXPECT_EQ(crc::combine(a, b, data.size() - cut), whole) << cut;
  }
}

TEST_F(CheckpointIo, DamagedFilesGiveErrorsNeverCrashes) {
  std::map<std::string, ts::Array> tree{{"w", ts::arange(12, ts::f32).reshape({3, 4})}, {"b", ts::ones({3}, ts::bf16)}};
  ck::save(file("good.h5"), tree, {.step = 3, .metadata_json = "{}"});
  ck::verify(file("good.h5"));
  std::ifstream in(file("good.h5"), std::ios::binary);
  std::vector<char> good((std::istreambuf_iterator<char>(in)), {});
  const char* env = std::getenv("TESSEL_CHECKPOINT_FUZZ");
  const int runs = env ? std::atoi(env) : 300;
  std::mt19937_64 rng(1);
  for (int run = 0; run < runs; ++run) {
    std::vector<char> bad = good;
    if (run % 3 == 0) {
      bad.resize(rng() % bad.size());
    } else {
      for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) bad[rng() % bad.size()] ^= char(1 + rng() % 255);
    }
    if (bad == good) continue;
    const std::string path = file("bad.h5");
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bad.data(), std::streamsize(bad.size()));
    EXPECT_THROW(ck::restore(path, tree), ts::Error) << "run " << run << " (seed 1) was not found by restore";
    EXPECT_THROW(ck::verify(path), ts::Error) << "run " << run << " (seed 1) was not found by verify";
  }
  // Without the checksum, damage HDF5's own checksums miss (array bytes) goes unseen, and
  // verify says the file cannot be verified.
  ck::save(file("unchecked.h5"), tree, {.checksum = false});
  EXPECT_NO_THROW(ck::restore(file("unchecked.h5"), tree));
  expect_error<ts::Error>([&] { ck::verify(file("unchecked.h5")); }, {"without a checksum"});
}

// h5py (TESSEL_H5PY_PYTHON names a Python with h5py and NumPy, e.g. /work/venv-jax/bin/python)
// reads every array of a checkpoint equal to the saved bytes: integers, bool, float16 and
// complex as the same values; bfloat16 through HDF5's conversion to float32.
TEST_F(CheckpointIo, H5pyReadsEveryArray) {
  const char* python = std::getenv("TESSEL_H5PY_PYTHON");
  if (!python) GTEST_SKIP() << "set TESSEL_H5PY_PYTHON to a Python with h5py";
  std::map<std::string, ts::Array> tree;
  uint64_t seed = 50;
  for (ts::DType d : all_dtypes()) {
    HostArray h = pattern({5, 3}, d, seed++);
    if (d == ts::bf16 || d == ts::f16) {  // finite values: HDF5's float conversion maps NaN payloads
      for (size_t i = 1; i < h.bytes.size(); i += 2) h.bytes[i] &= std::byte(0x3f);
    }
    tree[ts::dtype_name(d)] = place(h, ts::SingleDeviceSharding(ts::devices()[0]));
    std::ofstream(file(std::string(ts::dtype_name(d)) + ".bin"), std::ios::binary)
        .write(reinterpret_cast<const char*>(h.bytes.data()), std::streamsize(h.bytes.size()));
  }
  ck::save(file("h5py.h5"), tree);
  const std::string cmd = std::string(python) + " " TESSEL_SOURCE_DIR "/tests/checkpoint/h5py_check.py " + file("h5py.h5") +
                          " " + dir_.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("h5py_check: 15 arrays equal"), std::string::npos) << out;
}

}  // namespace
