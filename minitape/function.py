"""``mt.function`` and ``mt.TensorSpec``: TensorFlow's graph decorator, run eagerly.

What TensorFlow does with ``@tf.function``: on the first call with a new kind of input it
*traces* the Python function (runs it once with symbolic tensors) into a graph, then runs
that graph for every later call with inputs of the same kind, without running the Python
code again. ``input_signature`` fixes the kind of input in advance (one trace) and makes a
call with another shape or dtype an error. ``jit_compile`` compiles the graph with XLA.

What minitape does: it has no graphs, so ``mt.function`` runs the Python function eagerly
on every call, exactly as without the decorator. The numbers are the same as TensorFlow's
because a traced graph computes the same operations, in the same order, on the same values;
only Python side effects differ (a ``print`` inside runs on every call here, once per trace
in TensorFlow). What is kept is the contract: a call that does not match ``input_signature``
raises TensorFlow's error (``TypeError``), and Python numbers passed for a ``TensorSpec`` are
converted to Tensors of its dtype, as TensorFlow converts them.

``mt.saved_model.save`` records an ``mt.function`` by reference (module and qualified name).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from . import dtypes
from .engine.tensor import Tensor, convert_to_tensor

__all__ = ["function", "Function", "TensorSpec"]


class TensorSpec:
    """The shape and dtype a Tensor must have, as ``tf.TensorSpec``.

    Args:
        shape: a tuple or list of ints with ``None`` for any size (``(None, 3)``), or
            ``None`` for any rank.
        dtype: default float32.
        name: optional.

    >>> import minitape as mt
    >>> spec = mt.TensorSpec([None, 2], mt.float32)
    >>> spec.is_compatible_with(mt.ones([5, 2]))
    True
    >>> spec.is_compatible_with(mt.ones([5, 3]))
    False
    """

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        if shape is not None:
            if isinstance(shape, (int, np.integer)):
                raise TypeError(f"TensorSpec: shape must be a list/tuple or None, got the int "
                                f"{shape}; write [{shape}] for a vector of {shape} elements")
            shape = tuple(None if d is None else int(d) for d in shape)
            if any(d is not None and d < 0 for d in shape):
                raise ValueError(f"TensorSpec: dimensions must be >= 0 or None, got {shape}")
        self._shape = shape
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor, name=None):
        """The spec of a Tensor's exact shape and dtype, as ``tf.TensorSpec.from_tensor``."""
        tensor = convert_to_tensor(tensor, what="TensorSpec.from_tensor")
        return cls(tensor.shape, tensor.dtype, name if name is not None else tensor.name)

    @property
    def shape(self):
        """A tuple (``None`` entries are any size), or ``None`` for any rank."""
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, spec_or_tensor):
        """Same dtype and a compatible shape (``None`` matches anything), as TensorFlow."""
        if isinstance(spec_or_tensor, TensorSpec):
            shape, dtype = spec_or_tensor.shape, spec_or_tensor.dtype
        elif isinstance(spec_or_tensor, Tensor):
            shape, dtype = spec_or_tensor.shape, spec_or_tensor.dtype
        else:
            try:
                t = convert_to_tensor(spec_or_tensor, dtype=self._dtype)
            except (TypeError, ValueError):
                return False
            shape, dtype = t.shape, t.dtype
        return dtype == self._dtype and _shapes_compatible(self._shape, shape)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self.shape == other.shape
                and self.dtype == other.dtype and self.name == other.name)

    def __hash__(self):
        return hash((self._shape, self._dtype, self._name))

    def __repr__(self):
        return (f"TensorSpec(shape={self._shape}, dtype=mt.{self._dtype.name}, "
                f"name={self._name!r})")

    def to_json(self):
        return {"shape": None if self._shape is None else list(self._shape),
                "dtype": self._dtype.name, "name": self._name}

    @classmethod
    def from_json(cls, data):
        return cls(data["shape"], data["dtype"], data["name"])


def _shapes_compatible(a, b):
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


