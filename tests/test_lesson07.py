"""Lesson 07 ("Learning digits") as a program: it trains to the accuracy it promises, and its
run time is reported.

nbval compares the stored notebook's outputs with a fresh run (accuracies printed to two
digits); this test runs the lesson's source top to bottom as a plain script, independently of
the stored outputs, checks the printed test accuracies against the issue's bar (at least 0.90
for the fully connected network, and for the convolutional one), and reports how long the whole
lesson took (``record_property`` and one printed line; there is no time limit asserted, the
machines differ too much).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks" / "07_learning_digits.py"
NOTEBOOK = ROOT / "notebooks" / "07_learning_digits.ipynb"

pytest.importorskip("sklearn", reason="lesson 07 needs the 'lessons' extra (scikit-learn)")
pytest.importorskip("tqdm", reason="lesson 07 needs the 'lessons' extra (tqdm)")


@pytest.fixture(scope="module")
def lesson_run():
    env = dict(os.environ, MPLBACKEND="Agg")  # a script, not a kernel: no figures shown
    start = time.perf_counter()
    result = subprocess.run([sys.executable, str(SOURCE)], cwd=SOURCE.parent, env=env,
                            capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout, seconds


def test_lesson07_trains_both_networks_above_90_percent(lesson_run, record_property, capsys):
    stdout, seconds = lesson_run
    accuracies = [float(a) for a in re.findall(r"^test accuracy: ([0-9.]+)$", stdout, re.M)]
    assert len(accuracies) == 2, stdout
    mlp, cnn = accuracies
    assert mlp >= 0.90, f"the fully connected network reached only {mlp} on the test images"
    assert cnn >= 0.90, f"the convolutional network reached only {cnn} on the test images"
    record_property("lesson07_seconds", round(seconds, 1))
    with capsys.disabled():
        print(f"\nlesson 07 ran in {seconds:.1f} s (test accuracy: MLP {mlp}, CNN {cnn})")


def test_lesson07_prints_what_it_promises(lesson_run):
    stdout, _ = lesson_run
    assert "images: (1797, 8, 8) float64" in stdout
    assert "train: (1347, 8, 8)  test: (450, 8, 8)" in stdout
    assert "Conv2D        -> (2, 8, 8, 16)" in stdout
    assert "saliency: (6, 8, 8, 1)" in stdout


def test_stored_lesson07_shows_accuracy_to_two_digits():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    printed = [o.get("text", "") for c in nb.cells if c.cell_type == "code"
               for o in c.get("outputs", []) if o.get("output_type") == "stream"]
    stored = re.findall(r"test accuracy: (\d\.\d\d)\n", "".join(printed))
    assert len(stored) == 2 and all(float(a) >= 0.90 for a in stored), stored
    tags = {c.source.split("\n")[0]: c.metadata.get("tags", []) for c in nb.cells
            if c.cell_type == "code"}
    for first_line, cell_tags in tags.items():
        if "= fit(" in first_line or "draw_tape" in first_line:
            assert "nbval-ignore-output" in cell_tags, first_line
