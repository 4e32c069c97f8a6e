"""``mt.keras.layers``: every layer of ``mt.layers``, plus ``Layer`` to subclass.

The layers themselves are ``minitape.layers``' (``Dense``, ``BatchNormalization``, ...),
re-exported here under Keras's module name: there is one implementation. ``Layer`` is the
base class for your own layers, as ``keras.layers.Layer``: write ``build(input_shape)`` to
create weights with ``add_weight`` and ``call(inputs)`` to compute; the first call builds.
"""

from __future__ import annotations

import inspect

import numpy as np

from .. import dtypes
from .. import initializers as _initializers
from .. import layers as _mt_layers
from ..module import Module
from ..ops import random_ops
from ..engine.tensor import Tensor, Variable

# Everything mt.layers has, under the same names (one implementation).
__all__ = ["Layer", "Lambda"] + [name for name, value in vars(_mt_layers).items()
                       if isinstance(value, type) and issubclass(value, Module)
                       and not name.startswith("_") and name != "Module"]
globals().update({name: getattr(_mt_layers, name) for name in __all__[2:]})


def _initial_value(initializer, shape, dtype, who):
    if isinstance(initializer, type) and issubclass(initializer, _initializers.Initializer):
        initializer = initializer()
    if callable(initializer):
        value = initializer(shape, dtype=dtype)
        return np.asarray(value, dtype=dtype)
    if initializer == "zeros":
        return np.zeros(shape, dtype)
    if initializer == "ones":
        return np.ones(shape, dtype)
    if initializer == "glorot_uniform":
        fan_in = shape[-2] if len(shape) >= 2 else (shape[0] if shape else 1)
        fan_out = shape[-1] if shape else 1
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        limit = np.sqrt(6.0 / max(1, (fan_in + fan_out) * receptive))
        return np.asarray(random_ops.uniform(shape, -limit, limit, dtype=dtype))
    if initializer == "random_normal":
        return np.asarray(random_ops.normal(shape, 0.0, 0.05, dtype=dtype))
    if initializer == "random_uniform":
        return np.asarray(random_ops.uniform(shape, -0.05, 0.05, dtype=dtype))
    try:   # any other Keras name ("he_normal", "orthogonal", ...), or an initializer class
        init = _initializers.get(initializer)
    except (ValueError, TypeError):
        init = None
    if init is None or not callable(init):
        raise ValueError(f"{who}: unknown initializer {initializer!r}; use a Keras name "
                         "('zeros', 'ones', 'glorot_uniform', 'he_normal', 'random_normal', "
                         "...: see mt.keras.initializers), an initializer or a callable "
                         "(shape, dtype) -> array")
    return _initial_value(init, shape, dtype, who)


