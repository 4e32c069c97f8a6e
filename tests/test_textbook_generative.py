# ruff: noqa: F841  (the book's code as printed: ``history = model.fit(...)`` kept unused)
"""Géron, "Hands-On Machine Learning" (3rd edition), chapter 17: autoencoders, GANs and
diffusion models, with ``import minitape as tf``.

One test per section, the notebook's code cells as printed (only the import switched): the
linear autoencoder doing PCA, stacked, tied, one-at-a-time, convolutional, recurrent, denoising,
sparse and variational autoencoders, the GAN and DCGAN trained with ``train_gan``, and the
diffusion model (schedule, batches, time encoding, ``generate``, the U-Net). Sizes and epochs
are shrunk (said in comments where they are); Fashion-MNIST is replaced by small synthetic
files in a temporary Keras cache (the ``fashion`` fixture of ``tests/test_textbook_d2l.py``).
Numbers are checked against independent values: PCA's subspace from NumPy's SVD, the VAE's
latent loss and the KL sparsity penalty in closed form in NumPy, the GAN's two phases (the
frozen discriminator does not move in phase 2), the diffusion schedule from the book's
formulas and ``generate`` replayed in NumPy, and training steps against central finite
differences in float64.

Where minitape follows Keras 3 rather than the tf.keras 2 the notebook runs on, the test says
so and checks the clear error: TensorFlow ops applied to KerasTensors (the VAE's latent loss
cell; Python's operators on them are recorded, as Keras 3) and a ``ModelCheckpoint`` path
without ``.keras``. The U-Net test waits for ``layers.SeparableConv2D``. The last part tests
the fixes the chapter needed, one by one.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest

import minitape as tf
from test_textbook_cnn import check_training_step, float64_weights
from test_textbook_d2l import _no_rendering, fashion  # noqa: F401

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture
def book(fashion, tmp_path, monkeypatch):  # noqa: F811
    """The notebook's setup cells: Fashion-MNIST loaded, scaled and split (the synthetic cache
    holds 128 training images: 96 for training and 32 for validation here instead of the book's
    55,000 and 5,000), ``save_fig`` writing under a temporary folder."""
    monkeypatch.chdir(tmp_path)
    # extra code – loads, scales, and splits the fashion MNIST dataset
    fashion_mnist = tf.keras.datasets.fashion_mnist.load_data()
    (X_train_full, y_train_full), (X_test, y_test) = fashion_mnist
    X_train_full = X_train_full.astype(np.float32) / 255
    X_test = X_test.astype(np.float32) / 255
    X_train, X_valid = X_train_full[:-32], X_train_full[-32:]  # (the book: -5000)
    y_train, y_valid = y_train_full[:-32], y_train_full[-32:]
    yield dict(X_train=X_train, X_valid=X_valid, y_train=y_train, y_valid=y_valid)
    plt.close("all")


def save_fig(fig_id, tight_layout=True, fig_extension="png", resolution=300):
    """The notebook's ``save_fig`` (at a low resolution: the figure is not looked at)."""
    if tight_layout:
        plt.tight_layout()
    plt.savefig(f"{fig_id}.{fig_extension}", format=fig_extension, dpi=30)


def plot_reconstructions(model, images, n_images=5):
    reconstructions = np.clip(model.predict(images[:n_images]), 0, 1)
    fig = plt.figure(figsize=(n_images * 1.5, 3))
    for image_index in range(n_images):
        plt.subplot(2, n_images, 1 + image_index)
        plt.imshow(images[image_index], cmap="binary")
        plt.axis("off")
        plt.subplot(2, n_images, 1 + n_images + image_index)
        plt.imshow(reconstructions[image_index], cmap="binary")
        plt.axis("off")
    return fig, reconstructions


def plot_multiple_images(images, n_cols=None):
    n_cols = n_cols or len(images)
    n_rows = (len(images) - 1) // n_cols + 1
    if images.shape[-1] == 1:
        images = images.squeeze(axis=-1)
    plt.figure(figsize=(n_cols, n_rows))
    for index, image in enumerate(images):
        plt.subplot(n_rows, n_cols, index + 1)
        plt.imshow(image, cmap="binary")
        plt.axis("off")


def mse_loss(X):
    X = tf.constant(np.asarray(X, np.float64))
    return lambda Y: tf.reduce_mean(tf.square(Y - X))


# -- Performing PCA with an undercomplete linear autoencoder ---------------------------------

def test_pca_with_an_undercomplete_linear_autoencoder():
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    encoder = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    decoder = tf.keras.Sequential([tf.keras.layers.Dense(3)])
    autoencoder = tf.keras.Sequential([encoder, decoder])

    optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)
    autoencoder.compile(loss="mse", optimizer=optimizer)

    # extra code – builds the same 3D dataset as in Chapter 8
    from scipy.spatial.transform import Rotation

    m = 60
    X = np.zeros((m, 3))  # initialize 3D dataset
    np.random.seed(42)
    angles = (np.random.rand(m) ** 3 + 0.5) * 2 * np.pi  # uneven distribution
    X[:, 0], X[:, 1] = np.cos(angles), np.sin(angles) * 0.5  # oval
    X += 0.28 * np.random.randn(m, 3)  # add more noise
    X = Rotation.from_rotvec([np.pi / 29, -np.pi / 20, np.pi / 4]).apply(X)
    X_train = X + [0.2, 0, 0.2]  # shift a bit

    history = autoencoder.fit(X_train, X_train, epochs=500, verbose=False)
    codings = encoder.predict(X_train)

    fig = plt.figure(figsize=(4, 3))
    plt.plot(codings[:, 0], codings[:, 1], "b.")
    plt.close(fig)

    # PCA in float64: the plane of the two first principal components.
    mean = X_train.mean(axis=0)
    _, s, Vt = np.linalg.svd(X_train - mean)
    pca_plane = Vt[:2].T                                   # 3x2, orthonormal
    pca_error = s[2] ** 2 / (3 * m)                        # the best rank-2 MSE
    assert codings.shape == (m, 2)
    # The decoder's kernel (2x3) spans the PCA plane: the principal angles are ~0.
    W = decoder.layers[0].kernel.numpy().astype(np.float64).T
    Q, _ = np.linalg.qr(W)
    cosines = np.linalg.svd(pca_plane.T @ Q, compute_uv=False)
    np.testing.assert_allclose(cosines, 1.0, atol=1e-3)
    # The reconstructions are (close to) the orthogonal projections onto that affine plane,
    # and the final loss is PCA's optimal error.
    projection = mean + (X_train - mean) @ pca_plane @ pca_plane.T
    np.testing.assert_allclose(autoencoder.predict(X_train), projection, atol=2e-2)
    assert history.history["loss"][-1] == pytest.approx(pca_error, rel=2e-2)


# -- Stacked autoencoders ------------------------------------------------------------------

def test_stacked_autoencoder(book):
    X_train, X_valid, y_valid = book["X_train"], book["X_valid"], book["y_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    stacked_encoder = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(30, activation="relu"),
    ])
    stacked_decoder = tf.keras.Sequential([
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(28 * 28),
        tf.keras.layers.Reshape([28, 28])
    ])
    stacked_ae = tf.keras.Sequential([stacked_encoder, stacked_decoder])

    stacked_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = stacked_ae.fit(X_train, X_train, epochs=2,  # (the book: 20)
                             validation_data=(X_valid, X_valid))

    fig, reconstructions = plot_reconstructions(stacked_ae, X_valid)
    save_fig("reconstruction_plot")  # extra code – saves the high res figure
    assert reconstructions.shape == (5, 28, 28)
    assert set(history.history) == {"loss", "val_loss"}
    assert len(history.history["loss"]) == 2

    from sklearn.manifold import TSNE

    X_valid_compressed = stacked_encoder.predict(X_valid)
    tsne = TSNE(init="pca", learning_rate="auto", random_state=42,
                perplexity=5)  # (perplexity < 32 validation images)
    X_valid_2D = tsne.fit_transform(X_valid_compressed)
    plt.scatter(X_valid_2D[:, 0], X_valid_2D[:, 1], c=y_valid, s=10, cmap="tab10")
    assert X_valid_compressed.shape == (32, 30) and X_valid_2D.shape == (32, 2)

    # The same network in float64: a training step's gradient against finite differences.
    with float64_weights():
        tf.random.set_seed(0)
        encoder = tf.keras.Sequential([
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(100, activation="relu"),
            tf.keras.layers.Dense(30, activation="relu"),
        ])
        decoder = tf.keras.Sequential([
            tf.keras.layers.Dense(100, activation="relu"),
            tf.keras.layers.Dense(28 * 28),
            tf.keras.layers.Reshape([28, 28])
        ])
        check_training_step(tf.keras.Sequential([encoder, decoder]), X_train[:8],
                            mse_loss(X_train[:8]))


