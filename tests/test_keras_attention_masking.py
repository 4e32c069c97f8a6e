"""Keras's masks (minitape/keras/masking.py: ``Embedding(mask_zero=True)``, ``Masking``, the
mask passed from layer to layer, RNNs skipping masked steps) and attention layers
(minitape/keras/attention.py: ``Attention``, ``MultiHeadAttention``).

Outputs are checked against NumPy loops written from Keras's documented equations (weights
in Keras's layout, given with ``set_weights``) and against what a mask means (a padded
sequence gives what the unpadded one gives); gradients against central finite differences
in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitape as tf
from minitape import keras
from minitape.keras.masking import get_keras_mask

L = keras.layers
RNG = np.random.default_rng(16)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _fd_gradient(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def _random_weights(layer, *args, **kwargs):
    layer(*args, **kwargs)   # build
    values = [RNG.normal(0, 0.5, w.shape) for w in layer.get_weights()]
    layer.set_weights(values)
    return values


# -- making masks --------------------------------------------------------------------------

IDS = np.array([[3, 1, 4, 0, 0], [2, 0, 0, 0, 0], [5, 2, 6, 1, 7]])


def test_embedding_mask_zero_makes_the_mask():
    y = L.Embedding(8, 3, mask_zero=True)(IDS)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), IDS != 0)
    assert get_keras_mask(L.Embedding(8, 3)(IDS)) is None
    layer = L.Embedding(8, 3, mask_zero=True)
    assert layer.get_config()["mask_zero"] is True
    np.testing.assert_array_equal(layer.compute_mask(IDS).numpy(), IDS != 0)


def test_masking_layer():
    x = np.array([[[1.0, 2.0], [0.0, 0.0], [0.0, 3.0]]])
    y = L.Masking(mask_value=0.0)(x)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), [[True, False, True]])
    np.testing.assert_array_equal(y.numpy(), x)
    y = L.Masking(mask_value=1.0)(np.array([[[1.0], [2.0]]]))
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), [[False, True]])
    np.testing.assert_array_equal(y.numpy(), [[[0.0], [2.0]]])


def test_a_layer_of_yours_makes_a_mask_with_compute_mask():
    # Chollet, chapter 11: a PositionalEmbedding layer whose compute_mask says ids != 0
    class PositionalEmbedding(L.Layer):
        def __init__(self, sequence_length, input_dim, output_dim, **kwargs):
            super().__init__(**kwargs)
            self.token_embeddings = L.Embedding(input_dim=input_dim, output_dim=output_dim)
            self.position_embeddings = L.Embedding(input_dim=sequence_length,
                                                   output_dim=output_dim)

        def call(self, inputs):
            positions = tf.range(start=0, limit=tf.shape(inputs)[-1], delta=1)
            return self.token_embeddings(inputs) + self.position_embeddings(positions)

        def compute_mask(self, inputs, mask=None):
            return tf.math.not_equal(inputs, 0)

    layer = PositionalEmbedding(5, 8, 4)
    assert layer.supports_masking
    y = layer(IDS)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)


# -- RNNs with masks, against a NumPy loop -----------------------------------------------

def np_masked_rnn(step, x, mask, states, backwards=False, zero_output=False):
    """Keras's masked loop: at a masked step the states carry over and the output repeats
    the previous one (zeros at first, or always with ``zero_output``)."""
    outs = []
    order = range(x.shape[1])[::-1] if backwards else range(x.shape[1])
    for t in order:
        out, new = step(x[:, t], states)
        m = mask[:, t:t + 1]
        prev = np.zeros_like(out) if zero_output or not outs else outs[-1]
        outs.append(np.where(m, out, prev))
        states = [np.where(m, n, s) for n, s in zip(new, states)]
    return np.stack(outs, 1), states


def simple_rnn_step(kernel, recurrent, bias):
    def step(x, states):
        h = np.tanh(x @ kernel + states[0] @ recurrent + bias)
        return h, [h]
    return step


def lstm_step(kernel, recurrent, bias):
    u = recurrent.shape[0]

    def step(x, states):
        h, c = states
        z = x @ kernel + h @ recurrent + bias
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return h, [h, c]
    return step


def gru_step(kernel, recurrent, bias):
    u = recurrent.shape[0]

    def step(x, states):
        h = states[0]
        mx = x @ kernel + bias[0]
        mh = h @ recurrent + bias[1]
        z = _sigmoid(mx[:, :u] + mh[:, :u])
        r = _sigmoid(mx[:, u:2 * u] + mh[:, u:2 * u])
        h = z * h + (1 - z) * np.tanh(mx[:, 2 * u:] + r * mh[:, 2 * u:])
        return h, [h]
    return step


X = RNG.normal(size=(3, 5, 4))
MASK = IDS != 0


@pytest.mark.parametrize("backwards", [False, True])
@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_masked_rnn_matches_numpy(kind, backwards):
    layer = getattr(L, kind)(3, return_sequences=True, return_state=True,
                             go_backwards=backwards, dtype="float64")
    weights = _random_weights(layer, X)
    seq, *states = layer(X, mask=tf.constant(MASK))
    step = {"SimpleRNN": simple_rnn_step, "LSTM": lstm_step, "GRU": gru_step}[kind](*weights)
    zeros = [np.zeros((3, 3)) for _ in states]
    want_seq, want_states = np_masked_rnn(step, X, MASK, zeros, backwards)
    np.testing.assert_allclose(seq.numpy(), want_seq, atol=1e-12)
    for got, want in zip(states, want_states):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    # a mask given by hand is passed on too (Keras's previous_mask)
    np.testing.assert_array_equal(get_keras_mask(seq).numpy(), MASK)


def test_padded_sequence_gives_the_unpadded_result():
    # The meaning of the mask: right padding changes nothing; the last output is the last
    # real step's, the final states too.
    layer = L.LSTM(3, return_state=True, dtype="float64")
    _random_weights(layer, X)
    out, h, c = layer(X, mask=MASK)
    for b, n in enumerate(MASK.sum(1)):
        alone, h1, c1 = layer(X[b:b + 1, :n])
        np.testing.assert_allclose(out.numpy()[b], alone.numpy()[0], atol=1e-12)
        np.testing.assert_allclose(c.numpy()[b], c1.numpy()[0], atol=1e-12)


def test_mask_travels_through_sequential_and_functional():
    embed = L.Embedding(8, 4, mask_zero=True)
    gru = L.GRU(3, dtype="float32")
    dense = L.Dense(1)
    model = keras.Sequential([embed, gru, dense])
    y = model(IDS).numpy()
    vectors = embed(IDS).numpy()
    for b, n in enumerate(MASK.sum(1)):   # each sequence alone, without its padding
        alone = dense(gru(vectors[b:b + 1, :n])).numpy()
        np.testing.assert_allclose(y[b], alone[0], rtol=1e-5, atol=1e-6)
    inputs = keras.Input(shape=[None], dtype="int32")
    outputs = dense(gru(embed(inputs)))
    functional = keras.Model(inputs, outputs)
    np.testing.assert_allclose(functional(IDS).numpy(), y, rtol=1e-6, atol=1e-7)


def test_return_sequences_passes_the_mask_on_and_dense_keeps_it():
    z = L.Embedding(8, 4, mask_zero=True)(IDS)
    seq = L.SimpleRNN(2, return_sequences=True)(z)
    np.testing.assert_array_equal(get_keras_mask(seq).numpy(), MASK)
    y = L.Dense(3)(L.Dropout(0.5)(seq))
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), MASK)
    assert get_keras_mask(L.SimpleRNN(2)(z)) is None
    added = L.Add()([seq, L.Masking()(np.ones((3, 5, 2)) * (np.arange(5) < 4)[:, None])])
    np.testing.assert_array_equal(get_keras_mask(added).numpy(),
                                  MASK & (np.arange(5) < 4))


def test_bidirectional_with_mask():
    layer = L.Bidirectional(L.GRU(2, return_sequences=True, dtype="float64"))
    weights = _random_weights(layer, X)
    y = layer(X, mask=MASK).numpy()
    fwd, _ = np_masked_rnn(gru_step(*weights[:3]), X, MASK, [np.zeros((3, 2))],
                           zero_output=True)
    bwd, _ = np_masked_rnn(gru_step(*weights[3:]), X, MASK, [np.zeros((3, 2))],
                           backwards=True, zero_output=True)
    np.testing.assert_allclose(y, np.concatenate([fwd, bwd[:, ::-1]], -1), atol=1e-12)
    assert (y[~MASK] == 0).all()


def test_layer_without_masking_warns_as_keras():
    z = L.Embedding(8, 4, mask_zero=True)(IDS)
    with pytest.warns(UserWarning, match="does not support masking"):
        y = L.Flatten()(z)
    assert get_keras_mask(y) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L.Dense(2)(z)


def test_bad_mask_shape():
    with pytest.raises(ValueError, match=r"mask must have shape \(batch, timesteps\)"):
        L.GRU(2)(X, mask=MASK[:, :3])


def test_masked_lstm_gradients_match_finite_differences():
    layer = L.LSTM(2, return_sequences=True, dtype="float64")
    weights = _random_weights(layer, X)
    probe = RNG.normal(size=(3, 5, 2))

    def loss_of(x_value, ws):
        layer.set_weights(ws)
        return float(np.sum(layer(x_value, mask=MASK).numpy() * probe))

    xt = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(layer(xt, mask=MASK) * probe)
    gx, gk = tape.gradient(loss, [xt, layer.trainable_weights[0]])
    np.testing.assert_allclose(gx.numpy(), _fd_gradient(lambda v: loss_of(v, weights), X),
                               atol=1e-7)
    assert (gx.numpy()[~MASK] == 0).all()   # masked steps do not count
    np.testing.assert_allclose(
        gk.numpy(), _fd_gradient(lambda v: loss_of(X, [v] + weights[1:]), weights[0]),
        atol=1e-7)


# -- Attention -----------------------------------------------------------------------------

Q = RNG.normal(size=(2, 3, 4))
V = RNG.normal(size=(2, 5, 4))
K = RNG.normal(size=(2, 5, 4))


def np_attention(q, v, k, scale=1.0, concat_weight=None, v_mask=None, q_mask=None,
                 causal=False):
    if concat_weight is None:
        scores = scale * q @ k.transpose(0, 2, 1)
    else:
        scores = concat_weight * np.tanh(scale * (q[:, :, None] + k[:, None])).sum(-1)
    keep = np.ones(scores.shape, bool)
    if v_mask is not None:
        keep &= v_mask[:, None, :]
    if causal:
        keep &= np.tril(np.ones(scores.shape[1:], bool))
    w = _softmax(np.where(keep, scores, -1e9)) * keep
    out = w @ v
    if q_mask is not None:
        out = out * q_mask[:, :, None]
    return out, w


def test_attention_dot_matches_numpy_and_hand_case():
    out, w = L.Attention(dtype="float64")([Q, V, K], return_attention_scores=True)
    want_out, want_w = np_attention(Q, V, K)
    np.testing.assert_allclose(out.numpy(), want_out, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), want_w, atol=1e-12)
    # hand: one query [1, 0] against keys [1, 0] and [0, 1]: weights e/(e+1), 1/(e+1)
    y = L.Attention(dtype="float64")([np.array([[[1.0, 0.0]]]),
                                      np.array([[[1.0, 0.0], [0.0, 1.0]]])])
    e = np.e
    np.testing.assert_allclose(y.numpy(), [[[e / (e + 1), 1 / (e + 1)]]], atol=1e-12)


def test_attention_scale_concat_masks_causal():
    layer = L.Attention(use_scale=True, score_mode="concat", dtype="float64")
    layer([Q, V])
    assert [w.path.split("/")[-1] for w in layer.weights] == ["scale", "concat_score_weight"]
    layer.set_weights([np.array(0.7), np.array(1.3)])
    q_mask = np.array([[True, True, False], [True, False, True]])
    v_mask = np.array([[True, True, True, False, False], [True, False, True, True, True]])
    out, w = layer([Q, V, K], mask=[q_mask, v_mask], return_attention_scores=True,
                   use_causal_mask=True)
    want_out, want_w = np_attention(Q, V, K, 0.7, 1.3, v_mask, q_mask, causal=True)
    np.testing.assert_allclose(out.numpy(), want_out, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), want_w, atol=1e-12)
    scaled = L.Attention(use_scale=True, dtype="float64")
    scaled([Q, V])
    scaled.set_weights([np.array(0.5)])
    np.testing.assert_allclose(scaled([Q, V]).numpy(), np_attention(Q, V, V, 0.5)[0],
                               atol=1e-12)


def test_attention_takes_the_masks_the_inputs_carry():
    embed = L.Embedding(8, 4, mask_zero=True, dtype="float64")
    q_ids = np.array([[1, 2, 0], [4, 0, 0]])
    v_ids = np.array([[3, 1, 4, 0, 0], [2, 7, 0, 0, 0]])
    q, v = embed(q_ids), embed(v_ids)
    y = L.Attention(dtype="float64")([q, v])
    want, _ = np_attention(q.numpy(), v.numpy(), v.numpy(), v_mask=v_ids != 0,
                           q_mask=q_ids != 0)
    np.testing.assert_allclose(y.numpy(), want, atol=1e-12)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), q_ids != 0)


def test_attention_bad_input():
    with pytest.raises(ValueError, match=r"\[query, value\]"):
        L.Attention()(Q)
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="add")


def test_attention_gradients_match_finite_differences():
    layer = L.Attention(use_scale=True, dtype="float64")
    layer([Q, V])
    layer.set_weights([np.array(0.8)])
    v_mask = np.array([[True, True, True, False, False], [True, True, True, True, True]])
    probe = RNG.normal(size=(2, 3, 4))
    qt = tf.constant(Q)
    with tf.GradientTape() as tape:
        tape.watch(qt)
        loss = tf.reduce_sum(layer([qt, V], mask=[None, v_mask]) * probe)
    gq, gs = tape.gradient(loss, [qt, layer.scale])

    def f(q, s=0.8):
        return float(np.sum(np_attention(q, V, V, s, v_mask=v_mask)[0] * probe))
    np.testing.assert_allclose(gq.numpy(), _fd_gradient(f, Q), atol=1e-7)
    np.testing.assert_allclose(gs.numpy(), _fd_gradient(lambda s: f(Q, s), np.array(0.8)),
                               atol=1e-7)


# -- MultiHeadAttention --------------------------------------------------------------------

def np_mha(query, value, key, weights, mask=None):
    """Head by head, from Keras's equations."""
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    heads, key_dim = bq.shape
    out = np.zeros(query.shape[:2] + (wo.shape[-1],))
    all_w = []
    for h in range(heads):
        q = (query @ wq[:, h] + bq[h]) / np.sqrt(key_dim)
        k = key @ wk[:, h] + bk[h]
        v = value @ wv[:, h] + bv[h]
        scores = q @ k.transpose(0, 2, 1)
        keep = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(
            mask, scores.shape)
        w = _softmax(np.where(keep, scores, -1e9)) * keep
        all_w.append(w)
        out += (w @ v) @ wo[h]
    return out + bo, np.stack(all_w, 1)


