"""Chollet's "Deep Learning with Python" (2nd edition), chapters 8 and 9, with
``from minitape import keras``: the small MNIST convnet, data augmentation (``RandomFlip``,
``RandomRotation``, ``RandomZoom``) with ``Rescaling`` and ``Dropout``, residual connections,
batch normalization, depthwise separable convolutions and the mini-Xception, and the
interpretation section (intermediate activations, filter visualization by gradient ascent,
Grad-CAM) on small random-weight convnets in place of the pretrained ones.

The book's code as printed, with small synthetic data. Numbers are checked against NumPy
loops written here (depthwise convolution, bilinear resampling with NumPy's ``symmetric``
padding), hand-worked images (a quarter turn is ``np.rot90``), parameter counts from the
layer formulas, and central finite differences in float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitape as tf
from minitape import keras
from minitape.layers import affine_transform, rotation_transforms, zoom_transforms
from minitape.keras import layers
from test_textbook_cnn import check_training_step, float64_weights

RNG = np.random.default_rng(8)


def conv_params(k, c_in, c_out, bias=True):
    return k * k * c_in * c_out + (c_out if bias else 0)


def separable_params(k, c_in, c_out, bias=True):
    return k * k * c_in + c_in * c_out + (c_out if bias else 0)


def directional_check(f, x, seed=0, eps=1e-6, rtol=1e-6):
    """``f`` (a function of one float64 Tensor to a scalar): the tape's gradient along a
    random unit direction against the central difference."""
    x = tf.constant(np.asarray(x, np.float64))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = np.asarray(tape.gradient(y, x))
    d = np.random.default_rng(seed).standard_normal(x.shape)
    d /= np.linalg.norm(d)
    numeric = (float(f(x + eps * d)) - float(f(x - eps * d))) / (2 * eps)
    assert math.isclose(float(np.sum(g * d)), numeric, rel_tol=rtol, abs_tol=1e-9)
    return g


# -- 8.1 A first convnet on MNIST ------------------------------------------------------------


def mnist_convnet():
    inputs = keras.Input(shape=(28, 28, 1))
    x = layers.Conv2D(filters=32, kernel_size=3, activation="relu")(inputs)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=64, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=128, kernel_size=3, activation="relu")(x)
    x = layers.Flatten()(x)
    outputs = layers.Dense(10, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def test_8_1_the_small_mnist_convnet():
    tf.random.set_seed(0)
    model = mnist_convnet()
    lines = []
    model.summary(print_fn=lines.append)
    shapes = [(None, 26, 26, 32), (None, 13, 13, 32), (None, 11, 11, 64), (None, 5, 5, 64),
              (None, 3, 3, 128), (None, 1152), (None, 10)]
    assert [layer.output.shape for layer in model.layers[1:]] == shapes
    total = (conv_params(3, 1, 32) + conv_params(3, 32, 64) + conv_params(3, 64, 128)
             + 1152 * 10 + 10)
    assert total == 104_202                       # the book's "Total params: 104,202"
    assert f"Total params: {total:,}" in "\n".join(lines)
    # MNIST's shapes, synthetic digits: a bright bar whose row is the label
    train_labels = RNG.integers(0, 10, 96)
    train_images = RNG.uniform(0, 40, (96, 28, 28)).astype("uint8")
    for image, label in zip(train_images, train_labels):
        image[2 + 2 * label:4 + 2 * label, 4:24] = 255
    train_images = train_images.reshape((96, 28, 28, 1))
    train_images = train_images.astype("float32") / 255
    model.compile(optimizer="rmsprop",
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(train_images, train_labels, epochs=3, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    test_loss, test_acc = model.evaluate(train_images, train_labels, verbose=0)
    probs = model.predict(train_images, verbose=0)
    expected = -np.mean(np.log(probs[np.arange(96), train_labels]))
    assert math.isclose(test_loss, expected, rel_tol=1e-4)
    assert test_acc == pytest.approx(np.mean(probs.argmax(1) == train_labels))


def test_8_1_training_step_gradient_matches_finite_differences():
    with float64_weights():
        tf.random.set_seed(1)
        model = mnist_convnet()
        X = RNG.uniform(0, 1, (3, 28, 28, 1))
        y = np.array([1, 7, 3])
        loss = keras.losses.SparseCategoricalCrossentropy()
        check_training_step(model, X, lambda p: loss(y, p), lr=0.01)


# -- 8.2 Data augmentation ---------------------------------------------------------------------


def bilinear_reference(image, transform, fill_mode="reflect", fill_value=0.0):
    """Keras's affine transform of one (h, w, c) image, one output pixel at a time: the input
    padded by NumPy (``symmetric`` is Keras's ``reflect``), then the four neighbours."""
    h, w, c = image.shape
    a0, a1, a2, b0, b1, b2 = transform[:6]
    pad = 2 * (h + w)
    padded = (np.pad(image, ((pad, pad), (pad, pad), (0, 0)), mode="symmetric")
              if fill_mode == "reflect" else
              np.pad(image, ((pad, pad), (pad, pad), (0, 0)), constant_values=fill_value))
    out = np.zeros_like(image, dtype=np.float64)
    for row in range(h):
        for col in range(w):
            xs, ys = a0 * col + a1 * row + a2, b0 * col + b1 * row + b2
            x0, y0 = math.floor(xs), math.floor(ys)
            fx, fy = xs - x0, ys - y0
            for dy, wy in ((0, 1 - fy), (1, fy)):
                for dx, wx in ((0, 1 - fx), (1, fx)):
                    out[row, col] += wy * wx * padded[pad + y0 + dy, pad + x0 + dx]
    return out


def test_8_2_data_augmentation_layers_as_the_book_uses_them():
    data_augmentation = keras.Sequential(
        [
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(0.1),
            layers.RandomZoom(0.2),
        ]
    )
    images = RNG.uniform(0, 255, (6, 12, 10, 3)).astype("float32")
    # inference: the images pass through unchanged
    assert np.array_equal(data_augmentation(images).numpy(), images)
    assert np.array_equal(data_augmentation(images, training=False).numpy(), images)
    augmented_images = data_augmentation(images, training=True)
    assert augmented_images.shape == images.shape
    assert not np.allclose(augmented_images.numpy(), images)
    # the book's figure loop: a new augmentation at each call
    again = data_augmentation(images, training=True)
    assert not np.allclose(again.numpy(), augmented_images.numpy())
    assert augmented_images[0].numpy().astype("uint8").shape == (12, 10, 3)


def test_random_flip_geometry_and_seed():
    images = RNG.normal(size=(40, 3, 4, 2)).astype("float32")
    out = layers.RandomFlip("horizontal", seed=5)(images, training=True).numpy()
    same = [np.array_equal(o, i) for o, i in zip(out, images)]
    flipped = [np.array_equal(o, i[:, ::-1]) for o, i in zip(out, images)]
    assert all(s or f for s, f in zip(same, flipped)) and any(same) and any(flipped)
    # Keras 3: one uniform draw per image, flipped when <= 0.5
    draws = np.random.default_rng(5).uniform(0, 1, 40)
    assert flipped == list(draws <= 0.5)
    again = layers.RandomFlip("horizontal", seed=5)(images, training=True).numpy()
    assert np.array_equal(out, again)                       # deterministic under a seed
    both = layers.RandomFlip(seed=2)(images, training=True).numpy()
    assert all(np.array_equal(o, i) or np.array_equal(o, i[::-1, ::-1])
               for o, i in zip(both, images))
    vertical = layers.RandomFlip("vertical", seed=2)(images, training=True).numpy()
    assert all(np.array_equal(o, i) or np.array_equal(o, i[::-1]) for o, i in zip(vertical,
                                                                                 images))
    one = layers.RandomFlip("horizontal", seed=0)(images[0], training=True)
    assert one.shape == (3, 4, 2)
    with pytest.raises(ValueError, match="mode must be"):
        layers.RandomFlip("diagonal")


def test_random_rotation_geometry():
    image = np.arange(25.0).reshape(1, 5, 5, 1)
    quarter = affine_transform(tf.constant(image), rotation_transforms([np.pi / 2], 5, 5))
    assert np.allclose(quarter.numpy()[0, :, :, 0], np.rot90(image[0, :, :, 0]))
    half = affine_transform(tf.constant(image), rotation_transforms([np.pi], 5, 5))
    assert np.allclose(half.numpy()[0, :, :, 0], image[0, ::-1, ::-1, 0])
    # a seeded layer: angles uniform in [-0.1, 0.1] turns, Keras's bilinear resampling
    images = RNG.normal(size=(3, 7, 6, 2))
    layer = layers.RandomRotation(0.1, seed=4, dtype="float64")
    out = layer(tf.constant(images), training=True).numpy()
    angles = np.random.default_rng(4).uniform(-0.2 * np.pi, 0.2 * np.pi, 3)
    for o, image, t in zip(out, images, rotation_transforms(angles, 7, 6)):
        assert np.allclose(o, bilinear_reference(image, t), atol=1e-12)
    zero = layers.RandomRotation((0.0, 0.0), dtype="float64")(images, training=True).numpy()
    assert np.allclose(zero, images)
    constant = affine_transform(tf.constant(images), rotation_transforms([0.3] * 3, 7, 6),
                                fill_mode="constant", fill_value=2.0).numpy()
    for o, image in zip(constant, images):
        reference = bilinear_reference(image, rotation_transforms([0.3], 7, 6)[0], "constant",
                                       2.0)
        assert np.allclose(o, reference, atol=1e-12)
    with pytest.raises(NotImplementedError, match="fill_mode"):
        layers.RandomRotation(0.1, fill_mode="blur")


def test_random_zoom_geometry():
    image = np.arange(25.0).reshape(1, 5, 5, 1)
    # zoom 0.5 (in by 2) about the center: output pixel x reads input 1 + x / 2
    zoomed = affine_transform(tf.constant(image), zoom_transforms([0.5], [0.5], 5, 5)).numpy()
    centre = image[0, 1:4, 1:4, 0]
    assert zoomed[0, 0, 0, 0] == centre[0, 0] and zoomed[0, 2, 2, 0] == centre[1, 1]
    assert zoomed[0, 0, 1, 0] == (centre[0, 0] + centre[0, 1]) / 2
    images = RNG.normal(size=(4, 6, 8, 1))
    layer = layers.RandomZoom(0.2, seed=3)
    out = layer(images, training=True).numpy()
    zooms = np.random.default_rng(3).uniform(0.8, 1.2, 4)
    for o, image, t in zip(out, images, zoom_transforms(zooms, zooms, 6, 8)):
        assert np.allclose(o, bilinear_reference(image, t), atol=1e-5)
    assert np.array_equal(layer(images).numpy(), images.astype("float32"))


def test_augmentation_is_differentiable():
    transform = rotation_transforms([0.4], 5, 4)
    g = directional_check(lambda x: tf.reduce_sum(affine_transform(x, transform) ** 2),
                          RNG.normal(size=(1, 5, 4, 2)))
    assert g.shape == (1, 5, 4, 2)


def cats_vs_dogs_model(data_augmentation):
    inputs = keras.Input(shape=(180, 180, 3))
    x = data_augmentation(inputs)
    x = layers.Rescaling(1./255)(x)
    x = layers.Conv2D(filters=32, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=64, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=128, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=256, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=256, kernel_size=3, activation="relu")(x)
    x = layers.Flatten()(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)

    model.compile(loss="binary_crossentropy",
                  optimizer="rmsprop",
                  metrics=["accuracy"])
    return model


def test_8_2_convnet_with_augmentation_rescaling_and_dropout():
    tf.random.set_seed(3)
    data_augmentation = keras.Sequential(
        [
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(0.1),
            layers.RandomZoom(0.2),
        ]
    )
    model = cats_vs_dogs_model(data_augmentation)
    total = (conv_params(3, 3, 32) + conv_params(3, 32, 64) + conv_params(3, 64, 128)
             + conv_params(3, 128, 256) + conv_params(3, 256, 256) + 12544 + 1)
    assert model.count_params() == total == 991_041          # the book's summary
    images = RNG.uniform(0, 255, (4, 180, 180, 3)).astype("float32")
    labels = np.array([0, 1, 1, 0])
    # inference: augmentation and dropout off, the same as the layers after them by hand
    x = tf.constant(images) * (1 / 255)
    for layer in model.layers[3:]:
        if not isinstance(layer, layers.Dropout):
            x = layer(x)
    assert np.allclose(model.predict(images, verbose=0), x.numpy(), rtol=1e-5, atol=1e-6)
    # training: the augmentation and the dropout draw anew at each call
    assert not np.allclose(model(images, training=True).numpy(),
                           model(images, training=True).numpy())
    seen = []
    flip = data_augmentation.layers[0]
    original = type(flip)._augment

    def recording(self, x):
        seen.append(x.shape)
        return original(self, x)

    type(flip)._augment = recording
    try:
        history = model.fit(images, labels, epochs=1, batch_size=2, verbose=0)
    finally:
        type(flip)._augment = original
    assert seen == [(2, 180, 180, 3)] * 2              # active inside fit, one call per batch
    assert np.isfinite(history.history["loss"][0])


# -- 9.3 Residual connections, batch normalization, separable convolutions --------------------


def test_9_3_residual_connections():
    inputs = keras.Input(shape=(32, 32, 3))
    x = layers.Conv2D(32, 3, activation="relu")(inputs)
    residual = x
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    residual = layers.Conv2D(64, 1)(residual)
    x = layers.add([x, residual])
    assert x.shape == (None, 30, 30, 64)

    inputs = keras.Input(shape=(32, 32, 3))
    x = layers.Conv2D(32, 3, activation="relu")(inputs)
    residual = x
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    x = layers.MaxPooling2D(2, padding="same")(x)
    residual = layers.Conv2D(64, 1, strides=2)(residual)
    x = layers.add([x, residual])
    assert x.shape == (None, 15, 15, 64)

    inputs = keras.Input(shape=(32, 32, 3))
    x = layers.Rescaling(1./255)(inputs)

    def residual_block(x, filters, pooling=False):
        residual = x
        x = layers.Conv2D(filters, 3, activation="relu", padding="same")(x)
        x = layers.Conv2D(filters, 3, activation="relu", padding="same")(x)
        if pooling:
            x = layers.MaxPooling2D(2, padding="same")(x)
            residual = layers.Conv2D(filters, 1, strides=2)(residual)
        elif filters != residual.shape[-1]:
            residual = layers.Conv2D(filters, 1)(residual)
        x = layers.add([x, residual])
        return x

    x = residual_block(x, filters=32, pooling=True)
    x = residual_block(x, filters=64, pooling=True)
    x = residual_block(x, filters=128, pooling=False)

    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    lines = []
    model.summary(print_fn=lines.append)
    total = (conv_params(3, 3, 32) + conv_params(3, 32, 32) + conv_params(1, 3, 32)
             + conv_params(3, 32, 64) + conv_params(3, 64, 64) + conv_params(1, 32, 64)
             + conv_params(3, 64, 128) + conv_params(3, 128, 128) + conv_params(1, 64, 128)
             + 128 + 1)
    assert f"Total params: {total:,}" in "\n".join(lines)
    assert model.layers[-3].output.shape == (None, 8, 8, 128)
    with float64_weights():                     # the same layers again, float64 weights
        tf.random.set_seed(2)
        inputs = keras.Input(shape=(32, 32, 3))
        x = layers.Rescaling(1./255)(inputs)
        x = residual_block(x, filters=4, pooling=True)
        x = residual_block(x, filters=6, pooling=False)
        outputs = layers.Dense(1, activation="sigmoid")(layers.GlobalAveragePooling2D()(x))
        small = keras.Model(inputs=inputs, outputs=outputs)
        X = RNG.uniform(0, 255, (2, 32, 32, 3))
        loss = keras.losses.BinaryCrossentropy()
        check_training_step(small, X, lambda p: loss(np.array([[0.0], [1.0]]), p), lr=0.1)


def depthwise_reference(x, w, stride, pad_same):
    n, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    if pad_same:
        ho, wo = -(-h // stride), -(-wd // stride)
        ph = max((ho - 1) * stride + kh - h, 0)
        pw = max((wo - 1) * stride + kw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        ho, wo = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, ho, wo, c * m))
    for i in range(ho):
        for j in range(wo):
            for ch in range(c):
                for k in range(m):
                    window = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, ch]
                    out[:, i, j, ch * m + k] = np.sum(window * w[:, :, ch, k], axis=(1, 2))
    return out


