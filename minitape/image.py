"""``mt.image``: ``adjust_contrast`` (as ``tf.image``), whose gradient is not registered."""

from .ops.image_ops import adjust_contrast  # noqa: F401
