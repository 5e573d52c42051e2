"""Parity cases of the jax.numpy functions the other modules leave out: creation (ones, zeros,
copy), element-wise aliases (degrees, radians, positive), products (cross, vecdot,
matrix_transpose), index helpers (diag_indices*, tri*_indices_from), functions over
fixed callables (apply_along_axis, apply_over_axes, fromfunction, piecewise), queries that
return Python values in JAX (ndim, size, broadcast_shapes, iscomplexobj, isrealobj: recorded
as int32/bool arrays), dtype queries (can_cast, isdtype, issubdtype: a bool; promote_types,
result_type: recorded as the dtype's position in DTYPE_NAMES) and
the concrete-only set functions (setxor1d, trim_zeros: eager only, as in JAX).

`func` keys the entries of tests/parity/cases_numpy_rest.cpp.
"""
import jax.numpy as jnp
import numpy as np
from jax import lax

from parity_lib import FLOATS, MATH_TOL, SUM_TOL, rand

# The fixed callables of apply_along_axis (a vector to an array), apply_over_axes (an array
# and an axis to an array), fromfunction (index arrays to an array) and piecewise; the C++
# entries define the same ones under the same names.
ALONG = {
    "sum_sin": lambda v: jnp.sum(jnp.sin(v)),            # a vector to a scalar: the axis goes
    "cumsum_sq": lambda v: jnp.cumsum(v * v),            # a vector to a vector of the same length
    "stats": lambda v: jnp.stack([jnp.sum(v), jnp.max(v), v[0]]),  # to a vector of another length
    "outer": lambda v: jnp.outer(v, v[:2]),              # to a matrix: two axes take its place
}
OVER = {
    "sum": lambda a, axis: jnp.sum(a, axis),             # drops the axis (apply_over_axes restores it)
    "cumsum": lambda a, axis: jnp.cumsum(a, axis),       # keeps the rank
    "max_keep": lambda a, axis: jnp.max(a, axis, keepdims=True),
}
FROM = {
    "affine": lambda i, j: 3 * i - j + 0.5,
    "product": lambda i, j, k: i * j + k,
}
PIECES = {
    "sin_cos": [jnp.sin, jnp.cos],
    "square_neg_default": [lambda x: x * x, lambda x: -x, lambda x: x + 1.0],
}

DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
               "float32", "float64", "complex64", "complex128"]


def dtype_code(dtype):
    """A dtype as its position in DTYPE_NAMES (an int32 scalar; the data format has no float16
    arrays, so an empty array of the dtype cannot carry it)."""
    return np.array(DTYPE_NAMES.index(np.dtype(dtype).name), np.int32)


def creation(s):
    for shape in [(3, 4), (5,), ()]:
        for dt in ["float32", "int32", "bool", "complex64", "float64"]:
            s.case("ones", lambda shape, dtype: jnp.ones(shape, dtype), [], {"shape": shape, "dtype": dt},
                   name=f"ones_{dt}_{len(shape)}d")
            s.case("zeros", lambda shape, dtype: jnp.zeros(shape, dtype), [], {"shape": shape, "dtype": dt},
                   name=f"zeros_{dt}_{len(shape)}d")
    for dt in ["float32", "float64", "int32", "uint8", "complex64", "bool"]:
        s.case("copy", jnp.copy, [rand((3, 4), dt, 1)], grad=dt in ("float32", "float64", "complex64"))
    for dt in FLOATS:
        x = np.concatenate([rand((8,), dt, 2, lo=-400, hi=400), np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dt)])
        s.case("degrees", jnp.degrees, [x], tol=MATH_TOL, grad=False)
        s.case("degrees", jnp.degrees, [rand((3, 4), dt, 3, lo=-7, hi=7)], tol=MATH_TOL, grad=True)
        s.case("radians", jnp.radians, [x], tol=MATH_TOL)
        s.case("radians", jnp.radians, [rand((3, 4), dt, 4, lo=-400, hi=400)], tol=MATH_TOL, grad=True)
    for dt in ["float32", "float64", "int32", "uint8", "complex64"]:
        s.case("positive", jnp.positive, [rand((2, 5), dt, 5)], grad=dt in ("float32", "float64", "complex64"))


