// tessel.Array: the C++ Array with Python's number, comparison and indexing protocols.
// Printing, `.at[...]`, `__array__` and NumPy-style methods are added in tessel/_array.py.
#include <string>

#include "common.h"
#include "tessel/sharding.h"

namespace tessel::python {
namespace {

using BinaryFn = Array (*)(const Array&, const Array&);

/// Python's binary operators: (method, reflected method, function).
struct BinaryOperator {
  const char* name;
  const char* reflected;  // null for comparisons
  BinaryFn fn;
};

const BinaryOperator kBinaryOperators[] = {
    {"__add__", "__radd__", &add},
    {"__sub__", "__rsub__", &subtract},
    {"__mul__", "__rmul__", &multiply},
    {"__truediv__", "__rtruediv__", &true_divide},
    {"__floordiv__", "__rfloordiv__", &floor_divide},
    {"__mod__", "__rmod__", &remainder},
    {"__pow__", "__rpow__", &tessel::pow},
    {"__matmul__", "__rmatmul__", &matmul},
    {"__and__", "__rand__", &bitwise_and},
    {"__or__", "__ror__", &bitwise_or},
    {"__xor__", "__rxor__", &bitwise_xor},
    {"__lshift__", "__rlshift__", &left_shift},
    {"__rshift__", "__rrshift__", &right_shift},
    {"__lt__", nullptr, &less},
    {"__le__", nullptr, &less_equal},
    {"__gt__", nullptr, &greater},
    {"__ge__", nullptr, &greater_equal},
    {"__eq__", nullptr, &equal},
    {"__ne__", nullptr, &not_equal},
};

/// Operands that are neither arrays, numbers, lists nor NumPy arrays are left to the other
/// operand's reflected method (Python's NotImplemented protocol).
bool is_operand(nb::handle h) {
  PyObject* p = h.ptr();
  return nb::isinstance<Array>(h) || PyBool_Check(p) || PyLong_Check(p) || PyFloat_Check(p) || PyComplex_Check(p) ||
         PyList_Check(p) || PyTuple_Check(p) || nb::hasattr(h, "__array__");
}

Array reshape_args(const Array& x, nb::args args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return x.reshape(to_shape(args[0]));
  return x.reshape(to_shape(args));
}

}  // namespace

void bind_array(nb::module_& m) {
  nb::class_<Array> cls(m, "Array",
                        "An immutable n-dimensional array on a device (jax.Array). Under a transformation "
                        "(jit, grad, vmap) the same type is a tracer.");
  cls.def("__init__", [](Array* self, nb::handle value) { new (self) Array(to_array(value)); }, nb::arg("value"),
          "An Array from an Array, a Python number (weakly typed), a nested list or a NumPy array.")
      .def_prop_ro("shape", [](const Array& x) {
        nb::list l;
        for (int64_t d : x.shape()) l.append(d);
        return nb::tuple(l);
      }, "The dimensions, outermost first.")
      .def_prop_ro("ndim", &Array::ndim, "Number of dimensions.")
      .def_prop_ro("size", &Array::size, "Number of elements.")
      .def_prop_ro("nbytes", &Array::nbytes, "Bytes of the elements.")
      .def_prop_ro("dtype", [](const Array& x) { return dtype_to_py(x.dtype()); }, "The element type (a NumPy dtype).")
      .def_prop_ro("weak_type", &Array::weak_type, "True for values made from Python scalars (they adopt the "
                   "dtype of the arrays they meet).")
      .def_prop_ro("T", &Array::T, "The transpose (axes reversed).")
      .def_prop_ro("_is_tracer", &Array::is_tracer, "True under a transformation (no concrete value).")
      .def_prop_ro("_aval_key", [](const Array& x) {
        nb::list l;
        for (int64_t d : x.shape()) l.append(d);
        return nb::make_tuple(nb::tuple(l), int(x.dtype()), x.weak_type());
      }, "(shape, dtype number, weak_type): what jit's cache keys on.")
      .def("astype", [](const Array& x, nb::handle dtype) { return x.astype(dtype_from_py(dtype)); }, nb::arg("dtype"),
           "The elements converted to `dtype`.")
      .def("reshape", &reshape_args, "reshape(*shape) or reshape(shape): the same elements in a new shape.")
      .def("block_until_ready", [](const Array& x) {
        {
          nb::gil_scoped_release release;
          x.block_until_ready();
        }
        return x;
      }, "Waits until the value is computed; returns the array.")
      .def("is_ready", &Array::is_ready, "True when the value is computed (never blocks).")
      .def("item", [](const Array& x) { return to_python_scalar(x); }, "The single element as a Python number.")
      .def("_numpy", [](const Array& x) { return to_numpy(x); }, "The elements as a new NumPy array.")
      .def("_text", [](const Array& x) { wait_without_gil(x); return x.to_string(); }, "NumPy-style text of the elements.")
      .def("__float__", [](const Array& x) { wait_without_gil(x); return x.item<double>(); })
      .def("__int__", [](const Array& x) { wait_without_gil(x); return x.item<int64_t>(); })
      .def("__complex__", [](const Array& x) {
        wait_without_gil(x);
        complex128_t c = x.item<complex128_t>();
        return nb::steal(PyComplex_FromDoubles(c.real(), c.imag()));
      })
      .def("__bool__", [](const Array& x) { wait_without_gil(x); return x.item<bool>(); })
      .def("__index__", [](const Array& x) {
        if (!is_integer(x.dtype()) && !is_bool(x.dtype()))
          throw DTypeError(std::string("__index__: only integer arrays can be used as an index; this one is ") +
                           dtype_name(x.dtype()));
        wait_without_gil(x);
        return x.item<int64_t>();
      })
      .def("__len__", [](const Array& x) {
        if (x.ndim() == 0) throw nb::type_error("len() of unsized object (a rank-0 Array)");
        return x.shape()[0];
      })
      .def("__getitem__", [](const Array& x, nb::handle index) { return x[to_index(index)]; })
      .def("_at", [](const Array& x, nb::handle index, const std::string& op, nb::handle value,
                     std::optional<std::string> mode, nb::handle fill_value) {
        AtProxy at = x.at(to_index(index));
        IndexOptions options;
        if (mode) options.mode = *mode;
        if (!fill_value.is_none()) options.fill_value = to_array(fill_value).astype(x.dtype()).scalar();
        if (op == "get") return at.get(options);
        Array v = to_array_like(value, x);
        if (op == "set") return at.set(v, options);
        if (op == "add") return at.add(v, options);
        if (op == "multiply") return at.mul(v, options);
        if (op == "min") return at.min(v, options);
        if (op == "max") return at.max(v, options);
        throw ValueError("at: unknown update '" + op + "'; use get, set, add, multiply, min or max");
      }, nb::arg("index"), nb::arg("op"), nb::arg("value").none(), nb::arg("mode").none(),
         nb::arg("fill_value").none(), "x.at[index].<op>(value): functional indexed read or update.")
      .def("__neg__", [](const Array& x) { return negative(x); })
      .def("__pos__", [](const Array& x) { return x; })
      .def("__abs__", [](const Array& x) { return tessel::abs(x); })
      .def("__invert__", [](const Array& x) { return bitwise_not(x); });
  for (const BinaryOperator& op : kBinaryOperators) {
    BinaryFn fn = op.fn;
    cls.def(op.name, [fn](const Array& a, nb::handle b) -> nb::object {
      if (!is_operand(b)) return nb::borrow(Py_NotImplemented);
      return nb::cast(fn(a, to_array_like(b, a)));
    });
    if (!op.reflected) continue;  // a comparison: Python mirrors it (a < b falls back to b > a)
    cls.def(op.reflected, [fn](const Array& a, nb::handle b) -> nb::object {
      if (!is_operand(b)) return nb::borrow(Py_NotImplemented);
      return nb::cast(fn(to_array_like(b, a), a));
    });
  }
}

}  // namespace tessel::python
