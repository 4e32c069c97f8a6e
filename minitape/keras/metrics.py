"""``mt.keras.metrics``: running statistics of a model's predictions, as ``keras.metrics``.

A metric is a small object with state (non-trainable Variables, made with ``add_weight``):

- ``update_state(y_true, y_pred, sample_weight=None)`` adds one batch to the state;
- ``result()`` returns the statistic over every batch since the last reset, a scalar Tensor
  (a vector for ``Precision``/``Recall`` with several thresholds);
- ``reset_state()`` sets every state Variable back to zero (``fit`` and ``evaluate`` do it at
  the start of each epoch and of each evaluation);
- ``metric(y_true, y_pred)`` is ``update_state`` then ``result``.

So a metric is not the mean of per-batch values: ``Precision`` counts true and false positives
over all batches and divides once. As Keras 3 (``keras/src/metrics/``): the same default names,
thresholds (0.5), ``sample_weight`` rules and float32 results; ``0/0`` gives 0
(``divide_no_nan``). The statistics are counted with NumPy: a metric is read, never
differentiated (train on a loss).

>>> import minitape as mt
>>> m = mt.keras.metrics.Mean()
>>> m.update_state([1.0, 3.0, 5.0, 7.0])
>>> m.result()
<mt.Tensor: shape=(), dtype=float32, numpy=4.0>
>>> m.update_state([2.0])
>>> round(float(m.result()), 4)
3.6
"""

from __future__ import annotations

import re

import numpy as np

from .. import dtypes
from ..module import unique_name
from ..engine.tensor import Tensor, Variable
from ..ops.constant_op import constant
from . import losses as _losses
from ._serialization import deserialize_object, serialize_object

__all__ = [
    "Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
    "CategoricalAccuracy", "SparseCategoricalAccuracy", "Precision", "Recall",
    "MeanSquaredError", "MeanAbsoluteError", "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy", "BinaryCrossentropy", "accuracy", "binary_accuracy",
    "categorical_accuracy", "sparse_categorical_accuracy", "get", "serialize", "deserialize",
]


def _array(value, what, dtype=None):
    """``value`` (a Tensor, Variable, ndarray, list or number) as an ndarray of numbers."""
    if isinstance(value, (Tensor, Variable)):
        array = np.asarray(value.numpy())
    else:
        array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{what}: expected numbers (a Tensor, an ndarray or a list), got "
                        f"{type(value).__name__} {value!r:.60}")
    return array if dtype is None else array.astype(dtype)


