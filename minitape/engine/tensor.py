"""Values: ``Tensor`` (immutable), ``Variable`` (stateful) and ``convert_to_tensor``.

A ``Tensor`` wraps a NumPy array and an integer id. The id is what the tape records: an
operation is stored as "op type, input ids, output ids", and the backward pass keys its
gradients by id. Ids come from a counter, so they are small, unique and deterministic.

A ``Variable`` is a Tensor whose value can be replaced with ``assign``. Every time an
operation reads a Variable, it reads a *snapshot*: a plain Tensor holding the current value
and carrying the Variable's id. So a gradient with respect to the Variable collects every
read of it, and a later ``assign`` never changes what an earlier operation saved.

``convert_to_tensor`` is where every op's arguments become Tensors: a Tensor stays as it
is (two Tensors of different dtypes are never cast silently: ``TypeError``, use ``mt.cast``),
a Variable gives a snapshot, and anything else goes to the conversion function registered
for its type, as in TensorFlow (Python and NumPy data: ``minitape/ops/constant_op.py``).

What the layers above give the classes: the Python operators (``x * y`` is the op
``multiply``: ``minitape/ops/math_ops.py``), indexing (``ops/array_ops.py``), the partial
writes of a Variable (``v[0].assign(...)``, ``scatter_nd_update``: ``ops/variable_ops.py``,
which also explains to ``t[0] = 1`` and ``t.assign(...)`` that a Tensor is immutable),
how a Tensor prints (``repr``, ``str``, ``f"{t:.2f}"``: ``minitape/printing.py``), and how
it becomes a NumPy or Python value (``np.asarray(t)``, ``float(t)``, ``bool(t)``:
``ops/conversions.py``).
"""

from __future__ import annotations

import itertools
import sys

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

on_leaving = None
"""None, or a function ``f(tensor, frame)`` called, while a tape records, when a Tensor's
value leaves minitape as NumPy or Python (``t.numpy()``, ``np.asarray(t)`` and NumPy's
functions, ``float(t)``: see ``minitape/ops/conversions.py``), ``frame`` being the code that
asked: ``mt.viz`` notes where the learner's code did it (``np.square(x)``: no tape can
follow that). Set by ``mt.config.record_source_lines``."""


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
        if on_leaving is not None and _recording.tapes_recording:
            on_leaving(self, sys._getframe(1))
        value = self._value
        if value.ndim == 0:
            return value[()]
        return _read_only_view(value)

    # Equality is elementwise, as in TensorFlow 2; hashing stays by identity so that
    # Tensors and Variables can still be put in sets and used as dict keys.
    __hash__ = object.__hash__


