"""Keras-style layers on ``Module``: ``Dense``, ``BatchNormalization``, ``Conv2D``,
``MaxPooling2D``, ``Flatten``, ``Dropout``, ``Sequential``; the small layers textbooks use
(``Activation``, ``ReLU``, ``LeakyReLU``, ``Softmax``, ``Reshape``, ``Rescaling``, global
pooling, ``Embedding``, ``LayerNormalization``), the merging layers (``Add``, ...), and those
of the convolutional chapters (``AveragePooling2D``, ``ZeroPadding2D``, ``UpSampling2D``,
``CenterCrop``; Keras's aliases ``MaxPool2D``, ``AvgPool2D``, ``GlobalAvgPool2D``, ...)."""

from __future__ import annotations

import contextlib
import inspect
import threading

import numpy as np

from . import dtypes
from .module import Module
from .ops import array_ops, math_ops, nn_ops, random_ops, reduction_ops
from .engine.tensor import Tensor, Variable, convert_to_tensor

_ACTIVATIONS = {
    "relu": nn_ops.relu, "elu": nn_ops.elu, "sigmoid": math_ops.sigmoid, "tanh": math_ops.tanh,
    "softplus": math_ops.softplus, "softmax": nn_ops.softmax, "linear": None,
}


def _activation(activation):
    """A layer's ``activation=``: None, a callable, or a Keras name (``"relu"``, ...; the
    rarer ones, ``"selu"``, ``"gelu"``, ..., from ``mt.keras.activations``)."""
    if activation is None or callable(activation):
        return activation
    if activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    from .keras import activations
    return activations.get(activation)


def _positive_int(value, what, arg):
    """``value`` as a Python int > 0 (a NumPy integer or a 0-d int Tensor too), else an error
    naming ``what``, ``arg`` and the value."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "iu":
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: {arg} must be a positive int, got {type(value).__name__} "
                        f"{value!r:.40}")
    if value <= 0:
        raise ValueError(f"{what}: {arg} must be a positive int (the number of outputs), got "
                         f"{arg}={value}")
    return int(value)


_KERNEL_INITIALIZERS = ("glorot_uniform", "zeros", "ones")


# -- Keras's call context: the training mode of the enclosing call --------------------------

class _CallContext(threading.local):
    def __init__(self):
        self.training = []   # the modes of the layer calls open now, innermost last


_call_context = _CallContext()


def training_mode(training):
    """``training`` as given; if None, the mode of the enclosing layer or model call that was
    given one (Keras's call context: ``model(x, training=True)`` reaches a ``Dropout`` inside
    the model's ``call`` even when ``call`` does not pass it on); else False."""
    if training is None:
        return _call_context.training[-1] if _call_context.training else False
    return training


@contextlib.contextmanager
def training_scope(training):
    """Inside: ``training_mode(None)`` is ``training`` (nothing changes when it is None)."""
    if training is None:
        yield
        return
    _call_context.training.append(bool(training))
    try:
        yield
    finally:
        _call_context.training.pop()


# -- Keras's layer options: losses, regularizers, input_shape ---------------------------------

class LayerMixin:
    """What Keras's layers have and ``mt.Module`` lacks, mixed into the layers.

    ``get_config`` / ``from_config`` (the constructor's arguments, recorded when the layer
    is made, as Keras 3's automatic config; ``model.save`` writes them), ``add_loss`` and
    ``losses``.

    ``layer.losses`` lists, as Keras 3: the losses added with ``add_loss`` during the latest
    outermost call (this layer's, then those of the layers inside it), then one penalty per
    regularized trainable weight (``kernel_regularizer=``, ``bias_regularizer=``,
    ``add_weight(regularizer=)``), computed from the weight's current value each time
    ``losses`` is read: read inside a ``GradientTape``, the penalties are recorded and their
    gradients reach the weights. Each is a scalar Tensor.

    The weights as Keras lists them: ``weights``, ``trainable_weights``,
    ``non_trainable_weights`` (lists of Variables), ``get_weights()`` / ``set_weights()``
    (their values as NumPy arrays) and ``count_params()``. ``layer.trainable = False``
    freezes the layer: its weights leave ``trainable_weights`` (and a model's) for
    ``non_trainable_weights``, so ``fit``, and a training step that asks
    ``tape.gradient(loss, model.trainable_weights)``, leave them as they are (the Variables'
    own ``trainable`` flags do not change, as in tf.keras 2).
    """

    _walk_skip = ("_losses", "_weight_regularizers", "_added_regularizers", "_weight_constraints",
                  "_symbolic",
                  "activity_regularizer", "_input_shape_arg", "_auto_config")

    trainable = True
    """Set it to False to freeze the layer (see the class)."""

    built = True
    """Whether the layer has made its weights (a layer with weights made on its first call
    says False until then; a layer without weights has nothing to build)."""

    @property
    def trainable_variables(self):
        return super().trainable_variables if self.trainable else ()

    @property
    def input(self):
        """The KerasTensor(s) this layer was first called on in a functional model, as
        Keras's ``layer.input`` (an ``InputLayer``'s: its ``Input``).

        Raises:
            AttributeError: the layer was never called on an ``mt.keras.Input`` (or on a
                layer's output that came from one).
        """
        return self._first_symbolic_call("input")[0]

    @property
    def output(self):
        """The KerasTensor(s) this layer returned on its first functional call, as Keras's
        ``layer.output``."""
        return self._first_symbolic_call("output")[1]

    @property
    def input_shape(self):
        """The shape of the input this layer was first called on inside a model (a
        ``Sequential`` or a functional model), batch axis None, as tf.keras 2's
        ``layer.input_shape`` (Géron's ``DenseTranspose`` reads ``dense.input_shape[-1]``;
        Keras 3 dropped it). A list of shapes for a layer called on several inputs.

        Raises:
            AttributeError: the layer was never called inside a model (tf.keras 2 says the
                same of a layer only called on tensors).
        """
        found = vars(self).get("_symbolic")
        if found is None and vars(self).get("_inputs") is not None:   # a functional model
            found = (list(self.inputs),)   # (its Inputs' shapes, as Keras 3's Functional)
            if len(found[0]) == 1:
                found = (found[0][0],)
        if found is not None:
            inputs = found[0]
            if isinstance(inputs, (list, tuple)):
                return [tuple(x.shape) for x in inputs]
            return tuple(inputs.shape)
        shape = vars(self).get("_call_input_shape")
        if shape is None:
            raise AttributeError(f"The layer '{self.name}' has never been called inside a model "
                                 "and thus has no defined input shape (as in tf.keras): call "
                                 "the model containing it first, e.g. model(X) or model.fit")
        return shape

    def _first_symbolic_call(self, what):
        found = vars(self).get("_symbolic")
        if found is None:
            raise AttributeError(f"Layer '{self.name}' has no {what} yet: it has one once it "
                                 "is called on an mt.keras.Input (a functional model), as in "
                                 "Keras")
        return found

    @property
    def weights(self):
        """Every weight (Variable) of the layer and the layers inside it, as a list."""
        return list(self.variables)

    @property
    def trainable_weights(self):
        """The weights that training changes: none while ``trainable`` is False."""
        return list(self.trainable_variables)

    @property
    def non_trainable_weights(self):
        """The other weights: a frozen layer's, BatchNormalization's moving statistics."""
        return list(self.non_trainable_variables)

    def get_weights(self):
        """The weights' values, as Keras's ``Layer.get_weights``: a list of NumPy arrays
        (copies: changing one does not change the layer), in ``weights`` order, e.g. ``[kernel
        (in, units), bias (units,)]`` for a ``Dense``. Empty before the layer is built."""
        return [np.array(v.value) for v in self.variables]

    def set_weights(self, weights):
        """Set the weights from NumPy arrays (or nested lists, Tensors), in ``weights``
        order, as Keras's ``Layer.set_weights``; each value is cast to its Variable's dtype.

        Raises:
            ValueError: a list of another length than ``weights``, or a value of another shape
                than its Variable (nothing is set then).
            TypeError: ``weights`` is not a list or tuple.
        """
        variables = self.variables
        if not isinstance(weights, (list, tuple)):
            raise TypeError(f"{type(self).__name__} '{self.name}'.set_weights expects a list of "
                            f"arrays, one per weight, got {type(weights).__name__}; e.g. "
                            f"layer.set_weights(other_layer.get_weights())")
        if len(weights) != len(variables):
            raise ValueError(
                f"{type(self).__name__} '{self.name}'.set_weights got a list of {len(weights)} "
                f"value(s), but the layer has {len(variables)} weight(s) "
                f"({', '.join(v.path for v in variables) or 'none yet: build it first'}); give "
                "one value per weight, in layer.weights order")
        values = []
        for v, w in zip(variables, weights):
            value = np.asarray(w.numpy() if hasattr(w, "numpy") else w)
            if value.shape != tuple(v.shape):
                raise ValueError(f"{type(self).__name__} '{self.name}'.set_weights: weight "
                                 f"{v.path} has shape {tuple(v.shape)}, the value given for "
                                 f"it has shape {value.shape}")
            values.append(value.astype(v.dtype))
        for v, value in zip(variables, values):
            v.assign(value)

    def count_params(self):
        """The number of scalars in the weights, as Keras's ``Layer.count_params``.

        Raises:
            ValueError: the layer is not built yet (its weights do not exist).
        """
        if not self.built:
            raise ValueError(f"count_params: the layer '{self.name}' is not built yet, so it has "
                             "no weights to count; call it on data once, or build it (a "
                             "Sequential with input_shape= on its first layer builds at once)")
        return sum(int(np.prod(v.shape)) for v in self.variables)

    def __new__(cls, *args, **kwargs):
        # Keras 3's automatic config: the arguments the layer was made with, by name.
        obj = super().__new__(cls)
        try:
            signature = inspect.signature(cls.__init__)
            bound = signature.bind(obj, *args, **kwargs)
        except (TypeError, ValueError):
            return obj   # (``__init__`` raises its own error)
        config = {}
        for i, (name, value) in enumerate(bound.arguments.items()):
            kind = signature.parameters[name].kind
            if i == 0:
                continue   # self
            if kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    return obj   # no config from *args
            elif kind is inspect.Parameter.VAR_KEYWORD:
                config.update(value)
            else:
                config[name] = value
        obj._auto_config = config
        return obj

    def get_config(self):
        """The layer's constructor arguments, as Keras's ``Layer.get_config``.

        By default the arguments it was made with (and its ``name``); a layer whose
        ``__init__`` takes other arguments overrides it (and calls ``super().get_config()``).
        ``model.save`` writes it as JSON: numbers, strings, lists, regularizers, named
        functions.
        """
        return {**vars(self).get("_auto_config", {}), "name": self.name}

    @classmethod
    def from_config(cls, config):
        """``cls(**config)`` (keys that ``__init__`` does not take are left out), as Keras."""
        parameters = inspect.signature(cls.__init__).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            config = {k: v for k, v in config.items() if k in parameters}
        return cls(**config)

    def add_loss(self, loss):
        """Add a scalar loss (a Tensor computed in ``call``), as Keras's ``Layer.add_loss``.

        The losses are kept until the next outermost call of a layer or model that holds
        this layer, and ``Model.fit`` adds their sum to the compiled loss.

        Raises:
            TypeError: ``loss`` is not a Tensor or a number.
        """
        from .module import with_losses
        if not isinstance(loss, Tensor):
            if isinstance(loss, bool) or not isinstance(loss, (int, float, np.number)):
                raise TypeError(f"add_loss expects a scalar Tensor computed from the layer's "
                                f"inputs or weights, got {type(loss).__name__} {loss!r:.60}")
            loss = convert_to_tensor(float(loss))
        vars(self).setdefault("_losses", []).append(loss)
        if not any(m is self for m in with_losses):
            with_losses.append(self)

    @property
    def losses(self):
        """The ``add_loss`` losses, then the weight penalties (see the class); a list."""
        modules = (self,) + tuple(self.submodules)
        out = [loss for m in modules for loss in vars(m).get("_losses", ())]
        penalties = {}
        for m in modules:
            for name, regularizer in vars(m).get("_weight_regularizers", {}).items():
                var = vars(m).get(name)
                if isinstance(var, Variable):
                    penalties[id(var)] = regularizer
            for var, regularizer in vars(m).get("_added_regularizers", ()):
                penalties[id(var)] = regularizer
        if penalties:
            out += [penalties[id(v)](v) for v in self.trainable_variables if id(v) in penalties]
        return out

    @property
    def metrics(self):
        """The ``mt.keras.metrics.Metric`` objects that this layer and the layers inside it
        hold in attributes (directly, or in a list, tuple or dict), as Keras 3's
        ``Layer.metrics``.

        A layer that updates one in ``call`` (Keras's "endpoint layer":
        ``self.accuracy_metric.update_state(targets, logits)``) shows it in ``fit``'s logs,
        which reset it at each epoch. A model's compiled metrics and loss trackers are its
        own (``Model.metrics``), not those of a model used as a layer inside another.
        """
        from .keras import metrics
        metric = metrics.Metric
        held = (metric, Module, list, tuple, dict)   # (what can hold a metric)
        out, queue, seen = [], [self], {id(self)}
        for module in queue:   # (breadth first: this layer's own metrics, then its layers')
            skip = type(module)._walk_rules[0]
            for key, value in vars(module).items():
                if not isinstance(value, held) or key in _TRAINER_METRICS or key in skip:
                    continue
                items = (value.values() if isinstance(value, dict) else value
                         if isinstance(value, (list, tuple)) else (value,))
                for item in items:
                    if isinstance(item, metric):
                        if not any(item is m for m in out):
                            out.append(item)
                    elif isinstance(item, Module) and id(item) not in seen:
                        seen.add(id(item))
                        queue.append(item)
        return out

    def add_metric(self, *args, **kwargs):
        """Keras 2's ``Layer.add_metric(value, name=...)``, which Keras 3 (TensorFlow 2.16
        and later) removed: it raises ``NotImplementedError``, as Keras 3 does.

        What to write instead: keep a metric in an attribute and update it in ``call``
        (``self.accuracy_metric = mt.keras.metrics.BinaryAccuracy(name="accuracy")`` in
        ``__init__``, ``self.accuracy_metric.update_state(targets, logits)`` in ``call``):
        ``layer.metrics`` lists it and ``fit`` reports it by its name; or give the metric to
        ``model.compile(metrics=[...])``.
        """
        raise NotImplementedError(
            "Layer `add_metric()` method is deprecated (removed in Keras 3); add your metric "
            "in `Model.compile(metrics=[...])`, or keep a metric in an attribute and update it "
            "in call(): self.accuracy_metric = keras.metrics.BinaryAccuracy(name='accuracy') "
            "in __init__, self.accuracy_metric.update_state(targets, logits) in call (fit "
            "then reports it)")

    def _activity_loss(self, outputs):
        """Add ``activity_regularizer(outputs) / batch_size`` (Keras 3), if there is one."""
        regularizer = vars(self).get("activity_regularizer")
        if regularizer is not None and isinstance(outputs, Tensor):
            loss = regularizer(outputs)
            if outputs.ndim > 0 and outputs.shape[0]:
                loss = loss / math_ops.cast(outputs.shape[0], loss.dtype)
            self.add_loss(loss)
        return outputs


# A model's own metrics (Model.metrics lists them first), not a layer's: a model used as a
# layer inside another does not add its loss tracker to the outer model's metrics (Keras 3).
_TRAINER_METRICS = ("_loss_tracker", "_output_loss_trackers", "compiled_metrics")


def _layer_options(layer, kwargs, what, weights=()):
    """Keras's keyword arguments common to layers, from ``**kwargs``.

    ``input_shape`` (a tuple without the batch axis; ``input_dim=n`` is ``(n,)``) is kept
    for ``Sequential``, which builds its layers from it, as Keras; ``<weight>_regularizer``
    for each name in ``weights`` and ``activity_regularizer`` (when the layer applies one)
    go through ``mt.keras.regularizers.get``.

    Raises:
        TypeError: an unknown keyword argument (named).
    """
    from .keras import constraints, regularizers
    allowed = {"input_shape", "input_dim", "batch_input_shape", "batch_size"}
    allowed |= {f"{w}_regularizer" for w in weights} | {f"{w}_constraint" for w in weights}
    if weights:
        allowed.add("activity_regularizer")
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(f"{what}: unexpected keyword argument{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)}; it accepts {', '.join(sorted(allowed))} besides "
                        "its own arguments")
    shape = kwargs.get("input_shape")
    if kwargs.get("input_dim") is not None:
        shape = (kwargs["input_dim"],)
    if kwargs.get("batch_input_shape") is not None:
        shape = tuple(kwargs["batch_input_shape"])[1:]
    if shape is not None:
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not all(
                d is None or (isinstance(d, (int, np.integer)) and d > 0) for d in shape):
            raise ValueError(f"{what}: input_shape must be a tuple of positive ints (or None), "
                             f"without the batch axis, e.g. input_shape=(784,); got {shape!r}")
        layer._input_shape_arg = tuple(None if d is None else int(d) for d in shape)
    if weights:
        layer._weight_regularizers = {}
        for w in weights:
            regularizer = regularizers.get(kwargs.get(f"{w}_regularizer"))
            if regularizer is not None:
                layer._weight_regularizers[w] = regularizer
        layer.activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        layer._weight_constraints = {w: constraints.get(kwargs.get(f"{w}_constraint"))
                                     for w in weights}


def _constrain(layer, name, variable):
    """Give ``variable``, the layer's weight ``name``, the layer's ``<name>_constraint=``
    (None if none): optimizers apply it after each update (``mt.keras.constraints``)."""
    variable.constraint = vars(layer).get("_weight_constraints", {}).get(name)
    return variable


def _check_initializer(initializer, layer, arg="kernel_initializer"):
    """``kernel_initializer`` at construction: a name, an initializer or a callable (as Keras).

    ``"glorot_uniform"``, ``"zeros"`` and ``"ones"`` are kept as names (drawn below, as
    before); any other Keras name (``"he_normal"``, ...) and an initializer class become an
    ``mt.keras.initializers`` object (``initializers.get``); a callable is kept as it is.
    """
    if isinstance(initializer, str) and initializer in _KERNEL_INITIALIZERS:
        return initializer
    if isinstance(initializer, str):
        from . import initializers
        try:
            return initializers.get(initializer)
        except ValueError:
            pass
    elif isinstance(initializer, type):
        from . import initializers
        if issubclass(initializer, initializers.Initializer):
            return initializer()
    elif callable(initializer):
        return initializer
    raise (ValueError if isinstance(initializer, str) else TypeError)(
        f"{layer}: {arg} must be a Keras initializer name (one of "
        f"{list(_KERNEL_INITIALIZERS)}, 'he_normal', ...: see mt.keras.initializers), an "
        f"initializer, or a callable initializer(shape, dtype=...) returning the initial "
        f"kernel (e.g. mt.random.normal, as in Keras), got {type(initializer).__name__} "
        f"{initializer!r:.60}")


def _layer_dtype(dtype):
    """A layer's dtype: the one given, else ``mt.keras.backend.floatx()`` (as Keras)."""
    if dtype is None:
        from .keras import backend
        return dtypes.as_dtype(backend.floatx())
    return dtypes.as_dtype(dtype)


def _initial_kernel(initializer, shape, dtype, glorot_limit, layer, arg="kernel_initializer"):
    """The kernel's first value, an ndarray of ``shape`` and ``dtype``.

    A name: ``glorot_uniform`` (uniform in ``[-glorot_limit, glorot_limit]``), ``zeros``,
    ``ones``. A callable is called as Keras calls an initializer, ``initializer(shape,
    dtype=dtype)`` with ``shape`` a tuple of ints; it may return a Tensor, an ndarray or a
    nested list, of that shape and of a floating or integer dtype (cast to ``dtype``).
    """
    if isinstance(initializer, str):
        if initializer == "glorot_uniform":
            if glorot_limit is None:   # a bias: Keras's fans of a 1-D shape
                glorot_limit = np.sqrt(6.0 / (2 * shape[0])) if shape[0] else 0.0
            return np.asarray(random_ops.uniform(shape, -glorot_limit, glorot_limit,
                                                 dtype=dtype))
        return np.full(shape, 0.0 if initializer == "zeros" else 1.0, dtype)
    try:
        value = initializer(shape, dtype=dtype)
    except TypeError as e:
        raise TypeError(f"{layer}: {arg} {initializer!r:.60} could not be called "
                        f"as initializer(shape, dtype=...) (as Keras calls it) with "
                        f"shape={shape}, dtype={dtype.name}: {e}") from e
    what = f"{layer}: the value of {arg}({shape}, dtype={dtype.name})"
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{what} must be a Tensor or an array of numbers, got "
                        f"{type(value).__name__} {value!r:.60}")
    if array.shape != tuple(shape):
        raise ValueError(f"{what} has shape {array.shape}, expected {tuple(shape)}: an "
                         "initializer must return a value of the shape it is given")
    return array.astype(dtype)  # (a new array: the Variable owns it)


