"""tessel.pipeline: enter_stage (pytrees, under grad), the errors of a RemoteMpmdMesh outside a
single-controller job and of a bad schedule, and the JaxPP training step under `mpirun -np 5`
(examples/python/jaxpp_pipelined.py: the pipelined loss equals the plain jitted step's)."""

import pathlib

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
from tessel import pipeline as jaxpp
from mpirun import needs_mpirun, run_mpirun

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "jaxpp_pipelined.py"


def test_enter_stage_is_identity_on_pytrees_and_under_grad():
    a, (b,) = jaxpp.enter_stage((tnp.ones(2), [tnp.arange(3.0)]))
    np.testing.assert_array_equal(np.asarray(b), [0, 1, 2])
    g = tessel.grad(lambda x: tnp.sum(jaxpp.enter_stage(x * x)))(tnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(g), [0, 2, 4])
    assert "enter_stage" in tessel.make_program(lambda x: jaxpp.enter_stage(x) + 1, tnp.ones(2))


def test_remote_mpmd_mesh_needs_a_single_controller_driver():
    with pytest.raises(tessel.TesselError, match="single-controller"):
        jaxpp.RemoteMpmdMesh(4, (1,), ("data",))


def test_schedule_must_be_a_schedule():
    with pytest.raises(TypeError, match="OneF1B"):
        jaxpp.Pipelined(lambda s: s, None, num_microbatches=1, batch_argnums=(), donate_argnums=(), schedule="1f1b",
                        overlap_reductions=True)


@needs_mpirun
def test_jaxpp_training_step_under_mpirun_np5():
    lines = run_mpirun(5, EXAMPLE)
    assert "4 workers" in lines
    steps = [l for l in lines if l.startswith("step ")]
    assert len(steps) == 5
    for l in steps:
        ours, ref = float(l.split()[3]), float(l.split()[-1])
        assert ours == pytest.approx(ref, rel=1e-4)
    assert "workers in the instructions: ['0', '1', '2', '3']" in lines
    assert lines[-1] == "jaxpp_pipelined: ok"
