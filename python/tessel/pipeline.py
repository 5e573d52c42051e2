"""MPMD pipeline parallelism (JaxPP, seed jaxpp_design.md): a training step split into stages
at `enter_stage` markers, each stage's forward and backward on one worker of a
`RemoteMpmdMesh`, run over microbatches in a schedule's order by instruction streams the
driver sends.

    tessel.distributed.initialize(mode="single_controller")   # mpirun -np 1+W; rank 0 drives
    mesh = RemoteMpmdMesh(4, (1,), ("data",))
    step = pipelined(train_step, mesh, num_microbatches=8, batch_argnums=(1,), schedule=OneF1B())
    state, loss = step(state, batch)      # ArrayRefs on the workers; reading one fetches it

The step is traced once per signature on the driver (a Python function like any other: no
Python runs on the workers). Its outputs are averaged over the microbatches, so a step that
returns a mean loss, its gradients, or SGD-updated parameters gives the full-batch result.
"""

from . import _tessel
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["RemoteMpmdMesh", "enter_stage", "pipelined", "Pipelined", "ArrayRef", "GPipe", "OneF1B", "Eager1F1B",
           "Interleaved1F1B", "ZeroBubbleH1"]

_native = _tessel.pipeline

RemoteMpmdMesh = _native.RemoteMpmdMesh

ArrayRef = _tessel.Array
"""A driver's handle to an array on a worker: a tessel Array whose pieces live there."""


class _Schedule:
    __slots__ = ()
    stages_per_worker = 1

    def __repr__(self):
        return f"{type(self).__name__}()"


class GPipe(_Schedule):
    """All forwards, then all backwards."""


class OneF1B(_Schedule):
    """One forward, one backward after a warm-up: at most (stages - stage) microbatches in flight."""


class Eager1F1B(_Schedule):
    """1F1B with one more warm-up forward, so sends overlap the next forward."""


class ZeroBubbleH1(_Schedule):
    """The backward split into input and weight gradients, the latter deferred into the bubbles."""


class Interleaved1F1B(_Schedule):
    """Several stages per worker, round-robin (Megatron's interleaved 1F1B)."""

    __slots__ = ("stages_per_worker",)

    def __init__(self, stages_per_worker=2):
        self.stages_per_worker = int(stages_per_worker)

    def __repr__(self):
        return f"Interleaved1F1B(stages_per_worker={self.stages_per_worker})"


def enter_stage(x):
    """Ends one pipeline stage and begins the next: the identity on `x` (a pytree), recorded as
    one marker; grad of a staged function is staged too. Outside a pipeline it only copies."""
    leaves, treedef = tree_flatten(x)
    return tree_unflatten(treedef, _native.enter_stage(leaves))


class Pipelined:
    """A step pipelined over the workers of a RemoteMpmdMesh (see `pipelined`)."""

    def __init__(self, step, mesh, *, num_microbatches, batch_argnums, donate_argnums, schedule,
                 overlap_reductions):
        if not isinstance(schedule, _Schedule):
            raise TypeError(f"pipelined: schedule must be GPipe(), OneF1B(), Eager1F1B(), Interleaved1F1B(n) or "
                            f"ZeroBubbleH1(); got {schedule!r}")
        self._step = step
        self._state = _native.make_pipeline(mesh, int(num_microbatches), [int(a) for a in batch_argnums],
                                            [int(a) for a in donate_argnums], type(schedule).__name__,
                                            schedule.stages_per_worker, bool(overlap_reductions))

    def __call__(self, *args):
        leaves, leaf_args = [], []
        treedefs = []
        for k, a in enumerate(args):
            l, t = tree_flatten(a)
            leaves += l
            leaf_args += [k] * len(l)
            treedefs.append(t)

        def trace(tracers):
            it, rebuilt = iter(tracers), []
            for t in treedefs:
                rebuilt.append(tree_unflatten(t, [next(it) for _ in range(t.num_leaves)]))
            outs, out_tree = tree_flatten(self._step(*rebuilt))
            return outs, out_tree

        outs, out_tree = _native.call(self._state, trace, leaves, leaf_args, len(args))
        return tree_unflatten(out_tree, outs)

    def instructions(self):
        """Every worker's instruction stream for the signature called last."""
        return _native.instructions(self._state)


def pipelined(step, mesh, *, num_microbatches=1, batch_argnums=(), donate_argnums=(), schedule=None,
              overlap_reductions=True):
    """Pipelines `step` over the workers of `mesh`: traces it on one microbatch, slices it into
    stages at its enter_stage markers, checks the schedule (default OneF1B()) by simulating it,
    compiles every stage on its worker, and returns a callable whose calls return the step's
    outputs averaged over the microbatches, as ArrayRefs on the workers."""
    return Pipelined(step, mesh, num_microbatches=num_microbatches, batch_argnums=batch_argnums,
                     donate_argnums=donate_argnums, schedule=schedule if schedule is not None else OneF1B(),
                     overlap_reductions=overlap_reductions)
