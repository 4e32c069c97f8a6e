"""``mt.keras.regularizers``: weight penalties added to the loss, as ``keras.regularizers``.

A regularizer is a function of a weight (or of a layer's output) that returns a scalar
penalty, built from minitape ops, so the tape records it like every op and its gradient
reaches the weight::

    layer = mt.keras.layers.Dense(3, kernel_regularizer=mt.keras.regularizers.L2(0.01))
    layer(x)
    layer.losses        # [0.01 * sum(kernel ** 2)]: recomputed each time it is read

- ``kernel_regularizer=`` / ``bias_regularizer=`` (``Dense``, ``Conv2D``): a penalty of the
  weight, recomputed from its current value whenever ``layer.losses`` is read (inside a
  tape, it is recorded), as Keras 3;
- ``activity_regularizer=``: a penalty of the layer's output, divided by the batch size,
  added at each call (``add_loss``).

``Model.fit`` adds the sum of ``model.losses`` to the compiled loss, so the penalties are
trained on and included in the reported ``loss``. Formulas and defaults as Keras 3
(``keras/src/regularizers/regularizers.py``): ``L1(l1=0.01)`` is ``l1 * sum(|x|)``,
``L2(l2=0.01)`` is ``l2 * sum(x**2)`` (no factor 1/2), ``L1L2(l1=0.0, l2=0.0)`` their sum;
``l1``, ``l2``, ``l1_l2`` are the same classes, and the strings ``"l1"``, ``"l2"``, ``"l1_l2"``
give them with their defaults.

>>> import minitape as mt
>>> mt.keras.regularizers.L2(0.5)(mt.constant([1.0, -2.0]))
<mt.Tensor: shape=(), dtype=float32, numpy=2.5>
"""

from __future__ import annotations

import math

from ..ops import math_ops, reduction_ops
from ..engine.tensor import Tensor, Variable
from ._serialization import deserialize_object, serialize_object

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize"]


def _factor(value, name, who):
    """A penalty factor as a float, non-negative and finite, as Keras's ``validate_float_arg``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or math.isinf(value) or value < 0:
        raise ValueError(f"{who}: invalid value for argument {name}: expected a non-negative "
                         f"float, got {name}={value!r}")
    return float(value)


def _weight(x, who):
    if not isinstance(x, (Tensor, Variable)):
        raise TypeError(f"{who} expects a Tensor or Variable (a layer's weight or output), got "
                        f"{type(x).__name__} {x!r:.60}")
    return math_ops.floating(x, who)


class Regularizer:
    """Base class of the regularizers, as ``keras.regularizers.Regularizer``.

    Subclass it with ``__call__(self, x)`` returning a scalar Tensor (made with minitape
    ops, so that it has a gradient) and ``get_config`` (the constructor's arguments, for
    ``model.save``). Any function ``x -> scalar`` works as a regularizer too.
    """

    def __call__(self, x):
        return 0.0

    def get_config(self):
        """The constructor's arguments as a dict (``from_config`` rebuilds from it)."""
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class L1(Regularizer):
    """``l1 * reduce_sum(abs(x))``, as ``keras.regularizers.L1`` (default ``l1=0.01``).

    Args:
        l1: the factor, a non-negative float.

    Raises:
        ValueError: a negative, NaN or infinite ``l1``.
        TypeError: called on something that is not a Tensor.
    """

    def __init__(self, l1=0.01):
        self.l1 = _factor(l1, "l1", "L1")

    def __call__(self, x):
        x = _weight(x, "L1 regularizer")
        return math_ops.cast(self.l1, x.dtype) * reduction_ops.reduce_sum(math_ops.abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * reduce_sum(square(x))``, as ``keras.regularizers.L2`` (default ``l2=0.01``).

    The gradient with respect to ``x`` is ``2 * l2 * x`` (weight decay of ``2 * l2``).

    Raises:
        ValueError: a negative, NaN or infinite ``l2``.
        TypeError: called on something that is not a Tensor.
    """

    def __init__(self, l2=0.01):
        self.l2 = _factor(l2, "l2", "L2")

    def __call__(self, x):
        x = _weight(x, "L2 regularizer")
        return math_ops.cast(self.l2, x.dtype) * reduction_ops.reduce_sum(math_ops.square(x))

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``, as ``keras.regularizers.L1L2``.

    Both factors default to 0.0 (Keras 3; ``l1_l2`` is the same class). A zero factor's
    term is left out, as Keras.
    """

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor(0.0 if l1 is None else l1, "l1", "L1L2")
        self.l2 = _factor(0.0 if l2 is None else l2, "l2", "L1L2")

    def __call__(self, x):
        x = _weight(x, "L1L2 regularizer")
        penalty = math_ops.cast(0.0, x.dtype)
        if self.l1:
            penalty = penalty + math_ops.cast(self.l1, x.dtype) * \
                reduction_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            penalty = penalty + math_ops.cast(self.l2, x.dtype) * \
                reduction_ops.reduce_sum(math_ops.square(x))
        return penalty

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


# Keras's lower-case names are the classes themselves.
l1 = L1
l2 = L2
l1_l2 = L1L2

_BY_NAME = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2,
            "Regularizer": Regularizer}


def serialize(regularizer):
    """``{"class_name", "config"}``, as ``keras.regularizers.serialize``."""
    return serialize_object(regularizer, Regularizer, "regularizers")


def deserialize(config, custom_objects=None):
    """The regularizer that ``serialize`` described; ``custom_objects`` by class name."""
    return deserialize_object(config, custom_objects, _BY_NAME, get, "regularizers",
                              "regularizer")


def get(identifier):
    """A regularizer from a name, a config dict, a class or an instance (None gives None).

    As ``keras.regularizers.get``: ``"l2"`` gives ``L2()`` (``l2=0.01``); a class is
    instantiated; a Regularizer or a function is returned as is.

    Raises:
        ValueError: an unknown name, or something that is not callable.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"could not interpret regularizer identifier {identifier!r}; use "
                             "'l1', 'l2', 'l1_l2', a mt.keras.regularizers object such as "
                             "L2(0.01), or a function weight -> scalar penalty")
        identifier = _BY_NAME[identifier]
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"could not interpret regularizer identifier {identifier!r:.60}; use "
                     "'l1', 'l2', 'l1_l2', a mt.keras.regularizers object such as L2(0.01), "
                     "or a function weight -> scalar penalty")


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it.
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
