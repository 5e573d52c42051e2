#pragma once
// Shared helpers of the extension module tessel._tessel: conversions between Python objects
// and tessel values (arrays, dtypes, axes, indices). The bindings use the public API only
// (include/tessel/*.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <memory>
#include <tuple>
#include <optional>
#include <span>
#include <vector>

#include "tessel/array.h"
#include "tessel/dtype.h"
#include "tessel/jit.h"
#include "tessel/ops.h"

namespace nb = nanobind;

namespace tessel::python {

/// A dtype from what NumPy accepts as one (np.float32, np.dtype, "float32", "bfloat16") or a
/// Python type (float -> float32, int -> int32, complex -> complex64, bool -> bool, as
/// jax.numpy's defaults).
DType dtype_from_py(nb::handle h);
/// The dtype of NumPy's kind character ('b', 'i', 'u', 'f', 'c'; 'B' for bfloat16, which
/// NumPy lacks) and item size in bits; nullopt where tessel has none (long double, ...).
std::optional<DType> dtype_of_kind(char kind, int64_t bits);
/// The NumPy dtype of `d` (bfloat16 as ml_dtypes' when installed, else the name).
nb::object dtype_to_py(DType d);

/// An Array from a Python value: an Array as it is; a Python scalar as a weak-typed rank-0
/// array of jax.numpy's default dtypes; a NumPy array (or anything np.asarray takes) with
/// its dtype; a nested list as np.asarray makes it, with 64-bit defaults narrowed as JAX
/// does (float64 -> float32, int64 -> int32).
Array to_array(nb::handle h);
/// Like to_array, but a Python scalar meets `other` as in JAX: weak, and holding its value
/// in double precision when `other` is 64-bit (so `x_f64 * 0.1` keeps 0.1 exactly).
Array to_array_like(nb::handle h, const Array& other);
/// Array arguments of one function converted together: the first one that is not a Python
/// scalar is converted with to_array, the others like it (to_array_like), so Python scalars
/// are weak against it whichever position they take.
template <class... H> std::array<Array, sizeof...(H)> to_arrays_like(H... hs);
/// An optional dtype argument (None -> nullopt).
std::optional<DType> optional_dtype(nb::handle h);

/// NumPy's axis argument: None -> all axes (returned as nullopt), an int, or a tuple.
std::optional<Axes> to_axes(nb::handle h);
/// A shape from an int or a sequence of ints.
Shape to_shape(nb::handle h);
/// An index expression (`x[...]`): ints, slices, None, Ellipsis, integer index arrays.
std::vector<Index> to_index(nb::handle h);

/// The elements of `x` as a new NumPy array (one copy; bfloat16 is widened to float32).
nb::object to_numpy(const Array& x);
/// Imports NumPy's C API for python/src/numpy_api.cpp (at module import).
void init_numpy_api();
/// A writable NumPy array over `x`'s memory, kept alive by the NumPy array (no copy; a copy
/// through to_numpy for bfloat16 or arrays laid out over devices). For values nobody else
/// reads (a host callback's private copies of its arguments).
nb::object numpy_over(const Array& x);
/// A NumPy array or scalar `h` of exactly `want`'s dtype and shape (C-contiguous) copied into
/// `out`; false, `out` untouched, for anything else (the caller converts it generically).
bool numpy_value_into(nb::handle h, const ShapeDtype& want, Array& out);
/// An Array over the memory of NumPy array `h` without a copy (tessel::wrap_host_memory,
/// holding a reference to `h`) when it is a C-contiguous, aligned, non-empty np.ndarray of
/// a tessel dtype in native byte order; nullopt otherwise.
std::optional<Array> wrap_numpy_argument(nb::handle h);
/// The aval a NumPy array argument `h` (an np.ndarray of a tessel dtype, any layout) has as
/// an Array; nullopt for anything else.
std::optional<ShapeDtype> numpy_argument_aval(nb::handle h);
/// A jitted call's argument: wrap_numpy_argument's array when it applies, else to_array.
Array to_argument(nb::handle h);
/// Counts `nbytes` copied out of a NumPy array (or scalar) into a tessel array.
void count_numpy_copy(size_t nbytes);
/// Bytes counted by count_numpy_copy since the module was imported (tests check that jit
/// arguments are not copied).
size_t numpy_copy_bytes();
/// The single element of `x` as a Python bool, int, float or complex.
nb::object to_python_scalar(const Array& x);

/// The arrays as a Python list.
nb::list to_list(std::span<const Array> xs);
/// Arrays from a Python sequence; None stands for an absent value (a zero tangent or
/// cotangent) when `allow_none`.
std::vector<Array> from_list(nb::handle seq, bool allow_none = false);
/// The C++ function of leaves that calls the Python function `f(list_of_arrays)` (with the
/// GIL taken, whichever thread runs it).
detail::FlatFn flat_fn(nb::handle f);

template <class T> using HandleFor = nb::handle;
/// Binds the C++ function `fn` of arrays as `name` taking Python values, converted together
/// by to_arrays_like; `extra` are nanobind's annotations (nb::arg names, defaults, docs).
template <class... A, class... Extra>
void def_arrays(nb::module_& m, const char* name, Array (*fn)(const A&...), const Extra&... extra) {
  m.def(name, [fn](HandleFor<A>... xs) {
    return std::apply([fn](const auto&... a) { return fn(a...); }, to_arrays_like(xs...));
  }, extra...);
}

template <class... H> std::array<Array, sizeof...(H)> to_arrays_like(H... hs) {
  nb::handle handles[] = {hs...};
  nb::handle anchor = handles[0];
  for (nb::handle h : handles)
    if (!PyBool_Check(h.ptr()) && !PyLong_CheckExact(h.ptr()) && !PyFloat_CheckExact(h.ptr()) &&
        !PyComplex_CheckExact(h.ptr())) {
      anchor = h;
      break;
    }
  Array first = to_array(anchor);
  return {(hs.ptr() == anchor.ptr() ? first : to_array_like(hs, first))...};
}

void bind_errors(nb::module_& m);
void bind_array(nb::module_& m);
void bind_numpy(nb::module_& m);
void bind_transforms(nb::module_& m);
void bind_fft(nb::module_& m);
void bind_host(nb::module_& m);
void bind_colocated(nb::module_& m);
void bind_pipeline(nb::module_& m);

/// Holds the GIL for Python code run from any thread (host callbacks, traced functions). On a
/// thread Python did not create (tessel's streams and receivers), the first use makes the
/// thread's Python thread state and keeps it for the thread's life, where
/// nb::gil_scoped_acquire would make and free one per callback.
class ScopedGil {
 public:
  ScopedGil() {
    thread_local bool kept = false;
    if (!kept && !PyGILState_GetThisThreadState()) {
      PyGILState_Ensure();  // never released: the thread state stays
      kept = keep_ = true;
    } else {
      state_ = PyGILState_Ensure();
    }
  }
  ~ScopedGil() {
    if (keep_) PyEval_SaveThread();
    else PyGILState_Release(state_);
  }
  ScopedGil(const ScopedGil&) = delete;
  ScopedGil& operator=(const ScopedGil&) = delete;

