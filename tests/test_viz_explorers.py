"""JacobianExplorer and DescentExplorer: the state behind the pictures, checked as data.

The Jacobians are compared with ``tape.jacobian`` and with closed forms; the descent paths with
closed forms, with ``mt.optimizers.SGD`` (an independent implementation of the momentum rule)
and with a NumPy Newton iteration on Rosenbrock's function. Pictures are checked as the data on
their axes, never as pixels; the widgets as the values of their controls.
"""

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import minitape as mt  # noqa: E402
from minitape.viz import DescentExplorer, JacobianExplorer  # noqa: E402

RNG = np.random.default_rng(12)
W = RNG.normal(size=(3, 4))


def tall(x):
    """(2, 3) -> (2, 4) = tanh(x @ W): a batch of 2 independent rows."""
    return mt.math.tanh(x @ mt.constant(W))


def tall_jacobian(x):
    """Closed form of d tanh(x @ W) / dx, flattened to (8, 6)."""
    y = np.tanh(x @ W)
    j = np.zeros((2, 4, 2, 3))
    for b in range(2):
        j[b, :, b, :] = (1 - y[b] ** 2)[:, None] * W.T
    return j.reshape(8, 6)


X = RNG.normal(size=(2, 3))


@pytest.fixture(scope="module")
def explorer():
    return JacobianExplorer(tall, X, repeat=1)


def tape_jacobian(f, x):
    x = mt.constant(x)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.jacobian(y, x).numpy().reshape(y.numpy().size, x.numpy().size)


# -- JacobianExplorer ----------------------------------------------------------------------------

def test_passes_and_the_full_jacobian(explorer):
    assert explorer.passes == {"reverse": 8, "forward": 6, "vectorized": 1}
    assert (explorer.m, explorer.n) == (8, 6)
    np.testing.assert_allclose(explorer.full, tall_jacobian(X), rtol=1e-10, atol=1e-12)
    assert explorer.full.dtype == np.float64


def test_reverse_steps_fill_the_rows_of_tape_jacobian(explorer):
    j = tape_jacobian(tall, X)
    explorer.mode = "reverse"
    for k in range(explorer.passes["reverse"] + 1):
        explorer.step = k
        current = explorer.current
        assert current.shape == (8, 6)
        np.testing.assert_allclose(current[:k], j[:k], rtol=1e-10, atol=1e-12)
        assert np.all(np.isnan(current[k:]))


def test_forward_steps_fill_the_columns_of_tape_jacobian(explorer):
    j = tape_jacobian(tall, X)
    explorer.mode = "forward"
    for k in range(explorer.passes["forward"] + 1):
        explorer.step = k
        np.testing.assert_allclose(explorer.current[:, :k], j[:, :k], rtol=1e-10, atol=1e-12)
        assert np.all(np.isnan(explorer.current[:, k:]))


def test_vectorized_is_one_pass(explorer):
    explorer.mode = "vectorized"
    explorer.step = 0
    assert np.all(np.isnan(explorer.current))
    explorer.step = 1
    np.testing.assert_allclose(explorer.current, tall_jacobian(X), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="from 0 to 1"):
        explorer.step = 2


def test_changing_mode_clips_the_step(explorer):
    explorer.mode = "reverse"
    explorer.step = 7
    explorer.mode = "forward"
    assert explorer.step == 6
    explorer.mode = "vectorized"
    assert explorer.step == 1
    explorer.mode = "reverse"
    assert explorer.step == 1


def test_text_names_the_passes_and_the_measured_times(explorer):
    explorer.mode, explorer.step = "reverse", 3
    assert set(explorer.times) == {"reverse", "forward", "vectorized"}
    assert all(isinstance(t, float) and t > 0 for t in explorer.times.values())
    lines = explorer.text.split("\n")
    assert lines[0] == "reverse mode, pass 3 of 8 (one VJP per output: 3 of 8 rows)"
    assert lines[1] == ("passes needed for f: R^6 -> R^8: reverse 8 (one per output), "
                        "forward 6 (one per input), vectorized 1")
    assert lines[2].startswith("measured on this input: reverse ")
    assert repr(explorer) == "<JacobianExplorer reverse mode, pass 3 of 8: f: R^6 -> R^8>"