@pytest.mark.parametrize("stride,padding", [(1, "VALID"), (2, "SAME"), (1, "SAME")])
def test_depthwise_conv2d_matches_a_numpy_loop(stride, padding):
    x = RNG.normal(size=(2, 5, 6, 3))
    w = RNG.normal(size=(3, 2, 3, 2))
    y = tf.nn.depthwise_conv2d(x, w, [1, stride, stride, 1], padding)
    assert np.allclose(y.numpy(), depthwise_reference(x, w, stride, padding == "SAME"))
    with pytest.raises(ValueError, match="channels"):
        tf.nn.depthwise_conv2d(x, w[:, :, :2], 1, "VALID")


def test_separable_conv2d_is_a_conv2d_with_the_product_kernel():
    layer = layers.SeparableConv2D(4, 3, padding="same", depth_multiplier=2)
    x = RNG.normal(size=(2, 6, 5, 3)).astype("float32")
    y = layer(x)
    assert [v.name for v in layer.trainable_variables] == ["depthwise_kernel",
                                                           "pointwise_kernel", "bias"]
    assert layer.count_params() == 3 * 3 * 3 * 2 + 6 * 4 + 4
    layer.bias.assign(RNG.normal(size=4))
    d, p = layer.depthwise_kernel.numpy(), layer.pointwise_kernel.numpy()[0, 0]
    full = np.einsum("ijcm,cmo->ijco", d, p.reshape(3, 2, 4))
    expected = tf.nn.conv2d(x, full, 1, "SAME") + layer.bias
    assert np.allclose(layer(x).numpy(), expected.numpy(), atol=1e-5)
    assert y.shape == (2, 6, 5, 4)
    depthwise = layers.DepthwiseConv2D(3, strides=2, depth_multiplier=2)
    assert depthwise(x).shape == (2, 2, 2, 6)
    assert depthwise.count_params() == 3 * 3 * 3 * 2 + 6
    regularized = layers.SeparableConv2D(2, 1, depthwise_regularizer=keras.regularizers.l2(1.0),
                                         use_bias=False)
    regularized(x)
    assert math.isclose(float(sum(regularized.losses)),
                        float(np.sum(regularized.depthwise_kernel.numpy() ** 2)), rel_tol=1e-5)


