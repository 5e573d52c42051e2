"""tessel.comm under `mpirun -np 2` (CTest python_comm_tests): mpi4jax's functions eagerly,
inside jit, grad and vmap, with tessel's and mpi4py's communicators, operators and statuses.
Every process runs every test in the same order (the calls are collective)."""

import numpy as np
import pytest

import tessel
import tessel.comm as comm
import tessel.numpy as tnp

tessel.distributed.initialize()
WORLD = comm.world()
RANK, SIZE = WORLD.rank, WORLD.size
pytestmark = pytest.mark.skipif(SIZE != 2, reason="run under mpirun -np 2")

try:
    from mpi4py import MPI
except ImportError:  # the mpi4py tests are skipped; tessel never needs it
    MPI = None
needs_mpi4py = pytest.mark.skipif(MPI is None, reason="mpi4py is not installed")


def test_processes_and_devices():
    assert tessel.process_count() == 2 and tessel.process_index() == RANK
    assert len(tessel.devices()) == 2 * len(tessel.local_devices())
    assert all(d.process_index == RANK for d in tessel.local_devices())


def test_reductions_eager_and_jit():
    x = tnp.arange(4.0) + RANK
    expect = np.arange(4.0) * 2 + 1
    np.testing.assert_allclose(np.asarray(comm.allreduce(x, op=comm.SUM)), expect)
    np.testing.assert_allclose(np.asarray(tessel.jit(lambda v: comm.allreduce(v, comm.MAX))(x)), np.arange(4.0) + 1)
    np.testing.assert_allclose(np.asarray(comm.scan(x, comm.SUM)), np.arange(4.0) * (RANK + 1) + (1 if RANK else 0))
    r = comm.reduce(x, comm.PROD, 0)
    np.testing.assert_allclose(np.asarray(r), np.arange(4.0) * (np.arange(4.0) + 1) if RANK == 0 else np.asarray(x))


def test_data_movement():
    x = tnp.full((3,), float(RANK + 1))
    np.testing.assert_array_equal(np.asarray(comm.allgather(x)), [[1, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(np.asarray(comm.bcast(x, 1)), [2, 2, 2])
    g = comm.gather(x, 0)
    assert g.shape == ((2, 3) if RANK == 0 else (3,))
    s = comm.scatter(tnp.arange(6.0).reshape(2, 3) if RANK == 0 else tnp.zeros(3), 0)
    np.testing.assert_array_equal(np.asarray(s), np.arange(3.0) + 3 * RANK)
    a = comm.alltoall(tnp.arange(4.0).reshape(2, 2) + 10 * RANK)
    np.testing.assert_array_equal(np.asarray(a), [[2 * RANK, 2 * RANK + 1], [10 + 2 * RANK, 11 + 2 * RANK]])
    v = comm.allgatherv(tnp.full((RANK + 1,), float(RANK)), [1, 2])
    np.testing.assert_array_equal(np.asarray(v), [0, 1, 1])
    comm.barrier()


def test_send_recv_in_jit_with_status():
    other = 1 - RANK
    status = comm.Status()

    @tessel.jit
    def exchange(arr):
        if RANK == 0:
            comm.send(arr, dest=other, tag=7)
            return comm.recv(arr, source=other, status=status)
        new = comm.recv(arr, source=other, status=status)
        comm.send(arr, dest=other, tag=7)
        return new

    out = exchange(tnp.full((5,), float(RANK)))
    np.testing.assert_array_equal(np.asarray(out), np.full(5, float(other)))
    assert (status.source, status.tag, status.count) == (other, 7, 5)


def test_sendrecv_grad_and_vmap():
    other = 1 - RANK

    def f(x):
        return tnp.sum(comm.sendrecv(x * x, x, source=other, dest=other) * (RANK + 1.0))

    x = tnp.arange(3.0) + RANK
    # d/dx of sum(partner's x^2 * (partner_rank+1)) arrives back here: 2 x (other + 1)
    np.testing.assert_allclose(np.asarray(tessel.grad(f)(x)), 2 * np.asarray(x) * (other + 1))
    b = tessel.vmap(lambda v: comm.allreduce(v, comm.SUM))(tnp.ones((4, 2)) * (RANK + 1))
    np.testing.assert_array_equal(np.asarray(b), np.full((4, 2), 3.0))


def test_split_and_errors():
    sub = WORLD.split(color=RANK, key=0)
    assert sub.size == 1 and sub.rank == 0
    np.testing.assert_array_equal(np.asarray(comm.allreduce(tnp.ones(2) * RANK, comm.SUM, comm=sub)), [RANK, RANK])
    with pytest.raises(ValueError, match="reduction"):
        comm.allreduce(tnp.ones(2), "AVG")
    with pytest.raises(TypeError, match="communicator"):
        comm.allreduce(tnp.ones(2), comm.SUM, comm=3)
    with pytest.raises(ValueError, match="root"):
        comm.bcast(tnp.ones(2), root=5)


@needs_mpi4py
def test_mpi4py_communicators_ops_status():
    c = MPI.COMM_WORLD.Split(color=0, key=SIZE - RANK)  # reversed ranks
    x = tnp.ones(2) * (RANK + 1)
    np.testing.assert_array_equal(np.asarray(comm.allreduce(x, op=MPI.SUM, comm=c)), [3, 3])
    np.testing.assert_array_equal(np.asarray(comm.allgather(x, comm=c))[:, 0], [2, 1])
    np.testing.assert_array_equal(np.asarray(tessel.jit(lambda v: comm.allreduce(v, MPI.MIN, comm=c))(x)), [1, 1])
    st = MPI.Status()
    got = comm.sendrecv(x, x, source=1 - RANK, dest=1 - RANK, sendtag=3, comm=MPI.COMM_WORLD, status=st)
    np.testing.assert_array_equal(np.asarray(got), [2 - RANK, 2 - RANK])
    assert st.Get_source() == 1 - RANK and st.Get_tag() == 3
    c.Free()
