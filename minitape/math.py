"""``mt.math``: elementwise functions, reductions and comparisons (as ``tf.math``)."""

import numpy as np

from .ops.math_ops import (  # noqa: F401
    add, add_n, subtract, multiply, divide, pow, negative, abs, sign, exp, log, sqrt, square,
    maximum, minimum, round, sin, cos, tan, tanh, sigmoid, softplus, log1p, expm1, erf, reciprocal,
    greater, greater_equal, less, less_equal, equal, not_equal, cast,
)
from .ops.math_ops import divide_no_nan, rsqrt, l2_normalize  # noqa: F401
from .ops.math_ops import floordiv  # noqa: F401  (x // y: Géron's chapter 14)
from .ops.math_ops import (  # noqa: F401
    asin, acos, atan, atan2, sinh, cosh, asinh, acosh, atanh, floor, ceil, squared_difference,
)
from .ops.reduction_ops import (  # noqa: F401
    reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod,
)
from .ops.reduction_ops import (  # noqa: F401
    reduce_logsumexp, reduce_variance, reduce_std, cumsum, argmax, argmin,
)
from .ops.nn_ops import softmax, log_softmax  # noqa: F401 (tf.math has them too)
from .ops.reduction_ops import top_k  # noqa: F401  (d2l 10.8: beam search)
# (Geron's chapter 16 combines masks)
from .ops.math_ops import logical_and, logical_or, logical_xor, logical_not  # noqa: F401


def _elementwise_test(op_type, fn, what):
    from .ops.math_ops import floating
    from .engine.recording import record
    from .engine.registry import no_gradient
    from .engine.tensor import Tensor

    def test(x, name=None):
        x = floating(x, op_type)
        z = Tensor(fn(x.numpy()), name=name)
        record(op_type, (x,), (z,), keep_inputs=False)
        return z

    test.__name__ = fn.__name__.replace("is", "is_")
    test.__doc__ = (f"Elementwise: is ``x`` {what}? A bool Tensor of ``x``'s shape (op "
                    f"``{op_type}``, as ``tf.math.{test.__name__}``); not differentiable.\n\n"
                    f"    Raises:\n        TypeError: ``x`` is not floating (as TensorFlow).\n")
    no_gradient(op_type)
    return test


is_nan = _elementwise_test("IsNan", np.isnan, "NaN")
is_inf = _elementwise_test("IsInf", np.isinf, "+inf or -inf")
is_finite = _elementwise_test("IsFinite", np.isfinite, "finite (not NaN, not infinite)")


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
