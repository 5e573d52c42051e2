# Prints the JAX values that tests/ops/linalg_composed_test.cpp records (run by hand with
# JAX installed; the build and the tests never need it):
#   python tests/ops/linalg_composed_jax_values.py > values.inc
# Each case computes one function of the inputs `arr(shape, seed, dtype)` defined the same
# way in the test. 32-bit inputs run with x64 off (tessel's defaults are JAX's 32-bit ones:
# integers promote to float32); 64-bit inputs run with x64 on.
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax_values_format import num

jax.config.update("jax_enable_x64", True)

DTYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128, "i32": np.int32}


def arr(shape, seed, dtype="f32"):
    """((i * 7 + seed * 3) % 11 - 5) / 4, imaginary part ((i * 5 + seed) % 7 - 3) / 4;
    integers take the numerator only."""
    n = int(np.prod(shape))
    i = np.arange(n)
    re = ((i * 7 + seed * 3) % 11 - 5).astype(np.float64)
    if dtype == "i32":
        return jnp.asarray(re.reshape(shape).astype(np.int32))
    re = re / 4
    if dtype.startswith("c"):
        im = ((i * 5 + seed) % 7 - 3) / 4
        re = re + 1j * im
    return jnp.asarray(re.reshape(shape).astype(DTYPES[dtype]))


def spd(n, seed, dtype="f32"):
    """A well-conditioned matrix: arr + n * identity."""
    return arr((n, n), seed, dtype) + n * jnp.eye(n, dtype=DTYPES[dtype])


NAMES = {np.dtype(v): k for k, v in DTYPES.items()}
NAMES[np.dtype(np.int64)] = "i64"
NAMES[np.dtype(np.int8)] = "i8"
NAMES[np.dtype(np.bool_)] = "bool"


def emit(name, fn, x64=False):
    with jax.enable_x64(x64):
        y = np.asarray(fn())
    shape = ", ".join(str(d) for d in y.shape)
    flat = y.ravel()
    re = ", ".join(num(v) for v in np.real(flat))
    im = ", ".join(num(v) for v in np.imag(flat)) if np.iscomplexobj(y) else ""
    print(f'    {{"{name}", "{NAMES[y.dtype]}", {{{shape}}}, {{{re}}}, {{{im}}}}},')


inf = np.inf
x = lambda: arr((2, 3, 4), 1)
emit("vector_norm 2", lambda: jnp.linalg.vector_norm(x()))
emit("vector_norm 1 axis -1", lambda: jnp.linalg.vector_norm(x(), ord=1, axis=-1))
emit("vector_norm inf axis 1", lambda: jnp.linalg.vector_norm(x(), ord=inf, axis=1))
emit("vector_norm -inf axes 0 2", lambda: jnp.linalg.vector_norm(x(), ord=-inf, axis=(0, 2)))
emit("vector_norm 0 axis 2 keepdims", lambda: jnp.linalg.vector_norm(x(), ord=0, axis=2, keepdims=True))
emit("vector_norm 3 axis 1", lambda: jnp.linalg.vector_norm(x(), ord=3, axis=1))
emit("vector_norm 0.5 axis -1", lambda: jnp.linalg.vector_norm(x(), ord=0.5, axis=-1))
emit("vector_norm -1 axis 0", lambda: jnp.linalg.vector_norm(x(), ord=-1, axis=0))
emit("vector_norm c64 2 axis -1", lambda: jnp.linalg.vector_norm(arr((3, 4), 2, "c64"), axis=-1))
emit("vector_norm c128 3", lambda: jnp.linalg.vector_norm(arr((3, 4), 2, "c128"), ord=3), x64=True)
emit("vector_norm f64 2 axis 0", lambda: jnp.linalg.vector_norm(arr((3, 4), 3, "f64"), axis=0), x64=True)
emit("vector_norm i32 2", lambda: jnp.linalg.norm(arr((5,), 4, "i32")))

