# ruff: noqa: E701, E731, E741  (the book's code as printed: one-line ifs, lambdas, l)
"""The TensorFlow code of "Dive into Deep Learning" (d2l.ai), chapters 3-6, run with
``import minitape as tf``: linear regression, linear classification, multilayer perceptrons and
the builders' guide, one test per section, the section's code as printed in its TensorFlow tab.

``tests/d2l_minitape.py`` is the d2l library those chapters build (``from d2l import
tensorflow as d2l``). Fashion-MNIST is replaced by small synthetic files written in Keras's
format into a temporary Keras cache, which ``tf.keras.datasets.fashion_mnist.load_data()``
reads. Training is checked by replaying it in NumPy (float64) on the very batches the trainer
saw: the final weights must be what minibatch SGD with the closed-form gradient gives.
Values the book prints (``cross_entropy(y_hat, y)``, TensorFlow's own documented examples) are
checked as printed. The last part tests the fixes those chapters needed one by one.
"""

from __future__ import annotations

import gzip
import http.server
import math
import os
import threading
import time
import types

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import d2l_minitape as d2l
import minitape as tf

plt = d2l.plt


@pytest.fixture(autouse=True)
def _no_rendering(monkeypatch):
    """The ProgressBoard computes and plots its points as the book's; only showing the figure
    (IPython rendering an SVG at every point, half a second each) is left out."""
    monkeypatch.setattr(d2l, "display", types.SimpleNamespace(
        display=lambda *args, **kwargs: None, clear_output=lambda *args, **kwargs: None))
    # (``d2l.use_svg_display`` makes IPython's shell, a process-wide singleton: later tests
    # would believe they run in a notebook, e.g. ``keras.utils.plot_model`` returns a picture.)
    had_shell = InteractiveShell.initialized()
    yield
    plt.close("all")
    if not had_shell and InteractiveShell.initialized():
        InteractiveShell.clear_instance()


# -- helpers: synthetic Fashion-MNIST in Keras's cache, and replaying training in NumPy ------

