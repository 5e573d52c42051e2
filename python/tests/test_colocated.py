"""Colocated Python functions and classes (tessel.colocated) in one process: results, pytrees,
specialization (asynchronous calls, in_specs, devices), lazy objects, errors."""

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
from tessel import colocated as colocated_python


def add_one(x):
    return x + 1


def test_colocated_cpu_devices_keeps_order():
    assert colocated_python.colocated_cpu_devices([3, 1, 2]) == [3, 1, 2]


def test_function_runs_and_returns_arrays():
    f = colocated_python.colocated_python(add_one)
    y = f(tnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3])
    assert f.out_spec_discoveries == 1
    f(tnp.arange(3.0) * 2)  # same signature: known outputs
    assert f.out_spec_discoveries == 1


def test_pytrees_in_and_out():
    def two(a, b, *, scale):
        return {"sum": a + b, "rest": (a * scale, None)}

    r = colocated_python.colocated_python(two)(tnp.ones(2), tnp.arange(2.0), scale=tnp.asarray(3.0))
    np.testing.assert_array_equal(np.asarray(r["sum"]), [1, 2])
    np.testing.assert_array_equal(np.asarray(r["rest"][0]), [3, 3])
    assert r["rest"][1] is None


def test_specialize_out_specs_fn_learns_nothing():
    f = colocated_python.colocated_python(add_one).specialize(out_specs_fn=lambda x: x)
    y = f(tnp.arange(4.0))
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3, 4])
    assert f.out_spec_discoveries == 0


def test_specialize_out_specs_fn_new_shape():
    f = colocated_python.colocated_python(lambda x: tnp.sum(x, keepdims=True)).specialize(
        out_specs_fn=lambda x: tessel.ShapeDtypeStruct((1,), x.dtype, sharding=x.sharding))
    np.testing.assert_array_equal(np.asarray(f(tnp.arange(4.0))), [6])


def test_wrong_out_specs_is_an_error():
    f = colocated_python.colocated_python(add_one).specialize(
        out_specs_fn=lambda x: tessel.ShapeDtypeStruct((7,), x.dtype, sharding=x.sharding))
    with pytest.raises(tessel.TesselError, match="7"):
        np.asarray(f(tnp.arange(4.0)))


def test_function_without_arrays_needs_devices():
    f = colocated_python.colocated_python(lambda: tnp.ones(2))
    with pytest.raises(tessel.TesselError, match="devices"):
        f()
    g = f.specialize(devices=colocated_python.colocated_cpu_devices([0]))
    np.testing.assert_array_equal(np.asarray(g()), [1, 1])


def test_io_in_a_colocated_function(tmp_path):
    path = tmp_path / "foo"

    def write(x):
        with open(path, "w") as fh:
            fh.write(str(np.asarray(x)))
        return x

    tessel.block_until_ready(colocated_python.colocated_python(write)(tnp.arange(2.0)))
    assert path.read_text() == "[0. 1.]"


class Adder:
    made = 0

    def __init__(self, k):
        Adder.made += 1
        self.k = k

    def add(self, x):
        return x + self.k

    def state(self, x):
        return x * 0 + self.k


def test_class_instance_is_made_lazily_once():
    Adder.made = 0
    ColocatedAdder = colocated_python.colocated_python_class(Adder)
    adder = ColocatedAdder(5)
    assert Adder.made == 0
    np.testing.assert_array_equal(np.asarray(adder.add(tnp.ones(2))), [6, 6])
    np.testing.assert_array_equal(np.asarray(adder.state(tnp.ones(2))), [5, 5])
    assert Adder.made == 1


def test_constructor_error_reaches_every_call():
    class Bad:
        def __init__(self):
            raise KeyError("no way")

        def f(self, x):
            return x

    obj = colocated_python.colocated_python_class(Bad)()
    for _ in range(2):
        with pytest.raises(KeyError, match="no way"):
            obj.f(tnp.ones(1))


def test_exception_keeps_its_type():
    def boom(x):
        raise ArithmeticError("colocated boom")

    with pytest.raises(ArithmeticError, match="colocated boom"):
        np.asarray(colocated_python.colocated_python(boom)(tnp.ones(1)))