def test_figure_shows_current_with_a_zero_centred_colour_map(explorer):
    explorer.mode, explorer.step = "forward", 2
    fig = explorer.figure()
    ax = fig.axes[0]
    (im,) = ax.get_images()
    data = im.get_array()
    np.testing.assert_allclose(data.filled(np.nan), explorer.current, equal_nan=True)
    assert np.all(data.mask[:, 2:]) and not np.any(data.mask[:, :2])
    lim = np.abs(explorer.full).max()
    assert im.get_clim() == pytest.approx((-lim, lim))
    assert im.get_cmap().name.startswith("seismic")
    (outline,) = ax.patches                                 # the latest column, outlined
    assert (outline.get_x(), outline.get_width(), outline.get_height()) == (0.5, 1, 8)
    assert ax.get_title() == "forward mode: pass 2 of 6"
    assert len(fig.axes) == 2                               # the image and its colour bar
    explorer.mode, explorer.step = "reverse", 3
    (outline,) = explorer.figure().axes[0].patches          # the latest row
    assert (outline.get_y(), outline.get_width(), outline.get_height()) == (1.5, 6, 1)


def test_batch_marks_the_blocks_and_only_the_diagonal_ones_are_non_zero():
    e = JacobianExplorer(tall, X, batch=True, repeat=0, step=8)
    assert e.batch == 2
    blocks = e.full.reshape(2, 4, 2, 3)
    assert np.all(blocks[0, :, 1, :] == 0) and np.all(blocks[1, :, 0, :] == 0)
    assert np.all(blocks[0, :, 0, :] != 0)
    assert "batch_jacobian computes just those (24 of 48 entries)" in e.text
    ax = e.figure().axes[0]
    # one horizontal and one vertical line between the two blocks
    xs = sorted(tuple(line.get_xdata()) for line in ax.get_lines())
    assert (2.5, 2.5) in xs and (0, 1) in xs
    with pytest.raises(ValueError, match="same leading"):
        JacobianExplorer(lambda x: mt.reduce_sum(x), X, batch=True, repeat=0)


def test_wide_and_tall_functions_swap_the_bargain():
    wide = JacobianExplorer(lambda x: mt.reduce_sum(x * x), np.arange(5.0), repeat=0)
    assert wide.passes == {"reverse": 1, "forward": 5, "vectorized": 1}
    np.testing.assert_allclose(wide.full, [2 * np.arange(5.0)])
    tall_ = JacobianExplorer(lambda x: mt.stack([x, x * x, mt.math.sin(x)]),
                             mt.constant([0.5]), repeat=0)
    assert tall_.passes == {"reverse": 3, "forward": 1, "vectorized": 1}
    np.testing.assert_allclose(tall_.full[:, 0], [1.0, 1.0, np.cos(0.5)], rtol=1e-6)
    assert tall_.times == {"reverse": None, "forward": None, "vectorized": None}
    assert "measured on this input" not in tall_.text and "not measured yet" in tall_.text
    tall_.measure(repeat=1)
    assert "measured on this input" in tall_.text and all(tall_.times.values())


def test_an_output_that_does_not_depend_on_x_gives_zeros():
    e = JacobianExplorer(lambda x: mt.stack([x[0] * 0.0 + 1.0, x[1] * 2.0]),
                         mt.constant([1.0, 2.0]), repeat=0, step=2)
    np.testing.assert_allclose(e.current, [[0.0, 0.0], [0.0, 2.0]])


