"""Sync each lesson from its jupytext source and re-execute it, so its stored outputs match the
current engine (``make notebooks`` runs this on every lesson).

Usage: python scripts/run_notebooks.py [LESSON ...]
  LESSON is a lesson's source ``notebooks/NN_name.py``, its notebook ``notebooks/NN_name.ipynb``
  or just ``NN_name`` (default: every ``notebooks/NN_*.py``).

For each lesson:
1. ``jupytext --sync``: the ``.ipynb`` gets the cells of the ``.py`` (or, if the ``.ipynb`` was
   edited last, the other way round), keeping its stored outputs (``notebooks/jupytext.toml``
   pairs the two);
2. cell ids are made deterministic: a cell keeps an id starting with the lesson's number
   (``01-...``); any other id (jupytext gives new cells random ones) becomes ``NN-`` plus a hash
   of the cell's source, so rebuilding does not churn the notebook in git;
3. the notebook runs top to bottom in a fresh kernel (nbclient) with nbval's cell tags honoured:
   ``nbval-skip`` cells are not run (their outputs are cleared), ``raises-exception`` cells may
   raise (nbclient lets them), ``nbval-ignore-output`` cells run normally;
4. consecutive outputs to the same stream are joined (the kernel flushes a line in pieces, at
   random) and a line a progress bar redrew with ``\r`` keeps only its last state, so
   re-executing an unchanged lesson leaves the file byte-for-byte unchanged (as long as what
   the lesson prints and draws does not change from run to run: no timings);
5. the lesson is stored for readers with no kernel (``static_outputs``): no widget state, and
   every widget output keeps only its static fallback, ``text/html`` or ``image/png`` (a widget
   output without one is an error). Why: a stored widget view shows nothing without a kernel.
   ``jupyter nbconvert --to html`` (so GitHub and nbviewer) renders a widget view when the
   widget state is stored, loading the widget scripts from a CDN (empty offline), and skips it
   for the fallback when it is not; myst-nb (a Sphinx course site) renders the widget view
   even without state (an empty ``<script>``) unless it is absent; JupyterLab says "Error
   displaying widget: model not found" for a view whose state is not there. With the view
   removed, every one of them shows the fallback, and a learner who runs the cell gets the live
   widget again.

A lesson whose execution fails is left as it was; the others still run, and the exit status is 1.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import nbformat
from jupytext.cli import jupytext as jupytext_cli
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SKIP_TAG = "nbval-skip"  # nbval's own tag; nbclient's skip_cells_with_tag is told to use it
# ipykernel's own kernel spec: JupyterLab rewrites any other display_name when the kernel starts,
# which marks a lesson modified as soon as it is opened.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def lesson_paths(args: list[str]) -> list[Path]:
    """The ``.py`` source of each lesson named in ``args`` (all lessons when empty)."""
    if not args:
        return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
    paths = []
    for arg in args:
        path = Path(arg).resolve()
        if path.suffix in (".py", ".ipynb"):
            path = path.with_suffix(".py")
        else:
            path = NOTEBOOKS / f"{arg}.py"
        if not re.fullmatch(r"[0-9][0-9]_\w+\.py", path.name):
            raise SystemExit(f"run_notebooks: {arg!r} is not a lesson; expected "
                             "notebooks/NN_name.py, notebooks/NN_name.ipynb or NN_name")
        if not path.exists() and not path.with_suffix(".ipynb").exists():
            raise SystemExit(f"run_notebooks: {path} does not exist")
        paths.append(path)
    return paths


def sync(source: Path) -> Path:
    """``jupytext --sync`` one lesson; returns its ``.ipynb``."""
    target = source if source.exists() else source.with_suffix(".ipynb")
    if jupytext_cli(["--sync", "--quiet", str(target)]) not in (0, None):
        raise SystemExit(f"run_notebooks: jupytext --sync {target} failed")
    return source.with_suffix(".ipynb")


def stable_cell_ids(nb, number: str) -> None:
    """Keep ids that start with ``NN-``; give every other cell ``NN-<hash of its source>``."""
    taken = {c.get("id") for c in nb.cells if str(c.get("id", "")).startswith(f"{number}-")}
    for cell in nb.cells:
        if str(cell.get("id", "")).startswith(f"{number}-"):
            continue
        digest = hashlib.sha1(cell.source.encode()).hexdigest()
        for i in range(8, 40):
            new = f"{number}-{digest[:i]}"
            if new not in taken:
                break
        cell["id"] = new
        taken.add(new)


def coalesce_streams(nb) -> None:
    """Join consecutive stdout (or stderr) outputs of a cell into one: how the kernel happened
    to flush a line is not part of the lesson, and would churn the notebook in git."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for out in cell.outputs:
            if (out.output_type == "stream" and outputs and outputs[-1].output_type == "stream"
                    and outputs[-1].name == out.name):
                outputs[-1].text += out.text
            else:
                outputs.append(out)
        for out in outputs:
            if out.output_type == "stream":
                out.text = _last_redraw(out.text)
        cell.outputs = outputs


def _last_redraw(text: str) -> str:
    """``text`` as a terminal shows it: a line redrawn after ``\r`` keeps its last state (as
    nbval and the notebook frontends read it)."""
    lines = text.split("\n")
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in lines)


def static_outputs(nb) -> None:
    """Store ``nb`` for readers without a kernel: drop the widget state and each output's
    widget view, keeping the ``text/html`` or ``image/png`` fallback beside it.

    Raises:
        ValueError: a widget output has no such fallback (it would show as its text/plain
            repr on GitHub, nbviewer, a course site and in JupyterLab before it is run).
    """
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            data = out.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            if not {"text/html", "image/png"} & set(data):
                raise ValueError(
                    f"run_notebooks: cell {cell.get('id')} shows a widget with no static "
                    f"fallback ({data.get('text/plain', '')!r:.80}): give it a "
                    "_repr_mimebundle_ with text/html or image/png, or print text instead")
            del data[WIDGET_VIEW]


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    stable_cell_ids(nb, path.name[:2])
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # stale timestamps from an earlier run
        if cell.cell_type == "code" and SKIP_TAG in cell.metadata.get("tags", []):
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=600,
        allow_errors=False,  # except in cells tagged raises-exception
        skip_cells_with_tag=SKIP_TAG,
        record_timing=False,  # per-cell timestamps would churn every git diff
        store_widget_state=False,  # see static_outputs
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    coalesce_streams(nb)
    static_outputs(nb)
    nbformat.validate(nb)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    sources = lesson_paths(argv)
    if not sources:
        print("run_notebooks: no lessons found")
        return 0
    failed = []
    for source in sources:
        notebook = sync(source)
        print(f"run_notebooks: executing {notebook}", flush=True)
        try:
            execute(notebook)
        except CellExecutionError as exc:
            # The notebook file is left untouched; report and go on with the rest.
            print(f"run_notebooks: {notebook} failed:\n{exc}", file=sys.stderr)
            failed.append(notebook)
            continue
        sync(source)  # the .py stays newer than the .ipynb (jupytext's contents manager checks)
    if failed:
        print(f"run_notebooks: {len(failed)} of {len(sources)} failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
