"""Parity cases of include/tessel/sort.h (sorting, searching, order statistics, set operations).
`func` keys the entries of tests/parity/cases_sort.cpp. Orders, positions and counts are exact;
functions whose result length depends on the values take JAX's `size` argument, so that they
run under jit too."""
import jax.numpy as jnp
import numpy as np
from jax import lax

from parity_lib import SUM_TOL, rand, specials


def int32_out(fn):
    """fn with its 64-bit integer results (JAX's default int with x64: positions, counts) as
    tessel's int32."""
    def wrapped(*args, **kw):
        r = fn(*args, **kw)
        one = not isinstance(r, (tuple, list))
        r = [x.astype(jnp.int32) if x.dtype == jnp.int64 else x for x in ([r] if one else r)]
        return r[0] if one else tuple(r)
    return wrapped


def with_ties(dt, seed):
    """Small integers as dtype: many ties."""
    return rand((3, 7), "int32", seed, lo=-3, hi=3).astype(dt)


def sorting(s):
    for dt in ["float32", "float64", "int32", "uint32"]:
        x = with_ties(dt, 1) if dt.startswith(("int", "uint")) else rand((3, 7), dt, 1)
        g = dt.startswith("float")
        for axis, desc in [(-1, False), (0, True), (None, False)]:
            s.case("sort", jnp.sort, [x], {"axis": axis, "stable": True, "descending": desc}, grad=g)
            s.case("argsort", int32_out(jnp.argsort), [x], {"axis": axis, "stable": True, "descending": desc})
        s.case("argsort", int32_out(jnp.argsort), [with_ties(dt, 2)], {"axis": -1, "stable": True, "descending": True},
               name=f"argsort_{dt}_ties_descending")
    for dt in ["float32", "float64"]:  # NaN last, -0 == 0 keeps order, infinities
        sp = specials(dt)
        s.case("sort", jnp.sort, [sp], {"axis": -1, "stable": True, "descending": False}, name=f"sort_{dt}_special")
        s.case("argsort", int32_out(jnp.argsort), [sp], {"axis": -1, "stable": True, "descending": False},
               name=f"argsort_{dt}_special")
        s.case("sort", jnp.sort, [sp], {"axis": -1, "stable": True, "descending": True},
               name=f"sort_{dt}_special_descending")
    s.case("sort", jnp.sort, [np.zeros((0, 3), np.float32)], {"axis": 0, "stable": True, "descending": False},
           name="sort_empty")
    k, v = with_ties("int32", 3), rand((3, 7), "float32", 4)
    s.case("lax_sort", lambda a, b, num_keys: lax.sort((a, b), dimension=-1, num_keys=num_keys), [k, v],
           {"num_keys": 1}, grad=True)
    s.case("lax_sort", lambda a, b, num_keys: lax.sort((a, b), dimension=-1, num_keys=num_keys),
           [k, with_ties("float32", 5)], {"num_keys": 2})
    s.case("sort_key_val", lambda a, b: lax.sort_key_val(a, b, dimension=0), [v, k])
    for dt in ["float32", "int32"]:
        x = with_ties(dt, 6)
        s.case("top_k", lambda a, k: lax.top_k(a, k), [x], {"k": 3}, grad=dt == "float32")
    s.case("top_k", lambda a, k: lax.top_k(a, k), [specials("float32")], {"k": 5}, name="top_k_float32_special")
    for kth in [0, 3, 6]:
        s.case("partition", jnp.partition, [with_ties("float32", 7)], {"kth": kth, "axis": -1})
        s.case("argpartition", int32_out(jnp.argpartition), [rand((3, 7), "float32", 8)], {"kth": kth, "axis": -1})
    s.case("sort_complex", jnp.sort_complex, [rand((2, 6), "complex64", 9, lo=-1, hi=1).round(1)])
    s.case("lexsort", int32_out(lambda a, b, axis: jnp.lexsort((a, b), axis=axis)),
           [with_ties("int32", 10), with_ties("int32", 11)], {"axis": -1})


def searching(s):
    for dt in ["float32", "float64", "int32"]:
        a = np.sort(with_ties(dt, 20).ravel())
        v = np.concatenate([a[::3], np.array([-10, 10], dt)]).astype(dt)
        for side in ["left", "right"]:
            s.case("searchsorted", int32_out(jnp.searchsorted), [a, v], {"side": side})
        bins = np.unique(a)
        for right in [False, True]:
            s.case("digitize", int32_out(jnp.digitize), [v, bins], {"right": right})
    sp = np.sort(specials("float32"))  # NaN sorts last
    s.case("searchsorted", int32_out(jnp.searchsorted), [sp, specials("float32")], {"side": "left"},
           name="searchsorted_float32_special")
    x = np.array([[0, 1.5, 0, -0.0], [2, 0, np.nan, 0]], np.float32)
    s.case("nonzero", int32_out(lambda a, size: jnp.nonzero(a, size=size)), [x], {"size": 6})
    s.case("argwhere", int32_out(lambda a, size: jnp.argwhere(a, size=size)), [x], {"size": 4})
    s.case("flatnonzero", int32_out(lambda a, size: jnp.flatnonzero(a, size=size)), [x], {"size": 5})


