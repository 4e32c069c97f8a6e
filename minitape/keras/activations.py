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


# The others Keras names, each written with minitape ops (so a tape draws its parts and
# differentiates them: no new gradient rules), with Keras 3's formulas and constants.

def selu(x):
    """``scale * elu(x, alpha)`` with Keras's ``alpha = 1.67326324``, ``scale = 1.05070098``
    (self-normalizing; use ``kernel_initializer="lecun_normal"``), as
    ``keras.activations.selu``."""
    return 1.05070098 * elu(x, alpha=1.67326324)


def gelu(x, approximate=False):
    """``x * P(X <= x)`` for a standard normal X: ``0.5 * x * (1 + erf(x / sqrt(2)))``, or
    with ``approximate=True`` the tanh form, as ``keras.activations.gelu``."""
    x = math_ops.floating(x, "gelu")
    if approximate:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)   # sqrt(2 / pi)
        return 0.5 * x * (1.0 + math_ops.tanh(inner))
    return 0.5 * x * (1.0 + math_ops.erf(x * 0.7071067811865476))  # 1 / sqrt(2)


def silu(x):
    """``x * sigmoid(x)``, as ``keras.activations.silu`` (also called ``swish``)."""
    return x * math_ops.sigmoid(x)


swish = silu


def relu6(x):
    """``min(max(x, 0), 6)``, as ``keras.activations.relu6``."""
    return math_ops.minimum(nn_ops.relu(x), 6.0)


def softsign(x):
    """``x / (|x| + 1)``, as ``keras.activations.softsign``."""
    return x / (math_ops.abs(x) + 1.0)


def exponential(x):
    """``exp(x)``, as ``keras.activations.exponential``."""
    return math_ops.exp(x)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``, a piecewise-linear sigmoid, as Keras 3's
    ``keras.activations.hard_sigmoid`` (Keras 2 used ``0.2 * x + 0.5``, clipped)."""
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)``, as ``keras.activations.hard_silu`` (also ``hard_swish``)."""
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def mish(x):
    """``x * tanh(softplus(x))``, as ``keras.activations.mish``."""
    return x * math_ops.tanh(math_ops.softplus(x))


def log_softmax(x, axis=-1):
    """``x - log(sum(exp(x)))`` along ``axis``, as ``keras.activations.log_softmax``."""
    return nn_ops.log_softmax(x, axis=axis)


_BY_NAME = {f.__name__: f for f in (relu, sigmoid, tanh, softplus, elu, leaky_relu, softmax,
                                    linear, selu, gelu, silu, relu6, softsign, exponential,
                                    hard_sigmoid, hard_silu, mish, log_softmax)}
_BY_NAME.update(swish=silu, hard_swish=hard_silu)


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
