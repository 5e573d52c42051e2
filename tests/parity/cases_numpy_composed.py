"""Parity cases of include/tessel/numpy.h (jax.numpy's functions composed of primitives):
element-wise helpers, NaN-aware reductions, differences and statistics, construction,
splitting and joining, products, index helpers, polynomials and windows.

Each `s.case(func, jax_fn, inputs, params, ...)` line is one case; `func` is the key of its
entry in tests/parity/cases_numpy_composed.cpp (keys are prefixed `np.` so they never clash
with the primitives' keys of cases_numpy).
"""
import jax.numpy as jnp
import numpy as np

from parity_lib import FLOATS, MATH_TOL, SUM_TOL, rand, specials


def i32(fn):
    """fn with its integer result as int32 (tessel's default int; JAX's is int64 under x64)."""
    return lambda *a, **k: fn(*a, **k).astype(jnp.int32)


def each_i32(fn):
    return lambda *a, **k: [jnp.asarray(o).astype(jnp.int32) for o in fn(*a, **k)]


def elementwise(s):
    for dt in FLOATS:
        a, b = rand((3, 4), dt, seed=1, lo=-3, hi=3), rand((4,), dt, seed=2, lo=-3, hi=3)
        sp = specials(dt)
        for name, fn in [("hypot", jnp.hypot), ("copysign", jnp.copysign), ("logaddexp", jnp.logaddexp),
                         ("logaddexp2", jnp.logaddexp2), ("heaviside", jnp.heaviside),
                         ("float_power", jnp.float_power), ("fmax", jnp.fmax), ("fmin", jnp.fmin),
                         ("nextafter", jnp.nextafter)]:
            x = np.abs(a) + 0.5 if name == "float_power" else a
            grad = name in ("hypot", "logaddexp", "logaddexp2", "float_power")
            s.case(name, fn, [x, b], tol=MATH_TOL, grad=grad)
            if name != "float_power":
                # logaddexp2(-1, -1): JAX's fused multiply-add leaves -1e-8 where the exact
                # result, tessel's, is 0; an absolute part covers it.
                t = {"float32": (1e-5, 1e-7), "float64": (5e-14, 1e-15)} if name == "logaddexp2" else MATH_TOL
                s.case(name, fn, [sp[:, None], sp[None, :]], tol=t, name=f"np_{name}_{dt}_special")
        for name, fn, grad in [("signbit", jnp.signbit, False), ("spacing", jnp.spacing, False),
                               ("sinc", jnp.sinc, True), ("deg2rad", jnp.deg2rad, True),
                               ("rad2deg", jnp.rad2deg, True), ("trunc", jnp.trunc, False), ("fix", jnp.trunc, False),
                               ("rint", jnp.rint, False), ("fabs", jnp.fabs, True), ("isneginf", jnp.isneginf, False),
                               ("isposinf", jnp.isposinf, False), ("nan_to_num", jnp.nan_to_num, False)]:
            s.case(name, fn, [a], tol=MATH_TOL, grad=grad)
            s.case(name, fn, [sp], tol=MATH_TOL, name=f"np_{name}_{dt}_special")
        # Near 0 the derivative cos(s)/s - sin(s)/s^2 cancels: about 1/s^2 ulps either way.
        s.case("sinc", jnp.sinc, [np.array([0.0, 1e-3, -2.5, 3.0], dt)], tol=MATH_TOL, grad=True,
               gtol={"float32": (5e-2, 1e-6), "float64": (1e-9, 1e-15)}, name=f"np_sinc_{dt}_zero")
        s.case("frexp", lambda x: [o for o in jnp.frexp(x)], [sp], name=f"np_frexp_{dt}_special")
        # Denormal inputs are left out: XLA's CPU code flushes them (jnp.frexp(2**-129) gives
        # exponent -149); tests/numpy/numpy_test.cpp checks tessel's against std::frexp.
        s.case("ldexp", jnp.ldexp, [a, np.array([-3, 0, 2, 100], np.int32)])
        s.case("modf", lambda x: [o for o in jnp.modf(x)], [sp], name=f"np_modf_{dt}_special")
        s.case("divmod", lambda x, y: [o for o in jnp.divmod(x, y)], [a, b])
        s.case("isclose", jnp.isclose, [a, a + np.asarray(1e-6, dt) * b], {"rtol": 1e-5, "atol": 1e-8,
                                                                              "equal_nan": False})
        s.case("isclose", jnp.isclose, [sp[:, None], sp[None, :]], {"rtol": 1e-5, "atol": 1e-8, "equal_nan": True},
               name=f"np_isclose_{dt}_special")
        s.case("allclose", jnp.allclose, [a, a * np.asarray(1 + 1e-7, dt)])
        s.case("array_equal", jnp.array_equal, [a, a])
        s.case("array_equal", jnp.array_equal, [sp, sp], {"equal_nan": True}, name=f"np_array_equal_{dt}_nan")
        s.case("array_equiv", jnp.array_equiv, [a, a[:1]])
        s.case("nan_to_num_values", jnp.nan_to_num, [sp], {"nan": 1.5, "posinf": 7.0, "neginf": -9.0})
    c = rand((3, 4), "complex64", seed=3)
    s.case("angle", jnp.angle, [c], tol=MATH_TOL)
    s.case("angle", jnp.angle, [c], {"deg": True}, tol=MATH_TOL, name="np_angle_deg")
    s.case("isreal", jnp.isreal, [np.array([1 + 0j, 2 + 1j, -0j], np.complex64)])
    s.case("iscomplex", jnp.iscomplex, [np.array([1 + 0j, 2 + 1j, -0j], np.complex64)])
    for dt in ["int32", "int64", "uint32", "int8"]:
        x = np.array([0, 1, 6, 12, 100, 7, 64], dt)
        y = np.array([0, 4, 9, 18, 75, 0, 48], dt)
        s.case("gcd", jnp.gcd, [x, y])
        s.case("lcm", jnp.lcm, [x, y])
        z = np.array([0, 1, 2, 3, 127, -1, -128], dt) if not dt.startswith("u") else np.array([0, 1, 2, 3, 255, 2**31], dt)
        s.case("bitwise_count", jnp.bitwise_count, [z])


