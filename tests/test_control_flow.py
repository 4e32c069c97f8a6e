"""tf.while_loop, tf.TensorArray, tf.IndexedSlices and Variable.scatter_nd_update (issue #32).

Gradients are checked against closed forms and against central finite differences in float64
(``mt.testing.check_grads`` style, written out here for the loop).
"""

import numpy as np
import pytest

import minitape as mt

# -- while_loop ----------


def test_while_loop_as_tensorflows_docs_example():
    i = mt.constant(0)
    r = mt.while_loop(lambda i: mt.less(i, 10), lambda i: (mt.add(i, 1),), [i])
    assert isinstance(r, list) and len(r) == 1 and int(r[0]) == 10 and r[0].dtype == mt.int32


def test_while_loop_structures_single_tensor_tuple_and_nested():
    assert int(mt.while_loop(lambda i: i < 4, lambda i: i + 1, mt.constant(0))) == 4
    out = mt.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (0, 0))
    assert isinstance(out, tuple) and [int(t) for t in out] == [5, 10]
    ijk_0 = (mt.constant(0), (mt.constant(1), mt.constant(2)))
    out = mt.while_loop(lambda i, p: i < 10, lambda i, p: (i + 1, (p[0] + p[1], p[0] - p[1])),
                        ijk_0)
    assert int(out[0]) == 10 and isinstance(out[1], tuple)
    # The loop of a single variable in a list may return it bare.
    assert int(mt.while_loop(lambda x: x < 3, lambda x: x + 1, [0])[0]) == 3


def test_maximum_iterations_stops_the_loop():
    out = mt.while_loop(lambda i: True, lambda i: i + 1, [mt.constant(0)], maximum_iterations=7)
    assert int(out[0]) == 7
    out = mt.while_loop(lambda i: i < 3, lambda i: i + 1, [0], maximum_iterations=mt.constant(10))
    assert int(out[0]) == 3
    assert int(mt.while_loop(lambda i: True, lambda i: i + 1, [5], maximum_iterations=0)[0]) == 5


def test_gradient_through_a_while_loop_is_the_gradient_of_the_iterations_that_ran():
    # x -> x * x until it exceeds 100: from 2, three squarings give x**8.
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y, = mt.while_loop(lambda y: y < 100.0, lambda y: (y * y,), [x])
    assert float(y) == 256.0
    assert float(tape.gradient(y, x)) == 8 * 2.0**7

    # Newton's iteration for sqrt(a), 6 steps, against central differences in float64.
    def newton(a):
        _, s = mt.while_loop(lambda i, s: i < 6, lambda i, s: (i + 1, 0.5 * (s + a / s)),
                             (mt.constant(0), mt.constant(1.0, mt.float64)))
        return s

    a = mt.Variable(np.float64(2.0))
    with mt.GradientTape() as tape:
        s = newton(a)
    h = 1e-6
    numeric = (float(newton(mt.constant(2.0 + h, mt.float64)))
               - float(newton(mt.constant(2.0 - h, mt.float64)))) / (2 * h)
    assert float(s) == pytest.approx(np.sqrt(2.0), rel=1e-12)
    assert float(tape.gradient(s, a)) == pytest.approx(numeric, rel=1e-6)


def test_while_loop_errors():
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        mt.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (0, 0))
    with pytest.raises(TypeError, match="cond must return a boolean"):
        mt.while_loop(lambda i: i + 1, lambda i: i + 1, [0])
    with pytest.raises(TypeError, match="cond and body must be callable"):
        mt.while_loop(True, lambda i: i, [0])
    with pytest.raises(ValueError, match="maximum_iterations must be >= 0"):
        mt.while_loop(lambda i: True, lambda i: i, [0], maximum_iterations=-1)
    with pytest.raises(ValueError, match="dtype int32 became float32"):
        mt.while_loop(lambda i: i < 3, lambda i: mt.cast(i, mt.float32) + 1.0, [0])


# -- TensorArray ----------

def test_tensor_array_write_read_stack_size():
    ta = mt.TensorArray(mt.float32, size=3)
    assert int(ta.size()) == 3 and ta.size().dtype == mt.int32 and ta.dtype == mt.float32
    ta = ta.write(0, [1.0, 2.0]).write(2, mt.constant([5.0, 6.0]))
    np.testing.assert_array_equal(ta.read(2).numpy(), [5.0, 6.0])
    np.testing.assert_array_equal(ta.read(1).numpy(), [0.0, 0.0])     # never written: zeros
    stacked = ta.stack()
    assert stacked.shape == (3, 2)
    np.testing.assert_array_equal(stacked.numpy(), [[1, 2], [0, 0], [5, 6]])
    assert ta.element_shape.as_list() == [2]


