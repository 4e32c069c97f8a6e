"""TensorFlow's conventions at the edges: where TensorFlow 2.x gives a number (or None, or an
error), minitape gives the same.

The expected values are TensorFlow's, from its kernels and gradient functions (the backward
kernels of Sqrt and Reciprocal in ``cwise_ops_gradients.h`` return 0 where the incoming
gradient is 0; ``_ReluGradGrad``/``_LeakyReluGradGrad`` return zeros for the features;
``clip_ops.clip_by_norm`` takes the norm with the double ``where``), and hand-computed where
the closed form is simple.
"""

import numpy as np
import pytest

import minitape as mt
from minitape.testing import check_grads


def _grad(f, value):
    x = mt.Variable(value)
    with mt.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)


def _second(f, value):
    x = mt.Variable(value)
    with mt.GradientTape() as outer:
        with mt.GradientTape() as inner:
            y = f(x)
        g = inner.gradient(y, x)
    return outer.gradient(g, x)


# -- sqrt, reciprocal, clip_by_norm, norm at 0 ---------------------------------------------------

def test_sqrt_times_zero_has_gradient_zero_at_zero():
    with np.errstate(all="ignore"):
        assert _grad(lambda x: mt.sqrt(x) * 0.0, 0.0).numpy() == 0.0


def test_square_of_sqrt_has_gradient_zero_at_zero():
    # d/dx sqrt(x)**2: Square sends 2 * sqrt(0) = 0 to Sqrt, whose gradient is then 0.
    with np.errstate(all="ignore"):
        assert _grad(lambda x: mt.square(mt.sqrt(x)), 0.0).numpy() == 0.0


def test_sqrt_at_zero_with_a_nonzero_upstream_gradient_is_inf():
    with np.errstate(all="ignore"):
        assert _grad(mt.sqrt, 0.0).numpy() == np.inf
    assert _grad(mt.sqrt, 4.0).numpy() == 0.25


def test_reciprocal_times_zero_has_gradient_zero_at_zero():
    with np.errstate(all="ignore"):
        assert _grad(lambda x: mt.math.reciprocal(x) * 0.0, 0.0).numpy() == 0.0
    assert _grad(mt.math.reciprocal, 2.0).numpy() == -0.25


def test_clip_by_norm_of_a_zero_vector_has_gradient_ones():
    g = _grad(lambda v: mt.clip_by_norm(v, 1.0), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0, 1.0])


def test_clip_by_norm_gradient_elsewhere_is_the_closed_form():
    # ||v|| = 5 > 1: y = v / ||v||, dy/dv summed over outputs = (1 - v * sum(v) / ||v||^2) / ||v||
    v = np.array([3.0, 4.0])
    g = _grad(lambda v: mt.clip_by_norm(v, 1.0), v).numpy()
    np.testing.assert_allclose(g, (1 - v * v.sum() / 25.0) / 5.0, rtol=1e-6)
    check_grads(lambda v: mt.clip_by_norm(v, 1.0), v)


def test_norm_of_a_zero_vector_is_nan_as_in_tensorflow():
    with np.errstate(all="ignore"):
        g = _grad(mt.norm, [0.0, 0.0])
    assert np.isnan(g.numpy()).all()


def test_the_sqrt_rule_keeps_exact_second_derivatives():
    # The mixed derivative of c * sqrt(x) with respect to c and x is 0.5 / sqrt(x), also
    # where c = 0 (the zero-upstream rule must not change what the rule's own gradient is).
    x, c = mt.Variable(4.0), mt.Variable(0.0)
    with mt.GradientTape() as outer:
        with mt.GradientTape() as inner:
            y = c * mt.sqrt(x)
        gx = inner.gradient(y, x)
    assert gx.numpy() == 0.0
    assert outer.gradient(gx, c).numpy() == 0.25
    check_grads(lambda x, c: c * mt.sqrt(x) + mt.math.reciprocal(x) * c, 2.0, 0.5)


