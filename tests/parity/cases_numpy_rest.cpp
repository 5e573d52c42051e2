// tessel's side of tests/parity/cases_numpy_rest.py (include/tessel/numpy.h): one registry
// entry per function key. The fixed callables of apply_along_axis, apply_over_axes,
// fromfunction and piecewise are the generator's, by name; queries whose JAX result is a
// Python value (ndim, can_cast, promote_types, ...) return it as the generator records it.
#include <algorithm>
#include <functional>
#include <map>

#include "parity/parity.h"
#include "tessel/linalg.h"
#include "tessel/numpy.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
using Unary = Array (*)(const Array&);
using Fn1 = std::function<Array(const Array&)>;

Array int32_scalar(int64_t v) { return Array(ts::Scalar(v, ts::DType::int32)); }
Array bool_scalar(bool v) { return Array(ts::Scalar(v)); }
/// The generator's record of a dtype: its position in cases_numpy_rest.py's DTYPE_NAMES.
Array dtype_code(ts::DType d) {
  static const std::vector<ts::DType> names{
      ts::DType::bool_,   ts::DType::int8,     ts::DType::int16,   ts::DType::int32,   ts::DType::int64,
      ts::DType::uint8,   ts::DType::uint16,   ts::DType::uint32,   ts::DType::uint64,  ts::DType::float16, ts::DType::bfloat16,
      ts::DType::float32, ts::DType::float64,  ts::DType::complex64, ts::DType::complex128};
  auto it = std::find(names.begin(), names.end(), d);
  return int32_scalar(it == names.end() ? -1 : int64_t(it - names.begin()));
}
Out outs(std::vector<Array> v) { return v; }
Out pair_out(std::pair<Array, Array> v) { return {std::move(v.first), std::move(v.second)}; }

/// cases_numpy_rest.py's ALONG: a vector to an array.
const std::map<std::string, Fn1>& along() {
  static const std::map<std::string, Fn1> m{
      {"sum_sin", [](const Array& v) { return ts::sum(ts::sin(v)); }},
      {"cumsum_sq", [](const Array& v) { return ts::cumsum(v * v, 0); }},
      {"stats", [](const Array& v) { return ts::stack({ts::sum(v), ts::max(v), v[{0}]}); }},
      {"outer", [](const Array& v) { return ts::outer(v, ts::slice(v, {0}, {2})); }},
  };
  return m;
}
/// OVER: an array and an axis to an array.
const std::map<std::string, std::function<Array(const Array&, int64_t)>>& over() {
  static const std::map<std::string, std::function<Array(const Array&, int64_t)>> m{
      {"sum", [](const Array& a, int64_t axis) { return ts::sum(a, {axis}); }},
      {"cumsum", [](const Array& a, int64_t axis) { return ts::cumsum(a, axis); }},
      {"max_keep", [](const Array& a, int64_t axis) { return ts::max(a, {axis}, true); }},
  };
  return m;
}
/// FROM: index arrays to an array.
Array from_function(const std::string& name, const std::vector<Array>& i) {
  if (name == "affine") return i.at(0) * 3 - i.at(1) + 0.5;
  return i.at(0) * i.at(1) + i.at(2);
}
/// PIECES: piecewise's functions.
std::vector<Fn1> pieces(const std::string& name) {
  if (name == "sin_cos") return {Unary(ts::sin), Unary(ts::cos)};
  return {[](const Array& x) { return x * x; }, [](const Array& x) { return -x; },
          [](const Array& x) { return x + 1.0; }};
}
/// The generator's `_` for a space in a string parameter ("real_floating").
std::string spaced(std::string s) {
  for (char& c : s)
    if (c == '_') c = ' ';
  return s;
}
}  // namespace

