"""Control flow as TensorFlow spells it: ``while_loop``, ``TensorArray``, ``IndexedSlices``.

minitape runs eagerly, as TensorFlow 2 does outside ``tf.function``, so these are what
TensorFlow's eager code paths do, written out in Python:

- ``while_loop(cond, body, loop_vars)`` is a Python ``while`` loop. Each iteration's ops are
  recorded on the tape like any other ops (only the iterations that ran are on it), so
  gradients flow through the loop, as through TensorFlow's eager ``while_loop``.
- ``TensorArray`` is a Python list of Tensors with TensorFlow's methods (``write``, ``read``,
  ``stack``, ``unstack``, ``gather``, ``scatter``, ``concat``, ``size``). ``stack`` is
  ``mt.stack`` of the written Tensors, so the gradient of a stacked result reaches each
  written value, as in eager TensorFlow.
- ``IndexedSlices`` is TensorFlow's sparse form of a gradient: rows ``values`` at
  ``indices`` of a Tensor of shape ``dense_shape``. TensorFlow's gradient of ``tf.gather``
  (and of an embedding lookup) is one; minitape's is the dense Tensor it stands for (what
  ``tf.convert_to_tensor(indexed_slices)`` gives), so code written for either works with
  ``mt.convert_to_tensor(grad)``. The class exists so that TensorFlow code that builds one,
  or checks ``isinstance(g, tf.IndexedSlices)``, runs.
"""

from __future__ import annotations

import numpy as np

from . import dtypes, errors, nest
from .ops import array_ops, math_ops
from .engine.tensor import Tensor, TensorShape, convert_to_tensor
from .engine.tensor import register_tensor_conversion_function

__all__ = ["TensorArray", "while_loop", "IndexedSlices"]


# -- while_loop ---------------------------------------------------------------------------------

def _as_loop_value(value):
    # Tensors and TensorArrays as they are; a Variable is read (TensorFlow's eager loop reads
    # it too); Python numbers, lists and ndarrays become Tensors.
    if isinstance(value, (TensorArray, IndexedSlices)) or type(value) is Tensor:
        return value
    return convert_to_tensor(value, what="while_loop")


def _convert_all(structure):
    return nest.pack_like(structure, [_as_loop_value(v) for v in nest.flatten(structure)])


