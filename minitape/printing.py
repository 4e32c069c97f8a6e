"""How a Tensor prints: ``repr``, ``str``, ``f"{t:.3f}"`` and ``round(t)``, as TensorFlow's.

The engine's ``Tensor`` holds a value; this module gives it its text (the last lines attach
the functions to ``Tensor`` and ``Variable``, as the ops attach the operators), so a printed
Tensor reads like TensorFlow's: ``<mt.Tensor: shape=(2,), dtype=float32, numpy=array([1.,
2.], dtype=float32)>``; ``print(t)`` gives ``mt.Tensor([1. 2.], shape=(2,), dtype=float32)``.
"""

from __future__ import annotations

import numpy as np

from .engine.tensor import Tensor, Variable


def numpy_text(t, text=repr):
    """The value as text: a 0-d Tensor's scalar, else NumPy's ``repr`` (or ``str``)."""
    value = t.numpy()   # (a NumPy scalar for a 0-d Tensor)
    if np.ndim(value) == 0:
        return str(value)
    out = text(value)
    # As TensorFlow: a value that spans several lines starts on a line of its own.
    return "\n" + out if text is repr and "\n" in out else out


def tensor_repr(t):
    return (f"<mt.Tensor: shape={t.shape}, dtype={t.dtype.name}, "
            f"numpy={numpy_text(t)}>")


def tensor_str(t):
    return f"mt.Tensor({numpy_text(t, str)}, shape={t.shape}, dtype={t.dtype.name})"


def tensor_format(t, spec):
    """``f"{t:.3f}"``: format a 0-d Tensor as its NumPy scalar does.

    An empty spec (``f"{t}"``) gives ``str(t)``. A non-scalar with a spec raises
    ``TypeError``, as an ndarray does.

    >>> import minitape as mt
    >>> f"{mt.constant(2.5):.2f}"
    '2.50'
    """
    if not spec:
        return str(t)
    if t.ndim != 0:
        raise TypeError(f"format spec {spec!r} needs a scalar (0-d) Tensor, got shape "
                        f"{t.shape}; format single elements (f'{{t[0]:{spec}}}') or "
                        f"reduce first (mt.reduce_mean)")
    return format(t.numpy(), spec)


def tensor_round(t, ndigits=None):
    """``round(t)``: as the NumPy scalar of a 0-d Tensor (an int, or a scalar for digits)."""
    if t.ndim != 0:
        raise TypeError(f"round() needs a scalar (0-d) Tensor, got shape {t.shape}; "
                        "use mt.round for elementwise rounding")
    return round(t.numpy(), ndigits)


def variable_repr(t):
    return (f"<mt.Variable '{t.name}' shape={t.shape} dtype={t.dtype.name}, "
            f"numpy={numpy_text(t)}>")


Tensor.__repr__ = tensor_repr
Tensor.__str__ = tensor_str
Tensor.__format__ = tensor_format
Tensor.__round__ = tensor_round
Variable.__repr__ = Variable.__str__ = variable_repr
