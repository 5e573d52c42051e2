"""mpi4jax's shallow-water model (examples/python/shallow_water.py, the same script for both)
at 1800 x 900 on 1 and 2 processes: tessel against JAX + mpi4jax, in the same run, rounds
alternating. Prints `python.shallow_water_{1,2}p_ms_per_step` for tessel, the same with
`_jax` for JAX (through $TESSEL_JAX_PYTHON, when it has jax, mpi4jax and mpi4py), and
`python.shallow_water_{1,2}p_speedup_vs_jax` (JAX's time over tessel's; goal 3). The 2-process
runs need mpirun."""

import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "python" / "shallow_water.py"
NX, NY, STEPS, MULTISTEPS, ROUNDS = 1800, 900, 41, 10, 3


def run(python, nproc, backend):
    cmd = [python, str(SCRIPT), "--nx", str(NX), "--ny", str(NY), "--steps", str(STEPS), "--multisteps",
           str(MULTISTEPS), "--benchmark", "--backend", backend]
    if nproc > 1:
        cmd = ["mpirun", "--oversubscribe", "-np", str(nproc)] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", JAX_PLATFORMS="cpu",
               TESSEL_CPU_DEVICES="1")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    m = re.search(r"([0-9.]+) ms/step", r.stdout)
    if r.returncode != 0 or not m:
        print(f"bench_shallow_water: {backend} on {nproc} process(es) failed:\n{r.stdout[-400:]}{r.stderr[-800:]}",
              file=sys.stderr)
        return None
    return float(m.group(1))


def main():
    jax_python = os.environ.get("TESSEL_JAX_PYTHON")
    if jax_python and subprocess.run([jax_python, "-c", "import jax, mpi4jax, mpi4py"], capture_output=True).returncode:
        print("bench_shallow_water: $TESSEL_JAX_PYTHON lacks mpi4jax or mpi4py; only tessel's lines", file=sys.stderr)
        jax_python = None
    procs = (1, 2) if shutil.which("mpirun") else (1,)
    for nproc in procs:
        mine, theirs = [], []
        for _ in range(ROUNDS):
            t = run(sys.executable, nproc, "tessel")
            if t is not None:
                mine.append(t)
            if jax_python:
                j = run(jax_python, nproc, "jax")
                if j is not None:
                    theirs.append(j)
        if not mine:
            continue
        ms = statistics.median(mine)
        print(f"python.shallow_water_{nproc}p_ms_per_step {ms:.3f} ms")
        if theirs:
            jms = statistics.median(theirs)
            print(f"python.shallow_water_{nproc}p_ms_per_step_jax {jms:.3f} ms")
            print(f"python.shallow_water_{nproc}p_speedup_vs_jax {jms / ms:.3f} ratio")


if __name__ == "__main__":
    main()
