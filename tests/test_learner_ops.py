"""The ops of issue #13, checked for values against independent NumPy references and for misuse.

Their gradients (to second order), JVPs and vectorized Jacobians are checked by the
registry-driven table (``tests/op_specs.py``); here: the forward values, the semantics that
TensorFlow documents (exclusive/reverse cumsum, SAME padding, inverted dropout, ...), and the
clear errors a learner gets for a wrong axis, padding string, rank or rate.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitape as mt
from minitape.testing import check_grads

RNG = np.random.default_rng(0)


# -- references written with plain loops ----------------------------------------------------------


def conv2d_reference(x, w, strides, padding):
    """Direct definition of a 2-D cross-correlation, with TensorFlow's SAME padding rule."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    sh, sw = strides
    if padding == "SAME":
        ho, wo = -(-h // sh), -(-wd // sw)
        ph = max((ho - 1) * sh + kh - h, 0)
        pw = max((wo - 1) * sw + kw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        ho, wo = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, ho, wo, o))
    for i in range(ho):
        for j in range(wo):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


def max_pool_reference(x, k, s, padding):
    n, h, wd, c = x.shape
    if padding == "SAME":
        ho, wo = -(-h // s), -(-wd // s)
        ph, pw = max((ho - 1) * s + k - h, 0), max((wo - 1) * s + k - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)),
                   constant_values=-np.inf)
    else:
        ho, wo = (h - k) // s + 1, (wd - k) // s + 1
    out = np.empty((n, ho, wo, c))
    for i in range(ho):
        for j in range(wo):
            out[:, i, j] = x[:, i * s:i * s + k, j * s:j * s + k].max(axis=(1, 2))
    return out


# -- convolution and pooling ----------------------------------------------------------------------


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (2, 1), (3, 3)])
@pytest.mark.parametrize("shape", [((2, 7, 6, 3), (3, 3, 3, 4)), ((1, 5, 5, 1), (2, 4, 1, 2))])
def test_conv2d_matches_the_definition(shape, strides, padding):
    x, w = RNG.standard_normal(shape[0]), RNG.standard_normal(shape[1])
    y = mt.nn.conv2d(mt.constant(x), mt.constant(w), list(strides), padding)
    np.testing.assert_allclose(y.numpy(), conv2d_reference(x, w, strides, padding), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), h=st.integers(1, 6), w=st.integers(1, 6), c=st.integers(1, 3),
       o=st.integers(1, 3), kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3),
       sw=st.integers(1, 3), padding=st.sampled_from(["VALID", "SAME"]),
       seed=st.integers(0, 2**32 - 1))
def test_conv2d_on_drawn_shapes(n, h, w, c, o, kh, kw, sh, sw, padding, seed):
    """Any shapes, strides and padding: the definition's values, and first-order gradients
    for both arguments (the table checks the second order on fixed cases)."""
    if padding == "VALID" and (kh > h or kw > w):
        with pytest.raises(ValueError, match="does not fit"):
            mt.nn.conv2d(mt.ones([n, h, w, c]), mt.ones([kh, kw, c, o]), [sh, sw], padding)
        return
    rng = np.random.default_rng(seed)
    x, k = rng.standard_normal((n, h, w, c)), rng.standard_normal((kh, kw, c, o))
    y = mt.nn.conv2d(mt.constant(x), mt.constant(k), [sh, sw], padding)
    np.testing.assert_allclose(y.numpy(), conv2d_reference(x, k, (sh, sw), padding), atol=1e-12)
    check_grads(lambda a, b: mt.nn.conv2d(a, b, [sh, sw], padding), x, k, order=1)


def test_conv2d_gradients_on_a_larger_case():
    # first order only: the table checks the second order on small cases
    check_grads(lambda x, w: mt.nn.conv2d(x, w, 2, "SAME"),
                RNG.standard_normal((2, 6, 7, 3)), RNG.standard_normal((3, 3, 3, 2)), order=1)


def test_conv2d_filter_gradient_in_float32_keeps_the_dtype():
    x = mt.constant(RNG.standard_normal((1, 4, 4, 2)).astype(np.float32))
    w = mt.Variable(RNG.standard_normal((3, 3, 2, 1)).astype(np.float32))
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(mt.nn.conv2d(x, w, 1, "SAME") ** 2)
    g = tape.gradient(loss, w)
    assert g.dtype == np.float32 and g.shape == (3, 3, 2, 1)


@pytest.mark.parametrize("k, s, padding", [(2, 2, "VALID"), (3, 2, "SAME"), (3, 1, "VALID"),
                                           (2, 3, "SAME")])
def test_max_pool2d_matches_the_definition(k, s, padding):
    x = RNG.standard_normal((2, 7, 5, 3))
    y = mt.nn.max_pool2d(mt.constant(x), k, s, padding)
    np.testing.assert_allclose(y.numpy(), max_pool_reference(x, k, s, padding))


