// Colocated Python functions and classes (tessel.colocated, seed colocated_python.md) over
// tessel/colocated.h. A Python function or class runs where the C++ runtime runs a
// registered C++ one: here for local devices, or in the worker processes of a
// single-controller job, which find it by module and qualified name (every process runs the
// same script; python/tessel/colocated.py resolves the name). Pytrees travel as leaves plus
// a structure string made by the Python side (a pickled treedef).
#include <nanobind/stl/shared_ptr.h>

#include <string>
#include <typeindex>
#include <utility>
#include <vector>

#include "common.h"
#include "tessel/colocated.h"
#include "tessel/device.h"

namespace tessel::python {
namespace {

namespace cd = colocated::detail;

/// Marks the Python classes in the C++ registry, which keys classes by C++ type.
struct PythonClass {};

nb::list array_list(std::span<const Array> xs) {
  nb::list l;
  for (const Array& x : xs) l.append(nb::cast(x));
  return l;
}

nb::list string_list(std::span<const std::string> xs) {
  nb::list l;
  for (const std::string& s : xs) l.append(s);
  return l;
}

/// What a Python runner returned: (leaves, structure).
cd::Outputs outputs_of(nb::handle r) {
  nb::tuple t = nb::borrow<nb::tuple>(r);
  cd::Outputs out;
  for (nb::handle x : nb::borrow<nb::sequence>(t[0])) out.leaves.push_back(to_array(x));
  out.structure = nb::cast<std::string>(t[1]);
  return out;
}

/// A colocated callable's call site (one per colocated_python function or bound method).
struct SiteHandle {
  std::shared_ptr<cd::Site> site;
};
/// A colocated object (an instance of a colocated_python class).
struct StateHandle {
  std::shared_ptr<cd::ObjectState> state;
};

Device device_of(nb::handle h) {
  const int id = nb::cast<int>(nb::hasattr(h, "id") ? h.attr("id") : h);
  for (const Device& d : devices())
    if (d.id() == id) return d;
  throw ValueError("colocated: no device with id " + std::to_string(id) + "; this job has " +
                   std::to_string(device_count()) + " devices");
}

/// The spec of leaf `k` of `py_specs` (objects with shape, dtype and optionally sharding):
/// a sharding that is not a tessel Sharding (None, or an index into the inputs) takes the
/// sharding of that input leaf (the first by default).
colocated::Spec spec_of(nb::handle s, const colocated::Specs& inputs) {
  Sharding sharding;
  nb::object sh = nb::hasattr(s, "sharding") ? s.attr("sharding") : nb::none();
  // a tessel Sharding, or a Python sharding object wrapping one (`_impl`)
  if (!sh.is_none() && (nb::try_cast(sh, sharding) || (nb::hasattr(sh, "_impl") && nb::try_cast(sh.attr("_impl"), sharding)))) {
  } else if (!inputs.empty()) {
    const size_t k = nb::isinstance<nb::int_>(sh) ? nb::cast<size_t>(sh) : 0;
    if (k >= inputs.size())
      throw IndexError("colocated out_specs_fn: a spec refers to input leaf " + std::to_string(k) + " of " +
                       std::to_string(inputs.size()));
    sharding = inputs[k].sharding;
  } else {
    throw ValueError("colocated out_specs_fn: a spec without a sharding for a call without inputs; give its sharding");
  }
  return colocated::Spec(to_shape(s.attr("shape")), dtype_from_py(s.attr("dtype")), std::move(sharding));
}

/// Input specs as Python tuples (shape, dtype, k): k stands for input leaf k's sharding.
nb::list specs_to_py(const colocated::Specs& specs) {
  nb::list l;
  for (size_t k = 0; k < specs.size(); ++k) {
    nb::list shape;
    for (int64_t d : specs[k].shape) shape.append(d);
    l.append(nb::make_tuple(nb::tuple(shape), dtype_to_py(specs[k].dtype), k));
  }
  return l;
}

}  // namespace

void bind_colocated(nb::module_& m) {
  nb::module_ c = m.def_submodule("colocated", "Colocated Python functions and classes (tessel.colocated)");
  nb::class_<SiteHandle>(c, "Site", "A colocated callable's call site: its specialization and known output specs.");

  c.def("colocated_cpu_device_ids", [](std::vector<int> ids) {
    std::vector<Device> devs;
    for (int id : ids) devs.push_back(device_of(nb::int_(id)));
    std::vector<int> out;
    for (const Device& d : colocated::colocated_cpu_devices(devs)) out.push_back(d.id());
    return out;
  }, nb::arg("device_ids"), "The ids of the colocated CPU devices of the devices with these ids, in order.");
  c.def("device_ids", [] {
    std::vector<int> out;
    for (const Device& d : devices()) out.push_back(d.id());
    return out;
  }, "The ids of every device of the job.");

  c.def("register_function", [](const std::string& name, nb::handle resolve_and_run) {
    auto run = hold_python(resolve_and_run);
    cd::register_function(name, run.get(), [run, name](std::span<const Array> leaves,
                                                        std::span<const std::string> structures) {
      nb::gil_scoped_acquire gil;
      try {
        return outputs_of((*run)(name, array_list(leaves), string_list(structures)));
      } catch (nb::python_error& e) {
        throw_as_error(name, e);
      }
    });
  }, nb::arg("name"), nb::arg("run"),
     "Registers a Python function by name for workers: run(name, leaves, structures) -> (leaves, structure).");

  c.def("register_class", [](const std::string& name, nb::handle make, nb::handle call_method) {
    auto mk = hold_python(make), call = hold_python(call_method);
    cd::register_class(name, std::type_index(typeid(PythonClass)), [mk, name](std::string_view ctor) {
      nb::gil_scoped_acquire gil;
      try {
        return std::static_pointer_cast<void>(hold_python((*mk)(name, nb::bytes(ctor.data(), ctor.size()))));
      } catch (nb::python_error& e) {
        throw_as_error(name, e);
      }
    });
    // One method entry per class: the method's name travels with the arguments' structures.
    cd::register_method(name + "::*", std::type_index(typeid(PythonClass)), name,
                        [call, name](void* obj, std::span<const Array> leaves, std::span<const std::string> structures) {
      nb::gil_scoped_acquire gil;
      try {
        return outputs_of((*call)(*static_cast<nb::object*>(obj), array_list(leaves), string_list(structures)));
      } catch (nb::python_error& e) {
        throw_as_error(name, e);
      }
    });
  }, nb::arg("name"), nb::arg("make"), nb::arg("call_method"),
     "Registers a Python class by name for workers: make(name, ctor_bytes) -> instance; call_method(instance, "
     "leaves, structures) -> (leaves, structure).");

  c.def("function_site", [](const std::string& display, const std::string& registered) {
    auto site = std::make_shared<cd::Site>();
    site->target = cd::Target{display, registered, nullptr};
    return SiteHandle{site};
  }, nb::arg("display"), nb::arg("registered"), "A call site for a function (registered: '' for local only).");

  nb::class_<StateHandle>(c, "ObjectState", "One colocated object, made lazily on the hosts that see calls.");
  c.def("object_state", [](const std::string& display, const std::string& registered, nb::handle make,
                           nb::handle encode_ctor) {
    auto mk = hold_python(make), enc = hold_python(encode_ctor);
    return StateHandle{std::make_shared<cd::ObjectState>(
        display, registered,
        [mk, display]() -> std::shared_ptr<void> {
          nb::gil_scoped_acquire gil;
          try {
            return std::static_pointer_cast<void>(hold_python((*mk)()));
          } catch (nb::python_error& e) {
            throw_as_error(display, e);
          }
        },
        [enc, display] {
          nb::gil_scoped_acquire gil;
          try {
            nb::bytes b = nb::cast<nb::bytes>((*enc)());
            return std::string(b.c_str(), b.size());
          } catch (nb::python_error& e) {
            throw_as_error(display + ": its constructor arguments cannot travel to a worker (pickle)", e);
          }
        })};
  }, nb::arg("display"), nb::arg("registered"), nb::arg("make"), nb::arg("encode_ctor"),
     "An object made by make() where calls run (here), or from encode_ctor()'s bytes on a worker.");
  c.def("make_local", [](const StateHandle& state) {
    nb::gil_scoped_release release;  // make() takes the GIL (another thread may be making it)
    state.state->local_instance();
  }, nb::arg("state"), "Makes the object in this process (once; a failure is raised again to every caller).");
  c.def("method_site", [](const StateHandle& state, const std::string& method) {
    auto site = std::make_shared<cd::Site>();
    const std::string& reg = state.state->registered();
    site->target = cd::Target{state.state->display() + "." + method, reg.empty() ? "" : reg + "::*", state.state};
    return SiteHandle{site};
  }, nb::arg("state"), nb::arg("method"), "A call site for one method of a colocated object.");

  c.def("specialize", [](const SiteHandle& h, nb::handle out_specs_fn, nb::handle in_specs, nb::handle device_ids) {
    colocated::Specialization more;
    if (!out_specs_fn.is_none()) {
      more.out_specs_fn = [f = hold_python(out_specs_fn)](const colocated::Specs& in) {
        nb::gil_scoped_acquire gil;
        colocated::Specs out;
        try {
          for (nb::handle s : nb::borrow<nb::sequence>((*f)(specs_to_py(in)))) out.push_back(spec_of(s, in));
        } catch (nb::python_error& e) {
          throw_as_error("colocated out_specs_fn", e);
        }
        return out;
      };
    }
    if (!in_specs.is_none()) {
      colocated::Specs specs;
      for (nb::handle s : nb::borrow<nb::sequence>(in_specs)) {
        if (!nb::hasattr(s, "sharding") || s.attr("sharding").is_none())
          throw ValueError("colocated specialize: in_specs need their shardings (ShapeDtypeStruct(shape, dtype, "
                           "sharding=...)) or concrete arrays");
        specs.push_back(nb::isinstance<Array>(s) ? colocated::Spec::of(nb::cast<const Array&>(s)) : spec_of(s, {}));
      }
      more.in_specs = std::move(specs);
    }
    if (!device_ids.is_none()) {
      std::vector<Device> devs;
      for (nb::handle d : nb::borrow<nb::sequence>(device_ids)) devs.push_back(device_of(d));
      more.devices = std::move(devs);
    }
    return SiteHandle{h.site->specialized(more)};
  }, nb::arg("site"), nb::arg("out_specs_fn").none(), nb::arg("in_specs").none(), nb::arg("device_ids").none(),
     "The site with more knowledge; out_specs_fn(list of (shape, dtype, input_index)) -> list of specs.");

  c.def("call", [](const SiteHandle& h, nb::handle run_here, nb::handle leaves, nb::handle structures,
                   const std::string& fixed_structure) {
    std::vector<Array> xs;
    for (nb::handle x : nb::borrow<nb::sequence>(leaves)) xs.push_back(to_array(x));
    std::vector<std::string> ss;
    for (nb::handle s : nb::borrow<nb::sequence>(structures)) ss.push_back(nb::cast<std::string>(s));
    auto run = hold_python(run_here);
    auto make_thunk = [](const void* context) -> cd::LocalThunk {
      auto r = *static_cast<const std::shared_ptr<nb::object>*>(context);
      return [r]() {
        nb::gil_scoped_acquire gil;
        try {
          return outputs_of((*r)());
        } catch (nb::python_error& e) {
          throw_as_error("colocated function", e);
        }
      };
    };
    const cd::ResultType result{fixed_structure, false};
    cd::Outputs outs;
    {
      nb::gil_scoped_release release;  // the call may wait for workers, or run Python on another thread
      outs = cd::call(*h.site, xs, ss, cd::LocalMaker{&run, make_thunk}, result);
    }
    return nb::make_tuple(array_list(outs.leaves), outs.structure);
  }, nb::arg("site"), nb::arg("run_here"), nb::arg("leaves"), nb::arg("structures"), nb::arg("fixed_structure"),
     "Runs a colocated call: run_here() -> (leaves, structure) on this host, the registered target on workers; "
     "returns (leaves, structure).");
  c.def("discoveries", [](const SiteHandle& h) {
    std::lock_guard lock(h.site->mu);
    return h.site->discoveries;
  }, "How many times output specs were learned by running the function synchronously.");
}

}  // namespace tessel::python
