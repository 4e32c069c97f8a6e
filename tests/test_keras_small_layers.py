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
    with pytest.raises(TypeError, match="axis must be an int or a list/tuple of ints"):
        L.LayerNormalization(axis="last")


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


# -- activations by name, the regression losses, InputLayer, clone_model, Normalization --------

_ERF = np.vectorize(__import__("math").erf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("name, expected", [
    ("selu", lambda x: 1.05070098 * np.where(x > 0, x, 1.67326324 * np.expm1(np.minimum(x, 0)))),
    ("gelu", lambda x: 0.5 * x * (1 + _ERF(x / np.sqrt(2)))),
    ("silu", lambda x: x * _sigmoid(x)),
    ("swish", lambda x: x * _sigmoid(x)),
    ("relu6", lambda x: np.clip(x, 0, 6)),
    ("softsign", lambda x: x / (np.abs(x) + 1)),
    ("exponential", np.exp),
    ("hard_sigmoid", lambda x: np.clip(x + 3, 0, 6) / 6),
    ("hard_swish", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("mish", lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x)),
])
def test_every_keras_activation_name_works_in_a_layer(name, expected):
    x = RNG.normal(size=(3, 4)) * 3
    x[np.abs(x) < 1e-3] = 0.5
    x[np.abs(np.abs(x) - 3) < 1e-3] = 2.5   # (no kink of hard_sigmoid within the step)
    np.testing.assert_allclose(keras.activations.get(name)(mt.constant(x)).numpy(), expected(x),
                               rtol=1e-7, atol=1e-12)
    _check_gradient(L.Activation(name), x)
    dense = L.Dense(2, activation=name)
    assert dense(mt.ones([1, 3])).shape == (1, 2)
    np.testing.assert_allclose(
        keras.activations.gelu(mt.constant(x), approximate=True).numpy(),
        0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), rtol=1e-7)


def test_regression_losses_match_keras_formulas():
    y_true = np.array([[0.0, 2.0], [1.0, -1.0]])
    y_pred = np.array([[0.5, 5.0], [1.0, 1.5]])
    e = y_pred - y_true
    huber = np.where(np.abs(e) <= 1, 0.5 * e ** 2, np.abs(e) - 0.5).mean(-1)
    losses = keras.losses
    np.testing.assert_allclose(losses.huber(y_true, y_pred).numpy(), huber, rtol=1e-12)
    np.testing.assert_allclose(float(losses.Huber()(y_true, y_pred)), huber.mean(), rtol=1e-12)
    big = np.where(np.abs(e) <= 2, 0.5 * e ** 2, 2 * np.abs(e) - 2).mean(-1)
    np.testing.assert_allclose(losses.Huber(delta=2.0)(y_true, y_pred, ).numpy(), big.mean(),
                               rtol=1e-12)
    np.testing.assert_allclose(losses.log_cosh(y_true, y_pred).numpy(),
                               np.log(np.cosh(e)).mean(-1), rtol=1e-12)
    np.testing.assert_allclose(
        losses.mean_absolute_percentage_error(y_true, y_pred).numpy(),
        100 * (np.abs(e) / np.maximum(np.abs(y_true), 1e-7)).mean(-1), rtol=1e-12)
    np.testing.assert_allclose(
        losses.MeanSquaredLogarithmicError()(y_true, y_pred).numpy(),
        ((np.log1p(np.maximum(y_pred, 1e-7)) - np.log1p(np.maximum(y_true, 1e-7))) ** 2)
        .mean(-1).mean(), rtol=1e-12)
    assert losses.get("huber") is losses.huber and losses.get("msle") is losses.msle
    _check_gradient(lambda p: losses.huber(y_true, p), y_pred)
    _check_gradient(lambda p: losses.log_cosh(y_true, p), y_pred)