def test_jacobian_explorer_errors():
    with pytest.raises(TypeError, match="function"):
        JacobianExplorer(3.0, [1.0])
    with pytest.raises(TypeError, match="floating dtype"):
        JacobianExplorer(lambda x: x, mt.constant([1, 2]))
    with pytest.raises(TypeError, match="minitape Tensor"):
        JacobianExplorer(lambda x: np.sin(x), [1.0, 2.0])
    with pytest.raises(ValueError, match="mode must be one of"):
        JacobianExplorer(lambda x: x * x, [1.0], mode="sideways", repeat=0)
    with pytest.raises(ValueError, match="max_passes=3"):
        JacobianExplorer(lambda x: x * x, [1.0, 2.0, 3.0, 4.0], max_passes=3, repeat=0)
    e = JacobianExplorer(lambda x: x * x, [1.0, 2.0], repeat=0)
    with pytest.raises(ValueError, match="step must be an int from 0 to 2"):
        e.step = 3
    with pytest.raises(ValueError, match="step must be"):
        e.step = 1.5


def test_jacobian_widget_mirrors_the_state(explorer):
    explorer.mode, explorer.step = "reverse", 1
    before = explorer._image.value
    explorer._slider.value = 5                         # what a learner's drag does
    assert explorer.step == 5 and explorer._image.value != before
    assert "pass 5 of 8" in explorer._label.value
    explorer._mode_buttons.value = "forward"
    assert explorer.mode == "forward" and explorer.step == 5
    assert (explorer._slider.max, explorer._play.max) == (6, 6)
    explorer.step = 2                                   # and the other way round
    assert explorer._slider.value == 2 and explorer._play.value == 2
    explorer.mode = "vectorized"
    assert explorer._slider.max == 1 and explorer._slider.value == 1


def test_explorers_carry_a_png_for_static_viewers(explorer):
    bundle, metadata = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert metadata == {"minitape": {"static_fallback": "image/png"}}   # (pre_save_hook)
    assert bundle["text/plain"] == repr(explorer)
    import base64
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")


# -- DescentExplorer -------------------------------------------------------------------------------

A, B = 1.0, 10.0


def quadratic(p):
    return 0.5 * (A * p[0] ** 2 + B * p[1] ** 2)


def quadratic_matmul(p):
    """The same quadratic through a matmul: does not work on a (2, N) grid at once."""
    h = mt.constant(np.diag([A, B]))
    return 0.5 * mt.reduce_sum(p * mt.reshape(h @ mt.reshape(p, [2, 1]), [2]))


def rosenbrock(p):
    return (1.0 - p[0]) ** 2 + 100.0 * (p[1] - p[0] ** 2) ** 2


@pytest.mark.parametrize("f", [quadratic, quadratic_matmul])
def test_gradient_descent_on_a_quadratic_is_the_closed_form(f):
    x0 = np.array([1.5, -1.0])
    lr, steps = 0.15, 12
    d = DescentExplorer(f, x0, learning_rate=lr, steps=steps, resolution=20, arrows=5)
    k = np.arange(steps + 1)[:, None]
    expected = x0 * (1 - lr * np.array([A, B])) ** k      # x_k = (1 - lr a)^k x_0
    assert d.path.shape == (steps + 1, 2)
    np.testing.assert_allclose(d.path, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d.values, 0.5 * (A * expected[:, 0] ** 2
                                                + B * expected[:, 1] ** 2), rtol=1e-12)
    assert d.stopped is None


def test_momentum_matches_keras_sgd_with_momentum():
    x0 = np.array([1.5, -1.0], dtype=np.float32)
    d = DescentExplorer(quadratic, mt.constant(x0), method="momentum", learning_rate=0.05,
                        momentum=0.8, steps=15, resolution=20, arrows=5)
    w = mt.Variable(x0)
    opt = mt.optimizers.SGD(learning_rate=0.05, momentum=0.8)
    expected = [x0]
    for _ in range(15):
        with mt.GradientTape() as tape:
            loss = quadratic(w)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        expected.append(w.numpy())
    np.testing.assert_allclose(d.path, np.array(expected), rtol=1e-5, atol=1e-6)