def test_max_pool2d_gradient_sums_over_overlapping_windows():
    # the largest element wins every window it is in (four 2x2 windows with stride 1)
    x = np.zeros((1, 3, 3, 1))
    x[0, 1, 1, 0] = 5.0
    t = mt.constant(x)
    with mt.GradientTape() as tape:
        tape.watch(t)
        y = mt.nn.max_pool2d(t, 2, 1, "VALID")
    g = tape.gradient(y, t).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(g, [[0, 0, 0], [0, 4, 0], [0, 0, 0]])


@pytest.mark.parametrize("call, match", [
    (lambda: mt.nn.conv2d(mt.ones([4, 4, 1]), mt.ones([2, 2, 1, 1]), 1, "VALID"),
     r"input must have rank 4 \(batch, height, width, channels\), got shape \(4, 4, 1\)"),
    (lambda: mt.nn.conv2d(mt.ones([1, 4, 4, 1]), mt.ones([2, 2, 1]), 1, "VALID"),
     r"filters must have rank 4"),
    (lambda: mt.nn.conv2d(mt.ones([1, 4, 4, 3]), mt.ones([2, 2, 1, 1]), 1, "VALID"),
     r"the input has 3 channels .* the filters expect 1"),
    (lambda: mt.nn.conv2d(mt.ones([1, 4, 4, 1]), mt.ones([2, 2, 1, 1]), 1, "FULL"),
     r"padding must be \"VALID\" .* or \"SAME\" .* got 'FULL'"),
    (lambda: mt.nn.conv2d(mt.ones([1, 4, 4, 1]), mt.ones([2, 2, 1, 1]), 0, "SAME"),
     r"strides must be 1 or more"),
    (lambda: mt.nn.conv2d(mt.ones([1, 4, 4, 1]), mt.ones([2, 2, 1, 1]), [2, 2, 2, 2], "SAME"),
     r"first and last must be 1"),
    (lambda: mt.nn.conv2d(mt.ones([1, 2, 2, 1]), mt.ones([3, 3, 1, 1]), 1, "VALID"),
     r"a window of 3 does not fit in an input of 2"),
    (lambda: mt.nn.max_pool2d(mt.ones([1, 4, 4, 1]), 2, 2, "same_ish"), r"padding must be"),
    (lambda: mt.nn.max_pool2d(mt.ones([4, 4]), 2, 2, "VALID"), r"input must have rank 4"),
])
def test_conv_and_pool_misuse_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_conv2d_dtype_mismatch_raises_type_error():
    with pytest.raises(TypeError, match="float64 but filters are float32"):
        mt.nn.conv2d(mt.ones([1, 3, 3, 1], dtype=mt.float64), mt.ones([2, 2, 1, 1]), 1, "VALID")


# -- reductions and scans -------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # log(0) = -inf
def test_reduce_logsumexp_matches_numpy_and_does_not_overflow():
    x = RNG.standard_normal((3, 4))
    for axis in (None, 0, -1, [0, 1]):
        expected = np.log(np.sum(np.exp(x), axis=None if axis is None else tuple(
            np.atleast_1d(axis))))
        np.testing.assert_allclose(mt.reduce_logsumexp(mt.constant(x), axis=axis).numpy(),
                                   expected, rtol=1e-12)
    big = mt.math.reduce_logsumexp(mt.constant([1000.0, 1000.0], dtype=mt.float64))
    assert np.isclose(big.numpy(), 1000.0 + np.log(2.0))
    low = mt.math.reduce_logsumexp(mt.constant([[-np.inf, -np.inf], [0.0, -np.inf]]), axis=1)
    np.testing.assert_array_equal(low.numpy(), [-np.inf, 0.0])
    assert mt.math.reduce_logsumexp(mt.constant(x), axis=1, keepdims=True).shape == (3, 1)


def test_reduce_logsumexp_gradient_is_softmax():
    x = mt.constant(RNG.standard_normal((2, 5)) * 50.0)  # large values: still finite
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.math.reduce_logsumexp(x, axis=1)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), mt.nn.softmax(x).numpy(), atol=1e-12)


