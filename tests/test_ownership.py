"""Tensors own their data (issue #18, item 1; API.md, third wave).

Every way an ndarray enters minitape (``convert_to_tensor``, ``constant``, ``Variable``,
``assign``, an operand of an op, an index array, ``mt.vjp``, ``mt.primitive``) gives a Tensor
that no later write into the caller's array can change, as in TensorFlow. Every way a value
leaves (``numpy()``, ``np.asarray``) is a read-only view (``Variable.numpy()``: a copy), so no
one can write into a Tensor, a Variable or a value the tape saved for the backward pass.

The property tests (hypothesis) run a table of public ops on the caller's arrays and check
that no result shares memory with them and that writing into them afterwards changes neither
the result nor the gradient.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitape as mt

READ_ONLY = "read-only"


# -- arrays that come in ---------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    mt.convert_to_tensor,
    mt.constant,
    mt.Variable,
    lambda a: mt.convert_to_tensor(a, dtype=mt.float32),
    lambda a: mt.identity(a),
    lambda a: mt.reshape(a, [3]),
], ids=["convert_to_tensor", "constant", "Variable", "convert_to_tensor_dtype", "identity",
        "reshape"])
def test_a_later_write_into_the_callers_array_changes_nothing(make):
    a = np.ones(3, np.float32)
    t = make(a)
    a[:] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])


def test_a_read_only_view_of_a_writable_array_is_copied_too():
    a = np.ones(3, np.float32)
    view = a[:]
    view.flags.writeable = False           # read-only, but a still writes into its memory
    t = mt.convert_to_tensor(view)
    a[:] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])


def test_a_tensors_own_numpy_view_comes_back_without_a_copy():
    t = mt.constant([1.0, 2.0])
    back = mt.convert_to_tensor(t.numpy())
    assert np.shares_memory(back._value, t._value)   # safe: nobody can write into either


def test_an_operand_of_an_op_is_kept_by_value_for_the_gradient():
    a = np.array([2.0, 3.0], np.float32)
    v = mt.Variable([1.0, 1.0])
    with mt.GradientTape(persistent=True) as tape:
        y = mt.reduce_sum(v * a)
        z = mt.reduce_sum(mt.matmul(mt.reshape(v, [1, 2]), a.reshape(2, 1)))
    a[:] = 100.0
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(z, v).numpy(), [2.0, 3.0])
    assert float(y) == 5.0


def test_vjp_keeps_its_primals_by_value():
    a = np.array([1.0, 2.0])
    out, vjp_fn = mt.vjp(lambda x: x * x, a)
    a[:] = 10.0
    np.testing.assert_array_equal(out.numpy(), [1.0, 4.0])
    (g,) = vjp_fn(mt.ones([2], mt.float64))
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])


def test_assign_keeps_the_value_not_the_array():
    v = mt.Variable([0.0, 0.0])
    a = np.array([1.0, 2.0], np.float32)
    v.assign(a)
    a[:] = 9.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_an_index_array_is_kept_by_value_for_the_gradient():
    v = mt.Variable([1.0, 2.0, 3.0])
    index = np.array([0, 0])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(v[index])
    index[:] = 2
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 0.0, 0.0])


def test_a_primitive_sees_read_only_inputs_and_its_outputs_are_copied():
    kept = []

    @mt.primitive("OwnershipDemo")
    def double(x):
        kept.append(x)
        out = x * 2
        kept.append(out)
        return out

    t = mt.constant([1.0, 2.0])
    y = double(t)
    with pytest.raises(ValueError, match=READ_ONLY):
        kept[0][0] = 7.0                     # the input is a read-only view of t
    kept[1][:] = 0.0                         # the function kept its result: y is a copy
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


# -- arrays that go out ------------------------------------------------------------------------

def test_numpy_is_a_read_only_view():
    t = mt.constant([1.0, 2.0])
    n = t.numpy()
    with pytest.raises(ValueError, match=READ_ONLY):
        n[0] = 5.0
    with pytest.raises(ValueError):
        n.flags.writeable = True             # nor can it be made writable again
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_asarray_is_a_read_only_view_and_the_saved_values_stay():
    x = mt.Variable([1.0, 2.0])
    with mt.GradientTape() as tape:
        h = x * 3.0
        y = mt.reduce_sum(h * h)             # saves h for the gradient
    inner = np.asarray(h)
    with pytest.raises(ValueError, match=READ_ONLY):
        inner[:] = 0.0
    with pytest.raises(ValueError, match=READ_ONLY):
        np.asarray(x)[0] = 10.0              # a Variable changes only through assign
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [18.0, 36.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_a_view_of_a_view_cannot_be_made_writable():
    t = mt.reshape(mt.constant([1.0, 2.0, 3.0, 4.0]), [2, 2])   # a NumPy view inside
    n = t.numpy()
    with pytest.raises(ValueError):
        n.flags.writeable = True


def test_copies_are_writable_and_separate():
    t = mt.constant([1.0, 2.0])
    for copy in (np.array(t), np.asarray(t, dtype=np.float64), mt.Variable(t).numpy()):
        copy[0] = 9.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_asarray_copy_false_with_another_dtype_raises():
    with pytest.raises(ValueError, match=r"float64.*float32.*copy"):
        np.asarray(mt.constant([1.0]), dtype=np.float64, copy=False)


def test_assign_still_works_after_the_value_was_handed_out():
    v = mt.Variable([1.0, 2.0])
    before = np.asarray(v)
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(before, [1.0, 2.0])    # the old value, unchanged
    np.testing.assert_array_equal(v.numpy(), [2.0, 3.0])


@pytest.mark.parametrize("method", ["assign_add", "assign_sub"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_assign_add_and_sub_store_a_new_array_of_their_own(method, shape):
    # The sum or difference is stored as it is (no copy of it): it must be a fresh ndarray
    # of the Variable's shape and dtype, shared with nothing, and the old array untouched.
    v = mt.Variable(np.ones(shape, np.float32))
    delta = mt.constant(np.full(shape, 0.5, np.float32))
    old = v._value
    with mt.GradientTape() as tape:
        y = v * v                               # saves the old value
    getattr(v, method)(delta)
    new = v._value
    assert type(new) is np.ndarray and new.shape == shape and new.dtype == np.float32
    assert new is not old and not np.shares_memory(new, old)
    assert not np.shares_memory(new, delta._value)
    np.testing.assert_array_equal(old, np.ones(shape))
    np.testing.assert_array_equal(new, np.full(shape, 1.5 if method == "assign_add" else 0.5))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), np.full(shape, 2.0))  # at 1.0


# -- property: no public op returns a result sharing memory with a caller's array ------------------

def _unary_ops():
    return {
        "convert_to_tensor": mt.convert_to_tensor,
        "constant": mt.constant,
        "Variable": mt.Variable,
        "identity": mt.identity,
        "stop_gradient": mt.stop_gradient,
        "reshape": lambda a: mt.reshape(a, [-1]),
        "transpose": mt.transpose,
        "expand_dims": lambda a: mt.expand_dims(a, 0),
        "squeeze": mt.squeeze,
        "negative": mt.negative,
        "abs": mt.abs,
        "exp": mt.exp,
        "tanh": mt.math.tanh,
        "relu": mt.nn.relu,
        "softmax": mt.nn.softmax,
        "cast": lambda a: mt.cast(a, mt.float32),
        "reduce_sum_none": lambda a: mt.reduce_sum(a, axis=[]),
        "reduce_max": lambda a: mt.reduce_max(a, axis=0),
        "getitem": lambda a: mt.convert_to_tensor(a)[...],
        "gather": lambda a: mt.gather(a, [0]),
        "concat_one": lambda a: mt.concat([a], axis=0),
        "stack": lambda a: mt.stack([a]),
        "unstack": lambda a: mt.unstack(a)[0],
        "tile_once": lambda a: mt.tile(a, [1] * a.ndim),
        "pad_nothing": lambda a: mt.pad(a, [[0, 0]] * a.ndim),
        "broadcast_to": lambda a: mt.broadcast_to(a, a.shape),
        "clip_by_value": lambda a: mt.clip_by_value(a, -1e30, 1e30),
        "cumsum": lambda a: mt.math.cumsum(a),
        "reverse": lambda a: mt.reverse(a, [0]),
        "split": lambda a: mt.split(a, 1)[0],
        "einsum": lambda a: mt.einsum("i...->i...", a),
        "fill": lambda a: mt.fill([2], a[(0,) * a.ndim]),
    }


def _binary_ops():
    return {
        "add": mt.add,
        "multiply": mt.multiply,
        "maximum": mt.maximum,
        "where": lambda a, b: mt.where(mt.greater(a, b), a, b),
        "operator": lambda a, b: mt.constant(1.0, mt.float64) * a + b,
        "subtract": mt.subtract,
        "divide": lambda a, b: mt.divide(a, b * b + 1.0),
        "minimum": mt.minimum,
        "concat": lambda a, b: mt.concat([a, b], axis=0),
        "stack": lambda a, b: mt.stack([a, b], axis=-1),
        "einsum": lambda a, b: mt.einsum("...,...->...", a, b),
        "matmul": lambda a, b: mt.matmul(mt.reshape(a, [-1, 1]), mt.reshape(b, [1, -1])),
        "tensordot": lambda a, b: mt.tensordot(a, b, axes=a.ndim),
        "pad_value": lambda a, b: mt.pad(a, [[1, 0]] + [[0, 0]] * (a.ndim - 1),
                                         constant_values=b.flat[0]),
    }


arrays = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                    elements=st.floats(-10, 10))


def _value(t):
    return np.array(t._value)


@pytest.mark.parametrize("name", sorted(_unary_ops()))
@settings(max_examples=15, deadline=None)
@given(a=arrays)
def test_no_unary_op_result_shares_memory_with_the_callers_array(name, a):
    op = _unary_ops()[name]
    original = a.copy()
    out = op(a)
    assert not np.shares_memory(out._value, a), name
    expected = _value(out)
    a[...] = 123.0
    np.testing.assert_array_equal(_value(out), expected)
    np.testing.assert_array_equal(_value(op(original)), expected)


@pytest.mark.parametrize("name", sorted(_binary_ops()))
@settings(max_examples=15, deadline=None)
@given(a=arrays, data=st.data())
def test_no_binary_op_result_shares_memory_with_the_callers_arrays(name, a, data):
    b = data.draw(hnp.arrays(np.float64, a.shape, elements=st.floats(-10, 10)))
    op = _binary_ops()[name]
    out = op(a, b)
    assert not np.shares_memory(out._value, a) and not np.shares_memory(out._value, b)
    expected = _value(out)
    a[...] = 7.0
    b[...] = -7.0
    np.testing.assert_array_equal(_value(out), expected)


@settings(max_examples=20, deadline=None)
@given(a=arrays)
def test_gradients_do_not_see_later_writes(a):
    x = mt.Variable(np.ones(a.shape))
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(x * a * a)         # saves the operand a for the gradient
    expected = a * a                         # d/dx sum(x * a * a), taken before the write
    a[...] = 3.0
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), expected)
