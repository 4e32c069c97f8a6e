"""Checking ``axis`` arguments: the one place every op that takes an axis goes through.

NumPy wraps an out-of-range axis in some places (``x % ndim``) and raises its own
``AxisError`` in others; TensorFlow raises ``InvalidArgumentError``. minitape checks every axis
against the rank *before* any NumPy call and raises ``mt.errors.InvalidArgumentError`` (also a
``ValueError``) with a message that names the function, the argument, the value and the valid
range:

    reduce_sum: axis=2 is out of range for a Tensor of rank 2 (shape (3, 4)); valid axes are
    -2 to 1

An axis may be a Python int, a NumPy integer or a 0-d integer Tensor; ``bool`` is refused
(``True`` is not an axis). The helpers return plain non-negative ints.
"""

from __future__ import annotations

import numpy as np

from ..engine.tensor import Tensor


def invalid_argument(message):
    """``mt.errors.InvalidArgumentError(message)`` (TensorFlow's class, also a ``ValueError``)
    if it exists, else a plain ``ValueError``: what a bad axis (or a bad size along one)
    raises."""
    try:
        from ..errors import InvalidArgumentError
    except ImportError:
        return ValueError(message)
    if not issubclass(InvalidArgumentError, ValueError):
        return ValueError(message)
    return InvalidArgumentError(None, None, message)  # (node_def, op, message), as TensorFlow


def _as_int(a, what, arg, value):
    if isinstance(a, Tensor):
        if a.ndim != 0 or a.dtype.kind not in "iu":
            raise TypeError(f"{what}: {arg} must be an int or a list of ints, got {value!r:.80}")
        return int(a._value)
    if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
        raise TypeError(f"{what}: {arg} must be an int or a list of ints, got "
                        f"{type(a).__name__} {a!r:.60}" + (f" in {value!r:.60}" if a is not value
                                                           else ""))
    return int(a)


def _out_of_range(what, arg, a, ndim, shape):
    where = f"a Tensor of rank {ndim}" + (f" (shape {shape})" if shape is not None else "")
    if ndim == 0:
        return invalid_argument(f"{what}: {arg}={a} is out of range for {where}: a scalar has no "
                             f"axes; {what} needs a Tensor of rank 1 or more here")
    return invalid_argument(f"{what}: {arg}={a} is out of range for {where}; valid axes are "
                         f"{-ndim} to {ndim - 1}")


def check_axis(axis, ndim, what, arg="axis", shape=None, new_axis=False) -> int:
    """One axis checked against ``ndim`` -> a non-negative int in ``range(ndim)``.

    Args:
        axis: int, NumPy integer or 0-d int Tensor; negative counts from the end.
        ndim: the rank of the Tensor the axis indexes.
        what: the public function's name, for the message (``"gather"``).
        arg: the argument's name, for the message (``"axis"``).
        shape: optional shape shown in the message.
        new_axis: the axis is where a *new* axis goes (``expand_dims``, ``stack``,
            ``one_hot``): ``ndim + 1`` places, ``-ndim - 1`` to ``ndim``; the result is in
            ``range(ndim + 1)``.

    Raises:
        TypeError: ``axis`` is not an integer.
        ValueError: ``axis`` is outside ``[-ndim, ndim)`` (``mt.errors.InvalidArgumentError``,
            a ValueError subclass).

    >>> check_axis(-1, 3, "softmax")
    2
    >>> check_axis(-1, 2, "expand_dims", new_axis=True)   # after the last axis
    2
    """
    a = _as_int(axis, what, arg, axis)
    places = ndim + 1 if new_axis else ndim
    if not -places <= a < places:
        if new_axis:
            where = f"a Tensor of rank {ndim}" + (f" (shape {shape})" if shape is not None
                                                  else "")
            raise invalid_argument(f"{what}: {arg}={a} is out of range for a new axis of {where}; "
                           f"valid positions are {-places} to {ndim}")
        raise _out_of_range(what, arg, a, ndim, shape)
    return a % places


def check_axes(axis, ndim, what, arg="axis", shape=None) -> tuple:
    """An axis argument of a reduction -> sorted tuple of distinct non-negative axes.

    ``axis`` may be None (every axis), an int, a list/tuple of ints, or an int Tensor (0-d or
    1-D). An empty list reduces over no axis. Repeated axes (``[0, -2]`` on a matrix) raise
    ``ValueError``, as in TensorFlow.

    >>> check_axes([-1, 0], 3, "reduce_sum")
    (0, 2)
    >>> check_axes(None, 2, "reduce_sum")
    (0, 1)
    """
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, checked at once
        return (axis % ndim,)
    if isinstance(axis, Tensor):
        if axis.dtype.kind not in "iu" or axis.ndim > 1:
            raise TypeError(f"{what}: {arg} must be an int or a list of ints, got {axis!r:.80}")
        axis = axis._value.tolist()
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    out = []
    for item in items:
        a = _as_int(item, what, arg, axis)
        if not -ndim <= a < ndim:
            raise _out_of_range(what, arg, a, ndim, shape)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise invalid_argument(f"{what}: {arg}={axis!r} names the same axis twice (for a Tensor of "
                            f"rank {ndim}); list each axis once")
    return tuple(sorted(out))


def check_perm(perm, ndim, what, arg="perm", shape=None) -> tuple:
    """A permutation of ``range(ndim)`` (negative entries allowed) -> tuple of non-negative ints.

    Raises ``ValueError`` unless ``perm`` has ``ndim`` entries, each in ``[-ndim, ndim)``, and
    names every axis once, as ``tf.transpose``.

    >>> check_perm([1, -3, 2], 3, "transpose")
    (1, 0, 2)
    """
    if isinstance(perm, Tensor):
        perm = perm._value.tolist()
        perm = [perm] if isinstance(perm, int) else perm
    if not isinstance(perm, (list, tuple)):
        raise TypeError(f"{what}: {arg} must be a list of ints, got {type(perm).__name__} "
                        f"{perm!r:.60}")
    out = tuple(_as_int(p, what, arg, perm) for p in perm)
    bad = [p for p in out if not -ndim <= p < ndim]
    if len(out) != ndim or bad or len({p % ndim for p in out}) != ndim:
        problem = (f"{bad[0]} is out of range" if bad else
                   f"it has {len(out)} entries" if len(out) != ndim else "it repeats an axis")
        of = f"a Tensor of shape {shape}" if shape is not None else f"a Tensor of rank {ndim}"
        raise invalid_argument(f"{what}: {arg}={list(out)} is not a permutation of the {ndim} axes "
                            f"of {of} ({problem}); give each of 0 to {ndim - 1} once, e.g. "
                            f"{list(range(ndim))[::-1]}")
    return tuple(p % ndim for p in out)
