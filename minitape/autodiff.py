"""``mt.autodiff``: forward mode (as ``tf.autodiff``)."""

from .forward import ForwardAccumulator  # noqa: F401
