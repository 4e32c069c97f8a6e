"""``Module``: a container that finds the Variables in its attributes, as ``tf.Module``.

It also holds the weights file: ``save_weights`` / ``load_weights`` write and read every
Variable of a Module tree in one ``.npz`` file (a zip of ``.npy`` arrays, no pickle), keyed by
the Variable's *object path*: the attribute names from the Module down to it, joined by ``/``
(``layers/0/kernel``), each name escaped so that keys never collide (``%`` and ``/`` inside a
name, and characters a zip name cannot hold, are written as ``%XX``). Loading checks every
key, shape and dtype from the arrays' headers before it reads any data, and assigns only when
everything matches: all or nothing.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import threading
import zipfile

import numpy as np

from .engine.recording import next_seq
from .engine.tensor import Variable

_name_counts: dict = {}
# Modules may be built on several threads at once (a data loader, a test runner): the
# read-then-increment of a count must not interleave, or two layers get the same name.
_name_lock = threading.Lock()


# Modules holding losses from ``add_loss`` (``minitape.layers.LayerMixin``): the outermost
# call of a Module clears those of its own tree first, as Keras clears a layer's losses at
# the start of each outermost call; the common case, none, costs one test per call.
with_losses: list = []

# Keras's symbolic inputs (``mt.keras.Input``): set by ``minitape.keras.functional`` to
# ``(KerasTensor, call_on_symbolic)``; a Module called on one records a node of a functional
# model instead of computing.
symbolic = (None, None)
# Keras's masks: set by ``minitape.keras.masking`` to its ``masked_call(module, call, args,
# kwargs)``, which runs a layer call passing masks on as Keras 3 does.
masked_call = None


class _Calls(threading.local):
    def __init__(self):
        self.running = ()    # ((module, stamp), ...): this thread's Module calls, outermost first


_calls = _Calls()

calls_running: list = []
"""Every ``module_scope`` running now, in any thread (``module_calls()`` has this thread's):
an op recorded outside any Module call, the common case, need not read the thread's state."""


def module_calls():
    """``((module, stamp), ...)``: the Module calls running now in this thread, outermost
    first, each with a stamp of the global sequence (``()`` outside any). ``mt.viz`` notes
    it for every recorded op, so a drawing can show each layer call as one box."""
    return _calls.running


class module_scope:
    """Context manager: what runs inside it belongs to one call of ``module``.

    ``Module`` wraps every subclass's ``__call__`` in it (``module_calls`` says which calls
    run). Each call gets a new stamp.
    """

    __slots__ = ("module", "saved")

    def __init__(self, module):
        self.module = module

    def __enter__(self):
        self.saved = _calls.running
        _calls.running = self.saved + ((self.module, next_seq()),)
        calls_running.append(self)

    def __exit__(self, *exc):
        _calls.running = self.saved
        calls_running.remove(self)
        return False


def _in_module_scope(call):
    """``call`` (a ``__call__``), run inside ``module_scope(self)``."""
    @functools.wraps(call)
    def __call__(self, *args, **kwargs):
        if args and symbolic[0] is not None:
            first = args[0][0] if isinstance(args[0], (list, tuple)) and args[0] else args[0]
            if type(first) is symbolic[0]:
                return symbolic[1](self, *args, **kwargs)
        if with_losses and not _calls.running:
            clear_losses(self)
        with module_scope(self):
            if masked_call is not None and args:
                return masked_call(self, call, args, kwargs)
            return call(self, *args, **kwargs)
    __call__._in_module_scope = True
    return __call__


def clear_losses(module):
    """Forget the ``add_loss`` losses of ``module`` and of every Module inside it."""
    tree = {id(module)} | {id(m) for m in module.submodules}
    for m in list(with_losses):
        if id(m) in tree:
            vars(m).get("_losses", []).clear()
            with_losses.remove(m)


def _unique_name(cls):
    return unique_name(re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower())


def unique_name(base):
    """``base``, then ``base_1``, ``base_2``, ... (Keras's default layer names); thread-safe."""
    with _name_lock:
        count = _name_counts.get(base, 0)
        _name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


class Module:
    """Collects Variables and sub-Modules from its attributes (lists, tuples and dicts too).

    Order is the order in which the attributes were assigned. As ``tf.Module``. A Module
    that contains itself (directly or through a child) is walked once: each Variable and
    each sub-Module is listed once.

    Attributes:
        name: given, or made unique from the class name (``dense``, ``dense_1``, ...).
        variables, trainable_variables: tuples of Variables, no duplicates.
        submodules: tuple of every Module inside, depth first.
    """

    # Attributes that hold no state of this Module (subclasses extend it: a Keras model's
    # optimizer, for one, is not part of the model's variables).
    _walk_skip: tuple = ("name",)
    # Attributes walked after all the others (a Keras layer's list of add_weight Variables).
    _walk_last: tuple = ()
    # Both, gathered over the class and its bases when the class is made (``_walk_rules``,
    # below; ``__init_subclass__`` for each subclass): the walk reads them for every Module
    # it enters.
    _walk_rules: tuple

    def __init__(self, name=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{type(self).__name__}: name must be a str or None, got "
                            f"{type(name).__name__} {name!r:.40}; pass e.g. name='encoder'")
        self.name = name if name is not None else _unique_name(type(self))

    def __init_subclass__(cls, **kwargs):
        # Every call of a Module runs inside ``module_scope(self)``, so the ops it records
        # know which layer call made them: drawings can show each call as one box
        # (``draw_tape(tape, group="module")``). A subclass's own ``__call__`` is wrapped once.
        super().__init_subclass__(**kwargs)
        cls._walk_rules = _walk_rules(cls)
        call = cls.__dict__.get("__call__")
        if call is not None and not getattr(call, "_in_module_scope", False):
            cls.__call__ = _in_module_scope(call)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if "_deferred_restore" in self.__dict__:
            # A checkpoint restored before this Variable (or sub-Module) existed left its
            # value here: TensorFlow's delayed restoration (``minitape/train.py``).
            from .train import restore_deferred
            restore_deferred(self, name, value)

    def _walk(self):
        """``[(path, item), ...]`` for every Variable and Module below, in attribute order.

        ``path`` is a tuple of attribute names, dict keys and list indices. Each Module is
        entered once, so a Module that contains itself does not loop. The walk runs again
        on every call (nothing is cached), so a Variable assigned to an attribute later is
        found, as in ``tf.Module``.
        """
        found = []
        _walk_value((), self, {id(self)}, found, top=True)
        return found

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
        """The trainable Variables, less those of a sub-Module frozen with ``trainable = False``."""
        # One walk for both the Variables and the sub-Modules: a training loop reads this
        # twice a step (``tape.gradient`` and ``apply_gradients``).
        seen, variables, frozen = {id(self)}, [], set()
        for _, item in self._walk():
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Variable):
                variables.append(item)
            elif getattr(item, "trainable", True) is False:   # a frozen sub-Module
                frozen.update(id(v) for v in item.variables)
        return tuple(v for v in variables if v.trainable and id(v) not in frozen)

    @property
    def non_trainable_variables(self):
        """The other Variables: those made with ``trainable=False``, and a frozen sub-Module's."""
        trainable = {id(v) for v in self.trainable_variables}
        return tuple(v for v in self.variables if id(v) not in trainable)

    @property
    def submodules(self):
        seen, out = {id(self)}, []
        for _, item in self._walk():
            if isinstance(item, Module) and id(item) not in seen:
                seen.add(id(item))
                out.append(item)
        return tuple(out)

    def save_weights(self, path):
        """Write every Variable to the ``.npz`` file ``path``, keyed by object path.

        Args:
            path: a file name, with or without ``.npz`` (``"w"`` writes ``w.npz``;
                ``load_weights("w")`` reads it back).

        Returns:
            The path written, as a string ending in ``.npz``.

        Raises:
            ValueError: two Variables would get the same key (names both).

        The file is written to a temporary name and then renamed, so a failed save never
        leaves half a file. As ``tf.keras.Model.save_weights``, in NumPy's format.

        >>> import minitape as mt, tempfile, os
        >>> m = mt.Module(); m.scale = mt.Variable(2.0)
        >>> path = m.save_weights(os.path.join(tempfile.mkdtemp(), "w"))
        >>> path.endswith("w.npz")
        True
        """
        return save_variables(path, self._variables_with_paths(), "save_weights")

    def load_weights(self, path):
        """Read Variables saved by ``save_weights`` back into this Module, all or nothing.

        Every key, shape and dtype is checked from the file's array headers first (no data
        is read before that); only when all match are the Variables assigned.

        Args:
            path: the path given to ``save_weights`` (with or without ``.npz``).

        Raises:
            FileNotFoundError: no such file.
            ValueError: keys missing or extra (both listed), a shape or dtype differs (build
                lazily-built layers first by calling the model once), or the file is not a
                weights file (an entry that is not a plain ``.npy`` array, or holds Python
                objects: minitape never unpickles).
        """
        load_variables(path, self._variables_with_paths(), "load_weights")

    def __repr__(self):
        return f"<{type(self).__name__} '{self.name}' variables={len(self.variables)}>"


