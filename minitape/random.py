"""``mt.random``: ``normal``, ``uniform``, ``set_seed`` (as ``tf.random``)."""

from .ops.random_ops import normal, uniform, set_seed  # noqa: F401
