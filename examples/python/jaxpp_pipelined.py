"""The JaxPP design seed's training step (jaxpp_design.md) on tessel.pipeline: a 4-layer MLP
whose loss marks a stage boundary after each hidden layer, pipelined over a RemoteMpmdMesh of
4 workers with 8 microbatches on the 1F1B schedule, its loss checked against the plain jitted
step every step. A single-controller job: mpirun -np 5 python jaxpp_pipelined.py (rank 0
drives, ranks 1-4 are the workers)."""
import numpy as np

import tessel as jax
import tessel.numpy as jnp
from tessel import pipeline as jaxpp

WORKERS, LAYERS, MICROBATCHES, BATCH, STEPS, LR = 4, 4, 8, 64, 5, 0.05
WIDTHS = [16, 32, 32, 32, 4]


def init_state(rng):
  return [{"w": jnp.asarray(rng.normal(size=(WIDTHS[i], WIDTHS[i + 1])) / np.sqrt(WIDTHS[i]), dtype=jnp.float32),
           "b": jnp.zeros(WIDTHS[i + 1])} for i in range(LAYERS)]


def make_batch(rng):
  x = rng.normal(size=(BATCH, WIDTHS[0])).astype(np.float32)
  a = (rng.normal(size=(WIDTHS[0], WIDTHS[-1])) / 4).astype(np.float32)
  return {"x": jnp.asarray(x), "y": jnp.asarray(np.sin(x @ a))}


def loss_fn(state, batch):
  h = batch["x"]
  for i, layer in enumerate(state):
    h = h @ layer["w"] + layer["b"]
    if i + 1 < LAYERS:
      h = jaxpp.enter_stage(jnp.tanh(h))  # the seed's stage boundary
  return jnp.mean((h - batch["y"]) ** 2)


def train_step(state, batch):
  loss, grads = jax.value_and_grad(loss_fn)(state, batch)
  return jax.tree_util.tree_map(lambda p, g: p - LR * g, state, grads), loss


jax.distributed.initialize(mode="single_controller")  # ranks 1..4 serve from here
mesh = jaxpp.RemoteMpmdMesh(WORKERS, (1, 1), ("data", "model"))
print(f"{mesh.num_workers} workers")
pipe_train_step = jaxpp.pipelined(train_step, mesh, num_microbatches=MICROBATCHES, batch_argnums=(1,),
                                  schedule=jaxpp.OneF1B())
rng = np.random.default_rng(0)
state = ref_state = init_state(rng)
plain = jax.jit(train_step)
ok = True
for step in range(STEPS):
  batch = make_batch(rng)
  state, loss = pipe_train_step(state, batch)  # ArrayRefs on the workers
  ref_state, ref_loss = plain(ref_state, batch)
  rel = abs(float(loss) - float(ref_loss)) / abs(float(ref_loss))
  ok &= rel < 1e-4
  print(f"step {step} loss {float(loss):.5f} vs jit(train_step) {float(ref_loss):.5f}")
print("workers in the instructions:", sorted({l.split()[1].rstrip(":") for l in pipe_train_step.instructions().splitlines()
                                              if l.startswith("worker")}))
print("jaxpp_pipelined:", "ok" if ok else "FAILED")
