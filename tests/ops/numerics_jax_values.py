# Prints the JAX values that tests/ops/numerics_test.cpp records (run by hand with JAX
# installed; the build and the tests never need it):
#   python tests/ops/numerics_jax_values.py
# 64-bit dtypes need jax_enable_x64; it changes none of the 32-bit values below.
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax_values_format import num

jax.config.update("jax_enable_x64", True)
print("// values recorded from JAX", jax.__version__)

FLOAT_A = [-np.inf, -6.0, -1.5, -0.0, 0.0, 1.5, 6.0, np.inf, np.nan]
FLOAT_B = [-np.inf, -4.0, -0.5, -0.0, 0.0, 0.5, 4.0, np.inf, np.nan]
FLOAT_FNS = {"divide": jnp.divide, "floor_divide": jnp.floor_divide, "remainder": jnp.remainder,
             "rem": lax.rem, "fmod": jnp.fmod}
INT_FNS = {"floor_divide": jnp.floor_divide, "remainder": jnp.remainder, "rem": lax.rem, "fmod": jnp.fmod}


def pairs(a, b, dtype):
    x = np.array([p for p in a for _ in b], dtype)
    y = np.array([q for _ in a for q in b], dtype)
    return jnp.asarray(x), jnp.asarray(y)


# Division of floats: one table for every float dtype (checked to agree).
for name, fn in FLOAT_FNS.items():
    tables = set()
    for dt in ["float16", "bfloat16", "float32", "float64"]:
        x, y = pairs(FLOAT_A, FLOAT_B, jnp.dtype(dt))
        out = fn(x, y)
        assert out.dtype == x.dtype
        tables.add(", ".join(num(v) for v in np.asarray(out, np.float64)))
    assert len(tables) == 1, name
    print(f'{{"{name}", {{{tables.pop()}}}}},')


def int_cases(dt):
    info = np.iinfo(dt)
    if info.min < 0:
        return [info.min, -7, -1, 0, 1, 7, info.max], [info.min, -2, -1, 0, 1, 2, info.max]
    return [0, 1, 7, info.max], [0, 1, 2, info.max]


def as_i64(v, dt):
    return int(np.array(v, dt).astype(np.uint64).view(np.int64)) if dt == "uint64" else int(v)


# Division of integers: a table per dtype (uint64 values as their int64 bit patterns).
for dt in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
    a, b = int_cases(dt)
    x, y = pairs(a, b, np.dtype(dt))
    rows = []
    for name, fn in INT_FNS.items():
        out = np.asarray(fn(x, y))
        assert out.dtype == np.dtype(dt)
        rows.append("{" + ", ".join(str(as_i64(v, dt)) for v in out) + "}")
    print(f"{dt}: " + ",\n".join(rows))

# Bool operands of the numeric-only functions.
t, f = jnp.array([True, False, True, False]), jnp.array([True, True, False, False])
for name, fn in {"floor_divide": jnp.floor_divide, "remainder": jnp.remainder, "fmod": jnp.fmod,
                 "power": jnp.power, "left_shift": jnp.left_shift, "right_shift": jnp.right_shift}.items():
    out = fn(t, f)
    print(name, out.dtype, list(np.asarray(out)))
print("square", jnp.square(t).dtype, list(np.asarray(jnp.square(t))))

# Signed zeros.
z = jnp.array([-0.0, -0.0, 0.0, 0.0], jnp.float32)
w = jnp.array([-0.0, 0.0, -0.0, 0.0], jnp.float32)
print("maximum", [num(v) for v in jnp.maximum(z, w)], "minimum", [num(v) for v in jnp.minimum(z, w)])
for xs in ([-0.0, 0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0]):
    v = jnp.array(xs, jnp.float32)
    print(xs, "max", num(jnp.max(v)), "min", num(jnp.min(v)))
print("cummax", [num(v) for v in lax.cummax(jnp.array([-0.0, 0.0, -0.0]))],
      "cummin", [num(v) for v in lax.cummin(jnp.array([0.0, -0.0, 0.0]))])
n1, z1 = -jnp.ones((2, 1)), jnp.zeros((1, 3))
print("matmul k=1", [num(v) for v in (n1 @ z1).ravel()], "k=2", [num(v) for v in (-jnp.ones((2, 2)) @ jnp.zeros((2, 3))).ravel()])
print("einsum i,i->i", [num(v) for v in jnp.einsum("i,i->i", -jnp.ones(2), jnp.zeros(2))])

# Result dtypes, with JAX's default 32-bit dtypes.
jax.config.update("jax_enable_x64", False)
for dt in ["bool", "int8", "uint8", "int16", "float16"]:
    print("cumsum", dt, jnp.cumsum(jnp.ones(2, dt)).dtype, "cumprod", jnp.cumprod(jnp.ones(2, dt)).dtype)
