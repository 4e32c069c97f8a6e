"""Values: ``Tensor`` (immutable), ``Variable`` (stateful) and the conversion rules.

A ``Tensor`` wraps a NumPy array and an integer id. The id is what the tape records: an
operation is stored as "op type, input ids, output ids", and the backward pass keys its
gradients by id. Ids come from a counter, so they are small, unique and deterministic.

A ``Variable`` is a Tensor whose value can be replaced with ``assign``. Every time an
operation reads a Variable, it reads a *snapshot*: a plain Tensor holding the current value
and carrying the Variable's id. So a gradient with respect to the Variable collects every
read of it, and a later ``assign`` never changes what an earlier operation saved.

Conversion rules (as TensorFlow's ``convert_to_tensor``):

- a Python float, or a list of floats, becomes float32; a Python int becomes int32;
- a NumPy array keeps its dtype;
- a Python value mixed with a Tensor in an operation takes the Tensor's dtype;
- two Tensors of different dtypes are never cast silently (``TypeError``; use ``mt.cast``).
"""

from __future__ import annotations

import itertools
import numbers

import numpy as np

from . import dtypes

_next_id = itertools.count(1).__next__


class Tensor:
    """An immutable n-dimensional array, as ``tf.Tensor``.

    Attributes:
        shape: tuple of ints.
        dtype: a NumPy dtype (``mt.float32`` is ``np.dtype("float32")``).
        ndim: number of dimensions.
        name: optional name (shown by the renderers).

    Python operators (``+ - * / ** @``, unary ``-``, ``abs``, comparisons, indexing) run
    minitape operations, so a tape records them. NumPy functions (``np.mean(t)``) turn the
    Tensor into an ndarray first: their result has left minitape and no tape can see it.

    >>> import minitape as mt
    >>> mt.constant([1.0, 2.0]) * 3
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([3., 6.], dtype=float32)>
    """

    __slots__ = ("_value", "_id", "name", "__weakref__")
    # Make ``ndarray + tensor`` and ``[[1., 2.]] @ tensor`` call our reflected operators.
    __array_priority__ = 1000

    def __init__(self, value, name=None, _id=None):
        # ``value`` is an ndarray or a NumPy scalar; use mt.constant to build from Python data.
        self._value = value
        self._id = _next_id() if _id is None else _id
        self.name = name

    # -- what a Tensor is ------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    def numpy(self):
        """The value as NumPy: a NumPy scalar for a 0-d Tensor, else a read-only ndarray."""
        value = self._value
        if value.ndim == 0:
            return value[()]
        view = value.view()
        view.flags.writeable = False
        return view

    def __array__(self, dtype=None, copy=None):
        value = np.asarray(self._value)
        return value if dtype is None else value.astype(dtype)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d Tensor (a scalar) is not defined")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d Tensor (a scalar) is not defined")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        if self._value.size != 1:
            raise ValueError(
                f"the truth value of a Tensor of shape {self.shape} is ambiguous: bool() needs "
                "exactly one element; use mt.reduce_any / mt.reduce_all style reductions first"
            )
        return bool(self._value)

    def __float__(self):
        if self._value.size != 1:
            raise TypeError(f"float() needs a one-element Tensor, got shape {self.shape}")
        return float(self._value.reshape(()))

    def __int__(self):
        if self._value.size != 1:
            raise TypeError(f"int() needs a one-element Tensor, got shape {self.shape}")
        return int(self._value.reshape(()))

    def __index__(self):
        if self._value.dtype.kind not in "iu" or self._value.ndim != 0:
            raise TypeError(f"only a 0-d integer Tensor can be used as an index, got {self!r}")
        return int(self._value)

    # Equality is elementwise, as in TensorFlow 2; hashing stays by identity so that
    # Tensors and Variables can still be put in sets and used as dict keys.
    __hash__ = object.__hash__

    # -- printing ---------------------------------------------------------------------------
    def _numpy_text(self, text=repr):
        value = self._value
        if value.ndim == 0:
            return str(value[()])
        out = text(np.asarray(value))
        # As TensorFlow: a value that spans several lines starts on a line of its own.
        return "\n" + out if text is repr and "\n" in out else out

    def __repr__(self):
        return (f"<mt.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={self._numpy_text()}>")

    def __str__(self):
        return f"mt.Tensor({self._numpy_text(str)}, shape={self.shape}, dtype={self.dtype.name})"

    # -- operators: each is a recorded op from minitape.ops ----------------------------------
    def __add__(self, other):
        return _math.add(self, other)

    def __radd__(self, other):
        return _math.add(other, self)

    def __sub__(self, other):
        return _math.subtract(self, other)

    def __rsub__(self, other):
        return _math.subtract(other, self)

    def __mul__(self, other):
        return _math.multiply(self, other)

    def __rmul__(self, other):
        return _math.multiply(other, self)

    def __truediv__(self, other):
        return _math.divide(self, other)

    def __rtruediv__(self, other):
        return _math.divide(other, self)

    def __pow__(self, other):
        return _math.pow(self, other)

    def __rpow__(self, other):
        return _math.pow(other, self)

    def __matmul__(self, other):
        return _math.matmul(self, other)

    def __rmatmul__(self, other):
        return _math.matmul(other, self)

    def __neg__(self):
        return _math.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _math.abs(self)

    def __lt__(self, other):
        return _math.less(self, other)

    def __le__(self, other):
        return _math.less_equal(self, other)

    def __gt__(self, other):
        return _math.greater(self, other)

    def __ge__(self, other):
        return _math.greater_equal(self, other)

    def __eq__(self, other):
        return _math.equal(self, other)

    def __ne__(self, other):
        return _math.not_equal(self, other)

    def __getitem__(self, key):
        return _array.getitem(self, key)


