"""Writing into part of a Variable: ``v[key].assign(...)`` and ``v.scatter_nd_update(...)``.

The engine's ``Variable`` changes only through ``assign``; this module builds the partial
writes on it, as TensorFlow's resource_variable_ops and array_ops do, and gives ``Variable``
the methods (the last lines of the module): ``v[key]`` is a read of ``v`` (recorded like any
indexing) that can also write into that slice; ``scatter_nd_update``, ``scatter_nd_add`` and
``scatter_nd_sub`` write at a list of indices. None of the writes is recorded on a tape: like
``assign``, each replaces the Variable's array with a new one. A plain Tensor is immutable:
``t[0] = 1`` and ``t.assign(...)`` raise errors that say where to keep values that change.
"""

from __future__ import annotations

import numpy as np

from ..engine.tensor import Tensor, Variable, convert_to_tensor
from . import array_ops


def scatter_nd_update(variable, indices, updates, name=None):
    """Write ``updates`` at ``indices`` into the Variable, as
    ``tf.Variable.scatter_nd_update``; returns the Variable.

    ``indices`` is an integer array of shape ``(..., d)``: each last-axis row is the
    index of one element (``d == v.ndim``) or of one slice (``d < v.ndim``) of ``v``.
    ``updates`` has shape ``indices.shape[:-1] + v.shape[d:]``, ``v``'s dtype (Python
    numbers are converted). Like ``assign``, the write is not recorded on any tape.
    Where an index repeats, the last update wins.

    Raises:
        TypeError: non-integer indices, or updates of another dtype.
        ValueError: shapes that do not fit, or an index out of range.

    >>> import minitape as mt
    >>> v = mt.Variable([1., 2., 3., 4.])
    >>> v.scatter_nd_update([[0], [2]], [10., 30.]).numpy()
    array([10.,  2., 30.,  4.], dtype=float32)
    """
    return _scatter_nd(variable, indices, updates, "scatter_nd_update", None)


def scatter_nd_add(variable, indices, updates, name=None):
    """Add ``updates`` at ``indices`` (repeated indices add up), as
    ``tf.Variable.scatter_nd_add``; see ``scatter_nd_update``."""
    return _scatter_nd(variable, indices, updates, "scatter_nd_add", np.add)


def scatter_nd_sub(variable, indices, updates, name=None):
    """Subtract ``updates`` at ``indices``, as ``tf.Variable.scatter_nd_sub``."""
    return _scatter_nd(variable, indices, updates, "scatter_nd_sub", np.subtract)


def _scatter_nd(variable, indices, updates, method, ufunc):
    what = f"Variable.{method}"
    idx = convert_to_tensor(indices, what=what)._value
    if idx.dtype.kind not in "iu" or idx.ndim < 1:
        raise TypeError(f"{what}: indices must be integers with the index on the last "
                        f"axis (e.g. [[0], [2]]), got {indices!r:.60}")
    depth = idx.shape[-1]
    if depth > variable.ndim:
        raise ValueError(f"{what}: each index has {depth} numbers but the Variable "
                         f"'{variable.name}' has only {variable.ndim} axes")
    new = convert_to_tensor(updates, dtype=variable.dtype, what=what)._value
    expected = idx.shape[:-1] + variable.shape[depth:]
    if new.shape != expected:
        raise ValueError(f"{what}: updates have shape {new.shape}, expected "
                         f"{expected} (indices.shape[:-1] + variable.shape[{depth}:])")
    bounds = np.array(variable.shape[:depth])
    if idx.size and ((idx < 0).any() or (idx >= bounds).any()):
        raise ValueError(f"{what}: an index is out of range for the Variable "
                         f"'{variable.name}' of shape {variable.shape}: {idx.tolist()!r:.80}")
    full = np.array(variable)   # a new array, as assign: what a tape saved stays valid
    key = tuple(idx.reshape(-1, depth).T)
    rows = new.reshape((-1,) + variable.shape[depth:])
    if ufunc is None:
        full[key] = rows
    else:
        ufunc.at(full, key, rows)
    return variable.assign(full)


def getitem(variable, key):
    """``v[key]``: the slice's current value, a Tensor that can also write into ``v``.

    As ``tf.Variable.__getitem__``: the result is a read of ``v`` (recorded like any
    indexing, so gradients flow to ``v``) that also offers ``assign``, ``assign_add`` and
    ``assign_sub``, which write into that slice of ``v`` and return ``v``. The writes
    follow ``Variable.assign``'s rules (the slice's shape, ``v``'s dtype) and, like it, are
    not recorded on any tape.

    >>> import minitape as mt
    >>> v = mt.Variable([[1., 2., 3.], [4., 5., 6.]])
    >>> v[1, 2].assign(9)
    <mt.Variable 'Variable' shape=(2, 3) dtype=float32, numpy=
    array([[1., 2., 3.],
           [4., 5., 9.]], dtype=float32)>
    >>> v[0, :].assign_add([10., 10., 10.]).numpy()[0]
    array([11., 12., 13.], dtype=float32)
    """
    read = array_ops.getitem(variable, key)
    return VariableSlice(read, variable, array_ops._index_key(key, "indexing"))


