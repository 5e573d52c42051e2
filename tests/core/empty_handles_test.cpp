// Empty and raw handles: every public accessor of a default-constructed (or null-made)
// handle throws a tessel::Error naming the mistake, never crashes; every pointer argument
// is checked. Only valid(), comparison and printing (to_string / <<) describe an empty
// Array, Device, Mesh, Sharding or Program without throwing.
//
// The handle types of include/tessel/*.h: Array (ArrayRef is the same type), Device, Mesh,
// Sharding (NamedSharding and SingleDeviceSharding have no empty state), Program, Lowered
// and Compiled (made from a null jit entry), colocated::Function and colocated::Object
// (made from a null state), the Shard struct (an empty Device and Array). comm::Comm,
// Jitted, ShardMapped, CustomPartitioned, Pipelined and RemoteMpmdMesh have no empty state:
// their constructors make a valid object.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tessel/colocated.h"
#include "tessel/comm.h"
#include "tessel/tessel.h"

namespace ts = tessel;

namespace {

// Runs `f` and requires a tessel::Error whose message names `what`.
void expect_error(const std::string& what, const std::function<void()>& f) {
  SCOPED_TRACE(what);
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const ts::Error& e) {
    EXPECT_NE(std::string(e.what()), "") << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw a " << typeid(e).name() << " instead of a tessel::Error: " << e.what();
  }
}

}  // namespace

TEST(EmptyHandles, DeviceAccessorsThrow) {
  const ts::Device d;
  EXPECT_FALSE(d.valid());
  expect_error("Device::id", [&] { (void)d.id(); });
  expect_error("Device::process_index", [&] { (void)d.process_index(); });
  expect_error("Device::platform", [&] { (void)d.platform(); });
  EXPECT_EQ(d.to_string(), "<no device>");
  EXPECT_EQ(d, ts::Device(nullptr));
  try {
    (void)d.id();
  } catch (const ts::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Device::id: this Device is empty"), std::string::npos) << e.what();
  }
}

TEST(EmptyHandles, ArrayAccessorsThrow) {
  const ts::Array a;
  EXPECT_FALSE(a.valid());
  expect_error("shape", [&] { (void)a.shape(); });
  expect_error("dtype", [&] { (void)a.dtype(); });
  expect_error("weak_type", [&] { (void)a.weak_type(); });
  expect_error("aval", [&] { (void)a.aval(); });
  expect_error("aval_ref", [&] { (void)a.aval_ref(); });
  expect_error("ndim", [&] { (void)a.ndim(); });
  expect_error("size", [&] { (void)a.size(); });
  expect_error("dim", [&] { (void)a.dim(0); });
  expect_error("nbytes", [&] { (void)a.nbytes(); });
  expect_error("is_tracer", [&] { (void)a.is_tracer(); });
  expect_error("device", [&] { (void)a.device(); });
  expect_error("sharding", [&] { (void)a.sharding(); });
  expect_error("devices", [&] { (void)a.devices(); });
  expect_error("addressable_shards", [&] { (void)a.addressable_shards(); });
  expect_error("block_until_ready", [&] { (void)a.block_until_ready(); });
  expect_error("is_ready", [&] { (void)a.is_ready(); });
  expect_error("to_vector", [&] { (void)a.to_vector<float>(); });
  expect_error("item", [&] { (void)a.item<float>(); });
  expect_error("scalar", [&] { (void)a.scalar(); });
  EXPECT_EQ(a.to_string(), "Array(<empty>)");
  expect_error("operator[]", [&] { (void)a[{0}]; });
  expect_error("index", [&] { (void)a.index({ts::Slice(0, 1)}); });
  expect_error("at().get", [&] { (void)a.at({0}).get(); });
  expect_error("at().set", [&] { (void)a.at({0}).set(ts::Array(1.0f)); });
  expect_error("at().add", [&] { (void)a.at({0}).add(ts::Array(1.0f)); });
  expect_error("astype", [&] { (void)a.astype(ts::f32); });
  expect_error("reshape", [&] { (void)a.reshape({1}); });
  expect_error("T", [&] { (void)a.T(); });
  expect_error("sharding_of", [&] { (void)ts::sharding_of(a); });
  // An empty Array used as an index array, or as an operand.
  const ts::Array x = ts::arange(4, ts::f32);
  expect_error("index by an empty Array", [&] { (void)x[{a}]; });
  expect_error("at(empty).set", [&] { (void)x.at({a}).set(ts::Array(1.0f)); });
  expect_error("sin", [&] { (void)ts::sin(a); });
  expect_error("add", [&] { (void)(x + a); });
}

