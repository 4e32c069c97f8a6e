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
        np.testing.assert_allclose(np.asarray(last[v.id]), tape.gradient(loss, v).numpy(),
                                   rtol=1e-6)
    # Independent check of dloss/dx: closed form with NumPy in float64.
    xs, ws = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    s = np.sin(3 * xs) @ ws
    np.testing.assert_allclose(np.asarray(last[x.id]), 2 * s * ws * 3 * np.cos(3 * xs),
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
    bundle, metadata = p._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert metadata == {"minitape": {"static_fallback": "text/html"}}   # (pre_save_hook)


# -- the quiz asks before it tells ---------------------------------------------------------------

def _shown_numbers(player):
    """Every number on screen: in the sentence and in the drawing's text (labels)."""
    import html as html_module
    import re
    texts = re.findall(r">([^<>]*)</text>", player.svg())
    words = " ".join([player.text] + [html_module.unescape(t) for t in texts])
    return [float(n) for n in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?", words)]


def _near(value, numbers):
    return any(abs(n - value) <= 0.01 * abs(value) for n in numbers)   # labels keep 4 digits


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_quiz_hides_the_asked_number_and_the_new_total_until_answered():
    # s = ((x * x) * x) ** 2 = x**6 at x = 1.5, by hand: ds/db = 2b = 6.75; Mul #2 sends
    # ds/da = 6.75 * x = 10.125 and ds/dx = 6.75 * a = 15.1875; Mul #1 sends
    # ds/dx = 10.125 * 2x = 30.375, so ds/dx = 15.1875 + 30.375 = 45.5625 = 6 * 1.5**5.
    x = mt.Variable(1.5)
    with mt.GradientTape(persistent=True) as tape:
        a = x * x
        b = a * x
        s = b * b
    player = TapePlayer(tape, s, x, quiz=True, contributions=True)
    asked = {k: float(st.expected) for k, st in enumerate(player.steps)
             if st.kind == "backward"}
    assert sorted(asked.values()) == [6.75, 10.125, 30.375]
    totals = {6.75: [], 10.125: [15.1875], 30.375: [45.5625]}   # what the step adds up to
    for k, number in asked.items():
        player.step = k
        assert player.asking() and player.text.endswith(" = ?")
        shown = _shown_numbers(player)
        for hidden in [number] + totals[number]:
            assert not _near(hidden, shown), (player.text, hidden, shown)
        wrong = k == max(asked)
        assert player.answer(number + 1.0 if wrong else number) is not wrong
        # Answered, right or wrong: the sentence gives the chain-rule product, the drawing
        # the number and the new total.
        assert not player.asking() and "*" in player.text
        shown = _shown_numbers(player)
        assert _near(number, shown) and all(_near(t, shown) for t in totals[number])
        assert ("not quite" if wrong else "right") in player.feedback
    player.step = len(player) - 1
    assert player.text == "done: ds/dx = 15.19 + 30.38 = 45.56"
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), 45.5625)


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_quiz_frames_html_asks_first_and_keeps_the_answer_closed():
    import html.parser

    tape, x, y, z = _seed_tape()
    player = TapePlayer(tape, z, x, names={"x": x, "y": y, "z": z}, quiz=True)

    class Text(html.parser.HTMLParser):
        """A frame's text outside any <details> (what shows before the learner opens
        anything), and inside."""

        def __init__(self):
            super().__init__()
            self.depth, self.open_text, self.hidden_text = 0, [], []

        def handle_starttag(self, tag, attrs):
            self.depth += tag == "details"

        def handle_endtag(self, tag):
            self.depth -= tag == "details"

        def handle_data(self, data):
            (self.hidden_text if self.depth else self.open_text).append(data)

    def frames(page):
        texts = []
        for part in page.split("<section")[1:]:
            t = Text()
            t.feed("<section" + part.split("</section>")[0] + "</section>")
            texts.append((" ".join(t.open_text), " ".join(t.hidden_text)))
        return texts

    # Seed 001: dz/dy = 18 and dz/dx = 108 are asked (steps 2 and 3).
    quiz = frames(player.frames_html())
    assert len(quiz) == len(player.steps)
    for k, asked, rule in ((2, "18.0", "dz/dy = 2*y = 18.0"),
                           (3, "108.0", "dz/dx = dz/dy * 2*x = 108.0")):
        shown, answer = quiz[k]
        assert shown.startswith(f"step {k} of 4: backward through Mul")
        assert shown.endswith(" = ?") or " = ? " in shown
        assert asked not in shown and rule in answer and asked in answer
    assert "data-expected=\"[18.0]\"" in player.frames_html()
    # Without quiz=True the same frames show every sentence openly.
    plain = frames(TapePlayer(tape, z, x, names={"x": x, "y": y, "z": z}).frames_html())
    assert "dz/dy = 2*y = 18.0" in plain[2][0] and not any(h for _, h in plain)
