"""``model.save(path)`` and ``mt.keras.models.load_model(path, custom_objects=...)``.

As Keras 3's ``.keras`` format, in minitape's own file: one zip holding

- ``minitape_model.json``: the architecture (each layer's class name and ``get_config()``;
  a Sequential's list of layers; a functional model's layer calls), the input shape the model
  was built with, and the ``compile`` arguments (optimizer config, loss, metrics);
- ``model.weights.npz``: every Variable of the model, keyed by its object path (the weights
  file of ``save_weights``: ``.npy`` arrays, never a pickle).

``load_model`` rebuilds the model from the config (``cls.from_config(config)``, as Keras),
builds it from the saved input shape, checks and assigns all the weights at once, and
compiles it again: its predictions are exactly those of the saved model. A class or a
function that is not minitape's (a custom layer, model, loss, metric or activation) is found
in ``custom_objects={"Name": obj}`` or among those registered with
``register_keras_serializable``, as Keras; nothing is ever imported or unpickled from the file.

The file is written to a temporary name next to it and renamed, so a failed save never leaves
half a file. A file that is not minitape's (Keras's own ``.keras`` zip, an HDF5 ``.h5``, a
TensorFlow SavedModel directory) is refused with a message saying what it is. The optimizer
is saved by its config (a learning rate schedule included, as Keras serializes it): its slots
(Adam's moments) and its step count start again from zero.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import numpy as np

from .. import dtypes
from .. import layers as _mt_layers
from .. import optimizers as _optimizers
from ..module import Module, load_variables, read_headers, save_variables

__all__ = ["save_model", "load_model", "register_keras_serializable",
           "get_registered_object", "serialize_keras_object", "deserialize_keras_object"]

FORMAT = "minitape.keras.model"
VERSION = 1
CONFIG_FILE = "minitape_model.json"
WEIGHTS_FILE = "model.weights.npz"

_REGISTERED: dict = {}


def register_keras_serializable(package="Custom", name=None):
    """Decorator: let ``load_model`` find a class or function by name, as Keras's.

    ``@mt.keras.saving.register_keras_serializable()`` above a custom layer, model, loss,
    metric or activation: ``load_model`` then needs no ``custom_objects`` for it. It is
    registered as ``"package>name"`` and, for convenience, under its bare name.
    """
    def decorator(obj):
        key = name or obj.__name__
        _REGISTERED[f"{package}>{key}"] = obj
        _REGISTERED.setdefault(key, obj)
        return obj
    return decorator


def get_registered_object(name, custom_objects=None):
    """The object registered (or in ``custom_objects``) under ``name``, else None."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return _REGISTERED.get(name)


def _builtin_classes(kind):
    """minitape's classes of one kind (``layer``, ``metric``, ``loss``, ``regularizer``,
    ``optimizer``) by name: Keras's metrics and losses share class names."""
    from . import functional, layers, losses, metrics, models, regularizers
    if kind == "layer":
        out = {name: getattr(layers, name) for name in layers.__all__}
        out.update({"Sequential": models.Sequential, "Functional": functional.Functional,
                    "Model": models.Model, "InputLayer": functional.InputLayer,
                    "_OperatorLayer": functional._OperatorLayer})   # (x + y in a model)
        return out
    if kind == "metric":
        return dict(metrics._CLASSES)
    if kind == "loss":
        return {name: getattr(losses, name) for name in losses.__all__
                if isinstance(getattr(losses, name), type)}
    if kind == "regularizer":
        return {k: v for k, v in regularizers._BY_NAME.items() if k[0].isupper()}
    if kind == "constraint":
        from . import constraints
        return {k: v for k, v in constraints._BY_NAME.items() if k[0].isupper()}
    return {name: getattr(_optimizers, name) for name in dir(_optimizers)
            if isinstance(getattr(_optimizers, name), type)
            and issubclass(getattr(_optimizers, name), _optimizers.Optimizer)}


