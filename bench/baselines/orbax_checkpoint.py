"""Orbax's side of bench/checkpoint.cpp: save and restore the same state (4 float32 arrays
of rows x 4096, rows split over 2 devices, random floats in [1, 2) as tessel's run writes:
Orbax compresses, so constant arrays would cost it next to nothing) with
orbax.checkpoint.StandardCheckpointer, timed to the end of the save (wait_until_finished:
the commit) and, like tessel's commit, the fsync of every file it wrote.

Prints `name value unit` lines (best of --repeats):
  orbax.save_seconds          save + wait_until_finished
  orbax.save_fsync_seconds    the same plus fsync of its files (durable, as tessel's save)
  orbax.restore_seconds       restore onto the same shardings, until the arrays are ready

Usage: orbax_checkpoint.py --mib 1024 --dir DIR [--devices 2] [--repeats 3]
"""
import argparse
import os
import shutil
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mib", type=int, default=1024)
parser.add_argument("--dir", required=True)
parser.add_argument("--devices", type=int, default=2)
parser.add_argument("--repeats", type=int, default=3)
args = parser.parse_args()
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           f" --xla_force_host_platform_device_count={args.devices}")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

rows = args.mib * 1024 * 1024 // 4 // 4096 // 4
mesh = Mesh(np.array(jax.devices()[:args.devices]), ("x",))
split = NamedSharding(mesh, P("x", None))
state = [jax.device_put(jax.random.uniform(jax.random.key(i), (rows, 4096), jnp.float32, 1.0, 2.0), split)
         for i in range(4)]
for a in state:
    a.block_until_ready()
root = os.path.abspath(args.dir)
os.makedirs(root, exist_ok=True)
checkpointer = ocp.StandardCheckpointer()


def fsync_tree(path):
    for folder, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        fd = os.open(folder, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)


def save(durable):
    path = os.path.join(root, "state")
    shutil.rmtree(path, ignore_errors=True)
    os.sync()  # start from clean page-cache writeback, as each tessel save does
    t0 = time.perf_counter()
    checkpointer.save(path, state)
    checkpointer.wait_until_finished()
    if durable:
        fsync_tree(path)
    return time.perf_counter() - t0


save(False)  # warm up (imports, tensorstore's threads)
plain = min(save(False) for _ in range(args.repeats))
durable = min(save(True) for _ in range(args.repeats))
target = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding) for a in state]


def restore():
    t0 = time.perf_counter()
    back = checkpointer.restore(os.path.join(root, "state"), target)
    for a in back:
        a.block_until_ready()
    return time.perf_counter() - t0, back


best_restore = 1e30
for _ in range(args.repeats):
    seconds, back = restore()
    best_restore = min(best_restore, seconds)
if not all(bool((b == a).all()) for a, b in zip(state, back)):
    sys.exit("orbax_checkpoint: restored values differ")
checkpointer.close()
shutil.rmtree(root, ignore_errors=True)
print(f"orbax.state_gb {rows * 4096 * 4 * 4 / 1e9:.4g} GB")
print(f"orbax.save_seconds {plain:.4g} s")
print(f"orbax.save_fsync_seconds {durable:.4g} s")
print(f"orbax.restore_seconds {best_restore:.4g} s")
