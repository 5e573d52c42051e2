"""Parity cases of include/tessel/ops.h (jax.numpy and the lax functions it names): element-wise
math with special values, reductions, cumulative ops, shape ops, indexing, products.

Each `s.case(func, jax_fn, inputs, params, tol=..., grad=...)` line is one case; `func` is
the key of its entry in tests/parity/cases_numpy.cpp. Tolerances not given are parity_lib's
DEFAULT_TOL (exact for integer and boolean results).
"""
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax
from jax import nn

from parity_lib import EXACT, FLOATS, INEXACT, INTS, MATH_TOL, SUM_TOL, ints_special, rand, specials

# name -> (JAX function, dtypes, input range (lo, hi), tolerance, differentiable)
UNARY = {
    "negative": (jnp.negative, INEXACT + INTS[:2], (-3, 3), None, True),
    "abs": (jnp.abs, INEXACT + INTS[:2], (-3, 3), None, True),
    "sign": (jnp.sign, FLOATS + INTS[:2], (-3, 3), None, False),
    "floor": (jnp.floor, FLOATS, (-3, 3), None, False),
    "ceil": (jnp.ceil, FLOATS, (-3, 3), None, False),
    "round": (jnp.round, FLOATS, (-3, 3), None, False),
    "exp": (jnp.exp, INEXACT, (-3, 3), MATH_TOL, True),
    "exp2": (jnp.exp2, FLOATS, (-3, 3), MATH_TOL, True),
    "expm1": (jnp.expm1, FLOATS, (-3, 3), MATH_TOL, True),
    "log": (jnp.log, INEXACT, (0.1, 4), MATH_TOL, True),
    "log1p": (jnp.log1p, FLOATS, (-0.9, 4), MATH_TOL, True),
    "log2": (jnp.log2, FLOATS, (0.1, 4), MATH_TOL, True),
    "log10": (jnp.log10, FLOATS, (0.1, 4), MATH_TOL, True),
    "sqrt": (jnp.sqrt, INEXACT, (0.1, 4), MATH_TOL, True),
    "rsqrt": (lax.rsqrt, FLOATS, (0.1, 4), MATH_TOL, True),
    "cbrt": (jnp.cbrt, FLOATS, (-4, 4), MATH_TOL, True),
    "square": (jnp.square, INEXACT + INTS[:2], (-3, 3), None, True),
    "reciprocal": (jnp.reciprocal, INEXACT, (0.2, 3), None, True),
    "sin": (jnp.sin, INEXACT, (-4, 4), MATH_TOL, True),
    "cos": (jnp.cos, INEXACT, (-4, 4), MATH_TOL, True),
    "tan": (jnp.tan, FLOATS, (-1.4, 1.4), MATH_TOL, True),
    "arcsin": (jnp.arcsin, FLOATS, (-0.95, 0.95), MATH_TOL, True),
    "arccos": (jnp.arccos, FLOATS, (-0.95, 0.95), MATH_TOL, True),
    "arctan": (jnp.arctan, FLOATS, (-4, 4), MATH_TOL, True),
    "sinh": (jnp.sinh, FLOATS, (-3, 3), MATH_TOL, True),
    "cosh": (jnp.cosh, FLOATS, (-3, 3), MATH_TOL, True),
    "tanh": (jnp.tanh, INEXACT, (-3, 3), MATH_TOL, True),
    "arcsinh": (jnp.arcsinh, FLOATS, (-4, 4), MATH_TOL, True),
    "arccosh": (jnp.arccosh, FLOATS, (1.1, 4), MATH_TOL, True),
    "arctanh": (jnp.arctanh, FLOATS, (-0.95, 0.95), MATH_TOL, True),
    "erf": (jsp.erf, FLOATS, (-3, 3), MATH_TOL, True),
    "erfc": (jsp.erfc, FLOATS, (-3, 3), MATH_TOL, True),
    "erf_inv": (lax.erf_inv, FLOATS, (-0.99, 0.99), MATH_TOL, True),
    "logistic": (nn.sigmoid, FLOATS, (-6, 6), MATH_TOL, True),
    "isnan": (jnp.isnan, INEXACT, (-3, 3), None, False),
    "isinf": (jnp.isinf, INEXACT, (-3, 3), None, False),
    "isfinite": (jnp.isfinite, INEXACT, (-3, 3), None, False),
    "real": (jnp.real, ["complex64", "complex128"], (-3, 3), None, True),
    "imag": (jnp.imag, ["complex64", "complex128"], (-3, 3), None, True),
    "conj": (jnp.conj, ["complex64", "complex128"], (-3, 3), None, True),
    "logical_not": (jnp.logical_not, ["bool"], (0, 1), None, False),
    "bitwise_not": (jnp.bitwise_not, INTS + ["bool"], (-50, 50), None, False),
}