# -- Tying weights -------------------------------------------------------------------------

class DenseTranspose(tf.keras.layers.Layer):
    def __init__(self, dense, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.dense = dense
        self.activation = tf.keras.activations.get(activation)

    def build(self, batch_input_shape):
        self.biases = self.add_weight(name="bias",
                                      shape=self.dense.input_shape[-1],
                                      initializer="zeros")
        super().build(batch_input_shape)

    def call(self, inputs):
        Z = tf.matmul(inputs, self.dense.weights[0], transpose_b=True)
        return self.activation(Z + self.biases)


def tied_autoencoder():
    dense_1 = tf.keras.layers.Dense(100, activation="relu")
    dense_2 = tf.keras.layers.Dense(30, activation="relu")

    tied_encoder = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        dense_1,
        dense_2
    ])

    tied_decoder = tf.keras.Sequential([
        DenseTranspose(dense_2, activation="relu"),
        DenseTranspose(dense_1),
        tf.keras.layers.Reshape([28, 28])
    ])

    tied_ae = tf.keras.Sequential([tied_encoder, tied_decoder])
    return tied_ae, dense_1, dense_2, tied_decoder


def test_tying_weights(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU
    tied_ae, dense_1, dense_2, tied_decoder = tied_autoencoder()

    # extra code – compiles and fits the model
    tied_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = tied_ae.fit(X_train, X_train, epochs=2,  # (the book: 10)
                          validation_data=(X_valid, X_valid))
    plot_reconstructions(tied_ae, X_valid)

    # The decoder has its own biases and no kernel: the kernels are the encoder's Variables.
    transpose_1, transpose_2 = tied_decoder.layers[1], tied_decoder.layers[0]
    assert transpose_1.biases.shape == (784,) and transpose_2.biases.shape == (100,)
    # (``self.dense = dense`` tracks the Dense layer, so the decoder lists the encoder's
    # weights too, as in tf.keras; the model lists each Variable once.)
    encoder_ids = {id(v) for v in tied_ae.layers[0].trainable_variables}
    own = [v for v in tied_decoder.trainable_variables if id(v) not in encoder_ids]
    assert [v.shape for v in own] == [(100,), (784,)]
    ids = [id(v) for v in tied_ae.trainable_variables]
    assert len(ids) == len(set(ids)) == 6
    assert id(dense_1.kernel) in ids and id(dense_2.kernel) in ids
    # The decoder computes with the very kernels the encoder trained.
    Z = tied_ae.layers[0](X_valid[:4])
    W1, b1 = dense_1.kernel.numpy(), transpose_1.biases.numpy()
    W2, b2 = dense_2.kernel.numpy(), transpose_2.biases.numpy()
    expected = (np.maximum(Z.numpy() @ W2.T + b2, 0) @ W1.T + b1).reshape(4, 28, 28)
    np.testing.assert_allclose(tied_ae(X_valid[:4]).numpy(), expected, rtol=1e-4, atol=1e-5)

    # One gradient for each shared kernel, the sum of its two uses: finite differences.
    with float64_weights():
        tf.random.set_seed(0)
        model = tied_autoencoder()[0]
        check_training_step(model, X_train[:8], mse_loss(X_train[:8]))
        assert len(model.trainable_variables) == 6


# -- Training one autoencoder at a time ----------------------------------------------------

def test_training_one_autoencoder_at_a_time(book):
    X_train, X_valid = book["X_train"], book["X_valid"]

    def train_autoencoder(n_neurons, X_train, X_valid, n_epochs=1,  # (the book: 10)
                          output_activation=None, learning_rate=1e-3):
        n_inputs = X_train.shape[-1]
        encoder = tf.keras.layers.Dense(n_neurons, activation="relu")
        decoder = tf.keras.layers.Dense(n_inputs, activation=output_activation)
        autoencoder = tf.keras.Sequential([encoder, decoder])
        optimizer = tf.keras.optimizers.Nadam(learning_rate=learning_rate)
        autoencoder.compile(loss="mse", optimizer=optimizer)
        autoencoder.fit(X_train, X_train, epochs=n_epochs,
                        validation_data=(X_valid, X_valid))
        return encoder, decoder, encoder(X_train), encoder(X_valid)

    tf.random.set_seed(42)

    X_train_flat = tf.keras.layers.Flatten()(X_train)
    X_valid_flat = tf.keras.layers.Flatten()(X_valid)
    enc1, dec1, X_train_enc1, X_valid_enc1 = train_autoencoder(
        100, X_train_flat, X_valid_flat, learning_rate=5e-4)
    enc2, dec2, _, _ = train_autoencoder(
        30, X_train_enc1, X_valid_enc1, output_activation="relu",
        learning_rate=5e-3)

    stacked_ae_1_by_1 = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        enc1, enc2, dec2, dec1,
        tf.keras.layers.Reshape([28, 28])
    ])
    _, before = plot_reconstructions(stacked_ae_1_by_1, X_valid)

    # The stack reuses the trained layers: its output is the composition, in NumPy.
    def dense(layer, x, relu):
        y = x @ layer.kernel.numpy() + layer.bias.numpy()
        return np.maximum(y, 0) if relu else y

    x = X_valid[:5].reshape(5, -1)
    x = dense(dec1, dense(dec2, dense(enc2, dense(enc1, x, True), True), True), False)
    np.testing.assert_allclose(before, np.clip(x.reshape(5, 28, 28), 0, 1), atol=1e-5)
    assert X_train_flat.shape == (96, 784) and X_train_enc1.shape == (96, 100)

    stacked_ae_1_by_1.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = stacked_ae_1_by_1.fit(X_train, X_train, epochs=1,  # (the book: 5)
                                    validation_data=(X_valid, X_valid))
    assert len(history.history["val_loss"]) == 1



# -- Convolutional autoencoders ------------------------------------------------------------

def conv_autoencoder():
    conv_encoder = tf.keras.Sequential([
        tf.keras.layers.Reshape([28, 28, 1]),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPool2D(pool_size=2),  # output: 14 × 14 x 16
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPool2D(pool_size=2),  # output: 7 × 7 x 32
        tf.keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPool2D(pool_size=2),  # output: 3 × 3 x 64
        tf.keras.layers.Conv2D(30, 3, padding="same", activation="relu"),
        tf.keras.layers.GlobalAvgPool2D()  # output: 30
    ])
    conv_decoder = tf.keras.Sequential([
        tf.keras.layers.Dense(3 * 3 * 16),
        tf.keras.layers.Reshape((3, 3, 16)),
        tf.keras.layers.Conv2DTranspose(32, 3, strides=2, activation="relu"),
        tf.keras.layers.Conv2DTranspose(16, 3, strides=2, padding="same",
                                        activation="relu"),
        tf.keras.layers.Conv2DTranspose(1, 3, strides=2, padding="same"),
        tf.keras.layers.Reshape([28, 28])
    ])
    conv_ae = tf.keras.Sequential([conv_encoder, conv_decoder])
    return conv_ae, conv_encoder, conv_decoder


