"""Chollet's "Deep Learning with Python", chapter 7, and Geron's model summaries: a subclass
of Model built the functional way with its own train_step, layer.input / layer.output,
plot_model and the layer table that model.summary() prints."""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape import keras
from minitape.keras import layers

RNG = np.random.default_rng(11)
loss_fn = keras.losses.SparseCategoricalCrossentropy()
loss_tracker = keras.metrics.Mean(name="loss")


class CustomModel(keras.Model):   # Chollet, listing 7.26, as written there
    def train_step(self, data):
        inputs, targets = data
        with mt.GradientTape() as tape:
            predictions = self(inputs, training=True)
            loss = loss_fn(targets, predictions)
        gradients = tape.gradient(loss, self.trainable_weights)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_weights))
        loss_tracker.update_state(loss)
        return {"loss": loss_tracker.result()}

    @property
    def metrics(self):
        return [loss_tracker]


def test_a_subclass_called_with_inputs_and_outputs_is_functional_and_uses_its_train_step():
    inputs = keras.Input(shape=(6,))
    features = layers.Dense(16, activation="relu")(inputs)
    outputs = layers.Dense(3, activation="softmax")(features)
    model = CustomModel(inputs, outputs)
    assert isinstance(model, CustomModel) and isinstance(model, keras.Model)
    assert type(model).__name__ == "CustomModel"
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Dense", "Dense"]
    again = CustomModel(inputs=inputs, outputs=outputs)
    assert type(again) is type(model)          # one functional class per subclass
    model.compile(optimizer=keras.optimizers.RMSprop())
    x = RNG.normal(size=(64, 6)).astype(np.float32)
    y = RNG.integers(0, 3, 64)
    calls = []
    original = CustomModel.train_step

    def counting(self, data):
        calls.append(1)
        return original(self, data)

    CustomModel.train_step = counting
    try:
        history = model.fit(x, y, epochs=2, batch_size=32, verbose=0)
    finally:
        CustomModel.train_step = original
    assert len(calls) == 4 and list(history.history) == ["loss"]
    expected = float(loss_fn(y, model(x)))
    assert np.isfinite(expected)


def test_a_subclass_with_its_own_arguments_stays_a_subclassed_model():
    class Scaled(keras.Model):
        def __init__(self, units, factor, **kwargs):
            super().__init__(**kwargs)
            self.dense, self.factor = layers.Dense(units), factor

        def call(self, x):
            return self.dense(x) * self.factor

    model = Scaled(2, 3.0)
    assert type(model) is Scaled
    assert model(mt.ones([1, 4])).shape == (1, 2)


def test_layer_input_and_output_are_the_functional_tensors():
    title = keras.Input(shape=(10,), name="title")
    tags = keras.Input(shape=(3,), name="tags")
    joined = layers.Concatenate()([title, tags])
    dense = layers.Dense(4)
    out = dense(joined)
    model = keras.Model([title, tags], out)
    assert dense.input is joined and dense.output is out
    assert model.layers[0].output is title
    concat = model.get_layer(index=2)
    assert concat.input == [title, tags] and concat.output.shape == (None, 13)
    with pytest.raises(AttributeError, match="no input yet"):
        layers.Dense(2).input


def test_plot_model_draws_the_connections(tmp_path):
    title = keras.Input(shape=(10,), name="title")
    text = keras.Input(shape=(10,), name="text_body")
    features = layers.Concatenate()([title, text])
    priority = layers.Dense(1, activation="sigmoid", name="priority")(features)
    model = keras.Model([title, text], priority)
    dot = keras.utils.model_to_dot(model, show_shapes=True)
    assert "title (InputLayer)|Output shape: (None, 10)" in dot
    assert "priority (Dense)|Output shape: (None, 1)" in dot
    assert dot.count("->") == 3            # two inputs into Concatenate, one into priority
    path = tmp_path / "ticket_classifier.png"
    result = keras.utils.plot_model(model, path, show_shapes=True)
    assert result is None                  # (outside a notebook, as Keras)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "model.svg"
    keras.utils.plot_model(keras.Sequential([layers.Dense(2, input_shape=(3,))]), svg)
    assert b"<svg" in svg.read_bytes()
    with pytest.raises(ValueError, match="cannot write a .txt file"):
        keras.utils.plot_model(model, tmp_path / "model.txt")
    with pytest.raises(TypeError, match="expects an mt.keras Model"):
        keras.utils.plot_model(layers.Dense(2))


