#!/usr/bin/env python3
"""Writes tessel's parity data from JAX (docs/parity.md).

Run by hand, with a Python that has JAX 0.10.2 (the build and the tests never need JAX):

    /work/venv-jax/bin/python tests/parity/generate.py            # every module
    /work/venv-jax/bin/python tests/parity/generate.py fft random # some modules

For each module in MODULES it writes tests/parity/data/<module>.txt: every case's inputs
(deterministic from a seed), static parameters, JAX's outputs and, for differentiable cases,
jax.jvp's and jax.vjp's results. tests/parity/parity_test.cpp reads the files and compares
tessel's results. It also writes tests/parity/jax_api.txt, the public callables of the JAX
modules that scripts/api_coverage checks tessel's API against (keeping the statuses the
file already holds).

Adding a function: one `s.case(...)` line (or a loop over dtypes) in tests/parity/cases_<module>.py,
and one registry line in tests/parity/cases_<module>.cpp. A new module: a cases_<module>.py with
a `cases(s)` function, one line in MODULES below, and a cases_<module>.cpp.
"""
import os
import sys

import parity_lib  # sets up JAX (x64 on, CPU) before the case modules import it
import cases_collectives
import cases_control
import cases_conv
import cases_fft
import cases_lax
import cases_linalg
import cases_nn
import cases_numpy
import cases_numpy_composed
import cases_numpy_rest
import cases_random
import cases_rng
import cases_sort
import cases_special
import cases_special_extra
import cases_stats
import cases_stats_extra
import jax_api

HERE = os.path.dirname(os.path.abspath(__file__))

# The modules (data files) and the functions that declare their cases.
MODULES = {
    "numpy": cases_numpy.cases,
    "numpy_composed": cases_numpy_composed.cases,
    "numpy_rest": cases_numpy_rest.cases,
    "fft": cases_fft.cases,
    "random": cases_random.cases,
    "linalg": cases_linalg.cases,
    "sort": cases_sort.cases,
    "nn": cases_nn.cases,
    "conv": cases_conv.cases,
    "lax": cases_lax.cases,
    "special": cases_special.cases,
    "control": cases_control.cases,
    "collectives": cases_collectives.cases,
    "special_extra": cases_special_extra.cases,
    "stats": cases_stats.cases,
    "rng": cases_rng.cases,
    "stats_extra": cases_stats_extra.cases,
}


def main(argv):
    wanted = argv[1:] or list(MODULES)
    for m in wanted:
        if m not in MODULES:
            sys.exit(f"generate.py: unknown module '{m}'; modules: {', '.join(MODULES)}")
        s = parity_lib.Suite(m)
        MODULES[m](s)
        s.write()
    jax_api.write(os.path.join(HERE, "jax_api.txt"))


if __name__ == "__main__":
    main(sys.argv)