def _last_dim(shape_or_size, layer):
    """``build``'s argument: Keras passes the input shape (a tuple with the batch axis,
    ``(None, 3)``), minitape's own calls the last dimension; either gives that int."""
    if isinstance(shape_or_size, (tuple, list)) or hasattr(shape_or_size, "as_list"):
        shape = tuple(shape_or_size)
        if not shape or shape[-1] is None:
            raise ValueError(f"{layer}.build needs the size of the last axis, got the input "
                             f"shape {shape!r}")
        return int(shape[-1])
    return int(shape_or_size)


class Dense(LayerMixin, Module):
    """``activation(x @ kernel + bias)``, as ``tf.keras.layers.Dense``.

    Builds on the first call from the input's last dimension: ``kernel`` ``(in, units)``
    (Glorot-uniform), then ``bias`` ``(units,)`` (zeros). Integer inputs are cast to the
    layer's dtype, as Keras does.

    ``kernel_initializer``: ``"glorot_uniform"`` (the default), any Keras initializer name
    (``"zeros"``, ``"he_normal"``, ...), an ``mt.keras.initializers`` object
    (``HeNormal()``, ``tf.random_normal_initializer(stddev=0.1)``), or a callable that Keras
    would accept, called as ``initializer(shape, dtype=dtype)`` when the layer builds (e.g.
    ``mt.random.normal``; it returns a Tensor or an array of that shape). ``bias_initializer``
    (``"zeros"`` by default) takes the same. ``dtype``: the weights' dtype,
    ``mt.keras.backend.floatx()`` (float32) by default.

    Keras's keyword arguments: ``kernel_regularizer=``, ``bias_regularizer=`` (penalties in
    ``layer.losses``, see ``mt.keras.regularizers``), ``activity_regularizer=`` (a penalty
    of the output, divided by the batch size, added at each call), ``input_shape=(n,)`` or
    ``input_dim=n`` (first layer of a ``Sequential``, which then builds at once).

    Raises:
        TypeError: ``units`` is not an int (``True``, ``2.5``, ``"8"``); a
            ``kernel_initializer`` that is neither a name nor a callable, or whose value is
            not numbers.
        ValueError: ``units`` is 0 or negative (Keras: "expected a positive integer"), an
            unknown activation or initializer name, an initializer value of the wrong shape,
            or a later call with another input width.

    >>> import minitape as mt
    >>> layer = mt.layers.Dense(2, kernel_initializer=lambda shape, dtype: mt.ones(shape, dtype))
    >>> layer(mt.constant([[1.0, 2.0, 3.0]]))
    <mt.Tensor: shape=(1, 2), dtype=float32, numpy=array([[6., 6.]], dtype=float32)>
    """

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", dtype=None, name=None, **kwargs):
        units = _positive_int(units, "Dense", "units")
        super().__init__(name=name)
        _layer_options(self, kwargs, "Dense", weights=("kernel", "bias"))
        kernel_initializer = _check_initializer(kernel_initializer, "Dense")
        self.bias_initializer = _check_initializer(bias_initializer, "Dense", "bias_initializer")
        self.units = units
        self.activation = _activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.dtype = _layer_dtype(dtype)
        self.kernel = None
        self.bias = None

    @property
    def built(self):
        return self.kernel is not None

    def build(self, in_features):
        """Make ``kernel`` and ``bias`` for inputs with ``in_features`` features (or for an
        input shape, as Keras's ``layer.build((None, 3))``)."""
        in_features = _last_dim(in_features, "Dense")
        shape = (in_features, self.units)
        init = _initial_kernel(self.kernel_initializer, shape, self.dtype,
                               np.sqrt(6.0 / (in_features + self.units)), f"Dense '{self.name}'")
        self.kernel = _constrain(self, "kernel", Variable(init, name="kernel"))
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = Variable(_initial_kernel(self.bias_initializer, (self.units,), self.dtype,
                                                 None, f"Dense '{self.name}'", "bias_initializer"),
                                 name="bias")
            self.bias.path = f"{self.name}/bias"
            _constrain(self, "bias", self.bias)

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Dense '{self.name}'")
        if x.dtype != self.dtype:
            x = math_ops.cast(x, self.dtype)
        if x.ndim < 2:
            raise ValueError(f"Dense '{self.name}' expects inputs of shape (batch, features), got "
                             f"{x.shape}; e.g. wrap a vector as [[...]]")
        if self.kernel is None:
            self.build(x.shape[-1])
        elif x.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"Dense '{self.name}' was built for {self.kernel.shape[0]} input "
                             f"features, got inputs of shape {x.shape}; a layer keeps its "
                             "input width: make a new Dense layer for inputs of another width")
        y = math_ops.matmul(x, self.kernel)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


