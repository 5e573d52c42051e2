"""Colocated Python under `mpirun -np 3` as a single-controller job: functions and a class
defined at module level run in the worker processes, which resolve them by name; a worker's
exception reaches the driver with its traceback text; a lambda is a clear error."""

import pathlib

from mpirun import needs_mpirun, run_mpirun

SCRIPT = pathlib.Path(__file__).resolve().parent / "mpi" / "colocated_single_controller.py"


@needs_mpirun
def test_colocated_python_single_controller():
    lines = [l for l in run_mpirun(3, SCRIPT) if l.split(" ")[0] in ("device", "counter", "raised", "lambda")]
    assert lines == ["device 0 [0.0, 0.0] [1.0, 1.0]", "device 1 [1.0, 1.0] [2.0, 2.0]",
                     "device 2 [2.0, 2.0] [3.0, 3.0]", "counter [11.0, 11.0] [12.0, 12.0]", "raised True True",
                     "lambda True"]
