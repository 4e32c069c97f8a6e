"""Linear algebra: solve, inv, det, tensordot, matvec. Forward, then gradient.

(``matmul`` lives in math_ops, ``einsum`` in array_ops; ``tensordot`` and ``matvec`` are built
from them, so their gradients, forward mode and vectorized Jacobians are theirs.)
"""

from __future__ import annotations

import string

import numpy as np

from ..engine.registry import RegisterGradient, register_forward
from ..engine.recording import record
from ..engine.tensor import Tensor
from . import array_ops, math_ops
from .axes import check_axis, invalid_argument
from .math_ops import binary_operands, floating, unbroadcast


def _square_matrices(a, op_type):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op_type} needs square matrices (..., n, n), got shape {a.shape}")


def solve(matrix, rhs, adjoint=False, name=None):
    """Solve ``matrix @ x = rhs`` for ``x`` (op ``MatrixSolve``), as ``tf.linalg.solve``.

    Shapes: ``matrix`` ``(..., n, n)``, ``rhs`` ``(..., n, k)`` -> ``(..., n, k)``.
    Gradient: ``d rhs = solve(matrix^T, dy)``, ``d matrix = -d rhs @ x^T``.
    """
    matrix, rhs = binary_operands(matrix, rhs, "MatrixSolve")
    matrix = floating(matrix, "MatrixSolve")
    _square_matrices(matrix, "MatrixSolve")
    if rhs.ndim < 2 or rhs.shape[-2] != matrix.shape[-1]:
        raise ValueError(f"MatrixSolve: rhs must have shape (..., {matrix.shape[-1]}, k) for a "
                         f"matrix of shape {matrix.shape}, got {rhs.shape}")
    if adjoint:
        matrix = array_ops.matrix_transpose(matrix)
    x = Tensor(np.linalg.solve(matrix._value, rhs._value), name=name)
    record("MatrixSolve", (matrix, rhs), (x,), keep_outputs=True)
    return x


register_forward("MatrixSolve", lambda op, a, b: solve(a, b))


@RegisterGradient("MatrixSolve", batched=True)
def _solve_grad(op, dy):
    a, _ = op.inputs
    (x,) = op.outputs
    nb = op.batch_ndim
    g_rhs = solve(array_ops.matrix_transpose(a), dy)
    g_a = -math_ops.matmul(g_rhs, array_ops.matrix_transpose(x))
    return unbroadcast(g_a, op.input_shapes[0], nb), unbroadcast(g_rhs, op.input_shapes[1], nb)


