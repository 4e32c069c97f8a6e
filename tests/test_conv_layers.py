"""Conv2D, MaxPooling2D, Flatten and Dropout layers: Keras's defaults, weight layout and errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape.testing import check_grads


def test_conv2d_layer_weights_follow_keras():
    conv = mt.layers.Conv2D(5, (3, 2))
    assert conv.strides == (1, 1) and conv.padding == "VALID" and conv.activation is None
    y = conv(mt.ones([2, 6, 6, 3]))
    assert y.shape == (2, 4, 5, 5)
    assert conv.kernel.shape == (3, 2, 3, 5) and conv.bias.shape == (5,)
    assert [v.name for v in conv.trainable_variables] == ["kernel", "bias"]
    assert conv.kernel.path == f"{conv.name}/kernel"
    np.testing.assert_array_equal(conv.bias.numpy(), 0.0)
    limit = np.sqrt(6.0 / (3 * 2 * 3 + 3 * 2 * 5))   # Glorot with Keras's receptive-field fans
    assert np.abs(conv.kernel.numpy()).max() <= limit
    assert np.abs(conv.kernel.numpy()).max() > 0.5 * limit
    assert conv.name.startswith("conv2d")


def test_conv2d_layer_computes_conv_plus_bias_then_activation():
    conv = mt.layers.Conv2D(2, 3, strides=2, padding="same", activation="relu",
                            dtype=mt.float64)
    x = mt.constant(np.random.default_rng(0).standard_normal((1, 5, 5, 1)))
    y = conv(x)
    conv.bias.assign(mt.constant([0.5, -0.5], dtype=mt.float64))
    y = conv(x)
    expected = mt.nn.relu(mt.nn.conv2d(x, conv.kernel, 2, "SAME") + conv.bias)
    np.testing.assert_allclose(y.numpy(), expected.numpy())
    assert y.shape == (1, 3, 3, 2)


def test_conv2d_layer_gradients():
    conv = mt.layers.Conv2D(2, 2, dtype=mt.float64)
    x = np.random.default_rng(1).standard_normal((2, 4, 4, 1))
    conv(mt.constant(x))
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(conv(mt.constant(x)) ** 2)
    g_kernel, g_bias = tape.gradient(loss, [conv.kernel, conv.bias])
    assert g_kernel.shape == (2, 2, 1, 2) and g_bias.shape == (2,)
    check_grads(lambda k, b: mt.reduce_sum((mt.nn.conv2d(mt.constant(x), k, 1, "VALID") + b) ** 2),
                conv.kernel.numpy(), conv.bias.numpy(), order=1)


@pytest.mark.parametrize("kwargs, match", [
    ({"filters": 0, "kernel_size": 3}, "filters must be a positive int"),
    ({"filters": 2, "kernel_size": (3, 3, 3)}, "kernel_size must be a positive int or a pair"),
    ({"filters": 2, "kernel_size": 3, "strides": 0}, "strides must be"),
    ({"filters": 2, "kernel_size": 3, "padding": "full"}, "padding must be"),
    ({"filters": 2, "kernel_size": 3, "activation": "swishy"}, "unknown activation"),
])
def test_conv2d_layer_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mt.layers.Conv2D(**kwargs)


def test_conv2d_layer_bad_inputs():
    conv = mt.layers.Conv2D(2, 3)
    with pytest.raises(ValueError, match=r"expects images of shape \(batch, height, width, "
                                         r"channels\), got shape \(8, 8\)"):
        conv(mt.ones([8, 8]))
    conv(mt.ones([1, 8, 8, 1]))
    with pytest.raises(ValueError, match="built for 1 input channels"):
        conv(mt.ones([1, 8, 8, 3]))


def test_max_pooling_flatten_and_shapes():
    x = mt.constant(np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3))
    pool = mt.layers.MaxPooling2D()
    assert pool.pool_size == (2, 2) and pool.strides == (2, 2)
    y = pool(x)
    np.testing.assert_array_equal(y.numpy(), mt.nn.max_pool2d(x, 2, 2, "VALID").numpy())
    assert mt.layers.MaxPooling2D(3, strides=1, padding="same")(x).shape == (2, 4, 4, 3)
    flat = mt.layers.Flatten()(y)
    assert flat.shape == (2, 12)
    np.testing.assert_array_equal(flat.numpy(), y.numpy().reshape(2, 12))
    assert mt.layers.Flatten()(mt.ones([3])).shape == (3, 1)
    assert not pool.variables and not mt.layers.Flatten().variables
    with pytest.raises(ValueError, match="pool_size"):
        mt.layers.MaxPooling2D(0)


def test_dropout_layer_is_active_only_when_training():
    layer = mt.layers.Dropout(0.5, seed=0)
    x = mt.ones([20, 30])
    assert layer(x) is x                                      # inference: unchanged
    assert layer(x, training=False) is x
    a, b = layer(x, training=True).numpy(), layer(x, training=True).numpy()
    assert set(np.unique(a)) == {0.0, 2.0}
    assert not np.array_equal(a, b)                           # a new mask each call
    again = mt.layers.Dropout(0.5, seed=0)
    np.testing.assert_array_equal(again(x, training=True).numpy(), a)  # repeatable with a seed
    for rate in (1.0, -0.5):
        with pytest.raises(ValueError, match=r"must be a number in \[0, 1\)"):
            mt.layers.Dropout(rate)


def test_sequential_convnet_passes_training_to_dropout_only():
    mt.random.set_seed(0)
    model = mt.layers.Sequential([
        mt.layers.Conv2D(4, 3, activation="relu"),
        mt.layers.MaxPooling2D(),
        mt.layers.Flatten(),
        mt.layers.Dropout(0.5, seed=1),
        mt.layers.Dense(3),
    ])
    x = mt.random.normal([2, 8, 8, 1])
    assert model(x).shape == (2, 3)
    np.testing.assert_array_equal(model(x).numpy(), model(x, training=False).numpy())
    assert not np.array_equal(model(x).numpy(), model(x, training=True).numpy())
    assert len(model.trainable_variables) == 4
    with mt.GradientTape() as tape:
        loss = mt.reduce_mean(mt.nn.sparse_softmax_cross_entropy_with_logits(
            [0, 2], model(x, training=True)))
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None and g.shape == v.shape
               for g, v in zip(grads, model.trainable_variables))
