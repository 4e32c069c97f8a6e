"""Write the learner copy of each lesson that has exercises: the same notebook without the
solutions (``make exercises`` runs this).

Usage: python scripts/make_exercises.py [--check]

A lesson with exercises (``notebooks/NN_name.ipynb`` with ``### BEGIN SOLUTION`` in a code cell)
stores its reference solutions, so that the tests run them. Its learner copy,
``notebooks/exercises/NN_name.ipynb``, is made from it as nbgrader does:

- in every code cell, the lines from ``### BEGIN SOLUTION`` to ``### END SOLUTION`` become
  ``# YOUR CODE HERE`` and ``raise NotImplementedError(...)``, at the same indentation (so a
  teacher who grades with nbgrader can use the same markers);
- every output and execution count is cleared (the learner runs the cells);
- a note under the title says what this copy is.

The lesson's check cells (tagged ``exercise-check``) then fail with an ``AssertionError`` that
names the unwritten gradient until the learner fills the gap in; ``tests/test_exercises.py``
runs the learner copy and checks exactly that.

``--check`` writes nothing: it exits with status 1 if a learner copy is missing or differs from
what this script would write (CI uses it through the tests).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXERCISES = NOTEBOOKS / "exercises"
BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$")
END = re.compile(r"^\s*### END SOLUTION\s*$")
PLACEHOLDER = 'raise NotImplementedError("your code here")'
NOTE_ID = "learner-copy-note"
NOTE = (
    "**This is the exercise copy of the lesson**, made by `make exercises` from "
    "`notebooks/{name}` (which holds worked solutions). In each exercise, replace the lines\n"
    "`# YOUR CODE HERE` / `raise NotImplementedError(...)` with your code, then run the check "
    "cell below it: it says which op's gradient is still wrong, and draws it in red."
)


def strip_solutions(source: str, where: str = "cell") -> str:
    """``source`` with each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block replaced by
    ``# YOUR CODE HERE`` and ``raise NotImplementedError(...)`` at the block's indentation.

    Raises:
        ValueError: a BEGIN without its END, or an END without a BEGIN (``where`` names it).

    >>> print(strip_solutions("def f(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n"
    ...                       "    ### END SOLUTION\\n"))
    def f(x):
        # YOUR CODE HERE
        raise NotImplementedError("your code here")
    <BLANKLINE>
    """
    out, indent = [], None
    for line in source.split("\n"):
        begin = BEGIN.match(line)
        if begin:
            if indent is not None:
                raise ValueError(f"{where}: a second '### BEGIN SOLUTION' before the '### END "
                                 "SOLUTION' of the first")
            indent = begin.group(1)
            out += [f"{indent}# YOUR CODE HERE", f"{indent}{PLACEHOLDER}"]
        elif END.match(line):
            if indent is None:
                raise ValueError(f"{where}: '### END SOLUTION' without a '### BEGIN SOLUTION'")
            indent = None
        elif indent is None:
            out.append(line)
    if indent is not None:
        raise ValueError(f"{where}: '### BEGIN SOLUTION' without its '### END SOLUTION'")
    return "\n".join(out)


def has_solutions(nb) -> bool:
    """True if a code cell of ``nb`` has a ``### BEGIN SOLUTION`` line."""
    return any(cell.cell_type == "code" and any(BEGIN.match(line)
                                                for line in cell.source.split("\n"))
               for cell in nb.cells)


def learner_copy(path: Path):
    """The learner copy of the lesson at ``path`` (an ``nbformat`` notebook)."""
    nb = nbformat.read(path, as_version=4)
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.source = strip_solutions(cell.source, f"{path.name}, cell {k + 1}")
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    note = nbformat.v4.new_markdown_cell(NOTE.format(name=path.name))
    note["id"] = NOTE_ID
    nb.cells.insert(1, note)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)
    nbformat.validate(nb)
    return nb


def lessons_with_exercises() -> list:
    found = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if has_solutions(nb):
            found.append(path)
    return found


def main(argv: list) -> int:
    check = "--check" in argv
    stale = []
    for path in lessons_with_exercises():
        target = EXERCISES / path.name
        text = nbformat.writes(learner_copy(path)) + "\n"
        if check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(target)
            continue
        EXERCISES.mkdir(exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"make_exercises: wrote {target.relative_to(ROOT)}")
    if stale:
        print("make_exercises: out of date (run `make exercises`): "
              + ", ".join(str(p.relative_to(ROOT)) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
