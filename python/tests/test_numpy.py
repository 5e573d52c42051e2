"""tessel.numpy, tessel.lax, tessel.nn and tessel.random against NumPy's values."""

import numpy as np
import pytest

import tessel
import tessel.lax as lax
import tessel.nn as nn
import tessel.numpy as tnp
import tessel.random as trandom

RNG = np.random.default_rng(0)
X = RNG.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
Y = RNG.uniform(0.1, 0.9, (4,)).astype(np.float32)

UNARY = ["negative", "abs", "sign", "floor", "ceil", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10",
         "sqrt", "cbrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
         "tanh", "arcsinh", "arctanh", "isnan", "isinf", "isfinite", "signbit", "sinc", "deg2rad", "rad2deg",
         "trunc", "fix", "rint", "fabs", "positive", "ravel", "fliplr", "flipud", "atleast_3d"]
BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "fmod", "maximum",
          "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "hypot", "copysign",
          "logaddexp", "logaddexp2", "power", "arctan2", "fmax", "fmin", "heaviside", "float_power"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_against_numpy(name):
    got = np.asarray(getattr(tnp, name)(X))
    want = getattr(np, name)(X)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", BINARY)
def test_binary_against_numpy_with_broadcasting(name):
    got = np.asarray(getattr(tnp, name)(X, Y))
    want = getattr(np, name)(X, Y)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "ptp"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_reductions(name, axis):
    got = getattr(tnp, name)(X, axis=axis)
    np.testing.assert_allclose(np.asarray(got), getattr(np, name)(X, axis=axis), rtol=1e-5, atol=1e-6)
    kept = getattr(tnp, name)(X, axis=axis, keepdims=True)
    assert kept.shape == getattr(np, name)(X, axis=axis, keepdims=True).shape


def test_integer_reductions_and_args():
    a = np.array([[3, 1, 4], [1, 5, 9]], dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(tnp.argmax(a, axis=1)), a.argmax(axis=1))
    np.testing.assert_array_equal(np.asarray(tnp.argmin(a)), a.argmin())
    np.testing.assert_array_equal(np.asarray(tnp.cumsum(a, axis=1)), a.cumsum(axis=1))
    np.testing.assert_array_equal(np.asarray(tnp.cumsum(a)), a.cumsum())
    assert bool(tnp.any(a > 8)) and not bool(tnp.all(a > 1))
    np.testing.assert_array_equal(np.asarray(tnp.sort(a[0])), np.sort(a[0]))
    np.testing.assert_array_equal(np.asarray(tnp.argsort(a[1])), np.argsort(a[1]))


def test_creation():
    np.testing.assert_array_equal(np.asarray(tnp.arange(5)), np.arange(5))
    assert tnp.arange(5).dtype == np.int32 and tnp.arange(0.0, 1.0, 0.25).dtype == np.float32
    np.testing.assert_allclose(np.asarray(tnp.arange(0.0, 1.0, 0.25)), np.arange(0, 1, 0.25))
    np.testing.assert_allclose(np.asarray(tnp.linspace(0, 1, 5)), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(np.asarray(tnp.eye(3, 4, k=1)), np.eye(3, 4, k=1))
    assert tnp.zeros((2, 3), dtype=np.int32).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(tnp.full((2,), 7.0)), [7.0, 7.0])
    np.testing.assert_array_equal(np.asarray(tnp.full_like(X, 2)), np.full_like(X, 2))
    assert tnp.ones_like(X).dtype == np.float32 and tnp.zeros(3).dtype == np.float32


def test_shape_functions():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = [
        (tnp.reshape(a, (4, 6)), a.reshape(4, 6)),
        (tnp.transpose(a), a.T),
        (tnp.transpose(a, (1, 0, 2)), a.transpose(1, 0, 2)),
        (tnp.moveaxis(a, 0, -1), np.moveaxis(a, 0, -1)),
        (tnp.swapaxes(a, 0, 2), np.swapaxes(a, 0, 2)),
        (tnp.expand_dims(a, 1), np.expand_dims(a, 1)),
        (tnp.squeeze(a[:1]), np.squeeze(a[:1])),
        (tnp.broadcast_to(Y, (3, 4)), np.broadcast_to(Y, (3, 4))),
        (tnp.concatenate([a, a], axis=1), np.concatenate([a, a], axis=1)),
        (tnp.stack([Y, Y]), np.stack([Y, Y])),
        (tnp.flip(a, 1), np.flip(a, 1)),
        (tnp.roll(a, 2, axis=2), np.roll(a, 2, axis=2)),
        (tnp.roll(a, 5), np.roll(a, 5)),
        (tnp.tile(Y, (2, 1)), np.tile(Y, (2, 1))),
        (tnp.where(X > 0.5, X, 0.0), np.where(X > 0.5, X, 0.0)),
        (tnp.clip(X, 0.3, 0.6), np.clip(X, 0.3, 0.6)),
        (tnp.take(Y, np.array([3, 0])), np.take(Y, [3, 0])),
        (tnp.tril(X), np.tril(X)),
        (tnp.matmul(X, Y), X @ Y),
        (tnp.outer(Y, Y), np.outer(Y, Y)),
        (tnp.einsum("ij,j->i", X, Y), np.einsum("ij,j->i", X, Y)),
    ]
    for got, want in cases:
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    parts = tnp.split(np.arange(6), 3)
    assert len(parts) == 3 and np.asarray(parts[2]).tolist() == [4, 5]
    assert tnp.broadcast_shapes((3, 1), (4,)) == (3, 4)