def _walk_value(path, value, entered, found, top=False):
    """Append ``(path, item)`` to ``found`` for ``value`` and everything below it
    (``Module._walk``). A plain recursion into a list: a generator at every level, each
    item passed up through all of them, took twice as long."""
    if isinstance(value, Variable):
        found.append((path, value))
    elif isinstance(value, Module):
        if not top:
            found.append((path, value))
            if id(value) in entered:
                return
            entered.add(id(value))
        skip, last = type(value)._walk_rules
        attrs = vars(value)
        keys = attrs                    # (in the order the attributes were assigned)
        if last:
            keys = [k for k in attrs if k not in last] + [k for k in attrs if k in last]
        for key in keys:
            if key in skip or key.startswith("__"):
                continue
            v = attrs[key]
            if isinstance(v, _WALKED):   # (a number, a string, a function: nothing below)
                _walk_value(path + (key,), v, entered, found)
    elif isinstance(value, (dict, list, tuple)):
        if id(value) in entered:   # a list that contains itself
            return
        entered.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(v, _WALKED):
                _walk_value(path + (k,), v, entered, found)


# What ``_walk_value`` looks into: anything else holds no Variable.
_WALKED = (Variable, Module, dict, list, tuple)


def _walk_rules(cls):
    """``(skip, last)``: the ``_walk_skip`` and ``_walk_last`` names of ``cls`` and all its
    bases, as frozensets (``Module.__init_subclass__`` stores them on each new class)."""
    skip, last = set(), set()
    for c in cls.__mro__:
        skip.update(getattr(c, "_walk_skip", ()))
        last.update(getattr(c, "_walk_last", ()))
    return frozenset(skip), frozenset(last)


