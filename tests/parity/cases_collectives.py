"""Parity cases of the collectives (jax.lax.psum, all_gather, ppermute, ...), axis_index,
axis_size and with_sharding_constraint, on a mesh of 8 virtual CPU devices with one axis
"x": each case is a fixed per-device function under shard_map (JAX: jax.shard_map with the
same in_specs and out_specs), so the harness runs it eagerly, under jit, under vmap and
through jvp and vjp like any other function. tests/parity/cases_collectives.cpp builds the
same shard_maps; the C++ test runs with TESSEL_CPU_DEVICES=8.

pbroadcast (its lowering is GPU-only and its vmap rule fails in JAX 0.10.2) and
ragged_all_to_all (XLA:CPU has no ragged-all-to-all) cannot run on JAX's CPU backend, so
they have no cases here; scripts/api_coverage's NO_PARITY says so on the status page.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P

from parity_lib import FLOATS, SUM_TOL, rand

DEVICES = 8
# jax_num_cpu_devices must be set before JAX starts its CPU backend (generate.py imports the
# case modules before it runs any case).
jax.config.update("jax_num_cpu_devices", DEVICES)

_MESH = []


def mesh():
    if not _MESH:
        _MESH.append(jax.make_mesh((DEVICES,), ("x",), axis_types=(jax.sharding.AxisType.Auto,)))
    return _MESH[0]


def spec(s):
    """The cases' spec strings: "x" splits dimension 0 over the axis, "-" replicates."""
    return P("x") if s == "x" else P()


def shard_mapped(body, in_spec, out_spec):
    return jax.shard_map(body, mesh=mesh(), in_specs=spec(in_spec), out_specs=spec(out_spec))


RING = [(i, (i + 1) % DEVICES) for i in range(DEVICES)]
PARTIAL = [(0, 3), (3, 5), (5, 0), (6, 7)]  # devices 1, 2, 4 and 6 receive nothing: zeros
SHUFFLE = [3, 1, 4, 0, 7, 5, 2, 6]

# name -> (per-device body, in spec, out spec, global input shape); the C++ entries define the
# same bodies under the same names.
BODIES = {
    "psum": (lambda p: lax.psum(p, "x"), "x", "-", (16, 3)),
    "pmean": (lambda p: lax.pmean(p, "x"), "x", "-", (16, 3)),
    "pmax": (lambda p: lax.pmax(p, "x"), "x", "-", (16, 3)),
    "pmin": (lambda p: lax.pmin(p, "x"), "x", "-", (16, 3)),
    "psum_of_sum": (lambda p: lax.psum(jnp.sum(p * p), "x"), "x", "-", (16, 3)),
    "all_gather": (lambda p: lax.all_gather(p, "x"), "x", "x", (16, 3)),
    "all_gather_tiled_axis1": (lambda p: lax.all_gather(p, "x", axis=1, tiled=True), "x", "x", (16, 3)),
    "all_to_all_tiled": (lambda p: lax.all_to_all(p, "x", 0, 0, tiled=True), "x", "x", (64, 3)),
    "all_to_all_untiled": (lambda p: lax.all_to_all(p[0], "x", 1, 0)[None], "x", "x", (8, 3, 8)),
    "ppermute_ring": (lambda p: lax.ppermute(p, "x", RING), "x", "x", (16, 3)),
    "ppermute_partial": (lambda p: lax.ppermute(p, "x", PARTIAL), "x", "x", (16, 3)),
    "psum_scatter_tiled": (lambda p: lax.psum_scatter(p, "x", scatter_dimension=0, tiled=True), "x", "x", (128, 3)),
    "psum_scatter_untiled": (lambda p: lax.psum_scatter(p[0], "x", scatter_dimension=0)[None], "x", "x",
                             (8, 8, 3)),
    "axis_index": (lambda p: p * lax.axis_index("x").astype(p.dtype) + lax.axis_index("x").astype(p.dtype),
                   "x", "x", (16, 3)),
    "axis_size": (lambda p: p * lax.axis_size("x"), "x", "x", (16, 3)),
    "pshuffle": (lambda p: lax.pshuffle(p, "x", SHUFFLE), "x", "x", (16, 3)),
    "pswapaxes": (lambda p: lax.pswapaxes(p, "x", 1), "x", "x", (8, 8, 3)),
    "pcast": (lambda p: lax.pcast(p, "x", to="varying") * 2.0, "-", "x", (2, 3)),
}
# The function key (the tessel function) each body checks.
KEYS = {"psum_of_sum": "psum", "all_gather_tiled_axis1": "all_gather", "all_to_all_tiled": "all_to_all",
        "all_to_all_untiled": "all_to_all", "ppermute_ring": "ppermute", "ppermute_partial": "ppermute",
        "psum_scatter_tiled": "psum_scatter", "psum_scatter_untiled": "psum_scatter", "axis_size": "lax.axis_size",
        "pshuffle": "lax.pshuffle", "pswapaxes": "lax.pswapaxes", "pcast": "lax.pcast"}
# Values only: JAX defines no derivative for pmax/pmin, and its vjp of an untiled all_to_all
# whose split and concat axes differ fails in JAX 0.10.2 ("Expected cotangent type
# float32[1,3,8] but got float32[3,1,8]"); the tiled case checks all_to_all's vjp.
NO_GRAD = {"pmax", "pmin", "all_to_all_untiled"}


def collectives(s):
    for name, (body, in_spec, out_spec, shape) in BODIES.items():
        for k, dt in enumerate(FLOATS):
            x = rand(shape, dt, 10 + k)
            if name in ("pmax", "pmin"):
                x.reshape(-1)[5] = x.reshape(-1)[7] = 3.0  # ties
            s.case(KEYS.get(name, name), lambda v, body: shard_mapped(BODIES[body][0], BODIES[body][1],
                                                                      BODIES[body][2])(v),
                   [x], {"body": name}, tol=SUM_TOL, grad=name not in NO_GRAD, name=f"{name}_{dt}")
    s.case("psum", lambda v, body: shard_mapped(BODIES[body][0], "x", "-")(v),
           [np.arange(48, dtype=np.int32).reshape(16, 3)], {"body": "psum"}, name="psum_int32")


def sharding_constraints(s):
    for k, dt in enumerate(FLOATS):
        for sp in ["x", "-"]:
            s.case("with_sharding_constraint",
                   lambda v, spec_: jax.jit(lambda u: lax.with_sharding_constraint(
                       jnp.sin(u), NamedSharding(mesh(), spec(spec_))) * 2.0)(v),
                   [rand((16, 3), dt, 20 + k)], {"spec_": sp}, tol={"float32": (1e-5, 1e-30), "float64": (5e-14, 1e-300)},
                   grad=True, name=f"with_sharding_constraint_{dt}_{'x' if sp == 'x' else 'replicated'}")


def cases(s):
    collectives(s)
    sharding_constraints(s)
