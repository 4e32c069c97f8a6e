"""Every stored lesson reads the same with no kernel: on GitHub and nbviewer, in
``jupyter nbconvert --to html``, on a Sphinx/myst-nb course site, and in JupyterLab before it is
run.

``scripts/run_notebooks.py`` stores the lessons without widget state and keeps, of each widget
output, only its static fallback (``text/html`` or ``image/png``): a stored widget view makes
nbconvert load the widget manager from a CDN when the state is stored, makes myst-nb render an
empty ``<script>`` even when it is not, and makes JupyterLab say "model not found". These tests
check what that leaves in every stored notebook.
"""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(
    (NOTEBOOKS / "exercises").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The text/plain repr of a widget: minitape's (``<TapePlayer step 0/6: ...>``,
# ``<DescentExplorer ...>``, ``<JacobianExplorer ...>``) or a bare ipywidgets one
# (``HBox(children=...)``, ``FloatProgress(value=...)``: a tqdm.notebook bar).
WIDGET_REPR = re.compile(r"^(<(TapePlayer|\w+Explorer|TrainingView)\b|[A-Z]\w*\((children|value)=)")


def _outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                yield cell, out


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_no_widget_state_and_no_widget_view_is_stored(path):
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata, (
        f"{path.name} stores widget state: re-run scripts/run_notebooks.py on it")
    views = [c.id for c, out in _outputs(nb) if WIDGET_VIEW in out.get("data", {})]
    assert not views, f"{path.name}: widget views stored in cells {views}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_widget_output_has_a_static_fallback(path):
    nb = nbformat.read(path, as_version=4)
    widgets = []
    for cell, out in _outputs(nb):
        plain = "".join(out.get("data", {}).get("text/plain", ""))
        if WIDGET_REPR.match(plain):
            widgets.append(cell.id)
            assert {"text/html", "image/png"} & set(out.data), (
                f"{path.name} cell {cell.id}: a widget output ({plain[:60]!r}) with no "
                "text/html or image/png fallback")
    for cell, out in _outputs(nb):    # a progress bar's last state, not its first
        text = out.get("text", "")
        assert "\r" not in text, f"{path.name} cell {cell.id}: a stream keeps its redraws"
    if path.name.startswith(("02_", "04_", "05_")):
        assert widgets, f"{path.name} shows explorers or players: none found"


def test_the_players_fallback_holds_every_frame_and_its_own_script():
    nb = nbformat.read(NOTEBOOKS / "04_inside_the_tape.ipynb", as_version=4)
    players = [out for _, out in _outputs(nb)
               if "".join(out.get("data", {}).get("text/plain", "")).startswith("<TapePlayer")]
    assert len(players) == 2
    for out in players:
        page = "".join(out.data["text/html"])
        last = int(re.match(r"<TapePlayer step \d+/(\d+)", "".join(out.data["text/plain"]))
                   .group(1))
        assert page.count('<section class="minitape-frame"') == last + 1
        assert page.count('<img src="data:image/svg+xml;base64,') >= last + 1
        assert "<script>" in page
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)   # nothing to fetch
