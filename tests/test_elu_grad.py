"""ELU's gradient as one op, ``EluGrad`` (issue #14), against NumPy closed forms.

(Finite differences of ``EluGrad`` itself, first and second order, run with every other op's
in ``test_ops_gradients.py``: its spec is in ``op_specs.py``.)
"""

import numpy as np
import pytest

import minitape as mt
from minitape.ops import nn_ops

RNG = np.random.default_rng(7)


def _closed_slope(x):
    return np.where(x > 0, 1.0, np.exp(x))      # d elu / dx


def test_elu_grad_value_and_dtype():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    y = nn_ops.elu(mt.constant(x))
    dy = RNG.standard_normal((3, 4)).astype(np.float32)
    got = nn_ops.elu_grad(mt.constant(dy), y)
    assert got.dtype == np.float32 and got.shape == (3, 4)
    np.testing.assert_allclose(got.numpy(), dy * _closed_slope(x), rtol=1e-6)


def test_elu_gradient_is_one_elu_grad_op():
    x = mt.constant(RNG.standard_normal(5))
    with mt.GradientTape() as outer:
        outer.watch(x)
        with mt.GradientTape() as inner:
            inner.watch(x)
            y = mt.reduce_sum(mt.nn.elu(x))
        g = inner.gradient(y, x)
    recorded = [op.type for op in outer._ops]
    assert recorded.count("EluGrad") == 1
    assert not {"Greater", "Select", "SelectV2", "OnesLike"} & set(recorded)
    np.testing.assert_allclose(g.numpy(), _closed_slope(x.numpy()), rtol=1e-12)
    # The second derivative goes through EluGrad's own gradient: exp(x) where x < 0, else 0.
    xv = x.numpy()
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), np.where(xv > 0, 0.0, np.exp(xv)),
                               rtol=1e-12)


def test_batched_gradients_broadcast_over_the_leading_axes():
    x = RNG.standard_normal((2, 3))
    y = nn_ops.elu(mt.constant(x))
    dy = RNG.standard_normal((5, 2, 3))             # a batch of 5 cotangents
    got = nn_ops.elu_grad(mt.constant(dy), y)
    np.testing.assert_allclose(got.numpy(), dy * _closed_slope(x), rtol=1e-12)


def test_vectorized_jacobian_of_elu_is_its_diagonal_slope():
    x = mt.constant(RNG.standard_normal((2, 3)))
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.nn.elu(x)
    jac = tape.jacobian(y, x).numpy()
    want = np.einsum("ij,ik,jl->ijkl", _closed_slope(x.numpy()), np.eye(2), np.eye(3))
    np.testing.assert_allclose(jac, want, rtol=1e-12)


def test_mismatched_dtypes_are_refused():
    with pytest.raises(TypeError, match="EluGrad: gradients is float64 but outputs is float32"):
        nn_ops.elu_grad(mt.constant(np.ones(2)), mt.constant(np.ones(2, np.float32)))
