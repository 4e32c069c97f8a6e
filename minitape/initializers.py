"""Initializers: the first values of a layer's weights, as ``tf.keras.initializers``.

An initializer is a callable object: ``init(shape, dtype=None)`` returns a Tensor of that
shape (``dtype`` None means ``mt.keras.backend.floatx()``, float32 unless changed). A layer
calls it once, when it builds::

    mt.keras.layers.Dense(3, kernel_initializer=mt.keras.initializers.HeNormal())
    mt.keras.layers.Dense(3, kernel_initializer="he_normal")       # the same, by name

The names and defaults are Keras 3's (``keras/src/initializers/``): ``Zeros``, ``Ones``,
``Constant(value)``, ``RandomNormal(mean=0.0, stddev=0.05)``, ``RandomUniform(minval=-0.05,
maxval=0.05)``, ``TruncatedNormal(mean=0.0, stddev=0.05)`` (values further than two
standard deviations from the mean are drawn again), ``VarianceScaling`` and the schemes made
from it (with ``fan_in``, ``fan_out`` from the shape, as Keras's ``compute_fans``)::

    GlorotUniform   uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out))
    GlorotNormal    truncated normal, stddev = sqrt(2 / (fan_in + fan_out)) / 0.8796...
    HeUniform       uniform, limit = sqrt(6 / fan_in)
    HeNormal        truncated normal, stddev = sqrt(2 / fan_in) / 0.8796...
    LecunUniform    uniform, limit = sqrt(3 / fan_in)
    LecunNormal     truncated normal, stddev = sqrt(1 / fan_in) / 0.8796...

(0.87962566103423978 is the standard deviation of a unit normal truncated at two standard
deviations: dividing by it gives the truncated draws the intended spread.) ``Identity(gain)``
(2-D only) and ``Orthogonal(gain)`` (the Q of a QR factorization) complete the list. Each
name also exists in snake case (``glorot_uniform`` is ``GlorotUniform``), as in Keras.

Random initializers draw from minitape's generator (``mt.random.set_seed`` makes them
repeatable); with ``seed=`` an initializer gives the same values at every call, as Keras 3's.
TensorFlow's own ``tf.random_normal_initializer``, ``tf.random_uniform_initializer``,
``tf.zeros_initializer``, ``tf.ones_initializer`` and ``tf.constant_initializer`` are
``RandomNormal``, ``RandomUniform``, ``Zeros``, ``Ones`` and ``Constant`` here (the same
defaults).
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes
from .ops import random_ops
from .engine.tensor import Tensor

__all__ = [
    "Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
    "TruncatedNormal", "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeUniform",
    "HeNormal", "LecunUniform", "LecunNormal", "Identity", "Orthogonal", "get", "serialize",
    "deserialize",
]

_TRUNCATED_STDDEV = 0.87962566103423978   # the stddev of N(0, 1) truncated to [-2, 2]


def _dtype(dtype, who):
    if dtype is None:
        from .keras import backend
        return np.dtype(backend.floatx())
    dtype = dtypes.check_dtype(dtype, who)
    return dtype


def _shape(shape, who):
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: shape must be a list or tuple of ints, got {shape!r:.60}") \
            from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{who}: shape must not have negative sizes, got {dims}")
    return dims


def _floating(dtype, who):
    if dtype.kind != "f":
        raise TypeError(f"{who}: dtype must be floating (e.g. mt.float32) for random values, "
                        f"got {dtype.name}")
    return dtype


def compute_fans(shape):
    """``(fan_in, fan_out)`` of a weight shape, as Keras's ``compute_fans``.

    ``()`` -> (1, 1); ``(n,)`` -> (n, n); ``(in, out)`` -> (in, out); a convolution kernel
    ``(k1, ..., in, out)`` -> ``(in * k1 * ..., out * k1 * ...)``.
    """
    shape = tuple(shape)
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class of initializers, as ``tf.keras.initializers.Initializer``.

    Subclass it and write ``__call__(self, shape, dtype=None)`` returning a Tensor (or an
    array) of ``shape``; ``get_config`` returns the constructor's arguments, so that
    ``cls.from_config(init.get_config())`` makes the same initializer.
    """

    def __call__(self, shape, dtype=None):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(self, shape, "
                                  "dtype=None)")

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def clone(self):
        return type(self).from_config(self.get_config())

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros, as ``tf.keras.initializers.Zeros`` (and ``tf.zeros_initializer``).

    >>> import minitape as mt
    >>> mt.keras.initializers.Zeros()((2,))
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([0., 0.], dtype=float32)>
    """

    def __call__(self, shape, dtype=None):
        return Tensor(np.zeros(_shape(shape, "Zeros"), _dtype(dtype, "Zeros")))


class Ones(Initializer):
    """All ones, as ``tf.keras.initializers.Ones`` (and ``tf.ones_initializer``)."""

    def __call__(self, shape, dtype=None):
        return Tensor(np.ones(_shape(shape, "Ones"), _dtype(dtype, "Ones")))


class Constant(Initializer):
    """Every element ``value``, as ``tf.keras.initializers.Constant`` (and
    ``tf.constant_initializer``).

    ``value`` is a number, or (as ``tf.constant_initializer``) a list or array with as many
    elements as the shape, reshaped to it.

    Raises:
        TypeError: a value that is not numbers. ValueError: a list whose size does not fit.

    >>> import minitape as mt
    >>> mt.constant_initializer([1., 2., 3., 4.])([2, 2])
    <mt.Tensor: shape=(2, 2), dtype=float32, numpy=
    array([[1., 2.],
           [3., 4.]], dtype=float32)>
    """

    def __init__(self, value=0.0):
        array = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"Constant: value must be a number or a list of numbers, got "
                            f"{value!r:.60}")
        self.value = value if array.ndim == 0 and not isinstance(value, Tensor) else \
            array.tolist()

    def __call__(self, shape, dtype=None):
        shape, dtype = _shape(shape, "Constant"), _dtype(dtype, "Constant")
        array = np.asarray(self.value, dtype=dtype)
        if array.ndim == 0:
            return Tensor(np.full(shape, array, dtype))
        if array.size != int(np.prod(shape)):
            raise ValueError(f"Constant: the value has {array.size} elements but the shape "
                             f"{shape} has {int(np.prod(shape))}")
        return Tensor(array.reshape(shape).copy())

    def get_config(self):
        return {"value": self.value}


class _Random(Initializer):
    """What the random initializers share: ``seed`` (None: minitape's generator)."""

    def __init__(self, seed=None):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"{type(self).__name__}: seed must be an int or None, got "
                            f"{seed!r:.40}")
        self.seed = seed

    def get_config(self):
        return {"seed": self.seed}


