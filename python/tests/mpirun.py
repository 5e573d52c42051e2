"""Runs a Python script of this package under `mpirun` (the multi-process tests)."""

import os
import shutil
import subprocess
import sys

import pytest

import tessel

# Single-controller jobs need tessel.distributed (bound with the meshes and shardings).
needs_mpirun = pytest.mark.skipif(shutil.which("mpirun") is None or not hasattr(tessel, "distributed"),
                                  reason="needs mpirun and tessel.distributed")


def run_mpirun(np, script, timeout=180):
    """`mpirun -np <np> python <script>` with one device per process; its stdout lines."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", TESSEL_CPU_DEVICES="1")
    r = subprocess.run(["mpirun", "--oversubscribe", "-np", str(np), sys.executable, str(script)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.splitlines()
