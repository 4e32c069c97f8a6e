"""The learner copies of the lessons (``make exercises``): no solutions, up to date, and every
check cell fails with the intended message, not a crash.

The solved lessons themselves run under nbval (``make test``); here the learner copy is
executed in a fresh kernel with errors allowed, and each cell's outcome is read back.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
CHECK_TAG = "exercise-check"

_spec = importlib.util.spec_from_file_location("make_exercises",
                                               ROOT / "scripts" / "make_exercises.py")
make_exercises = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_exercises)

LESSONS = make_exercises.lessons_with_exercises()


def test_lesson_06_has_exercises():
    assert [p.name for p in LESSONS] == ["06_write_your_own_gradients.ipynb"]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_learner_copy_is_up_to_date(lesson):
    stored = (make_exercises.EXERCISES / lesson.name).read_text(encoding="utf-8")
    assert stored == nbformat.writes(make_exercises.learner_copy(lesson)) + "\n", (
        "the learner copy is out of date: run `make exercises`")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_learner_copy_holds_no_solution(lesson):
    solved = nbformat.read(lesson, as_version=4)
    copy = make_exercises.learner_copy(lesson)
    blocks = []
    for cell in solved.cells:
        if cell.cell_type != "code":
            continue
        inside = False
        for line in cell.source.split("\n"):
            if "### BEGIN SOLUTION" in line:
                inside = True
                blocks.append([])
            elif "### END SOLUTION" in line:
                inside = False
            elif inside:
                blocks[-1].append(line)
    code = "\n".join(c.source for c in copy.cells if c.cell_type == "code")
    for block in blocks:   # no solution appears in the learner copy
        assert "\n".join(block) not in code, block
    assert len(blocks) >= 10 and "BEGIN SOLUTION" not in code
    assert code.count("raise NotImplementedError") == len(blocks)
    assert all(not c.get("outputs") for c in copy.cells if c.cell_type == "code")


def test_strip_solutions_rejects_unbalanced_markers():
    with pytest.raises(ValueError, match="without its '### END SOLUTION'"):
        make_exercises.strip_solutions("### BEGIN SOLUTION\nx = 1\n", "cell 3")
    with pytest.raises(ValueError, match="without a '### BEGIN SOLUTION'"):
        make_exercises.strip_solutions("x = 1\n### END SOLUTION\n")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_check_cell_of_the_learner_copy_fails_as_intended(lesson, tmp_path):
    nb = make_exercises.learner_copy(lesson)
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
    assert checks >= 10