print("full 7.5", jnp.full((2,), 7.5).dtype, jnp.full((2,), 7.5).weak_type, "full 7", jnp.full((2,), 7).dtype)
print("sum(2.0) * f16", (jnp.sum(2.0) * jnp.ones(2, jnp.float16)).dtype, jnp.sum(2.0).weak_type)

# Shapes.
print("einsum ij,jk", jnp.einsum("ij,jk", jnp.array([[1.0], [2.0]]), jnp.arange(12.0).reshape(4, 3)).tolist())
print("einsum ij,ij->i", jnp.einsum("ij,ij->i", jnp.ones((2, 1)), jnp.arange(8.0).reshape(2, 4)).tolist())
print("repeat", jnp.repeat(jnp.array(5.0), 3, axis=0).tolist())
for f, shape in [(jnp.fft.fft, (3, 0)), (jnp.fft.ifft, (3, 0)), (jnp.fft.fft2, (0, 0)), (jnp.fft.irfft, (3, 0)),
                 (jnp.fft.irfft, (3, 1)), (jnp.fft.irfft2, (0, 3))]:
    r = f(jnp.zeros(shape))
    print(f.__name__, shape, r.shape, r.dtype)

# Denormals: XLA on CPU flushes them to zero.
print("log(1e-40)", num(jnp.log(jnp.float32(1e-40))), "sign(1e-40)", num(jnp.sign(jnp.float32(1e-40))))

# Complex functions at signed zeros, infinities and NaN: one table for complex64 and
# complex128 (checked to agree: the same zeros, signs, infinities and NaNs, and finite values
# within 1e-6), printed from complex128 with 9 digits.
jax.config.update("jax_enable_x64", True)
Z = [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (2.0, -0.0), (-2.0, 0.0), (-2.0, -0.0), (-0.0, 2.0),
     (0.0, -2.0), (np.inf, -0.0), (-np.inf, 0.0), (0.0, np.inf), (np.nan, 0.0), (1.0, np.nan), (np.inf, np.inf),
     (-np.inf, np.nan)]
COMPLEX_FNS = ["exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
               "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "square",
               "reciprocal", "sign", "abs"]


def cflt(v):
    v = float(v)
    if v == 0 or not np.isfinite(v):
        return num(v)
    s = f"{v:.9g}"
    return s if "." in s or "e" in s else s + ".0"


def agree(p, q):
    if np.isnan(p) or np.isnan(q):
        return np.isnan(p) and np.isnan(q)
    if p == 0 or q == 0 or np.isinf(p) or np.isinf(q):
        return p == q and np.signbit(p) == np.signbit(q)
    return abs(p - q) <= 1e-6 * max(1.0, abs(q))


print("// inputs:", ", ".join(f"{{{num(a)}, {num(b)}}}" for a, b in Z))
for name in COMPLEX_FNS:
    fn = lax.rsqrt if name == "rsqrt" else getattr(jnp, name)
    outs = [np.asarray(fn(jnp.asarray(np.array([complex(a, b) for a, b in Z], dt)))).astype(np.complex128)
            for dt in ["complex64", "complex128"]]
    assert all(agree(p.real, q.real) and agree(p.imag, q.imag) for p, q in zip(*outs)), name
    print(f'{{"{name}", {{' + ", ".join(f"{{{cflt(w.real)}, {cflt(w.imag)}}}" for w in outs[1]) + "}},")

# Complex products, quotients and powers at signed zeros (ComplexProductQuotientAndPower...).
BINARY_CASES = [("multiply", (-2.0, -0.0), (3.0, 0.0)), ("multiply", (-0.0, -0.0), (-2.0, 0.0)),
                ("divide", (-2.0, -2.0), (-2.0, -2.0)), ("divide", (-2.0, -0.0), (0.0, -2.0)),
                ("divide", (-0.0, -0.0), (-2.0, -0.0)), ("divide", (-0.0, -0.0), (-2.0, 0.0)),
                ("divide", (0.5, 0.0), (0.0, 0.0)), ("power", (-0.0, -0.0), (0.5, 0.0)),
                ("power", (0.0, 0.0), (-2.0, 0.0)), ("power", (0.0, 0.0), (0.0, 0.0)),
                ("power", (-2.0, -0.0), (0.5, 0.0))]
for name, (xr, xi), (yr, yi) in BINARY_CASES:
    x = jnp.asarray(np.array([complex(xr, xi)], np.complex128))
    y = jnp.asarray(np.array([complex(yr, yi)], np.complex128))
    r = complex(np.asarray(getattr(jnp, name)(x, y))[0])
    print(f'{{"{name}", {{{num(xr)}, {num(xi)}}}, {{{num(yr)}, {num(yi)}}}, {{{num(r.real)}, {num(r.imag)}}}}},')