def test_reduce_variance_and_std_match_numpy():
    x = RNG.standard_normal((3, 4, 2))
    for axis in (None, 1, [0, 2]):
        ax = None if axis is None else tuple(np.atleast_1d(axis))
        np.testing.assert_allclose(mt.math.reduce_variance(mt.constant(x), axis=axis).numpy(),
                                   np.var(x, axis=ax), rtol=1e-12)
        np.testing.assert_allclose(mt.math.reduce_std(mt.constant(x), axis=axis).numpy(),
                                   np.std(x, axis=ax), rtol=1e-12)
    with pytest.raises(TypeError, match="floating"):
        mt.math.reduce_variance(mt.constant([1, 2, 3]))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_matches_numpy(axis, exclusive, reverse):
    x = RNG.standard_normal((3, 4))
    v = np.flip(x, axis) if reverse else x
    expected = np.cumsum(v, axis=axis) - (v if exclusive else 0)
    expected = np.flip(expected, axis) if reverse else expected
    got = mt.math.cumsum(mt.constant(x), axis=axis, exclusive=exclusive, reverse=reverse)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-12)


def test_cumsum_of_integers_keeps_the_dtype():
    y = mt.cumsum(mt.constant([1, 2, 3]))
    assert y.dtype == np.int32 and y.numpy().tolist() == [1, 3, 6]


def test_argmax_argmin_are_int64_and_not_differentiable():
    x = mt.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    assert mt.math.argmax(x).numpy().tolist() == [1, 0, 1]            # axis 0 by default
    assert mt.math.argmax(x, axis=1).numpy().tolist() == [1, 0]       # first of a tie
    assert mt.argmin(x, axis=-1).numpy().tolist() == [0, 1]
    assert mt.math.argmax(x, axis=1).dtype == np.int64
    assert mt.math.argmax(x, axis=1, output_type=mt.int32).dtype == np.int32
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.cast(mt.math.argmax(x, axis=1), mt.float32)
    assert tape.gradient(y, x) is None


@pytest.mark.parametrize("call", [
    lambda x: mt.math.cumsum(x, axis=2),
    lambda x: mt.math.argmax(x, axis=-3),
    lambda x: mt.math.reduce_logsumexp(x, axis=5),
    lambda x: mt.math.reduce_variance(x, axis=[0, 2]),
    lambda x: mt.reverse(x, [2]),
    lambda x: mt.split(x, 2, axis=3),
    lambda x: mt.boolean_mask(x, [True, False], axis=2),
])
def test_wrong_axis_raises_value_error_naming_the_range(call):
    with pytest.raises(ValueError, match=r"out of range for a Tensor of rank 2"):
        call(mt.ones([2, 3]))


def test_one_hot_axis_is_a_new_axis_of_the_indices():
    with pytest.raises(ValueError, match=r"out of range for a new axis of a Tensor of rank 1 "
                                         r".*valid positions are -2 to 1"):
        mt.one_hot([0, 1], 3, axis=3)
    assert mt.one_hot([0, 1], 3, axis=0).shape == (3, 2)


def test_axis_of_the_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="axis"):
        mt.math.cumsum(mt.ones([2, 3]), axis=1.0)


# -- shapes: split, reverse, boolean_mask, one_hot, fill ------------------------------------------


def test_split_and_reverse_match_numpy():
    x = RNG.standard_normal((2, 6))
    pieces = mt.split(mt.constant(x), 3, axis=1)
    for p, e in zip(pieces, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(p.numpy(), e)
    sizes = [p.shape[1] for p in mt.split(mt.constant(x), [1, -1, 2], axis=-1)]
    assert sizes == [1, 3, 2]
    np.testing.assert_array_equal(mt.reverse(mt.constant(x), [0, 1]).numpy(), x[::-1, ::-1])
    np.testing.assert_array_equal(mt.reverse(mt.constant(x), []).numpy(), x)


def test_split_gradient_gives_zeros_to_unused_pieces():
    x = mt.constant(np.arange(6.0))
    with mt.GradientTape() as tape:
        tape.watch(x)
        a, b, c = mt.split(x, 3)
        y = mt.reduce_sum(b * 3.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0, 0, 3, 3, 0, 0])