def test_newton_lands_on_the_minimum_of_a_quadratic_in_one_step():
    d = DescentExplorer(lambda p: quadratic(p) + p[0] - 3.0 * p[1], np.array([2.0, 1.0]),
                        method="newton", steps=3, resolution=20, arrows=5)
    minimum = [-1.0 / A, 3.0 / B]                        # where A x + 1 = 0, B y - 3 = 0
    np.testing.assert_allclose(d.path[1:], [minimum] * 3, rtol=1e-12, atol=1e-12)


def test_newton_on_rosenbrock_matches_a_numpy_newton_iteration():
    x = np.array([-1.2, 1.0])
    d = DescentExplorer(rosenbrock, x, method="newton", steps=6, resolution=20, arrows=5)
    expected = [x]
    for _ in range(6):
        a, b = x
        g = np.array([-2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a)])
        h = np.array([[2 - 400 * (b - 3 * a * a), -400 * a], [-400 * a, 200.0]])
        x = x - np.linalg.solve(h, g)
        expected.append(x)
    np.testing.assert_allclose(d.path, np.array(expected), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.path[-1], [1.0, 1.0], atol=1e-8)


def test_a_diverging_path_and_a_singular_hessian_stop_with_nan():
    d = DescentExplorer(quadratic, np.array([1.0, 1.0]), learning_rate=5.0, steps=400,
                        resolution=10, arrows=3)
    assert d.stopped.startswith("diverged at step")
    k = int(d.stopped.split()[3])
    assert np.all(np.isfinite(d.path[:k])) and np.all(np.isnan(d.path[k:]))
    assert d.path.shape == (401, 2) and "diverged" in d.text
    flat = DescentExplorer(lambda p: p[0] ** 2 + p[1], np.array([1.0, 1.0]), method="newton",
                           steps=2, resolution=10, arrows=3)
    assert flat.stopped == "the Hessian is singular at step 0: no Newton step"
    assert np.all(np.isnan(flat.path[1:]))


@pytest.mark.parametrize("f", [quadratic, quadratic_matmul])
def test_grid_and_gradient_field_are_f_and_its_gradient(f):
    d = DescentExplorer(f, np.array([1.0, 1.0]), bounds=((-2, 2), (-1, 3)), resolution=7,
                        arrows=4)
    X, Y, Z = d.grid
    np.testing.assert_allclose(X[0], np.linspace(-2, 2, 7))
    np.testing.assert_allclose(Y[:, 0], np.linspace(-1, 3, 7))
    np.testing.assert_allclose(Z, 0.5 * (A * X**2 + B * Y**2), rtol=1e-12)
    FX, FY, U, V = d.field
    assert FX.shape == (4, 4)
    np.testing.assert_allclose(FX[0], np.linspace(-2, 2, 6)[1:-1])
    np.testing.assert_allclose(U, A * FX, rtol=1e-12)
    np.testing.assert_allclose(V, B * FY, rtol=1e-12)


def test_default_bounds_hold_x0_and_the_origin():
    d = DescentExplorer(quadratic, [3.0, -1.0], resolution=5, arrows=3)
    assert d.bounds == ((-4.5, 4.5), (-4.5, 4.5))
    d = DescentExplorer(quadratic, [0.1, 0.2], resolution=5, arrows=3)
    assert d.bounds == ((-2.0, 2.0), (-2.0, 2.0))


