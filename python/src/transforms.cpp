// Transformations over Python callables: the flat entry points of tessel/jit.h and
// tessel/transforms.h (functions of a list of Arrays returning a list of Arrays). The Python
// side (tessel/_api.py) flattens pytrees, keys jit's cache and rebuilds outputs.
#include <nanobind/stl/pair.h>

#include <memory>
#include <span>
#include <string>

#include "common.h"
#include "tessel/control_flow.h"
#include "tessel/jit.h"
#include "tessel/transforms.h"

namespace tessel::python {
namespace {

/// A traced-and-compiled jit signature.
struct JitHandle {
  std::shared_ptr<detail::JitEntry> entry;
};
/// The linear map of a linearization (jvp forward, vjp transposed).
struct LinearHandle {
  std::shared_ptr<const detail::LinearState> state;
};

/// Two-list rules (custom_jvp's rule, custom_vjp's bwd).
std::function<std::vector<Array>(std::span<const Array>, std::span<const Array>)> flat_fn2(nb::handle f) {
  return [f = hold_python(f)](std::span<const Array> a, std::span<const Array> b) {
    nb::gil_scoped_acquire gil;
    return from_list((*f)(to_list(a), to_list(b)), true);
  };
}

std::vector<Aval> avals_of(const std::vector<Array>& xs) {
  std::vector<Aval> avals;
  avals.reserve(xs.size());
  for (const Array& x : xs) avals.push_back(x.aval());
  return avals;
}

std::vector<std::optional<int64_t>> to_axis_list(nb::handle seq) {
  std::vector<std::optional<int64_t>> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq))
    out.push_back(h.is_none() ? std::nullopt : std::optional<int64_t>(nb::cast<int64_t>(h)));
  return out;
}

}  // namespace

