"""JAX's figures for bench/transformer.cpp: one pre-LayerNorm transformer encoder block
(multi-head self-attention, then an MLP 4x wide with tanh-approximated gelu, each behind a
layer norm and a residual connection; loss = mean of squares of the block's output), written
in plain jax.numpy as bench/transformer.cpp writes it in tessel, on the same parameters and
inputs (the integer hash in `hashed_uniform`, computed exactly on both sides).

Usage: jax_transformer.py [ROUNDS]. Prints `name value [unit]` lines:
  loss, grad_sq, small_loss                  values, for bench/transformer.cpp to compare
  fwd, fwdbwd                                batch 8, sequence 256, model 512 (seconds)
  small_fwd, small_fwdbwd                    batch 4, sequence 64, model 128 (seconds)
  {gelu,softmax,layernorm,attention,mlp}_{fwd,fwdbwd}  each stage alone on its shape (seconds)
  <stage>_sq                                 mean of squares of the stage's output (a value)
Each time is the best of ROUNDS rounds after a compiling call (jax_linalg.best_seconds).
"""
import math
import sys

import numpy as np

import jax
import jax.numpy as jnp

from jax_linalg import best_seconds

HEADS, EPS = 8, 1e-5


def hashed_uniform(n, salt, bound):
    """float32[n] in [-bound, bound): a 32-bit integer hash of (index, salt), as in
    bench/transformer.cpp (exact integer arithmetic, then one rounding to float32)."""
    h = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(salt * 97531)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x45D9F3B)) & np.uint64(0xFFFFFFFF)
    h ^= h >> np.uint64(16)
    u = h.astype(np.float64) / 4294967296.0
    return ((2.0 * u - 1.0) * bound).astype(np.float32)


def make_block(batch, seq, model):
    """(params, x): the block's parameters (a dict) and input f32[batch, seq, model]."""
    shapes = [("ln1_g", (model,)), ("ln1_b", (model,)), ("wq", (model, model)), ("wk", (model, model)),
              ("wv", (model, model)), ("wo", (model, model)), ("ln2_g", (model,)), ("ln2_b", (model,)),
              ("w1", (model, 4 * model)), ("w2", (4 * model, model)), ("bq", (model,)), ("bk", (model,)),
              ("bv", (model,)), ("bo", (model,)), ("b1", (4 * model,)), ("b2", (model,))]
    params = {}
    for salt, (name, shape) in enumerate(shapes, start=1):
        n = int(np.prod(shape))
        if name.startswith("w"):
            v = hashed_uniform(n, salt, math.sqrt(3.0 / shape[0]))
        elif name.endswith("_g"):
            v = (1.0 + hashed_uniform(n, salt, 0.1).astype(np.float64)).astype(np.float32)
        else:
            v = hashed_uniform(n, salt, 0.1)
        params[name] = jnp.asarray(v.reshape(shape))
    x = jnp.asarray(hashed_uniform(batch * seq * model, 0, math.sqrt(3.0)).reshape(batch, seq, model))
    return params, x


def gelu(x):
    return 0.5 * x * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))


def softmax(s):
    e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def layer_norm(x, g, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    c = x - mu
    var = jnp.mean(c * c, axis=-1, keepdims=True)
    return c * jax.lax.rsqrt(var + EPS) * g + b


def heads(t):
    b, s, d = t.shape
    return jnp.transpose(t.reshape(b, s, HEADS, d // HEADS), (0, 2, 1, 3))


def attention(h, wq, wk, wv, wo, bq, bk, bv, bo):
    """The attention sublayer on normalized input h (the stage `attention`)."""
    b, s, d = h.shape
    q, k, v = (heads(h @ w + bias) for w, bias in ((wq, bq), (wk, bk), (wv, bv)))
    att = softmax((q @ jnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(d // HEADS)))
    o = jnp.transpose(att @ v, (0, 2, 1, 3)).reshape(b, s, d)
    return o @ wo + bo


def mlp(h, w1, b1, w2, b2):
    """The MLP sublayer on normalized input h (the stage `mlp`)."""
    return gelu(h @ w1 + b1) @ w2 + b2


def block(p, x):
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    x1 = x + attention(h, *(p[n] for n in ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")))
    h2 = layer_norm(x1, p["ln2_g"], p["ln2_b"])
    return x1 + mlp(h2, p["w1"], p["b1"], p["w2"], p["b2"])


def loss(p, x):
    y = block(p, x)
    return jnp.mean(y * y)


def stage_loss(f):
    """sum(f(args) * ct): its gradient is f's backward pass on the cotangent ct."""
    return lambda ct, *args: jnp.sum(f(*args) * ct)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    fwd, vg = jax.jit(loss), jax.jit(jax.value_and_grad(loss))

    params, x = make_block(8, 256, 512)
    value, grads = vg(params, x)
    print(f"loss {float(fwd(params, x)):.9g}", flush=True)
    print(f"grad_sq {float(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(grads))):.9g}", flush=True)
    print(f"fwd {best_seconds(fwd, (params, x), 2, rounds):.6g} s", flush=True)
    print(f"fwdbwd {best_seconds(vg, (params, x), 1, rounds):.6g} s", flush=True)

    params, x = make_block(4, 64, 128)
    print(f"small_loss {float(fwd(params, x)):.9g}", flush=True)
    print(f"small_fwd {best_seconds(fwd, (params, x), 20, rounds):.6g} s", flush=True)
    print(f"small_fwdbwd {best_seconds(vg, (params, x), 20, rounds):.6g} s", flush=True)

    unit, w512, w2048 = math.sqrt(3.0), math.sqrt(3.0 / 512), math.sqrt(3.0 / 2048)
    stages = {  # name: (function, argument shapes, argument bounds (2 where missing))
        "gelu": (gelu, [(8, 256, 2048)], []),
        "softmax": (softmax, [(8, 8, 256, 256)], []),
        "layernorm": (layer_norm, [(8, 256, 512), (512,), (512,)], []),
        "attention": (attention, [(8, 256, 512)] + [(512, 512)] * 4 + [(512,)] * 4,
                      [unit] + [w512] * 4 + [0.1] * 4),
        "mlp": (mlp, [(8, 256, 512), (512, 2048), (2048,), (2048, 512), (512,)], [unit, w512, 0.1, w2048, 0.1]),
    }
    for name, (f, shapes, bounds) in stages.items():
        args = [jnp.asarray(hashed_uniform(int(np.prod(s)), 100 + i, bounds[i] if i < len(bounds) else 2.0).reshape(s))
                for i, s in enumerate(shapes)]
        ct = jnp.asarray(hashed_uniform(int(np.prod(shapes[0])), 99, 1.0).reshape(shapes[0]))
        argnums = tuple(range(1, len(shapes) + 1))
        print(f"{name}_sq {float(jnp.mean(jnp.square(jax.jit(f)(*args)))):.9g}", flush=True)
        print(f"{name}_fwd {best_seconds(jax.jit(f), args, 3, rounds):.6g} s", flush=True)
        g = jax.jit(jax.grad(stage_loss(f), argnums=argnums))
        print(f"{name}_fwdbwd {best_seconds(g, [ct] + args, 3, rounds):.6g} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