# name -> (JAX function, dtypes, range, tolerance, differentiable)
BINARY = {
    "add": (jnp.add, INEXACT + INTS, (-5, 5), None, True),
    "subtract": (jnp.subtract, INEXACT + INTS, (-5, 5), None, True),
    "multiply": (jnp.multiply, INEXACT + INTS, (-5, 5), None, True),
    "divide": (jnp.divide, INEXACT, (0.5, 5), None, True),
    "floor_divide": (jnp.floor_divide, FLOATS + INTS, (-9, 9), None, False),
    "remainder": (jnp.remainder, FLOATS + INTS, (-9, 9), None, False),
    "rem": (lambda a, b: lax.rem(*jnp.broadcast_arrays(a, b)), FLOATS + INTS, (-9, 9), None, False),
    "fmod": (jnp.fmod, FLOATS + INTS, (-9, 9), None, False),
    "pow": (jnp.power, FLOATS, (0.5, 3), MATH_TOL, True),
    "maximum": (jnp.maximum, FLOATS + INTS, (-5, 5), None, True),
    "minimum": (jnp.minimum, FLOATS + INTS, (-5, 5), None, True),
    "atan2": (jnp.arctan2, FLOATS, (-3, 3), MATH_TOL, True),
    "equal": (jnp.equal, FLOATS + INTS, (-2, 2), None, False),
    "not_equal": (jnp.not_equal, FLOATS + INTS, (-2, 2), None, False),
    "less": (jnp.less, FLOATS + INTS, (-2, 2), None, False),
    "less_equal": (jnp.less_equal, FLOATS + INTS, (-2, 2), None, False),
    "greater": (jnp.greater, FLOATS + INTS, (-2, 2), None, False),
    "greater_equal": (jnp.greater_equal, FLOATS + INTS, (-2, 2), None, False),
    "true_divide": (jnp.true_divide, FLOATS + ["int32"], (1, 5), None, True),
    "logical_and": (jnp.logical_and, ["bool"], (0, 1), None, False),
    "logical_or": (jnp.logical_or, ["bool"], (0, 1), None, False),
    "logical_xor": (jnp.logical_xor, ["bool"], (0, 1), None, False),
    "bitwise_and": (jnp.bitwise_and, INTS + ["bool"], (-50, 50), None, False),
    "bitwise_or": (jnp.bitwise_or, INTS + ["bool"], (-50, 50), None, False),
    "bitwise_xor": (jnp.bitwise_xor, INTS + ["bool"], (-50, 50), None, False),
}


