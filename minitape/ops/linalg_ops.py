"""Linear algebra: solve, inv, det. Forward, then gradient (matmul lives in math_ops)."""

from __future__ import annotations

import numpy as np

from ..registry import RegisterGradient
from ..tape import record
from ..tensor import Tensor
from . import array_ops, math_ops
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


@RegisterGradient("MatrixDeterminant", batched=True)
def _det_grad(op, dy):
    (a,) = op.inputs
    (y,) = op.outputs
    scale = array_ops.expand_dims(array_ops.expand_dims(dy * y, -1), -1)
    return scale * array_ops.matrix_transpose(inv(a))
