"""``mt.keras.losses``: Keras's loss functions and classes, written with minitape ops.

A loss *function* (``mean_squared_error(y_true, y_pred)``) returns one value per sample: it
reduces over the last axis only. A loss *class* (``MeanSquaredError()``) calls the function
and averages over the batch (Keras's ``"sum_over_batch_size"`` reduction), giving the scalar
that ``tape.gradient`` and ``Model.fit`` differentiate. As Keras 3 (``keras/src/losses/``):

- ``y_true`` is cast to ``y_pred``'s dtype; when the ranks differ by one and the longer shape
  ends in 1, that axis is dropped (``(batch,)`` labels against ``(batch, 1)`` predictions);
- probabilities are clipped to ``[1e-7, 1 - 1e-7]`` before the log; with ``from_logits=True``
  the numerically stable forms on logits are used instead.
"""

from __future__ import annotations

import numpy as np

from ..ops import array_ops, math_ops, nn_ops, reduction_ops
from ..engine.tensor import convert_to_tensor
from . import backend

EPSILON = 1e-7

__all__ = [
    "mean_squared_error", "mean_absolute_error", "binary_crossentropy", "categorical_crossentropy",
    "sparse_categorical_crossentropy", "MSE", "MAE", "mse", "mae", "Loss", "MeanSquaredError",
    "MeanAbsoluteError", "BinaryCrossentropy", "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy", "get", "huber", "log_cosh", "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error", "MAPE", "MSLE", "mape", "msle", "Huber", "LogCosh",
    "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
    "kl_divergence", "kullback_leibler_divergence", "kld", "KLD", "KLDivergence",
]


def _prepare(y_true, y_pred, what):
    y_pred = math_ops.floating(y_pred, what)
    y_true = convert_to_tensor(y_true, what=what)
    if y_true.dtype != y_pred.dtype:
        y_true = math_ops.cast(y_true, y_pred.dtype)
    if y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_true = array_ops.squeeze(y_true, axis=-1)
    elif y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        y_pred = array_ops.squeeze(y_pred, axis=-1)
    try:
        np.broadcast_shapes(y_true.shape, y_pred.shape)
    except ValueError:
        raise ValueError(f"{what}: y_true of shape {y_true.shape} and y_pred of shape "
                         f"{y_pred.shape} do not match") from None
    return y_true, y_pred


