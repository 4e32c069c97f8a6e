"""``mt.keras.backend``: Keras's global settings, as ``tf.keras.backend``.

- ``floatx()`` / ``set_floatx(dtype)``: the dtype of the weights that layers make when not
  given a ``dtype`` (``"float32"`` unless changed), and of what initializers return;
- ``epsilon()`` / ``set_epsilon(value)``: the small number Keras adds to avoid dividing by
  zero (``1e-07``); the crossentropy losses clip probabilities to ``[epsilon, 1 - epsilon]``;
- ``get_value(x)`` / ``set_value(x, value)``: read a Variable (or Tensor) as NumPy, assign a
  Variable (``K.set_value(model.optimizer.learning_rate, 0.01)`` in Keras 2 code);
- ``clear_session()``: forget Keras's global state; in minitape, the counters behind the
  default layer names, so the next ``Dense`` is named ``dense`` again.

Keras keeps these in ``keras/src/backend/config.py`` and ``keras/src/backend/common/
global_state.py``.
"""

from __future__ import annotations

__all__ = ["floatx", "set_floatx", "epsilon", "set_epsilon", "clear_session", "image_data_format",
           "get_value", "set_value", "random_normal", "random_uniform"]

_FLOATX = "float32"
_EPSILON = 1e-7
_FLOAT_TYPES = ("float16", "float32", "float64")


def floatx() -> str:
    """The default float dtype's name, ``"float32"`` unless ``set_floatx`` changed it.

    >>> import minitape as mt
    >>> mt.keras.backend.floatx()
    'float32'
    """
    return _FLOATX


def set_floatx(value) -> None:
    """Set the default float dtype: ``"float16"``, ``"float32"`` or ``"float64"``.

    Layers made afterwards without a ``dtype`` (``Dense``, ``Conv2D``, ``Layer`` subclasses)
    make their weights in this dtype, and cast their inputs to it; layers made before keep
    theirs. As Keras, prefer the layer's ``dtype=`` argument for one layer.

    Raises:
        ValueError: another value (Keras's message).
    """
    global _FLOATX
    import numpy as np
    try:
        name = np.dtype(value).name if not isinstance(value, str) else value
    except TypeError:
        name = value
    if name not in _FLOAT_TYPES:
        raise ValueError(f"Unknown `floatx` value: {value!r}. Expected one of "
                         f"{set(_FLOAT_TYPES)} (minitape has no bfloat16)")
    _FLOATX = str(name)


def epsilon() -> float:
    """The fuzz factor, ``1e-07`` unless ``set_epsilon`` changed it.

    >>> import minitape as mt
    >>> mt.keras.backend.epsilon()
    1e-07
    """
    return _EPSILON


def set_epsilon(value) -> None:
    """Set the fuzz factor returned by ``epsilon()``.

    Raises:
        TypeError: a value that is not a number. ValueError: a negative one.
    """
    global _EPSILON
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"set_epsilon expects a number such as 1e-7, got {value!r:.40}")
    if value < 0:
        raise ValueError(f"set_epsilon expects a number >= 0, got {value!r}")
    _EPSILON = float(value)


def image_data_format() -> str:
    """``"channels_last"``: minitape's images are NHWC, as Keras's default."""
    return "channels_last"


def clear_session(free_memory=True) -> None:
    """Reset Keras's global state, as ``tf.keras.backend.clear_session``.

    In minitape: the default layer names start again (``dense``, ``dense_1``, ...). Models
    and Variables you still hold are not changed. ``free_memory`` is accepted (minitape's
    memory is Python's).

    >>> import minitape as mt
    >>> mt.keras.backend.clear_session()
    >>> mt.keras.layers.Dense(1).name
    'dense'
    """
    from .. import module
    with module._name_lock:
        module._name_counts.clear()


def get_value(x):
    """``x`` (a Variable, a Tensor, a number) as a NumPy value, as ``tf.keras.backend.get_value``.

    >>> import minitape as mt
    >>> mt.keras.backend.get_value(mt.Variable(0.5))
    np.float32(0.5)
    """
    return x.numpy() if hasattr(x, "numpy") else x


def set_value(x, value):
    """``x.assign(value)`` for a Variable ``x``, as ``tf.keras.backend.set_value``.

    Raises:
        TypeError: ``x`` is not a Variable (for example an optimizer's learning rate that is
            a schedule: it cannot be set).
    """
    from ..engine.tensor import Variable
    if not isinstance(x, Variable):
        raise TypeError(f"set_value: x must be a Variable, got {type(x).__name__} {x!r:.60}; "
                        "an optimizer created with a learning rate schedule has no learning "
                        "rate to set")
    x.assign(value)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of a normal distribution, as Keras 2's ``tf.keras.backend.random_normal``
    (Keras's subclassing guide draws the VAE's ``epsilon`` with it): ``mt.keras.random.normal``
    under its older name; ``seed`` an int (the same numbers each call) or None.

    >>> import minitape as mt
    >>> mt.keras.backend.random_normal(shape=(2, 3)).shape
    (2, 3)
    """
    from . import random
    return random.normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of ``[minval, maxval)``, as Keras 2's ``tf.keras.backend.random_uniform``
    (``mt.keras.random.uniform`` under its older name)."""
    from . import random
    return random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=seed)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
