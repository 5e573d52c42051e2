"""tessel's C++ errors arrive as Python exceptions of matching classes, with the C++
message; Python exceptions raised inside traced functions keep their type."""

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp


def test_shape_errors_are_value_errors():
    with pytest.raises(ValueError, match=r"add: .*\(3,\).*\(4,\)|\(4,\).*\(3,\)") as info:
        tnp.ones(3) + tnp.ones(4)
    assert isinstance(info.value, tessel.ShapeError) and isinstance(info.value, tessel.TesselError)
    with pytest.raises(tessel.ShapeError):
        tnp.reshape(tnp.ones(6), (4, 2))


def test_dtype_errors_are_type_errors():
    with pytest.raises(TypeError) as info:
        tnp.bitwise_and(tnp.ones(2), tnp.ones(2))
    assert isinstance(info.value, tessel.DTypeError)
    with pytest.raises(TypeError, match="grad"):
        tessel.grad(lambda x: tnp.sum(x))(tnp.arange(3))
    with pytest.raises(TypeError, match="dtype"):
        tnp.zeros(2, dtype="not-a-dtype")
    with pytest.raises(TypeError):
        tessel.Array(np.array(["a", "b"]))


def test_index_errors():
    with pytest.raises(IndexError):
        tnp.ones((2, 3))[0, 0, 0]
    with pytest.raises(IndexError, match="boolean"):
        tnp.ones(3)[np.array([True, False, True])]
    with pytest.raises(IndexError):
        tnp.sum(tnp.ones((2, 3)), axis=5)


def test_concretization_error_under_jit():
    @tessel.jit
    def f(x):
        if x > 0:  # Python control flow on a traced value
            return x
        return -x

    with pytest.raises(TypeError) as info:
        f(tnp.asarray(1.0))
    assert isinstance(info.value, tessel.ConcretizationTypeError)


def test_grad_output_must_be_scalar():
    with pytest.raises(Exception, match="grad") as info:
        tessel.grad(lambda x: x * 2.0)(tnp.ones(3))
    assert isinstance(info.value, (TypeError, ValueError))


def test_python_exceptions_pass_through_tracing():
    class Custom(Exception):
        pass

    def bad(x):
        raise Custom("from inside the traced function")

    for transform in (tessel.jit, tessel.grad, tessel.vmap):
        with pytest.raises(Custom, match="inside the traced"):
            transform(bad)(tnp.ones(3))


def test_error_messages_are_the_cpp_messages():
    with pytest.raises(ValueError) as info:
        tnp.matmul(tnp.ones((2, 3)), tnp.ones((4, 5)))
    assert "matmul" in str(info.value) or "dot_general" in str(info.value)
