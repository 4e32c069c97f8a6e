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

import contextlib
import inspect
import sys
import warnings

import numpy as np

from .. import optimizers as _optimizers
from ..engine import recording, tensor
from ..module import Module, keyed_variables, read_headers
from ..ops import array_ops, random_ops, reduction_ops
from ..engine.tape import GradientTape
from ..engine.tensor import Tensor
from ..ops.constant_op import constant
from . import losses as _losses
from . import metrics as _metrics
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


def _accuracy(y_true, y_pred):
    """Keras's ``"accuracy"`` on one batch: the metric ``compile`` picks from the shapes."""
    metric = _metrics.compile_metric("accuracy", y_true, y_pred)
    return float(metric(y_true, y_pred))


def _format(value):
    if isinstance(value, list):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.4e}"


def _as_data(data, what):
    """``_as_array`` of the data of one input or output, or, for a model with several
    (Keras's list of arrays, or a dict keyed by the inputs' or outputs' names), a list or
    dict of arrays."""
    if isinstance(data, dict):
        return {k: _as_array(v, f"{what}[{k!r}]") for k, v in data.items()}
    if isinstance(data, (list, tuple)) and data and all(
            isinstance(v, (np.ndarray, Tensor)) for v in data):
        return [_as_array(v, f"{what}[{i}]") for i, v in enumerate(data)]
    return _as_array(data, what)


def _leaves_of(data):
    return list(data.values()) if isinstance(data, dict) else \
        data if isinstance(data, list) else [data]


def _samples(data, what):
    """The number of samples (the first axis) of data from ``_as_data``: one for all."""
    counts = {len(a) if a.ndim else 1 for a in _leaves_of(data)}
    if len(counts) != 1:
        raise ValueError(f"{what}: the arrays have different numbers of samples "
                         f"{sorted(counts)}; each needs one row per sample")
    return counts.pop()


def _rows(data, index, name=None):
    """The rows ``index`` of data from ``_as_data``, as Tensors in the same structure."""
    if isinstance(data, dict):
        return {k: constant(v[index], name=k) for k, v in data.items()}
    if isinstance(data, list):
        return [constant(v[index]) for v in data]
    return constant(data[index], name=name)