void bind_transforms(nb::module_& m) {
  nb::module_ t = m.def_submodule("transform_functions", "Flat transformations behind tessel.jit, grad, vmap, ...");
  nb::class_<JitHandle>(t, "JitEntry", "One traced and compiled signature of a jitted function.");
  nb::class_<LinearHandle>(t, "LinearMap", "The linear map of a linearization.");

  t.def("jit_compile", [](nb::handle f, nb::handle leaves, const std::string& name, std::vector<int> donated) {
    std::vector<Array> xs = from_list(leaves);
    return JitHandle{detail::jit_compile(flat_fn(f), avals_of(xs), name, std::move(donated))};
  }, nb::arg("fn"), nb::arg("leaves"), nb::arg("name"), nb::arg("donated") = std::vector<int>{},
     "Traces fn (list of Arrays -> list of Arrays) on tracers shaped like `leaves` and compiles it.");
  t.def("jit_argument", [](nb::handle x) { return to_argument(x); }, nb::arg("x"),
        "x as jit passes it: an Array as it is, a C-contiguous aligned NumPy array without a copy (its "
        "memory wrapped), anything else converted as asarray does.");
  t.def("numpy_copy_bytes", &numpy_copy_bytes,
        "Bytes copied out of NumPy arrays and scalars into tessel arrays since import (tests check that jit "
        "arguments are not copied).");
  t.def("jit_captures_tracers", [](const JitHandle& h) { return detail::jit_entry_captures_tracers(*h.entry); });
  t.def("jit_call", [](const JitHandle& h, nb::handle leaves) {
    std::vector<Array> xs;
    for (nb::handle x : nb::borrow<nb::sequence>(leaves)) xs.push_back(to_argument(x));
    std::vector<Array> outs;
    {
      nb::gil_scoped_release release;  // a host callback in the program takes the GIL (host.cpp)
      outs = detail::jit_call(*h.entry, xs);
    }
    return to_list(outs);
  });
  t.def("jit_traced_text", [](const JitHandle& h) { return detail::jit_traced_program(*h.entry).to_string(); });
  t.def("jit_lowered_text", [](const JitHandle& h) { return detail::jit_lowered_program(*h.entry).to_string(); });
  t.def("jit_compiled_text", [](const JitHandle& h, nb::handle leaves) {
    return detail::jit_compiled_text(*h.entry, from_list(leaves));
  });
  t.def("jit_build", [](const JitHandle& h, nb::handle leaves) { detail::jit_build(*h.entry, from_list(leaves)); });
  t.def("make_program", [](nb::handle f, nb::handle leaves, const std::string& name) {
    std::vector<Array> xs = from_list(leaves);
    return detail::make_program_flat(flat_fn(f), avals_of(xs), name).to_string();
  }, nb::arg("fn"), nb::arg("leaves"), nb::arg("name") = "fn");

  t.def("jvp", [](nb::handle f, nb::handle primals, nb::handle tangents) {
    std::vector<Array> p = from_list(primals), tg = from_list(tangents, true);
    auto [outs, touts] = detail::jvp_flat(flat_fn(f), p, tg);
    return nb::make_tuple(to_list(outs), to_list(touts));
  }, nb::arg("fn"), nb::arg("primals"), nb::arg("tangents"));
  t.def("linearize", [](nb::handle f, nb::handle primals) {
    std::vector<Array> p = from_list(primals);
    auto [outs, state] = detail::linearize_flat(flat_fn(f), p);
    return nb::make_tuple(to_list(outs), LinearHandle{state});
  }, nb::arg("fn"), nb::arg("primals"));
  t.def("linear_apply", [](const LinearHandle& h, nb::handle tangents) {
    return to_list(detail::linear_apply(*h.state, from_list(tangents, true)));
  });
  t.def("linear_transpose", [](const LinearHandle& h, nb::handle cts, const std::string& op) {
    return to_list(detail::linear_transpose_apply(*h.state, from_list(cts, true), op.c_str()));
  }, nb::arg("linear_map"), nb::arg("cotangents"), nb::arg("op"));
  t.def("vmap", [](nb::handle f, nb::handle args, nb::handle in_axes, nb::handle out_axes,
                   std::optional<int64_t> axis_size) {
    std::vector<Array> xs = from_list(args);
    auto ia = to_axis_list(in_axes), oa = to_axis_list(out_axes);
    return to_list(detail::vmap_flat(flat_fn(f), xs, ia, oa, axis_size));
  }, nb::arg("fn"), nb::arg("args"), nb::arg("in_axes"), nb::arg("out_axes"), nb::arg("axis_size").none());
  t.def("custom_jvp", [](nb::handle f, nb::handle rule, nb::handle args) {
    return to_list(detail::custom_jvp_flat(flat_fn(f), flat_fn2(rule), from_list(args)));
  }, nb::arg("fn"), nb::arg("rule"), nb::arg("args"));
  t.def("custom_vjp", [](nb::handle f, nb::handle fwd, nb::handle bwd, nb::handle args) {
    return to_list(detail::custom_vjp_flat(flat_fn(f), flat_fn(fwd), flat_fn2(bwd), from_list(args)));
  }, nb::arg("fn"), nb::arg("fwd"), nb::arg("bwd"), nb::arg("args"));
  t.def("cond", [](nb::handle index, nb::handle branches, nb::handle operands) {
    std::vector<detail::FlatFn> fns;
    for (nb::handle b : nb::borrow<nb::sequence>(branches)) fns.push_back(flat_fn(b));
    return to_list(detail::cond_flat(to_array(index), fns, from_list(operands)));
  }, nb::arg("index"), nb::arg("branches"), nb::arg("operands"));
  t.def("while_loop", [](nb::handle cond, nb::handle body, nb::handle init) {
    return to_list(detail::while_flat(flat_fn(cond), flat_fn(body), from_list(init)));
  }, nb::arg("cond"), nb::arg("body"), nb::arg("init"));
  t.def("scan", [](nb::handle body, nb::handle init, nb::handle xs, std::optional<int64_t> length, bool reverse) {
    return to_list(detail::scan_flat(flat_fn(body), from_list(init), from_list(xs), length, reverse));
  }, nb::arg("body"), nb::arg("init"), nb::arg("xs"), nb::arg("length").none(), nb::arg("reverse"));
  t.def("checkpoint", [](nb::handle f, nb::handle args, const std::string& policy) {
    CheckpointPolicy p = policy == "nothing_saveable"      ? CheckpointPolicy::nothing_saveable
                         : policy == "dots_saveable"       ? CheckpointPolicy::dots_saveable
                         : policy == "everything_saveable" ? CheckpointPolicy::everything_saveable
                                                           : throw ValueError("checkpoint: unknown policy '" + policy +
                                                                              "'; use nothing_saveable, dots_saveable "
                                                                              "or everything_saveable");
    return to_list(detail::checkpoint_flat(flat_fn(f), from_list(args), p));
  }, nb::arg("fn"), nb::arg("args"), nb::arg("policy"));
  t.def("check_grad_output", [](const std::string& op, const Array& out, size_t n) {
    detail::check_grad_output(op.c_str(), out, n);
  });
  t.def("check_differentiable", [](const std::string& op, const Array& x, int argnum) {
    detail::check_differentiable(op.c_str(), x, argnum);
  });
}

}  // namespace tessel::python
