"""``mt.keras.Model`` and ``mt.keras.Sequential``: a Module you can ``compile`` and ``fit``.

``fit`` is the training loop of the lessons, written once::

    for epoch in range(epochs):
        for x_batch, y_batch in batches:                      # shuffled each epoch
            with mt.GradientTape() as tape:
                y_pred = model(x_batch, training=True)
                loss = loss_fn(y_batch, y_pred)               # the mean over the batch
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

That is ``train_step`` below, line for line; ``fit`` only cuts the data into batches, keeps
the running means that it prints (Keras's per-epoch line) and returns them in a ``History``.
As Keras 3 (``keras/src/trainers/trainer.py``), without graphs: ``run_eagerly`` and
``jit_compile`` are accepted and change nothing, since minitape always runs eagerly.
"""

from __future__ import annotations

import os

import numpy as np

from .. import optimizers as _optimizers
from ..module import Module
from ..ops import random_ops, reduction_ops
from ..tape import GradientTape
from ..tensor import Tensor, constant
from . import losses as _losses
from .layers import Layer, accepts

__all__ = ["Model", "Sequential", "History"]


class History:
    """What ``fit`` returns, as ``keras.callbacks.History``.

    Attributes:
        history: ``{"loss": [one value per epoch], <metric>: [...]}``.
        epoch: the epoch numbers, from 0.
        params: ``{"epochs": ..., "steps": ...}``.
    """

    def __init__(self, params):
        self.history = {}
        self.epoch = []
        self.params = params
        self.model = None

    def __getitem__(self, key):
        return self.history[key]

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


class _Mean:
    """A running mean weighted by batch size (Keras's ``Mean`` metric)."""

    def __init__(self):
        self.total, self.count = 0.0, 0

    def update(self, value, weight):
        self.total += float(value) * weight
        self.count += weight

    def result(self):
        return self.total / self.count if self.count else float("nan")


def _accuracy(y_true, y_pred):
    """Keras's ``"accuracy"``: categorical, sparse or binary, chosen from the shapes."""
    y_pred = np.asarray(y_pred)
    y_true = np.asarray(y_true)
    if y_pred.ndim >= 1 and y_pred.shape[-1] > 1:
        pred = y_pred.argmax(axis=-1)
        if y_true.shape == y_pred.shape:          # one-hot labels
            true = y_true.argmax(axis=-1)
        else:                                     # integer labels, maybe (batch, 1)
            true = y_true.reshape(pred.shape)
        return np.mean(pred == true)
    return np.mean((y_pred.reshape(y_true.shape) > 0.5) == (y_true > 0.5))


_METRICS = {
    "accuracy": _accuracy, "acc": _accuracy,
    "mae": _losses.mean_absolute_error, "mean_absolute_error": _losses.mean_absolute_error,
    "mse": _losses.mean_squared_error, "mean_squared_error": _losses.mean_squared_error,
}


def _metric(identifier):
    if isinstance(identifier, str):
        if identifier not in _METRICS:
            raise ValueError(f"unknown metric {identifier!r}; use one of {sorted(_METRICS)} or a "
                             "function (y_true, y_pred)")
        return identifier, _METRICS[identifier]
    if callable(identifier):
        return getattr(identifier, "name", getattr(identifier, "__name__", "metric")), identifier
    raise TypeError(f"a metric is a name or a function (y_true, y_pred), got {identifier!r:.60}")


def _format(value):
    return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.4e}"


def _as_array(data, what):
    """Data for fit/evaluate/predict as a NumPy array; float NumPy data becomes float32."""
    if isinstance(data, Tensor):
        return np.asarray(data._value)
    array = np.asarray(data)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numbers (a Tensor, an ndarray or a list), got "
                        f"{type(data).__name__} of dtype {array.dtype}")
    if array.dtype == np.float64:   # Python floats and float64 arrays: Keras's floatx, float32
        return array.astype(np.float32)
    return array