class BatchNormalization(LayerMixin, Module):
    """Normalize with batch statistics when training, as ``tf.keras.layers.BatchNormalization``.

    Variables: trainable ``gamma`` (ones) and ``beta`` (zeros), non-trainable ``moving_mean``
    (zeros) and ``moving_variance`` (ones), over the last axis. ``training=True`` uses the
    batch mean and biased variance (``epsilon`` inside the square root) and updates the
    moving averages with ``assign``; ``training=False`` (the default, unless the enclosing
    layer or model call says otherwise: Keras's call context) uses the moving averages.
    """

    def __init__(self, momentum=0.99, epsilon=1e-3, name=None, **kwargs):
        super().__init__(name=name)
        _layer_options(self, kwargs, "BatchNormalization")
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    @property
    def built(self):
        return self.gamma is not None

    def build(self, features, dtype=None):
        """Make the four weights for ``features`` channels (or an input shape, as Keras)."""
        features = _last_dim(features, "BatchNormalization")
        dtype = _layer_dtype(None) if dtype is None else dtype

        def var(value, name, trainable):
            v = Variable(np.full(features, value, dtype), name=name, trainable=trainable)
            v.path = f"{self.name}/{name}"
            return v
        self.gamma = var(1.0, "gamma", True)
        self.beta = var(0.0, "beta", True)
        self.moving_mean = var(0.0, "moving_mean", False)
        self.moving_variance = var(1.0, "moving_variance", False)

    def __call__(self, inputs, training=None):
        x = math_ops.floating(inputs, f"BatchNormalization '{self.name}'")
        if self.gamma is None:
            self.build(x.shape[-1], x.dtype)
        if training_mode(training):
            axes = list(range(x.ndim - 1))
            mean = reduction_ops.reduce_mean(x, axis=axes)
            variance = reduction_ops.reduce_mean(math_ops.square(x - mean), axis=axes)
            m = self.momentum
            self.moving_mean.assign(self.moving_mean * m + mean * (1 - m))
            self.moving_variance.assign(self.moving_variance * m + variance * (1 - m))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        return (x - mean) / math_ops.sqrt(variance + self.epsilon) * self.gamma + self.beta


class Sequential(LayerMixin, Module):
    """Call layers one after another, as ``tf.keras.Sequential``."""

    def __init__(self, layers=(), name=None):
        super().__init__(name=name)
        self.layers = list(layers)
        for layer in self.layers:
            if not callable(layer):
                raise TypeError(f"Sequential expects callable layers, got {layer!r}")

    def add(self, layer):
        self.layers.append(layer)

    def __call__(self, inputs, **kwargs):
        x = inputs
        for layer in self.layers:
            x = layer(x, **kwargs) if kwargs and isinstance(layer, (BatchNormalization, Dropout)) \
                else layer(x)
        return x


_ = (Tensor, array_ops)


# -- convolutional networks: Conv2D, MaxPooling2D, Flatten, Dropout -------------------------------


def _default_name(base):
    """Keras's default layer names (``conv2d``, ``conv2d_1``, ...), unique like Module's."""
    from .module import unique_name
    return unique_name(base)


def _pair(value, layer, arg):
    """``kernel_size``/``strides``/``pool_size``: an int or a pair of ints -> ``(h, w)``."""
    items = [value] * 2 if isinstance(value, (int, np.integer)) else value
    if (isinstance(value, bool) or not isinstance(items, (list, tuple)) or len(items) != 2
            or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1
                       for n in items)):
        raise ValueError(f"{layer}: {arg} must be a positive int or a pair of positive ints "
                         f"(height, width), got {value!r}")
    return int(items[0]), int(items[1])


def _keras_padding(padding, layer):
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"{layer}: padding must be \"valid\" or \"same\", got {padding!r}")
    return padding.upper()  # the spelling of mt.nn.conv2d / max_pool2d


def _images(inputs, dtype, layer):
    x = convert_to_tensor(inputs, what=layer)
    if x.dtype != dtype:
        x = math_ops.cast(x, dtype)
    if x.ndim != 4:
        raise ValueError(f"{layer} expects images of shape (batch, height, width, channels), got "
                         f"shape {x.shape}; e.g. mt.reshape(x, [-1, 8, 8, 1]) for 8x8 grey images")
    return x