def write_fashion_mnist(root, n_train=128, n_test=64, seed=0):
    """Write Fashion-MNIST's four idx files (gzip) under ``root/datasets/fashion-mnist``, as
    Keras's cache holds them: uint8 images whose class shows as a bright 7x7 square."""
    rng = np.random.default_rng(seed)
    folder = os.path.join(root, "datasets", "fashion-mnist")
    os.makedirs(folder, exist_ok=True)
    arrays = []
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        y = rng.integers(0, 10, n).astype(np.uint8)
        x = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        for i, c in enumerate(y):
            r, col = 3 + 7 * (c // 4), 3 + 6 * (c % 4)
            x[i, r:r + 7, col:col + 7] = 250
        with gzip.open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(b"\0\0\x08\x01" + n.to_bytes(4, "big") + y.tobytes())
        with gzip.open(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(b"\0\0\x08\x03" + n.to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
                    + x.tobytes())
        arrays.append((x, y))
    return arrays


@pytest.fixture
def fashion(tmp_path, monkeypatch):
    """A Keras cache with synthetic Fashion-MNIST (128 training, 64 test images)."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    return write_fashion_mnist(str(tmp_path / "keras"))


class Recorder:
    """Installed as ``Trainer.prepare_batch``: keeps the model's trainable weights before the
    first step (building a lazily built model on the first batch) and every training batch."""

    def __init__(self):
        self.initial = None
        self.train_batches = []

    def __call__(self, trainer, batch):
        if self.initial is None:
            if not trainer.model.trainable_variables:
                trainer.model(batch[0])   # (builds the Dense layers; changes no weight)
            self.initial = [v.numpy().astype(np.float64)
                            for v in trainer.model.trainable_variables]
        if trainer.model.training:
            self.train_batches.append([np.asarray(t).astype(np.float64) for t in batch])
        return batch


@pytest.fixture
def recorder(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(d2l.Trainer, "prepare_batch", lambda self, batch: rec(self, batch))
    return rec


def replay_sgd(rec, grad_fn, lr):
    """Minibatch SGD in float64 from the recorded weights over the recorded batches."""
    params = [p.copy() for p in rec.initial]
    for batch in rec.train_batches:
        for p, g in zip(params, grad_fn(params, *batch)):
            p -= lr * g
    return params


def assert_weights(model, expected, rtol=1e-4, atol=1e-5):
    got = [v.numpy() for v in model.trainable_variables]
    assert [g.shape for g in got] == [e.shape for e in expected]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def softmax_np(o):
    e = np.exp(o - o.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def one_hot_np(y, k=10):
    return np.eye(k)[y.astype(int).ravel()]


def softmax_regression_grads(params, X, y):
    """Gradients of the mean cross-entropy of softmax(X W + b)."""
    W, b = params
    X = X.reshape(len(X), -1)
    d = (softmax_np(X @ W + b) - one_hot_np(y)) / len(X)
    return [X.T @ d, d.sum(0)]


def mlp_grads(params, X, y):
    """Gradients of the mean cross-entropy of relu(X W1 + b1) W2 + b2 (logits)."""
    W1, b1, W2, b2 = params
    X = X.reshape(len(X), -1)
    Z = X @ W1 + b1
    H = np.maximum(Z, 0)
    dO = (softmax_np(H @ W2 + b2) - one_hot_np(y)) / len(X)
    dZ = (dO @ W2.T) * (Z > 0)
    return [X.T @ dZ, dZ.sum(0), H.T @ dO, dO.sum(0)]


def bilinear_reference(image, new_h, new_w):
    """TensorFlow 2's bilinear resize of one (h, w) image, pixel by pixel (half-pixel centers,
    borders clamped): written out directly, independently of minitape's matrices."""
    h, w = image.shape
    out = np.zeros((new_h, new_w))
    for i in range(new_h):
        y = (i + 0.5) * h / new_h - 0.5
        y0 = math.floor(y)
        fy = y - y0
        for j in range(new_w):
            x = (j + 0.5) * w / new_w - 0.5
            x0 = math.floor(x)
            fx = x - x0
            px = lambda r, c: image[min(max(r, 0), h - 1), min(max(c, 0), w - 1)]
            out[i, j] = ((1 - fy) * ((1 - fx) * px(y0, x0) + fx * px(y0, x0 + 1))
                         + fy * ((1 - fx) * px(y0 + 1, x0) + fx * px(y0 + 1, x0 + 1)))
    return out


# == Chapter 3: linear neural networks for regression =====================================

def test_3_1_linear_regression_vectorization_and_the_normal_distribution():
    n = 10000
    a = d2l.ones(n)
    b = d2l.ones(n)
    c = tf.Variable(d2l.zeros(n))
    t = time.time()
    for i in range(n):
        c[i].assign(a[i] + b[i])
    loop = f'{time.time() - t:.5f} sec'
    t = time.time()
    d = a + b
    assert loop.endswith(" sec") and f'{time.time() - t:.5f} sec'.endswith(" sec")
    np.testing.assert_array_equal(c.numpy(), np.full(n, 2.0, np.float32))
    np.testing.assert_array_equal(d.numpy(), c.numpy())

    def normal(x, mu, sigma):
        p = 1 / math.sqrt(2 * math.pi * sigma**2)
        return p * np.exp(-0.5 * (x - mu)**2 / sigma**2)

    x = np.arange(-7, 7, 0.01)
    params = [(0, 1), (0, 2), (3, 1)]
    d2l.plot(x, [normal(x, mu, sigma) for mu, sigma in params], xlabel='x',
             ylabel='p(x)', figsize=(4.5, 2.5),
             legend=[f'mean {mu}, std {sigma}' for mu, sigma in params])
    assert len(plt.gca().get_lines()) == 3
    np.testing.assert_allclose(normal(x, 0, 1).sum() * 0.01, 1.0, rtol=1e-6)


def test_3_2_object_oriented_design(capsys):
    class A:
        def __init__(self):
            self.b = 1

    a = A()

    @d2l.add_to_class(A)
    def do(self):
        print('Class attribute "b" is', self.b)

    a.do()

    class B(d2l.HyperParameters):
        def __init__(self, a, b, c):
            self.save_hyperparameters(ignore=['c'])
            print('self.a =', self.a, 'self.b =', self.b)
            print('There is no self.c =', not hasattr(self, 'c'))

    b = B(a=1, b=2, c=3)
    assert capsys.readouterr().out.splitlines() == [
        'Class attribute "b" is 1', 'self.a = 1 self.b = 2', 'There is no self.c = True']
    assert b.hparams == {"a": 1, "b": 2}

    board = d2l.ProgressBoard('x')
    for x in np.arange(0, 10, 0.1):
        board.draw(x, np.sin(x), 'sin', every_n=2)
        board.draw(x, np.cos(x), 'cos', every_n=10)
    assert len(board.data['sin']) == 50 and len(board.data['cos']) == 10
    # each plotted point is the mean of every_n raw points
    np.testing.assert_allclose(board.data['cos'][0].y, np.mean(np.cos(np.arange(0, 1, 0.1))))

    # a Module is a tf.keras.Model: the HyperParameters and the board are attributes of it
    model = d2l.Module()
    assert isinstance(model, tf.keras.Model)
    assert model.plot_train_per_epoch == 2 and model.training is None
    with pytest.raises(NotImplementedError):
        model.loss(None, None)


def test_3_3_synthetic_regression_data(capsys):
    import random

    tf.random.set_seed(0)
    data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
    print('features:', data.X[0], '\nlabel:', data.y[0])
    out = capsys.readouterr().out
    assert out.startswith("features: mt.Tensor([") and "shape=(2,), dtype=float32" in out
    assert data.X.shape == (2000, 2) and data.y.shape == (2000, 1)
    # y = X w + b + noise of standard deviation 0.01
    noise = data.y.numpy()[:, 0] - data.X.numpy() @ np.array([2, -3.4]) - 4.2
    assert abs(noise.std() - 0.01) < 0.001

    original = vars(d2l.SyntheticRegressionData)["get_dataloader"]   # (the #@save one)

    @d2l.add_to_class(d2l.SyntheticRegressionData)
    def get_dataloader(self, train):
        if train:
            indices = list(range(0, self.num_train))
            # The examples are read in random order
            random.shuffle(indices)
        else:
            indices = list(range(self.num_train, self.num_train+self.num_val))
        for i in range(0, len(indices), self.batch_size):
            j = tf.constant(indices[i : i+self.batch_size])
            yield tf.gather(self.X, j), tf.gather(self.y, j)

    try:
        X, y = next(iter(data.train_dataloader()))
        assert X.shape == (32, 2) and y.shape == (32, 1)
        # the gathered rows are rows of X, with their labels
        rows = [int(np.flatnonzero((data.X.numpy() == r).all(1))[0]) for r in X.numpy()]
        np.testing.assert_array_equal(y.numpy(), data.y.numpy()[rows])
    finally:
        d2l.SyntheticRegressionData.get_dataloader = original   # back to the #@save one
    X, y = next(iter(data.train_dataloader()))
    print('X shape:', X.shape, '\ny shape:', y.shape)
    assert capsys.readouterr().out == "X shape: (32, 2) \ny shape: (32, 1)\n"
    assert len(data.train_dataloader()) == 32   # ceil(1000 / 32)
    val = np.concatenate([b[0].numpy() for b in data.val_dataloader()])
    np.testing.assert_array_equal(val, data.X.numpy()[1000:])   # in order, not shuffled


def test_3_4_linear_regression_from_scratch(recorder, capsys):
    tf.random.set_seed(1)

    class LinearRegressionScratch(d2l.Module):
        """The linear regression model implemented from scratch."""
        def __init__(self, num_inputs, lr, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()
            w = tf.random.normal((num_inputs, 1), mean=0, stddev=0.01)
            b = tf.zeros(1)
            self.w = tf.Variable(w, trainable=True)
            self.b = tf.Variable(b, trainable=True)

    @d2l.add_to_class(LinearRegressionScratch)
    def forward(self, X):
        return d2l.matmul(X, self.w) + self.b

    @d2l.add_to_class(LinearRegressionScratch)
    def loss(self, y_hat, y):
        l = (y_hat - y) ** 2 / 2
        return d2l.reduce_mean(l)

    class SGD(d2l.HyperParameters):
        """Minibatch stochastic gradient descent."""
        def __init__(self, lr):
            self.save_hyperparameters()

        def apply_gradients(self, grads_and_vars):
            for grad, param in grads_and_vars:
                param.assign_sub(self.lr * grad)

    @d2l.add_to_class(LinearRegressionScratch)
    def configure_optimizers(self):
        return SGD(self.lr)

    model = LinearRegressionScratch(2, lr=0.03)
    data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
    trainer = d2l.Trainer(max_epochs=3)
    trainer.fit(model, data)

    print(f'error in estimating w: {data.w - d2l.reshape(model.w, data.w.shape)}')
    print(f'error in estimating b: {data.b - model.b}')
    lines = capsys.readouterr().out.splitlines()[-2:]
    assert lines[0].startswith("error in estimating w: mt.Tensor([")
    assert lines[1].startswith("error in estimating b: mt.Tensor([")

    def grads(params, X, y):
        w, b = params
        r = X @ w + b - y
        return [X.T @ r / len(X), r.mean(0)]

    assert len(recorder.train_batches) == 3 * 32
    assert_weights(model, replay_sgd(recorder, grads, 0.03))
    # after 96 steps of 0.03, the error has shrunk by about (1 - 0.03) ** 96 ~ 5%
    assert np.abs(data.w.numpy() - model.w.numpy()[:, 0]).max() < 0.5
    assert model.board.data['train_loss'][-1].y < model.board.data['train_loss'][0].y


def test_3_5_linear_regression_concise(recorder, capsys):
    tf.random.set_seed(2)
    model = d2l.LinearRegression(lr=0.03)
    data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
    trainer = d2l.Trainer(max_epochs=3)
    trainer.fit(model, data)

    w, b = model.get_w_b()
    print(f'error in estimating w: {data.w - d2l.reshape(w, data.w.shape)}')
    print(f'error in estimating b: {data.b - b}')
    out = capsys.readouterr().out
    assert "error in estimating b: [" in out   # get_weights gives NumPy arrays, as Keras
    assert isinstance(w, np.ndarray) and w.shape == (2, 1) and b.shape == (1,)

    def grads(params, X, y):   # keras.losses.MeanSquaredError: mean((y - y_hat) ** 2)
        W, bias = params
        r = X @ W + bias - y
        return [2 * X.T @ r / len(X), 2 * r.mean(0)]

    assert_weights(model, replay_sgd(recorder, grads, 0.03))
    np.testing.assert_allclose(w[:, 0], [2, -3.4], atol=0.05)


def test_3_7_weight_decay(recorder, capsys):
    tf.random.set_seed(3)

    class Data(d2l.DataModule):
        def __init__(self, num_train, num_val, num_inputs, batch_size):
            self.save_hyperparameters()
            n = num_train + num_val
            self.X = d2l.normal((n, num_inputs))
            noise = d2l.normal((n, 1)) * 0.01
            w, b = d2l.ones((num_inputs, 1)) * 0.01, 0.05
            self.y = d2l.matmul(self.X, w) + b + noise

        def get_dataloader(self, train):
            i = slice(0, self.num_train) if train else slice(self.num_train, None)
            return self.get_tensorloader([self.X, self.y], train, i)

    def l2_penalty(w):
        return d2l.reduce_sum(w**2) / 2

    class WeightDecayScratch(d2l.LinearRegressionScratch):
        def __init__(self, num_inputs, lambd, lr, sigma=0.01):
            super().__init__(num_inputs, lr, sigma)
            self.save_hyperparameters()

        def loss(self, y_hat, y):
            return (super().loss(y_hat, y) +
                    self.lambd * l2_penalty(self.w))

    data = Data(num_train=20, num_val=100, num_inputs=200, batch_size=5)
    trainer = d2l.Trainer(max_epochs=10)

    norms = {}

    def train_scratch(lambd):
        model = WeightDecayScratch(num_inputs=200, lambd=lambd, lr=0.01)
        model.board.yscale='log'
        recorder.__init__()
        trainer.fit(model, data)
        print('L2 norm of w:', float(l2_penalty(model.w)))

        def grads(params, X, y):
            w, b = params
            r = X @ w + b - y
            return [X.T @ r / len(X) + lambd * w, r.mean(0)]

        assert_weights(model, replay_sgd(recorder, grads, 0.01))
        norms[lambd] = float(l2_penalty(model.w))

    train_scratch(0)
    train_scratch(3)
    assert norms[3] < norms[0] / 3    # the penalty shrinks the weights

    class WeightDecay(d2l.LinearRegression):
        def __init__(self, wd, lr):
            super().__init__(lr)
            self.save_hyperparameters()
            self.net = tf.keras.layers.Dense(
                1, kernel_regularizer=tf.keras.regularizers.l2(wd),
                kernel_initializer=tf.keras.initializers.RandomNormal(0, 0.01)
            )

        def loss(self, y_hat, y):
            return super().loss(y_hat, y) + self.net.losses

    model = WeightDecay(wd=3, lr=0.01)
    model.board.yscale='log'
    recorder.__init__()
    trainer.fit(model, data)

    print('L2 norm of w:', float(l2_penalty(model.get_w_b()[0])))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["L2 norm of w"] * 3

    # Keras's l2(wd) adds wd * sum(w ** 2), so its gradient is 2 * wd * w
    kernel = model.net.kernel.numpy()
    np.testing.assert_allclose(float(model.net.losses[0]), 3 * np.sum(kernel ** 2), rtol=1e-5)

    def grads(params, X, y):
        W, bias = params
        r = X @ W + bias - y
        return [2 * X.T @ r / len(X) + 2 * 3 * W, 2 * r.mean(0)]

    assert_weights(model, replay_sgd(recorder, grads, 0.01))


# == Chapter 4: linear neural networks for classification =================================

def test_4_1_classification_accuracy():
    model = d2l.Classifier()
    Y_hat = tf.constant([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
    Y = tf.constant([0, 2])
    assert float(model.accuracy(Y_hat, Y)) == 0.5
    np.testing.assert_array_equal(model.accuracy(Y_hat, Y, averaged=False).numpy(), [0., 1.])
    assert isinstance(model.configure_optimizers.__self__, d2l.Classifier)


def test_4_2_the_image_classification_dataset(fashion, capsys):
    (x_train, y_train), (x_test, y_test) = fashion
    data = d2l.FashionMNIST(resize=(32, 32))
    assert (len(data.train[0]), len(data.val[0])) == (128, 64)
    assert data.train[0][0].shape == (28, 28) and data.train[0].dtype == np.uint8
    np.testing.assert_array_equal(data.train[0], x_train)
    np.testing.assert_array_equal(data.val[1], y_test)

    X, y = next(iter(data.train_dataloader()))
    print(X.shape, X.dtype, y.shape, y.dtype)
    assert capsys.readouterr().out == "(64, 32, 32, 1) float32 (64,) int32\n"
    # the batch is one of the two batches of 64, shuffled; each image scaled to [0, 1] and
    # resized from 28 x 28 to 32 x 32 (bilinear, TensorFlow's rule; no padding is needed)
    start = 0 if np.array_equal(y.numpy(), y_train[:64]) else 64
    np.testing.assert_array_equal(y.numpy(), y_train[start:start + 64])
    for k in (0, 37):
        expected = bilinear_reference(x_train[start + k] / 255.0, 32, 32)
        np.testing.assert_allclose(X.numpy()[k, :, :, 0], expected, rtol=1e-5, atol=1e-6)

    tic = time.time()
    for X, y in data.train_dataloader():
        continue
    assert f'{time.time() - tic:.2f} sec'.endswith(" sec")

    batch = next(iter(data.val_dataloader()))
    data.visualize(batch)
    axes = plt.gcf().axes
    assert len(axes) == 8
    assert [ax.get_title() for ax in axes] == data.text_labels(y_test[:8])

    # resize=(28, 28), the default, keeps the pixels
    X, _ = next(iter(d2l.FashionMNIST().val_dataloader()))
    np.testing.assert_allclose(X.numpy()[:, :, :, 0], x_test / np.float32(255), rtol=1e-6)


def test_4_4_softmax_regression_from_scratch(fashion, recorder):
    X = d2l.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    s0, s1 = d2l.reduce_sum(X, 0, keepdims=True), d2l.reduce_sum(X, 1, keepdims=True)
    np.testing.assert_array_equal(s0.numpy(), [[5., 7., 9.]])
    np.testing.assert_array_equal(s1.numpy(), [[6.], [15.]])

    def softmax(X):
        X_exp = d2l.exp(X)
        partition = d2l.reduce_sum(X_exp, 1, keepdims=True)
        return X_exp / partition  # The broadcasting mechanism is applied here

    X = d2l.rand((2, 5))
    X_prob = softmax(X)
    np.testing.assert_allclose(X_prob.numpy(), softmax_np(X.numpy()), rtol=1e-6)
    np.testing.assert_allclose(d2l.reduce_sum(X_prob, 1).numpy(), [1, 1], rtol=1e-6)

    class SoftmaxRegressionScratch(d2l.Classifier):
        def __init__(self, num_inputs, num_outputs, lr, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()
            self.W = tf.random.normal((num_inputs, num_outputs), 0, sigma)
            self.b = tf.zeros(num_outputs)
            self.W = tf.Variable(self.W)
            self.b = tf.Variable(self.b)

    @d2l.add_to_class(SoftmaxRegressionScratch)
    def forward(self, X):
        X = d2l.reshape(X, (-1, self.W.shape[0]))
        return softmax(d2l.matmul(X, self.W) + self.b)

    y_hat = tf.constant([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
    y = tf.constant([0, 2])
    picked = tf.boolean_mask(y_hat, tf.one_hot(y, depth=y_hat.shape[-1]))
    np.testing.assert_array_equal(picked.numpy(), np.float32([0.1, 0.5]))   # as the book

    def cross_entropy(y_hat, y):
        return -tf.reduce_mean(tf.math.log(tf.boolean_mask(
            y_hat, tf.one_hot(y, depth=y_hat.shape[-1]))))

    assert f"{float(cross_entropy(y_hat, y)):.7f}" == "1.4978662"   # the book's value

    @d2l.add_to_class(SoftmaxRegressionScratch)
    def loss(self, y_hat, y):
        return cross_entropy(y_hat, y)

    data = d2l.FashionMNIST(batch_size=32)
    model = SoftmaxRegressionScratch(num_inputs=784, num_outputs=10, lr=0.1)
    trainer = d2l.Trainer(max_epochs=2)
    trainer.fit(model, data)
    assert_weights(model, replay_sgd(recorder, softmax_regression_grads, 0.1))

    X, y = next(iter(data.val_dataloader()))
    preds = d2l.argmax(model(X), axis=1)
    assert preds.shape == (32,) and preds.dtype == np.int64
    wrong = d2l.astype(preds, y.dtype) != y
    X, y, preds = X[wrong], y[wrong], preds[wrong]
    assert X.shape == (int(np.sum(wrong.numpy())), 28, 28, 1)
    labels = [a+'\n'+b for a, b in zip(
        data.text_labels(y), data.text_labels(preds))]
    if len(labels) >= 8:
        data.visualize([X, y], labels=labels)


def test_4_5_softmax_regression_concise(fashion, recorder):
    data = d2l.FashionMNIST(batch_size=32)
    model = d2l.SoftmaxRegression(num_outputs=10, lr=0.1)
    trainer = d2l.Trainer(max_epochs=2)
    trainer.fit(model, data)
    assert_weights(model, replay_sgd(recorder, softmax_regression_grads, 0.1))
    # the loss is Keras's SparseCategoricalCrossentropy(from_logits=True): log-softmax in NumPy
    X, y = next(iter(data.val_dataloader()))
    logits = model(X).numpy().astype(np.float64)
    expected = -np.mean(np.log(softmax_np(logits))[np.arange(len(y)), y.numpy()])
    np.testing.assert_allclose(float(model.loss(model(X), y)), expected, rtol=1e-5)
    assert model.board.data['val_acc'][-1].y == pytest.approx(
        np.mean(logits.argmax(1) == y.numpy()))


# == Chapter 5: multilayer perceptrons ======================================================

def test_5_1_activation_functions_and_their_gradients():
    x = tf.Variable(tf.range(-8.0, 8.0, 0.1), dtype=tf.float32)
    y = tf.nn.relu(x)
    d2l.plot(x.numpy(), y.numpy(), 'x', 'relu(x)', figsize=(5, 2.5))
    with tf.GradientTape() as t:
        y = tf.nn.relu(x)
    grad = t.gradient(y, x).numpy()
    d2l.plot(x.numpy(), grad, 'x', 'grad of relu', figsize=(5, 2.5))
    np.testing.assert_array_equal(grad, (x.numpy() > 0).astype(np.float32))

    y = tf.nn.sigmoid(x)
    with tf.GradientTape() as t:
        y = tf.nn.sigmoid(x)
    s = 1 / (1 + np.exp(-x.numpy().astype(np.float64)))
    np.testing.assert_allclose(t.gradient(y, x).numpy(), s * (1 - s), rtol=1e-5, atol=1e-7)

    y = tf.nn.tanh(x)
    with tf.GradientTape() as t:
        y = tf.nn.tanh(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(),
                               1 - np.tanh(x.numpy().astype(np.float64)) ** 2,
                               rtol=1e-5, atol=1e-6)


def test_5_2_mlp_from_scratch_and_concise(fashion, recorder):
    class MLPScratch(d2l.Classifier):
        def __init__(self, num_inputs, num_outputs, num_hiddens, lr, sigma=0.01):
            super().__init__()
            self.save_hyperparameters()
            self.W1 = tf.Variable(
                tf.random.normal((num_inputs, num_hiddens)) * sigma)
            self.b1 = tf.Variable(tf.zeros(num_hiddens))
            self.W2 = tf.Variable(
                tf.random.normal((num_hiddens, num_outputs)) * sigma)
            self.b2 = tf.Variable(tf.zeros(num_outputs))

    def relu(X):
        return tf.math.maximum(X, 0)

    @d2l.add_to_class(MLPScratch)
    def forward(self, X):
        X = d2l.reshape(X, (-1, self.num_inputs))
        H = relu(d2l.matmul(X, self.W1) + self.b1)
        return d2l.matmul(H, self.W2) + self.b2

    model = MLPScratch(num_inputs=784, num_outputs=10, num_hiddens=256, lr=0.1)
    data = d2l.FashionMNIST(batch_size=32)
    trainer = d2l.Trainer(max_epochs=2)
    trainer.fit(model, data)
    assert_weights(model, replay_sgd(recorder, mlp_grads, 0.1))

    class MLP(d2l.Classifier):
        def __init__(self, num_outputs, num_hiddens, lr):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential([
                tf.keras.layers.Flatten(),
                tf.keras.layers.Dense(num_hiddens, activation='relu'),
                tf.keras.layers.Dense(num_outputs)])

    model = MLP(num_outputs=10, num_hiddens=256, lr=0.1)
    recorder.__init__()
    trainer.fit(model, data)
    assert_weights(model, replay_sgd(recorder, mlp_grads, 0.1))


def test_5_4_numerical_stability():
    x = tf.Variable(tf.range(-8.0, 8.0, 0.1))
    with tf.GradientTape() as t:
        y = tf.nn.sigmoid(x)
    d2l.plot(x.numpy(), [y.numpy(), t.gradient(y, x).numpy()],
             legend=['sigmoid', 'gradient'], figsize=(4.5, 2.5))
    with tf.GradientTape() as t:           # (the plot asked the first tape already)
        y = tf.nn.sigmoid(x)
    grad = t.gradient(y, x).numpy()
    # the gradient vanishes at both ends: at most 0.25 (at 0), below 4e-4 at |x| = 8
    assert grad.max() == pytest.approx(0.25, abs=1e-3)
    assert grad[0] < 4e-4 and grad[-1] < 4e-4

    tf.random.set_seed(5)
    M = tf.random.normal((4, 4))
    print('a single matrix \n', M)
    for i in range(100):
        M = tf.matmul(M, tf.random.normal((4, 4)))
    print('after multiplying 100 matrices\n', M.numpy())
    tf.random.set_seed(5)                       # the same 101 matrices, multiplied in float64
    expected = tf.random.normal((4, 4)).numpy().astype(np.float64)
    for i in range(100):
        expected = expected @ tf.random.normal((4, 4)).numpy()
    np.testing.assert_allclose(M.numpy(), expected, rtol=1e-3)
    assert np.abs(M.numpy()).max() > 1e10        # the product explodes


def test_5_6_dropout(fashion):
    def dropout_layer(X, dropout):
        assert 0 <= dropout <= 1
        if dropout == 1: return tf.zeros_like(X)
        mask = tf.random.uniform(
            shape=tf.shape(X), minval=0, maxval=1) < 1 - dropout
        return tf.cast(mask, dtype=tf.float32) * X / (1.0 - dropout)

    X = tf.reshape(tf.range(16, dtype=tf.float32), (2, 8))
    np.testing.assert_array_equal(dropout_layer(X, 0).numpy(), X.numpy())
    half = dropout_layer(X, 0.5).numpy()
    assert np.all((half == 0) | (half == 2 * X.numpy()))
    np.testing.assert_array_equal(dropout_layer(X, 1).numpy(), np.zeros((2, 8)))
    tf.random.set_seed(6)
    kept = np.mean([np.mean(dropout_layer(tf.ones((100, 100)), 0.5).numpy() > 0)
                    for _ in range(5)])
    assert abs(kept - 0.5) < 0.02

    class DropoutMLPScratch(d2l.Classifier):
        def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2,
                     dropout_1, dropout_2, lr):
            super().__init__()
            self.save_hyperparameters()
            self.lin1 = tf.keras.layers.Dense(num_hiddens_1, activation='relu')
            self.lin2 = tf.keras.layers.Dense(num_hiddens_2, activation='relu')
            self.lin3 = tf.keras.layers.Dense(num_outputs)

        def forward(self, X):
            H1 = self.lin1(tf.reshape(X, (X.shape[0], -1)))
            if self.training:
                H1 = dropout_layer(H1, self.dropout_1)
            H2 = self.lin2(H1)
            if self.training:
                H2 = dropout_layer(H2, self.dropout_2)
            return self.lin3(H2)

    hparams = {'num_outputs':10, 'num_hiddens_1':256, 'num_hiddens_2':256,
               'dropout_1':0.5, 'dropout_2':0.5, 'lr':0.1}
    model = DropoutMLPScratch(**hparams)
    data = d2l.FashionMNIST(batch_size=32)
    trainer = d2l.Trainer(max_epochs=2)
    trainer.fit(model, data)
    assert model.training is False          # the trainer's last phase was validation
    Xb, _ = next(iter(data.val_dataloader()))
    np.testing.assert_array_equal(model(Xb).numpy(), model(Xb).numpy())
    model.training = True                   # while training, dropout makes each call differ
    assert not np.array_equal(model(Xb).numpy(), model(Xb).numpy())
    assert len(model.trainable_variables) == 6

    class DropoutMLP(d2l.Classifier):
        def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2,
                     dropout_1, dropout_2, lr):
            super().__init__()
            self.save_hyperparameters()
            self.net = tf.keras.models.Sequential([
                tf.keras.layers.Flatten(),
                tf.keras.layers.Dense(num_hiddens_1, activation=tf.nn.relu),
                tf.keras.layers.Dropout(dropout_1),
                tf.keras.layers.Dense(num_hiddens_2, activation=tf.nn.relu),
                tf.keras.layers.Dropout(dropout_2),
                tf.keras.layers.Dense(num_outputs)])

    model = DropoutMLP(**hparams)
    trainer.fit(model, data)
    # As in Keras, self.net(X) without training=True leaves the Dropout layers off (the
    # trainer never passes training=): the output is the plain three-layer MLP's.
    k1, b1, k2, b2, k3, b3 = [v.numpy() for v in model.trainable_variables]
    x = Xb.numpy().reshape(len(Xb), -1)
    plain = np.maximum(np.maximum(x @ k1 + b1, 0) @ k2 + b2, 0) @ k3 + b3
    np.testing.assert_allclose(model(Xb).numpy(), plain, rtol=1e-4, atol=1e-5)


def test_5_7_predicting_house_prices_on_kaggle(tmp_path, monkeypatch, capsys):
    import pandas as pd   # (d2l's own dependency; in the test extra)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")    # (so that d2l's root, '../data', is tmp_path/data)
    # Kaggle's two tables, small and synthetic: numbers, text categories, missing values
    rng = np.random.default_rng(9)

    def table(n, first_id, with_price):
        area = rng.uniform(500, 3000, n).round()
        quality = rng.integers(1, 10, n)
        frame = pd.DataFrame({
            "Id": np.arange(first_id, first_id + n),
            "MSSubClass": rng.choice([20, 60, 120], n),
            "MSZoning": rng.choice(["RL", "RM", None], n),
            "LotFrontage": np.where(rng.uniform(size=n) < 0.2, np.nan, rng.uniform(30, 90, n)),
            "GrLivArea": area,
            "OverallQual": quality,
            "SaleType": rng.choice(["WD", "New"], n),
        })
        if with_price:
            frame["SalePrice"] = (50 * area + 9000 * quality) * rng.lognormal(0, 0.05, n)
        return frame

    folder = tmp_path / "data"
    folder.mkdir()
    table(60, 1, True).to_csv(folder / "kaggle_house_pred_train.csv", index=False)
    table(20, 61, False).to_csv(folder / "kaggle_house_pred_test.csv", index=False)
    monkeypatch.setattr(d2l, "DATA_URL", "http://d2l-data.example/", raising=False)
    monkeypatch.setattr(d2l, "download",   # (the files are there: no network is used)
                        lambda url, folder, sha1_hash=None: os.path.join(folder,
                                                                         url.split("/")[-1]),
                        raising=False)

    class KaggleHouse(d2l.DataModule):
        def __init__(self, batch_size, train=None, val=None):
            super().__init__()
            self.save_hyperparameters()
            if self.train is None:
                self.raw_train = pd.read_csv(d2l.download(
                    d2l.DATA_URL + 'kaggle_house_pred_train.csv', self.root,
                    sha1_hash='585e9cc93e70b39160e7921475f9bcd7d31219ce'))
                self.raw_val = pd.read_csv(d2l.download(
                    d2l.DATA_URL + 'kaggle_house_pred_test.csv', self.root,
                    sha1_hash='fa19780a7b011d9b009e8bff8e99922a8ee2eb90'))

    data = KaggleHouse(batch_size=64)
    assert data.raw_train.shape == (60, 8) and data.raw_val.shape == (20, 7)

    @d2l.add_to_class(KaggleHouse)
    def preprocess(self):
        # Remove the ID and label columns
        label = 'SalePrice'
        features = pd.concat(
            (self.raw_train.drop(columns=['Id', label]),
             self.raw_val.drop(columns=['Id'])))
        # Standardize numerical columns
        numeric_features = features.dtypes[features.dtypes!='object'].index
        features[numeric_features] = features[numeric_features].apply(
            lambda x: (x - x.mean()) / (x.std()))
        # Replace NAN numerical features by 0
        features[numeric_features] = features[numeric_features].fillna(0)
        # Replace discrete features by one-hot encoding
        features = pd.get_dummies(features, dummy_na=True)
        # Save preprocessed features
        self.train = features[:self.raw_train.shape[0]].copy()
        self.train[label] = self.raw_train[label]
        self.val = features[self.raw_train.shape[0]:].copy()

    data.preprocess()
    assert data.train.shape == (60, 4 + 3 + 3 + 1)   # 4 numbers, 2 + NaN and 2 + NaN categories

    @d2l.add_to_class(KaggleHouse)
    def get_dataloader(self, train):
        label = 'SalePrice'
        data = self.train if train else self.val
        if label not in data: return
        get_tensor = lambda x: d2l.tensor(x.values.astype(float),
                                          dtype=d2l.float32)
        # Logarithm of prices
        tensors = (get_tensor(data.drop(columns=[label])),  # X
                   d2l.reshape(d2l.log(get_tensor(data[label])), (-1, 1)))  # Y
        return self.get_tensorloader(tensors, train)

    def k_fold_data(data, k):
        rets = []
        fold_size = data.train.shape[0] // k
        for j in range(k):
            idx = range(j * fold_size, (j+1) * fold_size)
            rets.append(KaggleHouse(data.batch_size, data.train.drop(index=idx),
                                    data.train.loc[idx]))
        return rets

    def k_fold(trainer, data, k, lr):
        val_loss, models = [], []
        for i, data_fold in enumerate(k_fold_data(data, k)):
            model = d2l.LinearRegression(lr)
            model.board.yscale='log'
            if i != 0: model.board.display = False
            trainer.fit(model, data_fold)
            val_loss.append(float(model.board.data['val_loss'][-1].y))
            models.append(model)
        print(f'average validation log mse = {sum(val_loss)/len(val_loss)}')
        return models, val_loss, k_fold_data(data, k)

    trainer = d2l.Trainer(max_epochs=10)
    models, val_loss, folds = k_fold(trainer, data, k=5, lr=0.01)
    assert capsys.readouterr().out.startswith("average validation log mse = ")
    # each fold's last validation loss is the mean squared error of log prices, in NumPy
    for model, loss, fold in zip(models, val_loss, folds):
        X = fold.val.drop(columns=["SalePrice"]).values.astype(float)
        y = np.log(fold.val["SalePrice"].values)
        w, b = (v.astype(np.float64) for v in model.get_w_b())
        assert loss == pytest.approx(np.mean((X @ w[:, 0] + b[0] - y) ** 2), rel=1e-4)

    preds = [model(d2l.tensor(data.val.values.astype(float), dtype=d2l.float32))
             for model in models]
    # Taking exponentiation of predictions in the logarithm scale
    ensemble_preds = d2l.reduce_mean(d2l.exp(tf.concat(preds, 1)), 1)
    submission = pd.DataFrame({'Id':data.raw_val.Id,
                               'SalePrice':d2l.numpy(ensemble_preds)})
    submission.to_csv('submission.csv', index=False)
    assert ensemble_preds.shape == (20,)
    X = data.val.values.astype(float)
    expected = np.mean([np.exp(X @ m.get_w_b()[0][:, 0] + m.get_w_b()[1][0]) for m in models], 0)
    np.testing.assert_allclose(pd.read_csv('submission.csv')["SalePrice"], expected, rtol=1e-4)


# == Chapter 6: builders' guide =============================================================

def test_6_1_layers_and_modules():
    net = tf.keras.models.Sequential([
        tf.keras.layers.Dense(256, activation=tf.nn.relu),
        tf.keras.layers.Dense(10),
    ])

    X = tf.random.uniform((2, 20))
    assert net(X).shape == (2, 10)

    class MLP(tf.keras.Model):
        def __init__(self):
            # Call the constructor of the parent class tf.keras.Model to perform
            # the necessary initialization
            super().__init__()
            self.hidden = tf.keras.layers.Dense(units=256, activation=tf.nn.relu)
            self.out = tf.keras.layers.Dense(units=10)

        # Define the forward propagation of the model, that is, how to return the
        # required model output based on the input X
        def call(self, X):
            return self.out(self.hidden((X)))

    net = MLP()
    assert net(X).shape == (2, 10)
    W1, b1, W2, b2 = [v.numpy() for v in net.trainable_variables]
    np.testing.assert_allclose(net(X).numpy(), np.maximum(X.numpy() @ W1 + b1, 0) @ W2 + b2,
                               rtol=1e-5, atol=1e-6)

    class MySequential(tf.keras.Model):
        def __init__(self, *args):
            super().__init__()
            self.modules = args

        def call(self, X):
            for module in self.modules:
                X = module(X)
            return X

    net = MySequential(
        tf.keras.layers.Dense(units=256, activation=tf.nn.relu),
        tf.keras.layers.Dense(10))
    assert net(X).shape == (2, 10)
    assert [v.shape for v in net.trainable_variables] == [(20, 256), (256,), (256, 10), (10,)]

    class FixedHiddenMLP(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.flatten = tf.keras.layers.Flatten()
            # Random weight parameters created with tf.constant are not updated
            # during training (i.e., constant parameters)
            self.rand_weight = tf.constant(tf.random.uniform((20, 20)))
            self.dense = tf.keras.layers.Dense(20, activation=tf.nn.relu)

        def call(self, inputs):
            X = self.flatten(inputs)
            # Use the created constant parameters, as well as the relu and
            # matmul functions
            X = tf.nn.relu(tf.matmul(X, self.rand_weight) + 1)
            # Reuse the fully connected layer. This is equivalent to sharing
            # parameters with two fully connected layers
            X = self.dense(X)
            # Control flow
            while tf.reduce_sum(tf.math.abs(X)) > 1:
                X /= 2
            return tf.reduce_sum(X)

    net = FixedHiddenMLP()
    out = net(X)
    assert out.shape == () and 0.5 < float(out) <= 1   # halved until its sum is at most 1
    assert [v.shape for v in net.trainable_variables] == [(20, 20), (20,)]

    class NestMLP(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.net = tf.keras.Sequential()
            self.net.add(tf.keras.layers.Dense(64, activation=tf.nn.relu))
            self.net.add(tf.keras.layers.Dense(32, activation=tf.nn.relu))
            self.dense = tf.keras.layers.Dense(16, activation=tf.nn.relu)

        def call(self, inputs):
            return self.dense(self.net(inputs))

    chimera = tf.keras.Sequential()
    chimera.add(NestMLP())
    chimera.add(tf.keras.layers.Dense(20))
    chimera.add(FixedHiddenMLP())
    out = chimera(X)
    assert out.shape == () and 0.5 < float(out) <= 1
    assert len(chimera.trainable_variables) == 10


def test_6_2_parameter_management():
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(4, activation=tf.nn.relu),
        tf.keras.layers.Dense(1),
    ])

    X = tf.random.uniform((2, 4))
    assert net(X).shape == (2, 1)

    weights = net.layers[2].weights
    assert [w.shape for w in weights] == [(4, 1), (1,)]
    kind, bias = type(net.layers[2].weights[1]), tf.convert_to_tensor(net.layers[2].weights[1])
    assert kind is tf.Variable and isinstance(bias, tf.Tensor)
    np.testing.assert_array_equal(bias.numpy(), [0.0])
    all_weights = net.get_weights()
    assert [w.shape for w in all_weights] == [(4, 4), (4,), (4, 1), (1,)]
    assert all(isinstance(w, np.ndarray) for w in all_weights)

    # tf.keras behaves a bit differently. It removes the duplicate layer
    # automatically
    shared = tf.keras.layers.Dense(4, activation=tf.nn.relu)
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        shared,
        shared,
        tf.keras.layers.Dense(1),
    ])

    out = net(X)
    # Check whether the parameters are different
    # The book (tf.keras 2, TensorFlow 2.12) prints True: its Sequential kept the shared layer
    # once. minitape follows Keras 3 (TensorFlow 2.16 and later), as PyTorch's tab of the same
    # section: the layer is listed and applied twice, with one set of weights.
    assert len(net.layers) == 4 and net.layers[1] is net.layers[2]
    assert len(net.trainable_variables) == 4
    k, b, k2, b2 = [v.numpy() for v in net.trainable_variables]
    h = np.maximum(np.maximum(X.numpy() @ k + b, 0) @ k + b, 0)
    np.testing.assert_allclose(out.numpy(), h @ k2 + b2, rtol=1e-5, atol=1e-6)


def test_6_3_parameter_initialization():
    X = tf.random.uniform((2, 4))
    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4, activation=tf.nn.relu,
            kernel_initializer=tf.random_normal_initializer(mean=0, stddev=0.01),
            bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(1)])

    net(X)
    w, b = net.weights[0], net.weights[1]
    assert w.shape == (4, 4) and np.abs(w.numpy()).max() < 0.06
    np.testing.assert_array_equal(b.numpy(), np.zeros(4))

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4, activation=tf.nn.relu,
            kernel_initializer=tf.keras.initializers.Constant(1),
            bias_initializer=tf.zeros_initializer()),
        tf.keras.layers.Dense(1),
    ])

    net(X)
    np.testing.assert_array_equal(net.weights[0].numpy(), np.ones((4, 4)))
    np.testing.assert_array_equal(net.weights[1].numpy(), np.zeros(4))

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4,
            activation=tf.nn.relu,
            kernel_initializer=tf.keras.initializers.GlorotUniform()),
        tf.keras.layers.Dense(
            1, kernel_initializer=tf.keras.initializers.Constant(42)),
    ])

    net(X)
    limit = math.sqrt(6 / (4 + 4))                       # Glorot's bound for a 4 x 4 kernel
    assert np.abs(net.layers[1].weights[0].numpy()).max() <= limit
    np.testing.assert_array_equal(net.layers[2].weights[0].numpy(), np.full((4, 1), 42.0))

    class MyInit(tf.keras.initializers.Initializer):
        def __call__(self, shape, dtype=None):
            data=tf.random.uniform(shape, -10, 10, dtype=dtype)
            factor=(tf.abs(data) >= 5)
            factor=tf.cast(factor, tf.float32)
            return data * factor

    net = tf.keras.models.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(
            4,
            activation=tf.nn.relu,
            kernel_initializer=MyInit()),
        tf.keras.layers.Dense(1),
    ])

    net(X)
    w = net.layers[1].weights[0].numpy()
    assert np.all((w == 0) | ((np.abs(w) >= 5) & (np.abs(w) <= 10)))

    net.layers[1].weights[0][:].assign(net.layers[1].weights[0] + 1)
    net.layers[1].weights[0][0, 0].assign(42)
    expected = w + 1
    expected[0, 0] = 42
    np.testing.assert_array_equal(net.layers[1].weights[0].numpy(), expected)