def accepts(fn, name) -> bool:
    """Whether ``fn`` takes a keyword ``name`` (Keras passes ``training`` only to those that do)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class Layer(_mt_layers.LayerMixin, Module):
    """Base class for layers, as ``keras.layers.Layer``.

    Subclass it and write:

    - ``build(input_shape)``: create the weights with ``self.add_weight(...)``, knowing the
      input's shape (a tuple). Called once, on the first call (Keras's lazy building);
    - ``call(inputs, ...)``: the computation, with minitape ops.

    ``layer(x)`` builds if needed, then returns ``call(x)``. ``training=`` is passed on only
    when ``call`` accepts it; as Keras's call context, a mode given to a layer or model call
    reaches the layers called inside it that are not given one (``model(x, training=True)``
    turns on a ``Dropout`` that ``call`` calls as ``self.dropout(x)``). Setting
    ``layer.trainable = False`` freezes every weight of the layer (``trainable_variables`` is
    then empty), as Keras.

    >>> import minitape as mt
    >>> class Scale(mt.keras.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
    ...     def call(self, x):
    ...         return x * self.w
    >>> layer = Scale()
    >>> layer(mt.constant([[1.0, 2.0]]))
    <mt.Tensor: shape=(1, 2), dtype=float32, numpy=array([[1., 2.]], dtype=float32)>
    >>> [v.path for v in layer.trainable_variables]
    ['scale/w']
    """

    _walk_skip = ("built", "trainable", "dtype", "_build_input_shape")
    _walk_last = ("_added_weights",)

    def __init__(self, trainable=True, name=None, dtype=None, activity_regularizer=None,
                 **kwargs):
        unknown = set(kwargs) - {"input_shape", "input_dim", "batch_input_shape", "batch_size",
                                 "autocast", "dynamic"}
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments "
                            f"{sorted(unknown)}")
        super().__init__(name=name)
        _mt_layers._layer_options(self, {k: v for k, v in kwargs.items()
                                         if k not in ("autocast", "dynamic")},
                                  type(self).__name__)
        from . import regularizers
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.trainable = bool(trainable)
        self.built = False
        self.dtype = _mt_layers._layer_dtype(dtype)   # default: mt.keras.backend.floatx()

    def __setattr__(self, name, value):   # (cnnqa)
        # A list kept in an attribute becomes TensorFlow 2's tracked list, whose ``.layers``
        # are the layers in it (d2l's DenseNet: ``for layer in self.listLayers.layers``).
        if type(value) is list:
            value = ListWrapper(value)
        super().__setattr__(name, value)

    def get_config(self):
        """``name``, ``trainable``, ``dtype`` and the constructor's arguments, as Keras 3.

        Override it when ``__init__`` takes arguments that are not numbers, strings, lists,
        regularizers or named functions: return ``{**super().get_config(), "units":
        self.units, ...}``; ``from_config(config)`` then calls ``cls(**config)``.
        """
        return {**super().get_config(), "trainable": self.trainable, "dtype": self.dtype.name}

    def build(self, input_shape):
        """Create the weights; ``input_shape`` is the first input's shape (a tuple)."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call(self, inputs): the "
                                  "computation of the layer (see mt.keras.layers.Layer)")

    def __call__(self, inputs, *args, **kwargs):
        if not self.built:
            shape = _shape_of(inputs)
            self._build_input_shape = shape if isinstance(shape, list) else tuple(shape)
            if not getattr(type(self).build, "_by_calling", False):
                self.build(shape)
            self.built = True
        # Keras's call context: a training mode given here reaches the layers called inside,
        # and a layer called without one takes the enclosing call's.
        training = kwargs.pop("training", None)
        if training is None and _mt_layers._call_context.training:
            training = _mt_layers._call_context.training[-1]
        if training is not None and accepts(self.call, "training"):
            kwargs["training"] = training
        elif training is None and not args and _requires(self.call, "training"):   # (cnnqa)
            # A ``call(self, inputs, training)`` without a default (d2l's batch norm from
            # scratch) gets None, as Keras 2 passes it: the layer then takes its inference path.
            kwargs["training"] = None
        with _mt_layers.training_scope(training):
            outputs = self.call(inputs, *args, **kwargs)
        if vars(self).get("activity_regularizer") is not None:
            self._activity_loss(outputs)
        return outputs

    @property
    def supports_masking(self):
        """Whether the layer passes a mask on to its outputs (``compute_mask``), as Keras's:
        True once set so (``self.supports_masking = True``, Geron's ``PositionalEncoding``)
        or when the layer's class has its own ``compute_mask``; see ``mt.keras.masking``."""
        own = vars(self).get("_supports_masking")
        return own if own is not None else type(self).compute_mask is not Layer.compute_mask

    @supports_masking.setter
    def supports_masking(self, value):
        vars(self)["_supports_masking"] = bool(value)

    def compute_mask(self, inputs, previous_mask=None):
        """The mask of the outputs, from the inputs and their mask: ``previous_mask`` (as
        Keras's default). Override it in a layer that makes or changes masks."""
        return previous_mask

    def add_weight(self, *args, shape=None, initializer=None, dtype=None, trainable=True,
                   name=None, regularizer=None, constraint=None, **kwargs):
        """Create a Variable owned by this layer, as Keras's ``Layer.add_weight``.

        Keras 3's order of arguments, ``add_weight(shape, initializer, dtype, trainable,
        ...)``, every one also by keyword; and, as in Keras 2 code (the TensorFlow
        tutorials' ``self.add_weight("kernel", shape=[...])``), a name given first:
        ``add_weight(name, shape, dtype, initializer, ...)``.

        Args:
            shape: tuple or list of ints (default ``()``), or an int for a vector (as
                tf.keras 2, Géron's ``shape=self.dense.input_shape[-1]``).
            initializer: a Keras name (``"glorot_uniform"``, the default for floats;
                ``"zeros"``, the default otherwise; ``"ones"``, ``"he_normal"``,
                ``"random_normal"``...), an ``mt.keras.initializers`` object, or a callable
                ``(shape, dtype)``.
            dtype: default the layer's dtype (``mt.keras.backend.floatx()``, float32).
            trainable: whether a tape watches it automatically and ``fit`` trains it.
            name: the Variable's name (default ``"Variable"``); its ``.path`` is
                ``layer_name/name``.
            regularizer: a penalty of the weight (``"l2"``, ``mt.keras.regularizers.L2(0.01)``,
                a function), listed in ``layer.losses`` while the weight is trainable.
            constraint: the Variable's ``constraint`` (``"max_norm"``,
                ``mt.keras.constraints.NonNeg()``, a function), applied by the optimizers
                after each update.
            autocast, aggregation, ...: accepted, not used.

        Returns:
            The new Variable (it is tracked even if not assigned to an attribute).

        Raises:
            TypeError: too many positional arguments, or one given twice.
            ValueError: an unknown initializer name.
        """
        if args:
            order = (("name", "shape", "dtype", "initializer") if isinstance(args[0], str)
                     else ("shape", "initializer", "dtype", "trainable"))
            if len(args) > len(order):
                raise TypeError(f"{type(self).__name__}.add_weight takes at most "
                                f"{len(order)} positional arguments ({', '.join(order)}), got "
                                f"{len(args)}; pass the others by keyword")
            given = {"shape": shape, "initializer": initializer, "dtype": dtype,
                     "trainable": trainable, "name": name}
            defaults = {"shape": None, "initializer": None, "dtype": None, "trainable": True,
                        "name": None}
            for key, value in zip(order, args):
                if given[key] is not defaults[key]:
                    raise TypeError(f"{type(self).__name__}.add_weight got multiple values "
                                    f"for argument {key!r}")
                given[key] = value
            shape, initializer, dtype = given["shape"], given["initializer"], given["dtype"]
            trainable, name = given["trainable"], given["name"]
        if isinstance(shape, (int, np.integer)):   # (an int: a vector, as tf.keras 2)
            shape = (shape,)
        shape = tuple(int(d) for d in (() if shape is None else shape))
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self.dtype
        if initializer is None:
            initializer = "glorot_uniform" if dtype.kind == "f" else "zeros"
        value = _initial_value(initializer, shape, dtype, f"{type(self).__name__}.add_weight")
        from . import constraints
        var = Variable(value, trainable=trainable, name=name or "Variable",
                       constraint=constraints.get(constraint))
        var.path = f"{self.name}/{name or 'variable'}"
        self._extra_weights().append(var)
        if regularizer is not None:
            from . import regularizers
            vars(self).setdefault("_added_regularizers", []).append(
                (var, regularizers.get(regularizer)))
        return var

    def add_variable(self, *args, **kwargs):
        """``add_weight`` under its older name (Keras 2's ``Layer.add_variable``; Keras 3
        keeps it as an alias): the same arguments, the same Variable."""
        return self.add_weight(*args, **kwargs)

    def _extra_weights(self):
        # Weights made by add_weight, so that they are tracked even when not kept in an
        # attribute; walked last, so a Variable kept in an attribute is saved under its name.
        if "_added_weights" not in vars(self):
            self._added_weights = []
        return self._added_weights

    def add_update(self, updates):   # (cnnqa)
        """Keras 2's ``Layer.add_update`` (d2l's batch normalization from scratch calls it
        after ``moving_mean.assign(...)``), as TensorFlow 2 runs it eagerly: an update that
        is a Tensor or Variable has already happened and is left alone; a zero-argument
        callable (or a list of them) is called now, unless ``layer.trainable`` is False.

        Raises:
            TypeError: an update that is neither a Tensor, a Variable nor a callable.
        """
        items = updates if isinstance(updates, (list, tuple)) else [updates]
        for update in items:
            if callable(update) and not isinstance(update, Tensor):
                if self.trainable:
                    update()
            elif not isinstance(update, Tensor):
                raise TypeError(f"{type(self).__name__}.add_update expects the result of an "
                                f"assign (a Variable or Tensor) or a function of no arguments "
                                f"that makes the update, got {update!r:.60}")


