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