def _same_rank(x1, x2):
    """Keras's ``squeeze_or_expand_to_same_rank``: ``(n,)`` against ``(n, 1)`` lines up."""
    if x1.ndim == x2.ndim + 1 and x1.shape[-1] == 1:
        if x2.ndim == 1:
            x2 = x2[..., None]
        else:
            x1 = x1[..., 0]
    elif x2.ndim == x1.ndim + 1 and x2.shape[-1] == 1:
        if x1.ndim == 1:
            x1 = x1[..., None]
        else:
            x2 = x2[..., 0]
    return x1, x2


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Metric:
    """Base class of the metrics, as ``keras.metrics.Metric``: subclass it for your own.

    Write ``__init__`` (call ``super().__init__(name=..., dtype=...)``, then make the state
    with ``self.add_weight(name=..., initializer="zeros")``), ``update_state(...)`` (change
    the state with ``assign`` / ``assign_add``) and ``result()``. ``reset_state`` (zeros
    every state Variable), ``__call__``, ``variables`` and ``get_config`` come with it::

        class CountPositives(mt.keras.metrics.Metric):
            def __init__(self, name="positives", **kwargs):
                super().__init__(name=name, **kwargs)
                self.count = self.add_weight(name="count", initializer="zeros")
            def update_state(self, y_true, y_pred, sample_weight=None):
                self.count.assign_add(mt.reduce_sum(mt.cast(y_pred > 0.5, "float32")))
            def result(self):
                return self.count

    Args:
        name: the name shown in ``fit``'s logs (default: the class name in snake_case,
            made unique: ``mean``, ``mean_1``...).
        dtype: the dtype of the state and of ``result()`` (default float32, Keras's floatx).

    A metric is not a ``mt.Module``: a model that keeps one in an attribute does not count
    its state among ``model.variables`` (as Keras keeps metric variables apart).
    """

    def __init__(self, name=None, dtype=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: name must be a str, got {name!r:.40}")
        self.name = name if name is not None else unique_name(_snake(type(self).__name__))
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
        self._variables = []

    @property
    def dtype(self):
        """The dtype of the state and of ``result()`` (a NumPy dtype, float32 by default)."""
        return self._dtype

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """A new non-trainable state Variable, as Keras's ``Metric.add_variable``.

        Args:
            shape: a tuple of ints (default ``()``, a scalar).
            initializer: ``"zeros"`` (the default), ``"ones"``, or a callable
                ``(shape, dtype) -> value``.
            dtype: default the metric's dtype.
            aggregation: accepted (Keras's distributed training); unused.
            name: the Variable's name.

        Raises:
            RuntimeError: ``super().__init__()`` was not called in the subclass's ``__init__``.
        """
        if "_variables" not in vars(self):
            raise RuntimeError(f"{type(self).__name__}: you forgot to call super().__init__() "
                               "in the __init__() method (as Keras says): add it before "
                               "add_weight")
        from .layers import _initial_value
        shape = tuple(int(d) for d in (() if shape is None else shape))
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self._dtype
        initializer = "zeros" if initializer is None else initializer
        value = _initial_value(initializer, shape, dtype, f"{type(self).__name__}.add_weight")
        var = Variable(value, trainable=False, name=name or "Variable")
        var.path = f"{self.name}/{name or 'variable'}"
        self._variables.append(var)
        return var

    def add_weight(self, name=None, shape=(), initializer="zeros", dtype=None, **kwargs):
        """``add_variable`` under its older name (TensorFlow 2's metrics call it this)."""
        return self.add_variable(shape=shape, initializer=initializer, dtype=dtype, name=name,
                                 aggregation=kwargs.get("aggregation", "sum"))

    @property
    def variables(self):
        """The state Variables, this metric's then those of metrics held in attributes."""
        out = list(vars(self).get("_variables", []))
        for value in vars(self).values():
            if isinstance(value, Metric) and value is not self:
                out.extend(value.variables)
        return out

    def update_state(self, *args, **kwargs):
        """Add a batch to the state. Subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define update_state(self, ...) "
                                  "(see mt.keras.metrics.Metric)")

    def result(self):
        """The statistic so far, a Tensor. Subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} must define result(self) (see "
                                  "mt.keras.metrics.Metric)")

    def reset_state(self):
        """Set every state Variable to zeros, as Keras's ``Metric.reset_state``."""
        for v in self.variables:
            v.assign(np.zeros(v.shape, v.dtype))

    def reset_states(self):
        """``reset_state``, under TensorFlow 2's older name."""
        self.reset_state()

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)``, then return ``result()``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        """``{"name", "dtype"}``; subclasses add their constructor's arguments."""
        return {"name": self.name, "dtype": self._dtype.name}

    @classmethod
    def from_config(cls, config):
        """``cls(**config)``, as Keras."""
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _count(value, dtype):
    return np.asarray(value, dtype=dtype)


def _divide_no_nan(x, y):
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(y == 0, np.zeros_like(x), x / np.where(y == 0, 1, y))
    return out.astype(x.dtype)


def _samplewise(values, sample_weight, reduce_fn, dtype, what):
    """Keras's ``reduce_to_samplewise_values``: one value (and weight) per sample."""
    values = _array(values, what, dtype)
    if sample_weight is not None:
        weights = _array(sample_weight, f"{what}: sample_weight", dtype)
        values, weights = _same_rank(values, weights)
        if values.ndim > weights.ndim:
            values = reduce_fn(values, axis=tuple(range(weights.ndim, values.ndim)))
        try:
            weights = np.broadcast_to(weights, values.shape)
        except ValueError:
            raise ValueError(f"{what}: sample_weight of shape {np.shape(sample_weight)} does "
                             f"not broadcast to the values' shape {values.shape}") from None
        values = values * weights
        if weights.ndim > 1:
            weights = reduce_fn(weights, axis=tuple(range(1, weights.ndim)))
    else:
        weights = None
    if values.ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values.ndim)))
    return values, weights