class Variable(Tensor):
    """A stateful value that the tape watches automatically, as ``tf.Variable``.

    Args:
        initial_value: anything ``mt.constant`` accepts (a Python number, list, ndarray or Tensor).
        trainable: if True (the default) a ``GradientTape`` watches the Variable as soon as an
            operation inside the tape reads it.
        name: defaults to ``"Variable"``.
        dtype: optional dtype to convert ``initial_value`` to.
        constraint: None, or a function ``value -> value`` that an optimizer applies after
            each update (``v.assign(v.constraint(v))``), as ``tf.Variable``'s
            (``mt.keras.constraints``; a layer's ``kernel_constraint=`` sets it).

    Arithmetic on a Variable returns a Tensor. ``assign``, ``assign_add`` and ``assign_sub``
    replace the value; they are not differentiable, so the tape cannot see through them.
    ``v[key].assign(value)`` (and ``assign_add``, ``assign_sub``) writes into a slice, and
    ``scatter_nd_update`` at a list of indices: methods that ``minitape/ops/variable_ops.py``
    builds on ``assign`` and gives the Variable.

    >>> import minitape as mt
    >>> mt.Variable(3.0, name="x0")
    <mt.Variable 'x0' shape=() dtype=float32, numpy=3.0>
    """

    __slots__ = ("trainable", "path", "constraint")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, constraint=None):
        if isinstance(initial_value, Variable):
            initial_value = initial_value._value
        check_name(name, "Variable")
        # (convert_to_tensor already copied a caller's ndarray: the array is the Variable's.)
        value = convert_to_tensor(initial_value, dtype=dtype, what="Variable")._value
        super().__init__(value if type(value) is np.ndarray else np.array(value),
                         name="Variable" if name is None else name)
        self._value.setflags(write=False)   # (``value`` hands it out: see ``_store``)
        self.trainable = bool(trainable)
        self.path = self.name  # layers set e.g. "dense/kernel"
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Variable: constraint must be a function value -> value, got "
                             f"{constraint!r:.60}")
        self.constraint = constraint
        if on_creation is not None:
            on_creation(self)

    def read_value(self) -> Tensor:
        """The current value as a Tensor (a read: a tape watches it like any other read)."""
        return self._read()

    @property
    def value(self) -> np.ndarray:
        """The current value as a read-only NumPy array, with no copy (as Keras 3's
        ``Variable.value`` gives the backend's array). ``assign`` replaces the array rather
        than writing into it, so an array read earlier keeps its numbers. Not a read a tape
        sees (use ``read_value`` inside a tape). For code that reads Variables every step,
        such as the optimizers; ``numpy()`` gives a copy you may change.

        >>> import minitape as mt
        >>> v = mt.Variable([1.0, 2.0])
        >>> v.value
        array([1., 2.], dtype=float32)
        >>> v.value.flags.writeable
        False
        """
        return self._value

    def _read(self):
        # Every read of a Variable by an op comes here (``convert_to_tensor``, and
        # ``binary_operands`` directly: ``h @ w``, ``z + b``). The snapshot carries the
        # Variable's id, so a tape that watches it sees the read; a later ``assign`` makes a
        # new array (``_store``) and leaves the snapshot's value as it was.
        if _recording.tapes_recording and self.trainable:
            for tape in _recording.state.tapes:   # (a tape may watch it: variable_accessed)
                tape.variable_accessed(self)
        return Tensor(self._value, self.name, self.id)

    def numpy(self):
        """The value as NumPy: a NumPy scalar for a 0-d Variable, else a **writable copy**
        (as ``tf.Variable.numpy``): changing it does not change the Variable; use ``assign``."""
        if on_leaving is not None and _recording.tapes_recording:
            on_leaving(self, sys._getframe(1))
        value = self._value
        return value[()] if value.ndim == 0 else value.copy()

    def assign(self, value):
        """Replace the value (same shape and dtype). Not recorded: it cuts gradient history."""
        return self._update(value, "assign", None)

    def assign_add(self, delta):
        """``self = self + delta`` (``delta`` may broadcast to the shape); not recorded."""
        return self._update(delta, "assign_add", np.add)

    def assign_sub(self, delta):
        """``self = self - delta`` (``delta`` may broadcast to the shape); not recorded."""
        return self._update(delta, "assign_sub", np.subtract)

    def _update(self, value, method, combine):
        if combine is None and type(value) is np.ndarray and value.dtype == self._dtype \
                and value.shape == self._shape:
            return self._store(owned_array(value))   # (an optimizer's new array: no conversion)
        value = convert_to_tensor(value, dtype=self._dtype, what=f"Variable.{method}")
        if _recording.tapes_recording:   # (a tape that tracks ``value`` notes it: mt.viz.explain)
            for tape in _recording.state.tapes:
                tape.variable_assigned(self, value, method)
        shape = value._shape
        try:   # (assign_add/assign_sub: a delta that broadcasts to the shape is fine)
            fits = shape == self._shape or combine is not None and \
                np.broadcast_shapes(shape, self._shape) == self._shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"Variable.{method}: the value has shape {value.shape} but the "
                             f"Variable '{self.name}' has shape {self.shape}; reshape it first "
                             "(mt.reshape)")
        return self._store(value._value if combine is None else combine(self._value, value._value))

    def _store(self, new):
        # A new array, never an in-place write: what earlier operations saved stays valid.
        # ``new`` has the Variable's shape and dtype, and no one else writes into it. It is
        # made read-only, so ``value`` can hand out the array itself.
        new = new if type(new) is np.ndarray else np.array(new, dtype=self._dtype)
        new.setflags(write=False)
        self._value = new
        return self


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


def owned_array(array):
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

    Anything that is not a Tensor goes to the conversion function registered for its type
    (``register_tensor_conversion_function``, as TensorFlow): NumPy and Python data to
    ``minitape/ops/constant_op.py``'s; a list that holds Tensors is stacked (a recorded op)
    and an ``mt.IndexedSlices`` gives the dense Tensor it stands for.

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
    if isinstance(value, Tensor):
        if dtype is not None and value._dtype != dtype:
            raise TypeError(
                f"{what}: expected dtype {np.dtype(dtype).name}, got a "
                f"{type(value).__name__} of dtype {value.dtype.name}; minitape never casts "
                f"Tensors silently: use mt.cast(x, mt.{np.dtype(dtype).name})")
        return value._read() if isinstance(value, Variable) else value
    dtype = dtypes.as_dtype(dtype)
    for base_type, convert, _ in _conversion_functions:
        if isinstance(value, base_type):
            tensor = convert(value, dtype, name, what)
            if tensor is not NotImplemented:
                return tensor
    raise TypeError(f"{what} expected a Tensor, a Variable, a number, a list of numbers or a "
                    f"NumPy array, got {type(value).__name__} {value!r:.80}")


_conversion_functions: list = []   # (base_type, conversion_func, priority), by priority


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    """Teach ``convert_to_tensor`` another kind of value, as
    ``tf.register_tensor_conversion_function``.

    ``conversion_func(value, dtype, name, what)`` is called for a ``value`` of ``base_type``
    (a type or a tuple of types) that is not a Tensor, and returns a Tensor, or
    ``NotImplemented`` to let the next function try; functions of lower ``priority`` try
    first. The layers above the engine register theirs: NumPy arrays and Python numbers and
    lists (``minitape/ops/constant_op.py``), lists that hold Tensors, stacked with a recorded
    op (``ops/array_ops.py``, priority 99), ``mt.IndexedSlices`` (its dense Tensor).
    """
    _conversion_functions.append((base_type, conversion_func, priority))
    _conversion_functions.sort(key=lambda entry: entry[2])
