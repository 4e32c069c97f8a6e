"""Random numbers from one NumPy ``Generator``; ``set_seed`` makes a run repeatable."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..engine.tensor import Tensor
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


def _finite(value, what, arg):
    """A finite Python float from a number or a one-element Tensor, else a clear error."""
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{what}: {arg} must be a number, got {type(value).__name__} "
                        f"{value!r:.40}")
    if not np.isfinite(value):
        raise ValueError(f"{what}: {arg} must be a finite number, got {arg}={value}")
    return float(value)


def normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples from a normal distribution, as ``tf.random.normal``.

    Raises:
        ValueError: a negative size, a mean or stddev that is NaN or infinite, or a negative
            stddev. TypeError: a non-floating ``dtype``.
    """
    dtype = dtypes.check_dtype(dtype, "random.normal")
    if dtype.kind != "f":
        raise TypeError(f"random.normal: dtype must be floating (e.g. mt.float32), got "
                        f"dtype={dtype.name}")
    mean = _finite(mean, "random.normal", "mean")
    stddev = _finite(stddev, "random.normal", "stddev")
    if stddev < 0:
        raise ValueError(f"random.normal: stddev must be 0 or more, got stddev={stddev}")
    value = _rng(seed).normal(mean, stddev, as_dims(shape, "random.normal"))
    return Tensor(value.astype(dtype), name=name)


def uniform(shape, minval=0.0, maxval=1.0, dtype=dtypes.float32, seed=None, name=None):
    """Samples from ``[minval, maxval)``, as ``tf.random.uniform``.

    Raises:
        ValueError: a negative size, a bound that is NaN or infinite, or (for an integer
            dtype) ``minval >= maxval``. TypeError: a bool or non-numeric ``dtype``.
    """
    dtype = dtypes.check_dtype(dtype, "random.uniform")
    if dtype.kind == "b":
        raise TypeError("random.uniform: dtype must be floating or integer, got dtype=bool")
    shape = as_dims(shape, "random.uniform")
    low = _finite(minval, "random.uniform", "minval")
    high = _finite(maxval, "random.uniform", "maxval")
    if dtype.kind in "iu":
        if not int(low) < int(high):
            raise ValueError(f"random.uniform: an integer range needs minval < maxval, got "
                             f"minval={minval!r}, maxval={maxval!r}")
        value = _rng(seed).integers(int(low), int(high), shape)
    else:
        value = _rng(seed).uniform(low, high, shape)
    return Tensor(value.astype(dtype), name=name)
