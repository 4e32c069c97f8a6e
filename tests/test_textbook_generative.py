"""Géron, "Hands-On Machine Learning" (3rd edition), chapter 17: autoencoders, GANs and
diffusion models, with ``import minitape as tf``.

One test per section, the notebook's code cells as printed (only the import switched): the
linear autoencoder doing PCA, stacked, tied, one-at-a-time, convolutional, denoising, sparse and
variational autoencoders, the GAN and DCGAN trained with ``train_gan``, and the diffusion
model's pieces. Sizes and epochs are shrunk (said in comments where they are); Fashion-MNIST is
replaced by small synthetic files in a temporary Keras cache (the ``fashion`` fixture of
``tests/test_textbook_d2l.py``). Numbers are checked against independent values: PCA's subspace
from NumPy's SVD, the VAE's latent loss and the KL sparsity penalty in closed form in NumPy,
the GAN's frozen discriminator, the diffusion schedule from the book's formulas, and training
steps against central finite differences in float64.
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