def _structure(value):
    """The nesting of ``value`` with every leaf replaced by None (to compare two structures)."""
    if isinstance(value, (list, tuple)):
        return (type(value) is list, tuple(_structure(v) for v in value))
    if isinstance(value, dict):
        return tuple((k, _structure(v)) for k, v in sorted(value.items()))
    return None


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``, as ``tf.while_loop``.

    Args:
        cond: a function of the loop variables returning a boolean (a Python bool or a
            one-element bool Tensor).
        body: a function of the loop variables returning new ones, in the same structure
            (a body of one loop variable may return it bare instead of in a tuple).
        loop_vars: a Tensor, or a (nested) tuple, list or dict of Tensors, TensorArrays,
            numbers or arrays (converted to Tensors). A tuple or list is unpacked into
            ``cond`` and ``body``'s arguments; anything else is passed as one argument.
        maximum_iterations: None, or the largest number of iterations (an int >= 0, or a
            0-d integer Tensor): the loop stops then even if ``cond`` is still true.
        shape_invariants, parallel_iterations, back_prop, swap_memory, name: accepted, as
            TensorFlow's eager ``while_loop`` accepts them; they change nothing here.

    Returns:
        The loop variables after the last iteration, in ``loop_vars``'s structure.

    Raises:
        TypeError: ``cond`` or ``body`` is not callable, ``cond`` returns something that is
            not a scalar boolean, or ``maximum_iterations`` is not an integer.
        ValueError: ``body`` returns another structure than ``loop_vars`` (TensorFlow's
            "The two structures don't have the same nested structure"), a negative
            ``maximum_iterations``, or a Tensor of another dtype than the loop variable it
            replaces.

    The tape records each iteration's ops as they run, so the gradient of the result with
    respect to what the loop read is the gradient through the iterations that ran.

    >>> import minitape as mt
    >>> i, total = mt.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
    ...                          (mt.constant(0), mt.constant(0)))
    >>> int(i), int(total)
    (5, 10)
    >>> x = mt.Variable(2.0)
    >>> with mt.GradientTape() as tape:      # y = x**8: three squarings
    ...     y, = mt.while_loop(lambda y: y < 100.0, lambda y: (y * y,), [x])
    >>> float(y), float(tape.gradient(y, x))
    (256.0, 1024.0)
    """
    if not callable(cond) or not callable(body):
        raise TypeError(f"while_loop: cond and body must be callable, got cond={cond!r:.40}, "
                        f"body={body!r:.40}")
    limit = None
    if maximum_iterations is not None:
        m = maximum_iterations
        if isinstance(m, Tensor):
            if m.dtype.kind not in "iu" or m.ndim != 0:
                raise TypeError(f"while_loop: maximum_iterations must be a 0-d integer Tensor "
                                f"or an int, got {m!r}")
            m = int(m)
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
            raise TypeError(f"while_loop: maximum_iterations must be an int, got {m!r:.40}")
        if m < 0:
            raise ValueError(f"while_loop: maximum_iterations must be >= 0, got {m}")
        limit = int(m)
    unpack = isinstance(loop_vars, (list, tuple))
    if unpack and not loop_vars:
        raise ValueError("while_loop: loop_vars must not be empty")
    loop_vars = _convert_all(loop_vars)
    structure = _structure(loop_vars)
    flat_before = nest.flatten(loop_vars)
    iterations = 0
    while limit is None or iterations < limit:
        if not _truth(cond(*loop_vars) if unpack else cond(loop_vars)):
            break
        new = body(*loop_vars) if unpack else body(loop_vars)
        if unpack and len(loop_vars) == 1 and not isinstance(new, (list, tuple)):
            new = type(loop_vars)([new])     # a body of one variable may return it bare
        if isinstance(new, (list, tuple)) and unpack:
            new = type(loop_vars)(new)
        if _structure(new) != structure:
            raise ValueError(f"while_loop: The two structures don't have the same nested "
                             f"structure: loop_vars has {_describe(loop_vars)} but body "
                             f"returned {_describe(new)}; body must return the loop "
                             "variables in the same structure")
        new = _convert_all(new)
        for before, after in zip(flat_before, nest.flatten(new)):
            if isinstance(before, Tensor) and isinstance(after, Tensor) and \
                    before.dtype != after.dtype:
                raise ValueError(f"while_loop: a loop variable of dtype {before.dtype.name} "
                                 f"became {after.dtype.name} in body; a loop variable keeps "
                                 "its dtype (mt.cast the value body returns)")
        loop_vars = new
        iterations += 1
    return loop_vars


def _truth(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, Tensor) and value.dtype.kind == "b" and value.size == 1:
        return bool(value.numpy())
    raise TypeError(f"while_loop: cond must return a boolean (a Python bool or a one-element "
                    f"bool Tensor such as i < 10), got {value!r:.80}")


def _describe(value):
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


# -- TensorArray --------------------------------------------------------------------------------

class TensorArray:
    """A list of Tensors of one dtype, written one at a time, as ``tf.TensorArray`` (eager).

    Args:
        dtype: the elements' dtype (``mt.float32``, ...).
        size: the number of elements (default 0); reads of elements never written give
            zeros (of the element shape, once known), as TensorFlow's eager TensorArray.
        dynamic_size: if True, writing past the end grows the array; if False (the
            default), it raises.
        clear_after_read, tensor_array_name, handle, flow, colocate_with_first_write_call,
            name: accepted, as TensorFlow's eager TensorArray accepts them.
        infer_shape: if True (the default), every element must have the first one's shape.
        element_shape: the elements' shape, if known in advance.

    Methods return what TensorFlow's return: ``write``, ``unstack`` and ``scatter`` return
    the TensorArray (write ``ta = ta.write(i, x)``, as TensorFlow asks: inside a
    ``tf.function`` the result must be used; here the array is also changed in place);
    ``read``, ``stack``, ``gather``, ``concat`` and ``size`` return Tensors.

    Raises:
        mt.errors.OutOfRangeError: writing past the end of an array that is not
            ``dynamic_size``, reading past its end, or a negative index.
        mt.errors.InvalidArgumentError: writing a value of another dtype (no silent cast).
        ValueError: a value whose shape differs from the element shape.

    Gradients: ``read`` returns the written Tensor itself and ``stack`` / ``gather`` /
    ``concat`` are minitape ops of the written Tensors, so a tape differentiates through
    the array.

    >>> import minitape as mt
    >>> x = mt.Variable([1.0, 2.0])
    >>> with mt.GradientTape() as tape:
    ...     ta = mt.TensorArray(mt.float32, size=3)
    ...     for i in range(3):
    ...         ta = ta.write(i, x * float(i))
    ...     y = mt.reduce_sum(ta.stack())
    >>> ta.stack().shape, float(y), tape.gradient(y, x).numpy()
    ((3, 2), 9.0, array([3., 3.], dtype=float32))
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        self._dtype = dtypes.check_dtype(dtype, "TensorArray")
        if self._dtype is None:
            raise TypeError("TensorArray: dtype is required, e.g. mt.TensorArray(mt.float32, "
                            "size=3)")
        if isinstance(size, Tensor):
            size = int(size)
        if size is None:
            size = 0
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"TensorArray: size must be an int >= 0, got {size!r:.40}")
        self._elements = [None] * int(size)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = bool(infer_shape)
        self._element_shape = None if element_shape is None else tuple(element_shape)

    # -- what it is --------------------------------------------------------------------------
    @property
    def dtype(self):
        """The elements' dtype."""
        return self._dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    @property
    def element_shape(self):
        """The elements' shape (a ``TensorShape``), or None before the first write."""
        return None if self._element_shape is None else TensorShape(self._element_shape)

    def size(self, name=None) -> Tensor:
        """The number of elements, a 0-d int32 Tensor (as ``TensorArray.size``)."""
        return Tensor(np.array(len(self._elements), np.int32), name=name)

    def __repr__(self):
        return (f"<mt.TensorArray dtype={self._dtype.name} size={len(self._elements)} "
                f"element_shape={self._element_shape}>")

    # -- writing -------------------------------------------------------------------------------
    def _index(self, index, what):
        if isinstance(index, Tensor):
            index = index.__index__()
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"TensorArray.{what}: the index must be an int or a 0-d integer "
                            f"Tensor, got {index!r:.40}")
        if index < 0:
            raise errors.OutOfRangeError(None, None, f"TensorArray.{what}: negative indices "
                                         f"(index {index}) are not allowed")
        return int(index)

    def _check_value(self, value, what):
        if isinstance(value, Tensor) and value.dtype != self._dtype:
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray dtype is {self._dtype.name} but Op is trying to "
                f"write dtype {value.dtype.name} (TensorArray.{what}); mt.cast the value first")
        value = convert_to_tensor(value, dtype=self._dtype, what=f"TensorArray.{what}")
        if self._element_shape is not None and value.shape != self._element_shape and \
                (self._infer_shape or what != "write"):
            raise ValueError(f"TensorArray.{what}: Incompatible shape for value "
                             f"{value.shape}, expected {self._element_shape}")
        if self._infer_shape and self._element_shape is None:
            self._element_shape = tuple(value.shape)
        return value

    def write(self, index, value, name=None) -> "TensorArray":
        """Put ``value`` (converted to the array's dtype) at ``index``; returns the array.

        Raises:
            mt.errors.OutOfRangeError: ``index`` past the end of an array that is not
                ``dynamic_size``, or negative.
            mt.errors.InvalidArgumentError: a Tensor of another dtype.
            ValueError: a shape other than the element shape.
        """
        index = self._index(index, "write")
        if index >= len(self._elements):
            if not self._dynamic_size:
                raise errors.OutOfRangeError(
                    None, None, f"Tried to write to index {index} but array is not resizeable "
                    f"and size is: {len(self._elements)} (make it with dynamic_size=True to "
                    "let it grow)")
            self._elements.extend([None] * (index + 1 - len(self._elements)))
        self._elements[index] = self._check_value(value, "write")
        return self

    def unstack(self, value, name=None) -> "TensorArray":
        """Write the rows of ``value`` (along axis 0) as elements 0, 1, ...; returns the array.

        The elements are ``mt.unstack(value)``'s Tensors, so gradients flow back to ``value``.
        """
        value = convert_to_tensor(value, dtype=self._dtype, what="TensorArray.unstack")
        if value.ndim == 0:
            raise ValueError("TensorArray.unstack: value must have at least one axis, got a "
                             "0-d Tensor")
        rows = array_ops.unstack(value) if value.shape[0] else []
        return self.scatter(list(range(len(rows))), rows) if rows else self

    def scatter(self, indices, value, name=None) -> "TensorArray":
        """Write ``value[i]`` at ``indices[i]`` for each ``i``; returns the array."""
        if isinstance(indices, Tensor):
            indices = indices.numpy().tolist()
        rows = value if isinstance(value, list) else array_ops.unstack(
            convert_to_tensor(value, dtype=self._dtype, what="TensorArray.scatter"))
        if len(rows) != len(indices):
            raise ValueError(f"TensorArray.scatter: {len(indices)} indices but {len(rows)} rows "
                             "in value")
        for i, row in zip(indices, rows):
            self.write(i, row)
        return self

    # -- reading -------------------------------------------------------------------------------
    def _element(self, index, what):
        index = self._index(index, what)
        if index >= len(self._elements):
            raise errors.OutOfRangeError(None, None, f"Tried to read from index {index} but "
                                         f"array size is: {len(self._elements)}")
        value = self._elements[index]
        if value is None:     # never written: zeros, as TensorFlow's eager TensorArray
            if self._element_shape is None:
                raise ValueError(f"TensorArray.{what}: element {index} was never written and "
                                 "the element shape is unknown; write it first or give "
                                 "element_shape=")
            value = Tensor(np.zeros(self._element_shape, self._dtype))
        return value

    def read(self, index, name=None) -> Tensor:
        """The element at ``index`` (the very Tensor written: gradients flow through it)."""
        return self._element(index, "read")

    def stack(self, name=None) -> Tensor:
        """All elements stacked along a new axis 0: shape ``(size,) + element_shape``.

        An empty array gives a Tensor of shape ``(0,) + element_shape`` (``(0,)`` if unknown).
        """
        if not self._elements:
            return Tensor(np.zeros((0,) + (self._element_shape or ()), self._dtype), name=name)
        return array_ops.stack([self._element(i, "stack") for i in range(len(self._elements))])

    def gather(self, indices, name=None) -> Tensor:
        """The elements at ``indices``, stacked along a new axis 0."""
        if isinstance(indices, Tensor):
            indices = indices.numpy().tolist()
        return array_ops.stack([self._element(i, "gather") for i in indices])

    def concat(self, name=None) -> Tensor:
        """All elements concatenated along their axis 0."""
        if not self._elements:
            return Tensor(np.zeros((0,) + (self._element_shape or ())[1:], self._dtype))
        return array_ops.concat([self._element(i, "concat")
                                 for i in range(len(self._elements))], axis=0)

    def identity(self):
        """The array itself (TensorFlow uses it for control dependencies)."""
        return self

    def close(self, name=None):
        """Empty the array."""
        self._elements = []

    def mark_used(self):
        """Accepted (TensorFlow's check for unused results does not apply here)."""


