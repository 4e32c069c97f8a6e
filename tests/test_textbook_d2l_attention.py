# ruff: noqa: E701, E703, E731, E741  (the book's code as printed: one-line ifs, ;, lambdas, l)
"""The TensorFlow code of "Dive into Deep Learning" (d2l.ai) chapter 11, attention mechanisms
and transformers, run with ``import minitape as tf``: one test per section, the code of its
TensorFlow tab as printed (``#@tab all`` cells with their TensorFlow branch), with small sizes.

``tests/d2l_minitape_attention.py`` is the d2l library the chapter uses (chapters 3-11's
``#@save`` pieces). The English-French corpus is a small synthetic ``fra-eng.zip`` served from
127.0.0.1 to the book's own ``d2l.download``. Numbers are checked against NumPy recomputations
of the book's equations in float64 (masked softmax, additive and scaled dot-product attention,
multi-head attention with ``transpose_qkv``/``transpose_output``, layer normalization, the
positional encoding's closed form) and the shapes the book checks; each trainable model
(Nadaraya-Watson regression, the Bahdanau decoder, the transformer, the vision transformer)
takes one training step whose gradient is checked against central finite differences of its
loss along a random direction. The heatmaps (``d2l.show_heatmaps``) are drawn headless (Agg).
The last part tests the fixes the chapter needed one by one.
"""

from __future__ import annotations

import contextlib
import http.server
import io
import math
import threading
import zipfile

import matplotlib
import numpy as np
import pytest

import d2l_minitape_attention as d2l
import minitape as tf
from test_textbook_d2l import _no_rendering  # noqa: F401

plt = d2l.plt


# -- NumPy (float64) versions of the book's equations ----------------------------------------

def softmax_np(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_softmax_np(X, valid_lens):
    """(11.3.x): the entries past each row's valid length get weight 0."""
    X = np.asarray(X, np.float64)
    if valid_lens is None:
        return softmax_np(X)
    lens = np.asarray(valid_lens)
    if lens.ndim == 1:
        lens = np.broadcast_to(lens[:, None], X.shape[:2])
    out = np.zeros_like(X)
    for b in range(X.shape[0]):
        for q in range(X.shape[1]):
            n = int(lens[b, q])
            out[b, q, :n] = softmax_np(X[b, q, :n])
    return out


def dot_product_attention_np(Q, K, V, valid_lens=None):
    """softmax(Q K^T / sqrt(d)) V (11.3.5), masked."""
    w = masked_softmax_np(Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]), valid_lens)
    return w @ V, w


def additive_attention_np(Q, K, V, valid_lens, W_q, W_k, w_v):
    """a(q, k) = w_v^T tanh(W_q q + W_k k) (11.3.7), masked softmax, weighted values."""
    features = np.tanh((Q @ W_q)[:, :, None, :] + (K @ W_k)[:, None, :, :])
    w = masked_softmax_np((features @ w_v)[..., 0], valid_lens)
    return w @ V, w


def weights(layer):
    return [np.asarray(v.numpy(), np.float64) for v in layer.weights]


def dense_np(layer, X):
    w = weights(layer)
    return X @ w[0] + (w[1] if len(w) > 1 else 0)


def multihead_np(mha, queries, keys, values, valid_lens):
    """Multi-head attention (11.5): h heads of scaled dot-product attention on slices of the
    projections, concatenated and projected by W_o; each head is computed on its own, not with
    the book's reshapes."""
    h = mha.num_heads
    q, k, v = dense_np(mha.W_q, queries), dense_np(mha.W_k, keys), dense_np(mha.W_v, values)
    d = q.shape[-1] // h
    heads, head_weights = [], []
    for i in range(h):
        sl = slice(i * d, (i + 1) * d)
        out, w = dot_product_attention_np(q[..., sl], k[..., sl], v[..., sl], valid_lens)
        heads.append(out)
        head_weights.append(w)
    return dense_np(mha.W_o, np.concatenate(heads, axis=-1)), np.stack(head_weights, 1)