def test_tensor_array_in_place_writes_as_eager_tensorflow():
    ta = mt.TensorArray(mt.int32, size=2)
    ta.write(0, 7)              # eager TensorFlow changes the array even unassigned
    ta.write(1, 8)
    np.testing.assert_array_equal(ta.stack().numpy(), [7, 8])


def test_tensor_array_dynamic_size_unstack_gather_concat_scatter():
    ta = mt.TensorArray(mt.float32, size=0, dynamic_size=True)
    for i in range(4):
        ta = ta.write(i, mt.constant([float(i), float(i * i)]))
    assert int(ta.size()) == 4
    np.testing.assert_array_equal(ta.gather([3, 1]).numpy(), [[3, 9], [1, 1]])
    np.testing.assert_array_equal(ta.concat().numpy(), [0, 0, 1, 1, 2, 4, 3, 9])
    tb = mt.TensorArray(mt.float32, size=3).unstack(mt.constant([[1.0], [2.0], [3.0]]))
    np.testing.assert_array_equal(tb.read(1).numpy(), [2.0])
    tc = mt.TensorArray(mt.float32, size=3).scatter([2, 0], mt.constant([[9.0], [8.0]]))
    np.testing.assert_array_equal(tc.stack().numpy(), [[8.0], [0.0], [9.0]])
    empty = mt.TensorArray(mt.float32, size=0, element_shape=[2])
    assert empty.stack().shape == (0, 2)


def test_gradients_flow_through_write_stack_read_and_unstack():
    x = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape(persistent=True) as tape:
        ta = mt.TensorArray(mt.float32, size=3)
        for i in range(3):
            ta = ta.write(i, x[i] * x[i] * float(i + 1))      # (i + 1) x_i**2
        total = mt.reduce_sum(ta.stack())
        one = ta.read(2)
        rows = mt.TensorArray(mt.float32, size=3).unstack(x * 10.0)
        picked = rows.read(1)
    np.testing.assert_allclose(tape.gradient(total, x).numpy(), [2 * 1 * 1, 2 * 2 * 2, 2 * 3 * 3])
    np.testing.assert_allclose(tape.gradient(one, x).numpy(), [0, 0, 2 * 3 * 3])
    np.testing.assert_allclose(tape.gradient(picked, x).numpy(), [0, 10, 0])


def test_a_tensor_array_in_a_while_loop():
    # The running products of x, 1 to 4 factors: [x, x^2, x^3, x^4].
    x = mt.Variable(1.5)
    with mt.GradientTape() as tape:
        ta = mt.TensorArray(mt.float32, size=4)
        _, _, ta = mt.while_loop(lambda i, p, ta: i < 4,
                                 lambda i, p, ta: (i + 1, p * x, ta.write(i, p * x)),
                                 (mt.constant(0), mt.constant(1.0), ta))
        out = ta.stack()
        y = mt.reduce_sum(out)
    np.testing.assert_allclose(out.numpy(), [1.5, 1.5**2, 1.5**3, 1.5**4], rtol=1e-6)
    assert float(tape.gradient(y, x)) == pytest.approx(1 + 2 * 1.5 + 3 * 1.5**2 + 4 * 1.5**3,
                                                       rel=1e-6)


def test_tensor_array_errors():
    ta = mt.TensorArray(mt.float32, size=2)
    with pytest.raises(mt.errors.OutOfRangeError, match="Tried to write to index 2 but array "
                                                         "is not resizeable and size is: 2"):
        ta.write(2, 1.0)
    with pytest.raises(mt.errors.OutOfRangeError, match="Tried to read from index 5"):
        ta.read(5)
    with pytest.raises(mt.errors.OutOfRangeError, match="negative"):
        ta.read(-1)
    with pytest.raises(mt.errors.InvalidArgumentError, match="TensorArray dtype is float32 but "
                                                              "Op is trying to write dtype int32"):
        ta.write(0, mt.constant(1))
    ta.write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="Incompatible shape"):
        ta.write(1, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="dtype is required"):
        mt.TensorArray(None)


# -- IndexedSlices ----------

def test_indexed_slices_convert_to_the_dense_tensor():
    s = mt.IndexedSlices(mt.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [2, 0, 2],
                         dense_shape=[4, 2])
    assert s.dtype == mt.float32 and s.shape.as_list() == [4, 2]
    assert s.dense_shape.numpy().tolist() == [4, 2] and s.indices.numpy().tolist() == [2, 0, 2]
    want = np.array([[3, 4], [0, 0], [6, 8], [0, 0]], np.float32)   # index 2 twice: added
    np.testing.assert_array_equal(mt.convert_to_tensor(s).numpy(), want)
    np.testing.assert_array_equal(np.asarray(s), want)
    assert "IndexedSlices(indices=" in repr(s)


