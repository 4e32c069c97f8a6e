"""``mt.keras.utils``: ``set_random_seed``, ``to_categorical`` and ``plot_model``, as
``keras.utils``."""

from __future__ import annotations

import random

import numpy as np

from ..ops import random_ops
from ..engine.tensor import Tensor

__all__ = ["set_random_seed", "to_categorical", "plot_model", "model_to_dot",
           "unpack_x_y_sample_weight", "pack_x_y_sample_weight", "load_img", "img_to_array",
           "array_to_img", "save_img", "image_dataset_from_directory"]


def set_random_seed(seed):
    """Seed Python's ``random``, NumPy's global generator and minitape's, as Keras.

    As ``keras.utils.set_random_seed``: ``random.seed(seed)``, ``np.random.seed(seed)`` and
    ``mt.random.set_seed(seed)`` (TensorFlow's seed, which minitape's random ops, layer
    initializers, ``Dropout`` and ``fit``'s shuffling draw from). Afterwards a program makes
    the same random numbers on every run.

    Args:
        seed: an int.

    Raises:
        ValueError: ``seed`` is not an int (Keras's message).

    >>> import minitape as mt
    >>> mt.keras.utils.set_random_seed(42)
    >>> a = mt.random.normal([2])
    >>> mt.keras.utils.set_random_seed(42)
    >>> a.numpy().tolist() == mt.random.normal([2]).numpy().tolist()
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r} "
                         f"(of type {type(seed)})")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    random_ops.set_seed(seed)


def to_categorical(x, num_classes=None):
    """Integer class labels as one-hot rows, as ``keras.utils.to_categorical``.

    Args:
        x: integer labels of any shape (a Tensor, an ndarray or a list); a last axis of
            size 1 is dropped, as Keras.
        num_classes: the number of classes (default ``max(x) + 1``).

    Returns:
        A float32 NumPy array of shape ``x.shape + (num_classes,)``.

    Raises:
        ValueError: a label that is negative or not below ``num_classes``, or labels that
            are not integers.

    >>> import minitape as mt
    >>> mt.keras.utils.to_categorical([0, 2], num_classes=3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    labels = np.asarray(x.numpy() if isinstance(x, Tensor) else x)
    if labels.dtype.kind == "f" and np.all(labels == np.round(labels)):
        labels = labels.astype(np.int64)
    if labels.dtype.kind not in "iu":
        raise ValueError(f"to_categorical expects integer class labels, got dtype "
                         f"{labels.dtype}")
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 0
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must be in [0, {num_classes}) "
                         f"(num_classes={num_classes}), got values from {labels.min()} to "
                         f"{labels.max()}")
    return np.eye(num_classes, dtype=np.float32)[labels]


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=None, show_layer_activations=False,
                 show_trainable=False, **kwargs):
    """The DOT text (Graphviz's language) of a model's layers and how they connect, as
    ``keras.utils.model_to_dot`` (which returns a pydot graph; minitape returns the text).

    One box per layer (``name (ClassName)``, and with the options its output shape, dtype,
    activation and trainability), an arrow from each layer to each layer that reads its
    output. A Sequential is a chain; a functional model follows its calls; a subclassed
    model, whose connections live in its Python code, is one box per layer it holds,
    unconnected.

    Raises:
        TypeError: ``model`` is not an ``mt.keras`` model.
    """
    import graphviz

    from .functional import Functional, KerasTensor, _leaves
    from .models import Model, Sequential, _output_shapes
    if not isinstance(model, Model):
        raise TypeError(f"plot_model expects an mt.keras Model (Sequential, functional or "
                        f"subclassed), got {type(model).__name__}")
    graph_attr = {"rankdir": rankdir} if dpi is None else {"rankdir": rankdir, "dpi": str(dpi)}
    dot = graphviz.Digraph(model.name, graph_attr=graph_attr,
                           node_attr={"shape": "record", "fontname": "Helvetica",
                                      "fontsize": "12"})

    def describe(layer):
        rows = [f"{layer.name} ({type(layer).__name__})" if show_layer_names
                else type(layer).__name__]
        if show_shapes:
            rows.append(f"Output shape: {shapes.get(id(layer), '?')}")
        if show_dtype:
            dtype = getattr(layer, "dtype", None)
            rows.append(f"dtype: {getattr(dtype, 'name', dtype)}")
        if show_layer_activations and getattr(layer, "activation", None) is not None:
            rows.append(f"Activation: {getattr(layer.activation, '__name__', layer.activation)}")
        if show_trainable:
            rows.append(f"Trainable: {'Y' if getattr(layer, 'trainable', True) else 'N'}")
        return "{" + "|".join(r.replace("{", "(").replace("}", ")").replace("|", "/")
                              .replace("<", "&lt;").replace(">", "&gt;") for r in rows) + "}"

    shapes = _output_shapes(model) if show_shapes else {}
    ids = {}
    for layer in model.layers:
        ids[id(layer)] = f"layer{len(ids)}"
        dot.node(ids[id(layer)], describe(layer))
    if isinstance(model, Sequential):
        chain = [ids[id(layer)] for layer in model.layers]
        for a, b in zip(chain, chain[1:]):
            dot.edge(a, b)
    elif isinstance(model, Functional):
        for node in model._nodes:
            for x in _leaves((node.args, node.kwargs)):
                if isinstance(x, KerasTensor):
                    source = x._node.layer if x._node is not None else x._input_layer
                    dot.edge(ids[id(source)], ids[id(node.layer)])
    return dot.source


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=True, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, **kwargs):
    """Draw a model's layers and their connections to ``to_file``, as
    ``keras.utils.plot_model`` (``model_to_dot``'s picture, laid out by Graphviz).

    The file's extension picks the format (``.png``, ``.svg``, ``.pdf``). In a notebook the
    result displays the picture (an ``IPython.display.Image`` or ``SVG``, as Keras returns);
    elsewhere it is None.

    Raises:
        TypeError: ``model`` is not an ``mt.keras`` model.
        ValueError: an extension Graphviz cannot write.
        mt.viz.GraphvizNotFound: no Graphviz (the message names the install).
    """
    import os

    from ..viz.render import render_dot
    fmt = os.path.splitext(os.fspath(to_file))[1].lstrip(".").lower() or "png"
    if fmt not in ("png", "svg", "pdf", "jpg", "jpeg", "gif"):
        raise ValueError(f"plot_model: cannot write a .{fmt} file; use .png, .svg or .pdf")
    source = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                          show_layer_names=show_layer_names, rankdir=rankdir,
                          dpi=dpi if fmt in ("png", "jpg", "jpeg", "gif") else None,
                          show_layer_activations=show_layer_activations,
                          show_trainable=show_trainable)
    if fmt == "png":
        source = source.replace("{", f"{{\n  dpi={int(dpi)}", 1) if False else source
    data = render_dot(source, fmt="jpg" if fmt == "jpeg" else fmt)
    with open(to_file, "wb") as f:
        f.write(data)
    try:
        from IPython import get_ipython
        from IPython.display import SVG, Image
    except ImportError:
        return None
    if get_ipython() is None:
        return None
    return SVG(data=data) if fmt == "svg" else Image(filename=os.fspath(to_file))


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from what ``fit`` gives ``train_step``, as
    ``keras.utils.unpack_x_y_sample_weight``: a tuple ``(x,)``, ``(x, y)`` or ``(x, y,
    sample_weight)`` (the missing ones None), or ``x`` itself.

    >>> import minitape as mt
    >>> mt.keras.utils.unpack_x_y_sample_weight((1, 2))
    (1, 2, None)

    Raises:
        ValueError: a tuple of more than three entries.
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) > 3:
        raise ValueError("Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                         f"`(x, y, sample_weight)`, found a tuple of {len(data)} entries")
    return tuple(data) + (None,) * (3 - len(data))


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The reverse of ``unpack_x_y_sample_weight``, as ``keras.utils.pack_x_y_sample_weight``:
    ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``."""
    if y is None:
        return (x,)
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


# -- time series windows (rnnlayers: Geron's chapter 15, Chollet's chapter 10) ---------------

__all__ += ["timeseries_dataset_from_array"]


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """Batches of sliding windows over a series, as ``keras.utils.timeseries_dataset_from_array``.

    Window ``i`` starts at ``p = start_index + i * sequence_stride`` and holds the rows
    ``data[p], data[p + sampling_rate], ...`` (``sequence_length`` of them); its target is
    ``targets[p]`` (so ``targets=series[n:]`` with ``sequence_length=n`` pairs each window
    with the value that follows it, Geron's and Chollet's use). There are ``end_index -
    start_index - (sequence_length - 1) * sampling_rate`` start positions before the stride
    (no more than ``len(targets)``). ``shuffle=True`` shuffles the windows (``seed`` makes
    it repeatable) and reshuffles each epoch.

    Args:
        data: an array ``(steps, ...)`` (a list, a NumPy array, a Tensor, a pandas Series).
        targets: an array with one target per step of ``data``, or None (then the dataset
            yields the windows alone).
        sequence_length, sequence_stride, sampling_rate, batch_size: positive ints.
        start_index, end_index: the part of ``data`` used (``data[start_index:end_index]``).

    Returns:
        An ``mt.data.Dataset`` of ``(windows, targets)`` batches, ``windows`` ``(batch,
        sequence_length, ...)``, for ``model.fit`` or a ``for`` loop.

    Raises:
        ValueError: a length, stride, rate or batch size that is not a positive int; a
            ``start_index`` or ``end_index`` outside ``data``.
    """
    from ..data import Dataset
    for name, value in (("sequence_length", sequence_length),
                        ("sequence_stride", sequence_stride),
                        ("sampling_rate", sampling_rate), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise ValueError(f"timeseries_dataset_from_array: `{name}` must be a positive "
                             f"int (> 0), got {name}={value!r}")
    data = np.asarray(data.numpy() if isinstance(data, Tensor) else data)
    start = 0 if start_index is None else int(start_index)
    end = len(data) if end_index is None else int(end_index)
    if not 0 <= start < len(data):
        raise ValueError(f"timeseries_dataset_from_array: `start_index` must be 0 or greater "
                         f"and lower than the number of samples, {len(data)}; got "
                         f"start_index={start_index!r}")
    if not start < end <= len(data):
        raise ValueError(f"timeseries_dataset_from_array: `end_index` must be higher than "
                         f"`start_index` and at most the number of samples, {len(data)}; got "
                         f"end_index={end_index!r}")
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets.numpy() if isinstance(targets, Tensor) else targets)
        num_seqs = min(num_seqs, len(targets) - start)
    positions = np.arange(0, max(num_seqs, 0), sequence_stride)
    if shuffle:
        rng = np.random.RandomState(np.random.randint(10**6) if seed is None else seed)
        rng.shuffle(positions)
    window = positions[:, None] + np.arange(sequence_length) * sampling_rate
    windows = data[start:end][window]
    dataset = Dataset.from_tensor_slices(windows if targets is None else
                                         (windows, targets[start:][positions]))
    if shuffle:
        dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
    return dataset.batch(batch_size)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it.
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)


# -- images on disk (Chollet's chapters 8, 9 and 12), with Pillow ----------------------------------

_IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest",
             keep_aspect_ratio=False):
    """An image file as a PIL image, as ``keras.utils.load_img``.

    Args:
        path: the file's path.
        color_mode: ``"rgb"`` (the default), ``"rgba"`` or ``"grayscale"``.
        target_size: ``(height, width)`` to resize to with Pillow's ``interpolation``
            (``"nearest"`` by default, as Keras; ``"bilinear"``, ``"bicubic"``...), or None.

    Raises:
        ValueError: an unknown ``color_mode`` or ``interpolation``.
    """
    from PIL import Image
    modes = {"rgb": "RGB", "rgba": "RGBA", "grayscale": "L"}
    if color_mode not in modes:
        raise ValueError(f"load_img: color_mode must be 'rgb', 'rgba' or 'grayscale', got "
                         f"{color_mode!r}")
    with open(path, "rb") as f:
        img = Image.open(f)
        img.load()
    img = img.convert(modes[color_mode])
    if target_size is not None:
        methods = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR,
                   "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS, "box": Image.BOX,
                   "hamming": Image.HAMMING}
        if interpolation not in methods:
            raise ValueError(f"load_img: interpolation must be one of {sorted(methods)}, got "
                             f"{interpolation!r}")
        size = (int(target_size[1]), int(target_size[0]))       # Pillow: (width, height)
        if img.size != size:
            if keep_aspect_ratio:   # the largest centered crop of the target's aspect ratio
                w, h = img.size
                crop_w = min(w, round(h * size[0] / size[1]))
                crop_h = min(h, round(w * size[1] / size[0]))
                left, top = (w - crop_w) // 2, (h - crop_h) // 2
                img = img.crop((left, top, left + crop_w, top + crop_h))
            img = img.resize(size, methods[interpolation])
    return img


def img_to_array(img, data_format=None, dtype=None):
    """A PIL image as a ``(height, width, channels)`` NumPy array (float32 by default), as
    ``keras.utils.img_to_array``; a grayscale image gets one channel."""
    if data_format not in (None, "channels_last"):
        raise ValueError(f"img_to_array: only data_format='channels_last', got {data_format!r}")
    x = np.asarray(img, dtype=dtype if dtype is not None else "float32")
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3:
        raise ValueError(f"img_to_array: expected an image, got an array of shape {x.shape}")
    return x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A ``(height, width, channels)`` array (1, 3 or 4 channels) as a PIL image, as
    ``keras.utils.array_to_img``: with ``scale=True`` the values are shifted and scaled to
    ``[0, 255]`` (minimum to 0, maximum to 255) first.

    Raises:
        ValueError: another rank or number of channels.
    """
    from PIL import Image
    x = np.array(x.numpy() if isinstance(x, Tensor) else x, dtype="float32")
    if x.ndim != 3 or x.shape[2] not in (1, 3, 4):
        raise ValueError(f"array_to_img: expected (height, width, 1, 3 or 4 channels), got "
                         f"shape {x.shape}")
    if scale:
        x = x - np.min(x)
        top = np.max(x)
        if top != 0:
            x /= top
        x *= 255
    x = x.astype("uint8")
    if x.shape[2] == 1:
        return Image.fromarray(x[:, :, 0], "L")
    return Image.fromarray(x, "RGB" if x.shape[2] == 3 else "RGBA")


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Save an array as an image file, as ``keras.utils.save_img`` (``array_to_img``, then
    Pillow's ``save``; the format from the file name unless ``file_format`` is given)."""
    array_to_img(x, data_format=data_format, scale=scale).save(path, format=file_format,
                                                                **kwargs)


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False, verbose=True):
    """Batches of ``(images, labels)`` from a directory with one subdirectory per class, as
    ``keras.utils.image_dataset_from_directory``.

    Classes are the subdirectories in alphanumeric order (or ``class_names``); the files
    (``.bmp .gif .jpeg .jpg .png``) are read when a pass reaches them (Pillow), resized to
    ``image_size`` with ``mt.image.resize`` (``interpolation``, bilinear by default, as
    Keras): images are float32 ``(batch, height, width, 3)`` (1 channel for
    ``"grayscale"``, 4 for ``"rgba"``). Labels: ``"int"`` (int32), ``"binary"`` (float32
    ``(batch, 1)``, two classes), ``"categorical"`` (one-hot float32), or None (images only).
    With ``shuffle`` the file order is shuffled once (``seed``) and each pass is reshuffled.
    ``validation_split`` with ``subset="training"``, ``"validation"`` or ``"both"`` splits
    the shuffled files (the last fraction is the validation set), as Keras. The dataset's
    ``class_names`` lists the classes. Prints ``Found N files belonging to K classes.``

    Raises:
        ValueError: a missing directory, ``labels`` other than ``"inferred"``/None, an
            unknown ``label_mode``, ``"binary"`` with other than two classes, a bad split.
    """
    import os
    from ..data import Dataset
    from ..ops import image_ops
    if not os.path.isdir(directory):
        raise ValueError(f"image_dataset_from_directory: {directory!r} is not a directory")
    if labels not in ("inferred", None):
        raise ValueError("image_dataset_from_directory: labels must be 'inferred' (one "
                         f"subdirectory per class) or None, got {labels!r:.60}")
    if label_mode not in ("int", "binary", "categorical", None):
        raise ValueError("image_dataset_from_directory: label_mode must be 'int', 'binary', "
                         f"'categorical' or None, got {label_mode!r}")
    if labels is None:
        label_mode = None
    found = sorted(d for d in os.listdir(directory)
                   if os.path.isdir(os.path.join(directory, d)))
    names = list(class_names) if class_names is not None else found
    paths, targets = [], []
    if labels is None:
        roots = [(directory, 0)]
    else:
        roots = [(os.path.join(directory, name), i) for i, name in enumerate(names)]
    for root, label in roots:
        for folder, _, files in sorted(os.walk(root, followlinks=follow_links)):
            for fname in sorted(files):
                if fname.lower().endswith(_IMAGE_FORMATS):
                    paths.append(os.path.join(folder, fname))
                    targets.append(label)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(f"image_dataset_from_directory: label_mode='binary' needs exactly 2 "
                         f"classes, found {len(names)}: {names}")
    if verbose:
        print(f"Found {len(paths)} files belonging to {len(names)} classes.")
    order = np.arange(len(paths))
    if shuffle:
        if seed is None:
            seed = int(np.random.randint(1_000_000))
        np.random.RandomState(seed).shuffle(order)
    if validation_split:
        if subset not in ("training", "validation", "both"):
            raise ValueError("image_dataset_from_directory: with validation_split, subset must "
                             f"be 'training', 'validation' or 'both', got {subset!r}")
        n_val = int(validation_split * len(paths))
        parts = {"training": order[:len(order) - n_val], "validation": order[len(order) - n_val:]}
    else:
        parts = {"training": order}
    channels = {"rgb": 3, "rgba": 4, "grayscale": 1}.get(color_mode)
    size = tuple(int(s) for s in image_size)

    def make(indices, reshuffle):
        rng = np.random.default_rng(seed)

        def load(i):
            img = img_to_array(load_img(paths[i], color_mode=color_mode))
            x = image_ops.resize(img, size, method=interpolation)
            x = np.asarray(x, "float32").reshape(size + (channels,))
            if label_mode is None:
                return (x,)
            y = targets[i]
            if label_mode == "binary":
                return x, np.float32([y])
            if label_mode == "categorical":
                return x, np.eye(len(names), dtype="float32")[y]
            return x, np.int32(y)

        def iterate():
            idx = rng.permutation(indices) if reshuffle else indices
            for start in range(0, len(idx), batch_size):
                items = [load(i) for i in idx[start:start + batch_size]]
                batch = tuple(Tensor(np.stack(parts_)) for parts_ in zip(*items))
                yield batch[0] if label_mode is None else batch
        dataset = Dataset(iterate, -(-len(indices) // batch_size))
        dataset.class_names = names
        dataset.file_paths = [paths[i] for i in indices]
        return dataset

    if validation_split and subset == "both":
        if verbose:
            print(f"Using {len(parts['training'])} files for training.")
            print(f"Using {len(parts['validation'])} files for validation.")
        return make(parts["training"], shuffle), make(parts["validation"], False)
    part = parts[subset if validation_split else "training"]
    if validation_split and verbose:
        print(f"Using {len(part)} files for {subset}.")
    return make(part, shuffle)
