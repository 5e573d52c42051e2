// custom_partitioning (tessel/custom_partitioning.h) with Python rule callbacks for
// tessel.custom_partitioning. The Python layer (tessel/_partitioning.py) turns pytrees and
// ShapeDtypeStructs into flat lists; here each callback takes the GIL, receives its call's
// static arguments (one Python object) and shapes as (shape, dtype, Sharding) tuples, and
// its answer is checked by the C++ partitioner.
#include <any>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "tessel/custom_partitioning.h"

namespace tessel::python {
namespace {

/// The rules of one def_partition call.
struct RulesHandle {
  std::shared_ptr<const detail::CustomPartitioningRules> rules;
};

using PyObjectRef = std::shared_ptr<nb::object>;

nb::object statics_of(const StaticArgs& statics) { return *std::any_cast<const PyObjectRef&>(statics.at(0)); }

nb::tuple py_shape(const ShardedShape& s) {
  nb::list dims;
  for (int64_t d : s.shape) dims.append(d);
  return nb::make_tuple(nb::tuple(dims), dtype_to_py(s.dtype), s.sharding);
}

nb::list py_shapes(const std::vector<ShardedShape>& shapes) {
  nb::list l;
  for (const ShardedShape& s : shapes) l.append(py_shape(s));
  return l;
}

}  // namespace

void bind_custom_partitioning(nb::module_& m) {
  nb::module_ c = m.def_submodule("partitioning_functions", "custom_partitioning behind tessel.custom_partitioning");
  nb::class_<RulesHandle>(c, "Rules", "The partitioning rules of one def_partition call.");
  // Traced programs (kept by jit caches for the life of the process) hold the rules and the
  // Python callbacks in them: still alive at interpreter exit by design, not leaked.
  nb::set_leak_warnings(false);

  c.def("make_rules", [](nb::handle partition, nb::handle infer, nb::handle propagate, const std::string& rule,
                         const std::string& name) {
    PartitionOptions opts{.sharding_rule = rule};
    if (!partition.is_none())
      opts.partition = [f = hold_python(partition)](const StaticArgs& st, const Mesh& mesh, const std::vector<ShardedShape>& args,
                                             const std::vector<ShardedShape>& results) {
        nb::gil_scoped_acquire gil;
        nb::tuple r = nb::cast<nb::tuple>((*f)(statics_of(st), mesh, py_shapes(args), py_shapes(results)));
        PartitionResult out{.mesh = r[0].is_none() ? Mesh() : nb::cast<Mesh>(r[0]),
                            .lower_fn = [lower = flat_fn(r[1])](const std::vector<Array>& xs) { return lower(xs); },
                            .result_shardings = nb::cast<std::vector<Sharding>>(r[2]),
                            .arg_shardings = nb::cast<std::vector<Sharding>>(r[3])};
        return out;
      };
    if (!infer.is_none())
      opts.infer_sharding_from_operands = [f = hold_python(infer)](const StaticArgs& st, const Mesh& mesh,
                                                            const std::vector<ShardedShape>& args,
                                                            const std::vector<ShardedShape>& results) {
        nb::gil_scoped_acquire gil;
        return nb::cast<std::vector<Sharding>>((*f)(statics_of(st), mesh, py_shapes(args), py_shapes(results)));
      };
    if (!propagate.is_none())
      opts.propagate_user_sharding = [f = hold_python(propagate)](const StaticArgs& st, const Mesh& mesh,
                                                           const ShardedShape& user) {
        nb::gil_scoped_acquire gil;
        return nb::cast<Sharding>((*f)(statics_of(st), mesh, py_shape(user)));
      };
    return RulesHandle{detail::make_partitioning_rules(std::move(opts), name)};
  }, nb::arg("partition").none(), nb::arg("infer_sharding_from_operands").none(),
     nb::arg("propagate_user_sharding").none(), nb::arg("sharding_rule"), nb::arg("name"),
     "Rules from flat Python callbacks: partition(statics, mesh, arg_shapes, result_shapes) -> (mesh or None, "
     "lower_fn(list) -> list, result_shardings, arg_shardings); infer(statics, mesh, arg_shapes, result_shapes) -> "
     "shardings; propagate(statics, mesh, user_shape) -> sharding. Shapes are (shape, dtype, Sharding).");

  c.def("call", [](nb::handle fn, nb::handle args, nb::handle statics, const RulesHandle* rules, const std::string& name) {
    StaticArgs st{PyObjectRef(hold_python(statics))};
    return to_list(detail::custom_partitioning_flat(flat_fn(fn), from_list(args), std::move(st),
                                                    rules ? rules->rules : nullptr, name));
  }, nb::arg("fn"), nb::arg("args"), nb::arg("statics"), nb::arg("rules").none(), nb::arg("name"),
     "Binds the custom_partitioning primitive: fn(list of Arrays) -> list of Arrays traced on `args`.");
}

}  // namespace tessel::python
