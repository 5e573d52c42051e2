"""Host callbacks over Python callables: tessel.host (id_tap, id_print, call, barrier_wait),
tessel.pure_callback, tessel.io_callback, tessel.debug: ordering, results, exceptions (their
type and traceback reach the caller), re-entrancy (a callback calling tessel), and their
behaviour under jit, grad, vmap and control flow."""

import io
import threading
import traceback

import numpy as np
import pytest

import tessel
import tessel.numpy as tnp
from tessel import host as hcb

SD = tessel.ShapeDtypeStruct


def test_id_tap_passes_pytree_and_returns_arg():
    got = []
    x = tnp.arange(3.0)
    y = hcb.id_tap(lambda a, t: got.append((a, t)), {"a": x, "b": (x * 2, x + 1)})
    hcb.barrier_wait()
    assert y["a"] is x
    (tree, transforms), = got
    assert transforms == []
    assert isinstance(tree["a"], np.ndarray)
    np.testing.assert_array_equal(tree["b"][0], [0, 2, 4])
    np.testing.assert_array_equal(tree["b"][1], [1, 2, 3])


def test_id_tap_result_and_device():
    got = []
    r = hcb.id_tap(lambda a, t, device: got.append(str(device)), tnp.ones(2), result=tnp.zeros(3),
                   tap_with_device=True)
    hcb.barrier_wait()
    assert r.shape == (3,)
    assert got == ["cpu:0"]


def test_taps_run_in_program_order_across_jit_calls():
    seen = []

    def device_fun(x):
        hcb.id_tap(lambda a, t: seen.append(float(a)), x)
        hcb.id_tap(lambda a, t: seen.append(float(a)), 2.0 * x)
        return x

    f = tessel.jit(device_fun)
    for i in range(20):
        f(tnp.asarray(float(i)))
    hcb.barrier_wait()
    assert seen == [v for i in range(20) for v in (float(i), 2.0 * i)]


def test_id_print_power3_under_jvp_grad_vmap():
    out = io.StringIO()

    def power3(x):
        y = x * x
        hcb.id_print((x, y), what="x,x²", output_stream=out)
        return y * x

    tessel.jvp(power3, (tnp.asarray(3.0),), (tnp.asarray(0.1),))
    g = tessel.grad(power3)(tnp.asarray(3.0))
    tessel.vmap(power3)(tnp.asarray([2.0, 3.0]))
    hcb.barrier_wait()
    assert float(g) == pytest.approx(27.0)
    assert out.getvalue() == ("what: x,x²\n( 3. 9. )\n" * 2 +
                              "transforms: [('batch', {'batch_dims': (0, 0)})] what: x,x²\n( [2. 3.] [4. 9.] )\n")


def test_id_print_under_jitted_fori_loop_keeps_order():
    out = io.StringIO()

    def body(i, c):
        hcb.id_print(i, output_stream=out)
        return c + i

    r = tessel.jit(lambda n: tessel.lax.fori_loop(0, 4, body, n))(tnp.asarray(0))
    hcb.barrier_wait()
    assert int(r) == 6
    assert out.getvalue() == "0\n1\n2\n3\n"


def test_call_host_eig_in_jit():
    def host_eig(m):
        return np.linalg.eigvals(m).real.astype(m.dtype)

    def device_fun(m):
        return hcb.call(host_eig, m, result_shape=SD(m.shape[:-1], m.dtype))

    m = np.array([[2.0, 0.0], [0.0, 5.0]], np.float32)
    np.testing.assert_allclose(np.sort(np.asarray(tessel.jit(device_fun)(m))), [2.0, 5.0])


def test_call_with_device_and_tree_result():
    def host_fn(arg, device):
        a, b = arg
        return {"s": a + b, "d": (a - b, str(device).encode() and np.float32(1))}

    x, y = tnp.ones(3), tnp.arange(3.0)
    r = hcb.call(host_fn, (x, y), call_with_device=True,
                 result_shape={"s": SD((3,), np.float32), "d": (SD((3,), np.float32), SD((), np.float32))})
    np.testing.assert_array_equal(np.asarray(r["s"]), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(r["d"][0]), [1, 0, -1])
    assert float(r["d"][1]) == 1.0