def test_indexed_slices_conversion_is_differentiable_in_values():
    v = mt.Variable([[1.0, 2.0], [3.0, 4.0]])
    with mt.GradientTape() as tape:
        dense = mt.convert_to_tensor(mt.IndexedSlices(v, [1, 1], dense_shape=[3, 2]))
        y = mt.reduce_sum(dense * mt.constant([[1.0, 1.0], [2.0, 3.0], [5.0, 5.0]]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [[2, 3], [2, 3]])


def test_gather_gradient_is_the_dense_tensor_an_indexed_slices_stands_for():
    params = mt.Variable([[1.0], [2.0], [3.0], [4.0]])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(mt.gather(params, [3, 0, 3]))
    g = tape.gradient(y, params)
    # TensorFlow: IndexedSlices(values=ones(3, 1), indices=[3, 0, 3], dense_shape=[4, 1]).
    tf_like = mt.IndexedSlices(mt.ones([3, 1]), [3, 0, 3], dense_shape=[4, 1])
    assert isinstance(g, mt.Tensor) and not isinstance(g, mt.IndexedSlices)
    np.testing.assert_array_equal(g.numpy(), mt.convert_to_tensor(tf_like).numpy())
    np.testing.assert_array_equal(mt.convert_to_tensor(g).numpy(), [[1], [0], [0], [2]])


def test_an_optimizer_takes_indexed_slices_gradients():
    v = mt.Variable([[1.0], [1.0], [1.0]])
    mt.optimizers.SGD(0.5).apply_gradients([(mt.IndexedSlices(mt.constant([[2.0]]), [1],
                                                              dense_shape=[3, 1]), v)])
    np.testing.assert_array_equal(v.numpy(), [[1.0], [0.0], [1.0]])


def test_indexed_slices_errors():
    with pytest.raises(TypeError, match="indices must be a 1-D list or Tensor of ints"):
        mt.IndexedSlices(mt.ones([2, 2]), [0.5, 1.0])
    with pytest.raises(ValueError, match="one row per index"):
        mt.IndexedSlices(mt.ones([2, 2]), [0])
    with pytest.raises(ValueError, match=r"indices must be in \[0, 2\)"):
        mt.IndexedSlices(mt.ones([1, 2]), [5], dense_shape=[2, 2])


# -- Variable.scatter_nd_update ----------

def test_scatter_nd_update_elements_and_slices():
    v = mt.Variable([1, 2, 3, 4, 5, 6, 7, 8])
    v.scatter_nd_update([[4], [3], [1], [7]], [9, 10, 11, 12])   # TensorFlow's doc example
    np.testing.assert_array_equal(v.numpy(), [1, 11, 3, 10, 9, 6, 7, 12])
    m = mt.Variable(np.zeros((3, 2), np.float32))
    assert m.scatter_nd_update([[2], [0]], [[1.0, 2.0], [3.0, 4.0]]) is m
    np.testing.assert_array_equal(m.numpy(), [[3, 4], [0, 0], [1, 2]])
    m.scatter_nd_update([[1, 1]], [7.0])
    np.testing.assert_array_equal(m.numpy(), [[3, 4], [0, 7], [1, 2]])
    m.scatter_nd_add([[0, 0], [0, 0]], [1.0, 1.0])       # repeated indices add up
    m.scatter_nd_sub([[2, 1]], [2.0])
    np.testing.assert_array_equal(m.numpy(), [[5, 4], [0, 7], [1, 0]])


def test_scatter_nd_update_is_not_recorded_and_keeps_saved_values():
    v = mt.Variable([1.0, 2.0])
    with mt.GradientTape() as tape:
        y = v * v
        v.scatter_nd_update([[0]], [10.0])
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0])   # the old value
    np.testing.assert_array_equal(v.numpy(), [10.0, 2.0])


def test_scatter_nd_update_errors():
    v = mt.Variable([[1.0, 2.0], [3.0, 4.0]], name="v")
    with pytest.raises(ValueError, match=r"updates have shape \(3,\), expected \(2,\)"):
        v.scatter_nd_update([[0, 0], [1, 1]], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="out of range"):
        v.scatter_nd_update([[2]], [[1.0, 1.0]])
    with pytest.raises(TypeError, match="indices must be integers"):
        v.scatter_nd_update([[0.5]], [[1.0, 1.0]])
    with pytest.raises(ValueError, match="has only 2 axes"):
        v.scatter_nd_update([[0, 0, 0]], [1.0])
    with pytest.raises(TypeError):
        v.scatter_nd_update([[0, 0]], mt.constant([1.0], mt.float64))
