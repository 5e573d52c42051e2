// tessel's side of tests/parity/cases_conv.py (include/tessel/conv.h).
#include "parity/parity.h"
#include "tessel/conv.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
/// JAX's `padding`: a string, or (low, high) pairs.
ts::WindowPadding padding(const Params& p, const std::string& key = "padding") {
  if (p.type(key) == "str") return ts::WindowPadding(p.s(key));
  std::vector<std::pair<int64_t, int64_t>> pads;
  for (const auto& lh : p.intss(key)) pads.emplace_back(lh.at(0), lh.at(1));
  return ts::WindowPadding(pads);
}
ts::WindowComputation computation(const std::string& name) {
  if (name == "add") return ts::add;
  if (name == "max") return ts::maximum;
  return ts::minimum;
}
}  // namespace

TESSEL_PARITY_CASES(conv) {
  reg("conv_general_dilated", [](const In& x, const Params& p) {
    if (p.has("dimension_numbers")) {  // "NHWC,HWIO,NHWC"
      std::string d = p.s("dimension_numbers");
      const size_t a = d.find(','), b = d.find(',', a + 1);
      return out(ts::conv_general_dilated(
          x[0], x[1], p.ints("window_strides"), padding(p),
          {.dimension_numbers = {d.substr(0, a), d.substr(a + 1, b - a - 1), d.substr(b + 1)}}));
    }
    return out(ts::conv_general_dilated(x[0], x[1], p.ints("window_strides"), padding(p),
                                        {.lhs_dilation = p.ints("lhs_dilation"),
                                         .rhs_dilation = p.ints("rhs_dilation"),
                                         .feature_group_count = p.i("feature_group_count")}));
  });
  reg("conv", [](const In& x, const Params& p) { return out(ts::conv(x[0], x[1], p.ints("window_strides"), padding(p))); });
  reg("conv_with_general_padding", [](const In& x, const Params& p) {
    return out(ts::conv_with_general_padding(x[0], x[1], p.ints("window_strides"), padding(p), p.ints("lhs_dilation"),
                                             p.ints("rhs_dilation")));
  });
  reg("conv_transpose", [](const In& x, const Params& p) {
    return out(ts::conv_transpose(x[0], x[1], p.ints("strides"), padding(p),
                                  {.dimension_numbers = ts::ConvDimensionNumbers("NHWC", "HWIO", "NHWC"),
                                   .transpose_kernel = p.flag("transpose_kernel")}));
  });
  reg("convolve", [](const In& x, const Params& p) { return out(ts::convolve(x[0], x[1], p.s("mode"))); });
  reg("correlate", [](const In& x, const Params& p) { return out(ts::correlate(x[0], x[1], p.s("mode"))); });
  reg("reduce_window", [](const In& x, const Params& p) {
    ts::Scalar init = p.type("init") == "int" ? ts::Scalar(p.i("init")).astype(x[0].dtype())
                                              : ts::Scalar(p.f("init")).astype(x[0].dtype());
    return out(ts::reduce_window(x[0], init, computation(p.s("computation")), p.ints("window_dimensions"),
                                 p.ints("window_strides"), padding(p), p.ints("base_dilation"),
                                 p.ints("window_dilation")));
  });
  reg("cumlogsumexp",
      [](const In& x, const Params& p) { return out(ts::cumlogsumexp(x[0], p.i("axis"), p.flag("reverse"))); });
  reg("nn.max_pool", [](const In& x, const Params& p) {
    return out(ts::nn::max_pool(x[0], p.ints("window_shape"), p.ints("strides"), padding(p)));
  });
  reg("nn.min_pool", [](const In& x, const Params& p) {
    return out(ts::nn::min_pool(x[0], p.ints("window_shape"), p.ints("strides"), padding(p)));
  });
  reg("nn.avg_pool", [](const In& x, const Params& p) {
    return out(ts::nn::avg_pool(x[0], p.ints("window_shape"), p.ints("strides"), padding(p)));
  });
}