def elementwise(s):
    for name, (fn, dtypes, (lo, hi), tol, grad) in UNARY.items():
        for i, dt in enumerate(dtypes):
            s.case(name, fn, [rand((3, 4), dt, seed=i, lo=lo, hi=hi)], tol=tol, grad=grad and dt != "bool")
            if dt.startswith(("float", "complex")):  # NaN, +-inf, +-0, ties, extremes
                s.case(name, fn, [specials(dt)], tol=tol, name=f"{name}_{dt}_special")
            elif dt.startswith(("int", "uint")):
                s.case(name, fn, [ints_special(dt)], name=f"{name}_{dt}_special")
        s.case(name, fn, [rand((0, 3), dtypes[0], seed=9, lo=lo, hi=hi)], name=f"{name}_empty")
    # erf_inv computes as XLA's CPU kernel does (XLA's log1p and log, fused Horner steps, half
    # types through float32), so its values are exact: a grid dense near +-1 (the tail
    # polynomial), tiny inputs, +-1, and out-of-range inputs (not subnormal ones: XLA's
    # kernels flush them to zero, tessel keeps them).
    for dt in ["float32", "float64", "float16", "bfloat16"]:
        near_one = 1 - np.logspace(-15 if dt == "float64" else -7, -0.3, 60)
        grid = np.concatenate([np.linspace(-1, 1, 241), near_one, -near_one,
                               [0.0, -0.0, 1e-30, -2e-30, 1.5, -2.0, np.inf, np.nan]])
        s.case("erf_inv", lax.erf_inv, [grid.astype(jnp.dtype(dt))], tol=EXACT, name=f"erf_inv_{dt}_exact")
    for name, (fn, dtypes, (lo, hi), tol, grad) in BINARY.items():
        for i, dt in enumerate(dtypes):
            a, b = rand((3, 4), dt, seed=i, lo=lo, hi=hi), rand((4,), dt, seed=50 + i, lo=lo, hi=hi)
            if name in ("floor_divide", "remainder", "rem", "fmod") and not dt.startswith("float"):
                b = np.where(b == 0, np.array(3, dt), b)  # integer division by zero: tested below
            s.case(name, fn, [a, b], tol=tol, grad=grad and dt.startswith(("float", "complex")))
            if dt.startswith("float"):  # every special value against every other
                # XLA's CPU division multiplies by the reciprocal, which flushes to 0 for a
                # divisor near the largest float (max / max is 0, inf / max NaN); tessel
                # divides correctly, so the division cases leave those divisors out.
                sp = specials(dt, huge=name not in ("divide", "true_divide", "floor_divide"))
                s.case(name, fn, [sp[:, None], sp[None, :]], tol=tol, name=f"{name}_{dt}_special")
            elif dt.startswith(("int", "uint")):
                sp = ints_special(dt)
                s.case(name, fn, [sp[:, None], sp[None, :]], name=f"{name}_{dt}_special")
    for dt in INTS:  # shifts: counts in and out of range
        a = ints_special(dt)[:, None]
        b = np.array([0, 1, 3, 31, 32, 33], dtype=dt)[None, :]
        s.case("left_shift", jnp.left_shift, [a, b])
        s.case("right_shift", jnp.right_shift, [a, b])
    for dt in FLOATS:
        x = rand((3, 4), dt, seed=3)
        s.case("where", jnp.where, [x > 0, x, -x * 2], grad=True)
        s.case("clip", jnp.clip, [rand((3, 4), dt, seed=4, lo=-3, hi=3), np.array(-1, dt), np.array(1.5, dt)],
               grad=True)
        s.case("clip", jnp.clip, [specials(dt), np.array(-1, dt), np.array(1.5, dt)], name=f"clip_{dt}_special")
        s.case("complex", lax.complex, [rand((3,), dt, seed=5), rand((3,), dt, seed=6)], grad=True)
    for src, dst in [("float64", "float32"), ("float32", "int32"), ("float64", "int64"), ("int32", "float32"),
                     ("float32", "bool"), ("int64", "uint32"), ("float32", "complex64")]:
        x = specials(src)[5:] if src.startswith("float") else ints_special(src)
        if dst.startswith(("int", "uint")):  # float -> int of out-of-range values is not specified
            x = np.clip(x, -100, 100)
        s.case("astype", lambda v, dtype: jnp.asarray(v).astype(dtype), [x], {"dtype": dst})


def int32_index(fn):
    """fn with its index result as int32: tessel's argmax/argmin return int32 whatever the input
    (ops.h), JAX the default int, which is int64 with x64 (on for float64 inputs)."""
    return lambda *args, **kw: fn(*args, **kw).astype(jnp.int32)


def lax_level(s):
    for dt in ["float32", "float64", "int32"]:
        x, y = rand((3, 4), dt, 60), rand((3, 4), dt, 61)
        g = dt != "int32"
        s.case("select", lax.select, [x > y, x, y], grad=g)
        s.case("clamp", lax.clamp, [np.full((3, 4), -1, dt), x, np.full((3, 4), 1, dt)], grad=g)
        s.case("broadcast_in_dim", lax.broadcast_in_dim, [x], {"shape": (3, 2, 4), "broadcast_dimensions": (0, 2)},
               grad=g)
        s.case("slice_in_dim", lax.slice_in_dim, [x], {"start_index": 1, "limit_index": 4, "stride": 2, "axis": 1},
               grad=g)
        s.case("ravel", jnp.ravel, [x], grad=g)
        s.case("zeros_like", jnp.zeros_like, [x])
        s.case("ones_like", jnp.ones_like, [x])
        s.case("empty_like", jnp.empty_like, [x])  # zeros in JAX too
        s.case("full_like", jnp.full_like, [x], {"fill_value": 2.5 if g else 7})
        s.case("full", lambda shape, fill_value, dtype: jnp.full(shape, fill_value, dtype), [],
               {"shape": (2, 3), "fill_value": -1.5 if g else 9, "dtype": dt})
    for src, dst in [("float32", "int32"), ("uint32", "float32"), ("float64", "uint64"), ("int32", "uint32")]:
        x = specials(src) if src.startswith("float") else ints_special(src)
        s.case("bitcast_convert_type", lax.bitcast_convert_type, [x], {"new_dtype": dst})