emit("norm none 3-D", lambda: jnp.linalg.norm(x()))
emit("norm none 3-D keepdims", lambda: jnp.linalg.norm(x(), keepdims=True))
emit("norm fro axes 0 2", lambda: jnp.linalg.norm(x(), ord="fro", axis=(0, 2)))
emit("norm 1 axes 2 1", lambda: jnp.linalg.norm(x(), ord=1, axis=(2, 1)))
emit("norm -1 axes 0 1 keepdims", lambda: jnp.linalg.norm(x(), ord=-1, axis=(0, 1), keepdims=True))
emit("norm inf axes 1 2", lambda: jnp.linalg.norm(x(), ord=inf, axis=(1, 2)))
emit("norm -inf axes 2 0 keepdims", lambda: jnp.linalg.norm(x(), ord=-inf, axis=(2, 0), keepdims=True))
emit("norm 1-D inf", lambda: jnp.linalg.norm(arr((5,), 5), ord=inf))
emit("norm 2-D 1", lambda: jnp.linalg.norm(arr((3, 4), 6), ord=1))
emit("norm 2-D inf", lambda: jnp.linalg.norm(arr((3, 4), 6), ord=inf))
emit("norm axis 1 3", lambda: jnp.linalg.norm(x(), ord=3, axis=1))
emit("matrix_norm fro", lambda: jnp.linalg.matrix_norm(x()))
emit("matrix_norm 1 keepdims", lambda: jnp.linalg.matrix_norm(x(), ord=1, keepdims=True))
emit("matrix_norm -inf", lambda: jnp.linalg.matrix_norm(x(), ord=-inf))
emit("matrix_norm c64 inf", lambda: jnp.linalg.matrix_norm(arr((2, 3, 3), 7, "c64"), ord=inf))

emit("cross 3 broadcast", lambda: jnp.linalg.cross(arr((2, 3), 1), arr((3,), 2)))
emit("cross 2x2", lambda: jnp.cross(arr((4, 2), 3), arr((4, 2), 4)))
emit("cross 2x3", lambda: jnp.cross(arr((2,), 5), arr((3,), 6)))
emit("cross 3x2", lambda: jnp.cross(arr((2, 3), 5), arr((2,), 6)))
emit("cross axes", lambda: jnp.cross(arr((3, 4), 7), arr((4, 3), 8), axisa=0, axisb=-1, axisc=0))
emit("cross f64 axis 0", lambda: jnp.linalg.cross(arr((3, 2), 9, "f64"), arr((3, 2), 10, "f64"), axis=0), x64=True)

emit("multi_dot 4", lambda: jnp.linalg.multi_dot([arr((3, 5), 1), arr((5, 2), 2), arr((2, 6), 3), arr((6, 4), 4)]))
emit("multi_dot vector first", lambda: jnp.linalg.multi_dot([arr((3,), 1), arr((3, 4), 2), arr((4, 2), 3)]))
emit("multi_dot vectors both", lambda: jnp.linalg.multi_dot([arr((3,), 1), arr((3, 4), 2), arr((4,), 3)]))
emit("multi_dot 2", lambda: jnp.linalg.multi_dot([arr((2, 3), 1), arr((3,), 2)]))
emit("multi_dot c128 3", lambda: jnp.linalg.multi_dot([arr((2, 3), 1, "c128"), arr((3, 3), 2, "c128"),
                                                       arr((3, 5), 3, "c128")]), x64=True)

emit("diagonal 0", lambda: jnp.linalg.diagonal(x()))
emit("diagonal 1", lambda: jnp.linalg.diagonal(x(), offset=1))
emit("diagonal -1", lambda: jnp.linalg.diagonal(x(), offset=-1))
emit("diagonal 5", lambda: jnp.linalg.diagonal(x(), offset=5))
emit("matrix_transpose", lambda: jnp.linalg.matrix_transpose(x()))
emit("vecdot c64 broadcast", lambda: jnp.linalg.vecdot(arr((2, 3), 1, "c64"), arr((3,), 2, "c64")))
emit("vecdot axis 0", lambda: jnp.linalg.vecdot(arr((3, 2), 3), arr((3, 1), 4), axis=0))
emit("vecdot i32", lambda: jnp.linalg.vecdot(arr((2, 4), 5, "i32"), arr((2, 4), 6, "i32")))
emit("outer", lambda: jnp.linalg.outer(arr((3,), 1), arr((2,), 2)))
emit("trace 1", lambda: jnp.linalg.trace(x(), offset=1))
emit("trace -1", lambda: jnp.linalg.trace(x(), offset=-1))
emit("trace i32 as f64", lambda: jnp.linalg.trace(arr((3, 3), 2, "i32"), dtype=jnp.float64), x64=True)

m = lambda: arr((3, 3), 2)
for n in (0, 1, 2, 3, 5, 13):
    emit(f"matrix_power {n}", lambda: jnp.linalg.matrix_power(m(), n))
emit("matrix_power batched 6", lambda: jnp.linalg.matrix_power(arr((2, 2, 2), 3), 6))
emit("matrix_power i32 5", lambda: jnp.linalg.matrix_power(arr((2, 2), 4, "i32"), 5))
emit("matrix_power f64 -3", lambda: jnp.linalg.matrix_power(spd(3, 5, "f64"), -3), x64=True)

