// The few hot conversions that go through NumPy's C API instead of the buffer protocol or
// DLPack (each of which builds and releases a memoryview or capsule per value): a host
// callback's arguments and results, and jit's NumPy arguments. The only file that includes
// NumPy's headers; common.h declares what it defines.
#define PY_ARRAY_UNIQUE_SYMBOL tessel_numpy_api
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "common.h"
#include "tessel/host_view.h"

namespace tessel::python {
namespace {

std::atomic<size_t> g_numpy_copy_bytes{0};

/// NumPy's kind character and item size of `d`; kind 0 for bfloat16, which NumPy lacks.
std::pair<char, int> numpy_kind(DType d) {
  if (d == DType::bfloat16) return {0, 0};
  const char kind = is_bool(d) ? 'b' : is_signed_int(d) ? 'i' : is_unsigned_int(d) ? 'u' : is_complex(d) ? 'c' : 'f';
  return {kind, int(itemsize(d))};
}

/// The tessel dtype of a native-byte-order NumPy descriptor, if any.
std::optional<DType> dtype_of_descr(PyArray_Descr* d) {
  if (PyDataType_ISBYTESWAPPED(d)) return std::nullopt;
  if (d->kind == 'B') return std::nullopt;  // dtype_of_kind's code for bfloat16, not a NumPy kind
  return dtype_of_kind(d->kind, int64_t(PyDataType_ELSIZE(d)) * 8);
}

bool same_type(PyArray_Descr* d, DType want) {
  const auto [kind, size] = numpy_kind(want);
  return kind && d->kind == kind && PyDataType_ELSIZE(d) == size && !PyDataType_ISBYTESWAPPED(d) &&
         d->type_num != NPY_OBJECT;
}

/// References to NumPy arguments that jit wrapped, dropped by threads without the GIL: the
/// device's stream releases an argument when its computation is done, and taking the GIL
/// there would wait for the Python thread (which holds it while it runs Python code). They
/// are dropped on a Python thread instead: at the next wrapped argument, or by a pending
/// call the interpreter runs soon.
class DeferredReleases {
 public:
  void release(PyObject* o) {
    if (PyGILState_Check()) {
      Py_DECREF(o);
      return;
    }
    bool schedule = false;
    {
      std::lock_guard lock(mu_);
      pending_.push_back(o);
      schedule = !scheduled_;
      scheduled_ = true;
    }
    if (schedule && Py_AddPendingCall(&DeferredReleases::run_pending, this) != 0) {
      std::lock_guard lock(mu_);
      scheduled_ = false;  // the interpreter's queue is full: the next wrapped argument drains
    }
  }
  /// Drops the pending references (GIL held).
  void drain() {
    std::vector<PyObject*> gone;
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) return;
      gone.swap(pending_);
    }
    for (PyObject* o : gone) Py_DECREF(o);
  }

 private:
  static int run_pending(void* self) {
    auto* d = static_cast<DeferredReleases*>(self);
    {
      std::lock_guard lock(d->mu_);
      d->scheduled_ = false;
    }
    d->drain();
    return 0;
  }
  std::mutex mu_;
  std::vector<PyObject*> pending_;
  bool scheduled_ = false;
};

DeferredReleases& deferred_releases() {
  static auto* d = new DeferredReleases();  // never destroyed: used by threads until exit
  return *d;
}

}  // namespace

void init_numpy_api() {
  if (_import_array() < 0) throw nb::python_error();
}

nb::object numpy_over(const Array& x) {
  std::optional<HostView> v = host_view(x);
  const auto [kind, size] = numpy_kind(x.dtype());
  if (!v || !kind) return to_numpy(x);
  npy_intp dims[NPY_MAXDIMS];
  const size_t rank = v->shape.size();
  if (rank > NPY_MAXDIMS) return to_numpy(x);
  for (size_t i = 0; i < rank; ++i) dims[i] = npy_intp(v->shape[i]);
  PyArray_Descr* descr = reinterpret_cast<PyArray_Descr*>(dtype_to_py(x.dtype()).release().ptr());  // stolen below
  nb::object arr = nb::steal(PyArray_NewFromDescr(&PyArray_Type, descr, int(rank), dims, nullptr,
                                                  const_cast<void*>(v->data), NPY_ARRAY_CARRAY, nullptr));
  if (!arr.is_valid()) throw nb::python_error();
  auto* owner = new std::shared_ptr<const void>(std::move(v->owner));
  nb::capsule keep(owner, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr.ptr()), keep.release().ptr()) < 0)
    throw nb::python_error();
  return arr;
}