Module._walk_rules = _walk_rules(Module)


# -- the weights file -----------------------------------------------------------------------

def weights_path(path) -> str:
    """``path`` as a string ending in ``.npz`` (the file ``save_weights(path)`` writes)."""
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


def _escape(segment) -> str:
    text = segment if isinstance(segment, str) else str(segment)
    if text in ("", ".", ".."):
        return "%" + text.replace(".", "%2E") + "%"  # never a real escape: unique
    out = []
    for ch in text:
        if ch in "%/\\" or not ch.isprintable():
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        else:
            out.append(ch)
    return "".join(out)


def variable_key(path) -> str:
    """The file key of an object path (a tuple of names): escaped names joined by ``/``."""
    return "/".join(_escape(seg) for seg in path)


def _show(path) -> str:
    """An object path for a message: ``layers[0].kernel``, ``d['a/b']``."""
    text = ""
    for seg in path:
        text += f".{seg}" if isinstance(seg, str) and seg.isidentifier() else f"[{seg!r}]"
    return text.lstrip(".")


def keyed_variables(items, what):
    """``{key: Variable}`` from ``(path, Variable)`` pairs; two paths with one key is an error."""
    out, where = {}, {}
    for path, var in items:
        key = variable_key(path)
        if key in out:
            raise ValueError(f"{what}: the Variables at {_show(where[key])} and {_show(path)} "
                             f"would both be saved under the key {key!r}; rename one of the "
                             "attributes (or dict keys) so that they differ")
        out[key], where[key] = var, path
    return out


