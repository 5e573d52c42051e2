// Colocated calls in a multi-controller job (every process runs main): each process runs the
// function on its own pieces, on its own host.
#include <gtest/gtest.h>

#include "tessel/tessel.h"

namespace ts = tessel;
namespace co = tessel::colocated;

namespace {

TEST(ColocatedMultiController, EachProcessRunsOnItsOwnPieces) {
  std::vector<ts::Device> all = ts::devices();
  ts::Mesh mesh(all, {int64_t(all.size())}, {"x"});
  ts::NamedSharding split(mesh, ts::P("x"));
  ts::Array x = ts::device_put(ts::zeros({int64_t(all.size())}, ts::int32), split);
  std::atomic<int> calls{0};
  auto where = co::colocated([&calls](const ts::Array& a) {
    ++calls;
    return a + ts::process_index();
  });
  ts::Array y = where(x);
  EXPECT_EQ(calls, 1) << "one call per process, on its local host";
  EXPECT_EQ(y.sharding(), split);
  for (const ts::Shard& s : y.addressable_shards()) {
    EXPECT_EQ(s.device.process_index(), ts::process_index());
    EXPECT_EQ(s.data.to_vector<int>(), std::vector<int>(size_t(s.data.size()), ts::process_index()));
  }
  // Asynchronous calls too.
  auto async = where.specialize({.out_specs_fn = [](const co::Specs& in) { return in; }});
  EXPECT_EQ(async(y).addressable_shards().at(0).data.to_vector<int>()[0], 2 * ts::process_index());
}

}  // namespace
