// Element-wise primitives. Each is defined once: abstract evaluation (same shape, scalars
// broadcast), the CPU kernel for the dtypes it accepts, and its fusion kind.
#include "ops/op_util.h"

namespace tessel::ops {
namespace {

std::vector<Aval> same_as_inputs(std::span<const Aval> ins, const Params&) { return {elementwise_aval("binary", ins)}; }

template <class Op> void binary_kernel(const KernelCall& c) {
  visit_dtype(c.out_avals[0].dtype, [&](auto z) {
    using T = decltype(z);
    map_elementwise<T, T, T>(c, [](T a, T b) { return Op::apply(a, b); });
  });
}

struct AddOp {
  template <class T> static T apply(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else return T(compute_t<T>(a) + compute_t<T>(b));
  }
};
struct MulOp {
  template <class T> static T apply(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return T(compute_t<T>(a) * compute_t<T>(b));
  }
};

const ir::Primitive& add_p = ir::register_primitive({
    .name = "add", .abstract_eval = same_as_inputs, .cpu_kernel = binary_kernel<AddOp>,
    .fusion = ir::FusionKind::kElementwise});
const ir::Primitive& mul_p = ir::register_primitive({
    .name = "mul", .abstract_eval = same_as_inputs, .cpu_kernel = binary_kernel<MulOp>,
    .fusion = ir::FusionKind::kElementwise});

Array binary(const ir::Primitive& p, const Array& a, const Array& b) {
  auto xs = promote_broadcast(p.name, {a, b});
  return bind1(p, {xs[0], xs[1]});
}

}  // namespace
}  // namespace tessel::ops

namespace tessel {
Array add(const Array& a, const Array& b) { return ops::binary(ops::add_p, a, b); }
Array multiply(const Array& a, const Array& b) { return ops::binary(ops::mul_p, a, b); }
Array operator+(const Array& a, const Array& b) { return add(a, b); }
Array operator*(const Array& a, const Array& b) { return multiply(a, b); }
}  // namespace tessel