class Function:
    """A Python function under ``@mt.function``: called eagerly, checked against a signature.

    Attributes:
        python_function: the undecorated function.
        input_signature: the list of ``TensorSpec`` given, or None.
        jit_compile, reduce_retracing: as given (they change nothing in minitape).
    """

    def __init__(self, python_function, input_signature=None, jit_compile=None,
                 reduce_retracing=False, name=None):
        if not callable(python_function):
            raise TypeError(f"mt.function expects a function, got {python_function!r:.60}")
        self.python_function = python_function
        self.input_signature = _check_signature(input_signature)
        self.jit_compile = jit_compile
        self.reduce_retracing = reduce_retracing
        self._name = name or getattr(python_function, "__name__", "function")
        self._instance = None
        functools.update_wrapper(self, python_function)

    def __get__(self, instance, owner=None):
        # ``@mt.function`` on a method: bind it, as a Python function binds.
        if instance is None:
            return self
        bound = Function.__new__(Function)
        bound.__dict__.update(self.__dict__)
        bound._instance = instance
        return bound

    def __call__(self, *args, **kwargs):
        if self._instance is not None:
            args = (self._instance,) + args
        if self.input_signature is not None:
            args, kwargs = self._bind_signature(args, kwargs)
        return self.python_function(*args, **kwargs)

    def _takes_self(self):
        # A method called unbound (``Class.method(obj, x)``, or through a wrapper such as
        # Module's ``__call__`` scope) gets ``self`` first: the signature covers the rest.
        qualname = getattr(self.python_function, "__qualname__", "")
        params = list(inspect.signature(self.python_function).parameters)
        return "." in qualname.replace("<locals>.", "") and params[:1] == ["self"]

    def _bind_signature(self, args, kwargs):
        offset = 1 if self._instance is not None or self._takes_self() else 0
        params = [p for p in inspect.signature(self.python_function).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][offset:]
        specs = self.input_signature
        given = list(args[offset:])
        for p in params[len(given):len(specs)]:
            if p.name in kwargs:
                given.append(kwargs.pop(p.name))
        if len(given) != len(specs) or kwargs:
            raise TypeError(
                f"{self._name}: the input_signature has {len(specs)} argument(s) "
                f"({_describe(specs)}) but the call passed {len(args) - offset} positional "
                f"argument(s) and the keywords {sorted(kwargs)}; a function with an "
                "input_signature takes exactly one argument per TensorSpec")
        converted = []
        for i, (value, spec) in enumerate(zip(given, specs)):
            converted.append(self._convert(i, value, spec, params))
        return tuple(args[:offset]) + tuple(converted), {}

    def _convert(self, i, value, spec, params):
        name = params[i].name if i < len(params) else f"argument {i}"
        if isinstance(value, Tensor):
            tensor = value
        else:
            try:
                tensor = convert_to_tensor(value, dtype=spec.dtype, what=self._name)
            except (TypeError, ValueError) as e:
                raise TypeError(f"Binding inputs to mt.function failed: {name}={value!r:.60} "
                                f"cannot be converted to {spec}: {e}") from None
        if not spec.is_compatible_with(tensor):
            raise TypeError(
                f"Binding inputs to mt.function failed: can not cast "
                f"{TensorSpec(tensor.shape, tensor.dtype)} to {spec} (argument '{name}' of "
                f"{self._name}, whose input_signature is {_describe(self.input_signature)}); "
                "pass a Tensor of that shape and dtype (mt.cast, mt.reshape)")
        return value if isinstance(value, Tensor) else tensor

    def get_concrete_function(self, *args, **kwargs):
        """The function itself: minitape has no traced graphs to return (see the module doc)."""
        return self

    # A traced function's graph (``concrete_function.graph``, ``.function_def``) is out of
    # minitape's scope: properties that raise AttributeError, so ``hasattr`` stays False.
    @property
    def graph(self):
        raise _no_graph("graph")

    @property
    def function_def(self):
        raise _no_graph("function_def")

    def __repr__(self):
        return f"<mt.function {self._name} input_signature={self.input_signature}>"


def _no_graph(name):
    from ._tf_names import out_of_scope_message
    return AttributeError(f"'Function' object has no attribute {name!r}: "
                          + out_of_scope_message(f"A traced function's {name}", "graphs"))


def _check_signature(signature):
    if signature is None:
        return None
    if not isinstance(signature, (list, tuple)):
        raise TypeError(f"input_signature must be a list of mt.TensorSpec, got {signature!r:.60}")
    for spec in signature:
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"input_signature must hold mt.TensorSpec objects, got "
                            f"{spec!r:.60} (nested structures are not supported)")
    return list(signature)


def _describe(specs):
    return "[" + ", ".join(map(repr, specs)) + "]"


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None, name=None):
    """Decorate a Python function as ``tf.function`` does; minitape runs it eagerly.

    Use ``@mt.function``, ``@mt.function(input_signature=[mt.TensorSpec(None)])``, or
    ``mt.function(f)``. TensorFlow would trace the function into a graph once per input
    signature and run the graph afterwards (``jit_compile=True``: compiled with XLA);
    minitape runs the Python function on every call, which gives the same numbers (see the
    module docstring). The other arguments are accepted for compatibility and do nothing.

    Args:
        func: the function (or method) to decorate.
        input_signature: a list of ``mt.TensorSpec``, one per positional argument. Each call
            is checked: a wrong shape, dtype or number of arguments raises ``TypeError``,
            as TensorFlow. Python numbers and lists are converted to the spec's dtype.

    Returns:
        A ``Function`` (callable; a method stays a method), or a decorator when ``func`` is
        None.

    >>> import minitape as mt
    >>> @mt.function(input_signature=[mt.TensorSpec([None], mt.float32)])
    ... def double(x):
    ...     return 2 * x
    >>> double(mt.constant([1.0, 2.0]))
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([2., 4.], dtype=float32)>
    >>> double(mt.constant([[1.0]]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: Binding inputs to mt.function failed: can not cast TensorSpec(shape=(1, 1), ...
    """
    def decorate(f):
        jit = jit_compile if jit_compile is not None else experimental_compile
        return Function(f, input_signature=input_signature, jit_compile=jit,
                        reduce_retracing=reduce_retracing or bool(experimental_relax_shapes),
                        name=name)
    return decorate if func is None else decorate(func)
