"""Lesson 06's exercises as nbgrader source, and their learner copy (``make exercises``).

The solved lesson runs under nbval (``make test``). Here: its cells carry valid nbgrader
metadata and the source keeps it; the learner copy is nbgrader's release, up to date, holds no
solution, and running it makes every check cell fail with the intended message; and nbgrader's
round trip, ``generate_assignment`` then ``autograde``, gives the reference solutions full marks
and the untouched learner copy zero. The nbgrader tests are skipped where nbgrader is not
installed (``pip install -e '.[teach]'``; ``make test`` installs it).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
CHECK_TAG = "exercise-check"
LESSON = ROOT / "notebooks" / "06_write_your_own_gradients.ipynb"
COPY = ROOT / "notebooks" / "exercises" / LESSON.name

_spec = importlib.util.spec_from_file_location("make_exercises",
                                               ROOT / "scripts" / "make_exercises.py")
make_exercises = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_exercises)

needs_nbgrader = pytest.mark.skipif(importlib.util.find_spec("nbgrader") is None,
                                    reason="nbgrader is not installed (the teach extra)")


def solution_blocks(nb):
    """The lines between BEGIN and END SOLUTION, per block, in the code cells of ``nb``."""
    blocks, inside = [], False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.split("\n"):
            if "### BEGIN SOLUTION" in line:
                inside = True
                blocks.append([])
            elif "### END SOLUTION" in line:
                inside = False
            elif inside:
                blocks[-1].append(line)
    return blocks


def test_lesson_06_is_the_one_with_exercises():
    assert make_exercises.lessons_with_exercises() == [LESSON]


def test_exercise_cells_carry_nbgrader_metadata():
    nb = nbformat.read(LESSON, as_version=4)
    solutions, checks = [], []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader")
        markers = "BEGIN SOLUTION" in cell.source or "END SOLUTION" in cell.source
        if cell.cell_type == "markdown":
            # nbgrader looks for its markers in every cell: prose must not name them.
            assert not markers, cell.source
            continue
        if markers:
            assert meta and meta["solution"] and not meta["grade"] and not meta["locked"], cell
            solutions.append(meta["grade_id"])
        if CHECK_TAG in cell.metadata.get("tags", []):
            assert meta and meta["grade"] and meta["locked"] and not meta["solution"], cell
            assert meta["points"] == 1
            checks.append(meta["grade_id"])
        if meta:
            assert meta["schema_version"] == 3
    assert len(solutions) == len(checks) == 10
    assert checks == [f"{s}-check" for s in solutions]
    assert len(set(solutions + checks)) == 20


def test_the_jupytext_source_keeps_the_nbgrader_metadata():
    source = LESSON.with_suffix(".py").read_text()
    markers = [line for line in source.splitlines() if line.startswith("# %%")]
    assert sum('"solution": true' in m for m in markers) == 10
    assert sum('"points": 1' in m for m in markers) == 10
    # Only those cell markers may pass 100 characters (ruff's E501 is off for this file).
    long = [line for line in source.splitlines() if len(line) > 100 and "nbgrader=" not in line]
    assert not long, long


@needs_nbgrader
def test_learner_copy_is_nbgraders_release_and_up_to_date():
    stored = COPY.read_text(encoding="utf-8")
    assert stored == nbformat.writes(make_exercises.learner_copy(LESSON)) + "\n", (
        "the learner copy is out of date: run `make exercises`")


def test_learner_copy_holds_no_solution():
    solved = nbformat.read(LESSON, as_version=4)
    copy = nbformat.read(COPY, as_version=4)
    blocks = solution_blocks(solved)
    code = "\n".join(c.source for c in copy.cells if c.cell_type == "code")
    for block in blocks:   # no solution appears in the learner copy
        assert "\n".join(block) not in code, block
    assert len(blocks) == 10 and "BEGIN SOLUTION" not in code
    solution_cells = [c.source for c in copy.cells
                      if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(solution_cells) == 10
    for cell in solution_cells:   # nbgrader's stub, once per solution cell
        assert len(re.findall(r"\n( *)# YOUR CODE HERE\n\1raise NotImplementedError\(\)",
                              cell)) == 1, cell
    assert all(not c.get("outputs") for c in copy.cells if c.cell_type == "code")
    # nbgrader locked the graded cells and recorded their checksums
    graded = [c for c in copy.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(graded) == 10 and all(c.metadata["nbgrader"]["checksum"] for c in graded)


def test_every_check_cell_of_the_learner_copy_fails_as_intended(tmp_path):
    nb = nbformat.read(COPY, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    checks = 0
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if CHECK_TAG not in cell.metadata.get("tags", []):
            assert not errors, (f"cell {k} (not a check cell) raised "
                                f"{errors[0].ename}: {errors[0].evalue}")
            continue
        checks += 1
        assert len(errors) == 1, f"check cell {k} did not fail"
        error = errors[0]
        assert error.ename == "AssertionError", f"cell {k} crashed: {error.ename}: {error.evalue}"
        assert re.match(r"Exercise \d+: check_tape: wrong gradient in #\d+ ", error.evalue), \
            error.evalue
        assert "its gradient function is not written yet" in error.evalue, error.evalue
        # and the failing op is drawn (red) above the message
        assert any("image/svg+xml" in o.get("data", {}) for o in cell.outputs), k
    assert checks == 10


@needs_nbgrader
def test_nbgrader_autograde_gives_the_solutions_full_marks_and_the_blank_copy_zero(tmp_path):
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    source = course / "source" / "lesson06"
    source.mkdir(parents=True)
    shutil.copyfile(LESSON, source / LESSON.name)
    make_exercises.nbgrader(["generate_assignment", "lesson06", "--force"], course)
    released = course / "release" / "lesson06" / LESSON.name
    for student, notebook in (("reference", LESSON), ("blank", released)):
        (course / "submitted" / student / "lesson06").mkdir(parents=True)
        shutil.copyfile(notebook, course / "submitted" / student / "lesson06" / LESSON.name)
        make_exercises.nbgrader(["db", "student", "add", student], course)
    make_exercises.nbgrader(["autograde", "lesson06", "--force", "--Execute.timeout=600"],
                            course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        reference = gradebook.find_submission("lesson06", "reference")
        blank = gradebook.find_submission("lesson06", "blank")
        assert reference.max_score == 10
        assert reference.score == 10
        assert blank.score == 0
