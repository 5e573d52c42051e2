// Devices, meshes, shardings, placement, shard_map and the collectives over mesh axes
// (tessel/sharding.h, tessel/shard_map.h, tessel/device.h, tessel/distributed.h) for the
// Python modules tessel.sharding and tessel.lax. PartitionSpecs cross as Python sequences
// whose entries are None, an axis name or a tuple of axis names.
#include <nanobind/stl/pair.h>

#include <string>
#include <utility>

#include "common.h"
#include "tessel/distributed.h"
#include "tessel/shard_map.h"
#include "tessel/sharding.h"

namespace tessel::python {
namespace {

nb::module_ numpy_module() { return nb::module_::import_("numpy"); }

/// A PartitionSpec from a Python sequence (P('x', None), ('x', ('y', 'z')), None for P()).
PartitionSpec to_spec(nb::handle spec) {
  if (spec.is_none()) return PartitionSpec();
  if (PyUnicode_Check(spec.ptr())) return PartitionSpec(std::vector<SpecEntry>{SpecEntry(nb::cast<std::string>(spec))});
  std::vector<SpecEntry> entries;
  for (nb::handle e : nb::borrow<nb::sequence>(spec)) {
    if (e.is_none()) entries.emplace_back();
    else if (PyUnicode_Check(e.ptr())) entries.emplace_back(nb::cast<std::string>(e));
    else if (PyTuple_Check(e.ptr()) || PyList_Check(e.ptr())) entries.emplace_back(nb::cast<std::vector<std::string>>(e));
    else
      throw nb::type_error(("PartitionSpec: entry " + nb::cast<std::string>(nb::repr(e)) +
                            " is not a mesh axis name; give None, an axis name ('x') or a tuple of names (('x', 'y'))")
                               .c_str());
  }
  return PartitionSpec(std::move(entries));
}

std::vector<PartitionSpec> to_specs(nb::handle seq) {
  std::vector<PartitionSpec> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) out.push_back(to_spec(h));
  return out;
}

/// The entries of `spec` as a tuple of None / name / tuple of names.
nb::tuple spec_entries(const PartitionSpec& spec) {
  nb::list l;
  for (const SpecEntry& e : spec.entries()) {
    if (e.empty()) l.append(nb::none());
    else if (e.axes().size() == 1) l.append(nb::str(e.axes()[0].c_str()));
    else l.append(nb::tuple(nb::cast(e.axes())));
  }
  return nb::tuple(l);
}

nb::tuple shape_tuple(const Shape& s) {
  nb::list l;
  for (int64_t d : s) l.append(d);
  return nb::tuple(l);
}

/// The [start, stop) ranges of one piece as a tuple of slices (jax's index of a shard).
nb::tuple index_slices(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  nb::list l;
  for (auto [start, stop] : ranges)
    l.append(nb::steal(PySlice_New(nb::int_(start).ptr(), nb::int_(stop).ptr(), nullptr)));
  return nb::tuple(l);
}

AxisNames to_axis_names(nb::handle h) {
  if (PyUnicode_Check(h.ptr())) return AxisNames(nb::cast<std::string>(h));
  return AxisNames(nb::cast<std::vector<std::string>>(h));
}

nb::list device_list(const std::vector<Device>& ds) {
  nb::list l;
  for (const Device& d : ds) l.append(nb::cast(d));
  return l;
}

}  // namespace

