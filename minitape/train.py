"""``mt.train.Checkpoint``: save and restore every Variable of a tree of objects.

As ``tf.train.Checkpoint(**objects)``: the keyword arguments name the objects (a model, an
optimizer, a Variable, ...); every Variable reachable from them is written under its *object
path* (``model/layers/0/kernel``, ``optimizer/momentums/0``, ``step``). The file is the weights
file of ``mt.Module.save_weights`` (a ``.npz`` of ``.npy`` arrays, no pickle), so restoring is
all or nothing: every key, shape and dtype is checked first, and a missing, extra or
mis-shaped entry is an error that lists them, with nothing assigned.

*Delayed restoration*, as TensorFlow's: restoring into a model whose layers make their
Variables on their first call (``tf.Module`` with ``if not self.is_built: self.w =
tf.Variable(...)``, a Keras layer's ``build``) restores the Variables that exist, and keeps
the other values on the Module that will hold them; a Variable assigned to that attribute
later takes its value at once (``Module.__setattr__``), so the first call already computes
with the restored weights. Only values reached through attribute names are delayed (a
Variable in a list, such as an optimizer's slots, must exist: build first, by applying one
optimizer step, then restore); a delayed value of another shape than its Variable raises
``ValueError`` when the Variable is assigned.

Differences from TensorFlow: the checkpoint is one file ``<prefix>.npz`` (TensorFlow writes
``<prefix>.index`` and ``<prefix>.data-00000-of-00001``).
"""

from __future__ import annotations

import glob
import os
import re

import numpy as np

from . import errors
from urllib.parse import unquote

from .module import Module, keyed_variables, load_variables, read_headers, weights_path
from .engine.tensor import Variable

__all__ = ["Checkpoint", "CheckpointLoadStatus", "CheckpointManager", "list_variables",
           "load_variable", "latest_checkpoint"]


class CheckpointLoadStatus:
    """What ``restore`` returns, as TensorFlow's. Restoring is all or nothing here, so
    when ``restore`` returned, every Variable was matched: the assertions all pass."""

    def __init__(self, path):
        self.save_path = path

    def assert_consumed(self):
        return self

    def assert_existing_objects_matched(self):
        return self

    def assert_nontrivial_match(self):
        return self

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        return None


class Checkpoint(Module):
    """Group objects to save and restore their Variables together, as ``tf.train.Checkpoint``.

    Args:
        **objects: the objects to track, by name: Modules (models, layers, optimizers),
            Variables, or lists and dicts of them.

    Attributes:
        save_counter: an int64 Variable, the number of ``save`` calls (saved too).

    >>> import minitape as mt, tempfile, os
    >>> step = mt.Variable(1)
    >>> ckpt = mt.train.Checkpoint(step=step)
    >>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
    >>> step.assign(5)
    <mt.Variable 'Variable' shape=() dtype=int32, numpy=5>
    >>> _ = ckpt.restore(path)
    >>> int(step)
    1
    """

    def __init__(self, root=None, **objects):
        super().__init__(name="checkpoint")
        for key, value in objects.items():
            if not isinstance(value, (Module, Variable, list, tuple, dict)):
                raise TypeError(f"Checkpoint: {key}={value!r:.60} is not trackable; pass "
                                "Modules (models, layers, optimizers), Variables, or lists and "
                                "dicts of them")
        if root is not None:
            objects = {"root": root, **objects}
        self.save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        for key, value in objects.items():
            setattr(self, key, value)

    def write(self, file_prefix, options=None):
        """Write the Variables to ``file_prefix`` (as ``<file_prefix>.npz``); return the prefix."""
        path = self.save_weights(file_prefix)
        return path[:-4] if not os.fspath(file_prefix).endswith(".npz") else path

    def save(self, file_prefix, options=None):
        """Add one to ``save_counter`` and write ``<file_prefix>-<counter>``; return that path."""
        self.save_counter.assign_add(1)
        return self.write(f"{os.fspath(file_prefix)}-{int(self.save_counter)}")

    def read(self, save_path, options=None):
        """Restore from ``save_path`` (what ``write``/``save`` returned), all or nothing.

        ``save_path=None`` restores nothing, as TensorFlow (so that
        ``ckpt.restore(manager.latest_checkpoint)`` starts from scratch the first time).

        Raises:
            mt.errors.NotFoundError: no such checkpoint.
            ValueError: entries missing, extra or of another shape or dtype (all listed).
        """
        if save_path is None:
            return CheckpointLoadStatus(None)
        if not os.path.exists(weights_path(save_path)):
            raise errors.NotFoundError(
                None, None, f"Checkpoint: no checkpoint at {os.fspath(save_path)!r} (looked for "
                f"{weights_path(save_path)!r}); pass the path that save() or write() returned, "
                "or mt.train.latest_checkpoint(directory)")
        present = keyed_variables(self._variables_with_paths(), "restore")
        later = {}   # key -> (the Module that will hold it, the attribute path below it)
        for key in read_headers(save_path, "restore"):
            if key not in present:
                place = _place_for(self, key)
                if place is None:   # (not reachable by attribute names: the usual error)
                    later = {}
                    break
                later[key] = place
        load_variables(save_path, present, "restore", ignore=later)
        if later:
            values = _read_arrays(save_path, later)
            for key, (module, path) in later.items():
                _give(module, path, values[key], key)
        return CheckpointLoadStatus(save_path)

    def restore(self, save_path, options=None):
        """As ``read`` (TensorFlow's ``restore`` also restores the save counter, as here)."""
        return self.read(save_path, options)

    def __repr__(self):
        names = [k for k in vars(self) if k not in ("name", "save_counter")]
        return f"<mt.train.Checkpoint {names}>"