def test_call_under_vmap_runs_once_per_example():
    shapes = []

    def host_fn(v):
        shapes.append(v.shape)
        return v * 10

    r = tessel.vmap(lambda v: hcb.call(host_fn, v, result_shape=SD((2,), np.float32)))(tnp.ones((3, 2)))
    np.testing.assert_array_equal(np.asarray(r), np.full((3, 2), 10.0))
    assert shapes == [(2,)] * 3


def test_call_under_grad_names_the_fix():
    with pytest.raises(tessel.TesselError, match="custom_jvp|custom_vjp"):
        tessel.grad(lambda x: hcb.call(np.sin, x, result_shape=x))(tnp.asarray(1.0))


def test_call_wrong_shape_fails_at_the_read_then_goes_on():
    y = hcb.call(lambda v: np.zeros(3, np.float32), tnp.ones(2), result_shape=SD((2,), np.float32))
    with pytest.raises(tessel.TesselError, match=r"f32\[3\].*f32\[2\]"):
        np.asarray(y)
    np.testing.assert_array_equal(np.asarray(tnp.ones(2) + 1), [2, 2])


def test_call_wrong_structure_names_both():
    y = hcb.call(lambda v: (v, v), tnp.ones(2), result_shape=[SD((2,), np.float32), SD((2,), np.float32)])
    with pytest.raises(tessel.TesselError, match="structure|tree"):
        tessel.block_until_ready(y)


class MyError(Exception):
    pass


def _raises_my_error(v):
    raise MyError(f"bad value {v.shape}")


def test_exception_in_call_keeps_type_and_traceback():
    f = tessel.jit(lambda v: hcb.call(_raises_my_error, v, result_shape=v) + 1)
    y = f(tnp.ones(2))
    with pytest.raises(MyError, match=r"bad value \(2,\)") as info:
        np.asarray(y)
    text = "".join(traceback.format_exception(info.value))
    assert "_raises_my_error" in text
    np.testing.assert_array_equal(np.asarray(tnp.ones(2) + 1), [2, 2])  # later work is unaffected


def test_exception_in_tap_arrives_at_barrier_wait():
    def tap(a, t):
        raise KeyError("tap failed")

    hcb.id_tap(tap, tnp.ones(1))
    with pytest.raises(KeyError, match="tap failed") as info:
        hcb.barrier_wait()
    assert "in tap" in "".join(traceback.format_exception(info.value))
    hcb.barrier_wait()  # reported once


def test_exception_in_io_callback_keeps_type():
    def cb(v):
        raise ZeroDivisionError("io failed")

    y = tessel.io_callback(cb, SD((), np.float32), tnp.asarray(1.0))
    with pytest.raises(ZeroDivisionError, match="io failed"):
        float(y)


def test_callback_calling_tessel_does_not_deadlock():
    def host_fn(v):
        # re-entrant: eager tessel ops, a jitted function and a value read, all from the callback
        w = tnp.asarray(v) * 2 + tnp.ones_like(tnp.asarray(v))
        return np.asarray(tessel.jit(lambda u: u + 1)(w))

    f = tessel.jit(lambda v: hcb.call(host_fn, v, result_shape=v))
    np.testing.assert_array_equal(np.asarray(f(tnp.arange(3.0))), [2, 4, 6])

    seen = []
    hcb.id_tap(lambda a, t: seen.append(float(tnp.sum(tnp.asarray(a)))), tnp.arange(4.0))
    hcb.barrier_wait()
    assert seen == [6.0]