def save_variables(path, items, what="save_weights") -> str:
    """Write ``(path, Variable)`` pairs (or a ``{key: Variable}`` dict) to a ``.npz`` file."""
    variables = items if isinstance(items, dict) else keyed_variables(items, what)
    target = weights_path(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".minitape-", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED,
                                                       allowZip64=True) as zf:
            for key, var in variables.items():
                with zf.open(key + ".npy", "w", force_zip64=True) as entry:
                    np.lib.format.write_array(entry, np.asarray(var), allow_pickle=False)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return target


def read_headers(path, what="load_weights"):
    """``{key: (shape, dtype)}`` of a weights file, from the array headers only."""
    target = weights_path(path)
    if not os.path.exists(target):
        raise FileNotFoundError(f"{what}: no weights file {target!r} (from the path {path!r}); "
                                "pass the path that was given to save_weights")
    headers = {}
    try:
        with zipfile.ZipFile(target) as zf:
            for info in zf.infolist():
                headers[_key_of(info, target, what)] = _header(zf, info, target, what)
    except zipfile.BadZipFile as e:
        raise ValueError(f"{what}: {target!r} is not a weights file (.npz): {e}") from None
    return headers


def _key_of(info, target, what):
    if not info.filename.endswith(".npy"):
        raise ValueError(f"{what}: {target!r} holds {info.filename!r}, which is not a .npy array; "
                         "is it a weights file written by save_weights?")
    return info.filename[:-4]


def _header(zf, info, target, what):
    with zf.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"unsupported .npy format version {version}")
        except ValueError as e:
            raise ValueError(f"{what}: the entry {info.filename!r} of {target!r} is not a "
                             f"readable .npy array: {e}") from None
    if dtype.hasobject:
        raise ValueError(f"{what}: the entry {info.filename!r} of {target!r} holds Python "
                         "objects; minitape loads numbers only and never unpickles")
    return tuple(shape), dtype


def load_variables(path, items, what="load_weights", ignore=()):
    """Check a weights file against ``(path, Variable)`` pairs (or a dict), then assign all.

    ``ignore``: keys of the file that are not for these Variables (a checkpoint's delayed
    restoration keeps them for Variables made later); they are not counted as extra."""
    variables = items if isinstance(items, dict) else keyed_variables(items, what)
    target = weights_path(path)
    headers = read_headers(path, what)
    missing = [k for k in variables if k not in headers]
    extra = [k for k in headers if k not in variables and k not in ignore]
    problems = []
    if missing:
        entries = "entry" if len(missing) == 1 else "entries"
        problems.append(f"{target} has no {entries} {', '.join(map(repr, missing))} (it has "
                        f"{sorted(headers)}); was it saved from this module? A layer that builds "
                        "on its first call must be called once before loading")
    if extra:
        problems.append(f"{target} has entries that this module lacks: {extra}"
                        + ("" if missing else "; a layer that builds on its first call must be "
                           "called once before loading"))
    for key, var in variables.items():
        if key in headers:
            shape, dtype = headers[key]
            if shape != var.shape:
                problems.append(f"{key!r} has shape {shape} in {target} but {var.shape} here")
            elif dtype != var.dtype:
                problems.append(f"{key!r} has dtype {dtype.name} in {target} but "
                                f"{var.dtype.name} here")
    if problems:
        raise ValueError(f"{what}: nothing was loaded: " + "; ".join(problems))
    values = {}
    with zipfile.ZipFile(target) as zf:
        for key in variables:
            with zf.open(key + ".npy") as f:
                values[key] = np.lib.format.read_array(f, allow_pickle=False)
    for key, var in variables.items():   # everything checked and read: now assign
        var.assign(values[key])
