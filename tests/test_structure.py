"""How the tape is wired: graph shapes, depth, persistence, nesting, threads and the value rules.

Every expected number is a closed form (or a NumPy computation), never a value that minitape
produced itself.
"""

import sys
import threading
import warnings

import numpy as np
import pytest

import minitape as mt


def grad_of(f, x, **kwargs):
    """d f(x) / dx with a fresh tape, watching the Tensor x."""
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, **kwargs)


# -- Graph shapes ------------------------------------------------------------------------------

def test_fan_out_sums_every_use():
    # z = x*x + sin(x) + x: x feeds three ops; dz/dx = 2x + cos(x) + 1.
    x = mt.constant([0.3, -1.2, 2.0], dtype=mt.float64)
    g = grad_of(lambda x: x * x + mt.math.sin(x) + x, x)
    xv = x.numpy()
    np.testing.assert_allclose(g.numpy(), 2 * xv + np.cos(xv) + 1, rtol=1e-12)


def test_diamond():
    # a = 2x feeds b = sin(a) and c = cos(a), which meet again in d = b * c = sin(4x) / 2.
    x = mt.constant([0.1, 0.7, -2.3], dtype=mt.float64)

    def f(x):
        a = x * 2.0
        return mt.math.sin(a) * mt.math.cos(a)

    np.testing.assert_allclose(grad_of(f, x).numpy(), 2 * np.cos(4 * x.numpy()), rtol=1e-12)


def test_same_tensor_as_both_operands():
    x = mt.constant(3.0)
    assert grad_of(lambda x: x * x, x).numpy() == 6.0
    assert grad_of(lambda x: x + x, x).numpy() == 2.0
    assert grad_of(lambda x: x - x, x).numpy() == 0.0