def _kind(obj):
    from . import constraints, losses, metrics, regularizers
    for kind, cls in (("metric", metrics.Metric), ("loss", losses.Loss),
                      ("regularizer", regularizers.Regularizer),
                      ("constraint", constraints.Constraint),
                      ("optimizer", _optimizers.Optimizer)):
        if isinstance(obj, cls):
            return kind
    return "layer"


def _builtin_functions():
    from . import activations, losses, metrics
    out = dict(activations._BY_NAME)
    out.update(losses._BY_NAME)
    out.update(metrics._FUNCTIONS)
    for name, fn in _mt_layers._ACTIVATIONS.items():
        if fn is not None:
            out.setdefault(name, fn)
    # mt.nn.relu, mt.math.sin, then the ops behind mt's top level (mt.concat, ...): imported
    # from the modules that define them, not from the package, which imports keras.
    from .. import math as mt_math, nn as mt_nn
    from ..ops import array_ops, grid_ops, linalg_ops, math_ops, reduction_ops
    for module in (mt_nn, mt_math, math_ops, array_ops, reduction_ops, linalg_ops, grid_ops):
        namespace = module in (mt_nn, mt_math)   # (of an ops module: what it defines)
        for name in dir(module):
            value = getattr(module, name)
            if not name.startswith("_") and callable(value) and not isinstance(value, type) \
                    and (namespace or getattr(value, "__module__", None) == module.__name__):
                out.setdefault(name, value)
    return out


def _find(name, kind, custom_objects, where):
    """A class (of ``kind``) or a function (``kind="function"``) by name: custom_objects,
    registered, then minitape's own."""
    found = get_registered_object(name, custom_objects)
    if found is None:
        found = (_builtin_functions() if kind == "function" else _builtin_classes(kind)).get(name)
    if found is None:
        what = "function" if kind == "function" else f"{kind} class"
        raise ValueError(
            f"load_model: {where} refers to the {what} {name!r}, which is not one of "
            f"minitape's; pass it as load_model(path, custom_objects={{{name!r}: {name}}}) "
            "(run the cell that defines it first), or decorate it with "
            "@mt.keras.saving.register_keras_serializable(), as in Keras")
    return found


# -- values in a config: JSON, with markers for what JSON lacks ------------------------------

def _function_name(fn, where):
    name = getattr(fn, "__name__", None)
    if name is None or name == "<lambda>":
        raise ValueError(
            f"model.save: {where} is {'a lambda' if name == '<lambda>' else repr(fn)[:60]}; "
            "minitape saves functions by name, never as code: define it with def, and give "
            "it to load_model in custom_objects={'its_name': its_name}")
    return name