def layer_norm_np(ln, X, axes):
    gamma, beta = weights(ln)
    mean = X.mean(axis=axes, keepdims=True)
    var = X.var(axis=axes, keepdims=True)
    return (X - mean) / np.sqrt(var + ln.epsilon) * gamma + beta


def positional_encoding_np(max_len, d):
    """p_{i,2j} = sin(i / 10000^{2j/d}), p_{i,2j+1} = cos(i / 10000^{2j/d}) (11.6.2)."""
    P = np.zeros((max_len, d))
    for i in range(max_len):
        for j in range(0, d, 2):
            P[i, j] = math.sin(i / 10000 ** (j / d))
            if j + 1 < d:
                P[i, j + 1] = math.cos(i / 10000 ** (j / d))
    return P


# -- helpers -----------------------------------------------------------------------------------

def check_gradient(variables, loss_fn, grads=None, seed=0, eps=1e-6, rtol=1e-5, atol=1e-8):
    """The tape's gradient of ``loss_fn()`` with respect to ``variables`` along a random unit
    direction, against the central difference of ``loss_fn`` along it (the variables moved
    and put back). Returns the gradients."""
    if grads is None:
        with tf.GradientTape() as tape:
            loss = loss_fn()
        grads = tape.gradient(loss, variables)
    assert all(g is not None for g in grads), [v.name for v, g in zip(variables, grads)
                                                 if g is None]
    rng = np.random.default_rng(seed)
    direction = [rng.standard_normal(v.shape) for v in variables]
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in direction))
    direction = [d / norm for d in direction]
    start = [v.numpy().copy() for v in variables]

    def loss_at(t):
        for v, w, d in zip(variables, start, direction):
            v.assign((w + t * d).astype(w.dtype))
        return float(loss_fn())

    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    for v, w in zip(variables, start):
        v.assign(w)
    analytic = sum(float(np.sum(np.asarray(tf.convert_to_tensor(g)) * d))
                   for g, d in zip(grads, direction))
    assert math.isclose(analytic, numeric, rel_tol=rtol, abs_tol=atol), (analytic, numeric)
    return grads


@contextlib.contextmanager
def float64_weights():
    """Layers make float64 weights inside (``tf.keras.backend.set_floatx``)."""
    before = tf.keras.backend.floatx()
    tf.keras.backend.set_floatx("float64")
    try:
        yield
    finally:
        tf.keras.backend.set_floatx(before)


def assert_heatmaps(fig, n_axes, shape):
    """``show_heatmaps`` drew ``n_axes`` images of ``shape`` (plus a colorbar), headless."""
    assert matplotlib.get_backend().lower() == "agg"
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == n_axes
    assert all(im.get_array().shape == shape for im in images)
    fig.canvas.draw()   # renders: fails on anything matplotlib cannot draw


# -- 11.1 Queries, keys, and values --------------------------------------------------------

def test_d2l_11_1_queries_keys_values():
    show_heatmaps = d2l.show_heatmaps
    attention_weights = d2l.reshape(d2l.eye(10), (1, 1, 10, 10))
    show_heatmaps(attention_weights, xlabel='Keys', ylabel='Queries')
    fig = plt.gcf()
    assert_heatmaps(fig, 1, (10, 10))
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), np.eye(10))
    assert fig.axes[0].get_xlabel() == 'Keys' and fig.axes[0].get_ylabel() == 'Queries'


# -- 11.2 Attention pooling by similarity --------------------------------------------------