def nan_reductions(s):
    for dt in FLOATS:
        x = rand((3, 4, 5), dt, seed=11)
        x[0, 1, :] = np.nan
        x[1, 2, 3] = np.nan
        x[2, :, 0] = np.nan
        for name, fn in [("nansum", jnp.nansum), ("nanprod", jnp.nanprod), ("nanmax", jnp.nanmax),
                         ("nanmin", jnp.nanmin), ("nanmean", jnp.nanmean)]:
            s.case(name, fn, [x], {"axis": (2,), "keepdims": False}, tol=SUM_TOL)
            s.case(name, fn, [x], {"axis": (0, 1), "keepdims": True}, tol=SUM_TOL)
        for name, fn in [("nanvar", jnp.nanvar), ("nanstd", jnp.nanstd)]:
            s.case(name, fn, [x], {"axis": (2,), "keepdims": False, "ddof": 1}, tol=SUM_TOL)
            s.case(name, fn, [x], {"axis": (0,), "keepdims": True, "ddof": 0}, tol=SUM_TOL)
        for name, fn in [("nanargmax", i32(jnp.nanargmax)), ("nanargmin", i32(jnp.nanargmin))]:
            s.case(name, fn, [x], {"axis": 2, "keepdims": False})
        for name, fn in [("nancumsum", jnp.nancumsum), ("nancumprod", jnp.nancumprod)]:
            s.case(name, fn, [x], {"axis": 1}, tol=SUM_TOL)
        y = rand((3, 4), dt, seed=12)
        s.case("ptp", jnp.ptp, [y], {"axis": (1,), "keepdims": False}, grad=True)
        s.case("count_nonzero", i32(jnp.count_nonzero), [np.round(y)], {"axis": (0,), "keepdims": False})
        w = rand((4,), dt, seed=13, lo=0.1, hi=2)
        s.case("average", lambda a, w, axis: jnp.average(a, axis, w), [y, w], {"axis": 1}, tol=SUM_TOL, grad=True)
        s.case("average", lambda a, w, axis: jnp.average(a, axis, w), [y, np.abs(y) + 0.5], {"axis": 0}, tol=SUM_TOL, name=f"np_average_{dt}_full")
        s.case("cumulative_sum", jnp.cumulative_sum, [y], {"axis": 1, "include_initial": True}, tol=SUM_TOL,
               grad=True)
        s.case("cumulative_prod", jnp.cumulative_prod, [y], {"axis": 0, "include_initial": False}, tol=SUM_TOL)


