"""Helpers of tests/parity/generate.py: inputs, tolerances, the data format (docs/parity.md)."""
import math
import os

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import numpy as np  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# ---------------------------------------------------------------------------------------
# Tolerances. A case's (rtol, atol) compares |tessel - jax| <= atol + rtol * |jax| per
# element (complex: per part); integers, booleans and random bits are always exact. The
# defaults below hold for correctly rounded or nearly so functions; a case that needs more
# says so where it is declared, with the reason.
EXACT = (0.0, 0.0)
DEFAULT_TOL = {"float32": (2e-6, 1e-30), "float64": (1e-14, 1e-300),
               "complex64": (2e-6, 1e-30), "complex128": (1e-14, 1e-300)}
# libm-style transcendental functions: both sides are within a few ulp of the true value.
MATH_TOL = {"float32": (1e-5, 1e-30), "float64": (5e-14, 1e-300),
            "complex64": (1e-5, 1e-30), "complex128": (5e-14, 1e-300)}
# Sums of many terms (reductions, products, transforms): the summation order differs.
SUM_TOL = {"float32": (2e-5, 2e-6), "float64": (1e-12, 1e-13),
           "complex64": (2e-5, 2e-6), "complex128": (1e-12, 1e-13)}


def tol_for(tol, dtype):
    if isinstance(tol, dict):
        return tol.get(str(np.dtype(dtype)), EXACT)
    return tol


# ---------------------------------------------------------------------------------------
# Inputs: deterministic from a seed.

FLOATS = ["float32", "float64"]
INEXACT = ["float32", "float64", "complex64"]
INTS = ["int32", "int64", "uint32"]


def rand(shape, dtype, seed, lo=-2.0, hi=2.0):
    """Uniform values in [lo, hi) of `dtype` (integers: in [lo, hi]; complex: both parts)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        lo_i = max(int(lo), 0) if dt.kind == "u" else int(lo)
        return rng.integers(lo_i, int(hi) + 1, size=shape).astype(dt)
    if dt.kind == "c":
        re = rng.uniform(lo, hi, size=shape)
        im = rng.uniform(lo, hi, size=shape)
        return (re + 1j * im).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(dt)


def specials(dtype, huge=True):
    """NaN, +-inf, +-0, +-1, halves (rounding ties), tiny and (when `huge`) the largest values
    of `dtype`."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        re = specials(dt.type(0).real.dtype, huge)
        out = np.empty(re.shape, dt)
        out.real, out.imag = re, np.roll(re, 3)  # not re + 1j * im: 1j * inf has a NaN real part
        return out
    fi = np.finfo(dt)
    big = [float(fi.max), -float(fi.max)] if huge else [1e30, -1e30]
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.75,
            float(fi.tiny), -float(fi.tiny)] + big + [3.0, -7.25, 100.0]
    return np.array(vals, dtype=dt)


def ints_special(dtype):
    """Integers around 0 and the dtype's extremes."""
    ii = np.iinfo(dtype)
    vals = [0, 1, 2, 3, 7, ii.max, ii.min, ii.max - 1]
    if ii.min < 0:
        vals += [-1, -2, -3, -7]
    return np.array(vals, dtype=dtype)


# ---------------------------------------------------------------------------------------
# Serialization.

def fmt_float(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v.hex()


def fmt_array(tag, a):
    a = np.asarray(a)
    dt = a.dtype
    if dt == jax.dtypes.float0:
        return f"{tag} float0 {','.join(map(str, a.shape)) or '-'}"
    name = "bool" if dt == np.bool_ else dt.name
    shape = ",".join(str(d) for d in a.shape) or "-"
    flat = a.reshape(-1)
    if dt == np.bool_:
        vals = ["1" if v else "0" for v in flat]
    elif dt.kind in "iu":
        vals = [str(int(v)) for v in flat]
    elif dt.kind == "c":
        vals = [f"{fmt_float(v.real)} {fmt_float(v.imag)}" for v in flat]
    else:
        vals = [fmt_float(v) for v in flat]
    return " ".join([tag, name, shape] + vals)


def fmt_param(key, v):
    if v is None:
        return f"param {key} none"
    if isinstance(v, bool):
        return f"param {key} bool {int(v)}"
    if isinstance(v, (int, np.integer)):
        return f"param {key} int {int(v)}"
    if isinstance(v, float):
        return f"param {key} float {fmt_float(v)}"
    if isinstance(v, str):
        assert " " not in v and v, f"parameter {key}: strings may not be empty or hold spaces"
        return f"param {key} str {v}"
    if isinstance(v, (tuple, list)):
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in v):
            return f"param {key} ints {','.join(str(int(x)) for x in v) or '-'}"
        if all(isinstance(x, (int, float, np.floating)) and not isinstance(x, bool) for x in v):
            return f"param {key} floats {','.join(fmt_float(x) for x in v) or '-'}"
        if all(isinstance(x, (tuple, list)) for x in v):  # pairs or triples of ints
            return f"param {key} intss {';'.join(','.join(str(int(y)) for y in x) for x in v) or '-'}"
    raise TypeError(f"parameter {key}: cannot write {v!r}")