def test_summary_is_the_layer_table_of_the_textbooks():
    model = keras.Sequential([
        layers.Flatten(input_shape=[28, 28]),
        layers.Dense(300, activation="relu"),
        layers.Dense(100, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ], name="geron")
    lines = []
    model.summary(print_fn=lines.append)
    table = "\n".join(lines)
    rows = [line.split() for line in lines if "(Dense)" in line or "(Flatten)" in line]
    assert [row[-3:] for row in rows] == [["(None,", "784)", "0"],
                                          ["(None,", "300)", "235,500"],
                                          ["(None,", "100)", "30,100"],
                                          ["(None,", "10)", "1,010"]]
    assert "Total params: 266,610" in table and "Non-trainable params: 0" in table
    assert lines[0] == 'Model: "geron"' and " Layer (type)" in lines[2]
    unbuilt = keras.Sequential([layers.Dense(2)])
    lines = []
    unbuilt.summary(print_fn=lines.append)
    assert any("(Dense)" in line and "?" in line for line in lines)


def _ticket_model():
    """Chollet's listing 7.10: three inputs, two outputs."""
    title = keras.Input(shape=(20,), name="title")
    text_body = keras.Input(shape=(20,), name="text_body")
    tags = keras.Input(shape=(5,), name="tags")
    features = layers.Concatenate()([title, text_body, tags])
    features = layers.Dense(16, activation="relu")(features)
    priority = layers.Dense(1, activation="sigmoid", name="priority")(features)
    department = layers.Dense(4, activation="softmax", name="department")(features)
    return keras.Model(inputs=[title, text_body, tags], outputs=[priority, department])


def _ticket_data(n=48):
    x = [RNG.integers(0, 2, size=(n, 20)), RNG.integers(0, 2, size=(n, 20)),
         RNG.integers(0, 2, size=(n, 5))]
    y = [RNG.random(size=(n, 1)), np.eye(4)[RNG.integers(0, 4, n)]]
    return x, y


def test_several_inputs_and_outputs_compile_fit_evaluate_predict_as_keras():
    keras.utils.set_random_seed(5)
    model = _ticket_model()
    x, y = _ticket_data()
    model.compile(optimizer="rmsprop", loss=["mean_squared_error", "categorical_crossentropy"],
                  metrics=[["mean_absolute_error"], ["accuracy"]])
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert list(history.history) == ["loss", "priority_loss", "department_loss",
                                     "priority_mean_absolute_error", "department_accuracy"]
    for epoch in range(2):   # the loss is the sum of the outputs' losses
        h = history.history
        assert h["loss"][epoch] == pytest.approx(
            h["priority_loss"][epoch] + h["department_loss"][epoch], rel=1e-5)
    results = model.evaluate(x, y, verbose=0)
    priority, department = model.predict(x, verbose=0)
    assert priority.shape == (48, 1) and department.shape == (48, 4)
    mse = np.mean((priority - y[0]) ** 2)
    cce = np.mean(-np.sum(y[1] * np.log(np.clip(department, 1e-7, 1 - 1e-7)), axis=1))
    np.testing.assert_allclose(results[:3], [mse + cce, mse, cce], rtol=1e-4)
    np.testing.assert_allclose(results[3], np.mean(np.abs(priority - y[0])), rtol=1e-4)
    np.testing.assert_allclose(results[4], np.mean(department.argmax(1) == y[1].argmax(1)))


def test_dicts_by_name_and_loss_weights():
    keras.utils.set_random_seed(6)
    model = _ticket_model()
    x, y = _ticket_data()
    model.compile(optimizer="rmsprop",
                  loss={"priority": "mean_squared_error", "department": "categorical_crossentropy"},
                  metrics={"department": ["accuracy"]}, loss_weights={"priority": 10.0})
    named_x = {"title": x[0], "text_body": x[1], "tags": x[2]}
    named_y = {"priority": y[0], "department": y[1]}
    history = model.fit(named_x, named_y, epochs=1, verbose=0)
    h = history.history
    assert "department_accuracy" in h and "priority_mean_absolute_error" not in h
    results = dict(zip(["loss", "priority_loss", "department_loss", "department_accuracy"],
                       model.evaluate(named_x, named_y, verbose=0)))
    assert results["loss"] == pytest.approx(
        10 * results["priority_loss"] + results["department_loss"], rel=1e-5)
    with pytest.raises(ValueError, match=r"no output named \['priorty'\]"):
        model.compile(optimizer="sgd", loss={"priorty": "mse"})
        model.fit(x, y, epochs=1, verbose=0)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="has 2 outputs"):
        model.fit(x, y[0], epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"the dict of inputs has no entry for \['tags'\]"):
        model.predict({"title": x[0], "text_body": x[1]}, verbose=0)