class Lambda(Layer):
    """Wrap a function of Tensors as a layer, as ``keras.layers.Lambda``.

    ``Lambda(fn)(x)`` is ``fn(x)``; the layer has no weights (a function that reads
    Variables of its own is better written as a ``Layer`` subclass, as Keras advises).

    >>> import minitape as mt
    >>> mt.keras.layers.Lambda(lambda x: x**2)(mt.constant([3.0]))
    <mt.Tensor: shape=(1,), dtype=float32, numpy=array([9.], dtype=float32)>
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda expects a function, got {function!r:.60}")
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs):
        return self.function(inputs, **self.arguments)


# Keras's functional forms of the merging layers (Geron's Wide & Deep network:
# ``concat = keras.layers.concatenate([input_, hidden2])``): make the layer, call it.

def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis=axis, **kwargs)(inputs)``, as ``keras.layers.concatenate``."""
    return _mt_layers.Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs, **kwargs):
    """``Add(**kwargs)(inputs)``, as ``keras.layers.add``."""
    return _mt_layers.Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """``Subtract(**kwargs)(inputs)``, as ``keras.layers.subtract``."""
    return _mt_layers.Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """``Multiply(**kwargs)(inputs)``, as ``keras.layers.multiply``."""
    return _mt_layers.Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """``Average(**kwargs)(inputs)``, as ``keras.layers.average``."""
    return _mt_layers.Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """``Maximum(**kwargs)(inputs)``, as ``keras.layers.maximum``."""
    return _mt_layers.Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """``Minimum(**kwargs)(inputs)``, as ``keras.layers.minimum``."""
    return _mt_layers.Minimum(**kwargs)(inputs)