class Conv2D(LayerMixin, Module):
    """``activation(conv2d(x, kernel) + bias)``, as ``tf.keras.layers.Conv2D``.

    Builds on the first call from the input's channels: ``kernel`` ``(kh, kw, in_channels,
    filters)`` (Glorot-uniform with Keras's fans ``kh * kw * in`` and ``kh * kw * filters``),
    then ``bias`` ``(filters,)`` (zeros). Inputs are NHWC images; integer inputs are cast.

    Args:
        filters: the number of output channels.
        kernel_size: an int or ``(kh, kw)``.
        strides: an int or ``(sh, sw)``, 1 by default.
        padding: ``"valid"`` (the default, as Keras) or ``"same"``.
        activation: a name (``"relu"``, ...), a callable, or None.
        kernel_initializer: ``"glorot_uniform"`` (the default), any Keras initializer name
            (``"he_normal"``, ...), an ``mt.keras.initializers`` object, or a callable
            ``initializer(shape, dtype=dtype)`` as Keras calls it (e.g.
            ``mt.random.normal``), returning a value of ``shape`` ``(kh, kw, in, filters)``.
        bias_initializer: ``"zeros"`` (the default) or any of the above, for ``(filters,)``.
        dtype: the weights' dtype, ``mt.keras.backend.floatx()`` (float32) by default.
        groups: split the input channels into this many groups, each convolved with its own
            ``filters / groups`` filters (kernel ``(kh, kw, in / groups, filters)``, as Keras;
            ResNeXt's grouped convolution). 1 by default.
        **kwargs: Keras's ``kernel_regularizer``, ``bias_regularizer``,
            ``activity_regularizer`` (as ``Dense``) and ``input_shape=(h, w, channels)``.

    Raises:
        ValueError: bad sizes, padding or initializer name at construction; at call time an
            input that is not rank 4, or whose channels differ from those the layer was built
            for, or an initializer value of the wrong shape.
        TypeError: a ``kernel_initializer`` that is neither a name nor a callable.

    >>> import minitape as mt
    >>> conv = mt.layers.Conv2D(4, 3, padding="same", activation="relu")
    >>> conv(mt.zeros([2, 8, 8, 1])).shape, conv.kernel.shape
    ((2, 8, 8, 4), (3, 3, 1, 4))
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 dtype=None, name=None, groups=1, **kwargs):
        super().__init__(name=name if name is not None else _default_name("conv2d"))
        _layer_options(self, kwargs, "Conv2D", weights=("kernel", "bias"))
        if isinstance(filters, bool) or not isinstance(filters, (int, np.integer)) or filters < 1:
            raise ValueError(f"Conv2D: filters must be a positive int (the number of output "
                             f"channels), got {filters!r}")
        if (isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1
                or filters % groups):
            raise ValueError(f"Conv2D: groups must be a positive int that divides filters "
                             f"({filters}), got {groups!r}")
        self.groups = int(groups)
        kernel_initializer = _check_initializer(kernel_initializer, "Conv2D")
        self.bias_initializer = _check_initializer(bias_initializer, "Conv2D", "bias_initializer")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "Conv2D", "kernel_size")
        self.strides = _pair(strides, "Conv2D", "strides")
        self.padding = _keras_padding(padding, "Conv2D")
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.dtype = _layer_dtype(dtype)
        self.kernel = None
        self.bias = None

    @property
    def built(self):
        return self.kernel is not None

    def build(self, in_channels):
        """Make ``kernel`` and ``bias`` for ``in_channels`` input channels (or an input shape
        ``(None, h, w, channels)``, as Keras)."""
        in_channels = _last_dim(in_channels, "Conv2D")
        if in_channels % self.groups:
            raise ValueError(f"Conv2D '{self.name}': groups={self.groups} must divide the "
                             f"input's {in_channels} channels")
        kh, kw = self.kernel_size
        shape = (kh, kw, in_channels // self.groups, self.filters)
        init = _initial_kernel(self.kernel_initializer, shape, self.dtype,
                               np.sqrt(6.0 / (kh * kw * (shape[2] + self.filters))),
                               f"Conv2D '{self.name}'")
        self.kernel = _constrain(self, "kernel", Variable(init, name="kernel"))
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = Variable(_initial_kernel(self.bias_initializer, (self.filters,),
                                                 self.dtype, None, f"Conv2D '{self.name}'",
                                                 "bias_initializer"), name="bias")
            self.bias.path = f"{self.name}/bias"
            _constrain(self, "bias", self.bias)

    def __call__(self, inputs):
        x = _images(inputs, self.dtype, f"Conv2D '{self.name}'")
        if self.kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.kernel.shape[2] * self.groups:
            raise ValueError(f"Conv2D '{self.name}' was built for "
                             f"{self.kernel.shape[2] * self.groups} input channels, got inputs "
                             f"of shape {x.shape}")
        from .ops import conv_ops
        if self.groups == 1:
            y = conv_ops.conv2d(x, self.kernel, self.strides, self.padding)
        else:   # each group of input channels makes its own filters / groups outputs
            y = array_ops.concat([
                conv_ops.conv2d(xg, kg, self.strides, self.padding) for xg, kg in zip(
                    array_ops.split(x, self.groups, axis=3),
                    array_ops.split(self.kernel, self.groups, axis=3))], axis=3)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


class Conv2DTranspose(Conv2D):
    """``activation(conv2d_transpose(x, kernel) + bias)``, as ``tf.keras.layers.Conv2DTranspose``
    (the "deconvolution" that a GAN's generator uses to grow images).

    The same arguments as ``Conv2D``. Builds on the first call: ``kernel`` ``(kh, kw,
    filters, in_channels)`` (Keras's order; Glorot-uniform with its fans), ``bias``
    ``(filters,)``. An input ``(batch, h, w, c)`` gives ``(batch, h * sh, w * sw, filters)``
    with ``padding="same"``, and ``h * sh + max(kh - sh, 0)`` rows with ``"valid"`` (Keras's
    ``deconv_output_length``). Computed with ``mt.nn.conv2d_transpose``.

    >>> import minitape as mt
    >>> up = mt.keras.layers.Conv2DTranspose(3, (4, 4), strides=(2, 2), padding="same")
    >>> up(mt.zeros([2, 7, 7, 5])).shape, up.kernel.shape
    ((2, 14, 14, 3), (4, 4, 3, 5))
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 dtype=None, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         bias_initializer=bias_initializer, dtype=dtype,
                         name=name if name is not None else _default_name("conv2d_transpose"),
                         **kwargs)

    def build(self, in_channels):
        """Make ``kernel`` ``(kh, kw, filters, in_channels)`` and ``bias`` (or take an input
        shape ``(None, h, w, channels)``, as Keras)."""
        in_channels = _last_dim(in_channels, "Conv2DTranspose")
        kh, kw = self.kernel_size
        shape = (kh, kw, self.filters, in_channels)
        init = _initial_kernel(self.kernel_initializer, shape, self.dtype,
                               np.sqrt(6.0 / (kh * kw * (in_channels + self.filters))),
                               f"Conv2DTranspose '{self.name}'")
        self.kernel = _constrain(self, "kernel", Variable(init, name="kernel"))
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = Variable(_initial_kernel(self.bias_initializer, (self.filters,),
                                                 self.dtype, None,
                                                 f"Conv2DTranspose '{self.name}'",
                                                 "bias_initializer"), name="bias")
            self.bias.path = f"{self.name}/bias"
            _constrain(self, "bias", self.bias)

    def __call__(self, inputs):
        x = _images(inputs, self.dtype, f"Conv2DTranspose '{self.name}'")
        if self.kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.kernel.shape[3]:
            raise ValueError(f"Conv2DTranspose '{self.name}' was built for "
                             f"{self.kernel.shape[3]} input channels, got inputs of shape "
                             f"{x.shape}")
        (kh, kw), (sh, sw) = self.kernel_size, self.strides
        grow = (lambda n, k, s: n * s) if self.padding == "SAME" else \
            (lambda n, k, s: n * s + max(k - s, 0))
        out_shape = (x.shape[0], grow(x.shape[1], kh, sh), grow(x.shape[2], kw, sw),
                     self.filters)
        from .ops import conv_ops
        y = conv_ops.conv2d_transpose(x, self.kernel, out_shape, self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


class MaxPooling2D(LayerMixin, Module):
    """The maximum of each ``pool_size`` window, as ``tf.keras.layers.MaxPooling2D``.

    ``strides`` defaults to ``pool_size`` (windows side by side), ``padding`` to ``"valid"``.
    No Variables.
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None,
                 **kwargs):
        super().__init__(name=name if name is not None else _default_name("max_pooling2d"))
        _layer_options(self, kwargs, "MaxPooling2D")
        self.pool_size = _pair(pool_size, "MaxPooling2D", "pool_size")
        self.strides = self.pool_size if strides is None else \
            _pair(strides, "MaxPooling2D", "strides")
        self.padding = _keras_padding(padding, "MaxPooling2D")
        self.data_format = _channels_last(data_format, "MaxPooling2D")

    def __call__(self, inputs):
        from .ops import conv_ops
        x = math_ops.floating(inputs, f"MaxPooling2D '{self.name}'")
        x = _images(x, x.dtype, f"MaxPooling2D '{self.name}'")
        return conv_ops.max_pool2d(x, self.pool_size, self.strides, self.padding)


class Flatten(LayerMixin, Module):
    """``(batch, ...)`` -> ``(batch, features)``, as ``tf.keras.layers.Flatten`` (a Reshape).

    ``input_shape=(28, 28)`` (Keras's keyword) lets a ``Sequential`` build from it.
    """

    def __init__(self, name=None, data_format=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("flatten"))
        _layer_options(self, kwargs, "Flatten")

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Flatten '{self.name}'")
        if x.ndim == 0:
            raise ValueError(f"Flatten '{self.name}' needs a batch axis, got a scalar")
        return array_ops.reshape(x, [x.shape[0], -1])


class Dropout(LayerMixin, Module):
    """Inverted dropout while training, as ``tf.keras.layers.Dropout``.

    ``layer(x, training=True)`` zeroes each element with probability ``rate`` and scales the
    rest by ``1 / (1 - rate)`` (``mt.nn.dropout``); ``training=False`` (the default, unless the
    enclosing layer or model call says otherwise: Keras's call context) returns
    ``x`` unchanged. ``seed`` makes the sequence of masks repeatable (each call draws a new
    mask). No Variables.

    Raises:
        ValueError: ``rate`` outside ``[0, 1)``.
    """

    def __init__(self, rate, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("dropout"))
        _layer_options(self, kwargs, "Dropout")
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)) \
                or not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"Dropout: rate is the fraction of inputs to drop and must be a "
                             f"number in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self._seeds = None if seed is None else np.random.default_rng(seed)

    def __call__(self, inputs, training=None):
        x = math_ops.floating(inputs, f"Dropout '{self.name}'")
        if not training_mode(training) or self.rate == 0.0:
            return x
        seed = None if self._seeds is None else int(self._seeds.integers(2**31))
        return nn_ops.dropout(x, self.rate, noise_shape=self.noise_shape, seed=seed)


class _Noise(LayerMixin, Module):
    """A layer that adds noise while training (``training=True``) and is the identity
    otherwise, like ``Dropout``; ``seed`` makes the sequence of draws repeatable."""

    def __init__(self, name=None, seed=None, **kwargs):
        super().__init__(name=name)
        _layer_options(self, kwargs, type(self).__name__)
        self._seeds = None if seed is None else np.random.default_rng(seed)

    def _seed(self):
        return None if self._seeds is None else int(self._seeds.integers(2**31))

    def __call__(self, inputs, training=None):
        x = math_ops.floating(inputs, f"{type(self).__name__} '{self.name}'")
        return self._noisy(x) if training_mode(training) else x


class GaussianNoise(_Noise):
    """Add zero-mean Gaussian noise of standard deviation ``stddev`` while training, as
    ``tf.keras.layers.GaussianNoise`` (a regularizer). No Variables."""

    def __init__(self, stddev, seed=None, name=None, **kwargs):
        super().__init__(name if name is not None else _default_name("gaussian_noise"), seed,
                         **kwargs)
        self.stddev = float(stddev)

    def _noisy(self, x):
        return x + random_ops.normal(x.shape, 0.0, self.stddev, dtype=x.dtype, seed=self._seed())


class GaussianDropout(_Noise):
    """Multiply by Gaussian noise of mean 1 and standard deviation ``sqrt(rate / (1 - rate))``
    while training, as ``tf.keras.layers.GaussianDropout``. No Variables."""

    def __init__(self, rate, seed=None, name=None, **kwargs):
        super().__init__(name if name is not None else _default_name("gaussian_dropout"), seed,
                         **kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"GaussianDropout: rate must be in [0, 1), got {rate!r}")
        self.rate = float(rate)

    def _noisy(self, x):
        stddev = float(np.sqrt(self.rate / (1.0 - self.rate)))
        return x * random_ops.normal(x.shape, 1.0, stddev, dtype=x.dtype, seed=self._seed())


class AlphaDropout(_Noise):
    """Dropout for SELU networks, as ``tf.keras.layers.AlphaDropout``: while training, each
    value is set with probability ``rate`` to SELU's negative saturation value, then an affine
    map restores the input's mean and variance (Keras's formula), so self-normalization
    holds. No Variables."""

    def __init__(self, rate, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name if name is not None else _default_name("alpha_dropout"), seed,
                         **kwargs)
        if not 0.0 <= float(rate) < 1.0:
            raise ValueError(f"AlphaDropout: rate must be in [0, 1), got {rate!r}")
        self.rate = float(rate)

    def _noisy(self, x):
        if self.rate == 0.0:
            return x
        alpha_p = -1.6732632423543772 * 1.0507009873554805   # -alpha * scale, SELU's
        kept = math_ops.cast(random_ops.uniform(x.shape, 0.0, 1.0, dtype=x.dtype,
                                                seed=self._seed()) >= self.rate, x.dtype)
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        return a * (x * kept + alpha_p * (1.0 - kept)) + b


# -- the small layers textbooks use: activations, shapes, embeddings, merging ---------------------


class Activation(LayerMixin, Module):
    """``activation(x)`` as a layer, as ``tf.keras.layers.Activation``: a name (``"relu"``,
    ``"softmax"``, ...: those of ``Dense(activation=)``) or a callable. No Variables."""

    def __init__(self, activation, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("activation"))
        _layer_options(self, kwargs, "Activation")
        self.activation = _activation(activation) or (lambda x: x)

    def __call__(self, inputs):
        return self.activation(convert_to_tensor(inputs, what=f"Activation '{self.name}'"))


class ReLU(LayerMixin, Module):
    """``max(x, 0)``, with Keras's options, as ``tf.keras.layers.ReLU``: ``negative_slope``
    below ``threshold``, and values capped at ``max_value`` (``keras.activations.relu``).
    No Variables."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("re_lu"))
        _layer_options(self, kwargs, "ReLU")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def __call__(self, inputs):
        from .keras import activations
        return activations.relu(inputs, self.negative_slope, self.max_value, self.threshold)


class LeakyReLU(LayerMixin, Module):
    """``x`` if ``x > 0`` else ``negative_slope * x``, as ``tf.keras.layers.LeakyReLU``.

    ``negative_slope`` is 0.3 by default (Keras 3's name and default; Keras 2 called it
    ``alpha``, which is accepted too). No Variables.
    """

    def __init__(self, negative_slope=0.3, name=None, alpha=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("leaky_re_lu"))
        _layer_options(self, kwargs, "LeakyReLU")
        self.negative_slope = float(negative_slope if alpha is None else alpha)

    def __call__(self, inputs):
        return nn_ops.leaky_relu(inputs, alpha=self.negative_slope)


class Softmax(LayerMixin, Module):
    """``exp(x) / sum(exp(x))`` along ``axis`` (the last by default), as
    ``tf.keras.layers.Softmax``. No Variables."""

    def __init__(self, axis=-1, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("softmax"))
        _layer_options(self, kwargs, "Softmax")
        self.axis = axis

    def __call__(self, inputs):
        return nn_ops.softmax(inputs, axis=self.axis)


class Reshape(LayerMixin, Module):
    """Give each sample the shape ``target_shape`` (without the batch axis; one entry may be
    -1), as ``tf.keras.layers.Reshape``. No Variables.

    Raises:
        ValueError: ``target_shape`` is not a tuple of ints; at call time a sample whose size
            does not fit it.
    """

    def __init__(self, target_shape, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("reshape"))
        _layer_options(self, kwargs, "Reshape")
        if not isinstance(target_shape, (tuple, list)) or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                and (d > 0 or d == -1) for d in target_shape):
            raise ValueError(f"Reshape: target_shape is the shape of one sample, a tuple of "
                             f"positive ints (one may be -1), e.g. (28, 28, 1); got "
                             f"{target_shape!r}")
        self.target_shape = tuple(int(d) for d in target_shape)

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Reshape '{self.name}'")
        if x.ndim == 0:
            raise ValueError(f"Reshape '{self.name}' needs a batch axis, got a scalar")
        return array_ops.reshape(x, (x.shape[0],) + self.target_shape)


class Rescaling(LayerMixin, Module):
    """``x * scale + offset``, as ``tf.keras.layers.Rescaling`` (``Rescaling(1 / 255)`` for
    pixels); integer inputs are cast to the layer's dtype first. No Variables."""

    def __init__(self, scale, offset=0.0, dtype=None, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("rescaling"))
        _layer_options(self, kwargs, "Rescaling")
        self.scale, self.offset = float(scale), float(offset)
        self.dtype = _layer_dtype(dtype)

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Rescaling '{self.name}'")
        if x.dtype != self.dtype:
            x = math_ops.cast(x, self.dtype)
        return x * self.scale + self.offset


class GlobalAveragePooling2D(LayerMixin, Module):
    """The mean of each channel over height and width, as
    ``tf.keras.layers.GlobalAveragePooling2D``: ``(batch, h, w, c)`` -> ``(batch, c)``
    (``(batch, 1, 1, c)`` with ``keepdims=True``). No Variables."""

    def __init__(self, data_format=None, keepdims=False, name=None, **kwargs):
        super().__init__(name=name if name is not None else
                         _default_name("global_average_pooling2d"))
        _layer_options(self, kwargs, "GlobalAveragePooling2D")
        self.data_format = _channels_last(data_format, "GlobalAveragePooling2D")
        self.keepdims = bool(keepdims)

    def __call__(self, inputs):
        x = math_ops.floating(inputs, f"GlobalAveragePooling2D '{self.name}'")
        x = _images(x, x.dtype, f"GlobalAveragePooling2D '{self.name}'")
        return reduction_ops.reduce_mean(x, axis=[1, 2], keepdims=self.keepdims)


class GlobalMaxPooling2D(LayerMixin, Module):
    """The maximum of each channel over height and width, as
    ``tf.keras.layers.GlobalMaxPooling2D``: ``(batch, h, w, c)`` -> ``(batch, c)``.
    No Variables."""

    def __init__(self, data_format=None, keepdims=False, name=None, **kwargs):
        super().__init__(name=name if name is not None else
                         _default_name("global_max_pooling2d"))
        _layer_options(self, kwargs, "GlobalMaxPooling2D")
        self.data_format = _channels_last(data_format, "GlobalMaxPooling2D")
        self.keepdims = bool(keepdims)

    def __call__(self, inputs):
        x = math_ops.floating(inputs, f"GlobalMaxPooling2D '{self.name}'")
        x = _images(x, x.dtype, f"GlobalMaxPooling2D '{self.name}'")
        return reduction_ops.reduce_max(x, axis=[1, 2], keepdims=self.keepdims)


class Embedding(LayerMixin, Module):
    """Look up a trainable vector for each integer id, as ``tf.keras.layers.Embedding``.

    ``embeddings`` ``(input_dim, output_dim)`` is made on the first call (uniform in
    ``[-0.05, 0.05]``, Keras's ``"uniform"``; or any initializer ``Dense`` takes); ids of
    shape ``(batch, ...)`` give vectors of shape ``(batch, ..., output_dim)``. The gradient
    reaches only the rows that were looked up (``mt.gather``'s gradient).

    Ids of a float dtype are cast to int32 first, as Keras does.

    ``mask_zero=True``: id 0 is padding; the output carries the mask ``ids != 0`` (bool,
    the ids' shape), which the layers after it receive (an RNN then skips the padded steps:
    see ``mt.keras.masking``), as Keras. Id 0 still has its row of ``embeddings``.

    Raises:
        TypeError: ids that are not numbers.
        ValueError: ``input_dim`` or ``output_dim`` not a positive int; an id outside
            ``[0, input_dim)`` (as TensorFlow: ``indices[0] = 7 is not in [0, 5)``).
    """

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", dtype=None,
                 name=None, mask_zero=False, **kwargs):
        super().__init__(name=name if name is not None else _default_name("embedding"))
        self.mask_zero = bool(mask_zero)
        _layer_options(self, {k: v for k, v in kwargs.items() if k != "input_length"},
                       "Embedding", weights=("embeddings",))
        self.input_dim = _positive_int(input_dim, "Embedding", "input_dim")
        self.output_dim = _positive_int(output_dim, "Embedding", "output_dim")
        self.embeddings_initializer = _check_initializer(embeddings_initializer, "Embedding",
                                                         "embeddings_initializer")
        self.dtype = _layer_dtype(dtype)
        self.embeddings = None

    @property
    def built(self):
        return self.embeddings is not None

    def build(self, input_shape=None):
        shape = (self.input_dim, self.output_dim)
        self.embeddings = Variable(_initial_kernel(
            self.embeddings_initializer, shape, self.dtype, None, f"Embedding '{self.name}'",
            "embeddings_initializer"), name="embeddings")
        self.embeddings.path = f"{self.name}/embeddings"
        _constrain(self, "embeddings", self.embeddings)

    def __call__(self, inputs):
        ids = convert_to_tensor(inputs, what=f"Embedding '{self.name}'")
        if ids.dtype.kind not in "iu":   # (float ids are cast, as Keras does: 2.0 is id 2)
            ids = math_ops.cast(ids, dtypes.int32)
        if self.embeddings is None:
            self.build(ids.shape)
        y = array_ops.gather(self.embeddings, ids)
        return self._activity_loss(y) if self.activity_regularizer is not None else y

    @property
    def supports_masking(self):
        """True with ``mask_zero=True`` (the layer then makes a mask), as Keras."""
        return self.mask_zero

    def compute_mask(self, inputs, mask=None):
        """``inputs != 0`` (a bool Tensor) with ``mask_zero=True``, else None, as Keras's
        ``Embedding.compute_mask``."""
        if not self.mask_zero:
            return None
        return math_ops.not_equal(convert_to_tensor(inputs), 0)


class LayerNormalization(LayerMixin, Module):
    """Normalize each sample over ``axis`` (the last by default), as
    ``tf.keras.layers.LayerNormalization``.

    ``(x - mean) / sqrt(variance + epsilon) * gamma + beta``, the mean and (biased) variance
    taken over the axes ``axis`` of each sample (an int or a list of ints, negative counting
    from the end), the same in training and inference (unlike ``BatchNormalization``).
    ``gamma`` (ones) and ``beta`` (zeros) have the input's sizes along those axes (one per
    feature for the last axis; ``(steps, features)`` for ``axis=[1, 2]`` on ``(batch, steps,
    features)``, as "Dive into Deep Learning"'s transformer's ``norm_shape``), made on the
    first call; ``center=False`` / ``scale=False`` leave one out.

    Raises:
        TypeError: ``axis`` neither an int nor a list/tuple of ints (at construction).
        ValueError: ``axis`` out of range or naming an axis twice for the input; an input
            whose sizes along ``axis`` differ from those the layer was built for.
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("layer_normalization"))
        _layer_options(self, kwargs, "LayerNormalization")
        ints = (int, np.integer)
        if isinstance(axis, (list, tuple)) and all(
                isinstance(a, ints) and not isinstance(a, bool) for a in axis):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, ints) and not isinstance(axis, bool):
            self.axis = int(axis)
        else:
            raise TypeError(f"LayerNormalization: axis must be an int or a list/tuple of ints "
                            f"(the axes to normalize over, e.g. -1 or [1, 2]), got {axis!r}")
        self.epsilon = float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.gamma = self.beta = None
        self._built = False

    @property
    def built(self):
        return self._built

    def _axes(self, ndim):
        from .ops.axes import check_axes
        return list(check_axes(self.axis, ndim, f"LayerNormalization '{self.name}'"))

    def build(self, input_shape, dtype=None):
        """Make ``gamma`` and ``beta`` for an input shape (as Keras: the sizes along ``axis``
        then become the weights' shape, and ``axis`` the sorted non-negative axes); minitape's
        own calls may pass the last dimension's size alone when ``axis`` is -1."""
        if isinstance(input_shape, (tuple, list)) or hasattr(input_shape, "as_list"):
            input_shape = tuple(input_shape)
            self.axis = self._axes(len(input_shape))
            shape = tuple(input_shape[a] for a in self.axis)
            if any(n is None for n in shape):
                raise ValueError(f"LayerNormalization.build needs the sizes of the axes "
                                 f"{self.axis} it normalizes over, got the input shape "
                                 f"{input_shape!r}")
        elif self.axis in (-1, [-1]):
            shape = (int(input_shape),)
        else:
            raise ValueError(f"LayerNormalization.build: with axis={self.axis!r}, pass the "
                             f"input's whole shape, got {input_shape!r}")
        dtype = _layer_dtype(None) if dtype is None else dtype

        def var(value, name):
            v = Variable(np.full(shape, value, dtype), name=name)
            v.path = f"{self.name}/{name}"
            return v
        self.gamma = var(1.0, "gamma") if self.scale else None
        self.beta = var(0.0, "beta") if self.center else None
        self._built = True

    def __call__(self, inputs):
        x = math_ops.floating(inputs, f"LayerNormalization '{self.name}'")
        if not self._built:
            self.build(x.shape, x.dtype)
        axes = self._axes(x.ndim)
        sizes = tuple(x.shape[a] for a in axes)
        built = (self.gamma if self.gamma is not None else self.beta)
        if built is not None and built.shape != sizes:
            raise ValueError(f"LayerNormalization '{self.name}' was built for sizes "
                             f"{built.shape} along axes {axes}, got an input of shape {x.shape}")
        mean = reduction_ops.reduce_mean(x, axis=axes, keepdims=True)
        variance = reduction_ops.reduce_mean(math_ops.square(x - mean), axis=axes, keepdims=True)
        y = (x - mean) / math_ops.sqrt(variance + self.epsilon)
        # gamma and beta have the sizes along ``axes``: put them on those axes of the input
        # (a reshape only when those are not just the last axis, as Keras's _broadcast)
        broadcast = [x.shape[a] if a in axes else 1 for a in range(x.ndim)]
        if self.gamma is not None:
            y = y * (self.gamma if axes == [x.ndim - 1] else
                     array_ops.reshape(self.gamma, broadcast))
        if self.beta is not None:
            y = y + (self.beta if axes == [x.ndim - 1] else
                     array_ops.reshape(self.beta, broadcast))
        return y


class Normalization(LayerMixin, Module):
    """Shift and scale features to mean 0 and variance 1, as ``tf.keras.layers.Normalization``.

    ``layer.adapt(data)`` computes the mean and (biased) variance of ``data`` for each
    position along ``axis`` (default the last: one per feature; ``axis=None``: one for
    everything), or pass ``mean=`` and ``variance=`` directly. Then ``layer(x)`` is ``(x -
    mean) / max(sqrt(variance), 1e-7)`` (``invert=True``: the inverse, to de-normalize). As
    in Keras, the adapted statistics are non-trainable weights ``mean``, ``variance`` and
    ``count`` (Geron's summary counts 2 * features + 1 of them).

    A call before ``adapt`` uses mean 0 and variance 1 (Keras's unadapted weights).

    Raises:
        ValueError: only one of ``mean`` / ``variance`` given; ``adapt`` data of another
            width than the layer was built for, or ``adapt`` on a layer given ``mean=``.
    """

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("normalization"))
        _layer_options(self, kwargs, "Normalization")
        if (mean is None) != (variance is None):
            raise ValueError(f"Normalization: give both mean= and variance= (or neither, and "
                             f"call adapt(data)); got mean={mean!r}, variance={variance!r}")
        self.axis = () if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        self.invert = bool(invert)
        self.input_mean, self.input_variance = mean, variance
        self.mean = self.variance = self.count = None
        self._keep = None

    @property
    def built(self):
        return self._keep is not None

    def build(self, input_shape):
        ndim = len(input_shape)
        if any(not -ndim <= a < ndim for a in self.axis):
            raise ValueError(f"Normalization '{self.name}': axis {self.axis} is out of range for "
                             f"inputs of rank {ndim}")
        self._keep = tuple(sorted(a % ndim for a in self.axis))
        self._shape = tuple(input_shape[d] for d in self._keep)
        if self.input_mean is not None:
            return

        def var(value, name, dtype=np.float32):
            v = Variable(np.full(self._shape if name != "count" else (), value, dtype),
                         name=name, trainable=False)
            v.path = f"{self.name}/{name}"
            return v
        self.mean, self.variance, self.count = (var(0.0, "mean"), var(1.0, "variance"),
                                                var(0, "count", np.int64))

    def adapt(self, data):
        """Compute the mean and variance of ``data`` (an array, a Tensor, or a list of batches),
        over every axis but ``axis``, as Keras's ``Normalization.adapt``."""
        if isinstance(data, (list, tuple)) and data and all(
                isinstance(b, (np.ndarray, Tensor)) for b in data):   # a list of batches
            data = np.concatenate([np.asarray(b) for b in data])
        data = np.asarray(data, dtype=np.float64)
        if not self.built:
            self.build(data.shape)
        elif tuple(data.shape[d] for d in self._keep) != self._shape:
            raise ValueError(f"Normalization '{self.name}' was built for features of shape "
                             f"{self._shape}, got data of shape {data.shape}")
        if self.mean is None:
            raise ValueError(f"Normalization '{self.name}' was given mean= and variance=; there "
                             "is nothing to adapt")
        reduce = tuple(d for d in range(data.ndim) if d not in self._keep)
        self.mean.assign(data.mean(axis=reduce).astype(np.float32))
        self.variance.assign(data.var(axis=reduce).astype(np.float32))
        self.count.assign(np.int64(np.prod([data.shape[d] for d in reduce])))

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"Normalization '{self.name}'")
        if x.dtype != np.float32:
            x = math_ops.cast(x, dtypes.float32)
        if not self.built:
            self.build(x.shape)
        shape = [x.shape[d] if d in self._keep else 1 for d in range(x.ndim)]
        if self.mean is None:
            mean = np.broadcast_to(np.asarray(self.input_mean, np.float32), shape)
            variance = np.broadcast_to(np.asarray(self.input_variance, np.float32), shape)
        else:
            mean = array_ops.reshape(self.mean, shape)
            variance = array_ops.reshape(self.variance, shape)
        scale = math_ops.maximum(math_ops.sqrt(variance), 1e-7)
        return mean + x * scale if self.invert else (x - mean) / scale