TEST(EmptyHandles, MeshAccessorsThrow) {
  const ts::Mesh m;
  EXPECT_FALSE(m.valid());
  expect_error("Mesh::shape", [&] { (void)m.shape(); });
  expect_error("Mesh::axis_names", [&] { (void)m.axis_names(); });
  expect_error("Mesh::devices", [&] { (void)m.devices(); });
  expect_error("Mesh::size", [&] { (void)m.size(); });
  expect_error("Mesh::axis_size", [&] { (void)m.axis_size("x"); });
  expect_error("Mesh::axis_index", [&] { (void)m.axis_index("x"); });
  EXPECT_EQ(m.to_string(), "Mesh(<empty>)");
  EXPECT_EQ(m, ts::Mesh());
  EXPECT_NE(m, ts::make_mesh({1}, {"x"}));
  expect_error("NamedSharding of an empty mesh", [&] { ts::NamedSharding s(m, ts::P()); });
  expect_error("shard_map over an empty mesh", [&] {
    (void)ts::shard_map([](const ts::Array& y) { return y; }, m, {ts::P()}, {ts::P()})(ts::Array(1.0f));
  });
}

TEST(EmptyHandles, ShardingAccessorsThrow) {
  const ts::Sharding s;
  EXPECT_FALSE(s.valid());
  expect_error("Sharding::is_single_device", [&] { (void)s.is_single_device(); });
  expect_error("Sharding::mesh", [&] { (void)s.mesh(); });
  expect_error("Sharding::spec", [&] { (void)s.spec(); });
  expect_error("Sharding::device_set", [&] { (void)s.device_set(); });
  expect_error("Sharding::is_fully_replicated", [&] { (void)s.is_fully_replicated(); });
  expect_error("Sharding::shard_shape", [&] { (void)s.shard_shape({4}); });
  expect_error("Sharding::device_indices", [&] { (void)s.device_indices({4}); });
  expect_error("Sharding::check_rank", [&] { s.check_rank(1, "test"); });
  EXPECT_EQ(s.to_string(), "Sharding(<empty>)");
  EXPECT_EQ(s, ts::Sharding());
  expect_error("device_put", [&] { (void)ts::device_put(ts::Array(1.0f), s); });
  expect_error("with_sharding_constraint", [&] { (void)ts::with_sharding_constraint(ts::Array(1.0f), s); });
  expect_error("SingleDeviceSharding of an empty Device", [&] { ts::SingleDeviceSharding one{ts::Device()}; });
  expect_error("device_put to an empty Device", [&] { (void)ts::device_put(ts::Array(1.0f), ts::Device()); });
}

TEST(EmptyHandles, ShardOfEmptyMembersThrows) {
  const ts::Shard shard;
  expect_error("Shard::device.id", [&] { (void)shard.device.id(); });
  expect_error("Shard::data.shape", [&] { (void)shard.data.shape(); });
}

TEST(EmptyHandles, ProgramLoweredAndCompiledThrow) {
  const ts::Program p;
  expect_error("Program::num_equations", [&] { (void)p.num_equations(); });
  expect_error("Program::primitive_names", [&] { (void)p.primitive_names(); });
  EXPECT_EQ(p.to_string(), "<no program>");
  expect_error("Lowered(nullptr)", [&] { ts::Lowered l(nullptr); });
  expect_error("Compiled(nullptr)", [&] { ts::Compiled c(nullptr); });
}

TEST(EmptyHandles, ColocatedHandlesMadeFromNullThrow) {
  using Fn = ts::colocated::Function<ts::Array, const ts::Array&>;
  expect_error("colocated::Function(nullptr)", [&] { Fn f(nullptr, [](const ts::Array& x) { return x; }); });
  expect_error("colocated::Function(site, empty invoke)",
               [&] { Fn f(std::make_shared<ts::colocated::detail::Site>(), Fn::Invoke()); });
  struct Adder {
    ts::Array add(const ts::Array& x) { return x; }
  };
  expect_error("colocated::Object(nullptr)", [&] { ts::colocated::Object<Adder> o(nullptr); });
}

TEST(EmptyHandles, PointerArgumentsAreChecked) {
  expect_error("Array::from_bytes(nullptr)", [&] { (void)ts::Array::from_bytes(nullptr, {3}, ts::f32); });
  // Zero elements need no data.
  EXPECT_EQ(ts::Array::from_bytes(nullptr, {0, 2}, ts::f32).shape(), (ts::Shape{0, 2}));
  expect_error("comm::Comm::adopt(nullptr)", [&] { (void)ts::comm::Comm::adopt(nullptr); });
  const char* no_name = nullptr;
  expect_error("P(nullptr)", [&] { (void)ts::P(no_name); });
  expect_error("AxisNames(nullptr)", [&] { ts::AxisNames n(no_name); });
}

TEST(EmptyHandles, MakeMeshRejectsNonPositiveSizes) {
  for (const ts::Shape& shape : {ts::Shape{-4}, ts::Shape{0}, ts::Shape{2, -1}}) {
    SCOPED_TRACE(ts::shape_to_string(shape));
    std::vector<std::string> names = shape.size() == 1 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "y"};
    try {
      (void)ts::make_mesh(shape, names);
      ADD_FAILURE() << "no error";
    } catch (const ts::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("make_mesh: axis sizes must be positive, got shape " +
                                           ts::shape_to_string(shape)),
                std::string::npos)
          << e.what();
    }
  }
}
