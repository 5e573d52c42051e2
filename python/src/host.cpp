// Host callbacks over Python callables (tessel.host, tessel.pure_callback, tessel.io_callback,
// tessel.debug): the leaf-level entry points of tessel/host.h. The Python side
// (tessel/host.py) flattens pytrees and rebuilds them around the user's function.
//
// The GIL: callbacks run on tessel's threads (a device's stream, its receiver), which take
// the GIL only to run the Python function. Every binding that may wait for device work
// (barrier_wait here; reads, block_until_ready and jit calls through wait_without_gil)
// releases it, so a callback never waits for a thread that waits for it, and a callback may
// call tessel itself.
//
// Exceptions: a Python exception raised in a callback becomes a tessel::Error carrying its
// traceback text and a ticket; when that error reaches Python (a result read, barrier_wait),
// the translator below raises the original exception object, with its type and traceback.
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "common.h"
#include "tessel/cache.h"
#include "tessel/host.h"

namespace tessel::python {
namespace {

/// Python exceptions raised in callbacks, waiting to be raised again at the caller. Bounded:
/// a failure nobody reads is forgotten after kKept newer ones (its message still names it).
/// A ticket names the process, the exception and its type: ` [python exception #PID.N
/// module.Type]`; a ticket of another process (a colocated worker's) finds no object here, but
/// its type may still be raised (the translator below).
class RaisedExceptions {
 public:
  static constexpr size_t kKept = 64;
  static constexpr const char* kTag = " [python exception #";

  /// Stores `exc` (GIL held); the ticket to put in the error message.
  std::string put(nb::object exc) {
    nb::handle type = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())));
    const std::string type_name =
        nb::cast<std::string>(type.attr("__module__")) + "." + nb::cast<std::string>(type.attr("__qualname__"));
    std::lock_guard lock(mu_);
    const uint64_t id = ++next_;
    kept_.emplace_back(id, std::move(exc));
    if (kept_.size() > kKept) kept_.pop_front();
    return kTag + std::to_string(getpid()) + "." + std::to_string(id) + " " + type_name + "]";
  }
  /// The exception whose ticket `message` carries (the last one) when this process kept it,
  /// else None (GIL held). `type_name` is set to the ticket's type, if any.
  nb::object find(const std::string& message, std::string& type_name) {
    const size_t at = message.rfind(kTag);
    if (at == std::string::npos) return nb::none();
    const char* p = message.c_str() + at + std::char_traits<char>::length(kTag);
    char* end = nullptr;
    const long pid = std::strtol(p, &end, 10);
    const uint64_t id = std::strtoull(end + 1, &end, 10);
    const size_t close = message.find(']', size_t(end - message.c_str()));
    if (*end == ' ' && close != std::string::npos) type_name = message.substr(size_t(end + 1 - message.c_str()),
                                                                              close - size_t(end + 1 - message.c_str()));
    if (pid != long(getpid())) return nb::none();
    std::lock_guard lock(mu_);
    for (const auto& [k, exc] : kept_)
      if (k == id) return exc;
    return nb::none();
  }
  /// Forgets every kept exception (GIL held; at exit, before the interpreter goes).
  void clear() {
    std::deque<std::pair<uint64_t, nb::object>> gone;
    {
      std::lock_guard lock(mu_);
      gone.swap(kept_);
    }
  }

 private:
  std::mutex mu_;
  uint64_t next_ = 0;
  std::deque<std::pair<uint64_t, nb::object>> kept_;
};

RaisedExceptions& raised() {
  static auto* r = new RaisedExceptions();  // never destroyed: holds Python objects past exit
  return *r;
}

/// Runs `body` (which calls Python) with the GIL held; a Python exception becomes a
/// tessel::Error with the exception's type, message and traceback text, and a ticket.
template <class F> auto run_python(const std::string& name, F&& body) {
  ScopedGil gil;
  try {
    return body();
  } catch (nb::python_error& e) {
    throw_as_error(name, e);
  }
}

/// A callback's values: NumPy arrays (what JAX's callbacks receive) over the runtime's
/// private host copies, or tessel Arrays.
nb::list leaves_to_list(const std::vector<Array>& xs, bool as_numpy) {
  nb::list l;
  for (const Array& x : xs) l.append(as_numpy ? numpy_over(x) : nb::cast(x));
  return l;
}

/// A callback's result leaf as an Array of `want`'s aval: a NumPy array or scalar of that
/// dtype and shape is copied directly (the common case, kept cheap); anything else goes
/// through to_array, and the runtime reports a dtype or shape that does not match.
Array result_leaf(nb::handle h, const ShapeDtype& want) {
  Array out;
  if (numpy_value_into(h, want, out)) return out;
  return to_array(h);
}