class _Merge(LayerMixin, Module):
    """A layer that combines a list of Tensors of one shape (Keras's merging layers)."""

    _base = ""

    def __init__(self, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name(self._base))
        _layer_options(self, kwargs, type(self).__name__)

    def _inputs(self, inputs):
        what = f"{type(self).__name__} '{self.name}'"
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"{what} combines a list of at least 2 Tensors, e.g. "
                             f"{type(self).__name__}()([x, y]); got {type(inputs).__name__}")
        return [convert_to_tensor(x, what=what) for x in inputs]


class Add(_Merge):
    """The sum of a list of Tensors, as ``tf.keras.layers.Add`` (a residual connection:
    ``Add()([x, block(x)])``). No Variables."""

    _base = "add"

    def __call__(self, inputs):
        xs = self._inputs(inputs)
        y = xs[0]
        for x in xs[1:]:
            y = y + x
        return y


class Subtract(_Merge):
    """``inputs[0] - inputs[1]``, as ``tf.keras.layers.Subtract``. No Variables."""

    _base = "subtract"

    def __call__(self, inputs):
        xs = self._inputs(inputs)
        if len(xs) != 2:
            raise ValueError(f"Subtract '{self.name}' takes exactly 2 Tensors, got {len(xs)}")
        return xs[0] - xs[1]