def statistics(s):
    for dt in FLOATS:
        x = rand((4, 6), dt, seed=21)
        s.case("diff", jnp.diff, [x], {"n": 2, "axis": 1}, grad=True)
        s.case("diff", lambda a, p, q, n, axis: jnp.diff(a, n, axis, prepend=p, append=q),
               [x, np.zeros((1, 6), dt), np.ones((1, 6), dt)], {"n": 1, "axis": 0}, name=f"np_diff_{dt}_ends")
        s.case("ediff1d", jnp.ediff1d, [x])
        s.case("ediff1d", lambda a, e, b: jnp.ediff1d(a, to_end=e, to_begin=b),
               [x[0], np.array([9, 8], dt), np.array([-1], dt)], name=f"np_ediff1d_{dt}_ends")
        s.case("gradient", jnp.gradient, [x], {"axis": 1}, grad=True)
        s.case("gradient_all", lambda a: list(jnp.gradient(a)), [x])
        s.case("trapezoid", jnp.trapezoid, [x], {"dx": 0.5, "axis": -1}, tol=SUM_TOL, grad=True)
        s.case("trapezoid_x", lambda y, t, axis: jnp.trapezoid(y, t, axis=axis),
               [x, np.sort(rand((4,), dt, seed=22))], {"axis": 0}, tol=SUM_TOL)
        xp = np.sort(rand((7,), dt, seed=23, lo=-2, hi=2))
        fp = rand((7,), dt, seed=24)
        xq = rand((10,), dt, seed=25, lo=-3, hi=3)
        s.case("interp", jnp.interp, [xq, xp, fp], tol=MATH_TOL)
        s.case("interp_lr", lambda a, b, c, l, r: jnp.interp(a, b, c, left=l, right=r),
               [xq, xp, fp, np.array(-5, dt), np.array(5, dt)], tol=MATH_TOL)
        ph = np.cumsum(rand((12,), dt, seed=26, lo=-4, hi=4))
        s.case("unwrap", jnp.unwrap, [ph], tol=MATH_TOL)
        s.case("unwrap", jnp.unwrap, [ph.reshape(3, 4)], {"discont": 2.0, "axis": 0, "period": 5.0}, tol=MATH_TOL,
               name=f"np_unwrap_{dt}_period")
        s.case("cov", jnp.cov, [x], tol=SUM_TOL, grad=True)
        s.case("cov", jnp.cov, [x], {"rowvar": False, "bias": True}, tol=SUM_TOL, name=f"np_cov_{dt}_cols")
        s.case("corrcoef", jnp.corrcoef, [x], tol=SUM_TOL)


