"""The Hessian's path (issue 31, item 5): what the vectorized Jacobian of a gradient runs.

- The Hessian of the benchmark's network (``benchmarks/workloads.py`` ``hessian``: a 2-layer
  ReLU net, ``t2.jacobian(t1.gradient(loss, w1), w1)``) against central finite differences of
  its gradient written out by hand in NumPy (float64), and against the loop
  (``experimental_use_pfor=False``), one backward pass per row.
- ``Pow``'s rule writes ``x ** (y - 1)`` as ``x`` when the exponent is the constant 2 (one
  recorded op fewer on a Hessian's outer tape); an exponent that a tape tracks or a forward
  accumulator pushes a tangent through keeps the general rule, so its derivatives stay exact:
  checked against the closed form ``d/dp (p x^(p-1)) = x^(p-1) (1 + p log x)``.
- The vectorized Jacobian's own steps: its seeds are the rows of the identity in every chunk,
  and ReLU's second-order zeros have the cotangents' batch axis.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt


def _data(dtype=np.float64, seed=2):
    rng = np.random.default_rng(seed)
    w1, b1 = rng.standard_normal((5, 8)), rng.standard_normal(8) * 0.1
    w2, b2 = rng.standard_normal((8, 6)), rng.standard_normal(6) * 0.1
    x = rng.standard_normal((7, 5))
    return [a.astype(dtype) for a in (w1, b1, w2, b2, x)]


def _numpy_gradient(w1, b1, w2, b2, x):
    """d mean(relu(relu(x w1 + b1) w2 + b2)**2) / d w1, by hand."""
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0)
    z2 = h @ w2 + b2
    y = np.maximum(z2, 0)
    dz2 = 2 * y / y.size * (z2 > 0)
    dz1 = dz2 @ w2.T * (z1 > 0)
    return x.T @ dz1


def _minitape_hessian(w1, b1, w2, b2, x, use_pfor=True, parallel_iterations=None):
    w1, b1, w2, b2 = [mt.Variable(a) for a in (w1, b1, w2, b2)]
    xs = mt.constant(x)
    with mt.GradientTape(persistent=not use_pfor) as t2:
        with mt.GradientTape() as t1:
            h = mt.nn.relu(mt.matmul(xs, w1) + b1)
            y = mt.nn.relu(mt.matmul(h, w2) + b2)
            loss = mt.reduce_mean(y**2)
        g = t1.gradient(loss, w1)
    return t2.jacobian(g, w1, experimental_use_pfor=use_pfor,
                       parallel_iterations=parallel_iterations).numpy()


def test_the_benchmark_hessian_matches_finite_differences_of_the_hand_gradient():
    w1, b1, w2, b2, x = _data()
    eps = 1e-6
    expected = np.zeros((5, 8, 5, 8))
    for i in range(5):
        for j in range(8):
            step = np.zeros_like(w1)
            step[i, j] = eps
            expected[:, :, i, j] = (_numpy_gradient(w1 + step, b1, w2, b2, x)
                                    - _numpy_gradient(w1 - step, b1, w2, b2, x)) / (2 * eps)
    hessian = _minitape_hessian(w1, b1, w2, b2, x)
    assert hessian.shape == (5, 8, 5, 8)
    assert np.abs(expected).max() > 0.01   # (not a Hessian of zeros)
    np.testing.assert_allclose(hessian, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("parallel_iterations", [None, 1, 7, 40])
def test_the_vectorized_hessian_is_the_loops(parallel_iterations):
    """Each chunk size gives the loop's numbers (float32, as the benchmark)."""
    data = _data(np.float32)
    loop = _minitape_hessian(*data, use_pfor=False)
    vectorized = _minitape_hessian(*data, parallel_iterations=parallel_iterations)
    np.testing.assert_allclose(vectorized, loop, rtol=1e-6, atol=1e-7)


def _recorded_types(tape):
    return [op.type for op in tape.operations]


def test_a_constant_square_records_one_op_fewer_on_the_outer_tape():
    x = mt.Variable([0.5, -1.5, 3.0], dtype=mt.float64)
    with mt.GradientTape() as t2:
        with mt.GradientTape() as t1:
            z = mt.reduce_sum(x**2)
        g = t1.gradient(z, x)
    # (the forward Pow and Sum, then the gradient: 2 * x, one Mul; no Pow(x, 1))
    assert _recorded_types(t2) == ["Pow", "Sum", "Mul"]
    np.testing.assert_array_equal(g.numpy(), [1.0, -3.0, 6.0])
    np.testing.assert_array_equal(t2.jacobian(g, x).numpy(), 2 * np.eye(3))


