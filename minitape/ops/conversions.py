"""How a Tensor's value leaves minitape: ``np.asarray(t)`` (and every NumPy function given a
Tensor), ``float(t)``, ``int(t)``, ``complex(t)``, ``bool(t)`` and ``operator.index(t)``.

These give the Tensor its conversions, as ``math_ops`` gives it its operators. What they
return is a plain NumPy or Python value: no tape can follow it, so a gradient through
``np.square(x)`` or ``float(y)`` is None. ``Tensor.numpy()`` (in the engine) is the same
kind of exit. Each one tells ``minitape.engine.tensor.on_leaving``, when it is set
(``mt.config.record_source_lines``: the default) and a tape records, which Tensor left and
which code asked, so that ``mt.viz.explain`` can name that line as the cause of a None gradient.
"""

from __future__ import annotations

import sys

import numpy as np

from ..engine import tensor as _tensor
from ..engine.recording import tapes_recording
from ..engine.tensor import Tensor


def _array(self, dtype=None, copy=None):
    """``np.asarray(t)``: a read-only view of the value (no copy), as ``numpy()``.

    ``np.array(t)`` (``copy=True``) and a ``dtype`` other than the Tensor's give a new,
    writable array; ``copy=False`` with another dtype raises ``ValueError``, as NumPy 2.
    """
    if _tensor.on_leaving is not None and tapes_recording:
        _tensor.on_leaving(self, sys._getframe(1))
    value = self._value
    if copy or type(value) is not np.ndarray:  # (a NumPy scalar: asarray makes a new array)
        return np.array(value, dtype=dtype, copy=True)
    if dtype is not None and np.dtype(dtype) != value.dtype:
        if copy is False:
            raise ValueError(f"np.asarray(Tensor, dtype={np.dtype(dtype).name}, copy=False): "
                             f"the Tensor's dtype is {value.dtype.name}, so a copy is needed")
        return value.astype(dtype)
    return _tensor._read_only_view(value)


def _bool(self):
    if self._value.size != 1:
        raise ValueError(
            f"the truth value of a Tensor of shape {self.shape} is ambiguous: bool() needs "
            "exactly one element; use mt.reduce_any / mt.reduce_all style reductions first")
    return bool(self._value)


def _scalar(self, kind, frame):
    """``kind(t)`` (``float``, ``int``, ``complex``) of a one-element Tensor; ``frame``: the
    code that asked."""
    if self._value.size != 1:
        raise TypeError(f"{kind.__name__}() needs a one-element Tensor, got shape {self.shape}")
    if _tensor.on_leaving is not None and tapes_recording:
        _tensor.on_leaving(self, frame)
    return kind(self._value.reshape(()))


def _float(self):
    return _scalar(self, float, sys._getframe(1))


def _int(self):
    return _scalar(self, int, sys._getframe(1))


def _complex(self):
    return _scalar(self, complex, sys._getframe(1))


def _index(self):
    if self._dtype.kind not in "iu" or self._value.ndim != 0:
        raise TypeError(f"only a 0-d integer Tensor can be used as an index, got {self!r}")
    return int(self._value)


Tensor.__array__ = _array
Tensor.__bool__ = _bool
Tensor.__float__ = _float
Tensor.__int__ = _int
Tensor.__complex__ = _complex
Tensor.__index__ = _index
