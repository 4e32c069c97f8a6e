"""Neural-network activations: relu, elu, leaky_relu, softmax, log_softmax. Forward, then gradient.

ReLU and ELU keep only their output for the backward pass, as the basic guide says: the
input is not needed to know where the unit was active.
"""

from __future__ import annotations

import numpy as np

from ..registry import RegisterGradient
from ..tape import record
from ..tensor import Tensor
from . import array_ops, math_ops, reduction_ops
from .math_ops import floating


def relu(features, name=None):
    """``max(x, 0)`` (op ``Relu``); keeps only its output: ``d/dx = 1 where y > 0``."""
    x = floating(features, "Relu")
    y = Tensor(np.maximum(x._value, 0).astype(x.dtype), name=name)
    record("Relu", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


@RegisterGradient("Relu", batched=True)
def _relu_grad(op, dy):
    (y,) = op.outputs
    return dy * math_ops.cast(math_ops.greater(y, 0), y.dtype)


def elu(features, name=None):
    """``x`` if ``x > 0`` else ``exp(x) - 1`` (op ``Elu``); keeps only its output.

    Gradient: 1 where ``y > 0``, else ``y + 1`` (which equals ``exp(x)``).
    """
    x = floating(features, "Elu")
    v = x._value
    y = Tensor(np.where(v > 0, v, np.expm1(np.minimum(v, 0))).astype(x.dtype), name=name)
    record("Elu", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


@RegisterGradient("Elu", batched=True)
def _elu_grad(op, dy):
    (y,) = op.outputs
    return dy * array_ops.where(math_ops.greater(y, 0), array_ops.ones_like(y), y + 1)


def leaky_relu(features, alpha=0.2, name=None):
    """``x`` if ``x > 0`` else ``alpha * x`` (op ``LeakyRelu``), as ``tf.nn.leaky_relu``."""
    x = floating(features, "LeakyRelu")
    v = x._value
    y = Tensor(np.where(v > 0, v, v * x.dtype.type(alpha)), name=name)
    record("LeakyRelu", (x,), (y,), attrs={"alpha": float(alpha)})
    return y


@RegisterGradient("LeakyRelu", batched=True)
def _leaky_relu_grad(op, dy):
    (x,) = op.inputs
    slope = array_ops.where(math_ops.greater(x, 0), array_ops.ones_like(x),
                            array_ops.fill(x.shape, x.dtype.type(op.get_attr("alpha"))))
    return dy * slope


def _axis(axis, ndim, op_type):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op_type}: axis {axis} out of range for rank {ndim}")
    return axis % ndim


def softmax(logits, axis=-1, name=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (op ``Softmax``); keeps its output.

    Gradient: ``y * (dy - sum(dy * y, axis))``.
    """
    x = floating(logits, "Softmax")
    axis = _axis(axis, x.ndim, "Softmax")
    e = np.exp(x._value - np.max(x._value, axis=axis, keepdims=True))
    y = Tensor(e / np.sum(e, axis=axis, keepdims=True), name=name)
    record("Softmax", (x,), (y,), attrs={"axis": axis}, keep_inputs=False, keep_outputs=True)
    return y


@RegisterGradient("Softmax", batched=True)
def _softmax_grad(op, dy):
    (y,) = op.outputs
    axis = op.get_attr("axis") + op.batch_ndim
    return y * (dy - reduction_ops.reduce_sum(dy * y, axis=axis, keepdims=True))


def log_softmax(logits, axis=-1, name=None):
    """``x - log(sum(exp(x)))`` along ``axis`` (op ``LogSoftmax``); keeps its output.

    Gradient: ``dy - exp(y) * sum(dy, axis)``.
    """
    x = floating(logits, "LogSoftmax")
    axis = _axis(axis, x.ndim, "LogSoftmax")
    shifted = x._value - np.max(x._value, axis=axis, keepdims=True)
    y = Tensor(shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True)), name=name)
    record("LogSoftmax", (x,), (y,), attrs={"axis": axis}, keep_inputs=False, keep_outputs=True)
    return y


@RegisterGradient("LogSoftmax", batched=True)
def _log_softmax_grad(op, dy):
    (y,) = op.outputs
    axis = op.get_attr("axis") + op.batch_ndim
    return dy - math_ops.exp(y) * reduction_ops.reduce_sum(dy, axis=axis, keepdims=True)