def test_convolutional_autoencoder(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU
    conv_ae, conv_encoder, conv_decoder = conv_autoencoder()

    # extra code – compiles and fits the model
    conv_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = conv_ae.fit(X_train, X_train, epochs=1,  # (the book: 10)
                          validation_data=(X_valid, X_valid))
    _, reconstructions = plot_reconstructions(conv_ae, X_valid)
    assert reconstructions.shape == (5, 28, 28)
    # The shapes of the book's comments; the decoder: 3 -> 7 (valid) -> 14 -> 28 (same).
    assert conv_encoder.predict(X_valid[:2]).shape == (2, 30)
    x = np.zeros((2, 30), np.float32)
    out = []
    for layer in conv_decoder.layers:
        x = layer(x)
        out.append(tuple(x.shape[1:]))
    assert out == [(144,), (3, 3, 16), (7, 7, 32), (14, 14, 16), (28, 28, 1), (28, 28)]

    with float64_weights():
        tf.random.set_seed(0)
        check_training_step(conv_autoencoder()[0], X_train[:4], mse_loss(X_train[:4]))



# -- Recurrent autoencoders (extra material) -----------------------------------------------

def test_recurrent_autoencoder(book):
    X_train, X_valid = book["X_train"][:32], book["X_valid"][:8]  # (fewer: LSTMs are slow)
    tf.random.set_seed(42)

    recurrent_encoder = tf.keras.Sequential([
        tf.keras.layers.LSTM(100, return_sequences=True),
        tf.keras.layers.LSTM(30)
    ])
    recurrent_decoder = tf.keras.Sequential([
        tf.keras.layers.RepeatVector(28),
        tf.keras.layers.LSTM(100, return_sequences=True),
        tf.keras.layers.Dense(28)
    ])
    recurrent_ae = tf.keras.Sequential([recurrent_encoder, recurrent_decoder])
    recurrent_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())

    history = recurrent_ae.fit(X_train, X_train, epochs=1,  # (the book: 10)
                               validation_data=(X_valid, X_valid))
    _, reconstructions = plot_reconstructions(recurrent_ae, X_valid)
    assert reconstructions.shape == (5, 28, 28)
    codings = recurrent_encoder(X_valid[:3])
    repeated = recurrent_decoder.layers[0](codings).numpy()
    assert repeated.shape == (3, 28, 30)
    np.testing.assert_array_equal(repeated, np.repeat(codings.numpy()[:, None], 28, axis=1))


# -- Denoising autoencoders ----------------------------------------------------------------

def test_denoising_autoencoder_with_dropout(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    dropout_encoder = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dropout(0.5),
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(30, activation="relu")
    ])
    dropout_decoder = tf.keras.Sequential([
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(28 * 28),
        tf.keras.layers.Reshape([28, 28])
    ])
    dropout_ae = tf.keras.Sequential([dropout_encoder, dropout_decoder])

    # extra code – compiles and fits the model
    dropout_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = dropout_ae.fit(X_train, X_train, epochs=1,  # (the book: 10)
                             validation_data=(X_valid, X_valid))

    # extra code – this cell generates and saves Figure 17–9
    tf.random.set_seed(42)
    dropout = tf.keras.layers.Dropout(0.5)
    noisy = dropout(X_valid, training=True)
    plot_reconstructions(dropout_ae, noisy)
    save_fig("dropout_denoising_plot")
    # Inverted dropout: each pixel is dropped (0) or kept and doubled.
    noisy = noisy.numpy()
    kept = noisy != 0
    np.testing.assert_allclose(noisy[kept], 2 * X_valid[kept], rtol=1e-6)
    assert 0.4 < 1 - kept.mean() < 0.6
    # At inference the encoder's Dropout does nothing: predict is the plain network.
    a, b = dropout_ae.predict(X_valid[:4]), dropout_ae.predict(X_valid[:4])
    np.testing.assert_array_equal(a, b)


def test_denoising_autoencoder_with_gaussian_noise(book):
    # The chapter's Gaussian-noise variant (its binary hashing autoencoder, exercise 10).
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)

    hashing_encoder = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.GaussianNoise(15.),
        tf.keras.layers.Dense(16, activation="sigmoid"),
    ])
    hashing_decoder = tf.keras.Sequential([
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(28 * 28),
        tf.keras.layers.Reshape([28, 28])
    ])
    hashing_ae = tf.keras.Sequential([hashing_encoder, hashing_decoder])
    optimizer = tf.keras.optimizers.Nadam(learning_rate=5e-4)
    hashing_ae.compile(loss="mse", optimizer=optimizer)
    history = hashing_ae.fit(X_train, X_train, epochs=1,  # (the book: 10)
                             validation_data=(X_valid, X_valid))
    plot_reconstructions(hashing_ae, X_valid)

    hashes = hashing_encoder.predict(X_valid).round().astype(np.int32)
    hashes *= np.array([[2 ** bit for bit in range(16)]])
    hashes = hashes.sum(axis=1)
    lines = [f"{h:016b}" for h in hashes[:5]]
    assert hashes.shape == (32,) and all(len(line) == 16 for line in lines)
    # GaussianNoise adds N(0, 15²) noise in training only.
    noise = tf.keras.layers.GaussianNoise(15.)
    x = np.zeros((200, 50), np.float32)
    np.testing.assert_array_equal(noise(x).numpy(), x)
    assert noise(x, training=True).numpy().std() == pytest.approx(15, rel=0.03)


# -- Sparse autoencoders -------------------------------------------------------------------

def test_sparse_autoencoder_with_l1_activity_regularization(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    sparse_l1_encoder = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(300, activation="sigmoid"),
        tf.keras.layers.ActivityRegularization(l1=1e-4)
    ])
    sparse_l1_decoder = tf.keras.Sequential([
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(28 * 28),
        tf.keras.layers.Reshape([28, 28])
    ])
    sparse_l1_ae = tf.keras.Sequential([sparse_l1_encoder, sparse_l1_decoder])

    # extra code – compiles and fits the model
    sparse_l1_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = sparse_l1_ae.fit(X_train, X_train, epochs=1,  # (the book: 10)
                               validation_data=(X_valid, X_valid))
    plot_reconstructions(sparse_l1_ae, X_valid)

    # The penalty: 1e-4 * sum |codings| / batch size (Keras 3 divides by the batch size).
    x = X_valid[:8]
    codings = sparse_l1_encoder(x).numpy().astype(np.float64)
    assert len(sparse_l1_ae.losses) == 1
    expected = 1e-4 * np.abs(codings).sum() / 8
    assert float(sparse_l1_ae.losses[0]) == pytest.approx(expected, rel=1e-5)
    # fit minimises mse + that penalty: evaluate reports their sum.
    sparse_l1_ae(x)
    mse = np.mean((sparse_l1_ae(x).numpy().astype(np.float64) - x) ** 2)
    assert sparse_l1_ae.evaluate(x, x, verbose=0, batch_size=8) == pytest.approx(
        mse + expected, rel=1e-4)


kl_divergence = tf.keras.losses.kullback_leibler_divergence


class KLDivergenceRegularizer(tf.keras.regularizers.Regularizer):
    def __init__(self, weight, target):
        self.weight = weight
        self.target = target

    def __call__(self, inputs):
        mean_activities = tf.reduce_mean(inputs, axis=0)
        return self.weight * (
            kl_divergence(self.target, mean_activities) +
            kl_divergence(1. - self.target, 1. - mean_activities))


def kl_sparse_autoencoder():
    kld_reg = KLDivergenceRegularizer(weight=5e-3, target=0.1)
    sparse_kl_encoder = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(300, activation="sigmoid",
                              activity_regularizer=kld_reg)
    ])
    sparse_kl_decoder = tf.keras.Sequential([
        tf.keras.layers.Dense(100, activation="relu"),
        tf.keras.layers.Dense(28 * 28),
        tf.keras.layers.Reshape([28, 28])
    ])
    sparse_kl_ae = tf.keras.Sequential([sparse_kl_encoder, sparse_kl_decoder])
    return sparse_kl_ae, sparse_kl_encoder