emit("block_diag", lambda: jsl.block_diag(jnp.float32(1.5), arr((2,), 1), arr((2, 3), 2), jnp.array([[4]], jnp.int32)))
emit("block_diag none", lambda: jsl.block_diag())
emit("toeplitz c", lambda: jsl.toeplitz(arr((3,), 1)))
emit("toeplitz c r", lambda: jsl.toeplitz(arr((3,), 1), arr((4,), 2)))
emit("toeplitz batched", lambda: jsl.toeplitz(arr((2, 3), 3), arr((4,), 4)))
emit("toeplitz c64", lambda: jsl.toeplitz(arr((3,), 5, "c64")))
emit("hankel c", lambda: jsl.hankel(arr((3,), 1)))
emit("hankel c r", lambda: jsl.hankel(arr((3,), 1), arr((4,), 2)))
emit("hankel batched", lambda: jsl.hankel(arr((2, 3), 3), arr((2, 2), 4)))
emit("circulant", lambda: jsl.circulant(arr((4,), 1)))
emit("circulant batched i32", lambda: jsl.circulant(arr((2, 3), 2, "i32")))

# ---- through the factorizations ----
emit("norm nuc", lambda: jnp.linalg.norm(x(), ord="nuc", axis=(2, 0)))
emit("matrix_norm 2", lambda: jnp.linalg.matrix_norm(x(), ord=2))
emit("matrix_norm -2 keepdims", lambda: jnp.linalg.matrix_norm(x(), ord=-2, keepdims=True))
emit("matrix_norm c128 nuc", lambda: jnp.linalg.matrix_norm(arr((2, 3, 2), 4, "c128"), ord="nuc"), x64=True)
emit("pinv", lambda: jnp.linalg.pinv(arr((3, 4), 1)))
emit("pinv batched f64", lambda: jnp.linalg.pinv(arr((2, 4, 3), 2, "f64")), x64=True)
emit("pinv rtol", lambda: jnp.linalg.pinv(jnp.diag(jnp.array([10., 1., 0.05])), rtol=0.01))
emit("pinv c64 hermitian", lambda: jnp.linalg.pinv(spd(3, 3, "c64") + spd(3, 3, "c64").conj().T, hermitian=True))
emit("matrix_rank", lambda: jnp.linalg.matrix_rank(jnp.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]])))
emit("matrix_rank batched", lambda: jnp.linalg.matrix_rank(jnp.stack([jnp.eye(3), jnp.ones((3, 3)), jnp.zeros((3, 3))])))
emit("matrix_rank tol", lambda: jnp.linalg.matrix_rank(jnp.diag(jnp.array([10., 1., 0.05])), rtol=0.5))
emit("matrix_rank vector", lambda: jnp.linalg.matrix_rank(jnp.array([0., 2.])))
emit("cond", lambda: jnp.linalg.cond(spd(3, 1)))
emit("cond batched f64 -2", lambda: jnp.linalg.cond(arr((2, 3, 4), 2, "f64"), p=-2), x64=True)
emit("cond fro", lambda: jnp.linalg.cond(spd(3, 2), p="fro"))
emit("cond 1", lambda: jnp.linalg.cond(spd(3, 2, "f64"), p=1), x64=True)
emit("cond inf singular", lambda: jnp.linalg.cond(jnp.array([[1., 2.], [2., 4.]]), p=inf))
lst = lambda: jnp.linalg.lstsq(arr((5, 3), 1, "f64"), arr((5,), 2, "f64"))
emit("lstsq x", lambda: lst()[0], x64=True)
emit("lstsq resid", lambda: lst()[1], x64=True)
# tessel counts in int32 (its default integer; JAX gives int64 with x64 on)
emit("lstsq rank", lambda: lst()[2].astype(np.int32), x64=True)
emit("lstsq s", lambda: lst()[3], x64=True)
lst2 = lambda: jnp.linalg.lstsq(jnp.array([[1., 2.], [2., 4.], [0., 0.]]), arr((3, 2), 3), rcond=1e-3)
emit("lstsq deficient x", lambda: lst2()[0])
emit("lstsq deficient resid", lambda: lst2()[1])
emit("lstsq deficient rank", lambda: lst2()[2])
emit("tensorinv", lambda: jnp.linalg.tensorinv(spd(6, 1).reshape(2, 3, 6), ind=2))
emit("tensorinv ind 1", lambda: jnp.linalg.tensorinv(spd(4, 2).reshape(4, 2, 2), ind=1))
emit("tensorsolve", lambda: jnp.linalg.tensorsolve(spd(6, 3).reshape(2, 3, 6), arr((2, 3), 4)))
emit("tensorsolve axes", lambda: jnp.linalg.tensorsolve(spd(6, 3).reshape(6, 2, 3), arr((2, 3), 4), axes=(0,)))
for name, a, x64 in [("expm f32 small", lambda: arr((3, 3), 1) * 0.1, False),
                     ("expm f32", lambda: arr((3, 3), 1), False),
                     ("expm f32 scaled", lambda: arr((3, 3), 1) * 8, False),
                     ("expm f64 small", lambda: arr((3, 3), 2, "f64") * 0.01, True),
                     ("expm f64 mid", lambda: arr((3, 3), 2, "f64") * 0.3, True),
                     ("expm f64", lambda: arr((4, 4), 2, "f64"), True),
                     ("expm f64 scaled", lambda: arr((4, 4), 2, "f64") * 20, True),
                     ("expm c128", lambda: arr((3, 3), 3, "c128"), True),
                     ("expm batched f32", lambda: jnp.stack([arr((2, 2), 1) * 0.1, arr((2, 2), 2) * 9]), False)]:
    emit(name, lambda a=a: jsl.expm(a()), x64=x64)