class Variable(Tensor):
    """A stateful value that the tape watches automatically, as ``tf.Variable``.

    Args:
        initial_value: anything ``mt.constant`` accepts (a Python number, list, ndarray or Tensor).
        trainable: if True (the default) a ``GradientTape`` watches the Variable as soon as an
            operation inside the tape reads it.
        name: defaults to ``"Variable"``.
        dtype: optional dtype to convert ``initial_value`` to.

    Arithmetic on a Variable returns a Tensor. ``assign``, ``assign_add`` and ``assign_sub``
    replace the value; they are not differentiable, so the tape cannot see through them.

    >>> import minitape as mt
    >>> mt.Variable(3.0, name="x0")
    <mt.Variable 'x0' shape=() dtype=float32, numpy=3.0>
    """

    __slots__ = ("trainable", "path")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if isinstance(initial_value, Variable):
            initial_value = initial_value._value
        value = convert_to_tensor(initial_value, dtype=dtype, what="Variable")._value
        super().__init__(np.array(value), name="Variable" if name is None else name)
        self.trainable = bool(trainable)
        self.path = self.name  # layers set e.g. "dense/kernel"

    def read_value(self) -> Tensor:
        """The current value as a Tensor (a read: a tape watches it like any other read)."""
        return convert_to_tensor(self)

    def numpy(self):
        value = self._value
        return value[()] if value.ndim == 0 else value.copy()

    def _assign_value(self, value, method):
        new = convert_to_tensor(value, dtype=self.dtype, what=f"Variable.{method}")._value
        self._check_shape(new.shape, method)
        # A new array, never an in-place write: what earlier operations saved stays valid.
        self._value = np.array(new, dtype=self.dtype)
        return self

    def _check_shape(self, shape, method, broadcast=False):
        if shape != self.shape:
            if broadcast:  # assign_add/assign_sub: a delta that broadcasts to the shape is fine
                try:
                    if np.broadcast_shapes(self.shape, shape) == self.shape:
                        return
                except ValueError:
                    pass
            raise ValueError(
                f"Variable.{method}: the value has shape {shape} but the Variable "
                f"'{self.name}' has shape {self.shape}; reshape it first (mt.reshape)"
            )

    def assign(self, value):
        """Replace the value (same shape and dtype). Not recorded: it cuts gradient history."""
        return self._assign_value(value, "assign")

    def assign_add(self, delta):
        """``self = self + delta``, not recorded (see ``assign``)."""
        delta = convert_to_tensor(delta, dtype=self.dtype, what="Variable.assign_add")
        self._check_shape(delta.shape, "assign_add", broadcast=True)
        return self._assign_value(self._value + delta._value, "assign_add")

    def assign_sub(self, delta):
        """``self = self - delta``, not recorded (see ``assign``)."""
        delta = convert_to_tensor(delta, dtype=self.dtype, what="Variable.assign_sub")
        self._check_shape(delta.shape, "assign_sub", broadcast=True)
        return self._assign_value(self._value - delta._value, "assign_sub")

    def __repr__(self):
        return (f"<mt.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={self._numpy_text()}>")

    __str__ = __repr__


# -- conversion -------------------------------------------------------------------------------

def _kind_error(value, what):
    return TypeError(
        f"{what} expected a Tensor, a Variable, a number, a list of numbers or a NumPy array, "
        f"got {type(value).__name__} {value!r:.80}"
    )


