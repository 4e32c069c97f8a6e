"""``mt.keras.datasets``: ``fashion_mnist.load_data()`` and ``mnist.load_data()``, as Keras.

Each reads Keras's own files from Keras's cache, ``~/.keras/datasets/`` (``$KERAS_HOME``
instead of ``~/.keras`` when it is set), so data a learner fetched with TensorFlow is used as it
is; a file that is not there is downloaded first from Keras's address into that cache, as
``keras.utils.get_file`` does. "Dive into Deep Learning" (chapters 4 and 5) trains on
Fashion-MNIST this way: ``tf.keras.datasets.fashion_mnist.load_data()``.

Without a network, put the files there by hand (their names and the address are in the error
message), or use arrays of the same shapes and dtypes: ``uint8`` images ``(n, 28, 28)`` and
``uint8`` labels ``(n,)``.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import types
import urllib.error
import urllib.request

import numpy as np

__all__ = ["fashion_mnist", "mnist"]

#: Where Keras downloads these datasets from.
ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def cache_dir():
    """Keras's cache folder: ``$KERAS_HOME``, else ``~/.keras``."""
    return os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")


def _get_file(fname, subdir):
    """The path of ``fname`` in the cache folder ``subdir``, downloaded first if missing.

    The download is written to a temporary file renamed when complete, so an interrupted one
    leaves nothing half-written in the cache.

    Raises:
        ConnectionError: the file is not in the cache and cannot be downloaded; the message
            names the address and the path where the file can be put by hand.
    """
    folder = os.path.join(cache_dir(), subdir)
    path = os.path.join(folder, fname)
    if os.path.exists(path):
        return path
    url = ORIGIN + fname
    os.makedirs(folder, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            fd, partial = tempfile.mkstemp(dir=folder, prefix=fname, suffix=".part")
            with os.fdopen(fd, "wb") as out:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
        os.replace(partial, path)
    except (urllib.error.URLError, OSError) as e:
        raise ConnectionError(
            f"cannot download {url} ({e}); download it on a machine with a network and put it "
            f"at {path} (Keras's cache, which TensorFlow's load_data fills too), or train on "
            "arrays of the same shapes and dtypes") from None
    return path


def _load_fashion_mnist():
    """Fashion-MNIST, as ``keras.datasets.fashion_mnist.load_data()``.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: ``uint8`` images of shape ``(60000, 28, 28)``
        and ``(10000, 28, 28)``, ``uint8`` labels 0-9 of shape ``(60000,)`` and ``(10000,)``
        (0 t-shirt/top, 1 trouser, 2 pullover, 3 dress, 4 coat, 5 sandal, 6 shirt,
        7 sneaker, 8 bag, 9 ankle boot).

    Raises:
        ConnectionError: a file is missing from ``~/.keras/datasets/fashion-mnist/`` and
            cannot be downloaded.
    """
    subdir = os.path.join("datasets", "fashion-mnist")
    names = ["train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"]
    arrays = []
    for labels_name, images_name in (names[:2], names[2:]):
        with gzip.open(_get_file(labels_name, subdir), "rb") as f:   # (idx files: an 8- and
            labels = np.frombuffer(f.read(), np.uint8, offset=8)      # a 16-byte header)
        with gzip.open(_get_file(images_name, subdir), "rb") as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(len(labels), 28, 28)
        arrays.append((images.copy(), labels.copy()))
    return tuple(arrays)


def _load_mnist(path="mnist.npz"):
    """MNIST, as ``keras.datasets.mnist.load_data(path="mnist.npz")``: ``uint8`` images
    ``(60000, 28, 28)`` / ``(10000, 28, 28)`` and labels, from ``~/.keras/datasets/<path>``.

    Raises:
        ConnectionError: the file is missing and cannot be downloaded.
    """
    with np.load(_get_file(path, "datasets"), allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])


fashion_mnist = types.SimpleNamespace(load_data=_load_fashion_mnist)
mnist = types.SimpleNamespace(load_data=_load_mnist)
