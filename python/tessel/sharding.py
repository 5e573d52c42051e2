"""Devices, meshes and shardings (jax.sharding): `Mesh`, `PartitionSpec` (`P`),
`NamedSharding`, `SingleDeviceSharding`, plus `device_put`, `with_sharding_constraint`,
`shard_map` and the device queries. The layouts themselves are tessel's C++ ones
(tessel/sharding.h); a `with Mesh(...)` block lets bare PartitionSpecs stand for
NamedShardings over that mesh, as in JAX."""

import threading

from ._tessel import Array
from ._tessel import sharding_functions as _s
from .tree_util import broadcast_prefix, tree_flatten, tree_unflatten

Device = _s.Device
Mesh = _s.Mesh

__all__ = ["Mesh", "PartitionSpec", "P", "NamedSharding", "SingleDeviceSharding", "Sharding", "Device", "make_mesh",
           "device_put", "with_sharding_constraint", "shard_map", "devices", "local_devices", "device_count",
           "local_device_count", "process_index", "process_count"]


class PartitionSpec(tuple):
    """How each dimension of an array is split over mesh axes (jax.sharding.PartitionSpec):
    `P('x', None)` splits dimension 0 over axis x and keeps dimension 1 whole; an entry may
    also be a tuple of axis names. Dimensions beyond the spec are whole."""

    def __new__(cls, *entries):
        for e in entries:
            ok = e is None or isinstance(e, str) or (isinstance(e, tuple) and all(isinstance(n, str) for n in e))
            if not ok:
                raise TypeError(f"PartitionSpec: entry {e!r} is not a mesh axis name; give None, an axis name "
                                f"('x') or a tuple of names (('x', 'y'))")
        return super().__new__(cls, entries)

    def __repr__(self):
        return "PartitionSpec(" + ", ".join(repr(e) for e in self) + ")"

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


P = PartitionSpec


class Sharding:
    """Base of tessel's shardings (jax.sharding.Sharding); `_impl` is the C++ sharding."""

    __slots__ = ("_impl",)

    @property
    def device_set(self):
        """The devices holding pieces."""
        return set(self._impl.device_set)

    @property
    def is_fully_replicated(self):
        return self._impl.is_fully_replicated

    def shard_shape(self, global_shape):
        """The shape of the piece on one device."""
        return self._impl.shard_shape(list(global_shape))

    def devices_indices_map(self, global_shape):
        """{device: tuple of slices}: the part of the global array each device holds."""
        return self._impl.devices_indices_map(list(global_shape))

    def __eq__(self, other):
        return isinstance(other, Sharding) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)

    def __repr__(self):
        return repr(self._impl)


class NamedSharding(Sharding):
    """A sharding over a mesh by partition spec (jax.sharding.NamedSharding)."""

    __slots__ = ("mesh", "spec")

    def __init__(self, mesh, spec):
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec) if isinstance(spec, (tuple, list)) else PartitionSpec() if spec is None else spec
        self._impl = _s.named_sharding(mesh, spec)
        self.mesh = mesh
        self.spec = spec

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


class SingleDeviceSharding(Sharding):
    """The whole array on one device (jax.sharding.SingleDeviceSharding)."""

    __slots__ = ("device",)

    def __init__(self, device):
        self._impl = _s.single_device_sharding(device)
        self.device = device

    def __repr__(self):
        return f"SingleDeviceSharding(device={self.device!r})"


def _wrap(impl):
    """The Python sharding of a C++ one (None for an unset one)."""
    if not impl.valid:
        return None
    if impl.is_single_device:
        out = SingleDeviceSharding.__new__(SingleDeviceSharding)
        out.device = impl.device_set[0]
    else:
        out = NamedSharding.__new__(NamedSharding)
        out.mesh = impl.mesh
        out.spec = PartitionSpec(*impl.spec)
    out._impl = impl
    return out


# ---- the mesh context (`with Mesh(...)`): bare PartitionSpecs name shardings over it ----

class _MeshContext(threading.local):
    """Per thread: the meshes of the enclosing `with mesh:` blocks, innermost last (jit keys
    its cache on the innermost one)."""

    def __init__(self):
        self.meshes = []


_context = _MeshContext()


def _mesh_stack():
    return _context.meshes


def _enter(self):
    _mesh_stack().append(self)
    return self


def _exit(self, *exc):
    _mesh_stack().pop()
    return False


Mesh.__enter__ = _enter
Mesh.__exit__ = _exit


def _current_mesh(op):
    stack = _mesh_stack()
    if not stack:
        raise ValueError(f"{op}: a PartitionSpec needs a mesh; pass NamedSharding(mesh, spec) or call inside "
                         f"`with Mesh(devices, axis_names):`")
    return stack[-1]


def _as_sharding(s, op):
    """A C++ sharding from a Sharding, a device, or a PartitionSpec (over the context mesh)."""
    if isinstance(s, Sharding):
        return s._impl
    if isinstance(s, Device):
        return _s.single_device_sharding(s)
    if isinstance(s, PartitionSpec):
        return _s.named_sharding(_current_mesh(op), s)
    raise TypeError(f"{op}: {s!r} is not a sharding; pass a NamedSharding, a SingleDeviceSharding, a device or "
                    f"(inside `with mesh:`) a PartitionSpec")


def _is_spec_leaf(x):
    return x is None or isinstance(x, (Sharding, PartitionSpec, Device))


