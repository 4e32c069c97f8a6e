"""``mt.random``: ``normal``, ``uniform``, ``set_seed`` (as ``tf.random``)."""

from .ops.random_ops import normal, uniform, set_seed  # noqa: F401


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
