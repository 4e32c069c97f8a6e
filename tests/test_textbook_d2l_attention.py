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
from test_textbook_d2l import _no_rendering, fashion  # noqa: F401

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


# The NumPy versions read a layer's weights through ``val``: the variable's value in float64,
# or the value ``numpy_gradient_check`` put in ``MOVED`` for it (the weights moved in float64).
MOVED = {}


def val(v):
    return MOVED[id(v)] if id(v) in MOVED else np.asarray(v.numpy(), np.float64)


def weights(layer):
    return [val(v) for v in layer.weights]


def dense_np(layer, X):
    return X @ val(layer.kernel) + (val(layer.bias) if layer.bias is not None else 0)


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
    gamma, beta = val(ln.gamma), val(ln.beta)
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


def numpy_gradient_check(model, X, loss_np, seed=0, eps=1e-5, rtol=5e-5):
    """One training step of ``model`` (float32, as the book's code makes it) on the batch
    ``X``: the tape's gradient of the book's loss, along a random unit direction of all the
    trainable weights, against the central difference along it of ``loss_np()``, the same
    loss computed by NumPy in float64 from the weights (``val``). The two losses must agree
    first. Returns the gradients."""
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss = model.loss(model(*X[:-1]), X[-1])
    grads = tape.gradient(loss, variables)
    assert all(g is not None for g in grads)
    assert math.isclose(float(loss), loss_np(), rel_tol=1e-5), (float(loss), loss_np())
    rng = np.random.default_rng(seed)
    direction = [rng.standard_normal(v.shape) for v in variables]
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in direction))
    start = [np.asarray(v.numpy(), np.float64) for v in variables]

    def loss_at(t):
        MOVED.update({id(v): w + t * d / norm for v, w, d in zip(variables, start, direction)})
        try:
            return loss_np()
        finally:
            MOVED.clear()

    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    analytic = sum(float(np.sum(np.asarray(tf.convert_to_tensor(g), np.float64) * d / norm))
                   for g, d in zip(grads, direction))
    assert math.isclose(analytic, numeric, rel_tol=rtol, abs_tol=1e-7), (analytic, numeric)
    return grads


def cross_entropy_np(logits, labels):
    """The mean over all tokens of -log softmax(logits)[label] (d2l's ``Classifier.loss``)."""
    logits = logits.reshape(-1, logits.shape[-1])
    labels = np.asarray(labels).reshape(-1)
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return float(-log_p[np.arange(len(labels)), labels].mean())


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

    grads = check_gradient([sigma], loss, eps=1e-6, rtol=1e-6)
    before = float(loss())
    tf.keras.optimizers.SGD(0.1).apply_gradients(zip(grads, [sigma]))
    assert float(loss()) < before


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

    # training=True drops attention weights (test_dropout_on_attention_weights_in_training)
    out = attention(queries, keys, values, valid_lens, training=True)
    assert out.shape == (2, 1, 4)


# -- the English-French corpus: a small synthetic fra-eng.zip served from 127.0.0.1 ----------

PAIRS = [
    ("Go.", "Va !"), ("Go home.", "Rentre à la maison."), ("I lost.", "J'ai perdu."),
    ("He lost.", "Il a perdu."), ("We lost.", "Nous avons perdu."),
    ("He's calm.", "Il est calme."), ("I'm calm.", "Je suis calme."),
    ("We're calm.", "Nous sommes calmes."), ("I'm home.", "Je suis chez moi."),
    ("He's home.", "Il est chez lui."), ("We're home.", "Nous sommes chez nous."),
    ("I'm lost.", "Je suis perdu."), ("He's lost.", "Il est perdu."), ("Hi.", "Salut !"),
    ("Run!", "Cours\u202f!"), ("I won.", "J'ai gagné."), ("He won.", "Il a gagné."),
    ("We won.", "Nous avons gagné."), ("I'm sad.", "Je suis triste."),
    ("He's sad.", "Il est triste."),
]


@pytest.fixture
def fra_eng(tmp_path, monkeypatch):
    """``d2l.DATA_URL`` serves ``fra-eng.zip`` (``fra-eng/fra.txt``: the 20 pairs above, 3
    times each) from 127.0.0.1; the book's ``../data`` is ``tmp_path/data`` (the working
    directory is ``tmp_path/work``)."""
    served = tmp_path / "served"
    served.mkdir()
    text = "\n".join(f"{en}\t{fr}" for _ in range(3) for en, fr in PAIRS) + "\n"
    with zipfile.ZipFile(served / "fra-eng.zip", "w") as z:
        z.writestr("fra-eng/fra.txt", text)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(d2l, "DATA_URL", f"http://127.0.0.1:{server.server_address[1]}/")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    try:
        yield text
    finally:
        server.shutdown()
        server.server_close()