void bind_sharding(nb::module_& m) {
  nb::module_ s = m.def_submodule("sharding_functions", "Devices, meshes, shardings and shard_map behind tessel.sharding");

  nb::class_<Device>(s, "Device", "A device holding array buffers (jax.Device): a virtual CPU device here.")
      .def_prop_ro("id", &Device::id, "Global id, unique across processes.")
      .def_prop_ro("process_index", &Device::process_index, "The process that owns the device.")
      .def_prop_ro("platform", &Device::platform, "'cpu'.")
      .def("__repr__", [](const Device& d) { return "CpuDevice(id=" + std::to_string(d.id()) + ")"; })
      .def("__str__", &Device::to_string)
      .def("__eq__", [](const Device& a, nb::handle b) { return nb::isinstance<Device>(b) && a == nb::cast<Device>(b); })
      .def("__hash__", [](const Device& d) { return d.id(); });

  nb::class_<Mesh>(s, "Mesh",
                   "Devices in an n-dimensional grid with named axes (jax.sharding.Mesh): Mesh(devices, axis_names) "
                   "with `devices` an array (or nested list) of devices shaped like the grid.")
      .def("__init__", [](Mesh* self, nb::handle devices, nb::handle axis_names) {
        nb::object grid = numpy_module().attr("asarray")(devices, nb::arg("dtype") = numpy_module().attr("object_"));
        Shape shape = nb::cast<std::vector<int64_t>>(grid.attr("shape"));
        std::vector<Device> flat;
        for (nb::handle d : grid.attr("ravel")()) {
          if (!nb::isinstance<Device>(d))
            throw nb::type_error(("Mesh: the devices must be tessel devices (tessel.devices()); got " +
                                  nb::cast<std::string>(nb::repr(d))).c_str());
          flat.push_back(nb::cast<Device>(d));
        }
        std::vector<std::string> names = PyUnicode_Check(axis_names.ptr())
                                             ? std::vector<std::string>{nb::cast<std::string>(axis_names)}
                                             : nb::cast<std::vector<std::string>>(axis_names);
        if (names.size() != shape.size())
          throw ValueError("Mesh: the device array has " + std::to_string(shape.size()) + " dimension(s) " +
                           shape_to_string(shape) + " but " + std::to_string(names.size()) +
                           " axis name(s) were given; give one name per dimension (reshape the devices)");
        new (self) Mesh(std::move(flat), std::move(shape), std::move(names));
      }, nb::arg("devices"), nb::arg("axis_names"))
      .def_prop_ro("axis_names", [](const Mesh& x) { return nb::tuple(nb::cast(x.axis_names())); },
                   "The names of the axes, outermost first.")
      .def_prop_ro("devices", [](const Mesh& x) {
        return numpy_module().attr("array")(device_list(x.devices()), nb::arg("dtype") = numpy_module().attr("object_"))
            .attr("reshape")(shape_tuple(x.shape()));
      }, "The devices as a NumPy object array shaped like the grid.")
      .def_prop_ro("shape", [](const Mesh& x) {
        nb::dict d;
        for (size_t i = 0; i < x.shape().size(); ++i) d[x.axis_names()[i].c_str()] = x.shape()[i];
        return d;
      }, "{axis name: size}, in axis order.")
      .def_prop_ro("size", &Mesh::size, "Number of devices.")
      .def_prop_ro("device_ids", [](const Mesh& x) {
        nb::list l;
        for (const Device& d : x.devices()) l.append(d.id());
        return numpy_module().attr("array")(l).attr("reshape")(shape_tuple(x.shape()));
      }, "The devices' ids shaped like the grid.")
      .def("__repr__", &Mesh::to_string)
      .def("__eq__", [](const Mesh& a, nb::handle b) { return nb::isinstance<Mesh>(b) && a == nb::cast<Mesh>(b); })
      .def("__hash__", [](const Mesh& x) {
        // The axes (names and sizes) and the device ids: what __eq__ compares.
        size_t h = std::hash<std::string>{}(x.to_string());
        for (const Device& d : x.devices()) h = h * 1000003u ^ size_t(d.id());
        return h;
      });
  s.def("make_mesh", [](std::vector<int64_t> shape, std::vector<std::string> names, std::vector<Device> devices) {
    return make_mesh(shape, names, std::move(devices));
  }, nb::arg("axis_shapes"), nb::arg("axis_names"), nb::arg("devices") = std::vector<Device>{},
     "A mesh of `axis_shapes` over `devices` (default: the first devices of tessel.devices()).");

  nb::class_<Sharding>(s, "Sharding", "How a global array's pieces lie on devices (wrapped by tessel.sharding).")
      .def_prop_ro("valid", &Sharding::valid, "False for an unset sharding (no layout chosen).")
      .def_prop_ro("is_single_device", &Sharding::is_single_device)
      .def_prop_ro("mesh", &Sharding::mesh)
      .def_prop_ro("spec", [](const Sharding& x) { return spec_entries(x.spec()); })
      .def_prop_ro("device_set", [](const Sharding& x) { return device_list(x.device_set()); })
      .def_prop_ro("is_fully_replicated", &Sharding::is_fully_replicated)
      .def("shard_shape", [](const Sharding& x, std::vector<int64_t> shape) { return shape_tuple(x.shard_shape(shape)); })
      .def("devices_indices_map", [](const Sharding& x, std::vector<int64_t> shape) {
        nb::dict d;
        auto ranges = x.device_indices(shape);
        for (size_t i = 0; i < ranges.size(); ++i) d[nb::cast(x.device_set()[i])] = index_slices(ranges[i]);
        return d;
      })
      .def("check_rank", &Sharding::check_rank)
      .def("__repr__", &Sharding::to_string)
      .def("__eq__", [](const Sharding& a, nb::handle b) { return nb::isinstance<Sharding>(b) && a == nb::cast<Sharding>(b); })
      .def("__hash__", [](const Sharding& x) { return nb::hash(nb::str(x.to_string().c_str())); });
  s.def("named_sharding", [](const Mesh& mesh, nb::handle spec) -> Sharding { return NamedSharding(mesh, to_spec(spec)); },
        nb::arg("mesh"), nb::arg("spec"));
  s.def("single_device_sharding", [](const Device& d) -> Sharding { return SingleDeviceSharding(d); });
  s.def("spec_text", [](nb::handle spec) { return to_spec(spec).to_string(); }, "P('x', None) as tessel prints it.");

  s.def("device_put", [](const Array& x, const Sharding& sh) { return device_put(x, sh); }, nb::arg("x"), nb::arg("sharding"));
  s.def("with_sharding_constraint", [](const Array& x, const Sharding& sh) { return with_sharding_constraint(x, sh); }, nb::arg("x"), nb::arg("sharding"));
  s.def("sharding_of", [](const Array& x) { return sharding_of(x); }, nb::arg("x"));
  s.def("array_devices", [](const Array& x) { return device_list(x.devices()); });
  s.def("addressable_shards", [](const Array& x) {
    nb::list l;
    for (const Shard& sh : x.addressable_shards()) l.append(nb::make_tuple(sh.device, index_slices(sh.index), sh.data));
    return l;
  }, "(device, index, data) of each piece held by this process.");

  s.def("devices", [] { return device_list(devices()); }, "All devices of the job.");
  s.def("local_devices", [] { return device_list(local_devices()); }, "The devices of this process.");
  s.def("device_count", &device_count);
  s.def("local_device_count", &local_device_count);
  s.def("process_index", &process_index);
  s.def("process_count", &process_count);
  s.def("distributed_initialize", [](const std::string& mode) {
    distributed::Mode m = mode == "multi_controller"    ? distributed::Mode::multi_controller
                          : mode == "single_controller" ? distributed::Mode::single_controller
                                                        : throw ValueError("distributed.initialize: unknown mode '" + mode +
                                                                           "'; use multi_controller or single_controller");
    nb::gil_scoped_release release;  // a single-controller worker serves here until the driver ends
    distributed::initialize({.mode = m});
  }, nb::arg("mode") = "multi_controller");
  s.def("distributed_is_initialized", &distributed::is_initialized);
  s.def("distributed_shutdown", &distributed::shutdown);

  s.def("shard_map", [](nb::handle f, const Mesh& mesh, nb::handle args, nb::handle in_specs, nb::handle out_specs) {
    std::vector<Array> xs = from_list(args);
    if (!PyCallable_Check(out_specs.ptr()))
      return to_list(detail::shard_map_flat(flat_fn(f), mesh, xs, to_specs(in_specs), to_specs(out_specs)));
    // out_specs given as a tree prefix are known per result leaf only once `f` has run:
    // shard_map_flat traces `f` first and reads `outs` afterwards, so the traced function
    // fills it in (the Python callable returns the per-leaf specs of the last trace).
    std::vector<PartitionSpec> outs;
    detail::FlatFn body = [traced = flat_fn(f), specs = hold_python(out_specs), &outs](std::span<const Array> in) {
      std::vector<Array> r = traced(in);
      nb::gil_scoped_acquire gil;
      outs = to_specs((*specs)());
      return r;
    };
    return to_list(detail::shard_map_flat(body, mesh, xs, to_specs(in_specs), outs));
  }, nb::arg("fn"), nb::arg("mesh"), nb::arg("args"), nb::arg("in_specs"), nb::arg("out_specs"),
     "shard_map on flat lists: one spec per argument leaf; out_specs one per result leaf, one for all, or a "
     "callable giving one per result leaf after `fn` ran.");

  using Reduction = Array (*)(const Array&, const AxisNames&);
  const std::pair<const char*, Reduction> reductions[] = {{"psum", &psum}, {"pmean", &pmean}, {"pmax", &pmax}, {"pmin", &pmin}};
  for (auto [name, fn] : reductions)
    s.def(name, [fn](const Array& x, nb::handle axes) { return fn(x, to_axis_names(axes)); }, nb::arg("x"),
          nb::arg("axis_name"));
  s.def("all_gather", [](const Array& x, nb::handle axes, int64_t axis, bool tiled) {
    return all_gather(x, to_axis_names(axes), {.axis = axis, .tiled = tiled});
  }, nb::arg("x"), nb::arg("axis_name"), nb::arg("axis"), nb::arg("tiled"));
  s.def("all_to_all", [](const Array& x, nb::handle axes, int64_t split_axis, int64_t concat_axis, bool tiled) {
    return all_to_all(x, to_axis_names(axes), split_axis, concat_axis, {.tiled = tiled});
  }, nb::arg("x"), nb::arg("axis_name"), nb::arg("split_axis"), nb::arg("concat_axis"), nb::arg("tiled"));
  s.def("ppermute", [](const Array& x, nb::handle axes, std::vector<std::pair<int64_t, int64_t>> perm) {
    return ppermute(x, to_axis_names(axes), perm);
  }, nb::arg("x"), nb::arg("axis_name"), nb::arg("perm"));
  s.def("psum_scatter", [](const Array& x, nb::handle axes, int64_t dim, bool tiled) {
    return psum_scatter(x, to_axis_names(axes), {.scatter_dimension = dim, .tiled = tiled});
  }, nb::arg("x"), nb::arg("axis_name"), nb::arg("scatter_dimension"), nb::arg("tiled"));
  s.def("axis_index", [](nb::handle axes) { return axis_index(to_axis_names(axes)); }, nb::arg("axis_name"));
}

}  // namespace tessel::python