def _closed_form(x, p):
    """d/dp of d/dx x**p = p x^(p-1): x^(p-1) (1 + p log x)."""
    return x ** (p - 1) * (1 + p * np.log(x))


@pytest.mark.parametrize("exponent", ["watched", "computed"])
def test_an_exponent_a_tape_tracks_keeps_its_second_derivative(exponent):
    """A Variable exponent (watched by the outer tape) or one an op made from it (tracked,
    not watched) is no constant: the rule keeps ``x ** (y - 1)`` and its log term."""
    xv = np.array([0.5, 1.5, 3.0])
    x = mt.constant(xv)
    p = mt.Variable(2.0, dtype=mt.float64)
    with mt.GradientTape() as t2:
        q = p if exponent == "watched" else p * 1.0
        with mt.GradientTape() as t1:
            t1.watch(x)
            z = mt.reduce_sum(x**q)
        g = t1.gradient(z, x)
        assert "Pow" in _recorded_types(t2)[2:]   # (the gradient's x ** (q - 1))
        s = mt.reduce_sum(g)
    np.testing.assert_allclose(g.numpy(), 2 * xv, rtol=1e-15)
    np.testing.assert_allclose(t2.gradient(s, p).numpy(), _closed_form(xv, 2.0).sum(),
                               rtol=1e-12)


def test_an_exponent_with_a_tangent_keeps_its_log_term_in_forward_mode():
    xv = np.array([0.5, 1.5, 3.0])
    x = mt.constant(xv)
    p = mt.constant(2.0, dtype=mt.float64)
    with mt.autodiff.ForwardAccumulator(p, mt.constant(1.0, dtype=mt.float64)) as acc:
        with mt.GradientTape() as tape:
            tape.watch(x)
            z = mt.reduce_sum(x**p)
        g = tape.gradient(z, x)
    np.testing.assert_allclose(acc.jvp(g).numpy(), _closed_form(xv, 2.0), rtol=1e-12)


def test_a_constant_square_gives_the_general_rules_numbers():
    """Exponent 2 (the short rule) and a Variable exponent 2 that the outer tape tracks (the
    general rule) give the same gradient and Hessian bit for bit (``x ** 1`` is ``x``),
    zeros and negatives included."""
    xv = np.array([-2.0, 0.0, 0.5, 3.0])
    results = []
    for exponent in (2.0, mt.Variable(2.0, dtype=mt.float64)):
        x = mt.Variable(xv)
        with mt.GradientTape() as t2:
            with mt.GradientTape() as t1:
                z = mt.reduce_sum(x**exponent)
            g = t1.gradient(z, x)
        results.append((_recorded_types(t2), g.numpy(), t2.jacobian(g, x).numpy()))
    (short, g_short, h_short), (general, g_general, h_general) = results
    assert short.count("Pow") == 1 and general.count("Pow") == 2
    np.testing.assert_array_equal(g_short, g_general)
    np.testing.assert_array_equal(h_short, h_general)
    np.testing.assert_array_equal(h_short, 2 * np.eye(4))


def test_the_seeds_are_the_identitys_rows_in_every_chunk():
    x = mt.Variable(np.arange(1.0, 8.0))
    for chunk in (1, 2, 3, 7, 100):
        with mt.GradientTape() as tape:
            y = x * 1.0
        np.testing.assert_array_equal(tape.jacobian(y, x, parallel_iterations=chunk).numpy(),
                                      np.eye(7))


def test_relu_second_order_zeros_carry_the_batch_axis():
    """``ReluGrad``'s gradient with respect to its features is zeros (TensorFlow's), of the
    cotangents' batch shape in a vectorized pass: the Hessian of ``relu(x) * x`` is
    ``diag(2 * (x > 0))`` by both the vectorized pass and the loop."""
    xv = np.array([-1.0, 0.5, 2.0])
    out = []
    for use_pfor in (True, False):
        x = mt.Variable(xv)
        with mt.GradientTape(persistent=True) as t2:
            with mt.GradientTape() as t1:
                z = mt.reduce_sum(mt.nn.relu(x) * x)
            g = t1.gradient(z, x)
        out.append(t2.jacobian(g, x, experimental_use_pfor=use_pfor).numpy())
    np.testing.assert_array_equal(out[0], np.diag(2.0 * (xv > 0)))
    np.testing.assert_array_equal(out[1], out[0])
