// tessel's side of tests/parity/cases_nn.py (include/tessel/nn.h).
#include "parity/parity.h"
#include "tessel/nn.h"

namespace ts = tessel;
using namespace tessel::parity;

namespace {
/// The `axis` parameter: a tuple of axes, or None for all of them (tessel's empty list).
ts::Axes axes_of(const Params& p) { return p.is_none("axis") ? ts::Axes{} : p.ints("axis"); }
/// An optional boolean `where` mask: the second input when there is one.
std::optional<Array> mask_of(const In& x) { return x.size() > 1 ? std::optional<Array>(x[1]) : std::nullopt; }
}  // namespace

TESSEL_PARITY_CASES(nn) {
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, Array (*)(const Array&)>>{
           {"nn.relu", ts::nn::relu},
           {"nn.relu6", ts::nn::relu6},
           {"nn.sigmoid", ts::nn::sigmoid},
           {"nn.log_sigmoid", ts::nn::log_sigmoid},
           {"nn.softplus", ts::nn::softplus},
           {"nn.sparse_plus", ts::nn::sparse_plus},
           {"nn.sparse_sigmoid", ts::nn::sparse_sigmoid},
           {"nn.soft_sign", ts::nn::soft_sign},
           {"nn.silu", ts::nn::silu},
           {"nn.swish", ts::nn::swish},
           {"nn.mish", ts::nn::mish},
           {"nn.selu", ts::nn::selu},
           {"nn.hard_tanh", ts::nn::hard_tanh},
           {"nn.hard_sigmoid", ts::nn::hard_sigmoid},
           {"nn.hard_silu", ts::nn::hard_silu},
           {"nn.hard_swish", ts::nn::hard_swish},
           {"nn.log1mexp", ts::nn::log1mexp},
           {"nn.identity", ts::nn::identity},
       })
    reg(name, unary(fn));
  reg("nn.elu", [](const In& x, const Params& p) { return out(ts::nn::elu(x[0], p.f("alpha"))); });
  reg("nn.celu", [](const In& x, const Params& p) { return out(ts::nn::celu(x[0], p.f("alpha"))); });
  reg("nn.leaky_relu",
      [](const In& x, const Params& p) { return out(ts::nn::leaky_relu(x[0], p.f("negative_slope"))); });
  reg("nn.squareplus", [](const In& x, const Params& p) { return out(ts::nn::squareplus(x[0], p.f("b"))); });
  reg("nn.gelu", [](const In& x, const Params& p) { return out(ts::nn::gelu(x[0], p.flag("approximate"))); });
  reg("nn.glu", [](const In& x, const Params& p) { return out(ts::nn::glu(x[0], p.i("axis"))); });
  reg("nn.softmax", [](const In& x, const Params& p) { return out(ts::nn::softmax(x[0], axes_of(p), mask_of(x))); });
  reg("nn.log_softmax",
      [](const In& x, const Params& p) { return out(ts::nn::log_softmax(x[0], axes_of(p), mask_of(x))); });
  reg("nn.logsumexp", [](const In& x, const Params& p) {
    ts::nn::LogSumExpOptions o{.keepdims = p.has("keepdims") && p.flag("keepdims")};
    if (x.size() > 1) o.b = x[1];
    return out(ts::nn::logsumexp(x[0], axes_of(p), o));
  });
  reg("nn.logsumexp_with_sign", [](const In& x, const Params& p) {
    auto [lse, sign] = ts::nn::logsumexp_with_sign(x[0], axes_of(p), {.b = x[1]});
    return Out{lse, sign};
  });
  reg("nn.logmeanexp", [](const In& x, const Params& p) { return out(ts::nn::logmeanexp(x[0], axes_of(p))); });
  reg("nn.standardize", [](const In& x, const Params& p) {
    return out(ts::nn::standardize(x[0], axes_of(p), {.algorithm = p.s("algorithm")}));
  });
  reg("nn.one_hot", [](const In& x, const Params& p) {
    return out(ts::nn::one_hot(x[0], p.i("num_classes"), p.dtype("dtype"), p.i("axis")));
  });
  // 3 inputs (q, k, v) with an optional is_causal; 5 with `scale`: bias and mask; 5 with
  // `window`: query and key/value lengths.
  reg("nn.dot_product_attention", [](const In& x, const Params& p) {
    ts::nn::AttentionOptions o;
    if (p.has("is_causal")) o.is_causal = p.flag("is_causal");
    if (p.has("scale")) {
      o.scale = p.f("scale");
      o.bias = x.at(3);
      o.mask = x.at(4);
    }
    if (p.has("window")) {
      const auto w = p.ints("window");
      o.local_window_size = std::pair(w.at(0), w.at(1));
      o.query_seq_lengths = x.at(3);
      o.key_value_seq_lengths = x.at(4);
    }
    return out(ts::nn::dot_product_attention(x[0], x[1], x[2], o));
  });
}