def test_a_model_compiled_with_huber_trains_and_round_trips(tmp_path):
    model = keras.Sequential([keras.layers.InputLayer(input_shape=(3,)), L.Dense(1)])
    assert model.built and model.count_params() == 4 and len(model.layers) == 1
    model.compile(optimizer="sgd", loss=keras.losses.Huber(delta=0.5))
    x = RNG.normal(size=(16, 3)).astype(np.float32)
    model.fit(x, x.sum(1, keepdims=True), epochs=2, verbose=0)
    model.save(tmp_path / "huber.keras")
    loaded = keras.models.load_model(tmp_path / "huber.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(ValueError, match="InputLayer needs the shape"):
        keras.layers.InputLayer()


def test_clone_model_makes_new_weights_geron_transfer_learning():
    model_a = keras.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(1)])
    clone = keras.models.clone_model(model_a)
    assert clone is not model_a and clone.built
    assert all(a is not b for a, b in zip(clone.layers, model_a.layers))
    assert [layer.name for layer in clone.layers] == [layer.name for layer in model_a.layers]
    assert not any(np.array_equal(a, b) for a, b in zip(clone.get_weights()[::2],
                                                         model_a.get_weights()[::2]))
    clone.set_weights(model_a.get_weights())
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_array_equal(clone.predict(x, verbose=0), model_a.predict(x, verbose=0))
    # reuse the clone's layers in model B and train it: model A stays as it was
    before = model_a.get_weights()
    model_b = keras.Sequential(clone.layers[:-1])
    model_b.add(L.Dense(1, activation="sigmoid"))
    model_b.compile(optimizer="sgd", loss="binary_crossentropy")
    model_b.fit(x, (x[:, :1] > 0).astype(np.float32), epochs=2, verbose=0)
    for old, new in zip(before, model_a.get_weights()):
        np.testing.assert_array_equal(old, new)
    with pytest.raises(TypeError, match="expects an mt.keras Model"):
        keras.models.clone_model(L.Dense(2))


def test_normalization_adapts_as_keras_documents_it():
    data = np.array([[0., 7., 4.], [2., 9., 6.], [0., 7., 4.], [2., 9., 6.]], np.float32)
    layer = L.Normalization(axis=-1)
    layer.adapt(data)
    np.testing.assert_allclose(layer(np.array([[0., 7., 4.]], np.float32)).numpy(),
                               [[-1., -1., -1.]], rtol=1e-6)
    inverse = L.Normalization(axis=-1, invert=True)
    inverse.adapt(data)
    np.testing.assert_allclose(inverse(np.array([[1., 2., 3.]], np.float32)).numpy(),
                               [[2., 10., 8.]], rtol=1e-6)
    fixed = L.Normalization(mean=3.0, variance=2.0)
    np.testing.assert_allclose(fixed(np.array([[1.], [2.], [3.]], np.float32)).numpy(),
                               [[-1.4142135], [-0.70710677], [0.0]], rtol=1e-6)
    flat = L.Normalization(axis=None)
    flat.adapt(np.array([1., 2., 3., 4., 5.], np.float32))
    np.testing.assert_allclose(flat(np.array([1., 2., 3.], np.float32)).numpy(),
                               [-1.4142135, -0.70710677, 0.0], rtol=1e-6)
    batches = L.Normalization()
    batches.adapt([data[:2], data[2:]])       # a list of batches: the same statistics
    np.testing.assert_allclose(batches.mean.numpy(), layer.mean.numpy())
    # Geron, chapter 10: Normalization(input_shape=...) first in a Sequential, then adapt
    x = RNG.normal(size=(20, 8)).astype(np.float32) * 5 + 3
    norm = L.Normalization(input_shape=[8])
    model = keras.Sequential([norm, L.Dense(1)])
    norm.adapt(x)
    assert norm.count_params() == 17 and len(model.trainable_weights) == 2
    np.testing.assert_allclose(norm(x).numpy().mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(norm(x).numpy().std(0), 1, rtol=1e-4)
    with pytest.raises(ValueError, match="both mean= and variance="):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="built for features of shape"):
        norm.adapt(np.ones((4, 3)))
