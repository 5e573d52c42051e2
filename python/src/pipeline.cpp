// JaxPP-style pipelines (tessel.pipeline, seed jaxpp_design.md) over tessel/pipeline.h: a
// Python step is traced once per signature on the driver through the C++ tracer (no Python
// runs on the workers: they receive compiled stages and instruction streams), so any Python
// function works. python/tessel/pipeline.py flattens pytrees and keeps the output treedef.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common.h"
#include "tessel/jit.h"
#include "tessel/pipeline.h"

namespace tessel::python {
namespace {

namespace pp = tessel::pipeline;

struct PipelineHandle {
  std::shared_ptr<pp::detail::PipelineState> state;
};

pp::Schedule schedule_of(const std::string& name, int stages_per_worker) {
  if (name == "GPipe") return pp::GPipe{};
  if (name == "OneF1B") return pp::OneF1B{};
  if (name == "Eager1F1B") return pp::Eager1F1B{};
  if (name == "Interleaved1F1B") return pp::Interleaved1F1B{stages_per_worker};
  if (name == "ZeroBubbleH1") return pp::ZeroBubbleH1{};
  throw ValueError("pipelined: unknown schedule '" + name +
                   "'; use GPipe, OneF1B, Eager1F1B, Interleaved1F1B or ZeroBubbleH1");
}

}  // namespace

void bind_pipeline(nb::module_& m) {
  nb::module_ p = m.def_submodule("pipeline", "MPMD pipelines over the workers of a single-controller job");
  nb::class_<pp::RemoteMpmdMesh>(p, "RemoteMpmdMesh",
                                 "The workers of a pipeline (worker i is process i + 1), each with a local mesh.")
      .def(nb::init<int, const Shape&, const std::vector<std::string>&>(), nb::arg("num_workers"),
           nb::arg("local_mesh_shape"), nb::arg("axis_names"))
      .def(nb::init<int, int, const Shape&, const std::vector<std::string>&>(), nb::arg("pp"), nb::arg("dp"),
           nb::arg("local_mesh_shape"), nb::arg("axis_names"))
      .def_prop_ro("num_workers", &pp::RemoteMpmdMesh::num_workers, "Every worker: pp x dp.")
      .def_prop_ro("pipeline_workers", &pp::RemoteMpmdMesh::pipeline_workers, "Stage workers per replica (pp).")
      .def_prop_ro("replicas", &pp::RemoteMpmdMesh::replicas, "Data-parallel replicas (dp).")
      .def("process_of", &pp::RemoteMpmdMesh::process_of, nb::arg("worker"), "The process (rank) of a worker.");
  nb::class_<PipelineHandle>(p, "Pipeline", "A pipelined step's compiled stages per signature.");

  p.def("enter_stage", [](nb::handle xs) {
    std::vector<Array> v;
    for (nb::handle x : nb::borrow<nb::sequence>(xs)) v.push_back(to_array(x));
    return pp::enter_stage(v);
  }, nb::arg("leaves"), "Marks a stage boundary on these values (one marker); returns them.");

  p.def("make_pipeline", [](const pp::RemoteMpmdMesh& mesh, int num_microbatches, std::vector<int> batch_argnums,
                            std::vector<int> donate_argnums, const std::string& schedule, int stages_per_worker,
                            bool overlap_reductions) {
    pp::PipelineOptions o;
    o.num_microbatches = num_microbatches;
    o.batch_argnums = std::move(batch_argnums);
    o.donate_argnums = std::move(donate_argnums);
    o.schedule = schedule_of(schedule, stages_per_worker);
    o.overlap_reductions = overlap_reductions;
    return PipelineHandle{pp::detail::make_pipeline(mesh, std::move(o))};
  }, nb::arg("mesh"), nb::arg("num_microbatches"), nb::arg("batch_argnums"), nb::arg("donate_argnums"),
     nb::arg("schedule"), nb::arg("stages_per_worker"), nb::arg("overlap_reductions"));

  p.def("call", [](const PipelineHandle& h, nb::handle trace, nb::handle leaves, std::vector<int> leaf_args,
                   int num_args) {
    std::vector<Array> xs;
    for (nb::handle x : nb::borrow<nb::sequence>(leaves)) xs.push_back(to_array(x));
    // trace(tracers) -> (output leaves, treedef): the treedef of a fresh trace is kept with
    // the signature's stages and handed back with every call's outputs.
    std::shared_ptr<nb::object> cell = hold_python(nb::none()), f = hold_python(trace);
    detail::FlatFn fn = [f, cell](std::span<const Array> tracers) {
      nb::gil_scoped_acquire gil;
      nb::list l;
      for (const Array& t : tracers) l.append(nb::cast(t));
      nb::tuple r = nb::borrow<nb::tuple>((*f)(l));
      *cell = r[1];
      std::vector<Array> outs;
      for (nb::handle x : nb::borrow<nb::sequence>(r[0])) outs.push_back(to_array(x));
      return outs;
    };
    std::shared_ptr<const void> fresh(cell, cell.get()), structure;
    std::vector<Array> outs;
    {
      nb::gil_scoped_release release;
      outs = pp::detail::pipeline_call(*h.state, fn, xs, leaf_args, num_args, fresh, structure);
    }
    nb::list l;
    for (const Array& a : outs) l.append(nb::cast(a));
    return nb::make_tuple(l, *static_cast<const nb::object*>(structure.get()));
  }, nb::arg("pipeline"), nb::arg("trace"), nb::arg("leaves"), nb::arg("leaf_args"), nb::arg("num_args"),
     "Runs one pipelined call; returns (output leaves, output treedef).");
  p.def("instructions", [](const PipelineHandle& h) { return pp::detail::pipeline_instructions(*h.state); },
        "Every worker's instruction stream for the signature called last.");
}

}  // namespace tessel::python