def mini_xception(size=180, blocks=(32, 64, 128, 256, 512)):
    """Chollet's listing 9.x; ``size`` and ``blocks`` smaller for the float64 check."""
    data_augmentation = keras.Sequential(
        [
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(0.1),
            layers.RandomZoom(0.2),
        ]
    )
    inputs = keras.Input(shape=(size, size, 3))
    x = data_augmentation(inputs)

    x = layers.Rescaling(1./255)(x)
    x = layers.Conv2D(filters=32, kernel_size=5, use_bias=False)(x)

    for size in blocks:
        residual = x

        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same", use_bias=False)(x)

        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same", use_bias=False)(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        residual = layers.Conv2D(
            size, 1, strides=2, padding="same", use_bias=False)(residual)
        x = layers.add([x, residual])

    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def test_9_3_mini_xception():
    tf.random.set_seed(4)
    model = mini_xception()
    trainable = conv_params(5, 3, 32, bias=False)
    non_trainable = 0
    c = 32
    for size in (32, 64, 128, 256, 512):
        trainable += 2 * c + separable_params(3, c, size, bias=False)      # BN, sepconv
        trainable += 2 * size + separable_params(3, size, size, bias=False)
        trainable += conv_params(1, c, size, bias=False)
        non_trainable += 2 * c + 2 * size                                   # moving stats
        c = size
    trainable += 512 + 1
    assert model.count_params() == trainable + non_trainable
    assert len(model.trainable_weights) == 1 + 5 * 9 + 2   # BN: gamma and beta
    assert model.layers[-3].output.shape == (None, 512)
    model.compile(loss="binary_crossentropy",
                  optimizer="rmsprop",
                  metrics=["accuracy"])
    images = RNG.uniform(0, 255, (2, 180, 180, 3)).astype("float32")
    history = model.fit(images, np.array([0, 1]), epochs=1, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_9_3_mini_xception_training_step_gradient_matches_finite_differences():
    with float64_weights():
        tf.random.set_seed(5)
        model = mini_xception(size=16, blocks=(4, 8))
        X = RNG.uniform(0, 255, (3, 16, 16, 3))
        y = np.array([[0.0], [1.0], [1.0]])
        loss = keras.losses.BinaryCrossentropy()
        # training=False: no new augmentation or dropout draw between the two evaluations
        check_training_step(model, X, lambda p: loss(y, p), lr=0.05, training=False)


# -- 9.4 Interpreting what convnets learn -------------------------------------------------------


def small_trained_like_model():
    """The chapter 8 convnet with augmentation, at 48x48 pixels, random weights."""
    inputs = keras.Input(shape=(48, 48, 3))
    x = layers.RandomFlip("horizontal")(inputs)
    x = layers.Rescaling(1./255)(x)
    x = layers.Conv2D(filters=8, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=16, kernel_size=3, activation="relu")(x)
    x = layers.MaxPooling2D(pool_size=2)(x)
    x = layers.Conv2D(filters=16, kernel_size=3, activation="relu")(x)
    x = layers.Flatten()(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def test_9_4_visualizing_intermediate_activations():
    tf.random.set_seed(6)
    model = small_trained_like_model()
    img_tensor = RNG.uniform(0, 255, (1, 48, 48, 3)).astype("float32")

    layer_outputs = []
    layer_names = []
    for layer in model.layers:
        if isinstance(layer, (layers.Conv2D, layers.MaxPooling2D)):
            layer_outputs.append(layer.output)
            layer_names.append(layer.name)
    activation_model = keras.Model(inputs=model.input, outputs=layer_outputs)
    activations = activation_model.predict(img_tensor, verbose=0)
    first_layer_activation = activations[0]
    assert first_layer_activation.shape == (1, 46, 46, 8)
    assert [a.shape for a in activations] == [(1, 46, 46, 8), (1, 23, 23, 8), (1, 21, 21, 16),
                                              (1, 10, 10, 16), (1, 8, 8, 16)]
    conv = model.layers[3]
    by_hand = np.maximum(tf.nn.conv2d(img_tensor / 255, conv.kernel, 1, "VALID").numpy()
                         + conv.bias.numpy(), 0)
    assert np.allclose(first_layer_activation, by_hand, atol=1e-5)
    assert len(layer_names) == 5 and layer_names[0] == conv.name


def test_9_4_filter_visualization_by_gradient_ascent():
    with float64_weights():
        tf.random.set_seed(7)
        model = small_trained_like_model()
    layer = model.get_layer(name=model.layers[5].name)
    feature_extractor = keras.Model(inputs=model.input, outputs=layer.output)

    def compute_loss(image, filter_index):
        activation = feature_extractor(image)
        filter_activation = activation[:, 2:-2, 2:-2, filter_index]
        return tf.reduce_mean(filter_activation)

    @tf.function
    def gradient_ascent_step(image, filter_index, learning_rate):
        with tf.GradientTape() as tape:
            tape.watch(image)
            loss = compute_loss(image, filter_index)
        grads = tape.gradient(loss, image)
        grads = tf.math.l2_normalize(grads)
        image += learning_rate * grads
        return image

    img_width = 48
    img_height = 48
    image = tf.random.uniform(minval=0.4, maxval=0.6, shape=(1, img_width, img_height, 3),
                              dtype="float64") * 255
    # random weights: take a filter that is alive on the starting image
    filter_index = int(np.argmax(np.mean(feature_extractor(image).numpy(), axis=(0, 1, 2))))
    directional_check(lambda x: compute_loss(x, filter_index), image)
    before = float(compute_loss(image, filter_index))
    assert before > 0
    for i in range(10):
        image = gradient_ascent_step(image, filter_index, 10.)
    assert float(compute_loss(image, filter_index)) > before


def test_9_4_grad_cam():
    with float64_weights():
        grad_cam()


def grad_cam():
    tf.random.set_seed(8)
    model = small_trained_like_model()
    img_array = RNG.uniform(0, 255, (1, 48, 48, 3))
    last_conv_layer = model.layers[7]
    classifier_layer_names = [layer.name for layer in model.layers[8:]]
    last_conv_layer_model = keras.Model(model.inputs, last_conv_layer.output)

    classifier_input = keras.Input(shape=last_conv_layer.output.shape[1:])
    x = classifier_input
    for layer_name in classifier_layer_names:
        x = model.get_layer(layer_name)(x)
    classifier_model = keras.Model(classifier_input, x)

    with tf.GradientTape() as tape:
        last_conv_layer_output = last_conv_layer_model(img_array)
        tape.watch(last_conv_layer_output)
        preds = classifier_model(last_conv_layer_output)
        top_pred_index = tf.argmax(preds[0])
        top_class_channel = preds[:, top_pred_index]

    grads = tape.gradient(top_class_channel, last_conv_layer_output)
    assert np.allclose(preds.numpy(), model.predict(img_array, verbose=0))
    directional_check(lambda a: tf.reduce_sum(classifier_model(a)[:, 0]),
                      last_conv_layer_output)
    pooled_grads = tf.reduce_mean(grads, axis=(0, 1, 2)).numpy()
    # The book writes into last_conv_layer_output.numpy()[0]; minitape's Tensor.numpy() is a
    # read-only view by design (tests/test_ownership.py): see test_9_4_grad_cam_writes_...
    last_conv_layer_output = last_conv_layer_output.numpy()[0].copy()
    for i in range(pooled_grads.shape[-1]):
        last_conv_layer_output[:, :, i] *= pooled_grads[i]
    heatmap = np.mean(last_conv_layer_output, axis=-1)
    assert heatmap.shape == (8, 8)
    # the Dense layer is linear in the flattened features: its gradient is its kernel times
    # the sigmoid's derivative
    p = float(preds[0, 0])
    dense = model.layers[-1]
    expected = (p * (1 - p) * dense.kernel.numpy()[:, 0]).reshape(8, 8, 16)
    assert np.allclose(grads.numpy()[0], expected)


@pytest.mark.xfail(strict=True, raises=ValueError,
                   reason="Tensor.numpy() is a read-only view in minitape (a design rule, "
                          "tests/test_ownership.py); TensorFlow's is writable, and the book's "
                          "Grad-CAM multiplies into it in place")
def test_9_4_grad_cam_writes_into_numpy_in_place_as_printed():
    last_conv_layer_output = tf.ones([1, 2, 2, 3])
    pooled_grads = np.array([1.0, 2.0, 3.0])
    last_conv_layer_output = last_conv_layer_output.numpy()[0]
    for i in range(pooled_grads.shape[-1]):
        last_conv_layer_output[:, :, i] *= pooled_grads[i]


def test_a_watched_tensor_of_another_dtype_keeps_its_gradient_through_a_model():
    # (fix) Functional models converted a float64 input for a float32 Input with a constant,
    # cutting the tape: Grad-CAM's gradient was None. Now a Cast op, as Keras autocasts.
    inputs = keras.Input(shape=(2, 2, 1))
    outputs = layers.Dense(1)(layers.Flatten()(inputs))
    model = keras.Model(inputs, outputs)
    x = tf.constant(RNG.normal(size=(1, 2, 2, 1)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(model(x))
    g = tape.gradient(y, x)
    assert g.dtype == np.float64
    assert np.allclose(g.numpy().reshape(-1), model.layers[-1].kernel.numpy()[:, 0])
    assert model.input is inputs and model.output is outputs


# -- 12.2 DeepDream and 12.3 neural style transfer, small random convnets ---------------------


def small_inception_like():
    """Stands in for InceptionV3: four named stages ("mixed4" ... "mixed7"), random weights."""
    inputs = keras.Input(shape=(None, None, 3))
    x = layers.Conv2D(6, 3, padding="same", activation="relu", name="mixed4")(inputs)
    x = layers.Conv2D(6, 3, padding="same", activation="relu", name="mixed5")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(8, 3, padding="same", activation="relu", name="mixed6")(x)
    x = layers.Conv2D(8, 3, padding="same", activation="relu", name="mixed7")(x)
    return keras.Model(inputs, x)


def float64_copy(make_model, model):
    """The same network with float64 weights (the book's losses start from ``tf.zeros``, a
    float32 scalar, so they run in float32 as printed; the finite differences need float64)."""
    with float64_weights():
        copy = make_model()
    copy.set_weights([np.asarray(w, np.float64) for w in model.get_weights()])
    return copy


def check_image_gradient(grad, loss64, x, seed=0, eps=1e-6, rtol=2e-3):
    """The book's float32 gradient ``grad`` at ``x`` along a random unit direction, against
    the central difference of ``loss64`` (the same loss on the float64 copy)."""
    x = np.asarray(x, np.float64)
    d = np.random.default_rng(seed).standard_normal(x.shape)
    d /= np.linalg.norm(d)
    numeric = (float(loss64(tf.constant(x + eps * d)))
               - float(loss64(tf.constant(x - eps * d)))) / (2 * eps)
    analytic = float(np.sum(np.asarray(grad, np.float64) * d))
    assert math.isclose(analytic, numeric, rel_tol=rtol), (analytic, numeric)


def test_12_2_deep_dream():
    tf.random.set_seed(9)
    model = small_inception_like()
    layer_settings = {
        "mixed4": 1.0,
        "mixed5": 1.5,
        "mixed6": 2.0,
        "mixed7": 2.5,
    }
    outputs_dict = dict(
        [
            (layer.name, layer.output)
            for layer in [model.get_layer(name) for name in layer_settings.keys()]
        ]
    )
    feature_extractor = keras.Model(inputs=model.inputs, outputs=outputs_dict)

    def compute_loss(input_image):
        features = feature_extractor(input_image)
        loss = tf.zeros(shape=())
        for name in features.keys():
            coeff = layer_settings[name]
            activation = features[name]
            loss += coeff * tf.reduce_mean(tf.square(activation[:, 2:-2, 2:-2, :]))
        return loss

    @tf.function
    def gradient_ascent_step(image, learning_rate):
        with tf.GradientTape() as tape:
            tape.watch(image)
            loss = compute_loss(image)
        grads = tape.gradient(loss, image)
        grads = tf.math.l2_normalize(grads)
        image += learning_rate * grads
        return loss, image

    printed = []

    def gradient_ascent_loop(image, iterations, learning_rate, max_loss=None):
        for i in range(iterations):
            loss, image = gradient_ascent_step(image, learning_rate)
            if max_loss is not None and loss > max_loss:
                break
            printed.append(f"... Loss value at step {i}: {loss:.2f}")
        return image

    step = 2.
    num_octave = 3
    octave_scale = 1.4
    iterations = 4
    max_loss = 15.

    original_img = RNG.uniform(-1, 1, (1, 24, 28, 3)).astype("float32")   # [-1, 1] pixels
    original_shape = original_img.shape[1:3]
    image = tf.constant(original_img)
    with tf.GradientTape() as tape:
        tape.watch(image)
        loss = compute_loss(image)
    extractor64 = keras.Model(inputs=(model64 := float64_copy(small_inception_like,
                                                              model)).inputs,
                              outputs={name: model64.get_layer(name).output
                                       for name in layer_settings})

    def loss64(x):
        features = extractor64(x)
        return sum(coeff * tf.reduce_mean(tf.square(features[name][:, 2:-2, 2:-2, :]))
                   for name, coeff in layer_settings.items())

    assert math.isclose(float(loss), float(loss64(tf.constant(original_img, tf.float64))),
                        rel_tol=1e-5)
    check_image_gradient(tape.gradient(loss, image), loss64, original_img)

    successive_shapes = [original_shape]
    for i in range(1, num_octave):
        shape = tuple([int(dim / (octave_scale ** i)) for dim in original_shape])
        successive_shapes.append(shape)
    successive_shapes = successive_shapes[::-1]
    assert successive_shapes == [(12, 14), (17, 20), (24, 28)]

    shrunk_original_img = tf.image.resize(original_img, successive_shapes[0])

    img = tf.identity(original_img)
    losses = []
    for i, shape in enumerate(successive_shapes):
        img = tf.image.resize(img, shape)
        before = float(compute_loss(img))
        img = gradient_ascent_loop(
            img, iterations=iterations, learning_rate=step, max_loss=max_loss
        )
        losses.append((before, float(compute_loss(img))))
        upscaled_shrunk_original_img = tf.image.resize(shrunk_original_img, shape)
        same_size_original = tf.image.resize(original_img, shape)
        lost_detail = same_size_original - upscaled_shrunk_original_img
        img += lost_detail
        shrunk_original_img = tf.image.resize(original_img, shape)
    assert img.shape == (1, 24, 28, 3)
    assert all(after > before for before, after in losses)
    assert len(printed) == num_octave * iterations
    assert printed[0].startswith("... Loss value at step 0: ")


def small_vgg_like():
    """Stands in for VGG19: blocks of two named convolutions and a pooling, random weights."""
    inputs = keras.Input(shape=(None, None, 3))
    x = inputs
    for block in range(1, 4):
        x = layers.Conv2D(4 * block, 3, padding="same", activation="relu",
                          name=f"block{block}_conv1")(x)
        x = layers.Conv2D(4 * block, 3, padding="same", activation="relu",
                          name=f"block{block}_conv2")(x)
        x = layers.MaxPooling2D(2, name=f"block{block}_pool")(x)
    return keras.Model(inputs, x)


def test_12_3_neural_style_transfer():
    tf.random.set_seed(10)
    img_height, img_width = 12, 10
    model = small_vgg_like()

    outputs_dict = dict([(layer.name, layer.output) for layer in model.layers])
    feature_extractor = keras.Model(inputs=model.inputs, outputs=outputs_dict)

    def content_loss(base_img, combination_img):
        return tf.reduce_sum(tf.square(combination_img - base_img))

    def gram_matrix(x):
        x = tf.transpose(x, (2, 0, 1))
        features = tf.reshape(x, (tf.shape(x)[0], -1))
        gram = tf.matmul(features, tf.transpose(features))
        return gram

    def style_loss(style_img, combination_img):
        S = gram_matrix(style_img)
        C = gram_matrix(combination_img)
        channels = 3
        size = img_height * img_width
        return tf.reduce_sum(tf.square(S - C)) / (4.0 * (channels ** 2) * (size ** 2))

    def total_variation_loss(x):
        a = tf.square(
            x[:, : img_height - 1, : img_width - 1, :] - x[:, 1:, : img_width - 1, :]
        )
        b = tf.square(
            x[:, : img_height - 1, : img_width - 1, :] - x[:, : img_height - 1, 1:, :]
        )
        return tf.reduce_sum(tf.pow(a + b, 1.25))

    style_layer_names = [
        "block1_conv1",
        "block2_conv1",
        "block3_conv1",
    ]
    content_layer_name = "block3_conv2"
    total_variation_weight = 1e-6
    style_weight = 1e-6
    content_weight = 2.5e-8

    def compute_loss(combination_image, base_image, style_reference_image):
        input_tensor = tf.concat(
            [base_image, style_reference_image, combination_image], axis=0
        )
        features = feature_extractor(input_tensor)
        loss = tf.zeros(shape=())
        layer_features = features[content_layer_name]
        base_image_features = layer_features[0, :, :, :]
        combination_features = layer_features[2, :, :, :]
        loss = loss + content_weight * content_loss(
            base_image_features, combination_features
        )
        for layer_name in style_layer_names:
            layer_features = features[layer_name]
            style_reference_features = layer_features[1, :, :, :]
            combination_features = layer_features[2, :, :, :]
            style_loss_value = style_loss(
              style_reference_features, combination_features)
            loss += (style_weight / len(style_layer_names)) * style_loss_value

        loss += total_variation_weight * total_variation_loss(combination_image)
        return loss

    @tf.function
    def compute_loss_and_grads(combination_image, base_image, style_reference_image):
        with tf.GradientTape() as tape:
            loss = compute_loss(combination_image, base_image, style_reference_image)
        grads = tape.gradient(loss, combination_image)
        return loss, grads

    # the three losses against NumPy on small arrays
    u, v = RNG.normal(size=(5, 4, 3)), RNG.normal(size=(5, 4, 3))
    assert math.isclose(float(content_loss(u, v)), np.sum((u - v) ** 2))
    flat = u.reshape(-1, 3)
    assert np.allclose(gram_matrix(tf.constant(u)).numpy(), flat.T @ flat)
    image = RNG.normal(size=(1, img_height, img_width, 3))
    dv = image[:, :-1, :-1] - image[:, 1:, :-1]
    dh = image[:, :-1, :-1] - image[:, :-1, 1:]
    assert math.isclose(float(total_variation_loss(image)), np.sum((dv ** 2 + dh ** 2) ** 1.25))

    optimizer = keras.optimizers.SGD(
        keras.optimizers.schedules.ExponentialDecay(
            initial_learning_rate=100.0, decay_steps=100, decay_rate=0.96
        )
    )

    base_image = RNG.uniform(-100, 100, (1, img_height, img_width, 3)).astype("float32")
    style_reference_image = RNG.uniform(-100, 100, (1, img_height, img_width, 3)).astype(
        "float32")
    combination_image = tf.Variable(base_image + RNG.normal(0, 5, base_image.shape).astype(
        "float32"))

    # the gradient with respect to the image, against float64 central differences of the
    # same loss on a float64 copy of the network (with the book's helpers)
    extractor64 = keras.Model(inputs=(model64 := float64_copy(small_vgg_like, model)).inputs,
                              outputs={layer.name: layer.output for layer in model64.layers})

    def loss64(c):
        features = extractor64(tf.concat([base_image.astype("float64"),
                                          style_reference_image.astype("float64"), c], 0))
        loss = content_weight * content_loss(features[content_layer_name][0],
                                             features[content_layer_name][2])
        for layer_name in style_layer_names:
            loss += (style_weight / len(style_layer_names)) * style_loss(
                features[layer_name][1], features[layer_name][2])
        return loss + total_variation_weight * total_variation_loss(c)

    loss, grads = compute_loss_and_grads(combination_image, base_image, style_reference_image)
    assert math.isclose(float(loss), float(loss64(tf.constant(combination_image.numpy(),
                                                              tf.float64))), rel_tol=1e-4)
    check_image_gradient(grads, loss64, combination_image.numpy(), eps=1e-3)
    first = None
    for i in range(1, 6):
        loss, grads = compute_loss_and_grads(
            combination_image, base_image, style_reference_image
        )
        first = float(loss) if first is None else first
        optimizer.apply_gradients([(grads, combination_image)])
    assert float(compute_loss(combination_image, base_image, style_reference_image)) < first


# -- 8.2 image files: image_dataset_from_directory, load_img, img_to_array, save_img ----------


def test_8_2_image_dataset_from_directory(tmp_path, capsys):
    import os
    import pathlib
    from PIL import Image

    new_base_dir = pathlib.Path(tmp_path) / "cats_vs_dogs_small"
    pixels = {}
    for subset_name, count in (("train", 5), ("validation", 2)):
        for category, colour in (("cat", 0), ("dog", 2)):
            dir = new_base_dir / subset_name / category
            os.makedirs(dir)
            for i in range(count):
                array = RNG.integers(0, 256, (20, 30, 3)).astype("uint8")
                array[..., colour] = 255             # cats red, dogs blue
                Image.fromarray(array).save(dir / f"{category}.{i}.png")
                pixels[f"{category}.{i}.png", subset_name] = array
    from minitape.keras.utils import image_dataset_from_directory

    train_dataset = image_dataset_from_directory(
        new_base_dir / "train",
        image_size=(18, 18),
        batch_size=4)
    assert capsys.readouterr().out == "Found 10 files belonging to 2 classes.\n"
    assert train_dataset.class_names == ["cat", "dog"]
    for data_batch, labels_batch in train_dataset:
        print("data batch shape:", data_batch.shape)
        print("labels batch shape:", labels_batch.shape)
        break
    assert capsys.readouterr().out == ("data batch shape: (4, 18, 18, 3)\n"
                                       "labels batch shape: (4,)\n")
    seen = []
    for images, labels in train_dataset:
        assert images.dtype == np.float32 and labels.dtype == np.int32
        for image, label in zip(images.numpy(), labels.numpy()):
            red, blue = image[..., 0].min(), image[..., 2].min()
            seen.append(int(label))
            assert (red, blue)[label] == 255.0         # the class is the subdirectory's
    assert sorted(seen) == [0] * 5 + [1] * 5
    # the same size: the pixels as saved; another size: mt.image.resize's bilinear values
    same = image_dataset_from_directory(new_base_dir / "validation", image_size=(20, 30),
                                        shuffle=False, batch_size=8, verbose=False)
    images, labels = next(iter(same))
    assert labels.numpy().tolist() == [0, 0, 1, 1]
    assert np.array_equal(images.numpy()[2], pixels["dog.0.png", "validation"])
    binary = image_dataset_from_directory(new_base_dir / "validation", image_size=(10, 15),
                                          shuffle=False, label_mode="binary", verbose=False)
    images, labels = next(iter(binary))
    assert labels.shape == (4, 1) and labels.dtype == np.float32
    expected = tf.image.resize(pixels["cat.1.png", "validation"], (10, 15)).numpy()
    assert np.allclose(images.numpy()[1], expected)
    # fit and evaluate on the datasets, as the book does
    inputs = keras.Input(shape=(18, 18, 3))
    x = layers.Rescaling(1./255)(inputs)
    x = layers.Conv2D(filters=4, kernel_size=3, activation="relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(loss="binary_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    validation_dataset = image_dataset_from_directory(new_base_dir / "validation",
                                                      image_size=(18, 18), batch_size=4)
    history = model.fit(train_dataset, epochs=2, validation_data=validation_dataset,
                        verbose=0)
    assert len(history.history["val_loss"]) == 2
    test_loss, test_acc = model.evaluate(validation_dataset, verbose=0)
    batches = [(x.numpy(), y.numpy()) for x, y in validation_dataset]   # one pass: reshuffled
    images = np.concatenate([x for x, _ in batches])
    labels = np.concatenate([y for _, y in batches])
    p = model.predict(images, verbose=0)[:, 0]
    expected = -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    assert math.isclose(test_loss, expected, rel_tol=1e-4)
    # load_img / img_to_array / save_img as chapter 9 uses them
    img = keras.utils.load_img(new_base_dir / "train" / "cat" / "cat.0.png", target_size=(10, 15))
    array = keras.utils.img_to_array(img)
    assert array.shape == (10, 15, 3) and array.dtype == np.float32
    # Pillow's nearest: pixel centers, input (i + 0.5) * 2 -> 2i + 1
    assert np.array_equal(array, pixels["cat.0.png", "train"][1::2, 1::2])
    keras.utils.save_img(tmp_path / "out.png", array, scale=False)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "out.png")), array.astype("uint8"))
    scaled = keras.utils.img_to_array(keras.utils.array_to_img(np.array([[[0.0], [0.5]]])))
    assert scaled[..., 0].tolist() == [[0.0, 255.0]]


def test_a_separable_convolution_on_the_tape_drawing_and_check():
    from minitape.viz.graph import argument_role
    layer = layers.SeparableConv2D(4, 3, padding="same", use_bias=False)
    x = tf.constant(RNG.normal(size=(1, 5, 5, 2)).astype("float32"))
    layer(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.nn.relu(layer(x)))
    sources = [x, layer.depthwise_kernel, layer.pointwise_kernel]
    report = tf.viz.check_tape(tape, y, sources)
    assert "every gradient agrees" in str(report) and "DepthwiseConv2dNative" in str(report)
    source = tf.viz.draw_tape(tape, y, sources).source
    assert "DepthwiseConv2dNative" in source and "filter" in source
    assert argument_role("DepthwiseConv2dNative", 1, 2) == "filter"


def test_8_2_checkpoint_and_load_model_keep_the_new_layers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data_augmentation = keras.Sequential(
        [
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(0.1, fill_mode="constant"),
            layers.RandomZoom(0.2, width_factor=(-0.1, 0.3)),
        ]
    )
    inputs = keras.Input(shape=(16, 16, 3))
    x = data_augmentation(inputs)
    x = layers.Rescaling(1./255)(x)
    x = layers.SeparableConv2D(4, 3, padding="same", use_bias=False, depth_multiplier=2)(x)
    x = layers.DepthwiseConv2D(3, strides=2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.compile(loss="binary_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    X = RNG.uniform(0, 255, (8, 16, 16, 3)).astype("float32")
    y = np.array([0, 1] * 4)
    callbacks = [
        keras.callbacks.ModelCheckpoint(
            filepath="convnet_from_scratch_with_augmentation.keras",
            save_best_only=True,
            monitor="val_loss")
    ]
    model.fit(X, y, epochs=1, validation_data=(X, y), callbacks=callbacks, verbose=0)
    test_model = keras.models.load_model(
        "convnet_from_scratch_with_augmentation.keras")
    flip, rotation, zoom = test_model.layers[1].layers
    assert (flip.mode, rotation.factor, rotation.fill_mode) == ("horizontal", 0.1, "constant")
    assert (zoom.height_factor, tuple(zoom.width_factor)) == (0.2, (-0.1, 0.3))
    separable, depthwise = test_model.layers[3:5]
    assert (separable.filters, separable.depth_multiplier, separable.use_bias) == (4, 2, False)
    assert depthwise.strides == (2, 2)
    test_loss, test_acc = test_model.evaluate(X, y, verbose=0)
    assert math.isclose(test_loss, model.evaluate(X, y, verbose=0)[0], rel_tol=1e-5)


# -- 9.2 Image segmentation ---------------------------------------------------------------------


def get_model(img_size, num_classes):
    inputs = keras.Input(shape=img_size + (3,))
    x = layers.Rescaling(1./255)(inputs)

    x = layers.Conv2D(64, 3, strides=2, activation="relu", padding="same")(x)
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    x = layers.Conv2D(128, 3, strides=2, activation="relu", padding="same")(x)
    x = layers.Conv2D(128, 3, activation="relu", padding="same")(x)
    x = layers.Conv2D(256, 3, strides=2, padding="same", activation="relu")(x)
    x = layers.Conv2D(256, 3, activation="relu", padding="same")(x)

    x = layers.Conv2DTranspose(256, 3, activation="relu", padding="same")(x)
    x = layers.Conv2DTranspose(256, 3, activation="relu", padding="same", strides=2)(x)
    x = layers.Conv2DTranspose(128, 3, activation="relu", padding="same")(x)
    x = layers.Conv2DTranspose(128, 3, activation="relu", padding="same", strides=2)(x)
    x = layers.Conv2DTranspose(64, 3, activation="relu", padding="same")(x)
    x = layers.Conv2DTranspose(64, 3, activation="relu", padding="same", strides=2)(x)

    outputs = layers.Conv2D(num_classes, 3, activation="softmax", padding="same")(x)

    model = keras.Model(inputs, outputs)
    return model


def test_9_2_image_segmentation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tf.random.set_seed(11)
    img_size = (16, 16)
    model = get_model(img_size=img_size, num_classes=3)
    channels = [3, 64, 64, 128, 128, 256, 256, 256, 256, 128, 128, 64, 64, 3]
    total = sum(conv_params(3, a, b) for a, b in zip(channels, channels[1:]))
    assert model.count_params() == total == 2_880_643       # the book's summary
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy")
    input_imgs = RNG.uniform(0, 255, (4,) + img_size + (3,)).astype("float32")
    targets = RNG.integers(0, 3, (4,) + img_size + (1,)).astype("uint8")
    callbacks = [
        keras.callbacks.ModelCheckpoint("oxford_segmentation.keras",
                                        save_best_only=True)
    ]
    history = model.fit(input_imgs, targets, epochs=1, callbacks=callbacks, batch_size=2,
                        validation_data=(input_imgs, targets), verbose=0)
    model = keras.models.load_model("oxford_segmentation.keras")
    probs = model.predict(input_imgs, verbose=0)
    # the per-pixel cross-entropy, averaged over images and pixels
    expected = -np.mean(np.log(np.take_along_axis(probs, targets.astype(int), axis=-1)))
    assert math.isclose(history.history["val_loss"][0], expected, rel_tol=1e-4)
    i = 2
    test_image = input_imgs[i]
    mask = model.predict(np.expand_dims(test_image, 0), verbose=0)[0]
    assert mask.shape == (16, 16, 3) and np.allclose(mask.sum(-1), 1, atol=1e-5)
    assert keras.utils.array_to_img(test_image).size == (16, 16)