def test_mha_weights_in_keras_layout():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=5, output_shape=6)
    layer(Q, V, K)
    assert [(w.path.split("/", 1)[1], w.shape) for w in layer.weights] == [
        ("query/kernel", (4, 2, 3)), ("query/bias", (2, 3)), ("key/kernel", (4, 2, 3)),
        ("key/bias", (2, 3)), ("value/kernel", (4, 2, 5)), ("value/bias", (2, 5)),
        ("attention_output/kernel", (2, 5, 6)), ("attention_output/bias", (6,))]
    assert layer(Q, V).shape == (2, 3, 6)


def test_mha_matches_numpy_with_masks():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64")
    weights = _random_weights(layer, Q, V, K)
    out, w = layer(Q, V, K, return_attention_scores=True)
    want_out, want_w = np_mha(Q, V, K, weights)
    np.testing.assert_allclose(out.numpy(), want_out, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), want_w, atol=1e-12)
    pad = np.array([[True, True, True, False, False], [True, True, True, True, False]])
    got = layer(Q, value=V, attention_mask=pad[:, None])   # Geron's padding mask (B, 1, S)
    np.testing.assert_allclose(got.numpy(), np_mha(Q, V, V, weights, pad[:, None])[0],
                               atol=1e-12)
    # causal self-attention, and a padding mask ANDed with it
    x = RNG.normal(size=(2, 5, 4))
    causal = np.tril(np.ones((5, 5), bool))
    self_attn = L.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64")
    sw = _random_weights(self_attn, x, x)
    np.testing.assert_allclose(self_attn(x, x, use_causal_mask=True).numpy(),
                               np_mha(x, x, x, sw, causal)[0], atol=1e-12)
    both = causal & pad[:, None]
    np.testing.assert_allclose(self_attn(x, x, attention_mask=both).numpy(),
                               np_mha(x, x, x, sw, both)[0], atol=1e-12)