def _per_leaf(prefix, tree, what, op):
    """One entry of `prefix` (a tree prefix of `tree` whose leaves are shardings, specs or
    None) per leaf of `tree`. Other non-container entries pass as leaves and fail in
    _as_sharding with a TypeError."""
    return broadcast_prefix(
        prefix, tree, lambda p: _is_spec_leaf(p) or not isinstance(p, (tuple, list, dict)), lambda p, t: ValueError(
            f"{op}: {what} {prefix!r} does not match the structure of the values (at {p!r} against "
            f"{type(t).__name__}); give one entry per value, or a tree prefix of them"))


def _map_leaves(fn, x, shardings, what, op):
    """fn(leaf, sharding) per leaf of `x` (leaves whose entry is None are only made Arrays)."""
    leaves, tree = tree_flatten(x)
    per = _per_leaf(shardings, x, what, op)
    arrays = [v if isinstance(v, Array) else Array(v) for v in leaves]
    return tree_unflatten(tree, [v if s is None else fn(v, _as_sharding(s, op)) for v, s in zip(arrays, per)])


def device_put(x, device=None):
    """Places the arrays of pytree `x` by `device` (jax.device_put): a Sharding, a device, a
    PartitionSpec inside `with mesh:`, or a tree prefix of them; None keeps the layout
    (NumPy values become Arrays on the default device). Under a transformation it is
    `with_sharding_constraint`."""
    return _map_leaves(_s.device_put, x, device, "the sharding", "device_put")


def with_sharding_constraint(x, shardings):
    """Requires the arrays of pytree `x` to be laid out by `shardings` at this point of a
    traced function (jax.lax.with_sharding_constraint); on concrete arrays, device_put."""
    return _map_leaves(_s.with_sharding_constraint, x, shardings, "shardings", "with_sharding_constraint")


def make_mesh(axis_shapes, axis_names, devices=None):
    """A mesh of `axis_shapes` over `devices` (default: the first of `devices()`), jax.make_mesh."""
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    shapes = (axis_shapes,) if isinstance(axis_shapes, int) else tuple(axis_shapes)
    flat = [] if devices is None else list(getattr(devices, "flat", devices))
    return _s.make_mesh(list(shapes), list(names), flat)


def shard_map(f, mesh=None, in_specs=None, out_specs=None, check_rep=None, check_vma=None, auto=frozenset()):
    """Maps `f` over the shards of its arguments (jax.shard_map): argument i reaches `f` as
    each device's piece, its dimensions divided by the mesh axes its spec names; `f`
    returns per-device pieces that `out_specs` assemble. `in_specs`: one PartitionSpec per
    argument (or a tree prefix of the arguments; one spec alone applies to all);
    `out_specs`: a tree prefix of the result (one spec for every result, one per
    element of a returned tuple or dict, ...). Inside `f`, tessel.lax collectives (psum, all_gather, ppermute, ...) name mesh
    axes. Differentiable, batchable and jittable. `check_rep`/`check_vma` are accepted and
    ignored (tessel does not track replication)."""
    if in_specs is None or out_specs is None:
        raise TypeError("shard_map: in_specs and out_specs are required (PartitionSpecs, one per argument / result)")
    if auto:
        raise NotImplementedError("shard_map: auto axes are not supported; name every mesh axis in the specs or "
                                  "leave it out (replicated)")

    def mapped(*args):
        m = mesh if mesh is not None else _current_mesh("shard_map")
        leaves, tree = tree_flatten(args)
        specs = in_specs if _is_spec_leaf(in_specs) else tuple(in_specs)
        per_leaf = _per_leaf(specs, args, "in_specs", "shard_map")
        boxes = {}

        def flat(pieces):
            out = f(*tree_unflatten(tree, pieces))
            out_leaves, boxes["out"] = tree_flatten(out)
            # out_specs is a tree prefix of the result (as in JAX): one spec per result leaf.
            boxes["specs"] = [P() if s is None else s for s in _per_leaf(out_specs, out, "out_specs", "shard_map")]
            return out_leaves

        outs = _s.shard_map(flat, m, [v if isinstance(v, Array) else Array(v) for v in leaves],
                            [P() if s is None else s for s in per_leaf], lambda: boxes["specs"])
        return tree_unflatten(boxes["out"], outs)

    mapped.__name__ = getattr(f, "__name__", "shard_map")
    mapped.__wrapped__ = f
    return mapped


def devices():
    """All devices of the job (`TESSEL_CPU_DEVICES` virtual CPU devices per process)."""
    return _s.devices()


def local_devices():
    """The devices of this process."""
    return _s.local_devices()


def device_count():
    return _s.device_count()


def local_device_count():
    return _s.local_device_count()


def process_index():
    """This process's index in the job (0 alone)."""
    return _s.process_index()


def process_count():
    """Number of processes in the job (1 alone)."""
    return _s.process_count()


# ---- Array's layout queries ----

Array.sharding = property(lambda self: _wrap(_s.sharding_of(self)), doc="How the array is laid out (jax.Array.sharding).")
Array.devices = lambda self: set(_s.array_devices(self))


class Shard:
    """One device's piece of an array (jax.Shard): `device`, `index` (slices), `data`."""

    __slots__ = ("device", "index", "data")

    def __init__(self, device, index, data):
        self.device, self.index, self.data = device, index, data

    def __repr__(self):
        return f"Shard(device={self.device!r}, index={self.index!r}, data={self.data!r})"


Array.addressable_shards = property(lambda self: [Shard(*t) for t in _s.addressable_shards(self)],
                                    doc="The pieces held by this process's devices.")