/// A synchronous callback's result, `r` = (leaves, structure), as the runtime checks it.
host::detail::CallResult call_result(nb::handle r, const std::vector<ShapeDtype>& results) {
  nb::tuple t = nb::borrow<nb::tuple>(r);
  host::detail::CallResult out;
  size_t k = 0;
  for (nb::handle x : nb::borrow<nb::sequence>(t[0])) {
    out.leaves.push_back(k < results.size() ? result_leaf(x, results[k]) : to_array(x));
    ++k;
  }
  out.structure = nb::cast<std::string>(t[1]);
  return out;
}

/// Calls `fn(*leaves)` with the leaves as NumPy arrays, by vectorcall (no argument list).
nb::object call_with_leaves(nb::handle fn, const std::vector<Array>& values) {
  constexpr size_t kOnStack = 8;
  std::vector<nb::object> held;
  held.reserve(values.size());
  PyObject* small[kOnStack + 1];
  std::vector<PyObject*> large;
  PyObject** args = values.size() <= kOnStack ? small : (large.resize(values.size() + 1), large.data());
  for (size_t i = 0; i < values.size(); ++i) {
    held.push_back(numpy_over(values[i]));
    args[i + 1] = held.back().ptr();
  }
  PyObject* r = PyObject_Vectorcall(fn.ptr(), args + 1, values.size() | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::tuple device_tuple(const Device& d) { return nb::make_tuple(d.id(), d.to_string()); }

nb::list transforms_to_list(const host::Transforms& transforms) {
  nb::list l;
  for (const host::Transform& t : transforms) {
    nb::list dims;
    for (const auto& d : t.batch_dims) dims.append(d ? nb::object(nb::int_(*d)) : nb::none());
    l.append(nb::make_tuple(t.name, nb::tuple(dims)));
  }
  return l;
}

host::detail::CallKind call_kind(const std::string& kind) {
  if (kind == "pure") return host::detail::CallKind::kPure;
  if (kind == "ordered") return host::detail::CallKind::kOrdered;
  if (kind == "unordered") return host::detail::CallKind::kUnordered;
  throw ValueError("host callback: unknown kind '" + kind + "'; use pure, ordered or unordered");
}

/// The exception class `module.qualname` names, if its module is imported and it is an
/// Exception subclass whose constructor takes one message; else None.
nb::object exception_type(const std::string& type_name) {
  const size_t dot = type_name.find('.');
  if (dot == std::string::npos) return nb::none();
  nb::object modules = nb::module_::import_("sys").attr("modules");
  nb::object obj = modules.attr("get")(type_name.substr(0, dot));
  // qualnames may nest (Outer.Error): walk them; module names with dots are not resolved
  for (size_t at = dot + 1; !obj.is_none() && at <= type_name.size();) {
    const size_t next = std::min(type_name.find('.', at), type_name.size());
    const std::string part = type_name.substr(at, next - at);
    obj = nb::hasattr(obj, part.c_str()) ? nb::object(obj.attr(part.c_str())) : nb::none();
    at = next + 1;
  }
  if (obj.is_none() || !PyType_Check(obj.ptr()) || !PyObject_IsSubclass(obj.ptr(), PyExc_Exception)) return nb::none();
  try {
    obj("probe");
  } catch (nb::python_error&) {
    return nb::none();
  }
  return obj;
}

}  // namespace

std::shared_ptr<nb::object> hold_python(nb::handle o) {
  return std::shared_ptr<nb::object>(new nb::object(nb::borrow(o)), [](nb::object* p) {
    if (!Py_IsInitialized()) return;
    ScopedGil gil;
    delete p;
  });
}

void throw_as_error(const std::string& name, nb::python_error& e) {
  nb::object exc = nb::borrow(e.value());
  nb::object tb = nb::module_::import_("traceback");
  std::string text = nb::cast<std::string>(nb::str("").attr("join")(tb.attr("format_exception")(exc)));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  throw Error(name + ": " + text + raised().put(std::move(exc)));
}

void wait_without_gil(const Array& x) {
  if (x.is_tracer() || x.is_ready()) return;
  nb::gil_scoped_release release;
  x.block_until_ready();
}

void bind_host(nb::module_& m) {
  nb::module_ h = m.def_submodule("host", "Host callbacks over Python callables (tessel.host)");

  h.def("tap_leaves", [](nb::handle fn, nb::handle leaves, const std::string& name, bool with_device,
                         int device_index, bool per_example, bool as_numpy) {
    std::vector<Array> xs;
    for (nb::handle x : nb::borrow<nb::sequence>(leaves)) xs.push_back(to_array(x));
    host::detail::LeafTap tap = [f = hold_python(fn), name, as_numpy](std::vector<Array> values,
                                                          const host::Transforms& transforms, const Device& device) {
      run_python(name, [&] {
        (*f)(leaves_to_list(values, as_numpy), transforms_to_list(transforms), device_tuple(device));
      });
    };
    host::detail::tap_leaves(std::move(tap), xs, name, with_device, device_index, per_example);
  }, nb::arg("fn"), nb::arg("leaves"), nb::arg("name"), nb::arg("with_device"), nb::arg("device_index"),
     nb::arg("per_example"), nb::arg("as_numpy"),
     "Binds an asynchronous tap: fn(leaves, transforms, (device_id, device_name)) runs on the device's receiver "
     "thread; transforms is a list of (name, batch_dims); leaves are NumPy arrays with as_numpy, else Arrays.");

  h.def("call_leaves", [](nb::handle fn, nb::handle leaves, nb::handle result_avals, const std::string& structure,
                          const std::string& name, bool with_device, int device_index, const std::string& kind,
                          nb::handle direct, nb::handle finish) {
    std::vector<Array> xs;
    for (nb::handle x : nb::borrow<nb::sequence>(leaves)) xs.push_back(to_array(x));
    std::vector<ShapeDtype> results;
    for (nb::handle r : nb::borrow<nb::sequence>(result_avals))
      results.emplace_back(to_shape(r.attr("shape")), dtype_from_py(r.attr("dtype")));
    host::detail::LeafCall call;
    if (direct.is_none()) {
      call = [f = hold_python(fn), name, results](std::vector<Array> values, const Device& device) {
        return run_python(name, [&] { return call_result((*f)(leaves_to_list(values, true), device_tuple(device)),
                                                         results); });
      };
    } else {
      // The user's function called with the leaves themselves; a single result leaf that is
      // a NumPy value of the declared aval needs no Python code of ours (the cost of an
      // io_callback in a loop), anything else goes through finish(result) -> (leaves, structure).
      call = [f = hold_python(direct), done = hold_python(finish), name, results, structure](
                 std::vector<Array> values, const Device&) {
        return run_python(name, [&] {
          nb::object r = call_with_leaves(*f, values);
          host::detail::CallResult out;
          out.leaves.resize(1);
          if (results.size() == 1 && numpy_value_into(r, results[0], out.leaves[0])) {
            out.structure = structure;
            return out;
          }
          return call_result((*done)(r), results);
        });
      };
    }
    std::vector<Array> outs = host::detail::call_leaves(std::move(call), xs, results, structure, name, with_device,
                                                        device_index, call_kind(kind));
    return leaves_to_list(outs, false);
  }, nb::arg("fn"), nb::arg("leaves"), nb::arg("result_avals"), nb::arg("structure"), nb::arg("name"),
     nb::arg("with_device"), nb::arg("device_index"), nb::arg("kind"), nb::arg("direct") = nb::none(),
     nb::arg("finish") = nb::none(),
     "Binds a synchronous call: fn(leaves, (device_id, device_name)) returns (result_leaves, structure), checked "
     "against result_avals (objects with .shape and .dtype) and structure. With `direct`, direct(*leaves) is "
     "called instead and its result handed to finish(result) -> (result_leaves, structure), unless it is the "
     "one declared result leaf as a NumPy value of its aval.");

  h.def("barrier_wait", [](const std::string& logging_name) {
    nb::gil_scoped_release release;
    host::barrier_wait(logging_name);
  }, nb::arg("logging_name") = "", "Waits until every callback issued so far has run; raises the last failure.");

  h.def("release_python_objects", [] {
    raised().clear();
    clear_caches();  // jitted programs hold their callbacks' Python functions
  }, "At exit: forgets the exceptions kept for re-raising and the cached programs holding Python callbacks.");
  h.def("format_array", &host::detail::format_array, nb::arg("x"), nb::arg("threshold"),
        "An array as id_print prints it (NumPy's text, summarized past `threshold` elements).");
  h.def("format_debug", &debug::detail::format, nb::arg("fmt"), nb::arg("values"),
        "jax.debug.print's text: each `{}` of fmt replaced by the next value.");

  // Registered after bind_errors' translator, so tried before it: an error that carries a
  // Python exception's ticket raises that exception again.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      std::string type_name;
      nb::object exc = raised().find(e.what(), type_name);
      if (!exc.is_none()) {
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
        return;
      }
      // Another process's exception (a colocated worker): its type, when this process has it
      // (already imported) and it takes a message, with the worker's report as the message.
      nb::object type = exception_type(type_name);
      if (type.is_none()) throw;
      PyErr_SetString(type.ptr(), e.what());
    }
  });
}

}  // namespace tessel::python
