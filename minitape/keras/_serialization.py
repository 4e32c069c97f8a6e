"""Keras's ``serialize`` / ``deserialize`` pair, shared by ``metrics`` and ``regularizers``.

An object of a class with ``get_config`` becomes ``{"class_name", "config"}``; a plain
function becomes its name. ``deserialize`` reverses it, looking a class up in
``custom_objects`` first, then among the module's own classes (as ``keras.saving``'s
``deserialize_keras_object`` does for these two families).
"""

from __future__ import annotations


def serialize_object(obj, base, module):
    """``{"class_name", "config"}`` of an instance of ``base``, or a function's name.

    Raises:
        TypeError: ``obj`` is neither (``module`` names the caller, e.g. ``"metrics"``).
    """
    if isinstance(obj, base):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    name = getattr(obj, "__name__", None)
    if name is None:
        raise TypeError(f"{module}.serialize: expected a {base.__name__} or a named function, "
                        f"got {obj!r:.60}")
    return name


def deserialize_object(config, custom_objects, classes, get, module, what):
    """The object ``serialize_object`` described: a name goes through ``get``; a config dict
    is ``cls.from_config(config)`` with ``cls`` from ``custom_objects``, else ``classes``.

    Raises:
        ValueError: an unknown class name (the message says to pass ``custom_objects``).
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        return custom_objects.get(config) or get(config)
    name = config.get("class_name")
    cls = custom_objects.get(name) or classes.get(name)
    if cls is None:
        raise ValueError(f"{module}.deserialize: unknown {what} {name!r}; pass "
                         f"custom_objects={{{name!r}: {name}}}")
    return cls.from_config(dict(config.get("config", {})))
