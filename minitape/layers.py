"""Keras-style layers on ``Module``: ``Dense``, ``BatchNormalization``, ``Conv2D``,
``MaxPooling2D``, ``Flatten``, ``Dropout``, ``Sequential``."""

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


def _positive_int(value, what, arg):
    """``value`` as a Python int > 0 (a NumPy integer or a 0-d int Tensor too), else an error
    naming ``what``, ``arg`` and the value."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "iu":
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: {arg} must be a positive int, got {type(value).__name__} "
                        f"{value!r:.40}")
    if value <= 0:
        raise ValueError(f"{what}: {arg} must be a positive int (the number of outputs), got "
                         f"{arg}={value}")
    return int(value)


class Dense(Module):
    """``activation(x @ kernel + bias)``, as ``tf.keras.layers.Dense``.

    Builds on the first call from the input's last dimension: ``kernel`` ``(in, units)``
    (Glorot-uniform), then ``bias`` ``(units,)`` (zeros). Integer inputs are cast to the
    layer's dtype, as Keras does.

    Raises:
        TypeError: ``units`` is not an int (``True``, ``2.5``, ``"8"``).
        ValueError: ``units`` is 0 or negative (Keras: "expected a positive integer"), an
            unknown activation name, or a later call with another input width.
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 dtype=dtypes.float32, name=None):
        units = _positive_int(units, "Dense", "units")
        super().__init__(name=name)
        if kernel_initializer not in ("glorot_uniform", "zeros", "ones"):
            raise ValueError(f"Dense: kernel_initializer must be 'glorot_uniform', 'zeros' or "
                             f"'ones', got {kernel_initializer!r}")
        self.units = units
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
            x = layer(x, **kwargs) if kwargs and isinstance(layer, (BatchNormalization, Dropout)) \
                else layer(x)
        return x


_ = (Tensor, array_ops)


# -- convolutional networks: Conv2D, MaxPooling2D, Flatten, Dropout -------------------------------


def _default_name(base):
    """Keras's default layer names (``conv2d``, ``conv2d_1``, ...), unique like Module's."""
    from . import module
    count = module._name_counts.get(base, 0)
    module._name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def _pair(value, layer, arg):
    """``kernel_size``/``strides``/``pool_size``: an int or a pair of ints -> ``(h, w)``."""
    items = [value] * 2 if isinstance(value, (int, np.integer)) else value
    if (isinstance(value, bool) or not isinstance(items, (list, tuple)) or len(items) != 2
            or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1
                       for n in items)):
        raise ValueError(f"{layer}: {arg} must be a positive int or a pair of positive ints "
                         f"(height, width), got {value!r}")
    return int(items[0]), int(items[1])


def _keras_padding(padding, layer):
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"{layer}: padding must be \"valid\" or \"same\", got {padding!r}")
    return padding.upper()  # the spelling of mt.nn.conv2d / max_pool2d


def _images(inputs, dtype, layer):
    x = convert_to_tensor(inputs, what=layer)
    if x.dtype != dtype:
        x = math_ops.cast(x, dtype)
    if x.ndim != 4:
        raise ValueError(f"{layer} expects images of shape (batch, height, width, channels), got "
                         f"shape {x.shape}; e.g. mt.reshape(x, [-1, 8, 8, 1]) for 8x8 grey images")
    return x


