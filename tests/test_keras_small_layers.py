"""The small Keras layers textbooks use: Activation, ReLU, LeakyReLU, Softmax, Reshape,
Rescaling, GlobalAveragePooling2D, GlobalMaxPooling2D, Embedding, LayerNormalization and the
merging layers (Add, Subtract, Multiply, Average, Concatenate).

Each is checked against its closed form in NumPy, its gradient against central finite
differences in float64, and a model holding it against a save/load round trip.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape import keras

L = keras.layers
RNG = np.random.default_rng(7)


def _fd_gradient(f, x, eps=1e-6):
    """Central finite differences of the scalar ``f`` at ``x`` (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def _check_gradient(layer, x, weights=None):
    """The tape's gradient of ``sum(layer(x) * w)`` w.r.t. ``x`` against finite differences."""
    w = RNG.normal(size=np.shape(layer(mt.constant(x)))) if weights is None else weights

    def value(a):
        return float(mt.reduce_sum(layer(mt.constant(a)) * w))

    xt = mt.constant(x)
    with mt.GradientTape() as tape:
        tape.watch(xt)
        loss = mt.reduce_sum(layer(xt) * w)
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(), _fd_gradient(value, x),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("layer, expected", [
    (lambda: L.Activation("relu"), lambda x: np.maximum(x, 0)),
    (lambda: L.Activation("tanh"), np.tanh),
    (lambda: L.ReLU(), lambda x: np.maximum(x, 0)),
    (lambda: L.ReLU(max_value=0.5), lambda x: np.clip(x, 0, 0.5)),
    (lambda: L.ReLU(negative_slope=0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (lambda: L.LeakyReLU(), lambda x: np.where(x > 0, x, 0.3 * x)),
    (lambda: L.LeakyReLU(alpha=0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (lambda: L.Softmax(), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
])
def test_activation_layers_match_their_closed_forms(layer, expected):
    x = RNG.normal(size=(3, 4))
    x[np.abs(x) < 1e-3] = 0.5   # (no kink within the finite-difference step)
    x[np.abs(x - 0.5) < 1e-3] = 0.7
    np.testing.assert_allclose(layer()(mt.constant(x)).numpy(), expected(x), rtol=1e-12)
    _check_gradient(layer(), x)


def test_reshape_rescaling_and_global_pooling():
    x = RNG.normal(size=(2, 3, 4, 5))
    np.testing.assert_array_equal(L.Reshape((12, 5))(mt.constant(x)).numpy(),
                                  x.reshape(2, 12, 5))
    np.testing.assert_array_equal(L.Reshape((-1,))(mt.constant(x)).numpy(), x.reshape(2, -1))
    np.testing.assert_allclose(L.GlobalAveragePooling2D()(mt.constant(x)).numpy(),
                               x.mean(axis=(1, 2)), rtol=1e-12)
    assert L.GlobalAveragePooling2D(keepdims=True)(mt.constant(x)).shape == (2, 1, 1, 5)
    np.testing.assert_array_equal(L.GlobalMaxPooling2D()(mt.constant(x)).numpy(),
                                  x.max(axis=(1, 2)))
    _check_gradient(L.GlobalAveragePooling2D(), x)
    pixels = mt.constant(np.array([[0, 51, 255]], np.uint8))
    scaled = L.Rescaling(1 / 255, offset=-0.5)(pixels)
    assert scaled.dtype == mt.float32
    np.testing.assert_allclose(scaled.numpy(), [[-0.5, -0.3, 0.5]], rtol=1e-6)
    with pytest.raises(ValueError, match="target_shape is the shape of one sample"):
        L.Reshape(12)
    with pytest.raises(ValueError, match="images of shape"):
        L.GlobalAveragePooling2D()(mt.ones([2, 3]))


def test_embedding_looks_up_rows_and_its_gradient_reaches_only_those_rows():
    layer = L.Embedding(5, 3)
    ids = mt.constant([[1, 3], [1, 0]])
    y = layer(ids)
    table = layer.embeddings.numpy()
    assert y.shape == (2, 2, 3) and np.abs(table).max() <= 0.05   # Keras's "uniform"
    np.testing.assert_array_equal(y.numpy(), table[[[1, 3], [1, 0]]])
    w = RNG.normal(size=(2, 2, 3)).astype(np.float32)
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(layer(ids) * w)
    (g,) = tape.gradient(loss, layer.trainable_variables)
    expected = np.zeros((5, 3), np.float32)
    for (b, t), i in np.ndenumerate(np.array([[1, 3], [1, 0]])):
        expected[i] += w[b, t]                     # id 1 is looked up twice: its rows add
    np.testing.assert_allclose(mt.convert_to_tensor(g).numpy(), expected, rtol=1e-6)
    assert layer.count_params() == 15
    with pytest.raises(mt.errors.InvalidArgumentError, match=r"indices.* = 7 is not in \[0, 5\)"):
        layer(mt.constant([[7]]))
    np.testing.assert_array_equal(layer(mt.constant([[1.0]])).numpy(), table[[[1]]])   # Keras casts


def test_layer_normalization_matches_its_formula_and_gradient():
    x = RNG.normal(size=(3, 4))
    layer = L.LayerNormalization(epsilon=1e-3)
    y = layer(mt.constant(x)).numpy()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    assert [v.name for v in layer.trainable_weights] == ["gamma", "beta"]
    layer.set_weights([np.full(4, 2.0), np.full(4, 1.0)])
    np.testing.assert_allclose(layer(mt.constant(x)).numpy(),
                               2 * (x - mean) / np.sqrt(var + 1e-3) + 1, rtol=1e-10)
    _check_gradient(layer, x)
    with pytest.raises(ValueError, match="last axis only"):
        L.LayerNormalization(axis=1)


def test_merging_layers_and_their_gradients():
    a, b, c = (RNG.normal(size=(2, 3)) for _ in range(3))
    ta, tb, tc = mt.constant(a), mt.constant(b), mt.constant(c)
    np.testing.assert_allclose(L.Add()([ta, tb, tc]).numpy(), a + b + c, rtol=1e-12)
    np.testing.assert_allclose(L.Subtract()([ta, tb]).numpy(), a - b, rtol=1e-12)
    np.testing.assert_allclose(L.Multiply()([ta, tb]).numpy(), a * b, rtol=1e-12)
    np.testing.assert_allclose(L.Average()([ta, tb]).numpy(), (a + b) / 2, rtol=1e-12)
    np.testing.assert_array_equal(L.Concatenate()([ta, tb]).numpy(),
                                  np.concatenate([a, b], -1))
    np.testing.assert_array_equal(L.Concatenate(axis=0)([ta, tb]).numpy(),
                                  np.concatenate([a, b], 0))
    _check_gradient(lambda x: L.Multiply()([x, x * 2.0]), a)
    with pytest.raises(ValueError, match=r"at least 2 Tensors, e.g. Add\(\)\(\[x, y\]\)"):
        L.Add()(ta)
    with pytest.raises(ValueError, match="exactly 2"):
        L.Subtract()([ta, tb, tc])


def test_a_residual_functional_model_trains_and_round_trips(tmp_path):
    inputs = keras.Input(shape=(4,))
    h = L.Dense(4, activation="relu")(inputs)
    h = L.Add()([inputs, h])                       # a residual connection
    h = L.LayerNormalization()(h)
    both = L.Concatenate()([h, inputs])
    outputs = L.Dense(2)(L.LeakyReLU()(both))
    model = keras.Model(inputs, outputs)
    x = RNG.normal(size=(8, 4)).astype(np.float32)
    y = RNG.normal(size=(8, 2)).astype(np.float32)
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    model.save(tmp_path / "residual.keras")
    loaded = keras.models.load_model(tmp_path / "residual.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_text_model_as_textbooks_write_it_round_trips(tmp_path):
    model = keras.Sequential([L.Embedding(20, 4), L.Reshape((-1,)), L.Dense(3), L.ReLU(),
                              L.Dense(1), L.Activation("sigmoid")])
    ids = RNG.integers(0, 20, size=(6, 5))
    labels = RNG.integers(0, 2, size=(6, 1)).astype(np.float32)
    model.compile(optimizer="adam", loss="binary_crossentropy")
    model.fit(ids, labels, epochs=2, verbose=0)
    assert model.count_params() == 20 * 4 + (20 * 3 + 3) + (3 + 1)
    model.save(tmp_path / "text.keras")
    loaded = keras.models.load_model(tmp_path / "text.keras")
    np.testing.assert_array_equal(loaded.predict(ids, verbose=0), model.predict(ids, verbose=0))