emit("expm upper", lambda: jsl.expm(jnp.triu(arr((3, 3), 4, "f64")), upper_triangular=True), x64=True)
emit("expm max_squarings", lambda: jsl.expm(arr((3, 3), 1) * 1000, max_squarings=3))
pol = lambda: jsl.polar(arr((4, 3), 2, "f64"), method="svd")
emit("polar unitary", lambda: pol()[0], x64=True)
emit("polar posdef", lambda: pol()[1], x64=True)
pol2 = lambda: jsl.polar(arr((2, 3), 2), side="left", method="svd")
emit("polar left unitary", lambda: pol2()[0])
emit("polar left posdef", lambda: pol2()[1])
emit("eigvals sorted", lambda: jnp.sort_complex(jnp.linalg.eigvals(arr((4, 4), 1))))
emit("eigvals f64 sorted", lambda: jnp.sort_complex(jnp.linalg.eigvals(arr((2, 3, 3), 2, "f64"))), x64=True)
emit("eigvals c64 sorted", lambda: jnp.sort_complex(jnp.linalg.eigvals(arr((3, 3), 3, "c64"))))

# ---- structured problems ----
from jax import lax  # noqa: E402

tri = lambda dt: (arr((2, 4), 1, dt), arr((2, 4), 2, dt) + 3, arr((2, 4), 3, dt), arr((2, 4, 3), 4, dt))
emit("tridiagonal_solve", lambda: lax.linalg.tridiagonal_solve(*tri("f32")))
emit("tridiagonal_solve f64", lambda: lax.linalg.tridiagonal_solve(*tri("f64")), x64=True)
emit("tridiagonal_solve c64", lambda: lax.linalg.tridiagonal_solve(*tri("c64")))
emit("sqrtm", lambda: jsl.sqrtm(spd(3, 1)))
emit("sqrtm f64", lambda: jsl.sqrtm(spd(4, 2, "f64")), x64=True)
emit("sqrtm c128", lambda: jsl.sqrtm(spd(3, 3, "c128")), x64=True)
emit("eigh_tridiagonal", lambda: jsl.eigh_tridiagonal(arr((5,), 1), arr((4,), 2), eigvals_only=True))
emit("eigh_tridiagonal f64 select", lambda: jsl.eigh_tridiagonal(arr((5,), 3, "f64"), arr((4,), 4, "f64"),
                                                                 eigvals_only=True, select="i", select_range=(1, 3)),
     x64=True)

# ---- more dtypes and shapes ----
lst3 = lambda: jnp.linalg.lstsq(arr((2, 4), 5, "c64"), arr((2, 2), 6, "c64"))
emit("lstsq wide c64 x", lambda: lst3()[0])
emit("lstsq wide c64 resid", lambda: lst3()[1])
emit("pinv batched rtol", lambda: jnp.linalg.pinv(jnp.stack([jnp.diag(jnp.array([4., 1., .1])),
                                                            jnp.diag(jnp.array([2., .5, .3]))]),
                                                 rtol=jnp.array([0.05, 0.2])))
emit("cond nuc c128", lambda: jnp.linalg.cond(spd(3, 4, "c128"), p="nuc"), x64=True)
emit("matrix_rank hermitian", lambda: jnp.linalg.matrix_rank(jnp.array([[2., 1.], [1., 0.5]]), hermitian=True))
emit("norm c64 -2", lambda: jnp.linalg.norm(arr((3, 3), 8, "c64"), ord=-2))