def _as_array(data, what):
    """Data for fit/evaluate/predict as a NumPy array; float NumPy data becomes float32."""
    if isinstance(data, Tensor):
        return np.asarray(data)
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
    file of ``mt.Module``), ``compile`` / ``fit`` / ``evaluate`` / ``predict``, and ``save``
    (``mt.keras.models.load_model`` rebuilds it from ``get_config``, see
    ``minitape/keras/saving.py``).

    Keras's functional style, ``mt.keras.Model(inputs, outputs)`` with ``inputs`` from
    ``mt.keras.Input``, makes a ``Functional`` model (``minitape/keras/functional.py``).
    """

    def __new__(cls, *args, **kwargs):
        # As Keras: Model(inputs, outputs) is a functional model, and so is a subclass called
        # that way (Chollet's ``CustomModel(inputs, outputs)`` that overrides ``train_step``):
        # it becomes an instance of a class made once per subclass, ``(subclass, Functional)``,
        # so the subclass's methods come first and Functional's build and call the graph.
        from .functional import Functional, functional_arguments
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return super().__new__(Functional, *args, **kwargs)
        if not issubclass(cls, Functional) and functional_arguments(args, kwargs):
            if "_functional_class" not in vars(cls):
                cls._functional_class = type(cls.__name__, (cls, Functional),
                                             {"__module__": cls.__module__,
                                              "__qualname__": cls.__qualname__})
            return super().__new__(cls._functional_class, *args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    _walk_skip = ("optimizer", "loss", "compiled_metrics", "history", "run_eagerly",
                  "jit_compile", "stop_training", "_loss_tracker", "_metric_specs")

    # The compiled loss. A class attribute, not set in __init__, as tf.keras 2 (the Keras of
    # TensorFlow up to 2.15): a subclass's own ``def loss(self, y_hat, y)`` method (the models
    # of "Dive into Deep Learning") stays callable until ``compile(loss=...)`` replaces it.
    loss = None

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise NotImplementedError(
                f"{type(self).__name__}: a subclass of mt.keras.Model calling "
                "super().__init__(inputs, outputs) is not supported; use "
                "mt.keras.Model(inputs, outputs) itself, or compute in call()")
        super().__init__(**kwargs)
        self.optimizer = None
        self.compiled_metrics = _CompiledMetrics(self)
        self.history = None
        self._loss_tracker = _metrics.Mean(name="loss")
        self._metric_specs = []
        self.stop_training = False   # (a callback sets it to end fit, as Keras)

    def build(self, input_shape=None):
        """Create the weights by calling the model once on zeros of ``input_shape``, as Keras.

        ``input_shape`` includes the batch axis (``(None, 4)``); a batch of one is used.
        ``model(x)`` builds by itself: this is for a summary or weights before any data.
        """
        self.built = True
        if input_shape is None:
            return
        with unrecorded():
            if isinstance(input_shape, list) and input_shape and \
                    isinstance(input_shape[0], (tuple, list)):   # several inputs
                self._build_input_shape = [tuple(s) for s in input_shape]
                self([_zeros(s) for s in input_shape])
            else:
                self._build_input_shape = tuple(input_shape)
                self(_zeros(input_shape))

    build._by_calling = True   # (Layer.__call__ does not call it: the call itself builds)

    def load_weights(self, path):
        """Read weights written by ``save_weights``, as ``Module.load_weights``; into a model
        not built yet, at its first call, as tf.keras 2 (TensorFlow up to 2.15) restores a
        checkpoint into variables as they are created.

        "Dive into Deep Learning" (section 6.6, "File I/O") does::

            clone = MLP()                     # its Dense layers have no weights yet
            clone.load_weights('mlp.params')
            Y_clone = clone(X)                # the weights are those saved

        When the model has not been called (``built`` is False) and the file holds entries
        the model lacks, the file is checked now (it exists, it is a weights file) and read
        at the first call: the model is called once on those inputs without recording (its
        layers build), the weights are loaded (all or nothing, as ``Module.load_weights``),
        then the call computes with them. ``get_weights()`` before that call lists only the
        weights that exist, as in TensorFlow.

        Raises:
            FileNotFoundError, ValueError: as ``Module.load_weights``; a file that does not
                fit the model raises at the first call, naming the entries.
        """
        if not self.built:
            headers = read_headers(path, "load_weights")
            have = keyed_variables(self._variables_with_paths(), "load_weights")
            if set(headers) - set(have):
                self._deferred_weights = path
                return
        super().load_weights(path)

    def __call__(self, inputs, *args, **kwargs):
        path = vars(self).pop("_deferred_weights", None)
        if path is not None:     # (load_weights before the first call: build, then load)
            with unrecorded():
                super().__call__(inputs, *args, **kwargs)
            Module.load_weights(self, path)
        return super().__call__(inputs, *args, **kwargs)

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

    def get_layer(self, name=None, index=None):
        """The layer called ``name``, or the one at position ``index`` of ``layers``, as
        Keras's ``Model.get_layer`` (give one of the two).

        Raises:
            ValueError: both or neither given, no layer of that name (the message lists the
                names), or an index past the last layer.
        """
        if (name is None) == (index is None):
            raise ValueError("get_layer: give either a layer name (get_layer('dense')) or an "
                             f"index (get_layer(index=0)), got name={name!r}, index={index!r}")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer: asked for the layer at index {index}, but the model "
                                 f"has {len(layers)} layer(s)")
            return layers[index]
        for layer in layers:
            if getattr(layer, "name", None) == name:
                return layer
        raise ValueError(f"get_layer: no layer named {name!r}; the layers are "
                         f"{[getattr(layer, 'name', None) for layer in layers]}")

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
            metrics: a list of names (``"accuracy"``, ``"mae"``, ``"mse"``, ``"precision"``,
                ...), ``mt.keras.metrics.Metric`` instances or functions ``(y_true,
                y_pred)`` (wrapped in ``MeanMetricWrapper``). ``"accuracy"`` becomes binary,
                sparse categorical or categorical accuracy from the shapes of the first
                batch, as Keras. ``fit`` and ``evaluate`` report each by its name.
            loss_weights: for a model with several outputs, a list or dict of numbers: the
                loss ``fit`` minimizes is the weighted sum of the outputs' losses.
            run_eagerly, jit_compile: accepted; minitape always runs eagerly.

        A model with several outputs (a functional model, Chollet's chapter 7) takes one
        loss for all of them, a list with one per output, or a dict keyed by the outputs'
        names (the names of the layers that made them); likewise ``metrics`` (a list of
        lists, or a dict; a flat list applies to every output) and ``loss_weights``.
        ``fit`` then logs ``loss`` (the weighted sum) and, per output, ``<name>_loss`` and
        ``<name>_<metric>``, as Keras.
        """
        self.optimizer = _optimizers.get(optimizer)
        if isinstance(loss, (list, tuple)):
            self.loss = [None if fn is None else _losses.get(fn) for fn in loss]
        elif isinstance(loss, dict):
            self.loss = {k: None if fn is None else _losses.get(fn) for k, fn in loss.items()}
        else:
            self.loss = _losses.get(loss) if loss is not None else None
        self.loss_weights = kwargs.pop("loss_weights", None)
        self._output_loss_trackers = {}
        if metrics is not None and not isinstance(metrics, (list, tuple, dict)):
            raise ValueError(f"compile: metrics must be a list, e.g. metrics=['accuracy'], got "
                             f"{metrics!r:.60}")
        self._metric_structure = metrics
        flat = []
        for m in (metrics.values() if isinstance(metrics, dict) else metrics or []):
            flat.extend(m if isinstance(m, (list, tuple)) else [m])
        metrics = [m for m in flat if m is not None]
        for m in metrics or []:
            if not (isinstance(m, (str, _metrics.Metric)) or callable(m)):
                raise TypeError(f"compile: a metric is a name, a mt.keras.metrics.Metric or a "
                                f"function (y_true, y_pred), got {m!r:.60}")
            if isinstance(m, str) and m.lower() not in ("accuracy", "acc"):
                _metrics.get(m)   # an unknown name fails here, not at the first batch
        self._metric_specs = list(metrics or [])
        # The Metric objects, made now (so that a train_step that walks self.metrics finds
        # them, as in Keras 3's guides), "accuracy" becoming its kind at the first batch; for
        # a model with several outputs, made from the first batch (one per output).
        vars(self).pop("_metric_outputs", None)
        outputs = getattr(self, "_outputs", None)
        several = isinstance(outputs, (list, tuple)) and len(outputs) > 1
        nested = isinstance(self._metric_structure, dict) or any(
            isinstance(m, (list, tuple)) for m in self._metric_structure or [])
        self.compiled_metrics = _CompiledMetrics(self)
        if not several and not nested:
            self.compiled_metrics.extend(_compiled_metric(m, self.compiled_metrics)
                                         for m in self._metric_specs)
        self.run_eagerly = bool(run_eagerly)
        self.jit_compile = jit_compile
        # Which layers train is settled here, as tf.keras 2 (and Keras 3's documentation):
        # Géron's GAN compiles the discriminator, then sets ``discriminator.trainable =
        # False`` before compiling the GAN, and ``discriminator.train_on_batch`` still trains.
        self._compiled_trainable_state = {id(m): m.trainable for m in (self,) + self.submodules
                                          if isinstance(getattr(m, "trainable", None), bool)}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The loss that ``fit`` differentiates, one scalar Tensor, as Keras 3's
        ``Model.compute_loss(x, y, y_pred, sample_weight, training)``.

        The compiled loss (the mean of the loss function over the batch) plus the sum of
        ``self.losses``: the weight regularization penalties (``kernel_regularizer=``...)
        and the losses that layers added with ``add_loss`` in this call. A model compiled
        without a loss trains on ``self.losses`` alone (Keras's VAE: its ``add_loss``).

        Args:
            x: the inputs (not used; a subclass that overrides this may use them).
            y, y_pred: the targets and the model's outputs (a list or dict of them for a
                model with several outputs).
            sample_weight: one weight per sample, shape ``(batch,)``: each sample's loss is
                multiplied by its weight before the mean, which still divides by the number
                of values (Keras's ``"sum_over_batch_size"`` reduction).
            training: accepted (Keras 3.3's argument); not used.

        Raises:
            ValueError: no loss at all: none compiled and no ``self.losses`` (Keras's "No
                loss to compute").
            TypeError: called as ``compute_loss(y, y_pred)``: with Keras 3's order that
                reads ``x=y, y=y_pred``; write ``compute_loss(y=y, y_pred=y_pred)``.
        """
        if y_pred is None and x is not None and y is not None:
            raise TypeError("compute_loss takes (x, y, y_pred, sample_weight) as Keras 3's, so "
                            "compute_loss(y, y_pred) gave no y_pred; write "
                            "self.compute_loss(y=y, y_pred=y_pred) (or (x, y, y_pred))")
        value = None if self.loss is None else self._compiled_loss_value(y, y_pred,
                                                                         sample_weight)
        for extra in self.losses:
            value = extra if value is None else value + extra
        if value is None:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()` "
                             "(model.compile(optimizer=..., loss=...)), or add losses in the "
                             "model's call with self.add_loss")
        return value

    def _compiled_loss_value(self, y, y_pred, sample_weight):
        """The loss compiled with ``compile(loss=...)``, without ``self.losses``."""
        y, y_pred = _one_output(y, y_pred)
        if isinstance(y_pred, (list, tuple, dict)):
            return self._several_outputs_loss(y, y_pred, sample_weight)
        loss = self.loss
        if isinstance(loss, (list, dict)) and len(loss) == 1:   # (["mse"] for one output)
            loss = next(iter(loss.values())) if isinstance(loss, dict) else loss[0]
        if isinstance(loss, (list, dict)):
            raise ValueError(f"compile: a list or dict of losses is for a model with several "
                             f"outputs; {self.name} has one: give one loss")
        return self._reduced_loss(loss, y, y_pred, sample_weight)

    def compiled_loss(self, y, y_pred, sample_weight=None, regularization_losses=None):
        """The compiled loss of a batch, as Keras 2's ``model.compiled_loss`` (Keras 2's
        guides' ``train_step``: ``self.compiled_loss(y, y_pred,
        regularization_losses=self.losses)``).

        As Keras 2: the compiled loss plus the sum of ``regularization_losses`` (only those
        given), and the loss tracker (``loss`` in ``self.metrics``) takes the value in.
        Keras 3 keeps it with a warning, which minitape repeats: ``compute_loss`` is the
        newer name.

        Returns:
            A scalar Tensor, recorded by the tapes that are open.

        Raises:
            ValueError: ``compile`` was given no loss and no ``regularization_losses``.
        """
        warnings.warn("`model.compiled_loss()` is deprecated (Keras 3). Instead, use "
                      "`model.compute_loss(x, y, y_pred, sample_weight)`.", stacklevel=2)
        value = None if self.loss is None else self._compiled_loss_value(y, y_pred,
                                                                         sample_weight)
        for extra in regularization_losses or ():
            value = extra if value is None else value + extra
        if value is None:
            raise ValueError("compiled_loss: no loss to compute; give compile a loss "
                             "(model.compile(optimizer=..., loss=...))")
        self._loss_tracker.update_state(value, sample_weight=_length(y_pred))
        return value

    def _reduced_loss(self, loss, y, y_pred, sample_weight):
        """One output's loss, reduced to a scalar (Keras's "sum_over_batch_size")."""
        masked = _masked_loss(loss, y, y_pred, sample_weight)
        if masked is not None:
            return masked
        if sample_weight is None:
            value = loss(y, y_pred)
            if value.ndim:   # a loss function's per-sample values: take the mean over the batch
                value = reduction_ops.reduce_mean(value)
        elif isinstance(loss, _losses.Loss):   # (it weights and reduces, as Keras's)
            value = loss(y, y_pred, sample_weight=_weights_for(
                sample_weight, max(y_pred.ndim - 1, 1)))
        else:
            values = loss(y, y_pred)
            if values.ndim == 0:
                raise ValueError(
                    f"sample_weight needs one loss value per sample, but the loss "
                    f"{getattr(loss, '__name__', loss)!r} returned a scalar; return "
                    "per-sample values (as mt.keras.losses.mean_squared_error does)")
            values = values * _weights_for(sample_weight, values.ndim)
            value = reduction_ops.reduce_sum(values) / float(max(values.size, 1))
        return value

    def _output_names(self, y_pred):
        """The names of the outputs, in the order of ``y_pred``'s entries: a dict's keys, a
        functional model's output layers, else ``output_1``, ``output_2``, ..."""
        if isinstance(y_pred, dict):
            return list(y_pred)
        outputs = getattr(self, "_outputs", None)
        if isinstance(outputs, (list, tuple)) and len(outputs) == len(y_pred):
            return [x.name for x in outputs]
        return [f"output_{i + 1}" for i in range(len(y_pred))]

    def _per_output(self, value, names, what, default=None):
        """``value`` (compile's ``loss``, ``metrics`` or ``loss_weights``, or the targets
        ``y``) as a list with one entry per output: a list in output order, a dict by output
        name, or one value for every output."""
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(names))
            if unknown:
                raise ValueError(f"{what}: no output named {unknown}; the outputs are {names} "
                                 "(the names of the layers that made them)")
            return [value.get(n, default) for n in names]
        # (a metrics list is per output only as a list of lists; a flat one is for every one)
        per_output = isinstance(value, (list, tuple)) and (what != "metrics" or (
            value and all(m is None or isinstance(m, (list, tuple)) for m in value)))
        if per_output:
            if len(value) != len(names):
                raise ValueError(f"{what}: {self.name} has {len(names)} outputs {names}, got "
                                 f"{len(value)} entries; give one per output, or a dict keyed "
                                 "by the outputs' names")
            return list(value)
        if what == "y":
            raise ValueError(f"fit: {self.name} has {len(names)} outputs {names}; give y as a "
                             f"list of {len(names)} arrays, or a dict keyed by those names")
        return [default if value is None else value] * len(names)

    def _several_outputs_loss(self, y, y_pred, sample_weight):
        """The weighted sum of each output's loss (Keras's compile with several outputs),
        plus ``self.losses``; each output's loss goes to its tracker, ``<name>_loss``."""
        names = self._output_names(y_pred)
        preds = list(y_pred.values()) if isinstance(y_pred, dict) else list(y_pred)
        targets = self._per_output(y, names, "y")
        losses = self._per_output(self.loss, names, "loss")
        weights = self._per_output(self.loss_weights, names, "loss_weights", 1.0)
        total = None
        for name, target, pred, loss, weight in zip(names, targets, preds, losses, weights):
            if loss is None or target is None:
                continue
            value = self._reduced_loss(loss, target, pred, sample_weight)
            tracker = self._output_loss_trackers.get(name)
            if tracker is None:
                tracker = self._output_loss_trackers[name] = _metrics.Mean(name=f"{name}_loss")
            tracker.update_state(value, sample_weight=_length(pred))
            value = value * float(weight) if weight != 1.0 else value
            total = value if total is None else total + value
        if total is None:
            raise ValueError(f"{self.name}: no output has a loss; give compile a loss for at "
                             "least one output")
        return total

    # -- metrics ---------------------------------------------------------------------------
    @property
    def metrics(self):
        """The loss tracker (a ``Mean`` named ``loss``), then the compiled metrics, then the
        Metric objects that the model and its layers hold in attributes, as Keras 3.

        Those that ``fit`` and ``evaluate`` reset at the start of each epoch or evaluation
        (``reset_metrics``), and whose results the default ``train_step`` returns. The
        compiled metrics exist from ``compile`` (for a model with several outputs, from its
        first batch). A model that overrides ``train_step`` may list its own here, as Keras's
        guides do (``return [self.loss_tracker, self.mae_metric]``).
        """
        out = ([self._loss_tracker] + list(vars(self).get("_output_loss_trackers", {}).values())
               + list(self.compiled_metrics))
        for m in super().metrics:   # (held in attributes: Keras's "endpoint layer")
            if not any(m is seen for seen in out):
                out.append(m)
        return out

    @property
    def metrics_names(self):
        """The names of ``metrics``: the keys of ``fit``'s logs."""
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        """``reset_state()`` of every metric in ``metrics``."""
        for m in self.metrics:
            m.reset_state()

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics with a batch and return ``get_metrics_result()``."""
        y, y_pred = _one_output(y, y_pred)
        if isinstance(y_pred, (list, tuple, dict)):
            names = self._output_names(y_pred)
            preds = list(y_pred.values()) if isinstance(y_pred, dict) else list(y_pred)
            targets = self._per_output(y, names, "y")
            if "_metric_outputs" not in vars(self) and self._metric_specs:
                specs = self._per_output(self._metric_structure, names, "metrics")
                self.compiled_metrics = _CompiledMetrics(self)
                self._metric_outputs = []
                for k, (name, spec) in enumerate(zip(names, specs)):
                    for m in ([] if spec is None else spec if isinstance(spec, (list, tuple))
                              else [spec]):
                        metric = _metrics.compile_metric(m, targets[k], preds[k])
                        metric.name = f"{name}_{metric.name}"
                        self.compiled_metrics.append(metric)
                        self._metric_outputs.append(k)
            for k, m in zip(vars(self).get("_metric_outputs", ()), self.compiled_metrics):
                m.update_state(targets[k], preds[k], sample_weight=sample_weight)
            return self.get_metrics_result()
        for m in list(self.compiled_metrics):   # (a copy: "accuracy" replaces itself)
            m.update_state(y, y_pred, sample_weight=sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        """``{name: result()}`` of every metric in ``metrics`` (Tensors), as Keras; a metric
        whose result is a dict gives its entries instead."""
        out = {}
        for m in self.metrics:
            result = m.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[m.name] = result
        return out

    # -- one step of each kind: the loops below call these -----------------------------------
    def train_step(self, data):
        """One step of gradient descent on a batch ``(x, y)``: the lessons' loop body.

        Then, as Keras: the loss tracker and the compiled metrics take the batch in, and
        the step returns ``{name: value so far}`` (Tensors). Override it for a custom step
        (return such a dict; ``fit`` shows the last step's values for the epoch, and resets
        the metrics listed by ``self.metrics`` before each epoch).
        """
        x, y, sample_weight = _unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._loss_of(x, y, y_pred, sample_weight)
        trained = self._compiled_trainable_variables()
        if trained:
            grads = tape.gradient(loss, trained)
            self.optimizer.apply_gradients(zip(grads, trained))
        else:   # (as Keras 3: a model of add_loss layers only, as in Keras's guide)
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        self._loss_tracker.update_state(loss, sample_weight=_length(x))
        self.last_train_step = (tape, loss)   # for callbacks that show the step's tape
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _compiled_trainable_variables(self):
        """``trainable_variables`` with each layer's ``trainable`` as it was at ``compile``
        (tf.keras 2: the weights a compiled model trains are fixed by compile; a layer made
        later keeps its own flag)."""
        state = vars(self).get("_compiled_trainable_state")
        if not state:
            return self.trainable_variables
        changed = [(m, m.trainable) for m in (self,) + self.submodules
                   if id(m) in state and m.trainable is not state[id(m)]]
        if not changed:
            return self.trainable_variables
        try:
            for m, _ in changed:
                m.trainable = state[id(m)]
            return self.trainable_variables
        finally:
            for m, now in changed:
                m.trainable = now

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One training step on the batch ``(x, y)`` as given, as ``keras.Model.train_on_batch``
        (Géron's GAN alternates ``discriminator.train_on_batch`` and ``gan.train_on_batch``).

        The metrics are reset first, so the result is this batch's. The layers trained are
        those trainable at ``compile`` (see ``compile``).

        Returns:
            The loss as a float when no metrics were compiled, else ``[loss, metric, ...]``,
            or a dict with ``return_dict=True``.

        Raises:
            ValueError: ``compile`` was not called, or both ``class_weight`` and
                ``sample_weight`` given.
        """
        if self.optimizer is None:
            raise ValueError("train_on_batch: call model.compile(optimizer=..., loss=...) first")
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError("train_on_batch: You cannot use `class_weight` and "
                                 "`sample_weight` at the same time")
            sample_weight = _class_weights(y, class_weight, x)
        batches = _Batches(x, y, max(int(_length(x)), 1), False, "train_on_batch",
                           sample_weight=sample_weight)
        self.reset_metrics()
        for data in batches.epoch():
            logs = self.train_step(data)
        logs = _float_logs(logs, "train_step")
        if return_dict:
            return logs
        return logs["loss"] if len(logs) == 1 else list(logs.values())

    def _loss_of(self, x, y, y_pred, sample_weight, training=True):
        # compute_loss as it is written: Keras 3's (x, y, y_pred, sample_weight[, training]),
        # or an override with minitape's older signature (y, y_pred[, sample_weight]).
        try:
            params = inspect.signature(self.compute_loss).parameters
        except (TypeError, ValueError):
            params = {}
        if "y_pred" in params and "x" in params:
            kwargs = {"training": training} if accepts(self.compute_loss, "training") else {}
            return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                     **kwargs)
        if sample_weight is None:
            return self.compute_loss(y, y_pred)
        return self.compute_loss(y, y_pred, sample_weight=sample_weight)

    def test_step(self, data):
        """The loss and metrics on a batch ``(x, y)``, without training (as ``train_step``)."""
        x, y, sample_weight = _unpack(data)
        y_pred = self(x, training=False)
        self._loss_tracker.update_state(self._loss_of(x, y, y_pred, sample_weight, False),
                                        sample_weight=_length(x))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    # -- the loops -------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", shuffle=True,
            validation_data=None, initial_epoch=0, **kwargs):
        """Train for ``epochs`` passes over the data, as ``keras.Model.fit``.

        Args:
            x, y: inputs and targets (Tensors, ndarrays or lists, first axis the samples),
                or ``x`` an ``mt.data.Dataset`` of ``(x, y)`` (or ``(x, y, sample_weight)``)
                batches and ``y`` None.
            batch_size: samples per gradient step (default 32, as Keras).
            epochs: passes over the data.
            verbose: 0 silent; 1 or ``"auto"`` prints ``Epoch i/n`` and a line with the
                epoch's mean loss and metrics; 2 prints only that line. Times are not printed
                (Keras prints them), so a notebook's output is the same on every run.
            shuffle: reshuffle the samples before each epoch (with ``mt.random``'s generator,
                so ``mt.random.set_seed`` makes it repeatable).
            validation_data: optional ``(x_val, y_val)`` or ``(x_val, y_val, sample_weight)``,
                or an ``mt.data.Dataset`` of such batches, evaluated after each epoch
                (``val_loss``, ``val_<metric>`` in the history).
            initial_epoch: the epoch to start from (to resume a training).
            callbacks: ``mt.keras.callbacks`` instances (``EarlyStopping``,
                ``ModelCheckpoint``, ...), called as Keras 3 calls them. One of them setting
                ``model.stop_training = True`` ends training after the current batch or
                epoch.
            validation_split: a fraction in (0, 1): the *last* samples of ``x`` and ``y``
                (taken before any shuffling) are held out and evaluated after each epoch
                instead of trained on, as Keras. Ignored when ``validation_data`` is given;
                not for a Dataset.
            sample_weight: one weight per sample, shape ``(n,)``: each sample's loss (and
                metric value) is multiplied by it; the loss is still divided by the batch's
                number of samples (Keras's ``"sum_over_batch_size"``).
            class_weight: ``{class_index: weight}``: each sample weighs its class's weight (1
                for a class not listed); the class is ``y`` itself for integer labels, its
                ``argmax`` for one-hot ``y``, as Keras. Not together with ``sample_weight``.

        Returns:
            A ``History``: ``history.history["loss"]`` has one mean loss per epoch, and one
            list per logged quantity (``val_loss``, metrics, ``learning_rate`` when a
            callback logs it).

        Raises:
            ValueError: ``compile`` was not called, ``x`` and ``y`` differ in length, a
                ``validation_split`` that leaves no training or no validation sample, both
                ``class_weight`` and ``sample_weight``.
            TypeError: an argument minitape's ``fit`` does not take.
        """
        if self.optimizer is None:
            raise ValueError("fit: call model.compile(optimizer=..., loss=...) first")
        known = {"callbacks", "validation_split", "steps_per_epoch", "sample_weight",
                 "class_weight"}
        unknown = set(kwargs) - known
        if unknown:
            raise TypeError(f"fit: unsupported arguments {sorted(unknown)}; minitape's fit takes "
                            "x, y, batch_size, epochs, verbose, shuffle, validation_data, "
                            "initial_epoch, callbacks, validation_split, sample_weight, "
                            "class_weight")
        callbacks = kwargs.get("callbacks") or []
        if not isinstance(callbacks, (list, tuple)):
            callbacks = [callbacks]
        callbacks = list(callbacks)
        for cb in callbacks:
            if not all(hasattr(cb, hook) for hook in ("set_model", "on_epoch_end")):
                raise TypeError(f"fit: callbacks must be mt.keras.callbacks.Callback instances, "
                                f"got {type(cb).__name__} {cb!r:.60}")
        sample_weight = kwargs.get("sample_weight")
        class_weight = kwargs.get("class_weight")
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError("fit: You cannot use `class_weight` and `sample_weight` at the "
                                 "same time; fold the class weights into sample_weight")
            sample_weight = _class_weights(y, class_weight, x)
        split = kwargs.get("validation_split")
        if split and validation_data is None:
            (x, y, sample_weight), validation_data = _split(x, y, sample_weight, split)
        verbose = 1 if verbose == "auto" else int(verbose)
        batches = _Batches(x, y, batch_size, shuffle, "fit", sample_weight=sample_weight)
        from ..data import Dataset
        if isinstance(validation_data, Dataset):   # (batches of (x, y), as Keras)
            val_x, val_y, val_weight = validation_data, None, None
        elif validation_data is not None:
            if not (isinstance(validation_data, (tuple, list))
                    and len(validation_data) in (2, 3)):
                raise ValueError("fit: validation_data must be a tuple (x_val, y_val) or (x_val, "
                                 "y_val, val_sample_weight), or an mt.data.Dataset of (x, y) "
                                 f"pairs, got {type(validation_data).__name__}")
            val_x, val_y, val_weight = (tuple(validation_data) + (None,))[:3]
        history = History({"epochs": epochs, "steps": len(batches), "verbose": verbose})
        history.model = self
        self.history = history
        self.stop_training = False
        for cb in callbacks:       # (mt.keras.callbacks.Callback)
            cb.set_model(self)
            cb.set_params(history.params)
        for cb in callbacks:
            cb.on_train_begin({})
        training_logs = None
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            if verbose == 1:
                print(f"Epoch {epoch + 1}/{epochs}")
            for cb in callbacks:
                cb.on_epoch_begin(epoch, {})
            logs = {}
            for k, data in enumerate(batches.epoch()):
                for cb in callbacks:
                    cb.on_train_batch_begin(k, {})
                logs = self.train_step(data)
                if callbacks:
                    batch_logs = _float_logs(logs, "train_step")
                    for cb in callbacks:
                        cb.on_train_batch_end(k, batch_logs)
                if self.stop_training:
                    break
            logs = _float_logs(logs, "train_step")
            if validation_data is not None:
                val = self.evaluate(val_x, val_y, batch_size=batches.batch_size, verbose=0,
                                    return_dict=True, sample_weight=val_weight)
                logs.update({f"val_{k}": v for k, v in val.items()})
            for cb in callbacks:   # (one dict: a key a callback adds reaches the History)
                cb.on_epoch_end(epoch, logs)
            history.epoch.append(epoch)
            for k, v in logs.items():
                history.history.setdefault(k, []).append(v)
            training_logs = logs
            if verbose:
                print(_progress_line(len(batches), logs, verbose))
            if self.stop_training:
                break
        for cb in callbacks:
            cb.on_train_end(training_logs)
        return history

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_dict=False,
                 sample_weight=None, **kwargs):
        """The mean loss (and metrics) over the data, as ``keras.Model.evaluate``.

        ``sample_weight`` (one weight per sample) weights each sample's loss and metric
        values, as in ``fit``.

        Returns:
            The loss as a float when no metrics were compiled, else ``[loss, metric, ...]``,
            or a dict with ``return_dict=True``.
        """
        verbose = 1 if verbose == "auto" else int(verbose)
        batches = _Batches(x, y, batch_size, False, "evaluate", sample_weight=sample_weight)
        self.reset_metrics()
        logs = {}
        for data in batches.epoch():
            logs = self.test_step(data)
        logs = _float_logs(logs, "test_step")
        if verbose:
            print(_progress_line(len(batches), logs, verbose))
        if return_dict:
            return logs
        return logs["loss"] if len(logs) == 1 else list(logs.values())

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """The model's outputs for ``x``, batch by batch, as one NumPy array (as Keras)."""
        batches = _Batches(x, None, batch_size, False, "predict")
        outputs = []
        for data in batches.epoch():
            y = self(_unpack(data)[0], training=False)
            for leaf in _leaves_of(y):
                if tensor.on_leaving is not None and recording.tapes_recording:
                    tensor.on_leaving(leaf, sys._getframe(1))   # (explain names this line)
            outputs.append(y)
        if verbose not in (0, "auto"):
            print(f"{len(batches)}/{len(batches)}")
        if not outputs:
            return np.zeros((0,))
        outputs = [_one_output(None, o)[1] for o in outputs]   # (outputs=[y], even nested)
        if isinstance(outputs[0], dict):   # (several outputs: one array each, as Keras)
            return {k: np.concatenate([o[k].numpy() for o in outputs]) for k in outputs[0]}
        if isinstance(outputs[0], (list, tuple)) and len(outputs[0]) == 1:   # outputs=[y]
            return np.concatenate([o[0].numpy() for o in outputs])
        if isinstance(outputs[0], (list, tuple)):
            return [np.concatenate([o[i].numpy() for o in outputs])
                    for i in range(len(outputs[0]))]
        return np.concatenate([o.numpy() for o in outputs])

    def save(self, filepath, overwrite=True, **kwargs):
        """Save the architecture, the weights and the compile arguments to one file.

        As ``keras.Model.save``, in minitape's format (a zip of a JSON config and a ``.npz``
        of the weights, see ``minitape/keras/saving.py``), written atomically at
        ``filepath`` whatever its extension (``"my_model.keras"``). Read it back with
        ``mt.keras.models.load_model(filepath, custom_objects={...})``: custom layers,
        models, losses, metrics and activations are given there by name, as Keras.
        A subclassed model is rebuilt with ``from_config(get_config())``: by default the
        arguments its ``__init__`` was called with.

        Raises:
            FileExistsError: ``overwrite=False`` and the file exists.
            ValueError, TypeError: something cannot be saved (a lambda, an object without
                ``get_config``); the message names it.
        """
        from . import saving
        saving.save_model(self, filepath, overwrite=overwrite, **kwargs)

    def summary(self, line_length=None, positions=None, print_fn=print, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Print a table of the layers (name and class, output shape, number of weights) and
        the parameter counts, as Keras's ``Model.summary`` (the plain table the textbooks
        print). ``show_trainable=True`` adds a column saying whether each layer trains (a
        frozen layer: ``N``). Variables the model holds outside any layer get a row each.

        Output shapes are known for a functional model, and for a Sequential once it has an
        input shape (a first layer made with ``input_shape=``, an ``Input``, or a call);
        otherwise they read ``?``, as in Keras.
        """
        shapes = _output_shapes(self)
        in_layers = {id(v) for layer in self.layers for v in getattr(layer, "variables", ())}
        rows = []
        for layer in self.layers:
            count = sum(int(np.prod(v.shape)) for v in getattr(layer, "variables", ()))
            trains = "Y" if getattr(layer, "trainable", True) and count else "N" if count else "-"
            rows.append((f"{layer.name} ({type(layer).__name__})",
                         str(shapes.get(id(layer), "?")), f"{count:,}", trains))
        for path, v in self._variables_with_paths():   # (held outside any layer: by name)
            if id(v) not in in_layers:
                rows.append((f"{'/'.join(map(str, path))} (Variable)", str(tuple(v.shape)),
                             f"{int(np.prod(v.shape)):,}", "Y" if v.trainable else "N"))
        header = ("Layer (type)", "Output Shape", "Param #", "Trainable")
        widths = [max([len(header[i])] + [len(r[i]) for r in rows]) + 2 for i in range(3)]

        def line(cells):
            text = "".join(c.ljust(w) for c, w in zip(cells[:3], widths))
            return " " + (text + cells[3] if show_trainable else text.rstrip())
        width = sum(widths) + (len(header[3]) + 1 if show_trainable else 1)
        print_fn(f'Model: "{self.name}"')
        print_fn("_" * width)
        print_fn(line(header))
        print_fn("=" * width)
        for row in rows:
            print_fn(line(row))
        print_fn("=" * width)
        total = sum(int(np.prod(v.shape)) for v in self.variables)
        trainable = sum(int(np.prod(v.shape)) for v in self.trainable_variables)
        print_fn(f"Total params: {total:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {total - trainable:,}")
        print_fn("_" * width)


def _output_shapes(model):
    """``id(layer) -> output shape`` (the batch axis ``None``) for the layers of ``model``
    whose output shape is known: a functional model's from its calls; a Sequential's by a
    call on zeros (unrecorded) when its input shape is known."""
    from .functional import KerasTensor, _leaves
    out = {}
    for layer in model.layers:
        found = vars(layer).get("_symbolic")
        if found is not None:
            shapes = [x.shape for x in _leaves(found[1]) if isinstance(x, KerasTensor)]
            out[id(layer)] = shapes[0] if len(shapes) == 1 else shapes
    shape = getattr(model, "_build_input_shape", None)
    if isinstance(model, Sequential) and shape is not None and not isinstance(shape, list):
        # An axis of unknown length (a time axis): two passes, of two lengths; the output
        # axes whose length differs between them are None, as Keras shows them.
        from .functional import FREE_AXIS_LENGTHS
        passes = FREE_AXIS_LENGTHS if None in tuple(shape)[1:] else (1,)
        found = []
        for length in passes:
            x, shapes = _zeros(shape, length), {}
            with unrecorded():
                for layer in model.layers:
                    x = layer(x)
                    if not isinstance(x, Tensor):
                        break
                    shapes[id(layer)] = tuple(x.shape[1:])
            found.append(shapes)
        for key, first in found[0].items():
            last = found[-1].get(key, first)
            out.setdefault(key, (None,) + tuple(a if len(first) == len(last) and a == b
                                                else None for a, b in zip(first, last)))
    return out


def _masked_loss(loss, y, y_pred, sample_weight):   # (nlpgeron)
    """As Keras 3, when ``y_pred`` carries a mask (``Embedding(mask_zero=True)`` upstream, an
    RNN with ``return_sequences``: Geron's translation models), the masked positions do not
    count: the mean of the loss over the unmasked positions only (``sum(loss * mask) /
    sum(mask)``, 0 if none). None when there is no mask (or with ``sample_weight``, or a
    loss that is not a mean over the batch, or whose values do not have the mask's shape):
    the usual reduction then applies."""
    from ._keras_mask import get_keras_mask
    mask = get_keras_mask(y_pred) if isinstance(y_pred, Tensor) else None
    if mask is None or sample_weight is not None:
        return None
    if isinstance(loss, _losses.Loss):
        if loss.reduction not in ("sum_over_batch_size", "mean", "auto"):
            return None
        values = loss.call(y, y_pred)
    else:
        values = loss(y, y_pred)
    if tuple(values.shape) != tuple(mask.shape):
        return None
    from ..ops import math_ops
    weights = math_ops.cast(mask, values.dtype)
    return reduction_ops.reduce_sum(values * weights) / max(float(np.sum(mask.numpy())), 1.0)


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
        if layers is not None and not isinstance(layers, (list, tuple)):
            layers = [layers]   # one layer, as Keras 2 (d2l: ``Sequential(self.b1())``)
        for layer in layers or []:
            self.add(layer, rebuild=False)
        self._maybe_build()

    def add(self, layer, rebuild=True):
        """Append a layer (anything callable on a Tensor), as Keras's ``Sequential.add``.

        ``mt.keras.Input(shape=...)`` as the first item, or a first layer made with
        ``input_shape=``, gives the model its input shape: it then builds at once (its
        weights exist and ``summary()`` works before any data), as Keras.
        """
        from .functional import InputLayer, KerasTensor
        if isinstance(layer, (KerasTensor, InputLayer)):
            if self._layers:
                raise ValueError("Sequential: an mt.keras.Input must come first (or an "
                                 "InputLayer), before the layers")
            self._build_input_shape = layer.shape if isinstance(layer, KerasTensor) else \
                (None,) + layer.shape
            return
        if not callable(layer):
            raise TypeError(f"Sequential.add expects a layer (a callable), got {layer!r:.60}")
        if not self._layers and vars(layer).get("_input_shape_arg") is not None \
                and getattr(self, "_build_input_shape", None) is None:
            self._build_input_shape = (None,) + layer._input_shape_arg
        self._layers.append(layer)
        if rebuild:
            self._maybe_build()

    def _maybe_build(self):
        shape = getattr(self, "_build_input_shape", None)
        if shape is None or not self._layers:
            return
        built = vars(self).get("_built_upto")   # (how many layers are built, their shape)
        if built is not None and built[0] == len(self._layers) - 1 and self.built:
            # Only the new layer runs, on zeros of the shape the others give: adding the
            # layers of a deep network one by one (Géron's ResNet-34) costs one pass in all.
            with unrecorded():
                y = self._layers[-1](_zeros(built[1]))
        else:
            self._build_output = None   # (``call`` keeps its output there while building)
            try:
                self.build(shape)
                y = self._build_output
            finally:
                del self._build_output
        self._built_upto = ((len(self._layers), (None,) + tuple(y.shape[1:]))
                            if isinstance(y, Tensor) else None)

    def pop(self):
        """Remove and return the last layer."""
        self._built_upto = None
        return self._layers.pop()

    @property
    def layers(self):
        return list(self._layers)

    def get_config(self):
        """``{"name", "layers", "build_input_shape"}``, as Keras's ``Sequential.get_config``."""
        from . import saving
        return saving.sequential_config(self)

    @classmethod
    def from_config(cls, config):
        """A Sequential of the configured layers, built if the input shape is known."""
        model = cls(config["layers"], name=config.get("name"))
        if config.get("build_input_shape") is not None and not model.built:
            model.build(config["build_input_shape"])
        return model

    def call(self, inputs, training=None):
        shape = getattr(self, "_build_input_shape", None)
        x = adjust_input_rank(inputs, shape) if isinstance(shape, tuple) else inputs
        for layer in self._layers:
            if "_call_input_shape" not in vars(layer) and hasattr(x, "shape"):
                # (``layer.input_shape``, as tf.keras 2: the shape of its first input here)
                layer._call_input_shape = (None,) + tuple(x.shape[1:])
            if training is not None and accepts(layer, "training"):
                x = layer(x, training=training)
            else:
                x = layer(x)
        if "_build_output" in vars(self):   # (building: see _maybe_build)
            self._build_output = x
        return x


def adjust_input_rank(x, shape):
    """``x`` made to the rank of ``shape`` (an input's shape, batch axis first) the way Keras 3
    does for a model that knows its input: one axis too few where ``shape`` ends in 1 gains a
    last axis of 1, one axis too many of size 1 at the end loses it; any other ``x`` is
    returned as it is (the layers check it). So a vector of scalars fits a model built with
    ``input_shape=[1]`` (TensorFlow's regression tutorial: ``model.predict(horsepower[:10])``).
    A Tensor goes through the recorded ops (``expand_dims`` / ``squeeze``), so a tape sees it.
    """
    if not isinstance(x, (Tensor, np.ndarray)) or not shape:
        return x
    rank = len(shape)
    if x.ndim == rank - 1 and shape[-1] == 1:
        return np.expand_dims(x, -1) if isinstance(x, np.ndarray) else array_ops.expand_dims(x, -1)
    if x.ndim == rank + 1 and x.shape[-1] == 1:
        return np.squeeze(x, -1) if isinstance(x, np.ndarray) else array_ops.squeeze(x, -1)
    return x


class _CompiledMetrics(list):
    """``model.compiled_metrics``: the Metric objects of ``compile(metrics=[...])``, in order.

    A list, with Keras 2's ``update_state(y_true, y_pred, sample_weight=None)`` (Keras 2's
    guides' ``train_step`` calls ``self.compiled_metrics.update_state(y, y_pred)``): every
    compiled metric takes the batch in, as ``compute_metrics`` does. Keras 3 keeps it with a
    warning, which minitape repeats (``for metric in self.metrics: ...`` is the newer way).
    """

    def __init__(self, model, metrics=()):
        super().__init__(metrics)
        self._model = model

    @property
    def metrics(self):
        """The compiled Metric objects (Keras 2's ``MetricsContainer.metrics``)."""
        return list(self)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Update every compiled metric with a batch (see the class)."""
        warnings.warn("`model.compiled_metrics()` is deprecated (Keras 3). Instead, use e.g.:\n"
                      "for metric in self.metrics:\n    metric.update_state(y, y_pred)",
                      stacklevel=2)
        self._model.compute_metrics(None, y_true, y_pred, sample_weight=sample_weight)

    def reset_state(self):
        """``reset_state()`` of every compiled metric."""
        for m in self:
            m.reset_state()


class _PendingMetric(_metrics.Metric):
    """A metric of ``compile(metrics=[...])`` whose kind the data decides: ``"accuracy"``
    becomes binary, sparse categorical or categorical accuracy from its first batch's
    shapes (``mt.keras.metrics.compile_metric``, as Keras), and takes that metric's place in
    ``model.compiled_metrics`` at its first ``update_state``. Before, its result is 0."""

    def __init__(self, spec, owner):
        super().__init__(name=spec)
        self._spec = spec
        self._owner = owner

    def update_state(self, y_true, y_pred, sample_weight=None):
        metric = _metrics.compile_metric(self._spec, y_true, y_pred)
        for i, m in enumerate(self._owner):
            if m is self:
                self._owner[i] = metric
        metric.update_state(y_true, y_pred, sample_weight=sample_weight)

    def result(self):
        return constant(np.float32(0.0))

    def reset_state(self):
        pass


def _compiled_metric(spec, owner):
    """The Metric of ``compile(metrics=[..., spec, ...])`` for a model with one output."""
    if isinstance(spec, str) and spec.lower() in ("accuracy", "acc"):
        return _PendingMetric(spec, owner)
    return _metrics.compile_metric(spec, None, None)


class _Batches:
    """Cuts ``(x, y)`` into batches, reshuffled each epoch; or passes a Dataset through."""

    def __init__(self, x, y, batch_size, shuffle, what, sample_weight=None):
        from ..data import Dataset
        self.dataset = x if isinstance(x, Dataset) else None
        self.batch_size = 32 if batch_size is None else int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"{what}: batch_size must be a positive integer, got {batch_size!r}")
        if self.dataset is not None:
            if y is not None:
                raise ValueError(f"{what}: with a Dataset as x, y must be None (the Dataset "
                                 "yields (x, y) pairs)")
            if sample_weight is not None:
                raise ValueError(f"{what}: with a Dataset as x, give the sample weights in the "
                                 "Dataset, as (x, y, sample_weight) triples, not as "
                                 "sample_weight=")
            self.steps = sum(1 for _ in self.dataset)
            return
        if x is None:
            raise ValueError(f"{what}: no data (x is None)")
        self.x = _as_data(x, f"{what}: x")
        self.y = None if y is None else _as_data(y, f"{what}: y")
        self.n = _samples(self.x, f"{what}: x")
        if self.y is not None and _samples(self.y, f"{what}: y") != self.n:
            raise ValueError(f"{what}: x has {self.n} samples but y has "
                             f"{_samples(self.y, what)}; they must have the same first dimension")
        self.weights = None
        if sample_weight is not None:
            self.weights = _as_array(sample_weight, f"{what}: sample_weight")
            if self.weights.ndim == 0 or len(self.weights) != self.n:
                raise ValueError(f"{what}: sample_weight must have one weight per sample, shape "
                                 f"({self.n},), got shape {self.weights.shape}")
            self.weights = self.weights.astype(np.float32)
        self.shuffle = shuffle
        self.steps = -(-self.n // self.batch_size)

    def __len__(self):
        return self.steps

    def epoch(self):
        if self.dataset is not None:
            for item in self.dataset:   # (as Keras: what the Dataset yields, a Tensor too)
                yield tuple(item) if isinstance(item, (tuple, list)) else item
            return
        order = np.arange(self.n)
        if self.shuffle:
            order = random_ops._rng(None).permutation(self.n)
        for start in range(0, self.n, self.batch_size):
            index = order[start:start + self.batch_size]
            batch = (_rows(self.x, index, "x"),     # (drawn as fit's x and y)
                     None if self.y is None else _rows(self.y, index, "y"))
            yield batch if self.weights is None else batch + (constant(self.weights[index]),)


@contextlib.contextmanager
def unrecorded():
    """The tapes open now stop recording inside (a build's call on zeros is not the learner's
    computation)."""
    with contextlib.ExitStack() as stack:
        for tape in list(recording.state.tapes):
            stack.enter_context(tape.stop_recording())
        yield


def _zeros(shape, length=None):
    """A batch of one of zeros for a shape with a batch axis; its other ``None`` axes (a
    time axis) of ``length`` (by default the first of ``functional.FREE_AXIS_LENGTHS``)."""
    if length is None:
        from .functional import FREE_AXIS_LENGTHS
        length = FREE_AXIS_LENGTHS[0]
    shape = tuple(length if d is None else int(d) for d in tuple(shape)[1:])
    return constant(np.zeros((1,) + shape, np.float32))


def _float_logs(logs, what):
    """A step's ``{name: Tensor}`` as ``{name: float}`` (a vector metric as a list)."""
    if not isinstance(logs, dict):
        raise TypeError(f"{what} must return a dict {{name: value}} (as Keras: e.g. "
                        f"{{m.name: m.result() for m in self.metrics}}), got "
                        f"{type(logs).__name__}")
    out = {}
    for k, v in logs.items():
        if isinstance(v, dict):   # (a metric whose result is a dict: its entries, as Keras 3)
            out.update(_float_logs(v, what))
            continue
        array = np.asarray(v.numpy() if hasattr(v, "numpy") else v)
        out[k] = float(array) if array.ndim == 0 else array.tolist()
    return out


def _unpack(data):
    """``(x, y, sample_weight)`` from a step's ``data``: ``(x, y)``, ``(x, y, sw)`` or ``x``,
    as Keras's ``unpack_x_y_sample_weight``."""
    if isinstance(data, (tuple, list)):
        if len(data) == 2:
            return data[0], data[1], None
        if len(data) == 3:
            return tuple(data)
        if len(data) == 1:
            return data[0], None, None
    return data, None, None


def _weights_for(sample_weight, rank):
    """Per-sample weights ``(batch,)`` reshaped to broadcast against loss values of ``rank``
    axes (Keras's ``squeeze_or_expand_to_same_rank``)."""
    from ..ops import array_ops
    w = sample_weight if isinstance(sample_weight, Tensor) else constant(
        np.asarray(sample_weight, np.float32))
    while w.ndim > rank and w.shape[-1] == 1:
        w = array_ops.squeeze(w, axis=-1)
    if w.ndim < rank:
        w = array_ops.reshape(w, tuple(w.shape) + (1,) * (rank - w.ndim))
    return w


def _class_weights(y, class_weight, x):
    """Keras's ``class_weight_to_sample_weights``: each sample's weight from its class."""
    from ..data import Dataset
    if isinstance(x, Dataset):
        raise ValueError("fit: class_weight with a Dataset is not supported by minitape; give "
                         "the Dataset (x, y, sample_weight) triples instead")
    if not isinstance(class_weight, dict):
        raise ValueError("`class_weight` must be a dict-like mapping of class indices to "
                         f"weights. Received: class_weight={class_weight!r:.60} of type "
                         f"{type(class_weight).__name__}.")
    weights = {}
    for key, value in class_weight.items():
        try:
            weights[int(key)] = float(value)
        except (TypeError, ValueError):
            raise ValueError("`class_weight` must be a dictionary with integer keys "
                             f"representing class indices. Received an invalid key: {key!r} "
                             f"of type {type(key).__name__}.") from None
    if y is None:
        raise ValueError("fit: class_weight needs the targets y")
    labels = _as_array(y, "fit: y")
    if labels.ndim > 1:
        labels = np.argmax(labels, axis=-1) if labels.shape[-1] != 1 else labels[..., 0]
    labels = np.round(labels).astype(np.int64).reshape(len(labels), -1)[:, 0]
    return np.array([weights.get(int(c), 1.0) for c in labels], np.float32)


def _split(x, y, sample_weight, validation_split):
    """The last ``validation_split`` of the samples as validation data, as Keras's
    ``train_validation_split`` (before any shuffling)."""
    from ..data import Dataset
    if isinstance(x, Dataset):
        raise ValueError("fit: `validation_split` is only supported for Tensors or NumPy "
                         "arrays, not for a Dataset; pass validation_data=(x_val, y_val)")
    if isinstance(validation_split, (bool, np.bool_)) or not isinstance(
            validation_split, (int, float, np.number)) or not 0 < validation_split < 1:
        raise ValueError("fit: validation_split must be a fraction between 0 and 1 (e.g. 0.2), "
                         f"got {validation_split!r:.40}")
    arrays = [None if a is None else _as_data(a, f"fit: {what}")
              for a, what in ((x, "x"), (y, "y"), (sample_weight, "sample_weight"))]
    n = _samples(arrays[0], "fit: x")
    split_at = int(np.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split "
                         "it into a validation and training set as specified by "
                         f"`validation_split={validation_split}`. Either provide more data, or "
                         "a different value for the `validation_split` argument.")
    def part(a, rows):
        if isinstance(a, dict):
            return {k: v[rows] for k, v in a.items()}
        return [v[rows] for v in a] if isinstance(a, list) else a[rows]
    train = tuple(None if a is None else part(a, slice(None, split_at)) for a in arrays)
    val = tuple(None if a is None else part(a, slice(split_at, None)) for a in arrays)
    return train, val


def _one_output(y, y_pred):
    """A model made with ``outputs=[output]`` (one output in a list, as Geron writes it)
    compares its output with ``y`` as a model with one output does, as Keras (also nested,
    ``outputs=[decoder(codings)]`` with a decoder made with ``outputs=[...]``: Geron's VAE)."""
    while isinstance(y_pred, (list, tuple)) and len(y_pred) == 1:
        y_pred = y_pred[0]
        if isinstance(y, (list, tuple)) and len(y) == 1:
            y = y[0]
    return y, y_pred


def _length(x):
    """The number of samples in a batch ``x`` (a Tensor, or a list or dict of them)."""
    if isinstance(x, dict):
        x = next(iter(x.values()), None)
    elif isinstance(x, (list, tuple)):
        x = x[0] if x else None
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


def clone_model(model, input_tensors=None, clone_function=None, **kwargs):
    """A new model with the same layers and new weights, as ``keras.models.clone_model``.

    Every layer is made again from its ``get_config()`` (same names and settings), so the
    clone's weights are freshly initialized, not shared, and it is not compiled. Copy the
    weights with ``clone.set_weights(model.get_weights())`` (Geron's transfer learning:
    clone model A before reusing its layers, so training model B leaves A as it was).

    Args:
        model: a Sequential, functional or subclassed ``mt.keras.Model`` (a subclass needs
            a ``get_config`` its ``from_config`` accepts, as for ``model.save``).

    Raises:
        TypeError: ``model`` is not an ``mt.keras.Model``.
        NotImplementedError: ``input_tensors=`` or ``clone_function=`` (not in minitape).
    """
    if not isinstance(model, Model):
        raise TypeError(f"clone_model expects an mt.keras Model (Sequential, functional or "
                        f"subclassed), got {type(model).__name__}")
    if input_tensors is not None or clone_function is not None or kwargs:
        raise NotImplementedError("clone_model: minitape clones a model with its own layers "
                                  "only; input_tensors=, clone_function= and the other options "
                                  "are not supported")
    from . import saving
    spec = saving.serialize_keras_object(model, "the model")
    clone = saving.deserialize_keras_object(spec, {type(model).__name__: type(model)},
                                            "the model")
    shape = getattr(model, "_build_input_shape", None)
    if shape is not None and not clone.built:
        clone.build(shape)
    return clone


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """``mt.keras.saving.load_model``: rebuild a model that ``model.save`` wrote."""
    from . import saving
    return saving.load_model(filepath, custom_objects=custom_objects, compile=compile,
                             safe_mode=safe_mode)


def save_model(model, filepath, overwrite=True, **kwargs):
    """``mt.keras.saving.save_model``: ``model.save(filepath)``."""
    from . import saving
    saving.save_model(model, filepath, overwrite=overwrite, **kwargs)
