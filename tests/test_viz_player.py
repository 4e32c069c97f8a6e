"""minitape.viz.TapePlayer: the steps, checked as state (no browser)."""

import shutil

import numpy as np
import pytest

import minitape as mt
from minitape.viz import TapePlayer


def _seed_tape(persistent=True):
    # Seed 001: x = 3, y = x*x, z = y*y: dz/dy = 2y = 18, dz/dx = 4x**3 = 108.
    x = mt.constant(3.0)
    with mt.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    return tape, x, y, z


def test_forward_then_backward_steps_with_the_seed_numbers():
    tape, x, y, z = _seed_tape()
    p = TapePlayer(tape, z, x, names={"x": x, "y": y, "z": z})
    assert [s.kind for s in p.steps] == ["forward", "forward", "backward", "backward", "done"]
    assert [s.highlight for s in p.steps] == ["op1", "op2", "op2", "op1", "t1"]
    p.step = 0
    assert p.text == "forward through Mul (#1): y = x * x = 9.0"
    assert p.highlighted == "op1"
    p.step = 2
    assert p.text == "backward through Mul (#2): dz/dy = 2*y = 18.0"
    p.step = 3
    assert p.text == "backward through Mul (#1): dz/dx = dz/dy * 2*x = 108.0"
    p.step = 4
    assert p.text == "done: dz/dx = 108.0"
    assert p.highlighted == "t1"
    with pytest.raises(ValueError, match="between 0 and 4"):
        p.step = 5


def test_backward_values_match_the_tape_gradients():
    x = mt.Variable([1.0, 2.0], name="x")
    w = mt.Variable([[0.5], [-1.0]], name="w")
    with mt.GradientTape(persistent=True) as tape:
        h = mt.math.sin(x * 3.0)
        u = mt.reshape(h, [1, 2])
        loss = mt.reduce_sum(mt.matmul(u, w) ** 2)
    p = TapePlayer(tape, loss, [x, w])
    last = p.steps[-1].grads
    for v in (x, w, h, u):
        np.testing.assert_allclose(np.asarray(last[v._id]), tape.gradient(loss, v).numpy(),
                                   rtol=1e-6)
    # Independent check of dloss/dx: closed form with NumPy in float64.
    xs, ws = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    s = np.sin(3 * xs) @ ws
    np.testing.assert_allclose(np.asarray(last[x._id]), 2 * s * ws * 3 * np.cos(3 * xs),
                               rtol=1e-5)
    assert p.steps[-1].text.startswith("done: dloss/dx = ")    # the names the code used


def test_works_on_an_unreleased_non_persistent_tape_and_leaves_it_usable():
    tape, x, y, z = _seed_tape(persistent=False)
    p = TapePlayer(tape, z, x)
    assert p.steps[-1].text.endswith("= 108.0")
    assert tape.gradient(z, x).numpy() == 108.0      # the player released nothing
    with pytest.raises(RuntimeError, match="persistent=True"):
        TapePlayer(tape, z, x)


def test_player_inside_the_context_does_not_record():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
        n = len(tape.operations)
        TapePlayer(tape, y, x)
        assert len(tape.operations) == n


def test_stop_gradient_and_missing_gradient_steps():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x * mt.stop_gradient(x)
    p = TapePlayer(tape, y, x)
    texts = [s.text for s in p.steps]
    assert any("StopGradient" in t and "no gradient" in t for t in texts)
    assert texts[-1].endswith("= 2.0")                # only the first factor: d/dx = x_stopped

    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    with mt.GradientTape(persistent=True) as tape:
        out = mt.image.adjust_contrast(image, 0.1)
    p = TapePlayer(tape, out, image)
    assert "LookupError" in p.steps[-2].text


def test_rejects_bad_arguments():
    with pytest.raises(TypeError):
        TapePlayer("tape", mt.constant(1.0))
    tape, x, y, z = _seed_tape()
    with pytest.raises(TypeError):
        TapePlayer(tape, np.float32(1.0), x)


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_widget_slider_drives_the_state_and_the_svg():
    import ipywidgets as widgets
    tape, x, y, z = _seed_tape()
    p = TapePlayer(tape, z, x, names={"x": x, "y": y, "z": z})
    box = p
    assert isinstance(box, widgets.VBox)                 # the player is itself a widget
    play, slider = box.children[0].children
    assert isinstance(play, widgets.Play) and slider.max == len(p.steps) - 1
    slider.value = 2
    assert p.step == 2 and "18.0" in box.children[1].value
    svg = box.children[3].value
    assert "<svg" in svg and "#1f5fbf" in svg           # the highlighted op
    p.step = 3
    assert slider.value == 3 and "108.0" in box.children[1].value
    bundle = p._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