def test_dtype_helpers():
    assert tnp.result_type(tnp.ones(2, dtype=tnp.int8), tnp.ones(2, dtype=tnp.float16)) == np.float16
    assert tnp.promote_types(np.int32, np.float32) == np.float32
    assert tnp.promote_types("bfloat16", "float16") == np.float32
    assert tnp.ones(2, dtype="bfloat16").astype(np.float32).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(tnp.ones(2, dtype="bfloat16")), [1.0, 1.0])


def test_lax_names():
    np.testing.assert_allclose(np.asarray(lax.add(X, 1.0)), X + 1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(lax.logistic(X)), 1 / (1 + np.exp(-X)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(lax.rsqrt(X)), 1 / np.sqrt(X), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(lax.div(np.int32(-7), np.int32(2))), -3)
    np.testing.assert_array_equal(np.asarray(lax.slice(X, (0, 1), (2, 3))), X[0:2, 1:3])
    np.testing.assert_array_equal(np.asarray(lax.dynamic_slice(X, (1, 2), (2, 2))), X[1:3, 2:4])
    upd = lax.dynamic_update_slice(np.zeros((3, 3), np.float32), np.ones((1, 2), np.float32), (1, 1))
    assert np.asarray(upd).sum() == 2 and np.asarray(upd)[1, 1] == 1
    assert lax.convert_element_type(X, np.int32).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(lax.broadcast_in_dim(Y, (3, 4), (1,))), np.broadcast_to(Y, (3, 4)))
    np.testing.assert_allclose(np.asarray(lax.reduce_sum(X, (0,))), X.sum(0), rtol=1e-6)


def test_nn():
    np.testing.assert_allclose(np.asarray(nn.relu(X - 0.5)), np.maximum(X - 0.5, 0))
    np.testing.assert_allclose(np.asarray(nn.sigmoid(X)), 1 / (1 + np.exp(-X)), rtol=1e-6)
    sm = np.exp(X) / np.exp(X).sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(nn.softmax(X)), sm, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(nn.logsumexp(X)), np.log(np.exp(X).sum()), rtol=1e-5)


def test_random_matches_jax_bits():
    key = trandom.key(0)
    assert key.dtype == np.uint32 and key.shape == (2,)
    # jax.random.split(jax.random.PRNGKey(0)) in JAX 0.10 (threefry, raw keys)
    np.testing.assert_array_equal(np.asarray(trandom.split(key)), [[1797259609, 2579123966], [928981903, 3453687069]])
    u = trandom.uniform(key, (1000,))
    assert u.dtype == np.float32 and 0.0 <= float(u.min()) and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 0.05
    n = trandom.normal(trandom.fold_in(key, 3), (2000,))
    assert abs(float(n.mean())) < 0.1 and abs(float(n.std()) - 1.0) < 0.1
    u2 = trandom.uniform(key, (3,), minval=2.0, maxval=4.0)
    assert 2.0 <= float(u2.min()) and float(u2.max()) < 4.0


def test_fft_against_numpy():
    z = RNG.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(tnp.fft.fft(z)), np.fft.fft(z), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tessel.fft.rfft(z, axis=0)), np.fft.rfft(z, axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tessel.fft.irfft(tessel.fft.rfft(z), 8)), z, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(tessel.fft.fft2(z, norm="ortho")), np.fft.fft2(z, norm="ortho"), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(tessel.fft.fftn(z)), np.fft.fftn(z), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(np.asarray(tessel.fft.fftshift(tessel.fft.fftfreq(8, 0.1))),
                               np.fft.fftshift(np.fft.fftfreq(8, 0.1)), rtol=1e-6)
    g = tessel.grad(lambda v: tnp.sum(tnp.abs(tessel.fft.fft(v)) ** 2))(z[0])
    np.testing.assert_allclose(np.asarray(g), 2 * 8 * z[0], rtol=1e-4)
