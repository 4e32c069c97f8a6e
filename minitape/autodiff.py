"""``mt.autodiff``: forward mode (as ``tf.autodiff``)."""

from .engine.forward import ForwardAccumulator  # noqa: F401


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