def products(s):
    for dt in FLOATS + ["complex64", "int32"]:
        g = dt != "int32"
        s.case("cross", lambda a, b: jnp.cross(a, b), [rand((4, 3), dt, 10), rand((4, 3), dt, 11)], tol=SUM_TOL,
               grad=g)
        s.case("cross", lambda a, b: jnp.cross(a, b), [rand((4, 2), dt, 12), rand((4, 2), dt, 13)], tol=SUM_TOL,
               grad=g)
        s.case("cross", lambda a, b: jnp.cross(a, b), [rand((2, 4, 2), dt, 14), rand((4, 3), dt, 15)], tol=SUM_TOL,
               grad=g)
        s.case("vecdot", lambda a, b, axis: jnp.vecdot(a, b, axis=axis), [rand((3, 4), dt, 16), rand((3, 4), dt, 17)],
               {"axis": -1}, tol=SUM_TOL, grad=g)
        s.case("vecdot", lambda a, b, axis: jnp.vecdot(a, b, axis=axis), [rand((5, 3, 2), dt, 18),
                                                                          rand((5, 3, 1), dt, 19)],
               {"axis": 1}, tol=SUM_TOL, grad=g)
        s.case("matrix_transpose", jnp.matrix_transpose, [rand((2, 3, 4), dt, 20)], grad=g)
    for axes in [(0, 0, 0), (0, 1, -1), (-1, 0, 1)]:
        a, b = rand((3, 5), "float32", 21), rand((3, 5), "float32", 22)
        if axes[1] == 1:
            b = rand((5, 3), "float32", 22)
        if axes[0] == -1:
            a = rand((5, 3), "float32", 21)
        s.case("cross", lambda a, b, axisa, axisb, axisc: jnp.cross(a, b, axisa, axisb, axisc), [a, b],
               {"axisa": axes[0], "axisb": axes[1], "axisc": axes[2]}, tol=SUM_TOL, grad=True)
    s.case("cross", lambda a, b, axis: jnp.cross(a, b, axis=axis),
           [rand((3, 4), "float64", 23), rand((3, 4), "float64", 24)], {"axis": 0}, tol=SUM_TOL, grad=True)


def index_helpers(s):
    for n, nd in [(3, 2), (4, 3), (1, 1), (0, 2), (5, 1)]:
        s.case("diag_indices", lambda n, ndim: jnp.diag_indices(n, ndim), [], {"n": n, "ndim": nd},
               name=f"diag_indices_{n}_{nd}")
    for shape in [(3, 3), (2, 2, 2), (4, 4, 4, 4)]:
        s.case("diag_indices_from", jnp.diag_indices_from, [rand(shape, "float32", 30)])
    s.case("diag_indices_from", jnp.diag_indices_from, [rand((5, 5), "int32", 31)])
    for shape in [(4, 4), (3, 5), (5, 2)]:
        for k in [0, 1, -1, 3, -4]:
            a = rand(shape, "float32", 32)
            s.case("tril_indices_from", lambda a, k: jnp.tril_indices_from(a, k), [a], {"k": k})
            s.case("triu_indices_from", lambda a, k: jnp.triu_indices_from(a, k), [a], {"k": k})