def construction(s):
    s.case("tri", jnp.tri, [], {"N": 3, "M": 5, "k": 1, "dtype": "float32"})
    s.case("tri", jnp.tri, [], {"N": 4, "M": None, "k": -1, "dtype": "int32"}, name="np_tri_int")
    for dt in ["float32", "int32"]:
        m = rand((2, 4, 5), dt, seed=31)
        for k in (-1, 0, 2):
            s.case("tril", jnp.tril, [m], {"k": k}, grad=dt == "float32")
            s.case("triu", jnp.triu, [m], {"k": k}, grad=dt == "float32")
    for k in (-1, 0, 2):
        s.case("tril_indices", each_i32(jnp.tril_indices), [], {"n": 4, "k": k, "m": 5})
        s.case("triu_indices", each_i32(jnp.triu_indices), [], {"n": 4, "k": k, "m": 3})
    v = rand((4,), "float32", seed=32)
    m = rand((4, 5), "float32", seed=33)
    for k in (-2, 0, 1):
        s.case("diag", jnp.diag, [v], {"k": k}, grad=True)
        s.case("diag", jnp.diag, [m], {"k": k}, grad=True, name=f"np_diag_2d_{k}")
        s.case("diagflat", jnp.diagflat, [m[:2, :2]], {"k": k})
    a3 = rand((3, 4, 5), "float32", seed=34)
    s.case("diagonal", jnp.diagonal, [a3], {"offset": 1, "axis1": 2, "axis2": 0}, grad=True)
    s.case("fill_diagonal", lambda a, val: jnp.fill_diagonal(a, val, inplace=False),
           [rand((5, 3), "float32", seed=35), np.array([7, 8], np.float32)])
    s.case("fill_diagonal", lambda a, val: jnp.fill_diagonal(a, val, inplace=False),
           [rand((3, 3, 3), "float32", seed=36), np.array(2, np.float32)], name="np_fill_diagonal_3d")
    s.case("identity", jnp.identity, [], {"n": 3, "dtype": "float32"})
    x, y, z = rand((3,), "float32", 37), rand((4,), "float32", 38), rand((2,), "float32", 39)
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            s.case("meshgrid", lambda *xs, indexing, sparse: list(jnp.meshgrid(*xs, indexing=indexing, sparse=sparse)),
                   [x, y, z], {"indexing": indexing, "sparse": sparse}, name=f"np_meshgrid_{indexing}_{sparse}")
    s.case("indices", each_i32(lambda dimensions, sparse: jnp.indices(dimensions, sparse=sparse)), [],
           {"dimensions": (2, 3, 4), "sparse": False})
    s.case("indices", each_i32(lambda dimensions, sparse: jnp.indices(dimensions, sparse=sparse)), [],
           {"dimensions": (2, 3), "sparse": True}, name="np_indices_sparse")
    s.case("ix_", lambda a, b: list(jnp.ix_(a, b)), [np.array([0, 2], np.int32), np.array([1, 3, 4], np.int32)])
    s.case("logspace", jnp.logspace, [], {"start": -1.0, "stop": 2.0, "num": 7, "endpoint": True, "base": 2.0},
           tol=MATH_TOL)
    s.case("geomspace", jnp.geomspace, [], {"start": 1.0, "stop": 1000.0, "num": 4, "endpoint": True},
           tol=MATH_TOL)
    s.case("geomspace", jnp.geomspace, [], {"start": -2.0, "stop": -64.0, "num": 5, "endpoint": False},
           tol=MATH_TOL, name="np_geomspace_negative")
    s.case("vander", jnp.vander, [rand((4,), "float32", 40)], {"N": 3, "increasing": False}, tol=MATH_TOL)
    s.case("vander", jnp.vander, [np.array([1, 2, 3], np.int32)], {"N": None, "increasing": True},
           name="np_vander_int")


