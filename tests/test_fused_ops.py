"""The fused ops: ``SoftmaxCrossEntropyWithLogits`` and ``ReluGrad``, against NumPy closed forms.

Their gradients (to second order, Jacobians, forward mode) are checked by the registry-driven
tests over ``tests/op_specs.py``; here are the forward values and the shapes and errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape.ops import nn_ops


def _log_softmax(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_cross_entropy_value(axis):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((4, 3))
    labels = rng.uniform(0.0, 1.0, (4, 3))
    got = mt.nn.softmax_cross_entropy_with_logits(labels, logits, axis=axis)
    expected = -(labels * _log_softmax(logits, axis)).sum(axis=axis)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_softmax_cross_entropy_onehot_gradient_is_softmax_minus_labels():
    rng = np.random.default_rng(2)
    logits = mt.constant(rng.standard_normal((5, 4)).astype(np.float32))
    onehot = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 5)]
    with mt.GradientTape() as tape:
        tape.watch(logits)
        loss = mt.reduce_mean(mt.nn.softmax_cross_entropy_with_logits(onehot, logits))
    g = tape.gradient(loss, logits)
    softmax = np.exp(_log_softmax(logits.numpy().astype(np.float64), -1))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), (softmax - onehot) / 5, atol=1e-6)


def test_softmax_cross_entropy_shape_mismatch():
    # Labels that broadcast to the logits' shape are accepted (as TensorFlow); others not.
    with pytest.raises(ValueError, match=r"labels of shape \(2, 3\) do not broadcast to the "
                                         r"logits' shape \(2, 4\)"):
        mt.nn.softmax_cross_entropy_with_logits(np.zeros((2, 3)), np.zeros((2, 4)))


def test_relu_grad_value():
    dy = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    y = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.5]])
    got = nn_ops.relu_grad(mt.constant(dy), mt.constant(y))
    np.testing.assert_array_equal(got.numpy(), np.where(y > 0, dy, 0.0))


def test_relu_second_derivative_is_recorded_as_relu_grad():
    x = mt.constant([-1.0, 2.0, 3.0])
    with mt.GradientTape() as outer:
        outer.watch(x)
        with mt.GradientTape() as inner:
            inner.watch(x)
            y = mt.reduce_sum(mt.nn.relu(x) ** 2)
        g = inner.gradient(y, x)
    assert "ReluGrad" in {op.type for op in outer._ops}
    np.testing.assert_allclose(g.numpy(), [0.0, 4.0, 6.0])
    # d/dx of 2 relu(x) relu'(x): 2 where x > 0, else 0
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), [0.0, 2.0, 2.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32])
@pytest.mark.parametrize("axis", [None, 0, 1, [0, 2], -1, []])
def test_reduce_mean_is_numpys_mean(dtype, axis):
    # reduce_mean computes float32/float64 means as sum / count: the very same numbers as
    # np.mean (the other dtypes go through np.mean itself).
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((3, 4, 5)) * 10).astype(dtype)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = np.mean(x, axis=np_axis).astype(dtype)
    got = mt.reduce_mean(mt.constant(x), axis=axis).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)
