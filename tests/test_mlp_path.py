"""The ops on a training step's path take short paths that give the general paths' Tensors.

Issue 31 item 5 (the MLP targets): ``matmul`` of two float matrices skips the checks and the
stacked-matrix handling that only other operands need, and shares its ``attrs`` dict;
``unbroadcast`` sums a bias's leading axes at once instead of going through the general
``_summed_axes`` sum and reshape; the cross-entropy's logits gradient is computed in one new
array. The mean's rule (``dy / n`` spread over the reduced axes) is checked too. Each
short path is compared with the general path or the formula (same values, bit for bit, and the
same dtype), and the gradients through it with central differences, to second order, in a
vectorized Jacobian, and with the hand-written NumPy training step.
"""

import numpy as np
import pytest

import minitape as mt
from minitape.ops import array_ops, math_ops, reduction_ops
from minitape.testing import check_grads

RNG = np.random.default_rng(31)
FLAGS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a, transpose_b", FLAGS)
def test_two_matrices_give_the_general_paths_tensor(dtype, transpose_a, transpose_b):
    a0 = RNG.standard_normal((5, 3) if transpose_a else (3, 5)).astype(dtype)
    b0 = RNG.standard_normal((4, 5) if transpose_b else (5, 4)).astype(dtype)
    a, b = mt.constant(a0), mt.constant(b0)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        fast = mt.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
        general = math_ops._matmul_general(a, b, transpose_a, transpose_b, None)
    assert fast.dtype == general.dtype == dtype and fast.shape == general.shape == (3, 4)
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
    # ... the same numbers as NumPy's product, and the same recorded op
    want = (a0.T if transpose_a else a0) @ (b0.T if transpose_b else b0)
    np.testing.assert_array_equal(fast.numpy(), want)
    ops = tape.operations
    assert [op.type for op in ops] == ["MatMul", "MatMul"]
    assert ops[0].attrs == ops[1].attrs == {"transpose_a": transpose_a,
                                            "transpose_b": transpose_b}


def test_the_short_path_leaves_other_operands_to_the_general_one():
    # stacks, integers and bad shapes still get the general path's results and errors
    stack = mt.constant(RNG.standard_normal((2, 3, 4)))
    assert mt.matmul(stack, mt.ones([4, 5], mt.float64)).shape == (2, 3, 5)
    ints = mt.matmul(mt.constant([[1, 2]]), mt.constant([[3], [4]]))
    assert ints.dtype == np.int32 and ints.numpy().tolist() == [[11]]
    with pytest.raises(mt.errors.InvalidArgumentError, match="inner dimensions 3 and 2"):
        mt.matmul(mt.ones([2, 3]), mt.ones([2, 3]))
    with pytest.raises(mt.errors.InvalidArgumentError, match="after transpose_a=True"):
        mt.matmul(mt.ones([2, 3]), mt.ones([2, 3]), transpose_a=True, transpose_b=True)
    with pytest.raises(TypeError, match="bool"):
        mt.matmul(mt.constant([[True]]), mt.constant([[False]]))


@pytest.mark.parametrize("transpose_a, transpose_b", FLAGS)
def test_matmul_gradients_match_central_differences_to_second_order(transpose_a, transpose_b):
    a0 = RNG.standard_normal((4, 3) if transpose_a else (3, 4))
    b0 = RNG.standard_normal((2, 4) if transpose_b else (4, 2))
    check_grads(lambda a, b: mt.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
                ** 2, a0, b0, order=2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("g_shape, shape, batch_ndim", [
    ((64, 10), (10,), 0),          # a bias next to a batch
    ((2, 5, 3), (3,), 0),          # two leading axes
    ((2, 5, 3), (5, 3), 0),
    ((5, 3), (), 0),               # a scalar
    ((7, 5, 3), (3,), 1),          # a vectorized Jacobian's batch axis in front
    ((7, 2, 5, 3), (5, 3), 1),
])
def test_a_bias_gradient_sums_the_leading_axes_as_the_general_path(dtype, g_shape, shape,
                                                                  batch_ndim):
    g0 = RNG.standard_normal(g_shape).astype(dtype)
    got = math_ops.unbroadcast(mt.constant(g0), shape, batch_ndim)
    # the general path: every summed axis kept, then reshaped
    _, axes = math_ops._summed_axes(g_shape, shape, batch_ndim)
    general = array_ops.reshape(
        reduction_ops.reduce_sum(mt.constant(g0), axis=axes, keepdims=True),
        g_shape[:batch_ndim] + shape)
    assert got.shape == general.shape == g_shape[:batch_ndim] + shape
    assert got.dtype == general.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), general.numpy())


def test_unbroadcast_of_size_one_axes_takes_the_general_path():
    g0 = RNG.standard_normal((2, 4, 3))
    got = math_ops.unbroadcast(mt.constant(g0), (4, 1))
    np.testing.assert_allclose(got.numpy(), g0.sum(axis=(0, 2)).reshape(4, 1), rtol=1e-12)
    check_grads(lambda x, b: (x + b) ** 2, g0, RNG.standard_normal((4, 1)), order=2)


