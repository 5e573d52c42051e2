// Zero-copy views of tessel arrays for NumPy (`__array__`, the buffer protocol) and DLPack
// (`__dlpack__`), through tessel/host_view.h: the view's owner keeps the array's buffer
// alive, and views are read-only, as jax.Array's are. The other way, tessel arrays over
// NumPy arrays' memory (tessel::wrap_host_memory), holding a reference to the NumPy array.
#include <nanobind/ndarray.h>

#include <memory>
#include <vector>

#include "common.h"
#include "tessel/host_view.h"

namespace tessel::python {

/// The DLPack dtype of `d` (convert.cpp).
nb::dlpack::dtype dlpack_dtype(DType d);
/// The tessel dtype of DLPack dtype `t` of `source`'s elements; a DTypeError when none (convert.cpp).
DType dtype_from_dlpack(nb::dlpack::dtype t, nb::handle source);

namespace {

/// The view of `x` as an ndarray of framework `Framework` (None when `x` has no single buffer).
template <class... Framework> nb::object view_of(const Array& x) {
  wait_without_gil(x);  // a host callback the value waits for needs the GIL
  std::optional<HostView> v = host_view(x);
  if (!v) return nb::none();
  auto* owner = new std::shared_ptr<const void>(std::move(v->owner));
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
  std::vector<size_t> shape(v->shape.begin(), v->shape.end());
  return nb::cast(nb::ndarray<nb::ro, nb::c_contig, Framework...>(v->data, shape.size(), shape.data(), keep, nullptr,
                                                                  dlpack_dtype(v->dtype), nb::device::cpu::value, 0));
}

}  // namespace

void bind_interop(nb::module_& m) {
  nb::module_ i = m.def_submodule("interop_functions", "Zero-copy views behind Array.__array__ and __dlpack__");
  i.def("numpy_view", [](const Array& x) -> nb::object {
    if (x.dtype() == DType::bfloat16) return nb::none();  // NumPy has no bfloat16 of its own
    return view_of<nb::numpy>(x);
  }, nb::arg("x"), "A read-only NumPy array over x's memory, or None (x laid out over devices, or bfloat16).");
  i.def("dlpack_view", [](const Array& x) { return view_of<>(x); }, nb::arg("x"),
        "A DLPack capsule over x's memory (read-only by convention), or None.");
  i.def("wrap_numpy", [](nb::handle a, bool strict) -> nb::object {
    nb::ndarray<nb::ro, nb::device::cpu> arr;
    if (!nb::try_cast(a, arr)) {
      if (strict)
        throw ValueError("asarray: copy=False, but a value of type " +
                         nb::cast<std::string>(nb::type_name(a.type())) +
                         " cannot be used without a copy (not a NumPy array of native byte order in CPU memory)");
      return nb::none();
    }
    Shape shape(arr.ndim());
    std::vector<int64_t> strides(arr.ndim());
    for (size_t k = 0; k < arr.ndim(); ++k) {
      shape[k] = int64_t(arr.shape(k));
      strides[k] = int64_t(arr.stride(k)) * int64_t(arr.itemsize());
    }
    DType dtype = dtype_from_dlpack(arr.dtype(), a);
    try {
      return nb::cast(wrap_host_memory(arr.data(), shape, dtype, [owner = hold_python(a)]() mutable { owner.reset(); },
                                       strides));
    } catch (const ValueError&) {
      if (strict) throw;
      return nb::none();  // not C-contiguous or misaligned: the caller copies
    }
  }, nb::arg("a"), nb::arg("strict") = false,
     "An Array over the memory of NumPy array `a` (kept alive by the Array), or None when it needs a copy "
     "(not C-contiguous, misaligned); with `strict` that is a ValueError saying why.");
}

}  // namespace tessel::python
