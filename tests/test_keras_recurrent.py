"""The recurrent layers textbooks use: SimpleRNN, LSTM, GRU (and their cells, RNN(cell)),
Bidirectional, TimeDistributed, Conv1D, MaxPooling1D, global 1-D pooling
(minitape/keras/recurrent.py), and keras.utils.timeseries_dataset_from_array.

Each layer's outputs are checked against a NumPy loop written from Keras's documented
equations (weights in Keras's layout, given with ``set_weights``), a small hand-computed
case, and the gradients with respect to the kernels and the inputs against central finite
differences in float64. Then the textbooks' uses: Geron's chapter 15 models (SimpleRNN, deep
RNN, LSTM, GRU, Conv1D + GRU, WaveNet, a custom cell in RNN) and Chollet's chapter 10 ones
(LSTM, GRU with recurrent_dropout, Bidirectional, the 1-D convnet) build and train one
epoch, d2l's time-major RNNs carry their state, and a SimpleRNN learns to predict the next
value of a sine series.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as tf
from minitape import keras

L = keras.layers
RNG = np.random.default_rng(11)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# -- NumPy references, from Keras's equations ----------------------------------------------

def np_simple_rnn(x, kernel, recurrent, bias, backwards=False):
    h = np.zeros((x.shape[0], kernel.shape[1]))
    outs = []
    steps = range(x.shape[1])[::-1] if backwards else range(x.shape[1])
    for t in steps:
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        outs.append(h)
    return np.stack(outs, 1), h


def np_lstm(x, kernel, recurrent, bias, backwards=False):
    u = recurrent.shape[0]
    h = np.zeros((x.shape[0], u))
    c = np.zeros((x.shape[0], u))
    W = {g: kernel[:, k * u:(k + 1) * u] for k, g in enumerate("ifco")}
    U = {g: recurrent[:, k * u:(k + 1) * u] for k, g in enumerate("ifco")}
    b = {g: bias[k * u:(k + 1) * u] for k, g in enumerate("ifco")}
    outs = []
    steps = range(x.shape[1])[::-1] if backwards else range(x.shape[1])
    for t in steps:
        xt = x[:, t]
        i = _sigmoid(xt @ W["i"] + h @ U["i"] + b["i"])
        f = _sigmoid(xt @ W["f"] + h @ U["f"] + b["f"])
        o = _sigmoid(xt @ W["o"] + h @ U["o"] + b["o"])
        c = f * c + i * np.tanh(xt @ W["c"] + h @ U["c"] + b["c"])
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), h, c


def np_gru(x, kernel, recurrent, bias, reset_after=True):
    u = recurrent.shape[0]
    h = np.zeros((x.shape[0], u))
    W = {g: kernel[:, k * u:(k + 1) * u] for k, g in enumerate("zrh")}
    U = {g: recurrent[:, k * u:(k + 1) * u] for k, g in enumerate("zrh")}
    b_x = bias[0] if reset_after else bias
    b_h = bias[1] if reset_after else np.zeros(3 * u)
    bx = {g: b_x[k * u:(k + 1) * u] for k, g in enumerate("zrh")}
    bh = {g: b_h[k * u:(k + 1) * u] for k, g in enumerate("zrh")}
    outs = []
    for t in range(x.shape[1]):
        xt = x[:, t]
        z = _sigmoid(xt @ W["z"] + bx["z"] + h @ U["z"] + bh["z"])
        r = _sigmoid(xt @ W["r"] + bx["r"] + h @ U["r"] + bh["r"])
        if reset_after:   # h~ = tanh(x W_h + b_xh + r * (h U_h + b_hh))
            cand = np.tanh(xt @ W["h"] + bx["h"] + r * (h @ U["h"] + bh["h"]))
        else:             # h~ = tanh(x W_h + b_h + (r * h) U_h)
            cand = np.tanh(xt @ W["h"] + bx["h"] + (r * h) @ U["h"])
        h = z * h + (1 - z) * cand
        outs.append(h)
    return np.stack(outs, 1), h


def _weights(layer, x):
    """Random weights in the layer's (Keras's) shapes, set with set_weights."""
    layer(x)   # build
    values = [RNG.normal(0, 0.5, w.shape) for w in layer.get_weights()]
    layer.set_weights(values)
    return values


X = RNG.normal(size=(3, 6, 4))


# -- outputs -------------------------------------------------------------------------------

def test_simple_rnn_hand_computed():
    # one unit, linear: h1 = 0.5 * 1 = 0.5; h2 = 0.5 * 2 + 0.5 * 0.5 = 1.25
    layer = L.SimpleRNN(1, activation=None, return_sequences=True)
    layer(np.zeros((1, 2, 1), np.float32))
    layer.set_weights([np.array([[0.5]]), np.array([[0.5]]), np.array([0.0])])
    out = layer(np.array([[[1.0], [2.0]]], np.float32))
    np.testing.assert_allclose(out.numpy(), [[[0.5], [1.25]]])


@pytest.mark.parametrize("backwards", [False, True])
def test_simple_rnn_matches_numpy(backwards):
    layer = L.SimpleRNN(5, return_sequences=True, return_state=True, go_backwards=backwards,
                        dtype="float64")
    kernel, recurrent, bias = _weights(layer, X)
    seq, h = layer(X)
    ref_seq, ref_h = np_simple_rnn(X, kernel, recurrent, bias, backwards)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-12)
    last = L.SimpleRNN(5, go_backwards=backwards, dtype="float64")
    last(X)
    last.set_weights([kernel, recurrent, bias])
    np.testing.assert_allclose(last(X).numpy(), ref_seq[:, -1], rtol=1e-12)


@pytest.mark.parametrize("backwards", [False, True])
def test_lstm_matches_numpy(backwards):
    layer = L.LSTM(3, return_sequences=True, return_state=True, go_backwards=backwards,
                   dtype="float64")
    kernel, recurrent, bias = _weights(layer, X)
    assert (kernel.shape, recurrent.shape, bias.shape) == ((4, 12), (3, 12), (12,))
    seq, h, c = layer(X)
    ref_seq, ref_h, ref_c = np_lstm(X, kernel, recurrent, bias, backwards)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), ref_c, rtol=1e-12)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_numpy(reset_after):
    layer = L.GRU(3, return_sequences=True, return_state=True, reset_after=reset_after,
                  dtype="float64")
    kernel, recurrent, bias = _weights(layer, X)
    assert bias.shape == ((2, 9) if reset_after else (9,))
    seq, h = layer(X)
    ref_seq, ref_h = np_gru(X, kernel, recurrent, bias, reset_after)
    np.testing.assert_allclose(seq.numpy(), ref_seq, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), ref_h, rtol=1e-12)


def test_default_initializers_and_shapes():
    x = np.zeros((2, 7, 3), np.float32)
    lstm = L.LSTM(4)
    assert lstm(x).shape == (2, 4) and lstm(x).dtype == tf.float32
    kernel, recurrent, bias = lstm.get_weights()
    # unit_forget_bias: the forget gate's bias starts at 1, the others at 0
    np.testing.assert_array_equal(bias, [0] * 4 + [1] * 4 + [0] * 8)
    # recurrent_initializer="orthogonal" on the whole (4, 16) matrix: orthonormal rows
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(4), atol=1e-5)
    limit = np.sqrt(6 / (3 + 16))     # glorot_uniform on (3, 16)
    assert np.abs(kernel).max() <= limit
    gru = L.GRU(4, return_sequences=True)
    assert gru(x).shape == (2, 7, 4)
    assert [w.shape for w in gru.get_weights()] == [(3, 12), (4, 12), (2, 12)]
    np.testing.assert_array_equal(gru.get_weights()[2], 0)
    assert [v.path for v in gru.weights] == [f"{gru.name}/gru_cell/kernel",
                                            f"{gru.name}/gru_cell/recurrent_kernel",
                                            f"{gru.name}/gru_cell/bias"]
    out, h = L.GRU(4, return_state=True)(x)
    assert out.shape == h.shape == (2, 4)
    assert L.SimpleRNN(2, use_bias=False)(x).shape == (2, 2)


def test_initial_state_is_used():
    layer = L.SimpleRNN(2, activation=None, return_sequences=True, dtype="float64")
    layer(np.zeros((1, 1, 1)))
    layer.set_weights([np.zeros((1, 2)), np.eye(2) * 0.5, np.zeros(2)])
    out = layer(np.zeros((1, 2, 1)), initial_state=[np.array([[4.0, 8.0]])])
    np.testing.assert_allclose(out.numpy(), [[[2, 4], [1, 2]]])
    with pytest.raises(ValueError, match="initial_state has 2"):
        layer(np.zeros((1, 2, 1)), initial_state=[np.zeros((1, 2))] * 2)


def test_cells_one_step():
    cell = L.LSTMCell(3, dtype="float64")
    x = RNG.normal(size=(2, 4))
    h, (h2, c) = cell(x, [np.zeros((2, 3)), np.zeros((2, 3))])
    kernel, recurrent, bias = cell.get_weights()
    ref_seq, ref_h, ref_c = np_lstm(x[:, None], kernel, recurrent, bias)
    np.testing.assert_allclose(h.numpy(), ref_h)
    np.testing.assert_allclose(c.numpy(), ref_c)
    assert h2 is h
    g = L.GRUCell(3, dtype="float64")
    h, state = g(x, np.zeros((2, 3)))   # a bare state gives a bare state back (Keras 3)
    assert state is h and h.shape == (2, 3)


def test_rnn_of_cells_is_the_layer():
    for cell_cls, layer_cls in [(L.SimpleRNNCell, L.SimpleRNN), (L.LSTMCell, L.LSTM),
                                (L.GRUCell, L.GRU)]:
        rnn = L.RNN(cell_cls(3, dtype="float64"), return_sequences=True)
        layer = layer_cls(3, return_sequences=True, dtype="float64")
        weights = _weights(rnn, X)
        layer(X)
        layer.set_weights(weights)
        np.testing.assert_allclose(rnn(X).numpy(), layer(X).numpy(), rtol=1e-12)


def test_stacked_cells_are_two_layers():
    cells = [L.SimpleRNNCell(3, dtype="float64"), L.LSTMCell(2, dtype="float64")]
    stacked = L.RNN(cells, return_state=True)
    out, *states = stacked(X)
    assert len(states) == 3
    first = L.SimpleRNN(3, return_sequences=True, dtype="float64")
    second = L.LSTM(2, dtype="float64")
    second(first(X))
    first.set_weights(cells[0].get_weights())
    second.set_weights(cells[1].get_weights())
    np.testing.assert_allclose(out.numpy(), second(first(X)).numpy(), rtol=1e-12)


def test_geron_custom_cell_in_rnn():
    # Geron, chapter 15: a cell with layer normalization, run by keras.layers.RNN
    class LNSimpleRNNCell(keras.layers.Layer):
        def __init__(self, units, activation="tanh", **kwargs):
            super().__init__(**kwargs)
            self.state_size = units
            self.output_size = units
            self.simple_rnn_cell = keras.layers.SimpleRNNCell(units, activation=None)
            self.layer_norm = keras.layers.LayerNormalization()
            self.activation = keras.activations.get(activation)

        def call(self, inputs, states):
            outputs, new_states = self.simple_rnn_cell(inputs, states)
            norm_outputs = self.activation(self.layer_norm(outputs))
            return norm_outputs, [norm_outputs]

    class LNSimpleRNNCell2(LNSimpleRNNCell):   # (the second edition's, with its own states)
        def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
            if inputs is not None:
                batch_size = tf.shape(inputs)[0]
                dtype = inputs.dtype
            return [tf.zeros([batch_size, self.state_size], dtype=dtype)]

    model = keras.Sequential([
        keras.layers.RNN(LNSimpleRNNCell(32), return_sequences=True, input_shape=[None, 5]),
        keras.layers.RNN(LNSimpleRNNCell2(32), return_sequences=True),
        keras.layers.Dense(14)])
    x = RNG.normal(size=(8, 10, 5)).astype("float32")
    y = RNG.normal(size=(8, 10, 14)).astype("float32")
    model.compile(loss="mse", optimizer="adam")
    history = model.fit(x, y, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert model(x).shape == (8, 10, 14)
    # twice simple_rnn_cell (kernel, recurrent_kernel, bias) + layer_norm (gamma, beta);
    # Dense (kernel, bias)
    assert len(model.trainable_weights) == 12


def test_time_major_as_d2l():
    # "Dive into Deep Learning" (TensorFlow tab), sections 9.6, 10.1-10.3: time-major inputs,
    # the state passed back in as the call's second argument
    rnn = L.SimpleRNN(4, return_sequences=True, return_state=True, time_major=True,
                      dtype="float64")
    xs = np.transpose(X, (1, 0, 2))    # (steps, batch, features)
    outputs, H = rnn(xs, None)
    assert outputs.shape == (6, 3, 4) and H.shape == (3, 4)
    ref, ref_h = np_simple_rnn(X, *rnn.get_weights())
    np.testing.assert_allclose(outputs.numpy(), np.transpose(ref, (1, 0, 2)), rtol=1e-12)
    np.testing.assert_allclose(H.numpy(), ref_h, rtol=1e-12)
    again, H2 = rnn(xs[:2], H)     # carry the state on: the same as one longer sequence
    whole, _ = rnn(np.concatenate([xs, xs[:2]]), None)
    np.testing.assert_allclose(again.numpy(), whole.numpy()[6:], rtol=1e-12)

    lstm = L.LSTM(4, return_sequences=True, return_state=True, time_major=True)
    outputs, *H_C = lstm(xs.astype("float32"), None)
    assert outputs.shape == (6, 3, 4) and len(H_C) == 2

    gru_cells = [L.GRUCell(4, dropout=0.2) for _ in range(2)]
    deep = L.RNN(gru_cells, return_sequences=True, return_state=True, time_major=True)
    outputs, *state = deep(xs.astype("float32"), None)
    assert outputs.shape == (6, 3, 4) and len(state) == 2
    outputs, *state = deep(xs.astype("float32"), state, training=True)
    assert np.isfinite(outputs.numpy()).all()
    stacked = L.RNN(L.StackedRNNCells([L.GRUCell(4) for _ in range(2)]),
                    return_sequences=True, return_state=True)
    assert stacked(X.astype("float32"))[0].shape == (3, 6, 4)


# -- gradients against central finite differences (float64) --------------------------------

def _fd_gradient(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


@pytest.mark.parametrize("make", [
    lambda: L.SimpleRNN(3, return_sequences=True, dtype="float64"),
    lambda: L.LSTM(3, return_sequences=True, dtype="float64"),
    lambda: L.GRU(3, return_sequences=True, dtype="float64"),
    lambda: L.GRU(2, reset_after=False, go_backwards=True, dtype="float64"),
    lambda: L.Bidirectional(L.LSTM(2, return_sequences=True, dtype="float64")),
    lambda: L.Conv1D(3, 2, padding="causal", dilation_rate=2, dtype="float64"),
    lambda: L.Conv1D(2, 3, strides=2, padding="same", dtype="float64"),
])
def test_gradients_match_finite_differences(make):
    layer = make()
    x = RNG.normal(size=(2, 5, 3))
    weights = _weights(layer, x)
    probe = RNG.normal(size=layer(x).shape)

    def loss_of(x_value, ws):
        layer.set_weights(ws)
        return float(np.sum(layer(x_value).numpy() * probe))

    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(layer(xt) * probe)
    grads = tape.gradient(loss, [xt] + layer.trainable_weights)
    np.testing.assert_allclose(grads[0].numpy(),
                               _fd_gradient(lambda v: loss_of(v, weights), x), atol=1e-7)
    for k, w in enumerate(weights[:2]):   # kernel and recurrent_kernel (or bias for Conv1D)
        def f(v, k=k):
            return loss_of(x, weights[:k] + [v] + weights[k + 1:])
        np.testing.assert_allclose(grads[1 + k].numpy(), _fd_gradient(f, w), atol=1e-7)
        layer.set_weights(weights)


# -- dropout ---------------------------------------------------------------------------------

def test_dropout_only_while_training_and_one_mask_per_sequence():
    layer = L.SimpleRNN(20, activation=None, dropout=0.5, recurrent_dropout=0.5,
                        return_sequences=True, seed=3, dtype="float64")
    x = np.ones((2, 4, 6))
    layer(x)
    kernel = RNG.normal(size=(6, 20))
    layer.set_weights([kernel, np.zeros((20, 20)), np.zeros(20)])
    np.testing.assert_allclose(layer(x).numpy(), np.broadcast_to(x @ kernel, (2, 4, 20)))
    np.testing.assert_allclose(layer(x, training=False).numpy(), (x @ kernel))
    out = layer(x, training=True).numpy()
    # the recurrent kernel is zero and the inputs are the same at every step: with one input
    # mask per sequence, every step's output is the same; each input is kept (times 2) or 0
    for t in range(1, 4):
        np.testing.assert_allclose(out[:, t], out[:, 0])
    assert not np.allclose(out[:, 0], x[:, 0] @ kernel)
    masks = [np.linalg.lstsq(kernel.T, out[b, 0], rcond=None)[0] for b in range(2)]
    for m in masks:
        assert set(np.round(m, 6)) <= {0.0, 2.0}
    # a new call draws a new mask
    assert not np.allclose(layer(x, training=True).numpy(), out)


def test_recurrent_dropout_draws_a_mask_per_gate_as_keras():
    # Keras 3: with recurrent_dropout, LSTMCell and GRUCell use "implementation 1", one
    # input mask and one state mask per gate; checked against NumPy with the masks drawn
    x, h, c = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
    lstm = L.LSTMCell(2, dropout=0.4, recurrent_dropout=0.5, seed=1, dtype="float64")
    lstm(x, [h, c])
    K, U, b = [RNG.normal(size=w.shape) for w in lstm.get_weights()]
    lstm.set_weights([K, U, b])
    lstm._keep_masks = True    # (as inside an RNN layer: keep the masks of this sequence)
    out, (_, c_new) = lstm(x, [h, c], training=True)
    m = {k: v.numpy() for k, v in lstm._masks.items()}
    assert sorted(m) == [f"input{k}" for k in range(4)] + [f"recurrent{k}" for k in range(4)]
    assert not np.array_equal(m["input0"], m["input1"])

    def gate(k):
        cols = slice(2 * k, 2 * k + 2)
        return (x * m[f"input{k}"]) @ K[:, cols] + (h * m[f"recurrent{k}"]) @ U[:, cols] + \
            b[cols]
    ref_c = _sigmoid(gate(1)) * c + _sigmoid(gate(0)) * np.tanh(gate(2))
    np.testing.assert_allclose(c_new.numpy(), ref_c)
    np.testing.assert_allclose(out.numpy(), _sigmoid(gate(3)) * np.tanh(ref_c))

    gru = L.GRUCell(2, dropout=0.4, recurrent_dropout=0.5, seed=2, dtype="float64")
    gru(x, [h])
    K, U, b = [RNG.normal(size=w.shape) for w in gru.get_weights()]
    gru.set_weights([K, U, b])
    gru._keep_masks = True
    out, _ = gru(x, [h], training=True)
    m = {k: v.numpy() for k, v in gru._masks.items()}
    assert len(m) == 6

    def parts(k):
        cols = slice(2 * k, 2 * k + 2)
        return ((x * m[f"input{k}"]) @ K[:, cols] + b[0, cols],
                (h * m[f"recurrent{k}"]) @ U[:, cols] + b[1, cols])
    z, r = _sigmoid(sum(parts(0))), _sigmoid(sum(parts(1)))
    x_h, h_h = parts(2)
    ref = z * h + (1 - z) * np.tanh(x_h + r * h_h)
    np.testing.assert_allclose(out.numpy(), ref)


def test_recurrent_dropout_reaches_the_state_in_a_model():
    model = keras.Sequential([L.LSTM(8, recurrent_dropout=0.5, input_shape=[None, 2]),
                              L.Dense(1)])
    x = RNG.normal(size=(4, 5, 2)).astype("float32")
    np.testing.assert_allclose(model(x).numpy(), model(x).numpy())
    assert not np.allclose(model(x, training=True).numpy(), model(x).numpy())


# -- Conv1D, TimeDistributed, Bidirectional ----------------------------------------------------

def np_conv1d(x, kernel, bias, strides, padding, dilation):
    k = kernel.shape[0]
    span = (k - 1) * dilation + 1
    n = x.shape[1]
    if padding == "causal":
        x = np.pad(x, [(0, 0), (span - 1, 0), (0, 0)])
    elif padding == "same":
        out = -(-n // strides)
        total = max((out - 1) * strides + span - n, 0)
        x = np.pad(x, [(0, 0), (total // 2, total - total // 2), (0, 0)])
    out = (x.shape[1] - span) // strides + 1
    y = np.zeros((x.shape[0], out, kernel.shape[2]))
    for t in range(out):
        for j in range(k):
            y[:, t] += x[:, t * strides + j * dilation] @ kernel[j]
    return y + bias


@pytest.mark.parametrize("padding,strides,dilation,steps_out", [
    ("valid", 1, 1, 8), ("valid", 2, 1, 4), ("valid", 1, 2, 6), ("same", 1, 1, 10),
    ("same", 3, 1, 4), ("causal", 1, 4, 10), ("causal", 2, 2, 5)])
def test_conv1d_matches_numpy(padding, strides, dilation, steps_out):
    x = RNG.normal(size=(2, 10, 3))
    layer = L.Conv1D(4, 3, strides=strides, padding=padding, dilation_rate=dilation,
                     dtype="float64")
    kernel, bias = _weights(layer, x)
    assert kernel.shape == (3, 3, 4)
    y = layer(x)
    assert y.shape == (2, steps_out, 4)
    np.testing.assert_allclose(y.numpy(), np_conv1d(x, kernel, bias, strides, padding,
                                                    dilation), rtol=1e-12)


def test_conv1d_causal_output_ignores_the_future():
    layer = L.Conv1D(2, 3, padding="causal", dilation_rate=2, dtype="float64")
    x = RNG.normal(size=(1, 9, 1))
    y = layer(x).numpy()
    x2 = x.copy()
    x2[:, 5:] = 0.0
    np.testing.assert_allclose(layer(x2).numpy()[:, :5], y[:, :5])


def test_conv1d_bad_input():
    with pytest.raises(ValueError, match="padding must be"):
        L.Conv1D(2, 3, padding="full")
    with pytest.raises(ValueError, match="fewer than the kernel's span 5"):
        L.Conv1D(2, 3, dilation_rate=2)(np.zeros((1, 4, 1)))


@pytest.mark.parametrize("pool,strides,padding,steps_out", [
    (2, None, "valid", 5), (3, 1, "valid", 8), (3, 2, "valid", 4), (2, None, "same", 5),
    (3, 2, "same", 5), (4, 3, "same", 4)])
def test_max_pooling1d_matches_numpy(pool, strides, padding, steps_out):
    x = RNG.normal(size=(2, 10, 3))
    layer = L.MaxPooling1D(pool, strides=strides, padding=padding)
    y = layer(x).numpy()
    assert y.shape == (2, steps_out, 3)
    s = pool if strides is None else strides
    total = max((steps_out - 1) * s + pool - 10, 0) if padding == "same" else 0
    for t in range(steps_out):   # each window: the steps inside the sequence
        lo = max(t * s - total // 2, 0)
        hi = min(t * s - total // 2 + pool, 10)
        np.testing.assert_allclose(y[:, t], x[:, lo:hi].max(axis=1))


def test_pooling1d_gradients_and_global_pooling():
    x = RNG.normal(size=(2, 7, 3))
    probe = RNG.normal(size=(2, 4, 3))
    layer = L.MaxPooling1D(3, strides=2, padding="same")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(layer(xt) * probe)
    g = tape.gradient(loss, xt).numpy()
    np.testing.assert_allclose(
        g, _fd_gradient(lambda v: float(np.sum(layer(v).numpy() * probe)), x), atol=1e-7)
    np.testing.assert_allclose(L.GlobalAveragePooling1D()(x).numpy(), x.mean(axis=1))
    np.testing.assert_allclose(L.GlobalMaxPooling1D()(x).numpy(), x.max(axis=1))
    assert L.GlobalAvgPool1D(keepdims=True)(x).shape == (2, 1, 3)
    assert L.MaxPool1D is L.MaxPooling1D
    with pytest.raises(ValueError, match="fewer than pool_size=4"):
        L.MaxPooling1D(4)(np.zeros((1, 3, 1)))


def test_time_distributed_is_dense_at_each_step():
    dense = L.Dense(5, dtype="float64")
    td = L.TimeDistributed(dense)
    y = td(X)
    assert y.shape == (3, 6, 5)
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(y.numpy(), X @ kernel + bias, rtol=1e-12)
    assert td.get_weights()[0] is not None and len(td.trainable_weights) == 2


@pytest.mark.parametrize("return_sequences", [False, True])
def test_bidirectional_concat(return_sequences):
    layer = L.Bidirectional(L.GRU(3, return_sequences=return_sequences, dtype="float64"))
    weights = _weights(layer, X)
    assert len(weights) == 6
    y = layer(X).numpy()
    fwd, _ = np_gru(X, *weights[:3])
    bwd, _ = np_gru(X[:, ::-1], *weights[3:])   # the backward layer reads the steps reversed
    if return_sequences:
        ref = np.concatenate([fwd, bwd[:, ::-1]], axis=-1)   # put back in time order
    else:
        ref = np.concatenate([fwd[:, -1], bwd[:, -1]], axis=-1)
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    assert layer.backward_layer.go_backwards and not layer.forward_layer.go_backwards
    again = L.Bidirectional(L.GRU(3, return_sequences=return_sequences, dtype="float64"),
                            weights=weights)
    np.testing.assert_allclose(again(X).numpy(), ref, rtol=1e-12)
    # Geron's encoder (chapter 16): outputs, *encoder_state = Bidirectional(LSTM(...,
    # return_state=True))(x): the states of the forward layer, then the backward one's
    enc = L.Bidirectional(L.LSTM(3, return_state=True, dtype="float64"))
    outputs, *state = enc(X)
    kf, uf, bf, kb, ub, bb = enc.get_weights()
    _, h_f, c_f = np_lstm(X, kf, uf, bf)
    _, h_b, c_b = np_lstm(X, kb, ub, bb, backwards=True)
    np.testing.assert_allclose(outputs.numpy(), np.concatenate([h_f, h_b], -1), rtol=1e-12)
    for got, want in zip(state, [h_f, c_f, h_b, c_b]):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    s = L.Bidirectional(L.SimpleRNN(2, dtype="float64"), merge_mode="sum")
    s(X)
    f, b = s.forward_layer(X).numpy(), s.backward_layer(X).numpy()
    np.testing.assert_allclose(s(X).numpy(), f + b)


# -- errors ----------------------------------------------------------------------------------

def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match=r"expects inputs of shape \(batch, timesteps, "):
        L.LSTM(2)(np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="dropout"):
        L.GRU(2, dropout=1.5)
    with pytest.raises((TypeError, ValueError), match="units"):
        L.SimpleRNN(0)
    with pytest.raises(NotImplementedError, match="stateful"):
        L.LSTM(2, stateful=True)
    with pytest.raises(ValueError, match="merge_mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(TypeError, match="wraps a recurrent layer"):
        L.Bidirectional(L.Dense(2))


# -- textbooks: training ---------------------------------------------------------------------

def _sine_batches(n, steps, seed=0):
    rng = np.random.default_rng(seed)
    t0 = rng.uniform(0, 2 * np.pi, (n, 1))
    t = t0 + 0.3 * np.arange(steps + 1)
    series = np.sin(t)[..., None].astype("float32")
    return series[:, :steps], series[:, steps]


def test_geron_second_edition_metric_on_the_last_steps():
    # Geron (2nd edition), chapter 15: batch normalization between recurrent layers, a metric
    # on the last 10 steps, and a Lambda keeping the last 10 steps (summary: (None, 10, 1))
    def last_10_time_steps_mse(Y_true, Y_pred):
        return keras.metrics.mean_squared_error(Y_true[:, -10:], Y_pred[:, -10:])

    model = keras.models.Sequential([
        keras.layers.SimpleRNN(20, return_sequences=True, input_shape=[None, 1]),
        keras.layers.BatchNormalization(),
        keras.layers.SimpleRNN(20, return_sequences=True),
        keras.layers.BatchNormalization(),
        keras.layers.TimeDistributed(keras.layers.Dense(10))])
    x = RNG.normal(size=(16, 20, 1)).astype("float32")
    y = RNG.normal(size=(16, 20, 10)).astype("float32")
    model.compile(loss="mse", optimizer="adam", metrics=[last_10_time_steps_mse])
    history = model.fit(x, y, epochs=1, validation_data=(x, y), verbose=0)
    assert np.isfinite(history.history["val_last_10_time_steps_mse"][0])
    model = keras.models.Sequential([
        keras.layers.SimpleRNN(20, return_sequences=True, input_shape=[None, 1]),
        keras.layers.TimeDistributed(keras.layers.Dense(1)),
        keras.layers.Lambda(lambda Y_pred: Y_pred[:, -10:])])
    lines = []
    model.summary(print_fn=lines.append)
    table = "\n".join(lines)
    assert "(None, None, 20)" in table and "(None, 10, 1)" in table


def test_simple_rnn_learns_the_next_value_of_a_sine():
    tf.random.set_seed(0)
    x, y = _sine_batches(64, 12)
    model = keras.Sequential([L.SimpleRNN(8, input_shape=[None, 1]), L.Dense(1)])
    model.compile(loss="mse", optimizer=keras.optimizers.Adam(learning_rate=0.02))
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert after < before / 5
    # the gradient flows back through every step: a plain tape loop also lowers the loss
    opt = keras.optimizers.SGD(0.1)
    lstm = keras.Sequential([L.LSTM(4), L.Dense(1)])
    losses = []
    for _ in range(15):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((lstm(x) - y) ** 2)
        grads = tape.gradient(loss, lstm.trainable_variables)
        opt.apply_gradients(zip(grads, lstm.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def _geron_models():
    layers = keras.layers
    wavenet = keras.Sequential()
    wavenet.add(layers.InputLayer(input_shape=[None, 5]))
    for rate in (1, 2, 4, 8) * 2:
        wavenet.add(layers.Conv1D(filters=32, kernel_size=2, padding="causal",
                                  activation="relu", dilation_rate=rate))
    wavenet.add(layers.Conv1D(filters=14, kernel_size=1))
    return {
        "deep_rnn": keras.Sequential([
            layers.SimpleRNN(32, return_sequences=True, input_shape=[None, 5]),
            layers.SimpleRNN(32, return_sequences=True),
            layers.SimpleRNN(32, return_sequences=True),
            layers.Dense(14)]),
        "lstm": keras.Sequential([
            layers.LSTM(32, return_sequences=True, input_shape=[None, 5]),
            layers.Dense(14)]),
        "gru": keras.Sequential([
            layers.GRU(32, return_sequences=True, input_shape=[None, 5]),
            layers.Dense(14)]),
        "conv_rnn": keras.Sequential([
            layers.Conv1D(filters=32, kernel_size=4, strides=2, activation="relu",
                          input_shape=[None, 5]),
            layers.GRU(32, return_sequences=True),
            layers.Dense(14)]),
        "time_distributed": keras.Sequential([
            layers.SimpleRNN(16, return_sequences=True, input_shape=[None, 5]),
            layers.TimeDistributed(layers.Dense(14))]),
        "wavenet": wavenet,
    }


@pytest.mark.parametrize("name", ["deep_rnn", "lstm", "gru", "conv_rnn", "time_distributed",
                                  "wavenet"])
def test_geron_chapter15_models_train_one_epoch(name):
    model = _geron_models()[name]
    x = RNG.normal(size=(16, 12, 5)).astype("float32")
    out_steps = 5 if name == "conv_rnn" else 12   # (12 - 4) // 2 + 1
    y = RNG.normal(size=(16, out_steps, 14)).astype("float32")
    model.compile(loss="mse", optimizer="nadam", metrics=["mae"])
    history = model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert model.predict(x, verbose=0).shape == (16, out_steps, 14)


def test_chollet_chapter10_models_train_one_epoch():
    layers = keras.layers
    x = RNG.normal(size=(16, 12, 14)).astype("float32")
    y = RNG.normal(size=(16,)).astype("float32")

    def lstm(inputs):
        return layers.LSTM(16)(inputs)

    def lstm_dropout(inputs):
        x = layers.LSTM(32, recurrent_dropout=0.25)(inputs)
        return layers.Dropout(0.5)(x)

    def stacked_gru(inputs):
        x = layers.GRU(32, recurrent_dropout=0.5, return_sequences=True)(inputs)
        x = layers.GRU(32, recurrent_dropout=0.5)(x)
        return layers.Dropout(0.5)(x)

    def bidirectional(inputs):
        return layers.Bidirectional(layers.LSTM(16))(inputs)

    def convnet(inputs):   # (on sequences of 120 steps, as Chollet's)
        x = layers.Conv1D(8, 24, activation="relu")(inputs)
        x = layers.MaxPooling1D(2)(x)
        x = layers.Conv1D(8, 12, activation="relu")(x)
        x = layers.MaxPooling1D(2)(x)
        x = layers.Conv1D(8, 6, activation="relu")(x)
        return layers.GlobalAveragePooling1D()(x)

    inputs = keras.Input(shape=(120, 14))
    model = keras.Model(inputs, layers.Dense(1)(convnet(inputs)))
    model.compile(optimizer="rmsprop", loss="mse", metrics=["mae"])
    long = RNG.normal(size=(16, 120, 14)).astype("float32")
    history = model.fit(long, y, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["mae"][0])
    assert [layer.output.shape for layer in model.layers[1:4]] == [
        (None, 97, 8), (None, 48, 8), (None, 37, 8)]

    for body in (lstm, lstm_dropout, stacked_gru, bidirectional):
        inputs = keras.Input(shape=(12, 14))
        outputs = layers.Dense(1)(body(inputs))
        model = keras.Model(inputs, outputs)
        model.compile(optimizer="rmsprop", loss="mse", metrics=["mae"])
        history = model.fit(x, y, epochs=1, batch_size=8, validation_data=(x, y), verbose=0)
        assert np.isfinite(history.history["val_mae"][0]), body.__name__
    # Chollet's first look: a SimpleRNN on sequences of any length
    inputs = keras.Input(shape=(None, 14))
    outputs = layers.SimpleRNN(16, return_sequences=True)(inputs)
    assert keras.Model(inputs, outputs)(x).shape == (16, 12, 16)


@pytest.mark.parametrize("layers", [
    lambda: [L.GRU(4, return_sequences=True, input_shape=[None, 2]), L.LSTM(3), L.Dense(1)],
    lambda: [L.Conv1D(3, 2, padding="causal", input_shape=[None, 2]),
             L.Bidirectional(L.SimpleRNN(3, return_sequences=True)),
             L.TimeDistributed(L.Dense(2)), L.MaxPooling1D(2), L.GlobalAveragePooling1D()],
    lambda: [L.RNN(L.GRUCell(3, reset_after=False), input_shape=[None, 2]), L.Dense(1)]])
def test_saved_model_round_trip(tmp_path, layers):
    model = keras.Sequential(layers())
    x = RNG.normal(size=(2, 6, 2)).astype("float32")
    path = str(tmp_path / "rnn.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)


# -- keras.utils.timeseries_dataset_from_array ---------------------------------------------

def test_timeseries_dataset_keras_documented_examples():
    # Keras's docstring, example 1: windows of 10 steps, the target is the next value
    data = np.arange(100)
    ds = keras.utils.timeseries_dataset_from_array(data[:-10], data[10:], sequence_length=10)
    inputs, targets = next(iter(ds))
    np.testing.assert_array_equal(inputs.numpy()[0], data[:10])
    assert int(targets.numpy()[0]) == 10 and inputs.shape == (90 - 9, 10)
    # example 2: indices 0..98, sequence_length=10, sampling_rate=2, sequence_stride=3
    ds = keras.utils.timeseries_dataset_from_array(np.arange(99), None, sequence_length=10,
                                                   sampling_rate=2, sequence_stride=3,
                                                   batch_size=100)
    windows = next(iter(ds)).numpy()
    np.testing.assert_array_equal(windows[0], np.arange(0, 19, 2))
    np.testing.assert_array_equal(windows[1], np.arange(3, 22, 2))
    np.testing.assert_array_equal(windows[-1], np.arange(78, 97, 2))
    with pytest.raises(ValueError, match="sequence_length"):
        keras.utils.timeseries_dataset_from_array(data, None, sequence_length=0)


def test_timeseries_dataset_geron_and_fit():
    # Geron, chapter 15: my_series = [0, 1, 2, 3, 4, 5], windows of 3, batches of 2
    my_series = [0, 1, 2, 3, 4, 5]
    ds = keras.utils.timeseries_dataset_from_array(my_series, targets=my_series[3:],
                                                   sequence_length=3, batch_size=2)
    batches = [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
    assert batches == [([[0, 1, 2], [1, 2, 3]], [3, 4]), ([[2, 3, 4]], [5])]
    # shuffled windows keep their targets; a SimpleRNN trains on them
    series = np.sin(0.3 * np.arange(200)).astype("float32")
    ds = keras.utils.timeseries_dataset_from_array(series, targets=series[12:],
                                                   sequence_length=12, batch_size=32,
                                                   shuffle=True, seed=42)
    x, y = next(iter(ds))
    assert x.shape == (32, 12)
    for window, target in zip(x.numpy(), y.numpy()):   # find where each window starts
        i = int(np.argmin(np.abs(series[None, :188] - window[0]).sum(0) +
                          np.abs(series[None, 1:189] - window[1]).sum(0)))
        assert target == series[i + 12]
    model = keras.Sequential([L.SimpleRNN(8, input_shape=[None, 1]), L.Dense(1)])
    model.compile(loss="mse", optimizer="adam")
    history = model.fit(ds.map(lambda x, y: (x[..., None], y)), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
