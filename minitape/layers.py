"""Keras-style layers on ``Module``: ``Dense``, ``BatchNormalization``, ``Sequential``."""

from __future__ import annotations

import numpy as np

from . import dtypes
from .module import Module
from .ops import array_ops, math_ops, nn_ops, random_ops, reduction_ops
from .tensor import Tensor, Variable, convert_to_tensor

_ACTIVATIONS = {
    "relu": nn_ops.relu, "elu": nn_ops.elu, "sigmoid": math_ops.sigmoid, "tanh": math_ops.tanh,
    "softplus": math_ops.softplus, "softmax": nn_ops.softmax, "linear": None,
}


def _activation(activation):
    if activation is None or callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; use one of "
                         f"{sorted(_ACTIVATIONS)} or a callable")
    return _ACTIVATIONS[activation]


class Dense(Module):
    """``activation(x @ kernel + bias)``, as ``tf.keras.layers.Dense``.

    Builds on the first call from the input's last dimension: ``kernel`` ``(in, units)``
    (Glorot-uniform), then ``bias`` ``(units,)`` (zeros). Integer inputs are cast to the
    layer's dtype, as Keras does.

    Raises:
        ValueError: an unknown activation name, or a later call with another input width.
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 dtype=dtypes.float32, name=None):
        super().__init__(name=name)
        if kernel_initializer not in ("glorot_uniform", "zeros", "ones"):
            raise ValueError(f"Dense: kernel_initializer must be 'glorot_uniform', 'zeros' or "
                             f"'ones', got {kernel_initializer!r}")
        self.units = int(units)
        self.activation = _activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.dtype = dtypes.as_dtype(dtype)
        self.kernel = None
        self.bias = None

    def build(self, in_features):
        shape = (in_features, self.units)
        if self.kernel_initializer == "glorot_uniform":
            limit = np.sqrt(6.0 / (in_features + self.units))
            init = random_ops.uniform(shape, -limit, limit, dtype=self.dtype)
        else:
            init = np.full(shape, 0.0 if self.kernel_initializer == "zeros" else 1.0, self.dtype)
        self.kernel = Variable(init, name="kernel")
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = Variable(np.zeros(self.units, self.dtype), name="bias")
            self.bias.path = f"{self.name}/bias"

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Dense '{self.name}'")
        if x.dtype != self.dtype:
            x = math_ops.cast(x, self.dtype)
        if x.ndim < 2:
            raise ValueError(f"Dense '{self.name}' expects inputs of shape (batch, features), got "
                             f"{x.shape}; e.g. wrap a vector as [[...]]")
        if self.kernel is None:
            self.build(x.shape[-1])
        elif x.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"Dense '{self.name}' was built for {self.kernel.shape[0]} input "
                             f"features, got inputs of shape {x.shape}; a layer keeps its "
                             "input width: make a new Dense layer for inputs of another width")
        y = math_ops.matmul(x, self.kernel)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y) if self.activation is not None else y


class BatchNormalization(Module):
    """Normalize with batch statistics when training, as ``tf.keras.layers.BatchNormalization``.

    Variables: trainable ``gamma`` (ones) and ``beta`` (zeros), non-trainable ``moving_mean``
    (zeros) and ``moving_variance`` (ones), over the last axis. ``training=True`` uses the
    batch mean and biased variance (``epsilon`` inside the square root) and updates the
    moving averages with ``assign``; ``training=False`` (the default) uses the moving averages.
    """

    def __init__(self, momentum=0.99, epsilon=1e-3, name=None):
        super().__init__(name=name)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, features, dtype):
        def var(value, name, trainable):
            v = Variable(np.full(features, value, dtype), name=name, trainable=trainable)
            v.path = f"{self.name}/{name}"
            return v
        self.gamma = var(1.0, "gamma", True)
        self.beta = var(0.0, "beta", True)
        self.moving_mean = var(0.0, "moving_mean", False)
        self.moving_variance = var(1.0, "moving_variance", False)

    def __call__(self, inputs, training=False):
        x = math_ops.floating(inputs, f"BatchNormalization '{self.name}'")
        if self.gamma is None:
            self.build(x.shape[-1], x.dtype)
        if training:
            axes = list(range(x.ndim - 1))
            mean = reduction_ops.reduce_mean(x, axis=axes)
            variance = reduction_ops.reduce_mean(math_ops.square(x - mean), axis=axes)
            m = self.momentum
            self.moving_mean.assign(self.moving_mean * m + mean * (1 - m))
            self.moving_variance.assign(self.moving_variance * m + variance * (1 - m))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        return (x - mean) / math_ops.sqrt(variance + self.epsilon) * self.gamma + self.beta


class Sequential(Module):
    """Call layers one after another, as ``tf.keras.Sequential``."""

    def __init__(self, layers=(), name=None):
        super().__init__(name=name)
        self.layers = list(layers)
        for layer in self.layers:
            if not callable(layer):
                raise TypeError(f"Sequential expects callable layers, got {layer!r}")

    def add(self, layer):
        self.layers.append(layer)

    def __call__(self, inputs, **kwargs):
        x = inputs
        for layer in self.layers:
            x = layer(x, **kwargs) if kwargs and isinstance(layer, BatchNormalization) else layer(x)
        return x


_ = (Tensor, array_ops)
