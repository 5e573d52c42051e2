"""Parity cases of include/tessel/random.h (jax.random with raw uint32[2] keys). Random bits,
keys, integer draws, normal draws (erf_inv as XLA computes it) and draws through exp, log,
log1p, pow, tan and rsqrt (computed as XLA computes them: ops::xla_exp, xla_log, xla_log1p,
xla_pow, xla_tan, xla_rsqrt) are exact, the gamma family where the processor's rsqrt estimate is
the data's (machine=RSQRT_MACHINE). Every sampler is exact except those through a matrix
factorization (multivariate_normal, orthogonal and the orthogonal initializers), whose cases
keep a tolerance with the reason at the case. The ops cases check a few thousand values each;
tests/parity/tools/pow_tan_vs_xla.py and rsqrt_vs_xla.py check pow, tan and rsqrt on millions."""
import jax
import jax.extend.random
import numpy as np

from parity_lib import EXACT, MATH_TOL

KEYS = [0, 42, 2**32 - 1, -1]


def cases(s):
    for seed in KEYS:
        # tessel reads the seed as 64 bits (a negative seed's high word is all ones), as JAX with x64.
        s.case("random.key", lambda seed: jax.random.PRNGKey(seed), [], {"seed": seed}, x64=True)
    key = np.asarray(jax.random.PRNGKey(7))
    for num in [2, 3, 5]:
        s.case("random.split", lambda k, num: jax.random.split(k, num), [key], {"num": num})
    for data in [0, 1, 12345, 2**31 - 1]:
        s.case("random.fold_in", jax.random.fold_in, [key, np.uint32(data)])
    for dtype, shape in [("uint32", (3, 5)), ("uint8", (7,)), ("uint16", (2, 3)), ("uint64", (4,)),
                         ("uint32", ()), ("uint32", (0, 2)), ("uint32", (1025,))]:
        s.case("random.bits", lambda k, shape, dtype: jax.random.bits(k, shape, dtype), [key],
               {"shape": shape, "dtype": dtype})
    for dtype in ["float32", "float64"]:
        s.case("random.uniform", lambda k, shape, dtype: jax.random.uniform(k, shape, dtype), [key],
               {"shape": (4, 5), "dtype": dtype}, tol=EXACT)
        s.case("random.uniform", lambda k, lo, hi, shape, dtype: jax.random.uniform(k, shape, dtype, lo, hi),
               [key, np.array(-2.0, dtype), np.array([1.0, 3.0, 5.0], dtype)], {"shape": (2, 3), "dtype": dtype},
               name=f"random_uniform_{dtype}_bounds", tol=EXACT)
    normals(s, key)
    for k2 in [jax.random.PRNGKey(0), jax.random.PRNGKey(3)]:
        count = np.arange(6, dtype=np.uint32).reshape(2, 3)
        s.case("random.threefry_2x32", jax.extend.random.threefry_2x32, [np.asarray(k2), count])
    s.case("random.threefry_2x32", jax.extend.random.threefry_2x32, [key, np.arange(5, dtype=np.uint32)],
           name="random_threefry_2x32_odd")

    xla_math(s)
    distributions(s, key)
    more_draws(s, key)


