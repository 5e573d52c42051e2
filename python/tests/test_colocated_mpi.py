"""Colocated Python under `mpirun -np 3` as a single-controller job: functions and a class
defined at module level run in the worker processes, which resolve them by name; a worker's
exception reaches the driver with its traceback text; a lambda is a clear error."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import tessel

SCRIPT = pathlib.Path(__file__).resolve().parent / "mpi" / "colocated_single_controller.py"


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
@pytest.mark.skipif(not hasattr(tessel, "distributed"), reason="tessel.distributed is not bound in this build")
def test_colocated_python_single_controller():
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TESSEL_CPU_DEVICES="1")
    r = subprocess.run(["mpirun", "--oversubscribe", "-np", "3", sys.executable, str(SCRIPT)], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [l for l in r.stdout.splitlines() if l.split(" ")[0] in ("device", "counter", "raised", "lambda")]
    assert lines == ["device 0 [0.0, 0.0] [1.0, 1.0]", "device 1 [1.0, 1.0] [2.0, 2.0]",
                     "device 2 [2.0, 2.0] [3.0, 3.0]", "counter [11.0, 11.0] [12.0, 12.0]", "raised True True",
                     "lambda True"]