class VariableSlice(Tensor):
    """``v[key]`` for a Variable ``v``: a Tensor (the slice's value when it was read) whose
    ``assign``, ``assign_add`` and ``assign_sub`` write into that slice of ``v``.

    A write makes a new array for ``v`` (through ``Variable.assign``), never an in-place
    write, so what a tape saved stays valid; nothing is recorded.
    """

    __slots__ = ("_variable", "_key")

    def __init__(self, read, variable, key):
        super().__init__(read._value, name=read.name, tensor_id=read.id)
        self._variable = variable
        self._key = key

    def _write(self, value, method, delta=0):
        variable, key = self._variable, self._key
        what = f"Variable[{_key_text(key)}].{method}"
        new = convert_to_tensor(value, dtype=variable.dtype, what=what)._value
        current = np.asarray(variable)[key]  # the slice now (v may have changed since the read)
        shape = np.shape(current)
        if new.shape != shape:
            ok = False
            if delta:  # assign_add/assign_sub: a delta that broadcasts to the slice is fine
                try:
                    ok = np.broadcast_shapes(shape, new.shape) == shape
                except ValueError:
                    pass
            if not ok:
                raise ValueError(
                    f"{what}: the value has shape {new.shape} but the slice "
                    f"[{_key_text(key)}] of Variable '{variable.name}' (shape "
                    f"{variable.shape}) has shape {shape}; pass a value of that shape")
        full = np.array(variable)
        full[key] = current + delta * new if delta else new
        return variable.assign(full)

    def assign(self, value):
        """Write ``value`` (the slice's shape, ``v``'s dtype) into the slice; returns ``v``."""
        return self._write(value, "assign")

    def assign_add(self, delta):
        """Add ``delta`` (broadcast to the slice's shape) to the slice; returns ``v``."""
        return self._write(delta, "assign_add", 1)

    def assign_sub(self, delta):
        """Subtract ``delta`` (broadcast to the slice's shape) from the slice; returns ``v``."""
        return self._write(delta, "assign_sub", -1)


def _key_text(key):
    """An indexing key as written between brackets: ``(0, slice(None, 2))`` -> ``0, :2``."""
    def one(k):
        if isinstance(k, slice):
            text = ("" if k.start is None else str(k.start)) + ":" + \
                   ("" if k.stop is None else str(k.stop))
            return text + ("" if k.step is None else f":{k.step}")
        return "..." if k is Ellipsis else repr(k)
    return ", ".join(one(k) for k in (key if isinstance(key, tuple) else (key,)))


def _refuse_setitem(variable, key, value):
    raise TypeError(f"'Variable' object does not support item assignment; write "
                    f"v[{_key_text(key)}].assign(value), as in TensorFlow")


# A Tensor is immutable, as in TensorFlow: ``t[0] = 1`` and ``t.assign(...)`` explain where to
# keep values that change. (``hasattr(t, "assign")`` stays False: properties that raise
# AttributeError, not a ``__getattr__``, which would slow every attribute read of a Tensor.)
_IMMUTABLE_FIX = ("To change values in place, keep them in a mt.Variable and assign into a slice "
                  "of it, indexing the Variable itself in one step (v[1, 2].assign(9.0), "
                  "v[0:2, :].assign(...)); or build a new Tensor (mt.where, mt.concat).")


def _refuse_tensor_setitem(tensor, key, value):
    raise TypeError(f"'{type(tensor).__name__}' object does not support item assignment: a "
                    f"Tensor is immutable, as in TensorFlow. {_IMMUTABLE_FIX}")


def _no_assign(name):
    def refuse(tensor):
        raise AttributeError(f"'{type(tensor).__name__}' object has no attribute {name!r}: a "
                             f"Tensor is immutable, as in TensorFlow. {_IMMUTABLE_FIX}")
    return property(refuse)


Tensor.__setitem__ = _refuse_tensor_setitem
Tensor.assign = _no_assign("assign")
Tensor.assign_add = _no_assign("assign_add")
Tensor.assign_sub = _no_assign("assign_sub")


Variable.__getitem__ = getitem
Variable.__setitem__ = _refuse_setitem
Variable.scatter_nd_update = scatter_nd_update
Variable.scatter_nd_add = scatter_nd_add
Variable.scatter_nd_sub = scatter_nd_sub
