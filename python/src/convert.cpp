// Conversions between Python objects and tessel values, and the error classes.
#include <nanobind/ndarray.h>

#include <array>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include "common.h"
#include "tessel/error.h"

namespace tessel::python {
namespace {

nb::module_& numpy_module() {
  static nb::module_* np = new nb::module_(nb::module_::import_("numpy"));  // lives as long as the process
  return *np;
}

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::type_name(h.type())); }

/// str(h) (nb::str(h) would take h to be a str already).
std::string py_str(nb::handle h) { return nb::cast<std::string>(nb::steal<nb::str>(PyObject_Str(h.ptr()))); }

}  // namespace

std::optional<DType> dtype_of_kind(char kind, int64_t bits) {
  switch (kind) {
    case 'b': return DType::bool_;
    case 'i':
      switch (bits) { case 8: return DType::int8; case 16: return DType::int16; case 32: return DType::int32; case 64: return DType::int64; }
      break;
    case 'u':
      switch (bits) { case 8: return DType::uint8; case 16: return DType::uint16; case 32: return DType::uint32; case 64: return DType::uint64; }
      break;
    case 'f':
      switch (bits) { case 16: return DType::float16; case 32: return DType::float32; case 64: return DType::float64; }
      break;
    case 'B':
      if (bits == 16) return DType::bfloat16;
      break;
    case 'c':
      switch (bits) { case 64: return DType::complex64; case 128: return DType::complex128; }
      break;
    default: break;
  }
  return std::nullopt;
}

DType dtype_from_dlpack(nb::dlpack::dtype t, nb::handle source) {
  using code = nb::dlpack::dtype_code;
  const char kind = code(t.code) == code::Bool ? 'b' : code(t.code) == code::Int ? 'i' : code(t.code) == code::UInt ? 'u'
                    : code(t.code) == code::Float ? 'f' : code(t.code) == code::Bfloat ? 'B'
                    : code(t.code) == code::Complex ? 'c' : 0;
  if (std::optional<DType> d = dtype_of_kind(kind, t.bits)) return *d;
  throw DTypeError("asarray: the NumPy dtype " + py_str(source.attr("dtype")) +
                   " has no tessel dtype; convert it to a bool, integer, floating or complex dtype first");
}

namespace {


/// An Array copied from a NumPy array or scalar (any layout: non-contiguous ones are made contiguous).
Array from_numpy(nb::handle a) {
  // np.asarray(order="C") rather than np.ascontiguousarray, which makes 0-d arrays 1-d.
  nb::object c = numpy_module().attr("asarray")(a, nb::arg("order") = "C");
  if (nb::cast<std::string>(c.attr("dtype").attr("name")) == "bfloat16") {
    nb::object bits = c.attr("view")("uint16");
    auto arr = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(bits);
    Shape s(arr.ndim());
    for (size_t i = 0; i < arr.ndim(); ++i) s[i] = int64_t(arr.shape(i));
    count_numpy_copy(arr.nbytes());
    return Array::from_bytes(arr.data(), s, DType::bfloat16);
  }
  std::string kind = nb::cast<std::string>(c.attr("dtype").attr("kind"));
  nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> arr;
  if (kind.find_first_of("biufc") != 0 || kind.size() != 1 || !nb::try_cast(c, arr))
    throw DTypeError("asarray: cannot convert a value of type " + py_type_name(a) + " with NumPy dtype " +
                     py_str(c.attr("dtype")) +
                     " to an Array; pass numbers, nested lists of numbers or a numeric NumPy array");
  Shape s(arr.ndim());
  for (size_t i = 0; i < arr.ndim(); ++i) s[i] = int64_t(arr.shape(i));
  count_numpy_copy(arr.nbytes());
  return Array::from_bytes(arr.data(), s, dtype_from_dlpack(arr.dtype(), c));
}

bool is_python_scalar(PyObject* p) {
  return PyBool_Check(p) || PyLong_CheckExact(p) || PyFloat_CheckExact(p) || PyComplex_CheckExact(p);
}

int64_t python_int(PyObject* p) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
  if (overflow)
    throw ValueError("asarray: the Python int " + py_str(p) +
                     " does not fit in int64; pass a float or a smaller int");
  return int64_t(v);
}

}  // namespace

nb::dlpack::dtype dlpack_dtype(DType d) {
  using code = nb::dlpack::dtype_code;
  code c = is_bool(d) ? code::Bool
           : is_signed_int(d) ? code::Int
           : is_unsigned_int(d) ? code::UInt
           : is_complex(d) ? code::Complex
           : d == DType::bfloat16 ? code::Bfloat : code::Float;
  return nb::dlpack::dtype{uint8_t(c), uint8_t(itemsize(d) * 8), 1};
}

