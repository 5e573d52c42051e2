// NumPy's text of arrays (core/array_format.h): array2string with its default options.
#include "core/array_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <vector>

#include "core/array_impl.h"

namespace tessel {
namespace {

// ---- NumPy's array printing of floating-point values (array2string's defaults: precision
// 8, floatmode "maxprec", no suppression) ----

/// `v` as `%e` text with the fewest digits that read back as `v` in `dtype` (NumPy's unique
/// repr: a float32 0.6 is "6.e-01", not "6.0000002e-01").
std::string shortest_e(double v, DType dtype) {
  char buf[64];
  const Scalar want(v, dtype);
  for (int p = 0; p < 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p, v);
    if (Scalar(std::strtod(buf, nullptr), dtype) == want) break;
  }
  return buf;
}

/// `v` in positional notation with the shortest digits that identify it in `dtype`, at most
/// `precision` of them after the point (then rounded): "3.", "0.6", "0.33333333".
std::string positional(double v, DType dtype, int precision, bool plus) {
  const std::string e = shortest_e(v, dtype);  // [-]d[.ddd]e±xx
  const bool neg = e[0] == '-';
  const size_t epos = e.find('e');
  std::string digits;
  for (size_t i = neg ? 1 : 0; i < epos; ++i)
    if (e[i] != '.') digits += e[i];
  const int exp10 = std::atoi(e.c_str() + epos + 1);
  std::string s;
  if (int(digits.size()) - 1 - exp10 > precision) {  // too many digits: round to `precision`
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", precision, std::abs(v));
    s = buf;
    while (s.back() == '0') s.pop_back();
  } else if (exp10 >= 0) {
    if (digits.size() < size_t(exp10) + 1) digits.append(size_t(exp10) + 1 - digits.size(), '0');
    s = digits.substr(0, size_t(exp10) + 1) + "." + digits.substr(size_t(exp10) + 1);
  } else {
    s = "0." + std::string(size_t(-exp10 - 1), '0') + digits;
  }
  return (neg ? "-" : plus ? "+" : "") + s;
}

/// `v` in scientific notation: mantissa with the shortest digits (at most `precision` after
/// the point), exponent of at least two digits: "1.e-05", "1.2345e+08". Returns the
/// mantissa and the exponent's digits and sign separately, for padding.
struct SciParts {
  std::string mantissa;  // "-1.25"
  char exp_sign;
  std::string exp_digits;  // "05"
};
SciParts scientific(double v, DType dtype, int precision, bool plus) {
  std::string e = shortest_e(v, dtype);
  size_t epos = e.find('e');
  const size_t dot = e.find('.');
  if (dot != std::string::npos && epos - dot - 1 > size_t(precision)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*e", precision, v);
    e = buf;
    epos = e.find('e');
  }
  std::string m = e.substr(0, epos);
  if (m.find('.') == std::string::npos) m += '.';
  while (m.back() == '0') m.pop_back();
  if (plus && m[0] != '-') m = "+" + m;
  return {m, e[epos + 1], e.substr(epos + 2)};
}

/// Formats real values the way NumPy (2.3 on) formats one array of them: positional unless
/// the magnitudes call for scientific notation (a value ≥ 10^min(8, the dtype's decimal
/// precision) — 1e6 for float32 — or below 1e-4, or a ratio over 1e3), the integer parts
/// right-aligned and the fractions left-aligned so that the points line up. `plus` writes a
/// sign for non-negative values too (imaginary parts).
std::vector<std::string> format_reals(const std::vector<double>& vals, DType dtype, bool plus) {
  constexpr int kPrecision = 8;
  // np.finfo(dtype).precision: 2 (bfloat16), 3 (float16), 6 (float32), 15 (float64).
  const double exp_cutoff_max = dtype == DType::bfloat16 ? 1e2
                                : dtype == DType::float16 ? 1e3
                                : dtype == DType::float32 ? 1e6
                                                          : 1e8;
  double max_abs = 0, min_abs = std::numeric_limits<double>::infinity();
  bool any_finite = false;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    any_finite = true;
    if (v == 0) continue;
    max_abs = std::max(max_abs, std::abs(v));
    min_abs = std::min(min_abs, std::abs(v));
  }
  const bool exp_format = max_abs > 0 && (max_abs >= exp_cutoff_max || min_abs < 1e-4 || max_abs / min_abs > 1e3);
  std::vector<std::string> out(vals.size());
  size_t pad_left = 0, pad_right = 0;
  if (!any_finite) {
  } else if (exp_format) {
    std::vector<SciParts> parts(vals.size());
    size_t frac = 0, exp_size = 2;
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!std::isfinite(vals[i])) continue;
      parts[i] = scientific(vals[i], dtype, kPrecision, plus);
      const size_t dot = parts[i].mantissa.find('.');
      pad_left = std::max(pad_left, dot);
      frac = std::max(frac, parts[i].mantissa.size() - dot - 1);
      exp_size = std::max(exp_size, parts[i].exp_digits.size());
    }
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!std::isfinite(vals[i])) continue;
      const SciParts& p = parts[i];
      const size_t dot = p.mantissa.find('.');
      out[i] = std::string(pad_left - dot, ' ') + p.mantissa + std::string(frac - (p.mantissa.size() - dot - 1), '0') +
               'e' + p.exp_sign + std::string(exp_size - p.exp_digits.size(), '0') + p.exp_digits;
    }
    pad_right = exp_size + 2 + frac;
  } else {
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!std::isfinite(vals[i])) continue;
      out[i] = positional(vals[i], dtype, kPrecision, plus);
      const size_t dot = out[i].find('.');
      pad_left = std::max(pad_left, dot);
      pad_right = std::max(pad_right, out[i].size() - dot - 1);
    }
    for (size_t i = 0; i < vals.size(); ++i) {
      if (!std::isfinite(vals[i])) continue;
      const size_t dot = out[i].find('.');
      out[i] = std::string(pad_left - dot, ' ') + out[i] + std::string(pad_right - (out[i].size() - dot - 1), ' ');
    }
  }
  // nan and inf, right-aligned in the width of the finite values.
  for (size_t i = 0; i < vals.size(); ++i) {
    const double v = vals[i];
    if (std::isfinite(v)) continue;
    std::string s = std::isnan(v) ? "nan" : v > 0 ? (plus ? "+inf" : "inf") : "-inf";
    if (std::isnan(v) && plus) s = "+nan";
    const size_t width = any_finite ? pad_left + pad_right + 1 : 0;
    out[i] = std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
  return out;
}

