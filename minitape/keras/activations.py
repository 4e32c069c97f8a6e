"""``mt.keras.activations``: Keras's activation functions, by name or as functions.

Each is a minitape op (or a composition of them), so a tape differentiates it. As
``keras.activations`` (Keras 3); ``get(name)`` resolves the names that ``Dense(activation=...)``
and ``compile`` accept.
"""

from __future__ import annotations

from ..ops import math_ops, nn_ops


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """``max(x, 0)``, as ``keras.activations.relu``; optional leak, cap and threshold.

    >>> import minitape as mt
    >>> mt.keras.activations.relu(mt.constant([-1.0, 2.0]))
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([0., 2.], dtype=float32)>
    """
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return nn_ops.relu(x)
    x = math_ops.floating(x, "relu")
    y = nn_ops.relu(x - threshold) + threshold * math_ops.cast(x > threshold, x.dtype)
    if negative_slope:
        y = y - negative_slope * nn_ops.relu(threshold - x)
    if max_value is not None:
        y = math_ops.minimum(y, max_value)
    return y


def sigmoid(x):
    """``1 / (1 + exp(-x))``, as ``keras.activations.sigmoid``."""
    return math_ops.sigmoid(x)


def tanh(x):
    """Hyperbolic tangent, as ``keras.activations.tanh``."""
    return math_ops.tanh(x)


def softplus(x):
    """``log(1 + exp(x))``, as ``keras.activations.softplus``."""
    return math_ops.softplus(x)


def elu(x, alpha=1.0):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``, as ``keras.activations.elu``."""
    y = nn_ops.elu(x)
    return y if alpha == 1.0 else math_ops.maximum(y, 0.0) + alpha * math_ops.minimum(y, 0.0)


def leaky_relu(x, negative_slope=0.2):
    """``x`` if ``x > 0`` else ``negative_slope * x``, as ``keras.activations.leaky_relu``."""
    return nn_ops.leaky_relu(x, alpha=negative_slope)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, as ``keras.activations.softmax``."""
    return nn_ops.softmax(x, axis=axis)


def linear(x):
    """The identity, as ``keras.activations.linear``."""
    return x


_BY_NAME = {f.__name__: f for f in (relu, sigmoid, tanh, softplus, elu, leaky_relu, softmax,
                                    linear)}


def get(identifier):
    """An activation function from a name, a callable or ``None`` (linear), as Keras.

    Raises:
        ValueError: an unknown name (the known ones are listed).
    """
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(f"unknown activation {identifier!r}; use one of {sorted(_BY_NAME)} or a "
                     "callable")


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