def mean_squared_error(y_true, y_pred):
    """``mean((y_true - y_pred)**2, axis=-1)``, as ``keras.losses.mean_squared_error``.

    Shapes: ``(batch, d)`` gives ``(batch,)``; a vector gives a scalar.

    >>> import minitape as mt
    >>> mt.keras.losses.mean_squared_error([[0.0, 1.0]], [[1.0, 1.0]])
    <mt.Tensor: shape=(1,), dtype=float32, numpy=array([0.5], dtype=float32)>
    """
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_error")
    return reduction_ops.reduce_mean(math_ops.square(y_pred - y_true), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """``mean(|y_true - y_pred|, axis=-1)``, as ``keras.losses.mean_absolute_error``."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_error")
    return reduction_ops.reduce_mean(math_ops.abs(y_pred - y_true), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """``mean(h(y_pred - y_true), axis=-1)`` with ``h(e) = e**2 / 2`` where ``|e| <= delta``,
    else ``delta * |e| - delta**2 / 2``: squared for small errors, linear for large ones
    (robust to outliers), as ``keras.losses.huber``.

    >>> import minitape as mt
    >>> mt.keras.losses.huber([[0.0, 0.0]], [[0.5, 3.0]])
    <mt.Tensor: shape=(1,), dtype=float32, numpy=array([1.3125], dtype=float32)>
    """
    y_true, y_pred = _prepare(y_true, y_pred, "huber")
    error = y_pred - y_true
    abs_error = math_ops.abs(error)
    delta = float(delta)
    return reduction_ops.reduce_mean(array_ops.where(
        abs_error <= delta, 0.5 * math_ops.square(error), delta * abs_error - 0.5 * delta ** 2),
        axis=-1)


def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``, as ``keras.losses.log_cosh``, computed
    as ``x + softplus(-2 x) - log(2)`` so that large errors do not overflow ``cosh``."""
    y_true, y_pred = _prepare(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    return reduction_ops.reduce_mean(x + math_ops.softplus(-2.0 * x) - float(np.log(2.0)),
                                     axis=-1)


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7), axis=-1)``, as
    ``keras.losses.mean_absolute_percentage_error``."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_percentage_error")
    diff = math_ops.abs((y_true - y_pred) / math_ops.maximum(math_ops.abs(y_true), EPSILON))
    return 100.0 * reduction_ops.reduce_mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(1 + y_pred) - log(1 + y_true))**2, axis=-1)``, each value clipped below at
    1e-7 first, as ``keras.losses.mean_squared_logarithmic_error``."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    first = math_ops.log(math_ops.maximum(y_pred, EPSILON) + 1.0)
    second = math_ops.log(math_ops.maximum(y_true, EPSILON) + 1.0)
    return reduction_ops.reduce_mean(math_ops.square(first - second), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy, averaged over ``axis``, as ``keras.losses.binary_crossentropy``.

    Probabilities: ``-(y log p + (1 - y) log(1 - p))`` with ``p`` clipped to
    ``[1e-7, 1 - 1e-7]``. Logits: ``max(x, 0) - x y + log(1 + exp(-|x|))`` (stable).
    """
    y_true, y_pred = _prepare(y_true, y_pred, "binary_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per = (nn_ops.relu(y_pred) - y_pred * y_true
               + math_ops.softplus(-math_ops.abs(y_pred)))
    else:
        eps = backend.epsilon()   # 1e-7 unless mt.keras.backend.set_epsilon changed it
        p = math_ops.clip_by_value(y_pred, eps, 1.0 - eps)
        per = -(y_true * math_ops.log(p) + (1.0 - y_true) * math_ops.log(1.0 - p))
    return reduction_ops.reduce_mean(per, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """``-sum(y_true * log(p), axis)`` for one-hot ``y_true``, as Keras.

    Probabilities are first normalized to sum to one along ``axis`` and clipped to
    ``[1e-7, 1 - 1e-7]``; with ``from_logits=True``, ``log p`` is ``log_softmax(logits)``.
    Shapes: ``(batch, classes)`` for both gives ``(batch,)``.
    """
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_crossentropy")
    if y_true.shape != y_pred.shape:
        raise ValueError(f"categorical_crossentropy: y_true (one-hot) must have y_pred's shape "
                         f"{y_pred.shape}, got {y_true.shape}; for integer labels use "
                         "sparse_categorical_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_pred.shape[axis]
    if from_logits:
        log_p = nn_ops.log_softmax(y_pred, axis=axis)
    else:
        p = y_pred / reduction_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
        eps = backend.epsilon()
        log_p = math_ops.log(math_ops.clip_by_value(p, eps, 1.0 - eps))
    return -reduction_ops.reduce_sum(y_true * log_p, axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1):
    """Cross-entropy with integer class labels, as ``keras.losses.sparse_categorical_crossentropy``.

    ``y_true``: integer labels of shape ``(batch,)`` (or ``(batch, 1)``); ``y_pred``:
    ``(batch, classes)`` probabilities or logits. Returns ``(batch,)``.

    Raises:
        ValueError: a label outside ``[0, classes)``.
    """
    y_pred = math_ops.floating(y_pred, "sparse_categorical_crossentropy")
    labels = np.asarray(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = labels[..., 0]
    classes = y_pred.shape[axis]
    if labels.shape != y_pred.shape[:-1] or (labels.size and (labels.min() < 0
                                                              or labels.max() >= classes)):
        raise ValueError(f"sparse_categorical_crossentropy: expected integer labels in [0, "
                         f"{classes}) of shape {y_pred.shape[:-1]}, got shape {labels.shape} "
                         f"with values {np.unique(labels)[:10]}")
    one_hot = np.eye(classes, dtype=y_pred.dtype)[labels.astype(np.int64)]
    return categorical_crossentropy(one_hot, y_pred, from_logits=from_logits, axis=axis)


MSE = mse = mean_squared_error
MAPE = mape = mean_absolute_percentage_error
MSLE = msle = mean_squared_logarithmic_error
logcosh = log_cosh
MAE = mae = mean_absolute_error


class Loss:
    """A loss function with a reduction over the batch, as ``keras.losses.Loss``.

    ``loss(y_true, y_pred)`` is the mean of the per-sample values (``"sum_over_batch_size"``);
    ``reduction="sum"`` sums them and ``reduction=None`` / ``"none"`` returns them.
    """

    fn = None

    def __init__(self, reduction="sum_over_batch_size", name=None, **fn_kwargs):
        if reduction not in ("sum_over_batch_size", "sum", "none", None):
            raise ValueError(f"reduction must be 'sum_over_batch_size', 'sum' or None, got "
                             f"{reduction!r}")
        self.reduction = reduction
        self.name = name or _snake(type(self).__name__)
        self.fn_kwargs = fn_kwargs

    def call(self, y_true, y_pred):
        return type(self).fn(y_true, y_pred, **self.fn_kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        if sample_weight is not None:
            values = values * convert_to_tensor(sample_weight, what=self.name)
        if self.reduction in ("none", None):
            return values
        total = reduction_ops.reduce_sum(values)
        if self.reduction == "sum":
            return total
        return total / float(max(values.size, 1))

    def get_config(self):
        """``{"name", "reduction"}`` and the function's arguments (``from_logits``, ``delta``,
        ...), as Keras's ``Loss.get_config``; a subclass adds its own (``{**super().get_config(),
        "threshold": self.threshold}``) and ``from_config`` calls ``cls(**config)``."""
        return {"name": self.name, "reduction": self.reduction, **self.fn_kwargs}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<mt.keras.losses.{type(self).__name__} {self.fn_kwargs or ''}>"


def _snake(name):
    import re
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class MeanSquaredError(Loss):
    """Mean of ``mean_squared_error`` over the batch, as ``keras.losses.MeanSquaredError``."""

    fn = staticmethod(mean_squared_error)

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error"):
        super().__init__(reduction, name)


class MeanAbsoluteError(Loss):
    """Mean of ``mean_absolute_error`` over the batch, as ``keras.losses.MeanAbsoluteError``."""

    fn = staticmethod(mean_absolute_error)

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error"):
        super().__init__(reduction, name)


class BinaryCrossentropy(Loss):
    """Mean of ``binary_crossentropy``, as ``keras.losses.BinaryCrossentropy``."""

    fn = staticmethod(binary_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy"):
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class CategoricalCrossentropy(Loss):
    """Mean of ``categorical_crossentropy``, as ``keras.losses.CategoricalCrossentropy``."""

    fn = staticmethod(categorical_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy"):
        super().__init__(reduction, name, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(Loss):
    """Mean of ``sparse_categorical_crossentropy``, as Keras's class of that name."""

    fn = staticmethod(sparse_categorical_crossentropy)

    def __init__(self, from_logits=False, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy"):
        super().__init__(reduction, name, from_logits=from_logits)


class Huber(Loss):
    """Mean of ``huber`` over the batch, as ``keras.losses.Huber`` (``delta=1.0``)."""

    fn = staticmethod(huber)

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss"):
        super().__init__(reduction, name, delta=delta)


class LogCosh(Loss):
    """Mean of ``log_cosh`` over the batch, as ``keras.losses.LogCosh``."""

    fn = staticmethod(log_cosh)

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh"):
        super().__init__(reduction, name)


class MeanAbsolutePercentageError(Loss):
    """Mean of ``mean_absolute_percentage_error``, as Keras's class of that name."""

    fn = staticmethod(mean_absolute_percentage_error)

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error"):
        super().__init__(reduction, name)


class MeanSquaredLogarithmicError(Loss):
    """Mean of ``mean_squared_logarithmic_error``, as Keras's class of that name."""

    fn = staticmethod(mean_squared_logarithmic_error)

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error"):
        super().__init__(reduction, name)


# -- Géron's chapter 17 (gengeron): the KL divergence of his sparse autoencoder -------------

def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[1e-7, 1]`` first, as
    ``keras.losses.kl_divergence`` (tf.keras 2 also names it ``kullback_leibler_divergence``,
    ``kld``, ``KLD``; Géron's ``KLDivergenceRegularizer`` calls it with a float target).

    Shapes: ``(batch, d)`` gives ``(batch,)``; a vector (or a float and a vector) a scalar.

    >>> import minitape as mt
    >>> mt.keras.losses.kl_divergence([[0.5, 0.5]], [[0.25, 0.75]]).numpy().round(6)
    array([0.143841], dtype=float32)
    """
    y_true, y_pred = _prepare(y_true, y_pred, "kl_divergence")
    eps = backend.epsilon()
    y_true = math_ops.clip_by_value(y_true, eps, 1.0)
    y_pred = math_ops.clip_by_value(y_pred, eps, 1.0)
    return reduction_ops.reduce_sum(y_true * math_ops.log(y_true / y_pred), axis=-1)


kullback_leibler_divergence = kld = KLD = kl_divergence


class KLDivergence(Loss):
    """Mean of ``kl_divergence`` over the batch, as ``keras.losses.KLDivergence``."""

    fn = staticmethod(kl_divergence)

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence"):
        super().__init__(reduction, name)


_BY_NAME = {
    "huber": huber, "log_cosh": log_cosh, "logcosh": log_cosh,
    "mean_absolute_percentage_error": mean_absolute_percentage_error,
    "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": mean_squared_logarithmic_error, "MSLE": mean_squared_logarithmic_error,
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error, "MSE": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "MAE": mean_absolute_error, "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "kl_divergence": kl_divergence, "kullback_leibler_divergence": kl_divergence,
    "kld": kl_divergence, "KLD": kl_divergence,
}


def get(identifier):
    """A loss from a name, a function or a ``Loss`` instance, as ``keras.losses.get``.

    Raises:
        ValueError: an unknown name (the known ones are listed).
    """
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(f"unknown loss {identifier!r}; use one of {sorted(_BY_NAME)}, a "
                     "mt.keras.losses class instance or a function (y_true, y_pred) -> loss")


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
