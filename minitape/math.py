"""``mt.math``: elementwise functions, reductions and comparisons (as ``tf.math``)."""

from .ops.math_ops import (  # noqa: F401
    add, subtract, multiply, divide, pow, negative, abs, sign, exp, log, sqrt, square, maximum,
    minimum, round, sin, cos, tan, tanh, sigmoid, softplus, log1p, expm1, erf, reciprocal,
    greater, greater_equal, less, less_equal, equal, not_equal, cast,
)
from .ops.reduction_ops import (  # noqa: F401
    reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod,
)
