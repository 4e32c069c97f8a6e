"""``mt.linalg``: matrices (as ``tf.linalg``)."""

from .ops.math_ops import matmul  # noqa: F401
from .ops.array_ops import eye, matrix_transpose  # noqa: F401
from .ops.linalg_ops import solve, inv, det  # noqa: F401
from .ops.linalg_ops import tensordot, matvec  # noqa: F401
from .ops.array_ops import einsum  # noqa: F401
from .ops.reduction_ops import norm  # noqa: F401


def band_part(input, num_lower, num_upper, name=None):
    """The band of each innermost matrix, zeros (or False) outside it, as
    ``tf.linalg.band_part``: entry ``(i, j)`` is kept when ``num_lower < 0 or i - j <=
    num_lower`` and ``num_upper < 0 or j - i <= num_upper``. ``band_part(x, -1, 0)`` is the
    lower triangle (Geron's causal mask: ``band_part(tf.ones((n, n), tf.bool), -1, 0)``).
    Computed as ``where(band, input, 0)``, so the gradient flows to the kept entries.

    Raises:
        ValueError: ``input`` has fewer than 2 axes.
    """
    import numpy as np
    from .engine.tensor import convert_to_tensor
    from .ops import array_ops
    x = convert_to_tensor(input, what="band_part")
    if x.ndim < 2:
        raise ValueError(f"band_part expects a matrix or a batch of them (2 axes or more), got "
                         f"shape {tuple(x.shape)}")
    rows, cols = x.shape[-2], x.shape[-1]
    offset = np.arange(rows)[:, None] - np.arange(cols)[None, :]   # i - j
    keep = ((int(num_lower) < 0) | (offset <= int(num_lower))) & \
        ((int(num_upper) < 0) | (-offset <= int(num_upper)))
    return array_ops.where(convert_to_tensor(keep), x, array_ops.zeros_like(x), name=name)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
