"""Keras's functional style: ``mt.keras.Input`` and ``mt.keras.Model(inputs, outputs)``.

::

    inputs = mt.keras.Input(shape=(4,))                 # a KerasTensor: a shape, no values
    h = mt.keras.layers.Dense(8, activation="relu")(inputs)
    outputs = mt.keras.layers.Dense(1)(h)
    model = mt.keras.Model(inputs, outputs)             # a Model: compile, fit, save...

Calling a layer on a ``KerasTensor`` records a *node* (the layer and its inputs) and returns
a new ``KerasTensor`` for its output; ``Model(inputs, outputs)`` keeps the nodes that lead
from the inputs to the outputs, and calling the model replays them in order on real Tensors,
so the tape records each layer's ops as usual. Several inputs and outputs (lists or dicts)
and a layer used twice (shared weights) work as in Keras.

Shapes are found as Keras does without values: here by calling each layer once on zeros
with a batch of one (which also builds it: its weights exist as soon as the model does);
the batch axis is ``None``. Python's operators on KerasTensors (``x + y``, ``2 * x``,
``x[:, None]``) are recorded too, as Keras 3's; an op like ``mt.exp(x)`` is not (Keras 3
refuses it too): wrap it in ``mt.keras.layers.Lambda`` or a layer of your own.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes, module
from ..engine.tensor import Tensor, register_tensor_conversion_function
from ..ops import math_ops
from ..ops.constant_op import constant
from .layers import Layer, accepts
from .models import Model, adjust_input_rank, unrecorded

__all__ = ["KerasTensor", "Input", "InputLayer", "Functional"]


class KerasTensor:
    """A symbolic value of a functional model, as Keras's ``KerasTensor``: a shape and a dtype.

    Attributes:
        shape: a tuple whose first entry (the batch axis) is ``None``.
        dtype: a NumPy dtype (float32 by default).
        name: the name of the ``Input`` or of the layer that made it.
    """

    def __init__(self, shape, dtype, name=None, node=None, index=0):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.name = name
        self._node = node        # the _Node that made it (None for an Input)
        self._index = index      # which of the node's outputs

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return (f"<KerasTensor shape={self.shape}, dtype={self.dtype.name}, "
                f"name={self.name}>")

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            "a KerasTensor (the output of mt.keras.Input or of a layer called on one) has a "
            "shape but no values, and minitape's functional models record layer calls only: "
            "wrap the computation in a layer, e.g. mt.keras.layers.Lambda(lambda x: x + 1)(x)")

    __array__ = __bool__ = _refuse

    # Python's operators record a node, as Keras 3's KerasTensor (Géron's diffusion model:
    # ``Z = time[:, tf.newaxis, tf.newaxis, :] + Z``); the replay applies them to Tensors.
    def _operator(self, op, other=None, reverse=False, unary=False):
        if unary:
            return _call_on_symbolic(_OperatorLayer(op), self)
        if isinstance(other, KerasTensor):
            return _call_on_symbolic(_OperatorLayer(op), *((other, self) if reverse
                                                           else (self, other)))
        # (a constant operand, a number or an index, is kept in the layer's config)
        return _call_on_symbolic(_OperatorLayer(op, other, 0 if reverse else 1), self)

    def __add__(self, other):
        return self._operator("add", other)

    def __radd__(self, other):
        return self._operator("add", other, reverse=True)

    def __sub__(self, other):
        return self._operator("subtract", other)

    def __rsub__(self, other):
        return self._operator("subtract", other, reverse=True)

    def __mul__(self, other):
        return self._operator("multiply", other)

    def __rmul__(self, other):
        return self._operator("multiply", other, reverse=True)

    def __truediv__(self, other):
        return self._operator("divide", other)

    def __rtruediv__(self, other):
        return self._operator("divide", other, reverse=True)

    def __pow__(self, other):
        return self._operator("power", other)

    def __rpow__(self, other):
        return self._operator("power", other, reverse=True)

    def __matmul__(self, other):
        return self._operator("matmul", other)

    def __rmatmul__(self, other):
        return self._operator("matmul", other, reverse=True)

    def __neg__(self):
        return self._operator("negative", unary=True)

    def __abs__(self):
        return self._operator("absolute", unary=True)

    def __getitem__(self, key):
        return self._operator("get_item", key)


_OPERATORS = {
    "add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y, "divide": lambda x, y: x / y,
    "power": lambda x, y: x ** y, "matmul": lambda x, y: x @ y,
    "negative": lambda x: -x, "absolute": abs, "get_item": lambda x, key: x[key],
}


def _encode_constant(value):
    # An index as JSON can hold it (``model.save``): slices and Ellipsis marked.
    if isinstance(value, slice):
        return {"__slice__": [value.start, value.stop, value.step]}
    if value is Ellipsis:
        return {"__ellipsis__": True}
    if isinstance(value, tuple):   # (saving.py keeps tuples as tuples)
        return tuple(_encode_constant(v) for v in value)
    return value


def _decode_constant(value):
    if isinstance(value, dict) and set(value) == {"__slice__"}:
        return slice(*value["__slice__"])
    if isinstance(value, dict) and set(value) == {"__ellipsis__"}:
        return Ellipsis
    if isinstance(value, tuple):
        return tuple(_decode_constant(v) for v in value)
    return value


class _OperatorLayer(Layer):
    """A Python operator applied to KerasTensors (``x + y``, ``2 * x``, ``x[:, None]``): a layer
    without weights whose node a functional model replays, as Keras 3 records the
    ``keras.ops`` call behind a KerasTensor's operator (tf.keras 2: a ``TFOpLambda`` layer).

    Args:
        op: a key of ``_OPERATORS`` (``"add"``, ``"get_item"``, ...).
        constant: an operand that is not a KerasTensor (a number, an index), or None.
        position: where ``constant`` goes among the operands (0: first, as in ``1 - x``;
            1: second), None when there is none.
    """

    def __init__(self, op, constant=None, position=None, name=None, **kwargs):
        super().__init__(name=name or module.unique_name(op), **kwargs)
        if op not in _OPERATORS:
            raise ValueError(f"_OperatorLayer: unknown operator {op!r}; one of "
                             f"{sorted(_OPERATORS)}")
        self.op, self.constant, self.position = op, _decode_constant(constant), position

    def call(self, inputs, *args):
        operands = [inputs, *args]
        if self.position is not None:
            operands.insert(self.position, self.constant)
        return _OPERATORS[self.op](*operands)

    def get_config(self):
        return {**super().get_config(), "op": self.op,
                "constant": _encode_constant(self.constant), "position": self.position}


def _refuse_conversion(value, dtype=None, name=None, what="convert_to_tensor"):
    # (an op given a KerasTensor, as in Keras 2 code: kl = tf.reduce_mean(tf.square(z_mean)))
    raise TypeError(
        f"{what} was given a KerasTensor ({value.name}, shape {value.shape}): the output of "
        "mt.keras.Input or of a layer called on one has a shape but no values yet, so an op "
        "cannot compute on it (Keras 3 refuses it too; Keras 2 recorded it). Do the "
        "computation inside a layer's call, e.g. a Layer subclass whose call does "
        "self.add_loss(...) and returns its input, or mt.keras.layers.Lambda(fn)(x)")


register_tensor_conversion_function(KerasTensor, _refuse_conversion)


class _Node:
    """One layer call on KerasTensors: the layer, its arguments, its outputs."""

    def __init__(self, layer, args, kwargs):
        self.layer, self.args, self.kwargs = layer, args, kwargs
        self.outputs = None


def _map(structure, fn):
    """``fn`` applied to every leaf of nested lists, tuples and dicts."""
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map(x, fn) for x in structure)
    if isinstance(structure, dict):
        return {k: _map(v, fn) for k, v in structure.items()}
    return fn(structure)


def _leaves(structure):
    out = []
    _map(structure, lambda x: out.append(x))
    return out


class InputLayer(Layer):
    """The layer that an ``Input`` stands for, as ``keras.layers.InputLayer`` (no weights).

    Listed first in a functional model's ``layers``, as Keras; it is never called. As the
    first item of a ``Sequential`` (``Sequential([InputLayer(shape=(8,)), Dense(2)])``) it
    gives the model its input shape, as ``mt.keras.Input`` does.

    Args:
        shape: the shape of one sample, without the batch axis; or, as Keras 2 code writes
            it, ``input_shape=`` (also accepted by Keras 3), or ``batch_shape=`` /
            ``batch_input_shape=`` with the batch axis.
        dtype: default float32.

    Raises:
        ValueError: no shape given.
    """

    def __init__(self, shape=None, batch_size=None, dtype=None, batch_shape=None, name=None,
                 input_shape=None, batch_input_shape=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        batch_shape = batch_shape if batch_shape is not None else batch_input_shape
        shape = shape if shape is not None else input_shape
        if shape is None and batch_shape is not None:
            shape = tuple(batch_shape)[1:]
        if shape is None:
            raise ValueError("InputLayer needs the shape of one sample without the batch axis, "
                             "e.g. InputLayer(shape=(784,)) (Keras 2 code: input_shape=(784,))")
        self.shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)

    def call(self, inputs):
        return inputs

    def get_config(self):
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype.name}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          batch_shape=None, optional=False):
    """A symbolic input of a functional model, as ``keras.Input`` / ``keras.layers.Input``.

    Args:
        shape: the shape of one sample, a tuple without the batch axis (``(784,)``,
            ``(28, 28, 1)``); ``None`` entries are allowed.
        batch_size: accepted (the batch axis stays ``None``).
        name: a name for the input (default ``input_layer``, ``input_layer_1``, ...).
        dtype: default float32.
        batch_shape: the shape with the batch axis, instead of ``shape``.

    Returns:
        A ``KerasTensor`` of shape ``(None,) + shape``.

    Raises:
        ValueError: neither ``shape`` nor ``batch_shape`` given, or a bad entry.
        NotImplementedError: ``sparse=True`` or ``tensor=`` (not in minitape).
    """
    if sparse or tensor is not None:
        raise NotImplementedError("mt.keras.Input: sparse inputs and tensor= are not part of "
                                  "minitape; give shape= (and dtype=)")
    if batch_shape is not None:
        shape = tuple(batch_shape)[1:]
    if shape is None:
        raise ValueError("mt.keras.Input needs shape=, the shape of one sample without the "
                         "batch axis, e.g. mt.keras.Input(shape=(784,))")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
            d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0)
            for d in shape):
        raise ValueError(f"mt.keras.Input: shape must be a tuple of non-negative ints (or "
                         f"None), without the batch axis, got {shape!r}")
    layer = InputLayer(shape=tuple(None if d is None else int(d) for d in shape),
                       dtype=dtype, name=name if name is not None
                       else module.unique_name("input_layer"))
    x = KerasTensor((None,) + layer.shape, layer.dtype, name=layer.name)
    x._input_layer = layer
    layer._symbolic = (x, x)
    return x


def functional_arguments(args, kwargs):
    """True when a Model's arguments are ``(inputs, outputs)`` made of KerasTensors (Keras's
    functional style), given by position or by keyword."""
    if len(args) >= 2:
        inputs = args[0]
    elif "inputs" in kwargs and ("outputs" in kwargs or len(args) == 1):
        inputs = kwargs["inputs"]
    elif len(args) == 1 and "outputs" in kwargs:
        inputs = args[0]
    else:
        return False
    leaves = _leaves(inputs)
    return bool(leaves) and all(isinstance(x, KerasTensor) for x in leaves)


# The lengths standing for an axis of unknown length other than the batch axis (a time axis,
# ``Input(shape=(None, 14))``): the layer is called once on zeros of each, and an output axis
# whose length differs between the two calls is ``None``, as Keras's shape inference says.
# Both are long enough for the kernel of a Conv1D on a time axis (Geron's chapter 15).
FREE_AXIS_LENGTHS = (16, 32)


def _dummy(x, length=1):
    """Zeros standing for a KerasTensor: a batch of one, other ``None`` axes of ``length``."""
    shape = (1,) + tuple(length if d is None else d for d in x.shape[1:])
    return constant(np.zeros(shape, x.dtype))


def _call_on_symbolic(layer, *args, **kwargs):
    """A layer called on KerasTensors: build it on zeros, record a node, return KerasTensors.

    ``minitape.module`` calls this instead of the layer's ``__call__`` when the first
    argument is a KerasTensor (or a list starting with one).
    """
    node = _Node(layer, args, kwargs)
    free = any(d is None for x in _leaves((args, kwargs)) if isinstance(x, KerasTensor)
               for d in x.shape[1:])
    runs = []
    for length in FREE_AXIS_LENGTHS if free else (1,):
        concrete = _map(args, lambda x: _dummy(x, length) if isinstance(x, KerasTensor) else x)
        concrete_kwargs = _map(kwargs, lambda x: _dummy(x, length)
                               if isinstance(x, KerasTensor) else x)
        with unrecorded():   # the tapes open now do not see the calls on zeros
            runs.append(layer(*concrete, **concrete_kwargs))
    outputs = runs[0]
    other_shapes = iter([tuple(getattr(y, "shape", ())) for y in _leaves(runs[-1])])
    name = getattr(layer, "name", type(layer).__name__)
    index = iter(range(10**9))

    def symbolic(y):
        if not isinstance(y, Tensor):
            raise TypeError(f"{name} returned {type(y).__name__}, not Tensors; a layer of a "
                            "functional model returns a Tensor (or a list or dict of them)")
        other = next(other_shapes, ())
        shape = tuple(a if len(other) == y.ndim and a == b else None
                      for a, b in zip(y.shape[1:], other[1:]))
        return KerasTensor((None,) + shape, y.dtype, name=name, node=node, index=next(index))

    node.outputs = _map(outputs, symbolic)
    if isinstance(layer, module.Module) and "_symbolic" not in vars(layer):
        layer._symbolic = (args[0] if len(args) == 1 else list(args), node.outputs)
    return node.outputs


module.symbolic = (KerasTensor, _call_on_symbolic)


class Functional(Model):
    """A Model made of the layer calls from ``inputs`` to ``outputs``, as Keras's Functional.

    Made by ``mt.keras.Model(inputs, outputs)`` (``Model.__new__`` returns one of these),
    with ``inputs`` and ``outputs`` a KerasTensor, a list or a dict of them. Calling it
    with real values (the same structure as ``inputs``) runs the recorded layer calls in
    order and returns the structure of ``outputs``. ``layers`` lists the ``InputLayer``s,
    then each layer once, in the order of the calls.

    Raises:
        TypeError: ``inputs`` or ``outputs`` is not made of KerasTensors.
        ValueError: an output does not depend on the inputs given (a missing ``Input``).
    """

    _walk_skip = ("_nodes", "_inputs", "_outputs")

    def __init__(self, inputs, outputs, name=None, **kwargs):
        super().__init__(name=name, **{k: v for k, v in kwargs.items() if k == "trainable"})
        for what, structure in (("inputs", inputs), ("outputs", outputs)):
            bad = [x for x in _leaves(structure) if not isinstance(x, KerasTensor)]
            if bad or not _leaves(structure):
                raise TypeError(f"mt.keras.Model({what}=...) expects KerasTensors (from "
                                f"mt.keras.Input and layers called on them), got "
                                f"{bad[0] if bad else structure!r:.80}")
        self._inputs = inputs
        self._outputs = outputs
        self._nodes = self._order(inputs, outputs)
        layers = [x._input_layer for x in _leaves(inputs)]
        for node in self._nodes:
            if not any(node.layer is seen for seen in layers):
                layers.append(node.layer)
        self._layers = layers
        self.built = True
        first = _leaves(inputs)[0]
        self._build_input_shape = first.shape

    @staticmethod
    def _order(inputs, outputs):
        """The nodes from the inputs to the outputs, each after those it reads (DFS)."""
        known = {id(x) for x in _leaves(inputs)}
        order, done = [], set()
        stack = [(x, False) for x in reversed(_leaves(outputs))]
        while stack:
            x, expanded = stack.pop()
            if id(x) in known:
                continue
            node = x._node
            if node is None:
                raise ValueError(f"mt.keras.Model: the output depends on the Input "
                                 f"{x.name!r}, which is not among the model's inputs; pass it "
                                 "in inputs=[...]")
            if id(node) in done:
                continue
            if expanded:
                done.add(id(node))
                order.append(node)
                for y in _leaves(node.outputs):
                    known.add(id(y))
                continue
            stack.append((x, True))
            for y in reversed(_leaves((node.args, node.kwargs))):
                if isinstance(y, KerasTensor) and id(y) not in known:
                    stack.append((y, False))
        return order

    @property
    def layers(self):
        return list(self._layers)

    @property
    def inputs(self):
        return _leaves(self._inputs)

    @property
    def outputs(self):
        return _leaves(self._outputs)

    @property
    def input(self):
        """The model's inputs as given to the constructor (one KerasTensor, a list or a dict),
        as Keras's ``model.input``: ``keras.Model(inputs=model.input, outputs=[...])`` builds
        a model of its intermediate layers (Chollet, chapter 9)."""
        return self._inputs

    @property
    def output(self):
        """The model's outputs as given to the constructor, as Keras's ``model.output``."""
        return self._outputs

    def call(self, inputs, training=None):
        values = {}
        symbols = _leaves(self._inputs)
        if isinstance(self._inputs, dict):
            if not isinstance(inputs, dict) or set(inputs) != set(self._inputs):
                raise ValueError(f"{self.name} expects a dict with the keys "
                                 f"{sorted(self._inputs)}, got {inputs!r:.80}")
            given = [inputs[k] for k in self._inputs]
        elif isinstance(inputs, dict):   # (a list of Inputs fed by their names, as Keras)
            missing = [x.name for x in symbols if x.name not in inputs]
            if missing:
                raise ValueError(f"{self.name}: the dict of inputs has no entry for {missing}; "
                                 f"its keys must be the Inputs' names {[x.name for x in symbols]}")
            given = [inputs[x.name] for x in symbols]
        elif len(symbols) == 1:
            # Model([x], ...) is called with [x_value] or with x_value, as Keras.
            wrapped = (isinstance(self._inputs, (list, tuple)) and isinstance(inputs, (list, tuple))
                       and len(inputs) == 1 and isinstance(inputs[0], (Tensor, np.ndarray)))
            given = [inputs[0] if wrapped else inputs]
        else:
            given = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            if len(given) != len(symbols):
                raise ValueError(f"{self.name} has {len(symbols)} inputs, got {len(given)}: "
                                 "pass a list with one value per mt.keras.Input")
        for symbol, value in zip(symbols, given):
            x = value if isinstance(value, Tensor) else constant(np.asarray(value))
            x = adjust_input_rank(x, symbol.shape)    # (a vector where (None, 1) is expected)
            if symbol.dtype.kind == "f" and x.dtype != symbol.dtype and x.dtype.kind in "iuf":
                # a Cast op (as Keras's autocasting): a tape watching ``x`` sees through it
                # (Chollet's Grad-CAM feeds a watched Tensor to a model)
                x = math_ops.cast(x, symbol.dtype)
            expected = symbol.shape[1:]
            if x.ndim != len(symbol.shape) or any(
                    e is not None and e != d for e, d in zip(expected, x.shape[1:])):
                raise ValueError(f"{self.name}: the input {symbol.name!r} expects shape "
                                 f"{symbol.shape}, got {x.shape}")
            values[id(symbol)] = x
        for node in self._nodes:
            def value_of(y):
                return values[id(y)] if isinstance(y, KerasTensor) else y
            args = _map(node.args, value_of)
            kwargs = _map(node.kwargs, value_of)
            if training is not None and "training" not in kwargs and accepts(node.layer,
                                                                              "training"):
                kwargs["training"] = training
            outputs = node.layer(*args, **kwargs)
            for symbol, value in zip(_leaves(node.outputs), _leaves(outputs)):
                values[id(symbol)] = value
        outputs = _map(self._outputs, lambda y: values[id(y)])
        # One output in a list (``outputs=[y]``) comes back alone, as Keras 3's
        # ``unpack_singleton`` (and tf.keras 2): Geron's ``variational_decoder(codings).numpy()``.
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            return outputs[0]
        return outputs

    def get_config(self):
        """The layers and the calls linking them (``minitape/keras/saving.py``), as Keras."""
        from . import saving
        return saving.functional_config(self)

    @classmethod
    def from_config(cls, config):
        """The functional model that ``get_config`` described, its layers rebuilt."""
        from . import saving
        return saving.functional_from_config(config)


_ = dtypes