class RandomNormal(_Random):
    """Normal samples, as ``tf.keras.initializers.RandomNormal`` (and
    ``tf.random_normal_initializer``): ``mean=0.0``, ``stddev=0.05``.

    >>> import minitape as mt
    >>> init = mt.keras.initializers.RandomNormal(stddev=1.0, seed=0)
    >>> bool((init((3,)).numpy() == init((3,)).numpy()).all())   # a seed repeats (Keras 3)
    True
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def __call__(self, shape, dtype=None):
        dtype = _floating(_dtype(dtype, "RandomNormal"), "RandomNormal")
        return random_ops.normal(_shape(shape, "RandomNormal"), self.mean, self.stddev, dtype,
                                 seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


class RandomUniform(_Random):
    """Uniform samples in ``[minval, maxval)``, as ``tf.keras.initializers.RandomUniform``
    (and ``tf.random_uniform_initializer``): ``minval=-0.05``, ``maxval=0.05``."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = float(minval), float(maxval)

    def __call__(self, shape, dtype=None):
        dtype = _dtype(dtype, "RandomUniform")
        return random_ops.uniform(_shape(shape, "RandomUniform"), self.minval, self.maxval,
                                  dtype, seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, **super().get_config()}


def _truncated_normal(shape, mean, stddev, dtype, seed):
    """Normal samples, those further than two stddevs from ``mean`` drawn again."""
    rng = random_ops._rng(seed)
    values = rng.normal(0.0, 1.0, shape)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = rng.normal(0.0, 1.0, int(outside.sum()))
        outside = np.abs(values) > 2.0
    return Tensor((mean + stddev * values).astype(dtype))


