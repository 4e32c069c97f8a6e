"""The code stays ruff-clean (pyproject.toml's [tool.ruff]): learners read it."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    # ("notebooks" covers the lessons' sources, notebooks/NN_name.py, and their .ipynb files:
    # the code learners run is held to the same rules.)
    result = subprocess.run([ruff, "check", "minitape", "tests", "benchmarks", "scripts",
                             "notebooks"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
