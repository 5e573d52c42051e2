"""The custom_partitioning seed (jax.experimental.custom_partitioning's my_fft) on tessel:
an FFT along the last axis that keeps the sharding of the batch axes and only gathers the
last axis when it is the sharded one. Names follow the seed; `pjit` is tessel.jit and the
HLO check reads tessel's compiled program text. tessel's own fft already keeps the batch
sharding, so (unlike the seed's jnp.fft.fft) plain fft does not gather a 2-D input either.

Run: TESSEL_CPU_DEVICES=8 python custom_partitioning_fft.py [--rows R --cols C --n1d N]
Prints "custom_partitioning seed: ok" when both versions agree and gather exactly where
the seed says."""

import argparse
import re

import numpy as np

import tessel as jax
from tessel import jit as pjit
from tessel.sharding import Mesh, NamedSharding
from tessel.sharding import PartitionSpec as P
from tessel import custom_partitioning
from tessel.fft import fft  # jax.numpy.fft

# Pattern to detect all-gather or dynamic-slice in the generated program
_PATTERN = "(dynamic_slice|all_gather)"


# For an N-D input, keeps sharding along the first N-1 dimensions
# but replicate along the last dimension
def supported_sharding(sharding, shape):
    rank = len(shape.shape)
    max_shared_dims = min(len(sharding.spec), rank - 1)
    names = tuple(sharding.spec[:max_shared_dims]) + tuple(None for _ in range(rank - max_shared_dims))
    return NamedSharding(sharding.mesh, P(*names))


def partition(mesh, arg_shapes, result_shape):
    result_shardings = jax.tree_util.tree_map(lambda x: x.sharding, result_shape)  # noqa: F841 (as in the seed)
    arg_shardings = jax.tree_util.tree_map(lambda x: x.sharding, arg_shapes)
    return mesh, fft, supported_sharding(arg_shardings[0], arg_shapes[0]), \
        (supported_sharding(arg_shardings[0], arg_shapes[0]),)


def infer_sharding_from_operands(mesh, arg_shapes, result_shape):
    arg_shardings = jax.tree_util.tree_map(lambda x: x.sharding, arg_shapes)
    return supported_sharding(arg_shardings[0], arg_shapes[0])


@custom_partitioning
def my_fft(x):
    return fft(x)


my_fft.def_partition(
    infer_sharding_from_operands=infer_sharding_from_operands,
    partition=partition)


def run(x):
    """The seed's block for one input: both versions' values and whether they gather."""
    y = pjit(lambda x: x, in_shardings=None, out_shardings=P('x'))(x)
    pjit_my_fft = pjit(my_fft, in_shardings=P('x'), out_shardings=P('x'))
    pjit_fft = pjit(fft, in_shardings=P('x'), out_shardings=P('x'))
    a, b = pjit_my_fft(y), pjit_fft(y)
    print("# my_fft")
    print(a)
    print("# tessel.numpy.fft.fft")
    print(b)
    mine = re.search(_PATTERN, pjit_my_fft.lower(x).compile().as_text()) is not None
    plain = re.search(_PATTERN, pjit_fft.lower(x).compile().as_text()) is not None
    same = np.allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-3 * float(np.abs(np.asarray(b)).max()))
    print(f"result sharding: {a.sharding}")
    print(f"values equal: {'yes' if same else 'NO'}; all_gather or dynamic_slice in my_fft: "
          f"{'yes' if mine else 'no'}, in fft: {'yes' if plain else 'no'}\n")
    return same, mine, plain, a.sharding


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=32 * 1024)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--n1d", type=int, default=32 * 1024 * 1024)
    args = ap.parse_args()
    ok = True
    with Mesh(np.array(jax.devices()), ('x',)) as mesh:
        x = np.asarray(np.random.randn(args.rows, args.cols), dtype=np.complex64)
        same, mine, plain, sharding = run(x)
        # dynamic-slice or all-gather are not present in the program for my_fft, because x is a 2D array
        ok &= same and not mine and not plain and sharding == NamedSharding(mesh, P('x'))
        x = np.asarray(np.random.randn(args.n1d), dtype=np.complex64)
        same, mine, plain, _ = run(x)
        # dynamic-slice or all-gather are present for my_fft, because x is a 1D array
        ok &= same and mine and plain
    print("custom_partitioning seed: " + ("ok" if ok else "FAILED"))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