# -- IndexedSlices ------------------------------------------------------------------------------

class IndexedSlices:
    """Rows of a Tensor given by index, as ``tf.IndexedSlices``: ``dense[indices[i]] =
    values[i]``, every other row zero (rows whose index repeats are added).

    Args:
        values: a Tensor of shape ``(k,) + row_shape``.
        indices: a 1-D integer Tensor or list of ``k`` row numbers.
        dense_shape: the shape of the dense Tensor, ``(n,) + row_shape`` (None: the rows
            go up to the largest index).

    TensorFlow's gradient of ``tf.gather`` is an ``IndexedSlices``; minitape's is the dense
    Tensor it stands for (see the module docstring). ``mt.convert_to_tensor(slices)`` and
    ``np.asarray(slices)`` give that dense Tensor; converting is differentiable with respect
    to ``values``.

    Raises:
        TypeError: non-integer indices. ValueError: indices and values of different lengths,
            an index out of range, or a dense shape that does not fit the values.

    >>> import minitape as mt
    >>> s = mt.IndexedSlices(mt.constant([[1., 2.], [3., 4.]]), [2, 0], dense_shape=[3, 2])
    >>> mt.convert_to_tensor(s).numpy()
    array([[3., 4.],
           [0., 0.],
           [1., 2.]], dtype=float32)
    """

    def __init__(self, values, indices, dense_shape=None):
        values = convert_to_tensor(values, what="IndexedSlices")
        indices = convert_to_tensor(indices, what="IndexedSlices")
        if indices.dtype.kind not in "iu" or indices.ndim != 1:
            raise TypeError(f"IndexedSlices: indices must be a 1-D list or Tensor of ints, "
                            f"got {indices!r:.80}")
        if values.ndim == 0 or values.shape[0] != indices.shape[0]:
            raise ValueError(f"IndexedSlices: values {values.shape} must have one row per "
                             f"index ({indices.shape[0]} indices)")
        idx = indices.numpy()
        if dense_shape is None:
            dense_shape = (int(idx.max()) + 1 if idx.size else 0,) + tuple(values.shape[1:])
        elif isinstance(dense_shape, Tensor):
            dense_shape = dense_shape.numpy().tolist()
        dense_shape = tuple(int(d) for d in dense_shape)
        if dense_shape[1:] != tuple(values.shape[1:]):
            raise ValueError(f"IndexedSlices: dense_shape {dense_shape} does not fit values of "
                             f"shape {values.shape} (the rows' shapes must agree)")
        if idx.size and (idx.min() < 0 or idx.max() >= dense_shape[0]):
            raise ValueError(f"IndexedSlices: indices must be in [0, {dense_shape[0]}), got "
                             f"{idx.tolist()}")
        self.values, self.indices = values, indices
        self.dense_shape = Tensor(np.array(dense_shape, np.int64))

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self) -> TensorShape:
        """The dense Tensor's shape."""
        return TensorShape(int(d) for d in self.dense_shape.numpy())

    def _dense(self) -> Tensor:
        # dense = one_hot(indices)^T @ values (rows flattened): differentiable in ``values``,
        # and repeated indices add, as tf.convert_to_tensor does.
        n = int(self.dense_shape.numpy()[0])
        k = self.values.shape[0]
        rows = array_ops.reshape(self.values, (k, -1))
        scatter = array_ops.one_hot(self.indices, n, dtype=self.values.dtype)   # (k, n)
        dense = math_ops.matmul(scatter, rows, transpose_a=True)                # (n, row)
        return array_ops.reshape(dense, tuple(int(d) for d in self.dense_shape.numpy()))

    def __array__(self, dtype=None, copy=None):
        return self._dense().__array__(dtype, copy)   # (as the dense Tensor's: a read-only view)

    def __repr__(self):
        return (f"IndexedSlices(indices={self.indices!r}, values={self.values!r}, "
                f"dense_shape={self.dense_shape!r})")


def _indexed_slices_to_tensor(value, dtype, name, what):
    """``mt.convert_to_tensor(slices)``: the dense Tensor it stands for, as TensorFlow."""
    return convert_to_tensor(value._dense(), dtype=dtype, what=what)


register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)