def test_mha_takes_the_masks_the_inputs_carry():
    embed = L.Embedding(8, 4, mask_zero=True, dtype="float64")
    ids = np.array([[3, 1, 4, 0], [2, 7, 0, 0]])
    x = embed(ids)
    layer = L.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
    weights = _random_weights(layer, x, x)
    keep = (ids != 0)[:, :, None] & (ids != 0)[:, None, :]
    y = layer(x, x)
    np.testing.assert_allclose(y.numpy(), np_mha(x.numpy(), x.numpy(), x.numpy(), weights,
                                                 keep)[0], atol=1e-12)
    np.testing.assert_array_equal(get_keras_mask(y).numpy(), ids != 0)


def test_mha_dropout_only_while_training():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.5, seed=1,
                                 dtype="float64")
    a = layer(Q, V).numpy()
    np.testing.assert_allclose(layer(Q, V, training=False).numpy(), a)
    assert not np.allclose(layer(Q, V, training=True).numpy(), a)


def test_mha_gradients_match_finite_differences():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
    weights = _random_weights(layer, Q, V)
    mask = np.array([[True, True, True, False, True], [True, False, True, True, True]])
    probe = RNG.normal(size=(2, 3, 4))
    vt = tf.constant(V)
    with tf.GradientTape() as tape:
        tape.watch(vt)
        loss = tf.reduce_sum(layer(Q, vt, attention_mask=mask[:, None]) * probe)
    grads = tape.gradient(loss, [vt] + layer.trainable_weights)

    def f(v, ws):
        return float(np.sum(np_mha(Q, v, v, ws, mask[:, None])[0] * probe))
    np.testing.assert_allclose(grads[0].numpy(), _fd_gradient(lambda v: f(v, weights), V),
                               atol=1e-7)
    for k in (0, 2, 4, 6):   # the four kernels
        def g(w, k=k):
            return f(V, weights[:k] + [w] + weights[k + 1:])
        np.testing.assert_allclose(grads[1 + k].numpy(), _fd_gradient(g, weights[k]),
                                   atol=1e-7)