TESSEL_PARITY_CASES(numpy_rest) {
  // ---- creation and element-wise aliases ----
  reg("ones", [](const In&, const Params& p) { return out(ts::ones(p.ints("shape"), p.dtype("dtype"))); });
  reg("zeros", [](const In&, const Params& p) { return out(ts::zeros(p.ints("shape"), p.dtype("dtype"))); });
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Unary>>{
           {"copy", ts::copy}, {"degrees", ts::degrees}, {"radians", ts::radians}, {"positive", ts::positive},
           {"matrix_transpose", ts::matrix_transpose}})
    reg(name, unary(f));

  // ---- products ----
  reg("cross", [](const In& x, const Params& p) {
    ts::linalg::CrossAxes axes;
    if (p.has("axis")) axes.axis = p.i("axis");
    if (p.has("axisa")) axes = {.axisa = p.i("axisa"), .axisb = p.i("axisb"), .axisc = p.i("axisc")};
    return out(ts::cross(x[0], x[1], axes));
  });
  reg("vecdot", [](const In& x, const Params& p) { return out(ts::vecdot(x[0], x[1], p.i("axis"))); });

  // ---- index helpers ----
  reg("diag_indices", [](const In&, const Params& p) { return outs(ts::diag_indices(p.i("n"), p.i("ndim"))); });
  // Assembly and histograms: the generator's nested lists by their lengths.
  reg("block", [](const In& x, const Params& p) {
    if (p.has("planes")) {
      std::vector<std::vector<std::vector<Array>>> planes;
      size_t at = 0;
      for (const auto& rows : p.intss("planes")) {
        planes.emplace_back();
        for (int64_t len : rows) {
          planes.back().emplace_back(x.begin() + int64_t(at), x.begin() + int64_t(at) + len);
          at += size_t(len);
        }
      }
      return out(ts::block(planes));
    }
    if (p.has("row")) return out(ts::block(In(x)));  // one list: depth 1
    std::vector<std::vector<Array>> nested;
    size_t at = 0;
    for (int64_t len : p.ints("rows")) {
      nested.emplace_back(x.begin() + int64_t(at), x.begin() + int64_t(at) + len);
      at += size_t(len);
    }
    return out(ts::block(nested));
  });
  reg("mask_indices", [](const In&, const Params& p) {
    const auto func = p.s("func") == "triu" ? ts::triu : ts::tril;
    return pair_out(ts::mask_indices(p.i("n"), func, p.i("k")));
  });
  reg("empty", [](const In&, const Params& p) { return out(ts::empty(p.ints("shape"), p.dtype("dtype"))); });
  reg("shape", [](const In& x, const Params&) {
    const ts::Shape s = ts::shape(x[0]);
    return out(ts::astype(Array(std::vector<int64_t>(s.begin(), s.end()), {int64_t(s.size())}), ts::DType::int32));
  });
  auto opt_dtype = [](const Params& p) {
    return p.is_none("dtype") ? std::optional<ts::DType>() : std::optional<ts::DType>(p.dtype("dtype"));
  };
  reg("asarray", [opt_dtype](const In& x, const Params& p) { return out(ts::asarray(x[0], opt_dtype(p))); });
  reg("array", [opt_dtype](const In& x, const Params& p) { return out(ts::array(x[0], opt_dtype(p))); });
  reg("histogramdd", [](const In& x, const Params& p) {
    ts::HistogramddOptions o;
    if (p.has("lohi")) {
      const std::vector<double> v = p.floats("lohi");
      for (size_t i = 0; i + 1 < v.size(); i += 2) o.range.push_back(std::make_pair(v[i], v[i + 1]));
    }
    if (p.has("density")) o.density = p.flag("density");
    std::vector<ts::HistogramBins> bins;
    if (x.size() == 4) {  // explicit edges per dimension
      bins.assign(x.begin() + 1, x.end());
    } else if (p.type("bins") == "ints") {
      for (int64_t b : p.ints("bins")) bins.push_back(b);
    } else {
      bins.assign(size_t(x[0].dim(1)), p.i("bins"));
    }
    if (x.size() == 2) o.weights = x[1];
    auto [hist, edges] = ts::histogramdd(x[0], bins, o);
    Out r{hist};
    r.insert(r.end(), edges.begin(), edges.end());
    return r;
  });
  reg("histogram2d", [](const In& x, const Params& p) {
    ts::HistogramddOptions o;
    if (p.has("density")) o.density = p.flag("density");
    std::vector<ts::HistogramBins> bins;
    if (p.type("bins") == "ints") {
      for (int64_t b : p.ints("bins")) bins.push_back(b);
    } else {
      bins = {p.i("bins"), p.i("bins")};
    }
    auto [h, xe, ye] = ts::histogram2d(x[0], x[1], bins, o);
    return Out{h, xe, ye};
  });
  reg("diag_indices_from", [](const In& x, const Params&) { return outs(ts::diag_indices_from(x[0])); });
  reg("tril_indices_from", [](const In& x, const Params& p) { return pair_out(ts::tril_indices_from(x[0], p.i("k"))); });
  reg("triu_indices_from", [](const In& x, const Params& p) { return pair_out(ts::triu_indices_from(x[0], p.i("k"))); });

  // ---- functions over fixed callables ----
  reg("apply_along_axis", [](const In& x, const Params& p) {
    return out(ts::apply_along_axis(along().at(p.s("func")), p.i("axis"), x[0]));
  });
  reg("apply_over_axes", [](const In& x, const Params& p) {
    return out(ts::apply_over_axes(over().at(p.s("func")), x[0], p.ints("axes")));
  });
  reg("fromfunction", [](const In&, const Params& p) {
    const std::string name = p.s("func");
    return out(ts::fromfunction([&](const std::vector<Array>& i) { return from_function(name, i); }, p.ints("shape"),
                                p.dtype("dtype")));
  });
  reg("piecewise", [](const In& x, const Params& p) {
    return out(ts::piecewise(x[0], In(x.begin() + 1, x.end()), pieces(p.s("func"))));
  });

  // ---- queries whose JAX result is a Python value ----
  reg("ndim", [](const In& x, const Params&) { return out(int32_scalar(ts::ndim(x[0]))); });
  reg("size", [](const In& x, const Params&) { return out(int32_scalar(ts::size(x[0]))); });
  reg("iscomplexobj", [](const In& x, const Params&) { return out(bool_scalar(ts::iscomplexobj(x[0]))); });
  reg("isrealobj", [](const In& x, const Params&) { return out(bool_scalar(ts::isrealobj(x[0]))); });
  reg("broadcast_shapes", [](const In&, const Params& p) {
    std::vector<ts::Shape> shapes;
    for (const auto& s : p.intss("shapes")) shapes.push_back(s);
    ts::Shape r = ts::broadcast_shapes(shapes);
    std::vector<int32_t> v(r.begin(), r.end());
    return out(Array::from_bytes(v.data(), {int64_t(v.size())}, ts::DType::int32));
  });
  reg("promote_types", [](const In&, const Params& p) { return out(dtype_code(ts::promote_types(p.dtype("a"), p.dtype("b")))); });
  reg("can_cast", [](const In&, const Params& p) {
    return out(bool_scalar(ts::can_cast(p.dtype("a"), p.dtype("b"), p.s("casting"))));
  });
  reg("isdtype", [](const In&, const Params& p) { return out(bool_scalar(ts::isdtype(p.dtype("a"), spaced(p.s("kind"))))); });
  reg("issubdtype", [](const In&, const Params& p) {
    return out(bool_scalar(ts::issubdtype(p.dtype("a"), p.s("category"))));
  });
  reg("result_type", [](const In& x, const Params&) { return out(dtype_code(ts::result_type(x))); });

  // ---- concrete-only set functions: eager only, as in JAX ----
  reg("setxor1d", [](const In& x, const Params& p) {
    return out(ts::setxor1d(x[0], x[1], p.has("assume_unique") && p.flag("assume_unique")));
  });
  reg("trim_zeros", [](const In& x, const Params& p) { return out(ts::trim_zeros(x[0], p.s("trim"))); });
  eager_only("setxor1d", "the result's size depends on the values: concrete inputs only, as jnp.setxor1d without size");
  eager_only("trim_zeros", "the result's size depends on the values: concrete inputs only, as jnp.trim_zeros");
  eager_only("mask_indices", "the result's size depends on the mask's values: concrete only, as jnp.mask_indices without size");
}
