// Shape primitives: reshape, transpose, concatenate, pad, ... and the jax.numpy functions on
// top of them.
#include <cstring>

#include "ops/op_util.h"

namespace tessel::ops {
namespace {

std::vector<Aval> reshape_aval(std::span<const Aval> ins, const Params& p) {
  const Shape& s = p.get_ints("new_sizes");
  if (shape_size(s) != ins[0].size())
    throw ShapeError("reshape: cannot reshape an array of shape " + shape_to_string(ins[0].shape) + " (" +
                     std::to_string(ins[0].size()) + " elements) to " + shape_to_string(s) + " (" +
                     std::to_string(shape_size(s)) + " elements)");
  return {Aval(s, ins[0].dtype, ins[0].weak_type)};
}

void copy_kernel(const KernelCall& c) {
  if (c.outs[0] != c.ins[0]) std::memcpy(c.outs[0], c.ins[0], c.out_avals[0].nbytes());
}

const ir::Primitive& reshape_p = ir::register_primitive({
    .name = "reshape", .abstract_eval = reshape_aval, .cpu_kernel = copy_kernel,
    .fusion = ir::FusionKind::kShape});

}  // namespace
}  // namespace tessel::ops

namespace tessel {

Array reshape(const Array& x, const Shape& shape) {
  Shape s = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw ShapeError("reshape: only one dimension may be -1, got " + shape_to_string(shape));
      infer = int64_t(i);
    } else if (s[i] < 0) {
      throw ShapeError("reshape: negative dimension in " + shape_to_string(shape));
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0)
      throw ShapeError("reshape: cannot reshape an array of shape " + shape_to_string(x.shape()) + " to " +
                       shape_to_string(shape));
    s[size_t(infer)] = x.size() / known;
  }
  if (s == x.shape()) return x;
  return ops::bind1(ops::reshape_p, {x}, ops::Params{{"new_sizes", s}});
}

Array Array::reshape(Shape s) const { return tessel::reshape(*this, s); }

}  // namespace tessel