def callables(s):
    x = rand((3, 4, 5), "float32", 40)
    for fname in ALONG:
        for axis in [0, 1, -1]:
            s.case("apply_along_axis", lambda a, func, axis: jnp.apply_along_axis(ALONG[func], axis, a), [x],
                   {"func": fname, "axis": axis}, tol=SUM_TOL, grad=True)
    s.case("apply_along_axis", lambda a, func, axis: jnp.apply_along_axis(ALONG[func], axis, a),
           [rand((4, 6), "float64", 41)], {"func": "cumsum_sq", "axis": 1}, tol=SUM_TOL, grad=True)
    for fname in OVER:
        for axes in [(0,), (1, 2), (2, 0), (-1,)]:
            s.case("apply_over_axes", lambda a, func, axes: jnp.apply_over_axes(OVER[func], a, axes), [x],
                   {"func": fname, "axes": axes}, tol=SUM_TOL, grad=True)
    for dt in ["float32", "int32", "float64"]:
        s.case("fromfunction", lambda func, shape, dtype: jnp.fromfunction(FROM[func], shape, dtype=dtype), [],
               {"func": "affine", "shape": (3, 4), "dtype": dt}, name=f"fromfunction_affine_{dt}")
        s.case("fromfunction", lambda func, shape, dtype: jnp.fromfunction(FROM[func], shape, dtype=dtype), [],
               {"func": "product", "shape": (2, 3, 4), "dtype": dt}, name=f"fromfunction_product_{dt}")
    for dt in FLOATS:
        v = rand((12,), dt, 42, lo=-3, hi=3)
        s.case("piecewise", lambda a, c0, func: jnp.piecewise(a, [c0], PIECES[func]), [v, v < 0],
               {"func": "sin_cos"}, tol=MATH_TOL, grad=True)
        s.case("piecewise", lambda a, c0, c1, func: jnp.piecewise(a, [c0, c1], PIECES[func]),
               [v, v < -1, v > 1], {"func": "square_neg_default"}, grad=True)
        # Overlapping conditions: the later one wins in jnp.piecewise (numpy's rule).
        s.case("piecewise", lambda a, c0, c1, func: jnp.piecewise(a, [c0, c1], PIECES[func]),
               [v, v < 1, v > 0], {"func": "square_neg_default"}, grad=True)
    m = rand((3, 4), "float32", 43)
    s.case("piecewise", lambda a, c0, func: jnp.piecewise(a, [c0], PIECES[func]), [m, m > 0.5],
           {"func": "sin_cos"}, tol=MATH_TOL, grad=True)


def queries(s):
    for shape in [(), (3,), (2, 3), (2, 1, 4), (0, 5)]:
        for dt in ["float32", "int32"]:
            x = rand(shape, dt, 50)
            s.case("ndim", lambda a: np.array(jnp.ndim(a), np.int32), [x])
            s.case("size", lambda a: np.array(jnp.size(a), np.int32), [x])
    for dt in ["float32", "float64", "int32", "complex64", "complex128", "bool", "uint8"]:
        x = rand((2, 2), dt, 51)
        s.case("iscomplexobj", lambda a: np.array(jnp.iscomplexobj(a)), [x])
        s.case("isrealobj", lambda a: np.array(jnp.isrealobj(a)), [x])
    for shapes in [((3, 1), (1, 4)), ((5,), (2, 1, 5), (1,)), ((1,), (1, 1)), ((4, 1, 3), (2, 1)), ((7,),)]:
        s.case("broadcast_shapes", lambda shapes: np.array(jnp.broadcast_shapes(*shapes), np.int32), [],
               {"shapes": shapes}, name="broadcast_shapes_" + "_".join("x".join(map(str, t)) for t in shapes))
        s.case("broadcast_shapes", lambda shapes: np.array(lax.broadcast_shapes(*shapes), np.int32), [],
               {"shapes": shapes}, name="lax_broadcast_shapes_" + "_".join("x".join(map(str, t)) for t in shapes))


