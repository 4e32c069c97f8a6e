"""Values: ``Tensor`` (immutable), ``Variable`` (stateful) and the conversion rules.

A ``Tensor`` wraps a NumPy array and an integer id. The id is what the tape records: an
operation is stored as "op type, input ids, output ids", and the backward pass keys its
gradients by id. Ids come from a counter, so they are small, unique and deterministic.

A ``Variable`` is a Tensor whose value can be replaced with ``assign``. Every time an
operation reads a Variable, it reads a *snapshot*: a plain Tensor holding the current value
and carrying the Variable's id. So a gradient with respect to the Variable collects every
read of it, and a later ``assign`` never changes what an earlier operation saved.

Conversion rules (as TensorFlow's ``convert_to_tensor``):

- a Python float, or a list of floats, becomes float32; a Python int becomes int32; a Python
  complex becomes complex128 (complex values compute, but no gradient flows through them);
- a NumPy array keeps its dtype;
- a Python value mixed with a Tensor in an operation takes the Tensor's dtype;
- two Tensors of different dtypes are never cast silently (``TypeError``; use ``mt.cast``).
"""

from __future__ import annotations

import itertools
import numbers

import numpy as np

from .. import dtypes
from . import recording as _recording
from ..tensor_shape import TensorShape

_next_id = itertools.count(1).__next__

#: Where every minitape Tensor lives, in TensorFlow's words (``Tensor.device``).
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


def new_tensor_id():
    """A tensor id no Tensor has: larger than every id given so far (and used by none)."""
    return _next_id()


on_creation = None
"""None, or a function ``f(tensor)`` that ``constant`` and ``Variable`` call with each Tensor
they make: ``mt.viz``'s record notes where the learner made it (``x = mt.constant(3.0)``
before a tape: the drawings call it ``x``). Set by ``mt.config.record_source_lines``."""