def test_geron_wide_and_deep_with_the_functional_merging_forms(tmp_path):
    keras.utils.set_random_seed(7)
    x = RNG.random((60, 8)).astype(np.float32)
    y = x[:, :1] * 2 + 1
    input_ = keras.layers.Input(shape=x.shape[1:])
    hidden2 = layers.Dense(10, activation="relu")(layers.Dense(10, activation="relu")(input_))
    concat = keras.layers.concatenate([input_, hidden2])
    output = layers.Dense(1)(concat)
    model = keras.Model(inputs=[input_], outputs=[output])   # one output, in a list
    model.compile(loss="mse", optimizer=keras.optimizers.SGD(learning_rate=1e-3))
    history = model.fit(x, y, epochs=2, validation_split=0.2, verbose=0)
    assert sorted(history.history) == ["loss", "val_loss"]
    assert model.predict(x, verbose=0).shape == (60, 1)      # one array, as Keras
    # two inputs, a main and an auxiliary output with loss weights
    input_a = keras.layers.Input(shape=[5], name="wide_input")
    input_b = keras.layers.Input(shape=[6], name="deep_input")
    hidden = layers.Dense(10, activation="relu")(input_b)
    output = layers.Dense(1, name="main_output")(keras.layers.concatenate([input_a, hidden]))
    aux_output = layers.Dense(1, name="aux_output")(hidden)
    model = keras.Model(inputs=[input_a, input_b], outputs=[output, aux_output])
    model.compile(loss=["mse", "mse"], loss_weights=[0.9, 0.1], optimizer="sgd")
    x_a, x_b = x[:, :5], x[:, 2:]
    model.fit((x_a, x_b), [y, y], epochs=1, verbose=0)
    total, main, aux = model.evaluate((x_a, x_b), [y, y], verbose=0)
    assert total == pytest.approx(0.9 * main + 0.1 * aux, rel=1e-5)
    model.save(tmp_path / "wide_deep.keras")
    loaded = keras.models.load_model(tmp_path / "wide_deep.keras")
    np.testing.assert_array_equal(loaded.predict((x_a, x_b), verbose=0)[0],
                                  model.predict((x_a, x_b), verbose=0)[0])


def test_functional_forms_and_maximum_minimum():
    a, b = mt.constant([[1.0, 5.0]]), mt.constant([[3.0, 2.0]])
    np.testing.assert_array_equal(keras.layers.add([a, b]).numpy(), [[4.0, 7.0]])
    np.testing.assert_array_equal(keras.layers.subtract([a, b]).numpy(), [[-2.0, 3.0]])
    np.testing.assert_array_equal(keras.layers.multiply([a, b]).numpy(), [[3.0, 10.0]])
    np.testing.assert_array_equal(keras.layers.average([a, b]).numpy(), [[2.0, 3.5]])
    np.testing.assert_array_equal(keras.layers.maximum([a, b]).numpy(), [[3.0, 5.0]])
    np.testing.assert_array_equal(keras.layers.minimum([a, b]).numpy(), [[1.0, 2.0]])
    np.testing.assert_array_equal(keras.layers.concatenate([a, b], axis=0).numpy(),
                                  [[1.0, 5.0], [3.0, 2.0]])
    with mt.GradientTape() as tape:
        tape.watch([a, b])
        top = mt.reduce_sum(keras.layers.Maximum()([a, b]))
    ga, gb = tape.gradient(top, [a, b])
    np.testing.assert_array_equal(ga.numpy(), [[0.0, 1.0]])
    np.testing.assert_array_equal(gb.numpy(), [[1.0, 0.0]])