def shapes(s):
    x = rand((6, 4, 2), "float32", seed=41)
    s.case("split", lambda a, n, axis: list(jnp.split(a, n, axis)), [x], {"n": 3, "axis": 0}, grad=True)
    s.case("split_at", lambda a, idx, axis: list(jnp.split(a, list(idx), axis)), [x], {"idx": (1, 3), "axis": 1})
    s.case("array_split", lambda a, n, axis: list(jnp.array_split(a, n, axis)), [x], {"n": 4, "axis": 0})
    s.case("hsplit", lambda a, n: list(jnp.hsplit(a, n)), [x], {"n": 2})
    s.case("vsplit", lambda a, n: list(jnp.vsplit(a, n)), [x], {"n": 2})
    s.case("dsplit", lambda a, n: list(jnp.dsplit(a, n)), [x], {"n": 2})
    s.case("unstack", lambda a, axis: list(jnp.unstack(a, axis=axis)), [x], {"axis": 2})
    a1, a2 = rand((3,), "float32", 42), rand((3,), "float32", 43)
    m1, m2 = rand((2, 3), "float32", 44), rand((2, 3), "float32", 45)
    for name, fn in [("hstack", jnp.hstack), ("vstack", jnp.vstack), ("dstack", jnp.dstack),
                     ("column_stack", jnp.column_stack)]:
        s.case(name, lambda a, b, fn=fn: fn([a, b]), [a1, a2], name=f"np_{name}_1d")
        s.case(name, lambda a, b, fn=fn: fn([a, b]), [m1, m2], grad=True, name=f"np_{name}_2d")
    for name, fn in [("atleast_1d", jnp.atleast_1d), ("atleast_2d", jnp.atleast_2d), ("atleast_3d", jnp.atleast_3d)]:
        s.case(name, fn, [np.float32(2.5)], name=f"np_{name}_0d")
        s.case(name, fn, [a1], name=f"np_{name}_1d")
        s.case(name, fn, [m1], name=f"np_{name}_2d")
    for k in (-1, 1, 2, 3, 5):
        s.case("rot90", jnp.rot90, [x], {"k": k, "axes": (0, 2)}, name=f"np_rot90_{k}")
    s.case("fliplr", jnp.fliplr, [m1])
    s.case("flipud", jnp.flipud, [m1])
    s.case("resize", jnp.resize, [m1], {"new_shape": (4, 4)})
    s.case("rollaxis", jnp.rollaxis, [x], {"axis": 2, "start": 0})
    s.case("rollaxis", jnp.rollaxis, [x], {"axis": 0, "start": 3}, name="np_rollaxis_end")
    s.case("delete_", lambda a, obj, axis: jnp.delete(a, np.array(obj), axis), [x], {"obj": (0, -1, 2), "axis": 0})
    s.case("delete_", lambda a, obj, axis: jnp.delete(a, np.array(obj), axis), [m1], {"obj": (1,), "axis": None},
           name="np_delete_flat")
    s.case("insert", lambda a, v, obj, axis: jnp.insert(a, obj, v, axis), [m1, np.float32(9)], {"obj": 1, "axis": 1})
    s.case("insert", lambda a, v, obj, axis: jnp.insert(a, obj, v, axis), [m1, a1[:2]], {"obj": 3, "axis": None},
           name="np_insert_flat")
    s.case("append", lambda a, v, axis: jnp.append(a, v, axis), [m1, m2], {"axis": 0})
    s.case("append", lambda a, v, axis: jnp.append(a, v, axis), [m1, a1], {"axis": None}, name="np_append_flat")
    s.case("broadcast_arrays", lambda a, b: list(jnp.broadcast_arrays(a, b)), [a1, m1[:, :1]])
    s.case("unravel_index", each_i32(lambda i, shape: jnp.unravel_index(i, shape)),
           [np.array([0, 5, 11, 23, -1, 30], np.int32)], {"shape": (2, 3, 4)})
    s.case("ravel_multi_index", i32(lambda i, j, dims, mode: jnp.ravel_multi_index((i, j), dims, mode=mode)),
           [np.array([0, 1, 2], np.int32), np.array([3, 0, 1], np.int32)], {"dims": (3, 4), "mode": "raise"})
    s.case("ravel_multi_index", i32(lambda i, j, dims, mode: jnp.ravel_multi_index((i, j), dims, mode=mode)),
           [np.array([0, 5, -2], np.int32), np.array([7, 0, 1], np.int32)], {"dims": (3, 4), "mode": "wrap"},
           name="np_ravel_multi_index_wrap")
    s.case("ravel_multi_index", i32(lambda i, j, dims, mode: jnp.ravel_multi_index((i, j), dims, mode=mode)),
           [np.array([0, 5, -2], np.int32), np.array([7, 0, 1], np.int32)], {"dims": (3, 4), "mode": "clip"},
           name="np_ravel_multi_index_clip")


def products(s):
    for dt in FLOATS:
        a, b = rand((3, 4), dt, 51), rand((2, 4), dt, 52)
        s.case("inner", jnp.inner, [a, b], tol=SUM_TOL, grad=True)
        s.case("kron", jnp.kron, [a[:2, :3], rand((2, 2), dt, 53)], tol=SUM_TOL, grad=True)
        s.case("kron", jnp.kron, [rand((3,), dt, 54), a], tol=SUM_TOL, name=f"np_kron_{dt}_ranks")
        s.case("matvec", jnp.matvec, [rand((2, 3, 4), dt, 55), rand((4,), dt, 56)], tol=SUM_TOL, grad=True)
        s.case("vecmat", jnp.vecmat, [rand((3,), dt, 57), rand((2, 3, 4), dt, 58)], tol=SUM_TOL, grad=True)
    p = rand((4,), "float32", 61)
    s.case("polyval", jnp.polyval, [p, rand((5,), "float32", 62)], tol=SUM_TOL, grad=True)
    s.case("polyadd", jnp.polyadd, [p, rand((2,), "float32", 63)])
    s.case("polysub", jnp.polysub, [rand((2,), "float32", 64), p])
    s.case("polyder", jnp.polyder, [p], {"m": 2})
    s.case("polyint", jnp.polyint, [p], {"m": 2}, tol=MATH_TOL)
    s.case("polyint_k", lambda q, k, m: jnp.polyint(q, m, k), [p, np.array([1.5, -2], np.float32)], {"m": 2},
           tol=MATH_TOL)
    for name, fn in [("bartlett", jnp.bartlett), ("blackman", jnp.blackman), ("hamming", jnp.hamming),
                     ("hanning", jnp.hanning)]:
        for M in (1, 6, 7):
            s.case(name, fn, [], {"M": M}, tol=MATH_TOL, name=f"np_{name}_{M}")