def test_d2l_11_2_attention_pooling():
    d2l.use_svg_display()

    # Define some kernels
    def gaussian(x):
        return d2l.exp(-x**2 / 2)

    def boxcar(x):
        return d2l.abs(x) < 1.0

    def constant(x):
        return 1.0 + 0 * x

    def epanechikov(x):
        return tf.maximum(1 - d2l.abs(x), 0)

    fig, axes = d2l.plt.subplots(1, 4, sharey=True, figsize=(12, 3))

    kernels = (gaussian, boxcar, constant, epanechikov)
    names = ('Gaussian', 'Boxcar', 'Constant', 'Epanechikov')
    x = d2l.arange(-2.5, 2.5, 0.1)
    for kernel, name, ax in zip(kernels, names, axes):
        ax.plot(d2l.numpy(x), d2l.numpy(kernel(x)))
        ax.set_xlabel(name)

    d2l.plt.show()
    xs = np.asarray(x, np.float64)
    for kernel, expected in zip(kernels, (np.exp(-xs ** 2 / 2), np.abs(xs) < 1,
                                          np.ones_like(xs), np.maximum(1 - np.abs(xs), 0))):
        np.testing.assert_allclose(np.asarray(kernel(x), np.float64), expected, rtol=1e-6,
                                   atol=1e-7)

    def f(x):
        return 2 * d2l.sin(x) + x

    n = 40
    x_train = tf.sort(d2l.rand((n,1)) * 5, 0)
    y_train = f(x_train) + d2l.normal((n, 1))
    x_val = d2l.arange(0, 5, 0.1)
    y_val = f(x_val)
    assert x_train.shape == (n, 1) and np.all(np.diff(x_train.numpy()[:, 0]) >= 0)

    def nadaraya_watson(x_train, y_train, x_val, kernel):
        dists = d2l.reshape(x_train, (-1, 1)) - d2l.reshape(x_val, (1, -1))
        # Each column/row corresponds to each query/key
        k = d2l.astype(kernel(dists), d2l.float32)
        # Normalization over keys for each query
        attention_w = k / d2l.reduce_sum(k, 0)
        y_hat = d2l.transpose(d2l.transpose(y_train)@attention_w)
        return y_hat, attention_w

    def plot(x_train, y_train, x_val, y_val, kernels, names, attention=False):
        fig, axes = d2l.plt.subplots(1, 4, sharey=True, figsize=(12, 3))
        for kernel, name, ax in zip(kernels, names, axes):
            y_hat, attention_w = nadaraya_watson(x_train, y_train, x_val, kernel)
            if attention:
                pcm = ax.imshow(d2l.numpy(attention_w), cmap='Reds')
            else:
                ax.plot(x_val, y_hat)
                ax.plot(x_val, y_val, 'm--')
                ax.plot(x_train, y_train, 'o', alpha=0.5);
            ax.set_xlabel(name)
            if not attention:
                ax.legend(['y_hat', 'y'])
        if attention:
            fig.colorbar(pcm, ax=axes, shrink=0.7)

    plot(x_train, y_train, x_val, y_val, kernels, names)
    plt.gcf().canvas.draw()
    plot(x_train, y_train, x_val, y_val, kernels, names, attention=True)
    plt.gcf().canvas.draw()

    # Nadaraya-Watson (11.2.x): y_hat(q) = sum_i k(x_i - q) y_i / sum_j k(x_j - q)
    xt, yt, xv = (np.asarray(a, np.float64).reshape(-1) for a in (x_train, y_train, x_val))
    kmat = np.exp(-(xt[:, None] - xv[None, :]) ** 2 / 2)
    y_hat, attention_w = nadaraya_watson(x_train, y_train, x_val, gaussian)
    np.testing.assert_allclose(attention_w.numpy(), kmat / kmat.sum(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(y_hat.numpy()[:, 0], yt @ (kmat / kmat.sum(0)), rtol=1e-5,
                               atol=1e-5)

    sigmas = (0.1, 0.2, 0.5, 1)
    names = ['Sigma ' + str(sigma) for sigma in sigmas]

    def gaussian_with_width(sigma):
        return (lambda x: d2l.exp(-x**2 / (2*sigma**2)))

    kernels = [gaussian_with_width(sigma) for sigma in sigmas]
    plot(x_train, y_train, x_val, y_val, kernels, names)
    plot(x_train, y_train, x_val, y_val, kernels, names, attention=True)
    plt.gcf().canvas.draw()

    # A trainable width: the loss of Nadaraya-Watson regression on the training points, one
    # gradient step on sigma checked against finite differences in float64.
    xt64, yt64 = tf.constant(xt.reshape(-1, 1)), tf.constant(yt.reshape(-1, 1))
    sigma = tf.Variable(0.5, dtype=tf.float64)

    def loss():
        dists = d2l.reshape(xt64, (-1, 1)) - d2l.reshape(xt64, (1, -1))
        k = d2l.exp(-dists**2 / (2*sigma**2))
        attention_w = k / d2l.reduce_sum(k, 0)
        y_hat = d2l.transpose(d2l.transpose(yt64)@attention_w)
        return d2l.reduce_mean((y_hat - yt64) ** 2)

    check_gradient([sigma], loss, eps=1e-6, rtol=1e-6)


# -- 11.3 Attention scoring functions ------------------------------------------------------

def test_d2l_11_3_attention_scoring_functions():
    masked_softmax = d2l.masked_softmax
    X = tf.random.uniform(shape=(2, 2, 4))
    out = masked_softmax(X, tf.constant([2, 3]))
    np.testing.assert_allclose(out.numpy(), masked_softmax_np(X.numpy(), [2, 3]), rtol=1e-5,
                               atol=1e-7)
    assert np.all(out.numpy()[0, :, 2:] == 0) and np.all(out.numpy()[1, :, 3:] == 0)
    X = tf.random.uniform((2, 2, 4))
    out = masked_softmax(X, tf.constant([[1, 3], [2, 4]]))
    np.testing.assert_allclose(out.numpy(), masked_softmax_np(X.numpy(), [[1, 3], [2, 4]]),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(out.numpy()[0, 0], [1, 0, 0, 0])

    Q = d2l.ones((2, 3, 4))
    K = d2l.ones((2, 4, 6))
    d2l.check_shape(tf.matmul(Q, K).numpy(), (2, 3, 6))

    DotProductAttention = d2l.DotProductAttention
    queries = tf.random.normal(shape=(2, 1, 2))
    keys = tf.random.normal(shape=(2, 10, 2))
    values = tf.random.normal(shape=(2, 10, 4))
    valid_lens = tf.constant([2, 6])

    attention = DotProductAttention(dropout=0.5)
    d2l.check_shape(attention(queries, keys, values, valid_lens, training=False),
                    (2, 1, 4))
    expected, w = dot_product_attention_np(*(np.asarray(a, np.float64) for a in
                                             (queries, keys, values)), [2, 6])
    np.testing.assert_allclose(attention(queries, keys, values, valid_lens,
                                         training=False).numpy(), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(attention.attention_weights.numpy(), w, rtol=1e-5, atol=1e-7)

    d2l.show_heatmaps(d2l.reshape(attention.attention_weights, (1, 1, 2, 10)),
                      xlabel='Keys', ylabel='Queries')
    assert_heatmaps(plt.gcf(), 1, (2, 10))

    AdditiveAttention = d2l.AdditiveAttention
    queries = tf.random.normal(shape=(2, 1, 20))

    attention = AdditiveAttention(key_size=2, query_size=20, num_hiddens=8,
                                  dropout=0.1)
    d2l.check_shape(attention(queries, keys, values, valid_lens, training=False),
                    (2, 1, 4))
    expected, w = additive_attention_np(
        *(np.asarray(a, np.float64) for a in (queries, keys, values)), [2, 6],
        *weights(attention.W_q), *weights(attention.W_k), *weights(attention.w_v))
    np.testing.assert_allclose(attention(queries, keys, values, valid_lens,
                                         training=False).numpy(), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(attention.attention_weights.numpy(), w, rtol=1e-5, atol=1e-7)

    d2l.show_heatmaps(d2l.reshape(attention.attention_weights, (1, 1, 2, 10)),
                      xlabel='Keys', ylabel='Queries')
    assert_heatmaps(plt.gcf(), 1, (2, 10))

    # Dropout on the attention weights in training (rate 0.1: kept weights scaled by 1/0.9)
    out = attention(queries, keys, values, valid_lens, training=True)
    assert out.shape == (2, 1, 4)