 private:
  PyGILState_STATE state_{};
  bool keep_ = false;
};
/// A Python object owned by C++ closures (callbacks, colocated functions, traced functions):
/// released with the GIL held, whichever thread drops the last reference, and leaked when the
/// interpreter is already gone (a cache destroyed at process exit). python/src/host.cpp.
std::shared_ptr<nb::object> hold_python(nb::handle o);

/// Waits for `x`'s value with the GIL released (a no-op for tracers and ready arrays): what
/// every binding that reads values calls first, so that a host callback the value waits for
/// can take the GIL (python/src/host.cpp).
void wait_without_gil(const Array& x);

/// Throws a tessel::Error for Python exception `e` (GIL held), raised in Python code that C++
/// ran for `name` (a host callback, a colocated function): its message carries the traceback
/// text, and when it reaches Python again the original exception object is raised
/// (python/src/host.cpp). Use it wherever C++ keeps or moves an error across threads.
[[noreturn]] void throw_as_error(const std::string& name, nb::python_error& e);

void bind_sharding(nb::module_& m);
void bind_comm(nb::module_& m);
void bind_custom_partitioning(nb::module_& m);
void bind_interop(nb::module_& m);
void bind_jit_key(nb::module_& m);
void bind_linalg(nb::module_& m);
void bind_scipy(nb::module_& m);

}  // namespace tessel::python
