"""The inverse trigonometric and hyperbolic functions (tf.math.asin, ..., atan2): values
against NumPy, derivatives against their closed forms (the gradient tests in
test_ops_gradients.py check them against finite differences, to second order)."""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt


@pytest.mark.parametrize("fn, np_fn, derivative, x", [
    (mt.math.asin, np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), [-0.5, 0.0, 0.9]),
    (mt.math.acos, np.arccos, lambda x: -1 / np.sqrt(1 - x * x), [-0.5, 0.0, 0.9]),
    (mt.math.atan, np.arctan, lambda x: 1 / (1 + x * x), [-3.0, 0.0, 2.0]),
    (mt.math.sinh, np.sinh, np.cosh, [-1.0, 0.0, 2.0]),
    (mt.math.cosh, np.cosh, np.sinh, [-1.0, 0.0, 2.0]),
    (mt.math.asinh, np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), [-1.0, 0.0, 2.0]),
    (mt.math.acosh, np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), [1.5, 2.0, 5.0]),
    (mt.math.atanh, np.arctanh, lambda x: 1 / (1 - x * x), [-0.5, 0.0, 0.9]),
])
def test_values_and_derivatives(fn, np_fn, derivative, x):
    x = np.array(x)
    t = mt.constant(x)
    with mt.GradientTape() as tape:
        tape.watch(t)
        y = fn(t)
    np.testing.assert_allclose(y.numpy(), np_fn(x), rtol=1e-15)
    np.testing.assert_allclose(tape.gradient(y, t).numpy(), derivative(x), rtol=1e-14)


def test_atan2_is_the_angle_and_its_gradient():
    y, x = mt.constant([1.0, -1.0, 0.0]), mt.constant([1.0, -1.0, -2.0])
    with mt.GradientTape() as tape:
        tape.watch([y, x])
        angle = mt.atan2(y, x)
    np.testing.assert_allclose(angle.numpy(), [np.pi / 4, -3 * np.pi / 4, np.pi], rtol=1e-6)
    gy, gx = tape.gradient(angle, [y, x])
    r2 = np.array([2.0, 2.0, 4.0])
    np.testing.assert_allclose(gy.numpy(), [1.0, -1.0, -2.0] / r2, rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), -np.array([1.0, -1.0, 0.0]) / r2, rtol=1e-6)
    origin = mt.constant(0.0)
    with mt.GradientTape() as tape:
        tape.watch(origin)
        a = mt.atan2(origin, origin)
    with np.errstate(all="ignore"):
        assert np.isnan(tape.gradient(a, origin).numpy())   # as TensorFlow: 0 / 0


def test_asin_at_one_is_an_infinite_slope_and_floor_has_no_gradient():
    x = mt.constant([1.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.math.asin(x)
        z = mt.math.floor(x * 2.5) + mt.math.ceil(x)
    with np.errstate(divide="ignore"):
        assert np.isinf(tape.gradient(y, x).numpy()).all()
    assert tape.gradient(z, x) is None            # as TensorFlow: Floor and Ceil give None
    np.testing.assert_array_equal(z.numpy(), [3.0])
    np.testing.assert_allclose(mt.math.squared_difference([1.0, 2.0], [3.0, 5.0]).numpy(),
                               [4.0, 9.0])