def test_mha_bad_arguments():
    with pytest.raises(TypeError, match="num_heads"):
        L.MultiHeadAttention(num_heads=2.5, key_dim=3)
    with pytest.raises(TypeError, match="needs a value"):
        L.MultiHeadAttention(num_heads=2, key_dim=3)(Q)


def test_the_output_mask_weights_the_compiled_loss():
    # As Keras 3: the padded positions of a sequence output do not count in the loss
    model = keras.Sequential([L.Embedding(8, 4, mask_zero=True),
                              L.SimpleRNN(3, return_sequences=True),
                              L.Dense(6, activation="softmax")])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="sgd")
    y = RNG.integers(0, 6, IDS.shape)
    y_pred = model(IDS)
    p = y_pred.numpy()
    nll = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0])
    want = nll[MASK].mean()
    np.testing.assert_allclose(float(model.compute_loss(y=y, y_pred=y_pred)), want, rtol=1e-5)
    loss = keras.losses.SparseCategoricalCrossentropy()
    model.compile(loss=loss, optimizer="sgd")
    np.testing.assert_allclose(float(model.compute_loss(y=y, y_pred=y_pred)), want, rtol=1e-5)
    model.compile(loss=loss, optimizer="sgd", metrics=["accuracy"])
    history = model.fit(IDS, y, epochs=1, verbose=0, shuffle=False)
    np.testing.assert_allclose(history.history["loss"][0], want, rtol=1e-5)
    accuracy = (p.argmax(-1) == y)[MASK].mean()   # the metrics skip the padding too
    np.testing.assert_allclose(history.history["accuracy"][0], accuracy, rtol=1e-6)