class Tensor:
    """An immutable n-dimensional array, as ``tf.Tensor``.

    Attributes:
        shape: a ``TensorShape``: a tuple of ints (with ``as_list()``, as TensorFlow's).
        dtype: a NumPy dtype (``mt.float32`` is ``np.dtype("float32")``).
        ndim: number of dimensions.
        name: optional name (shown by the renderers).
        id: the tensor's number, an int unique in the program, which is how a tape refers to
            it (``Operation.input_ids``); a Variable and every read of it share one.
        device: ``"/job:localhost/replica:0/task:0/device:CPU:0"`` (minitape runs on the
            CPU), as ``tf.Tensor.device``.

    Python operators (``+ - * / ** @``, unary ``-``, ``abs``, comparisons, indexing) run
    minitape operations, so a tape records them: the ops give the Tensor its operators
    (``Tensor.__add__ = add`` in ``minitape/ops/math_ops.py``, as TensorFlow's math_ops
    does). NumPy functions (``np.mean(t)``) turn the Tensor into an ndarray first: their
    result has left minitape and no tape can see it.

    >>> import minitape as mt
    >>> mt.constant([1.0, 2.0]) * 3
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([3., 6.], dtype=float32)>
    """

    # ``_shape``, ``_dtype``: the array's, read once when the Tensor is made. They never change
    # (a Variable's ``assign`` keeps both), and every op and the backward pass read them
    # several times: reading a slot costs a tenth of reading NumPy's attribute.
    __slots__ = ("_value", "_shape", "_dtype", "id", "name", "__weakref__")
    # Make ``ndarray + tensor`` and ``[[1., 2.]] @ tensor`` call our reflected operators.
    __array_priority__ = 1000

    def __init__(self, value, name=None, tensor_id=None):
        # ``value`` is an ndarray or a NumPy scalar that no one else holds (the Tensor owns
        # it and never writes into it); use mt.constant to build from Python data or arrays.
        if name is not None and type(name) is not str:
            check_name(name, "Tensor")
        self._value = value
        self._shape = value.shape
        self._dtype = value.dtype
        self.id = _next_id() if tensor_id is None else tensor_id
        self.name = name

    # -- what a Tensor is ------------------------------------------------------------------
    @property
    def shape(self) -> TensorShape:
        # (The engine reads ``_shape``, a plain tuple; this is for the learner.)
        return TensorShape(self._shape)

    @property
    def device(self) -> str:
        return CPU_DEVICE

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    def numpy(self):
        """The value as NumPy: a NumPy scalar for a 0-d Tensor, else a **read-only view**.

        No copy is made; writing into the result raises NumPy's ``ValueError: assignment
        destination is read-only``. Use ``t.numpy().copy()`` for an array you can change.
        """
        value = self._value
        if value.ndim == 0:
            return value[()]
        return _read_only_view(value)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: a read-only view of the value (no copy), as ``numpy()``.

        ``np.array(t)`` (``copy=True``) and a ``dtype`` other than the Tensor's give a new,
        writable array; ``copy=False`` with another dtype raises ``ValueError``, as NumPy 2.
        """
        value = self._value
        if copy or type(value) is not np.ndarray:  # (a NumPy scalar: asarray makes a new array)
            return np.array(value, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != value.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(Tensor, dtype={np.dtype(dtype).name}, copy=False): "
                                 f"the Tensor's dtype is {value.dtype.name}, so a copy is needed")
            return value.astype(dtype)
        return _read_only_view(value)

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

    def __format__(self, spec):
        """``f"{t:.3f}"``: format a 0-d Tensor as its NumPy scalar does.

        An empty spec (``f"{t}"``) gives ``str(t)``. A non-scalar with a spec raises
        ``TypeError``, as an ndarray does.

        >>> import minitape as mt
        >>> f"{mt.constant(2.5):.2f}"
        '2.50'
        """
        if not spec:
            return str(self)
        if self._value.ndim != 0:
            raise TypeError(f"format spec {spec!r} needs a scalar (0-d) Tensor, got shape "
                            f"{self.shape}; format single elements (f'{{t[0]:{spec}}}') or "
                            f"reduce first (mt.reduce_mean)")
        return format(self._value[()], spec)

    def __round__(self, ndigits=None):
        """``round(t)``: as the NumPy scalar of a 0-d Tensor (an int, or a scalar for digits)."""
        if self._value.ndim != 0:
            raise TypeError(f"round() needs a scalar (0-d) Tensor, got shape {self.shape}; "
                            "use mt.round for elementwise rounding")
        return round(self._value[()], ndigits)

    def __complex__(self):
        if self._value.size != 1:
            raise TypeError(f"complex() needs a one-element Tensor, got shape {self.shape}")
        return complex(self._value.reshape(()))

    def __index__(self):
        if self._dtype.kind not in "iu" or self._value.ndim != 0:
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

    def __setitem__(self, key, value):
        raise TypeError(f"'{type(self).__name__}' object does not support item assignment: a "
                        f"Tensor is immutable, as in TensorFlow. {_IMMUTABLE_FIX}")

    # ``t[0].assign(1)`` on a plain Tensor gets an explanation, and ``hasattr(t, "assign")``
    # stays False, as in TensorFlow: properties that raise AttributeError. (Not a
    # ``__getattr__``: a class with one loses CPython's fast attribute access on every op.)
    @property
    def assign(self):
        raise _immutable("assign", self)

    @property
    def assign_add(self):
        raise _immutable("assign_add", self)

    @property
    def assign_sub(self):
        raise _immutable("assign_sub", self)


def _immutable(name, t):
    return AttributeError(f"'{type(t).__name__}' object has no attribute {name!r}: a Tensor is "
                          f"immutable, as in TensorFlow. {_IMMUTABLE_FIX}")


_IMMUTABLE_FIX = ("To change values in place, keep them in a mt.Variable and assign into a slice "
                  "of it, indexing the Variable itself in one step (v[1, 2].assign(9.0), "
                  "v[0:2, :].assign(...)); or build a new Tensor (mt.where, mt.concat).")


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
    ``v[key].assign(value)`` (and ``assign_add``, ``assign_sub``) writes into a slice, and
    ``scatter_nd_update`` at a list of indices: methods that ``minitape/ops/variable_ops.py``
    builds on ``assign`` and gives the Variable.

    >>> import minitape as mt
    >>> mt.Variable(3.0, name="x0")
    <mt.Variable 'x0' shape=() dtype=float32, numpy=3.0>
    """

    __slots__ = ("trainable", "path")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if isinstance(initial_value, Variable):
            initial_value = initial_value._value
        check_name(name, "Variable")
        # (convert_to_tensor already copied a caller's ndarray: the array is the Variable's.)
        value = convert_to_tensor(initial_value, dtype=dtype, what="Variable")._value
        super().__init__(value if type(value) is np.ndarray else np.array(value),
                         name="Variable" if name is None else name)
        self.trainable = bool(trainable)
        self.path = self.name  # layers set e.g. "dense/kernel"
        if on_creation is not None:
            on_creation(self)

    def read_value(self) -> Tensor:
        """The current value as a Tensor (a read: a tape watches it like any other read)."""
        return self._read()

    def _read(self):
        # Every read of a Variable by an op comes here (``convert_to_tensor``, and
        # ``binary_operands`` directly: ``h @ w``, ``z + b``). The snapshot carries the
        # Variable's id, so a tape that watches it sees the read; a later ``assign`` makes a
        # new array (``_store``) and leaves the snapshot's value as it was.
        if _recording.tapes_recording:
            _recording.variable_accessed(self)
        return Tensor(self._value, self.name, self.id)

    def numpy(self):
        """The value as NumPy: a NumPy scalar for a 0-d Variable, else a **writable copy**
        (as ``tf.Variable.numpy``): changing it does not change the Variable; use ``assign``."""
        value = self._value
        return value[()] if value.ndim == 0 else value.copy()

    def _assign_value(self, value, method):
        new = convert_to_tensor(value, dtype=self.dtype, what=f"Variable.{method}")._value
        self._check_shape(new.shape, method)
        # (convert_to_tensor copied a caller's ndarray; a Tensor's array is never written.)
        return self._store(new)

    def _store(self, new):
        # A new array, never an in-place write: what earlier operations saved stays valid.
        # ``new`` has the Variable's shape and dtype, and no one else holds it.
        self._value = new if type(new) is np.ndarray else np.array(new, dtype=self._dtype)
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
        if _recording.tapes_recording and isinstance(value, Tensor):
            value = convert_to_tensor(value, dtype=self.dtype, what="Variable.assign")
            _recording.variable_assigned(self, value, "assign")   # (noted, for mt.viz.explain)
        return self._assign_value(value, "assign")

    def assign_add(self, delta):
        """``self = self + delta``, not recorded (see ``assign``)."""
        delta = convert_to_tensor(delta, dtype=self.dtype, what="Variable.assign_add")
        if _recording.tapes_recording:
            _recording.variable_assigned(self, delta, "assign_add")
        self._check_shape(delta.shape, "assign_add", broadcast=True)
        return self._store(self._value + delta._value)   # (a new array: no copy needed)

    def assign_sub(self, delta):
        """``self = self - delta``, not recorded (see ``assign``)."""
        delta = convert_to_tensor(delta, dtype=self.dtype, what="Variable.assign_sub")
        if _recording.tapes_recording:
            _recording.variable_assigned(self, delta, "assign_sub")
        self._check_shape(delta.shape, "assign_sub", broadcast=True)
        return self._store(self._value - delta._value)   # (a new array: no copy needed)

    def __repr__(self):
        return (f"<mt.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={self._numpy_text()}>")

    __str__ = __repr__