class Sum(Metric):
    """The (weighted) sum of the values seen, as ``keras.metrics.Sum``.

    State: ``total``. ``update_state(values, sample_weight=None)``: ``values`` of any shape
    (each sample's values are summed), ``sample_weight`` broadcast against them.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.Sum()
    >>> m.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=4.0>
    """

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = _samplewise(values, sample_weight, np.sum, self._dtype,
                                f"{type(self).__name__}.update_state")
        self.total.assign_add(_count(np.sum(values), self._dtype))

    def result(self):
        return constant(np.asarray(self.total.numpy(), self._dtype))


class Mean(Metric):
    """The (weighted) mean of the values seen, as ``keras.metrics.Mean``.

    State: ``total`` and ``count``; ``result()`` is ``total / count`` (0 before any update).
    ``update_state(values, sample_weight=None)``: each sample's values (the first axis is
    the samples) are first averaged; ``count`` grows by the number of samples, or by the sum
    of ``sample_weight``. The usual running average of a custom training loop::

        train_loss = mt.keras.metrics.Mean(name="train_loss")
        train_loss.update_state(loss)      # each step
        train_loss.result()                # the epoch's mean loss
        train_loss.reset_state()           # before the next epoch

    >>> import minitape as mt
    >>> m = mt.keras.metrics.Mean()
    >>> m.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=2.0>
    """

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values, sample_weight=None):
        values, weights = _samplewise(values, sample_weight, np.mean, self._dtype,
                                      f"{type(self).__name__}.update_state")
        self.total.assign_add(_count(np.sum(values), self._dtype))
        if weights is not None:
            samples = np.sum(weights)
        elif values.ndim >= 1:
            samples = values.shape[0]
        else:
            samples = 1
        self.count.assign_add(_count(samples, self._dtype))

    def result(self):
        return constant(_divide_no_nan(self.total.numpy(), self.count.numpy()))


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred)`` over the samples seen, as Keras's class.

    ``fn(y_true, y_pred, **kwargs)`` returns one value per sample (a loss function does);
    ``update_state(y_true, y_pred, sample_weight=None)`` adds them to the mean. ``compile``
    wraps a metric given as a function in one of these. When ``y_pred`` carries a mask
    (``mt.keras.masking``), the masked positions do not count, as Keras 3.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"MeanMetricWrapper: fn must be a function (y_true, y_pred), got "
                            f"{fn!r:.60}")
        super().__init__(name=name if name is not None else getattr(fn, "__name__", None),
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        from ._keras_mask import get_keras_mask
        mask = get_keras_mask(y_pred)   # (nlpgeron: an output's mask, as Keras 3)
        if self._fn in _LOSS_FUNCTIONS:   # (Keras's losses take integer predictions too)
            y_pred = _array(y_pred, f"{self.name}: y_pred")
            if y_pred.dtype.kind != "f":
                y_pred = y_pred.astype(self._dtype)
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        if mask is not None and tuple(np.shape(values)) == tuple(mask.shape):
            # As Keras 3: the masked positions (padding) do not count in the mean
            weights = mask.numpy().astype(self._dtype)
            if sample_weight is not None:
                given = np.asarray(sample_weight, self._dtype)
                weights = weights * given.reshape(given.shape + (1,) * (weights.ndim
                                                                         - given.ndim))
            sample_weight = weights
        super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs}


_LOSS_FUNCTIONS = (_losses.mean_squared_error, _losses.mean_absolute_error,
                   _losses.binary_crossentropy, _losses.categorical_crossentropy,
                   _losses.sparse_categorical_crossentropy)


# -- the accuracy functions (one value per sample) ------------------------------------------

