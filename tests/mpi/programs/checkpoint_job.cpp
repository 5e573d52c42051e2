// A checkpoint saved by one job and restored by another of a different size
// (tests/mpi/CMakeLists.txt): `checkpoint_job save DIR rows|cols` saves a tree of every
// dtype laid out over this job's devices; `checkpoint_job restore DIR rows|cols` restores it
// in the given layout and checks every piece bit for bit. Prints "checkpoint_job: <mode> ok".
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "checkpoint/checkpoint_test_util.h"
#include "tessel/checkpoint.h"
#include "tessel/distributed.h"
#include "tessel/tessel.h"

namespace ts = tessel;
namespace ck = tessel::checkpoints;
using checkpoint_test::HostArray;

int main(int argc, char** argv) {
  ts::distributed::initialize();
  if (argc != 4 || (std::strcmp(argv[1], "save") != 0 && std::strcmp(argv[1], "restore") != 0) ||
      (std::strcmp(argv[3], "rows") != 0 && std::strcmp(argv[3], "cols") != 0)) {
    std::fprintf(stderr, "usage: checkpoint_job save|restore DIR rows|cols\n");
    return 2;
  }
  const bool save = std::strcmp(argv[1], "save") == 0;
  const std::string path = std::string(argv[2]) + "/job.h5";
  ts::Mesh mesh = ts::make_mesh({int64_t(ts::device_count())}, {"x"});
  ts::Sharding layout = std::strcmp(argv[3], "rows") == 0 ? ts::Sharding(ts::NamedSharding(mesh, ts::P("x", ts::none)))
                                                          : ts::Sharding(ts::NamedSharding(mesh, ts::P(ts::none, "x")));
  std::map<std::string, ts::Array> tree;
  std::map<std::string, HostArray> host;
  for (ts::DType d : checkpoint_test::all_dtypes()) {
    host[ts::dtype_name(d)] = checkpoint_test::pattern({12, 20}, d, 7 + uint64_t(d));
    tree[ts::dtype_name(d)] = checkpoint_test::place(host[ts::dtype_name(d)], layout);
  }
  int bad = 0;
  if (save) {
    ck::save(path, tree, {.step = 5, .overwrite = true});
  } else {
    auto back = ck::restore(path, tree);
    for (auto& [k, h] : host) {
      std::string diff = checkpoint_test::bits_difference(back.at(k), h, layout);
      if (!diff.empty()) std::fprintf(stderr, "checkpoint_job: rank %d: %s: %s\n", ts::process_index(), k.c_str(), diff.c_str()), ++bad;
    }
  }
  if (bad) return 1;
  if (ts::process_index() == 0) std::printf("checkpoint_job: %s ok\n", argv[1]);
  return 0;
}