def reductions(s):
    for dt in INEXACT + ["int32"]:
        x = rand((3, 4, 5), dt, seed=11)
        grad = dt != "int32"
        for name, fn in [("sum", jnp.sum), ("prod", jnp.prod), ("mean", jnp.mean)]:
            s.case(name, fn, [x], {"axis": (1,), "keepdims": False}, tol=SUM_TOL, grad=grad)
            s.case(name, fn, [x], {"axis": (0, 2), "keepdims": True}, tol=SUM_TOL, grad=grad)
            s.case(name, fn, [x], {"axis": None, "keepdims": False}, tol=SUM_TOL, name=f"{name}_{dt}_all")
        if dt.startswith("complex"):
            continue
        for name, fn in [("max", jnp.max), ("min", jnp.min)]:
            s.case(name, fn, [x], {"axis": (2,), "keepdims": False}, grad=grad)
            s.case(name, fn, [x], {"axis": (0, 1), "keepdims": True})
        for name, fn in [("argmax", int32_index(jnp.argmax)), ("argmin", int32_index(jnp.argmin))]:
            s.case(name, fn, [x], {"axis": 1, "keepdims": False})
            s.case(name, fn, [x], {"axis": None, "keepdims": True})
    for dt in INEXACT:
        x = rand((4, 6), dt, seed=12)
        s.case("var", jnp.var, [x], {"axis": (1,), "keepdims": False, "ddof": 0}, tol=SUM_TOL, grad=True)
        s.case("std", jnp.std, [x], {"axis": (0,), "keepdims": True, "ddof": 1}, tol=SUM_TOL, grad=True)
    for dt in FLOATS:  # NaN propagates, ties pick the first index, +-0 and inf
        sp = specials(dt)
        for name, fn in [("sum", jnp.sum), ("max", jnp.max), ("min", jnp.min)]:
            s.case(name, fn, [sp.reshape(4, 5)], {"axis": (1,), "keepdims": False}, tol=SUM_TOL,
                   name=f"{name}_{dt}_special")
        ties = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-0.0, 0.0, -1, -1]], dtype=dt)
        s.case("argmax", int32_index(jnp.argmax), [ties], {"axis": 1, "keepdims": False}, name=f"argmax_{dt}_ties")
        s.case("argmin", int32_index(jnp.argmin), [ties], {"axis": 1, "keepdims": False}, name=f"argmin_{dt}_ties")
        s.case("argmax", int32_index(jnp.argmax), [sp.reshape(4, 5)], {"axis": 0, "keepdims": False},
               name=f"argmax_{dt}_special")
        s.case("sum", jnp.sum, [np.zeros((0, 3), dt)], {"axis": (0,), "keepdims": False}, name=f"sum_{dt}_empty")
        s.case("prod", jnp.prod, [np.zeros((2, 0), dt)], {"axis": (1,), "keepdims": False},
               name=f"prod_{dt}_empty")
    b = rand((3, 4), "bool", seed=13)
    s.case("any", jnp.any, [b], {"axis": (1,), "keepdims": False})
    s.case("all", jnp.all, [b], {"axis": (0,), "keepdims": True})
    s.case("any", jnp.any, [np.zeros((0,), bool)], {"axis": None, "keepdims": False}, name="any_empty")
    s.case("all", jnp.all, [np.zeros((0,), bool)], {"axis": None, "keepdims": False}, name="all_empty")
    # cumulative ops (lax.cumsum etc. take axis and reverse)
    for dt in INEXACT + ["int32"]:
        x = rand((3, 5), dt, seed=14, lo=-2, hi=2)
        grad = dt != "int32"
        for name, fn in [("cumsum", lax.cumsum), ("cumprod", lax.cumprod)]:
            s.case(name, fn, [x], {"axis": 1, "reverse": False}, tol=SUM_TOL, grad=grad)
            s.case(name, fn, [x], {"axis": 0, "reverse": True}, tol=SUM_TOL, grad=grad)
        if dt.startswith("complex"):
            continue
        for name, fn in [("cummax", lax.cummax), ("cummin", lax.cummin)]:
            s.case(name, fn, [x], {"axis": 1, "reverse": False}, grad=grad)
            s.case(name, fn, [x], {"axis": 0, "reverse": True})
    # Exact up to 17 positions: XLA folds each window of a reversed scan from its first
    # position (a reduce_window), as tessel does; forward scans run in order on both sides.
    for dt in ["float32", "float64"]:
        for n in [4, 11, 17]:
            x = rand((n, 6), dt, seed=15 + n, lo=-2, hi=2)
            for name, fn in [("cumsum", lax.cumsum), ("cumprod", lax.cumprod)]:
                for axis, reverse in [(0, True), (0, False)]:
                    s.case(name, fn, [x], {"axis": axis, "reverse": reverse}, tol=EXACT,
                           name=f"{name}_{dt}_{n}_{'reverse' if reverse else 'forward'}")
                s.case(name, fn, [x.T.copy()], {"axis": 1, "reverse": True}, tol=EXACT,
                       name=f"{name}_{dt}_{n}_reverse_last")
    for dt in FLOATS:
        sp = specials(dt).reshape(4, 5)
        for name, fn in [("cumsum", lax.cumsum), ("cummax", lax.cummax)]:
            s.case(name, fn, [sp], {"axis": 1, "reverse": False}, tol=SUM_TOL, name=f"{name}_{dt}_special")


