"""``minitape.notebook.setup`` (the lessons' one set-up line) and the helpers of
``scripts/run_notebooks.py`` that keep re-executed lessons byte-for-byte stable."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

import minitape as mt

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def restore_settings():
    saved = np.get_printoptions(), warnings.formatwarning
    yield
    np.set_printoptions(**saved[0])
    warnings.formatwarning = saved[1]


def test_import_minitape_does_not_import_the_notebook_settings():
    code = ("import sys, numpy as np, minitape as mt; "
            "print('minitape.notebook' in sys.modules, np.get_printoptions()['precision'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "8"]


def test_setup_seeds_like_set_seed(restore_settings):
    import minitape.notebook

    minitape.notebook.setup(seed=3)
    first = mt.random.normal([4]).numpy()
    mt.random.set_seed(3)
    assert np.array_equal(first, mt.random.normal([4]).numpy())


def test_setup_without_seed_leaves_the_generator_alone(restore_settings):
    import minitape.notebook

    mt.random.set_seed(5)
    mt.random.normal([2])
    expected_next = mt.random.normal([3]).numpy()
    mt.random.set_seed(5)
    mt.random.normal([2])
    minitape.notebook.setup(seed=None)
    assert np.array_equal(mt.random.normal([3]).numpy(), expected_next)


def test_setup_prints_arrays_to_five_decimals_and_scalars_in_full(restore_settings):
    import minitape.notebook

    minitape.notebook.setup()
    # Two float32 values that differ only in the digits a CPU changes print the same.
    a = mt.constant([-0.20043278, 1.1624806])
    b = mt.constant([-0.20043272, 1.1624806])
    assert str(a) == str(b) == "mt.Tensor([-0.20043  1.16248], shape=(2,), dtype=float32)"
    # A scalar keeps every digit (the guides' printed numbers), in NumPy 1's style.
    assert str(mt.constant(0.9999546)) == "mt.Tensor(0.9999546, shape=(), dtype=float32)"
    assert repr(np.float32(6.0)) == "6.0"


def test_setup_shows_warnings_on_one_line(restore_settings):
    import minitape.notebook

    minitape.notebook.setup()
    text = warnings.formatwarning("careful", UserWarning, "/tmp/ipykernel_123.py", 7)
    assert text == "UserWarning: careful\n"


@pytest.mark.parametrize("seed", ["0", 1.5, True])
def test_setup_rejects_a_seed_that_is_not_an_int(seed, restore_settings):
    import minitape.notebook

    with pytest.raises(TypeError, match="setup\\(seed=...\\) takes an int or None"):
        minitape.notebook.setup(seed=seed)


# -- scripts/run_notebooks.py ------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_notebooks():
    pytest.importorskip("jupytext")
    spec = importlib.util.spec_from_file_location("run_notebooks",
                                                  ROOT / "scripts" / "run_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cell_ids_kept_or_derived_from_the_source(run_notebooks):
    nb = new_notebook(cells=[new_markdown_cell("# title"), new_code_cell("x = 1"),
                             new_code_cell("x = 1")])
    nb.cells[0]["id"] = "06-000"
    nb.cells[1]["id"] = "1f2e3d4c"            # a random id, as jupytext gives a new cell
    nb.cells[2]["id"] = "a9b8c7d6"
    run_notebooks.stable_cell_ids(nb, "06")
    ids = [c["id"] for c in nb.cells]
    assert ids[0] == "06-000"
    assert ids[1].startswith("06-") and ids[2].startswith("06-") and ids[1] != ids[2]
    # The same cells get the same ids on every machine.
    again = new_notebook(cells=[new_markdown_cell("# title"), new_code_cell("x = 1"),
                                new_code_cell("x = 1")])
    for cell in again.cells:
        cell["id"] = "ffffffff"
    again.cells[0]["id"] = "06-000"
    run_notebooks.stable_cell_ids(again, "06")
    assert [c["id"] for c in again.cells] == ids
    nbformat.validate(nb)


def test_stream_pieces_are_joined(run_notebooks):
    cell = new_code_cell("print(...)", outputs=[
        new_output("stream", name="stdout", text="before gradient: keeps"),
        new_output("stream", name="stdout", text=" 4 tensors\n"),
        new_output("stream", name="stderr", text="UserWarning: w\n"),
        new_output("stream", name="stdout", text="after\n"),
    ])
    nb = new_notebook(cells=[cell])
    run_notebooks.coalesce_streams(nb)
    assert [(o.name, o.text) for o in nb.cells[0].outputs] == [
        ("stdout", "before gradient: keeps 4 tensors\n"), ("stderr", "UserWarning: w\n"),
        ("stdout", "after\n")]


def test_a_redrawn_progress_bar_keeps_its_last_state(run_notebooks):
    # A text progress bar redraws its line with \r; the stored text is what a terminal, the
    # notebook frontends and nbval show: the last state of each line.
    cell = new_code_cell("fit()", outputs=[new_output("stream", name="stdout", text=(
        "MLP:   0%|          | 0/2 \rMLP:  50%|#####     | 1/2 , loss=0.5"
        "\rMLP: 100%|##########| 2/2 , loss=0.25\n"
        "done\r\n"))])
    nb = new_notebook(cells=[cell])
    run_notebooks.coalesce_streams(nb)
    assert nb.cells[0].outputs[0].text == "MLP: 100%|##########| 2/2 , loss=0.25\ndone\n"


VIEW = "application/vnd.jupyter.widget-view+json"


def test_widget_outputs_keep_only_their_static_fallback(run_notebooks):
    view = {"model_id": "8ac8fd36d65b4aad875d59853961b6d8", "version_major": 2,
            "version_minor": 0}
    player = new_output("execute_result", execution_count=1, data={
        VIEW: view, "text/plain": "<TapePlayer step 0/4>", "text/html": "<div>frames</div>"})
    explorer = new_output("display_data", data={
        VIEW: view, "text/plain": "<DescentExplorer>", "image/png": "iVBORw0KGgo="})
    printed = new_output("stream", name="stdout", text="12.0\n")
    nb = new_notebook(cells=[new_code_cell("player", outputs=[player]),
                             new_code_cell("explorer", outputs=[explorer, printed])],
                      metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {
                          "state": {}, "version_major": 2, "version_minor": 0}}})
    run_notebooks.static_outputs(nb)
    assert "widgets" not in nb.metadata
    assert set(nb.cells[0].outputs[0].data) == {"text/plain", "text/html"}
    assert set(nb.cells[1].outputs[0].data) == {"text/plain", "image/png"}
    assert nb.cells[1].outputs[1].text == "12.0\n"
    nbformat.validate(nb)
    # A widget with nothing but its text repr (a tqdm.notebook bar, a bare IntSlider) is
    # refused: offline it would read "HBox(children=...)" or its first state.
    bare = new_output("display_data", data={VIEW: view, "text/plain": "HBox(children=(...))"})
    with pytest.raises(ValueError, match="no static fallback.*HBox"):
        run_notebooks.static_outputs(new_notebook(cells=[new_code_cell("bar", outputs=[bare])]))


def test_execute_honours_nbval_tags(run_notebooks, tmp_path):
    # A tiny lesson run in a real kernel: a cell tagged raises-exception may raise (its error is
    # stored, as nbval will compare it), a cell tagged nbval-skip is not run and loses its stale
    # output, and the cells after both still run.
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    raises = new_code_cell("raise ValueError('shown to the learner')",
                           metadata={"tags": ["raises-exception"]})
    skipped = new_code_cell("print('never')", metadata={"tags": ["nbval-skip"]},
                            execution_count=3,
                            outputs=[new_output("stream", name="stdout", text="stale\n")])
    nb = new_notebook(cells=[new_code_cell("x = 1"), raises, skipped,
                             new_code_cell("print(x + 1)")])
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"99-{i:03d}"
    path = tmp_path / "99_tags.ipynb"
    nbformat.write(nb, path)
    run_notebooks.execute(path)
    out = nbformat.read(path, as_version=4)
    error = out.cells[1].outputs[0]
    assert (error.output_type, error.ename, error.evalue) == (
        "error", "ValueError", "shown to the learner")
    assert out.cells[2].outputs == [] and out.cells[2].execution_count is None
    assert out.cells[3].outputs[0].text == "2\n"
    assert [c["id"] for c in out.cells] == ["99-000", "99-001", "99-002", "99-003"]