DType dtype_from_py(nb::handle h) {
  PyObject* p = h.ptr();
  if (p == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::float32;
  if (p == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::int32;
  if (p == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::bool_;
  if (p == reinterpret_cast<PyObject*>(&PyComplex_Type)) return DType::complex64;
  if (PyUnicode_Check(p)) {
    std::string name = nb::cast<std::string>(h);
    if (name == "bfloat16" || name == "bf16") return DType::bfloat16;
  }
  nb::object dt;
  try {
    dt = numpy_module().attr("dtype")(h);
  } catch (const nb::python_error&) {
    throw DTypeError("dtype: " + nb::cast<std::string>(nb::repr(h)) +
                     " is not a dtype; pass a NumPy dtype, a type such as numpy.float32, or a name such as 'float32'");
  }
  std::string name = nb::cast<std::string>(dt.attr("name"));
  return dtype_from_name(name == "bool" ? "bool" : name);
}

std::optional<DType> optional_dtype(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return dtype_from_py(h);
}

nb::object dtype_to_py(DType d) {
  static std::array<PyObject*, kNumDTypes> cache{};  // owned references, kept for the process
  PyObject*& slot = cache[size_t(d)];
  if (!slot) {
    nb::object dt;
    if (d == DType::bfloat16) {
      try {
        dt = numpy_module().attr("dtype")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
      } catch (const nb::python_error&) {
        dt = nb::str("bfloat16");
      }
    } else {
      dt = numpy_module().attr("dtype")(dtype_name(d));
    }
    slot = dt.release().ptr();
  }
  return nb::borrow(slot);
}

Array to_array(nb::handle h) {
  if (nb::isinstance<Array>(h)) return nb::cast<const Array&>(h);
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return Array(p == Py_True);
  if (PyLong_CheckExact(p)) {
    int64_t v = python_int(p);
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) return Array(int(v));
    return Array(v);
  }
  if (PyFloat_CheckExact(p)) return Array(float(PyFloat_AS_DOUBLE(p)));
  if (PyComplex_CheckExact(p))
    return Array(complex64_t(float(PyComplex_RealAsDouble(p)), float(PyComplex_ImagAsDouble(p))));
  if (PyList_Check(p) || PyTuple_Check(p)) {
    // A list holding Arrays (tracers included) is stacked; others go through NumPy with
    // JAX's default dtypes for Python numbers.
    nb::sequence seq = nb::borrow<nb::sequence>(h);
    bool has_array = false;
    for (nb::handle item : seq) has_array = has_array || nb::isinstance<Array>(item);
    if (has_array) {
      std::vector<Array> items;
      for (nb::handle item : seq) items.push_back(to_array(item));
      return stack(items, 0);
    }
    nb::object a = numpy_module().attr("asarray")(h);
    std::string name = nb::cast<std::string>(a.attr("dtype").attr("name"));
    if (name == "float64") a = a.attr("astype")("float32");
    else if (name == "int64") a = a.attr("astype")("int32");
    else if (name == "complex128") a = a.attr("astype")("complex64");
    return from_numpy(a);
  }
  if (nb::hasattr(h, "__array__") || PyObject_CheckBuffer(p)) return from_numpy(h);
  throw DTypeError("asarray: cannot convert a value of type " + py_type_name(h) +
                   " to an Array; pass an Array, a Python number, a nested list of numbers or a NumPy array");
}

Array to_array_like(nb::handle h, const Array& other) {
  PyObject* p = h.ptr();
  if (!is_python_scalar(p) || PyBool_Check(p)) return to_array(h);
  DType od = other.dtype();
  bool wide = od == DType::float64 || od == DType::complex128 || od == DType::int64 || od == DType::uint64;
  if (!wide) return to_array(h);
  if (PyLong_CheckExact(p)) return Array(python_int(p));
  if (PyFloat_CheckExact(p)) return Array(PyFloat_AS_DOUBLE(p));
  return to_array(h);
}

std::optional<Axes> to_axes(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  if (PyLong_Check(h.ptr())) return Axes{nb::cast<int64_t>(h)};
  Axes axes;
  for (nb::handle a : nb::borrow<nb::sequence>(h)) axes.push_back(nb::cast<int64_t>(a));
  return axes;
}

Shape to_shape(nb::handle h) {
  if (PyLong_Check(h.ptr())) return Shape{nb::cast<int64_t>(h)};
  Shape s;
  for (nb::handle a : nb::borrow<nb::sequence>(h)) s.push_back(nb::cast<int64_t>(a));
  return s;
}

std::vector<Index> to_index(nb::handle h) {
  std::vector<Index> out;
  auto bound = [](PyObject* b) -> std::optional<int64_t> {
    if (b == Py_None) return std::nullopt;
    return nb::cast<int64_t>(nb::handle(b));
  };
  auto one = [&](nb::handle item) {
    PyObject* p = item.ptr();
    if (PyBool_Check(p))
      throw IndexError("index: a Python bool is not a valid index; use an int, a slice, None or an integer array");
    if (PyLong_Check(p)) {
      out.emplace_back(nb::cast<int64_t>(item));
    } else if (PySlice_Check(p)) {
      auto* s = reinterpret_cast<PySliceObject*>(p);
      out.emplace_back(Slice(bound(s->start), bound(s->stop), bound(s->step)));
    } else if (p == Py_None) {
      out.emplace_back(newaxis);
    } else if (p == Py_Ellipsis) {
      out.emplace_back(ellipsis);
    } else {
      Array a = to_array(item);
      if (a.dtype() == DType::bool_)
        throw IndexError("index: boolean mask indexing gives a data-dependent shape, which tessel does not support; "
                         "use tessel.numpy.where(mask, x, fill) instead");
      out.emplace_back(a);
    }
  };
  if (PyTuple_Check(h.ptr())) {
    for (nb::handle item : nb::borrow<nb::tuple>(h)) one(item);
  } else {
    one(h);
  }
  return out;
}

nb::object to_numpy(const Array& x) {
  wait_without_gil(x);
  if (x.dtype() == DType::bfloat16) return to_numpy(x.astype(DType::float32));
  std::vector<size_t> shape(x.shape().begin(), x.shape().end());
  auto make = [&](auto* values, nb::dlpack::dtype dt) {
    using V = std::remove_pointer_t<decltype(values)>;
    nb::capsule owner(values, [](void* v) noexcept { delete static_cast<V*>(v); });
    return nb::ndarray<nb::numpy>(values->data(), shape.size(), shape.data(), owner, nullptr, dt).cast();
  };
  if (x.dtype() == DType::bool_)
    return make(new std::vector<uint8_t>(x.astype(DType::uint8).to_vector<uint8_t>()), dlpack_dtype(DType::bool_));
  return visit_dtype(x.dtype(), [&](auto z) -> nb::object {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, bfloat16_t>) {
      return nb::none();  // handled above
    } else {
      return make(new std::vector<T>(x.to_vector<T>()), dlpack_dtype(x.dtype()));
    }
  });
}

nb::object to_python_scalar(const Array& x) {
  wait_without_gil(x);
  Scalar s = x.scalar();
  DType d = s.dtype();
  if (is_bool(d)) return nb::bool_(s.to<bool>());
  if (is_signed_int(d)) return nb::int_(s.to<int64_t>());
  if (is_unsigned_int(d)) return nb::int_(s.to<uint64_t>());
  if (is_complex(d)) {
    complex128_t c = s.to<complex128_t>();
    return nb::steal(PyComplex_FromDoubles(c.real(), c.imag()));
  }
  return nb::float_(s.to<double>());
}

namespace {

/// The Python class of each tessel error: a subclass of TesselError and of the matching
/// built-in exception, so `except ValueError` and `except tessel.TesselError` both catch.
struct ErrorClasses {
  PyObject *base, *value, *shape, *dtype, *index, *concretization, *not_implemented, *resource;
};
ErrorClasses error_classes;

PyObject* new_error_class(nb::module_& m, const char* name, PyObject* builtin, PyObject* base, const char* doc) {
  nb::object bases = base ? nb::make_tuple(nb::handle(base), nb::handle(builtin)) : nb::make_tuple(nb::handle(builtin));
  std::string qualified = std::string("tessel.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!cls) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  return cls;  // the module holds a reference too; this one lives as long as the process
}

}  // namespace

void bind_errors(nb::module_& m) {
  ErrorClasses& c = error_classes;
  c.base = new_error_class(m, "TesselError", PyExc_RuntimeError, nullptr, "Base of every error tessel raises.");
  c.value = new_error_class(m, "TesselValueError", PyExc_ValueError, c.base, "An argument with an invalid value.");
  c.shape = new_error_class(m, "ShapeError", PyExc_ValueError, c.base, "Shapes or ranks that do not fit together.");
  c.dtype = new_error_class(m, "DTypeError", PyExc_TypeError, c.base, "A dtype the operation does not accept.");
  c.index = new_error_class(m, "TesselIndexError", PyExc_IndexError, c.base, "An index or axis out of range.");
  c.concretization = new_error_class(m, "ConcretizationTypeError", PyExc_TypeError, c.base,
                                     "A concrete value was needed from a traced array (e.g. `if x > 0` under jit).");
  c.not_implemented = new_error_class(m, "TesselNotImplementedError", PyExc_NotImplementedError, c.base,
                                      "A primitive lacks the rule a transformation needs.");
  c.resource = new_error_class(m, "ResourceExhaustedError", PyExc_MemoryError, c.base,
                               "The system could not provide memory, a thread or a file.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    const ErrorClasses& e = error_classes;
    try {
      std::rethrow_exception(p);
    } catch (const ShapeError& x) {
      PyErr_SetString(e.shape, x.what());
    } catch (const DTypeError& x) {
      PyErr_SetString(e.dtype, x.what());
    } catch (const IndexError& x) {
      PyErr_SetString(e.index, x.what());
    } catch (const ValueError& x) {
      PyErr_SetString(e.value, x.what());
    } catch (const ConcretizationError& x) {
      PyErr_SetString(e.concretization, x.what());
    } catch (const NotImplementedError& x) {
      PyErr_SetString(e.not_implemented, x.what());
    } catch (const ResourceExhaustedError& x) {
      PyErr_SetString(e.resource, x.what());
    } catch (const Error& x) {
      PyErr_SetString(e.base, x.what());
    }
  });
}

}  // namespace tessel::python
