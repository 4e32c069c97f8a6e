"""A list that holds Tensors, given to an op, is stacked with a recorded op (TensorFlow's
autopacking in ``tf.convert_to_tensor``), so gradients flow to its entries; ``mt.constant``
of such a list is a constant, as ``tf.constant``. The autopacking conversion must try before
the one for Python data (priority 99 against 100), or the list becomes a constant through
NumPy and every gradient through it is None."""

import numpy as np

import minitape as mt


def test_an_op_given_a_list_of_tensors_differentiates_through_it():
    a, b = mt.Variable(1.0), mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        total = mt.reduce_sum([a * 2.0, b])                 # as tf.reduce_sum([a * 2., b])
        packed = mt.convert_to_tensor([[a, b], [b, a * a]])
        both = mt.multiply([a, b], 3.0)
    assert [op.type for op in tape.operations].count("Pack") >= 2
    assert float(tape.gradient(total, a)) == 2.0 and float(tape.gradient(total, b)) == 1.0
    np.testing.assert_allclose(tape.gradient(packed, [a, b])[0].numpy(), 1.0 + 2.0)
    np.testing.assert_allclose(tape.gradient(both, [a, b])[1].numpy(), 3.0)


def test_a_constant_of_a_list_of_tensors_is_a_constant():
    a = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        c = mt.constant([a, a * 2.0])                         # as tf.constant: no gradient
        y = mt.reduce_sum(c)
    assert tape.gradient(y, a) is None
    np.testing.assert_array_equal(c.numpy(), [1.0, 2.0])


def test_a_list_without_tensors_is_still_plain_data():
    t = mt.convert_to_tensor([[1, 2], [3, 4]])
    assert t.dtype == mt.int32 and t.shape == (2, 2)