def serialize_keras_object(value, where="value"):
    """``value`` as JSON-ready data, as Keras's ``serialize_keras_object``.

    Numbers, strings, None, lists and dicts stay as they are; a tuple, a dtype, a layer,
    a regularizer, a metric, a loss, an optimizer (``{"class_name", "config"}`` from
    ``get_config``) and a named function get a marker that ``deserialize_keras_object``
    reads back.

    Raises:
        ValueError: a lambda or a nested function (saved by name only).
        TypeError: a value that cannot be written (named, with ``where`` it was found).
    """
    from . import constraints, losses, metrics, regularizers
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return {"__dtype__": np.dtype(value).name}
    if isinstance(value, tuple):
        return {"__tuple__": [serialize_keras_object(v, f"{where}[{i}]")
                              for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [serialize_keras_object(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"model.save: {where} is a dict with a key {bad[0]!r} that is not "
                            "a str; configs are JSON")
        return {k: serialize_keras_object(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (Module, regularizers.Regularizer, metrics.Metric, losses.Loss,
                          _optimizers.Optimizer, constraints.Constraint)):
        return {"__object__": _serialize_object(value, where)}
    if callable(value) and not isinstance(value, type):
        return {"__function__": _function_name(value, where)}
    raise TypeError(f"model.save: {where} is {type(value).__name__} {value!r:.60}, which a "
                    "config cannot hold (numbers, strings, lists, dicts, layers, regularizers, "
                    "named functions); write get_config() returning such values")


def _serialize_object(obj, where):
    if not hasattr(obj, "get_config"):
        raise TypeError(f"model.save: {where} is a {type(obj).__name__}, which has no "
                        "get_config(); subclass mt.keras.layers.Layer (or write get_config)")
    config = obj.get_config()
    if not isinstance(config, dict):
        raise TypeError(f"model.save: {type(obj).__name__}.get_config() returned "
                        f"{type(config).__name__}, expected a dict")
    return {"class_name": type(obj).__name__, "kind": _kind(obj),
            "config": serialize_keras_object(config, f"{where}.get_config()")}


def deserialize_keras_object(data, custom_objects=None, where="config"):
    """What ``serialize_keras_object`` wrote, rebuilt; classes and functions found by name."""
    if isinstance(data, list):
        return [deserialize_keras_object(v, custom_objects, where) for v in data]
    if not isinstance(data, dict):
        return data
    if "__tuple__" in data:
        return tuple(deserialize_keras_object(v, custom_objects, where) for v in data["__tuple__"])
    if "__dtype__" in data:
        return dtypes.as_dtype(data["__dtype__"])
    if "__function__" in data:
        return _find(data["__function__"], "function", custom_objects, where)
    if "__object__" in data:
        return _deserialize_object(data["__object__"], custom_objects, where)
    return {k: deserialize_keras_object(v, custom_objects, f"{where}[{k!r}]")
            for k, v in data.items()}


def _deserialize_object(spec, custom_objects, where):
    name = spec["class_name"]
    cls = _find(name, spec.get("kind", "layer"), custom_objects, where)
    config = deserialize_keras_object(spec["config"], custom_objects, f"{where} ({name})")
    from_config = getattr(cls, "from_config", None)
    try:
        if from_config is not None and spec.get("kind") == "optimizer":
            # (its learning rate may be a custom schedule, found in custom_objects)
            return from_config(config, custom_objects={**_REGISTERED, **(custom_objects or {})})
        if from_config is not None:
            return from_config(config)
        return cls(**config)
    except TypeError as e:
        raise TypeError(f"load_model: {name}.from_config({config!r:.120}) failed: {e}; a class "
                        "whose __init__ takes other arguments than its get_config() returns "
                        "must define get_config (and from_config), as in Keras") from e


# -- the model kinds ------------------------------------------------------------------------

def sequential_config(model):
    """A Sequential's config: its name, its layers' configs, its build input shape."""
    return {"name": model.name,
            "layers": list(model.layers),
            "build_input_shape": getattr(model, "_build_input_shape", None)}


def functional_config(model):
    """A functional model's config: the layers, and the calls that link them."""
    from .functional import KerasTensor, _map
    layers = model.layers
    index = {id(layer): i for i, layer in enumerate(layers)}
    where = {}
    for x in model.inputs:
        where[id(x)] = ["input", index[id(x._input_layer)]]
    nodes = []
    for n, node in enumerate(model._nodes):
        for k, y in enumerate(_leaves(node.outputs)):
            where[id(y)] = ["node", n, k]

        def ref(x):
            if isinstance(x, KerasTensor):
                return {"__keras_tensor__": where[id(x)]}
            return x
        nodes.append({"layer": index[id(node.layer)], "args": _map(list(node.args), ref),
                      "kwargs": _map(node.kwargs, ref)})
    return {"name": model.name, "layers": layers, "nodes": nodes,
            "inputs": _map(model._inputs, lambda x: {"__keras_tensor__": where[id(x)]}),
            "outputs": _map(model._outputs, lambda x: {"__keras_tensor__": where[id(x)]})}


def _leaves(structure):
    from .functional import _leaves as leaves
    return leaves(structure)


def functional_from_config(config):
    """The functional model that ``functional_config`` described (its layers rebuilt)."""
    from .functional import Functional, InputLayer, KerasTensor
    layers = config["layers"]
    tensors = {}

    def resolve(structure):
        if isinstance(structure, dict) and set(structure) == {"__keras_tensor__"}:
            return tensors[tuple(structure["__keras_tensor__"])]
        if isinstance(structure, (list, tuple)):
            return type(structure)(resolve(v) for v in structure)
        if isinstance(structure, dict):
            return {k: resolve(v) for k, v in structure.items()}
        return structure

    for i, layer in enumerate(layers):
        if isinstance(layer, InputLayer):
            x = KerasTensor((None,) + layer.shape, layer.dtype, name=layer.name)
            x._input_layer = layer
            tensors[("input", i)] = x
    for n, node in enumerate(config["nodes"]):
        outputs = layers[node["layer"]](*resolve(node["args"]), **resolve(node["kwargs"]))
        for k, y in enumerate(_leaves(outputs)):
            tensors[("node", n, k)] = y
    return Functional(resolve(config["inputs"]), resolve(config["outputs"]),
                      name=config.get("name"))


# -- the file ---------------------------------------------------------------------------------

def _compile_config(model):
    if getattr(model, "optimizer", None) is None:
        return None
    return {"optimizer": model.optimizer, "loss": model.loss,
            "metrics": list(getattr(model, "_metric_specs", []))}


def save_model(model, filepath, overwrite=True, **kwargs):
    """Write ``model`` (architecture, weights, compile arguments) to one minitape file.

    Returns None, as Keras.

    As ``keras.saving.save_model`` / ``model.save``, in minitape's format (see the module):
    the file is written at ``filepath`` whatever its extension (``.keras`` is the usual
    one); Keras's ``save_format=`` and other options are accepted and change nothing.

    Raises:
        FileExistsError: the file exists and ``overwrite=False``.
        ValueError / TypeError: something in a config cannot be saved (a lambda, an object
            without ``get_config``): the message names it and the fix.
    """
    from .models import Model
    if not isinstance(model, Model):
        raise TypeError(f"save_model expects a mt.keras Model (Sequential, functional or "
                        f"subclassed), got {type(model).__name__}")
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise IsADirectoryError(f"model.save: {filepath!r} is a directory; minitape writes one "
                                "file, e.g. model.save('my_model.keras')")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"model.save: {filepath!r} exists and overwrite=False")
    document = {
        "format": FORMAT, "version": VERSION,
        "model": serialize_keras_object(model, "the model"),
        "build_input_shape": serialize_keras_object(
            getattr(model, "_build_input_shape", None), "the model's input shape"),
        "compile": serialize_keras_object(_compile_config(model), "compile()"),
    }
    text = json.dumps(document, indent=1)
    folder = os.path.dirname(os.path.abspath(filepath))
    with tempfile.TemporaryDirectory(dir=folder, prefix=".minitape-") as scratch:
        weights = save_variables(os.path.join(scratch, WEIGHTS_FILE),
                                 model._variables_with_paths(), "model.save")
        fd, tmp = tempfile.mkstemp(prefix=".minitape-", suffix=".keras", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
                zf.writestr(CONFIG_FILE, text)
                zf.write(weights, WEIGHTS_FILE)
            os.replace(tmp, filepath)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise


def _refuse_foreign(filepath):
    """A clear error for a path that is not a minitape model file; None if it is one."""
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"load_model: no file {filepath!r}; pass the path given to "
                                "model.save")
    if os.path.isdir(filepath):
        from .. import saved_model
        if os.path.exists(os.path.join(filepath, "saved_model.pb")):
            raise ValueError(f"load_model: {filepath!r} is a TensorFlow SavedModel directory; "
                             "minitape cannot read TensorFlow's files. Save the model again "
                             "with minitape (model.save('my_model.keras'))")
        if os.path.exists(os.path.join(filepath, saved_model.MANIFEST)):
            raise ValueError(f"load_model: {filepath!r} was written by mt.saved_model.save; "
                             "read it with mt.saved_model.load(path)")
        raise ValueError(f"load_model: {filepath!r} is a directory, not a model file written "
                         "by model.save")
    with open(filepath, "rb") as f:
        head = f.read(8)
    if head == b"\x89HDF\r\n\x1a\n":
        raise ValueError(f"load_model: {filepath!r} is an HDF5 (.h5) file, written by "
                         "TensorFlow/Keras; minitape cannot read TensorFlow's files. Save the "
                         "model again with minitape (model.save(path))")
    if not zipfile.is_zipfile(filepath):
        raise ValueError(f"load_model: {filepath!r} is not a model file written by minitape's "
                         "model.save (not a zip)")
    with zipfile.ZipFile(filepath) as zf:
        names = set(zf.namelist())
    if CONFIG_FILE in names and WEIGHTS_FILE in names:
        return
    if "config.json" in names:
        raise ValueError(f"load_model: {filepath!r} is a Keras .keras file, written by "
                         "TensorFlow/Keras (config.json with HDF5 weights); minitape cannot "
                         "read TensorFlow's files. Save the model again with minitape "
                         "(model.save(path))")
    raise ValueError(f"load_model: {filepath!r} is a zip file but not a model written by "
                     f"minitape's model.save (it has no {CONFIG_FILE})")


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002
    """Rebuild a model that ``model.save`` wrote, as ``keras.models.load_model``.

    Args:
        filepath: the path given to ``model.save``.
        custom_objects: ``{"Name": class_or_function}`` for everything that is not
            minitape's: custom layers, models, losses, metrics, activations.
        compile: compile the model again with the saved optimizer, loss and metrics
            (default True; the optimizer's slots start again from zero).
        safe_mode: accepted (minitape never loads code from a file).

    Returns:
        The model, with the saved weights; its predictions equal the saved model's.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file that is not minitape's (Keras's ``.keras``, an ``.h5``, a
            SavedModel directory; the message says which), a class or function that is not
            in ``custom_objects``, or weights that do not match the rebuilt model.
    """
    filepath = os.fspath(filepath)
    if custom_objects is not None and not isinstance(custom_objects, dict):
        raise TypeError(f"load_model: custom_objects must be a dict {{'Name': object}}, got "
                        f"{type(custom_objects).__name__}")
    _refuse_foreign(filepath)
    with zipfile.ZipFile(filepath) as zf:
        document = json.loads(zf.read(CONFIG_FILE).decode("utf-8"))
        weights = zf.read(WEIGHTS_FILE)
    if document.get("format") != FORMAT or document.get("version") != VERSION:
        raise ValueError(f"load_model: {filepath!r} has the format "
                         f"{document.get('format')!r} version {document.get('version')!r}; "
                         f"this minitape reads {FORMAT!r} version {VERSION}")
    model = deserialize_keras_object(document["model"], custom_objects, "the model")
    shape = deserialize_keras_object(document.get("build_input_shape"), custom_objects)
    if shape is not None and not model.built:
        model.build(shape)
    elif shape is not None and getattr(model, "_build_input_shape", None) is None:
        model.build(shape)
    with tempfile.TemporaryDirectory(prefix="minitape-load-") as scratch:
        path = os.path.join(scratch, WEIGHTS_FILE)
        with open(path, "wb") as f:
            f.write(weights)
        if read_headers(path, "load_model") or model.variables:
            load_variables(path, model._variables_with_paths(), "load_model")
    compile_config = document.get("compile")
    if compile and compile_config:
        config = deserialize_keras_object(compile_config, custom_objects, "compile()")
        model.compile(optimizer=config["optimizer"], loss=config["loss"],
                      metrics=config["metrics"] or None)
    return model



def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it.
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
