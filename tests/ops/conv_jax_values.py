# Generates the expected values of tests/ops/conv_test.cpp with JAX (run by hand:
# /work/venv-jax/bin/python tests/ops/conv_jax_values.py, then paste its output into the
# test). Inputs are sin(0.37 * i + seed) over row-major positions i, in float64, as the
# test's input() builds them.
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from jax import lax


def inp(shape, seed, complex_=False):
    n = int(np.prod(shape))
    x = np.sin(0.37 * np.arange(n) + seed).reshape(shape)
    if complex_:
        x = x + 1j * np.cos(0.23 * np.arange(n) + seed).reshape(shape)
    return jnp.asarray(x)


def emit(name, y):
    y = np.asarray(y)
    if np.iscomplexobj(y):
        vals = ", ".join(f"{{{v.real:.17g}, {v.imag:.17g}}}" for v in y.ravel())
        print(f"const std::vector<ts::complex128_t> k{name} = {{{vals}}};")
    else:
        vals = ", ".join(f"{v:.17g}" for v in y.astype(np.float64).ravel())
        print(f"const std::vector<double> k{name} = {{{vals}}};")
    print(f"const ts::Shape k{name}Shape = {{{', '.join(map(str, y.shape))}}};")


# ---- conv_general_dilated ----
emit("ConvNchwValid", lax.conv_general_dilated(inp((2, 3, 5, 6), 0.1), inp((4, 3, 3, 2), 0.7), (1, 1), "VALID"))
emit("ConvNhwcSameStrided",
     lax.conv_general_dilated(inp((2, 5, 6, 3), 0.2), inp((3, 2, 3, 4), 0.5), (2, 1), "SAME",
                              dimension_numbers=("NHWC", "HWIO", "NHWC")))
emit("ConvDilatedExplicit",
     lax.conv_general_dilated(inp((1, 2, 4, 5), 0.3), inp((3, 2, 2, 3), 0.9), (1, 2), ((1, 2), (0, 1)),
                              lhs_dilation=(2, 1), rhs_dilation=(1, 2)))
emit("ConvFeatureGroups",
     lax.conv_general_dilated(inp((2, 4, 5, 5), 0.4), inp((6, 2, 3, 3), 0.1), (1, 1), "SAME",
                              feature_group_count=2))
emit("ConvBatchGroups",
     lax.conv_general_dilated(inp((4, 3, 5, 5), 0.5), inp((6, 3, 2, 2), 0.3), (1, 1), "VALID",
                              batch_group_count=2))
emit("Conv1dSameLower",
     lax.conv_general_dilated(inp((2, 7, 3), 0.6), inp((3, 3, 2), 0.2), (2,), "SAME_LOWER",
                              dimension_numbers=("NWC", "WIO", "NWC")))
emit("Conv3d", lax.conv_general_dilated(inp((1, 2, 4, 4, 3), 0.7), inp((3, 2, 2, 2, 2), 0.4), (1, 1, 1), "VALID"))
emit("ConvOddLayout",
     lax.conv_general_dilated(inp((5, 2, 4, 6), 0.8), inp((2, 3, 2, 4), 0.6), (1, 1), ((1, 0), (2, 1)),
                              dimension_numbers=("HCNW", "IWOH", "WNCH")))
emit("ConvComplex",
     lax.conv_general_dilated(inp((1, 2, 4, 4), 0.1, True), inp((2, 2, 2, 2), 0.2, True), (1, 1), "SAME"))
# ---- conv_transpose ----
emit("ConvTransposeSame",
     lax.conv_transpose(inp((1, 3, 4, 2), 0.2), inp((3, 3, 2, 3), 0.4), (2, 2), "SAME"))
emit("ConvTransposeValidKernel",
     lax.conv_transpose(inp((2, 4, 3, 2), 0.3), inp((2, 3, 4, 2), 0.6), (2, 1), "VALID", transpose_kernel=True))
emit("ConvTransposeExplicit",
     lax.conv_transpose(inp((1, 5, 2), 0.5), inp((3, 2, 3), 0.1), (3,), ((1, 2),)))
# ---- jnp.convolve / correlate ----
for mode in ("full", "same", "valid"):
    m = mode.capitalize()
    emit(f"Convolve{m}", jnp.convolve(inp((7,), 0.1), inp((3,), 0.5), mode=mode))
    emit(f"ConvolveShortFirst{m}", jnp.convolve(inp((4,), 0.2), inp((6,), 0.3), mode=mode))
    emit(f"Correlate{m}", jnp.correlate(inp((7,), 0.1), inp((4,), 0.5), mode=mode))
    emit(f"CorrelateShortFirst{m}", jnp.correlate(inp((3,), 0.4), inp((5,), 0.6), mode=mode))
    emit(f"CorrelateComplex{m}", jnp.correlate(inp((5,), 0.1, True), inp((3,), 0.2, True), mode=mode))
# ---- reduce_window ----
x = inp((2, 5, 6), 0.3)
emit("WindowSum", lax.reduce_window(x, 0.0, lax.add, (1, 2, 3), (1, 2, 1), ((0, 0), (1, 1), (0, 2))))
emit("WindowMax", lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 2), (1, 1, 2), "SAME"))
emit("WindowMin", lax.reduce_window(x, jnp.inf, lax.min, (2, 2, 2), (1, 2, 2), "VALID"))
emit("WindowMaxDilated",
     lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2), (1, 1, 1), ((0, 0), (1, 0), (0, 1)),
                       base_dilation=(1, 2, 1), window_dilation=(1, 1, 2)))
emit("WindowSumInit", lax.reduce_window(x, 1.5, lax.add, (1, 2, 2), (1, 1, 1), ((0, 0), (1, 1), (1, 0))))
emit("WindowMaxInit", lax.reduce_window(x, 0.25, lax.max, (1, 2, 3), (1, 2, 1), "SAME"))
emit("WindowSumInt",
     lax.reduce_window(jnp.arange(30, dtype=jnp.int32).reshape(5, 6), 0, lax.add, (2, 3), (1, 2), "VALID"))
# gradients of windowed max and sum (sum of the outputs times a fixed cotangent)
def wmax(x):
    y = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 2), (1, 1, 2), "SAME")
    return jnp.sum(y * inp(y.shape, 0.9))
emit("WindowMaxGrad", jax.grad(wmax)(x))
def wsum(x):
    y = lax.reduce_window(x, 0.0, lax.add, (1, 2, 3), (1, 2, 1), ((0, 0), (1, 1), (0, 2)),
                          base_dilation=(1, 2, 1), window_dilation=(1, 1, 2))
    return jnp.sum(y * inp(y.shape, 0.8))
emit("WindowSumGrad", jax.grad(wsum)(x))
# ---- pooling (flax's pool over reduce_window) ----
imgs = inp((2, 5, 5, 3), 0.4)
emit("MaxPool", lax.reduce_window(imgs, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))
avg = lax.reduce_window(imgs, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
ones = lax.reduce_window(jnp.ones((2, 5, 5, 1)), 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
emit("AvgPoolSame", avg / 9.0)
emit("AvgPoolSameExcludePad", avg / ones)
# ---- cumlogsumexp ----
c = inp((3, 5), 0.2) * 30.0
emit("Cumlogsumexp", lax.cumlogsumexp(c, axis=1))
emit("CumlogsumexpReverse", lax.cumlogsumexp(c, axis=0, reverse=True))
emit("CumlogsumexpGrad", jax.grad(lambda v: jnp.sum(lax.cumlogsumexp(v, axis=1) * inp((3, 5), 0.6)))(c))
