// convert_element_type: dtype conversion (jnp astype, lax.convert_element_type).
#include "core/dtype_check.h"
#include "ops/rule_util.h"

namespace tessel::ops {
namespace {

std::vector<Aval> convert_aval(std::span<const Aval> ins, const Params& p) {
  return {Aval(ins[0].shape, p.get<DType>("new_dtype"), p.get<bool>("weak_type"))};
}

void convert_kernel(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  visit_dtype(c.in_avals[0].dtype, [&](auto zs) {
    using S = decltype(zs);
    visit_dtype(c.out_avals[0].dtype, [&](auto zd) {
      using D = decltype(zd);
      const S* in = c.in<S>(0);
      D* out = c.out<D>(0);
      auto body = [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) out[i] = convert_value<D>(in[i]);
      };
      if (n <= kElementwiseGrain) body(0, n);
      else cpu::parallel_for(n, kElementwiseGrain, body);
    });
  });
}

// Conversions C++ defines as convert_value does: to bool (!= 0), between floating types, and
// from integers or bool. Float-to-integer conversion saturates in convert_value and stays
// an unfused kernel.
std::string convert_codegen(std::span<const std::string> xs, std::span<const Aval> in_avals, const Aval& out,
                            const Params&) {
  const char* from = codegen_type(in_avals[0].dtype);
  const char* to = codegen_type(out.dtype);
  if (!from || !to) return "";
  if (in_avals[0].dtype == out.dtype) return xs[0];
  if (out.dtype == DType::bool_) return "(" + xs[0] + " != " + from + "(0))";
  if (is_floating(in_avals[0].dtype) && !is_floating(out.dtype)) return "";
  return std::string(to) + "(" + xs[0] + ")";
}

// The tangent converts along when the target dtype has a tangent space (float, complex);
// conversion to an integer or bool is piecewise constant.
std::vector<Array> convert_jvp(const ir::Primitive& self, std::span<const Array>, std::span<const Array> ts,
                               std::span<const Array>, const Params& p) {
  if (!is_inexact(p.get<DType>("new_dtype"))) return {Array()};
  return {bind1(self, {ts[0]}, p)};
}

// Linear: the cotangent converts back to the operand's dtype.
std::vector<Array> convert_transpose(const ir::Primitive& self, std::span<const Array> cts, std::span<const Array>,
                                     std::span<const Aval> avals, const Params&) {
  if (is_zero(cts[0]) || !is_inexact(avals[0].dtype)) return {Array()};
  return {bind1(self, {cts[0]}, Params{{"new_dtype", avals[0].dtype}, {"weak_type", avals[0].weak_type}})};
}

const ir::Primitive& convert_p = ir::register_primitive({
    .name = "convert_element_type",
    .arity = {1, 1},
    .abstract_eval = convert_aval,
    .cpu_kernel = convert_kernel,
    .fusion = ir::FusionKind::kElementwise,
    .codegen = convert_codegen,
    .jvp = convert_jvp,
    .transpose = convert_transpose,
    .batch = batch_vectorized,
    .sharding_rule = ir::elementwise_sharding_rule,
});

}  // namespace

Array convert(const Array& x, DType dtype, bool weak) {
  if (x.dtype() == dtype && x.weak_type() == weak) return x;
  // Concrete scalars (C++ literals) convert at once, so traced programs show `2.0:f32[]`
  // rather than a conversion equation.
  if (auto* c = detail::as_concrete(x); c && c->on_one_local_device() && c->aval.shape.empty() && c->buffer()->ready() && !c->buffer()->failed())
    return detail::scalar_array(x.scalar().astype(dtype), weak);
  return bind1(convert_p, {x}, Params{{"new_dtype", dtype}, {"weak_type", weak}});
}

}  // namespace tessel::ops

namespace tessel {

Array astype(const Array& x, DType dtype) { return ops::convert(x, detail::checked_dtype(dtype, "astype"), false); }
Array Array::astype(DType d) const { return tessel::astype(*this, d); }

}  // namespace tessel
