"""``mt.keras``: the part of Keras that TensorFlow's guides and a training loop use.

Built on minitape's own pieces, with Keras's names: the layers are ``mt.layers``' (one
implementation), the optimizers ``mt.optimizers``', a ``Model`` is a ``mt.Module`` whose
``fit`` is the ``GradientTape`` loop of the lessons (see ``minitape/keras/models.py``).

- ``mt.keras.layers``: every ``mt.layers`` layer, plus ``Layer`` to subclass;
- ``mt.keras.Model`` (subclass it; ``compile``, ``fit``, ``evaluate``, ``predict``,
  ``save_weights`` / ``load_weights``), ``mt.keras.Sequential``;
- ``mt.keras.optimizers`` (``SGD``, ``Adam``, ``RMSprop``, ``Nadam``, ``Adagrad``, ``Adadelta``,
  ``Adamax``, ``AdamW``; ``mt.keras.optimizers.schedules``: ``ExponentialDecay``,
  ``PiecewiseConstantDecay``, ...), ``mt.keras.losses``, ``mt.keras.activations``,
  ``mt.keras.initializers``,
  ``mt.keras.backend`` (``floatx``, ``epsilon``, ``clear_session``, ``get_value``),
  ``mt.keras.callbacks`` (``Callback`` to subclass, ``EarlyStopping``, ``ModelCheckpoint``,
  ``LearningRateScheduler``, ``ReduceLROnPlateau``, ... for ``fit(..., callbacks=[...])``);
- ``mt.keras.metrics``, ``mt.keras.regularizers``, ``mt.keras.utils.set_random_seed``;
- ``mt.keras.Input`` and ``mt.keras.Model(inputs, outputs)`` (the functional style);
- ``model.save(path)`` / ``mt.keras.models.load_model(path, custom_objects=...)``;
- ``mt.keras.random`` (``normal``, ``uniform``, ``dropout``, ``SeedGenerator``) and the part
  of ``mt.keras.ops`` that Keras 3's guides use (``ops.matmul``, ``ops.sum``, ...).
"""

from .. import optimizers
from . import activations, callbacks, layers, losses
from .models import History, Model, Sequential
# Metrics, regularizers, utils (set_random_seed), the functional style (Input,
# Model(inputs, outputs)), saving (model.save, models.load_model):
from . import functional, metrics, models, regularizers, saving, utils
from .functional import Input, InputLayer

layers.Input, layers.InputLayer = Input, InputLayer   # (Keras's other names for them)

__all__ = ["activations", "callbacks", "layers", "losses", "optimizers", "Model", "Sequential",
           "History", "functional", "metrics", "models", "regularizers", "saving", "utils",
           "Input"]

# -- issue 32 (kerasB): backend, initializers ---------------------------------------------------
from . import backend  # noqa: E402
from .. import initializers  # noqa: E402  (mt.keras.initializers is mt.initializers)
from . import constraints  # noqa: E402

__all__ += ["backend", "initializers", "constraints"]
# -- end of issue 32 (kerasB) ------------------------------------------------------------------

# -- "Dive into Deep Learning", chapters 3-6 (d2lqa) ---------------------------------------------
from . import datasets  # noqa: E402  (fashion_mnist.load_data, from Keras's cache)

__all__ += ["datasets"]
# -- end of d2lqa ------------------------------------------------------------------------------
from . import ops, random  # noqa: E402  (keras.ops.matmul, keras.random: Keras 3's guides)

__all__ += ["ops", "random"]

# -- the recurrent layers (rnnlayers): SimpleRNN, LSTM, GRU, their cells, RNN, Bidirectional,
# TimeDistributed, Conv1D, written in minitape/keras/recurrent.py and listed in mt.keras.layers
# (set here, so that mt.keras.layers does not import the module that imports it)
from . import recurrent as _recurrent  # noqa: E402

for _name in _recurrent.__all__:
    setattr(layers, _name, getattr(_recurrent, _name))
layers.__all__ += [n for n in _recurrent.__all__ if n not in layers.__all__]
del _name
# -- end of rnnlayers --------------------------------------------------------------------------

# -- nlpgeron: Keras's masks and attention layers (Geron's chapter 16) ------------------------
from . import masking  # noqa: E402  (registers the mask passing of layer calls)
from . import attention as _attention  # noqa: E402
layers.Masking = masking.Masking
for _name in _attention.__all__:
    setattr(layers, _name, getattr(_attention, _name))
layers.__all__ += ["Masking"] + [n for n in _attention.__all__ if n not in layers.__all__]
del _name
# -- end of nlpgeron --------------------------------------------------------------------------


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
