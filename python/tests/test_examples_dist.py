"""The Python seed examples of the distribution features (examples/python/), run as
programs and checked by their output: the custom_partitioning FFT on 8 devices, and the
mpi4jax send/recv exchange under `mpirun -np 2` (skipped without mpirun)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def _env(devices):
    env = dict(os.environ, TESSEL_CPU_DEVICES=str(devices), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def _run(cmd, devices, timeout=120):
    r = subprocess.run(cmd, env=_env(devices), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_custom_partitioning_fft():
    out = _run([sys.executable, str(EXAMPLES / "custom_partitioning_fft.py"), "--rows", "64", "--cols", "32",
                "--n1d", "1024"], 8)
    assert "# my_fft" in out and "values equal: yes; all_gather or dynamic_slice in my_fft: no, in fft: no" in out
    assert "values equal: yes; all_gather or dynamic_slice in my_fft: yes, in fft: yes" in out
    assert out.rstrip().endswith("custom_partitioning seed: ok")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_mpi4jax_exchange_np2():
    out = _run(["mpirun", "--oversubscribe", "-np", "2", sys.executable, str(EXAMPLES / "mpi4jax_exchange.py"),
                "--size", "100000"], 2)
    assert "mpi4jax_exchange: ok (2 processes exchanged 100000 float32 values in pairs inside jit)" in out


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_shallow_water_same_on_1_and_2_processes():
    cmd = [sys.executable, str(EXAMPLES / "shallow_water.py"), "--nx", "64", "--ny", "32", "--steps", "120"]
    one = _run(cmd, 1)
    two = _run(["mpirun", "--oversubscribe", "-np", "2"] + cmd, 1)
    assert "64x32 on 1 process(es), 120 steps" in one and "64x32 on 2 process(es), 120 steps" in two
    final = [line for line in one.splitlines() if line.startswith("final h:")]
    assert final and final == [line for line in two.splitlines() if line.startswith("final h:")]
    mean, lo, hi = (float(v) for v in final[0].split()[3::2])
    assert abs(mean - 100.0) < 0.01 and 97.0 < lo < 100.0 < hi < 103.0  # the jet's geostrophic tilt, ~1.4 m