class TruncatedNormal(_Random):
    """Normal samples within two standard deviations of the mean, as
    ``tf.keras.initializers.TruncatedNormal``: ``mean=0.0``, ``stddev=0.05`` (the stddev of
    the normal before truncation)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = float(mean), float(stddev)

    def __call__(self, shape, dtype=None):
        dtype = _floating(_dtype(dtype, "TruncatedNormal"), "TruncatedNormal")
        return _truncated_normal(_shape(shape, "TruncatedNormal"), self.mean, self.stddev,
                                 dtype, self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


class VarianceScaling(_Random):
    """Samples whose variance is ``scale / n``, as ``tf.keras.initializers.VarianceScaling``.

    ``n`` is ``fan_in``, ``fan_out`` or their mean (``mode="fan_avg"``);
    ``distribution`` is ``"truncated_normal"`` (the default; ``"normal"`` means the same),
    ``"untruncated_normal"`` or ``"uniform"`` (limit ``sqrt(3 * scale / n)``).

    Raises:
        ValueError: ``scale <= 0``, an unknown ``mode`` or ``distribution`` (Keras's
            messages).
    """

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        super().__init__(seed)
        if not float(scale) > 0.0:
            raise ValueError(f"Argument `scale` must be positive float. Received: scale={scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode}. Please use one of "
                             "{'fan_in', 'fan_out', 'fan_avg'}")
        distribution = str(distribution).lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(f"Invalid `distribution` argument: {distribution}. Please use one "
                             "of {'uniform', 'truncated_normal', 'untruncated_normal'}")
        self.scale, self.mode, self.distribution = float(scale), mode, distribution

    def __call__(self, shape, dtype=None):
        who = type(self).__name__
        shape = _shape(shape, who)
        dtype = _floating(_dtype(dtype, who), who)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}
        scale = self.scale / max(1.0, n[self.mode])
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * scale)
            return random_ops.uniform(shape, -limit, limit, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        return _truncated_normal(shape, 0.0, math.sqrt(scale) / _TRUNCATED_STDDEV, dtype,
                                 self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                **super().get_config()}


def _scheme(name, scale, mode, distribution, doc):
    """A ``VarianceScaling`` with fixed arguments, as Keras's ``GlorotUniform``, ..."""
    def __init__(self, seed=None):
        VarianceScaling.__init__(self, scale, mode, distribution, seed)

    def get_config(self):
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": doc, "__module__": __name__})


GlorotUniform = _scheme("GlorotUniform", 1.0, "fan_avg", "uniform", """Glorot (Xavier) uniform,
    as ``tf.keras.initializers.GlorotUniform``: uniform in ``[-limit, limit]``,
    ``limit = sqrt(6 / (fan_in + fan_out))``. The default kernel initializer of ``Dense``.""")
GlorotNormal = _scheme("GlorotNormal", 1.0, "fan_avg", "truncated_normal", """Glorot (Xavier)
    normal, as ``tf.keras.initializers.GlorotNormal``: truncated normal with
    ``stddev = sqrt(2 / (fan_in + fan_out))`` (before truncation, corrected for it).""")
HeUniform = _scheme("HeUniform", 2.0, "fan_in", "uniform", """He uniform, as
    ``tf.keras.initializers.HeUniform``: uniform in ``[-limit, limit]``,
    ``limit = sqrt(6 / fan_in)``.""")
HeNormal = _scheme("HeNormal", 2.0, "fan_in", "truncated_normal", """He normal, as
    ``tf.keras.initializers.HeNormal``: truncated normal with ``stddev = sqrt(2 / fan_in)``.""")
LecunUniform = _scheme("LecunUniform", 1.0, "fan_in", "uniform", """LeCun uniform, as
    ``tf.keras.initializers.LecunUniform``: ``limit = sqrt(3 / fan_in)``.""")
LecunNormal = _scheme("LecunNormal", 1.0, "fan_in", "truncated_normal", """LeCun normal, as
    ``tf.keras.initializers.LecunNormal``: truncated normal, ``stddev = sqrt(1 / fan_in)``.""")


