// jax.nn.initializers over ts::random's samplers: each draws with the sampler and the scale
// arithmetic JAX uses (the scale computed in double precision, then converted to the dtype),
// so the weights equal JAX's for the same key, shape and dtype.
#include "tessel/nn_initializers.h"

#include <cmath>
#include <string>

#include "core/dtype_check.h"
#include "tessel/random.h"

namespace tessel::nn::initializers {
namespace {

Array scalar(double v, DType d) { return Array(Scalar(v, d)); }

DType real_dtype(const char* op, DType d) {
  if (!is_floating(detail::checked_dtype(d, op)))
    throw DTypeError(std::string(op) + ": dtype must be a floating dtype, got " + dtype_name(d) +
                     (is_complex(d) ? " (complex initializers are not supported yet)" : ""));
  return d;
}

int64_t norm_axis(const char* op, int64_t axis, const Shape& shape) {
  const auto nd = int64_t(shape.size());
  if (axis < -nd || axis >= nd)
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for the shape " +
                     shape_to_string(shape));
  return axis < 0 ? axis + nd : axis;
}

double axes_size(const Axes& axes, const Shape& shape) {
  double n = 1;
  for (int64_t a : axes) n *= double(shape[size_t(norm_axis("compute_fans", a, shape))]);
  return n;
}

}  // namespace

Array zeros(const Array&, const Shape& shape, DType dtype) { return tessel::zeros(shape, dtype); }

Array ones(const Array&, const Shape& shape, DType dtype) { return tessel::ones(shape, dtype); }

Initializer constant(const Array& value, DType dtype) {
  return {[value](const Array&, const Shape& shape, DType d) { return full(shape, value, d); }, dtype};
}

Initializer uniform(double scale, DType dtype) {
  return {[scale](const Array& key, const Shape& shape, DType d) {
            return random::uniform(key, shape, d) * scalar(scale, d);
          },
          dtype};
}

Initializer normal(double stddev, DType dtype) {
  return {[stddev](const Array& key, const Shape& shape, DType d) {
            return random::normal(key, shape, d) * scalar(stddev, d);
          },
          dtype};
}

Initializer truncated_normal(double stddev, DType dtype, double lower, double upper) {
  return {[=](const Array& key, const Shape& shape, DType d) {
            return random::truncated_normal(key, Array(lower), Array(upper), shape, d) * scalar(stddev, d);
          },
          dtype};
}

std::pair<double, double> compute_fans(const Shape& shape, const FanAxes& axes) {
  if (axes.in_axis == Axes{-2} && shape.size() <= 1)
    throw ValueError("compute_fans: cannot compute the input and output sizes of a " + std::to_string(shape.size()) +
                     "-dimensional weight shape " + shape_to_string(shape) +
                     " with the default in_axis; use a shape of rank >= 2 or give in_axis explicitly");
  const double in_size = axes_size(axes.in_axis, shape), out_size = axes_size(axes.out_axis, shape);
  const double batch_size = axes_size(axes.batch_axis, shape);
  double total = 1;
  for (int64_t d : shape) total *= double(d);
  // Python's true divisions, in JAX's order.
  const double receptive = total / in_size / out_size / batch_size;
  return {in_size * receptive, out_size * receptive};
}

Initializer variance_scaling(double scale, const std::string& mode, const std::string& distribution,
                             const FanAxes& axes, DType dtype) {
  if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg" && mode != "fan_geo_avg")
    throw ValueError("variance_scaling: mode must be \"fan_in\", \"fan_out\", \"fan_avg\" or \"fan_geo_avg\", got \"" +
                     mode + "\"");
  if (distribution != "truncated_normal" && distribution != "normal" && distribution != "uniform")
    throw ValueError("variance_scaling: distribution must be \"truncated_normal\", \"normal\" or \"uniform\", got \"" +
                     distribution + "\"");
  return {[=](const Array& key, const Shape& shape, DType d) {
            real_dtype("variance_scaling", d);
            auto [fan_in, fan_out] = compute_fans(shape, axes);
            const double denominator = mode == "fan_in"    ? fan_in
                                       : mode == "fan_out" ? fan_out
                                       : mode == "fan_avg" ? (fan_in + fan_out) / 2
                                                           : std::pow(fan_in * fan_out, 0.5);
            Array variance = scalar(scale / denominator, d);
            if (distribution == "truncated_normal") {
              // 0.8796... is the standard deviation of a standard normal truncated to (-2, 2).
              Array stddev = sqrt(variance) / scalar(.87962566103423978, d);
              return random::truncated_normal(key, Array(-2.0), Array(2.0), shape, d) * stddev;
            }
            if (distribution == "normal") return random::normal(key, shape, d) * sqrt(variance);
            return random::uniform(key, shape, d, Array(-1.0), Array(1.0)) * sqrt(scalar(3.0, d) * variance);
          },
          dtype};
}

