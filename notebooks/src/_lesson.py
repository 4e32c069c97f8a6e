"""A tiny helper for the lesson generators: collect markdown and code cells, build a notebook.

Each ``notebooks/src/NN_name.py`` defines ``build() -> nbformat.NotebookNode`` with a
``Lesson``; ``scripts/build_notebooks.py`` writes them to ``notebooks/NN_name.ipynb`` and
``scripts/run_notebooks.py`` fills in the outputs.
"""

from __future__ import annotations

from textwrap import dedent

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

# The setup cell every lesson starts with (after its title): imports first (a lesson adds its
# own, e.g. matplotlib), then the settings.
SETUP_IMPORTS = """\
%matplotlib inline
import warnings

{imports}import numpy as np

import minitape as mt"""

SETUP_SETTINGS = '''\
# NumPy 2 shows a bare scalar as `np.float32(6.0)`; the guides were written with NumPy 1,
# which shows `6.0`. Ask NumPy for its 1.25 printing so outputs read like the guides.
np.set_printoptions(legacy="1.25")
# Show warnings as one short line ("UserWarning: ...") instead of a line with a temporary
# file name that changes every run.
warnings.formatwarning = lambda message, category, *args, **kwargs: (
    f"{category.__name__}: {message}\\n")
# Random numbers are repeatable: the same seed gives the same numbers on every run.
mt.random.set_seed(0)'''


def _clean(text: str) -> str:
    return dedent(text).strip("\n")


class Lesson:
    def __init__(self, name: str):
        self.name = name
        self.cells = []

    def md(self, text: str) -> None:
        self.cells.append(new_markdown_cell(_clean(text)))

    def code(self, text: str) -> None:
        self.cells.append(new_code_cell(_clean(text)))

    def setup(self, imports: str = "", extra: str = "") -> None:
        """The shared setup cell: the lesson's own ``imports`` (third-party, e.g. matplotlib)
        with the shared ones, the shared settings, then lesson-specific lines."""
        imports = _clean(imports) + "\n" if imports else ""
        self.code(SETUP_IMPORTS.format(imports=imports) + "\n\n" + SETUP_SETTINGS
                  + ("\n\n" + _clean(extra) if extra else ""))

    def exercise(self, question: str, answer: str) -> None:
        """A markdown exercise whose answer is hidden in a collapsible <details> block."""
        self.md(f"{_clean(question)}\n\n<details><summary>Answer</summary>\n\n"
                f"{_clean(answer)}\n\n</details>")

    def notebook(self) -> nbformat.NotebookNode:
        nb = new_notebook(cells=self.cells, metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        })
        # Deterministic cell ids, so rebuilding a lesson does not churn every cell in git.
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{self.name[:40]}-{i:03d}"
        return nb