# -- who owns the data --------------------------------------------------------------------------
#
# A Tensor's array is never written, by minitape or anyone: every op makes a new array, and
# ``Variable.assign`` replaces the array instead of writing into it. Two rules keep it so:
# an array that comes *in* from the caller is copied (unless nobody can write into it any
# more), and an array that goes *out* (``numpy()``, ``np.asarray(t)``) is a read-only view.


def check_name(name, what):
    """Names are ``str`` or None (renderers and ``save_weights`` show and key by them)."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"{what}: name must be a str or None, got {type(name).__name__} "
                        f"{name!r:.40}; pass e.g. name='x' (or name=str(...))")
    return name


def _owned(array):
    """``array`` itself if nobody can write into it any more, else a copy the Tensor owns.

    A read-only view of a read-only array (what ``t.numpy()`` hands out) is kept without a
    copy; any other ndarray is copied (a read-only view may still see writes made through a
    writable array it views).
    """
    if not array.flags.writeable:
        base = array.base
        if type(base) is np.ndarray and not base.flags.writeable:
            return array
    return array.copy()


def _read_only_view(value):
    """A read-only view of a Tensor's array. The array, and the arrays it is a view of (other
    Tensors'), are made read-only first, so that NumPy refuses to make the view writable
    again (``flags.writeable = True`` needs a writable base)."""
    array = value
    while isinstance(array, np.ndarray):
        array.setflags(write=False)   # (one call; ``flags.writeable`` makes two flag objects)
        array = array.base
    return value.view()


# -- conversion -------------------------------------------------------------------------------

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


def convert_to_tensor(value, dtype=None, name=None, what="convert_to_tensor") -> Tensor:
    """Turn ``value`` into a Tensor, as ``tf.convert_to_tensor``.

    Args:
        value: a Tensor, Variable, Python number or (nested) list, or NumPy array/scalar.
            Python floats give float32, ints int32, complex numbers complex128 (as
            TensorFlow); an ndarray keeps its dtype (bool, integer, floating or complex).
        dtype: optional; a Python value or ndarray is converted to it when no information
            is lost; a Tensor must already have it.
        name: optional name for a new Tensor.

    Returns:
        A Tensor. A Tensor is returned as it is; a Variable gives a snapshot of its value
        that carries its id (and a tape that watches accessed variables watches it now).
        An ndarray is copied (as TensorFlow does), so writing into it later cannot change
        the Tensor; only a read-only view of a read-only array (``t.numpy()``) is kept as is.

    An ``mt.IndexedSlices`` gives the dense Tensor it stands for, and a list that holds
    Tensors is stacked (as TensorFlow): the layers above register these conversions
    (``register_tensor_conversion_function``).

    Raises:
        TypeError: for ``None``, strings and other non-numeric values, for a Tensor of
            another dtype, for a conversion that would lose information (2.5 to int32), and
            for a ``name`` that is not a str.

    >>> import numpy as np, minitape as mt
    >>> a = np.ones(2, np.float32)
    >>> t = mt.convert_to_tensor(a)
    >>> a[:] = 5.0                      # does not change t
    >>> t
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([1., 1.], dtype=float32)>
    """
    if type(value) is Tensor:
        if dtype is not None and value._dtype != dtype:
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
        return value._read()
    if isinstance(value, Tensor):  # a subclass
        return value
    dtype = dtypes.as_dtype(dtype)
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
        return Tensor(_owned(array) if array is value else array, name=name)
    for base_type, convert in _conversion_functions:   # (see register_tensor_conversion_function)
        if isinstance(value, base_type):
            tensor = convert(value, dtype, name, what)
            if tensor is not NotImplemented:
                return tensor
    if isinstance(value, (numbers.Number, list, tuple)):
        return Tensor(_from_python(value, dtype, what), name=name)
    raise _kind_error(value, what)


_conversion_functions: list = []


def register_tensor_conversion_function(base_type, conversion_func):
    """Teach ``convert_to_tensor`` another kind of value, as
    ``tf.register_tensor_conversion_function``.

    ``conversion_func(value, dtype, name, what)`` is called for a ``value`` of ``base_type``
    (a type or a tuple of types) that is not a Tensor or an ndarray, and returns a Tensor, or
    ``NotImplemented`` to let Python-data conversion have it. The layers above the engine
    register theirs: a list that holds Tensors is stacked with a recorded op
    (``minitape/ops/array_ops.py``), an ``mt.IndexedSlices`` gives its dense Tensor.
    """
    _conversion_functions.append((base_type, conversion_func))