def _from_python(value, dtype, what):
    """Python number or (nested) list -> ndarray, with TensorFlow's default dtypes."""
    if isinstance(value, (list, tuple)) and _contains_tensor(value):
        from .ops import array_ops  # a list holding Tensors is stacked, so gradients flow
        return array_ops.stack([convert_to_tensor(v, dtype=dtype, what=what) for v in value])._value
    try:
        array = np.array(value)
    except ValueError as e:
        raise ValueError(f"{what}: could not make a rectangular array from {value!r:.80}: {e}") \
            from None
    kind = array.dtype.kind
    if kind not in "biuf":
        raise _kind_error(value, what)
    if dtype is None:
        if kind == "f":
            return array.astype(dtypes.DEFAULT_FLOAT)
        if kind in "iu":
            if array.size and (array.max() > np.iinfo(np.int32).max
                               or array.min() < np.iinfo(np.int32).min):
                return array.astype(dtypes.int64)
            return array.astype(dtypes.DEFAULT_INT)
        return array
    return _cast_checked(array, dtype, value, what)


def _contains_tensor(seq):
    for item in seq:
        if isinstance(item, Tensor):
            return True
        if isinstance(item, (list, tuple)) and _contains_tensor(item):
            return True
    return False


def _cast_checked(array, dtype, original, what):
    """Cast ``array`` to ``dtype`` only where no information is lost (TensorFlow's rule)."""
    if array.dtype == dtype:
        return array
    src, dst = array.dtype.kind, dtype.kind
    ok = ((src == "b" and dst == "b") or (src in "iu" and dst in "iuf")
          or (src == "f" and dst == "f"))
    if ok and src in "iu" and dst in "iu" and array.size:
        info = np.iinfo(dtype)
        ok = info.min <= array.min() and array.max() <= info.max
    if not ok:
        raise TypeError(
            f"{what}: cannot convert {original!r:.60} ({array.dtype.name}) to a Tensor of dtype "
            f"{dtype.name} without losing information; pass a value of that dtype or use mt.cast"
        )
    return array.astype(dtype)


def convert_to_tensor(value, dtype=None, name=None, what="convert_to_tensor") -> Tensor:
    """Turn ``value`` into a Tensor, as ``tf.convert_to_tensor``.

    Args:
        value: a Tensor, Variable, Python number or (nested) list, or NumPy array/scalar.
        dtype: optional; a Python value or ndarray is converted to it when no information
            is lost; a Tensor must already have it.
        name: optional name for a new Tensor.

    Returns:
        A Tensor. A Tensor is returned as it is; a Variable gives a snapshot of its value
        that carries its id (and a tape that watches accessed variables watches it now).

    Raises:
        TypeError: for ``None``, strings and other non-numeric values, for a Tensor of
            another dtype, and for a conversion that would lose information (2.5 to int32).
    """
    if type(value) is Tensor:
        if dtype is not None and value._value.dtype != dtype:
            raise TypeError(
                f"{what}: expected dtype {np.dtype(dtype).name}, got a Tensor of dtype "
                f"{value.dtype.name}; minitape never casts Tensors silently: use "
                f"mt.cast(x, mt.{np.dtype(dtype).name})"
            )
        return value
    if isinstance(value, Variable):
        if dtype is not None and value.dtype != dtype:
            raise TypeError(
                f"{what}: expected dtype {np.dtype(dtype).name}, got Variable '{value.name}' of "
                f"dtype {value.dtype.name}; use mt.cast"
            )
        _tape.variable_accessed(value)
        return Tensor(value._value, name=value.name, _id=value._id)
    if isinstance(value, Tensor):  # a subclass
        return value
    dtype = dtypes.as_dtype(dtype)
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind not in "biuf":
            raise _kind_error(value, what)
        array = np.asarray(value) if dtype is None else _cast_checked(np.asarray(value), dtype,
                                                                       value, what)
        return Tensor(array, name=name)
    if isinstance(value, (numbers.Number, list, tuple)) and not isinstance(value, complex):
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
    """
    if isinstance(value, Tensor):
        value = value._value
    t = convert_to_tensor(value, dtype=dtype, name=name, what="constant")
    return Tensor(np.array(t._value), name=name)


def convert_like(value, dtype, what) -> Tensor:
    """Convert the non-Tensor operand of a binary op to the Tensor operand's dtype."""
    if isinstance(value, Tensor):
        return convert_to_tensor(value, dtype=dtype, what=what)
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        # The hot path: a Python scalar in an operation with a Tensor.
        if dtype.kind == "f":
            return Tensor(dtype.type(value))
        if dtype.kind in "iu" and isinstance(value, int):
            return Tensor(_cast_checked(np.asarray(value), dtype, value, what)[()])
        raise TypeError(
            f"{what}: cannot use the Python value {value!r} with a Tensor of dtype {dtype.name} "
            f"without losing information; use a value of that dtype or mt.cast the Tensor"
        )
    return convert_to_tensor(value, dtype=dtype, what=what)


from . import tape as _tape  # noqa: E402  (circular: tape and ops need Tensor defined first)
from .ops import array_ops as _array  # noqa: E402
from .ops import math_ops as _math  # noqa: E402