# -- issue 31's six cases -------------------------------------------------------------------------

def test_gather_refuses_a_negative_index():
    with pytest.raises(mt.errors.InvalidArgumentError,
                       match=r"indices\[0\] = -1 is not in \[0, 2\)"):
        mt.gather(mt.constant([1.0, 2.0]), [-1])


@pytest.mark.parametrize("op", [mt.stop_gradient, mt.sign, mt.round])
def test_forward_mode_through_an_op_without_tangent_gives_none(op):
    x = mt.constant([1.5, -2.0])
    with mt.autodiff.ForwardAccumulator(x, mt.constant([1.0, 1.0])) as acc:
        y = op(x)
        z = y * 3.0
    assert acc.jvp(y) is None and acc.jvp(z) is None
    zeros = acc.jvp(z, unconnected_gradients=mt.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(zeros.numpy(), [0.0, 0.0])


def test_forward_mode_of_a_sum_with_a_stopped_term_keeps_the_other_term():
    x = mt.constant([1.5, -2.0])
    with mt.autodiff.ForwardAccumulator(x, mt.constant([1.0, 2.0])) as acc:
        y = x * x + mt.stop_gradient(x)
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [3.0, -8.0])


@pytest.mark.parametrize("f", [mt.nn.relu, lambda x: mt.nn.leaky_relu(x, alpha=0.3)])
def test_second_derivative_through_relu_is_zeros(f):
    h = _second(f, [-1.0, 2.0])
    assert h is not None
    np.testing.assert_array_equal(h.numpy(), [0.0, 0.0])


def test_first_derivative_of_leaky_relu_is_its_slope():
    g = _grad(lambda x: mt.nn.leaky_relu(x, alpha=0.3), [-1.0, 2.0])
    np.testing.assert_allclose(g.numpy(), [0.3, 1.0])


def test_second_derivative_of_reduce_prod_of_a_scalar_is_zero():
    h = _second(mt.reduce_prod, 3.0)
    assert h is not None and h.numpy() == 0.0
    assert _grad(mt.reduce_prod, 3.0).numpy() == 1.0


def test_softmax_cross_entropy_broadcasts_labels_against_logits():
    labels = np.array([[0.2, 0.3, 0.5]])
    logits = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    loss = mt.nn.softmax_cross_entropy_with_logits(labels, logits)
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss.numpy(), -(labels * log_softmax).sum(axis=1), rtol=1e-12)
    # The gradient with respect to the broadcast labels sums over the examples.
    lab = mt.Variable(labels)
    with mt.GradientTape() as tape:
        total = mt.reduce_sum(mt.nn.softmax_cross_entropy_with_logits(lab, logits))
    np.testing.assert_allclose(tape.gradient(total, lab).numpy(),
                               -log_softmax.sum(axis=0, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match=r"labels of shape \(2,\) do not broadcast"):
        mt.nn.softmax_cross_entropy_with_logits([0.5, 0.5], logits)


@pytest.mark.parametrize("method", ["jacobian", "batch_jacobian"])
def test_loop_jacobian_needs_a_persistent_tape(method):
    x = mt.constant([[1.0, 2.0]])
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="GradientTape must be created with persistent=True"):
        getattr(tape, method)(y, x, experimental_use_pfor=False)


def test_softmax_cross_entropy_keeps_its_exact_second_derivative_with_dependent_labels():
    # TensorFlow drops the labels' term here; minitape keeps the exact derivative (checked
    # against finite differences to second order).
    def f(x):
        return mt.nn.softmax_cross_entropy_with_logits(mt.nn.softmax(x * 0.5), x)
    check_grads(f, np.array([[0.3, -1.0, 2.0], [1.0, 0.2, -0.4]]))


# -- divide_no_nan ---------------------------------------------------------------------------------