def accuracy(y_true, y_pred):
    """``1.0`` where ``y_pred == y_true``, else ``0.0`` (float32), as ``keras.metrics.accuracy``."""
    y_pred = _array(y_pred, "accuracy: y_pred")
    y_true = _array(y_true, "accuracy: y_true", y_pred.dtype)
    y_true, y_pred = _same_rank(y_true, y_pred)
    return constant((y_true == y_pred).astype(np.float32))


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Per sample, the fraction of ``(y_pred > threshold) == y_true`` over the last axis.

    As ``keras.metrics.binary_accuracy``: ``y_pred`` are probabilities (pass
    ``threshold=0.0`` for logits); shapes ``(batch, d)`` give ``(batch,)``.
    """
    y_pred = _array(y_pred, "binary_accuracy: y_pred")
    y_true = _array(y_true, "binary_accuracy: y_true")
    y_true, y_pred = _same_rank(y_true, y_pred)
    matches = (y_true == (y_pred > threshold).astype(y_true.dtype)).astype(np.float32)
    return constant(matches.mean(axis=-1) if matches.ndim else matches)


def categorical_accuracy(y_true, y_pred):
    """``1.0`` where ``argmax(y_pred) == argmax(y_true)`` (one-hot labels), per sample.

    As ``keras.metrics.categorical_accuracy``: ``(batch, classes)`` both, gives ``(batch,)``;
    logits work as well as probabilities.
    """
    y_pred = _array(y_pred, "categorical_accuracy: y_pred")
    y_true = _array(y_true, "categorical_accuracy: y_true")
    if y_true.shape != y_pred.shape:
        raise ValueError(f"categorical_accuracy: y_true (one-hot) must have y_pred's shape "
                         f"{y_pred.shape}, got {y_true.shape}; for integer labels use "
                         "sparse_categorical_accuracy")
    return constant((y_true.argmax(-1) == y_pred.argmax(-1)).astype(np.float32))


def sparse_categorical_accuracy(y_true, y_pred):
    """``1.0`` where ``argmax(y_pred) == y_true`` (integer labels), per sample.

    As ``keras.metrics.sparse_categorical_accuracy``: labels ``(batch,)`` or ``(batch, 1)``,
    ``y_pred`` ``(batch, classes)``; gives ``(batch,)``.
    """
    y_pred = _array(y_pred, "sparse_categorical_accuracy: y_pred")
    y_true = _array(y_true, "sparse_categorical_accuracy: y_true")
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    if y_pred.ndim == y_true.ndim + 1:
        y_pred = y_pred.argmax(-1)
    try:
        matches = y_true == y_pred.astype(y_true.dtype)
    except ValueError:
        raise ValueError(f"sparse_categorical_accuracy: labels of shape {y_true.shape} do not "
                         f"match predictions of shape {y_pred.shape}") from None
    return constant(np.asarray(matches, dtype=np.float32))


class Accuracy(MeanMetricWrapper):
    """How often ``y_pred`` equals ``y_true`` exactly, as ``keras.metrics.Accuracy``.

    For labels compared to predicted labels; for probabilities use ``BinaryAccuracy``,
    ``CategoricalAccuracy`` or ``SparseCategoricalAccuracy`` (or ``"accuracy"`` in
    ``compile``, which picks one from the shapes).

    >>> import minitape as mt
    >>> m = mt.keras.metrics.Accuracy()
    >>> m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.75>
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the 0/1 ``y_true``, as Keras's ``BinaryAccuracy``.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.BinaryAccuracy()
    >>> m.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.75>
    """

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of ``y_pred`` is the one-hot ``y_true``'s class, as Keras.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.CategoricalAccuracy()
    >>> m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.5>
    """

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the argmax of ``y_pred`` is the integer label, as Keras.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.SparseCategoricalAccuracy()
    >>> m.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.5>
    """

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class MeanSquaredError(MeanMetricWrapper):
    """The mean of ``keras.losses.mean_squared_error`` over the samples, as Keras.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.MeanSquaredError()
    >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.25>
    """

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(_losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of ``keras.losses.mean_absolute_error`` over the samples, as Keras."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(_losses.mean_absolute_error, name=name, dtype=dtype)


class BinaryCrossentropy(MeanMetricWrapper):
    """The mean binary cross-entropy over the samples, as ``keras.metrics.BinaryCrossentropy``."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0):
        super().__init__(_losses.binary_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    """The mean cross-entropy with one-hot labels, as ``keras.metrics.CategoricalCrossentropy``.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.CategoricalCrossentropy()
    >>> m.update_state([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
    >>> round(float(m.result()), 4)
    1.1769
    """

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0.0, axis=-1):
        super().__init__(_losses.categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean cross-entropy with integer labels, as Keras's ``SparseCategoricalCrossentropy``.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.SparseCategoricalCrossentropy()
    >>> m.update_state([1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
    >>> round(float(m.result()), 4)
    1.1769
    """

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 axis=-1):
        super().__init__(_losses.sparse_categorical_crossentropy, name=name, dtype=dtype,
                         from_logits=from_logits, axis=axis)


# -- Precision and Recall: counts of true and false positives/negatives ------------------------

class _Confusion(Metric):
    """True positives and one other count per threshold (``Precision``, ``Recall``)."""

    _other = ""   # "false_positives" or "false_negatives"

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        what = type(self).__name__
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)
                                  or top_k < 1):
            raise ValueError(f"{what}: top_k must be a positive int or None, got {top_k!r}")
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else -np.inf
        values = [default] if thresholds is None else np.atleast_1d(thresholds).tolist()
        for t in values:
            if not isinstance(t, (int, float)) or not (t == -np.inf or 0.0 <= t <= 1.0):
                raise ValueError(f"{what}: thresholds must be numbers in [0, 1], got "
                                 f"{thresholds!r}")
        self.thresholds = [float(t) for t in values]
        self._scalar = thresholds is None or np.ndim(thresholds) == 0
        n = len(self.thresholds)
        self.true_positives = self.add_variable(shape=(n,), name="true_positives")
        setattr(self, self._other, self.add_variable(shape=(n,), name=self._other))

    def update_state(self, y_true, y_pred, sample_weight=None):
        what = f"{type(self).__name__}.update_state"
        y_pred = _array(y_pred, f"{what}: y_pred", np.float64)
        y_true = _array(y_true, f"{what}: y_true")
        y_true, y_pred = _same_rank(y_true, y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"{what}: y_true of shape {y_true.shape} and y_pred of shape "
                             f"{y_pred.shape} must match")
        weights = None if sample_weight is None else _array(
            sample_weight, f"{what}: sample_weight", np.float64)
        if weights is not None:
            weights = np.broadcast_to(_same_rank(weights, y_pred)[0], y_pred.shape)
        if self.top_k is not None:   # keep each row's top_k predictions (ties: first wins)
            order = np.argsort(-y_pred, axis=-1, kind="stable")[..., :self.top_k]
            keep = np.zeros(y_pred.shape, bool)
            np.put_along_axis(keep, order, True, axis=-1)
            y_pred = np.where(keep, y_pred, -np.inf)
        if self.class_id is not None:
            y_true, y_pred = y_true[..., self.class_id], y_pred[..., self.class_id]
            weights = None if weights is None else weights[..., self.class_id]
        truth = y_true.astype(bool)
        w = np.ones(truth.shape) if weights is None else weights
        tp, other = [], []
        for t in self.thresholds:
            predicted = y_pred > t
            tp.append(np.sum(w * (predicted & truth)))
            other.append(np.sum(w * self._other_mask(predicted, truth)))
        self.true_positives.assign_add(np.asarray(tp, self._dtype))
        getattr(self, self._other).assign_add(np.asarray(other, self._dtype))

    def result(self):
        tp = self.true_positives.numpy()
        value = _divide_no_nan(tp, tp + getattr(self, self._other).numpy())
        return constant(value[0] if self._scalar else value)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


class Precision(_Confusion):
    """``true_positives / (true_positives + false_positives)``, as ``keras.metrics.Precision``.

    A prediction counts as positive when ``y_pred > threshold`` (0.5 by default; pass
    ``thresholds=0`` for logits). With a list of thresholds, ``result()`` is a vector with one
    precision per threshold. ``top_k``: only each row's ``k`` largest predictions may count
    as positive; ``class_id``: look at that column only. ``sample_weight`` weighs each count.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.Precision()
    >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.6666667>
    """

    _other = "false_positives"

    @staticmethod
    def _other_mask(predicted, truth):
        return predicted & ~truth


class Recall(_Confusion):
    """``true_positives / (true_positives + false_negatives)``, as ``keras.metrics.Recall``.

    The arguments are ``Precision``'s.

    >>> import minitape as mt
    >>> m = mt.keras.metrics.Recall()
    >>> m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    >>> m.result()
    <mt.Tensor: shape=(), dtype=float32, numpy=0.6666667>
    """

    _other = "false_negatives"

    @staticmethod
    def _other_mask(predicted, truth):
        return ~predicted & truth


# -- identifiers ---------------------------------------------------------------------------

_CLASSES = {cls.__name__: cls for cls in (
    Mean, Sum, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    Precision, Recall, MeanSquaredError, MeanAbsoluteError, BinaryCrossentropy,
    CategoricalCrossentropy, SparseCategoricalCrossentropy, MeanMetricWrapper)}

# Keras's ``ALL_OBJECTS_DICT``: classes by name and in snake_case, functions by name.
_FUNCTIONS = {
    "accuracy": accuracy, "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "mean_squared_error": _losses.mean_squared_error, "mse": _losses.mean_squared_error,
    "mean_absolute_error": _losses.mean_absolute_error, "mae": _losses.mean_absolute_error,
    "binary_crossentropy": _losses.binary_crossentropy,
    "categorical_crossentropy": _losses.categorical_crossentropy,
    "sparse_categorical_crossentropy": _losses.sparse_categorical_crossentropy,
}
_BY_NAME = {**_FUNCTIONS, **{_snake(n): c for n, c in _CLASSES.items()
                             if _snake(n) not in _FUNCTIONS}, **_CLASSES}


def serialize(metric):
    """``{"class_name", "config"}`` of a metric, or a function's name, as Keras."""
    return serialize_object(metric, Metric, "metrics")


def deserialize(config, custom_objects=None):
    """The metric (or function) that ``serialize`` described; ``custom_objects`` by name."""
    return deserialize_object(config, custom_objects, _CLASSES, get, "metrics",
                              "metric class")


def get(identifier):
    """A metric or metric function from a name, a config dict, a class or an instance.

    As ``keras.metrics.get``: ``"precision"`` / ``"Precision"`` give ``Precision()``,
    ``"mse"`` the function ``mean_squared_error``; a Metric or a function is returned as is;
    None gives None.

    Raises:
        ValueError: an unknown name (the known ones are listed).
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _BY_NAME:
            raise ValueError(f"unknown metric {identifier!r}; use one of {sorted(_BY_NAME)}, a "
                             "mt.keras.metrics.Metric, or a function (y_true, y_pred)")
        identifier = _BY_NAME[identifier]
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, Metric) or callable(identifier):
        return identifier
    raise TypeError(f"a metric is a name, a mt.keras.metrics.Metric or a function "
                    f"(y_true, y_pred), got {identifier!r:.60}")


def compile_metric(identifier, y_true, y_pred):
    """The Metric that ``compile(metrics=[identifier])`` uses, as Keras's ``get_metric``.

    ``"accuracy"`` / ``"acc"`` becomes ``BinaryAccuracy`` when ``y_pred``'s last axis is 1,
    ``SparseCategoricalAccuracy`` when the labels have fewer axes than ``y_pred`` (or a last
    axis of 1 against several classes), else ``CategoricalAccuracy``; the metric keeps the
    name it was given. A function is wrapped in ``MeanMetricWrapper``.
    """
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
        true_shape, pred_shape = np.shape(y_true), np.shape(y_pred)
        t_last = true_shape[-1] if true_shape else 1
        p_last = pred_shape[-1] if pred_shape else 1
        if p_last == 1:
            metric = BinaryAccuracy(name=identifier)
        elif len(true_shape) < len(pred_shape) or (t_last == 1 and p_last > 1):
            metric = SparseCategoricalAccuracy(name=identifier)
        else:
            metric = CategoricalAccuracy(name=identifier)
        return metric
    metric = get(identifier)
    if not isinstance(metric, Metric):
        metric = MeanMetricWrapper(metric, name=identifier if isinstance(identifier, str)
                                   else getattr(metric, "__name__", "metric"))
    elif isinstance(identifier, str):
        metric.name = identifier
    return metric


# -- the loss functions that Keras also lists as metric functions (rnnlayers: Geron's chapter
# 15 metric, ``keras.metrics.mean_squared_error(Y_true[:, -10:], Y_pred[:, -10:])``) ---------
from .losses import (  # noqa: E402  (the same functions as mt.keras.losses', as Keras)
    binary_crossentropy, categorical_crossentropy, log_cosh, mean_absolute_error,
    mean_absolute_percentage_error, mean_squared_error, mean_squared_logarithmic_error,
    sparse_categorical_crossentropy)

__all__ += ["binary_crossentropy", "categorical_crossentropy", "log_cosh",
            "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
            "mean_squared_logarithmic_error", "sparse_categorical_crossentropy"]
# -- end of rnnlayers --------------------------------------------------------------------------


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