class Model(Layer):
    """A Layer that trains itself, as ``keras.Model`` (the subclassing style).

    Subclass it, create layers or Variables in ``__init__`` and compute in ``call``::

        class Linear(mt.keras.Model):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.w = mt.Variable(5.0)
                self.b = mt.Variable(0.0)
            def call(self, x):
                return self.w * x + self.b

    Then ``model(x)``, ``model.variables``, ``save_weights`` / ``load_weights`` (the weights
    file of ``mt.Module``), and ``compile`` / ``fit`` / ``evaluate`` / ``predict``.
    Keras's functional style ``Model(inputs, outputs)`` is not supported.
    """

    _walk_skip = ("optimizer", "loss", "compiled_metrics", "history", "run_eagerly",
                  "jit_compile", "stop_training")

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise NotImplementedError(
                "mt.keras.Model(inputs, outputs) (Keras's functional style) is not supported; "
                "subclass mt.keras.Model and compute in call(), or use mt.keras.Sequential")
        super().__init__(**kwargs)
        self.optimizer = None
        self.loss = None
        self.compiled_metrics = []
        self.history = None

    def build(self, input_shape):
        self.built = True

    def call(self, inputs, training=None):
        raise NotImplementedError(f"{type(self).__name__} must define call(self, inputs): the "
                                  "model's forward pass (see mt.keras.Model)")

    @property
    def layers(self):
        """The Layers (Modules) held in attributes, directly or in a list or dict, in order."""
        out = []
        for path, item in self._walk():
            if isinstance(item, Module) and (len(path) == 1 or (
                    len(path) == 2 and isinstance(vars(self).get(path[0]), (list, tuple, dict)))):
                if not any(item is seen for seen in out):
                    out.append(item)
        return out

    # -- compile ---------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, run_eagerly=False,
                jit_compile="auto", **kwargs):
        """Choose the optimizer, the loss and the metrics that ``fit`` uses, as Keras.

        Args:
            optimizer: an optimizer (``mt.keras.optimizers.SGD(...)``) or a Keras name
                (``"rmsprop"``, Keras's default, ``"sgd"``, ``"adam"``, ``"nadam"``, ...: see
                ``mt.keras.optimizers.get``).
            loss: a loss function ``(y_true, y_pred)`` (``mt.keras.losses.MSE``), a
                ``mt.keras.losses`` class instance, or a name (``"mse"``). ``fit`` takes the
                mean over the batch.
            metrics: names (``"mae"``, ``"mse"``, ``"accuracy"``) or functions.
            run_eagerly, jit_compile: accepted; minitape always runs eagerly.
        """
        self.optimizer = _optimizers.get(optimizer)
        self.loss = _losses.get(loss) if loss is not None else None
        self.compiled_metrics = [_metric(m) for m in (metrics or [])]
        self.run_eagerly = bool(run_eagerly)
        self.jit_compile = jit_compile

    def compute_loss(self, y, y_pred):
        """The compiled loss as one scalar: the mean of the loss function over the batch."""
        if self.loss is None:
            raise ValueError("no loss: call model.compile(optimizer=..., loss=...) before fit "
                             "or evaluate")
        value = self.loss(y, y_pred)
        if value.ndim:   # a loss function's per-sample values: take the mean over the batch
            value = reduction_ops.reduce_mean(value)
        return value

    # -- one step of each kind: the loops below call these -----------------------------------
    def train_step(self, data):
        """One step of gradient descent on a batch ``(x, y)``: the lessons' loop body."""
        x, y = data
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y, y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return loss, y_pred

    def test_step(self, data):
        """The loss (and predictions) on a batch ``(x, y)``, without training."""
        x, y = data
        y_pred = self(x, training=False)
        return self.compute_loss(y, y_pred), y_pred

    # -- the loops -------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", shuffle=True,
            validation_data=None, initial_epoch=0, **kwargs):
        """Train for ``epochs`` passes over the data, as ``keras.Model.fit``.

        Args:
            x, y: inputs and targets (Tensors, ndarrays or lists, first axis the samples),
                or ``x`` an ``mt.data.Dataset`` of ``(x, y)`` batches and ``y`` None.
            batch_size: samples per gradient step (default 32, as Keras).
            epochs: passes over the data.
            verbose: 0 silent; 1 or ``"auto"`` prints ``Epoch i/n`` and a line with the
                epoch's mean loss and metrics; 2 prints only that line. Times are not printed
                (Keras prints them), so a notebook's output is the same on every run.
            shuffle: reshuffle the samples before each epoch (with ``mt.random``'s generator,
                so ``mt.random.set_seed`` makes it repeatable).
            validation_data: optional ``(x_val, y_val)``, evaluated after each epoch
                (``val_loss``, ``val_<metric>`` in the history).

        Returns:
            A ``History``: ``history.history["loss"]`` has one mean loss per epoch.

        Raises:
            ValueError: ``compile`` was not called, or ``x`` and ``y`` differ in length.
        """
        if self.optimizer is None:
            raise ValueError("fit: call model.compile(optimizer=..., loss=...) first")
        unknown = set(kwargs) - {"callbacks", "validation_split", "steps_per_epoch"}
        if unknown or kwargs.get("callbacks") or kwargs.get("validation_split"):
            raise TypeError(f"fit: unsupported arguments {sorted(kwargs)}; minitape's fit takes "
                            "x, y, batch_size, epochs, verbose, shuffle, validation_data")
        verbose = 1 if verbose == "auto" else int(verbose)
        batches = _Batches(x, y, batch_size, shuffle, "fit")
        history = History({"epochs": epochs, "steps": len(batches), "verbose": verbose})
        history.model = self
        for epoch in range(initial_epoch, epochs):
            means = {"loss": _Mean()}
            for x_batch, y_batch in batches.epoch():
                loss, y_pred = self.train_step((x_batch, y_batch))
                n = _length(x_batch)
                means["loss"].update(loss, n)
                self._update_metrics(means, y_batch, y_pred, n)
            logs = {k: m.result() for k, m in means.items()}
            if validation_data is not None:
                val = self.evaluate(*validation_data, batch_size=batches.batch_size, verbose=0,
                                    return_dict=True)
                logs.update({f"val_{k}": v for k, v in val.items()})
            history.epoch.append(epoch)
            for k, v in logs.items():
                history.history.setdefault(k, []).append(v)
            if verbose:
                if verbose == 1:
                    print(f"Epoch {epoch + 1}/{epochs}")
                print(_progress_line(len(batches), logs, verbose))
        self.history = history
        return history

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_dict=False,
                 **kwargs):
        """The mean loss (and metrics) over the data, as ``keras.Model.evaluate``.

        Returns:
            The loss as a float when no metrics were compiled, else ``[loss, metric, ...]``,
            or a dict with ``return_dict=True``.
        """
        verbose = 1 if verbose == "auto" else int(verbose)
        batches = _Batches(x, y, batch_size, False, "evaluate")
        means = {"loss": _Mean()}
        for x_batch, y_batch in batches.epoch():
            loss, y_pred = self.test_step((x_batch, y_batch))
            n = _length(x_batch)
            means["loss"].update(loss, n)
            self._update_metrics(means, y_batch, y_pred, n)
        logs = {k: m.result() for k, m in means.items()}
        if verbose:
            print(_progress_line(len(batches), logs, verbose))
        if return_dict:
            return logs
        return logs["loss"] if len(logs) == 1 else list(logs.values())

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """The model's outputs for ``x``, batch by batch, as one NumPy array (as Keras)."""
        batches = _Batches(x, None, batch_size, False, "predict")
        outputs = [np.asarray(self(x_batch, training=False)) for x_batch, _ in batches.epoch()]
        if verbose not in (0, "auto"):
            print(f"{len(batches)}/{len(batches)}")
        return np.concatenate(outputs) if outputs else np.zeros((0,))

    def _update_metrics(self, means, y_true, y_pred, n):
        for name, fn in self.compiled_metrics:
            value = fn(y_true, y_pred)
            value = float(np.mean(np.asarray(value)))
            means.setdefault(name, _Mean()).update(value, n)

    def save(self, filepath, overwrite=True, **kwargs):
        """Save the model as ``mt.saved_model.save(model, filepath)`` does (a directory).

        Keras writes a ``.keras`` zip holding the architecture (from ``get_config``), which
        ``keras.models.load_model`` rebuilds; minitape has no such configs, so this writes
        the Variables and a manifest of the ``mt.function``s to the directory ``filepath``
        (whatever its extension). Read it back with ``mt.saved_model.load(filepath)``, or
        make a new model of the same class and ``load_weights``.
        """
        from .. import saved_model
        if not overwrite and os.path.exists(filepath):
            raise FileExistsError(f"save: {filepath!r} exists and overwrite=False")
        saved_model.save(self, filepath)

    def summary(self, print_fn=print):
        """Print each Variable's path, shape and trainability, and the parameter count."""
        rows = [(v.path, str(v.shape), "yes" if v.trainable else "no") for v in self.variables]
        width = max([len(r[0]) for r in rows] + [8])
        print_fn(f'Model: "{self.name}"')
        print_fn(f"{'variable':<{width}}  {'shape':<14}trainable")
        for path, shape, trainable in rows:
            print_fn(f"{path:<{width}}  {shape:<14}{trainable}")
        total = sum(int(np.prod(v.shape)) for v in self.variables)
        trainable = sum(int(np.prod(v.shape)) for v in self.trainable_variables)
        print_fn(f"Total params: {total}  (trainable: {trainable})")


