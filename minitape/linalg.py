"""``mt.linalg``: matrices (as ``tf.linalg``)."""

from .ops.math_ops import matmul  # noqa: F401
from .ops.array_ops import eye, matrix_transpose  # noqa: F401
from .ops.linalg_ops import solve, inv, det  # noqa: F401
from .ops.reduction_ops import norm  # noqa: F401
