"""``minitape.lessons.pre_save_hook``: a saved notebook keeps a minitape widget's static
fallback and drops its widget view (whose model is gone once the kernel is), unless the
notebook stores that widget's state; other libraries' outputs are left as they are.

The notebooks here are made of real outputs (the widgets' own ``_repr_mimebundle_``) and saved
through jupyter_server's ``FileContentsManager``, as JupyterLab saves them.
"""

from __future__ import annotations

import base64
import copy
import json

import ipywidgets as widgets
import nbformat
import pytest

import minitape as mt
from minitape import lessons

VIEW = lessons.WIDGET_VIEW
STATE = lessons.WIDGET_STATE


def _output(bundle):
    """A display_data output as a notebook stores it (bytes as base64, as ipykernel sends)."""
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
    data = {k: base64.b64encode(v).decode() if isinstance(v, bytes) else v
            for k, v in data.items()}
    return nbformat.v4.new_output("display_data", data=data, metadata=metadata)


@pytest.fixture
def notebook():
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
    player = mt.viz.TapePlayer(tape, y, x)
    explorer = mt.viz.JacobianExplorer(lambda v: mt.math.sin(v), mt.linspace(0.0, 1.0, 3),
                                       repeat=0)
    slider = widgets.IntSlider()          # another library's widget: no fallback, no mark
    cells = []
    for widget in (player, explorer, slider):
        cell = nbformat.v4.new_code_cell("w")
        cell.outputs = [_output(widget._repr_mimebundle_())]
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    return json.loads(nbformat.writes(nb))     # a plain dict, as a contents model holds


def test_views_of_marked_outputs_are_dropped_and_the_rest_kept(notebook):
    before = copy.deepcopy(notebook)
    assert lessons.drop_widget_views(notebook) == 2
    player, explorer, slider = (c["outputs"][0] for c in notebook["cells"])
    assert set(player["data"]) == {"text/plain", "text/html"}
    assert player["data"]["text/html"] == before["cells"][0]["outputs"][0]["data"]["text/html"]
    assert set(explorer["data"]) == {"text/plain", "image/png"}
    assert slider == before["cells"][2]["outputs"][0]     # not ours: untouched
    assert VIEW in slider["data"]
    assert lessons.drop_widget_views(notebook) == 0       # idempotent


def test_a_view_whose_state_is_stored_is_kept(notebook):
    model_id = notebook["cells"][0]["outputs"][0]["data"][VIEW]["model_id"]
    notebook["metadata"]["widgets"] = {STATE: {"state": {model_id: {"model_name": "VBoxModel"}},
                                               "version_major": 2, "version_minor": 0}}
    assert lessons.drop_widget_views(notebook) == 1       # the explorer's only
    assert VIEW in notebook["cells"][0]["outputs"][0]["data"]
    assert VIEW not in notebook["cells"][1]["outputs"][0]["data"]


def test_a_mark_without_its_fallback_keeps_the_view(notebook):
    out = notebook["cells"][0]["outputs"][0]
    del out["data"]["text/html"]                          # the marked fallback is missing
    assert lessons.drop_widget_views(notebook) == 1
    assert VIEW in out["data"]


def test_the_hook_in_a_jupyter_contents_manager(notebook, tmp_path):
    """Saved as JupyterLab saves (PUT /api/contents), with the hook the server extension
    registers: the file on disk has no minitape widget view; a .py file is not touched."""
    from jupyter_server.services.contents.filemanager import FileContentsManager

    class ServerApp:                                      # what the extension is given
        contents_manager = FileContentsManager(root_dir=str(tmp_path))

    assert lessons._jupyter_server_extension_points() == [{"module": "minitape.lessons"}]
    lessons._load_jupyter_server_extension(ServerApp)
    manager = ServerApp.contents_manager
    manager.save({"type": "notebook", "content": notebook}, "lesson.ipynb")
    saved = json.loads((tmp_path / "lesson.ipynb").read_text())
    views = [VIEW in c["outputs"][0]["data"] for c in saved["cells"]]
    assert views == [False, False, True]
    assert saved["cells"][0]["outputs"][0]["metadata"] == {
        "minitape": {"static_fallback": "text/html"}}
    reopened = manager.get("lesson.ipynb")["content"]       # what JupyterLab reopens
    assert "minitape-player" in "".join(reopened.cells[0].outputs[0].data["text/html"])
    manager.save({"type": "file", "format": "text", "content": "x = 1\n"}, "a.py")
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_the_hook_ignores_models_that_are_not_notebooks():
    model = {"type": "file", "format": "text", "content": "{}"}
    lessons.pre_save_hook(model, path="x.json")
    assert model == {"type": "file", "format": "text", "content": "{}"}


def test_make_lab_and_binder_turn_the_hook_on():
    """``jupyter-config/`` enables the extension (read here as the Jupyter server reads it);
    ``make lab`` puts it on ``JUPYTER_CONFIG_PATH``, Binder's postBuild copies it into the
    environment's Jupyter config (the browser test starts a server configured so)."""
    from pathlib import Path

    from jupyter_server.extension.config import ExtensionConfigManager

    root = Path(__file__).resolve().parent.parent
    config = ExtensionConfigManager(read_config_path=[str(root / "jupyter-config")])
    assert config.get_jpserver_extensions() == {"minitape.lessons": True}
    run_sh = (root / "scripts" / "run.sh").read_text()
    assert 'export JUPYTER_CONFIG_PATH="$PWD/jupyter-config' in run_sh
    post_build = (root / "postBuild").read_text()
    assert "cp jupyter-config/jupyter_server_config.d/minitape.json" in post_build
    assert "etc/jupyter/jupyter_server_config.d" in post_build