def shapes(s):
    for dt in ["float32", "float64", "int32", "bool"]:
        x = rand((2, 3, 4), dt, seed=21)
        g = dt.startswith("float")
        s.case("reshape", lambda v, shape: jnp.reshape(v, shape), [x], {"shape": (4, -1)}, grad=g)
        s.case("transpose", lambda v, axes: jnp.transpose(v, axes), [x], {"axes": (2, 0, 1)}, grad=g)
        s.case("moveaxis", jnp.moveaxis, [x], {"source": 0, "destination": -1}, grad=g)
        s.case("swapaxes", jnp.swapaxes, [x], {"axis1": 0, "axis2": 2}, grad=g)
        s.case("flip", jnp.flip, [x], {"axis": (0, 2)}, grad=g)
        s.case("roll", jnp.roll, [x], {"shift": -2, "axis": 2}, grad=g)
        s.case("tile", jnp.tile, [x[0]], {"reps": (2, 1, 2)}, grad=g)
        s.case("repeat", jnp.repeat, [x], {"repeats": 2, "axis": 1}, grad=g)
        s.case("expand_dims", jnp.expand_dims, [x], {"axis": (0, 3)}, grad=g)
        s.case("squeeze", jnp.squeeze, [x[:, :1, None]], {"axis": (1,)}, grad=g)
        s.case("broadcast_to", jnp.broadcast_to, [x[:, :1]], {"shape": (5, 2, 3, 4)}, grad=g)
        y = rand((2, 1, 4), dt, seed=22)
        s.case("concatenate", lambda a, b, axis: jnp.concatenate([a, b], axis), [x, y], {"axis": 1}, grad=g)
        s.case("stack", lambda a, b, axis: jnp.stack([a, b], axis), [x, x[::-1]], {"axis": 3}, grad=g)
    x = rand((3, 4), "float32", seed=23)
    for mode in ["constant", "edge", "reflect", "symmetric", "wrap"]:
        s.case("pad", lambda v, pad_width, mode: jnp.pad(v, pad_width, mode), [x],
               {"pad_width": ((1, 2), (3, 0)), "mode": mode}, grad=True, name=f"pad_{mode}")
    s.case("lax_pad", lambda v, padding_config: lax.pad(v, np.float32(-1), padding_config), [x],
           {"padding_config": ((1, -1, 1), (0, 2, 2))}, grad=True)
    s.case("repeat", jnp.repeat, [x], {"repeats": 3, "axis": None}, name="repeat_flat")
    s.case("reshape", lambda v, shape: jnp.reshape(v, shape), [np.zeros((0, 4), "float32")], {"shape": (2, 0, 2)},
           name="reshape_empty")


