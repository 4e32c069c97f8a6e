"""minitape: TensorFlow's gradient tape, rebuilt on NumPy to be read and taught.

>>> import minitape as mt
>>> x = mt.Variable(3.0)
>>> with mt.GradientTape() as tape:
...     y = x**2
>>> tape.gradient(y, x)
<mt.Tensor: shape=(), dtype=float32, numpy=6.0>

Where to read: ``engine/`` (the tape and the backward walk, in the order its docstring
gives), ``ops/`` (every op next to its gradient), ``functional.py`` (gradient functions and
transforms).
The renderers in ``minitape.viz`` load graphviz, matplotlib and ipywidgets only when used.
"""

from . import dtypes
from .dtypes import float16, float32, float64, int32, int64, complex64, complex128
from .dtypes import bool_ as bool  # noqa: A001 (TensorFlow's name: mt.bool)
from .engine.tensor import Tensor, Variable, convert_to_tensor
from .ops import conversions  # noqa: F401  (gives Tensor np.asarray(t), float(t), bool(t), ...)
from .ops.constant_op import constant
from .engine.tape import GradientTape, UnconnectedGradients
from .engine.registry import RegisterGradient, no_gradient
from .custom import custom_gradient, primitive
from .ops.math_ops import (
    add, add_n, subtract, multiply, divide, pow, negative, abs, sign, exp, log, sqrt, square,
    maximum, minimum, round, clip_by_value, clip_by_norm, cast, matmul,
)
from .ops.array_ops import (
    reshape, transpose, expand_dims, squeeze, concat, stack, unstack, pad, tile, gather, where,
    einsum, broadcast_to, identity, stop_gradient, shape, size, linspace, range, eye, zeros,
    ones, zeros_like, ones_like, fill,
)
from .ops.linalg_ops import tensordot
from .ops import variable_ops  # noqa: F401  (gives Variable v[key].assign and scatter_nd_*)
from . import printing  # noqa: F401  (gives Tensor its repr, str and format)
# (TensorFlow's top-level aliases of these tf.math functions: tf.sin is tf.math.sin.)
from .ops.math_ops import (
    sin, cos, tan, tanh, sigmoid, equal, not_equal, greater, greater_equal, less, less_equal,
    asin, acos, atan, atan2, sinh, cosh, asinh, acosh, atanh, floor,
)
from .ops.math_ops import floordiv
from .ops.reduction_ops import reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod, norm
from .ops.reduction_ops import reduce_logsumexp, cumsum, argmax, argmin
from .ops.array_ops import split, reverse, boolean_mask, one_hot
from . import math, nn, linalg, random, image, autodiff
from .functional import (
    gradients_function, value_and_gradients_function, implicit_gradients,
    implicit_value_and_gradients, grad, value_and_grad, jacobian, hessian, jvp, vjp,
)
from .module import Module
from . import layers
from . import optimizers
from . import keras
from . import data
from . import errors, config, train, saved_model
from . import debugging
from .config import device
from .function import function, TensorSpec
from .ops.grid_ops import meshgrid

# -- issue 32 (kerasB): tensor basics, initializers, control flow ------------------------------
from .dtypes import int8, int16, uint8, uint16, uint32, uint64
from .tensor_shape import TensorShape
from .ops.array_ops import rank
from . import initializers
from .initializers import (
    RandomUniform as random_uniform_initializer, RandomNormal as random_normal_initializer,
    Zeros as zeros_initializer, Ones as ones_initializer, Constant as constant_initializer,
)
from .control_flow import TensorArray, while_loop, IndexedSlices

newaxis = None   # as tf.newaxis (and np.newaxis): x[:, mt.newaxis] adds an axis

#: The TensorFlow version whose API minitape follows (what ``tf.__version__`` would say);
#: ``__version__`` below is minitape's own.
tensorflow_version = "2.21.0"
from . import version  # noqa: E402  (tf.version.VERSION: minitape's own version)
# -- end of issue 32 (kerasB) ------------------------------------------------------------------

# -- "Dive into Deep Learning", chapters 3-6 (d2lqa) -------------------------------------------
from . import distribute  # noqa: E402  (tf.distribute.MirroredStrategy: one replica, the CPU)
# TensorFlow's short names of Keras's modules: tf.losses is tf.keras.losses, tf.metrics is
# tf.keras.metrics (d2l 0.17's tf.losses.sparse_categorical_crossentropy).
losses = keras.losses
metrics = keras.metrics
# -- end of d2lqa ------------------------------------------------------------------------------

# -- "Dive into Deep Learning", chapter 11 (d2lattn) -------------------------------------------
from .ops.array_ops import repeat, sort  # noqa: E402  (masked_softmax, MultiHeadAttention)
from .ops.math_ops import logical_and, logical_or, logical_not  # noqa: E402  (Geron ch. 16)
# -- end of d2lattn ----------------------------------------------------------------------------

__version__ = version.VERSION

debugging.install_numpy_warnings()   # NumPy's warnings from ops point at the learner's line

# Every new tape gets mt.viz's record (names, source lines, the last pass) unless a program
# switches it off: see ``mt.config.record_source_lines``.
config.record_source_lines(True)


def _draw_tape(tape, include=None, exclude=None):
    """A tape shown as a notebook cell's last expression is drawn (the engine draws nothing
    itself: this is attached to it here, as the ops attach the Tensor's operators)."""
    try:
        from .viz import draw_tape
        return draw_tape(tape)._repr_mimebundle_(include=include, exclude=exclude)
    except (ImportError, RuntimeError) as e:  # no graphviz, or no `dot` binary on PATH
        return {"text/plain": f"{tape!r} (cannot draw it: {e}; see the README's set-up)"}


from .engine import tape as _tape  # noqa: E402

_tape.GradientTape._repr_mimebundle_ = _draw_tape

# The engine's modules kept their old import paths: ``minitape.tape`` is ``minitape.engine.tape``
# (the same module object, so ``from minitape.tape import TapeObserver`` keeps working).
import sys as _sys  # noqa: E402
from .engine import tensor, recording, registry, tape, backward, forward, jacobians  # noqa: E402

for _module in (tensor, recording, registry, tape, backward, forward, jacobians):
    _sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
del _module


# Submodules loaded on first use, so that ``import minitape`` stays light: ``mt.viz`` ...
_LAZY_MODULES = ("viz", "testing")


def __getattr__(name):
    # Python calls this only for a name the module does not have: a lazy submodule, else an
    # AttributeError that says whether TensorFlow has the name (see ``_tf_names``).
    if name in _LAZY_MODULES:
        import importlib
        return importlib.import_module(f".{name}", __name__)
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
