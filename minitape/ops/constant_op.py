"""Tensors from Python and NumPy data: the conversion rules, ``constant`` and ``convert_like``.

The engine's ``convert_to_tensor`` hands anything that is not a Tensor to the conversion
function registered for its type, as TensorFlow's constant_op registers its own; this module
registers the one for NumPy arrays and Python numbers and lists (``_convert_data``), with
TensorFlow's rules (conversion rules, as TensorFlow's ``convert_to_tensor``):

- a Python float, or a list of floats, becomes float32; a Python int becomes int32 (int64 if
  it does not fit); a Python complex becomes complex128 (complex values compute, but no
  gradient flows through them);
- a NumPy array keeps its dtype, and is copied: the Tensor owns its data;
- a ``dtype`` is reached by a cast only where no information is lost (2.5 to int32 raises);
- text, ``None`` and other non-numbers are refused with the reason.

``constant`` (``tf.constant``) makes a new Tensor from a value, and ``convert_like``
converts the Python number in ``x * 0.5`` to ``x``'s dtype, as TensorFlow's binary operators
do (a Python value mixed with a Tensor takes the Tensor's dtype; two Tensors of different
dtypes are never cast silently).
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

from .. import dtypes
from ..engine import tensor as _tensor
from ..engine.recording import tapes_recording
from ..engine.tensor import (Tensor, convert_to_tensor, owned_array,
                             register_tensor_conversion_function)


def _convert_data(value, dtype, name, what):
    """NumPy and Python data -> a Tensor that owns its array (see the module's docstring)."""
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind not in "biufc":
            raise _kind_error(value, what)
        # The Tensor owns its data: the caller's array is copied (a cast copies anyway), so
        # a later ``a[:] = 5`` cannot change the Tensor, nor a value a tape saved, as in
        # TensorFlow. (``np.array`` also turns a NumPy scalar or an ndarray subclass into a
        # new plain ndarray.)
        array = value if type(value) is np.ndarray else np.array(value)
        if dtype is not None:
            array = _cast_checked(array, dtype, value, what)
        return Tensor(owned_array(array) if array is value else array, name=name)
    if isinstance(value, (numbers.Number, list, tuple)):
        return Tensor(_from_python(value, dtype, what), name=name)
    raise _kind_error(value, what)




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
    if isinstance(value, (Tensor, list, tuple)):
        # A Tensor in it gives its value: a constant, no op (``tf.constant`` too), which
        # ``mt.viz.explain`` names when it cuts a gradient (``on_leaving``).
        value = _values_of(value, sys._getframe(1))
    t = convert_to_tensor(value, dtype=dtype, name=name, what="constant")
    # (convert_to_tensor already copied an ndarray: the new Tensor owns its array.)
    t = Tensor(t._value, name=name)
    if _tensor.on_creation is not None:   # (mt.viz notes the learner's line)
        _tensor.on_creation(t)
    return t


def _values_of(value, frame):
    """``value`` with each Tensor in it (nested lists and tuples too) replaced by its array;
    each one is handed to ``on_leaving`` (``frame``: the learner's code that asked)."""
    if isinstance(value, Tensor):
        if _tensor.on_leaving is not None and tapes_recording:
            _tensor.on_leaving(value, frame)
        return value._value
    if isinstance(value, (list, tuple)):   # (a list with no Tensor in it is kept as it is)
        items = [_values_of(v, frame) for v in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value


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


def _kind_error(value, what):
    message = (f"{what} expected a Tensor, a Variable, a number, a list of numbers or a NumPy "
               f"array, got {type(value).__name__} {value!r:.80}")
    if isinstance(value, (str, bytes)) or getattr(value, "dtype", None) is not None and \
            value.dtype.kind in "SU" or _holds_text(value):
        from .._tf_names import out_of_scope_message
        message += ". " + out_of_scope_message("A text Tensor (tf.string)", "text")
    return TypeError(message)


def _holds_text(value):
    """Whether a (nested) list or tuple holds a str or bytes (a TensorFlow string Tensor)."""
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, (str, bytes)) or _holds_text(v) for v in value)
    return False


def _from_python(value, dtype, what):
    """Python number or (nested) list -> ndarray, with TensorFlow's default dtypes."""
    try:
        array = np.array(value)
    except ValueError as e:
        raise ValueError(f"{what}: could not make a rectangular array from {value!r:.80}: {e}") \
            from None
    kind = array.dtype.kind
    if kind not in "biufc":
        raise _kind_error(value, what)
    if dtype is None:
        if kind == "c":
            return array.astype(dtypes.DEFAULT_COMPLEX)
        if kind == "f":
            return array.astype(dtypes.DEFAULT_FLOAT)
        if kind in "iu":
            if array.size and (array.max() > np.iinfo(np.int32).max
                               or array.min() < np.iinfo(np.int32).min):
                return array.astype(dtypes.int64)
            return array.astype(dtypes.DEFAULT_INT)
        return array
    return _cast_checked(array, dtype, value, what)


def _cast_checked(array, dtype, original, what):
    """Cast ``array`` to ``dtype`` only where no information is lost (TensorFlow's rule)."""
    if array.dtype == dtype:
        return array
    src, dst = array.dtype.kind, dtype.kind
    ok = ((src == "b" and dst == "b") or (src in "iu" and dst in "iufc")
          or (src == "f" and dst in "fc") or (src == "c" and dst == "c"))
    if ok and src in "iu" and dst in "iu" and array.size:
        info = np.iinfo(dtype)
        ok = info.min <= array.min() and array.max() <= info.max
    if not ok:
        raise TypeError(
            f"{what}: cannot convert {original!r:.60} ({array.dtype.name}) to a Tensor of dtype "
            f"{dtype.name} without losing information; pass a value of that dtype or use mt.cast"
        )
    return array.astype(dtype)


register_tensor_conversion_function(
    (np.ndarray, np.generic, numbers.Number, list, tuple, str, bytes), _convert_data)
