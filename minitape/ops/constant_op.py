"""Tensors from Python data: ``constant``, and ``convert_like`` for the ops' operands.

The engine's ``convert_to_tensor`` holds the conversion rules (TensorFlow's default dtypes,
casts only where nothing is lost); ``constant`` (``tf.constant``, TensorFlow's constant_op)
makes a new Tensor from a value, and ``convert_like`` converts the Python number in
``x * 0.5`` to ``x``'s dtype, as TensorFlow's binary operators do.
"""

from __future__ import annotations

from ..engine import tensor as _tensor
from ..engine.tensor import Tensor, convert_to_tensor


def constant(value, dtype=None, name=None) -> Tensor:
    """Make a Tensor from a Python value or ndarray, as ``tf.constant``.

    The value is copied, so later changes to an ndarray do not change the Tensor. A Variable
    or Tensor argument gives a new Tensor with the same value (not connected on any tape).

    >>> import minitape as mt
    >>> mt.constant(3.0)
    <mt.Tensor: shape=(), dtype=float32, numpy=3.0>
    >>> mt.constant([1, 2]).dtype
    dtype('int32')
    >>> mt.constant(1 + 2j)           # complex128, as TensorFlow (no gradients through it)
    <mt.Tensor: shape=(), dtype=complex128, numpy=(1+2j)>
    """
    if isinstance(value, Tensor):
        value = value._value
    t = convert_to_tensor(value, dtype=dtype, name=name, what="constant")
    # (convert_to_tensor already copied an ndarray: the new Tensor owns its array.)
    t = Tensor(t._value, name=name)
    if _tensor.on_creation is not None:   # (mt.viz notes the learner's line)
        _tensor.on_creation(t)
    return t


def convert_like(value, dtype, what) -> Tensor:
    """Convert the non-Tensor operand of a binary op to the Tensor operand's dtype."""
    if type(value) is Tensor and value._dtype is dtype:   # (a Tensor already of that dtype)
        return value
    if isinstance(value, Tensor):
        return convert_to_tensor(value, dtype=dtype, what=what)
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        # The hot path: a Python scalar in an operation with a Tensor.
        if dtype.kind in "fc":
            return Tensor(dtype.type(value))
        if dtype.kind in "iu" and isinstance(value, int):
            return convert_to_tensor(value, dtype=dtype, what=what)   # (checks the range)
        raise TypeError(
            f"{what}: cannot use the Python value {value!r} with a Tensor of dtype {dtype.name} "
            f"without losing information; use a value of that dtype or mt.cast the Tensor"
        )
    return convert_to_tensor(value, dtype=dtype, what=what)