def xla_math(s):
    """ops::xla_exp, xla_log, xla_log1p, xla_erf and fma (src/ops/special.h): exp, log, log1p
    and erf as XLA's CPU backend computes them, checked exactly against jax.jit(jnp.exp) etc. over each
    function's whole range, subnormal and special values included (XLA's kernels flush
    subnormal inputs and results to zero, and so do these)."""
    rng = np.random.default_rng(29)
    for dt in ["float32", "float64", "float16", "bfloat16"]:
        big = 700.0 if dt == "float64" else 88.0 if dt == "float32" else 11.0
        specials = [0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, np.inf, -np.inf, np.nan]
        x = np.concatenate([rng.uniform(-big, big, 2000), rng.standard_normal(1000), np.linspace(-1.0, 1.0, 257),
                            [big, -big, 88.5, 88.72, 88.73, -87.3, -87.4, -103.0, 709.78, -708.4, -745.2], specials])
        pos = np.concatenate([np.exp(rng.uniform(-100 if dt == "float64" else -80, 80, 2000)),
                              np.arange(1, 1025) / 1024.0, [1e-40, 5e-39, 1.2e-38, 3e-308 if dt == "float64" else 1.0],
                              specials])
        l1p = np.concatenate([-np.arange(0, 1024) / 1024.0, rng.uniform(-1, 4, 2000), [0.41421356, -0.41421356, -1.0],
                              specials])
        with np.errstate(over="ignore"):
            cast = lambda v: np.asarray(v, np.float64).astype(jax.numpy.dtype(dt))
            s.case("ops.xla_exp", jax.jit(jax.numpy.exp), [cast(x)], tol=EXACT, name=f"ops_xla_exp_{dt}")
            s.case("ops.xla_log", jax.jit(jax.numpy.log), [cast(pos)], tol=EXACT, name=f"ops_xla_log_{dt}")
            s.case("ops.xla_log1p", jax.jit(jax.numpy.log1p), [cast(l1p)], tol=EXACT, name=f"ops_xla_log1p_{dt}")
        s.case("ops.xla_erf", jax.jit(jax.lax.erf), [cast(x / 20)], tol=EXACT, name=f"ops_xla_erf_{dt}")
        # pow and tan: glibc's powf/pow and tanf/tan run with flush-to-zero and
        # denormals-are-zero, as XLA's kernels run (a subnormal base reads as 2^-150 there).
        tiny = float(jax.numpy.finfo(jax.numpy.dtype(dt)).tiny)
        base = np.concatenate([rng.uniform(-4, 4, 300), np.exp(rng.uniform(-80, 80, 300)), specials,
                               [tiny / 4, -tiny / 4, tiny, 0.5, 2.0]])
        expo = np.concatenate([np.round(rng.uniform(-30, 30, 300)), rng.uniform(-3, 3, 300), specials,
                               [0.5, 0.5, 1.0, 130.0, -0.5]])
        perm = rng.permutation(len(specials) ** 2)
        grid_b, grid_e = (v.ravel()[perm] for v in np.meshgrid(specials, specials))
        with np.errstate(over="ignore", invalid="ignore"):
            s.case("ops.xla_pow", jax.jit(jax.lax.pow), [cast(np.concatenate([base, grid_b])),
                                                         cast(np.concatenate([expo, grid_e]))],
                   tol=EXACT, name=f"ops_xla_pow_{dt}")
            s.case("ops.xla_tan", jax.jit(jax.numpy.tan), [cast(np.concatenate([x[::4], x[1::8] / 1e38, [tiny / 4]]))],
                   tol=EXACT, name=f"ops_xla_tan_{dt}")
    # Their derivatives are JAX's (exp: y, log: 1/x, log1p: 1/(1+x), erf: 2/sqrt(pi) e^-x^2,
    # tan: 1 + y^2).
    small = np.asarray([0.3, 1.7, 2.5, 0.01], np.float32)
    for name, fn in [("xla_exp", jax.numpy.exp), ("xla_log", jax.numpy.log), ("xla_log1p", jax.numpy.log1p),
                     ("xla_erf", jax.lax.erf), ("xla_tan", jax.numpy.tan)]:
        s.case(f"ops.{name}", fn, [small], tol=EXACT, grad=True, gtol=MATH_TOL, name=f"ops_{name}_grad")
    s.case("ops.xla_rsqrt", jax.lax.rsqrt, [small], tol=EXACT, grad=True, gtol=MATH_TOL, name="ops_xla_rsqrt_grad",
           machine=RSQRT_MACHINE)
    xla_rsqrt_cases(s, rng)
    # pow: y x^(y-1) and log(x) x^y.
    s.case("ops.xla_pow", jax.lax.pow, [small, small[::-1] * 2], tol=EXACT, grad=True, gtol=MATH_TOL,
           name="ops_xla_pow_grad")
    for dt in ["float32", "float64"]:
        a, b, c = (rng.standard_normal(3000).astype(dt) for _ in range(3))
        s.case("ops.fma", jax.jit(lambda a, b, c: a * b + c), [a, b, c], tol=EXACT, name=f"ops_fma_{dt}")
    # Eager JAX rounds a * b and + c separately (no fusion), hence MATH_TOL for this case's values.
    s.case("ops.fma", lambda a, b, c: a * b + c, [a[:5], b[:5], c[:5]], tol=MATH_TOL, grad=True, gtol=MATH_TOL,
           name="ops_fma_grad")


# XLA's rsqrt is the processor's estimate (rsqrtss, AVX-512's rsqrt14 in float64) refined by
# Newton steps; these cases are exact on a processor with the same estimates as the one that
# wrote them, and the gamma family's cases name them (machine=RSQRT_MACHINE).
RSQRT_MACHINE = ("ops.xla_rsqrt", MATH_TOL)


def xla_rsqrt_cases(s, rng):
    """ops.xla_rsqrt: one float32 input per 2^12 ulps of [1, 4) (both exponent parities, so
    half of the estimate table, with random low bits), random magnitudes and specials."""
    specials = [0.0, -0.0, 1.0, 4.0, 0.25, -1.0, np.inf, -np.inf, np.nan, 1e-30, 1e30]
    table = (np.arange(0x3F800000, 0x40800000, 1 << 12, dtype=np.uint32)
             + rng.integers(0, 1 << 12, 4096).astype(np.uint32)).view(np.float32)
    x32 = np.concatenate([table, np.exp2(rng.uniform(-120, 120, 500)).astype(np.float32),
                          np.asarray(specials + [1e-40], np.float32)])
    x64 = np.concatenate([rng.uniform(2 / 3, 40, 500), np.exp2(rng.uniform(-1000, 1000, 500)), specials + [1e-310]])
    for x in [x32, x64]:
        s.case("ops.xla_rsqrt", jax.jit(jax.lax.rsqrt), [x], tol=EXACT, name=f"ops_xla_rsqrt_{x.dtype.name}",
               machine=RSQRT_MACHINE)


# truncated_normal's bounds go through erf as XLA computes it (ops::xla_erf: libm's scalar erf
# in float64) and its uniform through one fused multiply-add (ops::fma), as XLA contracts it.
TRUNCATED_NORMAL_TOL = EXACT


