# ruff: noqa: E731, E741  (the books' code as printed: lambdas, l)
"""The convolutional chapters of the textbooks with ``import minitape as tf``: "Dive into Deep
Learning" (d2l.ai) chapter 7 (convolutions from scratch, padding and stride, channels,
pooling, LeNet) and chapter 8 (AlexNet, VGG, NiN, GoogLeNet, batch normalization, ResNet,
DenseNet), and Géron's "Hands-on Machine Learning" (3rd edition) chapter 14.

One test per section, the code of its TensorFlow tab (or notebook cell) as printed, with small
inputs where the book uses 224x224 images: each network is built, run forward, and trained one
step. Numbers are checked against what the book prints (``corr2d``'s output, the learned edge
kernel near ``[1, -1]``, the pooling examples), against NumPy loops (pooling layers, padding,
upsampling) and, for each network's training step, against central finite differences of its
loss in float64 along a random direction. ``tests/d2l_minitape.py`` is d2l's library.
"""

from __future__ import annotations

import contextlib
import io
import math
from functools import partial

import numpy as np
import pytest

import d2l_minitape as d2l
import minitape as tf
from test_textbook_d2l import _no_rendering, fashion, write_fashion_mnist  # noqa: F401


# -- helpers ---------------------------------------------------------------------------------

@contextlib.contextmanager
def float64_weights():
    """Layers make float64 weights inside (``tf.keras.backend.set_floatx``), for finite
    differences that mean something."""
    before = tf.keras.backend.floatx()
    tf.keras.backend.set_floatx("float64")
    try:
        yield
    finally:
        tf.keras.backend.set_floatx(before)


def check_training_step(model, X, loss_fn, lr=0.1, seed=0, rtol=1e-5, training=True):
    """One SGD step of ``model`` on ``X`` (float64): the tape's gradient must agree with the
    central difference of ``loss_fn`` along a random direction of all the trainable weights,
    and the step must lower the loss. ``training=False`` for the networks with dropout (a new
    mask at each call would make the differences meaningless)."""
    X = tf.constant(np.asarray(X, np.float64))
    loss_fn(model(X, training=training))  # builds the lazily built layers
    variables = model.trainable_variables
    assert variables, "the model has no trainable weights"
    with tf.GradientTape() as tape:
        loss = loss_fn(model(X, training=training))
    grads = tape.gradient(loss, variables)
    assert all(g is not None for g in grads)
    rng = np.random.default_rng(seed)
    direction = [rng.standard_normal(v.shape) for v in variables]
    # A unit direction and a small step: the pre-activations move by ~1e-9, too little to
    # cross a ReLU's kink or change a max-pooling winner.
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in direction))
    direction = [d / norm for d in direction]
    start = [v.numpy().copy() for v in variables]

    def loss_at(t):
        for v, w, d in zip(variables, start, direction):
            v.assign(w + t * d)
        return float(loss_fn(model(X, training=training)))

    eps = 1e-6
    numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
    analytic = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, direction))
    assert math.isclose(analytic, numeric, rel_tol=rtol, abs_tol=1e-7), (analytic, numeric)
    for v, w in zip(variables, start):
        v.assign(w)
    tf.keras.optimizers.SGD(lr).apply_gradients(zip(grads, variables))
    assert float(loss_fn(model(X, training=training))) < float(loss)
    return float(loss)


def cross_entropy(y):
    fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return lambda y_hat: fn(y, tf.reshape(y_hat, (y_hat.shape[0], -1)))


def summary_lines(model, X_shape):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model.layer_summary(X_shape)
    return out.getvalue().splitlines()


