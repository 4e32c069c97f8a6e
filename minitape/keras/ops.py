"""``mt.keras.ops``: the part of ``keras.ops`` that Keras 3's guides use, on minitape's ops.

Keras 3 writes its layers with ``keras.ops`` (NumPy's names: ``ops.matmul``, ``ops.sum``,
``ops.mean``, ``ops.exp``, ``ops.square``, ``ops.shape``...) so that they run on any backend.
Here each is the minitape op of the same meaning, recorded on the tapes as usual, with
Keras's argument names and defaults (``ops.sum(x, axis=None, keepdims=False)``,
``ops.concatenate(xs, axis=0)``). Only these functions exist; any other ``keras.ops`` name
raises an ``AttributeError`` that says so (use the ``mt.`` op of the same meaning).
"""

from __future__ import annotations

from ..engine.tensor import convert_to_tensor as _convert
from ..ops import array_ops, math_ops, nn_ops, reduction_ops

__all__ = ["abs", "add", "argmax", "cast", "clip", "concatenate", "convert_to_tensor",
           "divide", "exp", "expand_dims", "log", "matmul", "max", "maximum", "mean", "min",
           "minimum", "multiply", "ones", "ones_like", "relu", "reshape", "shape", "sigmoid",
           "softmax", "sqrt", "square", "squeeze", "stack", "subtract", "sum", "tanh",
           "transpose", "where", "zeros", "zeros_like"]


def _dtype(dtype):
    from . import backend
    return backend.floatx() if dtype is None else dtype


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """``x`` as a Tensor (as ``keras.ops.convert_to_tensor``)."""
    return _convert(x, dtype=dtype)


def shape(x):
    """The shape of ``x`` as a tuple of ints, as ``keras.ops.shape`` (the VAE's
    ``batch = ops.shape(z_mean)[0]``)."""
    return tuple(_convert(x).shape)


def ones(shape, dtype=None):
    """A Tensor of ones, float32 unless ``dtype`` says otherwise (``keras.ops.ones``)."""
    return array_ops.ones(shape, dtype=_dtype(dtype))


def zeros(shape, dtype=None):
    """A Tensor of zeros (``keras.ops.zeros``)."""
    return array_ops.zeros(shape, dtype=_dtype(dtype))


def ones_like(x, dtype=None):
    """Ones of ``x``'s shape (``keras.ops.ones_like``)."""
    return array_ops.ones_like(x, dtype=dtype)


def zeros_like(x, dtype=None):
    """Zeros of ``x``'s shape (``keras.ops.zeros_like``)."""
    return array_ops.zeros_like(x, dtype=dtype)


def cast(x, dtype):
    """``x`` converted to ``dtype`` (``keras.ops.cast``)."""
    return math_ops.cast(x, dtype)


def matmul(x1, x2):
    """The matrix product, batched over leading axes (``keras.ops.matmul``)."""
    return math_ops.matmul(x1, x2)


