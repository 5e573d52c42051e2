// tessel's side of tests/parity/cases_lax.py (include/tessel/lax_extra.h): one registry
// entry per function key.
#include "parity/parity.h"
#include "tessel/lax_extra.h"
#include "tessel/numpy.h"

namespace ts = tessel;
namespace lax = tessel::lax;
using namespace tessel::parity;

namespace {

ts::Axes ints_or_empty(const Params& p, const std::string& key) { return p.has(key) ? p.ints(key) : ts::Axes{}; }

/// "NHWC,HWIO,NHWC" or "none" (cases_lax.py's dn_of).
ts::ConvDimensionNumbers dn_of(const Params& p) {
  const std::string s = p.s("dn");
  if (s == "none") return {};
  const size_t a = s.find(','), b = s.find(',', a + 1);
  return ts::ConvDimensionNumbers(s.substr(0, a), s.substr(a + 1, b - a - 1), s.substr(b + 1));
}

ts::WindowPadding padding_of(const Params& p, const std::string& key) {
  if (p.type(key) == "str") return ts::WindowPadding(p.s(key));
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (const auto& v : p.intss(key)) pads.push_back({v.at(0), v.at(1)});
  return ts::WindowPadding(pads);
}

Array shape_array(const ts::Shape& s) {
  std::vector<int32_t> v(s.begin(), s.end());
  return ts::Array::from_bytes(v.data(), {int64_t(v.size())}, ts::DType::int32);
}

lax::GatherDimensionNumbers gdn(const Params& p) {
  return {.offset_dims = p.ints("offset_dims"), .collapsed_slice_dims = p.ints("collapsed"),
          .start_index_map = p.ints("start_map"), .operand_batching_dims = ints_or_empty(p, "obd"),
          .start_indices_batching_dims = ints_or_empty(p, "sbd")};
}

lax::ScatterDimensionNumbers sdn(const Params& p) {
  return {.update_window_dims = p.ints("window"), .inserted_window_dims = p.ints("inserted"),
          .scatter_dims_to_operand_dims = p.ints("to_operand"), .operand_batching_dims = ints_or_empty(p, "obd"),
          .scatter_indices_batching_dims = ints_or_empty(p, "sbd")};
}

using Scatter = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                          const lax::ScatterOptions&);
using Binary = Array (*)(const Array&, const Array&);

}  // namespace

