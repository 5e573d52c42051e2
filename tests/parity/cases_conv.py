"""Parity cases of include/tessel/conv.h (convolutions, windowed reductions, pooling).
`func` keys the entries of tests/parity/cases_conv.cpp. `padding` is a string or (low, high)
pairs, as in JAX."""
import jax.numpy as jnp
import numpy as np
from jax import lax

from parity_lib import SUM_TOL, rand

COMPUTATIONS = {"add": lax.add, "max": lax.max, "min": lax.min}


def flax_pool(x, init, op, window, strides, padding):
    """flax.linen.pooling's pool over (batch, spatial..., features)."""
    dims = (1,) + tuple(window) + (1,)
    st = (1,) + tuple(strides) + (1,)
    if not isinstance(padding, str):
        padding = ((0, 0),) + tuple(tuple(p) for p in padding) + ((0, 0),)
    return lax.reduce_window(x, init, op, dims, st, padding)


def convolutions(s):
    for i, dt in enumerate(["float32", "float64"]):
        lhs, rhs = rand((2, 2, 5, 4), dt, i), rand((4, 2, 3, 2), dt, 10 + i)
        conv = lambda a, b, window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count: \
            lax.conv_general_dilated(a, b, window_strides, padding, lhs_dilation, rhs_dilation,
                                     feature_group_count=feature_group_count)
        base = {"window_strides": (1, 1), "padding": "VALID", "lhs_dilation": (1, 1), "rhs_dilation": (1, 1),
                "feature_group_count": 1}
        for extra in [{}, {"padding": "SAME", "window_strides": (2, 1)}, {"padding": ((1, 0), (2, 1))},
                      {"rhs_dilation": (2, 1), "padding": "SAME"}, {"lhs_dilation": (1, 2), "padding": ((0, 1), (1, 1))},
                      {"feature_group_count": 2}]:
            params = dict(base, **extra)
            b = rhs[:, :1] if params["feature_group_count"] == 2 else rhs
            s.case("conv_general_dilated", conv, [lhs, b], params, tol=SUM_TOL, grad=True)
        # dimension_numbers: JAX's three layout strings, comma-separated.
        laid_out = lambda a, b, window_strides, padding, dimension_numbers: lax.conv_general_dilated(
            a, b, window_strides, padding, dimension_numbers=tuple(dimension_numbers.split(",")))
        s.case("conv_general_dilated", laid_out, [np.moveaxis(lhs, 1, -1), np.moveaxis(rhs, (0, 1), (-1, -2))],
               {"window_strides": (1, 2), "padding": "SAME", "dimension_numbers": "NHWC,HWIO,NHWC"}, tol=SUM_TOL,
               grad=True, name=f"conv_general_dilated_{dt}_nhwc")
        s.case("conv", lax.conv, [rand((1, 2, 9), dt, 20), rand((3, 2, 4), dt, 21)],
               {"window_strides": (2,), "padding": "VALID"}, tol=SUM_TOL, grad=True)
        s.case("conv", lax.conv, [rand((1, 2, 3, 3, 2), dt, 22), rand((2, 2, 2, 2, 2), dt, 23)],
               {"window_strides": (1, 1, 1), "padding": "SAME"}, tol=SUM_TOL, grad=True, name=f"conv_{dt}_3d")
        s.case("conv_with_general_padding", lax.conv_with_general_padding, [lhs, rhs],
               {"window_strides": (1, 1), "padding": ((1, 1), (0, 2)), "lhs_dilation": (2, 1), "rhs_dilation": (1, 2)},
               tol=SUM_TOL, grad=True)
        x, k = rand((1, 4, 3, 2), dt, 24), rand((3, 3, 2, 3), dt, 25)
        for padding, transpose_kernel in [("SAME", False), ("VALID", True), (((1, 2), (0, 1)), False)]:
            s.case("conv_transpose", lambda a, b, strides, padding, transpose_kernel: lax.conv_transpose(
                       a, b, strides, padding, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                       transpose_kernel=transpose_kernel) if transpose_kernel else lax.conv_transpose(
                       a, b, strides, padding, dimension_numbers=("NHWC", "HWIO", "NHWC")),
                   [x, k[:, :, :, :2] if transpose_kernel else k],
                   {"strides": (2, 2), "padding": padding, "transpose_kernel": transpose_kernel}, tol=SUM_TOL, grad=True)
    for dt in ["float32", "float64", "complex64"]:
        a, v = rand((9,), dt, 30), rand((4,), dt, 31)
        for mode in ["full", "same", "valid"]:
            s.case("convolve", jnp.convolve, [a, v], {"mode": mode}, tol=SUM_TOL, grad=True)
            s.case("correlate", jnp.correlate, [a, v], {"mode": mode}, tol=SUM_TOL, grad=True)


def windows(s):
    for dt in ["float32", "float64", "int32"]:
        x = rand((2, 5, 4), dt, 40, lo=-5, hi=5)
        g = dt != "int32"
        for comp, init in [("add", 0), ("max", -np.inf if g else np.iinfo(np.int32).min),
                           ("min", np.inf if g else np.iinfo(np.int32).max)]:
            fn = lambda v, init, computation, window_dimensions, window_strides, padding, base_dilation, \
                window_dilation: lax.reduce_window(v, np.array(init, v.dtype), COMPUTATIONS[computation],
                                                   window_dimensions, window_strides, padding, base_dilation,
                                                   window_dilation)
            p = {"init": float(init) if g else int(init), "computation": comp, "window_dimensions": (1, 3, 2),
                 "window_strides": (1, 2, 1), "padding": "SAME", "base_dilation": (1, 1, 1),
                 "window_dilation": (1, 1, 1)}
            s.case("reduce_window", fn, [x], p, tol=SUM_TOL, grad=g)
            p2 = dict(p, padding=((0, 0), (1, 2), (0, 1)), base_dilation=(1, 2, 1), window_dilation=(1, 1, 2))
            s.case("reduce_window", fn, [x], p2, tol=SUM_TOL, grad=g and comp == "add")
    for dt in ["float32", "float64"]:
        x = rand((3, 6), dt, 41, lo=-3, hi=3)
        s.case("cumlogsumexp", lax.cumlogsumexp, [x], {"axis": 1, "reverse": False}, tol=SUM_TOL, grad=True)
        s.case("cumlogsumexp", lax.cumlogsumexp, [x], {"axis": 0, "reverse": True}, tol=SUM_TOL, grad=True)
        x = rand((1, 5, 4, 2), dt, 42)
        for padding in ["VALID", "SAME", ((1, 0), (0, 1))]:
            pool = {"window_shape": (2, 3), "strides": (2, 1), "padding": padding}
            s.case("nn.max_pool", lambda v, window_shape, strides, padding: flax_pool(
                v, -jnp.inf, lax.max, window_shape, strides, padding), [x], pool, grad=True)
            s.case("nn.min_pool", lambda v, window_shape, strides, padding: flax_pool(
                v, jnp.inf, lax.min, window_shape, strides, padding), [x], pool)
            s.case("nn.avg_pool", lambda v, window_shape, strides, padding: flax_pool(
                v, 0.0, lax.add, window_shape, strides, padding) / np.prod(window_shape), [x], pool, tol=SUM_TOL,
                grad=True)


def cases(s):
    convolutions(s)
    windows(s)