bool numpy_value_into(nb::handle h, const ShapeDtype& want, Array& out) {
  PyObject* p = h.ptr();
  if (PyArray_Check(p)) {
    auto* a = reinterpret_cast<PyArrayObject*>(p);
    if (!same_type(PyArray_DESCR(a), want.dtype) || !PyArray_IS_C_CONTIGUOUS(a) ||
        size_t(PyArray_NDIM(a)) != want.shape.size())
      return false;
    for (size_t i = 0; i < want.shape.size(); ++i)
      if (PyArray_DIM(a, int(i)) != want.shape[i]) return false;
    count_numpy_copy(size_t(PyArray_NBYTES(a)));
    out = Array::from_bytes(PyArray_DATA(a), want.shape, want.dtype);
    return true;
  }
  if (want.shape.empty() && numpy_kind(want.dtype).first &&
      Py_TYPE(p) == reinterpret_cast<PyArray_Descr*>(dtype_to_py(want.dtype).ptr())->typeobj) {
    // A NumPy scalar of exactly the dtype's scalar type (np.float32 for float32); other
    // scalar types (np.longlong for int64) take the generic path.
    alignas(16) unsigned char value[16];
    PyArray_ScalarAsCtype(p, value);
    count_numpy_copy(itemsize(want.dtype));
    out = Array::from_bytes(value, want.shape, want.dtype);
    return true;
  }
  return false;
}

std::optional<Array> wrap_numpy_argument(nb::handle h) {
  PyObject* p = h.ptr();
  if (!PyArray_CheckExact(p)) return std::nullopt;
  auto* a = reinterpret_cast<PyArrayObject*>(p);
  std::optional<DType> dtype = dtype_of_descr(PyArray_DESCR(a));
  if (!dtype || !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || PyArray_SIZE(a) == 0) return std::nullopt;
  // tessel's complex kernels read components: alignment to the component suffices, which
  // NumPy's ALIGNED flag (alignment to the whole item's natural alignment) implies.
  Shape shape(size_t(PyArray_NDIM(a)));
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = int64_t(PyArray_DIM(a, int(i)));
  deferred_releases().drain();
  Py_INCREF(p);
  try {
    return wrap_host_memory(PyArray_DATA(a), shape, *dtype, [p] {
      if (Py_IsInitialized()) deferred_releases().release(p);  // leaked when the interpreter is gone
    });
  } catch (const ValueError&) {
    Py_DECREF(p);  // refused before taking `release` (alignment): the caller copies
    return std::nullopt;
  }
}

std::optional<ShapeDtype> numpy_argument_aval(nb::handle h) {
  PyObject* p = h.ptr();
  if (!PyArray_CheckExact(p)) return std::nullopt;
  auto* a = reinterpret_cast<PyArrayObject*>(p);
  std::optional<DType> dtype = dtype_of_descr(PyArray_DESCR(a));
  if (!dtype) return std::nullopt;
  Shape shape(size_t(PyArray_NDIM(a)));
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = int64_t(PyArray_DIM(a, int(i)));
  return ShapeDtype(std::move(shape), *dtype);
}

Array to_argument(nb::handle h) {
  if (std::optional<Array> wrapped = wrap_numpy_argument(h)) return *std::move(wrapped);
  return to_array(h);
}

void count_numpy_copy(size_t nbytes) { g_numpy_copy_bytes.fetch_add(nbytes, std::memory_order_relaxed); }

size_t numpy_copy_bytes() { return g_numpy_copy_bytes.load(std::memory_order_relaxed); }

}  // namespace tessel::python
