"""mt.keras (issue #19 item 1): layers, Model, Sequential, compile/fit/evaluate/predict, losses."""

import re

import numpy as np
import pytest

import minitape as mt
from minitape.testing import check_grads


class Linear(mt.keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = mt.Variable([[0.5], [-1.0]])
        self.b = mt.Variable([0.25])

    def call(self, x):
        return x @ self.w + self.b


def data(n=10, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (x @ np.array([[2.0], [3.0]]) + 1.0).astype(np.float32)
    return x, y


@pytest.mark.parametrize("make_opt", [lambda: mt.keras.optimizers.SGD(learning_rate=0.05),
                                      lambda: mt.keras.optimizers.Adam(learning_rate=0.1),
                                      lambda: mt.keras.optimizers.SGD(0.05, momentum=0.9)])
def test_fit_is_the_gradient_tape_loop_step_by_step(make_opt):
    x, y = data(10)
    model = Linear()
    model.compile(optimizer=make_opt(), loss=mt.keras.losses.mean_squared_error)
    by_hand = Linear()
    opt = make_opt()
    for epoch in range(3):
        history = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
        losses = []
        for start in range(0, 10, 4):
            xb, yb = mt.constant(x[start:start + 4]), mt.constant(y[start:start + 4])
            with mt.GradientTape() as tape:
                loss = mt.reduce_mean(mt.reduce_mean((by_hand(xb) - yb) ** 2, axis=-1))
            grads = tape.gradient(loss, by_hand.trainable_variables)
            opt.apply_gradients(zip(grads, by_hand.trainable_variables))
            losses.append((float(loss), len(xb)))
        for a, b in zip(model.variables, by_hand.variables):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
        want = sum(v * n for v, n in losses) / 10   # the epoch's loss: mean over samples
        assert history.history["loss"][0] == pytest.approx(want, rel=1e-6)
    assert int(model.optimizer.iterations) == 9


def test_fit_prints_keras_lines_and_returns_a_history(capsys):
    x, y = data(8)
    model = Linear()
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[2] == "Epoch 2/2"
    assert out[1].startswith("1/1 ") and " - loss: " in out[1] and " - mae: " in out[1]
    assert list(history.history) == ["loss", "mae"] and len(history["loss"]) == 2
    assert history.epoch == [0, 1]
    assert history.history["loss"][1] < history.history["loss"][0]
    model.fit(x, y, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


def test_fit_learns_a_line_and_evaluate_predict_agree():
    mt.random.set_seed(1)
    x, y = data(64, seed=1)
    model = mt.keras.Sequential([mt.keras.layers.Dense(1)])
    model.compile(optimizer=mt.keras.optimizers.Adam(learning_rate=0.1), loss="mse")
    model.fit(x, y, epochs=60, batch_size=16, verbose=0)
    kernel, bias = model.layers[0].kernel.numpy(), model.layers[0].bias.numpy()
    np.testing.assert_allclose(kernel.ravel(), [2.0, 3.0], atol=0.05)
    np.testing.assert_allclose(bias, [1.0], atol=0.05)
    pred = model.predict(x, batch_size=10, verbose=0)
    assert isinstance(pred, np.ndarray) and pred.shape == (64, 1)
    np.testing.assert_allclose(pred, x @ kernel + bias, rtol=1e-5, atol=1e-5)
    want = float(np.mean((pred - y) ** 2))
    assert model.evaluate(x, y, batch_size=7, verbose=0) == pytest.approx(want, rel=1e-4)


def test_fit_takes_a_dataset_and_validation_data():
    x, y = data(12)
    ds = mt.data.Dataset.from_tensor_slices((x, y)).batch(5)
    model = Linear()
    model.compile(optimizer=mt.keras.optimizers.SGD(0.01), loss="mse", metrics=["mse"])
    history = model.fit(ds, epochs=2, verbose=0, validation_data=(x, y))
    assert set(history.history) == {"loss", "mse", "val_loss", "val_mse"}
    assert int(model.optimizer.iterations) == 6


def test_fit_errors():
    model = Linear()
    with pytest.raises(ValueError, match=r"call model.compile"):
        model.fit(np.ones((2, 2)), np.ones((2, 1)))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="x has 3 samples but y has 2"):
        model.fit(np.ones((3, 2)), np.ones((2, 1)), verbose=0)
    model.compile(loss="mse")   # Keras's default optimizer, "rmsprop"
    assert type(model.optimizer) is mt.keras.optimizers.RMSprop
    with pytest.raises(ValueError, match="does not implement Keras's 'ftrl'"):
        model.compile(optimizer="ftrl", loss="mse")
    with pytest.raises(ValueError, match="unknown loss 'msq'"):
        model.compile(optimizer="sgd", loss="msq")


class Scale(mt.keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.build_calls = []

    def build(self, input_shape):
        self.build_calls.append(input_shape)
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
        self.extra = self.add_weight(shape=(), initializer="zeros", trainable=False)

    def call(self, x, training=False):
        return x * self.w + (1.0 if training else 0.0) + self.extra


def test_layer_builds_lazily_once_from_the_input_shape():
    layer = Scale()
    assert layer.variables == () and not layer.built
    out = layer(mt.constant([[1.0, 2.0, 3.0]]))
    layer(mt.constant([[1.0, 2.0, 3.0]]), training=True)
    assert layer.build_calls == [(1, 3)] and layer.built
    assert out.numpy().tolist() == [[1.0, 2.0, 3.0]]
    assert [v.name for v in layer.trainable_variables] == ["w"]
    assert len(layer.weights) == 2 and len(layer.non_trainable_weights) == 1
    layer.trainable = False
    assert layer.trainable_variables == ()


def test_frozen_sublayer_is_not_trained():
    model = mt.keras.Sequential([mt.keras.layers.Dense(2), Scale()])
    model(mt.ones((1, 3)))
    model.layers[0].trainable = False
    assert [v.name for v in model.trainable_variables] == ["w"]


def test_training_reaches_layers_that_accept_it():
    model = mt.keras.Sequential([Scale(), mt.keras.layers.BatchNormalization()])
    x = mt.constant([[1.0, 2.0], [3.0, 5.0]])
    model(x, training=True)
    assert not np.allclose(model.layers[1].moving_mean.numpy(), 0.0)
    assert float(mt.reduce_sum(model(x))) != float(mt.reduce_sum(model(x, training=True)))


def test_keras_layers_reexports_mt_layers():
    for name in ("Dense", "BatchNormalization", "Sequential"):
        assert getattr(mt.keras.layers, name) is getattr(mt.layers, name)
    for name in dir(mt.layers):
        value = getattr(mt.layers, name)
        if isinstance(value, type) and issubclass(value, mt.Module) and value is not mt.Module \
                and not name.startswith("_"):   # (a private base, e.g. the merging layers')
            assert getattr(mt.keras.layers, name) is value
    assert mt.keras.optimizers is mt.optimizers


def test_model_save_and_load_weights_round_trip(tmp_path):
    model = mt.keras.Sequential([mt.keras.layers.Dense(3), Scale()])
    model(mt.ones((1, 2)))
    model.compile(optimizer="adam", loss="mse")
    model.save_weights(tmp_path / "model")
    other = mt.keras.Sequential([mt.keras.layers.Dense(3), Scale()])
    other(mt.ones((1, 2)))
    other.load_weights(tmp_path / "model")
    for a, b in zip(model.variables, other.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # A model not called yet loads at its first call (tf.keras 2's deferred restoration,
    # which "Dive into Deep Learning" relies on): that call computes with the loaded weights.
    unbuilt = mt.keras.Sequential([mt.keras.layers.Dense(3), Scale()])
    unbuilt.load_weights(tmp_path / "model")
    np.testing.assert_array_equal(unbuilt(mt.ones((1, 2))).numpy(), model(mt.ones((1, 2))).numpy())
    for a, b in zip(model.variables, unbuilt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_functional_model_of_non_keras_tensors_is_a_clear_error():
    with pytest.raises(TypeError, match="expects KerasTensors"):
        mt.keras.Model(inputs=1, outputs=2)


# -- losses -------------------------------------------------------------------------------

Y = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
P = np.array([[0.2, 0.7, 0.1], [0.5, 0.3, 0.2]])
LOGITS = np.array([[1.0, 2.0, -1.0], [0.5, 0.25, 3.0]])  # no kink of relu at 0


def test_loss_functions_against_numpy():
    L = mt.keras.losses
    np.testing.assert_allclose(L.MSE(Y, P).numpy(), np.mean((Y - P) ** 2, axis=-1))
    np.testing.assert_allclose(L.mean_absolute_error(Y, P).numpy(), np.mean(abs(Y - P), -1))
    np.testing.assert_allclose(L.categorical_crossentropy(Y, P).numpy(),
                               -np.sum(Y * np.log(P), -1), rtol=1e-6)
    log_sm = LOGITS - np.log(np.sum(np.exp(LOGITS), -1, keepdims=True))
    np.testing.assert_allclose(L.categorical_crossentropy(Y, LOGITS, from_logits=True).numpy(),
                               -np.sum(Y * log_sm, -1), rtol=1e-6)
    np.testing.assert_allclose(
        L.sparse_categorical_crossentropy([1, 0], LOGITS, from_logits=True).numpy(),
        -log_sm[[0, 1], [1, 0]], rtol=1e-6)
    np.testing.assert_allclose(L.sparse_categorical_crossentropy([[1], [0]], P).numpy(),
                               -np.log(P[[0, 1], [1, 0]]), rtol=1e-6)
    bce = -(Y * np.log(P) + (1 - Y) * np.log(1 - P)).mean(-1)
    np.testing.assert_allclose(L.binary_crossentropy(Y, P).numpy(), bce, rtol=1e-6)
    s = 1 / (1 + np.exp(-LOGITS))
    bce_logits = -(Y * np.log(s) + (1 - Y) * np.log(1 - s)).mean(-1)
    np.testing.assert_allclose(L.binary_crossentropy(Y, LOGITS, from_logits=True).numpy(),
                               bce_logits, rtol=1e-5)


@pytest.mark.parametrize("cls,fn,kw", [
    ("MeanSquaredError", "mean_squared_error", {}),
    ("MeanAbsoluteError", "mean_absolute_error", {}),
    ("BinaryCrossentropy", "binary_crossentropy", {"from_logits": True}),
    ("CategoricalCrossentropy", "categorical_crossentropy", {"from_logits": True}),
])
def test_loss_classes_average_the_function_over_the_batch(cls, fn, kw):
    loss = getattr(mt.keras.losses, cls)(**kw)
    per_sample = getattr(mt.keras.losses, fn)(Y, LOGITS, **kw).numpy()
    assert float(loss(Y, LOGITS)) == pytest.approx(per_sample.mean(), rel=1e-6)


def test_sparse_loss_class_and_bad_labels():
    loss = mt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    want = mt.keras.losses.categorical_crossentropy(Y, LOGITS, from_logits=True).numpy().mean()
    assert float(loss([1, 0], LOGITS)) == pytest.approx(want, rel=1e-6)
    with pytest.raises(ValueError, match=r"labels in \[0, 3\)"):
        loss([1, 3], LOGITS)


@pytest.mark.parametrize("name", ["binary_crossentropy", "categorical_crossentropy"])
def test_losses_from_logits_have_correct_gradients(name):
    fn = getattr(mt.keras.losses, name)
    check_grads(lambda z: mt.reduce_sum(fn(mt.constant(Y), z, from_logits=True)),
                LOGITS.copy())


def test_activations():
    x = mt.constant([-2.0, 0.5, 3.0])
    A = mt.keras.activations
    np.testing.assert_allclose(A.relu(x).numpy(), [0.0, 0.5, 3.0])
    np.testing.assert_allclose(A.relu(x, negative_slope=0.1, max_value=2.0).numpy(),
                               [-0.2, 0.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(A.get("sigmoid")(x).numpy(), 1 / (1 + np.exp([2.0, -0.5, -3.0])),
                               rtol=1e-6)
    assert A.get(None) is A.linear
    with pytest.raises(ValueError, match="unknown activation 'relux'"):
        A.get("relux")


def test_accuracy_metric_sparse_categorical_and_binary():
    from minitape.keras.models import _accuracy
    probs = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    assert _accuracy(np.array([1, 0, 0]), probs) == pytest.approx(2 / 3)
    assert _accuracy(np.array([[1], [0], [1]]), probs) == 1.0
    assert _accuracy(np.eye(2)[[1, 1, 1]], probs) == pytest.approx(2 / 3)
    assert _accuracy(np.array([1.0, 0.0]), np.array([[0.7], [0.6]])) == 0.5


def test_classifier_fit_reports_accuracy():
    mt.random.set_seed(3)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    labels = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    model = mt.keras.Sequential([mt.keras.layers.Dense(2)])
    model.compile(optimizer=mt.keras.optimizers.Adam(0.1),
                  loss=mt.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, labels, epochs=15, batch_size=16, verbose=0)
    assert history.history["accuracy"][-1] > 0.9
    loss, accuracy = model.evaluate(x, labels, verbose=0)
    assert accuracy == pytest.approx(np.mean(model.predict(x, verbose=0).argmax(-1) == labels))


def test_summary_and_save(tmp_path, capsys):
    model = mt.keras.Sequential([mt.keras.layers.Dense(3)], name="tiny")
    model(mt.ones((1, 2)))
    model.summary()
    out = capsys.readouterr().out
    assert 'Model: "tiny"' in out and "Total params: 9\n" in out
    assert re.search(r"\n dense\S* \(Dense\) +\(None, 3\) +9\n", out), out   # name, shape, #
    model.save(tmp_path / "tiny.keras")
    loaded = mt.keras.models.load_model(tmp_path / "tiny.keras")
    assert [v.numpy().tolist() for v in loaded.variables] == \
        [v.numpy().tolist() for v in model.variables]