def normals(s, key):
    """normal = sqrt(2) * erf_inv(uniform in (-1, 1)): tessel's erf_inv computes as XLA's CPU
    kernel does (XLA's log1p and log, fused Horner steps), so draws are exact, for several
    keys, shapes and dtypes (half types compute erf_inv in float32, as XLA does)."""
    keys = [key, np.asarray(jax.random.PRNGKey(0)), np.asarray(jax.random.PRNGKey(2**31 + 5))]
    for i, k in enumerate(keys):
        for dtype in ["float32", "float64", "float16", "bfloat16"]:
            s.case("random.normal", lambda k, shape, dtype: jax.random.normal(k, shape, dtype), [k],
                   {"shape": (3, 7), "dtype": dtype}, tol=EXACT, name=f"random_normal_{dtype}_key{i}")
    for shape in [(), (1,), (1025,), (2, 3, 65)]:
        s.case("random.normal", lambda k, shape, dtype: jax.random.normal(k, shape, dtype), [keys[1]],
               {"shape": shape, "dtype": "float32"}, tol=EXACT, name=f"random_normal_shape{len(shape)}_{sum(shape)}")
    # 2^16 draws reach far into the tails (|x| > 4), where erf_inv's tail polynomial works.
    s.case("random.normal", lambda k, shape, dtype: jax.random.normal(k, shape, dtype), [keys[2]],
           {"shape": (1 << 16,), "dtype": "float32"}, tol=EXACT, name="random_normal_many")
    # Complex draws divide (re + i im) by sqrt(2), which XLA turns into a product with 1/sqrt(2).
    for i, k in enumerate(keys):
        for dtype in ["complex64", "complex128"]:
            s.case("random.normal", lambda k, shape, dtype: jax.random.normal(k, shape, dtype), [k],
                   {"shape": (5, 3), "dtype": dtype}, tol=EXACT, name=f"random_normal_{dtype}_key{i}")
    for i, k in enumerate(keys):
        for dtype in ["float32", "float64"]:
            for lo, hi in [(-1.5, [0.5, 2.0, np.inf]), (-np.inf, [-3.0, 0.0, 4.0]), (2.0, [2.5, 6.0, 30.0])]:
                s.case("random.truncated_normal",
                       lambda k, lo, hi, shape, dtype: jax.random.truncated_normal(k, lo, hi, shape, dtype),
                       [k, np.asarray(lo, dtype), np.asarray(hi, dtype)], {"shape": (4, 3), "dtype": dtype},
                       tol=TRUNCATED_NORMAL_TOL, name=f"random_truncated_normal_{dtype}_key{i}_{lo}")


