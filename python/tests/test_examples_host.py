"""The host_callback seed's examples in Python (examples/python/host_callback_*.py), each run as
its own process, their output checked line by line against the seed's."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run_example(name, timeout=60):
    r = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_host_callback_call():
    assert run_example("host_callback_call.py").splitlines() == [
        "eigvals: [1. 3.]", "Invoking host_sin with (4,) on cpu:0", "Invoking host_sin with (4,) on cpu:0", "(2, 4)"]


def test_host_callback_id_tap():
    assert run_example("host_callback_id_tap.py").splitlines() == [
        "host_func(3.0, [])",
        "host_func((array(3., dtype=float32), array(4.5, dtype=float32)), [])",
        "host_func(3.0, [], device=cpu:0)",
        "host_func(3.0, [], what='activation')",
        "host_func({'x': array(1.5, dtype=float32), 'y': array(-1., dtype=float32)}, [], what='data')",
        "accumulator: [1.0, 2.0, 1.0, 2.0]"]


def test_host_callback_power3():
    p3 = ["what: x,x²", "( 3. 9. )"]
    assert run_example("host_callback_power3.py").splitlines() == (
        p3 + ["# power3(3.)"] + p3 + ["# jvp"] + p3 + ["# grad"] +
        p3 + ["what: x,x²", "( 27. 729. )"] + p3 + ["# grad of checkpoint"] +
        ["transforms: [('batch', {'batch_dims': (0, 0)})] what: x,x²", "( [2. 3.] [4. 9.] )", "# vmap"] +
        p3 + ["what: tangents", "( 0.1 0.6 )", "# jvp with tangents"] +
        p3 + ["what: cotangents", "( 9. 3. )", "# grad with cotangents"])
