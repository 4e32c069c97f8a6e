"""One gradient rule per op, declared once beside its forward; the walk reads like the
textbook loop (issue 31, item 2).

- every op type in the registry has exactly one entry, read through the registry's public
  functions, and the package's source registers each op type once, with ``RegisterGradient``
  (or ``no_gradient``), in the module of the op's forward: no second registration route
  (a NumPy twin, a fast-path table) exists;
- ``backward_steps`` is at most 60 lines of code, docstring excluded;
- ``engine/backward.py`` imports nothing above the engine (no ops, no debugging).
"""

import ast
import inspect
import pathlib

import pytest

import minitape as mt
from minitape.engine import backward, recording, registry

PACKAGE = pathlib.Path(mt.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def _registrations():
    """``(op type, how, module path)`` for every ``RegisterGradient("T", ...)`` and
    ``no_gradient("T")`` call with a literal op type in the package's source."""
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            first = node.args[0]
            if name in ("RegisterGradient", "no_gradient") and isinstance(first, ast.Constant) \
                    and isinstance(first.value, str):
                found.append((first.value, name, path))
    return found


def test_every_op_type_has_exactly_one_rule():
    types = registry.registered_op_types()
    assert len(types) == len(set(types)) > 50
    for op_type in types:
        rule = registry.lookup(op_type)   # one function, or None: "not differentiable"
        assert rule is None or callable(rule), op_type
    # Every built-in entry comes from one registration in the source, and every
    # registration in the source is an entry (no op type registered twice).
    registrations = _registrations()
    registered = [op_type for op_type, _, _ in registrations]
    twice = {t for t in registered if registered.count(t) > 1}
    assert not twice, f"op types registered more than once: {sorted(twice)}"
    assert set(registered) <= set(types)


def test_each_rule_is_declared_in_the_module_of_its_forward():
    checked = 0
    for op_type in registry.registered_op_types():
        rule, forward = registry.lookup(op_type), registry.lookup_forward(op_type)
        if rule is None or forward is None or not rule.__module__.startswith("minitape."):
            continue
        assert rule.__module__ == forward.__module__, op_type
        checked += 1
    assert checked > 50


def test_no_second_registry_or_twin_rules():
    # The registry module holds one table of rules (and the forwards, which check_tape uses,
    # and the set of rules that accept batch axes): nothing else maps op types to functions.
    tables = {name for name, value in vars(registry).items()
              if isinstance(value, dict) and not name.startswith("__")}
    assert tables == {"_registry", "_forwards"}
    # ... and no module of the package has a second route to a gradient rule.
    forbidden = ("register_numpy_gradient", "numpy_gradients", "as_arrays",
                 "unbroadcast_values", "_grad_numpy")
    for path in SOURCES:
        text = path.read_text()
        for word in forbidden:
            assert word not in text, f"{path.relative_to(PACKAGE)} mentions {word}"


def _code_lines(function):
    """Lines of ``function``'s body after its docstring that hold code (not blank, not only
    a comment)."""
    source = inspect.getsource(function)
    tree = ast.parse(source)
    (node,) = tree.body
    body = node.body
    start = body[1].lineno if isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) else body[0].lineno
    lines = source.splitlines()[start - 1:node.end_lineno]
    return [line for line in lines if line.strip() and not line.strip().startswith("#")]


def test_the_walk_is_at_most_60_lines():
    # Its code, and even every line of it, signature, comments and blank lines included
    # (only the docstring left out).
    lines = _code_lines(backward.backward_steps)
    assert 20 < len(lines) <= 60, len(lines)
    node = ast.parse(inspect.getsource(backward.backward_steps)).body[0]
    docstring = node.body[0]
    assert node.end_lineno - (docstring.end_lineno - docstring.lineno + 1) <= 60


@pytest.mark.parametrize("function", [backward.backward_steps, backward.call_gradient])
def test_code_lines_counts_code_only(function):
    # (the counter itself: fewer lines than the source, more than the docstring's absence)
    assert 0 < len(_code_lines(function)) < len(inspect.getsource(function).splitlines())


def test_the_walk_imports_nothing_above_the_engine():
    tree = ast.parse(pathlib.Path(backward.__file__).read_text())
    imported = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
    allowed = {"__future__", "operator", "numpy", ".", ".tensor", "..dtypes"}
    assert set(imported) <= allowed, set(imported) - allowed


def test_the_layers_above_install_what_the_walk_needs():
    from minitape import debugging
    from minitape.ops import array_ops
    debugging.enable_check_numerics()
    try:
        assert recording.check_numerics.check_gradients is debugging.check_gradients
    finally:
        debugging.disable_check_numerics()
    assert recording.check_numerics is False
    assert backward.call_per_row is array_ops.call_per_row
