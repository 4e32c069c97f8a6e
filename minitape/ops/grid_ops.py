"""``mt.meshgrid``: coordinate grids from 1-D Tensors, composed of recorded ops.

No new op type: each output is a ``Reshape`` of one input followed by a ``BroadcastTo``, so
its gradient (summing over the broadcast axes) comes from those ops' registered gradients.
"""

from __future__ import annotations

from ..engine.tensor import convert_to_tensor
from .array_ops import broadcast_to, reshape


def meshgrid(*args, indexing="xy", name=None):
    """N-D coordinate grids from N 1-D Tensors, as ``tf.meshgrid`` (and ``np.meshgrid``).

    Args:
        *args: 1-D Tensors (or lists) of lengths ``n_1, ..., n_N``, all of one dtype.
        indexing: ``"xy"`` (Cartesian, the default: the first two output axes are swapped,
            so outputs have shape ``(n_2, n_1, n_3, ...)``) or ``"ij"`` (matrix indexing:
            shape ``(n_1, n_2, ...)``).

    Returns:
        A list of N Tensors, all of the same shape; output ``k`` varies along input ``k``'s
        axis. Differentiable: the gradient of a grid sums over the axes it was repeated on.

    Raises:
        ValueError: an input is not 1-D, or ``indexing`` is neither ``"xy"`` nor ``"ij"``.

    >>> import minitape as mt
    >>> X, Y = mt.meshgrid([1.0, 2.0, 3.0], [10.0, 20.0])
    >>> X.numpy().tolist(), Y.numpy().tolist()
    ([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], [[10.0, 10.0, 10.0], [20.0, 20.0, 20.0]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    tensors = [convert_to_tensor(a, what="meshgrid") for a in args]
    for i, t in enumerate(tensors):
        if t.ndim != 1:
            raise ValueError(f"meshgrid: every input must be 1-D, but input {i} has shape "
                             f"{t.shape}; flatten it first (mt.reshape(x, [-1]))")
    n = len(tensors)
    axes = list(range(n))
    if indexing == "xy" and n >= 2:
        axes[0], axes[1] = 1, 0       # input k varies along output axis axes[k]
    shape = [0] * n
    for t, axis in zip(tensors, axes):
        shape[axis] = t.shape[0]
    out = []
    for t, axis in zip(tensors, axes):
        along = [1] * n
        along[axis] = t.shape[0]
        out.append(broadcast_to(reshape(t, along), shape))
    return out