def inv(input, name=None):  # noqa: A002
    """Matrix inverse (op ``MatrixInverse``): ``d A = -A^-T @ dy @ A^-T``; keeps its output."""
    a = floating(input, "MatrixInverse")
    _square_matrices(a, "MatrixInverse")
    y = Tensor(np.linalg.inv(a._value), name=name)
    record("MatrixInverse", (a,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("MatrixInverse", lambda op, a: inv(a))


@RegisterGradient("MatrixInverse", batched=True)
def _inv_grad(op, dy):
    (y,) = op.outputs
    yt = array_ops.matrix_transpose(y)
    return -math_ops.matmul(math_ops.matmul(yt, dy), yt)


def det(input, name=None):  # noqa: A002
    """Determinant of ``(..., n, n)`` -> ``(...)`` (op ``MatrixDeterminant``).

    Gradient: ``dy * det(A) * A^-T``.
    """
    a = floating(input, "MatrixDeterminant")
    _square_matrices(a, "MatrixDeterminant")
    y = Tensor(np.asarray(np.linalg.det(a._value), dtype=a.dtype)[()], name=name)
    record("MatrixDeterminant", (a,), (y,), keep_outputs=True)
    return y


register_forward("MatrixDeterminant", lambda op, a: det(a))


@RegisterGradient("MatrixDeterminant", batched=True)
def _det_grad(op, dy):
    (a,) = op.inputs
    (y,) = op.outputs
    scale = array_ops.expand_dims(array_ops.expand_dims(dy * y, -1), -1)
    return scale * array_ops.matrix_transpose(inv(a))


# -- tensordot, matvec: built from einsum and matmul ---------------------------------------------


def _tensordot_axes(axes, a, b):
    """``tensordot``'s ``axes`` -> (a's contracted axes, b's contracted axes), non-negative."""
    if isinstance(axes, Tensor):  # TensorFlow accepts an int Tensor: 0-d, or of shape (2, k)
        if axes.dtype.kind not in "iu":
            raise TypeError(f"tensordot: axes must be an int or a pair of lists of ints, got a "
                            f"Tensor of dtype {axes.dtype.name}")
        axes = axes.numpy().tolist()
    if isinstance(axes, np.ndarray):
        axes = axes.tolist()
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(a.ndim, b.ndim):
            raise ValueError(
                f"tensordot: axes={n} is out of range: an int N sums the last N axes of a "
                f"(shape {a.shape}) against the first N of b (shape {b.shape}), so it must be "
                f"between 0 and {min(a.ndim, b.ndim)}; or give a pair of axis lists, e.g. "
                "[[1], [0]]")
        return list(range(a.ndim - n, a.ndim)), list(range(n))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise TypeError(f"tensordot: axes must be an int or a pair [a_axes, b_axes] of ints or "
                        f"lists of ints, got {axes!r:.80}")
    pair = []
    for arg, side, t in (("axes[0]", axes[0], a), ("axes[1]", axes[1], b)):
        side = np.asarray(side).tolist() if isinstance(side, (Tensor, np.ndarray)) else side
        side = list(side) if isinstance(side, (list, tuple)) else [side]
        checked = [check_axis(ax, t.ndim, "tensordot", arg, t.shape) for ax in side]
        if len(set(checked)) != len(checked):
            raise ValueError(f"tensordot: {arg}={side} names the same axis twice (shape "
                             f"{t.shape}); list each axis once")
        pair.append(checked)
    if len(pair[0]) != len(pair[1]):
        raise ValueError(f"tensordot: axes[0]={pair[0]} and axes[1]={pair[1]} must have the same "
                         "length: each axis of a is summed against one axis of b")
    return pair


def tensordot(a, b, axes, name=None):
    """Sum the products of ``a`` and ``b`` over the given axes, as ``tf.tensordot``.

    Args:
        a, b: Tensors (or values ``mt.constant`` accepts) of one dtype.
        axes: an int ``N``: sum over the last ``N`` axes of ``a`` and the first ``N`` of ``b``,
            in order (``0`` is the outer product, ``1`` on two matrices is ``a @ b``); or a
            pair ``[a_axes, b_axes]`` of ints or of equal-length lists of ints (negative
            counts from the end): axis ``a_axes[i]`` of ``a`` is summed against ``b_axes[i]``
            of ``b``. An int Tensor works too, as in TensorFlow.
        name: optional name of the result.

    Returns:
        A Tensor of ``a``'s dtype whose shape is ``a``'s remaining axes followed by ``b``'s
        remaining axes, each in their order.

    Recorded as one ``Einsum`` op (TensorFlow composes it of Transpose, Reshape and MatMul;
    the value and the gradients are the same): its gradient for each argument is ``dy``
    contracted with the other argument, again an einsum, so it can be differentiated again.

    Raises:
        TypeError: ``axes`` of the wrong kind, or ``a`` and ``b`` of different dtypes.
        ValueError: an axis out of range or repeated, lists of different lengths, or summed
            axes of different sizes (``mt.errors.InvalidArgumentError``, a ValueError, as
            TensorFlow).

    >>> import minitape as mt
    >>> x = mt.constant([0., 1., 2., 3.])
    >>> mt.tensordot(x, x, axes=1)    # the dot product
    <mt.Tensor: shape=(), dtype=float32, numpy=14.0>
    >>> mt.tensordot(mt.ones((2, 3, 4)), mt.ones((4, 3)), axes=[[1, 2], [1, 0]]).shape
    (2,)
    """
    a, b = binary_operands(a, b, "tensordot")
    a_axes, b_axes = _tensordot_axes(axes, a, b)
    for i, j in zip(a_axes, b_axes):
        if a.shape[i] != b.shape[j]:  # (InvalidArgumentError, a ValueError, as TensorFlow)
            raise invalid_argument(
                f"tensordot: axis {i} of a (shape {a.shape}) has size {a.shape[i]} but axis {j} "
                f"of b (shape {b.shape}) has size {b.shape[j]}; summed axes must have the same "
                "size: check axes, or transpose one argument")
    letters = string.ascii_letters
    if a.ndim + b.ndim > 40:  # einsum needs a letter per axis, and its gradient a few more
        raise ValueError(f"tensordot supports up to 40 axes in all, got shapes {a.shape} and "
                         f"{b.shape}")
    a_subs = letters[:a.ndim]
    b_subs = list(letters[a.ndim:a.ndim + b.ndim])
    for i, j in zip(a_axes, b_axes):
        b_subs[j] = a_subs[i]
    out = ("".join(c for k, c in enumerate(a_subs) if k not in a_axes)
           + "".join(c for k, c in enumerate(b_subs) if k not in b_axes))
    return array_ops.einsum(f"{a_subs},{''.join(b_subs)}->{out}", a, b, name=name)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """Matrix times vector, as ``tf.linalg.matvec``: ``y[..., i] = sum_j a[..., i, j] b[..., j]``.

    Args:
        a: ``(..., m, n)`` (``(..., n, m)`` with ``transpose_a``), rank 2 or more.
        b: ``(..., n)`` of ``a``'s dtype, rank 1 or more; the batch axes ``...`` of ``a`` and
            ``b`` broadcast, as in ``matmul``.
        transpose_a: use ``a``'s transpose (its last two axes swapped).
        adjoint_a: the conjugate transpose; for real dtypes the same as ``transpose_a``.
        name: optional name of the result.

    Returns:
        ``(..., m)``: ``squeeze(matmul(a, expand_dims(b, -1)), -1)``, which is how TensorFlow
        builds it; so it records ExpandDims, MatMul (BatchMatMulV2 with batch axes) and
        Squeeze, and its gradients are theirs.

    Raises:
        ValueError: ranks too small or both ``transpose_a`` and ``adjoint_a``; ``a``'s columns
            differ from ``b``'s length or batch axes that do not broadcast
            (``mt.errors.InvalidArgumentError``, a ValueError, as TensorFlow).
        TypeError: different dtypes.

    >>> import minitape as mt
    >>> A = mt.constant([[1., 2.], [3., 4.], [5., 6.]])
    >>> mt.linalg.matvec(A, mt.constant([1., -1.]))
    <mt.Tensor: shape=(3,), dtype=float32, numpy=array([-1., -1., -1.], dtype=float32)>
    """
    if transpose_a and adjoint_a:
        raise ValueError("matvec: only one of transpose_a and adjoint_a can be True (for real "
                         "matrices they mean the same)")
    a, b = binary_operands(a, b, "matvec")
    transposed = bool(transpose_a or adjoint_a)
    if a.ndim < 2 or b.ndim < 1:
        raise ValueError(f"matvec needs a matrix a (rank 2 or more) and a vector b (rank 1 or "
                         f"more), got shapes {a.shape} and {b.shape}; for two vectors use "
                         "mt.tensordot(a, b, axes=1)")
    n = a.shape[-2] if transposed else a.shape[-1]
    # (Sizes that do not fit: InvalidArgumentError, a ValueError, as TensorFlow's MatMul.)
    if b.shape[-1] != n:
        flag = " (with transpose_a=True)" if transposed else ""
        raise invalid_argument(f"matvec: a of shape {a.shape}{flag} needs a vector b of length "
                               f"{n}, got shape {b.shape}; check which axis of a is summed "
                               "(transpose_a)")
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-1])
    except ValueError:
        raise invalid_argument(f"matvec: the batch axes of a {a.shape[:-2]} and b "
                               f"{b.shape[:-1]} cannot be broadcast together") from None
    y = math_ops.matmul(a, array_ops.expand_dims(b, -1), transpose_a=transposed)
    return array_ops.squeeze(y, -1, name=name)