def statistics(s):
    for dt in ["float32", "int32"]:
        a = with_ties(dt, 30)
        s.case("unique", int32_out(lambda x, size: jnp.unique(x, return_index=True, return_inverse=True,
                                                              return_counts=True, size=size)), [a], {"size": 9})
    s.case("unique", int32_out(lambda x, size: jnp.unique(x, return_index=True, return_inverse=True,
                                                          return_counts=True, size=size)),
           [np.array([np.nan, 1, np.nan, -0.0, 0.0, 1], np.float32)], {"size": 4}, name="unique_float32_nan")
    # The array-API forms: NaNs distinct, the inverse in x's shape.
    xa = with_ties("float32", 34)[:2]
    xa[0, 1] = xa[1, 4] = np.nan
    s.case("unique_all", int32_out(lambda v, size: tuple(jnp.unique_all(v, size=size))), [xa], {"size": 12})
    s.case("unique_counts", int32_out(lambda v, size: tuple(jnp.unique_counts(v, size=size))), [xa], {"size": 12})
    s.case("unique_inverse", int32_out(lambda v, size: tuple(jnp.unique_inverse(v, size=size))), [xa], {"size": 12})
    s.case("unique_values", lambda v, size: jnp.unique_values(v, size=size), [xa], {"size": 12})
    x = np.array([0, 3, 1, 3, 3, 7, 0], np.int32)
    s.case("bincount", int32_out(lambda a, length: jnp.bincount(a, length=length)), [x], {"length": 9})
    s.case("bincount", lambda a, w, length: jnp.bincount(a, w, length=length), [x, rand((7,), "float32", 31)],
           {"length": 6}, tol=SUM_TOL)
    a = rand((40,), "float32", 32)
    s.case("histogram", int32_out(lambda v, bins, range: jnp.histogram(v, bins, range)), [a],
           {"bins": 5, "range": (-1, 1.5)}, tol=SUM_TOL)
    s.case("histogram_bin_edges", lambda v, bins: jnp.histogram_bin_edges(v, bins), [a], {"bins": 7}, tol=SUM_TOL)
    for dt in ["float32", "float64"]:
        x = rand((4, 9), dt, 33)
        q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], dt)
        for method in ["linear", "lower", "higher", "midpoint", "nearest"]:
            s.case("quantile", lambda v, qq, axis, method: jnp.quantile(v, qq, axis=axis, method=method), [x, q],
                   {"axis": (1,), "method": method}, tol=SUM_TOL, grad=method == "linear",
                   name=f"quantile_{dt}_{method}")
        s.case("percentile", lambda v, qq, axis: jnp.percentile(v, qq, axis=axis), [x, q * 100], {"axis": (0,)},
               tol=SUM_TOL)
        s.case("median", lambda v, axis, keepdims: jnp.median(v, axis=axis, keepdims=keepdims), [x],
               {"axis": (1,), "keepdims": True}, tol=SUM_TOL, grad=True)
        xn = x.copy()
        xn[0, 2] = xn[2, 5] = np.nan
        s.case("nanquantile", lambda v, qq, axis: jnp.nanquantile(v, qq, axis=axis), [xn, q], {"axis": (1,)},
               tol=SUM_TOL)
        s.case("nanpercentile", lambda v, qq, axis: jnp.nanpercentile(v, qq, axis=axis), [xn, q * 100],
               {"axis": (0,)}, tol=SUM_TOL)
        s.case("nanmedian", lambda v, axis: jnp.nanmedian(v, axis=axis), [xn], {"axis": (1,)}, tol=SUM_TOL)


def sets(s):
    a, b = with_ties("int32", 40).ravel()[:9], with_ties("int32", 41).ravel()[:6]
    s.case("isin", lambda x, y, invert: jnp.isin(x, y, invert=invert), [a, b], {"invert": False})
    s.case("isin", lambda x, y, invert: jnp.isin(x, y, invert=invert), [a, b], {"invert": True})
    s.case("intersect1d", lambda x, y, size: jnp.intersect1d(x, y, size=size), [a, b], {"size": 5})
    s.case("union1d", lambda x, y, size: jnp.union1d(x, y, size=size), [a, b], {"size": 9})
    s.case("setdiff1d", lambda x, y, size: jnp.setdiff1d(x, y, size=size), [a, b], {"size": 4})


def cases(s):
    sorting(s)
    searching(s)
    statistics(s)
    sets(s)
