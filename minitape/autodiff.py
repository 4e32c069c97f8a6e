"""``mt.autodiff``: forward mode (as ``tf.autodiff``)."""

from .forward import ForwardAccumulator  # noqa: F401


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
