#include "ops/op_util.h"

#include <algorithm>

namespace tessel::ops {

const char* codegen_type(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::int8: return "int8_t";
    case DType::int16: return "int16_t";
    case DType::int32: return "int32_t";
    case DType::int64: return "int64_t";
    case DType::uint8: return "uint8_t";
    case DType::uint16: return "uint16_t";
    case DType::uint32: return "uint32_t";
    case DType::uint64: return "uint64_t";
    case DType::float32: return "float";
    case DType::float64: return "double";
    default: return nullptr;
  }
}

std::string codegen_call(const std::string& fn, std::span<const std::string> operands, std::span<const Aval> in_avals,
                         const Aval& out) {
  for (const Aval& a : in_avals)
    if (!codegen_type(a.dtype)) return "";
  const char* type = codegen_type(out.dtype);
  if (!type) return "";
  std::string s = std::string(type) + "(tessel::scalar::" + fn + "(";
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : "") + operands[i];
  return s + "))";
}

int64_t canonicalize_axis(const std::string& op, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim)
    throw IndexError(op + ": axis " + std::to_string(axis) + " is out of bounds for an array of rank " +
                     std::to_string(ndim) + "; use an axis in [" + std::to_string(-ndim) + ", " +
                     std::to_string(ndim) + ")");
  return axis < 0 ? axis + ndim : axis;
}

Axes canonicalize_axes(const std::string& op, const Axes& axes, int64_t ndim, bool empty_means_all) {
  Axes r;
  if (axes.empty() && empty_means_all) {
    for (int64_t i = 0; i < ndim; ++i) r.push_back(i);
    return r;
  }
  for (auto a : axes) r.push_back(canonicalize_axis(op, a, ndim));
  std::sort(r.begin(), r.end());
  if (std::adjacent_find(r.begin(), r.end()) != r.end())
    throw ValueError(op + ": repeated axis in " + shape_to_string(axes) + "; name each axis once");
  return r;
}

Shape broadcast_shapes(const std::string& op, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i], &o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (size_t k = 0; k < shapes.size(); ++k) all += (k ? " and " : "") + shape_to_string(shapes[k]);
      throw ShapeError(op + ": cannot broadcast shapes " + all + " (dimension " + std::to_string(off + i) +
                       " has sizes " + std::to_string(o) + " and " + std::to_string(d) +
                       "); sizes must match or be 1");
    }
  }
  return out;
}

DType kind_default(DType d) {
  if (is_bool(d)) return d;
  if (is_integer(d)) return default_int;
  return is_complex(d) ? default_complex : default_float;
}

DType strong_dtype(const Array& x) { return x.weak_type() ? kind_default(x.dtype()) : x.dtype(); }

PromotedType result_type(const std::vector<Array>& xs) {
  PromotedType r{xs.at(0).dtype(), xs[0].weak_type()};
  for (size_t i = 1; i < xs.size(); ++i) r = promote_types(r.dtype, r.weak, xs[i].dtype(), xs[i].weak_type());
  return r;
}

std::vector<Array> broadcast_all(const std::string& op, std::vector<Array> xs) {
  std::vector<Shape> shapes;
  for (auto& x : xs) shapes.push_back(x.shape());
  Shape target = broadcast_shapes(op, shapes);
  for (auto& x : xs)
    if (x.shape() != target && !x.shape().empty()) x = broadcast_to(x, target);
  return xs;
}

std::vector<Array> promote_broadcast(const std::string& op, std::vector<Array> xs) {
  PromotedType t = result_type(xs);
  for (auto& x : xs)
    if (x.dtype() != t.dtype || x.weak_type() != t.weak) x = convert(x, t.dtype, t.weak);
  return broadcast_all(op, std::move(xs));
}

void check_same_type(const std::string& op, const std::string& what, const Aval& got, const Aval& want,
                     const std::string& fix) {
  if (got.shape == want.shape && got.dtype == want.dtype) return;
  std::string msg = op + ": " + what + " has type " + got.to_string() + ", expected " + want.to_string() + "; " + fix;
  if (got.shape == want.shape) throw DTypeError(msg);
  throw ShapeError(msg);
}

void check_same_types(const std::string& op, const std::string& what, std::span<const Aval> got,
                      std::span<const Aval> want, const std::string& fix) {
  if (got.size() != want.size())
    throw ValueError(op + ": " + what + " has " + std::to_string(got.size()) + " arrays, expected " +
                     std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i) check_same_type(op, what + " " + std::to_string(i), got[i], want[i], fix);
}

void check_dtype(const std::string& op, DType d, bool ok, const char* what) {
  if (!ok)
    throw DTypeError(op + ": dtype " + dtype_name(d) + " is not supported; expected " + what +
                     " (convert with astype)");
}

std::string avals_to_string(std::span<const Aval> avals) {
  std::string s;
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].to_string();
  return s;
}

Aval elementwise_aval(const std::string& op, std::span<const Aval> ins) {
  const Shape* shape = nullptr;
  bool weak = true;
  for (auto& a : ins) {
    weak &= a.weak_type;
    if (a.shape.empty()) continue;
    if (shape && *shape != a.shape)
      throw ShapeError(op + ": operands have different shapes " + avals_to_string(ins) +
                       "; broadcast them first (jax.numpy-level functions do this)");
    shape = &a.shape;
  }
  for (auto& a : ins)
    if (a.dtype != ins[0].dtype)
      throw DTypeError(op + ": operands have different dtypes " + avals_to_string(ins) +
                       "; convert them to one dtype first");
  return Aval(shape ? *shape : Shape{}, ins[0].dtype, weak);
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

}  // namespace tessel::ops
