"""``import minitape`` stays light: the renderers' libraries load only with ``mt.viz``."""

import subprocess
import sys

HEAVY = ("graphviz", "matplotlib", "ipywidgets")


def _loaded_after(code):
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\n"
         f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_minitape_does_not_import_graphviz_matplotlib_ipywidgets():
    assert _loaded_after("import minitape") == ""


def test_import_minitape_viz_stays_light_until_drawing():
    code = ("import minitape as mt\nx = mt.Variable(2.0)\nwith mt.GradientTape() as t:\n"
            "    y = x * x\nmt.viz.tape_graph(t, y, x)\nmt.viz.explain(t, y, x)")
    assert _loaded_after(code) == ""
    assert _loaded_after(code + "\nmt.viz.draw_tape(t)") == "graphviz"
