"""``mt.nn``: activations (as ``tf.nn``)."""

from .ops.math_ops import sigmoid, softplus, tanh  # noqa: F401
from .ops.nn_ops import relu, elu, leaky_relu, softmax, log_softmax  # noqa: F401
from .ops.nn_ops import softmax_cross_entropy_with_logits  # noqa: F401
