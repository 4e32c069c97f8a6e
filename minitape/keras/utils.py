"""``mt.keras.utils``: ``set_random_seed``, ``to_categorical`` and ``plot_model``, as
``keras.utils``."""

from __future__ import annotations

import random

import numpy as np

from ..ops import random_ops
from ..engine.tensor import Tensor

__all__ = ["set_random_seed", "to_categorical", "plot_model", "model_to_dot",
           "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]


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