def distributions(s, key):
    """jax.random's samplers (include/tessel/random_distributions.h). Integer and boolean
    draws, and floats through normal, XLA's log/exp/log1p/tan/pow, are exact unless a case
    names its reason."""
    keys = [key, np.asarray(jax.random.PRNGKey(0)), np.asarray(jax.random.PRNGKey(2**31 + 5))]
    f32 = lambda v: np.asarray(v, np.float32)
    for i, k in enumerate(keys):
        s.case("random.randint", lambda k, lo, hi, shape, dtype: jax.random.randint(k, shape, lo, hi, dtype),
               [k, np.int32(-5), np.array([3, 10, 1000, 2**31 - 1, -7], np.int32)], {"shape": (3, 5), "dtype": "int32"},
               name=f"random_randint_int32_{i}")
    for dtype, lo, hi in [("int8", -100, 100), ("uint8", 0, 255), ("int16", -3, 30000), ("uint32", 0, 2**31 - 1)]:
        s.case("random.randint", lambda k, lo, hi, shape, dtype: jax.random.randint(k, shape, lo, hi, dtype),
               [key, np.int32(lo), np.int32(hi)], {"shape": (17,), "dtype": dtype})
    s.case("random.randint", lambda k, lo, hi, shape, dtype: jax.random.randint(k, shape, lo, hi, dtype),
           [key, np.int64(-2**40), np.int64(2**50)], {"shape": (6,), "dtype": "int64"}, name="random_randint_int64")
    for i, k in enumerate(keys):
        s.case("random.bernoulli", lambda k, p, shape: jax.random.bernoulli(k, p, shape),
               [k, f32([0.0, 0.3, 0.5, 0.9, 1.0])], {"shape": (4, 5)}, name=f"random_bernoulli_{i}", tol=EXACT)
    s.case("random.bernoulli", lambda k, p, shape: jax.random.bernoulli(k, p, shape),
           [key, np.array(0.25, np.float64)], {"shape": (9,)}, name="random_bernoulli_float64", tol=EXACT)
    logits = rand_logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4, 1e-3], [1, 1, 1, 1, 1],
                                            [5, 0.1, 0.1, 0.1, 3]], np.float32))
    s.case("random.categorical", lambda k, l, axis, shape, replace: jax.random.categorical(k, l, axis, shape, replace),
           [key, logits], {"axis": -1, "shape": None, "replace": True}, name="random_categorical_last", tol=EXACT)
    s.case("random.categorical", lambda k, l, axis, shape, replace: jax.random.categorical(k, l, axis, shape, replace),
           [key, rand_logits], {"axis": 0, "shape": (7, 5), "replace": True}, name="random_categorical_axis0", tol=EXACT)
    s.case("random.categorical", lambda k, l, axis, shape, replace: jax.random.categorical(k, l, axis, shape, replace),
           [keys[1], logits], {"axis": 1, "shape": (4, 3), "replace": False}, name="random_categorical_noreplace", tol=EXACT)
    # Through log and log1p (XLA's, exact), cauchy through tan (ops::xla_tan, exact), maxwell
    # through its 3-term sum in XLA's order, gumbel and logistic from XLA's folded
    # uniform(tiny, 1).
    for dtype in ["float32", "float64", "float16", "bfloat16"]:
        for name in ["gumbel", "exponential", "laplace", "logistic", "cauchy", "maxwell"]:
            fn = getattr(jax.random, name)
            s.case(f"random.{name}", lambda k, shape, dtype, fn=fn: fn(k, shape, dtype), [key],
                   {"shape": (3, 7), "dtype": dtype}, tol=EXACT)
    for name in ["gumbel", "exponential", "laplace", "logistic", "cauchy"]:
        fn = getattr(jax.random, name)
        for i, k in enumerate(keys[1:]):
            for shape in [(64,), (5, 205)]:
                s.case(f"random.{name}", lambda k, shape, dtype, fn=fn: fn(k, shape, dtype), [k],
                       {"shape": shape, "dtype": "float32"}, tol=EXACT,
                       name=f"random_{name}_key{i}_{shape[-1]}")
    for name in ["gumbel", "logistic", "maxwell"]:  # half types: the folded uniform, maxwell's sum
        fn = getattr(jax.random, name)
        for i, k in enumerate(keys[1:]):
            for dtype in ["float16", "bfloat16"]:
                s.case(f"random.{name}", lambda k, shape, dtype, fn=fn: fn(k, shape, dtype), [k],
                       {"shape": (257,), "dtype": dtype}, tol=EXACT, name=f"random_{name}_{dtype}_key{i}")
    for dtype in ["int32", "float32", "int8"]:
        s.case("random.rademacher", lambda k, shape, dtype: jax.random.rademacher(k, shape, dtype), [key],
               {"shape": (11,), "dtype": dtype}, tol=EXACT)
    sig = f32([0.5, 1.0, 2.0])
    s.case("random.lognormal", lambda k, sg, shape, dtype: jax.random.lognormal(k, sg, shape, dtype), [key, sig],
           {"shape": (2, 3), "dtype": "float32"}, tol=EXACT)
    s.case("random.pareto", lambda k, b, shape, dtype: jax.random.pareto(k, b, shape, dtype), [key, sig],
           {"shape": (2, 3), "dtype": "float32"}, tol=EXACT)
    for i, k in enumerate(keys):  # more keys, shapes and dtypes for the exp/log samplers
        for dtype, shape in [("float32", (130, 3)), ("float64", (2, 3)), ("float16", (2, 3)), ("bfloat16", (2, 3))]:
            sg = sig.astype(dtype)
            for name in ["lognormal", "pareto", "rayleigh"]:
                fn = getattr(jax.random, name)
                s.case(f"random.{name}", lambda k, p, shape, dtype, fn=fn: fn(k, p, shape, dtype),
                       [k, sg], {"shape": shape, "dtype": dtype},
                       tol=EXACT, name=f"random_{name}_{dtype}_key{i}")
    s.case("random.weibull_min", lambda k, sc, c, shape, dtype: jax.random.weibull_min(k, sc, c, shape, dtype),
           [key, f32(2.0), sig], {"shape": (4, 3), "dtype": "float32"}, tol=EXACT)
    s.case("random.rayleigh", lambda k, sc, shape, dtype: jax.random.rayleigh(k, sc, shape, dtype), [key, sig],
           {"shape": (2, 3), "dtype": "float32"}, tol=EXACT)
    s.case("random.wald", lambda k, m, shape, dtype: jax.random.wald(k, m, shape, dtype), [key, sig],
           {"shape": (4, 3), "dtype": "float32"}, tol=EXACT)
    s.case("random.triangular", lambda k, l, m, r, shape, dtype: jax.random.triangular(k, l, m, r, shape, dtype),
           [key, f32(-1.0), f32([0.0, 0.5]), f32(2.0)], {"shape": (3, 2), "dtype": "float32"}, tol=EXACT)
    s.case("random.double_sided_maxwell",
           lambda k, loc, sc, shape, dtype: jax.random.double_sided_maxwell(k, loc, sc, shape, dtype),
           [key, f32([0.0, 1.0]), f32(2.0)], {"shape": (3,), "dtype": "float32"}, tol=EXACT)
    s.case("random.geometric", lambda k, p, shape, dtype: jax.random.geometric(k, p, shape, dtype),
           [key, f32([0.05, 0.5, 0.99])], {"shape": (5, 3), "dtype": "int32"}, tol=EXACT)
    s.case("random.key_data", jax.random.key_data, [key])
    s.case("random.wrap_key_data", lambda d: jax.random.key_data(jax.random.wrap_key_data(d)),
           [np.asarray(jax.random.split(jax.random.PRNGKey(1), 3))])
    s.case("random.clone", lambda k: jax.random.key_data(jax.random.clone(jax.random.wrap_key_data(k))), [key])
    gamma_family(s, keys)