def _place_for(root, key):
    """``(module, path)`` for a checkpoint key that ``root`` has no Variable for: the deepest
    Module on the key's path that exists, and the attribute names below it; None when a
    name on the way is not an attribute name or leads to something other than a Module."""
    names = [unquote(segment) for segment in key.split("/")]
    if not all(name.isidentifier() for name in names):
        return None
    module = root
    for i, name in enumerate(names):
        skip, _ = type(module)._walk_rules
        if name in skip:
            return None
        child = vars(module).get(name)
        if child is None:
            return module, tuple(names[i:])
        if not isinstance(child, Module):
            return None
        module = child
    return None


def _read_arrays(path, keys):
    import zipfile
    with zipfile.ZipFile(weights_path(path)) as zf:
        out = {}
        for key in keys:
            with zf.open(key + ".npy") as f:
                out[key] = np.lib.format.read_array(f, allow_pickle=False)
    return out


def _give(module, path, value, key):
    """Put a checkpoint value where ``path`` (attribute names below ``module``) leads: into
    the Variable there, down into the sub-Module there, or, if nothing is there yet, into
    ``module``'s delayed values."""
    item = vars(module).get(path[0])
    if item is None:
        module.__dict__.setdefault("_deferred_restore", {})[path] = (value, key)
    elif isinstance(item, Variable) and len(path) == 1:
        if tuple(item.shape) != value.shape or item.dtype != value.dtype:
            raise ValueError(
                f"restore: the checkpoint's value {key!r} has shape {value.shape} and dtype "
                f"{value.dtype.name}, but the Variable made for it at {module.name}.{path[0]} "
                f"has shape {tuple(item.shape)} and dtype {item.dtype.name}")
        item.assign(value)
    elif isinstance(item, Module) and len(path) > 1:
        _give(item, path[1:], value, key)
    else:
        raise ValueError(f"restore: the checkpoint's value {key!r} was kept for "
                         f"{module.name}.{'.'.join(path)}, but {path[0]} became a "
                         f"{type(item).__name__}, not a Variable or Module")


def restore_deferred(module, name, value):
    """Called by ``Module.__setattr__`` when ``module`` holds delayed checkpoint values: the
    ones for attribute ``name`` go to ``value`` (a Variable takes its value now)."""
    pending = module.__dict__["_deferred_restore"]
    mine = {path: item for path, item in pending.items() if path[0] == name}
    if not mine:
        return
    for path in mine:
        del pending[path]
    if not pending:
        del module.__dict__["_deferred_restore"]
    for path, (array, key) in mine.items():
        _give(module, path, array, key)