def dtype_queries(s):
    # x64 on: JAX then keeps 64-bit dtypes as they are, as tessel does.
    for a in DTYPE_NAMES:
        for b in DTYPE_NAMES:
            s.case("promote_types", lambda a, b: dtype_code(jnp.promote_types(a, b)), [], {"a": a, "b": b},
                   name=f"promote_types_{a}_{b}", x64=True)
            for casting in ["no", "equiv", "safe", "same_kind", "unsafe"]:
                s.case("can_cast", lambda a, b, casting: np.array(jnp.can_cast(a, b, casting)), [],
                       {"a": a, "b": b, "casting": casting}, name=f"can_cast_{a}_{b}_{casting}", x64=True)
        for kind in ["bool", "signed integer", "unsigned integer", "integral", "real floating",
                     "complex floating", "numeric"]:
            s.case("isdtype", lambda a, kind: np.array(jnp.isdtype(jnp.dtype(a), kind.replace("_", " "))), [],
                   {"a": a, "kind": kind.replace(" ", "_")}, name=f"isdtype_{a}_{kind.replace(' ', '_')}", x64=True)
        categories = {"generic": np.generic, "number": np.number, "integer": np.integer,
                      "signedinteger": np.signedinteger, "unsignedinteger": np.unsignedinteger,
                      "inexact": np.inexact, "floating": np.floating, "complexfloating": np.complexfloating,
                      "bool": np.bool_}
        categories.update({d: d for d in DTYPE_NAMES if d != "bool"})
        for cat, typ in categories.items():
            s.case("issubdtype", lambda a, category: np.array(jnp.issubdtype(jnp.dtype(a), typ)), [],
                   {"a": a, "category": cat}, name=f"issubdtype_{a}_{cat}", x64=True)
    # result_type of arrays: strong dtypes only (a C++ Array is never weakly typed), with x64
    # on: tessel always has the 64-bit dtypes (docs/arrays.md), so uint32 with int32 is int64
    # as in JAX with x64 (without x64 JAX canonicalizes it to int32). No float16/bfloat16
    # inputs (the data format has no such arrays: promote_types covers them).
    groups = [["int32", "float32"], ["uint8", "int8"], ["bool", "int16"], ["uint32", "int32"],
              ["int64", "float32"], ["uint64", "int64"], ["complex64", "float64"], ["bool"], ["uint8", "uint16", "int8"],
              ["float32", "complex64", "int8"], ["uint16", "float32"]]
    for g in groups:
        s.case("result_type", lambda *xs: dtype_code(jnp.result_type(*xs)),
               [np.zeros((2,), np.dtype(jnp.dtype(d))) for d in g], name="result_type_" + "_".join(g), x64=True)


def concrete_sets(s):
    # Value-dependent result sizes without a `size`: JAX itself needs concrete inputs (no jit,
    # no vmap), so these cases run eagerly only (cases_numpy_rest.cpp marks them).
    for dt in ["int32", "float32"]:
        a = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], dt)
        b = np.array([2, 7, 1, 8, 2, 8], dt)
        s.case("setxor1d", lambda x, y: jnp.setxor1d(x, y), [a, b])
        s.case("setxor1d", lambda x, y: jnp.setxor1d(x, y), [b, b])
        s.case("setxor1d", lambda x, y, assume_unique: jnp.setxor1d(x, y, assume_unique=True),
               [np.array([5, 1, 3], dt), np.array([3, 2, 7, 0], dt)], {"assume_unique": True})
    for trim in ["fb", "f", "b"]:
        for v in [[0, 0, 1, 2, 0, 3, 0, 0], [0, 0, 0], [4, 5], [0.0, -0.0, 2.5, 0.0]]:
            dt = "float32" if isinstance(v[0], float) else "int32"
            s.case("trim_zeros", lambda x, trim: jnp.trim_zeros(x, trim), [np.array(v, dt)], {"trim": trim})