# -- the ops Geron's masks use: logical ops and band_part ---------------------------------

def test_logical_ops_and_operators():
    a = np.array([[True, False], [True, True]])
    b = np.array([True, False])
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_array_equal((ta & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta | tb).numpy(), a | b)
    np.testing.assert_array_equal((ta ^ tb).numpy(), a ^ b)
    np.testing.assert_array_equal((~ta).numpy(), ~a)
    np.testing.assert_array_equal(tf.math.logical_and(ta, tb).numpy(), a & b)
    np.testing.assert_array_equal(tf.logical_or(a, b).numpy(), a | b)
    np.testing.assert_array_equal(tf.math.logical_not(b).numpy(), ~b)
    with pytest.raises(TypeError, match="bool"):
        tf.constant([1, 2]) & tf.constant([1, 0])
    with pytest.raises(TypeError, match="bool"):
        ~tf.constant([1.0])


def test_band_part_as_tensorflow_documents():
    # tf.linalg.band_part's documented example: a 4x4 matrix, band_part(x, 1, -1) and (2, 1)
    x = np.array([[0, 1, 2, 3], [-1, 0, 1, 2], [-2, -1, 0, 1], [-3, -2, -1, 0]], float)
    np.testing.assert_array_equal(tf.linalg.band_part(x, 1, -1).numpy(),
                                  [[0, 1, 2, 3], [-1, 0, 1, 2], [0, -1, 0, 1], [0, 0, -1, 0]])
    np.testing.assert_array_equal(tf.linalg.band_part(x, 2, 1).numpy(),
                                  [[0, 1, 0, 0], [-1, 0, 1, 0], [-2, -1, 0, 1], [0, -2, -1, 0]])
    causal = tf.linalg.band_part(tf.ones((3, 3), tf.bool), -1, 0)
    np.testing.assert_array_equal(causal.numpy(), np.tril(np.ones((3, 3), bool)))
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.linalg.band_part(v, 0, 0) * 2.0)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), 2 * np.eye(4))
    with pytest.raises(ValueError, match="2 axes"):
        tf.linalg.band_part(np.ones(3), -1, 0)
