"""Parity cases of include/tessel/lax_extra.h (the rest of jax.lax): gather and scatter with
dimension numbers, integer and rounding functions, reductions and scans over callables,
shape and slicing helpers, ragged products, top-k, convolution patches and shape helpers.

Each `s.case(func, jax_fn, inputs, params, ...)` line is one case; `func` is the key of its
entry in tests/parity/cases_lax.cpp (`lax.gather` is tessel::lax::gather).
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from parity_lib import MATH_TOL, SUM_TOL, rand

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers


def dn_of(spec):
    """Convolution dimension numbers written as one parameter: "NHWC,HWIO,NHWC" or "none"."""
    return None if spec == "none" else tuple(spec.split(","))


def shape_array(t):
    return np.asarray(t, np.int32)


def elementwise(s):
    a = np.array([7, -7, 7, -7, 0, 5, -2147483648, 3], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, -1, 7], np.int32)
    s.case("lax.div", lax.div, [a, b])
    s.case("lax.div", lax.div, [np.array([7, 200, 0, 9], np.uint8), np.array([2, 3, 5, 0], np.uint8)])
    s.case("lax.div", lax.div, [rand((3, 4), np.float32, 1), rand((3, 4), np.float32, 2, lo=0.5, hi=2)], grad=True)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.7, -3.2, 0.0, -0.0, np.inf, -np.inf, np.nan,
                       1e30, 8388609.0], np.float32)
    for dt in (np.float32, np.float64):
        for m in (0, 1):
            s.case("lax.round", lambda x, rounding_method: lax.round(x, lax.RoundingMethod(rounding_method)),
                   [halves.astype(dt)], {"rounding_method": m})
    x = rand((3, 4), np.float32, 3)
    for y in (0, 1, 2, 3, -2):
        s.case("lax.integer_pow", lambda v, y: lax.integer_pow(v, y), [x], {"y": y}, tol=MATH_TOL, grad=True)
    s.case("lax.integer_pow", lambda v, y: lax.integer_pow(v, y), [np.array([-3, 2, 5, 0], np.int32)], {"y": 3})
    s.case("lax.integer_pow", lambda v, y: lax.integer_pow(v, y), [rand((5,), np.float64, 4)], {"y": 5}, grad=True)
    ints = {
        np.int32: np.array([0, 1, -1, 7, 255, -2147483648, 2147483647, 65536], np.int32),
        np.uint8: np.array([0, 1, 128, 255, 16, 3, 7, 64], np.uint8),
        np.int64: np.array([0, 1, -1, 1 << 40, -(1 << 62), 12345678901, 9, 2], np.int64),
        np.uint16: np.array([0, 1, 65535, 256, 4095, 17, 32768, 3], np.uint16),
        np.int8: np.array([0, 1, -1, 127, -128, 5, 64, -3], np.int8),
    }
    for dt, v in ints.items():
        s.case("lax.clz", lax.clz, [v])
        s.case("lax.population_count", lax.population_count, [v])
        s.case("lax.mulhi", lax.mulhi, [v, v[::-1].copy()])
        sh = np.array([0, 1, 3, 5, 7, 2, 4, 6], dt)
        s.case("lax.shift_right_logical", lax.shift_right_logical, [v, sh])
    s.case("lax.mulhi", lax.mulhi, [np.array([4000000000, 3, 1 << 31, 99], np.uint32),
                                    np.array([4000000000, 5, 1 << 31, 7], np.uint32)])
    s.case("lax.mulhi", lax.mulhi, [np.array([-(1 << 63), (1 << 63) - 1, -5, 1 << 33], np.int64),
                                    np.array([-(1 << 63), -2, 3, 1 << 40], np.int64)])
    s.case("lax.mulhi", lax.mulhi, [np.array([(1 << 64) - 1, 1 << 63, 12345, 7], np.uint64),
                                    np.array([(1 << 64) - 1, 3, 1 << 60, 9], np.uint64)])
    s.case("lax.shift_right_logical", lax.shift_right_logical,
           [np.array([-8, -1, 16, 5], np.int32), np.array([1, 31, 32, 40], np.int32)])
    wide = np.array([1.0, 1.00390625, 1.0078125, 3.14159265, -2.718281828, 1e-30, 1e30, 7e4, -7e4, 6.1e-5, 0.0, -0.0,
                     np.inf, -np.inf, np.nan, 65519.0], np.float32)
    for e, m in ((8, 7), (5, 10), (8, 23), (4, 3)):
        s.case("lax.reduce_precision", lambda v, exponent_bits, mantissa_bits: lax.reduce_precision(
            v, exponent_bits, mantissa_bits), [wide], {"exponent_bits": e, "mantissa_bits": m})
    s.case("lax.reduce_precision", lambda v, exponent_bits, mantissa_bits: lax.reduce_precision(
        v, exponent_bits, mantissa_bits), [rand((6,), np.float32, 5)], {"exponent_bits": 8, "mantissa_bits": 7},
        grad=True, gtol=(1e-2, 1e-3))
    s.case("lax.reduce_precision", lambda v, exponent_bits, mantissa_bits: lax.reduce_precision(
        v, exponent_bits, mantissa_bits), [rand((6,), np.float64, 6) * 1e3], {"exponent_bits": 8, "mantissa_bits": 23})
    c = [rand((3, 4), np.float32, 10 + k) for k in range(3)]
    s.case("lax.select_n", lambda w, *cs: lax.select_n(w, *cs), [np.array([[0, 1, 2, 1], [2, 2, 0, 0], [1, 0, 1, 2]],
                                                                          np.int32)] + c, grad=True)
    s.case("lax.select_n", lambda w, *cs: lax.select_n(w, *cs), [rand((3, 4), np.float32, 13) > 0] + c[:2], grad=True)
    s.case("lax.select_n", lambda w, *cs: lax.select_n(w, *cs), [np.array(1, np.int32)] + c, grad=True)


def reductions(s):
    x = rand((3, 5), np.float32, 20)
    x[1, 2] = x[1, 4] = 3.0  # a tie: the first index wins
    for axis in (0, 1):
        s.case("lax.argmax", lambda v, axis, index_dtype: lax.argmax(v, axis, index_dtype), [x],
               {"axis": axis, "index_dtype": "int32"})
        s.case("lax.argmin", lambda v, axis, index_dtype: lax.argmin(v, axis, index_dtype), [x],
               {"axis": axis, "index_dtype": "int32"})
    s.case("lax.argmax", lambda v, axis, index_dtype: lax.argmax(v, axis, index_dtype),
           [np.array([[1, 9, 3], [4, 4, 2]], np.int32)], {"axis": 1, "index_dtype": "int64"})
    comps = {"add": lax.add, "mul": lax.mul, "max": lax.max, "min": lax.min}
    inits = {"add": 0.0, "mul": 1.0, "max": -np.inf, "min": np.inf}
    y = rand((4, 5, 3), np.float32, 21)
    for name in comps:
        for dims in ((0,), (1, 2), (0, 1, 2)):
            s.case("lax.reduce", lambda v, computation, dimensions: lax.reduce(
                v, np.float32(inits[computation]), comps[computation], dimensions), [y],
                {"computation": name, "dimensions": dims}, tol=SUM_TOL, grad=name in ("add", "mul"))
    s.case("lax.reduce", lambda v, computation, dimensions: lax.reduce(v, np.int32(0), comps[computation], dimensions),
           [np.arange(35, dtype=np.int32).reshape(5, 7)], {"computation": "add", "dimensions": (1,)})

    def pair_max(a, b):  # (value, index) pairs: the larger value, the lower index on ties
        take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])
    idx = np.broadcast_to(np.arange(5, dtype=np.int32), (3, 5)).copy()
    s.case("lax.reduce_argmax_pair", lambda v, i: list(lax.reduce((v, i), (np.float32(-np.inf), np.int32(0)),
                                                                  pair_max, (1,))), [x, idx])
    s.case("lax.reduce_xor", lambda v, axes: lax.reduce_xor(v, axes),
           [np.array([[1, 2, 4, 7], [255, 1, 3, 9]], np.int32)], {"axes": (1,)})
    s.case("lax.reduce_xor", lambda v, axes: lax.reduce_xor(v, axes),
           [np.array([[True, False, True], [True, True, True]])], {"axes": (0, 1)})


def scans(s):
    for n in (1, 7, 8):
        x = rand((n, 3), np.float32, 30 + n)
        for rev in (False, True):
            s.case("lax.associative_scan", lambda v, reverse, axis: lax.associative_scan(lax.add, v, reverse, axis),
                   [x], {"reverse": rev, "axis": 0}, tol=SUM_TOL, grad=True)
    s.case("lax.associative_scan", lambda v, reverse, axis: lax.associative_scan(lax.add, v, reverse, axis),
           [rand((2, 9), np.float64, 33)], {"reverse": False, "axis": -1}, grad=True)
    s.case("lax.associative_scan_max", lambda v: lax.associative_scan(lax.max, v, False, 0),
           [np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], np.int32)])

    def affine(p, q):  # composition of x -> a x + b maps
        return p[0] * q[0], q[0] * p[1] + q[1]
    s.case("lax.associative_scan_affine", lambda a, b: list(lax.associative_scan(affine, (a, b))),
           [rand((11,), np.float32, 34, lo=0.5, hi=1.2), rand((11,), np.float32, 35)], tol=SUM_TOL, grad=True)
    x = rand((5, 3), np.float32, 36)
    for bs in (None, 2, 5):
        s.case("lax.map", lambda v, batch_size: lax.map(lambda r: jnp.sin(r) * jnp.sum(r * r), v,
                                                        batch_size=batch_size), [x], {"batch_size": bs},
               tol=MATH_TOL, grad=True)


def shape_and_slicing(s):
    x = rand((2, 3), np.float32, 40)
    s.case("lax.broadcast", lambda v, sizes: lax.broadcast(v, sizes), [x], {"sizes": (4, 1)}, grad=True)
    s.case("lax.broadcast_to_rank", lambda v, rank: lax.broadcast_to_rank(v, rank), [x], {"rank": 4}, grad=True)
    s.case("lax.broadcast_like", lax.broadcast_like, [rand((3,), np.float32, 41), x], grad=True)
    y = rand((2, 3, 4, 5), np.float32, 42)
    for lo, hi in ((1, 3), (0, None), (-2, None), (2, 2)):
        s.case("lax.collapse", lambda v, start_dimension, stop_dimension: lax.collapse(v, start_dimension,
                                                                                        stop_dimension),
               [y], {"start_dimension": lo, "stop_dimension": hi}, grad=True)
    s.case("lax.optimization_barrier", lambda a, b: list(lax.optimization_barrier((a, b))),
           [x, np.array([1, 2], np.int32)], grad=True)
    z = rand((4, 5, 3), np.float32, 43)
    for idx, axis, keep in ((1, 0, True), (-1, 1, False), (2, 2, False)):
        s.case("lax.index_in_dim", lambda v, index, axis, keepdims: lax.index_in_dim(v, index, axis, keepdims), [z],
               {"index": idx, "axis": axis, "keepdims": keep}, grad=True)
    for st in (1, -1, 4):  # clamped so the window fits
        s.case("lax.dynamic_slice_in_dim", lambda v, i, slice_size, axis: lax.dynamic_slice_in_dim(v, i, slice_size,
                                                                                                   axis),
               [z, np.array(st, np.int32)], {"slice_size": 2, "axis": 1}, grad=True)
        s.case("lax.dynamic_index_in_dim", lambda v, i, axis, keepdims: lax.dynamic_index_in_dim(v, i, axis, keepdims),
               [z, np.array(st, np.int32)], {"axis": 0, "keepdims": False}, grad=True)
        s.case("lax.dynamic_update_slice_in_dim", lambda v, u, i, axis: lax.dynamic_update_slice_in_dim(v, u, i, axis),
               [z, rand((4, 2, 3), np.float32, 44), np.array(st, np.int32)], {"axis": 1}, grad=True)
        s.case("lax.dynamic_update_index_in_dim",
               lambda v, u, i, axis: lax.dynamic_update_index_in_dim(v, u, i, axis),
               [z, rand((4, 5), np.float32, 45), np.array(st, np.int32)], {"axis": 2}, grad=True)
    s.case("lax.index_take", lambda v, i, j, axes: lax.index_take(v, (i, j), axes),
           [z, np.array([0, 3, -1, 2], np.int32), np.array([1, 0, 2, -2], np.int32)], {"axes": (0, 2)}, grad=True)
    s.case("lax.index_take", lambda v, i, axes: lax.index_take(v, (i,), axes),
           [z, np.array([4, 0, 1], np.int32)], {"axes": (1,)}, grad=True)


def gathers(s):
    x = rand((5, 4), np.float32, 50)
    g = lambda v, i, offset_dims, collapsed, start_map, slice_sizes, mode, obd=(), sbd=(): lax.gather(  # noqa: E731
        v, i, GDN(offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
                  start_index_map=tuple(start_map), operand_batching_dims=tuple(obd),
                  start_indices_batching_dims=tuple(sbd)), tuple(slice_sizes), mode=mode)
    rows = np.array([[3], [0], [4], [3], [-1], [7]], np.int32)  # -1 and 7 are out of bounds
    for mode in ("clip", "fill", "promise_in_bounds"):
        r = rows if mode != "promise_in_bounds" else rows[:4]
        s.case("lax.gather", g, [x, r], {"offset_dims": (1,), "collapsed": (0,), "start_map": (0,),
                                        "slice_sizes": (1, 4), "mode": mode}, grad=True)
    pts = np.array([[0, 1], [4, 3], [2, 2], [1, 5], [-2, 0]], np.int32)
    s.case("lax.gather", g, [x, pts], {"offset_dims": (), "collapsed": (0, 1), "start_map": (0, 1),
                                      "slice_sizes": (1, 1), "mode": "fill"}, grad=True)
    s.case("lax.gather", g, [x, pts[:, ::-1].copy()], {"offset_dims": (), "collapsed": (0, 1), "start_map": (1, 0),
                                                      "slice_sizes": (1, 1), "mode": "clip"}, grad=True)
    # 2 x 3 windows, offset dims before the batch dims; starts clamped / windows that do not fit.
    win = np.array([[[0, 0], [3, 1]], [[4, 2], [1, 1]]], np.int32)
    for mode in ("clip", "fill"):
        s.case("lax.gather", g, [x, win], {"offset_dims": (0, 3), "collapsed": (), "start_map": (0, 1),
                                          "slice_sizes": (2, 3), "mode": mode}, grad=True)
    # Window on a dimension with no start (dimension 1 read from 0), the start on dimension 0.
    s.case("lax.gather", g, [x, np.array([[2], [0]], np.int32)], {"offset_dims": (1, 2), "collapsed": (),
                                                                 "start_map": (0,), "slice_sizes": (2, 3),
                                                                 "mode": "clip"}, grad=True)
    # Batching dims: operand (3, 5, 2), indices (3, 4, 1): example b reads its own rows.
    xb = rand((3, 5, 2), np.float32, 51)
    ib = np.array([[[0], [4], [2], [2]], [[1], [1], [3], [0]], [[4], [0], [1], [3]]], np.int32)
    s.case("lax.gather", g, [xb, ib], {"offset_dims": (2,), "collapsed": (1,), "start_map": (1,),
                                      "slice_sizes": (1, 1, 2), "mode": "clip", "obd": (0,), "sbd": (0,)}, grad=True)
    s.case("lax.gather_fill", lambda v, i, fill_value: lax.gather(
        v, i, GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 4), mode="fill",
        fill_value=fill_value), [x, rows], {"fill_value": -5.0})
    s.case("lax.gather", g, [np.arange(20, dtype=np.int32).reshape(5, 4), rows],
           {"offset_dims": (1,), "collapsed": (0,), "start_map": (0,), "slice_sizes": (1, 4), "mode": "fill"})


def scatters(s):
    x = rand((5, 4), np.float32, 60)
    fns = {"scatter": lax.scatter, "scatter_add": lax.scatter_add, "scatter_sub": lax.scatter_sub,
           "scatter_mul": lax.scatter_mul, "scatter_min": lax.scatter_min, "scatter_max": lax.scatter_max}

    def sc(kind):
        return lambda v, i, u, window, inserted, to_operand, mode, obd=(), sbd=(): fns[kind](
            v, i, u, SDN(update_window_dims=tuple(window), inserted_window_dims=tuple(inserted),
                         scatter_dims_to_operand_dims=tuple(to_operand), operand_batching_dims=tuple(obd),
                         scatter_indices_batching_dims=tuple(sbd)), mode=mode)
    rows = np.array([[3], [0], [7], [-1]], np.int32)  # 7 and -1 out of bounds
    dup = np.array([[3], [0], [3], [1]], np.int32)
    u = rand((4, 4), np.float32, 61)
    for kind in fns:
        idx = rows if kind == "scatter" else dup
        for mode in ("fill", "clip"):
            s.case("lax." + kind, sc(kind), [x, idx, u], {"window": (1,), "inserted": (0,), "to_operand": (0,),
                                                         "mode": mode}, grad=kind not in ("scatter", "scatter_mul") or (kind == "scatter" and mode == "fill"))
    s.case("lax.scatter", sc("scatter"), [x, rows, u], {"window": (1,), "inserted": (0,), "to_operand": (0,),
                                                       "mode": "fill"}, grad=True)
    s.case("lax.scatter_mul_unique", lambda v, i, u: lax.scatter_mul(
        v, i, u, SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)),
        unique_indices=True), [x, np.array([[3], [0], [1]], np.int32), rand((3, 4), np.float32, 66)], grad=True)
    # Points, and 2 x 2 windows with the window dims first in the updates.
    pts = np.array([[0, 1], [4, 3], [2, 2], [1, 5]], np.int32)
    s.case("lax.scatter_add", sc("scatter_add"), [x, pts, rand((4,), np.float32, 62)],
           {"window": (), "inserted": (0, 1), "to_operand": (0, 1), "mode": "fill"}, grad=True)
    win = np.array([[0, 0], [3, 2], [4, 1]], np.int32)
    s.case("lax.scatter_add", sc("scatter_add"), [x, win, rand((2, 2, 3), np.float32, 63)],
           {"window": (0, 1), "inserted": (), "to_operand": (0, 1), "mode": "fill"}, grad=True)
    s.case("lax.scatter_add", sc("scatter_add"), [x, win, rand((2, 2, 3), np.float32, 63)],
           {"window": (0, 1), "inserted": (), "to_operand": (0, 1), "mode": "clip"}, grad=True)
    xb = rand((3, 5, 2), np.float32, 64)
    ib = np.array([[[0], [4]], [[1], [1]], [[4], [0]]], np.int32)
    s.case("lax.scatter_add", sc("scatter_add"), [xb, ib, rand((3, 2, 2), np.float32, 65)],
           {"window": (2,), "inserted": (1,), "to_operand": (1,), "mode": "clip", "obd": (0,), "sbd": (0,)},
           grad=True)
    s.case("lax.scatter_add", sc("scatter_add"), [np.zeros((6,), np.int32), np.array([[1], [1], [5], [9]], np.int32),
                                                  np.array([1, 2, 3, 4], np.int32)],
           {"window": (), "inserted": (0,), "to_operand": (0,), "mode": "fill"})
    sa = lambda v, i, window, inserted, to_operand, update_shape: lax.scatter_apply(  # noqa: E731
        v, i, jnp.sin, SDN(update_window_dims=tuple(window), inserted_window_dims=tuple(inserted),
                           scatter_dims_to_operand_dims=tuple(to_operand)), update_shape=tuple(update_shape))
    s.case("lax.scatter_apply", sa, [x, np.array([[3], [0]], np.int32)],
           {"window": (1,), "inserted": (0,), "to_operand": (0,), "update_shape": (2, 4)}, tol=MATH_TOL)
    # Duplicates: func runs once per update (sin(sin(x)) where two updates land).
    s.case("lax.scatter_apply", sa, [x, np.array([[1, 2], [1, 2], [4, 0], [1, 2], [9, 9]], np.int32)],
           {"window": (), "inserted": (0, 1), "to_operand": (0, 1), "update_shape": (5,)}, tol=MATH_TOL)


def products(s):
    s.case("lax.batch_matmul", lambda a, b: lax.batch_matmul(a, b),
           [rand((2, 3, 4), np.float32, 70), rand((2, 4, 5), np.float32, 71)], tol=SUM_TOL, grad=True)
    gs = np.array([2, 3, 1], np.int32)
    s.case("lax.ragged_dot", lambda a, b, g: lax.ragged_dot(a, b, g),
           [rand((7, 3), np.float32, 72), rand((3, 3, 4), np.float32, 73), gs], tol=SUM_TOL, grad=True)
    rdn = lax.RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (0,)), ((), ())), lhs_ragged_dimensions=(1,),
                                        rhs_group_dimensions=())
    s.case("lax.ragged_dot_general", lambda a, b, g, dims: lax.ragged_dot_general(a, b, g, rdn),
           [rand((4, 6), np.float32, 74), rand((6, 5), np.float32, 75), np.array([2, 3], np.int32)],
           {"dims": "contracting"}, tol=SUM_TOL, name="lax_ragged_dot_contracting_float32_int32")
    bdn = lax.RaggedDotDimensionNumbers(dot_dimension_numbers=(((2,), (2,)), ((0,), (0,))), lhs_ragged_dimensions=(1,),
                                        rhs_group_dimensions=(1,))
    for g in (np.array([2, 2, 1], np.int32), np.array([[2, 2, 1], [1, 0, 3]], np.int32)):
        s.case("lax.ragged_dot_general", lambda a, b, g, dims: lax.ragged_dot_general(a, b, g, bdn),
               [rand((2, 5, 3), np.float32, 77), rand((2, 3, 3, 4), np.float32, 78), g], {"dims": "batched"},
               tol=SUM_TOL, grad=True, name=f"lax_ragged_dot_batched_{g.ndim}d_groups")
    x = rand((3, 10), np.float32, 76)
    for dim in (-1, 0):
        for k in (1, 3):
            s.case("lax.approx_max_k", lambda v, k, reduction_dimension: list(lax.approx_max_k(
                v, k, reduction_dimension=reduction_dimension)), [x], {"k": k, "reduction_dimension": dim}, grad=True)
            s.case("lax.approx_min_k", lambda v, k, reduction_dimension: list(lax.approx_min_k(
                v, k, reduction_dimension=reduction_dimension)), [x], {"k": k, "reduction_dimension": dim}, grad=True)


def convolutions(s):
    nhwc = rand((2, 5, 6, 3), np.float32, 80)
    for pad in ("SAME", "VALID"):
        s.case("lax.conv_general_dilated_patches", lambda v, filter_shape, window_strides, padding, dn: (
            lax.conv_general_dilated_patches(v, filter_shape, window_strides, padding, dimension_numbers=dn_of(dn))),
            [nhwc], {"filter_shape": (2, 3), "window_strides": (1, 2), "padding": pad, "dn": "NHWC,HWIO,NHWC"},
            tol=SUM_TOL, grad=True)
    nchw = rand((1, 2, 5, 5), np.float32, 81)
    s.case("lax.conv_general_dilated_patches", lambda v, filter_shape, window_strides, padding, dn: (
        lax.conv_general_dilated_patches(v, filter_shape, window_strides, padding, dimension_numbers=dn_of(dn))),
        [nchw], {"filter_shape": (3, 3), "window_strides": (1, 1), "padding": "VALID", "dn": "none"},
        tol=SUM_TOL, grad=True)
    s.case("lax.conv_general_dilated_local", lambda v, w, window_strides, padding, filter_shape, dn: (
        lax.conv_general_dilated_local(v, w, window_strides, padding, filter_shape, dimension_numbers=dn_of(dn))),
        [nchw, rand((4, 18, 3, 3), np.float32, 82)], {"window_strides": (1, 1), "padding": "VALID",
                                                       "filter_shape": (3, 3), "dn": "none"}, tol=SUM_TOL, grad=True)
    s.case("lax.conv_general_dilated_local", lambda v, w, window_strides, padding, filter_shape, dn: (
        lax.conv_general_dilated_local(v, w, window_strides, padding, filter_shape, dimension_numbers=dn_of(dn))),
        [nhwc, rand((3, 3, 18, 4), np.float32, 83)], {"window_strides": (2, 2), "padding": "SAME",
                                                       "filter_shape": (2, 3), "dn": "NHWC,HWIO,NHWC"},
        tol=SUM_TOL, grad=True)
    # The shape helpers, their results as int32 arrays.
    dn = "NHWC,HWIO,NHWC"
    s.case("lax.conv_general_permutations", lambda dn: [shape_array(p) for p in lax.conv_general_permutations(dn_of(dn))],
           [], {"dn": dn})
    s.case("lax.conv_general_permutations", lambda dn: [shape_array(p) for p in lax.conv_general_permutations(dn_of(dn))],
           [], {"dn": "NCHW,OIHW,NHWC"})
    s.case("lax.conv_dimension_numbers", lambda lhs, rhs, dn: [shape_array(p) for p in lax.conv_dimension_numbers(
        lhs, rhs, dn_of(dn))], [], {"lhs": (2, 5, 6, 3), "rhs": (2, 3, 3, 8), "dn": "none"})
    for pad in ("SAME", "VALID", ((1, 2), (0, 1))):
        s.case("lax.conv_shape_tuple", lambda lhs, rhs, strides, pads: shape_array(
            lax.conv_shape_tuple(lhs, rhs, strides, pads if isinstance(pads, str) else tuple(map(tuple, pads)))),
            [], {"lhs": (2, 3, 7, 8), "rhs": (5, 3, 3, 2), "strides": (2, 3), "pads": pad})
        s.case("lax.conv_general_shape_tuple", lambda lhs, rhs, strides, pads, dn: shape_array(
            lax.conv_general_shape_tuple(lhs, rhs, strides, pads if isinstance(pads, str) else tuple(map(tuple, pads)),
                                         dn_of(dn))), [], {"lhs": (2, 7, 8, 3), "rhs": (3, 2, 3, 5), "strides": (2, 3),
                                                    "pads": pad, "dn": dn})
        s.case("lax.conv_transpose_shape_tuple", lambda lhs, rhs, strides, pads, dn: shape_array(
            lax.conv_transpose_shape_tuple(lhs, rhs, strides, pads if isinstance(pads, str) else
                                           tuple(map(tuple, pads)), dn_of(dn))),
            [], {"lhs": (2, 7, 8, 3), "rhs": (3, 2, 3, 5), "strides": (2, 3), "pads": pad, "dn": dn})
    for pad in ("SAME", "SAME_LOWER", "VALID"):
        s.case("lax.padtype_to_pads", lambda in_shape, window, strides, padding: shape_array(
            lax.padtype_to_pads(in_shape, window, strides, padding)), [],
            {"in_shape": (7, 8, 5), "window": (3, 2, 4), "strides": (2, 3, 1), "padding": pad})
    s.case("lax.reduce_window_shape_tuple", lambda shape, window, strides, padding, base, wdil: shape_array(
        lax.reduce_window_shape_tuple(shape, window, strides, tuple(map(tuple, padding)), base, wdil)), [],
        {"shape": (7, 8), "window": (3, 2), "strides": (2, 1), "padding": ((1, 0), (2, 2)), "base": (2, 1),
         "wdil": (1, 3)})


def random_bits(s):
    keys = [np.array(k, np.uint32) for k in ([0, 0, 0, 0], [1, 2, 3, 4], [0xFFFFFFFF, 7, 0xFFFFFFFE, 0xFFFFFFFF],
                                              [42, 0, 123456789, 0])]
    for key in keys:
        for shape, dt in (((8,), "uint32"), ((2, 3), "uint32"), ((5,), "uint64"), ((7,), "uint8"), ((3, 1), "uint16"),
                          ((0,), "uint32")):
            s.case("lax.rng_bit_generator", lambda k, shape, dtype: list(lax.rng_bit_generator(k, shape, dtype)),
                   [key], {"shape": shape, "dtype": dt})


def cases(s):
    elementwise(s)
    reductions(s)
    scans(s)
    shape_and_slicing(s)
    gathers(s)
    scatters(s)
    products(s)
    convolutions(s)
    random_bits(s)