class Multiply(_Merge):
    """The elementwise product of a list of Tensors, as ``tf.keras.layers.Multiply``."""

    _base = "multiply"

    def __call__(self, inputs):
        xs = self._inputs(inputs)
        y = xs[0]
        for x in xs[1:]:
            y = y * x
        return y


class Average(_Merge):
    """The elementwise mean of a list of Tensors, as ``tf.keras.layers.Average``."""

    _base = "average"

    def __call__(self, inputs):
        xs = self._inputs(inputs)
        y = xs[0]
        for x in xs[1:]:
            y = y + x
        return y / float(len(xs))


class Maximum(_Merge):
    """The elementwise maximum of a list of Tensors, as ``tf.keras.layers.Maximum``."""

    _base = "maximum"

    def __call__(self, inputs):
        xs = self._inputs(inputs)
        y = xs[0]
        for x in xs[1:]:
            y = math_ops.maximum(y, x)
        return y


class Minimum(_Merge):
    """The elementwise minimum of a list of Tensors, as ``tf.keras.layers.Minimum``."""

    _base = "minimum"

    def __call__(self, inputs):
        xs = self._inputs(inputs)
        y = xs[0]
        for x in xs[1:]:
            y = math_ops.minimum(y, x)
        return y


class Concatenate(_Merge):
    """Join a list of Tensors along ``axis`` (the last by default), as
    ``tf.keras.layers.Concatenate``. No Variables."""

    _base = "concatenate"

    def __init__(self, axis=-1, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.axis = axis

    def __call__(self, inputs):
        return array_ops.concat(self._inputs(inputs), axis=self.axis)


# -- the convolutional chapters of the textbooks (cnnqa): average pooling, padding, upsampling ----
# d2l chapters 7-8 (LeNet's AvgPool2D, NiN's GlobalAvgPool2D, MaxPool2D everywhere), Geron 14.


def _channels_last(data_format, layer):
    """Keras's ``data_format``: only ``"channels_last"`` (NHWC, the default) is supported."""
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format=\"channels_last\" (batch, height, width, "
                         f"channels) is supported, got {data_format!r}; move the channels last "
                         "with mt.transpose(x, [0, 2, 3, 1])")
    return "channels_last"


class AveragePooling2D(LayerMixin, Module):
    """The mean of each ``pool_size`` window, as ``tf.keras.layers.AveragePooling2D`` (also
    named ``AvgPool2D``), computed by ``mt.nn.avg_pool2d``.

    ``(batch, h, w, c)`` -> ``(batch, ho, wo, c)`` with ``ho = (h - pool_h) // stride_h + 1``
    for ``padding="valid"`` (the default) and ``ceil(h / stride_h)`` for ``"same"``, where,
    as TensorFlow, a window over the border averages only the elements it covers. ``strides``
    defaults to ``pool_size``. No Variables.

    Raises:
        ValueError: bad ``pool_size``, ``strides``, ``padding`` or ``data_format`` at
            construction; an input that is not rank 4 at call time.

    >>> import minitape as mt
    >>> x = mt.reshape(mt.range(0.0, 16.0), [1, 4, 4, 1])
    >>> mt.reshape(mt.keras.layers.AvgPool2D(pool_size=2)(x), [2, 2]).numpy()
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None,
                 **kwargs):
        super().__init__(name=name if name is not None else _default_name("average_pooling2d"))
        _layer_options(self, kwargs, "AveragePooling2D")
        self.pool_size = _pair(pool_size, "AveragePooling2D", "pool_size")
        self.strides = self.pool_size if strides is None else \
            _pair(strides, "AveragePooling2D", "strides")
        self.padding = _keras_padding(padding, "AveragePooling2D")
        self.data_format = _channels_last(data_format, "AveragePooling2D")

    def __call__(self, inputs):
        from .ops import conv_ops
        x = math_ops.floating(inputs, f"AveragePooling2D '{self.name}'")
        x = _images(x, x.dtype, f"AveragePooling2D '{self.name}'")
        return conv_ops.avg_pool2d(x, self.pool_size, self.strides, self.padding)


def _zero_padding(padding, layer):
    """``ZeroPadding2D``'s ``padding`` -> ``((top, bottom), (left, right))``."""
    def count(n):
        return isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0
    if count(padding):
        return (int(padding),) * 2, (int(padding),) * 2
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        if all(count(n) for n in padding):
            return (int(padding[0]),) * 2, (int(padding[1]),) * 2
        if all(isinstance(p, (tuple, list)) and len(p) == 2 and all(count(n) for n in p)
               for p in padding):
            return tuple(int(n) for n in padding[0]), tuple(int(n) for n in padding[1])
    raise ValueError(f"{layer}: padding must be an int, a pair (rows, columns) or a pair of "
                     f"pairs ((top, bottom), (left, right)) of ints >= 0, got {padding!r}")


class ZeroPadding2D(LayerMixin, Module):
    """Zero rows and columns around each image, as ``tf.keras.layers.ZeroPadding2D``.

    ``padding``: an int (the same on all four sides), ``(rows, columns)`` (symmetric) or
    ``((top, bottom), (left, right))``; ``(batch, h, w, c)`` -> ``(batch, h + top + bottom,
    w + left + right, c)``. Computed with ``mt.pad``. No Variables.

    >>> import minitape as mt
    >>> mt.keras.layers.ZeroPadding2D(((1, 0), (2, 1)))(mt.ones([2, 3, 3, 4])).shape
    (2, 4, 6, 4)
    """

    def __init__(self, padding=(1, 1), data_format=None, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("zero_padding2d"))
        _layer_options(self, kwargs, "ZeroPadding2D")
        self.padding = _zero_padding(padding, "ZeroPadding2D")
        self.data_format = _channels_last(data_format, "ZeroPadding2D")

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"ZeroPadding2D '{self.name}'")
        x = _images(x, x.dtype, f"ZeroPadding2D '{self.name}'")
        return array_ops.pad(x, [[0, 0], list(self.padding[0]), list(self.padding[1]), [0, 0]])


class UpSampling2D(LayerMixin, Module):
    """Repeat each row ``size[0]`` times and each column ``size[1]`` times, as
    ``tf.keras.layers.UpSampling2D``: ``(batch, h, w, c)`` -> ``(batch, h * sh, w * sw, c)``.

    ``interpolation="nearest"`` (the default) copies pixels (a reshape and a broadcast);
    ``"bilinear"`` interpolates with ``mt.image.resize`` (half-pixel centres, as Keras).
    No Variables.

    >>> import minitape as mt
    >>> x = mt.reshape(mt.constant([1.0, 2.0, 3.0, 4.0]), [1, 2, 2, 1])
    >>> mt.reshape(mt.keras.layers.UpSampling2D(2)(x), [4, 4]).numpy()[0]
    array([1., 1., 2., 2.], dtype=float32)
    """

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", name=None,
                 **kwargs):
        super().__init__(name=name if name is not None else _default_name("up_sampling2d"))
        _layer_options(self, kwargs, "UpSampling2D")
        self.size = _pair(size, "UpSampling2D", "size")
        self.data_format = _channels_last(data_format, "UpSampling2D")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"UpSampling2D: interpolation must be \"nearest\" or \"bilinear\", "
                             f"got {interpolation!r}")
        self.interpolation = interpolation

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"UpSampling2D '{self.name}'")
        x = _images(x, x.dtype, f"UpSampling2D '{self.name}'")
        n, h, w, c = x.shape
        sh, sw = self.size
        if self.interpolation == "bilinear":
            from .ops import image_ops
            return image_ops.resize(math_ops.floating(x, f"UpSampling2D '{self.name}'"),
                                    [h * sh, w * sw], method="bilinear")
        x = array_ops.reshape(x, [n, h, 1, w, 1, c])
        x = array_ops.broadcast_to(x, [n, h, sh, w, sw, c])
        return array_ops.reshape(x, [n, h * sh, w * sw, c])


