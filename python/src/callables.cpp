// Python callables as C++ functions of Array lists: what every transformation, shard_map,
// custom_partitioning and communication binding hands to the C++ tracer.
#include "common.h"

namespace tessel::python {

nb::list to_list(std::span<const Array> xs) {
  nb::list l;
  for (const Array& x : xs) l.append(nb::cast(x));
  return l;
}

std::vector<Array> from_list(nb::handle seq, bool allow_none) {
  std::vector<Array> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) {
    if (allow_none && h.is_none()) out.emplace_back();
    else out.push_back(to_array(h));
  }
  return out;
}

detail::FlatFn flat_fn(nb::handle f) {
  return [f = hold_python(f)](std::span<const Array> xs) {
    ScopedGil gil;
    return from_list((*f)(to_list(xs)));
  };
}

}  // namespace tessel::python
