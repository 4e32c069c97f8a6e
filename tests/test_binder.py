"""Binder builds the repository as the README's launch badge promises (issue 34 item 7).

Binder runs repo2docker. ``repo2docker --no-build`` prints the Dockerfile it would build,
without Docker: this checks it picks the conda environment of ``environment.yml`` (Python
3.11), installs it, then runs ``postBuild`` (which installs minitape and its save hook), and
that the badge opens lesson 01 in JupyterLab.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory):
    exe = shutil.which("repo2docker", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("repo2docker is not installed (pip install -e '.[teach]' installs it)")
    # A copy of what git tracks: the repository as Binder clones it.
    repo = tmp_path_factory.mktemp("repo")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    out = subprocess.run([exe, "--no-build", "--no-run", "--debug", str(repo)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout + out.stderr


def test_binder_builds_the_conda_environment_then_runs_postbuild(dockerfile):
    assert "Building conda environment for python=3.11" in dockerfile
    update = dockerfile.index('env update -p ${NB_PYTHON_PREFIX} --file "environment.yml"')
    post = dockerfile.index("RUN ./postBuild")
    assert update < post   # the environment first, then postBuild installs minitape


def test_postbuild_installs_minitape_and_its_save_hook():
    text = (ROOT / "postBuild").read_text()
    assert "pip install --no-deps -e ." in text
    assert "jupyter-config/jupyter_server_config.d/minitape.json" in text
    assert (ROOT / "jupyter-config/jupyter_server_config.d/minitape.json").is_file()


def test_the_badge_opens_lesson_01_in_jupyterlab():
    readme = (ROOT / "README.md").read_text()
    badge = re.search(r"https://mybinder\.org/v2/gh/[^)\s]+", readme)
    assert badge, "the README has no Binder launch badge"
    assert badge.group(0).endswith("?urlpath=lab/tree/notebooks/01_gradients_and_autodiff.ipynb")
    assert (ROOT / "notebooks/01_gradients_and_autodiff.ipynb").is_file()
