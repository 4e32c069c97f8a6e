"""``mt.image``: ``adjust_contrast`` (as ``tf.image``), whose gradient is not registered."""

from .ops.image_ops import adjust_contrast  # noqa: F401


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