def pool_np(x, pool, strides, padding, mode):
    """Keras's pooling in NumPy, one window at a time (TensorFlow's "SAME": ``ceil(n / s)``
    outputs, the extra padding after; padding never counts, for max nor mean)."""
    n, h, w, c = x.shape
    out_size, before = [], []
    for size, k, s in ((h, pool[0], strides[0]), (w, pool[1], strides[1])):
        if padding == "valid":
            out_size.append((size - k) // s + 1)
            before.append(0)
        else:
            o = -(-size // s)
            out_size.append(o)
            before.append(max((o - 1) * s + k - size, 0) // 2)
    y = np.zeros((n, out_size[0], out_size[1], c))
    for i in range(out_size[0]):
        for j in range(out_size[1]):
            r0, c0 = i * strides[0] - before[0], j * strides[1] - before[1]
            win = x[:, max(r0, 0):r0 + pool[0], max(c0, 0):c0 + pool[1], :]
            y[:, i, j] = win.max(axis=(1, 2)) if mode == "max" else win.mean(axis=(1, 2))
    return y


# -- d2l 7.2 Convolutions for images -----------------------------------------------------------

def test_d2l_7_2_convolutions_for_images():
    corr2d = d2l.corr2d
    X = d2l.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    K = d2l.tensor([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(corr2d(X, K).numpy(), [[19.0, 25.0], [37.0, 43.0]])

    class Conv2D(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()

        def build(self, kernel_size):
            initializer = tf.random_normal_initializer()
            self.weight = self.add_weight(name='w', shape=kernel_size,
                                          initializer=initializer)
            self.bias = self.add_weight(name='b', shape=(1, ),
                                        initializer=initializer)

        def call(self, inputs):
            return corr2d(inputs, self.weight) + self.bias

    layer = Conv2D()
    layer.build((2, 2))
    expected = np.asarray(corr2d(X, layer.weight.numpy())) + layer.bias.numpy()
    np.testing.assert_allclose(layer.call(X).numpy(), expected, rtol=1e-6)

    X = tf.Variable(tf.ones((6, 8)))
    X[:, 2:6].assign(tf.zeros(X[:, 2:6].shape))
    K = d2l.tensor([[1.0, -1.0]])
    Y = corr2d(X, K)
    edge = [0.0, 1.0, 0.0, 0.0, 0.0, -1.0, 0.0]
    np.testing.assert_array_equal(Y.numpy(), [edge] * 6)
    np.testing.assert_array_equal(corr2d(d2l.transpose(X), K).numpy(), np.zeros((8, 5)))

    # Learning the kernel (the book's loop as printed; the test keeps the first kernel).
    tf.random.set_seed(0)
    conv2d = tf.keras.layers.Conv2D(1, (1, 2), use_bias=False)
    X = tf.reshape(X, (1, 6, 8, 1))
    Y = tf.reshape(Y, (1, 6, 7, 1))
    lr = 3e-2  # Learning rate

    Y_hat = conv2d(X)
    first_kernel = conv2d.get_weights()[0].astype(np.float64).reshape(2)  # (the test's line)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for i in range(10):
            with tf.GradientTape(watch_accessed_variables=False) as g:
                g.watch(conv2d.weights[0])
                Y_hat = conv2d(X)
                l = (abs(Y_hat - Y)) ** 2
                # Update the kernel
                update = tf.multiply(lr, g.gradient(l, conv2d.weights[0]))
                weights = conv2d.get_weights()
                weights[0] = conv2d.weights[0] - update
                conv2d.set_weights(weights)
                if (i + 1) % 2 == 0:
                    print(f'epoch {i + 1}, loss {tf.reduce_sum(l):.3f}')
    learned = d2l.reshape(conv2d.get_weights()[0], (1, 2)).numpy()

    # The same gradient descent in NumPy: l = sum (x_j w0 + x_{j+1} w1 - y)^2.
    x, y = np.asarray(X, np.float64)[0, :, :, 0], np.asarray(Y, np.float64)[0, :, :, 0]
    w, losses = first_kernel.copy(), []
    for i in range(10):
        r = x[:, :-1] * w[0] + x[:, 1:] * w[1] - y
        losses.append((r ** 2).sum())
        w -= lr * np.array([(2 * r * x[:, :-1]).sum(), (2 * r * x[:, 1:]).sum()])
    np.testing.assert_allclose(learned[0], w, rtol=1e-4, atol=1e-5)
    assert printed.getvalue().splitlines() == [
        f"epoch {i + 1}, loss {losses[i]:.3f}" for i in range(1, 10, 2)]
    np.testing.assert_allclose(learned[0], [1.0, -1.0], atol=0.15)   # the book's conclusion


# -- d2l 7.3 Padding and stride ----------------------------------------------------------------

def test_d2l_7_3_padding_and_stride():
    def comp_conv2d(conv2d, X):
        # (1, 1) indicates that batch size and the number of channels are both 1
        X = tf.reshape(X, (1, ) + X.shape + (1, ))
        Y = conv2d(X)
        # Strip the first two dimensions: examples and channels
        return tf.reshape(Y, Y.shape[1:3])
    conv2d = tf.keras.layers.Conv2D(1, kernel_size=3, padding='same')
    X = tf.random.uniform(shape=(8, 8))
    assert comp_conv2d(conv2d, X).shape == (8, 8)
    conv2d = tf.keras.layers.Conv2D(1, kernel_size=(5, 3), padding='same')
    assert comp_conv2d(conv2d, X).shape == (8, 8)
    conv2d = tf.keras.layers.Conv2D(1, kernel_size=3, padding='same', strides=2)
    assert comp_conv2d(conv2d, X).shape == (4, 4)
    conv2d = tf.keras.layers.Conv2D(1, kernel_size=(3,5), padding='valid',
                                    strides=(3, 4))
    # (TensorFlow's tab prints [2, 1]: "valid" drops the padding the other tabs add.)
    assert comp_conv2d(conv2d, X).shape == ((8 - 3) // 3 + 1, (8 - 5) // 4 + 1) == (2, 1)


# -- d2l 7.4 Multiple input and multiple output channels ---------------------------------------

def test_d2l_7_4_channels():
    def corr2d_multi_in(X, K):
        # Iterate through the 0th dimension (channel) of K first, then add them up
        return tf.reduce_sum([d2l.corr2d(x, k) for x, k in zip(X, K)], axis=0)

    X = d2l.tensor([[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]],
                   [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]])
    K = d2l.tensor([[[0.0, 1.0], [2.0, 3.0]], [[1.0, 2.0], [3.0, 4.0]]])
    np.testing.assert_array_equal(corr2d_multi_in(X, K).numpy(), [[56, 72], [104, 120]])

    def corr2d_multi_in_out(X, K):
        return d2l.stack([corr2d_multi_in(X, k) for k in K], 0)

    K = d2l.stack((K, K + 1, K + 2), 0)
    assert K.shape == (3, 2, 2, 2)
    np.testing.assert_array_equal(corr2d_multi_in_out(X, K).numpy(), [
        [[56, 72], [104, 120]], [[76, 100], [148, 172]], [[96, 128], [192, 224]]])

    def corr2d_multi_in_out_1x1(X, K):
        c_i, h, w = X.shape
        c_o = K.shape[0]
        X = d2l.reshape(X, (c_i, h * w))
        K = d2l.reshape(K, (c_o, c_i))
        # Matrix multiplication in the fully connected layer
        Y = d2l.matmul(K, X)
        return d2l.reshape(Y, (c_o, h, w))

    X = d2l.normal((3, 3, 3), 0, 1)
    K = d2l.normal((2, 3, 1, 1), 0, 1)
    Y1 = corr2d_multi_in_out_1x1(X, K)
    Y2 = corr2d_multi_in_out(X, K)
    assert float(d2l.reduce_sum(d2l.abs(Y1 - Y2))) < 1e-6


# -- d2l 7.5 Pooling ---------------------------------------------------------------------------

def test_d2l_7_5_pooling():
    def pool2d(X, pool_size, mode='max'):
        p_h, p_w = pool_size
        Y = tf.Variable(tf.zeros((X.shape[0] - p_h + 1, X.shape[1] - p_w +1)))
        for i in range(Y.shape[0]):
            for j in range(Y.shape[1]):
                if mode == 'max':
                    Y[i, j].assign(tf.reduce_max(X[i: i + p_h, j: j + p_w]))
                elif mode =='avg':
                    Y[i, j].assign(tf.reduce_mean(X[i: i + p_h, j: j + p_w]))
        return Y

    X = d2l.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    np.testing.assert_array_equal(pool2d(X, (2, 2)).numpy(), [[4, 5], [7, 8]])
    np.testing.assert_array_equal(pool2d(X, (2, 2), 'avg').numpy(), [[2, 3], [5, 6]])

    X = d2l.reshape(d2l.arange(16, dtype=d2l.float32), (1, 4, 4, 1))
    pool2d = tf.keras.layers.MaxPool2D(pool_size=[3, 3])
    # Pooling has no model parameters, hence it needs no initialization
    np.testing.assert_array_equal(pool2d(X).numpy(), [[[[10.0]]]])

    paddings = tf.constant([[0, 0], [1,0], [1,0], [0,0]])
    X_padded = tf.pad(X, paddings, "CONSTANT")
    pool2d = tf.keras.layers.MaxPool2D(pool_size=[3, 3], padding='valid',
                                       strides=2)
    np.testing.assert_array_equal(pool2d(X_padded).numpy()[0, :, :, 0], [[5, 7], [13, 15]])

    paddings = tf.constant([[0, 0], [0, 0], [1, 1], [0, 0]])
    X_padded = tf.pad(X, paddings, "CONSTANT")
    pool2d = tf.keras.layers.MaxPool2D(pool_size=[2, 3], padding='valid',
                                       strides=(2, 3))
    np.testing.assert_array_equal(pool2d(X_padded).numpy()[0, :, :, 0], [[5, 7], [13, 15]])

    # Concatenate along `dim=3` due to channels-last syntax
    X = d2l.concat([X, X + 1], 3)
    paddings = tf.constant([[0, 0], [1,0], [1,0], [0,0]])
    X_padded = tf.pad(X, paddings, "CONSTANT")
    pool2d = tf.keras.layers.MaxPool2D(pool_size=[3, 3], padding='valid',
                                       strides=2)
    np.testing.assert_array_equal(pool2d(X_padded).numpy()[0],
                                  [[[5, 6], [7, 8]], [[13, 14], [15, 16]]])


@pytest.mark.parametrize("layer, mode", [("MaxPool2D", "max"), ("AvgPool2D", "avg"),
                                         ("MaxPooling2D", "max"), ("AveragePooling2D", "avg")])
@pytest.mark.parametrize("pool, strides, padding, shape", [
    ((2, 2), None, "valid", (2, 6, 7, 3)),
    ((3, 3), (2, 2), "same", (1, 7, 6, 2)),
    ((3, 2), (1, 2), "same", (2, 5, 5, 1)),
    ((2, 3), (3, 1), "valid", (1, 8, 7, 2)),
    ((4, 4), (1, 1), "same", (1, 3, 5, 1)),   # a window wider than the padded border
])
def test_pooling_layers_match_a_numpy_loop(layer, mode, pool, strides, padding, shape):
    x = np.random.default_rng(1).standard_normal(shape)
    got = getattr(tf.keras.layers, layer)(pool_size=pool, strides=strides, padding=padding)(
        tf.constant(x))
    want = pool_np(x, pool, strides or pool, padding, mode)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_average_pooling_documented_examples():
    # tf.keras.layers.AveragePooling2D's documentation (TensorFlow 2.x), its three examples.
    x = tf.reshape(tf.constant([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]]), [1, 3, 3, 1])
    avg_pool_2d = tf.keras.layers.AveragePooling2D(pool_size=(2, 2), strides=(1, 1),
                                                   padding='valid')
    np.testing.assert_array_equal(avg_pool_2d(x).numpy()[0, :, :, 0], [[3., 4.], [6., 7.]])
    y = tf.reshape(tf.constant([[1., 2., 3., 4.], [5., 6., 7., 8.], [9., 10., 11., 12.]]),
                   [1, 3, 4, 1])
    avg_pool_2d = tf.keras.layers.AveragePooling2D(pool_size=(2, 2), strides=(2, 2),
                                                   padding='valid')
    np.testing.assert_array_equal(avg_pool_2d(y).numpy()[0, :, :, 0], [[3.5, 5.5]])
    avg_pool_2d = tf.keras.layers.AveragePooling2D(pool_size=(2, 2), strides=(1, 1),
                                                   padding='same')
    np.testing.assert_array_equal(avg_pool_2d(x).numpy()[0, :, :, 0],
                                  [[3., 4., 4.5], [6., 7., 7.5], [7.5, 8.5, 9.]])
    np.testing.assert_array_equal(tf.nn.avg_pool2d(x, 2, 1, "SAME").numpy(),
                                  avg_pool_2d(x).numpy())


def test_zero_padding_and_upsampling_layers():
    x = np.arange(2 * 2 * 3 * 2, dtype=np.float64).reshape(2, 2, 3, 2)
    for padding, pads in [(1, ((1, 1), (1, 1))), ((2, 0), ((2, 2), (0, 0))),
                          (((1, 0), (2, 3)), ((1, 0), (2, 3)))]:
        got = tf.keras.layers.ZeroPadding2D(padding)(tf.constant(x))
        np.testing.assert_array_equal(got.numpy(), np.pad(x, ((0, 0),) + pads + ((0, 0),)))
    got = tf.keras.layers.UpSampling2D(size=(2, 3))(tf.constant(x))
    np.testing.assert_array_equal(got.numpy(), x.repeat(2, axis=1).repeat(3, axis=2))
    # Bilinear, half-pixel centres (tf.image.resize): 1-D [1, 2] -> [1, 1.25, 1.75, 2].
    row = tf.keras.layers.UpSampling2D((1, 2), interpolation="bilinear")(
        tf.reshape(tf.constant([1.0, 2.0]), [1, 1, 2, 1]))
    np.testing.assert_allclose(row.numpy().ravel(), [1.0, 1.25, 1.75, 2.0])
    with pytest.raises(ValueError, match="padding must be"):
        tf.keras.layers.ZeroPadding2D(-1)
    with pytest.raises(ValueError, match="channels_last"):
        tf.keras.layers.AvgPool2D(data_format="channels_first")
    with pytest.raises(ValueError, match="interpolation"):
        tf.keras.layers.UpSampling2D(interpolation="bicubic")


def test_pooling_padding_upsampling_gradients():
    x = np.random.default_rng(2).standard_normal((1, 5, 4, 2))
    for layer in (tf.keras.layers.AvgPool2D(3, 2, padding="same"),
                  tf.keras.layers.ZeroPadding2D(((1, 0), (0, 2))),
                  tf.keras.layers.UpSampling2D(2)):
        tf.testing.check_grads(lambda t: layer(t) ** 2, tf.constant(x), order=2)


# -- d2l 7.6 LeNet ---------------------------------------------------------------------------

def test_d2l_7_6_lenet(fashion):  # noqa: F811
    model = d2l.LeNet()
    assert summary_lines(model, (1, 28, 28, 1)) == [
        "Conv2D output shape:\t (1, 28, 28, 6)",
        "AveragePooling2D output shape:\t (1, 14, 14, 6)",
        "Conv2D output shape:\t (1, 10, 10, 16)",
        "AveragePooling2D output shape:\t (1, 5, 5, 16)",
        "Flatten output shape:\t (1, 400)",
        "Dense output shape:\t (1, 120)",
        "Dense output shape:\t (1, 84)",
        "Dense output shape:\t (1, 10)"]

    trainer = d2l.Trainer(max_epochs=1)
    data = d2l.FashionMNIST(batch_size=128)
    with d2l.try_gpu():
        model = d2l.LeNet(lr=0.1)
        trainer.fit(model, data)
    assert trainer.train_batch_idx == 1 and trainer.val_batch_idx == 1
    losses = [p.y for p in model.board.data["val_loss"]]
    assert losses and all(math.isfinite(v) for v in losses)

    with float64_weights():
        model = d2l.LeNet()
        x, y = fashion[0]
        X = x[:16, :, :, None] / 255
        check_training_step(model, X, cross_entropy(tf.constant(y[:16].astype(np.int32))))


# -- d2l chapter 8: modern convolutional networks --------------------------------------------

def labels(n, seed=0):
    return tf.constant(np.random.default_rng(seed).integers(0, 10, n).astype(np.int32))


def images(shape, seed=0):
    return np.random.default_rng(seed).uniform(0.0, 1.0, shape)


def test_d2l_8_1_alexnet():
    class AlexNet(d2l.Classifier):
        def __init__(self, lr=0.1, num_classes=10):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential([
                tf.keras.layers.Conv2D(filters=96, kernel_size=11, strides=4,
                                       activation='relu'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2),
                tf.keras.layers.Conv2D(filters=256, kernel_size=5, padding='same',
                                       activation='relu'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2),
                tf.keras.layers.Conv2D(filters=384, kernel_size=3, padding='same',
                                       activation='relu'),
                tf.keras.layers.Conv2D(filters=384, kernel_size=3, padding='same',
                                       activation='relu'),
                tf.keras.layers.Conv2D(filters=256, kernel_size=3, padding='same',
                                       activation='relu'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2),
                tf.keras.layers.Flatten(),
                tf.keras.layers.Dense(4096, activation='relu'),
                tf.keras.layers.Dropout(0.5),
                tf.keras.layers.Dense(4096, activation='relu'),
                tf.keras.layers.Dropout(0.5),
                tf.keras.layers.Dense(num_classes)])

    # 67x67 instead of 224x224: (67 - 11) // 4 + 1 = 15, then 7, 7, 3, 3, 3, 3, 1.
    assert summary_lines(AlexNet(), (1, 67, 67, 1)) == [
        "Conv2D output shape:\t (1, 15, 15, 96)",
        "MaxPooling2D output shape:\t (1, 7, 7, 96)",
        "Conv2D output shape:\t (1, 7, 7, 256)",
        "MaxPooling2D output shape:\t (1, 3, 3, 256)",
        "Conv2D output shape:\t (1, 3, 3, 384)",
        "Conv2D output shape:\t (1, 3, 3, 384)",
        "Conv2D output shape:\t (1, 3, 3, 256)",
        "MaxPooling2D output shape:\t (1, 1, 1, 256)",
        "Flatten output shape:\t (1, 256)",
        "Dense output shape:\t (1, 4096)",
        "Dropout output shape:\t (1, 4096)",
        "Dense output shape:\t (1, 4096)",
        "Dropout output shape:\t (1, 4096)",
        "Dense output shape:\t (1, 10)"]
    with float64_weights():
        check_training_step(AlexNet(), images((2, 67, 67, 1)), cross_entropy(labels(2)),
                            lr=0.01, training=False)


def test_d2l_8_2_vgg():
    def vgg_block(num_convs, num_channels):
        blk = tf.keras.models.Sequential()
        for _ in range(num_convs):
            blk.add(
                tf.keras.layers.Conv2D(num_channels, kernel_size=3,
                                       padding='same', activation='relu'))
        blk.add(tf.keras.layers.MaxPool2D(pool_size=2, strides=2))
        return blk

    class VGG(d2l.Classifier):
        def __init__(self, arch, lr=0.1, num_classes=10):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential()
            for (num_convs, num_channels) in arch:
                self.net.add(vgg_block(num_convs, num_channels))
            self.net.add(
                tf.keras.models.Sequential([
                tf.keras.layers.Flatten(),
                tf.keras.layers.Dense(4096, activation='relu'),
                tf.keras.layers.Dropout(0.5),
                tf.keras.layers.Dense(4096, activation='relu'),
                tf.keras.layers.Dropout(0.5),
                tf.keras.layers.Dense(num_classes)]))

    # VGG-11 on 32x32 instead of 224x224: each block halves the height and width.
    assert summary_lines(VGG(arch=((1, 64), (1, 128), (2, 256), (2, 512), (2, 512))),
                         (1, 32, 32, 1)) == [
        "Sequential output shape:\t (1, 16, 16, 64)",
        "Sequential output shape:\t (1, 8, 8, 128)",
        "Sequential output shape:\t (1, 4, 4, 256)",
        "Sequential output shape:\t (1, 2, 2, 512)",
        "Sequential output shape:\t (1, 1, 1, 512)",
        "Sequential output shape:\t (1, 10)"]
    with float64_weights():
        model = VGG(arch=((1, 4), (2, 8)), lr=0.01)
        check_training_step(model, images((2, 8, 8, 1)), cross_entropy(labels(2)), lr=0.01,
                            training=False)


def test_d2l_8_3_nin():
    def nin_block(out_channels, kernel_size, strides, padding):
        return tf.keras.models.Sequential([
        tf.keras.layers.Conv2D(out_channels, kernel_size, strides=strides,
                               padding=padding),
        tf.keras.layers.Activation('relu'),
        tf.keras.layers.Conv2D(out_channels, 1),
        tf.keras.layers.Activation('relu'),
        tf.keras.layers.Conv2D(out_channels, 1),
        tf.keras.layers.Activation('relu')])

    class NiN(d2l.Classifier):
        def __init__(self, lr=0.1, num_classes=10):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential([
                nin_block(96, kernel_size=11, strides=4, padding='valid'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2),
                nin_block(256, kernel_size=5, strides=1, padding='same'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2),
                nin_block(384, kernel_size=3, strides=1, padding='same'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2),
                tf.keras.layers.Dropout(0.5),
                nin_block(num_classes, kernel_size=3, strides=1, padding='same'),
                tf.keras.layers.GlobalAvgPool2D(),
                tf.keras.layers.Flatten()])

    assert summary_lines(NiN(), (1, 67, 67, 1)) == [
        "Sequential output shape:\t (1, 15, 15, 96)",
        "MaxPooling2D output shape:\t (1, 7, 7, 96)",
        "Sequential output shape:\t (1, 7, 7, 256)",
        "MaxPooling2D output shape:\t (1, 3, 3, 256)",
        "Sequential output shape:\t (1, 3, 3, 384)",
        "MaxPooling2D output shape:\t (1, 1, 1, 384)",
        "Dropout output shape:\t (1, 1, 1, 384)",
        "Sequential output shape:\t (1, 1, 1, 10)",
        "GlobalAveragePooling2D output shape:\t (1, 10)",
        "Flatten output shape:\t (1, 10)"]
    with float64_weights():
        check_training_step(NiN(lr=0.05), images((2, 67, 67, 1)), cross_entropy(labels(2)),
                            lr=0.05, training=False)


def test_d2l_8_4_googlenet():
    class Inception(tf.keras.Model):
        # c1--c4 are the number of output channels for each branch
        def __init__(self, c1, c2, c3, c4):
            super().__init__()
            self.b1_1 = tf.keras.layers.Conv2D(c1, 1, activation='relu')
            self.b2_1 = tf.keras.layers.Conv2D(c2[0], 1, activation='relu')
            self.b2_2 = tf.keras.layers.Conv2D(c2[1], 3, padding='same',
                                               activation='relu')
            self.b3_1 = tf.keras.layers.Conv2D(c3[0], 1, activation='relu')
            self.b3_2 = tf.keras.layers.Conv2D(c3[1], 5, padding='same',
                                               activation='relu')
            self.b4_1 = tf.keras.layers.MaxPool2D(3, 1, padding='same')
            self.b4_2 = tf.keras.layers.Conv2D(c4, 1, activation='relu')

        def call(self, x):
            b1 = self.b1_1(x)
            b2 = self.b2_2(self.b2_1(x))
            b3 = self.b3_2(self.b3_1(x))
            b4 = self.b4_2(self.b4_1(x))
            return tf.keras.layers.Concatenate()([b1, b2, b3, b4])

    class GoogleNet(d2l.Classifier):
        def b1(self):
            return tf.keras.models.Sequential([
                tf.keras.layers.Conv2D(64, 7, strides=2, padding='same',
                                       activation='relu'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2,
                                          padding='same')])

    @d2l.add_to_class(GoogleNet)
    def b2(self):
        return tf.keras.Sequential([
            tf.keras.layers.Conv2D(64, 1, activation='relu'),
            tf.keras.layers.Conv2D(192, 3, padding='same', activation='relu'),
            tf.keras.layers.MaxPool2D(pool_size=3, strides=2, padding='same')])

    @d2l.add_to_class(GoogleNet)
    def b3(self):
        return tf.keras.models.Sequential([
            Inception(64, (96, 128), (16, 32), 32),
            Inception(128, (128, 192), (32, 96), 64),
            tf.keras.layers.MaxPool2D(pool_size=3, strides=2, padding='same')])

    @d2l.add_to_class(GoogleNet)
    def b4(self):
        return tf.keras.Sequential([
            Inception(192, (96, 208), (16, 48), 64),
            Inception(160, (112, 224), (24, 64), 64),
            Inception(128, (128, 256), (24, 64), 64),
            Inception(112, (144, 288), (32, 64), 64),
            Inception(256, (160, 320), (32, 128), 128),
            tf.keras.layers.MaxPool2D(pool_size=3, strides=2, padding='same')])

    @d2l.add_to_class(GoogleNet)
    def b5(self):
        return tf.keras.Sequential([
            Inception(256, (160, 320), (32, 128), 128),
            Inception(384, (192, 384), (48, 128), 128),
            tf.keras.layers.GlobalAvgPool2D(),
            tf.keras.layers.Flatten()])

    @d2l.add_to_class(GoogleNet)
    def __init__(self, lr=0.1, num_classes=10):
        super(GoogleNet, self).__init__()
        self.save_hyperparameters()
        self.net = tf.keras.Sequential([
            self.b1(), self.b2(), self.b3(), self.b4(), self.b5(),
            tf.keras.layers.Dense(num_classes)])

    # 32x32 instead of 96x96: "same" pooling with stride 2 halves (rounding up) each time.
    assert summary_lines(GoogleNet(), (1, 32, 32, 1)) == [
        "Sequential output shape:\t (1, 8, 8, 64)",
        "Sequential output shape:\t (1, 4, 4, 192)",
        "Sequential output shape:\t (1, 2, 2, 480)",
        "Sequential output shape:\t (1, 1, 1, 832)",
        "Sequential output shape:\t (1, 1024)",
        "Dense output shape:\t (1, 10)"]
    # One Inception block: the four branches concatenated (c1 + c2[1] + c3[1] + c4 channels),
    # its max-pooling branch a 3x3 "same" maximum (checked by the NumPy loop).
    with float64_weights():
        blk = Inception(2, (2, 3), (1, 2), 2)
        x = images((2, 5, 5, 3))
        y = blk(tf.constant(x))
        assert y.shape == (2, 5, 5, 2 + 3 + 2 + 2)
        np.testing.assert_allclose(blk.b4_1(tf.constant(x)).numpy(),
                                   pool_np(x, (3, 3), (1, 1), "same", "max"))
        check_training_step(GoogleNet(lr=0.01), images((2, 16, 16, 1)),
                            cross_entropy(labels(2)), lr=0.01)


def test_d2l_8_5_batch_norm(fashion):  # noqa: F811
    def batch_norm(X, gamma, beta, moving_mean, moving_var, eps):
        # Compute reciprocal of square root of the moving variance elementwise
        inv = tf.cast(tf.math.rsqrt(moving_var + eps), X.dtype)
        # Scale and shift
        inv *= gamma
        Y = X * inv + (beta - moving_mean * inv)
        return Y

    class BatchNorm(tf.keras.layers.Layer):
        def __init__(self, **kwargs):
            super(BatchNorm, self).__init__(**kwargs)

        def build(self, input_shape):
            weight_shape = [input_shape[-1], ]
            # The scale parameter and the shift parameter (model parameters) are
            # initialized to 1 and 0, respectively
            self.gamma = self.add_weight(name='gamma', shape=weight_shape,
                initializer=tf.initializers.ones, trainable=True)
            self.beta = self.add_weight(name='beta', shape=weight_shape,
                initializer=tf.initializers.zeros, trainable=True)
            # The variables that are not model parameters are initialized to 0
            self.moving_mean = self.add_weight(name='moving_mean',
                shape=weight_shape, initializer=tf.initializers.zeros,
                trainable=False)
            self.moving_variance = self.add_weight(name='moving_variance',
                shape=weight_shape, initializer=tf.initializers.ones,
                trainable=False)
            super(BatchNorm, self).build(input_shape)

        def assign_moving_average(self, variable, value):
            momentum = 0.1
            delta = (1.0 - momentum) * variable + momentum * value
            return variable.assign(delta)

        @tf.function
        def call(self, inputs, training):
            if training:
                axes = list(range(len(inputs.shape) - 1))
                batch_mean = tf.reduce_mean(inputs, axes, keepdims=True)
                batch_variance = tf.reduce_mean(tf.math.squared_difference(
                    inputs, tf.stop_gradient(batch_mean)), axes, keepdims=True)
                batch_mean = tf.squeeze(batch_mean, axes)
                batch_variance = tf.squeeze(batch_variance, axes)
                mean_update = self.assign_moving_average(
                    self.moving_mean, batch_mean)
                variance_update = self.assign_moving_average(
                    self.moving_variance, batch_variance)
                self.add_update(mean_update)
                self.add_update(variance_update)
                mean, variance = batch_mean, batch_variance
            else:
                mean, variance = self.moving_mean, self.moving_variance
            output = batch_norm(inputs, moving_mean=mean, moving_var=variance,
                beta=self.beta, gamma=self.gamma, eps=1e-5)
            return output

    class BNLeNetScratch(d2l.Classifier):
        def __init__(self, lr=0.1, num_classes=10):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential([
                tf.keras.layers.Conv2D(filters=6, kernel_size=5,
                                       input_shape=(28, 28, 1)),
                BatchNorm(), tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.AvgPool2D(pool_size=2, strides=2),
                tf.keras.layers.Conv2D(filters=16, kernel_size=5),
                BatchNorm(), tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.AvgPool2D(pool_size=2, strides=2),
                tf.keras.layers.Flatten(), tf.keras.layers.Dense(120),
                BatchNorm(), tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.Dense(84), BatchNorm(),
                tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.Dense(num_classes)])

    class BNLeNet(d2l.Classifier):
        def __init__(self, lr=0.1, num_classes=10):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential([
                tf.keras.layers.Conv2D(filters=6, kernel_size=5,
                                       input_shape=(28, 28, 1)),
                tf.keras.layers.BatchNormalization(),
                tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.AvgPool2D(pool_size=2, strides=2),
                tf.keras.layers.Conv2D(filters=16, kernel_size=5),
                tf.keras.layers.BatchNormalization(),
                tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.AvgPool2D(pool_size=2, strides=2),
                tf.keras.layers.Flatten(), tf.keras.layers.Dense(120),
                tf.keras.layers.BatchNormalization(),
                tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.Dense(84),
                tf.keras.layers.BatchNormalization(),
                tf.keras.layers.Activation('sigmoid'),
                tf.keras.layers.Dense(num_classes)])

    # The layer from scratch against the formula in NumPy, training and inference.
    bn = BatchNorm()
    x = images((4, 3, 3, 2)) * 3 + 1
    y = bn(tf.constant(x, dtype=tf.float32), training=True)
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var, rtol=1e-5)
    y = bn(tf.constant(x, dtype=tf.float32), training=False)
    np.testing.assert_allclose(y.numpy(), (x - 0.1 * mean) / np.sqrt(0.9 + 0.1 * var + 1e-5),
                               rtol=1e-4, atol=1e-5)

    for Net in (BNLeNetScratch, BNLeNet):
        trainer = d2l.Trainer(max_epochs=1)
        data = d2l.FashionMNIST(batch_size=128)
        with d2l.try_gpu():
            model = Net(lr=0.5)
            trainer.fit(model, data)
        gamma, beta = tf.reshape(model.net.layers[1].gamma, (-1,)), tf.reshape(
            model.net.layers[1].beta, (-1,))
        assert gamma.shape == beta.shape == (6,)
        assert not np.allclose(gamma.numpy(), 1.0) and not np.allclose(beta.numpy(), 0.0)
        with float64_weights():
            x, y = fashion[0]
            check_training_step(Net(), x[:8, :, :, None] / 255,
                                cross_entropy(tf.constant(y[:8].astype(np.int32))))


def test_d2l_8_6_resnet():
    Residual = d2l.Residual
    blk = Residual(3)
    X = d2l.normal((4, 6, 6, 3))
    Y = blk(X)
    assert Y.shape == (4, 6, 6, 3)
    # The block's output is relu(bn2(conv2(relu(bn1(conv1(X))))) + X), in inference mode.
    inner = tf.keras.activations.relu(blk.bn1(blk.conv1(X)))
    np.testing.assert_allclose(Y.numpy(), np.maximum(
        blk.bn2(blk.conv2(inner)).numpy() + X.numpy(), 0), rtol=1e-5, atol=1e-6)
    blk = Residual(6, use_1x1conv=True, strides=2)
    assert blk(X).shape == (4, 3, 3, 6)

    class ResNet(d2l.Classifier):
        def b1(self):
            return tf.keras.models.Sequential([
                tf.keras.layers.Conv2D(64, kernel_size=7, strides=2,
                                       padding='same'),
                tf.keras.layers.BatchNormalization(),
                tf.keras.layers.Activation('relu'),
                tf.keras.layers.MaxPool2D(pool_size=3, strides=2,
                                          padding='same')])

    @d2l.add_to_class(ResNet)
    def block(self, num_residuals, num_channels, first_block=False):
        blk = tf.keras.models.Sequential()
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.add(Residual(num_channels, use_1x1conv=True, strides=2))
            else:
                blk.add(Residual(num_channels))
        return blk

    @d2l.add_to_class(ResNet)
    def __init__(self, arch, lr=0.1, num_classes=10):
        super(ResNet, self).__init__()
        self.save_hyperparameters()
        self.net = tf.keras.models.Sequential(self.b1())
        for i, b in enumerate(arch):
            self.net.add(self.block(*b, first_block=(i==0)))
        self.net.add(tf.keras.models.Sequential([
            tf.keras.layers.GlobalAvgPool2D(),
            tf.keras.layers.Dense(units=num_classes)]))

    class ResNet18(ResNet):
        def __init__(self, lr=0.1, num_classes=10):
            super().__init__(((2, 64), (2, 128), (2, 256), (2, 512)),
                           lr, num_classes)

    # 32x32 instead of 96x96.
    assert summary_lines(ResNet18(), (1, 32, 32, 1)) == [
        "Sequential output shape:\t (1, 8, 8, 64)",
        "Sequential output shape:\t (1, 8, 8, 64)",
        "Sequential output shape:\t (1, 4, 4, 128)",
        "Sequential output shape:\t (1, 2, 2, 256)",
        "Sequential output shape:\t (1, 1, 1, 512)",
        "Sequential output shape:\t (1, 10)"]
    with float64_weights():
        # (The first stage keeps b1's 64 channels: its blocks have no 1x1 convolution.)
        model = ResNet(((1, 64), (1, 8)), lr=0.01)
        check_training_step(model, images((4, 16, 16, 1)), cross_entropy(labels(4)), lr=0.01)


def test_d2l_8_6_resnext_block():
    blk = d2l.ResNeXtBlock(32, 16, 1)
    X = d2l.normal((4, 96, 96, 32))
    Y = blk(X)
    assert Y.shape == (4, 96, 96, 32)
    # bot_channels // groups = 32 // 16 = 2 groups of 16 channels: a (3, 3, 16, 32) kernel.
    assert blk.conv2.kernel.shape == (3, 3, 16, 32)
    with float64_weights():
        blk = d2l.ResNeXtBlock(8, 2, 0.5, use_1x1conv=True, strides=2)
        X = images((4, 6, 6, 8))
        assert blk(tf.constant(X)).shape == (4, 3, 3, 8)
        loss = lambda Y: tf.reduce_mean(tf.reshape(Y, (4, -1)) ** 2)
        check_training_step(blk, X, loss)


def test_grouped_convolution_matches_a_numpy_loop():
    x = np.random.default_rng(3).standard_normal((2, 5, 5, 6))
    conv = tf.keras.layers.Conv2D(4, 3, padding="same", groups=2, use_bias=False)
    y = conv(tf.constant(x, dtype=tf.float32)).numpy()
    k = conv.kernel.numpy().astype(np.float64)   # (3, 3, 3, 4): inputs 0-2 -> outputs 0-1, ...
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((2, 5, 5, 4))
    for o in range(4):
        g = o // 2
        for i in range(5):
            for j in range(5):
                want[:, i, j, o] = np.einsum("nabc,abc->n", xp[:, i:i + 3, j:j + 3,
                                                               3 * g:3 * g + 3], k[..., o])
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="groups"):
        tf.keras.layers.Conv2D(5, 3, groups=2)
    with pytest.raises(ValueError, match="groups=4 must divide"):
        tf.keras.layers.Conv2D(4, 3, groups=4)(tf.zeros([1, 4, 4, 6]))


def test_d2l_8_7_densenet():
    class ConvBlock(tf.keras.layers.Layer):
        def __init__(self, num_channels):
            super(ConvBlock, self).__init__()
            self.bn = tf.keras.layers.BatchNormalization()
            self.relu = tf.keras.layers.ReLU()
            self.conv = tf.keras.layers.Conv2D(
                filters=num_channels, kernel_size=(3, 3), padding='same')

            self.listLayers = [self.bn, self.relu, self.conv]

        def call(self, x):
            y = x
            for layer in self.listLayers.layers:
                y = layer(y)
            y = tf.keras.layers.concatenate([x,y], axis=-1)
            return y

    class DenseBlock(tf.keras.layers.Layer):
        def __init__(self, num_convs, num_channels):
            super(DenseBlock, self).__init__()
            self.listLayers = []
            for _ in range(num_convs):
                self.listLayers.append(ConvBlock(num_channels))

        def call(self, x):
            for layer in self.listLayers.layers:
                x = layer(x)
            return x

    blk = DenseBlock(2, 10)
    X = tf.random.uniform((4, 8, 8, 3))
    Y = blk(X)
    assert Y.shape == (4, 8, 8, 23)
    np.testing.assert_array_equal(Y.numpy()[..., :3], X.numpy())   # the input passes through

    class TransitionBlock(tf.keras.layers.Layer):
        def __init__(self, num_channels, **kwargs):
            super(TransitionBlock, self).__init__(**kwargs)
            self.batch_norm = tf.keras.layers.BatchNormalization()
            self.relu = tf.keras.layers.ReLU()
            self.conv = tf.keras.layers.Conv2D(num_channels, kernel_size=1)
            self.avg_pool = tf.keras.layers.AvgPool2D(pool_size=2, strides=2)

        def call(self, x):
            x = self.batch_norm(x)
            x = self.relu(x)
            x = self.conv(x)
            return self.avg_pool(x)

    blk = TransitionBlock(10)
    assert blk(Y).shape == (4, 4, 4, 10)

    class DenseNet(d2l.Classifier):
        def b1(self):
            return tf.keras.models.Sequential([
                tf.keras.layers.Conv2D(
                    64, kernel_size=7, strides=2, padding='same'),
                tf.keras.layers.BatchNormalization(),
                tf.keras.layers.ReLU(),
                tf.keras.layers.MaxPool2D(
                    pool_size=3, strides=2, padding='same')])

    @d2l.add_to_class(DenseNet)
    def __init__(self, num_channels=64, growth_rate=32, arch=(4, 4, 4, 4),
                 lr=0.1, num_classes=10):
        super(DenseNet, self).__init__()
        self.save_hyperparameters()
        self.net = tf.keras.models.Sequential(self.b1())
        for i, num_convs in enumerate(arch):
            self.net.add(DenseBlock(num_convs, growth_rate))
            # The number of output channels in the previous dense block
            num_channels += num_convs * growth_rate
            # A transition layer that halves the number of channels is added
            # between the dense blocks
            if i != len(arch) - 1:
                num_channels //= 2
                self.net.add(TransitionBlock(num_channels))
        self.net.add(tf.keras.models.Sequential([
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.ReLU(),
            tf.keras.layers.GlobalAvgPool2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(num_classes)]))

    # 32x32 instead of 96x96: channels 64 + 4 * 32 = 192, halved to 96, + 128 = 224, ...
    assert summary_lines(DenseNet(), (1, 32, 32, 1)) == [
        "Sequential output shape:\t (1, 8, 8, 64)",
        "DenseBlock output shape:\t (1, 8, 8, 192)",
        "TransitionBlock output shape:\t (1, 4, 4, 96)",
        "DenseBlock output shape:\t (1, 4, 4, 224)",
        "TransitionBlock output shape:\t (1, 2, 2, 112)",
        "DenseBlock output shape:\t (1, 2, 2, 240)",
        "TransitionBlock output shape:\t (1, 1, 1, 120)",
        "DenseBlock output shape:\t (1, 1, 1, 248)",
        "Sequential output shape:\t (1, 10)"]
    with float64_weights():
        model = DenseNet(num_channels=8, growth_rate=4, arch=(2, 2), lr=0.01)
        check_training_step(model, images((4, 16, 16, 1)), cross_entropy(labels(4)), lr=0.01)


# -- Géron, "Hands-on Machine Learning" (3rd ed.), chapter 14 ---------------------------------

def test_geron_14_convolutional_layers():
    from sklearn.datasets import load_sample_images

    images = load_sample_images()["images"]
    raw = np.stack(images)
    images = tf.keras.layers.CenterCrop(height=70, width=120)(images)
    images = tf.keras.layers.Rescaling(scale=1 / 255)(images)
    assert images.shape == (2, 70, 120, 3) and images.dtype == tf.float32
    top, left = (427 - 70) // 2, (640 - 120) // 2
    np.testing.assert_allclose(images.numpy(), raw[:, top:top + 70, left:left + 120] / 255,
                               rtol=1e-6)

    tf.random.set_seed(42)  # extra code – ensures reproducibility
    conv_layer = tf.keras.layers.Conv2D(filters=32, kernel_size=7)
    fmaps = conv_layer(images)
    assert fmaps.shape == (2, 64, 114, 32)
    conv_layer = tf.keras.layers.Conv2D(filters=32, kernel_size=7,
                                        padding="same")
    fmaps = conv_layer(images)
    assert fmaps.shape == (2, 70, 120, 32)
    conv_layer = tf.keras.layers.Conv2D(filters=32, kernel_size=7, padding="same",
                                        strides=2)
    fmaps = conv_layer(images)
    assert fmaps.shape == (2, 35, 60, 32)

    def conv_output_size(input_size, kernel_size, strides=1, padding="valid"):
        if padding=="valid":
            z = input_size - kernel_size + strides
            output_size = z // strides
            num_ignored = z % strides
            return output_size, num_ignored
        else:
            output_size = (input_size - 1) // strides + 1
            num_padded = (output_size - 1) * strides + kernel_size - input_size
            return output_size, num_padded

    size, padded = conv_output_size(np.array([70, 120]), kernel_size=7, strides=2,
                                    padding="same")
    assert list(size) == list(fmaps.shape[1:3]) == [35, 60] and list(padded) == [5, 5]

    kernels, biases = conv_layer.get_weights()
    assert kernels.shape == (7, 7, 3, 32) and biases.shape == (32,)

    tf.random.set_seed(42)
    filters = tf.random.normal([7, 7, 3, 2])
    biases = tf.zeros([2])
    fmaps = tf.nn.conv2d(images, filters, strides=1, padding="SAME") + biases
    assert fmaps.shape == (2, 70, 120, 2)

    # The hand-made filters of Figure 14-5: a vertical and a horizontal line of ones.
    filters = np.zeros([7, 7, 3, 2])
    filters[:, 3, :, 0] = 1
    filters[3, :, :, 1] = 1
    fmaps = tf.nn.conv2d(images, filters, strides=1, padding="SAME") + biases
    padded_images = np.pad(images.numpy().sum(axis=3), ((0, 0), (3, 3), (3, 3)))
    vertical = sum(padded_images[:, i:i + 70, 3:3 + 120] for i in range(7))
    horizontal = sum(padded_images[:, 3:3 + 70, j:j + 120] for j in range(7))
    np.testing.assert_allclose(fmaps.numpy()[..., 0], vertical, rtol=1e-5)
    np.testing.assert_allclose(fmaps.numpy()[..., 1], horizontal, rtol=1e-5)


def test_geron_14_pooling_layers():
    images = tf.constant(np.random.default_rng(0).uniform(0, 1, (2, 70, 120, 3)),
                         dtype=tf.float32)
    max_pool = tf.keras.layers.MaxPool2D(pool_size=2)
    output = max_pool(images)
    np.testing.assert_array_equal(
        output.numpy(), images.numpy().reshape(2, 35, 2, 60, 2, 3).max(axis=(2, 4)))

    # extra code – shows how to use the max_pool() op; only works on the CPU
    np.random.seed(42)
    fmaps = np.random.rand(2, 70, 120, 60)
    with tf.device("/cpu:0"):
        output = tf.nn.max_pool(fmaps, ksize=(1, 1, 1, 3), strides=(1, 1, 1, 3),
                                padding="VALID")
    assert output.shape == (2, 70, 120, 20)
    np.testing.assert_array_equal(output.numpy(), fmaps.reshape(2, 70, 120, 20, 3).max(-1))

    class DepthPool(tf.keras.layers.Layer):
        def __init__(self, pool_size=2, **kwargs):
            super().__init__(**kwargs)
            self.pool_size = pool_size

        def call(self, inputs):
            shape = tf.shape(inputs)  # shape[-1] is the number of channels
            groups = shape[-1] // self.pool_size  # number of channel groups
            new_shape = tf.concat([shape[:-1], [groups, self.pool_size]], axis=0)
            return tf.reduce_max(tf.reshape(inputs, new_shape), axis=-1)

    assert np.allclose(DepthPool(pool_size=3)(fmaps), output)
    assert DepthPool(pool_size=3)(images).shape == (2, 70, 120, 1)
    with pytest.raises(ValueError, match="channels"):
        tf.nn.max_pool(fmaps, ksize=(1, 1, 1, 7), strides=(1, 1, 1, 7), padding="VALID")

    global_avg_pool = tf.keras.layers.GlobalAvgPool2D()
    expected = global_avg_pool(images)
    global_avg_pool = tf.keras.layers.Lambda(
        lambda X: tf.reduce_mean(X, axis=[1, 2]))
    np.testing.assert_allclose(global_avg_pool(images).numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(expected.numpy(), images.numpy().mean(axis=(1, 2)), rtol=1e-5)


def test_geron_14_cnn_on_fashion_mnist(fashion):  # noqa: F811
    # extra code – loads the mnist dataset, add the channels axis to the inputs,
    #              scales the values to the 0-1 range, and splits the dataset
    mnist = tf.keras.datasets.fashion_mnist.load_data()
    (X_train_full, y_train_full), (X_test, y_test) = mnist
    X_train_full = np.expand_dims(X_train_full, axis=-1).astype(np.float32) / 255
    X_test = np.expand_dims(X_test.astype(np.float32), axis=-1) / 255
    X_train, X_valid = X_train_full[:-5000], X_train_full[-5000:]
    y_train, y_valid = y_train_full[:-5000], y_train_full[-5000:]
    # (128 synthetic images: the slices above keep none for training; 24 and 8 here.)
    X_train, X_valid = X_train_full[:24], X_train_full[-8:]
    y_train, y_valid = y_train_full[:24], y_train_full[-8:]

    tf.random.set_seed(42)  # extra code – ensures reproducibility
    DefaultConv2D = partial(tf.keras.layers.Conv2D, kernel_size=3, padding="same",
                            activation="relu", kernel_initializer="he_normal")
    model = tf.keras.Sequential([
        DefaultConv2D(filters=64, kernel_size=7, input_shape=[28, 28, 1]),
        tf.keras.layers.MaxPool2D(),
        DefaultConv2D(filters=128),
        DefaultConv2D(filters=128),
        tf.keras.layers.MaxPool2D(),
        DefaultConv2D(filters=256),
        DefaultConv2D(filters=256),
        tf.keras.layers.MaxPool2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(units=128, activation="relu",
                              kernel_initializer="he_normal"),
        tf.keras.layers.Dropout(0.5),
        tf.keras.layers.Dense(units=64, activation="relu",
                              kernel_initializer="he_normal"),
        tf.keras.layers.Dropout(0.5),
        tf.keras.layers.Dense(units=10, activation="softmax")
    ])
    # input_shape=[28, 28, 1] built the model: He-normal kernels, std sqrt(2 / fan_in).
    kernel = model.layers[2].kernel.numpy()
    assert model.layers[0].kernel.shape == (7, 7, 1, 64) and kernel.shape == (3, 3, 64, 128)
    assert abs(kernel.std() / math.sqrt(2 / (3 * 3 * 64)) - 1) < 0.1
    model.compile(loss="sparse_categorical_crossentropy", optimizer="nadam",
                  metrics=["accuracy"])
    history = model.fit(X_train, y_train, epochs=1,
                        validation_data=(X_valid, y_valid), verbose=0)
    score = model.evaluate(X_test, y_test, verbose=0)
    X_new = X_test[:10]  # pretend we have new images
    y_pred = model.predict(X_new, verbose=0)
    assert y_pred.shape == (10, 10)
    np.testing.assert_allclose(y_pred.sum(axis=1), 1.0, rtol=1e-5)
    assert all(math.isfinite(v) for v in history.history["loss"] + list(np.ravel(score)))
    # 28 -> 14 -> 7 -> 3 after the three poolings: Flatten gives 3 * 3 * 256 features.
    assert model.layers[9].kernel.shape == (3 * 3 * 256, 128)


def test_geron_14_resnet34():
    DefaultConv2D = partial(tf.keras.layers.Conv2D, kernel_size=3, strides=1,
                            padding="same", kernel_initializer="he_normal",
                            use_bias=False)

    class ResidualUnit(tf.keras.layers.Layer):
        def __init__(self, filters, strides=1, activation="relu", **kwargs):
            super().__init__(**kwargs)
            self.activation = tf.keras.activations.get(activation)
            self.main_layers = [
                DefaultConv2D(filters, strides=strides),
                tf.keras.layers.BatchNormalization(),
                self.activation,
                DefaultConv2D(filters),
                tf.keras.layers.BatchNormalization()
            ]
            self.skip_layers = []
            if strides > 1:
                self.skip_layers = [
                    DefaultConv2D(filters, kernel_size=1, strides=strides),
                    tf.keras.layers.BatchNormalization()
                ]

        def call(self, inputs):
            Z = inputs
            for layer in self.main_layers:
                Z = layer(Z)
            skip_Z = inputs
            for layer in self.skip_layers:
                skip_Z = layer(skip_Z)
            return self.activation(Z + skip_Z)

    # 32x32 images instead of 224x224.
    model = tf.keras.Sequential([
        DefaultConv2D(64, kernel_size=7, strides=2, input_shape=[32, 32, 3]),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Activation("relu"),
        tf.keras.layers.MaxPool2D(pool_size=3, strides=2, padding="same"),
    ])
    prev_filters = 64
    for filters in [64] * 3 + [128] * 4 + [256] * 6 + [512] * 3:
        strides = 1 if filters == prev_filters else 2
        model.add(ResidualUnit(filters, strides=strides))
        prev_filters = filters

    model.add(tf.keras.layers.GlobalAvgPool2D())
    model.add(tf.keras.layers.Flatten())
    model.add(tf.keras.layers.Dense(10, activation="softmax"))

    # input_shape= builds the model as the layers are added (each new layer on its own).
    units = [layer for layer in model.layers if isinstance(layer, ResidualUnit)]
    assert units[-1].main_layers[3].kernel.shape == (3, 3, 512, 512)
    assert model.layers[-1].kernel.shape == (512, 10)
    X = tf.constant(images((2, 32, 32, 3)), dtype=tf.float32)
    assert model(X).shape == (2, 10)
    assert len(units) == 16 and sum(bool(u.skip_layers) for u in units) == 3
    # Each convolution of a unit is 3x3 without bias; the skip path is a 1x1 convolution.
    assert units[3].main_layers[0].kernel.shape == (3, 3, 64, 128)
    assert units[3].skip_layers[0].kernel.shape == (1, 1, 64, 128)
    assert len(model.trainable_variables) == 1 + 2 + 16 * (2 + 2 * 2) + 3 * (1 + 2) + 2

    # One training step of a shorter stack in float64 (two units, one with a skip path).
    with float64_weights():
        small = tf.keras.Sequential([
            DefaultConv2D(8, kernel_size=3, strides=1),
            ResidualUnit(8), ResidualUnit(16, strides=2),
            tf.keras.layers.GlobalAvgPool2D(), tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(10)])
        check_training_step(small, images((4, 8, 8, 3)), cross_entropy(labels(4)))


# -- the fixes those chapters needed, one by one ---------------------------------------------

def test_sequential_takes_one_layer_and_builds_each_added_layer_once(monkeypatch):
    inner = tf.keras.Sequential([tf.keras.layers.Dense(3)])
    model = tf.keras.models.Sequential(inner)   # (d2l: Sequential(self.b1()))
    assert model.layers == [inner]

    calls = []
    original = tf.keras.layers.Dense.__call__

    def counting(self, *args, **kwargs):
        calls.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tf.keras.layers.Dense, "__call__", counting)
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(2,), name="a")])
    model.add(tf.keras.layers.Dense(5, name="b"))
    model.add(tf.keras.layers.Dense(6, name="c"))
    assert calls == ["a", "b", "c"]   # each layer ran once, on zeros of its input's shape
    assert [layer.kernel.shape for layer in model.layers] == [(2, 4), (4, 5), (5, 6)]
    model.pop()
    model.add(tf.keras.layers.Dense(7, name="d"))
    assert model.layers[-1].kernel.shape == (5, 7)
    assert model(tf.ones([3, 2])).shape == (3, 7)


def test_a_list_attribute_of_a_layer_has_layers():
    class Block(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.parts = [tf.keras.layers.Dense(2), "not a layer", [tf.keras.layers.ReLU()]]
            self.parts.append(tf.keras.layers.Dense(1))

    blk = Block()
    assert isinstance(blk.parts, list)
    assert [type(layer).__name__ for layer in blk.parts.layers] == ["Dense", "ReLU", "Dense"]


def test_add_update_runs_callables_unless_frozen():
    class Counter(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.count = self.add_weight(shape=(), initializer="zeros", trainable=False)

        def call(self, x):
            self.add_update(self.count.assign_add(1.0))        # done already, eagerly
            self.add_update(lambda: self.count.assign_add(10.0))
            return x

    layer = Counter()
    layer(tf.ones([1]))
    assert float(layer.count) == 11.0
    layer.trainable = False
    layer(tf.ones([1]))
    assert float(layer.count) == 12.0
    with pytest.raises(TypeError, match="add_update expects"):
        layer.add_update(3)