class Conv2D(Module):
    """``activation(conv2d(x, kernel) + bias)``, as ``tf.keras.layers.Conv2D``.

    Builds on the first call from the input's channels: ``kernel`` ``(kh, kw, in_channels,
    filters)`` (Glorot-uniform with Keras's fans ``kh * kw * in`` and ``kh * kw * filters``),
    then ``bias`` ``(filters,)`` (zeros). Inputs are NHWC images; integer inputs are cast.

    Args:
        filters: the number of output channels.
        kernel_size: an int or ``(kh, kw)``.
        strides: an int or ``(sh, sw)``, 1 by default.
        padding: ``"valid"`` (the default, as Keras) or ``"same"``.
        activation: a name (``"relu"``, ...), a callable, or None.

    Raises:
        ValueError: bad sizes or padding at construction; at call time an input that is not
            rank 4, or whose channels differ from those the layer was built for.

    >>> import minitape as mt
    >>> conv = mt.layers.Conv2D(4, 3, padding="same", activation="relu")
    >>> conv(mt.zeros([2, 8, 8, 1])).shape, conv.kernel.shape
    ((2, 8, 8, 4), (3, 3, 1, 4))
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", dtype=dtypes.float32,
                 name=None):
        super().__init__(name=name if name is not None else _default_name("conv2d"))
        if isinstance(filters, bool) or not isinstance(filters, (int, np.integer)) or filters < 1:
            raise ValueError(f"Conv2D: filters must be a positive int (the number of output "
                             f"channels), got {filters!r}")
        if kernel_initializer not in ("glorot_uniform", "zeros", "ones"):
            raise ValueError(f"Conv2D: kernel_initializer must be 'glorot_uniform', 'zeros' or "
                             f"'ones', got {kernel_initializer!r}")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "Conv2D", "kernel_size")
        self.strides = _pair(strides, "Conv2D", "strides")
        self.padding = _keras_padding(padding, "Conv2D")
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.dtype = dtypes.as_dtype(dtype)
        self.kernel = None
        self.bias = None

    def build(self, in_channels):
        kh, kw = self.kernel_size
        shape = (kh, kw, in_channels, self.filters)
        if self.kernel_initializer == "glorot_uniform":
            limit = np.sqrt(6.0 / (kh * kw * (in_channels + self.filters)))
            init = random_ops.uniform(shape, -limit, limit, dtype=self.dtype)
        else:
            init = np.full(shape, 0.0 if self.kernel_initializer == "zeros" else 1.0, self.dtype)
        self.kernel = Variable(init, name="kernel")
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = Variable(np.zeros(self.filters, self.dtype), name="bias")
            self.bias.path = f"{self.name}/bias"

    def __call__(self, inputs):
        x = _images(inputs, self.dtype, f"Conv2D '{self.name}'")
        if self.kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.kernel.shape[2]:
            raise ValueError(f"Conv2D '{self.name}' was built for {self.kernel.shape[2]} input "
                             f"channels, got inputs of shape {x.shape}")
        from .ops import conv_ops
        y = conv_ops.conv2d(x, self.kernel, self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        return self.activation(y) if self.activation is not None else y


class MaxPooling2D(Module):
    """The maximum of each ``pool_size`` window, as ``tf.keras.layers.MaxPooling2D``.

    ``strides`` defaults to ``pool_size`` (windows side by side), ``padding`` to ``"valid"``.
    No Variables.
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", name=None):
        super().__init__(name=name if name is not None else _default_name("max_pooling2d"))
        self.pool_size = _pair(pool_size, "MaxPooling2D", "pool_size")
        self.strides = self.pool_size if strides is None else \
            _pair(strides, "MaxPooling2D", "strides")
        self.padding = _keras_padding(padding, "MaxPooling2D")

    def __call__(self, inputs):
        from .ops import conv_ops
        x = math_ops.floating(inputs, f"MaxPooling2D '{self.name}'")
        x = _images(x, x.dtype, f"MaxPooling2D '{self.name}'")
        return conv_ops.max_pool2d(x, self.pool_size, self.strides, self.padding)


class Flatten(Module):
    """``(batch, ...)`` -> ``(batch, features)``, as ``tf.keras.layers.Flatten`` (a Reshape)."""

    def __init__(self, name=None):
        super().__init__(name=name if name is not None else _default_name("flatten"))

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Flatten '{self.name}'")
        if x.ndim == 0:
            raise ValueError(f"Flatten '{self.name}' needs a batch axis, got a scalar")
        return array_ops.reshape(x, [x.shape[0], -1])


class Dropout(Module):
    """Inverted dropout while training, as ``tf.keras.layers.Dropout``.

    ``layer(x, training=True)`` zeroes each element with probability ``rate`` and scales the
    rest by ``1 / (1 - rate)`` (``mt.nn.dropout``); ``training=False`` (the default) returns
    ``x`` unchanged. ``seed`` makes the sequence of masks repeatable (each call draws a new
    mask). No Variables.

    Raises:
        ValueError: ``rate`` outside ``[0, 1)``.
    """

    def __init__(self, rate, noise_shape=None, seed=None, name=None):
        super().__init__(name=name if name is not None else _default_name("dropout"))
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)) \
                or not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate is the fraction of inputs to drop and must be a "
                             f"number in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self._seeds = None if seed is None else np.random.default_rng(seed)

    def __call__(self, inputs, training=False):
        x = math_ops.floating(inputs, f"Dropout '{self.name}'")
        if not training or self.rate == 0.0:
            return x
        seed = None if self._seeds is None else int(self._seeds.integers(2**31))
        return nn_ops.dropout(x, self.rate, noise_shape=self.noise_shape, seed=seed)
