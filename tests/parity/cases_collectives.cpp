// tessel's side of tests/parity/cases_collectives.py (include/tessel/shard_map.h and the
// collectives of include/tessel/lax_extra.h): each body runs under shard_map on a mesh of 8
// devices with axis "x", with the generator's in and out specs.
#include <functional>
#include <map>
#include <string>

#include "parity/parity.h"
#include "tessel/lax_extra.h"
#include "tessel/shard_map.h"
#include "tessel/sharding.h"

namespace ts = tessel;
namespace lax = tessel::lax;
using namespace tessel::parity;

namespace {
using Body = std::function<Array(const Array&)>;
struct Mapped {
  Body body;
  const char* in_spec;  // "x": dimension 0 split over the axis; "-": replicated
  const char* out_spec;
};

const ts::Mesh& mesh() {
  static const ts::Mesh m = ts::make_mesh({8}, {"x"});
  return m;
}
ts::PartitionSpec spec(const std::string& s) { return s == "x" ? ts::P("x") : ts::P(); }

const std::vector<std::pair<int64_t, int64_t>> kRing{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 0}};
const std::vector<std::pair<int64_t, int64_t>> kPartial{{0, 3}, {3, 5}, {5, 0}, {6, 7}};
const std::vector<int64_t> kShuffle{3, 1, 4, 0, 7, 5, 2, 6};

/// cases_collectives.py's BODIES.
const std::map<std::string, Mapped>& bodies() {
  static const std::map<std::string, Mapped> m{
      {"psum", {[](const Array& p) { return ts::psum(p, "x"); }, "x", "-"}},
      {"pmean", {[](const Array& p) { return ts::pmean(p, "x"); }, "x", "-"}},
      {"pmax", {[](const Array& p) { return ts::pmax(p, "x"); }, "x", "-"}},
      {"pmin", {[](const Array& p) { return ts::pmin(p, "x"); }, "x", "-"}},
      {"psum_of_sum", {[](const Array& p) { return ts::psum(ts::sum(p * p), "x"); }, "x", "-"}},
      {"all_gather", {[](const Array& p) { return ts::all_gather(p, "x"); }, "x", "x"}},
      {"all_gather_tiled_axis1",
       {[](const Array& p) { return ts::all_gather(p, "x", {.axis = 1, .tiled = true}); }, "x", "x"}},
      {"all_to_all_tiled", {[](const Array& p) { return ts::all_to_all(p, "x", 0, 0, {.tiled = true}); }, "x", "x"}},
      {"all_to_all_untiled",
       {[](const Array& p) { return ts::expand_dims(ts::all_to_all(p[{0}], "x", 1, 0), {0}); }, "x", "x"}},
      {"ppermute_ring", {[](const Array& p) { return ts::ppermute(p, "x", kRing); }, "x", "x"}},
      {"ppermute_partial", {[](const Array& p) { return ts::ppermute(p, "x", kPartial); }, "x", "x"}},
      {"psum_scatter_tiled",
       {[](const Array& p) { return ts::psum_scatter(p, "x", {.scatter_dimension = 0, .tiled = true}); }, "x", "x"}},
      {"psum_scatter_untiled",
       {[](const Array& p) { return ts::expand_dims(ts::psum_scatter(p[{0}], "x"), {0}); }, "x", "x"}},
      {"axis_index",
       {[](const Array& p) {
          Array i = ts::axis_index("x").astype(p.dtype());
          return p * i + i;
        },
        "x", "x"}},
      {"axis_size", {[](const Array& p) { return p * Array(int(lax::axis_size("x"))); }, "x", "x"}},
      {"pshuffle", {[](const Array& p) { return lax::pshuffle(p, "x", kShuffle); }, "x", "x"}},
      {"pswapaxes", {[](const Array& p) { return lax::pswapaxes(p, "x", 1); }, "x", "x"}},
      {"pcast", {[](const Array& p) { return lax::pcast(p, "x", "varying") * 2.0; }, "-", "x"}},
  };
  return m;
}

Out run_body(const In& x, const Params& p) {
  const Mapped& m = bodies().at(p.s("body"));
  return out(ts::shard_map(m.body, mesh(), {spec(m.in_spec)}, {spec(m.out_spec)})(x[0]));
}
}  // namespace

TESSEL_PARITY_CASES(collectives) {
  for (const char* key : {"psum", "pmean", "pmax", "pmin", "all_gather", "all_to_all", "ppermute", "psum_scatter",
                          "axis_index", "lax.axis_size", "lax.pshuffle", "lax.pswapaxes", "lax.pcast"})
    reg(key, run_body);
  reg("with_sharding_constraint", [](const In& x, const Params& p) {
    auto f = ts::jit([&p](const Array& u) {
      return ts::with_sharding_constraint(ts::sin(u), ts::NamedSharding(mesh(), spec(p.s("spec_")))) * 2.0;
    });
    return out(f(x[0]));
  });
}