def selection(s):
    x = rand((4, 3), "float32", seed=71)
    cond = np.array([True, False, True, True])
    # Without a size the result's length depends on the values, which jit cannot trace; the
    # unsized forms are checked eagerly in tests/numpy/numpy_test.cpp.
    s.case("compress", lambda c, a, axis, size: jnp.compress(c, a, axis=axis, size=size, fill_value=-1),
           [cond, x], {"axis": 0, "size": 4}, grad=True)
    s.case("compress", lambda c, a, axis, size: jnp.compress(c, a, axis=axis, size=size, fill_value=-1),
           [cond[:3], x], {"axis": 1, "size": 2}, name="compress_cols")
    s.case("extract", lambda c, a, size: jnp.extract(c, a, size=size, fill_value=-1), [x > 0, x], {"size": 9})
    s.case("choose", lambda a, b, c, d, mode: jnp.choose(a, [b, c, d], mode=mode),
           [np.array([[0, 2, 1], [1, 0, 2]], np.int32), x[:2], x[2:], np.float32(7)], {"mode": "raise"}, grad=True)
    s.case("choose", lambda a, b, c, d, mode: jnp.choose(a, [b, c, d], mode=mode),
           [np.array([[0, 5, -1], [3, 0, 2]], np.int32), x[:2], x[2:], np.float32(7)], {"mode": "wrap"},
           name="choose_wrap")
    s.case("choose", lambda a, b, c, d, mode: jnp.choose(a, [b, c, d], mode=mode),
           [np.array([[0, 5, -1], [3, 0, 2]], np.int32), x[:2], x[2:], np.float32(7)], {"mode": "clip"},
           name="choose_clip")
    s.case("place", lambda a, m, v: jnp.place(a, m, v, inplace=False), [x, x > 0, np.array([10, 20], np.float32)])
    for mode in (None, "clip", "wrap"):
        s.case("put", lambda a, i, v, mode: jnp.put(a, i, v, mode=mode, inplace=False),
               [x, np.array([0, 5, -1, 13], np.int32), np.array([1, 2, 3], np.float32)], {"mode": mode},
               name=f"put_{mode}")
    s.case("put_along_axis", lambda a, i, v, axis: jnp.put_along_axis(a, i, v, axis, inplace=False),
           [x, np.array([[0], [2], [1], [0]], np.int32), np.array([[9], [8], [7], [6]], np.float32)], {"axis": 1})
    bits = (rand((3, 11), "float32", seed=72) > 0)
    for order in ("big", "little"):
        s.case("packbits", jnp.packbits, [bits], {"axis": 1, "bitorder": order}, name=f"packbits_{order}")
        s.case("packbits", jnp.packbits, [bits.astype(np.int32)], {"axis": None, "bitorder": order},
               name=f"packbits_flat_{order}")
        packed = np.array([[0, 255, 7], [128, 3, 64]], np.uint8)
        s.case("unpackbits", jnp.unpackbits, [packed], {"axis": 1, "count": None, "bitorder": order},
               name=f"unpackbits_{order}")
        s.case("unpackbits", jnp.unpackbits, [packed], {"axis": 0, "count": 11, "bitorder": order},
               name=f"unpackbits_count_{order}")
    p1, p2 = rand((4,), "float32", 73), rand((3,), "float32", 74)
    s.case("polymul", jnp.polymul, [p1, p2], tol=SUM_TOL, grad=True)
    s.case("polydiv", lambda u, v: list(jnp.polydiv(u, v)), [rand((5,), "float64", 75), np.array([2.0, -1.0, 0.5])],
           tol=SUM_TOL)
    xs = np.linspace(-1, 1, 9)
    ys = 3 * xs**2 - xs + 0.5 + 0.01 * rand((9,), "float64", 76)
    s.case("polyfit", jnp.polyfit, [xs, ys], {"deg": 2}, tol={"float64": (1e-9, 1e-12)})
    s.case("poly", jnp.poly, [np.array([1.0, -2.0, 0.5])], tol=SUM_TOL)
    s.case("roots", lambda q: jnp.sort_complex(jnp.roots(q, strip_zeros=False)), [np.array([1.0, -2.5, 1.0])],
           tol=MATH_TOL)


def cases(s):
    elementwise(s)
    nan_reductions(s)
    statistics(s)
    construction(s)
    shapes(s)
    products(s)
    selection(s)
