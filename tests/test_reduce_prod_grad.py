"""``reduce_prod``'s gradient is exact at zeros, to second order and beyond (issue #18, item 6).

The first derivative of ``prod(x)`` with respect to ``x_i`` is the product of the others; the
second, with respect to ``x_i`` and ``x_j`` (i != j), the product of all but those two, and 0
on the diagonal. At a point with one or two zeros, a gradient computed as ``prod / x`` (or
with the zero case treated as a constant) gets the second derivatives wrong and the Hessian
not symmetric. The references here are closed forms written with ``np.prod`` over index sets,
and float64 central differences (``check_grads``, which also covers forward mode).
"""

import itertools

import numpy as np
import pytest

import minitape as mt
from minitape.testing import check_grads

POINTS = [
    [0.0, 2.0, 3.0],
    [2.0, 0.0, 0.0, 5.0],
    [0.0, 0.0, 0.0],
    [1.5, -2.0, 3.0, 0.5],
    [4.0],
]


def _closed_form(x):
    """Gradient and Hessian of prod(x) from index sets (no division anywhere)."""
    n = len(x)
    grad = np.array([np.prod([x[k] for k in range(n) if k != i]) for i in range(n)])
    hess = np.zeros((n, n))
    for i, j in itertools.permutations(range(n), 2):
        hess[i, j] = np.prod([x[k] for k in range(n) if k not in (i, j)])
    return grad, hess


def _tape_grad_and_hessian(x0):
    x = mt.Variable(np.array(x0, np.float64))
    with mt.GradientTape() as outer:
        with mt.GradientTape() as inner:
            y = mt.reduce_prod(x)
        g = inner.gradient(y, x)
    return g.numpy(), outer.jacobian(g, x).numpy()


@pytest.mark.parametrize("x0", POINTS, ids=str)
def test_gradient_and_hessian_match_the_closed_form(x0):
    grad, hess = _tape_grad_and_hessian(x0)
    want_grad, want_hess = _closed_form(x0)
    np.testing.assert_array_equal(grad, want_grad)
    np.testing.assert_allclose(hess, want_hess, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(hess, hess.T)


def test_the_hessian_at_one_zero_is_not_zero():
    # d2/dx0 dx1 of x0*x1*x2 at (0, 2, 3) is x2 = 3: a rule that treats the zero's
    # "product of the others" as a constant gives 0 here (and 3 at [1, 0]).
    _, hess = _tape_grad_and_hessian([0.0, 2.0, 3.0])
    assert hess[0, 1] == hess[1, 0] == 3.0
    assert hess[0, 2] == hess[2, 0] == 2.0


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True), ([0, 2], False),
                                            (-1, True)])
def test_check_grads_with_zeros_on_the_reduced_axes(axis, keepdims):
    x = np.array([[[0.0, 2.0], [3.0, -1.0], [0.5, 0.0]],
                  [[1.0, 0.0], [0.0, 2.0], [1.5, 1.0]]])
    check_grads(lambda t: mt.reduce_prod(t, axis=axis, keepdims=keepdims), x, order=3)


def test_vectorized_and_looped_jacobians_of_the_gradient_agree():
    x = mt.Variable([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]], dtype=mt.float64)
    with mt.GradientTape(persistent=True) as outer:
        with mt.GradientTape() as inner:
            y = mt.reduce_sum(mt.reduce_prod(x, axis=1) ** 2)
        g = inner.gradient(y, x)
    fast = outer.jacobian(g, x).numpy()
    slow = outer.jacobian(g, x, experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(fast, slow, rtol=1e-12)


def test_an_integer_product_has_no_gradient_and_keeps_its_value():
    x = mt.constant([[2, 3], [4, 0]])
    np.testing.assert_array_equal(mt.reduce_prod(x, axis=1).numpy(), [6, 0])
