"""Write the learner copy of each lesson that has exercises, with nbgrader (``make exercises``).

Usage: python scripts/make_exercises.py [--check]

A lesson with exercises (``notebooks/NN_name.ipynb`` with cells that carry nbgrader's
``solution`` metadata) is nbgrader *source*: its solution cells hold the reference solution
between nbgrader's ``### BEGIN SOLUTION`` and ``### END SOLUTION`` lines, and its check cells
(tagged ``exercise-check``) are nbgrader's autograded test cells, one point each. The stored
lesson keeps the solutions, so that nbval runs and checks them.

Its learner copy, ``notebooks/exercises/NN_name.ipynb``, is what ``nbgrader
generate_assignment`` releases: each solution region becomes ``# YOUR CODE HERE`` and
``raise NotImplementedError()``, outputs are cleared, check cells are locked and carry
nbgrader's checksums, so that a teacher can collect and ``nbgrader autograde`` the learners'
copies. This script runs nbgrader in a scratch course folder (``--no-db``: no gradebook) and
drops the one piece of metadata that belongs to the source, jupytext's.

``--check`` writes nothing: it exits with status 1 if a learner copy is missing or differs from
what nbgrader makes now (the tests use it). Needs nbgrader (``pip install -e '.[teach]'``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXERCISES = NOTEBOOKS / "exercises"


def has_solutions(nb) -> bool:
    """True if a cell of ``nb`` is an nbgrader solution cell."""
    return any(cell.metadata.get("nbgrader", {}).get("solution") for cell in nb.cells)


def lessons_with_exercises() -> list:
    """The lessons (``notebooks/NN_name.ipynb``) that have nbgrader solution cells."""
    return [path for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
            if has_solutions(nbformat.read(path, as_version=4))]


def nbgrader(args, course: Path) -> None:
    """Run ``nbgrader ARGS`` on the course folder ``course``.

    nbgrader runs helper programs (``alembic``) from its environment's ``bin``, which is put
    first on PATH. Raises ``RuntimeError`` with nbgrader's output if it fails.
    """
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args,
                           f"--CourseDirectory.root={course}"],
                          cwd=course, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")


def learner_copy(path: Path):
    """The learner copy of the lesson at ``path``: nbgrader's release of it (an ``nbformat``
    notebook).

    Raises:
        RuntimeError: nbgrader refused the lesson (e.g. a ``BEGIN SOLUTION`` line with no
            ``END SOLUTION``, or a solution region in a cell without nbgrader's metadata).
    """
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp)
        assignment = f"lesson{path.stem[:2]}"
        (course / "source" / assignment).mkdir(parents=True)
        shutil.copyfile(path, course / "source" / assignment / path.name)
        nbgrader(["generate_assignment", assignment, "--no-db", "--force"], course)
        nb = nbformat.read(course / "release" / assignment / path.name, as_version=4)
    nb.metadata.pop("jupytext", None)
    nb.metadata.pop("widgets", None)
    nbformat.validate(nb)
    return nb


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