class Sequential(Model):
    """Layers called one after the other, as ``keras.Sequential``; a Model (``compile``, ``fit``).

    ``training=`` reaches each layer whose call accepts it (``BatchNormalization``,
    ``Dropout``). The layers are the same objects as ``mt.layers``.

    >>> import minitape as mt
    >>> model = mt.keras.Sequential([mt.keras.layers.Dense(2, kernel_initializer="ones")])
    >>> model(mt.constant([[1.0, 2.0]]))
    <mt.Tensor: shape=(1, 2), dtype=float32, numpy=array([[3., 3.]], dtype=float32)>
    """

    def __init__(self, layers=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self._layers = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Append a layer (anything callable on a Tensor)."""
        if not callable(layer):
            raise TypeError(f"Sequential.add expects a layer (a callable), got {layer!r:.60}")
        self._layers.append(layer)

    def pop(self):
        """Remove and return the last layer."""
        return self._layers.pop()

    @property
    def layers(self):
        return list(self._layers)

    def call(self, inputs, training=None):
        x = inputs
        for layer in self._layers:
            if training is not None and accepts(layer, "training"):
                x = layer(x, training=training)
            else:
                x = layer(x)
        return x


class _Batches:
    """Cuts ``(x, y)`` into batches, reshuffled each epoch; or passes a Dataset through."""

    def __init__(self, x, y, batch_size, shuffle, what):
        from ..data import Dataset
        self.dataset = x if isinstance(x, Dataset) else None
        self.batch_size = 32 if batch_size is None else int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"{what}: batch_size must be a positive integer, got {batch_size!r}")
        if self.dataset is not None:
            if y is not None:
                raise ValueError(f"{what}: with a Dataset as x, y must be None (the Dataset "
                                 "yields (x, y) pairs)")
            self.steps = sum(1 for _ in self.dataset)
            return
        if x is None:
            raise ValueError(f"{what}: no data (x is None)")
        self.x = _as_array(x, f"{what}: x")
        self.y = None if y is None else _as_array(y, f"{what}: y")
        if self.y is not None and len(self.y) != len(self.x):
            raise ValueError(f"{what}: x has {len(self.x)} samples but y has {len(self.y)}; "
                             "they must have the same first dimension")
        self.shuffle = shuffle
        self.steps = -(-len(self.x) // self.batch_size)

    def __len__(self):
        return self.steps

    def epoch(self):
        if self.dataset is not None:
            for item in self.dataset:
                if isinstance(item, (tuple, list)) and len(item) == 2:
                    yield item[0], item[1]
                else:
                    yield item, None
            return
        order = np.arange(len(self.x))
        if self.shuffle:
            order = random_ops._rng(None).permutation(len(self.x))
        for start in range(0, len(self.x), self.batch_size):
            index = order[start:start + self.batch_size]
            yield (constant(self.x[index]),
                   None if self.y is None else constant(self.y[index]))


def _length(x):
    return x.shape[0] if getattr(x, "shape", ()) else 1


def _progress_line(steps, logs, verbose):
    metrics = " - ".join(f"{k}: {_format(v)}" for k, v in logs.items())
    bar = "━" * 20
    return f"{steps}/{steps} {bar} - {metrics}" if verbose == 1 else f"{steps}/{steps} - {metrics}"



def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
