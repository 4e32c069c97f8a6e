"""``mt.keras.utils``: ``set_random_seed`` and ``to_categorical``, as ``keras.utils``."""

from __future__ import annotations

import random

import numpy as np

from ..ops import random_ops
from ..engine.tensor import Tensor

__all__ = ["set_random_seed", "to_categorical"]


def set_random_seed(seed):
    """Seed Python's ``random``, NumPy's global generator and minitape's, as Keras.

    As ``keras.utils.set_random_seed``: ``random.seed(seed)``, ``np.random.seed(seed)`` and
    ``mt.random.set_seed(seed)`` (TensorFlow's seed, which minitape's random ops, layer
    initializers, ``Dropout`` and ``fit``'s shuffling draw from). Afterwards a program makes
    the same random numbers on every run.

    Args:
        seed: an int.

    Raises:
        ValueError: ``seed`` is not an int (Keras's message).

    >>> import minitape as mt
    >>> mt.keras.utils.set_random_seed(42)
    >>> a = mt.random.normal([2])
    >>> mt.keras.utils.set_random_seed(42)
    >>> a.numpy().tolist() == mt.random.normal([2]).numpy().tolist()
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r} "
                         f"(of type {type(seed)})")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    random_ops.set_seed(seed)


def to_categorical(x, num_classes=None):
    """Integer class labels as one-hot rows, as ``keras.utils.to_categorical``.

    Args:
        x: integer labels of any shape (a Tensor, an ndarray or a list); a last axis of
            size 1 is dropped, as Keras.
        num_classes: the number of classes (default ``max(x) + 1``).

    Returns:
        A float32 NumPy array of shape ``x.shape + (num_classes,)``.

    Raises:
        ValueError: a label that is negative or not below ``num_classes``, or labels that
            are not integers.

    >>> import minitape as mt
    >>> mt.keras.utils.to_categorical([0, 2], num_classes=3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    labels = np.asarray(x.numpy() if isinstance(x, Tensor) else x)
    if labels.dtype.kind == "f" and np.all(labels == np.round(labels)):
        labels = labels.astype(np.int64)
    if labels.dtype.kind not in "iu":
        raise ValueError(f"to_categorical expects integer class labels, got dtype "
                         f"{labels.dtype}")
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must be in [0, {num_classes}) "
                         f"(num_classes={num_classes}), got values from {labels.min()} to "
                         f"{labels.max()}")
    return np.eye(num_classes, dtype=np.float32)[labels]


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it.
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