class CheckpointManager:
    """Numbered checkpoints in a directory, the newest few kept, as ``tf.train.CheckpointManager``.

    Args:
        checkpoint: the ``Checkpoint`` to save.
        directory: where the files go (created on the first save).
        max_to_keep: how many checkpoints to keep (older ones are deleted); None keeps all.
        checkpoint_name: the file prefix (``ckpt``, as TensorFlow).

    Attributes:
        latest_checkpoint: the path of the newest checkpoint, or None.
        checkpoints: the paths kept, oldest first.
    """

    def __init__(self, checkpoint, directory, max_to_keep, checkpoint_name="ckpt", **kwargs):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager expects a mt.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and int(max_to_keep) < 1:
            raise ValueError(f"max_to_keep must be a positive integer or None, got {max_to_keep}")
        self.checkpoint = checkpoint
        self.directory = os.fspath(directory)
        self.max_to_keep = None if max_to_keep is None else int(max_to_keep)
        self._prefix = os.path.join(self.directory, checkpoint_name)
        found = glob.glob(glob.escape(self._prefix) + "-*.npz")
        numbered = sorted((int(m.group(1)), f[:-4]) for f in found
                          if (m := re.search(r"-(\d+)\.npz$", f)))
        self._checkpoints = [path for _, path in numbered]

    @property
    def checkpoints(self):
        return list(self._checkpoints)

    @property
    def latest_checkpoint(self):
        return self._checkpoints[-1] if self._checkpoints else None

    def save(self, checkpoint_number=None, **kwargs):
        """Save the next numbered checkpoint, drop those past ``max_to_keep``; return its path."""
        os.makedirs(self.directory, exist_ok=True)
        if checkpoint_number is None:
            path = self.checkpoint.save(self._prefix)
        else:
            path = self.checkpoint.write(f"{self._prefix}-{int(checkpoint_number)}")
        if path in self._checkpoints:
            self._checkpoints.remove(path)
        self._checkpoints.append(path)
        while self.max_to_keep is not None and len(self._checkpoints) > self.max_to_keep:
            os.remove(weights_path(self._checkpoints.pop(0)))
        return path


def list_variables(ckpt_dir_or_file):
    """``[(key, shape), ...]`` of a checkpoint, sorted by key, as ``tf.train.list_variables``.

    Read from the array headers only. Accepts a checkpoint path or a directory (then the
    latest checkpoint in it).
    """
    path = _resolve(ckpt_dir_or_file)
    return sorted((key, list(shape)) for key, (shape, _) in read_headers(path).items())


def load_variable(ckpt_dir_or_file, name):
    """The value stored under ``name`` as a NumPy array, as ``tf.train.load_variable``."""
    import zipfile
    path = weights_path(_resolve(ckpt_dir_or_file))
    headers = read_headers(path)
    if name not in headers:
        raise ValueError(f"load_variable: {path!r} has no entry {name!r}; it has "
                         f"{sorted(headers)}")
    with zipfile.ZipFile(path) as zf, zf.open(name + ".npy") as f:
        return np.lib.format.read_array(f, allow_pickle=False)


def latest_checkpoint(checkpoint_dir):
    """The path of the newest ``<prefix>-<n>`` checkpoint in a directory, or None."""
    best, best_n = None, -1
    for file in glob.glob(os.path.join(os.fspath(checkpoint_dir), "*.npz")):
        match = re.search(r"-(\d+)\.npz$", file)
        if match and int(match.group(1)) > best_n:
            best, best_n = file[:-4], int(match.group(1))
    return best


def _resolve(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise errors.NotFoundError(None, None, f"no checkpoint in the directory {path!r}")
        return latest
    if not os.path.exists(weights_path(path)):
        raise errors.NotFoundError(None, None, f"no checkpoint at {path!r}")
    return path


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