class CenterCrop(LayerMixin, Module):
    """The central ``height x width`` part of each image, as ``tf.keras.layers.CenterCrop``
    (Géron's chapter 14 crops the sample images with it).

    ``(batch, h, w, c)`` or ``(h, w, c)`` -> ``(batch, height, width, c)`` / ``(height, width,
    c)``, the crop starting at row ``(h - height) // 2`` and column ``(w - width) // 2``; the
    result has the layer's dtype (float32 by default: uint8 pixels are cast, as Keras). No
    Variables.

    Raises:
        ValueError: sizes that are not positive ints; at call time, an image smaller than
            the crop (Keras would resize it first: use ``mt.image.resize`` before, or a
            smaller crop).
    """

    def __init__(self, height, width, data_format=None, dtype=None, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("center_crop"))
        _layer_options(self, kwargs, "CenterCrop")
        self.height, self.width = _pair((height, width), "CenterCrop", "(height, width)")
        self.data_format = _channels_last(data_format, "CenterCrop")
        self.dtype = _layer_dtype(dtype)

    def __call__(self, inputs):
        x = convert_to_tensor(inputs, what=f"CenterCrop '{self.name}'")
        if x.ndim not in (3, 4):
            raise ValueError(f"CenterCrop '{self.name}' expects images (batch, height, width, "
                             f"channels) or one image (height, width, channels), got shape "
                             f"{x.shape}")
        h, w = x.shape[-3], x.shape[-2]
        if h < self.height or w < self.width:
            raise ValueError(f"CenterCrop '{self.name}': images of {h}x{w} are smaller than "
                             f"the crop {self.height}x{self.width}; resize them first "
                             "(mt.image.resize) or crop less")
        top, left = (h - self.height) // 2, (w - self.width) // 2
        x = x[..., top:top + self.height, left:left + self.width, :]
        return x if x.dtype == self.dtype else math_ops.cast(x, self.dtype)


# Keras's other names for the same layers (d2l writes MaxPool2D, AvgPool2D, GlobalAvgPool2D).
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D
# -- end of cnnqa ---------------------------------------------------------------------------------

# -- Chollet's chapters 8-9 (convchollet) ---------------------------------------------------------
# Depthwise separable convolutions (``SeparableConv2D``, ``DepthwiseConv2D``) and the data
# augmentation layers (``RandomFlip``, ``RandomRotation``, ``RandomZoom``) of Chollet's
# "Deep Learning with Python" (2nd ed.), chapters 8 and 9.
#
# The augmentation layers are active only while training (``training=True``, or inside a
# ``model.fit`` / ``model(x, training=True)`` call), as Keras; otherwise they return their
# input. Rotation and zoom are Keras 3's affine transform: each output pixel ``(x, y)``
# (column, row) reads the input at ``(a0 x + a1 y + a2, b0 x + b1 y + b2)``, bilinearly
# interpolated from the four pixels around it, and points outside the image are filled as
# ``fill_mode`` says. The interpolation is a weighted sum of gathered pixels
# (``mt.gather``), so gradients flow back to the images.


def _conv_ops():
    from .ops import conv_ops
    return conv_ops


def _glorot_limit(shape):
    """Keras's Glorot-uniform limit for a conv kernel ``(kh, kw, in, out)``."""
    receptive = shape[0] * shape[1]
    return np.sqrt(6.0 / (receptive * (shape[2] + shape[3])))


def _positive(value, what, arg):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what}: {arg} must be a positive int, got {value!r}")
    return int(value)


class DepthwiseConv2D(LayerMixin, Module):
    """``activation(depthwise_conv2d(x, kernel) + bias)``, as ``keras.layers.DepthwiseConv2D``:
    each input channel convolved with its own ``depth_multiplier`` filters, channels never
    mixed.

    Builds on the first call: ``kernel`` ``(kh, kw, in_channels, depth_multiplier)``
    (Glorot-uniform), ``bias`` ``(in_channels * depth_multiplier,)`` (zeros).

    Raises:
        ValueError: bad sizes or padding at construction; an input that is not rank 4 or whose
            channels differ from those the layer was built for.

    >>> import minitape as mt
    >>> layer = mt.keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same")
    >>> layer(mt.zeros([1, 5, 5, 3])).shape, layer.kernel.shape
    ((1, 5, 5, 6), (3, 3, 3, 2))
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", dtype=None,
                 name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("depthwise_conv2d"))
        what = "DepthwiseConv2D"
        _layer_options(self, kwargs, what, weights=("depthwise", "bias"))
        self._weight_regularizers = {("kernel" if k == "depthwise" else k): v
                                     for k, v in self._weight_regularizers.items()}
        self._weight_constraints["kernel"] = self._weight_constraints.pop("depthwise")
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{what}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.kernel_size = _pair(kernel_size, what, "kernel_size")
        self.strides = _pair(strides, what, "strides")
        self.padding = _keras_padding(padding, what)
        self.depth_multiplier = _positive(depth_multiplier, what, "depth_multiplier")
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = _check_initializer(depthwise_initializer, what,
                                                        "depthwise_initializer")
        self.bias_initializer = _check_initializer(bias_initializer, what, "bias_initializer")
        self.dtype = _layer_dtype(dtype)
        self.kernel = self.bias = None

    @property
    def built(self):
        return self.kernel is not None

    def build(self, in_channels):
        """Make ``kernel`` and ``bias`` for ``in_channels`` channels (or an input shape)."""
        c = _last_dim(in_channels, "DepthwiseConv2D")
        shape = self.kernel_size + (c, self.depth_multiplier)
        who = f"DepthwiseConv2D '{self.name}'"
        self.kernel = _constrain(self, "kernel", Variable(_initial_kernel(
            self.depthwise_initializer, shape, self.dtype, _glorot_limit(shape), who,
            "depthwise_initializer"), name="kernel"))
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = _constrain(self, "bias", Variable(_initial_kernel(
                self.bias_initializer, (c * self.depth_multiplier,), self.dtype, None, who,
                "bias_initializer"), name="bias"))
            self.bias.path = f"{self.name}/bias"

    def __call__(self, inputs):
        who = f"DepthwiseConv2D '{self.name}'"
        x = _images(inputs, self.dtype, who)
        if self.kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.kernel.shape[2]:
            raise ValueError(f"{who} was built for {self.kernel.shape[2]} input channels, got "
                             f"inputs of shape {x.shape}")
        y = _conv_ops().depthwise_conv2d(x, self.kernel, self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


class SeparableConv2D(LayerMixin, Module):
    """A depthwise separable convolution, as ``keras.layers.SeparableConv2D``: a
    ``depthwise_conv2d`` (each channel filtered alone, ``strides`` and ``padding`` apply
    here), then a 1x1 ``conv2d`` mixing the channels, then the bias and the activation
    (``mt.nn.separable_conv2d``). Chollet's chapter 9 builds his mini-Xception with it.

    Builds on the first call: ``depthwise_kernel`` ``(kh, kw, in, depth_multiplier)``,
    ``pointwise_kernel`` ``(1, 1, in * depth_multiplier, filters)`` (both Glorot-uniform
    with Keras's fans) and ``bias`` ``(filters,)``: ``kh*kw*in*dm + in*dm*filters + filters``
    parameters, against ``kh*kw*in*filters + filters`` for a ``Conv2D``.

    Args:
        filters, kernel_size, strides, padding, activation, use_bias: as ``Conv2D``.
        depth_multiplier: filters per input channel in the depthwise step (1 by default).
        depthwise_initializer, pointwise_initializer, bias_initializer: as Keras.
        **kwargs: ``depthwise_regularizer``, ``pointwise_regularizer``,
            ``bias_regularizer``, their ``_constraint`` forms, ``activity_regularizer``,
            ``input_shape``.

    Raises:
        ValueError: bad sizes or padding at construction; an input that is not rank 4 or whose
            channels differ from those the layer was built for.

    >>> import minitape as mt
    >>> layer = mt.keras.layers.SeparableConv2D(8, 3, padding="same", use_bias=False)
    >>> layer(mt.zeros([1, 6, 6, 4])).shape
    (1, 6, 6, 8)
    >>> [v.shape for v in layer.trainable_variables]
    [(3, 3, 4, 1), (1, 1, 4, 8)]
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", dtype=None, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("separable_conv2d"))
        what = "SeparableConv2D"
        _layer_options(self, kwargs, what, weights=("depthwise", "pointwise", "bias"))
        rename = {"depthwise": "depthwise_kernel", "pointwise": "pointwise_kernel"}
        self._weight_regularizers = {rename.get(k, k): v
                                     for k, v in self._weight_regularizers.items()}
        self._weight_constraints = {rename.get(k, k): v
                                    for k, v in self._weight_constraints.items()}
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{what}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.filters = _positive(filters, what, "filters")
        self.kernel_size = _pair(kernel_size, what, "kernel_size")
        self.strides = _pair(strides, what, "strides")
        self.padding = _keras_padding(padding, what)
        self.depth_multiplier = _positive(depth_multiplier, what, "depth_multiplier")
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = _check_initializer(depthwise_initializer, what,
                                                        "depthwise_initializer")
        self.pointwise_initializer = _check_initializer(pointwise_initializer, what,
                                                        "pointwise_initializer")
        self.bias_initializer = _check_initializer(bias_initializer, what, "bias_initializer")
        self.dtype = _layer_dtype(dtype)
        self.depthwise_kernel = self.pointwise_kernel = self.bias = None

    @property
    def built(self):
        return self.depthwise_kernel is not None

    def build(self, in_channels):
        """Make the two kernels and the bias for ``in_channels`` channels (or an input shape)."""
        c = _last_dim(in_channels, "SeparableConv2D")
        who = f"SeparableConv2D '{self.name}'"
        dm = self.depth_multiplier
        shapes = {"depthwise_kernel": self.kernel_size + (c, dm),
                  "pointwise_kernel": (1, 1, c * dm, self.filters)}
        inits = {"depthwise_kernel": ("depthwise_initializer", self.depthwise_initializer),
                 "pointwise_kernel": ("pointwise_initializer", self.pointwise_initializer)}
        for name, shape in shapes.items():
            arg, init = inits[name]
            var = Variable(_initial_kernel(init, shape, self.dtype, _glorot_limit(shape), who,
                                           arg), name=name)
            var.path = f"{self.name}/{name}"
            setattr(self, name, _constrain(self, name, var))
        if self.use_bias:
            self.bias = _constrain(self, "bias", Variable(_initial_kernel(
                self.bias_initializer, (self.filters,), self.dtype, None, who,
                "bias_initializer"), name="bias"))
            self.bias.path = f"{self.name}/bias"

    def __call__(self, inputs):
        who = f"SeparableConv2D '{self.name}'"
        x = _images(inputs, self.dtype, who)
        if self.depthwise_kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.depthwise_kernel.shape[2]:
            raise ValueError(f"{who} was built for {self.depthwise_kernel.shape[2]} input "
                             f"channels, got inputs of shape {x.shape}")
        y = _conv_ops().separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel,
                                      self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


# -- data augmentation ----------------------------------------------------------------------------

_FILL_MODES = ("reflect", "wrap", "constant", "nearest", "mirror")


def _fix_index(i, n, fill_mode):
    """Integer pixel indices ``i`` outside ``[0, n)`` mapped back inside, as Keras's
    ``map_coordinates`` pads: ``reflect`` (``dcba|abcd|dcba``, the edge repeated),
    ``mirror`` (``dcb|abcd|cba``), ``wrap`` (``abcd|abcd``), ``nearest`` (``aaaa|abcd|dddd``);
    ``constant`` clips here and its mask (returned second) zeroes those taps."""
    inside = (i >= 0) & (i < n)
    if fill_mode == "reflect":
        r = np.mod(i, 2 * n)
        return np.where(r >= n, 2 * n - 1 - r, r), inside
    if fill_mode == "mirror":
        if n == 1:
            return np.zeros_like(i), inside
        r = np.mod(i, 2 * n - 2)
        return np.where(r >= n, 2 * n - 2 - r, r), inside
    if fill_mode == "wrap":
        return np.mod(i, n), inside
    return np.clip(i, 0, n - 1), inside


def affine_transform(images, transforms, interpolation="bilinear", fill_mode="reflect",
                     fill_value=0.0):
    """Resample NHWC ``images`` by one affine map each, as ``keras.ops.image.affine_transform``.

    Args:
        images: ``(N, H, W, C)`` floating Tensor.
        transforms: ``(N, 8)`` or ``(8,)`` array ``[a0, a1, a2, b0, b1, b2, 0, 0]``: output
            pixel ``(x, y)`` (column, row) reads the input at ``(a0 x + a1 y + a2,
            b0 x + b1 y + b2)``. Projective terms other than 0 are refused.
        interpolation: ``"bilinear"`` (the four pixels around, weighted) or ``"nearest"``.
        fill_mode: where a point falls outside: ``"reflect"``, ``"wrap"``, ``"constant"``
            (``fill_value``), ``"nearest"`` or ``"mirror"``.

    Returns:
        a Tensor of ``images``' shape and dtype; linear in ``images`` (differentiable).

    Raises:
        ValueError: a bad shape, interpolation or fill mode.
    """
    x = math_ops.floating(images, "affine_transform")
    if x.ndim != 4:
        raise ValueError(f"affine_transform: images must be (batch, height, width, channels), "
                         f"got shape {x.shape}")
    n, h, w, c = x.shape
    t = np.asarray(transforms, dtype=np.float64).reshape(-1, 8)
    if t.shape[0] not in (1, n) or np.any(t[:, 6:] != 0):
        raise ValueError(f"affine_transform: transforms must be (8,) or ({n}, 8) affine maps "
                         f"(last two entries 0), got shape {np.shape(transforms)}")
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"affine_transform: interpolation must be 'bilinear' or 'nearest', got "
                         f"{interpolation!r}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"affine_transform: fill_mode must be one of {_FILL_MODES}, got "
                         f"{fill_mode!r}")
    t = np.broadcast_to(t, (n, 8))
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    xin = t[:, 0, None, None] * cols + t[:, 1, None, None] * rows + t[:, 2, None, None]
    yin = t[:, 3, None, None] * cols + t[:, 4, None, None] * rows + t[:, 5, None, None]
    if interpolation == "nearest":
        taps = [(np.floor(yin + 0.5), np.floor(xin + 0.5), np.ones_like(yin))]
    else:
        y0, x0 = np.floor(yin), np.floor(xin)
        taps = [(y0 + dy, x0 + dx, (1 - np.abs(yin - y0 - dy)) * (1 - np.abs(xin - x0 - dx)))
                for dy in (0, 1) for dx in (0, 1)]
    flat = array_ops.reshape(x, [n * h * w, c])
    image_base = (np.arange(n) * h * w)[:, None, None]
    out, filled = None, np.zeros((n, h, w), np.float64)
    for yi, xi, weight in taps:
        yi, y_in = _fix_index(yi.astype(np.int64), h, fill_mode)
        xi, x_in = _fix_index(xi.astype(np.int64), w, fill_mode)
        if fill_mode == "constant":
            filled += weight * ~(y_in & x_in)
            weight = weight * (y_in & x_in)
        gathered = array_ops.gather(flat, (image_base + yi * w + xi).reshape(-1))
        term = gathered * weight.reshape(-1, 1).astype(x.dtype)
        out = term if out is None else out + term
    if fill_mode == "constant" and fill_value:
        out = out + (fill_value * filled).reshape(-1, 1).astype(x.dtype)
    return array_ops.reshape(out, [n, h, w, c])


