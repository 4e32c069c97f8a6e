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
   random), and the ids of ipywidgets models in the stored widget state are replaced by ids
   derived from the lesson's name and each model's place in the notebook, so re-executing an
   unchanged lesson leaves the file byte-for-byte unchanged (as long as what the lesson prints
   and draws does not change from run to run: no timings).

A lesson whose execution fails is left as it was; the others still run, and the exit status is 1.
"""

from __future__ import annotations

import hashlib
import json
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
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
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
        cell.outputs = outputs


MODEL_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32})")


def widget_order(nb, state: dict) -> list[str]:
    """The model ids of ``state`` in an order that does not depend on the ids themselves: the
    models shown in cell outputs (in cell order), then the models they refer to, breadth first;
    then the rest (e.g. ``jslink``s), by their content with the references to ordered models
    replaced by position."""
    queue = [out.data[WIDGET_VIEW]["model_id"]
             for cell in nb.cells if cell.cell_type == "code"
             for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
    order: list[str] = []
    while queue:
        model_id = queue.pop(0)
        if model_id in state and model_id not in order:
            order.append(model_id)
            queue.extend(MODEL_REF.findall(json.dumps(state[model_id], sort_keys=True)))
    position = {m: i for i, m in enumerate(order)}

    def content(model_id):
        text = json.dumps(state[model_id], sort_keys=True)
        return MODEL_REF.sub(lambda m: f"IPY_MODEL_{position.get(m.group(1), '?')}", text)

    return order + sorted((m for m in state if m not in position), key=content)


def stable_widget_ids(nb, name: str):
    """Replace the random ipywidgets model ids by ids derived from ``name`` and the models'
    place in the notebook (``widget_order``)."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return nb
    text = nbformat.writes(nb)
    for i, model_id in enumerate(widget_order(nb, state)):
        text = text.replace(model_id, hashlib.sha1(f"{name}:{i}".encode()).hexdigest()[:32])
    return nbformat.reads(text, as_version=4)


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    stable_cell_ids(nb, path.name[:2])
    nb.metadata.setdefault("kernelspec", KERNELSPEC)
    nb.metadata.pop("widgets", None)  # the run below stores the state of the widgets it makes
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
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    coalesce_streams(nb)
    nb = stable_widget_ids(nb, path.stem)
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
