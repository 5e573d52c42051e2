"""MPI communication with mpi4jax's signatures (tessel/comm.h): every function works
eagerly and inside jit, grad and vmap, and calls run in program order (an ordered effect),
so no tokens are threaded.

`comm=` takes a tessel communicator (`tessel.comm.world()`, `.split`, `.dup`) or an mpi4py
`MPI.Comm` (converted through its MPI handle; the program keeps it alive). `op=` takes
mpi4py's `MPI.SUM`, ... or tessel.comm's `SUM`, ... (names). `status=` takes a
`tessel.comm.Status` (filled each time the message arrives, under jit too) or, eagerly, an
mpi4py `MPI.Status`.

    import tessel, tessel.comm as comm
    tessel.distributed.initialize()          # under mpirun
    total = comm.allreduce(x, op=comm.SUM)   # mpi4jax.allreduce(x, op=MPI.SUM)
"""

from ._tessel import Array
from ._tessel import comm_functions as _c

__all__ = ["Comm", "Status", "world", "allreduce", "reduce", "scan", "bcast", "allgather", "gather", "scatter",
           "alltoall", "allgatherv", "gatherv", "alltoallv", "send", "recv", "sendrecv", "barrier", "ANY_SOURCE",
           "ANY_TAG", "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "BAND", "BOR", "LXOR", "BXOR"]

Comm = _c.Comm
Status = _c.Status
ANY_SOURCE = _c.ANY_SOURCE
ANY_TAG = _c.ANY_TAG
SUM, PROD, MIN, MAX, LAND, LOR, BAND, BOR, LXOR, BXOR = ("SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "BAND", "BOR",
                                                         "LXOR", "BXOR")
_OP_NAMES = (SUM, PROD, MIN, MAX, LAND, LOR, BAND, BOR, LXOR, BXOR)

_world = None
_adopted = {}  # id of an mpi4py communicator -> (the communicator, its tessel Comm)


def world():
    """MPI_COMM_WORLD as a tessel communicator."""
    global _world
    if _world is None:
        _world = _c.world()
    return _world


def _mpi4py():
    import sys
    return sys.modules.get("mpi4py.MPI")  # only when the program imported it: tessel never needs mpi4py


def _comm(comm, op_name):
    if comm is None:
        return world()
    if isinstance(comm, Comm):
        return comm
    MPI = _mpi4py()
    if MPI is not None and isinstance(comm, MPI.Comm):
        if comm == MPI.COMM_WORLD:
            return world()
        hit = _adopted.get(id(comm))
        if hit is None or hit[0] is not comm:
            hit = _adopted[id(comm)] = (comm, _c.adopt_address(MPI._addressof(comm)))
        return hit[1]
    raise TypeError(f"comm.{op_name}: comm={comm!r} is not a communicator; pass a tessel.comm.Comm, an mpi4py "
                    f"MPI.Comm, or None for the world")


def _op(op, op_name):
    if isinstance(op, str) and op.upper() in _OP_NAMES:
        return op.upper()
    MPI = _mpi4py()
    if MPI is not None and isinstance(op, MPI.Op):
        for name in _OP_NAMES:
            if op == getattr(MPI, name):
                return name
    raise ValueError(f"comm.{op_name}: op={op!r} is not a predefined reduction; use MPI.SUM, PROD, MIN, MAX, LAND, "
                     f"LOR, BAND, BOR, LXOR, BXOR (mpi4py) or tessel.comm's names")


def _arr(x):
    return x if isinstance(x, Array) else Array(x)


class _StatusCopy:
    """An mpi4py MPI.Status filled after an eager receive (it cannot be written under jit)."""

    def __init__(self, status, op_name, traced):
        self.target = status
        self.native = None
        if status is None:
            return
        if isinstance(status, Status):
            self.native = status
            return
        MPI = _mpi4py()
        if MPI is None or not isinstance(status, MPI.Status):
            raise TypeError(f"comm.{op_name}: status={status!r} is not a status; pass a tessel.comm.Status or an "
                            f"mpi4py MPI.Status")
        if traced:
            raise TypeError(f"comm.{op_name}: an mpi4py MPI.Status cannot be filled inside a traced function (jit, "
                            f"grad, vmap); pass a tessel.comm.Status, which is written each time the program runs")
        self.native = Status()

    def done(self):
        if self.target is not None and self.native is not self.target:
            self.target.Set_source(self.native.source)
            self.target.Set_tag(self.native.tag)


def allreduce(x, op, *, comm=None):
    """MPI_Allreduce: every process gets `op` over all processes' `x`."""
    return _c.allreduce(_arr(x), _op(op, "allreduce"), _comm(comm, "allreduce"))


def reduce(x, op, root, *, comm=None):
    """MPI_Reduce: `root` gets the reduction; the other processes get their `x` back."""
    return _c.reduce(_arr(x), _op(op, "reduce"), root, _comm(comm, "reduce"))


def scan(x, op, *, comm=None):
    """MPI_Scan (inclusive): process r gets `op` over processes 0..r."""
    return _c.scan(_arr(x), _op(op, "scan"), _comm(comm, "scan"))


def bcast(x, root, *, comm=None):
    """MPI_Bcast: every process gets root's `x` (the others' `x` gives shape and dtype)."""
    return _c.bcast(_arr(x), root, _comm(comm, "bcast"))


def allgather(x, *, comm=None):
    """MPI_Allgather: `(size, *x.shape)`, entry r from process r."""
    return _c.allgather(_arr(x), _comm(comm, "allgather"))


def gather(x, root, *, comm=None):
    """MPI_Gather: root gets `(size, *x.shape)`; the other processes get their `x` back."""
    return _c.gather(_arr(x), root, _comm(comm, "gather"))


def scatter(x, root, *, comm=None):
    """MPI_Scatter: root's `x` is `(size, *shape)` and process r gets entry r; the other
    processes pass an array shaped like their result (only shape and dtype are used)."""
    return _c.scatter(_arr(x), root, _comm(comm, "scatter"))


def alltoall(x, *, comm=None):
    """MPI_Alltoall: `x.shape[0] == size`; entry j goes to process j."""
    return _c.alltoall(_arr(x), _comm(comm, "alltoall"))


def allgatherv(x, counts, *, comm=None):
    """MPI_Allgatherv along the leading dimension: process r contributes `counts[r]` rows."""
    return _c.allgatherv(_arr(x), list(counts), _comm(comm, "allgatherv"))


def gatherv(x, counts, root, *, comm=None):
    """MPI_Gatherv along the leading dimension to `root`; the others get their `x` back."""
    return _c.gatherv(_arr(x), list(counts), root, _comm(comm, "gatherv"))


def alltoallv(x, send_counts, recv_counts, *, comm=None):
    """MPI_Alltoallv along the leading dimension."""
    return _c.alltoallv(_arr(x), list(send_counts), list(recv_counts), _comm(comm, "alltoallv"))


def send(x, dest, *, tag=0, comm=None):
    """MPI_Send of `x` to `dest`. Returns None."""
    _c.send(_arr(x), dest, tag, _comm(comm, "send"))


def recv(x, source=ANY_SOURCE, *, tag=ANY_TAG, comm=None, status=None):
    """MPI_Recv of an array shaped like `x` (only its shape and dtype are used)."""
    x = _arr(x)
    st = _StatusCopy(status, "recv", x._is_tracer)
    out = _c.recv(x, source, tag, _comm(comm, "recv"), st.native)
    st.done()
    return out


def sendrecv(sendbuf, recvbuf, source, dest, *, sendtag=0, recvtag=ANY_TAG, comm=None, status=None):
    """MPI_Sendrecv: sends `sendbuf` to `dest` and receives an array shaped like `recvbuf`
    from `source`, deadlock-free. Differentiable in `sendbuf` (the transpose sends the
    cotangents back)."""
    sendbuf, recvbuf = _arr(sendbuf), _arr(recvbuf)
    st = _StatusCopy(status, "sendrecv", sendbuf._is_tracer or recvbuf._is_tracer)
    out = _c.sendrecv(sendbuf, recvbuf, source, dest, sendtag, recvtag, _comm(comm, "sendrecv"), st.native)
    st.done()
    return out


def barrier(*, comm=None):
    """MPI_Barrier."""
    _c.barrier(_comm(comm, "barrier"))