def test_sparse_autoencoder_with_kl_divergence_regularizer(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU
    sparse_kl_ae, sparse_kl_encoder = kl_sparse_autoencoder()

    # extra code – compiles and fits the model
    sparse_kl_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = sparse_kl_ae.fit(X_train, X_train, epochs=1,  # (the book: 10)
                               validation_data=(X_valid, X_valid))
    plot_reconstructions(sparse_kl_ae, X_valid)

    # The penalty in NumPy: 5e-3 * (KL(0.1 || q) + KL(0.9 || 1 - q)) summed over the 300
    # codings, q their mean activity on the batch; Keras 3 divides it by the batch size.
    x = X_valid[:8]
    codings = sparse_kl_encoder(x).numpy().astype(np.float64)
    q = codings.mean(axis=0)
    p = 0.1
    kl = np.sum(p * np.log(p / q)) + np.sum((1 - p) * np.log((1 - p) / (1 - q)))
    assert len(sparse_kl_ae.losses) == 1
    assert float(sparse_kl_ae.losses[0]) == pytest.approx(5e-3 * kl / 8, rel=1e-4)

    # A training step's gradient (mse + penalty) against finite differences in float64.
    with float64_weights():
        tf.random.set_seed(0)
        model = kl_sparse_autoencoder()[0]
        mse = mse_loss(X_train[:8])
        check_training_step(model, X_train[:8], lambda Y: mse(Y) + tf.add_n(model.losses))



# -- Generative adversarial networks -------------------------------------------------------

def train_gan(gan, dataset, batch_size, codings_size, n_epochs):
    generator, discriminator = gan.layers
    for epoch in range(n_epochs):
        print(f"Epoch {epoch + 1}/{n_epochs}")  # extra code
        for X_batch in dataset:
            # phase 1 - training the discriminator
            noise = tf.random.normal(shape=[batch_size, codings_size])
            generated_images = generator(noise)
            X_fake_and_real = tf.concat([generated_images, X_batch], axis=0)
            y1 = tf.constant([[0.]] * batch_size + [[1.]] * batch_size)
            discriminator.train_on_batch(X_fake_and_real, y1)
            # phase 2 - training the generator
            noise = tf.random.normal(shape=[batch_size, codings_size])
            y2 = tf.constant([[1.]] * batch_size)
            gan.train_on_batch(noise, y2)
        # extra code — plot images during training
        plot_multiple_images(generated_images.numpy(), 8)
        plt.close("all")


def weights(model):
    return [v.numpy().copy() for v in model.variables]


def moved(before, model):
    return [not np.array_equal(b, v.numpy()) for b, v in zip(before, model.variables)]


def test_gan(book):
    X_train = book["X_train"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    codings_size = 30

    Dense = tf.keras.layers.Dense
    generator = tf.keras.Sequential([
        Dense(100, activation="relu", kernel_initializer="he_normal"),
        Dense(150, activation="relu", kernel_initializer="he_normal"),
        Dense(28 * 28, activation="sigmoid"),
        tf.keras.layers.Reshape([28, 28])
    ])
    discriminator = tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        Dense(150, activation="relu", kernel_initializer="he_normal"),
        Dense(100, activation="relu", kernel_initializer="he_normal"),
        Dense(1, activation="sigmoid")
    ])
    gan = tf.keras.Sequential([generator, discriminator])

    discriminator.compile(loss="binary_crossentropy", optimizer="rmsprop")
    discriminator.trainable = False
    gan.compile(loss="binary_crossentropy", optimizer="rmsprop")

    batch_size = 32
    dataset = tf.data.Dataset.from_tensor_slices(X_train).shuffle(1000)
    dataset = dataset.batch(batch_size, drop_remainder=True).prefetch(1)

    # The two phases one at a time, on a batch: phase 1 trains the discriminator only (the
    # flag set after its compile does not freeze it), phase 2 the generator only.
    X_batch = tf.constant(X_train[:batch_size])
    noise = tf.random.normal(shape=[batch_size, codings_size])
    generated_images = generator(noise)
    X_fake_and_real = tf.concat([generated_images, X_batch], axis=0)
    y1 = tf.constant([[0.]] * batch_size + [[1.]] * batch_size)
    d_before, g_before = weights(discriminator), weights(generator)
    # The expected loss: binary cross-entropy of the discriminator on the batch, in NumPy.
    p = np.clip(discriminator(X_fake_and_real).numpy().astype(np.float64), 1e-7, 1 - 1e-7)
    y = y1.numpy()
    bce = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert discriminator.train_on_batch(X_fake_and_real, y1) == pytest.approx(bce, rel=1e-4)
    assert all(moved(d_before, discriminator)) and not any(moved(g_before, generator))
    assert discriminator.trainable is False   # (train_on_batch left the flag as it was)

    noise = tf.random.normal(shape=[batch_size, codings_size])
    y2 = tf.constant([[1.]] * batch_size)
    d_before, g_before = weights(discriminator), weights(generator)
    gan.train_on_batch(noise, y2)
    assert all(moved(g_before, generator)) and not any(moved(d_before, discriminator))

    # The book's loop (2 epochs of 2 batches; the book: 50 epochs of 1,718).
    d_before, g_before = weights(discriminator), weights(generator)
    train_gan(gan, dataset, batch_size, codings_size, n_epochs=2)
    assert all(moved(d_before, discriminator)) and all(moved(g_before, generator))

    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    codings = tf.random.normal(shape=[batch_size, codings_size])
    generated_images = generator.predict(codings)
    plot_multiple_images(generated_images, 8)
    save_fig("gan_generated_images_plot", tight_layout=False)
    assert generated_images.shape == (32, 28, 28)
    assert generated_images.min() >= 0 and generated_images.max() <= 1   # (sigmoid)



# -- Deep convolutional GANs ---------------------------------------------------------------