def test_6_4_lazy_initialization():
    net = tf.keras.models.Sequential([
        tf.keras.layers.Dense(256, activation=tf.nn.relu),
        tf.keras.layers.Dense(10),
    ])
    assert [net.layers[i].get_weights() for i in range(len(net.layers))] == [[], []]
    X = tf.random.uniform((2, 20))
    net(X)
    assert [w.shape for w in net.get_weights()] == [(20, 256), (256,), (256, 10), (10,)]


def test_6_5_custom_layers():
    class CenteredLayer(tf.keras.Model):
        def __init__(self):
            super().__init__()

        def call(self, X):
            return X - tf.reduce_mean(X)

    layer = CenteredLayer()
    np.testing.assert_array_equal(layer(d2l.tensor([1.0, 2, 3, 4, 5])).numpy(),
                                  [-2., -1., 0., 1., 2.])
    net = tf.keras.Sequential([tf.keras.layers.Dense(128), CenteredLayer()])
    Y = net(tf.random.uniform((4, 8)))
    assert abs(float(tf.reduce_mean(Y))) < 1e-6

    class MyDense(tf.keras.Model):
        def __init__(self, units):
            super().__init__()
            self.units = units

        def build(self, X_shape):
            self.weight = self.add_weight(name='weight',
                shape=[X_shape[-1], self.units],
                initializer=tf.random_normal_initializer())
            self.bias = self.add_weight(
                name='bias', shape=[self.units],
                initializer=tf.zeros_initializer())

        def call(self, X):
            linear = tf.matmul(X, self.weight) + self.bias
            return tf.nn.relu(linear)

    dense = MyDense(3)
    X = tf.random.uniform((2, 5))
    dense(X)
    w, b = dense.get_weights()
    assert w.shape == (5, 3) and np.abs(w).max() < 0.3    # random_normal: stddev 0.05
    np.testing.assert_array_equal(b, np.zeros(3))
    np.testing.assert_allclose(dense(X).numpy(), np.maximum(X.numpy() @ w + b, 0), rtol=1e-6)
    net = tf.keras.models.Sequential([MyDense(8), MyDense(1)])
    assert net(tf.random.uniform((2, 64))).shape == (2, 1)