def assembly(s):
    """block (nested lists of arrays: the generator's lists by their lengths), mask_indices
    (mask functions by name), empty, shape, asarray and array."""
    a, b = rand((2, 1), "float32", 50), rand((2, 3), "float32", 51)
    c, d = rand((1, 2), "float32", 52), rand((1, 2), "float32", 53)
    s.case("block", lambda *xs, rows: jnp.block([list(xs[:2]), list(xs[2:])]), [a, b, c, d], {"rows": (2, 2)})
    s.case("block", lambda *xs, row: jnp.block(list(xs)), [rand((3,), "float32", 54), rand((2,), "float32", 55),
                                                           np.float32(7.0)], {"row": 3}, name="block_1d")
    e, f = rand((2, 2), "int32", 56), rand((2, 3), "int32", 57)
    s.case("block", lambda *xs, rows: jnp.block([list(xs[:2])]), [e, f], {"rows": (2,)}, name="block_one_row")
    x = rand((1, 2, 3), "float32", 58)
    s.case("block", lambda *xs, planes: jnp.block([[list(xs[0:2]), list(xs[2:4])], [list(xs[4:6]), list(xs[6:8])]]),
           [x] * 8, {"planes": ((2, 2), (2, 2))}, name="block_3d")
    for func in ["triu", "tril"]:
        for n, k in [(4, 0), (4, 1), (5, -2), (3, 3), (0, 0)]:
            s.case("mask_indices", lambda n, func, k: jnp.mask_indices(n, getattr(jnp, func), k), [],
                   {"n": n, "func": func, "k": k}, name=f"mask_indices_{func}_{n}_{k + 2}")
    for shape, dt in [((2, 3), "float32"), ((0, 4), "int32"), ((), "float64")]:
        s.case("empty", lambda shape, dtype: jnp.empty(shape, dtype), [], {"shape": shape, "dtype": dt})
    for shape in [(2, 3), (), (4, 0, 5)]:
        s.case("shape", lambda v: np.asarray(jnp.shape(v), np.int32), [rand(shape, "float32", 59)])
    for dt in [None, "float64", "int32"]:
        s.case("asarray", lambda v, dtype: jnp.asarray(v, dtype), [rand((2, 3), "float32", 60)], {"dtype": dt})
        s.case("array", lambda v, dtype: jnp.array(v, dtype), [rand((3,), "int32", 61)], {"dtype": dt})


def histograms(s):
    """histogramdd and histogram2d: counts (int32), weighted sums and densities, per-dimension
    bins (counts or edges) and ranges."""
    pts = rand((60, 3), "float32", 62)
    hist_dd = lambda *xs, **kw: (lambda h: (h[0], *h[1]))(jnp.histogramdd(*xs, **kw))
    s.case("histogramdd", lambda p, bins: hist_dd(p, bins=bins), [pts], {"bins": 4}, tol=SUM_TOL)
    s.case("histogramdd", lambda p, bins, lohi: hist_dd(p, bins=list(bins), range=[lohi[0:2], lohi[2:4], lohi[4:6]]),
           [pts], {"bins": (3, 5, 2), "lohi": (-1.0, 1.0, -2.0, 0.5, 0.0, 3.0)}, tol=SUM_TOL, name="histogramdd_ranges")
    w = rand((60,), "float32", 63)
    s.case("histogramdd", lambda p, w, bins, density: hist_dd(p, bins=bins, weights=w, density=density), [pts, w],
           {"bins": 3, "density": False}, tol=SUM_TOL, name="histogramdd_weights")
    s.case("histogramdd", lambda p, bins, density: hist_dd(p, bins=bins, density=density), [pts],
           {"bins": 3, "density": True}, tol=SUM_TOL, name="histogramdd_density")
    edges = np.asarray([-2.0, -0.5, 0.0, 0.25, 2.0], np.float32)
    s.case("histogramdd", lambda p, e0, e1, e2: hist_dd(p, bins=[e0, e1, e2]), [pts, edges, edges[1:], edges[:3]],
           tol=SUM_TOL, name="histogramdd_edges")
    x, y = rand((50,), "float32", 64), rand((50,), "float32", 65)
    s.case("histogram2d", lambda x, y, bins: jnp.histogram2d(x, y, bins), [x, y], {"bins": 5}, tol=SUM_TOL)
    s.case("histogram2d", lambda x, y, bins, density: jnp.histogram2d(x, y, list(bins), density=density),
           [x, y.astype(np.float64)], {"bins": (4, 2), "density": True}, tol=SUM_TOL, name="histogram2d_density")
    xi = np.asarray([1, 2, 3, 10, 11, 15, 19, 25], np.int32)
    yi = np.asarray([2, 5, 6, 8, 13, 16, 17, 18], np.int32)
    s.case("histogram2d", lambda x, y, bins: jnp.histogram2d(x, y, bins), [xi, yi], {"bins": 8}, tol=SUM_TOL,
           name="histogram2d_ints")


def cases(s):
    assembly(s)
    histograms(s)
    creation(s)
    products(s)
    index_helpers(s)
    callables(s)
    queries(s)
    dtype_queries(s)
    concrete_sets(s)