def indexing(s):
    for dt in ["float32", "float64", "int32"]:
        x = rand((5, 6), dt, seed=31)
        g = dt.startswith("float")
        s.case("slice", lax.slice, [x], {"start_indices": (1, 0), "limit_indices": (4, 6), "strides": (2, 3)},
               grad=g)
        s.case("dynamic_slice", lambda v, i, j, slice_sizes: lax.dynamic_slice(v, (i, j), slice_sizes),
               [x, np.int32(3), np.int32(-2)], {"slice_sizes": (2, 3)}, grad=g)
        s.case("dynamic_update_slice", lambda v, u, i, j: lax.dynamic_update_slice(v, u, (i, j)),
               [x, rand((2, 2), dt, seed=32), np.int32(4), np.int32(1)], grad=g)
        idx = np.array([[0, 4, -1], [2, 7, -9]], dtype=np.int32)  # in range, negative, out of range
        for mode in ["fill", "clip", "wrap"]:
            s.case("take", jnp.take, [x, idx], {"axis": 1, "mode": mode}, grad=g, name=f"take_{dt}_{mode}")
        s.case("take", jnp.take, [x, np.array([3, 29, 0], np.int32)], {"axis": None, "mode": "fill"},
               name=f"take_{dt}_flat")
        ia = np.array([[0, 5, 2, 1, 1, 3]] * 5, dtype=np.int32)
        s.case("take_along_axis", jnp.take_along_axis, [x, ia], {"axis": 1, "mode": "fill"}, grad=g)


def products(s):
    for dt in INEXACT + ["int32"]:
        g = dt != "int32"
        a, b = rand((2, 3, 4), dt, seed=41), rand((2, 4, 5), dt, seed=42)
        s.case("matmul", jnp.matmul, [a, b], tol=SUM_TOL, grad=g)
        s.case("matmul", jnp.matmul, [a[0, 0], b], tol=SUM_TOL, grad=g, name=f"matmul_{dt}_vecmat")
        s.case("dot", jnp.dot, [a, b[0]], tol=SUM_TOL, grad=g)
        s.case("vdot", jnp.vdot, [a, rand((2, 3, 4), dt, seed=43)], tol=SUM_TOL, grad=g)
        s.case("outer", jnp.outer, [a[0, 0], b[0, 0]], tol=SUM_TOL, grad=g)
        s.case("dot_general", lambda x, y, lc, rc, lb, rb: lax.dot_general(x, y, ((lc, rc), (lb, rb))),
               [a, rand((4, 2, 6), dt, seed=44)], {"lc": (2,), "rc": (0,), "lb": (0,), "rb": (1,)},
               tol=SUM_TOL, grad=g)
        s.case("einsum", lambda x, y, subscripts: jnp.einsum(subscripts, x, y), [a, b],
               {"subscripts": "bij,bjk->bki"}, tol=SUM_TOL, grad=g)
        s.case("einsum", lambda x, y, subscripts: jnp.einsum(subscripts, x, y), [a, a],
               {"subscripts": "bij,bij"}, tol=SUM_TOL, grad=g, name=f"einsum_{dt}_implicit")
        s.case("trace", jnp.trace, [rand((4, 5, 2), dt, seed=45)], {"offset": 1, "axis1": 0, "axis2": 1},
               tol=SUM_TOL, grad=g)
    s.case("matmul", jnp.matmul, [np.zeros((3, 0), "float32"), np.zeros((0, 2), "float32")], name="matmul_empty")


def creation(s):
    s.case("arange", lambda start, stop, step, dtype: jnp.arange(start, stop, step, dtype=dtype), [],
           {"start": 0.5, "stop": 7.25, "step": 0.75, "dtype": "float64"})
    s.case("linspace", lambda start, stop, num, endpoint, dtype: jnp.linspace(start, stop, num, endpoint, dtype=dtype),
           [], {"start": -1.0, "stop": 2.0, "num": 7, "endpoint": True, "dtype": "float32"}, tol=SUM_TOL)
    s.case("linspace", lambda start, stop, num, endpoint, dtype: jnp.linspace(start, stop, num, endpoint, dtype=dtype),
           [], {"start": -1.0, "stop": 2.0, "num": 6, "endpoint": False, "dtype": "float64"}, tol=SUM_TOL)
    s.case("eye", lambda N, M, k, dtype: jnp.eye(N, M, k, dtype=dtype), [],
           {"N": 3, "M": 5, "k": 1, "dtype": "int32"})
    s.case("iota", lambda dtype, shape, dimension: lax.broadcasted_iota(dtype, shape, dimension), [],
           {"dtype": "float32", "shape": (2, 3), "dimension": 1})


def cases(s):
    elementwise(s)
    reductions(s)
    shapes(s)
    indexing(s)
    products(s)
    creation(s)
    lax_level(s)
