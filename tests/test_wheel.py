"""The package as a learner installs it: the wheel, with only its runtime dependencies, in a
fresh virtualenv with no Graphviz `dot` program on PATH.

Builds the wheel and sdist (``python -m build``; ``twine check`` passes them), installs the
wheel with its runtime dependencies into a new virtualenv (pip's download cache makes a
re-run quicker; nothing is shared with the test environment: no ``--system-site-packages``),
then, in that venv with PATH holding only its own ``bin``: draws a tape to SVG and PNG
(pygraphviz's bundled Graphviz), and ``python -m minitape.lessons DIR`` copies every lesson,
byte for byte the ones nbval checks in notebooks/. The wheel's metadata names JupyterLab and
nbval only under extras.

Then nbval passes on the copies, in that venv (nbval and ipykernel added to it, the kernel
importing the installed minitape, no ``dot``): lessons 01 and 04 by default (about 30 s), the
ones named by ``MINITAPE_WHEEL_LESSONS`` (``01,04,06``; ``all`` for every lesson, which also
installs what lessons 07 and 08 need from the ``lab`` extra: scikit-learn, tqdm).

Takes 1-3 minutes with a warm pip cache (installing numpy, matplotlib, ipywidgets). Needs the
package index (the build backend and the runtime dependencies), as ``make test``'s set-up
does. MINITAPE_WHEEL_TEST=0 skips it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.environ.get("MINITAPE_WHEEL_TEST", "1") == "0",
                                reason="MINITAPE_WHEEL_TEST=0")

DRAW = """
import shutil
import minitape as mt
assert shutil.which("dot") is None, shutil.which("dot")
from minitape.viz.render import graphviz_route
assert graphviz_route() == "pygraphviz", graphviz_route()
x = mt.Variable(3.0, name="x")
with mt.GradientTape() as tape:
    y = x * x
tape.gradient(y, x)
drawing = mt.viz.draw_tape(tape, y, x)
svg = drawing.pipe(format="svg", encoding="utf-8")
assert svg.count('class="node"') == 3 and ">Mul<" in svg, svg
assert drawing.pipe(format="png").startswith(b"\\x89PNG\\r\\n\\x1a\\n")
print(drawing.render(outfile="tape.png"))
"""


# Nothing of this checkout's environment: with PYTHONPATH on this checkout, pip would find
# minitape "already installed" (its egg-info) and skip the wheel.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def run(cmd, env=CLEAN_ENV, **kwargs):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                          **kwargs)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, ROOT])
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    run([sys.executable, "-m", "twine", "check", "--strict", wheels[0], sdists[0]])
    return wheels[0]


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory):
    home = tmp_path_factory.mktemp("venv")
    # No pip inside (ensurepip takes half a minute): this environment's pip installs into it.
    run([sys.executable, "-m", "venv", "--without-pip", home / "venv"])
    bindir = home / "venv" / ("Scripts" if os.name == "nt" else "bin")
    run([sys.executable, "-m", "pip", "--python", bindir / "python", "install", "-q", dist])
    return bindir


def lesson_files():
    notebooks = ROOT / "notebooks"
    return sorted(str(p.relative_to(notebooks)) for pattern in
                  ("[0-9][0-9]_*.ipynb", "exercises/[0-9][0-9]_*.ipynb")
                  for p in notebooks.glob(pattern))


def test_metadata_names_jupyterlab_and_nbval_only_under_extras(dist):
    with zipfile.ZipFile(dist) as wheel:
        meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        text = wheel.read(meta).decode()
        names = wheel.namelist()
    runtime = [line for line in text.splitlines()
               if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert runtime, text
    for heavy in ("jupyterlab", "nbval", "pytest", "nbgrader", "sphinx", "scikit-learn"):
        assert not any(heavy in line.lower() for line in runtime), runtime
    assert "License-Expression: MIT AND CC-BY-4.0" in text
    for extra in ("lab", "test", "teach", "docs", "lessons"):
        assert f"Provides-Extra: {extra}" in text
    assert {f"minitape/_lessons/{f}" for f in lesson_files()} <= set(names)


def test_fresh_venv_without_dot_draws_and_copies_the_lessons(venv, tmp_path):
    env = dict(CLEAN_ENV)
    env["PATH"] = str(venv)          # no /usr/bin: no `dot`
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    out = run([venv / "python", "-c", DRAW], cwd=tmp_path, env=env)
    assert (tmp_path / "tape.png").read_bytes().startswith(b"\x89PNG")
    assert "tape.png" in out
    # The package imported is the installed one, not this checkout.
    where = run([venv / "python", "-c", "import minitape; print(minitape.__file__)"],
                cwd=tmp_path, env=env)
    assert "site-packages" in where and str(ROOT) not in where

    said = run([venv / "python", "-m", "minitape.lessons", "my-lessons"], cwd=tmp_path, env=env)
    assert "jupyter lab my-lessons" in said
    copied = tmp_path / "my-lessons"
    for name in lesson_files():
        assert (copied / name).read_bytes() == (ROOT / "notebooks" / name).read_bytes(), name
    assert "Attribution 4.0 International" in (copied / "LICENSE").read_text()


# The kernel imports the wheel's minitape (site-packages of the fresh venv), not this checkout:
# nbval compares this cell's output with the stored "True".
WHERE_CELL = ("import sys, minitape\n"
              "print(minitape.__file__.startswith(sys.prefix) and 'site-packages' in "
              "minitape.__file__)")


def wheel_lessons() -> list:
    chosen = os.environ.get("MINITAPE_WHEEL_LESSONS", "01,04").strip()
    names = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if chosen == "all":
        return names
    wanted = [n.strip() for n in chosen.split(",") if n.strip()]
    picked = [n for n in names if n[:2] in wanted]
    assert len(picked) == len(wanted), f"MINITAPE_WHEEL_LESSONS={chosen!r}: lessons {names}"
    return picked


def test_nbval_passes_on_the_lessons_copied_from_the_wheel(venv, tmp_path):
    """``python -m minitape.lessons DIR`` in the fresh venv, then nbval on the copies there,
    as ``make test`` runs it on notebooks/ (the copies' own sanitize.cfg)."""
    import nbformat

    env = dict(CLEAN_ENV)
    env["PATH"] = str(venv)          # no /usr/bin: no `dot`; the drawings use pygraphviz
    env["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    lessons = wheel_lessons()
    extra = ["scikit-learn", "tqdm"] if any(n[:2] in ("07", "08") for n in lessons) else []
    run([sys.executable, "-m", "pip", "--python", venv / "python", "install", "-q",
         "nbval", "ipykernel", *extra])
    run([venv / "python", "-m", "minitape.lessons", "copies"], cwd=tmp_path, env=env)
    copies = tmp_path / "copies"
    where = nbformat.v4.new_code_cell(WHERE_CELL, execution_count=1)
    where.outputs = [nbformat.v4.new_output("stream", name="stdout", text="True\n")]
    nb = nbformat.v4.new_notebook(cells=[where])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, copies / "where.ipynb")
    out = run([venv / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
               "--nbval-current-env", "--nbval-sanitize-with", copies / "sanitize.cfg",
               copies / "where.ipynb", *(copies / n for n in lessons)],
              cwd=tmp_path, env=env, timeout=900)
    assert re.search(r"\b\d+ passed", out) and "failed" not in out, out