def gamma_family(s, keys):
    """gamma and the samplers built on it: one rejection loop per element through XLA's log,
    exp and pow, with c = (1/3) / sqrt(d) rewritten by XLA into (1/3) * rsqrt(d) (ops::xla_rsqrt:
    the processor's estimate and XLA's Newton steps). Exact where the processor reproduces the
    ops.xla_rsqrt cases (machine=RSQRT_MACHINE), within MATH_TOL elsewhere. v = 1 + x c is one
    fused multiply-add in XLA's loop; dirichlet's softmax multiplies by the reciprocal of the row
    sum and ball by s^(-1/p), as XLA rewrites JAX's divisions."""
    f32 = lambda v: np.asarray(v, np.float32)
    alphas = f32([[0.1, 0.5, 1.0], [2.0, 7.5, 100.0]])
    for i, k in enumerate(keys):
        s.case("random.gamma", lambda k, a, shape, dtype: jax.random.gamma(k, a, shape, dtype), [k, alphas],
               {"shape": (2, 3), "dtype": "float32"}, tol=EXACT, name=f"random_gamma_key{i}", machine=RSQRT_MACHINE)
    s.case("random.gamma", lambda k, a: jax.random.gamma(k, a), [keys[2], np.geomspace(0.01, 100, 256).astype(np.float32)],
           tol=EXACT, name="random_gamma_many", machine=RSQRT_MACHINE)
    s.case("random.gamma", lambda k, a, shape, dtype: jax.random.gamma(k, a, shape, dtype),
           [keys[0], np.asarray([0.3, 3.0], np.float64)], {"shape": (64, 2), "dtype": "float64"}, tol=EXACT,
           name="random_gamma_float64", machine=RSQRT_MACHINE)
    # The implicit reparameterization gradient: series and continued fraction of the
    # incomplete gamma function (through lgamma and digamma), a few ulp of their terms.
    s.case("random.gamma", lambda k, a: jax.random.gamma(k, a), [keys[1], f32([0.2, 0.9, 1.0, 4.0, 30.0])],
           {}, tol=EXACT, grad=True, gtol=(1e-4, 1e-6), name="random_gamma_grad", machine=RSQRT_MACHINE)
    s.case("random.loggamma", lambda k, a: jax.random.loggamma(k, a), [keys[2], f32([0.05, 0.9, 6.0])],
           {}, tol=EXACT, grad=True, gtol=(1e-4, 1e-6), name="random_loggamma_grad",
           machine=RSQRT_MACHINE)
    s.case("random.loggamma", lambda k, a, shape, dtype: jax.random.loggamma(k, a, shape, dtype), [keys[0], alphas],
           {"shape": (2, 3), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    s.case("random.loggamma", lambda k, a, shape, dtype: jax.random.loggamma(k, a, shape, dtype),
           [keys[1], f32([1e-3, 0.05])], {"shape": (3, 2), "dtype": "float32"}, tol=EXACT, name="random_loggamma_small",
           machine=RSQRT_MACHINE)
    s.case("random.beta", lambda k, a, b, shape, dtype: jax.random.beta(k, a, b, shape, dtype),
           [keys[0], f32([0.5, 2.0, 5.0]), f32(1.5)], {"shape": (2, 3), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    s.case("random.dirichlet", lambda k, a, shape, dtype: jax.random.dirichlet(k, a, shape, dtype),
           [keys[1], f32([0.2, 1.0, 3.0, 10.0])], {"shape": (3,), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    s.case("random.dirichlet", lambda k, a, shape, dtype: jax.random.dirichlet(k, a, shape, dtype),
           [keys[0], f32([[1.0, 2.0], [0.5, 0.5]])], {"shape": None, "dtype": "float32"}, tol=EXACT,
           name="random_dirichlet_batch", machine=RSQRT_MACHINE)
    s.case("random.dirichlet", lambda k, a, shape, dtype: jax.random.dirichlet(k, a, shape, dtype),
           [keys[2], np.geomspace(0.05, 20, 7)], {"shape": (40,), "dtype": "float64"}, tol=EXACT,
           name="random_dirichlet_float64", machine=RSQRT_MACHINE)
    s.case("random.chisquare", lambda k, df, shape, dtype: jax.random.chisquare(k, df, shape, dtype),
           [keys[0], f32([1.0, 3.0, 10.0])], {"shape": (2, 3), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    s.case("random.t", lambda k, df, shape, dtype: jax.random.t(k, df, shape, dtype),
           [keys[2], f32([1.0, 3.0, 30.0])], {"shape": (2, 3), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    s.case("random.f", lambda k, a, b, shape, dtype: jax.random.f(k, a, b, shape, dtype),
           [keys[0], f32([[2.0, 5.0]] * 3), f32(4.0)], {"shape": (3, 2), "dtype": "float32"}, tol=EXACT,
           machine=RSQRT_MACHINE)
    for p in [0.5, 1.0, 2.0, 3.0]:
        s.case("random.generalized_normal", lambda k, p, shape, dtype: jax.random.generalized_normal(k, p, shape, dtype),
               [keys[0]], {"p": p, "shape": (4, 3), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    for d, p in [(3, 2), (5, 1)]:
        s.case("random.ball", lambda k, d, p, shape, dtype: jax.random.ball(k, d, p, shape, dtype), [keys[1]],
               {"d": d, "p": p, "shape": (4,), "dtype": "float32"}, tol=EXACT, machine=RSQRT_MACHINE)
    # Eagerly exact. Under jax.jit, p = 3 is a constant: XLA makes |g|^3 |g| * (g * g) (so
    # does tessel's jit) and contracts each of those products into the row sum's adds, which
    # tessel's fused reductions do not: jit within MATH_TOL there (one ulp on 31 of 200).
    s.case("random.ball", lambda k, d, p, shape, dtype: jax.random.ball(k, d, p, shape, dtype), [keys[2]],
           {"d": 4, "p": 3, "shape": (50,), "dtype": "float32"}, tol=EXACT, name="random_ball_many",
           machine=RSQRT_MACHINE, jit_tol=MATH_TOL)
    shuffles(s, keys)


def shuffles(s, keys):
    """permutation and choice: integer results and gathers of the inputs, exact."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for i, k in enumerate(keys):
        s.case("random.permutation", lambda k, n: jax.random.permutation(k, n), [k], {"n": 10},
               name=f"random_permutation_int_key{i}", tol=EXACT)
    s.case("random.permutation", lambda k, n: jax.random.permutation(k, n), [keys[0]], {"n": 2000},
           name="random_permutation_two_rounds", tol=EXACT)
    for axis, independent in [(0, False), (1, False), (1, True), (0, True)]:
        s.case("random.permutation", lambda k, x, axis, independent: jax.random.permutation(k, x, axis, independent),
               [keys[1], x], {"axis": axis, "independent": independent}, tol=EXACT)
    s.case("random.permutation", lambda k, x, axis, independent: jax.random.permutation(k, x, axis, independent),
           [keys[0], np.arange(7, dtype=np.int32)], {"axis": 0, "independent": False}, name="random_permutation_1d", tol=EXACT)
    p = np.asarray([0.1, 0.2, 0.05, 0.4, 0.25, 0.0], np.float32)
    for replace in [True, False]:
        s.case("random.choice", lambda k, n, shape, replace: jax.random.choice(k, n, shape, replace), [keys[0]],
               {"n": 9, "shape": (2, 3), "replace": replace}, name=f"random_choice_int_{int(replace)}", tol=EXACT)
        s.case("random.choice", lambda k, n, shape, replace, pp: jax.random.choice(k, n, shape, replace, p=np.asarray(pp, np.float32)),
               [keys[1]], {"n": 6, "shape": (4,), "replace": replace, "pp": tuple(float(v) for v in p)},
               name=f"random_choice_int_p_{int(replace)}", tol=EXACT)
        for axis in [0, 1]:
            s.case("random.choice", lambda k, a, shape, replace, axis: jax.random.choice(k, a, shape, replace, axis=axis),
                   [keys[2], x], {"shape": (3,), "replace": replace, "axis": axis},
                   name=f"random_choice_array_{int(replace)}_axis{axis}", tol=EXACT)
            s.case("random.choice",
                   lambda k, a, pp, shape, replace, axis: jax.random.choice(k, a, shape, replace, pp, axis),
                   [keys[0], x, p if axis == 1 else p[:4] / p[:4].sum()], {"shape": (2, 2) if replace else (3,),
                                                                         "replace": replace, "axis": axis},
                   name=f"random_choice_array_p_{int(replace)}_axis{axis}", tol=EXACT)
    counts_and_matrices(s, keys)


def counts_and_matrices(s, keys):
    """poisson, binomial, multinomial (whole-sample rejection loops: exact counts),
    multivariate_normal and orthogonal (through a factorization: SUM_TOL-like)."""
    f32 = lambda v: np.asarray(v, np.float32)
    lam = f32([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 1000.0])
    for i, k in enumerate(keys):
        s.case("random.poisson", lambda k, lam, shape, dtype: jax.random.poisson(k, lam, shape, dtype), [k, lam],
               {"shape": (3, 7), "dtype": "int32"}, name=f"random_poisson_key{i}", tol=EXACT)
    n = f32([5.0, 20.0, 100.0, 1000.0])
    p = f32([0.3, 0.9, 0.5, 0.01])
    for i, k in enumerate(keys):
        s.case("random.binomial", lambda k, n, p, shape, dtype: jax.random.binomial(k, n, p, shape, dtype), [k, n, p],
               {"shape": (3, 4), "dtype": "float32"}, name=f"random_binomial_key{i}", tol=EXACT)
    s.case("random.multinomial", lambda k, n, p, shape, dtype: jax.random.multinomial(k, n, p, shape=shape, dtype=dtype),
           [keys[0], f32([10.0, 200.0]), f32([[0.2, 0.3, 0.5], [0.6, 0.0, 0.4]])], {"shape": None, "dtype": "float32"}, tol=EXACT)
    mean = f32([1.0, -2.0, 0.5])
    a = np.asarray([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]], np.float32)
    for method in ["cholesky", "eigh", "svd"]:
        s.case("random.multivariate_normal",
               lambda k, m, c, shape, method: jax.random.multivariate_normal(k, m, c, shape, method=method),
               [keys[0], mean, a], {"shape": (4,), "method": method}, tol=(1e-4, 1e-5))
    for n_, m_ in [(3, None), (4, 2), (2, 5)]:
        s.case("random.orthogonal", lambda k, n, shape, m: jax.random.orthogonal(k, n, shape, m=m), [keys[1]],
               {"n": n_, "shape": (2,), "m": m_}, tol=(1e-4, 1e-5))
    initializers(s, keys)


def initializers(s, keys):
    """jax.nn.initializers (include/tessel/nn_initializers.h): the random samplers times
    JAX's scales, exact (normal and truncated_normal are); orthogonal ones through a QR."""
    import jax.nn.initializers as init
    k = keys[0]
    s.case("nn.initializers.zeros", lambda k, shape: init.zeros(k, shape, np.float32), [k], {"shape": (2, 3)}, tol=EXACT)
    s.case("nn.initializers.ones", lambda k, shape: init.ones(k, shape, np.float32), [k], {"shape": (2, 3)}, tol=EXACT)
    s.case("nn.initializers.constant", lambda k, v, shape: init.constant(v)(k, shape, np.float32), [k],
           {"v": -7.5, "shape": (3, 2)}, tol=EXACT)
    s.case("nn.initializers.uniform", lambda k, v, shape: init.uniform(v)(k, shape, np.float32), [k],
           {"v": 10.0, "shape": (3, 4)}, tol=EXACT)
    s.case("nn.initializers.normal", lambda k, v, shape: init.normal(v)(k, shape, np.float32), [k],
           {"v": 5.0, "shape": (3, 4)}, tol=EXACT)
    s.case("nn.initializers.truncated_normal", lambda k, v, shape: init.truncated_normal(v)(k, shape, np.float32), [k],
           {"v": 5.0, "shape": (3, 4)}, tol=EXACT)
    for name in ["glorot_uniform", "glorot_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
                 "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal"]:
        fn = getattr(init, name)
        s.case(f"nn.initializers.{name}", lambda k, shape, fn=fn: fn()(k, shape, np.float32), [k],
               {"shape": (5, 7)}, tol=EXACT)
    for mode in ["fan_in", "fan_out", "fan_avg", "fan_geo_avg"]:
        for dist in ["truncated_normal", "normal", "uniform"]:
            s.case("nn.initializers.variance_scaling",
                   lambda k, scale, mode, dist, in_axis, out_axis, batch_axis, shape:
                   init.variance_scaling(scale, mode, dist, in_axis, out_axis, batch_axis)(k, shape, np.float32),
                   [keys[1]], {"scale": 1.5, "mode": mode, "dist": dist, "in_axis": (-2,), "out_axis": (-1,),
                               "batch_axis": (), "shape": (3, 3, 4, 6)}, tol=EXACT)
    s.case("nn.initializers.variance_scaling",
           lambda k, scale, mode, dist, in_axis, out_axis, batch_axis, shape:
           init.variance_scaling(scale, mode, dist, in_axis, out_axis, batch_axis)(k, shape, np.float32),
           [keys[2]], {"scale": 2.0, "mode": "fan_avg", "dist": "uniform", "in_axis": (1, 2), "out_axis": (-1,),
                       "batch_axis": (0,), "shape": (2, 3, 4, 5)}, name="nn_initializers_variance_scaling_axes", tol=EXACT)
    for shape, col in [((4, 6), -1), ((6, 4), -1), ((2, 3, 4), 0)]:
        s.case("nn.initializers.orthogonal", lambda k, scale, col, shape: init.orthogonal(scale, col)(k, shape, np.float32),
               [k], {"scale": 2.0, "col": col, "shape": shape}, tol=(1e-4, 1e-5))
    for shape in [(3, 2, 4), (3, 3, 4, 4), (1, 3, 2, 3, 5)]:
        s.case("nn.initializers.delta_orthogonal",
               lambda k, scale, shape: init.delta_orthogonal(scale)(k, shape, np.float32), [k],
               {"scale": 1.0, "shape": shape}, tol=(1e-4, 1e-5))


def more_draws(s, key):
    """The samplers that the cases above draw for one key, shape and dtype only, drawn again for
    three keys, two shapes (one long enough for several vector passes and tails) and every float
    dtype JAX takes for them: all exact (the gamma family where the processor reproduces
    ops.xla_rsqrt, as above)."""
    keys = [key, np.asarray(jax.random.PRNGKey(0)), np.asarray(jax.random.PRNGKey(2**31 + 5))]
    floats = ["float32", "float64", "float16", "bfloat16"]
    modes(s, keys, floats)
    for i, k in enumerate(keys):
        for dtype in floats:
            for shape in [(5,), (3, 67)]:
                s.case("random.uniform", lambda k, shape, dtype: jax.random.uniform(k, shape, dtype), [k],
                       {"shape": shape, "dtype": dtype}, tol=EXACT, name=f"random_uniform_{dtype}_key{i}_{shape[-1]}")
        for dtype, shape in [("uint32", (3, 67)), ("uint8", (5,)), ("uint64", (9,))]:
            s.case("random.bits", lambda k, shape, dtype: jax.random.bits(k, shape, dtype), [k],
                   {"shape": shape, "dtype": dtype}, name=f"random_bits_{dtype}_key{i}")
        for dtype in ["float32", "float64"]:
            logits = np.log(np.asarray([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]], dtype))
            # float64 logits run JAX with x64, where argmax's index is int64; tessel's is int32
            # (its default int, as JAX's without x64).
            s.case("random.categorical",
                   lambda k, l, axis, shape, replace:
                   jax.random.categorical(k, l, axis, shape, replace).astype(np.int32),
                   [k, logits], {"axis": -1, "shape": (9, 2), "replace": True}, tol=EXACT,
                   name=f"random_categorical_{dtype}_key{i}")
        for dtype in floats:
            c = lambda v: np.asarray(v, dtype)
            for shape in [(2, 3), (67, 3)]:
                tag = f"{dtype}_key{i}_{shape[0]}"
                s.case("random.weibull_min",
                       lambda k, sc, cc, shape, dtype: jax.random.weibull_min(k, sc, cc, shape, dtype),
                       [k, c(2.0), c([0.5, 1.0, 2.0])], {"shape": shape, "dtype": dtype}, tol=EXACT,
                       name=f"random_weibull_min_{tag}")
                s.case("random.wald", lambda k, m, shape, dtype: jax.random.wald(k, m, shape, dtype),
                       [k, c([0.5, 1.0, 2.0])], {"shape": shape, "dtype": dtype}, tol=EXACT, name=f"random_wald_{tag}")
                s.case("random.triangular",
                       lambda k, l, m, r, shape, dtype: jax.random.triangular(k, l, m, r, shape, dtype),
                       [k, c(-1.0), c([0.0, 0.5, 1.5]), c(2.0)], {"shape": shape, "dtype": dtype}, tol=EXACT,
                       name=f"random_triangular_{tag}")
                s.case("random.double_sided_maxwell",
                       lambda k, loc, sc, shape, dtype: jax.random.double_sided_maxwell(k, loc, sc, shape, dtype),
                       [k, c([0.0, 1.0, -3.0]), c(2.0)], {"shape": shape, "dtype": dtype}, tol=EXACT,
                       name=f"random_double_sided_maxwell_{tag}")
        for dtype in ["int64", "float64", "uint64"]:  # JAX runs these with x64: p = 0.5 in float64
            s.case("random.rademacher", lambda k, shape, dtype: jax.random.rademacher(k, shape, dtype), [k],
                   {"shape": (37,), "dtype": dtype}, tol=EXACT, name=f"random_rademacher_{dtype}_key{i}")
        for p in [0.7, 2.0]:
            s.case("random.generalized_normal",
                   lambda k, p, shape, dtype: jax.random.generalized_normal(k, p, shape, dtype), [k],
                   {"p": p, "shape": (9, 3), "dtype": "float64"}, tol=EXACT, machine=RSQRT_MACHINE,
                   name=f"random_generalized_normal_float64_key{i}_{p}")
        # Eagerly exact. Under jax.jit p is a constant, and XLA rewrites |g|^p and the norm's
        # power more than tessel's jit does: jit within MATH_TOL (one ulp on 2 of 15 values).
        s.case("random.ball", lambda k, d, p, shape, dtype: jax.random.ball(k, d, p, shape, dtype), [k],
               {"d": 3, "p": 2, "shape": (5,), "dtype": "float64"}, tol=EXACT, machine=RSQRT_MACHINE,
               jit_tol=MATH_TOL, name=f"random_ball_float64_key{i}")
        for dtype in ["int32", "int64"]:
            s.case("random.geometric", lambda k, p, shape, dtype: jax.random.geometric(k, p, shape, dtype),
                   [k, np.asarray([0.05, 0.5, 0.99], np.float32)], {"shape": (40, 3), "dtype": dtype}, tol=EXACT,
                   name=f"random_geometric_{dtype}_key{i}")
        s.case("random.multinomial",
               lambda k, n, p, shape, dtype: jax.random.multinomial(k, n, p, shape=shape, dtype=dtype),
               [k, np.float32(50.0), np.asarray([0.1, 0.2, 0.3, 0.4], np.float32)], {"shape": (5, 4), "dtype": "float32"},
               tol=EXACT, name=f"random_multinomial_key{i}")
        for dtype in ["float32", "float64"]:
            c = lambda v: np.asarray(v, dtype)
            tag = f"{dtype}_key{i}"
            s.case("random.beta", lambda k, a, b, shape, dtype: jax.random.beta(k, a, b, shape, dtype),
                   [k, c([0.2, 1.0, 5.0]), c([[0.5], [3.0]])], {"shape": (2, 3), "dtype": dtype}, tol=EXACT,
                   machine=RSQRT_MACHINE, name=f"random_beta_{tag}")
            s.case("random.chisquare", lambda k, df, shape, dtype: jax.random.chisquare(k, df, shape, dtype),
                   [k, c([0.5, 2.0, 30.0])], {"shape": (9, 3), "dtype": dtype}, tol=EXACT, machine=RSQRT_MACHINE,
                   name=f"random_chisquare_{tag}")
            s.case("random.t", lambda k, df, shape, dtype: jax.random.t(k, df, shape, dtype),
                   [k, c([0.5, 2.0, 30.0])], {"shape": (9, 3), "dtype": dtype}, tol=EXACT, machine=RSQRT_MACHINE,
                   name=f"random_t_{tag}")
            s.case("random.f", lambda k, a, b, shape, dtype: jax.random.f(k, a, b, shape, dtype),
                   [k, c([[1.0, 4.0, 20.0]] * 9), c(3.0)], {"shape": (9, 3), "dtype": dtype}, tol=EXACT,
                   machine=RSQRT_MACHINE, name=f"random_f_{tag}")


def modes(s, keys, floats):
    """mode "high" (two uniforms per draw) of bernoulli, gumbel, categorical and choice, and
    gumbel's "highest" (64 bits per float32 draw): exact."""
    for i, k in enumerate(keys):
        for dtype in floats:
            for mode in ["high", "highest"]:
                s.case("random.gumbel", lambda k, shape, dtype, mode: jax.random.gumbel(k, shape, dtype, mode=mode), [k],
                       {"shape": (3, 67), "dtype": dtype, "mode": mode}, tol=EXACT,
                       name=f"random_gumbel_{mode}_{dtype}_key{i}")
        for dtype in ["float32", "float64"]:
            p = np.asarray([0.0, 1e-9, 3e-8, 0.3, 0.5, 0.999, 1.0], dtype)
            s.case("random.bernoulli", lambda k, p, shape, mode: jax.random.bernoulli(k, p, shape, mode=mode), [k, p],
                   {"shape": (40, 7), "mode": "high"}, tol=EXACT, name=f"random_bernoulli_high_{dtype}_key{i}")
        logits = np.log(np.asarray([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]], np.float32))
        for replace in [True, False]:
            s.case("random.categorical",
                   lambda k, l, axis, shape, replace, mode: jax.random.categorical(k, l, axis, shape, replace, mode=mode),
                   [k, logits], {"axis": -1, "shape": (9, 2) if replace else (3, 2), "replace": replace, "mode": "high"},
                   tol=EXACT, name=f"random_categorical_high_{int(replace)}_key{i}")
        s.case("random.choice",
               lambda k, n, shape, replace, pp, mode:
               jax.random.choice(k, n, shape, replace, p=np.asarray(pp, np.float32), mode=mode),
               [k], {"n": 6, "shape": (4,), "replace": False, "pp": (0.1, 0.2, 0.05, 0.4, 0.25, 0.0), "mode": "high"},
               tol=EXACT, name=f"random_choice_high_key{i}")
