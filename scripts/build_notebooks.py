"""Write the lessons: run every generator in notebooks/src/ and save notebooks/NN_name.ipynb.

Usage: python scripts/build_notebooks.py [NN_name ...]   (default: every notebooks/src/NN_*.py)

Each generator defines ``build() -> nbformat.NotebookNode``. The notebooks are written without
outputs; ``scripts/run_notebooks.py`` executes them in place (``make notebooks`` runs both).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "notebooks" / "src"


def generators(names: list[str]) -> list[Path]:
    paths = sorted(p for p in SRC.glob("[0-9][0-9]_*.py"))
    if names:
        wanted = {Path(n).stem for n in names}
        paths = [p for p in paths if p.stem in wanted]
        missing = wanted - {p.stem for p in paths}
        if missing:
            raise SystemExit(f"build_notebooks: no generator for {sorted(missing)} in {SRC}")
    return paths


def build(path: Path) -> nbformat.NotebookNode:
    spec = importlib.util.spec_from_file_location(f"lesson_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    nb = module.build()
    nbformat.validate(nb)
    return nb


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(SRC))  # the generators import their helper, _lesson
    for path in generators(argv):
        out = ROOT / "notebooks" / f"{path.stem}.ipynb"
        nbformat.write(build(path), out)
        print(f"build_notebooks: wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
