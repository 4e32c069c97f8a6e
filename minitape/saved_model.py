"""``mt.saved_model.save`` / ``load``: an object's Variables and its ``mt.function``s.

TensorFlow's SavedModel stores traced graphs, so a model loads without its Python code.
minitape has no graphs: it stores

- ``variables.npz``: every Variable of the object tree, by object path (the weights file of
  ``mt.Module.save_weights``: no pickle, checked before anything is assigned);
- ``saved_model.json``: a manifest of the tree: which attribute holds which Variable,
  sub-object or ``mt.function``, and for each function a *reference* (its module and
  qualified name, and its ``input_signature``). Code is never pickled.

``load`` rebuilds the tree with fresh objects and Variables, and looks each function up by
its reference, binding methods to the loaded object. In the Python session that defined
them (the guides' case) that just works, custom gradients included: the function is the
same Python code. If the function cannot be found (a notebook was restarted and the cell
that defines it was not run again, or the module is not importable), ``load`` raises an
error naming the function and the fix.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import numpy as np

from . import errors
from .function import Function, TensorSpec
from .module import Module, load_variables, save_variables, variable_key
from .engine.tensor import Variable

__all__ = ["save", "load", "SaveOptions", "LoadOptions"]

FORMAT = "minitape.saved_model/1"
MANIFEST = "saved_model.json"
VARIABLES = "variables"


class SaveOptions:
    """Options of ``mt.saved_model.save``, as ``tf.saved_model.SaveOptions``.

    Args:
        experimental_custom_gradients: TensorFlow saves the gradient functions of
            ``custom_gradient`` ops into the graph only when this is True (its default since
            2.6). minitape saves functions by reference, so the custom gradient is always
            the one in your code: the option is accepted and changes nothing.
        Every other argument of TensorFlow's is accepted and ignored.
    """

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_io_device=None, experimental_variable_policy=None,
                 experimental_custom_gradients=True, experimental_image_format=False,
                 experimental_skip_saver=False, experimental_sharding_callback=None,
                 extra_tags=None):
        self.experimental_custom_gradients = bool(experimental_custom_gradients)
        self.save_debug_info = save_debug_info
        self.function_aliases = function_aliases


class LoadOptions:
    """Options of ``mt.saved_model.load``; accepted for TensorFlow's signature, unused."""

    def __init__(self, **kwargs):
        self.options = kwargs


class LoadedObject(Module):
    """An object rebuilt by ``mt.saved_model.load`` (TensorFlow's ``_UserObject``).

    It has the saved object's attributes that held Variables, sub-objects and
    ``mt.function``s; ``variables`` and ``trainable_variables`` work as on any Module.
    """

    def __init__(self, class_name):
        super().__init__(name=class_name)

    def __call__(self, *args, **kwargs):
        call = vars(self).get("__call__")
        if call is None:
            raise TypeError(f"this loaded object (was {self.name}) is not callable: its class had "
                            "no __call__ decorated with @mt.function when it was saved")
        return call(*args, **kwargs)

    def __repr__(self):
        return f"<mt.saved_model loaded object (was {self.name}) variables={len(self.variables)}>"


def _function_ref(fn, where):
    """``{"module", "qualname", "input_signature"}`` for an mt.function (or a plain function)."""
    python = fn.python_function if isinstance(fn, Function) else fn
    module, qualname = getattr(python, "__module__", None), getattr(python, "__qualname__", "")
    if module is None or "<locals>" in qualname or "<lambda>" in qualname:
        raise ValueError(
            f"saved_model.save: the function at {where} ({qualname or python!r}) is defined "
            "inside another function or is a lambda, so it cannot be found again by name; "
            "minitape saves functions by reference (module and name), never as code: define "
            "it at the top level of a module or notebook cell")
    signature = getattr(fn, "input_signature", None)
    return {"module": module, "qualname": qualname,
            "input_signature": None if signature is None else [s.to_json() for s in signature]}