def test_a_training_step_gives_the_hand_written_numpy_gradients():
    # The benchmark's MLP (784-256-10 shrunk to 12-8-5): the same ops, against NumPy by hand.
    sizes, batch = [12, 8, 5], 6
    layers = [(RNG.standard_normal((m, n)) * 0.5, RNG.standard_normal(n) * 0.1)
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = RNG.standard_normal((batch, sizes[0]))
    onehot = np.eye(sizes[-1])[RNG.integers(0, sizes[-1], batch)]
    variables = [mt.Variable(a) for wb in layers for a in wb]
    with mt.GradientTape() as tape:
        h = mt.constant(x)
        for i in range(0, len(variables), 2):
            h = mt.matmul(h, variables[i]) + variables[i + 1]
            if i < len(variables) - 2:
                h = mt.nn.relu(h)
        loss = mt.reduce_mean(mt.nn.softmax_cross_entropy_with_logits(mt.constant(onehot), h))
    grads = tape.gradient(loss, variables)
    # by hand
    hs, h = [x], x
    for i, (w, b) in enumerate(layers):
        z = h @ w + b
        h = np.maximum(z, 0) if i < len(layers) - 1 else z
        hs.append(h)
    p = np.exp(h - h.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz, want = (p - onehot) / batch, []
    for i in reversed(range(len(layers))):
        want[:0] = [hs[i].T @ dz, dz.sum(axis=0)]
        dz = (dz @ layers[i][0].T) * (hs[i] > 0)
    for g, w in zip(grads, want):
        assert g.dtype == np.float64 and g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis, keepdims", [
    ((64,), None, False),          # a training step's loss: the mean of the batch's losses
    ((4, 3), 0, False), ((4, 3), 1, False), ((4, 3), 1, True), ((2, 3, 4), (0, 2), False),
])
def test_the_mean_rule_gives_dy_over_n_everywhere(dtype, shape, axis, keepdims):
    # The rule divides dy by n, then spreads it over the reduced axes (Sum's rule), as
    # TensorFlow's _MeanGrad: bit for bit ``dy / n`` broadcast, recorded by an outer tape.
    # (Dividing by an array of n's of the input's shape would be one op fewer, but fills and
    # divides the whole input: three times slower for a mean over a million elements.)
    x = mt.constant(RNG.standard_normal(shape).astype(dtype))
    dy0 = RNG.standard_normal(np.mean(x.numpy(), axis=axis, keepdims=keepdims).shape)
    dy = mt.constant(dy0.astype(dtype))
    with mt.GradientTape() as outer:
        outer.watch(dy)
        with mt.GradientTape() as tape:
            tape.watch(x)
            y = mt.reduce_mean(x, axis=axis, keepdims=keepdims)
        g = tape.gradient(y, x, output_gradients=dy)
    # dy / n on dy's own elements first (fewer than x's), then spread over the reduced axes
    # (a Reshape first where dy lacks them)
    types = [op.type for op in outer.operations]
    assert types in (["RealDiv", "BroadcastTo"], ["RealDiv", "Reshape", "BroadcastTo"])
    n = x.numpy().size // np.asarray(dy0).size
    kept = np.mean(x.numpy(), axis=axis, keepdims=True).shape
    want = np.broadcast_to(dy.numpy().reshape(kept) / dtype(n), shape)
    assert g.dtype == dtype and g.shape == shape
    np.testing.assert_array_equal(g.numpy(), want)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True)])
def test_the_mean_rule_to_second_order_and_in_a_vectorized_jacobian(axis, keepdims):
    x0 = RNG.standard_normal((3, 4))
    check_grads(lambda x: mt.reduce_mean(x * x * x, axis=axis, keepdims=keepdims), x0, order=2)
    # the rule with a batch of cotangents (batch_ndim > 0) against the loop, one row at a time
    x = mt.constant(x0)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.reduce_mean(x * x, axis=axis, keepdims=keepdims)
    vectorized = tape.jacobian(y, x).numpy()
    looped = tape.jacobian(y, x, experimental_use_pfor=False).numpy()
    np.testing.assert_allclose(vectorized, looped, rtol=1e-15, atol=0)
    n = x0.size // np.mean(x0, axis=axis).size
    closed = np.zeros(np.mean(x0, axis=axis, keepdims=keepdims).shape + x0.shape)
    for out in np.ndindex(closed.shape[:-2]):   # d mean_j / d x_i = 2 x_i / n where i in j
        row = np.zeros(x0.shape)
        if axis is None:
            row[:] = 2 * x0 / n
        elif axis == 1:
            row[out[0]] = 2 * x0[out[0]] / n
        else:
            row[:, out[-1]] = 2 * x0[:, out[-1]] / n
        closed[out] = row
    np.testing.assert_allclose(vectorized, closed, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_cross_entropy_rule_gives_the_formulas_numbers_and_its_jacobian(dtype):
    # The logits' gradient ``(softmax * sum(labels) - labels) * dy`` is computed in one new
    # array: bit for bit the formula's numbers; labels that are no distribution (sums != 1)
    # check the ``sum(labels)`` factor.
    logits0 = RNG.standard_normal((6, 5)).astype(dtype)
    labels0 = RNG.uniform(0, 1, (6, 5)).astype(dtype)
    dy0 = RNG.standard_normal(6).astype(dtype)
    logits, labels = mt.constant(logits0), mt.constant(labels0)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        loss = mt.nn.softmax_cross_entropy_with_logits(labels, logits)
    g = tape.gradient(loss, logits, output_gradients=mt.constant(dy0))
    e = np.exp(logits0 - logits0.max(axis=1, keepdims=True))
    s = e / e.sum(axis=1, keepdims=True)
    total = labels0.sum(axis=1, keepdims=True)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g.numpy(), (s * total - labels0) * dy0[:, None])
    # a batch of cotangents (a vectorized Jacobian): row i of d loss_i / d logits only
    vectorized = tape.jacobian(loss, logits).numpy()
    looped = tape.jacobian(loss, logits, experimental_use_pfor=False).numpy()
    closed = np.zeros((6, 6, 5), dtype)
    closed[np.arange(6), np.arange(6)] = s * total - labels0
    np.testing.assert_array_equal(vectorized, looped)
    np.testing.assert_allclose(vectorized, closed, rtol=1e-5 if dtype == np.float32 else 1e-13)