def test_divide_no_nan_is_zero_where_the_denominator_is_zero():
    x = mt.constant([3.0, np.inf, np.nan, -2.0])
    y = mt.constant([2.0, 0.0, 0.0, 4.0])
    np.testing.assert_array_equal(mt.math.divide_no_nan(x, y).numpy(), [1.5, 0.0, 0.0, -0.5])
    assert mt.math.divide_no_nan(mt.constant(1.0), mt.constant(0.0)).numpy() == 0.0
    with pytest.raises(TypeError, match="floating"):
        mt.math.divide_no_nan(mt.constant([1, 2]), mt.constant([1, 0]))


def test_divide_no_nan_gradients_are_zero_where_the_denominator_is_zero():
    # Hand-computed: d(x/y)/dx = 1/y, d(x/y)/dy = -x/y**2 where y != 0; both 0 where y == 0.
    x, y = mt.Variable([3.0, 5.0]), mt.Variable([2.0, 0.0])
    with mt.GradientTape() as tape:
        z = mt.math.divide_no_nan(x, y)
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_allclose(gx.numpy(), [0.5, 0.0])
    np.testing.assert_allclose(gy.numpy(), [-0.75, 0.0])
    check_grads(mt.math.divide_no_nan, np.array([1.0, -2.0]), np.array([0.5, 3.0]))


def test_a_mean_over_an_empty_mask_with_divide_no_nan_has_a_finite_gradient():
    # The usual fix: sum / count with a count that can be 0.
    x = mt.Variable([1.0, 2.0])
    mask = mt.constant([0.0, 0.0])
    with mt.GradientTape() as tape:
        mean = mt.math.divide_no_nan(mt.reduce_sum(x * mask), mt.reduce_sum(mask))
    np.testing.assert_array_equal(tape.gradient(mean, x).numpy(), [0.0, 0.0])


# -- rsqrt and l2_normalize, which share the rule -------------------------------------------------

def test_rsqrt_times_zero_has_gradient_zero_at_zero():
    with np.errstate(all="ignore"):
        assert _grad(lambda x: mt.math.rsqrt(x) * 0.0, 0.0).numpy() == 0.0
    assert _grad(mt.math.rsqrt, 4.0).numpy() == -0.5 / 8.0   # -0.5 * x**-1.5


def test_l2_normalize_of_a_zero_vector_has_gradient_one_over_sqrt_epsilon():
    # TensorFlow: x * rsqrt(maximum(sum(x**2), 1e-12)); maximum sends nothing to the sum.
    g = _grad(lambda v: mt.math.l2_normalize(v), [0.0, 0.0, 0.0])
    expected = 1 / np.sqrt(np.float32(1e-12))
    np.testing.assert_allclose(g.numpy(), [expected] * 3, rtol=1e-6)
    np.testing.assert_array_equal(mt.nn.l2_normalize(mt.constant([0.0, 0.0])).numpy(), [0, 0])


def test_l2_normalize_values_and_gradients():
    v = np.array([[3.0, 4.0], [1.0, 0.0]])
    np.testing.assert_allclose(mt.math.l2_normalize(v, axis=1).numpy(),
                               [[0.6, 0.8], [1.0, 0.0]], rtol=1e-12)
    check_grads(lambda v: mt.math.l2_normalize(v, axis=-1), v + 0.1)


def test_the_divisor_gradient_stays_finite_where_its_square_overflows():
    # TensorFlow computes dy * ((-x / y) / y): for y = 1e20 in float32, y * y overflows to inf,
    # and -x / (y * y) would give -0 instead of the (denormal) number TensorFlow gives.
    x, y = mt.Variable(1.0), mt.Variable(1e20)
    with mt.GradientTape() as tape:
        z = x / y
    gy = tape.gradient(z, y).numpy()
    assert gy == np.float32(np.float32(-1.0) / np.float32(1e20)) / np.float32(1e20)
    assert gy != 0.0
