// jax.random.permutation and choice as compositions: a shuffle is a few rounds of sorting by
// fresh 32-bit random keys (JAX's _shuffle, after tf2xla), choice draws indices by randint,
// a shuffle, an inverse-CDF search or Gumbel top-k as JAX does for each case.
#include <cmath>

#include "random/sampler_util.h"
#include "tessel/sort.h"

namespace tessel::random {
using namespace sampler;
namespace {

// Sorting by random 32-bit keys; enough rounds that all keys are distinct with high
// probability (3 log(n) / log(2^32 - 1) rounds, at least one for n > 1).
Array shuffle(Array key, Array x, int64_t axis) {
  const double n = double(std::max<int64_t>(1, x.size()));
  const auto rounds = int64_t(std::ceil(3.0 * std::log(n) / std::log(4294967295.0)));
  for (int64_t r = 0; r < rounds; ++r) {
    auto [next, sub] = split2(key);
    key = next;
    x = sort_key_val(bits(sub, x.shape(), DType::uint32), x, axis).second;
  }
  return x;
}

int64_t concrete_count(const char* op, const Array& n) {
  if (!is_integer(n.dtype()))
    throw DTypeError(std::string(op) + ": a rank-0 argument must be an integer (the size of arange(n)), got " +
                     n.aval().to_string() + "; pass an array with at least one dimension to sample its elements");
  if (n.is_tracer())
    throw ValueError(std::string(op) + ": a rank-0 size must be a concrete value, not traced under jit; pass it as "
                     "an int64_t");
  return n.item<int64_t>();
}

int64_t norm_axis(const char* op, int64_t axis, int64_t ndim) {
  const int64_t nd = std::max<int64_t>(ndim, 1);
  if (axis < -nd || axis >= nd)
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for an array of rank " +
                     std::to_string(ndim));
  return axis < 0 ? axis + nd : axis;
}

}  // namespace

Array permutation(const Array& key, int64_t n, int64_t axis) {
  check_key("permutation", key);
  if (n < 0) throw ValueError("permutation: n must be non-negative, got " + std::to_string(n));
  norm_axis("permutation", axis, 1);
  return shuffle(key, arange(n, DType::int32), 0);
}

Array permutation(const Array& key, const Array& x, int64_t axis, bool independent) {
  check_key("permutation", key);
  if (x.ndim() == 0) return permutation(key, concrete_count("permutation", x), axis);
  const int64_t ax = norm_axis("permutation", axis, x.ndim());
  if (independent || x.ndim() == 1) return shuffle(key, x, ax);
  Array order = shuffle(key, arange(x.shape()[size_t(ax)], DType::int32), 0);
  return take(x, order, ax);
}

Array choice(const Array& key, const Array& a, const Shape& shape, bool replace, const std::optional<Array>& p,
             int64_t axis, Mode mode) {
  check_key("choice", key);
  const bool from_range = a.ndim() == 0;
  int64_t n_inputs = 0, ax = 0;
  if (from_range) {
    n_inputs = concrete_count("choice", a);
  } else {
    ax = norm_axis("choice", axis, a.ndim());
    n_inputs = a.shape()[size_t(ax)];
  }
  int64_t n_draws = 1;
  for (int64_t d : shape) n_draws *= d;
  Shape out_shape = shape;
  if (!from_range) {
    out_shape = Shape(a.shape().begin(), a.shape().begin() + ax);
    out_shape.insert(out_shape.end(), shape.begin(), shape.end());
    out_shape.insert(out_shape.end(), a.shape().begin() + ax + 1, a.shape().end());
  }
  if (n_draws == 0) return zeros(out_shape, a.dtype());
  if (n_inputs <= 0)
    throw ValueError("choice: the population is empty (a = " + a.aval().to_string() +
                     "); it must have at least one element unless no samples are taken");
  if (!replace && n_draws > n_inputs)
    throw ValueError("choice: cannot take " + std::to_string(n_draws) + " samples without replacement from " +
                     std::to_string(n_inputs) + " elements; pass replace = true or a smaller shape");
  Array ind;
  if (!p) {
    if (replace) {
      ind = randint(key, shape, 0, Array(Scalar(n_inputs, DType::int32)));
    } else {
      Array perm = from_range ? permutation(key, n_inputs) : permutation(key, a, ax);
      Shape start(size_t(perm.ndim()), 0);
      Shape stop = perm.shape();
      stop[size_t(from_range ? 0 : ax)] = n_draws;
      return reshape(slice(perm, start, stop), out_shape);
    }
  } else {
    if (p->shape() != Shape{n_inputs})
      throw ShapeError("choice: p must be a 1-D array of the population size " + std::to_string(n_inputs) +
                       " (a.shape[axis]), got " + p->aval().to_string());
    if (is_complex(p->dtype()) || is_bool(p->dtype()))
      throw DTypeError("choice: p must be real probabilities, got " + p->aval().to_string());
    const DType pd = is_floating(p->dtype()) ? p->dtype() : DType::float32;
    Array probs = astype(*p, pd);
    if (replace) {
      // Inverse CDF: the first cumulative weight at or above total * (0, 1].
      Array cdf = cumsum(probs, 0);
      Array total = reshape(slice(cdf, {n_inputs - 1}, {n_inputs}), {});
      Array r = total * (constant(1.0, pd) - uniform(key, shape, pd));
      ind = astype(searchsorted(cdf, r), DType::int32);
    } else {
      // Gumbel top-k: the k largest perturbed log-probabilities are a sample without replacement.
      Array g = gumbel(key, {n_inputs}, pd, mode) + ops::xla_log(probs);
      ind = top_k(g, n_draws).second;
    }
  }
  if (from_range) return reshape(ind, out_shape);
  return reshape(take(a, ind, ax), out_shape);
}

}  // namespace tessel::random
