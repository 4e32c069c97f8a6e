"""MatMul's stacked-GEMM fast path (issue #14): ``(..., m, k) @ (k, n)`` as one tall GEMM.

The fast path (``math_ops._matmul_values``) must give the numbers of the general path
(``np.matmul``), and the Jacobians and gradients that run through it must match independent
values: closed forms and central differences.
"""

import numpy as np
import pytest

import minitape as mt
from minitape.ops.math_ops import _matmul_values
from minitape.testing import check_grads

RNG = np.random.default_rng(14)


def _ulps(dtype):
    # Each entry is the same dot product on both paths; a BLAS may still pick another kernel
    # (another summation order) for a tall matrix than for a small one: allow a few ulps.
    return 8 * np.finfo(dtype).eps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 4, 5), (5, 2)),          # a stack of 3 matrices
    ((2, 3, 4, 5), (5, 6)),       # two batch axes
    ((1024, 6, 7), (7, 3)),       # the shape of a vectorized Jacobian's cotangents
    ((4, 1, 5), (5, 1)),          # one-row matrices, a one-column result
])
def test_the_fast_path_gives_the_general_paths_numbers(dtype, a_shape, b_shape):
    a = RNG.standard_normal(a_shape).astype(dtype)
    b = RNG.standard_normal(b_shape).astype(dtype)
    for bv in (b, np.ascontiguousarray(b.T).T):   # b itself, and a transposed view of b^T
        got = _matmul_values(a, bv)
        want = np.matmul(a, bv)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=_ulps(dtype), atol=_ulps(dtype))
        # ... and against a product written out entry by entry, in float64.
        ref = np.einsum("...mk,kn->...mn", a.astype(np.float64), bv.astype(np.float64))
        np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-5 if dtype == np.float32 else 1e-12)


def test_operands_the_fast_path_does_not_take_go_through_np_matmul():
    b = RNG.standard_normal((5, 2))
    strided = RNG.standard_normal((3, 5, 4)).swapaxes(-1, -2)   # not contiguous: (3, 4, 5)
    np.testing.assert_array_equal(_matmul_values(strided, b), np.matmul(strided, b))
    empty = np.zeros((0, 4, 5))
    assert _matmul_values(empty, b).shape == (0, 4, 2)
    stack_b = RNG.standard_normal((3, 5, 2))                    # b a stack too: no fast path
    a = RNG.standard_normal((3, 4, 5))
    np.testing.assert_array_equal(_matmul_values(a, stack_b), np.matmul(a, stack_b))
    ints = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(_matmul_values(ints, np.ones((4, 2), int)),
                                  np.matmul(ints, np.ones((4, 2), int)))


@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_batched_matmul_forward_and_its_gradient(transpose_b):
    a = RNG.standard_normal((3, 4, 5))
    b = RNG.standard_normal((2, 5) if transpose_b else (5, 2))
    c = mt.matmul(a, b, transpose_b=transpose_b)
    bv = b.T if transpose_b else b
    np.testing.assert_allclose(c.numpy(), np.einsum("smk,kn->smn", a, bv), rtol=1e-12)
    check_grads(lambda x, w: mt.matmul(x, w, transpose_b=transpose_b), a, b, order=2)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_vectorized_jacobian_through_dense_layers_matches_the_closed_form(transpose_b):
    # y = elu(x W1) W2: dy[i, j] / dx[p, q] = delta_ip sum_h W2[h, j] elu'(z[i, h]) W1[q, h].
    # The backward pass runs (16, 4, 6) @ (6, 5)-shaped products: the fast path.
    x = RNG.standard_normal((4, 3))
    w1 = RNG.standard_normal((3, 6))
    w2 = RNG.standard_normal((6, 4))
    xs = mt.constant(x)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        w1_arg = mt.constant(w1.T if transpose_b else w1)
        h = mt.nn.elu(mt.matmul(xs, w1_arg, transpose_b=transpose_b))
        y = mt.matmul(h, mt.constant(w2))
    vectorized = tape.jacobian(y, xs).numpy()
    looped = tape.jacobian(y, xs, experimental_use_pfor=False).numpy()
    z = x @ w1
    slope = np.where(z > 0, 1.0, np.exp(z))
    block = np.einsum("hj,ih,qh->ijq", w2, slope, w1)            # (4, 4, 3): row i's block
    closed = np.zeros((4, 4, 4, 3))
    closed[np.arange(4), :, np.arange(4), :] = block
    np.testing.assert_allclose(vectorized, closed, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(looped, closed, rtol=1e-12, atol=1e-12)