@pytest.mark.parametrize("call, error, match", [
    (lambda: mt.split(mt.ones([5]), 2), ValueError, r"length 5 .* into 2 equal pieces"),
    (lambda: mt.split(mt.ones([5]), [2, 2]), ValueError, r"add up to 4, but .* has length 5"),
    (lambda: mt.split(mt.ones([5]), [-1, -1]), ValueError, r"one -1"),
    (lambda: mt.split(mt.ones([5]), "two"), TypeError, r"split"),
    (lambda: mt.boolean_mask(mt.ones([2, 3]), [[True, False]]), ValueError,
     r"mask of shape \(1, 2\) does not match"),
    (lambda: mt.boolean_mask(mt.ones([2, 3]), ["a", "b"]), TypeError, r"mask must be bool"),
    (lambda: mt.one_hot([0.0, 1.0], 3), TypeError, r"indices must be integers"),
    (lambda: mt.fill([2], mt.constant([1.0, 2.0])), ValueError, r"value must be a scalar"),
    (lambda: mt.fill([-1, 2], 1.0), ValueError, r"sizes must be 0 or more"),
])
def test_shape_op_misuse(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_boolean_mask_matches_numpy():
    x = RNG.standard_normal((2, 3, 4))
    mask = RNG.standard_normal((2, 3)) > 0
    np.testing.assert_array_equal(mt.boolean_mask(mt.constant(x), mask).numpy(), x[mask])
    mask1 = np.array([True, False, True])
    np.testing.assert_array_equal(mt.boolean_mask(mt.constant(x), mask1, axis=1).numpy(),
                                  x[:, mask1])


def test_one_hot_matches_tensorflow_semantics():
    y = mt.one_hot([0, 2, -1, 5], 3)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    z = mt.one_hot([[1, 0]], 2, on_value=5.0, off_value=-1.0, axis=0)
    assert z.shape == (2, 1, 2)
    np.testing.assert_array_equal(z.numpy()[:, 0, :], [[-1, 5], [5, -1]])
    assert mt.one_hot(1, 3, dtype=mt.int32).numpy().tolist() == [0, 1, 0]


def test_one_hot_gradient_of_on_and_off_values():
    on, off = mt.Variable(1.0), mt.Variable(0.0)
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(mt.one_hot([0, 1, 1], 4, on_value=on, off_value=off) * 2.0)
    d_on, d_off = tape.gradient(y, [on, off])
    assert float(d_on) == 6.0 and float(d_off) == 18.0


def test_fill_gradient_is_the_sum_of_the_incoming_gradient():
    # the defect of issue #13: this was a silent None
    v = mt.Variable(0.5)
    weights = mt.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(mt.fill([2, 3], v) * weights)
    assert float(tape.gradient(y, v)) == 21.0
    assert mt.fill((2,), 3).dtype == np.int32


# -- dropout and the sparse cross-entropy ---------------------------------------------------------


def test_dropout_is_inverted_dropout():
    x = mt.ones([200, 100], dtype=mt.float64)
    y = mt.nn.dropout(x, rate=0.25, seed=0).numpy()
    assert set(np.unique(y)) == {0.0, 1.0 / 0.75}
    assert abs((y == 0).mean() - 0.25) < 0.01       # 20,000 draws: the std is 0.003
    assert abs(y.mean() - 1.0) < 0.02               # the expected value is kept
    np.testing.assert_array_equal(mt.nn.dropout(x, 0.25, seed=0).numpy(), y)  # repeatable
    np.testing.assert_array_equal(mt.nn.dropout(x, 0.0).numpy(), x.numpy())
    rows = mt.nn.dropout(x, 0.5, noise_shape=[200, 1], seed=2).numpy()
    assert all(len(set(r)) == 1 for r in rows)       # whole rows kept or dropped


def test_dropout_gradient_is_the_mask():
    x = mt.constant(RNG.standard_normal((4, 5)))
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.nn.dropout(x, 0.5, seed=4)
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, (y.numpy() != 0) * 2.0)


@pytest.mark.parametrize("rate", [1.0, -0.1, 1.5])
def test_dropout_rate_outside_0_1_raises(rate):
    with pytest.raises(ValueError, match=r"must be in \[0, 1\), got"):
        mt.nn.dropout(mt.ones([2, 2]), rate)


def test_dropout_misuse():
    with pytest.raises(TypeError, match="rate must be a number"):
        mt.nn.dropout(mt.ones([2]), "half")
    with pytest.raises(ValueError, match="noise_shape"):
        mt.nn.dropout(mt.ones([2, 3]), 0.5, noise_shape=[3, 3])
    with pytest.raises(TypeError, match="floating"):
        mt.nn.dropout(mt.constant([1, 2]), 0.5)


def test_sparse_cross_entropy_equals_the_dense_one_with_one_hot_labels():
    logits = mt.constant(RNG.standard_normal((5, 4)))
    labels = mt.constant([0, 3, 1, 1, 2])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        sparse = mt.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        dense = mt.nn.softmax_cross_entropy_with_logits(
            mt.one_hot(labels, 4, dtype=mt.float64), logits)
    np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(sparse, logits).numpy(),
                               tape.gradient(dense, logits).numpy(), atol=1e-12)


def test_sparse_cross_entropy_misuse():
    logits = mt.ones([2, 3])
    with pytest.raises(ValueError, match=r"label value of 3 which is outside .*\[0, 3\)"):
        mt.nn.sparse_softmax_cross_entropy_with_logits([0, 3], logits)
    with pytest.raises(ValueError, match=r"labels of shape \(3,\)"):
        mt.nn.sparse_softmax_cross_entropy_with_logits([0, 1, 2], logits)
    with pytest.raises(TypeError, match="integer class indices"):
        mt.nn.sparse_softmax_cross_entropy_with_logits([0.0, 1.0], logits)
