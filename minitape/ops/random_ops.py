"""Random numbers from one NumPy ``Generator``; ``set_seed`` makes a run repeatable."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from .array_ops import as_dims

# Made on first use: ``np.random`` loads its own modules, which would slow ``import minitape``.
_generator = None


def set_seed(seed):
    """Reset the global generator, as ``tf.random.set_seed``: later draws repeat exactly."""
    global _generator
    _generator = np.random.default_rng(seed)


def _rng(seed):
    global _generator
    if seed is not None:
        return np.random.default_rng(seed)
    if _generator is None:
        _generator = np.random.default_rng()
    return _generator


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples from a normal distribution, as ``tf.random.normal``."""
    dtype = dtypes.as_dtype(dtype)
    value = _rng(seed).normal(float(mean), float(stddev), as_dims(shape, "random.normal"))
    return Tensor(value.astype(dtype), name=name)


def uniform(shape, minval=0.0, maxval=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples from ``[minval, maxval)``, as ``tf.random.uniform``."""
    dtype = dtypes.as_dtype(dtype)
    shape = as_dims(shape, "random.uniform")
    if dtype.kind in "iu":
        value = _rng(seed).integers(int(minval), int(maxval), shape)
    else:
        value = _rng(seed).uniform(float(minval), float(maxval), shape)
    return Tensor(value.astype(dtype), name=name)