def test_callbacks_from_other_python_threads():
    results = []

    def work(k):
        y = tessel.pure_callback(lambda v: v + k, SD((2,), np.float32), tnp.zeros(2))
        results.append(float(np.asarray(y)[0]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0.0, 1.0, 2.0, 3.0]


def test_pure_callback_kwargs_and_vmap():
    r = tessel.vmap(lambda v: tessel.pure_callback(lambda a, scale: a * scale, SD((), np.float32), v, scale=3.0))(
        tnp.arange(3.0))
    np.testing.assert_array_equal(np.asarray(r), [0, 3, 6])


def test_pure_callback_unused_is_removed_io_callback_is_not():
    calls = []

    def f(v):
        tessel.pure_callback(lambda a: (calls.append("pure"), a)[1], SD((), np.float32), v)
        tessel.io_callback(lambda a: calls.append("io"), None, v)
        return v + 1

    tessel.jit(f)(tnp.asarray(1.0)).block_until_ready()
    assert calls == ["io"]


def test_ordered_io_callback_keeps_order_in_scan():
    log = []

    def body(c, x):
        tessel.io_callback(lambda v: log.append(int(v)), None, x, ordered=True)
        return c + x, c

    c, ys = tessel.jit(lambda xs: tessel.lax.scan(body, tnp.asarray(0), xs))(tnp.arange(5))
    assert int(c) == 10
    assert log == [0, 1, 2, 3, 4]


def test_io_callback_result_none_must_return_none():
    tessel.io_callback(lambda v: 5, None, tnp.ones(1))
    with pytest.raises(TypeError, match="result_shape is None"):
        hcb.barrier_wait()


def test_failing_io_callback_without_result_arrives_at_barrier_wait():
    def cb(v):
        raise RuntimeError("no result to carry me")

    tessel.io_callback(cb, None, tnp.ones(1), ordered=True)
    with pytest.raises(RuntimeError, match="no result to carry me"):
        hcb.barrier_wait()
    # in a jitted program the failure fails the program's results too, and barrier_wait reports it
    y = tessel.jit(lambda v: (tessel.io_callback(cb, None, v, ordered=True), v + 1)[1])(tnp.ones(1))
    with pytest.raises(RuntimeError, match="no result to carry me"):
        y.block_until_ready()
    with pytest.raises(RuntimeError, match="no result to carry me"):
        hcb.barrier_wait()


def test_result_shape_leaf_without_shape_is_type_error():
    with pytest.raises(TypeError, match="result_shape"):
        hcb.call(lambda v: v, tnp.ones(1), result_shape=[3])


def test_debug_print_per_example_under_vmap(capsys):
    def f(x):
        tessel.debug.print("x: {}", x)
        tessel.debug.print("y={y}", y=x * 2)
        return x

    tessel.vmap(f)(tnp.arange(3))
    hcb.barrier_wait()
    out = capsys.readouterr().out.splitlines()
    assert [l for l in out if l.startswith("x:")] == ["x: 0", "x: 1", "x: 2"]
    assert [l for l in out if l.startswith("y=")] == ["y=0", "y=2", "y=4"]


def test_debug_callback_in_jit():
    got = []
    tessel.jit(lambda v: (tessel.debug.callback(lambda a, b: got.append(float(a + b)), v, b=v), v)[1])(
        tnp.asarray(2.0))
    hcb.barrier_wait()
    assert got == [4.0]


def test_custom_vjp_prints_cotangents():
    out = io.StringIO()

    @tessel.custom_vjp
    def print_cotangents(arg):
        return arg

    def fwd(arg):
        return print_cotangents(arg), None

    def bwd(res, ct):
        hcb.id_print(ct, what="cotangents", output_stream=out)
        return (ct,)

    print_cotangents.defvjp(fwd, bwd)

    def power3_with_cotangents(x):
        y = x * x
        x1, y1 = print_cotangents((x, y))
        return y1 * x1

    g = tessel.grad(power3_with_cotangents)(tnp.asarray(3.0))
    hcb.barrier_wait()
    assert float(g) == pytest.approx(27.0)
    assert out.getvalue() == "what: cotangents\n( 9. 3. )\n"


# ---- pure_callback/io_callback with positional array arguments: the runtime calls the
# function itself with NumPy arrays over its private copies, and takes a NumPy result of the
# declared aval without Python code of tessel's (python/src/numpy_api.cpp) ----


def test_callback_arguments_are_private_writable_numpy_arrays():
    seen = []

    def keep(a, b):
        assert type(a) is np.ndarray and type(b) is np.ndarray
        assert (a.dtype, a.shape, b.dtype, b.shape) == (np.float32, (2, 3), np.int32, ())
        seen.append(a)
        a += 100  # the callback's own copy: the computation's values do not change
        return a.sum(dtype=np.float32) + b.astype(np.float32)

    x = tnp.arange(6.0).reshape(2, 3)
    f = tessel.jit(lambda x, k: tessel.lax.fori_loop(
        0, 3, lambda i, c: c + tessel.io_callback(keep, SD((), np.float32), x, k + i), tnp.asarray(0.0)))
    assert float(f(x, tnp.asarray(1, dtype=np.int32))) == 3 * (15 + 600) + (1 + 2 + 3)
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0).reshape(2, 3))
    # Arrays a callback kept stay valid and distinct after later calls.
    assert len(seen) == 3 and len({id(a) for a in seen}) == 3
    for a in seen:
        np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3) + 100)