def test_a_million_op_chain_does_not_recurse():
    # 999,999 identity ops then one Mul: dy/dx = 3. The backward pass must be iterative;
    # Python's default recursion limit (1000) would not survive a recursive one.
    limit = sys.getrecursionlimit()
    x = mt.constant(2.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(999_999):
            y = mt.identity(y)
        y = y * 3.0
    assert len(tape._ops) == 1_000_000
    assert tape.gradient(y, x).numpy() == 3.0
    assert sys.getrecursionlimit() == limit


def test_long_chain_of_real_arithmetic():
    # 10,000 multiplications by 1.0001 then a sign flip: dy/dx = -1.0001**10000 (float64).
    x = mt.constant(1.5, dtype=mt.float64)

    def f(x):
        for _ in range(10_000):
            x = x * 1.0001
        return -x

    np.testing.assert_allclose(grad_of(f, x).numpy(), -(1.0001 ** 10_000), rtol=1e-10)


# -- Persistent tapes, nesting -----------------------------------------------------------------

def test_persistent_tape_asked_100_times():
    x = mt.Variable([0.5, -1.0, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        y = mt.reduce_sum(mt.math.tanh(x) * x**2)
    first = tape.gradient(y, x).numpy()
    xv = x.numpy().astype(np.float64)
    t = np.tanh(xv)
    np.testing.assert_allclose(first, (1 - t**2) * xv**2 + 2 * xv * t, rtol=1e-6)
    for _ in range(99):
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), first)


def test_third_derivative_through_three_nested_tapes():
    # f = x^5 + exp(2x): f' = 5x^4 + 2e^{2x}, f'' = 20x^3 + 4e^{2x}, f''' = 60x^2 + 8e^{2x}.
    x = mt.Variable(0.7, dtype=mt.float64)
    with mt.GradientTape() as t3:
        with mt.GradientTape() as t2:
            with mt.GradientTape() as t1:
                y = x**5 + mt.exp(2.0 * x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    xv = 0.7
    np.testing.assert_allclose(d1.numpy(), 5 * xv**4 + 2 * np.exp(2 * xv), rtol=1e-12)
    np.testing.assert_allclose(d2.numpy(), 20 * xv**3 + 4 * np.exp(2 * xv), rtol=1e-12)
    np.testing.assert_allclose(d3.numpy(), 60 * xv**2 + 8 * np.exp(2 * xv), rtol=1e-12)


def test_non_persistent_tape_asked_twice_raises():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 4.0
    with pytest.raises(RuntimeError, match=r"persistent=True"):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=r"persistent=True"):
        tape.jacobian(y, x)


def test_gradient_inside_a_persistent_tapes_context_warns_and_records():
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x**3
        with pytest.warns(UserWarning, match=r"^Calling GradientTape\.gradient on a persistent "
                                             r"tape inside its context is significantly less "
                                             r"efficient than calling it outside the context"):
            dy_dx = tape.gradient(y, x)
    d2y_dx2 = tape.gradient(dy_dx, x)
    assert dy_dx.numpy() == 27.0     # 3x^2
    assert d2y_dx2.numpy() == 18.0   # 6x


def test_gradient_inside_a_non_persistent_tapes_context_stops_recording():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = x**3
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # no warning for a non-persistent tape
            dy_dx = tape.gradient(y, x)
        n_ops = len(tape._ops)
        z = dy_dx * x                        # not recorded any more
        assert len(tape._ops) == n_ops
    assert dy_dx.numpy() == 27.0
    assert z.numpy() == 81.0
    # The tape is out of the thread's list of recording tapes: a new op is not seen by it.
    with mt.GradientTape() as other:
        w = x * 2.0
    assert other.gradient(w, x).numpy() == 2.0
    assert len(tape._ops) == n_ops


def test_threads_each_record_only_their_own_ops():
    shared = mt.constant([1.0, 2.0])
    barrier = threading.Barrier(2, timeout=30)
    results, errors = {}, []

    def worker(name, factor, n_ops):
        try:
            with mt.GradientTape() as tape:
                tape.watch(shared)
                barrier.wait()                 # both tapes are recording now
                y = shared
                for _ in range(n_ops):
                    y = y * factor
                    barrier.wait()             # the other thread's op runs in between
                s = mt.reduce_sum(y)
                results[name] = (len(tape._ops), tape.gradient(s, shared))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=("a", 2.0, 5)),
               threading.Thread(target=worker, args=("b", 3.0, 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    n_a, g_a = results["a"]
    n_b, g_b = results["b"]
    assert n_a == 6 and n_b == 6   # five Mul each, plus the Sum; never the other's ops
    np.testing.assert_array_equal(g_a.numpy(), [32.0, 32.0])    # 2^5
    np.testing.assert_array_equal(g_b.numpy(), [243.0, 243.0])  # 3^5


def test_another_threads_ops_are_not_recorded():
    x = mt.constant(2.0)
    done = threading.Event()
    with mt.GradientTape() as tape:
        tape.watch(x)

        def other():
            x * 5.0   # same watched tensor, other thread: not recorded here
            done.set()

        t = threading.Thread(target=other)
        t.start()
        t.join()
        y = x * 7.0
    assert done.is_set()
    assert len(tape._ops) == 1
    assert tape.gradient(y, x).numpy() == 7.0


# -- gradient's arguments ------------------------------------------------------------------------

def test_output_gradients_weight_the_target():
    x = mt.constant([1.0, 2.0, 3.0])
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=mt.constant([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g.numpy(), 2 * np.float32([1, 2, 3]) * [1, 10, 100])


def test_output_gradients_for_several_targets():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        a = x * x
        b = x * 3.0
    g = tape.gradient([a, b], x, output_gradients=[mt.constant(0.5), mt.constant(-1.0)])
    assert g.numpy() == 0.5 * 4.0 - 1.0 * 3.0


def test_unconnected_gradients_zero():
    x = mt.Variable([[1.0, 2.0]])
    y = mt.Variable(3.0)
    c = mt.constant(1.0, dtype=mt.float64)
    with mt.GradientTape() as tape:
        tape.watch(c)
        z = y**2
    grads = tape.gradient(z, {"x": x, "y": y, "c": c},
                          unconnected_gradients=mt.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(grads["x"].numpy(), np.zeros((1, 2), np.float32))
    assert grads["x"].dtype == mt.float32
    assert grads["c"].numpy() == 0.0 and grads["c"].dtype == mt.float64
    assert grads["y"].numpy() == 6.0
    assert tape_none(z, x) is None


def tape_none(z, x):
    with mt.GradientTape() as tape:
        zz = z * 1.0
    return tape.gradient(zz, x, unconnected_gradients=mt.UnconnectedGradients.NONE)


def test_nested_structures_of_sources_and_targets():
    v = mt.Variable(3.0)
    w = mt.Variable([1.0, 2.0])
    with mt.GradientTape() as tape:
        targets = {"a": v * 2.0, "b": [v * w, (mt.reduce_sum(w * w),)]}
    sources = {"s": [v, (w,)], "t": (v, {"u": w})}
    grads = tape.gradient(targets, sources)
    # sum of targets = 2v + v(w0 + w1) + w0^2 + w1^2
    assert set(grads) == {"s", "t"}
    assert isinstance(grads["s"], list) and isinstance(grads["s"][1], tuple)
    assert isinstance(grads["t"], tuple) and isinstance(grads["t"][1], dict)
    dv, dw = 2.0 + 1.0 + 2.0, [3.0 + 2.0, 3.0 + 4.0]
    assert grads["s"][0].numpy() == dv and grads["t"][0].numpy() == dv
    np.testing.assert_array_equal(grads["s"][1][0].numpy(), dw)
    np.testing.assert_array_equal(grads["t"][1]["u"].numpy(), dw)


def test_intermediate_results_and_the_target_itself():
    x = mt.constant(2.0)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = mt.math.sin(y)
    np.testing.assert_allclose(tape.gradient(z, y).numpy(), np.cos(4.0), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), np.cos(4.0) * 4.0, rtol=1e-6)
    assert tape.gradient(z, z).numpy() == 1.0
    assert tape.gradient(y, [y, z])[1] is None   # z is downstream of y: no path y -> z


def test_assign_cuts_history():
    x = mt.Variable(2.0)
    v = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        v.assign(x * 3.0)    # v = 6, but the tape cannot see through assign
        y = v * v
    gx, gv = tape.gradient(y, [x, v])
    assert gx is None
    assert gv.numpy() == 12.0    # 2 v with the new value


def test_assign_add_keeps_the_variable_watched():
    x = mt.Variable(2.0)
    seen = []
    for _ in range(2):
        with mt.GradientTape() as tape:
            y = x * x
        seen.append(float(tape.gradient(y, x)))
        x.assign_add(1.0)
    assert seen == [4.0, 6.0]
    assert isinstance(x, mt.Variable)


def test_variable_replaced_by_a_tensor():
    x = mt.Variable(2.0)
    x = x + 1
    assert type(x) is mt.Tensor
    with mt.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_integer_path_gives_none():
    x = mt.constant(2.7)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.cast(mt.cast(x, mt.int32), mt.float32) * x   # the int path carries no gradient
    assert tape.gradient(y, x).numpy() == np.float32(2.0)   # only d(2 * x)/dx


def test_integer_watch_warns():
    x = mt.constant([1, 2])
    with mt.GradientTape() as tape:
        with pytest.warns(UserWarning, match="must be floating.*got int32"):
            tape.watch(x)
        y = x * 2
    assert y.dtype == mt.int32
    assert tape.gradient(y, x) is None


# -- Tensors meeting NumPy and Python -----------------------------------------------------------

def test_ndarray_on_the_left_gives_a_recorded_tensor():
    t = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape() as tape:
        y = np.float32([10.0, 20.0, 30.0]) + t
        z = np.float32([2.0, 2.0, 2.0]) * y
    assert type(y) is mt.Tensor and type(z) is mt.Tensor
    np.testing.assert_array_equal(z.numpy(), [22.0, 44.0, 66.0])
    np.testing.assert_array_equal(tape.gradient(z, t).numpy(), [2.0, 2.0, 2.0])


def test_list_matmul_on_the_left_gives_a_recorded_tensor():
    w = mt.Variable([[1.0], [2.0], [3.0]])
    with mt.GradientTape() as tape:
        y = [[1., 2., 3.]] @ w
    assert type(y) is mt.Tensor and y.shape == (1, 1) and y.numpy()[0, 0] == 14.0
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [[1.0], [2.0], [3.0]])


def test_numpy_functions_leave_minitape():
    t = mt.constant([1.0, 2.0, 3.0])
    m = np.mean(t)
    assert not isinstance(m, mt.Tensor)
    assert isinstance(m, (np.ndarray, np.generic)) and m == 2.0
    assert type(np.mean(mt.ones((2, 3)), axis=0)) is np.ndarray
    s = np.sin(t)
    assert type(s) is np.ndarray
    np.testing.assert_allclose(s, np.sin([1.0, 2.0, 3.0]), rtol=1e-6)


@pytest.mark.parametrize("value, branch", [(1.0, "pos"), (-1.0, "neg")])
def test_python_if_on_a_tensor(value, branch):
    x = mt.constant(value)
    taken = "pos" if x > 0.0 else "neg"
    assert taken == branch
    assert float(x) == value
    assert bool(mt.constant([0.0])) is False


def test_indexing_and_slicing_have_gradients():
    x = mt.Variable([1.0, 2.0, 3.0, 4.0])
    m = mt.Variable([[1.0, 2.0], [3.0, 4.0]])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(x[1:3] * 4.0) + x[-1] ** 2 + mt.reduce_sum(x[::2]) \
            + mt.reduce_sum(mt.gather(x, [0, 0])) + m[1, 0] * m[:, 1][0]
    gx, gm = tape.gradient(y, [x, m])
    # x0: in x[::2] once, gathered twice -> 3; x1: 4; x2: 4 + 1; x3: 2 * 4
    np.testing.assert_array_equal(gx.numpy(), [3.0, 4.0, 5.0, 8.0])
    # m[1,0] * m[0,1]
    np.testing.assert_array_equal(gm.numpy(), [[0.0, 3.0], [2.0, 0.0]])


# -- dtype rules ---------------------------------------------------------------------------------

def test_default_dtypes():
    assert mt.constant(1.0).dtype == mt.float32
    assert mt.constant([1.0, 2.0]).dtype == mt.float32
    assert mt.constant(1).dtype == mt.int32
    assert mt.constant([1, 2]).dtype == mt.int32
    assert mt.constant(np.zeros(2)).dtype == mt.float64
    assert mt.Variable(1.0).dtype == mt.float32
    assert mt.Variable(1.0).name == "Variable"


def test_python_scalars_take_the_tensor_dtype():
    assert (mt.constant(1.0, dtype=mt.float64) * 2.5).dtype == mt.float64
    assert (mt.constant([1, 2]) * 2).dtype == mt.int32
    assert (2 * mt.constant([1.0], dtype=mt.float16)).dtype == mt.float16


def test_no_silent_casting_between_tensors():
    a = mt.constant([1.0, 2.0])
    b = mt.constant([1, 2])
    with pytest.raises(TypeError, match=r"float32.*int32.*mt\.cast"):
        a + b
    with pytest.raises(TypeError, match=r"float32.*float64.*mt\.cast"):
        a * mt.constant([1.0, 2.0], dtype=mt.float64)
    np.testing.assert_array_equal((a + mt.cast(b, mt.float32)).numpy(), [2.0, 4.0])


def test_float_scalar_with_an_int_tensor_is_a_type_error():
    with pytest.raises(TypeError, match=r"2\.5.*int32"):
        mt.constant([1, 2]) * 2.5
