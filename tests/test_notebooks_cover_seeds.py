"""Every code example of the seed guides is in a lesson, and prints the guide's result.

The seeds (the documents minitape was created from) are not read here: their examples are
copied below, adapted to minitape (``tf.`` -> ``mt.``), each as a distinctive line of the
example's code and, where the guide's printed result does not depend on random numbers, the
lines the guide printed. A check passes when a code cell of the named lesson contains the
snippet and (if given) the stored output of such a cell contains the expected lines, one after
another. The lessons are committed executed (``make notebooks``), so this reads their outputs.

Deliberate differences from TensorFlow's printouts (documented in the lessons): minitape prints
``mt.Tensor(...)`` for ``tf.Tensor(...)``, Variable names carry no ``:0`` suffix, shapes are
tuples (``(7, 10)`` for ``TensorShape([7, 10])``), a Variable's type is ``Variable`` rather than
``ResourceVariable`` and a Tensor's ``Tensor`` rather than ``EagerTensor``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
L01 = "01_gradients_and_autodiff.ipynb"
L02 = "02_advanced_autodiff.ipynb"
L03 = "03_gradient_functions.ipynb"

# (lesson, code snippet, expected output lines or None)
SEED_001 = [  # "Automatic Differentiation and Gradients" (English), the reference for lesson 01
    (L01, "dy_dx = tape.gradient(y, x)\ndy_dx.numpy()", "6.0"),
    (L01, "w = mt.Variable(mt.random.normal((3, 2)), name='w')", None),
    (L01, "b = mt.Variable(mt.zeros(2, dtype=mt.float32), name='b')", None),
    (L01, "    y = x @ w + b\n    loss = mt.reduce_mean(y**2)", None),
    (L01, "[dl_dw, dl_db] = tape.gradient(loss, [w, b])", None),
    (L01, "print(w.shape)\nprint(dl_dw.shape)", "(3, 2)\n(3, 2)"),
    (L01, "grad = tape.gradient(loss, my_vars)\ngrad['b']", None),
    (L01, "layer = mt.layers.Dense(2, activation='relu')", None),
    (L01, "grad = tape.gradient(loss, layer.trainable_variables)", None),
    (L01, "print(f'{var.name}, shape: {g.shape}')", "kernel, shape: (3, 2)\nbias, shape: (2,)"),
    (L01, "x2 = mt.Variable(2.0, name='x2') + 1.0",
     "mt.Tensor(6.0, shape=(), dtype=float32)\nNone\nNone\nNone"),
    (L01, "[var.name for var in tape.watched_variables()]", "['x0']"),
    (L01, "    tape.watch(x)\n    y = x**2\n\n# dy = 2x * dx\ndy_dx = tape.gradient(y, x)\n"
          "print(dy_dx.numpy())", "6.0"),
    (L01, "grad = tape.gradient(ys, {'x0': x0, 'x1': x1})", "dy/dx0: None\ndy/dx1: 0.9999546"),
    (L01, "print(tape.gradient(z, y).numpy())", "18.0"),
    (L01, "print(tape.gradient(z, x).numpy())", "[  4. 108.]\n[2. 6.]"),
    (L01, "del tape", None),
    (L01, "    y1 = 1 / x\n\nprint(tape.gradient(y0, x).numpy())", "4.0\n-0.25"),
    (L01, "print(tape.gradient({'y0': y0, 'y1': y1}, x).numpy())", "3.75"),
    (L01, "y = x * [3., 4.]\n\nprint(tape.gradient(y, x).numpy())", "7.0"),
    (L01, "    y = mt.nn.sigmoid(x)\n\ndy_dx = tape.gradient(y, x)", None),
    (L01, "plt.plot(x, dy_dx, label='dy/dx')", "<Figure size 640x480 with 1 Axes>"),
    (L01, "dv0, dv1 = tape.gradient(result, [v0, v1])",
     "mt.Tensor(1.0, shape=(), dtype=float32)\nNone"),
    (L01, "dx = tape.gradient(result, x)", "None"),
    (L01, "    z = y * y\nprint(tape.gradient(z, x))", "None"),
    (L01, "x = x + 1   # This should be `x.assign_add(1)`",
     "Variable : mt.Tensor(1.0, shape=(), dtype=float32)\nTensor : None"),
    (L01, "y = np.mean(x2, axis=0)", "None"),
    (L01, "x = mt.constant(10)", "None"),
    (L01, "x = mt.constant(10)",
     "UserWarning: The dtype of the watched tensor must be floating (e.g. float32), got int32"),
    (L01, "x1.assign_add(x0)", "None"),
    (L01, "new_image = mt.image.adjust_contrast(image, delta)",
     "LookupError: gradient registry has no entry for: AdjustContrastv2"),
    (L01, "unconnected_gradients=mt.UnconnectedGradients.ZERO",
     "mt.Tensor([0. 0.], shape=(2,), dtype=float32)"),
]

SEED_000 = [  # the Korean copy of the same guide: its own variations
    (L01, "print(\"dl/dw: \", grad['w'])", None),
    (L01, "y1 = mt.exp(1 / x)",
     "dy0/dx:  4.0\ndy1/dx:  -0.4121803\nd(y1 + y0)/dx:  3.5878196\ndy2/dx:  3.5878196"),
    (L01, "x2 = x1 + x0", "dy/dx0:  mt.Tensor(12.0, shape=(), dtype=float32)"),
]

SEED_004 = [  # the Chinese notebook: its own variations
    (L01, "x = mt.Variable(4.0)", "8.0"),
    (L01, "x = mt.constant([[1, 2, 3]])", None),
    (L01, "tape.watch(x1)\n    tape.watch(x2)",
     "[None,\n <mt.Tensor: shape=(), dtype=float32, numpy=6.0>,\n"
     " <mt.Tensor: shape=(), dtype=float32, numpy=8.0>]"),
    (L01, "x = mt.Variable([1, 2, 3], dtype=mt.float64)",
     "array([2., 4., 6.])\narray([  4.,  32., 108.])"),
    (L01, "y = np.mean(x2)", None),
    (L01, "x = mt.Variable(1)\n", "None"),
]

SEED_003 = [  # "Advanced automatic differentiation" (Spanish), the reference for lesson 02
    (L02, "with t.stop_recording():",
     "dz/dx: mt.Tensor(4.0, shape=(), dtype=float32)\ndz/dy: None"),
    (L02, "t.reset()", "dz/dx: mt.Tensor(4.0, shape=(), dtype=float32)\ndz/dy: None"),
    (L02, "z = x**2 + mt.stop_gradient(y_sq)",
     "dz/dx: mt.Tensor(4.0, shape=(), dtype=float32)\ndz/dy: None"),
    (L02, "return mt.clip_by_norm(dy, 0.5)", "mt.Tensor(2.0, shape=(), dtype=float32)"),
    (L02, "@mt.RegisterGradient(", None),
    (L02, "@mt.primitive(", None),
    (L02, "output = loaded.call_custom_grad(v * v)", "mt.Tensor(2.0, shape=(), dtype=float32)"),
    (L02, "model.save_weights(path)", None),
    (L02, "loaded.load_weights(path)", None),
    (L02, "with mt.GradientTape() as tape0, mt.GradientTape() as tape1:", None),
    (L02, "tape0.gradient(ys, x0).numpy()", "1.0"),
    (L02, "tape1.gradient(ys, x1).numpy()", "0.25"),
    (L02, "d2y_dx2 = t2.gradient(dy_dx, x)", "dy_dx: 3.0\nd2y_dx2: 6.0"),
    (L02, "g1_mag = mt.norm(g1)", None),
    (L02, "[var.shape for var in dg1_mag]", "[(5, 10), (10,)]"),
    (L02, "dy_dx = tape.jacobian(y, delta)", None),
    (L02, "print(y.shape)\nprint(dy_dx.shape)", "(201,)\n(201,)"),
    (L02, "plt.plot(x.numpy(), dy_dx, label='dy/dx')", "<Figure size 800x600 with 1 Axes>"),
    (L02, "    y = layer(x)\n\ny.shape", "(7, 10)"),
    (L02, "layer.kernel.shape", "(5, 10)"),
    (L02, "j = tape.jacobian(y, layer.kernel)\nj.shape", "(7, 10, 5, 10)"),
    (L02, "j_sum = mt.reduce_sum(j, axis=[0, 1])", "g.shape: (5, 10)"),
    (L02, "h = t2.jacobian(g, layer1.kernel)", None),
    (L02, "print(f'h.shape: {h.shape}')", "layer.kernel.shape: (5, 8)\nh.shape: (5, 8, 5, 8)"),
    (L02, "h_mat = mt.reshape(h, [n_params, n_params])", None),
    (L02, "imshow_zero_center(h_mat)", None),
    (L02, "update = mt.linalg.solve(h_mat + eye_eps, g_vec)", None),
    (L02, "layer1.kernel.assign_sub(mt.reshape(update, layer1.kernel.shape))", None),
    (L02, "    y = layer2(y)\n\ny.shape", "(7, 6)"),
    (L02, "j = tape.jacobian(y, x)\nj.shape", "(7, 6, 7, 5)"),
    (L02, "imshow_zero_center(j[:, 0, :, 0])", None),
    (L02, "plot_as_patches(j)\n_ = plt.title('All (batch, batch) slices are diagonal')", None),
    (L02, "j_select = mt.einsum('bxby->bxy', j)", "(7, 6, 5)\n(7, 6, 5)"),
    (L02, "jb = tape.batch_jacobian(y, x)\njb.shape", "(7, 6, 5)"),
    (L02, "error = mt.reduce_max(abs(jb - j_sum))", "0.0"),
    (L02, "y = bn(y, training=True)", "j.shape: (7, 6, 7, 5)"),
    (L02, "_ = plt.title('These slices are not diagonal')", None),
    (L02, "print(f'jb.shape: {jb.shape}')", "jb.shape: (7, 6, 5)"),
    (L02, "mt.autodiff.ForwardAccumulator(primals=x, tangents=v)", None),
]

SEED_002 = [  # the Q&A on the four eager gradient APIs, the reference for lesson 03
    (L03, "s = weighted_sum(5., 7.)\nprint(s.numpy())", "31.0"),
    (L03, "[w1_grad] = tape.gradient(s, [w1])", "5.0"),
    (L03, "grad_fn = mt.gradients_function(weighted_sum)\nx1_grad, x2_grad = grad_fn(5., 7.)",
     "2.0"),
    (L03, 'mt.gradients_function(weighted_sum_with_weights, params=["w1", "w2"])', "7.0"),
    (L03, "[w1_grad, w2_grad] = grad_fn(w1, 5., w2, 7.)", "7.0"),
    (L03, "grad_fn = mt.implicit_gradients(weighted_sum)\n"
          "[(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)", "5.0"),
    (L03, "assert w1_var is w1", None),
    (L03, "w1 = mt.Variable(2., trainable=False)", None),
    (L03, "s, [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)", "31.0"),
    (L03, "mt.grad(weighted_sum_with_weights, argnums=(0, 2))", "5.0 7.0"),
]

CHECKS = [("001", *c) for c in SEED_001] + [("000", *c) for c in SEED_000] + \
    [("004", *c) for c in SEED_004] + [("003", *c) for c in SEED_003] + \
    [("002", *c) for c in SEED_002]

_cache: dict[str, nbformat.NotebookNode] = {}


def lesson(name: str) -> nbformat.NotebookNode:
    if name not in _cache:
        path = NOTEBOOKS / name
        assert path.exists(), f"{path} is missing: run `make notebooks`"
        _cache[name] = nbformat.read(path, as_version=4)
    return _cache[name]


def output_lines(cell) -> list[str]:
    text = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            text.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            text.append(out.data.get("text/plain", "") + "\n")
    return [line.rstrip() for line in "".join(text).splitlines()]


def contains_lines(lines: list[str], expected: list[str]) -> bool:
    n = len(expected)
    return any(lines[i:i + n] == expected for i in range(len(lines) - n + 1))


@pytest.mark.parametrize("seed,name,snippet,expected", CHECKS,
                         ids=[f"{c[0]}-{c[2][:40]}" for c in CHECKS])
def test_seed_example_is_in_a_lesson(seed, name, snippet, expected):
    cells = [c for c in lesson(name).cells if c.cell_type == "code" and snippet in c.source]
    assert cells, f"seed {seed}: no code cell of {name} contains {snippet!r}"
    if expected is None:
        return
    wanted = [line.rstrip() for line in expected.splitlines()]
    outputs = [output_lines(c) for c in cells]
    assert any(contains_lines(lines, wanted) for lines in outputs), (
        f"seed {seed}: in {name}, the cell with {snippet!r} should print {expected!r}; "
        f"its stored output is {outputs!r} (re-run `make notebooks`?)")


def test_lessons_are_stored_executed():
    # nbval only compares cells that have outputs: a lesson committed unexecuted proves nothing.
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        assert code, f"{path.name} has no code"
        unexecuted = [c.source.splitlines()[0] for c in code if c.execution_count is None
                      and "nbval-skip" not in c.metadata.get("tags", [])]
        assert not unexecuted, f"{path.name}: cells never executed: {unexecuted[:3]}"


def test_lessons_open_with_goals_and_close_with_exercises():
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert nb.cells[0].cell_type == "markdown" and "learn" in nb.cells[0].source, path.name
        tail = "".join(c.source for c in nb.cells[-6:] if c.cell_type == "markdown")
        assert "Exercises" in tail or "<details>" in tail, path.name
        assert "<details><summary>Answer</summary>" in nb.cells[-1].source, path.name


# -- the lesson format (notebooks/README.md) -----------------------------------------------------

def lesson_sources():
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def test_every_lesson_has_a_source_and_a_notebook():
    sources = {p.stem for p in lesson_sources()}
    notebooks = {p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    assert sources, f"no lesson sources notebooks/NN_name.py in {NOTEBOOKS}"
    assert notebooks == sources, (
        f"lessons without a notebook: {sorted(sources - notebooks)} (run "
        f"scripts/run_notebooks.py on them); notebooks without a source: "
        f"{sorted(notebooks - sources)}")


@pytest.mark.parametrize("source", lesson_sources(), ids=lambda p: p.stem)
def test_notebook_has_the_cells_of_its_source(source):
    # The .py is what people edit; the .ipynb must hold the same cells (jupytext --sync, which
    # scripts/run_notebooks.py runs), or nbval tests something else than what was reviewed.
    jupytext = pytest.importorskip("jupytext")
    text = jupytext.read(source)
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)

    def cells(notebook):
        return [(c.cell_type, c.source, sorted(c.metadata.get("tags", [])))
                for c in notebook.cells]

    assert cells(text) == cells(nb), (
        f"{source.with_suffix('.ipynb').name} is out of date with {source.name}: run "
        f".venv/bin/python scripts/run_notebooks.py {source.relative_to(NOTEBOOKS.parent)}")


@pytest.mark.parametrize("source", lesson_sources(), ids=lambda p: p.stem)
def test_lesson_format(source):
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    number = source.name[:2]
    code = [c for c in nb.cells if c.cell_type == "code"]
    # The first code cell is what a learner writes, plus the one set-up line.
    assert "import minitape as mt" in code[0].source, code[0].source
    assert "mt.notebook.setup(" in code[0].source, code[0].source
    # Test markers are cell tags, not comments a learner has to read.
    marked = [c.source.splitlines()[0] for c in code if c.source.startswith("# NBVAL")]
    assert not marked, f"{source.name}: use cell tags instead of {marked}"
    # Deterministic cell ids (scripts/run_notebooks.py gives new cells NN-<hash>).
    bad = [c.get("id") for c in nb.cells if not str(c.get("id", "")).startswith(f"{number}-")]
    assert not bad, f"{source.name}: cell ids not made by run_notebooks.py: {bad[:3]}"
    # Nothing says which translation or copy of a guide an example came from.
    for cell in nb.cells:
        for word in ("Korean", "Chinese", "Spanish", "reader's notebook"):
            assert word not in cell.source, f"{source.name}: {word!r} in {cell.source[:80]!r}"
