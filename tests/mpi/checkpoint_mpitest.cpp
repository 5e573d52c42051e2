// ts::checkpoint under mpirun: every process writes only its pieces (collective MPI-IO) and
// reads only its blocks; round trips of every dtype bit for bit between row, column,
// replicated and single-device layouts over the processes, nested trees, the manager and
// asynchronous saves. Saving on 2 processes and restoring on 4 (and the reverse):
// tests/mpi/programs/checkpoint_job.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/checkpoint_test_util.h"
#include "tessel/checkpoint.h"
#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ck = tessel::checkpoints;
namespace fs = std::filesystem;
using namespace checkpoint_test;  // NOLINT: the test helpers

namespace {

// A directory every process names alike (one per job size: the np2 and np4 jobs may run at once).
std::string job_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tessel_ckpt_mpi_np" + std::to_string(ts::process_count()) + "_" + name);
  if (ts::process_index() == 0) {
    fs::remove_all(d);
    fs::create_directories(d);
  }
  ts::comm::barrier();
  return d.string();
}

std::vector<ts::Sharding> layouts() {
  ts::Mesh m = ts::make_mesh({int64_t(ts::device_count())}, {"x"});
  std::vector<ts::Sharding> out{ts::NamedSharding(m, ts::P("x", ts::none)), ts::NamedSharding(m, ts::P(ts::none, "x")),
                                ts::NamedSharding(m, ts::P())};
  if (ts::device_count() == 4) out.push_back(ts::NamedSharding(ts::make_mesh({2, 2}, {"a", "b"}), ts::P("b", "a")));
  return out;
}

TEST(CheckpointMpi, EveryDtypeRoundTripsBetweenLayoutsOverProcesses) {
  const std::string dir = job_dir("dtypes");
  auto ls = layouts();
  for (size_t si = 0; si < ls.size(); ++si) {
    const ts::Sharding& save_as = ls[si];
    const ts::Sharding& restore_as = ls[(si + 1) % ls.size()];
    auto [tree, target, host] = dtype_trees({10, 6}, save_as, restore_as, 100);  // uneven over 4 processes
    const std::string path = dir + "/layout" + std::to_string(si) + ".h5";
    ck::save(path, tree, {.step = int64_t(si)});
    auto back = ck::restore(path, target);
    for (auto& [k, h] : host) {
      EXPECT_EQ(bits_difference(back.at(k), h, restore_as), "")
          << k << " saved " << save_as.to_string() << " restored " << restore_as.to_string();
    }
    EXPECT_EQ(ck::read_metadata(path).step, int64_t(si));
  }
}

TEST(CheckpointMpi, ManagerAndAsynchronousSavesAcrossProcesses) {
  const std::string dir = job_dir("manager");
  ts::Sharding rows = layouts()[0], cols = layouts()[1];
  ck::CheckpointManager mgr(dir, {.max_to_keep = 2, .async = true});
  std::vector<HostArray> hs;
  for (int64_t step = 0; step < 4; ++step) {
    hs.push_back(pattern({8, 8}, ts::f32, uint64_t(step)));
    std::tuple<ts::Array, std::vector<ts::Array>> tree{place(hs.back(), rows), {place(hs.back(), cols)}};
    EXPECT_TRUE(mgr.save(step, tree));
  }
  mgr.wait_until_finished();
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{2, 3}));
  std::tuple<ts::Array, std::vector<ts::Array>> target{place(hs[3], cols), {place(hs[3], rows)}};
  auto back = mgr.restore(3, target);
  EXPECT_EQ(bits_difference(std::get<0>(back), hs[3], cols), "");
  EXPECT_EQ(bits_difference(std::get<1>(back)[0], hs[3], rows), "");
}

TEST(CheckpointMpi, DamageIsAnErrorOnEveryProcess) {
  const std::string dir = job_dir("damage");
  ts::Sharding rows = layouts()[0];
  HostArray h = pattern({8, 4}, ts::f64, 1);
  ck::save(dir + "/a.h5", std::vector<ts::Array>{place(h, rows)});
  if (ts::process_index() == 0) fs::resize_file(dir + "/a.h5", fs::file_size(dir + "/a.h5") - 100);
  ts::comm::barrier();
  EXPECT_THROW(ck::restore(dir + "/a.h5", std::vector<ts::Array>{place(h, rows)}), ts::Error);
}

}  // namespace
