"""The engine's layout: small, documented, below everything else, and free of import circles.

What is checked (issue 31):

- ``lint-imports`` (import-linter) keeps the layers written in ``pyproject.toml``: the leaf
  helpers (dtypes, nest, errors, ...), then ``minitape/engine``, then ``minitape/ops``, then
  everything else; late imports inside functions count;
- ``minitape/engine/`` holds at most ``ENGINE_BUDGET`` lines of code (docstrings, comments and
  blank lines not counted), and each of its modules starts with a docstring;
- the tape's private fields and methods are used only in ``engine/tape.py``;
- no import circle in the package is larger than three modules (grimp's import graph, which
  import-linter builds too: late imports inside functions and ``import minitape as mt``
  included).
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "minitape" / "engine"
ENGINE_BUDGET = 1000
MAX_CIRCLE = 3


def code_lines(path: Path) -> int:
    """Lines that hold code: not blank, not only a comment, not part of a docstring (of the
    module, a class or a function)."""
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(n for n in range(token.start[0], token.end[0] + 1)
                         if n not in docstrings)
    return len(lines)


def test_code_lines_counts_only_code(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""Doc\nstring."""\n\n# a comment\ndef f(x):\n    """Doc."""\n'
                 '    return (x +\n            1)  # two lines of code\n')
    assert code_lines(f) == 3


def test_the_layers_hold():
    """``lint-imports`` with the contract in pyproject.toml (run as CI runs it)."""
    script = Path(sys.executable).with_name("lint-imports")
    command = [str(script)] if script.exists() else ["lint-imports"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_the_engine_fits_its_line_budget():
    counts = {p.name: code_lines(p) for p in sorted(ENGINE.glob("*.py"))}
    assert sum(counts.values()) <= ENGINE_BUDGET, counts


def test_every_engine_module_says_its_part_of_the_algorithm():
    for path in sorted(ENGINE.glob("*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring and len(docstring) > 80, f"{path.name} needs a module docstring"


def test_only_the_tape_touches_the_tapes_private_state():
    tape_source = (ENGINE / "tape.py").read_text()
    private = set(re.findall(r"self\.(_[a-z]\w*)\b", tape_source))
    assert {"_ops", "_tracked", "_persistent", "_watched"} <= private
    for path in sorted(ENGINE.glob("*.py")):
        if path.name == "tape.py":
            continue
        used = set(re.findall(r"\btape\.(_[a-z]\w*)\b", path.read_text()))
        assert not used, f"{path.name} reads the tape's private {sorted(used)}"


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("minitape", cache_dir=None)


def test_the_engine_imports_no_module_above_it(graph):
    below = {"minitape.dtypes", "minitape.nest", "minitape.errors", "minitape._tf_names",
             "minitape.tensor_shape"}
    for module in sorted(graph.find_descendants("minitape.engine") | {"minitape.engine"}):
        for imported in graph.find_modules_directly_imported_by(module):
            assert imported.startswith("minitape.engine") or imported in below, \
                f"{module} imports {imported}"


def strongly_connected_components(graph):
    """Tarjan's algorithm, iterative: the sets of modules that import each other in a circle."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def test_strongly_connected_components_finds_circles():
    class Graph:
        modules = {"a", "b", "c", "d", "e"}
        imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": set()}

        def find_modules_directly_imported_by(self, m):
            return self.imports[m]

    components = sorted(sorted(c) for c in strongly_connected_components(Graph()) if len(c) > 1)
    assert components == [["a", "b", "c"]]


# Circles outside the engine and the ops that another change of issue 31 removes (the tools'
# late ``import minitape as mt``): while one remains, the check below is an expected failure.
KNOWN_OUTSIDE = ("minitape.viz", "minitape.keras")


def test_no_import_circle_is_larger_than_three_modules(graph):
    circles = [sorted(c) for c in strongly_connected_components(graph) if len(c) > MAX_CIRCLE]
    assert not circles, circles