Initializer glorot_uniform(const FanAxes& axes, DType dtype) {
  return variance_scaling(1.0, "fan_avg", "uniform", axes, dtype);
}
Initializer glorot_normal(const FanAxes& axes, DType dtype) {
  return variance_scaling(1.0, "fan_avg", "truncated_normal", axes, dtype);
}
Initializer lecun_uniform(const FanAxes& axes, DType dtype) {
  return variance_scaling(1.0, "fan_in", "uniform", axes, dtype);
}
Initializer lecun_normal(const FanAxes& axes, DType dtype) {
  return variance_scaling(1.0, "fan_in", "truncated_normal", axes, dtype);
}
Initializer he_uniform(const FanAxes& axes, DType dtype) {
  return variance_scaling(2.0, "fan_in", "uniform", axes, dtype);
}
Initializer he_normal(const FanAxes& axes, DType dtype) {
  return variance_scaling(2.0, "fan_in", "truncated_normal", axes, dtype);
}
Initializer xavier_uniform(const FanAxes& axes, DType dtype) { return glorot_uniform(axes, dtype); }
Initializer xavier_normal(const FanAxes& axes, DType dtype) { return glorot_normal(axes, dtype); }
Initializer kaiming_uniform(const FanAxes& axes, DType dtype) { return he_uniform(axes, dtype); }
Initializer kaiming_normal(const FanAxes& axes, DType dtype) { return he_normal(axes, dtype); }

Initializer orthogonal(double scale, int64_t column_axis, DType dtype) {
  return {[=](const Array& key, const Shape& shape, DType d) {
            if (shape.size() < 2)
              throw ValueError("orthogonal: the initializer needs a shape of rank >= 2, got " + shape_to_string(shape));
            const int64_t col = norm_axis("orthogonal", column_axis, shape);
            int64_t total = 1;
            for (int64_t s : shape) total *= s;
            if (total == 0) return tessel::zeros(shape, d);
            const int64_t n_cols = shape[size_t(col)], n_rows = total / n_cols;
            Array q = random::orthogonal(key, n_rows, {}, d, n_cols);
            Shape rest = shape;
            rest.erase(rest.begin() + col);
            rest.push_back(n_cols);
            return scalar(scale, d) * moveaxis(reshape(q, rest), -1, col);
          },
          dtype};
}

Initializer delta_orthogonal(double scale, int64_t column_axis, DType dtype) {
  return {[=](const Array& key, const Shape& shape, DType d) {
            const size_t nd = shape.size();
            if (nd < 3 || nd > 5)
              throw ValueError("delta_orthogonal: the initializer needs a 3-, 4- or 5-dimensional shape, got " +
                               shape_to_string(shape));
            if (shape[nd - 1] < shape[nd - 2])
              throw ValueError("delta_orthogonal: fan_in (shape[-2] = " + std::to_string(shape[nd - 2]) +
                               ") must not exceed fan_out (shape[-1] = " + std::to_string(shape[nd - 1]) + ")");
            Array ortho = orthogonal(scale, column_axis, d)(key, {shape[nd - 2], shape[nd - 1]});
            // The matrix sits at the centre ((k - 1) / 2) of every spatial axis.
            Shape lifted(nd - 2, 1);
            lifted.push_back(shape[nd - 2]);
            lifted.push_back(shape[nd - 1]);
            std::vector<Array> start;
            for (size_t i = 0; i < nd; ++i)
              start.push_back(Array(Scalar(i + 2 < nd ? int32_t((shape[i] - 1) / 2) : 0, DType::int32)));
            return dynamic_update_slice(tessel::zeros(shape, d), reshape(ortho, lifted), start);
          },
          dtype};
}

}  // namespace tessel::nn::initializers
