"""The four eager gradient APIs of seed 002 (a Q&A page), and ``mt.grad`` on the same function.

``s = w1 * x1 + w2 * x2`` with ``w1 = 2``, ``w2 = 3``, ``x1 = 5``, ``x2 = 7``: the seed prints
``31``, ``ds/dw1 = x1 = 5``, ``ds/dx1 = w1 = 2`` and ``ds/dw2 = x2 = 7``.
"""

import numpy as np
import pytest

import minitape as mt


@pytest.fixture
def weights():
    return mt.Variable(2.0), mt.Variable(3.0)


def make_weighted_sum(w1, w2):
    def weighted_sum(x1, x2):
        return w1 * x1 + w2 * x2
    return weighted_sum


def test_value(weights):
    weighted_sum = make_weighted_sum(*weights)
    s = weighted_sum(5., 7.)
    assert s.numpy() == 31.0


def test_gradient_tape(weights):
    w1, _ = weights
    weighted_sum = make_weighted_sum(*weights)
    with mt.GradientTape() as tape:
        s = weighted_sum(5., 7.)
    [w1_grad] = tape.gradient(s, [w1])
    assert w1_grad.numpy() == 5.0   # gradient of s with regards to w1 = x1


def test_gradients_function(weights):
    weighted_sum = make_weighted_sum(*weights)
    grad_fn = mt.gradients_function(weighted_sum)
    x1_grad, x2_grad = grad_fn(5., 7.)
    assert x1_grad.numpy() == 2.0   # gradient of s with regards to x1 = w1
    assert x2_grad.numpy() == 3.0   # ... x2 = w2


def weighted_sum_with_weights(w1, x1, w2, x2):
    return w1 * x1 + w2 * x2


@pytest.mark.parametrize("params", [["w1", "w2"], [0, 2]])
def test_gradients_function_params(weights, params):
    w1, w2 = weights
    grad_fn = mt.gradients_function(weighted_sum_with_weights, params=params)
    grads = grad_fn(w1, 5., w2, 7.)
    assert len(grads) == 2
    [w1_grad, w2_grad] = grads
    assert w1_grad.numpy() == 5.0
    assert w2_grad.numpy() == 7.0   # gradient of s with regards to w2 = x2


def test_value_and_gradients_function(weights):
    w1, w2 = weights
    fg = mt.value_and_gradients_function(weighted_sum_with_weights, params=["x2"])
    value, [x2_grad] = fg(w1, 5., w2, 7.)
    assert value.numpy() == 31.0
    assert x2_grad.numpy() == 3.0


def test_implicit_gradients(weights):
    w1, w2 = weights
    weighted_sum = make_weighted_sum(w1, w2)
    grad_fn = mt.implicit_gradients(weighted_sum)
    [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)
    assert w1_grad.numpy() == 5.0
    assert w2_grad.numpy() == 7.0
    assert w1_var is w1
    assert w2_var is w2


def test_implicit_gradients_drops_a_non_trainable_variable():
    w1 = mt.Variable(2., trainable=False)
    w2 = mt.Variable(3.0)
    weighted_sum = make_weighted_sum(w1, w2)
    pairs = mt.implicit_gradients(weighted_sum)(5., 7.)
    assert len(pairs) == 1
    [(w2_grad, w2_var)] = pairs
    assert w2_var is w2
    assert w2_grad.numpy() == 7.0


def test_implicit_value_and_gradients(weights):
    w1, w2 = weights
    grad_fn = mt.implicit_value_and_gradients(make_weighted_sum(w1, w2))
    s, [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)
    assert s.numpy() == 31.0   # s = w1 * x1 + w2 * x2
    assert (w1_grad.numpy(), w2_grad.numpy()) == (5.0, 7.0)
    assert w1_var is w1 and w2_var is w2


def test_grad_gives_the_same_numbers(weights):
    w1, w2 = weights
    weighted_sum = make_weighted_sum(w1, w2)
    assert mt.grad(weighted_sum)(5., 7.).numpy() == 2.0
    x1_grad, x2_grad = mt.grad(weighted_sum, argnums=(0, 1))(5., 7.)
    assert (x1_grad.numpy(), x2_grad.numpy()) == (2.0, 3.0)
    w1_grad, w2_grad = mt.grad(weighted_sum_with_weights, argnums=(0, 2))(w1, 5., w2, 7.)
    assert (w1_grad.numpy(), w2_grad.numpy()) == (5.0, 7.0)
    value, w2_grad = mt.value_and_grad(weighted_sum_with_weights, argnums=2)(w1, 5., w2, 7.)
    assert value.numpy() == 31.0 and w2_grad.numpy() == 7.0


def test_functions_agree_with_the_tape_on_a_nonlinear_function():
    # f(a, b) = a^2 b + sin(b): df/da = 2ab, df/db = a^2 + cos(b).
    def f(a, b):
        return a * a * b + mt.math.sin(b)
    a, b = 1.5, 0.5
    want = [2 * a * b, a * a + np.cos(b)]
    got = [g.numpy() for g in mt.gradients_function(f)(a, b)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got = [g.numpy() for g in mt.grad(f, argnums=(0, 1))(a, b)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