def sum(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    """The sum over ``axis`` (all by default), as ``keras.ops.sum``."""
    return reduction_ops.reduce_sum(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    """The mean over ``axis`` (all by default), as ``keras.ops.mean``."""
    return reduction_ops.reduce_mean(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    """The maximum over ``axis`` (all by default), as ``keras.ops.max``."""
    return reduction_ops.reduce_max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001 (Keras's name)
    """The minimum over ``axis`` (all by default), as ``keras.ops.min``."""
    return reduction_ops.reduce_min(x, axis=axis, keepdims=keepdims)


def argmax(x, axis=None, keepdims=False):
    """The index of the largest entry along ``axis``, int32 (``keras.ops.argmax``;
    ``axis=None`` looks at the flattened ``x``)."""
    if axis is None:
        return reduction_ops.argmax(array_ops.reshape(x, [-1]), axis=0, output_type="int32")
    out = reduction_ops.argmax(x, axis=axis, output_type="int32")
    return array_ops.expand_dims(out, axis) if keepdims else out


def exp(x):
    """``e ** x`` elementwise (``keras.ops.exp``)."""
    return math_ops.exp(x)


def log(x):
    """The natural logarithm elementwise (``keras.ops.log``)."""
    return math_ops.log(x)


def sqrt(x):
    """The square root elementwise (``keras.ops.sqrt``)."""
    return math_ops.sqrt(x)


def square(x):
    """``x * x`` elementwise (``keras.ops.square``)."""
    return math_ops.square(x)


def abs(x):  # noqa: A001 (Keras's name)
    """``|x|`` elementwise (``keras.ops.abs``)."""
    return math_ops.abs(x)


def tanh(x):
    """The hyperbolic tangent (``keras.ops.tanh``)."""
    return math_ops.tanh(x)


def sigmoid(x):
    """``1 / (1 + exp(-x))`` (``keras.ops.sigmoid``)."""
    return math_ops.sigmoid(x)


def relu(x):
    """``max(x, 0)`` (``keras.ops.relu``)."""
    return nn_ops.relu(x)


def softmax(x, axis=-1):
    """The softmax along ``axis`` (``keras.ops.softmax``)."""
    return nn_ops.softmax(x, axis=axis)


def add(x1, x2):
    """``x1 + x2`` (``keras.ops.add``)."""
    return math_ops.add(x1, x2)


def subtract(x1, x2):
    """``x1 - x2`` (``keras.ops.subtract``)."""
    return math_ops.subtract(x1, x2)


def multiply(x1, x2):
    """``x1 * x2`` (``keras.ops.multiply``)."""
    return math_ops.multiply(x1, x2)


def divide(x1, x2):
    """``x1 / x2`` (``keras.ops.divide``)."""
    return math_ops.divide(x1, x2)


def maximum(x1, x2):
    """The larger of ``x1`` and ``x2`` elementwise (``keras.ops.maximum``)."""
    return math_ops.maximum(x1, x2)


def minimum(x1, x2):
    """The smaller of ``x1`` and ``x2`` elementwise (``keras.ops.minimum``)."""
    return math_ops.minimum(x1, x2)


def clip(x, x_min, x_max):
    """``x`` clipped to ``[x_min, x_max]`` (``keras.ops.clip``)."""
    return math_ops.clip_by_value(x, x_min, x_max)


def where(condition, x1=None, x2=None):
    """``x1`` where ``condition`` holds, else ``x2`` (``keras.ops.where``)."""
    return array_ops.where(condition, x1, x2)


def reshape(x, newshape):
    """``x`` with the shape ``newshape`` (one entry may be -1), as ``keras.ops.reshape``."""
    return array_ops.reshape(x, newshape)


def transpose(x, axes=None):
    """``x`` with its axes permuted (reversed by default), as ``keras.ops.transpose``."""
    return array_ops.transpose(x, perm=axes)


def expand_dims(x, axis):
    """``x`` with a new axis of length 1 at ``axis`` (``keras.ops.expand_dims``)."""
    return array_ops.expand_dims(x, axis)


def squeeze(x, axis=None):
    """``x`` without its axes of length 1 (``keras.ops.squeeze``)."""
    return array_ops.squeeze(x, axis=axis)


def concatenate(xs, axis=0):
    """The Tensors ``xs`` joined along ``axis`` (0 by default, as NumPy and
    ``keras.ops.concatenate``)."""
    return array_ops.concat(list(xs), axis=axis)


def stack(x, axis=0):
    """The Tensors ``x`` stacked along a new ``axis`` (``keras.ops.stack``)."""
    return array_ops.stack(list(x), axis=axis)


def __getattr__(name):
    # Only for a name this module lacks: say whether Keras has it (``minitape/_tf_names.py``).
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}: minitape's "
                         "keras.ops has only the functions Keras's guides use "
                         f"({', '.join(__all__)}); use the mt. op of the same meaning (mt.{name}, "
                         f"mt.math.{name}, mt.nn.{name}, ...) instead")
