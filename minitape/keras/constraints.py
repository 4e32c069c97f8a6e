"""``mt.keras.constraints``: projections applied to a weight after each update, as
``keras.constraints``.

A constraint is a function of a weight's value that returns the value it should have
instead (a max-norm rescaling, zeroing the negative entries, ...). A layer's
``kernel_constraint=`` / ``bias_constraint=`` (``Dense``, ``Conv2D``; ``Embedding``'s
``embeddings_constraint=``) becomes the Variable's ``constraint``, and every optimizer's
``apply_gradients`` (so ``fit`` too) assigns ``constraint(variable)`` to the variable after
updating it, as Keras 3's optimizers do. A custom training loop that updates variables
itself applies them as Geron's chapter 12 does::

    for variable in model.variables:
        if variable.constraint is not None:
            variable.assign(variable.constraint(variable))

Formulas and defaults as Keras 3 (``keras/src/constraints/constraints.py``); the norms are
taken along ``axis`` (0: each column of a Dense kernel, one per output unit) with
``epsilon = 1e-7`` in the denominator. Constraints are not part of the gradient: they are
computed on the weight's value, outside any tape.

>>> import minitape as mt
>>> mt.keras.constraints.MaxNorm(1.0)(mt.constant([[3.0], [4.0]]))
<mt.Tensor: shape=(2, 1), dtype=float32, numpy=
array([[0.6],
       [0.8]], dtype=float32)>
"""

from __future__ import annotations

from ..ops import math_ops, reduction_ops
from ..engine.tensor import convert_to_tensor
from ._serialization import deserialize_object, serialize_object

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "serialize", "deserialize"]

EPSILON = 1e-7


class Constraint:
    """Base class of the constraints, as ``keras.constraints.Constraint``: subclass it with
    ``__call__(self, w)`` returning the projected value (minitape ops or NumPy), and
    ``get_config`` for ``model.save``."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _norms(w, axis):
    w = math_ops.floating(convert_to_tensor(w, what="constraint"), "constraint")
    return w, math_ops.sqrt(reduction_ops.reduce_sum(math_ops.square(w), axis=axis,
                                                      keepdims=True))


class MaxNorm(Constraint):
    """Rescale each slice along ``axis`` whose L2 norm exceeds ``max_value`` to that norm, as
    ``keras.constraints.MaxNorm`` (``max_value=2``, ``axis=0``)."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = float(max_value), axis

    def __call__(self, w):
        w, norms = _norms(w, self.axis)
        desired = math_ops.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (norms + EPSILON))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Set the negative entries to zero, as ``keras.constraints.NonNeg``."""

    def __call__(self, w):
        w = math_ops.floating(convert_to_tensor(w, what="NonNeg"), "NonNeg")
        return w * math_ops.cast(w >= 0.0, w.dtype)


class UnitNorm(Constraint):
    """Scale each slice along ``axis`` to L2 norm 1, as ``keras.constraints.UnitNorm``."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w, norms = _norms(w, self.axis)
        return w / (norms + EPSILON)

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move each slice's L2 norm into ``[min_value, max_value]``, a fraction ``rate`` of the way
    (1: all the way), as ``keras.constraints.MinMaxNorm`` (``0, 1, rate=1, axis=0``)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value = float(min_value), float(max_value)
        self.rate, self.axis = float(rate), axis

    def __call__(self, w):
        w, norms = _norms(w, self.axis)
        desired = self.rate * math_ops.clip_by_value(norms, self.min_value, self.max_value) \
            + (1.0 - self.rate) * norms
        return w * (desired / (norms + EPSILON))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


# Keras's snake-case aliases are the classes themselves.
max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm

_BY_NAME = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm, "MaxNorm": MaxNorm, "NonNeg": NonNeg,
            "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm}


def serialize(constraint):
    """``{"class_name", "config"}`` of a Constraint, or a function's name."""
    return serialize_object(constraint, Constraint, "constraints")


def deserialize(config, custom_objects=None):
    """The constraint ``serialize`` described."""
    return deserialize_object(config, custom_objects, _BY_NAME, get, "constraints",
                              "constraint")


def get(identifier):
    """A constraint from a name (``"max_norm"``, ``"non_neg"``, ...: Keras's defaults), a
    config dict, a class, an instance or a function ``w -> w``; None gives None. As
    ``keras.constraints.get``.

    Raises:
        ValueError: an unknown name, or something that is not callable.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"could not interpret constraint identifier {identifier!r}; use "
                             f"one of {sorted(n for n in _BY_NAME if '_' in n)}, a "
                             "mt.keras.constraints object such as MaxNorm(1.0), or a function "
                             "weight -> weight")
        identifier = _BY_NAME[identifier]
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"could not interpret constraint identifier {identifier!r:.60}; use a "
                     "name, a mt.keras.constraints object or a function weight -> weight")


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it.
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