/// The elements `shown` of a buffer as NumPy prints them inside an array (before the
/// alignment of the columns, which format_rec does); the others stay empty. As in NumPy,
/// only the shown elements decide the format.
std::vector<std::string> format_elements(DType d, const char* base, size_t n, const std::vector<size_t>& shown) {
  std::vector<std::string> elems(n);
  auto load = [&](size_t i) { return Scalar::load(d, base + i * itemsize(d)); };
  if (is_bool(d)) {
    for (size_t i : shown) elems[i] = load(i).to<bool>() ? "True" : "False";
  } else if (is_integer(d)) {
    for (size_t i : shown)
      elems[i] = is_unsigned_int(d) ? std::to_string(load(i).to<uint64_t>()) : std::to_string(load(i).to<int64_t>());
  } else if (is_complex(d)) {
    // NumPy: the real parts formatted as one array, the imaginary parts as another (with
    // their sign), then `j` after the imaginary digits.
    const DType part = d == DType::complex64 ? DType::float32 : DType::float64;
    std::vector<double> re, im;
    for (size_t i : shown) {
      const auto c = load(i).to<complex128_t>();
      re.push_back(c.real());
      im.push_back(c.imag());
    }
    std::vector<std::string> r = format_reals(re, part, false), m = format_reals(im, part, true);
    for (size_t k = 0; k < shown.size(); ++k) {
      const size_t end = m[k].find_last_not_of(' ') + 1;
      elems[shown[k]] = r[k] + m[k].substr(0, end) + "j" + m[k].substr(end);
    }
  } else {
    std::vector<double> vals;
    for (size_t i : shown) vals.push_back(load(i).to<double>());
    std::vector<std::string> f = format_reals(vals, d, false);
    for (size_t k = 0; k < shown.size(); ++k) elems[shown[k]] = std::move(f[k]);
  }
  return elems;
}

/// Appends the flat indices of the elements that format_rec prints (all of them, or the
/// first and last three along each long dimension of a summarized array).
void shown_elements(const Shape& shape, size_t dim, size_t offset, bool summarize, std::vector<size_t>& out) {
  if (dim == shape.size()) {
    out.push_back(offset);
    return;
  }
  size_t stride = 1;
  for (size_t k = dim + 1; k < shape.size(); ++k) stride *= size_t(shape[k]);
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (summarize && shape[dim] > 6 && i == 3) i = shape[dim] - 3;
    shown_elements(shape, dim + 1, offset + size_t(i) * stride, summarize, out);
  }
}

void format_rec(std::ostringstream& os, const std::vector<std::string>& elems, const Shape& shape, size_t dim,
                size_t offset, size_t width, const std::string& indent, int64_t threshold) {
  if (dim == shape.size()) {
    std::string e = elems[offset];
    os << std::string(width > e.size() ? width - e.size() : 0, ' ') << e;
    return;
  }
  size_t stride = 1;
  for (size_t k = dim + 1; k < shape.size(); ++k) stride *= size_t(shape[k]);
  os << "[";
  bool summarize = shape_size(shape) > threshold && shape[dim] > 6;
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (summarize && i == 3) {
      os << (dim + 1 == shape.size() ? " ..." : "\n" + indent + " ...");
      i = shape[dim] - 4;
      continue;
    }
    if (i > 0) {
      if (dim + 1 == shape.size()) os << " ";
      else os << std::string(shape.size() - dim - 1, '\n') << indent << " ";
    }
    format_rec(os, elems, shape, dim + 1, offset + size_t(i) * stride, width, indent + " ", threshold);
  }
  os << "]";
}

}  // namespace

namespace detail {

std::string array_to_string(const Array& a, int64_t threshold) {
  if (!a.valid()) return "Array(<empty>)";
  if (a.is_tracer()) return "Traced<" + a.aval().to_string() + ">";
  // NumPy prints every empty array as `[]`, whatever its shape: (0,), (2, 0), (0, 3).
  if (a.size() == 0 && !a.shape().empty()) return "[]";
  auto* c = require_concrete(a, "to_string");
  c->buffer()->wait();
  std::vector<size_t> shown;
  shown_elements(a.shape(), 0, 0, a.size() > threshold, shown);
  std::vector<std::string> elems =
      format_elements(a.dtype(), static_cast<const char*>(c->buffer()->data()), size_t(a.size()), shown);
  if (a.shape().empty()) return elems.empty() ? "" : elems[0];
  size_t width = 0;
  for (auto& e : elems) width = std::max(width, e.size());
  std::ostringstream os;
  format_rec(os, elems, a.shape(), 0, 0, width, "", threshold);
  return os.str();
}

}  // namespace detail
}  // namespace tessel
