"""Run by test_colocated_mpi.py under `mpirun -np 3`: a single-controller job (rank 0 the driver)
whose workers find colocated Python functions and classes by module and qualified name."""
import numpy as np

import tessel
import tessel.numpy as tnp
from tessel import colocated as colocated_python


def where():
    return tnp.ones(2) * tessel.process_index()


def add_one(x):
    return x + 1


class Counter:
    def __init__(self, start):
        self.n = start

    def bump(self, x):
        self.n += 1
        return x * 0 + self.n


def boom(x):
    raise KeyError("worker boom")


where = colocated_python.colocated_python(where)
add_one = colocated_python.colocated_python(add_one)
Counter = colocated_python.colocated_python_class(Counter)
boom = colocated_python.colocated_python(boom)

tessel.distributed.initialize(mode="single_controller")  # workers serve from here on
for dev in colocated_python._native.device_ids():
    y = where.specialize(devices=[dev])()
    print("device", dev, np.asarray(y).tolist(), np.asarray(add_one(y)).tolist(), flush=True)
y2 = where.specialize(devices=[2])()
c = Counter(10)
print("counter", np.asarray(c.bump(y2)).tolist(), np.asarray(c.bump(y2)).tolist(), flush=True)
try:
    np.asarray(boom(y2))
except KeyError as e:  # the worker's exception type, its traceback text in the message
    print("raised", "worker boom" in str(e), "in boom" in str(e), flush=True)
try:
    colocated_python.colocated_python(lambda x: x)(y2)
except ValueError as e:
    print("lambda", "module level" in str(e), flush=True)