TESSEL_PARITY_CASES(lax) {
  // ---- element-wise ----
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Binary>>{
           {"lax.div", lax::div}, {"lax.mulhi", lax::mulhi}, {"lax.shift_right_logical", lax::shift_right_logical},
           {"lax.broadcast_like", lax::broadcast_like}})
    reg(name, binary(f));
  reg("lax.clz", unary(lax::clz));
  reg("lax.population_count", unary(lax::population_count));
  reg("lax.round", [](const In& x, const Params& p) {
    return out(lax::round(x[0], static_cast<lax::RoundingMethod>(p.i("rounding_method"))));
  });
  reg("lax.integer_pow", [](const In& x, const Params& p) { return out(lax::integer_pow(x[0], p.i("y"))); });
  reg("lax.reduce_precision", [](const In& x, const Params& p) {
    return out(lax::reduce_precision(x[0], int(p.i("exponent_bits")), int(p.i("mantissa_bits"))));
  });
  reg("lax.select_n", [](const In& x, const Params&) { return out(lax::select_n(x[0], In(x.begin() + 1, x.end()))); });

  // ---- reductions ----
  reg("lax.argmax", [](const In& x, const Params& p) { return out(lax::argmax(x[0], p.i("axis"), p.dtype("index_dtype"))); });
  reg("lax.argmin", [](const In& x, const Params& p) { return out(lax::argmin(x[0], p.i("axis"), p.dtype("index_dtype"))); });
  reg("lax.reduce", [](const In& x, const Params& p) {
    const std::string c = p.s("computation");
    const ts::DType d = x[0].dtype();
    const Binary f = c == "add" ? ts::add : c == "mul" ? ts::multiply : c == "max" ? ts::maximum : ts::minimum;
    const double init = c == "add" ? 0.0 : c == "mul" ? 1.0 : c == "max" ? -INFINITY : INFINITY;
    return out(lax::reduce(x[0], Array(ts::Scalar(init, d)), f, p.ints("dimensions")));
  });
  reg("lax.reduce_argmax_pair", [](const In& x, const Params&) {
    return lax::reduce({x[0], x[1]}, {Array(-INFINITY), Array(int32_t(0))},
                       [](const std::vector<Array>& a, const std::vector<Array>& b) {
                         const Array take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]));
                         return std::vector<Array>{ts::where(take_a, a[0], b[0]), ts::where(take_a, a[1], b[1])};
                       },
                       {1});
  });
  reg("lax.reduce_xor", [](const In& x, const Params& p) { return out(lax::reduce_xor(x[0], p.ints("axes"))); });

  // ---- scans and maps ----
  reg("lax.associative_scan", [](const In& x, const Params& p) {
    return out(lax::associative_scan([](const Array& a, const Array& b) { return a + b; }, x[0], p.flag("reverse"),
                                     p.i("axis")));
  });
  reg("lax.associative_scan_max", [](const In& x, const Params&) {
    return out(lax::associative_scan([](const Array& a, const Array& b) { return ts::maximum(a, b); }, x[0]));
  });
  reg("lax.associative_scan_affine", [](const In& x, const Params&) {
    return lax::associative_scan(
        [](const std::vector<Array>& p, const std::vector<Array>& q) {
          return std::vector<Array>{p[0] * q[0], q[0] * p[1] + q[1]};
        },
        {x[0], x[1]});
  });
  reg("lax.map", [](const In& x, const Params& p) {
    return out(lax::map([](const Array& r) { return ts::sin(r) * ts::sum(r * r); }, x[0], p.opt_i("batch_size")));
  });

  // ---- shape and slicing ----
  reg("lax.broadcast", [](const In& x, const Params& p) { return out(lax::broadcast(x[0], p.ints("sizes"))); });
  reg("lax.broadcast_to_rank", [](const In& x, const Params& p) { return out(lax::broadcast_to_rank(x[0], p.i("rank"))); });
  reg("lax.collapse", [](const In& x, const Params& p) {
    return out(lax::collapse(x[0], p.i("start_dimension"), p.opt_i("stop_dimension")));
  });
  reg("lax.optimization_barrier", [](const In& x, const Params&) { return lax::optimization_barrier(x); });
  reg("lax.index_in_dim", [](const In& x, const Params& p) {
    return out(lax::index_in_dim(x[0], p.i("index"), p.i("axis"), p.flag("keepdims")));
  });
  reg("lax.dynamic_slice_in_dim", [](const In& x, const Params& p) {
    return out(lax::dynamic_slice_in_dim(x[0], x[1], p.i("slice_size"), p.i("axis")));
  });
  reg("lax.dynamic_index_in_dim", [](const In& x, const Params& p) {
    return out(lax::dynamic_index_in_dim(x[0], x[1], p.i("axis"), p.flag("keepdims")));
  });
  reg("lax.dynamic_update_slice_in_dim", [](const In& x, const Params& p) {
    return out(lax::dynamic_update_slice_in_dim(x[0], x[1], x[2], p.i("axis")));
  });
  reg("lax.dynamic_update_index_in_dim", [](const In& x, const Params& p) {
    return out(lax::dynamic_update_index_in_dim(x[0], x[1], x[2], p.i("axis")));
  });
  reg("lax.index_take", [](const In& x, const Params& p) {
    return out(lax::index_take(x[0], In(x.begin() + 1, x.end()), p.ints("axes")));
  });

  // ---- gather and scatter ----
  reg("lax.gather", [](const In& x, const Params& p) {
    return out(lax::gather(x[0], x[1], gdn(p), p.ints("slice_sizes"), {.mode = p.s("mode")}));
  });
  reg("lax.gather_fill", [](const In& x, const Params& p) {
    return out(lax::gather(x[0], x[1], {.offset_dims = {1}, .collapsed_slice_dims = {0}, .start_index_map = {0}}, {1, 4},
                           {.mode = "fill", .fill_value = ts::Scalar(p.f("fill_value"))}));
  });
  for (auto [name, f] : std::initializer_list<std::pair<const char*, Scatter>>{
           {"lax.scatter", lax::scatter}, {"lax.scatter_add", lax::scatter_add}, {"lax.scatter_sub", lax::scatter_sub},
           {"lax.scatter_mul", lax::scatter_mul}, {"lax.scatter_min", lax::scatter_min},
           {"lax.scatter_max", lax::scatter_max}})
    reg(name, [f](const In& x, const Params& p) { return out(f(x[0], x[1], x[2], sdn(p), {.mode = p.s("mode")})); });
  reg("lax.scatter_apply", [](const In& x, const Params& p) {
    return out(lax::scatter_apply(x[0], x[1], [](const Array& v) { return ts::sin(v); }, sdn(p),
                                  p.ints("update_shape")));
  });

  // ---- random bits ----
  reg("lax.rng_bit_generator", [](const In& x, const Params& p) {
    auto [key, bits] = lax::rng_bit_generator(x[0], p.ints("shape"), p.dtype("dtype"));
    return Out{key, bits};
  });

  // ---- products ----
  reg("lax.batch_matmul", binary(lax::batch_matmul));
  reg("lax.ragged_dot", [](const In& x, const Params&) { return out(lax::ragged_dot(x[0], x[1], x[2])); });
  reg("lax.ragged_dot_general", [](const In& x, const Params& p) {
    lax::RaggedDotDimensionNumbers dn;
    dn.lhs_ragged_dimensions = {1};
    if (p.s("dims") == "contracting") {
      dn.dot_dimension_numbers.lhs_contracting = {1};
      dn.dot_dimension_numbers.rhs_contracting = {0};
    } else {  // batched: batch 0, ragged dimension 1, groups of rhs along 1
      dn.dot_dimension_numbers.lhs_contracting = {2};
      dn.dot_dimension_numbers.rhs_contracting = {2};
      dn.dot_dimension_numbers.lhs_batch = {0};
      dn.dot_dimension_numbers.rhs_batch = {0};
      dn.rhs_group_dimensions = {1};
    }
    return out(lax::ragged_dot_general(x[0], x[1], x[2], dn));
  });
  reg("lax.scatter_mul_unique", [](const In& x, const Params&) {
    return out(lax::scatter_mul(x[0], x[1], x[2], {.update_window_dims = {1}, .inserted_window_dims = {0},
                                                   .scatter_dims_to_operand_dims = {0}}));
  });
  reg("lax.approx_max_k", [](const In& x, const Params& p) {
    auto [v, i] = lax::approx_max_k(x[0], p.i("k"), p.i("reduction_dimension"));
    return Out{v, i};
  });
  reg("lax.approx_min_k", [](const In& x, const Params& p) {
    auto [v, i] = lax::approx_min_k(x[0], p.i("k"), p.i("reduction_dimension"));
    return Out{v, i};
  });

  // ---- convolutions and their shape helpers ----
  reg("lax.conv_general_dilated_patches", [](const In& x, const Params& p) {
    return out(lax::conv_general_dilated_patches(x[0], p.ints("filter_shape"), p.ints("window_strides"),
                                                 padding_of(p, "padding"), {.dimension_numbers = dn_of(p)}));
  });
  reg("lax.conv_general_dilated_local", [](const In& x, const Params& p) {
    return out(lax::conv_general_dilated_local(x[0], x[1], p.ints("window_strides"), padding_of(p, "padding"),
                                               p.ints("filter_shape"), {.dimension_numbers = dn_of(p)}));
  });
  reg("lax.conv_general_permutations", [](const In&, const Params& p) {
    const std::string s = p.s("dn");
    const size_t a = s.find(','), b = s.find(',', a + 1);
    Out r;
    for (const ts::Axes& perm : lax::conv_general_permutations(s.substr(0, a), s.substr(a + 1, b - a - 1), s.substr(b + 1)))
      r.push_back(shape_array(perm));
    return r;
  });
  reg("lax.conv_dimension_numbers", [](const In&, const Params& p) {
    const ts::ConvDimensionNumbers d = lax::conv_dimension_numbers(p.ints("lhs"), p.ints("rhs"), dn_of(p));
    return Out{shape_array(d.lhs_spec), shape_array(d.rhs_spec), shape_array(d.out_spec)};
  });
  reg("lax.conv_shape_tuple", [](const In&, const Params& p) {
    return out(shape_array(lax::conv_shape_tuple(p.ints("lhs"), p.ints("rhs"), p.ints("strides"), padding_of(p, "pads"))));
  });
  reg("lax.conv_general_shape_tuple", [](const In&, const Params& p) {
    return out(shape_array(lax::conv_general_shape_tuple(p.ints("lhs"), p.ints("rhs"), p.ints("strides"),
                                                         padding_of(p, "pads"), dn_of(p))));
  });
  reg("lax.conv_transpose_shape_tuple", [](const In&, const Params& p) {
    return out(shape_array(lax::conv_transpose_shape_tuple(p.ints("lhs"), p.ints("rhs"), p.ints("strides"),
                                                           padding_of(p, "pads"), dn_of(p))));
  });
  reg("lax.padtype_to_pads", [](const In&, const Params& p) {
    ts::Shape flat;
    for (auto [lo, hi] : lax::padtype_to_pads(p.ints("in_shape"), p.ints("window"), p.ints("strides"), p.s("padding"))) {
      flat.push_back(lo);
      flat.push_back(hi);
    }
    return out(ts::reshape(shape_array(flat), {int64_t(flat.size() / 2), 2}));
  });
  reg("lax.reduce_window_shape_tuple", [](const In&, const Params& p) {
    std::vector<std::pair<int64_t, int64_t>> pads;
    for (const auto& v : p.intss("padding")) pads.push_back({v.at(0), v.at(1)});
    return out(shape_array(lax::reduce_window_shape_tuple(p.ints("shape"), p.ints("window"), p.ints("strides"), pads,
                                                          p.ints("base"), p.ints("wdil"))));
  });
}