def translate(model, data, engs, fras):
    """The book's loop printing each translation and its BLEU; returns the lines."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        preds, _ = model.predict_step(
            data.build(engs, fras), d2l.try_gpu(), data.num_steps)
        for en, fr, p in zip(engs, fras, preds):
            translation = []
            for token in data.tgt_vocab.to_tokens(p):
                if token == '<eos>':
                    break
                translation.append(token)
            print(f'{en} => {translation}, bleu,'
                  f'{d2l.bleu(" ".join(translation), fr, k=2):.3f}')
    return preds, out.getvalue().splitlines()


# -- 11.4 The Bahdanau attention mechanism -------------------------------------------------

class AttentionDecoder(d2l.Decoder):  #@save
    """The base attention-based decoder interface."""
    def __init__(self):
        super().__init__()

    @property
    def attention_weights(self):
        raise NotImplementedError


class Seq2SeqAttentionDecoder(AttentionDecoder):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers,
                 dropout=0):
        super().__init__()
        self.attention = d2l.AdditiveAttention(num_hiddens, num_hiddens,
                                               num_hiddens, dropout)
        self.embedding = tf.keras.layers.Embedding(vocab_size, embed_size)
        self.rnn = tf.keras.layers.RNN(tf.keras.layers.StackedRNNCells(
            [tf.keras.layers.GRUCell(num_hiddens, dropout=dropout)
             for _ in range(num_layers)]), return_sequences=True,
                                       return_state=True)
        self.dense = tf.keras.layers.Dense(vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        # Shape of outputs: (batch_size, num_steps, num_hiddens).
        # Length of list hidden_state is num_layers, where the shape of its
        # element is (batch_size, num_hiddens)
        outputs, hidden_state = enc_outputs
        return (tf.transpose(outputs, (1, 0, 2)), hidden_state,
                enc_valid_lens)

    def call(self, X, state, **kwargs):
        # Shape of output enc_outputs: # (batch_size, num_steps, num_hiddens)
        # Length of list hidden_state is num_layers, where the shape of its
        # element is (batch_size, num_hiddens)
        enc_outputs, hidden_state, enc_valid_lens = state
        # Shape of the output X: (num_steps, batch_size, embed_size)
        X = self.embedding(X)  # Input X has shape: (batch_size, num_steps)
        X = tf.transpose(X, perm=(1, 0, 2))
        outputs, self._attention_weights = [], []
        for x in X:
            # Shape of query: (batch_size, 1, num_hiddens)
            query = tf.expand_dims(hidden_state[-1], axis=1)
            # Shape of context: (batch_size, 1, num_hiddens)
            context = self.attention(query, enc_outputs, enc_outputs,
                                     enc_valid_lens, **kwargs)
            # Concatenate on the feature dimension
            x = tf.concat((context, tf.expand_dims(x, axis=1)), axis=-1)
            out = self.rnn(x, hidden_state, **kwargs)
            hidden_state = out[1:]
            outputs.append(out[0])
            self._attention_weights.append(self.attention.attention_weights)
        # After fully connected layer transformation, shape of outputs:
        # (batch_size, num_steps, vocab_size)
        outputs = self.dense(tf.concat(outputs, axis=1))
        return outputs, [enc_outputs, hidden_state, enc_valid_lens]

    @property
    def attention_weights(self):
        return self._attention_weights


def test_d2l_11_4_bahdanau_attention(fra_eng):
    vocab_size, embed_size, num_hiddens, num_layers = 10, 8, 16, 2
    batch_size, num_steps = 4, 7
    encoder = d2l.Seq2SeqEncoder(vocab_size, embed_size, num_hiddens, num_layers)
    decoder = Seq2SeqAttentionDecoder(vocab_size, embed_size, num_hiddens,
                                      num_layers)
    X = tf.zeros((batch_size, num_steps))
    state = decoder.init_state(encoder(X, training=False), None)
    output, state = decoder(X, state, training=False)
    d2l.check_shape(output, (batch_size, num_steps, vocab_size))
    d2l.check_shape(state[0], (batch_size, num_steps, num_hiddens))
    d2l.check_shape(state[1][0], (batch_size, num_hiddens))

    # (the book's sizes are 256, 256, 2, 0.2, batch 128 and 30 epochs)
    data = d2l.MTFraEng(batch_size=20, num_train=40, num_val=20)
    embed_size, num_hiddens, num_layers, dropout = 8, 16, 2, 0.2
    with d2l.try_gpu():
        encoder = d2l.Seq2SeqEncoder(
            len(data.src_vocab), embed_size, num_hiddens, num_layers, dropout)
        decoder = Seq2SeqAttentionDecoder(
            len(data.tgt_vocab), embed_size, num_hiddens, num_layers, dropout)
        model = d2l.Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'],
                            lr=0.005)
    trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1)
    trainer.fit(model, data)
    # (the trainer's clip_gradients: the gradients scaled to global norm 1 when above it)
    batch = next(iter(data.train_dataloader()))
    with tf.GradientTape() as tape:
        l = model.loss(model(*batch[:-1]), batch[-1])
    grads = tape.gradient(l, model.trainable_variables)
    norm = math.sqrt(sum(float(tf.reduce_sum(g ** 2)) for g in grads))
    clipped = trainer.clip_gradients(norm / 4, grads)
    assert math.isclose(math.sqrt(sum(float(tf.reduce_sum(g ** 2)) for g in clipped)),
                        norm / 4, rel_tol=1e-5)
    np.testing.assert_allclose(clipped[0].numpy(), grads[0].numpy() / 4, rtol=1e-5)
    assert trainer.clip_gradients(norm * 2, grads) is grads

    engs = ['go .', 'i lost .', 'he\'s calm .', 'i\'m home .']
    fras = ['va !', 'j\'ai perdu .', 'il est calme .', 'je suis chez moi .']
    preds, lines = translate(model, data, engs, fras)
    assert preds.shape == (4, data.num_steps) and len(lines) == 4
    assert lines[0].startswith("go . => [") and ", bleu," in lines[0]

    _, dec_attention_weights = model.predict_step(
        data.build([engs[-1]], [fras[-1]]), d2l.try_gpu(), data.num_steps, True)
    attention_weights = d2l.concat(
        [step[0][0][0] for step in dec_attention_weights], 0)
    attention_weights = d2l.reshape(attention_weights, (1, 1, -1, data.num_steps))
    # Plus one to include the end-of-sequence token
    d2l.show_heatmaps(attention_weights[:, :, :, :len(engs[-1].split()) + 1],
                      xlabel='Key positions', ylabel='Query positions')
    assert_heatmaps(plt.gcf(), 1, (data.num_steps, 4))
    # each query's weights: a distribution over the 4 valid keys ("i'm home . <eos>"), none
    # on the padding
    w = attention_weights.numpy()[0, 0]
    np.testing.assert_allclose(w.sum(axis=1), 1, rtol=1e-5)
    assert np.all(w[:, 4:] == 0)

    # The first decoding step's attention: additive attention (NumPy) whose query is the
    # encoder's last layer's final state and whose keys and values are the encoder's outputs.
    src, tgt, src_valid_len, label = data.build(engs, fras)
    enc_outputs, enc_state = model.encoder(src, src_valid_len, training=False)
    state = model.decoder.init_state((enc_outputs, enc_state), src_valid_len)
    model.decoder(tgt, state, training=False)
    keys = np.transpose(np.asarray(enc_outputs, np.float64), (1, 0, 2))
    att = model.decoder.attention
    _, w = additive_attention_np(np.asarray(enc_state[-1], np.float64)[:, None, :], keys, keys,
                                 src_valid_len.numpy(), *weights(att.W_q), *weights(att.W_k),
                                 *weights(att.w_v))
    np.testing.assert_allclose(model.decoder.attention_weights[0].numpy(), w, rtol=1e-4,
                               atol=1e-6)

    # One training step in float64 (no dropout: the same network at every evaluation): the
    # gradient of the book's loss against finite differences, then Adam lowers the loss.
    with float64_weights():
        encoder = d2l.Seq2SeqEncoder(len(data.src_vocab), embed_size, num_hiddens, num_layers)
        decoder = Seq2SeqAttentionDecoder(len(data.tgt_vocab), embed_size, num_hiddens,
                                          num_layers)
        model = d2l.Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'], lr=0.005)
        batch = next(iter(data.train_dataloader()))
        loss = lambda: model.loss(model(*batch[:-1]), batch[-1])
        before = float(loss())
        variables = model.trainable_variables
        # 2 embeddings, 2 x 2 GRU cells (kernel, recurrent kernel, bias), W_q, W_k, w_v, dense
        assert len(variables) == 2 + 2 * 2 * 3 + 3 + 2
        grads = check_gradient(variables, loss)
        model.configure_optimizers().apply_gradients(zip(grads, variables))
        assert float(loss()) < before


# -- 11.5 Multi-head attention -------------------------------------------------------------

class MultiHeadAttention(d2l.Module):  #@save
    """Multi-head attention."""
    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 num_heads, dropout, bias=False, **kwargs):
        super().__init__()
        self.num_heads = num_heads
        self.attention = d2l.DotProductAttention(dropout)
        self.W_q = tf.keras.layers.Dense(num_hiddens, use_bias=bias)
        self.W_k = tf.keras.layers.Dense(num_hiddens, use_bias=bias)
        self.W_v = tf.keras.layers.Dense(num_hiddens, use_bias=bias)
        self.W_o = tf.keras.layers.Dense(num_hiddens, use_bias=bias)

    def call(self, queries, keys, values, valid_lens, **kwargs):
        # Shape of queries, keys, or values:
        # (batch_size, no. of queries or key-value pairs, num_hiddens)
        # Shape of valid_lens: (batch_size,) or (batch_size, no. of queries)
        # After transposing, shape of output queries, keys, or values:
        # (batch_size * num_heads, no. of queries or key-value pairs,
        # num_hiddens / num_heads)
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))

        if valid_lens is not None:
            # On axis 0, copy the first item (scalar or vector) for num_heads
            # times, then copy the next item, and so on
            valid_lens = tf.repeat(valid_lens, repeats=self.num_heads, axis=0)

        # Shape of output: (batch_size * num_heads, no. of queries,
        # num_hiddens / num_heads)
        output = self.attention(queries, keys, values, valid_lens, **kwargs)

        # Shape of output_concat: (batch_size, no. of queries, num_hiddens)
        output_concat = self.transpose_output(output)
        return self.W_o(output_concat)


@d2l.add_to_class(MultiHeadAttention)  #@save
def transpose_qkv(self, X):
    """Transposition for parallel computation of multiple attention heads."""
    # Shape of input X: (batch_size, no. of queries or key-value pairs,
    # num_hiddens). Shape of output X: (batch_size, no. of queries or
    # key-value pairs, num_heads, num_hiddens / num_heads)
    X = tf.reshape(X, shape=(X.shape[0], X.shape[1], self.num_heads, -1))
    # Shape of output X: (batch_size, num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    X = tf.transpose(X, perm=(0, 2, 1, 3))
    # Shape of output: (batch_size * num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    return tf.reshape(X, shape=(-1, X.shape[2], X.shape[3]))


@d2l.add_to_class(MultiHeadAttention)  #@save
def transpose_output(self, X):
    """Reverse the operation of transpose_qkv."""
    X = tf.reshape(X, shape=(-1, self.num_heads, X.shape[1], X.shape[2]))
    X = tf.transpose(X, perm=(0, 2, 1, 3))
    return tf.reshape(X, shape=(X.shape[0], X.shape[1], -1))


def test_d2l_11_5_multihead_attention():
    num_hiddens, num_heads = 100, 5
    attention = MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens,
                                   num_hiddens, num_heads, 0.5)

    batch_size, num_queries, num_kvpairs = 2, 4, 6
    valid_lens = d2l.tensor([3, 2])
    X = tf.ones((batch_size, num_queries, num_hiddens))
    Y = tf.ones((batch_size, num_kvpairs, num_hiddens))
    d2l.check_shape(attention(X, Y, Y, valid_lens, training=False),
                    (batch_size, num_queries, num_hiddens))

    # transpose_qkv puts head i's slice of the features in row b * num_heads + i
    Z = np.arange(2 * 3 * 10, dtype=np.float32).reshape(2, 3, 10)
    T = attention.transpose_qkv(tf.constant(Z)).numpy()
    assert T.shape == (2 * num_heads, 3, 2)
    for b in range(2):
        for i in range(num_heads):
            np.testing.assert_array_equal(T[b * num_heads + i], Z[b, :, 2 * i:2 * i + 2])
    np.testing.assert_array_equal(attention.transpose_output(tf.constant(T)).numpy(), Z)

    # The output against each head computed on its own (NumPy, float64), random inputs
    X = tf.random.normal((batch_size, num_queries, num_hiddens))
    Y = tf.random.normal((batch_size, num_kvpairs, num_hiddens))
    for lens in (valid_lens, d2l.tensor([[1, 2, 3, 4], [6, 5, 4, 3]]), None):
        out = attention(X, Y, Y, lens, training=False)
        expected, w = multihead_np(attention, np.asarray(X, np.float64),
                                   np.asarray(Y, np.float64), np.asarray(Y, np.float64),
                                   None if lens is None else lens.numpy())
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            attention.attention.attention_weights.numpy().reshape(w.shape), w, rtol=1e-4,
            atol=1e-6)
    # (training=True drops the heads' weights: test_dropout_on_attention_weights_in_training)
    out = attention(X, Y, Y, valid_lens, training=True)
    assert out.shape == (batch_size, num_queries, num_hiddens)


# -- 11.6 Self-attention and positional encoding -------------------------------------------

class PositionalEncoding(tf.keras.layers.Layer):  #@save
    """Positional encoding."""
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = tf.keras.layers.Dropout(dropout)
        # Create a long enough P
        self.P = np.zeros((1, max_len, num_hiddens))
        X = np.arange(max_len, dtype=np.float32).reshape(
            -1,1)/np.power(10000, np.arange(
            0, num_hiddens, 2, dtype=np.float32) / num_hiddens)
        self.P[:, :, 0::2] = np.sin(X)
        self.P[:, :, 1::2] = np.cos(X)

    def call(self, X, **kwargs):
        X = X + self.P[:, :X.shape[1], :]
        return self.dropout(X, **kwargs)


def test_d2l_11_6_self_attention_and_positional_encoding():
    num_hiddens, num_heads = 100, 5
    attention = d2l.MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens,
                                       num_hiddens, num_heads, 0.5)

    batch_size, num_queries, valid_lens = 2, 4, tf.constant([3, 2])
    X = tf.ones((batch_size, num_queries, num_hiddens))
    d2l.check_shape(attention(X, X, X, valid_lens, training=False),
                    (batch_size, num_queries, num_hiddens))
    X = tf.random.normal((batch_size, num_queries, num_hiddens))
    X64 = np.asarray(X, np.float64)
    expected, _ = multihead_np(attention, X64, X64, X64, [3, 2])
    np.testing.assert_allclose(attention(X, X, X, valid_lens, training=False).numpy(),
                               expected, rtol=1e-4, atol=1e-5)

    encoding_dim, num_steps = 32, 60
    pos_encoding = PositionalEncoding(encoding_dim, 0)
    X = pos_encoding(tf.zeros((1, num_steps, encoding_dim)), training=False)
    P = pos_encoding.P[:, :X.shape[1], :]
    d2l.plot(np.arange(num_steps), P[0, :, 6:10].T, xlabel='Row (position)',
             figsize=(6, 2.5), legend=["Col %d" % d for d in np.arange(6, 10)])
    plt.gcf().canvas.draw()
    assert len(plt.gca().lines) == 4
    closed_form = positional_encoding_np(num_steps, encoding_dim)
    np.testing.assert_allclose(P[0], closed_form, atol=1e-5)
    assert X.dtype == tf.float32
    np.testing.assert_allclose(X.numpy()[0], closed_form, atol=1e-5)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i in range(8):
            print(f'{i} in binary is {i:>03b}')
    assert out.getvalue().splitlines()[5] == '5 in binary is 101'

    P = tf.expand_dims(tf.expand_dims(P[0, :, :], axis=0), axis=0)
    d2l.show_heatmaps(P, xlabel='Column (encoding dimension)',
                      ylabel='Row (position)', figsize=(3.5, 4), cmap='Blues')
    assert_heatmaps(plt.gcf(), 1, (num_steps, encoding_dim))
    # the positional encoding is added to float32 inputs (P, float64, takes their dtype)
    Z = tf.random.normal((2, 5, encoding_dim))
    np.testing.assert_allclose(pos_encoding(Z, training=False).numpy(),
                               Z.numpy() + closed_form[:5], atol=1e-5)


# -- 11.7 The Transformer architecture -----------------------------------------------------

class PositionWiseFFN(tf.keras.layers.Layer):  #@save
    """The positionwise feed-forward network."""
    def __init__(self, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(ffn_num_hiddens)
        self.relu = tf.keras.layers.ReLU()
        self.dense2 = tf.keras.layers.Dense(ffn_num_outputs)

    def call(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(tf.keras.layers.Layer):  #@save
    """The residual connection followed by layer normalization."""
    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = tf.keras.layers.Dropout(dropout)
        self.ln = tf.keras.layers.LayerNormalization(norm_shape)

    def call(self, X, Y, **kwargs):
        return self.ln(self.dropout(Y, **kwargs) + X)


class TransformerEncoderBlock(tf.keras.layers.Layer):  #@save
    """The Transformer encoder block."""
    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 norm_shape, ffn_num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.attention = d2l.MultiHeadAttention(
            key_size, query_size, value_size, num_hiddens, num_heads, dropout,
            bias)
        self.addnorm1 = AddNorm(norm_shape, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(norm_shape, dropout)

    def call(self, X, valid_lens, **kwargs):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens, **kwargs),
                          **kwargs)
        return self.addnorm2(Y, self.ffn(Y), **kwargs)


class TransformerEncoder(d2l.Encoder):  #@save
    """The Transformer encoder."""
    def __init__(self, vocab_size, key_size, query_size, value_size,
                 num_hiddens, norm_shape, ffn_num_hiddens, num_heads,
                 num_blks, dropout, bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = tf.keras.layers.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
        self.blks = [TransformerEncoderBlock(
            key_size, query_size, value_size, num_hiddens, norm_shape,
            ffn_num_hiddens, num_heads, dropout, bias) for _ in range(
            num_blks)]

    def call(self, X, valid_lens, **kwargs):
        # Since positional encoding values are between -1 and 1, the embedding
        # values are multiplied by the square root of the embedding dimension
        # to rescale before they are summed up
        X = self.pos_encoding(self.embedding(X) * tf.math.sqrt(
            tf.cast(self.num_hiddens, dtype=tf.float32)), **kwargs)
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens, **kwargs)
            self.attention_weights[
                i] = blk.attention.attention.attention_weights
        return X


class TransformerDecoderBlock(tf.keras.layers.Layer):
    # The i-th block in the Transformer decoder
    def __init__(self, key_size, query_size, value_size, num_hiddens,
                 norm_shape, ffn_num_hiddens, num_heads, dropout, i):
        super().__init__()
        self.i = i
        self.attention1 = d2l.MultiHeadAttention(
            key_size, query_size, value_size, num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(norm_shape, dropout)
        self.attention2 = d2l.MultiHeadAttention(
            key_size, query_size, value_size, num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(norm_shape, dropout)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(norm_shape, dropout)

    def call(self, X, state, **kwargs):
        enc_outputs, enc_valid_lens = state[0], state[1]
        # During training, all the tokens of any output sequence are processed
        # at the same time, so state[2][self.i] is None as initialized. When
        # decoding any output sequence token by token during prediction,
        # state[2][self.i] contains representations of the decoded output at
        # the i-th block up to the current time step
        if state[2][self.i] is None:
            key_values = X
        else:
            key_values = tf.concat((state[2][self.i], X), axis=1)
        state[2][self.i] = key_values
        if kwargs["training"]:
            batch_size, num_steps, _ = X.shape
            # Shape of dec_valid_lens: (batch_size, num_steps), where every
            # row is [1, 2, ..., num_steps]
            dec_valid_lens = tf.repeat(
                tf.reshape(tf.range(1, num_steps + 1),
                           shape=(-1, num_steps)), repeats=batch_size, axis=0)
        else:
            dec_valid_lens = None
        # Self-attention
        X2 = self.attention1(X, key_values, key_values, dec_valid_lens,
                             **kwargs)
        Y = self.addnorm1(X, X2, **kwargs)
        # Encoder-decoder attention. Shape of enc_outputs:
        # (batch_size, num_steps, num_hiddens)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens,
                             **kwargs)
        Z = self.addnorm2(Y, Y2, **kwargs)
        return self.addnorm3(Z, self.ffn(Z), **kwargs), state


class TransformerDecoder(d2l.AttentionDecoder):
    def __init__(self, vocab_size, key_size, query_size, value_size,
                 num_hiddens, norm_shape, ffn_num_hiddens, num_heads,
                 num_blks, dropout):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = tf.keras.layers.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = d2l.PositionalEncoding(num_hiddens, dropout)
        self.blks = [TransformerDecoderBlock(
            key_size, query_size, value_size, num_hiddens, norm_shape,
            ffn_num_hiddens, num_heads, dropout, i)
                     for i in range(num_blks)]
        self.dense = tf.keras.layers.Dense(vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

    def call(self, X, state, **kwargs):
        X = self.pos_encoding(self.embedding(X) * tf.math.sqrt(
            tf.cast(self.num_hiddens, dtype=tf.float32)), **kwargs)
        # 2 attention layers in decoder
        self._attention_weights = [[None] * len(self.blks) for _ in range(2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state, **kwargs)
            # Decoder self-attention weights
            self._attention_weights[0][i] = (
                blk.attention1.attention.attention_weights)
            # Encoder-decoder attention weights
            self._attention_weights[1][i] = (
                blk.attention2.attention.attention_weights)
        return self.dense(X), state

    @property
    def attention_weights(self):
        return self._attention_weights


def encoder_block_np(blk, X, valid_lens):
    """A transformer encoder block (11.7) in NumPy: LN(X + MHA(X)), then LN(Y + FFN(Y))."""
    axes = tuple(blk.addnorm1.ln.axis)
    Y = layer_norm_np(blk.addnorm1.ln, X + multihead_np(blk.attention, X, X, X, valid_lens)[0],
                      axes)
    return layer_norm_np(blk.addnorm2.ln, Y + ffn_np(blk.ffn, Y), axes)


def ffn_np(ffn, X):
    return dense_np(ffn.dense2, np.maximum(dense_np(ffn.dense1, X), 0))


def transformer_loss_np(model, src, tgt, src_valid_len, label):
    """The transformer encoder-decoder's training loss (teacher forcing, no dropout) in NumPy:
    embeddings times sqrt(d) plus the positional encoding; encoder blocks; decoder blocks of
    masked (causal) self-attention, encoder-decoder attention and the FFN, each followed by
    AddNorm; the dense layer; the mean cross-entropy over all tokens."""
    enc, dec = model.encoder, model.decoder
    src, tgt = np.asarray(src), np.asarray(tgt)
    d = enc.num_hiddens
    X = val(enc.embedding.embeddings)[src] * math.sqrt(d)
    X = X + positional_encoding_np(src.shape[1], d)
    for blk in enc.blks:
        X = encoder_block_np(blk, X, np.asarray(src_valid_len))
    Y = val(dec.embedding.embeddings)[tgt] * math.sqrt(d)
    Y = Y + positional_encoding_np(tgt.shape[1], d)
    batch_size, num_steps = tgt.shape
    causal = np.tile(np.arange(1, num_steps + 1), (batch_size, 1))
    for blk in dec.blks:
        axes = tuple(blk.addnorm1.ln.axis)
        Y = layer_norm_np(blk.addnorm1.ln,
                          Y + multihead_np(blk.attention1, Y, Y, Y, causal)[0], axes)
        Z = layer_norm_np(blk.addnorm2.ln, Y + multihead_np(
            blk.attention2, Y, X, X, np.asarray(src_valid_len))[0], axes)
        Y = layer_norm_np(blk.addnorm3.ln, Z + ffn_np(blk.ffn, Z), axes)
    return cross_entropy_np(dense_np(dec.dense, Y), label)


def test_d2l_11_7_transformer_blocks():
    ffn = PositionWiseFFN(4, 8)
    out = ffn(tf.ones((2, 3, 4)))[0]
    assert out.shape == (3, 8)
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(out.numpy()[0], (3, 8)))
    np.testing.assert_allclose(
        out.numpy()[0], dense_np(ffn.dense2, np.maximum(dense_np(ffn.dense1, np.ones(4)), 0)),
        rtol=1e-5, atol=1e-6)

    ln = tf.keras.layers.LayerNormalization()
    bn = tf.keras.layers.BatchNormalization()
    X = tf.constant([[1, 2], [2, 3]], dtype=tf.float32)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print('layer norm:', ln(X), '\nbatch norm:', bn(X, training=True))
    assert out.getvalue().startswith('layer norm: mt.Tensor(')
    assert '\nbatch norm: mt.Tensor(' in out.getvalue()
    # each row normalized (layer norm), each column (batch norm), with epsilon 1e-3 in both:
    # (x - 1.5) / sqrt(0.25 + 0.001) = -/+0.998006 (the book's printed values)
    e = 0.5 / math.sqrt(0.251)
    np.testing.assert_allclose(ln(X).numpy(), [[-e, e], [-e, e]], rtol=1e-6)
    bn = tf.keras.layers.BatchNormalization()
    np.testing.assert_allclose(bn(X, training=True).numpy(), [[-e, -e], [e, e]], rtol=1e-6)

    add_norm = AddNorm([1, 2], 0.5)
    shape = (2, 3, 4)
    d2l.check_shape(add_norm(tf.ones(shape), tf.ones(shape), training=False),
                    shape)
    X, Y = tf.random.normal(shape), tf.random.normal(shape)
    np.testing.assert_allclose(
        add_norm(X, Y, training=False).numpy(),
        layer_norm_np(add_norm.ln, np.asarray(X, np.float64) + np.asarray(Y, np.float64),
                      (1, 2)), rtol=1e-4, atol=1e-5)

    X = tf.ones((2, 100, 24))
    valid_lens = tf.constant([3, 2])
    norm_shape = [i for i in range(len(X.shape))][1:]
    encoder_blk = TransformerEncoderBlock(24, 24, 24, 24, norm_shape, 48, 8, 0.5)
    d2l.check_shape(encoder_blk(X, valid_lens, training=False), X.shape)
    # (norm_shape [1, 2]: layer norm over steps and features, the block built for 100 steps)
    X = tf.random.normal((2, 100, 24))
    np.testing.assert_allclose(encoder_blk(X, valid_lens, training=False).numpy(),
                               encoder_block_np(encoder_blk, np.asarray(X, np.float64),
                                                [3, 2]), rtol=1e-4, atol=1e-4)
    X = tf.ones((2, 100, 24))

    encoder = TransformerEncoder(200, 24, 24, 24, 24, [1, 2], 48, 8, 2, 0.5)
    d2l.check_shape(encoder(tf.ones((2, 100)), valid_lens, training=False),
                    (2, 100, 24))

    decoder_blk = TransformerDecoderBlock(24, 24, 24, 24, [1, 2], 48, 8, 0.5, 0)
    X = tf.ones((2, 100, 24))
    state = [encoder_blk(X, valid_lens), valid_lens, [None]]
    d2l.check_shape(decoder_blk(X, state, training=False)[0], X.shape)


def test_d2l_11_7_transformer_training(fra_eng):
    # (the book's sizes: 256 hidden units, ffn 64, batch 128, 30 epochs)
    data = d2l.MTFraEng(batch_size=20, num_train=40, num_val=20)
    num_hiddens, num_blks, dropout = 16, 2, 0.2
    ffn_num_hiddens, num_heads = 32, 4
    key_size, query_size, value_size = 16, 16, 16
    norm_shape = [2]
    with d2l.try_gpu():
        encoder = TransformerEncoder(
            len(data.src_vocab), key_size, query_size, value_size, num_hiddens,
            norm_shape, ffn_num_hiddens, num_heads, num_blks, dropout)
        decoder = TransformerDecoder(
            len(data.tgt_vocab), key_size, query_size, value_size, num_hiddens,
            norm_shape, ffn_num_hiddens, num_heads, num_blks, dropout)
        model = d2l.Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab['<pad>'],
                            lr=0.001)
    trainer = d2l.Trainer(max_epochs=2, gradient_clip_val=1)
    trainer.fit(model, data)

    engs = ['go .', 'i lost .', 'he\'s calm .', 'i\'m home .']
    fras = ['va !', 'j\'ai perdu .', 'il est calme .', 'je suis chez moi .']
    preds, lines = translate(model, data, engs, fras)
    assert preds.shape == (4, data.num_steps) and len(lines) == 4

    # One training step of the book's model without dropout (the same network at each
    # evaluation): its loss and gradient against the same transformer written in NumPy.
    args = (len(data.src_vocab), key_size, query_size, value_size, num_hiddens, norm_shape,
            ffn_num_hiddens, num_heads, num_blks, 0)
    check = d2l.Seq2Seq(TransformerEncoder(*args), TransformerDecoder(
        len(data.tgt_vocab), *args[1:]), tgt_pad=data.tgt_vocab['<pad>'], lr=0.001)
    batch = next(iter(data.train_dataloader()))
    check(*batch[:-1])   # builds the layers
    # (weights of several sizes: Adam's first step moves each by about lr)
    grads = numpy_gradient_check(check, batch, lambda: transformer_loss_np(check, *batch))
    assert len(grads) == 2 + 2 * (4 + 2 * 2 + 2 * 2) + 2 * (2 * 4 + 3 * 2 + 2 * 2) + 2
    before = transformer_loss_np(check, *batch)
    check.configure_optimizers().apply_gradients(zip(grads, check.trainable_variables))
    assert transformer_loss_np(check, *batch) < before

    _, dec_attention_weights = model.predict_step(
        data.build([engs[-1]], [fras[-1]]), d2l.try_gpu(), data.num_steps, True)
    enc_attention_weights = d2l.concat(model.encoder.attention_weights, 0)
    shape = (num_blks, num_heads, -1, data.num_steps)
    enc_attention_weights = d2l.reshape(enc_attention_weights, shape)
    d2l.check_shape(enc_attention_weights,
                    (num_blks, num_heads, data.num_steps, data.num_steps))
    # every query of the source "i'm home . <eos>" looks at its 4 tokens only
    w = enc_attention_weights.numpy()
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
    assert np.all(w[..., 4:] == 0)

    d2l.show_heatmaps(
        enc_attention_weights, xlabel='Key positions', ylabel='Query positions',
        titles=['Head %d' % i for i in range(1, 5)], figsize=(7, 3.5))
    fig = plt.gcf()
    assert_heatmaps(fig, num_blks * num_heads, (data.num_steps, data.num_steps))
    assert [ax.get_title() for ax in fig.axes[:4]] == ['Head 1', 'Head 2', 'Head 3', 'Head 4']

    import pandas as pd
    dec_attention_weights_2d = [head[0] for step in dec_attention_weights
                                for attn in step
                                for blk in attn for head in blk]
    dec_attention_weights_filled = tf.convert_to_tensor(
        np.asarray(pd.DataFrame(dec_attention_weights_2d).fillna(
            0.0).values).astype(np.float32))
    dec_attention_weights = tf.reshape(dec_attention_weights_filled, shape=(
        -1, 2, num_blks, num_heads, data.num_steps))
    dec_self_attention_weights, dec_inter_attention_weights = tf.transpose(
        dec_attention_weights, perm=(1, 2, 3, 0, 4))

    d2l.check_shape(dec_self_attention_weights,
                    (num_blks, num_heads, data.num_steps, data.num_steps))
    d2l.check_shape(dec_inter_attention_weights,
                    (num_blks, num_heads, data.num_steps, data.num_steps))
    # decoding step t attends to the t + 1 tokens decoded so far (the rest filled with 0)
    # and to the 4 source tokens
    w = dec_self_attention_weights.numpy()
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
    assert np.all(np.triu(np.ones((data.num_steps, data.num_steps)), 1)[None, None] * w == 0)
    w = dec_inter_attention_weights.numpy()
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
    assert np.all(w[..., 4:] == 0)

    d2l.show_heatmaps(
        dec_self_attention_weights[:, :, :, :],
        xlabel='Key positions', ylabel='Query positions',
        titles=['Head %d' % i for i in range(1, 5)], figsize=(7, 3.5))
    assert_heatmaps(plt.gcf(), num_blks * num_heads, (data.num_steps, data.num_steps))
    d2l.show_heatmaps(
        dec_inter_attention_weights, xlabel='Key positions',
        ylabel='Query positions', titles=['Head %d' % i for i in range(1, 5)],
        figsize=(7, 3.5))
    assert_heatmaps(plt.gcf(), num_blks * num_heads, (data.num_steps, data.num_steps))


# -- 11.8 Transformers for vision ------------------------------------------------------------
# The book gives this section in PyTorch and JAX only. Below is its PyTorch code carried
# over to TensorFlow line by line (ours, not the book's): nn.LazyConv2d -> Conv2D on
# channels-last images, flatten(2).transpose(1, 2) -> a reshape, nn.GELU -> Keras's gelu,
# nn.LayerNorm(num_hiddens) -> LayerNormalization() (over the last axis), nn.Parameter ->
# tf.Variable, cls_token.expand -> tf.tile, d2l.MultiHeadAttention with the TensorFlow
# library's arguments.

class PatchEmbedding(tf.keras.layers.Layer):
    def __init__(self, img_size=96, patch_size=16, num_hiddens=512):
        super().__init__()
        def _make_tuple(x):
            if not isinstance(x, (list, tuple)):
                return (x, x)
            return x
        img_size, patch_size = _make_tuple(img_size), _make_tuple(patch_size)
        self.num_patches = (img_size[0] // patch_size[0]) * (
            img_size[1] // patch_size[1])
        self.conv = tf.keras.layers.Conv2D(num_hiddens, kernel_size=patch_size,
                                           strides=patch_size)

    def call(self, X):
        # Output shape: (batch size, no. of patches, no. of channels)
        X = self.conv(X)
        return tf.reshape(X, (X.shape[0], -1, X.shape[3]))


class ViTMLP(tf.keras.layers.Layer):
    def __init__(self, mlp_num_hiddens, mlp_num_outputs, dropout=0.5):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(mlp_num_hiddens)
        self.gelu = tf.keras.activations.gelu
        self.dropout1 = tf.keras.layers.Dropout(dropout)
        self.dense2 = tf.keras.layers.Dense(mlp_num_outputs)
        self.dropout2 = tf.keras.layers.Dropout(dropout)

    def call(self, x, **kwargs):
        return self.dropout2(self.dense2(self.dropout1(self.gelu(
            self.dense1(x)), **kwargs)), **kwargs)


class ViTBlock(tf.keras.layers.Layer):
    def __init__(self, num_hiddens, norm_shape, mlp_num_hiddens,
                 num_heads, dropout, use_bias=False):
        super().__init__()
        self.ln1 = tf.keras.layers.LayerNormalization()
        self.attention = d2l.MultiHeadAttention(num_hiddens, num_hiddens, num_hiddens,
                                                num_hiddens, num_heads, dropout, use_bias)
        self.ln2 = tf.keras.layers.LayerNormalization()
        self.mlp = ViTMLP(mlp_num_hiddens, num_hiddens, dropout)

    def call(self, X, valid_lens=None, **kwargs):
        X = X + self.attention(*([self.ln1(X)] * 3), valid_lens, **kwargs)
        return X + self.mlp(self.ln2(X), **kwargs)


class ViT(d2l.Classifier):
    """Vision Transformer."""
    def __init__(self, img_size, patch_size, num_hiddens, mlp_num_hiddens,
                 num_heads, num_blks, emb_dropout, blk_dropout, lr=0.1,
                 use_bias=False, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.patch_embedding = PatchEmbedding(
            img_size, patch_size, num_hiddens)
        self.cls_token = tf.Variable(d2l.zeros((1, 1, num_hiddens)))
        num_steps = self.patch_embedding.num_patches + 1  # Add the cls token
        # Positional embeddings are learnable
        self.pos_embedding = tf.Variable(
            tf.random.normal((1, num_steps, num_hiddens)))
        self.dropout = tf.keras.layers.Dropout(emb_dropout)
        self.blks = [ViTBlock(num_hiddens, num_hiddens, mlp_num_hiddens,
                              num_heads, blk_dropout, use_bias)
                     for i in range(num_blks)]
        self.head = tf.keras.models.Sequential([
            tf.keras.layers.LayerNormalization(),
            tf.keras.layers.Dense(num_classes)])

    def forward(self, X):
        X = self.patch_embedding(X)
        X = d2l.concat((tf.tile(self.cls_token, (X.shape[0], 1, 1)), X), 1)
        X = self.dropout(X + self.pos_embedding, training=self.training)
        for blk in self.blks:
            X = blk(X, training=self.training)
        return self.head(X[:, 0])


def gelu_np(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def vit_loss_np(model, X, y):
    """The ViT's loss in NumPy: patches times the convolution's kernel (a stride-p, p x p
    convolution is a matrix product per patch), the class token and learned positions, blocks
    of X + MHA(LN(X)) and X + MLP(LN(X)), layer norm and dense on the class token."""
    X = np.asarray(X, np.float64)
    conv = model.patch_embedding.conv
    kernel = val(conv.kernel)
    p = kernel.shape[0]
    n, H, W, C = X.shape
    patches = X.reshape(n, H // p, p, W // p, p, C).transpose(0, 1, 3, 2, 4, 5)
    E = patches.reshape(n, -1, p * p * C) @ kernel.reshape(p * p * C, -1) + val(conv.bias)
    cls = np.broadcast_to(val(model.cls_token), (n, 1, E.shape[-1]))
    Z = np.concatenate([cls, E], axis=1) + val(model.pos_embedding)
    for blk in model.blks:
        L = layer_norm_np(blk.ln1, Z, (2,))
        Z = Z + multihead_np(blk.attention, L, L, L, None)[0]
        L = layer_norm_np(blk.ln2, Z, (2,))
        Z = Z + dense_np(blk.mlp.dense2, gelu_np(dense_np(blk.mlp.dense1, L)))
    ln, dense = model.head.layers
    return cross_entropy_np(dense_np(dense, layer_norm_np(ln, Z[:, 0], (1,))), y)


def test_d2l_11_8_vision_transformer(fashion):  # noqa: F811
    img_size, patch_size, num_hiddens, batch_size = 96, 16, 512, 4
    patch_emb = PatchEmbedding(img_size, patch_size, num_hiddens)
    X = d2l.zeros((batch_size, img_size, img_size, 3))
    d2l.check_shape(patch_emb(X),
                    (batch_size, (img_size//patch_size)**2, num_hiddens))
    # patch k (row-major) is the dot product of the kernel with the k-th 16 x 16 block
    X = tf.random.normal((1, img_size, img_size, 3))
    kernel, bias = patch_emb.conv.kernel.numpy(), patch_emb.conv.bias.numpy()
    block = X.numpy()[0, 16:32, 32:48, :]
    np.testing.assert_allclose(patch_emb(X).numpy()[0, 6 + 2],
                               np.tensordot(block, kernel, 3) + bias, rtol=1e-4, atol=1e-4)

    X = d2l.ones((2, 100, 24))
    encoder_blk = ViTBlock(24, 24, 48, 8, 0.5)
    d2l.check_shape(encoder_blk(X, training=False), X.shape)

    # (the book's sizes: 96 x 96 images, 16 x 16 patches, 512 hidden units, 10 epochs)
    img_size, patch_size = 16, 4
    num_hiddens, mlp_num_hiddens, num_heads, num_blks = 16, 32, 4, 2
    emb_dropout, blk_dropout, lr = 0.1, 0.1, 0.1
    model = ViT(img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads,
                num_blks, emb_dropout, blk_dropout, lr)
    trainer = d2l.Trainer(max_epochs=1)
    data = d2l.FashionMNIST(batch_size=64, resize=(img_size, img_size))
    trainer.fit(model, data)
    assert trainer.train_batch_idx == 2

    # One training step without dropout against the same network in NumPy
    check = ViT(img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads, num_blks,
                0, 0, lr)
    X, y = next(iter(data.train_dataloader()))
    assert X.shape == (64, img_size, img_size, 1)
    check(X)
    assert len(check.trainable_variables) == 2 + 2 + num_blks * (2 + 4 + 2 + 4) + 2 + 2
    grads = numpy_gradient_check(check, (X, y), lambda: vit_loss_np(check, X, y))
    before = vit_loss_np(check, X, y)
    tf.keras.optimizers.SGD(lr).apply_gradients(zip(grads, check.trainable_variables))
    assert vit_loss_np(check, X, y) < before


# -- the fixes chapter 11 needed, one by one ---------------------------------------------------

def test_repeat_as_tensorflow_documents_it():
    # masked_softmax: tf.repeat(valid_lens, repeats=shape[1]); MultiHeadAttention:
    # tf.repeat(valid_lens, repeats=self.num_heads, axis=0)
    x = tf.constant([[1, 2], [3, 4]])
    np.testing.assert_array_equal(tf.repeat(x, repeats=[2, 3], axis=0).numpy(),
                                  [[1, 2], [1, 2], [3, 4], [3, 4], [3, 4]])
    np.testing.assert_array_equal(tf.repeat(x, repeats=[2, 3], axis=1).numpy(),
                                  [[1, 1, 2, 2, 2], [3, 3, 4, 4, 4]])
    np.testing.assert_array_equal(tf.repeat(3, repeats=4).numpy(), [3, 3, 3, 3])
    np.testing.assert_array_equal(tf.repeat(x, repeats=2).numpy(), [1, 1, 2, 2, 3, 3, 4, 4])
    np.testing.assert_array_equal(tf.repeat(x, repeats=tf.constant([0, 2]), axis=-1).numpy(),
                                  [[2, 2], [4, 4]])
    assert tf.repeat(x, 2, axis=0).dtype == tf.int32
    valid_lens = tf.constant([3, 2])
    np.testing.assert_array_equal(tf.repeat(valid_lens, repeats=4).numpy(),
                                  np.repeat([3, 2], 4))
    # the gradient adds up the copies' cotangents
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.repeat(v, [3, 1]) * tf.constant([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [6.0, 4.0])
    with pytest.raises(ValueError, match=r"repeats of shape \(3,\) cannot go with axis 0 of "
                                         r"size 2"):
        tf.repeat(valid_lens, [1, 2, 3])
    with pytest.raises(ValueError, match="0 or more"):
        tf.repeat(valid_lens, -1)
    with pytest.raises(TypeError, match="repeats must be ints"):
        tf.repeat(valid_lens, 1.5)
    with pytest.raises(ValueError, match="axis"):
        tf.repeat(valid_lens, 2, axis=1)


def test_sort_as_tensorflow_documents_it():
    # Nadaraya-Watson's training inputs: x_train = tf.sort(d2l.rand((n,1)) * 5, 0)
    np.testing.assert_allclose(tf.sort([1, 10, 26.7, 2.8, 0.0]).numpy(),
                               [0, 1, 2.8, 10, 26.7])
    np.testing.assert_allclose(tf.sort([1, 10, 26.7, 2.8, 0.0], direction='DESCENDING').numpy(),
                               [26.7, 10, 2.8, 1, 0])
    x = tf.constant([[1, 10, 26.7], [5, 2.8, 0.0]])
    np.testing.assert_allclose(tf.sort(x, axis=0).numpy(), [[1, 2.8, 0], [5, 10, 26.7]])
    np.testing.assert_allclose(tf.sort(x, axis=-1).numpy(), [[1, 10, 26.7], [0, 2.8, 5]])
    np.testing.assert_array_equal(tf.sort(tf.constant([3, 1, 2], tf.int64)).numpy(), [1, 2, 3])
    # each sorted entry's cotangent goes back to where the entry was
    v = tf.Variable([[3.0], [1.0], [2.0]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.sort(v, 0) * tf.constant([[1.0], [10.0], [100.0]]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [[100.0], [1.0], [10.0]])
    # ties keep their order (a stable sort): the gradient of the first tied entry
    v = tf.Variable([2.0, 1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.sort(v, direction='DESCENDING')[0]
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="direction must be"):
        tf.sort(x, direction='ascending')
    with pytest.raises(ValueError, match="axis"):
        tf.sort(tf.constant(1.0))
    with pytest.raises(TypeError, match="real numbers.*got bool"):
        tf.sort(tf.constant([True, False]))


def test_layer_normalization_over_several_axes():
    # d2l's AddNorm: tf.keras.layers.LayerNormalization(norm_shape), norm_shape = [1, 2]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4))
    with float64_weights():
        ln = tf.keras.layers.LayerNormalization([1, 2])
        y = ln(tf.constant(x))
    assert ln.gamma.shape == (3, 4) and ln.beta.shape == (3, 4) and ln.axis == [1, 2]
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-12)
    gamma, beta = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    ln.set_weights([gamma, beta])
    np.testing.assert_allclose(ln(tf.constant(x)).numpy(),
                               (x - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-12)
    # the gradient (input, gamma, beta) against finite differences in float64
    X = tf.Variable(x)
    check_gradient([X, ln.gamma, ln.beta],
                   lambda: tf.reduce_sum(tf.sin(ln(X)) * tf.constant(x)), rtol=1e-7)
    # negative and unsorted axes, as Keras: sorted non-negative after building
    ln = tf.keras.layers.LayerNormalization(axis=(-1, 1))
    y = ln(tf.constant(x, tf.float32))
    assert ln.axis == [1, 2] and ln.gamma.shape == (3, 4)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-6)
    # the batch axis and the features: gamma of shape (2, 4), one per (sample, feature)
    ln = tf.keras.layers.LayerNormalization(axis=[0, 2])
    y = ln(tf.constant(x, tf.float32))
    assert ln.gamma.shape == (2, 4)
    m, v = x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - m) / np.sqrt(v + 1e-3), rtol=1e-5, atol=1e-6)
    # the default: the last axis, gamma one per feature
    ln = tf.keras.layers.LayerNormalization()
    ln(tf.constant(x, tf.float32))
    assert ln.gamma.shape == (4,)
    with pytest.raises(ValueError, match=r"built for sizes \(3, 4\) along axes \[1, 2\], got "
                                         r"an input of shape \(2, 5, 4\)"):
        ln = tf.keras.layers.LayerNormalization([1, 2])
        ln(tf.ones((2, 3, 4)))
        ln(tf.ones((2, 5, 4)))
    with pytest.raises(ValueError, match="names the same axis twice"):
        tf.keras.layers.LayerNormalization([2, -1])(tf.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="axis"):
        tf.keras.layers.LayerNormalization([3])(tf.ones((2, 3, 4)))
    with pytest.raises(TypeError, match="axis must be an int or a list/tuple of ints"):
        tf.keras.layers.LayerNormalization(axis=[1.5])


def test_dropout_on_attention_weights_in_training():
    # DotProductAttention drops attention weights when called with training=True: with the
    # identity as values, the output is the dropped weights, each 0 or w / (1 - 0.5)
    attention = d2l.DotProductAttention(dropout=0.5)
    queries, keys = tf.random.normal((2, 3, 4)), tf.random.normal((2, 10, 4))
    values = tf.tile(tf.expand_dims(tf.eye(10), 0), (2, 1, 1))
    valid_lens = tf.constant([4, 10])
    out = attention(queries, keys, values, valid_lens, training=True).numpy()
    w = attention.attention_weights.numpy()
    assert np.all(np.isclose(out, 0) | np.isclose(out, 2 * w, rtol=1e-6))
    assert 0 < np.mean(np.isclose(out, 0)[w > 0]) < 1
    np.testing.assert_allclose(attention(queries, keys, values, valid_lens,
                                         training=False).numpy(), w, rtol=1e-6)
    np.testing.assert_allclose(attention(queries, keys, values, valid_lens).numpy(), w,
                               rtol=1e-6)