def test_descent_figure_draws_the_path_contours_and_downhill_arrows():
    d = DescentExplorer(quadratic, np.array([1.5, -1.0]), bounds=((-2, 2), (-2, 2)),
                        learning_rate=0.1, steps=5, resolution=15, arrows=4)
    fig = d.figure()
    ax = fig.axes[0]
    path_line = next(line for line in ax.get_lines() if line.get_label() == "gradient descent")
    np.testing.assert_allclose(path_line.get_xydata(), d.path)
    start = next(line for line in ax.get_lines() if line.get_label() == "x0")
    np.testing.assert_allclose(start.get_xydata(), [[1.5, -1.0]])
    from matplotlib.contour import ContourSet
    from matplotlib.quiver import Quiver
    assert any(isinstance(c, ContourSet) for c in ax.collections)
    (quiver,) = [c for c in ax.collections if isinstance(c, Quiver)]
    FX, FY, U, V = d.field
    norm = np.hypot(U, V)
    np.testing.assert_allclose(quiver.U, (-U / norm).ravel())   # downhill, unit length
    np.testing.assert_allclose(quiver.V, (-V / norm).ravel())
    assert ax.get_xlim() == (-2.0, 2.0) and ax.get_ylim() == (-2.0, 2.0)
    assert ax.get_title() == "gradient descent, learning rate 0.1"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x[0]", "x[1]")
    named = DescentExplorer(quadratic, [0.5, 0.5], labels=("w", "b"), resolution=5, arrows=3)
    assert (named.figure().axes[0].get_xlabel(), named._controls["x0_1"].description) == \
        ("w", "start b")
    with pytest.raises(ValueError, match="two strings"):
        DescentExplorer(quadratic, [0.5, 0.5], labels=("w",))


def test_settings_redraw_and_change_the_path():
    d = DescentExplorer(quadratic, np.array([1.5, -1.0]), learning_rate=0.1, steps=4,
                        resolution=10, arrows=3)
    first = d.path
    d.learning_rate = 0.05
    assert not np.allclose(d.path, first)
    d.steps = 7
    assert d.path.shape == (8, 2)
    d.x0 = [0.5, 0.5]
    np.testing.assert_allclose(d.path[0], [0.5, 0.5])
    d.method = "newton"
    np.testing.assert_allclose(d.path[1:], 0.0, atol=1e-12)
    assert d.text.startswith("newton (x <- x - H^-1 g), 7 steps from (0.5, 0.5): ends at")
    assert repr(d) == "<DescentExplorer newton, 7 steps from (0.5, 0.5)>"


def test_descent_widget_mirrors_the_state():
    d = DescentExplorer(quadratic, np.array([1.5, -1.0]), bounds=((-2, 2), (-2, 2)),
                        learning_rate=0.1, steps=4, resolution=10, arrows=3)
    c = d._controls
    before = d._image.value
    c["steps"].value = 9                                # what a learner's drag does
    assert d.steps == 9 and d.path.shape == (10, 2) and d._image.value != before
    c["x0_0"].value = -1.0
    np.testing.assert_allclose(d.x0, [-1.0, -1.0])
    c["method"].value = "newton"
    assert d.method == "newton" and c["learning_rate"].disabled and c["momentum"].disabled
    d.method = "momentum"                               # and the other way round
    assert c["method"].value == "momentum" and not c["momentum"].disabled
    d.momentum = 0.5
    assert c["momentum"].value == 0.5
    assert "momentum 0.5, learning rate 0.1" in d._label.value
    bundle, _ = d._repr_mimebundle_()
    assert {"image/png", "application/vnd.jupyter.widget-view+json"} <= set(bundle)