def as_list(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def is_inexact(a):
    return np.issubdtype(np.asarray(a).dtype, np.inexact)


def has_tolerance(a):
    """Whether a case's tolerance applies to this array: inexact, or bfloat16 (which numpy does
    not count as inexact)."""
    return is_inexact(a) or np.asarray(a).dtype == jax.numpy.bfloat16


def needs_x64(inputs, params):
    """True when JAX must run with jax_enable_x64 for these inputs and parameters."""
    if any(x.dtype.itemsize > 4 and x.dtype.kind != "c" or x.dtype == np.complex128 for x in inputs):
        return True
    for v in params.values():
        if isinstance(v, str) and v in ("float64", "int64", "uint64", "complex128"):
            return True
        if isinstance(v, int) and not isinstance(v, bool) and not -2**31 <= v < 2**31:
            return True
    return False


class Suite:
    """The cases of one module (one data file)."""

    def __init__(self, module):
        self.module = module
        self.cases = []
        self.names = set()

    def case(self, func, fn, inputs, params=None, tol=None, grad=False, gtol=None, name=None, seed=0, x64=None,
             machine=None, jit_tol=None):
        """One case of tessel function `func` (the key of its C++ registry entry).

        fn(*inputs, **params) is JAX's side. tol: (rtol, atol) or a dict by dtype name
        (default DEFAULT_TOL, by the first inexact input's or output's dtype); integer,
        boolean and random-bit outputs are exact whatever tol says. grad: also record jvp
        and vjp with respect to the inexact inputs (gtol: their tolerance, default 10 x tol).
        x64: run JAX with jax_enable_x64 (default: only when an input, a dtype parameter or
        an integer parameter needs 64 bits). tessel's dtype rules are JAX's without x64 (the
        default int is int32: sum(int32) is int32, argmax is int32), where 64-bit dtypes
        appear only when asked for, as they do in JAX with x64 on.
        machine: (func, tol) for a case whose JAX values depend on the processor through
        function func (e.g. ops.xla_rsqrt): the C++ test applies tol instead of the case's
        where the processor does not reproduce every case of func bit for bit.
        jit_tol: the tolerance of tessel's jit against jax.jit's outputs (default tol), for a
        case where XLA rewrites more than tessel's jit does (the reason at the case).
        """
        params = dict(params or {})
        inputs = [np.asarray(x) for x in inputs]
        if x64 is None:
            x64 = needs_x64(inputs, params)
        jax.config.update("jax_enable_x64", x64)
        try:
            self._case(func, fn, inputs, params, tol, grad, gtol, name, seed, machine, jit_tol)
        except Exception as e:  # PARITY_KEEP_GOING=1: report every failing case in one run
            if not os.environ.get("PARITY_KEEP_GOING"):
                raise
            print(f"generate.py: case of {func} failed: {type(e).__name__}: {str(e).splitlines()[0]}")
        finally:
            jax.config.update("jax_enable_x64", True)

    def _case(self, func, fn, inputs, params, tol, grad, gtol, name, seed, machine=None, jit_tol=None):
        outs = [np.asarray(o) for o in as_list(fn(*inputs, **params))]
        ref_dtype = next((x.dtype for x in inputs + outs if has_tolerance(x)), None)
        t = tol_for(DEFAULT_TOL if tol is None else tol, ref_dtype) if ref_dtype is not None else EXACT
        base = name or "_".join([func.replace(".", "_")] + sorted({x.dtype.name for x in inputs}))
        cname, k = base, 1
        while cname in self.names:
            k += 1
            cname = f"{base}_{k}"
        self.names.add(cname)
        lines = [f"case {cname} {func}"]
        lines += [fmt_param(k_, v) for k_, v in params.items()]
        lines.append(f"tol {fmt_float(t[0])} {fmt_float(t[1])}")
        if machine is not None:
            mt = tol_for(machine[1], ref_dtype) if ref_dtype is not None else EXACT
            lines.append(f"machine_tol {machine[0]} {fmt_float(mt[0])} {fmt_float(mt[1])}")
        if jit_tol is not None and ref_dtype is not None:
            jt = tol_for(jit_tol, ref_dtype)
            lines.append(f"jit_tol {fmt_float(jt[0])} {fmt_float(jt[1])}")
        lines += [fmt_array("in", x) for x in inputs]
        lines += [fmt_array("out", o) for o in outs]
        lines += [fmt_array("jit_out", o) for o in self._jit_outputs(fn, inputs, params, outs)]
        if grad:
            g = gtol if gtol is not None else (t[0] * 10, t[1] * 10)
            lines.append(f"gtol {fmt_float(tol_for(g, ref_dtype)[0])} {fmt_float(tol_for(g, ref_dtype)[1])}")
            lines += self._derivatives(fn, inputs, params, seed)
        lines.append("end")
        self.cases.append("\n".join(lines))

    @staticmethod
    def _jit_outputs(fn, inputs, params, outs):
        """jax.jit's outputs where any differs in its bits from the eager ones, else none.

        XLA's CPU compiler contracts a product and a sum into one fused multiply-add (its LLVM
        target options allow FMA fusion), and eager JAX runs each operation on its own, so
        near a cancellation the two differ by more than any tolerance (cauchy.cdf(-inf) is 0
        eagerly, 6.3e-9 under jit in float32). tessel's jit contracts as XLA's does
        (TESSEL_FP_CONTRACT), and its jit results are compared with these. Functions jit
        cannot trace record none.
        """
        try:
            jitted = [np.asarray(o) for o in as_list(jax.jit(lambda *xs: fn(*xs, **params))(*inputs))]
        except Exception:  # value-dependent shapes: eager only, in JAX as in tessel
            return []
        same = len(jitted) == len(outs) and all(
            j.dtype == o.dtype and j.shape == o.shape and j.tobytes() == o.tobytes() for j, o in zip(jitted, outs))
        return [] if same else jitted

    @staticmethod
    def _derivatives(fn, inputs, params, seed):
        diff = [i for i, x in enumerate(inputs) if is_inexact(x)]

        def f(*d):
            full = list(inputs)
            for i, x in zip(diff, d):
                full[i] = x
            return tuple(as_list(fn(*full, **params)))

        primals = [inputs[i] for i in diff]
        tangents = [rand(p.shape, p.dtype, 1000 + seed + j) for j, p in enumerate(primals)]
        _, touts = jax.jvp(f, tuple(primals), tuple(tangents))
        outs, pullback = jax.vjp(f, *primals)
        cts = []
        for j, o in enumerate(outs):
            o = np.asarray(o)
            if is_inexact(o):
                cts.append(rand(o.shape, o.dtype, 2000 + seed + j))
            else:
                cts.append(np.zeros(o.shape, dtype=jax.dtypes.float0))
        cins = pullback(tuple(cts))
        lines = ["diff " + (",".join(map(str, diff)) or "-")]
        lines += [fmt_array("jvp_in", x) for x in tangents]
        lines += [fmt_array("jvp_out", x) for x in touts]
        lines += [fmt_array("vjp_in", x) for x in cts]
        lines += [fmt_array("vjp_out", x) for x in cins]
        return lines

    def write(self):
        os.makedirs(DATA, exist_ok=True)
        path = os.path.join(DATA, f"{self.module}.txt")
        with open(path, "w") as f:
            f.write(f"# tessel parity data, module {self.module}: written by tests/parity/generate.py "
                    f"with jax {jax.__version__}, numpy {np.__version__}; do not edit by hand.\n")
            f.write(f"jax_version {jax.__version__}\n")
            for c in self.cases:
                f.write(c + "\n")
        print(f"{path}: {len(self.cases)} cases, {os.path.getsize(path)} bytes")


