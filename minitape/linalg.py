"""``mt.linalg``: matrices (as ``tf.linalg``)."""

from .ops.math_ops import matmul  # noqa: F401
from .ops.array_ops import eye, matrix_transpose  # noqa: F401
from .ops.linalg_ops import solve, inv, det  # noqa: F401
from .ops.linalg_ops import tensordot, matvec  # noqa: F401
from .ops.array_ops import einsum  # noqa: F401
from .ops.reduction_ops import norm  # noqa: F401


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