def test_6_6_file_io(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = tf.range(4)
    np.save('x-file.npy', x)
    x2 = np.load('x-file.npy', allow_pickle=True)
    np.testing.assert_array_equal(x2, np.arange(4, dtype=np.int32))
    assert x2.dtype == np.int32

    y = tf.zeros(4)
    np.save('xy-files.npy', [x, y])
    x2, y2 = np.load('xy-files.npy', allow_pickle=True)
    np.testing.assert_array_equal(x2, np.arange(4.0))
    np.testing.assert_array_equal(y2, np.zeros(4))

    mydict = {'x': x, 'y': y}
    np.save('mydict.npy', mydict)
    mydict2 = np.load('mydict.npy', allow_pickle=True)
    assert sorted(mydict2.item()) == ['x', 'y']

    class MLP(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.flatten = tf.keras.layers.Flatten()
            self.hidden = tf.keras.layers.Dense(units=256, activation=tf.nn.relu)
            self.out = tf.keras.layers.Dense(units=10)

        def call(self, inputs):
            x = self.flatten(inputs)
            x = self.hidden(x)
            return self.out(x)

    net = MLP()
    X = tf.random.uniform((2, 20))
    Y = net(X)
    net.save_weights('mlp.params')
    clone = MLP()
    clone.load_weights('mlp.params')     # (not built yet: loaded at the first call)
    Y_clone = clone(X)
    assert (Y_clone == Y).numpy().all()
    for a, b in zip(clone.get_weights(), net.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_6_7_gpus():
    assert repr(d2l.cpu()).startswith("<mt.device '/CPU:0'")
    assert repr(d2l.gpu(1)).startswith("<mt.device '/GPU:1'")
    assert d2l.num_gpus() == 0
    assert d2l.try_all_gpus() == []
    assert d2l.try_gpu().name == '/CPU:0' and d2l.try_gpu(10).name == '/CPU:0'

    x = tf.constant([1, 2, 3])
    assert x.device == '/job:localhost/replica:0/task:0/device:CPU:0'
    with d2l.try_gpu():
        X = tf.ones((2, 3))
    with d2l.try_gpu(1):
        Y = tf.random.uniform((2, 3))
    with d2l.try_gpu(1):
        Z = X
    np.testing.assert_array_equal((Y + Z).numpy(), Y.numpy() + 1)
    with d2l.try_gpu(1):
        Z2 = Z
    assert Z2 is Z

    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        net = tf.keras.models.Sequential([
            tf.keras.layers.Dense(1)])
    assert net(X).shape == (2, 1)
    devices = net.layers[0].weights[0].device, net.layers[0].weights[1].device
    assert devices == ('/job:localhost/replica:0/task:0/device:CPU:0',) * 2
    assert strategy.num_replicas_in_sync == 1


# == The older edition (d2l 0.17, "d2l-tensorflow"): the flatter style ========================

def test_d2l_0_17_softmax_regression_from_scratch_with_train_epoch_ch3(fashion):
    def load_data_fashion_mnist(batch_size, resize=None):
        mnist_train, mnist_test = tf.keras.datasets.fashion_mnist.load_data()
        # Divide all numbers by 255 so that all pixel values are between
        # 0 and 1, add a batch dimension at the last. And cast label to int32
        process = lambda X, y: (tf.expand_dims(X, axis=3) / 255,
                                tf.cast(y, dtype='int32'))
        resize_fn = lambda X, y: (
            tf.image.resize_with_pad(X, resize, resize) if resize else X, y)
        return (
            tf.data.Dataset.from_tensor_slices(process(*mnist_train)).batch(
                batch_size).shuffle(len(mnist_train[0])).map(resize_fn),
            tf.data.Dataset.from_tensor_slices(process(*mnist_test)).batch(
                batch_size).map(resize_fn))

    tf.random.set_seed(10)
    batch_size = 32
    train_iter, test_iter = load_data_fashion_mnist(batch_size)
    num_inputs = 784
    num_outputs = 10
    W = tf.Variable(tf.random.normal(shape=(num_inputs, num_outputs),
                                     mean=0, stddev=0.01))
    b = tf.Variable(tf.zeros(num_outputs))

    def softmax(X):
        X_exp = tf.exp(X)
        partition = tf.reduce_sum(X_exp, 1, keepdims=True)
        return X_exp / partition  # The broadcasting mechanism is applied here

    def net(X):
        return softmax(tf.matmul(tf.reshape(X, (-1, W.shape[0])), W) + b)

    def cross_entropy(y_hat, y):
        return -tf.math.log(tf.boolean_mask(
            y_hat, tf.one_hot(y, depth=y_hat.shape[-1])))

    def accuracy(y_hat, y):
        """Compute the number of correct predictions."""
        if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
            y_hat = tf.argmax(y_hat, axis=1)
        cmp = tf.cast(y_hat, y.dtype) == y
        return float(tf.reduce_sum(tf.cast(cmp, y.dtype)))

    class Accumulator:
        """For accumulating sums over `n` variables."""
        def __init__(self, n):
            self.data = [0.0] * n

        def add(self, *args):
            self.data = [a + float(b) for a, b in zip(self.data, args)]

        def __getitem__(self, idx):
            return self.data[idx]

    def evaluate_accuracy(net, data_iter):
        metric = Accumulator(2)  # No. of correct predictions, no. of predictions
        for X, y in data_iter:
            metric.add(accuracy(net(X), y), tf.size(y).numpy())
        return metric[0] / metric[1]

    def sgd(params, grads, lr, batch_size):
        for param, grad in zip(params, grads):
            param.assign_sub(lr*grad/batch_size)

    class Updater():
        def __init__(self, params, lr):
            self.params = params
            self.lr = lr

        def __call__(self, batch_size, grads):
            sgd(self.params, grads, self.lr, batch_size)

    def train_epoch_ch3(net, train_iter, loss, updater):
        metric = Accumulator(3)
        for X, y in train_iter:
            with tf.GradientTape() as tape:
                y_hat = net(X)
                if isinstance(loss, tf.keras.losses.Loss):
                    l = loss(y, y_hat)
                else:
                    l = loss(y_hat, y)
            if isinstance(updater, tf.keras.optimizers.Optimizer):
                params = net.trainable_variables
                grads = tape.gradient(l, params)
                updater.apply_gradients(zip(grads, params))
            else:
                updater(X.shape[0], tape.gradient(l, updater.params))
            l_sum = l * float(tf.size(y)) if isinstance(
                loss, tf.keras.losses.Loss) else tf.reduce_sum(l)
            metric.add(l_sum, accuracy(y_hat, y), tf.size(y))
        return metric[0] / metric[2], metric[1] / metric[2]

    assert 0.0 <= evaluate_accuracy(net, test_iter) <= 1.0
    rec = Recorder()
    rec.initial = [W.numpy().astype(np.float64), b.numpy().astype(np.float64)]
    tf.random.set_seed(12)                   # the shuffled order of the epoch, seen first
    rec.train_batches = [[np.asarray(t).astype(np.float64) for t in batch]
                         for batch in train_iter]
    assert rec.train_batches[0][0].shape == (32, 28, 28, 1)
    tf.random.set_seed(12)
    updater = Updater([W, b], lr=0.1)
    train_loss, train_acc = train_epoch_ch3(net, train_iter, cross_entropy, updater)
    W_np, b_np = replay_sgd(rec, softmax_regression_grads, 0.1)
    np.testing.assert_allclose(W.numpy(), W_np, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.numpy(), b_np, rtol=1e-4, atol=1e-5)
    assert 0 < train_loss < math.log(10) + 0.1 and 0.0 <= train_acc <= 1.0
    assert evaluate_accuracy(net, test_iter) > 0.5   # the squares are easy to tell apart


# == The fixes these chapters needed =========================================================

def test_a_model_subclass_keeps_its_own_loss_method_until_compile():
    # d2l's models define loss(self, y_hat, y); Keras 3's Model.__init__ sets self.loss = None
    # and hid it ('NoneType' object is not callable in training_step).
    class Model(tf.keras.Model):
        def call(self, x):
            return x

        def loss(self, y_hat, y):
            return tf.reduce_mean((y_hat - y) ** 2)

    model = Model()
    assert float(model.loss(tf.constant([1.0, 3.0]), tf.constant([0.0, 0.0]))) == 5.0
    model.compile(optimizer="sgd", loss="mae")       # compile's loss replaces it, as Keras
    assert float(model.loss(tf.constant([0.0, 0.0]), tf.constant([1.0, 3.0]))) == 2.0
    assert tf.keras.Model().loss is None


def test_boolean_mask_takes_a_numeric_mask_as_tensorflow_does():
    x = np.arange(12.0).reshape(3, 4)
    mask = np.array([[1, 0, 2, 0], [0, 0, 0, 0], [0, -1, 0, 1]])
    got = tf.boolean_mask(tf.constant(x), mask)
    np.testing.assert_array_equal(got.numpy(), x[mask != 0])
    got = tf.boolean_mask(tf.constant(x), tf.constant([0.0, 1.0, 0.5]))
    np.testing.assert_array_equal(got.numpy(), x[1:])
    w = tf.Variable(tf.constant(x))
    with tf.GradientTape() as tape:
        s = tf.reduce_sum(tf.boolean_mask(w, mask) ** 2)
    np.testing.assert_array_equal(tape.gradient(s, w).numpy(), np.where(mask != 0, 2 * x, 0))
    with pytest.raises(TypeError, match="mask must be bool"):
        tf.boolean_mask(tf.constant(x), np.array(["a", "b", "c"]))


def test_resize_matches_tensorflows_documented_examples():
    image = tf.constant([
        [1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 0, 1],
    ])
    image = image[tf.newaxis, ..., tf.newaxis]
    out = tf.image.resize(image, [3, 5])
    assert out.dtype == np.float32 and out.shape == (1, 3, 5, 1)
    np.testing.assert_allclose(out[0, ..., 0].numpy(), [
        [0.6666667, 0.3333333, 0., 0., 0.],
        [0., 0., 1., 0., 0.],
        [0., 0., 0., 0.3333335, 0.6666665]], atol=1e-6)
    assert tf.image.resize(image[0], [3, 5]).shape == (3, 5, 1)
    nn = tf.image.resize(image, [5, 7], method='nearest')
    assert nn.dtype == np.int32
    np.testing.assert_array_equal(nn[0, ..., 0].numpy(), [
        [1, 0, 0, 0, 0, 0, 0],
        [0, 1, 1, 0, 0, 0, 0],
        [0, 0, 0, 1, 0, 0, 0],
        [0, 0, 0, 0, 1, 1, 0],
        [0, 0, 0, 0, 0, 0, 1]])
    assert tf.image.resize(image, [10, 20], preserve_aspect_ratio=True).shape == (1, 10, 10, 1)
    assert tf.image.resize(image, [3, 5], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR
                           ).dtype == np.int32


@pytest.mark.parametrize("h, w, new_h, new_w", [(7, 5, 3, 9), (4, 4, 11, 2), (6, 9, 6, 9),
                                                 (6, 9, 6, 4)])
def test_resize_bilinear_matches_a_pixel_by_pixel_computation(h, w, new_h, new_w):
    rng = np.random.default_rng(h * w)
    images = rng.uniform(-1, 1, (2, h, w, 3)).astype(np.float32)
    out = tf.image.resize(images, [new_h, new_w]).numpy()
    for b in range(2):
        for c in range(3):
            np.testing.assert_allclose(out[b, :, :, c],
                                       bilinear_reference(images[b, :, :, c], new_h, new_w),
                                       rtol=1e-5, atol=1e-6)


def test_resize_to_the_same_size_keeps_the_pixels():
    image = np.arange(24, dtype=np.uint8).reshape(1, 4, 6, 1)
    same = tf.image.resize(image, [4, 6])
    assert same.dtype == np.float32
    np.testing.assert_array_equal(same.numpy(), image.astype(np.float32))
    kept = tf.image.resize(image, [4, 6], method="nearest")
    assert kept.dtype == np.uint8
    np.testing.assert_array_equal(kept.numpy(), image)
    x = tf.Variable(np.ones((4, 6, 1), np.float32))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.image.resize(x, [4, 6]) * 3.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full((4, 6, 1), 3.0))


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_resize_gradient_is_the_transposed_map(method):
    # resize is linear in the image: a central difference with step 1 along a direction v is
    # exact (up to float32 rounding), so it checks the gradient independently.
    rng = np.random.default_rng(7)
    x = tf.Variable(rng.normal(size=(1, 4, 6, 2)).astype(np.float32))
    weights = rng.normal(size=(1, 7, 3, 2)).astype(np.float32)
    f = lambda image: float(tf.reduce_sum(tf.image.resize(image, [7, 3], method=method)
                                          * weights))
    with tf.GradientTape() as tape:
        s = tf.reduce_sum(tf.image.resize(x, [7, 3], method=method) * weights)
    grad = tape.gradient(s, x).numpy()
    for _ in range(3):
        v = rng.normal(size=x.shape).astype(np.float32)
        numeric = (f(x.numpy() + v) - f(x.numpy() - v)) / 2
        assert np.sum(grad * v) == pytest.approx(numeric, rel=1e-4, abs=1e-4)


def test_resize_with_pad_keeps_the_aspect_ratio_and_centers():
    rng = np.random.default_rng(8)
    image = rng.uniform(0, 1, (3, 6, 1)).astype(np.float32)
    out = tf.image.resize_with_pad(image, 4, 4)
    # ratio max(6/4, 3/4) = 1.5: resized to (2, 4), one row of zeros above and one below
    assert out.shape == (4, 4, 1) and out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy()[[0, 3], :, 0], np.zeros((2, 4)))
    np.testing.assert_allclose(out.numpy()[1:3, :, 0], bilinear_reference(image[:, :, 0], 2, 4),
                               rtol=1e-5, atol=1e-6)
    out = tf.image.resize_with_pad(np.ones((2, 5, 3, 1), np.uint8), 5, 7)
    # ratio max(3/7, 5/5) = 1: the same size, floor(4 / 2) = 2 zero columns left, 2 right
    assert out.shape == (2, 5, 7, 1)
    np.testing.assert_array_equal(out.numpy()[0, :, :, 0],
                                  np.hstack([np.zeros((5, 2)), np.ones((5, 3)), np.zeros((5, 2))]))


def test_resize_errors_name_what_is_supported():
    with pytest.raises(NotImplementedError, match="'bilinear' .* and 'nearest'"):
        tf.image.resize(tf.ones((1, 4, 4, 1)), [2, 2], method="bicubic")
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        tf.image.resize(tf.ones((4, 4)), [2, 2])
    with pytest.raises(ValueError, match="two sizes"):
        tf.image.resize(tf.ones((4, 4, 1)), [0, 2])
    with pytest.raises(TypeError, match="numbers .* got bool"):
        tf.image.resize(tf.constant([[[True]]]), [2, 2])
    with pytest.raises(NotImplementedError, match="antialias"):
        tf.image.resize(tf.ones((4, 4, 1)), [2, 2], antialias=True)
    assert tf.image.resize(tf.ones((2, 2, 1)), [4, 4], antialias=True).shape == (4, 4, 1)


def test_load_weights_into_an_unbuilt_model_checks_the_file_at_the_first_call(tmp_path):
    net = tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
    X = tf.random.uniform((2, 4))
    net(X)
    path = str(tmp_path / "w")
    net.save_weights(path)
    with pytest.raises(FileNotFoundError):
        tf.keras.Sequential([tf.keras.layers.Dense(3)]).load_weights(str(tmp_path / "nope"))
    wrong = tf.keras.Sequential([tf.keras.layers.Dense(5), tf.keras.layers.Dense(1)])
    wrong.load_weights(path)
    with pytest.raises(ValueError, match=r"has shape \(4, 3\) in .* but \(4, 5\) here"):
        wrong(X)

    class Linear(tf.keras.Model):        # Variables made in __init__: loaded at once
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.zeros((4, 1)))

        def call(self, x):
            return x @ self.w

    a, b = Linear(), Linear()
    a.w.assign(tf.ones((4, 1)))
    a.save_weights(str(tmp_path / "lin"))
    b.load_weights(str(tmp_path / "lin"))
    np.testing.assert_array_equal(b.w.numpy(), np.ones((4, 1)))


