"""The tools use the engine's public API (issue 31 item 4).

The drawings, player, checker, explorers, optimizers, Keras layers and every other module outside
``minitape/engine/`` and ``minitape/ops/`` read the engine through its documented public
methods and attributes (``t.numpy()`` or ``np.asarray(t)``, the read-only array view; ``t.id``;
``t.shape``, ``t.dtype``; ``op.saved``; ``Variable.value``, ``assign``; the tape's
``operations``, ``add_observer``, ...), not through its private ones. An AST scan finds what is
left:

- ``x._name`` (read or written; not ``self._name``/``cls._name``) where ``_name`` is a private
  attribute or method of an engine class (a slot, a ``self._name = ...`` in an engine method,
  or a ``def _name``);
- ``from ..engine.tape import _name``: a module-private name imported from the engine;
- ``recording._name``: a private global of an engine module reached through the module.

IPython's display protocol (``_repr_mimebundle_``, ``_repr_html_``, ...) is public by that
protocol's convention, and is not counted.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import textwrap


PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "minitape"
ENGINE = PACKAGE / "engine"
ENGINE_MODULES = {p.stem for p in ENGINE.glob("*.py") if p.stem != "__init__"}

# Reads the scan finds that are not the engine's: another object's own private field that
# happens to share a name with one of the engine's. (file, expression) -> why.
NOT_THE_ENGINE = {
    ("keras/saving.py", "model._inputs"):
        "a Keras Functional model's own nested inputs (keras/functional.py), not Operation's",
    ("keras/saving.py", "model._outputs"):
        "a Keras Functional model's own nested outputs (keras/functional.py), not Operation's",
}

# The engine-private reads that remain, (file, attribute) -> (how many, why). At most 10 in all.
ALLOWED = {}
AT_MOST = 10


def _is_private(name):
    return (name.startswith("_") and not name.startswith("__")
            and not (name.startswith(("_repr_", "_ipython_")) and name.endswith("_")))


def engine_private_names():
    """(attributes, globals): the private attribute and method names of the engine's classes,
    and the private module-level names of its modules."""
    attributes, module_globals = set(), set()
    for path in ENGINE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and _is_private(node.name):
                module_globals.add(node.name)
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            module_globals.update(t.id for t in targets
                                  if isinstance(t, ast.Name) and _is_private(t.id))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and _is_private(item.name):
                        attributes.add(item.name)
                    if isinstance(item, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == "__slots__" for t in item.targets):
                        attributes.update(e.value for e in ast.walk(item.value)
                                          if isinstance(e, ast.Constant)
                                          and isinstance(e.value, str) and _is_private(e.value))
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and _is_private(node.attr)):
                attributes.add(node.attr)
    return attributes, module_globals


def _absolute(module, level, package):
    if not level:
        return module or ""
    parts = package.split(".")
    base = parts[:len(parts) - level + 1]
    return ".".join(base + ([module] if module else []))


def _is_engine_module(name):
    # minitape.engine.tape, and the old paths kept as aliases (minitape.tape is the same module)
    parts = name.split(".")
    return (len(parts) == 3 and parts[:2] == ["minitape", "engine"]) or \
        (len(parts) == 2 and parts[0] == "minitape" and parts[1] in ENGINE_MODULES)


def private_reads(source, package, names=None):
    """The engine-private reads in one module's ``source``: a list of (line, expression).
    ``package`` is the module's package (``minitape.viz`` for viz/draw.py)."""
    attributes, module_globals = names or engine_private_names()
    tree = ast.parse(source)
    aliases = set()     # local names bound to an engine module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, package)
            for alias in node.names:
                if _is_engine_module(f"{module}.{alias.name}"):
                    aliases.add(alias.asname or alias.name)
                elif _is_engine_module(module) and _is_private(alias.name):
                    found.append((node.lineno, f"from {module} import {alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_engine_module(alias.name) and alias.asname:
                    aliases.add(alias.asname)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        on_module = (isinstance(owner, ast.Name) and owner.id in aliases) or (
            isinstance(owner, ast.Attribute) and owner.attr in ENGINE_MODULES)
        if on_module or node.attr in attributes:
            found.append((node.lineno, ast.unparse(node)))
    return found


def scan():
    """{file relative to minitape/: [(line, expression)]} for every module outside the engine
    and the ops, without the reads listed in NOT_THE_ENGINE."""
    names = engine_private_names()
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("engine/", "ops/")):
            continue
        package = ".".join(("minitape", *path.relative_to(PACKAGE).parent.parts))
        reads = [(line, text) for line, text in private_reads(path.read_text(), package, names)
                 if (rel, text) not in NOT_THE_ENGINE]
        if reads:
            out[rel] = reads
    return out


def _by_attribute(reads):
    counts = collections.Counter()
    for rel, found in reads.items():
        for _, text in found:
            counts[(rel, text.rsplit(".", 1)[-1].split()[-1])] += 1
    return counts


# -- the scan catches what it should -------------------------------------------------------------

def test_scan_catches_a_private_read():
    source = textwrap.dedent("""
        import numpy as np
        from ..engine import recording
        from ..engine.tensor import Tensor, _read_only_view
        from .. import tape as old_path

        def f(t, op, tape, self):
            a = t._value                 # counted
            b = np.asarray(t), t.id      # public
            c = self._value              # its own field: not counted
            d = recording._NOT_DIFFERENTIABLE   # a private global of an engine module
            op._inputs = None            # a write counts too
            e = old_path._release        # through the old import path
            return t._repr_mimebundle_(), t.__class__   # protocols: not counted
    """)
    found = sorted(text for _, text in private_reads(source, "minitape.viz"))
    assert found == sorted(["from minitape.engine.tensor import _read_only_view", "t._value",
                            "recording._NOT_DIFFERENTIABLE", "op._inputs", "old_path._release"])


def test_engine_private_names_are_found():
    attributes, module_globals = engine_private_names()
    assert {"_value", "_shape", "_dtype", "_store"} <= attributes       # Tensor, Variable
    assert "_read_only_view" in module_globals


# -- the tools -----------------------------------------------------------------------------------

def test_tools_read_the_engine_only_through_allowed_private_reads():
    counts = _by_attribute(scan())
    unlisted = {key: n for key, n in counts.items() if key not in ALLOWED}
    assert not unlisted, (
        f"engine-private reads outside the engine and the ops: {unlisted}; use the public API "
        f"(np.asarray(t), t.numpy(), t.id, t.shape, t.dtype, op.saved, Variable.value, "
        f"assign, ...) or add a small documented public method to the engine")
    grown = {key: (n, ALLOWED[key][0]) for key, n in counts.items() if n > ALLOWED[key][0]}
    assert not grown, f"more private reads than allowed (found, allowed): {grown}"


def test_at_most_ten_engine_private_reads_counting_the_record():
    total = sum(_by_attribute(scan()).values())
    assert total <= AT_MOST, f"{total} engine-private reads outside the engine and the ops"
