"""Run a TensorFlow notebook's code cells with ``import tensorflow as tf`` -> minitape.

TensorFlow's guides and tutorials (github.com/tensorflow/docs, ``site/en/``) are TensorFlow's
text and are not shipped with minitape. To check how far one runs on minitape, fetch
tensorflow/docs and point this script at a notebook:

    python scripts/run_tf_notebook.py path/to/docs/site/en/guide/tensor.ipynb

Each code cell runs in one namespace, in order, with the import lines switched
(``import tensorflow as tf``, ``from tensorflow import keras``, ``from tensorflow.keras import
layers``) and nothing else changed (the licence cell and shell lines ``!pip ...`` /
``%magic`` are skipped, as the guides' own notebooks skip them offline). The script prints
each failing cell with its error, then a summary line, and exits with status 1 if a cell
failed. ``-v`` prints every cell and what it printed. Nothing is downloaded: a cell that
needs the network fails, and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:   # the minitape of this tree
    sys.path.insert(0, str(ROOT))


def code_cells(notebook: dict) -> list:
    """The notebook's code cells as source text, import switched, shell lines and licence out."""
    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if "Licensed under the Apache License" in source:
            continue
        lines = [re.match(r"\s*", line).group(0) + "pass"
                 if line.strip().startswith(("!", "%")) else line
                 for line in source.splitlines()]
        cells.append(switch_imports("\n".join(lines)))
    return cells


def switch_imports(source: str) -> str:
    """The import lines switched to minitape: ``import tensorflow as tf``, and the guides'
    ``from tensorflow import keras`` / ``from tensorflow.keras import layers`` (minitape's
    ``keras`` is TensorFlow's ``tf.keras``). Nothing else changes."""
    source = source.replace("import tensorflow as tf", "import minitape as tf")
    return re.sub(r"^(\s*)from tensorflow(\.keras[\w.]*)? import ", r"\1from minitape\2 import ",
                  source, flags=re.MULTILINE)


def run(path, verbose=False, out=sys.stdout) -> list:
    """Run the notebook at ``path``; returns ``[(cell number, source, error or None), ...]``."""
    namespace = {"__name__": "__main__"}
    results = []
    for number, source in enumerate(code_cells(json.loads(Path(path).read_text())), 1):
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(source, f"<cell {number}>", "exec"), namespace)
            error = None
        except Exception as e:  # noqa: BLE001 (every failure is reported)
            error = f"{type(e).__name__}: {e}"
        results.append((number, source, error))
        if error or verbose:
            print(f"--- cell {number}: {'FAILED' if error else 'ok'}\n{source}", file=out)
            if verbose and printed.getvalue():
                print(printed.getvalue().rstrip(), file=out)
            if error:
                print(f"!!! {error[:1000]}", file=out)
    failed = [n for n, _, e in results if e]
    print(f"{Path(path).name}: {len(results) - len(failed)} of {len(results)} code cells ran; "
          f"failed: {failed}", file=out)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", nargs="+")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    failed = False
    for path in args.notebook:
        failed |= any(e for _, _, e in run(path, args.verbose))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