def test_dcgan(book):
    X_train = book["X_train"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    codings_size = 100

    generator = tf.keras.Sequential([
        tf.keras.layers.Dense(7 * 7 * 128),
        tf.keras.layers.Reshape([7, 7, 128]),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Conv2DTranspose(64, kernel_size=5, strides=2,
                                        padding="same", activation="relu"),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Conv2DTranspose(1, kernel_size=5, strides=2,
                                        padding="same", activation="tanh"),
    ])
    discriminator = tf.keras.Sequential([
        tf.keras.layers.Conv2D(64, kernel_size=5, strides=2, padding="same",
                               activation=tf.keras.layers.LeakyReLU(0.2)),
        tf.keras.layers.Dropout(0.4),
        tf.keras.layers.Conv2D(128, kernel_size=5, strides=2, padding="same",
                               activation=tf.keras.layers.LeakyReLU(0.2)),
        tf.keras.layers.Dropout(0.4),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(1, activation="sigmoid")
    ])
    gan = tf.keras.Sequential([generator, discriminator])

    # extra code – compiles the discrimator and the gan, as earlier
    discriminator.compile(loss="binary_crossentropy", optimizer="rmsprop")
    discriminator.trainable = False
    gan.compile(loss="binary_crossentropy", optimizer="rmsprop")

    X_train_dcgan = X_train.reshape(-1, 28, 28, 1) * 2. - 1.  # reshape and rescale

    # extra code – generates the dataset and trains the GAN, just like earlier
    batch_size = 32
    dataset = tf.data.Dataset.from_tensor_slices(X_train_dcgan)
    dataset = dataset.shuffle(1000)
    dataset = dataset.batch(batch_size, drop_remainder=True).prefetch(1)
    generator(tf.zeros([1, codings_size]))
    d_before, g_before = weights(discriminator), weights(generator)
    train_gan(gan, dataset, batch_size, codings_size, n_epochs=1)  # (the book: 50)
    # Both networks learnt; the generator's batch-norm statistics moved too (non-trainable).
    assert all(moved(d_before, discriminator)) and all(moved(g_before, generator))
    assert len(generator.non_trainable_variables) == 4

    # extra code – this cell generates and saves Figure 17–16
    tf.random.set_seed(42)
    noise = tf.random.normal(shape=[batch_size, codings_size])
    generated_images = generator.predict(noise)
    plot_multiple_images(generated_images, 8)
    save_fig("dcgan_generated_images_plot", tight_layout=False)
    assert generated_images.shape == (32, 28, 28, 1)
    assert np.abs(generated_images).max() <= 1   # (tanh)

    # LeakyReLU(0.2) as an activation: x for x > 0, 0.2 x below.
    leaky = discriminator.layers[0].activation
    np.testing.assert_allclose(leaky(np.array([-2.0, 3.0], np.float32)).numpy(), [-0.4, 3.0],
                               rtol=1e-6)
    # A training step of each network against finite differences, in float64 (inference
    # mode: no dropout masks, batch-norm from its moving statistics).
    with float64_weights():
        tf.random.set_seed(0)
        small_generator = tf.keras.Sequential([
            tf.keras.layers.Dense(7 * 7 * 8),
            tf.keras.layers.Reshape([7, 7, 8]),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Conv2DTranspose(4, kernel_size=5, strides=2,
                                            padding="same", activation="relu"),
            tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Conv2DTranspose(1, kernel_size=5, strides=2,
                                            padding="same", activation="tanh"),
        ])
        target = X_train_dcgan[:4]
        check_training_step(small_generator, np.random.default_rng(1).standard_normal((4, 6)),
                            mse_loss(target), training=False)
        small_discriminator = tf.keras.Sequential([
            tf.keras.layers.Conv2D(4, kernel_size=5, strides=2, padding="same",
                                   activation=tf.keras.layers.LeakyReLU(0.2)),
            tf.keras.layers.Dropout(0.4),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(1, activation="sigmoid")
        ])
        labels = tf.constant([[0.], [1.], [0.], [1.]], tf.float64)
        check_training_step(small_discriminator, target,
                            lambda p: tf.reduce_mean(
                                tf.keras.losses.binary_crossentropy(labels, p)),
                            training=False)



# -- Diffusion models ----------------------------------------------------------------------

def variance_schedule(T, s=0.008, max_beta=0.999):
    t = np.arange(T + 1)
    f = np.cos((t / T + s) / (1 + s) * np.pi / 2) ** 2
    alpha = np.clip(f[1:] / f[:-1], 1 - max_beta, 1)
    alpha = np.append(1, alpha).astype(np.float32)  # add α₀ = 1
    beta = 1 - alpha
    alpha_cumprod = np.cumprod(alpha)
    return alpha, alpha_cumprod, beta  # αₜ , α̅ₜ , βₜ for t = 0 to T


embed_size = 64


class TimeEncoding(tf.keras.layers.Layer):
    def __init__(self, T, embed_size, dtype=tf.float32, **kwargs):
        super().__init__(dtype=dtype, **kwargs)
        assert embed_size % 2 == 0, "embed_size must be even"
        p, i = np.meshgrid(np.arange(T + 1), 2 * np.arange(embed_size // 2))
        t_emb = np.empty((T + 1, embed_size))
        t_emb[:, ::2] = np.sin(p / 10_000 ** (i / embed_size)).T
        t_emb[:, 1::2] = np.cos(p / 10_000 ** (i / embed_size)).T
        self.time_encodings = tf.constant(t_emb.astype(self.dtype))

    def call(self, inputs):
        return tf.gather(self.time_encodings, inputs)


def test_diffusion_variance_schedule_and_batches(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    np.random.seed(42)  # extra code – for reproducibility
    T = 4000
    alpha, alpha_cumprod, beta = variance_schedule(T)

    # The book's formulas in float64: f(t) = cos²((t/T + s) / (1 + s) · π/2), α̅ₜ = f(t) / f(0)
    # (the product telescopes while no αₜ is clipped), βₜ = 1 - αₜ.
    t = np.arange(T + 1)
    f = np.cos((t / T + 0.008) / 1.008 * np.pi / 2) ** 2
    assert alpha.dtype == np.float32 and alpha[0] == 1 and beta[0] == 0
    np.testing.assert_allclose(alpha_cumprod[:T - 50], (f / f[0])[:T - 50], rtol=1e-3,
                               atol=1e-6)
    np.testing.assert_allclose(beta, 1 - alpha)
    assert beta.max() <= 0.999 + 1e-6 and np.all(np.diff(alpha_cumprod) <= 0)

    def prepare_batch(X):
        X = tf.cast(X[..., tf.newaxis], tf.float32) * 2 - 1  # scale from –1 to +1
        X_shape = tf.shape(X)
        t = tf.random.uniform([X_shape[0]], minval=1, maxval=T + 1, dtype=tf.int32)
        alpha_cm = tf.gather(alpha_cumprod, t)
        alpha_cm = tf.reshape(alpha_cm, [X_shape[0]] + [1] * (len(X_shape) - 1))
        noise = tf.random.normal(X_shape)
        return {
            "X_noisy": alpha_cm ** 0.5 * X + (1 - alpha_cm) ** 0.5 * noise,
            "time": t,
        }, noise

    def prepare_dataset(X, batch_size=32, shuffle=False):
        ds = tf.data.Dataset.from_tensor_slices(X)
        if shuffle:
            ds = ds.shuffle(10_000)
        return ds.batch(batch_size).map(prepare_batch).prefetch(1)

    tf.random.set_seed(43)  # extra code – ensures reproducibility on CPU
    train_set = prepare_dataset(X_train, batch_size=32, shuffle=True)
    valid_set = prepare_dataset(X_valid, batch_size=32)

    # extra code – just a quick sanity check

    def subtract_noise(X_noisy, time, noise):
        X_shape = tf.shape(X_noisy)
        alpha_cm = tf.gather(alpha_cumprod, time)
        alpha_cm = tf.reshape(alpha_cm, [X_shape[0]] + [1] * (len(X_shape) - 1))
        return (X_noisy - (1 - alpha_cm) ** 0.5 * noise) / alpha_cm ** 0.5

    X_dict, Y_noise = list(train_set.take(1))[0]  # get the first batch
    X_original = subtract_noise(X_dict["X_noisy"], X_dict["time"], Y_noise)

    plot_multiple_images(X_original[:8].numpy())
    plot_multiple_images(X_dict["X_noisy"][:8].numpy())
    plot_multiple_images(Y_noise[:8].numpy())
    times = X_dict["time"].numpy()
    assert X_dict["X_noisy"].shape == (32, 28, 28, 1) and times.dtype == np.int32
    assert times.min() >= 1 and times.max() <= T
    # Removing the noise gives back images of the training set, scaled to [-1, 1].
    originals = X_original.numpy()
    scaled = X_train[..., None] * 2 - 1
    for image in originals[:4]:
        distances = np.abs(scaled - image).max(axis=(1, 2, 3))
        assert distances.min() < 2e-2
    # The noisy images are √α̅ₜ x + √(1 - α̅ₜ) ε, in NumPy.
    a = alpha_cumprod[times].astype(np.float64)[:, None, None, None]
    np.testing.assert_allclose(X_dict["X_noisy"].numpy(),
                               a ** 0.5 * originals + (1 - a) ** 0.5 * Y_noise.numpy(),
                               rtol=1e-4, atol=2e-4)
    batch_sizes = [x["X_noisy"].shape[0] for x, _ in valid_set]
    assert batch_sizes == [32]

    # The time encoding: sin/cos of t / 10000^(2i/d) (the Transformer's positional encoding).
    time_encoding = TimeEncoding(T, embed_size)
    codes = time_encoding(tf.constant([0, 1, 4000])).numpy()
    for row, step in zip(codes, (0, 1, 4000)):
        angles = step / 10_000 ** (2 * np.arange(32) / 64)
        np.testing.assert_allclose(row[::2], np.sin(angles), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(row[1::2], np.cos(angles), rtol=1e-5, atol=1e-6)
    assert codes.dtype == np.float32


def test_diffusion_generate():
    # ``generate`` as printed, with a small T and, instead of the trained U-Net, a small
    # functional model of the same inputs: the loop is checked step by step in NumPy.
    T = 6
    alpha, alpha_cumprod, beta = variance_schedule(T)

    X_noisy = tf.keras.layers.Input(shape=[28, 28, 1], name="X_noisy")
    time_input = tf.keras.layers.Input(shape=[], dtype=tf.int32, name="time")
    time_enc = TimeEncoding(T, embed_size)(time_input)
    time = tf.keras.layers.Dense(1)(time_enc)
    outputs = tf.keras.layers.Conv2D(1, 3, padding="same")(X_noisy) + time[:, tf.newaxis,
                                                                           tf.newaxis, :]
    model = tf.keras.Model(inputs=[X_noisy, time_input], outputs=[outputs])

    def generate(model, batch_size=32):
        X = tf.random.normal([batch_size, 28, 28, 1])
        for t in range(T - 1, 0, -1):
            print(f"\rt = {t}", end=" ")  # extra code – show progress
            noise = (tf.random.normal if t > 1 else tf.zeros)(tf.shape(X))
            X_noise = model({"X_noisy": X, "time": tf.constant([t] * batch_size)})
            X = (
                1 / alpha[t] ** 0.5
                * (X - beta[t] / (1 - alpha_cumprod[t]) ** 0.5 * X_noise)
                + (1 - alpha[t]) ** 0.5 * noise
            )
        return X

    tf.random.set_seed(42)  # extra code – ensures reproducibility on the CPU
    X_gen = generate(model, batch_size=4)  # generated images (the book: 32)
    plot_multiple_images(X_gen.numpy(), 8)
    assert X_gen.shape == (4, 28, 28, 1)

    # The same draws replayed in NumPy (float64): the DDPM step
    # xₜ₋₁ = (xₜ - βₜ / √(1 - α̅ₜ) ε̂) / √αₜ + √βₜ z, with z = 0 at the last step.
    tf.random.set_seed(42)
    X = tf.random.normal([4, 28, 28, 1]).numpy().astype(np.float64)
    for t in range(T - 1, 0, -1):
        z = tf.random.normal([4, 28, 28, 1]).numpy() if t > 1 else np.zeros(X.shape)
        eps = model({"X_noisy": X.astype(np.float32),
                     "time": tf.constant([t] * 4)}).numpy().astype(np.float64)
        X = (X - beta[t] / (1 - alpha_cumprod[t]) ** 0.5 * eps) / alpha[t] ** 0.5 \
            + (1 - alpha[t]) ** 0.5 * z
    np.testing.assert_allclose(X_gen.numpy(), X, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not hasattr(tf.keras.layers, "SeparableConv2D"),
                    reason="SeparableConv2D is another helper's (convchollet) scope")
def test_diffusion_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    T = 20  # (the book: 4000; the model only reads it for TimeEncoding's table)

    def build_diffusion_model():
        X_noisy = tf.keras.layers.Input(shape=[28, 28, 1], name="X_noisy")
        time_input = tf.keras.layers.Input(shape=[], dtype=tf.int32, name="time")
        time_enc = TimeEncoding(T, embed_size)(time_input)

        dim = 16
        Z = tf.keras.layers.ZeroPadding2D((3, 3))(X_noisy)
        Z = tf.keras.layers.Conv2D(dim, 3)(Z)
        Z = tf.keras.layers.BatchNormalization()(Z)
        Z = tf.keras.layers.Activation("relu")(Z)

        time = tf.keras.layers.Dense(dim)(time_enc)  # adapt time encoding
        Z = time[:, tf.newaxis, tf.newaxis, :] + Z  # add time data to every pixel

        skip = Z
        cross_skips = []  # skip connections across the down & up parts of the UNet

        for dim in (32, 64, 128):
            Z = tf.keras.layers.Activation("relu")(Z)
            Z = tf.keras.layers.SeparableConv2D(dim, 3, padding="same")(Z)
            Z = tf.keras.layers.BatchNormalization()(Z)

            Z = tf.keras.layers.Activation("relu")(Z)
            Z = tf.keras.layers.SeparableConv2D(dim, 3, padding="same")(Z)
            Z = tf.keras.layers.BatchNormalization()(Z)

            cross_skips.append(Z)
            Z = tf.keras.layers.MaxPooling2D(3, strides=2, padding="same")(Z)
            skip_link = tf.keras.layers.Conv2D(dim, 1, strides=2,
                                               padding="same")(skip)
            Z = tf.keras.layers.add([Z, skip_link])

            time = tf.keras.layers.Dense(dim)(time_enc)
            Z = time[:, tf.newaxis, tf.newaxis, :] + Z
            skip = Z

        for dim in (64, 32, 16):
            Z = tf.keras.layers.Activation("relu")(Z)
            Z = tf.keras.layers.Conv2DTranspose(dim, 3, padding="same")(Z)
            Z = tf.keras.layers.BatchNormalization()(Z)

            Z = tf.keras.layers.Activation("relu")(Z)
            Z = tf.keras.layers.Conv2DTranspose(dim, 3, padding="same")(Z)
            Z = tf.keras.layers.BatchNormalization()(Z)

            Z = tf.keras.layers.UpSampling2D(2)(Z)

            skip_link = tf.keras.layers.UpSampling2D(2)(skip)
            skip_link = tf.keras.layers.Conv2D(dim, 1, padding="same")(skip_link)
            Z = tf.keras.layers.add([Z, skip_link])

            time = tf.keras.layers.Dense(dim)(time_enc)
            Z = time[:, tf.newaxis, tf.newaxis, :] + Z
            Z = tf.keras.layers.concatenate([Z, cross_skips.pop()], axis=-1)
            skip = Z

        outputs = tf.keras.layers.Conv2D(1, 3, padding="same")(Z)[:, 2:-2, 2:-2]
        return tf.keras.Model(inputs=[X_noisy, time_input], outputs=[outputs])

    alpha, alpha_cumprod, beta = variance_schedule(T)

    def prepare_batch(X):
        X = tf.cast(X[..., tf.newaxis], tf.float32) * 2 - 1  # scale from –1 to +1
        X_shape = tf.shape(X)
        t = tf.random.uniform([X_shape[0]], minval=1, maxval=T + 1, dtype=tf.int32)
        alpha_cm = tf.gather(alpha_cumprod, t)
        alpha_cm = tf.reshape(alpha_cm, [X_shape[0]] + [1] * (len(X_shape) - 1))
        noise = tf.random.normal(X_shape)
        return {
            "X_noisy": alpha_cm ** 0.5 * X + (1 - alpha_cm) ** 0.5 * noise,
            "time": t,
        }, noise

    def prepare_dataset(X, batch_size=32, shuffle=False):
        ds = tf.data.Dataset.from_tensor_slices(X)
        if shuffle:
            ds = ds.shuffle(10_000)
        return ds.batch(batch_size).map(prepare_batch).prefetch(1)

    X_train = np.random.default_rng(0).uniform(0, 1, (8, 28, 28)).astype(np.float32)
    train_set = prepare_dataset(X_train, batch_size=4, shuffle=True)  # (the book: 32)
    valid_set = prepare_dataset(X_train[:4], batch_size=4)

    tf.random.set_seed(42)  # extra code – ensures reproducibility on the CPU
    model = build_diffusion_model()
    model.compile(loss=tf.keras.losses.Huber(), optimizer=tf.keras.optimizers.Nadam())
    assert model.outputs[0].shape == (None, 28, 28, 1)

    # extra code – adds a ModelCheckpoint callback
    with pytest.raises(ValueError, match="must end in `.keras`"):   # (Keras 3 asks so)
        checkpoint_cb = tf.keras.callbacks.ModelCheckpoint("my_diffusion_model",
                                                           save_best_only=True)
    checkpoint_cb = tf.keras.callbacks.ModelCheckpoint("my_diffusion_model.keras",
                                                       save_best_only=True)

    history = model.fit(train_set, validation_data=valid_set, epochs=1,  # (the book: 100)
                        callbacks=[checkpoint_cb])  # extra code
    assert math.isfinite(history.history["val_loss"][0])
    restored = tf.keras.models.load_model("my_diffusion_model.keras",
                                          custom_objects={"TimeEncoding": TimeEncoding})
    X_dict = {"X_noisy": np.ones((2, 28, 28, 1), np.float32), "time": np.array([3, 9])}
    np.testing.assert_allclose(restored(X_dict).numpy(), model(X_dict).numpy(), rtol=1e-5,
                               atol=1e-6)


# -- the fixes the chapter needed, one by one ----------------------------------------------

def test_layer_input_shape_is_its_first_input_shape_in_a_model():
    dense_1, dense_2 = tf.keras.layers.Dense(5), tf.keras.layers.Dense(2)
    model = tf.keras.Sequential([tf.keras.layers.Flatten(), dense_1, dense_2])
    with pytest.raises(AttributeError, match="never been called inside a model"):
        dense_1.input_shape
    model(np.zeros((4, 3, 2), np.float32))
    assert dense_1.input_shape == (None, 6) and dense_2.input_shape == (None, 5)
    assert model.layers[0].input_shape == (None, 3, 2)
    inputs = tf.keras.Input(shape=[7])
    dense_3 = tf.keras.layers.Dense(1)
    dense_3(inputs)
    assert dense_3.input_shape == (None, 7)
    assert tf.keras.Model(inputs, dense_3(inputs)).input_shape == (None, 7)
    # Called alone on a tensor, a layer has no input shape (tf.keras 2 says so too).
    dense_4 = tf.keras.layers.Dense(1)
    dense_4(np.zeros((2, 3), np.float32))
    with pytest.raises(AttributeError, match="never been called inside a model"):
        dense_4.input_shape


def test_add_weight_takes_an_int_shape():
    layer = tf.keras.layers.Layer()
    assert layer.add_weight(shape=3, initializer="ones").shape == (3,)
    assert layer.add_weight(shape=np.int64(2)).shape == (2,)


def test_kl_divergence_matches_numpy_and_its_aliases():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=3)
    q = rng.dirichlet(np.ones(4), size=3)
    expected = np.sum(p * np.log(p / q), axis=-1)
    losses = tf.keras.losses
    for fn in (losses.kl_divergence, losses.kullback_leibler_divergence, losses.kld,
               losses.KLD, losses.get("kld")):
        np.testing.assert_allclose(fn(p, q).numpy(), expected, rtol=1e-10)
    assert float(losses.KLDivergence()(p, q)) == pytest.approx(expected.mean(), rel=1e-10)
    # Both sides clipped to [1e-7, 1]: a zero target adds nothing, a zero prediction is finite.
    assert float(losses.kl_divergence([0.0, 1.0], [0.5, 0.5])) == pytest.approx(
        math.log(2) + 1e-7 * math.log(1e-7 / 0.5), rel=1e-6)
    assert math.isfinite(float(losses.kl_divergence([0.5, 0.5], [0.0, 1.0])))
    # A float target broadcasts against a vector (the book's regularizer).
    q1 = rng.uniform(0.05, 0.95, 6)
    assert float(losses.kl_divergence(0.1, q1)) == pytest.approx(
        np.sum(0.1 * np.log(0.1 / q1)), rel=1e-7)  # (0.1 goes through float32)
    # The gradient with respect to the prediction: -y_true / y_pred.
    q_var = tf.Variable(q)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(losses.kl_divergence(p, q_var))
    np.testing.assert_allclose(tape.gradient(loss, q_var).numpy(), -p / q, rtol=1e-10)


def test_activity_regularization_layer():
    layer = tf.keras.layers.ActivityRegularization(l1=0.1, l2=0.01)
    x = np.array([[1.0, -2.0], [3.0, 0.5]])
    np.testing.assert_array_equal(layer(x).numpy(), x)
    expected = (0.1 * np.abs(x).sum() + 0.01 * np.square(x).sum()) / 2
    assert [float(v) for v in layer.losses] == pytest.approx([expected])
    assert layer.get_config()["l1"] == 0.1 and layer.get_config()["l2"] == 0.01
    copy = tf.keras.layers.ActivityRegularization.from_config(layer.get_config())
    copy(x)
    assert [float(v) for v in copy.losses] == pytest.approx([expected])


# -- Variational autoencoders --------------------------------------------------------------

class Sampling(tf.keras.layers.Layer):
    def call(self, inputs):
        mean, log_var = inputs
        return tf.random.normal(tf.shape(log_var)) * tf.exp(log_var / 2) + mean


def test_variational_autoencoder(book):
    X_train, X_valid = book["X_train"], book["X_valid"]
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    codings_size = 10

    inputs = tf.keras.layers.Input(shape=[28, 28])
    Z = tf.keras.layers.Flatten()(inputs)
    Z = tf.keras.layers.Dense(150, activation="relu")(Z)
    Z = tf.keras.layers.Dense(100, activation="relu")(Z)
    codings_mean = tf.keras.layers.Dense(codings_size)(Z)  # μ
    codings_log_var = tf.keras.layers.Dense(codings_size)(Z)  # γ
    codings = Sampling()([codings_mean, codings_log_var])
    variational_encoder = tf.keras.Model(
        inputs=[inputs], outputs=[codings_mean, codings_log_var, codings])

    decoder_inputs = tf.keras.layers.Input(shape=[codings_size])
    x = tf.keras.layers.Dense(100, activation="relu")(decoder_inputs)
    x = tf.keras.layers.Dense(150, activation="relu")(x)
    x = tf.keras.layers.Dense(28 * 28)(x)
    outputs = tf.keras.layers.Reshape([28, 28])(x)
    variational_decoder = tf.keras.Model(inputs=[decoder_inputs], outputs=[outputs])

    _, _, codings = variational_encoder(inputs)
    reconstructions = variational_decoder(codings)
    variational_ae = tf.keras.Model(inputs=[inputs], outputs=[reconstructions])

    # The book's next cell applies TensorFlow ops to KerasTensors, which tf.keras 2 recorded
    # as layers (TFOpLambda) and Keras 3 refuses: minitape follows Keras 3 and says so.
    with pytest.raises(TypeError, match="KerasTensor.*Keras 3 refuses it too"):
        latent_loss = -0.5 * tf.reduce_sum(
            1 + codings_log_var - tf.exp(codings_log_var) - tf.square(codings_mean),
            axis=-1)
        variational_ae.add_loss(tf.reduce_mean(latent_loss) / 784.)
    # Its formula on real Tensors against the closed form of KL(N(μ, σ²) || N(0, 1)) in NumPy,
    # and its gradient with respect to γ = log σ²: -0.5 * (1 - exp(γ)) / batch / 784.
    mean, log_var, _ = variational_encoder(X_valid[:8])
    log_var = tf.Variable(tf.cast(log_var, tf.float64))
    mean64 = tf.cast(mean, tf.float64)
    with tf.GradientTape() as tape:
        latent_loss = -0.5 * tf.reduce_sum(
            1 + log_var - tf.exp(log_var) - tf.square(mean64), axis=-1)
        loss = tf.reduce_mean(latent_loss) / 784.
    m, v = mean64.numpy(), log_var.numpy()
    sigma2 = np.exp(v)
    kl = 0.5 * np.sum(sigma2 + m ** 2 - 1 - np.log(sigma2), axis=-1)
    np.testing.assert_allclose(latent_loss.numpy(), kl, rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(loss, log_var).numpy(),
                               -0.5 * (1 - sigma2) / 8 / 784, rtol=1e-12)

    variational_ae.compile(loss="mse", optimizer=tf.keras.optimizers.Nadam())
    history = variational_ae.fit(X_train, X_train, epochs=2,  # (the book: 25)
                                 batch_size=128,
                                 validation_data=(X_valid, X_valid))
    plot_reconstructions(variational_ae, X_valid)
    assert len(history.history["loss"]) == 2

    # The codings are sampled: mean + exp(log_var / 2) * eps, a new eps at each call; with
    # the seed reset, eps is the same N(0, 1) draw: recover it and check the formula.
    x = X_valid[:8]
    tf.random.set_seed(7)
    mean, log_var, sampled = (t.numpy().astype(np.float64) for t in variational_encoder(x))
    assert sampled.shape == (8, codings_size)
    assert not np.allclose(variational_encoder(x)[2].numpy(), sampled)
    tf.random.set_seed(7)
    eps = tf.random.normal([8, codings_size]).numpy().astype(np.float64)
    np.testing.assert_allclose(sampled, eps * np.exp(log_var / 2) + mean, rtol=1e-5, atol=1e-6)

    # Generating Fashion images
    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    codings = tf.random.normal(shape=[3 * 7, codings_size])
    images = variational_decoder(codings).numpy()
    plot_multiple_images(images, 7)
    save_fig("vae_generated_images_plot", tight_layout=False)
    assert images.shape == (21, 28, 28)

    tf.random.set_seed(42)  # extra code – ensures reproducibility on CPU

    codings = np.zeros([7, codings_size])
    codings[:, 3] = np.linspace(-0.8, 0.8, 7)  # axis 3 looks best in this case
    images = variational_decoder(codings).numpy()
    plot_multiple_images(images)
    assert images.shape == (7, 28, 28)
    # The decoder is deterministic: the middle image decodes the zero coding.
    np.testing.assert_allclose(images[3], variational_decoder(np.zeros([1, 10])).numpy()[0],
                               rtol=1e-5, atol=1e-6)


def test_keras_tensor_operators_are_recorded_as_keras_3():
    x = tf.keras.Input(shape=[4])
    t = tf.keras.Input(shape=[3, 3, 4])
    y = 1 - 2 * x[:, tf.newaxis, tf.newaxis, :] / 4 + t ** 2
    z = (-y)[:, 1:, :2] * abs(t[:, 1:, :2]) - 0.5
    assert z.shape == (None, 2, 2, 4) and type(z).__name__ == "KerasTensor"
    model = tf.keras.Model([x, t], z)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4)), rng.standard_normal((2, 3, 3, 4))
    expected = -(1 - 2 * a[:, None, None, :] / 4 + b ** 2)[:, 1:, :2] * np.abs(b[:, 1:, :2]) - 0.5
    np.testing.assert_allclose(model([a.astype(np.float32), b.astype(np.float32)]).numpy(),
                               expected, rtol=1e-5, atol=1e-6)
    # The replay is recorded by a tape as the ops it runs: gradients flow to a layer before.
    inputs = tf.keras.Input(shape=[3])
    dense = tf.keras.layers.Dense(2)
    h = dense(inputs)
    outputs = h[:, :1] * h[:, 1:] + h
    model = tf.keras.Model(inputs, outputs)
    X = tf.constant(rng.standard_normal((5, 3)).astype(np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(X))
    grad = tape.gradient(loss, dense.kernel).numpy()
    H = (X.numpy() @ dense.kernel.numpy() + dense.bias.numpy()).astype(np.float64)
    # The output's two columns are h0 h1 + h0 and h0 h1 + h1: d/dH of their sum is
    # (2 h1 + 1, 2 h0 + 1); then the chain rule through H = X W + b.
    dH = np.stack([2 * H[:, 1] + 1, 2 * H[:, 0] + 1], axis=1)
    np.testing.assert_allclose(grad, X.numpy().T @ dH, rtol=1e-4, atol=1e-5)
    # An op, not an operator, still gets the clear error (Keras 3 refuses it too).
    with pytest.raises(TypeError, match="Keras 3 refuses it too"):
        tf.exp(x)


def test_a_functional_model_with_one_output_in_a_list_returns_it_alone():
    # As Keras 3's unpack_singleton (and tf.keras 2): Model(inputs, [y])(x) is a Tensor, so a
    # model built on it has one output, not a list of one (Géron's VAE decoder).
    inputs = tf.keras.Input(shape=[3])
    decoder = tf.keras.Model(inputs=[inputs], outputs=[tf.keras.layers.Dense(2)(inputs)])
    X = np.ones((4, 3), np.float32)
    assert isinstance(decoder(X), tf.Tensor) and decoder.predict(X, verbose=0).shape == (4, 2)
    outer_inputs = tf.keras.Input(shape=[3])
    outer = tf.keras.Model(inputs=[outer_inputs], outputs=[decoder(outer_inputs)])
    assert isinstance(outer(X), tf.Tensor)
    np.testing.assert_array_equal(outer(X).numpy(), decoder(X).numpy())
    # Two outputs stay a list.
    two = tf.keras.Model(inputs, [inputs * 2, inputs + 1])
    assert isinstance(two(X), list) and len(two(X)) == 2


def test_train_on_batch_is_one_sgd_step_on_the_whole_batch():
    with float64_weights():
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.1))
        rng = np.random.default_rng(0)
        X, y = rng.standard_normal((40, 3)), rng.standard_normal((40, 1))
        model(X[:1])
        W, b = model.layers[0].kernel.numpy().copy(), model.layers[0].bias.numpy().copy()
        r = X @ W + b - y
        loss = model.train_on_batch(X, y)   # (all 40 samples: not batches of 32)
        assert loss == pytest.approx(np.mean(r ** 2), rel=1e-6)  # (the tracker: float32)
        # (rtol 1e-7: the learning rate is a float32 0.1)
        np.testing.assert_allclose(model.layers[0].kernel.numpy(), W - 0.1 * 2 * X.T @ r / 40,
                                   rtol=1e-7)
        np.testing.assert_allclose(model.layers[0].bias.numpy(), b - 0.1 * 2 * r.mean(0),
                                   rtol=1e-7)
        assert model.train_on_batch(X, y, return_dict=True).keys() == {"loss"}
    with pytest.raises(ValueError, match="compile"):
        tf.keras.Sequential([tf.keras.layers.Dense(1)]).train_on_batch(X, y)


def test_the_weights_a_model_trains_are_settled_at_compile():
    # tf.keras 2 (and Keras 3's documentation): changing a layer's trainable flag after
    # compile changes nothing until the model is compiled again.
    dense = tf.keras.layers.Dense(1)
    model = tf.keras.Sequential([dense])
    model.compile(loss="mse", optimizer="sgd")
    dense.trainable = False
    X, y = np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32)
    model(X)
    before = dense.kernel.numpy().copy()
    model.train_on_batch(X, y)
    assert not np.array_equal(dense.kernel.numpy(), before) and dense.trainable is False
    model.compile(loss="mse", optimizer="sgd")
    before = dense.kernel.numpy().copy()
    with pytest.warns(UserWarning, match="no.* trainable weights"):
        model.fit(X, y, verbose=0)
    np.testing.assert_array_equal(dense.kernel.numpy(), before)


