"""Jacobians (vectorized vs looped), forward mode, batch Jacobians and the functional API.

For every case of ``tests/op_specs.py``: the vectorized ``tape.jacobian`` (one backward pass
over a batch of cotangents, every gradient function carrying a leading batch axis) must equal
the looped one (one backward pass per output element), and ``ForwardAccumulator``'s JVP must
equal the Jacobian times the tangent. Both sides are exact computations: they agree to 1e-10.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_specs import SPECS

import minitape as mt
from minitape.testing import central_difference


def _outputs(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _jacobians(spec, use_pfor):
    """``[output][argument]`` -> Jacobian array ``output.shape + argument.shape``."""
    xs = [mt.constant(a) for a in spec.args()]
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        outs = _outputs(spec.fn(*xs))
    return [[j.numpy() for j in tape.jacobian(o, xs, experimental_use_pfor=use_pfor,
                                               unconnected_gradients="zero")]
            for o in outs]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_vectorized_jacobian_equals_looped(spec):
    vectorized = _jacobians(spec, use_pfor=True)
    looped = _jacobians(spec, use_pfor=False)
    for row_v, row_l in zip(vectorized, looped):
        for jv, jl in zip(row_v, row_l):
            assert jv.shape == jl.shape
            np.testing.assert_allclose(jv, jl, rtol=0, atol=spec.tol)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_forward_mode_equals_jacobian_times_tangent(spec):
    arrays = spec.args()
    rng = np.random.default_rng(1)
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    jac = _jacobians(spec, use_pfor=True)
    xs = [mt.constant(a) for a in arrays]
    with mt.autodiff.ForwardAccumulator(xs, [mt.constant(t) for t in tangents]) as acc:
        outs = _outputs(spec.fn(*xs))
    jvps = acc.jvp(outs, unconnected_gradients="zero")
    for out, jvp, row in zip(outs, jvps, jac):
        expected = sum(np.tensordot(j, t, axes=t.ndim) for j, t in zip(row, tangents))
        assert jvp.shape == out.shape
        np.testing.assert_allclose(jvp.numpy(), expected, rtol=0, atol=spec.tol)


# -- batch_jacobian --------------------------------------------------------------------------------


def _two_layer_model():
    mt.random.set_seed(7)
    model = mt.layers.Sequential([mt.layers.Dense(4, activation="elu", dtype=mt.float64),
                                  mt.layers.Dense(3, activation="elu", dtype=mt.float64)])
    x = mt.random.normal([5, 2], dtype=mt.float64)
    return model, x


def test_batch_jacobian_matches_looped_and_full_jacobian_blocks():
    model, x = _two_layer_model()
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = model(x)
    vectorized = tape.batch_jacobian(y, x).numpy()
    looped = tape.batch_jacobian(y, x, experimental_use_pfor=False).numpy()
    full = tape.jacobian(y, x).numpy()                      # (5, 3, 5, 2)
    assert vectorized.shape == (5, 3, 2)
    blocks = np.stack([full[i, :, i, :] for i in range(5)])
    np.testing.assert_allclose(vectorized, looped, rtol=0, atol=1e-12)
    np.testing.assert_allclose(vectorized, blocks, rtol=0, atol=1e-12)
    # and the blocks are what finite differences say, example by example
    for i in range(5):
        for k in range(2):
            direction = np.zeros((5, 2))
            direction[i, k] = 1.0
            numeric = central_difference(model, x, direction=direction)
            np.testing.assert_allclose(vectorized[i, :, k], numeric[i], atol=1e-8)


def test_loop_jacobians_need_a_persistent_tape_as_in_tensorflow():
    # TensorFlow: "GradientTape must be created with persistent=True to compute the jacobian
    # with eager execution enabled and with experimental_use_pfor set to False."
    model, x = _two_layer_model()
    with mt.GradientTape(persistent=True) as reference:
        reference.watch(x)
        y = model(x)
    expected = reference.batch_jacobian(y, x).numpy()
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = model(x)
    for method in (tape.jacobian, tape.batch_jacobian):
        with pytest.raises(RuntimeError, match=r"GradientTape must be created with "
                                               r"persistent=True to compute the \w*jacobian"):
            method(y, x, experimental_use_pfor=False)
    # The refusal did not use the tape up: the vectorized version still answers.
    np.testing.assert_allclose(tape.batch_jacobian(y, x).numpy(), expected, atol=1e-12)


def test_batch_jacobian_with_mismatched_batch_sizes_raises():
    x = mt.constant(np.ones((4, 2)))
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.ones((5, 3), dtype=mt.float64) * mt.reduce_sum(x)
    with pytest.raises(ValueError, match="batch sizes differ"):
        tape.batch_jacobian(y, x)


def test_jacobian_of_a_list_target_raises_type_error():
    x = mt.constant([1.0, 2.0])
    with mt.GradientTape() as tape:
        tape.watch(x)
        y, z = x * 2.0, x * 3.0
    with pytest.raises(TypeError, match="single Tensor"):
        tape.jacobian([y, z], x)


# -- Hessian-vector products: forward over reverse -------------------------------------------------


def _f(x):
    return mt.reduce_sum(mt.math.sin(x) * mt.reduce_sum(x * x)) + mt.reduce_prod(x)


def test_forward_over_reverse_hvp_equals_hessian_times_vector():
    x = mt.constant([0.3, -0.7, 1.1, 0.5], dtype=mt.float64)
    v = mt.constant([1.0, -2.0, 0.5, 0.25], dtype=mt.float64)
    with mt.autodiff.ForwardAccumulator(x, v) as acc:
        with mt.GradientTape() as tape:
            tape.watch(x)
            y = _f(x)
        g = tape.gradient(y, x)
    hvp = acc.jvp(g).numpy()
    hessian = mt.hessian(_f)(x).numpy()
    np.testing.assert_allclose(hvp, hessian @ v.numpy(), rtol=0, atol=1e-10)
    # independent: the derivative of the gradient along v by central differences
    numeric = central_difference(mt.grad(_f), x, direction=v.numpy())
    np.testing.assert_allclose(hvp, numeric, atol=1e-7)


# -- the functional API ----------------------------------------------------------------------------


X = np.array([0.5, -1.0, 2.0])


def test_grad_closed_form():
    g = mt.grad(lambda x: mt.reduce_sum(x ** 3))(mt.constant(X))
    np.testing.assert_allclose(g.numpy(), 3 * X ** 2, rtol=1e-12)
    g = mt.grad(lambda x: x ** 3)(2.0)
    assert g.dtype == np.float32 and float(g) == 12.0


def test_grad_with_tuple_argnums():
    y = np.array([2.0, 3.0, -1.0])
    def f(x, y):
        return mt.reduce_sum(x * y + y ** 2)

    gx, gy = mt.grad(f, argnums=(0, 1))(mt.constant(X), mt.constant(y))
    np.testing.assert_allclose(gx.numpy(), y, rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), X + 2 * y, rtol=1e-12)
    only_y = mt.grad(f, argnums=1)(mt.constant(X), mt.constant(y))
    np.testing.assert_allclose(only_y.numpy(), X + 2 * y, rtol=1e-12)


def test_value_and_grad_int_and_tuple_argnums():
    def f(x, y):
        return mt.reduce_sum(mt.math.sin(x) * y)

    x, y = mt.constant(X), mt.constant(2.0 * X)
    value, g = mt.value_and_grad(f)(x, y)
    np.testing.assert_allclose(float(value), np.sum(np.sin(X) * 2 * X), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), np.cos(X) * 2 * X, rtol=1e-12)
    value, (gx, gy) = mt.value_and_grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx.numpy(), np.cos(X) * 2 * X, rtol=1e-12)
    np.testing.assert_allclose(gy.numpy(), np.sin(X), rtol=1e-12)


def test_grad_of_a_non_scalar_output_is_a_clear_error():
    with pytest.raises(ValueError, match="scalar"):
        mt.grad(lambda x: x * 2.0)(mt.constant(X))


def test_functional_jacobian_closed_forms():
    j = mt.jacobian(lambda x: x ** 2)(mt.constant(X))
    np.testing.assert_allclose(j.numpy(), np.diag(2 * X), rtol=1e-12)
    a = np.arange(6.0).reshape(2, 3)
    j = mt.jacobian(lambda x: mt.matmul(mt.constant(a), mt.reshape(x, [3, 1])))(mt.constant(X))
    np.testing.assert_allclose(j.numpy(), a.reshape(2, 1, 3), rtol=1e-12)


def test_hessian_closed_forms():
    h = mt.hessian(lambda x: mt.reduce_sum(x ** 3))(mt.constant(X))
    np.testing.assert_allclose(h.numpy(), np.diag(6 * X), rtol=1e-12)
    a = np.array([[2.0, 1.0, 0.0], [-1.0, 3.0, 0.5], [0.0, 4.0, 1.0]])

    def quad(x):
        ax = mt.reshape(mt.matmul(mt.constant(a), mt.reshape(x, [3, 1])), [3])
        return mt.reduce_sum(x * ax)

    np.testing.assert_allclose(mt.hessian(quad)(mt.constant(X)).numpy(), a + a.T, rtol=1e-12)


def test_hessian_with_tuple_argnums():
    y = np.array([2.0, 3.0, -1.0])
    def f(x, y):
        return mt.reduce_sum(x * x * y)

    (hxx, hxy), (hyx, hyy) = mt.hessian(f, argnums=(0, 1))(mt.constant(X), mt.constant(y))
    np.testing.assert_allclose(hxx.numpy(), np.diag(2 * y), rtol=1e-12)
    np.testing.assert_allclose(hxy.numpy(), np.diag(2 * X), rtol=1e-12)
    np.testing.assert_allclose(hyx.numpy(), np.diag(2 * X), rtol=1e-12)
    np.testing.assert_allclose(hyy.numpy(), np.zeros((3, 3)), rtol=1e-12)


def test_jvp_closed_form():
    v = np.array([1.0, 0.5, -2.0])
    out, tangent = mt.jvp(mt.math.sin, (mt.constant(X),), (mt.constant(v),))
    np.testing.assert_allclose(out.numpy(), np.sin(X), rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), np.cos(X) * v, rtol=1e-12)
    out, tangent = mt.jvp(lambda x, y: x * y, (mt.constant(X), mt.constant(v)),
                          (mt.constant(np.ones(3)), mt.constant(np.zeros(3))))
    np.testing.assert_allclose(tangent.numpy(), v, rtol=1e-12)


def test_vjp_closed_form_and_reuse():
    y = np.array([2.0, 3.0, -1.0])
    out, vjp_fn = mt.vjp(lambda x, y: x * y, mt.constant(X), mt.constant(y))
    np.testing.assert_allclose(out.numpy(), X * y, rtol=1e-12)
    u = np.array([1.0, -1.0, 0.5])
    for _ in range(2):  # vjp_fn can be called again
        gx, gy = vjp_fn(mt.constant(u))
        np.testing.assert_allclose(gx.numpy(), u * y, rtol=1e-12)
        np.testing.assert_allclose(gy.numpy(), u * X, rtol=1e-12)


def test_gradients_function_with_an_unknown_param_name():
    def f(x, y):
        return x * y

    with pytest.raises(ValueError, match="'z' is not a parameter of f"):
        mt.gradients_function(f, params=["z"])
    gx, = mt.gradients_function(f, params=["x"])(3.0, 4.0)
    assert float(gx) == 4.0


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_vectorized_jacobian_of_the_gradient_equals_looped(spec):
    """A Hessian-like Jacobian: the batched backward pass runs through recorded gradient ops."""
    arrays = spec.args()
    results = []
    for use_pfor in (True, False):
        xs = [mt.constant(a) for a in arrays]
        rng = np.random.default_rng(2)
        with mt.GradientTape(persistent=True) as outer:
            outer.watch(xs)
            with mt.GradientTape() as inner:
                inner.watch(xs)
                outs = _outputs(spec.fn(*xs))
            cotangents = [mt.constant(rng.standard_normal(o.shape).astype(o.dtype)) for o in outs]
            grads = inner.gradient(outs, xs, output_gradients=cotangents,
                                   unconnected_gradients="zero")
        results.append([[j.numpy() for j in outer.jacobian(
            g, xs, experimental_use_pfor=use_pfor, unconnected_gradients="zero")] for g in grads])
    for row_v, row_l in zip(*results):
        for jv, jl in zip(row_v, row_l):
            np.testing.assert_allclose(jv, jl, rtol=0, atol=spec.tol)


@pytest.mark.parametrize("source, target", [(mt.float32, mt.float64), (mt.float64, mt.float32)])
def test_cast_gradient_has_the_source_dtype(source, target):
    x = mt.constant([0.5, -1.5], dtype=source)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.cast(x, target) ** 2
    g = tape.gradient(y, x)
    assert y.dtype == target and g.dtype == source
    np.testing.assert_allclose(g.numpy(), [1.0, -3.0])
