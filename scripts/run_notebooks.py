"""Re-execute notebooks in place so their stored outputs match the current engine.

Usage: python scripts/run_notebooks.py [NOTEBOOK.ipynb ...]   (default: notebooks/*.ipynb)

Honours nbval's first-line markers so a notebook that passes `pytest --nbval` also
re-executes here:
  # NBVAL_RAISES_EXCEPTION  the cell may raise (nbclient's `raises-exception` tag)
  # NBVAL_SKIP              the cell is not run and its outputs are cleared
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
RAISES_TAG = "raises-exception"
SKIP_TAG = "skip-execution"  # NotebookClient.skip_cells_with_tag's default


def first_line(cell) -> str:
    return cell.source.lstrip().split("\n", 1)[0].strip()


def add_temporary_tags(nb) -> list[tuple[dict, str]]:
    """Translate nbval markers into the tags nbclient knows; return what was added."""
    added = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.setdefault("tags", [])
        marker = first_line(cell)
        if marker == "# NBVAL_SKIP":
            cell.outputs = []
            cell.execution_count = None
            tag = SKIP_TAG
        elif marker == "# NBVAL_RAISES_EXCEPTION":
            tag = RAISES_TAG
        else:
            tag = None
        if tag and tag not in tags:
            tags.append(tag)
            added.append((cell, tag))
    return added


def remove_temporary_tags(nb, added) -> None:
    # Leave the notebook's metadata as the author wrote it.
    for cell, tag in added:
        cell.metadata["tags"].remove(tag)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("tags") == []:
            del cell.metadata["tags"]


def run(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # stale timestamps from an earlier run
    added = add_temporary_tags(nb)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=600,
        allow_errors=False,
        skip_cells_with_tag=SKIP_TAG,
        record_timing=False,  # per-cell timestamps would churn every git diff
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    remove_temporary_tags(nb, added)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if not paths:
        print("run_notebooks: no notebooks found")
        return 0
    failed = []
    for path in paths:
        print(f"run_notebooks: executing {path}")
        try:
            run(path)
        except CellExecutionError as exc:
            # The notebook file is left untouched; report and go on with the rest.
            print(f"run_notebooks: {path} failed:\n{exc}", file=sys.stderr)
            failed.append(path)
    if failed:
        print(f"run_notebooks: {len(failed)} of {len(paths)} failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
