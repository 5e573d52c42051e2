// jit's fast-path cache key: the avals of a call's positional Array arguments packed into one
// bytes object in one call (hashable, exact), instead of a tuple of tuples built per argument.
#include <cstring>
#include <optional>
#include <vector>

#include "common.h"

namespace tessel::python {

void bind_jit_key(nb::module_& m) {
  nb::module_ t = nb::borrow<nb::module_>(m.attr("transform_functions"));  // bound first (module.cpp)
  t.def("avals_key", [](nb::args args) -> nb::object {
    std::vector<int64_t> words;
    words.reserve(args.size() * 4);
    for (nb::handle h : args) {
      Array* x;
      std::optional<ShapeDtype> numpy;
      if (!nb::try_cast<Array*>(h, x) || !x || !x->valid()) {
        numpy = numpy_argument_aval(h);  // a NumPy argument keys as the Array it becomes
        if (!numpy) return nb::none();
      }
      const ShapeDtype& av = numpy ? *numpy : x->aval_ref();
      words.push_back(int64_t(av.shape.size()) << 16 | int64_t(av.dtype) << 1 | int64_t(av.weak_type));
      words.insert(words.end(), av.shape.begin(), av.shape.end());
    }
    return nb::steal(PyBytes_FromStringAndSize(reinterpret_cast<const char*>(words.data()),
                                               Py_ssize_t(words.size() * sizeof(int64_t))));
  }, "avals_key(*args): one bytes object naming the avals (shape, dtype, weak type) of the positional "
     "arguments, or None when one is neither an Array nor a NumPy array of a tessel dtype; jit's fast cache "
     "keys on it.");
}

}  // namespace tessel::python
