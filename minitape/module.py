"""``Module``: a container that finds the Variables in its attributes, as ``tf.Module``."""

from __future__ import annotations

import re

import numpy as np

from .tensor import Variable

_name_counts: dict = {}


def _unique_name(cls):
    base = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    count = _name_counts.get(base, 0)
    _name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


class Module:
    """Collects Variables and sub-Modules from its attributes (lists, tuples and dicts too).

    Order is the order in which the attributes were assigned. As ``tf.Module``.

    Attributes:
        name: given, or made unique from the class name (``dense``, ``dense_1``, ...).
        variables, trainable_variables: tuples of Variables, no duplicates.
        submodules: tuple of every Module inside, depth first.
    """

    def __init__(self, name=None):
        self.name = name if name is not None else _unique_name(type(self))

    def _walk(self, prefix=""):
        """Yield ``(path, item)`` for every Variable and Module below, in attribute order."""
        for key, value in vars(self).items():
            if key == "name" or key.startswith("__"):
                continue
            yield from _walk_value(f"{prefix}{key.lstrip('_')}", value)

    def _variables_with_paths(self):
        seen, out = set(), []
        for path, item in self._walk():
            if isinstance(item, Variable) and id(item) not in seen:
                seen.add(id(item))
                out.append((path, item))
        return out

    @property
    def variables(self):
        return tuple(v for _, v in self._variables_with_paths())

    @property
    def trainable_variables(self):
        return tuple(v for v in self.variables if v.trainable)

    @property
    def submodules(self):
        seen, out = set(), []
        for _, item in self._walk():
            if isinstance(item, Module) and id(item) not in seen:
                seen.add(id(item))
                out.append(item)
        return tuple(out)

    def save_weights(self, path):
        """Write every Variable to a ``.npz`` file, keyed by attribute path (``layer1/kernel``)."""
        np.savez(path, **{p: v.numpy() for p, v in self._variables_with_paths()})

    def load_weights(self, path):
        """Read Variables saved by ``save_weights`` back with ``assign``.

        Raises:
            ValueError: the file lacks one of this module's Variables, or a shape differs
                (build the layers first by calling the module once).
        """
        with np.load(path) as data:
            for p, v in self._variables_with_paths():
                if p not in data:
                    raise ValueError(f"load_weights: {path} has no entry {p!r} (it has "
                                     f"{sorted(data.files)}); was it saved from this module?")
                if data[p].shape != v.shape:
                    raise ValueError(f"load_weights: {p!r} has shape {data[p].shape} in {path} "
                                     f"but {v.shape} here")
                v.assign(data[p])

    def __repr__(self):
        return f"<{type(self).__name__} '{self.name}' variables={len(self.variables)}>"


def _walk_value(path, value):
    if isinstance(value, Variable):
        yield path, value
    elif isinstance(value, Module):
        yield path, value
        yield from value._walk(prefix=f"{path}/")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk_value(f"{path}/{k}", v)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk_value(f"{path}/{i}", v)