def test_descent_explorer_errors():
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        DescentExplorer(quadratic, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="scalar"):
        DescentExplorer(lambda p: p * p, [1.0, 2.0])
    with pytest.raises(TypeError, match="minitape Tensor"):
        DescentExplorer(lambda p: np.sum(p), [1.0, 2.0])
    with pytest.raises(TypeError, match="gradient of f is None"):
        DescentExplorer(lambda p: mt.constant(1.0), [1.0, 2.0])
    with pytest.raises(ValueError, match="outside bounds"):
        DescentExplorer(quadratic, [5.0, 0.0], bounds=((-1, 1), (-1, 1)))
    with pytest.raises(ValueError, match="min < max"):
        DescentExplorer(quadratic, [0.0, 0.0], bounds=((1, -1), (-1, 1)))
    d = DescentExplorer(quadratic, [0.5, 0.5], resolution=5, arrows=3)
    with pytest.raises(ValueError, match="method must be one of"):
        d.method = "adam"
    with pytest.raises(ValueError, match="learning_rate must be a number"):
        d.learning_rate = -1.0
    with pytest.raises(ValueError, match="steps must be an int"):
        d.steps = 2.5
    with pytest.raises(ValueError, match="outside bounds"):
        d.x0 = [10.0, 0.0]


def test_the_explorers_load_ipywidgets_only_when_used():
    heavy = ("matplotlib", "ipywidgets")
    code = ("import sys, minitape as mt\nx = mt.Variable(1.0)\n"
            "with mt.GradientTape() as t:\n    y = x * x\nmt.viz.timeline_data(t)\n"
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
            "mt.viz.JacobianExplorer\n"
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))\n"
            "mt.viz.JacobianExplorer(lambda x: x * x, [1.0], repeat=0)\n"
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:3] == ["", "ipywidgets", "matplotlib,ipywidgets"]


def test_new_bounds_recompute_the_grid_and_the_start_sliders():
    d = DescentExplorer(quadratic, [0.5, 0.5], resolution=5, arrows=3)
    d.bounds = ((-1.0, 4.0), (0.0, 1.0))
    X, Y, Z = d.grid
    assert (X.min(), X.max(), Y.min(), Y.max()) == (-1.0, 4.0, 0.0, 1.0)
    c = d._controls
    assert (c["x0_0"].min, c["x0_0"].max, c["x0_1"].min, c["x0_1"].max) == (-1, 4, 0, 1)
    assert d.figure().axes[0].get_xlim() == (-1.0, 4.0)
    with pytest.raises(ValueError, match="outside bounds"):
        d.bounds = ((1.0, 4.0), (0.0, 1.0))          # x0[0] = 0.5 would be outside


def test_measure_times_every_mode_again():
    e = JacobianExplorer(lambda x: x * x, [1.0, 2.0], repeat=0)
    times = e.measure(repeat=1)
    assert times is e.times and set(times) == {"reverse", "forward", "vectorized"}
    assert all(t > 0 for t in times.values())
    assert "measured on this input: reverse" in e._label.value


def test_descent_explorer_keeps_the_learners_numbers():
    """0.3 stays 0.3: the start is not passed through float32, and a slider that rounds the
    learner's number to its step (and sends it back) does not change the setting."""
    import math
    d = DescentExplorer(quadratic, [0.3, -0.7], learning_rate=0.3, momentum=0.45, steps=3,
                        resolution=5, arrows=3)
    assert d.x0.tolist() == [0.3, -0.7] and d.path[0].tolist() == [0.3, -0.7]
    c = d._controls
    lr = c["learning_rate"]
    assert isinstance(lr, widgets.FloatLogSlider) and lr.step <= 0.01    # fine, logarithmic
    snapped = lr.base ** (round(math.log(0.3, lr.base) / lr.step) * lr.step)
    assert snapped != 0.3
    lr.value = snapped                       # the front end's echo of the rounded value
    assert d.learning_rate == 0.3 and "learning rate 0.3," in d.text
    c["momentum"].value = 0.45 + c["momentum"].step / 3
    assert d.momentum == 0.45
    c["x0_0"].value = 0.3 + c["x0_0"].step / 3
    assert d.x0.tolist() == [0.3, -0.7]
    lr.value = 0.05                          # a real move
    assert d.learning_rate == 0.05
    np.testing.assert_allclose(d.path[1], [0.3 * (1 - 0.05 * A), -0.7 * (1 - 0.05 * B)],
                               rtol=1e-6)   # x - lr * (A x, B y)