class Identity(Initializer):
    """``gain`` times the identity matrix, as ``tf.keras.initializers.Identity`` (2-D shapes
    only; a non-square shape gets ones on its main diagonal).

    Raises:
        ValueError: a shape that is not 2-D (Keras's message).
    """

    def __init__(self, gain=1.0):
        self.gain = float(gain)

    def __call__(self, shape, dtype=None):
        shape = _shape(shape, "Identity")
        if len(shape) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices. "
                             f"Received: shape={shape} of rank {len(shape)}.")
        return Tensor((self.gain * np.eye(*shape)).astype(_dtype(dtype, "Identity")))

    def get_config(self):
        return {"gain": self.gain}


class Orthogonal(_Random):
    """An orthogonal matrix (times ``gain``), as ``tf.keras.initializers.Orthogonal``.

    The shape is seen as a matrix ``(prod(shape[:-1]), shape[-1])``; a normal matrix is
    factored as ``Q R`` and ``Q`` (its columns signed by ``R``'s diagonal, so the result is
    uniformly distributed) is reshaped to ``shape``. Its rows (or columns, whichever are
    fewer) are orthonormal.

    Raises:
        ValueError: a shape of fewer than 2 dimensions.
    """

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = float(gain)

    def __call__(self, shape, dtype=None):
        shape = _shape(shape, "Orthogonal")
        dtype = _floating(_dtype(dtype, "Orthogonal"), "Orthogonal")
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. "
                             f"Received: shape={shape} of rank {len(shape)}.")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        a = random_ops._rng(self.seed).normal(0.0, 1.0, (max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return Tensor((self.gain * q).reshape(shape).astype(dtype))

    def get_config(self):
        return {"gain": self.gain, **super().get_config()}


# Keras's snake-case aliases: ``keras.initializers.glorot_uniform`` is the class.
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, glorot_uniform, glorot_normal = VarianceScaling, GlorotUniform, GlorotNormal
he_uniform, he_normal, lecun_uniform, lecun_normal = HeUniform, HeNormal, LecunUniform, LecunNormal
identity, orthogonal = Identity, Orthogonal
IdentityInitializer, OrthogonalInitializer = Identity, Orthogonal

_BY_NAME = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "variance_scaling": VarianceScaling, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_uniform": HeUniform, "he_normal": HeNormal,
    "lecun_uniform": LecunUniform, "lecun_normal": LecunNormal, "identity": Identity,
    "orthogonal": Orthogonal,
    # (Keras's short aliases: ``Embedding``'s default, ``embeddings_initializer="uniform"``)
    "uniform": RandomUniform, "normal": RandomNormal,
}
_BY_NAME.update({cls.__name__.lower(): cls for cls in list(_BY_NAME.values())})


def get(identifier):
    """An initializer from a name, a config dict or a callable, as
    ``tf.keras.initializers.get``.

    Args:
        identifier: a name (``"glorot_uniform"``, ``"he_normal"``, ``"zeros"``,
            ``"GlorotUniform"``, ...: a new initializer with Keras's defaults), a
            ``{"class_name": ..., "config": {...}}`` dict, an initializer or any callable
            ``(shape, dtype)`` (returned as it is), or None (returns None).

    Raises:
        ValueError: an unknown name. TypeError: anything else.

    >>> import minitape as mt
    >>> mt.keras.initializers.get("he_normal")
    HeNormal(seed=None)
    """
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()        # the class itself (kernel_initializer=HeNormal), as Keras
    if identifier is None or callable(identifier):
        return identifier
    config = {}
    if isinstance(identifier, dict) and "class_name" in identifier:
        config = dict(identifier.get("config") or {})
        identifier = identifier["class_name"]
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_NAME.get(identifier.lower())
        if cls is None:
            names = sorted(n for n in _BY_NAME if "_" in n or n in ("zeros", "ones"))
            raise ValueError(f"Could not interpret initializer identifier: {identifier!r}; "
                             f"minitape knows {names}")
        return cls(**config)
    raise TypeError(f"Could not interpret initializer identifier: {identifier!r:.60} (pass a "
                    "name such as 'glorot_uniform', an initializer or a callable (shape, "
                    "dtype))")


def serialize(initializer):
    """``{"class_name": ..., "config": ...}``, as ``tf.keras.initializers.serialize``."""
    return {"class_name": type(initializer).__name__, "config": initializer.get_config()}


def deserialize(config):
    """The initializer that ``serialize`` described."""
    return get(config)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