def _plain_call(cls):
    """The reference of a sub-object's own ``__call__`` that is not an ``mt.function`` (the
    guide's ``Dense`` module inside a model whose ``__call__`` is one): TensorFlow's traced
    graph holds that computation; minitape's saved function calls the sub-object, so its
    method is saved by reference too. None for minitape's own classes (a Keras layer's
    ``__call__`` needs more than the saved attributes) and for what cannot be found by name."""
    for c in cls.__mro__:
        if "__call__" in vars(c):
            value = vars(c)["__call__"]
            if isinstance(value, Function) or isinstance(getattr(value, "__wrapped__", None),
                                                         Function):
                return None
            python = getattr(value, "__wrapped__", value)
            module = getattr(python, "__module__", None) or ""
            qualname = getattr(python, "__qualname__", "")
            if (module.split(".")[0] == "minitape" or "<locals>" in qualname
                    or not callable(python)):
                return None
            return {"module": module, "qualname": qualname, "input_signature": None,
                    "method": True}
    return None


def _describe(obj, path, state):
    """The manifest entry of one value (Variable, Module, container); None if nothing to save."""
    if isinstance(obj, Variable):
        key = state["keys"].get(id(obj))
        if key is None:
            key = state["keys"][id(obj)] = variable_key(path)
            state["variables"][key] = obj
        return {"variable": key, "trainable": obj.trainable, "name": obj.name}
    if isinstance(obj, Module):
        if id(obj) in state["objects"]:
            return {"ref": state["objects"][id(obj)]}   # seen already (shared or cyclic)
        state["objects"][id(obj)] = list(path)
        entry = {"class": f"{type(obj).__module__}.{type(obj).__qualname__}",
                 "attributes": {}, "functions": {}}
        skip = type(obj)._walk_rules[0]   # (the names ``Module._walk`` skips)
        for cls in type(obj).__mro__:
            for name, value in vars(cls).items():
                if not isinstance(value, Function):   # a wrapped one (Module's __call__ scope)
                    value = getattr(value, "__wrapped__", None)
                if isinstance(value, Function) and name not in entry["functions"]:
                    entry["functions"][name] = {**_function_ref(value, f"{type(obj).__name__}."
                                                                f"{name}"), "method": True}
        if path and "__call__" not in entry["functions"]:
            plain = _plain_call(type(obj))
            if plain is not None:
                entry["functions"]["__call__"] = plain
        for name, value in vars(obj).items():
            if name in skip or name.startswith("__"):
                continue
            if isinstance(value, Function):
                entry["functions"][name] = {**_function_ref(value, name), "method": False}
                continue
            sub = _describe(value, path + (name,), state)
            if sub is not None:
                entry["attributes"][name] = sub
        return {"object": entry}
    if isinstance(obj, (list, tuple)):
        items = [_describe(v, path + (i,), state) for i, v in enumerate(obj)]
        return {"list": items} if any(i is not None for i in items) else None
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        items = {k: _describe(v, path + (k,), state) for k, v in obj.items()}
        items = {k: v for k, v in items.items() if v is not None}
        return {"dict": items} if items else None
    return None


def save(obj, export_dir, signatures=None, options=None):
    """Save ``obj``'s Variables and a manifest of its ``mt.function``s to ``export_dir``.

    As ``tf.saved_model.save``: ``obj`` is a ``mt.Module`` (a Keras model or layer too);
    its Variables, sub-Modules and ``mt.function`` attributes (methods decorated with
    ``@mt.function`` included) are saved; other attributes are not.

    Args:
        obj: a ``mt.Module``.
        export_dir: a directory (created if needed).
        signatures: accepted (TensorFlow's serving signatures); unused.
        options: an ``mt.saved_model.SaveOptions``, or None.

    Raises:
        TypeError: ``obj`` is not a Module.
        ValueError: a function is a lambda or defined inside another function (it could
            not be found again by name), or two Variables would share a key.
    """
    if not isinstance(obj, Module):
        raise TypeError(f"saved_model.save expects a mt.Module (a model or layer), got "
                        f"{type(obj).__name__}")
    if options is not None and not isinstance(options, SaveOptions):
        raise TypeError(f"options must be a mt.saved_model.SaveOptions, got {options!r:.60}")
    state = {"keys": {}, "variables": {}, "objects": {}}
    root = _describe(obj, (), state)
    export_dir = os.fspath(export_dir)
    os.makedirs(export_dir, exist_ok=True)
    save_variables(os.path.join(export_dir, VARIABLES), state["variables"], "saved_model.save")
    manifest = {"format": FORMAT, "root": root}
    tmp = os.path.join(export_dir, MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(export_dir, MANIFEST))