def _shape_of(inputs):
    if isinstance(inputs, (list, tuple)) and inputs and not isinstance(inputs[0], (int, float)):
        return [_shape_of(x) for x in inputs]
    if isinstance(inputs, Tensor):
        return inputs.shape
    return np.shape(inputs)


# -- the convolutional chapters of the textbooks (cnnqa): d2l's DenseNet and batch norm -----
# (Also in ``Layer``, marked "(cnnqa)": ``__setattr__``, ``add_update`` and ``training=None``.)


class ListWrapper(list):
    """A list kept in an attribute of a ``Layer``, as TensorFlow 2's tracked ``ListWrapper``:
    a plain list, plus ``.layers``, the layers (Modules) in it, nested lists included."""

    @property
    def layers(self):
        out = []
        for item in self:
            if isinstance(item, Module):
                out.append(item)
            elif isinstance(item, (list, tuple)):
                out.extend(ListWrapper(item).layers)
        return out


def _requires(fn, name) -> bool:
    """Whether ``fn`` has a parameter ``name`` without a default value."""
    try:
        param = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return param is not None and param.default is inspect.Parameter.empty


# -- end of cnnqa ---------------------------------------------------------------------------


# -- Géron's chapter 17 (gengeron): the sparse autoencoder's layer --------------------------

class ActivityRegularization(Layer):
    """Returns its input unchanged and adds ``l1 * sum(|x|) + l2 * sum(x**2)``, divided by the
    batch size, to ``layer.losses`` (so ``fit`` minimises it too), as
    ``keras.layers.ActivityRegularization``.

    Args:
        l1, l2: non-negative floats (default 0.0).
    """

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        from . import regularizers
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = l1, l2

    def call(self, inputs):
        return _mt_layers.convert_to_tensor(inputs, what="ActivityRegularization")

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return {**config, "l1": self.l1, "l2": self.l2}


__all__.append("ActivityRegularization")


class RepeatVector(Layer):
    """Repeats each sample ``n`` times along a new axis 1: ``(batch, features)`` becomes
    ``(batch, n, features)``, as ``keras.layers.RepeatVector`` (Géron's recurrent
    autoencoder feeds its codings to every time step of the decoder).

    Raises:
        ValueError: ``n`` is not a positive int, or the input is not 2-D (at the call).
    """

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"RepeatVector: n must be a positive int, got {n!r}")
        self.n = int(n)

    def call(self, inputs):
        from ..ops import array_ops
        x = _mt_layers.convert_to_tensor(inputs, what="RepeatVector")
        if x.ndim != 2:
            raise ValueError(f"RepeatVector expects inputs of shape (batch, features), got "
                             f"{x.shape}; flatten them first (layers.Flatten())")
        return array_ops.tile(array_ops.expand_dims(x, 1), [1, self.n, 1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


__all__.append("RepeatVector")


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
