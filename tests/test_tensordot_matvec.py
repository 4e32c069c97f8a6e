"""``mt.tensordot`` and ``mt.linalg.matvec`` (issue #20), against NumPy and closed forms.

The gradient-check table (``tests/op_specs.py``) holds their cases too, so the registry-driven
tests check them against finite differences to second order, in float32, vectorized Jacobian
against looped and forward mode against the Jacobian. This file adds values against NumPy
for every form of ``axes``, the textbook's first gradient example, closed-form gradients,
JVPs and Jacobians, and the misuse cases.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape.testing import check_grads

RNG = np.random.default_rng(20)


def _normal(*shape):
    return RNG.standard_normal(shape)


# -- values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape_a, shape_b, axes, np_axes", [
    ((4,), (4,), 1, 1),
    ((2, 3), (3, 5), 1, 1),
    ((2, 3, 4), (3, 4, 5), 2, 2),
    ((2, 3), (4,), 0, 0),
    ((3, 2), (2, 3), [0, 1], ([0], [1])),
    ((2, 3, 4), (4, 2, 3), [[2, -3], [0, 1]], ([2, 0], [0, 1])),
    ((2, 3, 4), (4, 3), ([1, 2], [1, 0]), ([1, 2], [1, 0])),
    ((2, 3), (3, 2), [[], []], 0),
])
def test_tensordot_matches_numpy(shape_a, shape_b, axes, np_axes):
    a, b = _normal(*shape_a), _normal(*shape_b)
    got = mt.tensordot(mt.constant(a), mt.constant(b), axes)
    expected = np.tensordot(a, b, np_axes)
    assert got.shape == expected.shape
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_tensordot_axes_as_int_tensor_and_numpy_ints():
    a, b = _normal(2, 3), _normal(3, 4)
    expected = a @ b
    for axes in (mt.constant(1), np.int64(1), mt.constant([[1], [0]]), [np.int32(1), 0],
                 np.array([[1], [0]]), [np.array([1]), mt.constant([0])]):
        np.testing.assert_allclose(mt.tensordot(a, b, axes).numpy(), expected, rtol=1e-12)


def test_tensordot_keeps_float32_and_takes_python_lists():
    got = mt.tensordot([1.0, 2.0], mt.constant([3.0, 4.0]), axes=1)
    assert got.dtype == np.float32 and float(got) == 11.0


def test_tensordot_of_integers():
    got = mt.tensordot(mt.constant([[1, 2], [3, 4]]), mt.constant([1, 1]), 1)
    assert got.dtype == np.int32
    assert got.numpy().tolist() == [3, 7]


@pytest.mark.parametrize("shape_a, shape_b, kwargs", [
    ((3, 4), (4,), {}),
    ((4, 3), (4,), {"transpose_a": True}),
    ((4, 3), (4,), {"adjoint_a": True}),
    ((2, 3, 4), (4,), {}),
    ((3, 4), (5, 4), {}),
    ((2, 1, 3, 4), (5, 4), {}),
])
def test_matvec_matches_numpy(shape_a, shape_b, kwargs):
    a, b = _normal(*shape_a), _normal(*shape_b)
    got = mt.linalg.matvec(mt.constant(a), mt.constant(b), **kwargs)
    m = np.swapaxes(a, -1, -2) if kwargs else a
    expected = np.einsum("...ij,...j->...i", m, b)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_names_are_exported_where_tensorflow_has_them():
    assert mt.tensordot is mt.linalg.tensordot
    assert mt.linalg.einsum is mt.einsum
    assert not hasattr(mt, "matvec")  # TensorFlow has only tf.linalg.matvec


# -- gradients --------------------------------------------------------------------------------


def test_the_textbook_first_gradient_example():
    # d2l "Automatic differentiation", TensorFlow edition: y = 2 x.x, dy/dx = 4x.
    x = mt.Variable(mt.range(4, dtype=mt.float32))
    with mt.GradientTape() as t:
        y = 2 * mt.tensordot(x, x, axes=1)
    assert float(y) == 28.0
    x_grad = t.gradient(y, x)
    np.testing.assert_array_equal(x_grad.numpy(), 4 * x.numpy())
    assert x_grad.dtype == np.float32


def test_tensordot_gradients_closed_form():
    a, b = mt.constant(_normal(2, 3, 4)), mt.constant(_normal(4, 3, 5))
    u = _normal(2, 5)  # cotangent of the result
    with mt.GradientTape() as tape:
        tape.watch([a, b])
        y = mt.tensordot(a, b, axes=[[1, 2], [1, 0]])
    ga, gb = tape.gradient(y, [a, b], output_gradients=mt.constant(u))
    np.testing.assert_allclose(ga.numpy(), np.einsum("ik,jhk->ihj", u, b.numpy()), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), np.einsum("ik,ihj->jhk", u, a.numpy()), rtol=1e-12)


@pytest.mark.parametrize("fn, shapes", [
    (lambda a, b: mt.tensordot(a, b, 1), [(3, 2), (2, 4)]),
    (lambda a, b: mt.tensordot(mt.sin(a), b, [[0, 2], [2, 0]]), [(2, 3, 4), (4, 3, 2)]),
    (lambda a, b: mt.tensordot(a, a * b, 0), [(2,), (2,)]),
    (lambda a, b: mt.linalg.matvec(a, mt.tanh(b)), [(2, 3, 4), (4,)]),
    (lambda a, b: mt.linalg.matvec(a * a, b, transpose_a=True), [(3, 2), (1, 3)]),
])
def test_gradients_match_finite_differences_to_second_order(fn, shapes):
    check_grads(fn, *[_normal(*s) for s in shapes], order=2)


def test_tensordot_jvp_is_the_product_rule():
    a, b = _normal(3, 4), _normal(4, 2)
    ta, tb = _normal(3, 4), _normal(4, 2)
    xa, xb = mt.constant(a), mt.constant(b)
    with mt.autodiff.ForwardAccumulator([xa, xb], [mt.constant(ta), mt.constant(tb)]) as acc:
        y = mt.tensordot(xa, xb, axes=1)
    np.testing.assert_allclose(acc.jvp(y).numpy(), ta @ b + a @ tb, rtol=1e-12)


def test_matvec_jvp_is_the_product_rule():
    a, b = _normal(2, 3, 4), _normal(4)
    ta, tb = _normal(2, 3, 4), _normal(4)
    xa, xb = mt.constant(a), mt.constant(b)
    with mt.autodiff.ForwardAccumulator([xa, xb], [mt.constant(ta), mt.constant(tb)]) as acc:
        y = mt.linalg.matvec(xa, xb)
    np.testing.assert_allclose(acc.jvp(y).numpy(), ta @ b + a @ tb, rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda w, x: mt.tensordot(w, x, axes=[[1], [0]]),
    lambda w, x: mt.linalg.matvec(w, x),
])
def test_jacobian_vectorized_equals_looped_and_closed_form(fn):
    w, x = mt.constant(_normal(3, 4)), mt.constant(_normal(4))
    with mt.GradientTape(persistent=True) as tape:
        tape.watch([w, x])
        y = fn(w, x)
    for source, expected in ((x, w.numpy()),
                             (w, np.einsum("ik,l->ikl", np.eye(3), x.numpy()))):
        vectorized = tape.jacobian(y, source).numpy()
        looped = tape.jacobian(y, source, experimental_use_pfor=False).numpy()
        np.testing.assert_allclose(vectorized, expected, rtol=1e-12)
        np.testing.assert_allclose(looped, vectorized, rtol=0, atol=1e-12)


def test_tensordot_is_one_einsum_op_on_the_tape():
    x = mt.constant([1.0, 2.0])
    with mt.GradientTape() as tape:
        tape.watch(x)
        mt.tensordot(x, x, 1)
    assert [op.type for op in tape._ops] == ["Einsum"]


# -- misuse ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape_a, shape_b, axes, error, words", [
    ((2, 3), (3, 4), 3, ValueError, ["axes=3", "between 0 and 2"]),
    ((2, 3), (3, 4), -1, ValueError, ["axes=-1"]),
    ((2, 3), (3, 4), [[2], [0]], ValueError, ["axes[0]=2", "out of range"]),
    ((2, 3), (3, 4), [[1], [-3]], ValueError, ["axes[1]=-3", "out of range"]),
    ((2, 3), (3, 4), [[1, 1], [0, 1]], ValueError, ["same axis twice"]),
    ((2, 3), (3, 4), [[0, 1], [0]], ValueError, ["same length"]),
    ((2, 3), (4, 3), 1, ValueError, ["size 3", "size 4", "same size"]),
    ((2, 3), (3, 4), [[0], [0]], ValueError, ["axis 0 of a", "size 2", "size 3"]),
    ((2, 3), (3, 4), [1, 0, 0], TypeError, ["pair"]),
    ((2, 3), (3, 4), "1", TypeError, ["axes"]),
    ((2, 3), (3, 4), 1.0, TypeError, ["axes"]),
    ((2, 3), (3, 4), [[1.0], [0]], TypeError, ["axes[0]", "int"]),
    ((2, 3), (3, 4), mt.constant(1.0), TypeError, ["float32"]),
])
def test_tensordot_misuse_is_a_clear_error(shape_a, shape_b, axes, error, words):
    with pytest.raises(error) as info:
        mt.tensordot(mt.ones(shape_a), mt.ones(shape_b), axes)
    message = str(info.value)
    assert "tensordot" in message
    for word in words:
        assert word in message


def test_sizes_that_do_not_fit_are_invalid_argument_errors_as_in_tensorflow():
    with pytest.raises(mt.errors.InvalidArgumentError, match="same size"):
        mt.tensordot(mt.ones((2, 3)), mt.ones((4, 3)), 1)
    with pytest.raises(mt.errors.InvalidArgumentError, match="length 4"):
        mt.linalg.matvec(mt.ones((3, 4)), mt.ones((3,)))


def test_tensordot_of_two_dtypes_is_a_type_error():
    with pytest.raises(TypeError, match="tensordot.*mt.cast"):
        mt.tensordot(mt.ones((2,)), mt.ones((2,), dtype=mt.float64), 1)


@pytest.mark.parametrize("shape_a, shape_b, kwargs, words", [
    ((3,), (3,), {}, ["rank 2", "(3,)", "tensordot"]),
    ((3, 4), (), {}, ["vector b"]),
    ((3, 4), (3,), {}, ["length 4", "(3,)"]),
    ((3, 4), (4,), {"transpose_a": True}, ["length 3", "transpose_a=True"]),
    ((2, 3, 4), (3, 4), {}, ["batch axes", "(2,)", "(3,)"]),
    ((3, 4), (4,), {"transpose_a": True, "adjoint_a": True}, ["only one"]),
])
def test_matvec_misuse_is_a_clear_value_error(shape_a, shape_b, kwargs, words):
    with pytest.raises(ValueError) as info:
        mt.linalg.matvec(mt.ones(shape_a), mt.ones(shape_b), **kwargs)
    message = str(info.value)
    assert "matvec" in message
    for word in words:
        assert word in message