def _find_function(ref, export_dir, attr):
    module_name, qualname = ref["module"], ref["qualname"]
    fix = (f"minitape saves functions by reference, never as code: run the code that defines "
           f"{qualname} again (in a notebook: the cell with its class or def) or make the "
           f"module {module_name!r} importable, then load again")
    try:
        target = sys.modules.get(module_name) or importlib.import_module(module_name)
    except ImportError as e:
        raise errors.NotFoundError(None, None,
                                   f"saved_model.load({export_dir!r}): the function '{attr}' "
                                   f"refers to {module_name}.{qualname}, but the module "
                                   f"{module_name!r} cannot be imported ({e}); {fix}") from None
    for part in qualname.split("."):
        try:
            target = inspect_attr(target, part)
        except AttributeError:
            raise errors.NotFoundError(
                None, None, f"saved_model.load({export_dir!r}): the function '{attr}' refers to "
                f"{module_name}.{qualname}, which does not exist (was the notebook restarted?); "
                f"{fix}") from None
    if not isinstance(target, Function):
        signature = ref.get("input_signature")
        target = Function(target, None if signature is None
                          else [TensorSpec.from_json(s) for s in signature])
    return target


def inspect_attr(obj, name):
    # Class attributes are read from the class __dict__ so a Function stays unbound.
    if isinstance(obj, type):
        for cls in obj.__mro__:
            if name in vars(cls):
                return vars(cls)[name]
        raise AttributeError(name)
    return getattr(obj, name)


def _build(entry, values, export_dir, built, path):
    if "variable" in entry:
        key = entry["variable"]
        if key not in built:
            built[key] = values[key]
        return built[key]
    if "ref" in entry:
        return built[("object",) + tuple(entry["ref"])]
    if "list" in entry:
        return [None if e is None else _build(e, values, export_dir, built, path + (i,))
                for i, e in enumerate(entry["list"])]
    if "dict" in entry:
        return {k: _build(e, values, export_dir, built, path + (k,))
                for k, e in entry["dict"].items()}
    spec = entry["object"]
    obj = LoadedObject(spec["class"].rsplit(".", 1)[-1])
    built[("object",) + path] = obj
    for name, sub in spec["attributes"].items():
        setattr(obj, name, _build(sub, values, export_dir, built, path + (name,)))
    for name, ref in spec["functions"].items():
        fn = _find_function(ref, export_dir, name)
        setattr(obj, name, fn.__get__(obj) if ref["method"] else fn)
    return obj


def _variable_entries(entry, out):
    if entry is None:
        return
    if "variable" in entry:
        out.setdefault(entry["variable"], entry)
    elif "list" in entry:
        for e in entry["list"]:
            _variable_entries(e, out)
    elif "dict" in entry:
        for e in entry["dict"].values():
            _variable_entries(e, out)
    elif "object" in entry:
        for e in entry["object"]["attributes"].values():
            _variable_entries(e, out)


def load(export_dir, tags=None, options=None):
    """Load what ``mt.saved_model.save`` wrote, as ``tf.saved_model.load``.

    Returns:
        A ``LoadedObject`` with the saved tree's Variables (new Variables holding the saved
        values), sub-objects and functions (methods bound to it).

    Raises:
        mt.errors.NotFoundError (also a ``FileNotFoundError``): no SavedModel in
            ``export_dir``, or a function it refers to cannot be found (the message names
            the function and the fix).
        ValueError: the manifest and the variables file disagree, or the format is unknown.
    """
    export_dir = os.fspath(export_dir)
    manifest_path = os.path.join(export_dir, MANIFEST)
    if not os.path.exists(manifest_path):
        raise errors.NotFoundError(None, None, f"saved_model.load: no {MANIFEST} in "
                                   f"{export_dir!r}; pass the directory given to "
                                   "mt.saved_model.save")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"saved_model.load: {manifest_path!r} has the format "
                         f"{manifest.get('format')!r}, expected {FORMAT!r}")
    # Fresh Variables, then one all-or-nothing read of the file into them.
    from .module import read_headers
    headers = read_headers(os.path.join(export_dir, VARIABLES), "saved_model.load")
    about = {}
    _variable_entries(manifest["root"], about)
    values = {}
    for key, (shape, dtype) in headers.items():
        entry = about.get(key, {})
        values[key] = Variable(np.zeros(shape, dtype), trainable=entry.get("trainable", True),
                               name=entry.get("name"))
        values[key].path = key
    load_variables(os.path.join(export_dir, VARIABLES), values, "saved_model.load")
    return _build(manifest["root"], values, export_dir, {}, ())


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