def test_a_model_with_keras_tensor_operators_saves_and_loads(tmp_path):
    x = tf.keras.Input(shape=[3, 4])
    y = tf.keras.layers.Dense(2)(x)
    z = (1 - y[..., :1, tf.newaxis] * 2) ** 2 + y[:, 1:2, None]
    model = tf.keras.Model(x, z)
    path = str(tmp_path / "operators.keras")
    model.save(path)
    restored = tf.keras.models.load_model(path)
    X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(restored(X).numpy(), model(X).numpy(), rtol=1e-6)
    assert restored(X).shape == (2, 3, 1, 2)


def test_fit_takes_a_dataset_as_validation_data():
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer="sgd")
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((10, 3)).astype(np.float32), rng.standard_normal((10, 1))
    valid = tf.data.Dataset.from_tensor_slices((X[:6], y[:6].astype(np.float32))).batch(4)
    history = model.fit(X, y, epochs=1, verbose=0, validation_data=valid)
    expected = model.evaluate(X[:6], y[:6], verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(expected, rel=1e-6)


def test_repeat_vector():
    layer = tf.keras.layers.RepeatVector(3)
    x = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        y = layer(x)
        loss = tf.reduce_sum(y * np.arange(12.0).reshape(2, 3, 2))
    np.testing.assert_array_equal(y.numpy(), np.repeat(x.numpy()[:, None], 3, axis=1))
    # The gradient sums the three copies' cotangents.
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(),
                                  np.arange(12.0).reshape(2, 3, 2).sum(axis=1))
    assert tf.keras.layers.RepeatVector.from_config(layer.get_config()).n == 3
    with pytest.raises(ValueError, match="shape \\(batch, features\\)"):
        layer(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="positive int"):
        tf.keras.layers.RepeatVector(0)
