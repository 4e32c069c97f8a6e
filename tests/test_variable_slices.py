"""Assigning into a slice of a Variable: ``v[1, 2].assign(9)`` (issue #20), as TensorFlow.

``v[key]`` on a Variable is a read of that slice (a Tensor, recorded like any indexing) that
also offers ``assign``, ``assign_add`` and ``assign_sub`` writing into the Variable, with the
shape and dtype rules of ``Variable.assign``; no tape records the writes. A plain Tensor is
immutable: the same calls on it are clear errors. Expected values come from NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt


def _variable():
    return mt.Variable(np.arange(12, dtype=np.float32).reshape(3, 4), name="X_var")


def test_assign_one_element():
    v = _variable()
    expected = v.numpy()
    out = v[1, 2].assign(9)
    expected[1, 2] = 9
    np.testing.assert_array_equal(v.numpy(), expected)
    assert out is v  # TensorFlow returns the Variable, too


def test_assign_rows_the_textbook_way():
    # d2l "Data manipulation", TensorFlow edition.
    v = _variable()
    expected = v.numpy()
    v[0:2, :].assign(mt.ones(v[0:2, :].shape, dtype=mt.float32) * 12)
    expected[0:2, :] = 12
    np.testing.assert_array_equal(v.numpy(), expected)
    assert v.dtype == np.float32 and v.shape == (3, 4)


@pytest.mark.parametrize("key", [
    (slice(None), 1), (-1, slice(None, None, 2)), (Ellipsis, 0), (slice(1, None),), 2,
    (mt.constant(1), slice(1, 3)),
])
def test_assign_add_and_assign_sub_on_slices(key):
    v = _variable()
    expected = v.numpy()
    np_key = tuple(int(k) if isinstance(k, mt.Tensor) else k for k in key) \
        if isinstance(key, tuple) else key
    shape = expected[np_key].shape
    delta = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    v[key].assign_add(delta)
    expected[np_key] += delta
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6)
    v[key].assign_sub(2 * delta)
    expected[np_key] -= 2 * delta
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6)


def test_assign_add_broadcasts_the_delta_as_variable_assign_add_does():
    v = _variable()
    expected = v.numpy()
    v[0:2, :].assign_add(1.5)
    v[:, 1:3].assign_sub([1.0, 2.0])
    expected[0:2, :] += 1.5
    expected[:, 1:3] -= [1.0, 2.0]
    np.testing.assert_array_equal(v.numpy(), expected)


def test_the_slice_is_the_value_read_and_later_writes_do_not_change_it():
    v = _variable()
    s = v[1]
    assert isinstance(s, mt.Tensor) and not isinstance(s, mt.Variable)
    np.testing.assert_array_equal(s.numpy(), [4, 5, 6, 7])
    s.assign([0.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(s.numpy(), [4, 5, 6, 7])  # a Tensor: the value when read
    np.testing.assert_array_equal(v.numpy()[1], [0, 0, 0, 0])
    assert repr(s).startswith("<mt.Tensor: shape=(4,)")


def test_a_slice_written_after_another_write_uses_the_current_value():
    v = _variable()
    row = v[0]
    v[0, 0].assign(100.0)
    row.assign_add(1.0)  # adds to the Variable's current row, as TensorFlow's op does
    np.testing.assert_array_equal(v.numpy()[0], [101, 2, 3, 4])


def test_what_a_tape_saved_before_a_write_stays_valid():
    v = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(v * v)
    v[0].assign(10.0)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0, 6.0])


def test_reading_a_slice_is_differentiable():
    v = _variable()
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(v[0] * v[0])
    expected = np.zeros((3, 4), np.float32)
    expected[0] = 2 * v.numpy()[0]
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), expected)


def test_no_tape_records_the_writes():
    v = _variable()
    with mt.GradientTape(persistent=True) as tape:
        slices = v[1, 2], v[0:2, :], v[2]  # three reads: recorded, as any indexing
        recorded = [op.type for op in tape._ops]
        slices[0].assign(9.0)
        slices[1].assign_add(1.0)
        slices[2].assign_sub(1.0)
        assert [op.type for op in tape._ops] == recorded == ["StridedSlice"] * 3
        y = mt.reduce_sum(v * 1.0)
    # The gradient flows through the reads only; the writes cut history as Variable.assign.
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), np.ones((3, 4)))
    assert tape.gradient(y, slices[1]) is None


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, words", [
    (lambda v: v[0:2, :].assign(mt.ones((3, 4))), ["(3, 4)", "(2, 4)", "[0:2, :]", "X_var"]),
    (lambda v: v[1, 2].assign([1.0, 2.0]), ["(2,)", "has shape ()"]),
    (lambda v: v[0].assign(2.5), ["has shape ()", "(4,)"]),  # as Variable.assign: no broadcast
    (lambda v: v[0].assign_add([1.0, 2.0]), ["assign_add", "(2,)", "(4,)"]),
    (lambda v: v[:, ::2].assign_sub(mt.ones((3, 4))), ["assign_sub", "[:, ::2]"]),
])
def test_wrong_shape_raises_value_error(call, words):
    v = _variable()
    before = v.numpy()
    with pytest.raises(ValueError) as info:
        call(v)
    for word in words:
        assert word in str(info.value)
    np.testing.assert_array_equal(v.numpy(), before)  # nothing written


@pytest.mark.parametrize("call", [
    lambda v: v[0].assign(mt.constant([1, 2, 3, 4])),                  # an int32 Tensor
    lambda v: v[0].assign(mt.constant([1.0, 2.0, 3.0, 4.0], mt.float64)),
    lambda v: v[0, 0].assign("nine"),
    lambda v: v[0, 0].assign(None),
])
def test_wrong_dtype_raises_type_error(call):
    v = _variable()
    with pytest.raises(TypeError, match=r"Variable\[0(, 0)?\]\.assign"):
        call(v)


def test_integer_variable_refuses_a_float_value():
    v = mt.Variable([1, 2, 3])
    with pytest.raises(TypeError, match="losing information"):
        v[0].assign(2.5)
    v[0].assign(7)
    assert v.numpy().tolist() == [7, 2, 3]


def test_slice_of_a_plain_tensor_has_no_assign():
    t = mt.constant([[1.0, 2.0], [3.0, 4.0]])
    for method in ("assign", "assign_add", "assign_sub"):
        with pytest.raises(AttributeError, match=f"no attribute '{method}'.*immutable"):
            getattr(t[0], method)
        assert not hasattr(t[0], method)
    with pytest.raises(AttributeError, match="Variable itself in one step"):
        _variable()[0][1].assign(3.0)  # a slice of a slice is a plain Tensor, as in TensorFlow
    with pytest.raises(AttributeError, match="no attribute 'nothing'$"):
        t.nothing


def test_item_assignment_is_a_clear_type_error():
    with pytest.raises(TypeError, match="immutable"):
        mt.constant([1.0, 2.0])[0] = 5.0
    v = _variable()
    with pytest.raises(TypeError, match=r"v\[0, 1:\]\.assign\(value\)"):
        v[0, 1:] = 5.0
