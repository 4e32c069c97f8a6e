"""``mt.nn``: activations (as ``tf.nn``)."""

from .ops.math_ops import sigmoid, softplus, tanh, l2_normalize  # noqa: F401
from .ops.nn_ops import relu, elu, leaky_relu, softmax, log_softmax  # noqa: F401
from .ops.nn_ops import softmax_cross_entropy_with_logits  # noqa: F401
from .ops.nn_ops import sparse_softmax_cross_entropy_with_logits, dropout  # noqa: F401
from .ops.conv_ops import conv2d, conv2d_transpose, max_pool2d  # noqa: F401
from .ops.conv_ops import avg_pool2d, max_pool  # noqa: F401  (d2l ch. 7: LeNet; Géron 14)
from .ops.conv_ops import depthwise_conv2d, separable_conv2d  # noqa: F401  (Chollet 9)
from .ops.conv_ops import (  # noqa: F401
    depthwise_conv2d_native_backprop_input as depthwise_conv2d_backprop_input,
    depthwise_conv2d_native_backprop_filter as depthwise_conv2d_backprop_filter)
from .ops.reduction_ops import top_k  # noqa: F401  (tf.nn.top_k, tf.math.top_k's alias)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
