"""The weights API of Keras's layers, on minitape's built-in layers and models alike.

Textbook code (Geron's "Hands-On Machine Learning", chapter 10; Chollet's "Deep Learning with
Python", transfer learning) reads and sets a layer's weights, counts parameters, finds a
layer by name and freezes layers. Expected values are Keras's documented behaviour.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape import keras


def _model():
    return keras.Sequential([
        keras.layers.Flatten(input_shape=[4, 4]),
        keras.layers.Dense(3, activation="relu"),
        keras.layers.Dense(2),
    ])


def test_geron_chapter_10_reads_a_layers_weights_by_name():
    model = _model()
    hidden1 = model.layers[1]
    assert model.get_layer(hidden1.name) is hidden1
    assert model.get_layer(index=-1) is model.layers[2]
    weights, biases = hidden1.get_weights()
    assert weights.shape == (16, 3) and biases.shape == (3,)
    np.testing.assert_array_equal(weights, hidden1.kernel.numpy())
    np.testing.assert_array_equal(biases, np.zeros(3, np.float32))   # Keras's zeros init
    weights[0, 0] = 123.0   # a copy: the layer does not change
    assert hidden1.kernel.numpy()[0, 0] != 123.0


def test_count_params_as_keras_counts_them():
    model = _model()
    assert model.layers[0].count_params() == 0
    assert model.layers[1].count_params() == 16 * 3 + 3
    assert model.count_params() == 16 * 3 + 3 + 3 * 2 + 2
    with pytest.raises(ValueError, match="not built yet"):
        keras.layers.Dense(4).count_params()


def test_set_weights_takes_get_weights_of_another_layer_and_checks_it():
    a, b = _model(), _model()
    b.set_weights(a.get_weights())
    x = mt.constant(np.arange(32, dtype=np.float32).reshape(2, 4, 4) / 32)
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    layer = a.layers[1]
    layer.set_weights([np.ones((16, 3)), [1.0, 2.0, 3.0]])     # float64 and a list: cast
    assert layer.kernel.dtype == mt.float32
    np.testing.assert_array_equal(layer.bias.numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="list of 1 value.*2 weight"):
        layer.set_weights([np.ones((16, 3))])
    before = layer.get_weights()
    with pytest.raises(ValueError, match=r"dense\S*/bias has shape \(3,\).*shape \(4,\)"):
        layer.set_weights([np.zeros((16, 3)), np.zeros(4)])
    for old, new in zip(before, layer.get_weights()):   # all or nothing
        np.testing.assert_array_equal(old, new)
    with pytest.raises(TypeError, match="list of arrays"):
        layer.set_weights(np.ones((16, 3)))


def test_get_layer_errors_name_the_fix():
    model = _model()
    with pytest.raises(ValueError, match="no layer named .no_such_layer.; the layers are"):
        model.get_layer("no_such_layer")
    with pytest.raises(ValueError, match="index 5, but the model has 3"):
        model.get_layer(index=5)
    with pytest.raises(ValueError, match="either a layer name"):
        model.get_layer()


def test_a_frozen_builtin_layer_leaves_the_trainable_weights():
    keras.utils.set_random_seed(1)   # (weights with live ReLUs, whatever ran before)
    model = _model()
    dense = model.layers[1]
    assert len(dense.weights) == 2 and len(dense.trainable_weights) == 2
    dense.trainable = False
    assert dense.trainable_weights == [] and dense.trainable_variables == ()
    assert [v.path for v in dense.non_trainable_weights] == [v.path for v in dense.weights]
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 2
    assert {id(v) for v in model.non_trainable_variables} == {id(v) for v in dense.variables}
    lines = []
    model.summary(print_fn=lines.append, show_trainable=True)
    frozen = [line for line in lines if line.startswith(f" {dense.name} (Dense)")]
    assert len(frozen) == 1 and frozen[0].rstrip().endswith("N"), lines
    assert "Non-trainable params: 51" in lines   # 16 * 3 + 3, the frozen layer's
    # fit trains only the other layer
    kernel = dense.kernel.numpy().copy()
    other = model.layers[2].kernel.numpy().copy()
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.random((8, 4, 4)).astype("float32"), rng.random((8, 2)).astype("float32"),
              epochs=1, verbose=0)
    np.testing.assert_array_equal(dense.kernel.numpy(), kernel)
    assert not np.array_equal(model.layers[2].kernel.numpy(), other)


def test_batch_normalization_weights_in_keras_order():
    bn = keras.layers.BatchNormalization()
    assert not bn.built
    bn(mt.ones([2, 3]))
    assert bn.built
    assert [v.name for v in bn.weights] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert [v.name for v in bn.trainable_weights] == ["gamma", "beta"]
    assert [v.name for v in bn.non_trainable_weights] == ["moving_mean", "moving_variance"]
    assert bn.count_params() == 12


def test_a_subclassed_layer_keeps_its_weights_api():
    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return x * self.w

    layer = Scale()
    with pytest.raises(ValueError, match="not built yet"):
        layer.count_params()
    layer(mt.ones([1, 3]))
    assert layer.count_params() == 3
    layer.set_weights([np.array([1.0, 2.0, 3.0])])
    np.testing.assert_array_equal(layer(mt.ones([1, 3])).numpy(), [[1.0, 2.0, 3.0]])
    layer.trainable = False
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 1


def test_build_takes_keras_input_shape():
    for layer, shapes in ((keras.layers.Dense(2), [(3, 2), (2,)]),
                          (keras.layers.BatchNormalization(), [(3,)] * 4),
                          (keras.layers.LayerNormalization(), [(3,), (3,)])):
        assert not layer.built
        layer.build((None, 3))              # as Keras: layer.build(input_shape)
        assert layer.built and [v.shape for v in layer.weights] == shapes
    conv = keras.layers.Conv2D(4, 3)
    conv.build((None, 8, 8, 2))
    assert conv.kernel.shape == (3, 3, 2, 4) and conv.count_params() == 3 * 3 * 2 * 4 + 4
    with pytest.raises(ValueError, match="size of the last axis"):
        keras.layers.Dense(2).build((None, None))