class _Augmentation(LayerMixin, Module):
    """An image augmentation layer: random while training, the identity otherwise. Images
    are cast to the layer's ``dtype`` (``mt.keras.backend.floatx()`` unless given), as Keras.

    Draws come from the layer's own generator when ``seed`` is given (a run is repeatable,
    each call draws anew), else from minitape's (``mt.random.set_seed``)."""

    def __init__(self, seed=None, name=None, base="augmentation", dtype=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name(base))
        _layer_options(self, kwargs, type(self).__name__)
        self.dtype = _layer_dtype(dtype)
        self.seed = seed
        self._seeds = None if seed is None else np.random.default_rng(seed)

    def _uniform(self, shape, low, high):
        if self._seeds is not None:
            return self._seeds.uniform(low, high, shape)
        return np.asarray(random_ops.uniform(shape, low, high, dtype="float64"))

    def __call__(self, inputs, training=None):
        who = f"{type(self).__name__} '{self.name}'"
        x = convert_to_tensor(inputs, what=who)
        if x.dtype != self.dtype:   # as Keras: images come out in the layer's (float) dtype
            x = math_ops.cast(x, self.dtype)
        if x.ndim not in (3, 4):
            raise ValueError(f"{who} expects images (batch, height, width, channels) or one "
                             f"image (height, width, channels), got shape {x.shape}")
        if not training_mode(training):
            return x
        if x.ndim == 3:
            return array_ops.reshape(self._augment(array_ops.reshape(x, (1,) + x.shape)),
                                     x.shape)
        return self._augment(x)


def _factor_range(factor, what, arg):
    """Keras's ``factor``: a number ``f`` (the range ``[-|f|, |f|]``) or a pair ``(low, high)``."""
    if isinstance(factor, (tuple, list)) and len(factor) == 2:
        low, high = sorted(float(f) for f in factor)
    elif isinstance(factor, (int, float, np.integer, np.floating)) \
            and not isinstance(factor, bool):
        low, high = -abs(float(factor)), abs(float(factor))
    else:
        raise ValueError(f"{what}: {arg} must be a number or a pair (low, high), got "
                         f"{factor!r}")
    return low, high


def _check_fill(fill_mode, interpolation, what):
    if fill_mode not in _FILL_MODES:
        raise NotImplementedError(f"{what}: unknown fill_mode {fill_mode!r}; expected one of "
                                  f"{_FILL_MODES}")
    if interpolation not in ("bilinear", "nearest"):
        raise NotImplementedError(f"{what}: unknown interpolation {interpolation!r}; expected "
                                  "'bilinear' or 'nearest'")


class RandomFlip(_Augmentation):
    """Flip each image with probability 1/2 while training, as ``keras.layers.RandomFlip``.

    ``mode``: ``"horizontal"`` (left-right: the width axis reversed), ``"vertical"``
    (top-bottom) or ``"horizontal_and_vertical"`` (the default; one draw per image flips
    both, as Keras 3). Inference (``training=False``, the default outside ``fit``) returns
    the images unchanged. ``(batch, h, w, c)`` or one ``(h, w, c)`` image; no Variables.

    Raises:
        ValueError: another ``mode``; an input that is not rank 3 or 4.
    """

    def __init__(self, mode="horizontal_and_vertical", seed=None, name=None, **kwargs):
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip: mode must be 'horizontal', 'vertical' or "
                             f"'horizontal_and_vertical', got {mode!r}")
        super().__init__(seed=seed, name=name, base="random_flip", **kwargs)
        self.mode = mode

    def _augment(self, x):
        flips = self._uniform((x.shape[0],), 0.0, 1.0) <= 0.5
        flipped = x
        if self.mode != "vertical":
            flipped = array_ops.reverse(flipped, [2])
        if self.mode != "horizontal":
            flipped = array_ops.reverse(flipped, [1])
        mask = flips.reshape(-1, 1, 1, 1)
        return array_ops.where(np.broadcast_to(mask, x.shape), flipped, x)


class RandomRotation(_Augmentation):
    """Rotate each image by a random angle while training, as ``keras.layers.RandomRotation``.

    ``factor`` is a fraction of a full turn: ``0.1`` draws angles uniformly in
    ``[-0.1 * 2 pi, 0.1 * 2 pi]`` (``(low, high)`` for another range). The image turns about
    its center (counter-clockwise for a positive angle as displayed, rows going down);
    points that come from outside are filled as ``fill_mode`` says (``"reflect"`` by
    default), values interpolated bilinearly (see ``affine_transform``).

    Raises:
        ValueError: a bad ``factor``. NotImplementedError: an unknown fill mode or
            interpolation (as Keras).
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, name=None, **kwargs):
        _check_fill(fill_mode, interpolation, "RandomRotation")
        super().__init__(seed=seed, name=name, base="random_rotation", **kwargs)
        self.factor = factor
        self.lower, self.upper = _factor_range(factor, "RandomRotation", "factor")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _augment(self, x):
        n, h, w = x.shape[:3]
        angles = self._uniform((n,), self.lower * 2 * np.pi, self.upper * 2 * np.pi)
        return affine_transform(x, rotation_transforms(angles, h, w), self.interpolation,
                                self.fill_mode, self.fill_value)


def rotation_transforms(angles, height, width):
    """The ``(N, 8)`` maps that turn images by ``angles`` (radians) about their centers, as
    Keras's ``RandomRotation`` (output pixel -> input point)."""
    a = np.asarray(angles, np.float64)
    cos, sin = np.cos(a), np.sin(a)
    x_offset = ((width - 1) - (cos * (width - 1) - sin * (height - 1))) / 2.0
    y_offset = ((height - 1) - (sin * (width - 1) + cos * (height - 1))) / 2.0
    zeros = np.zeros_like(a)
    return np.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


class RandomZoom(_Augmentation):
    """Zoom each image in or out by a random factor while training, as
    ``keras.layers.RandomZoom``.

    ``height_factor=0.2`` draws a zoom ``z`` uniformly in ``[1 - 0.2, 1 + 0.2]`` per image;
    the output pixel ``(x, y)`` reads the input at ``((W - 1) / 2 + z (x - (W - 1) / 2), ...)``
    about the center: ``z > 1`` zooms out (more of the image shows, edges filled as
    ``fill_mode`` says), ``z < 1`` zooms in. ``width_factor=None`` (the default) uses the same
    zoom for both axes (the aspect ratio kept). ``(low, high)`` pairs give other ranges.

    Raises:
        ValueError: a bad factor. NotImplementedError: an unknown fill mode or interpolation.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, name=None, **kwargs):
        _check_fill(fill_mode, interpolation, "RandomZoom")
        super().__init__(seed=seed, name=name, base="random_zoom", **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = _factor_range(height_factor, "RandomZoom",
                                                             "height_factor")
        if width_factor is not None:
            self.width_lower, self.width_upper = _factor_range(width_factor, "RandomZoom",
                                                               "width_factor")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _augment(self, x):
        n, h, w = x.shape[:3]
        zy = self._uniform((n,), 1.0 + self.height_lower, 1.0 + self.height_upper)
        zx = zy if self.width_factor is None else self._uniform(
            (n,), 1.0 + self.width_lower, 1.0 + self.width_upper)
        return affine_transform(x, zoom_transforms(zx, zy, h, w), self.interpolation,
                                self.fill_mode, self.fill_value)


def zoom_transforms(zoom_x, zoom_y, height, width):
    """The ``(N, 8)`` maps of Keras's ``RandomZoom``: scale by ``zoom_x``, ``zoom_y`` about
    the image's center (output pixel -> input point)."""
    zx, zy = np.asarray(zoom_x, np.float64), np.asarray(zoom_y, np.float64)
    zeros = np.zeros_like(zx)
    return np.stack([zx, zeros, (width - 1) / 2.0 * (1 - zx), zeros, zy,
                     (height - 1) / 2.0 * (1 - zy), zeros, zeros], axis=1)