@pytest.mark.parametrize("result, want", [
    (lambda v: v * 2, [2.0, 4.0]),  # an ndarray of the declared aval (the direct path)
    (lambda v: tnp.asarray(v) * 2, [2.0, 4.0]),  # a tessel Array: converted
    (lambda v: np.asarray([2, 4], np.float32)[::-1][::-1], [2.0, 4.0]),  # a view: still C-contiguous
    (lambda v: np.asarray([[2.0], [4.0]], np.float32)[:, 0], [2.0, 4.0]),  # strided: converted
])
def test_callback_results_of_every_form(result, want):
    y = tessel.jit(lambda v: tessel.pure_callback(result, SD((2,), np.float32), v))(tnp.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(y), want)


def test_callback_scalar_results():
    spec = SD((), np.float32)
    assert float(tessel.io_callback(lambda v: v + np.float32(1), spec, tnp.asarray(1.0))) == 2.0  # np.float32
    assert float(tessel.io_callback(lambda v: 3.5, spec, tnp.asarray(1.0))) == 3.5  # a Python float
    with pytest.raises(tessel.TesselError, match=r"f64\[\].*f32\[\]"):
        float(tessel.io_callback(lambda v: np.float64(1), spec, tnp.asarray(1.0)))  # a wrong dtype is reported
    with pytest.raises(tessel.TesselError, match=r"f32\[1\].*f32\[\]"):
        float(tessel.io_callback(lambda v: np.ones(1, np.float32), spec, tnp.asarray(1.0)))  # and a wrong shape


def test_callback_complex_bool_and_int64_values():
    c = tessel.pure_callback(lambda v: v * 1j, SD((2,), np.complex64), tnp.asarray([1.0, 2.0]).astype(np.complex64))
    np.testing.assert_array_equal(np.asarray(c), [1j, 2j])
    b = tessel.pure_callback(lambda v: ~v, SD((2,), np.bool_), tnp.asarray([True, False]))
    np.testing.assert_array_equal(np.asarray(b), [False, True])
    with pytest.raises(tessel.TesselError, match=r"i64\[2\].*i32\[2\]"):
        np.asarray(tessel.pure_callback(lambda v: v.astype(np.int64), SD((2,), np.int32), tnp.asarray([1, 2])))


def test_callback_exception_in_direct_call_keeps_type():
    def cb(a, b):
        raise MyError(f"two arguments {a.shape} {b.shape}")

    y = tessel.jit(lambda a: tessel.io_callback(cb, SD((), np.float32), a, a))(tnp.asarray(1.0))
    with pytest.raises(MyError, match=r"two arguments \(\) \(\)") as info:
        float(y)
    assert "in cb" in "".join(traceback.format_exception(info.value))


def test_callbacks_in_a_loop_from_a_python_thread_and_a_tessel_thread():
    # The stream thread keeps its Python thread state between callbacks; a Python thread's
    # own state is used as it is. Both give the same values.
    f = tessel.jit(lambda n, x: tessel.lax.fori_loop(0, n, lambda i, c: tessel.io_callback(
        lambda v: v + np.float32(1), SD((), np.float32), c), x))
    assert float(f(tnp.asarray(1000), tnp.asarray(0.0))) == 1000.0
    out = []
    t = threading.Thread(target=lambda: out.append(float(f(tnp.asarray(50), tnp.asarray(1.0)))))
    t.start()
    t.join()
    assert out == [51.0]