def test_fashion_mnist_load_data_reads_keras_cache(fashion):
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    (ex, ey), (tx, ty) = fashion
    assert x_train.dtype == np.uint8 and x_train.shape == (128, 28, 28)
    np.testing.assert_array_equal(x_train, ex)
    np.testing.assert_array_equal(y_train, ey)
    np.testing.assert_array_equal(x_test, tx)
    np.testing.assert_array_equal(y_test, ty)


def test_load_data_downloads_into_the_cache_as_get_file(tmp_path, monkeypatch):
    served = tmp_path / "served"
    arrays = write_fashion_mnist(str(served), n_train=8, n_test=4, seed=3)
    np.savez(served / "mnist.npz", x_train=arrays[0][0], y_train=arrays[0][1],
             x_test=arrays[1][0], y_test=arrays[1][1])
    folder = served / "datasets" / "fashion-mnist"
    for f in folder.iterdir():
        f.rename(served / f.name)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setattr(tf.keras.datasets, "ORIGIN",
                            f"http://127.0.0.1:{server.server_address[1]}/")
        monkeypatch.setenv("KERAS_HOME", str(tmp_path / "cache"))
        (x, y), (xt, yt) = tf.keras.datasets.fashion_mnist.load_data()
        np.testing.assert_array_equal(x, arrays[0][0])
        np.testing.assert_array_equal(yt, arrays[1][1])
        assert (tmp_path / "cache" / "datasets" / "fashion-mnist" /
                "t10k-images-idx3-ubyte.gz").exists()
        (x, y), _ = tf.keras.datasets.mnist.load_data()
        np.testing.assert_array_equal(y, arrays[0][1])
        monkeypatch.setenv("KERAS_HOME", str(tmp_path / "other"))
        (served / "mnist.npz").unlink()
        with pytest.raises(ConnectionError, match=r"mnist\.npz .* put it at .*other"):
            tf.keras.datasets.mnist.load_data()
        assert not list((tmp_path / "other" / "datasets").iterdir())   # nothing half-written
    finally:
        server.shutdown()
        server.server_close()


