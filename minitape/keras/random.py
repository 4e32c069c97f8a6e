"""``mt.keras.random``: random Tensors with Keras 3's names, as ``keras.random``.

Keras 3's guides draw their noise with ``keras.random.normal(shape, seed=...)`` (the VAE's
sampling layer, the GAN's latent vectors); ``seed`` is one of:

- ``None``: the global generator of ``mt.random`` (``mt.random.set_seed`` /
  ``mt.keras.utils.set_random_seed`` make runs repeatable);
- an int: the same numbers at every call (Keras 3 draws from that seed afresh each time);
- a ``SeedGenerator``: a generator of its own, so successive calls differ and the whole
  sequence repeats from the generator's seed.

The values come from NumPy's ``Generator`` (as ``mt.random``), not from Keras's algorithm:
the same seed gives other numbers than in Keras.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..engine.tensor import Tensor
from ..ops import random_ops
from ..ops.array_ops import as_dims

__all__ = ["SeedGenerator", "dropout", "normal", "uniform"]


class SeedGenerator:
    """A random generator with its own state, as ``keras.random.SeedGenerator``.

    Args:
        seed: an int (default None: drawn from ``mt.random``'s global generator, so that
            ``mt.keras.utils.set_random_seed`` still makes a run repeatable).

    >>> import minitape as mt
    >>> g = mt.keras.random.SeedGenerator(1337)
    >>> a = mt.keras.random.normal((2,), seed=g)
    >>> b = mt.keras.random.normal((2,), seed=g)
    >>> bool((a.numpy() == b.numpy()).all())        # two calls: two draws
    False
    >>> g2 = mt.keras.random.SeedGenerator(1337)
    >>> bool((mt.keras.random.normal((2,), seed=g2).numpy() == a.numpy()).all())
    True
    """

    def __init__(self, seed=None, name=None, **kwargs):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"SeedGenerator: seed must be an int or None, got "
                            f"{type(seed).__name__} {seed!r:.40}")
        if seed is None:
            seed = int(random_ops._rng(None).integers(2**31))
        self.seed = int(seed)
        self.name = name or "seed_generator"
        self._generator = np.random.default_rng(self.seed)

    def __repr__(self):
        return f"<SeedGenerator seed={self.seed}>"


def _generator(seed, what):
    if isinstance(seed, SeedGenerator):
        return seed._generator
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        return random_ops._rng(None if seed is None else int(seed))
    raise TypeError(f"{what}: seed must be None, an int or a keras.random.SeedGenerator, got "
                    f"{type(seed).__name__} {seed!r:.40}")


def _float_dtype(dtype, what):
    from . import backend
    dtype = dtypes.check_dtype(dtype if dtype is not None else backend.floatx(), what)
    if dtype.kind != "f":
        raise TypeError(f"{what}: dtype must be floating (e.g. 'float32'), got {dtype.name}")
    return dtype


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of a normal distribution, as ``keras.random.normal``.

    Args:
        shape: a tuple of ints (0-d int Tensors too, such as ``tf.shape(x)[0]``).
        mean, stddev: numbers.
        dtype: a floating dtype, default ``mt.keras.backend.floatx()``.
        seed: None, an int or a ``SeedGenerator`` (see the module).

    Returns:
        A Tensor of ``shape``, not recorded by any tape (a constant, as in Keras).

    Raises:
        TypeError: a non-floating dtype, a seed of another kind.
        ValueError: a negative ``stddev``, or a mean or stddev that is not finite.
    """
    what = "keras.random.normal"
    dtype = _float_dtype(dtype, what)
    mean = random_ops._finite(mean, what, "mean")
    stddev = random_ops._finite(stddev, what, "stddev")
    if stddev < 0:
        raise ValueError(f"{what}: stddev must be 0 or more, got stddev={stddev}")
    value = _generator(seed, what).normal(mean, stddev, as_dims(shape, what))
    return Tensor(np.asarray(value).astype(dtype))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of a uniform distribution on ``[minval, maxval)``, as ``keras.random.uniform``.

    Arguments as ``normal``.

    Raises:
        ValueError: ``minval`` not below ``maxval``, or a bound that is not finite.
    """
    what = "keras.random.uniform"
    dtype = _float_dtype(dtype, what)
    low = random_ops._finite(minval, what, "minval")
    high = random_ops._finite(maxval, what, "maxval")
    if not low < high:
        raise ValueError(f"{what}: minval must be below maxval, got minval={low}, maxval={high}")
    value = _generator(seed, what).uniform(low, high, as_dims(shape, what))
    return Tensor(np.asarray(value).astype(dtype))


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zero each entry with probability ``rate`` and scale the others by ``1 / (1 - rate)``,
    as ``keras.random.dropout`` (Keras 3's subclassing guide's ``CustomDropout``).

    The kept entries are ``inputs * mask / (1 - rate)``, a product that the tapes record,
    so gradients flow to them. ``noise_shape`` (broadcast against the input's shape) drops
    whole rows or channels; ``seed`` as ``normal``.

    Raises:
        ValueError: ``rate`` outside ``[0, 1)``.
    """
    what = "keras.random.dropout"
    rate = random_ops._finite(rate, what, "rate")
    if not 0 <= rate < 1:
        raise ValueError(f"{what}: rate must be in [0, 1), got rate={rate}")
    from ..engine.tensor import convert_to_tensor
    x = convert_to_tensor(inputs)
    shape = tuple(x.shape) if noise_shape is None else as_dims(noise_shape, what)
    keep = _generator(seed, what).random(shape) >= rate
    mask = Tensor((keep / (1.0 - rate)).astype(x.dtype))
    return x * mask


def __getattr__(name):
    # Only for a name this module lacks: say whether Keras has it (``minitape/_tf_names.py``).
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