def test_config_experimental_and_distribute_run_on_the_one_cpu():
    assert tf.config.experimental.list_physical_devices("GPU") == []
    assert tf.config.experimental.list_physical_devices("CPU") == \
        tf.config.list_physical_devices("CPU")
    with pytest.raises(ValueError, match="non-GPU"):
        tf.config.experimental.set_memory_growth(tf.config.list_physical_devices()[0], True)
    strategy = tf.distribute.MirroredStrategy(["/GPU:0", "/GPU:1"])
    assert strategy.num_replicas_in_sync == 1 and tf.distribute.get_strategy() is not strategy
    with strategy.scope() as s:
        assert s is strategy and tf.distribute.get_strategy() is strategy
        assert tf.distribute.has_strategy()
    assert not tf.distribute.has_strategy()
    assert float(strategy.run(lambda a: a * 2, args=(tf.constant(3.0),))) == 6.0
    v = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(
        strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=0).numpy(), [4.0, 6.0])
    with pytest.raises(ValueError):
        tf.distribute.OneDeviceStrategy("my gpu")


@pytest.mark.parametrize("dtype, expected", [
    (np.uint8, np.float32), (np.int8, np.float32), (np.uint16, np.float32),
    (np.int16, np.float32), (np.uint32, np.float64), (np.int32, np.float64),
    (np.int64, np.float64)])
def test_true_division_of_integers_follows_tensorflows_table(dtype, expected):
    # d2l's Fashion-MNIST loader: tf.expand_dims(X, axis=3) / 255 with uint8 pixels is float32
    # (TensorFlow's _TRUEDIV_TABLE), so the images meet float32 weights without a cast.
    x = tf.constant(np.array([51, 102], dtype))
    for y in (x / 51, tf.math.divide(x, 51), 51 / x, x / x):
        assert y.dtype == expected
    np.testing.assert_array_equal((x / 51).numpy(), [1.0, 2.0])
    pixels = tf.expand_dims(np.full((2, 28, 28), 255, np.uint8), axis=3) / 255
    assert pixels.dtype == np.float32 and float(tf.reduce_min(pixels)) == 1.0


def test_tf_losses_and_tf_metrics_are_keras_modules():
    # d2l 0.17: tf.losses.sparse_categorical_crossentropy(y, y_hat, from_logits=True)
    assert tf.losses is tf.keras.losses and tf.metrics is tf.keras.metrics
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], np.float32)
    got = tf.losses.sparse_categorical_crossentropy([0, 2], logits, from_logits=True)
    expected = -np.log(softmax_np(logits.astype(np.float64))[[0, 1], [0, 2]])
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
