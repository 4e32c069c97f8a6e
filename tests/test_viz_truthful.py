"""Drawings that tell the truth in the learner's words: visited ops, contributions, labels from
the learner's code, op numbers per tape, the player's accumulation sentences and quiz, the
player's self-contained HTML."""

import html.parser
import shutil

import numpy as np
import pytest

import minitape as mt
from minitape.viz import draw_tape, explain, tape_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="graphviz 'dot' is not installed")


def _issue_program():
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
        z = mt.math.sin(y)
        w = y + 1.0
    return tape, x, y, z, w


def test_only_the_ops_the_last_pass_went_through_are_visited():
    tape, x, y, z, w = _issue_program()
    tape.gradient(z, x)
    g = tape_graph(tape)
    visited = {op.type: op.visited for op in g.ops}
    assert visited == {"Mul": True, "Sin": True, "AddV2": False}
    dot = draw_tape(tape).source
    add = next(op.id for op in g.ops if op.type == "AddV2")
    # No gradient arrow leaves the AddV2 op: w did not contribute to dz/dx.
    assert not any(line.strip().startswith(f"{add} -> ") and "dashed" in line
                   for line in dot.splitlines())
    mul = next(op.id for op in g.ops if op.type == "Mul")
    assert any(line.strip().startswith(f"{mul} -> {g.tensor(x).id} ") and "dashed" in line
               for line in dot.splitlines())


def test_each_edge_carries_its_contribution_and_the_tensor_their_sum():
    tape, x, y, z, w = _issue_program()
    tape.gradient(y, x)
    g = tape_graph(tape)
    tx = g.tensor(x).id
    into_mul = [e for e in g.edges if e.tail == tx and e.kind == "input"
                and g.node(e.head).type == "Mul"]
    assert len(into_mul) == 2 and all(e.carried and float(e.gradient) == 3.0 for e in into_mul)
    assert float(g.tensor(x).gradient) == 6.0
    dot = draw_tape(tape, y, x, contributions=True).source
    assert "grad 3.0 + 3.0 = 6.0" in dot and "label=3.0" in dot


def test_labels_are_the_names_the_code_assigned():
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
        z = mt.math.sin(y)
        w = y + 1.0
        q = mt.math.sin(x * x)
        a, b = mt.unstack(mt.stack([x, y]))
        named = mt.identity(q, name="chosen")
    g = tape_graph(tape)
    labels = [g.label(t) for t in (x, y, z, w, q, a, b, named)]
    assert labels == ["x", "y", "z", "w", "q", "a", "b", "chosen"]
    inner = next(op for op in g.ops if op.type == "Mul" and op.number == 4)
    assert g.node(inner.outputs[0]).label == "x * x"            # a sub-expression
    op = g.op_of(tape.operations[0])
    assert op.source == "y = x * x" and op.location.startswith("test_viz_truthful.py:")


def test_labels_from_a_notebook_cell():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import minitape as mt", store_history=True)
        result = shell.run_cell(
            "x = mt.Variable(3.0)\n"
            "with mt.GradientTape(persistent=True) as tape:\n"
            "    y = x * x\n"
            "    z = mt.math.sin(y)\n"
            "    w = y + 1.0\n"
            "tape.gradient(z, x)\n"
            "g = mt.viz.tape_graph(tape)\n", store_history=True)
        assert result.success, result.error_in_exec
        g = shell.user_ns["g"]
        assert [t.label for t in g.tensors] == ["x", "y", "z", "1.0", "w"]
        assert g.ops[0].location.startswith("cell ") and g.ops[0].location.endswith(":3")
        assert g.ops[0].source == "y = x * x"
    finally:
        InteractiveShell.clear_instance()


def test_explain_uses_the_learners_names():
    with mt.GradientTape() as tape:
        speed = mt.constant(3.0)
        energy = speed * speed
    text = explain(tape, energy, speed)
    assert "the source speed" in text and "tape.watch(speed)" in text


def test_op_numbers_count_from_one_on_each_tape_after_other_programs():
    for _ in range(3):                        # other programs move the engine's counters
        with mt.GradientTape():
            v = mt.Variable(1.0)
            v * v
    tape, x, y, z, w = _issue_program()
    player = mt.viz.TapePlayer(tape, z, x)
    assert [op.number for op in tape_graph(tape).ops] == [1, 2, 3]
    assert player.steps[0].text.startswith("forward through Mul (#1): y = x * x")
    assert "#1" in draw_tape(tape).source and "#4" not in draw_tape(tape).source


def test_drawing_one_program_twice_gives_byte_identical_dot():
    sources = []
    for _ in range(2):
        tape, x, y, z, w = _issue_program()
        tape.gradient(z, x)
        sources.append(draw_tape(tape, z, x, contributions=True, source=True).source)
    assert sources[0] == sources[1]


def test_saved_tensors_are_orange_and_the_background_is_opaque():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = mt.math.exp(x)          # Exp saves its output, not its input
    g = tape_graph(tape)
    assert g.tensor(y).saved and not g.tensor(x).saved
    dot = draw_tape(tape).source
    assert "bgcolor=white" in dot and 'fillcolor="#fdd9a8"' in dot


@needs_dot
def test_control_characters_in_names_are_escaped():
    x = mt.Variable(1.0, name="a\x00b")
    with mt.GradientTape() as tape:
        y = x * 2.0
    dot = draw_tape(tape, y, x)
    assert "a\\x00b" in dot.source
    assert "<svg" in dot.pipe(format="svg", encoding="utf-8")


@needs_dot
def test_a_drawing_carries_a_png_next_to_its_svg():
    tape, x, y, z, w = _issue_program()
    bundle = draw_tape(tape)._repr_mimebundle_()
    assert bundle["image/png"][:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in bundle["image/svg+xml"]


# -- the player ------------------------------------------------------------------------------

def _fan_out():
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        a = x * 2.0
        b = x * 3.0
        s = a + b
    return tape, x, s


def test_the_player_says_what_each_step_adds_and_the_running_total():
    tape, x, s = _fan_out()
    player = mt.viz.TapePlayer(tape, s, x)
    backward = [st.text for st in player.steps if st.kind == "backward"]
    assert "adds 3.0 to ds/dx; total so far 3.0" in backward[1]
    assert "adds 2.0 to ds/dx; total so far 5.0" in backward[2]
    assert player.steps[-1].text == "done: ds/dx = 3.0 + 2.0 = 5.0"


def test_the_quiz_checks_the_learners_number():
    tape, x, s = _fan_out()
    player = mt.viz.TapePlayer(tape, s, x, quiz=True)
    player.step = next(k for k, st in enumerate(player.steps) if st.kind == "backward"
                       and st.op.type == "Mul")
    assert player.text.endswith("ds/dx = ?")
    assert float(player.expected) == 3.0
    assert player.answer(player.expected) is True
    assert "right" in player.feedback and "3.0" in player.feedback
    player.step = player.step + 1
    assert player.answer(7.0) is False
    assert "not quite" in player.feedback and "= 2.0" in player.feedback
    with pytest.raises(ValueError, match="asks no question"):
        player.step = 0
        player.answer(1.0)


@needs_dot
def test_the_player_is_a_widget_that_fits_in_a_box():
    import ipywidgets as widgets
    tape, x, s = _fan_out()
    player = mt.viz.TapePlayer(tape, s, x)
    box = widgets.VBox([player, widgets.Label("under the player")])
    assert box.children[0] is player and isinstance(player, widgets.VBox)
    bundle, _ = player._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    frames = bundle["text/html"].count('<img src="data:image/svg+xml;base64,')
    assert frames == len(player.steps)                                # the static fallback


class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.urls = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]


@needs_dot
def test_to_html_is_one_self_contained_page(tmp_path):
    tape, x, s = _fan_out()
    player = mt.viz.TapePlayer(tape, s, x)
    page = player.to_html()
    parser = _Collector()
    parser.feed(page)
    assert parser.tags.count("svg") == len(player.steps)
    assert parser.tags.count("section") == len(player.steps) and "script" in parser.tags
    assert parser.urls == [] and "http://" not in page.replace("http://www.w3.org", "")
    assert "https://" not in page
    path = tmp_path / "player.html"
    player.save_html(path)
    assert path.read_text(encoding="utf-8") == page


def test_player_values_match_gradient_on_a_random_program():
    rng = np.random.default_rng(0)
    w = mt.Variable(rng.normal(size=(3, 2)).astype(np.float32), name="w")
    x = mt.constant(rng.normal(size=(4, 3)).astype(np.float32))
    with mt.GradientTape(persistent=True) as tape:
        h = mt.math.tanh(x @ w)
        loss = mt.reduce_sum(h * h)
    player = mt.viz.TapePlayer(tape, loss, w)
    assert player.steps[-1].text.startswith("done: dloss/dw = ")
    final = player.steps[-1].grads[w.id]
    np.testing.assert_allclose(np.asarray(final), tape.gradient(loss, w).numpy(), rtol=1e-6)


def test_group_module_draws_each_layer_call_as_one_box():
    model = mt.layers.Sequential([mt.layers.Dense(3, activation="relu"), mt.layers.Dense(2)])
    x = mt.constant([[1.0, 2.0]])
    with mt.GradientTape() as tape:
        y = model(x)
        loss = mt.reduce_mean(y**2)
    tape.gradient(loss, model.trainable_variables)
    g = tape_graph(tape)
    first, second = (layer.name for layer in model.layers)   # dense, dense_1 (or later ones)
    assert [(op.module, op.module_call) for op in g.ops[:5]] == [
        (first, 1), (first, 1), (first, 1), (second, 2), (second, 2)]
    assert g.ops[0].module_params == ("kernel 2x3", "bias 3")
    dot = draw_tape(tape, loss, model.trainable_variables, group="module").source
    assert f"<B>{first} (Dense)</B>" in dot and f"<B>{second} (Dense)</B>" in dot
    assert "\top1 [" not in dot and "\top6 [" in dot            # Pow stays an op of its own
    assert f"\t{g.tensor(x).id} -> module1" in dot              # the data goes into the box
    assert f"module2 -> {g.tensor(y).id}" in dot                # and the result comes out
    with pytest.raises(ValueError, match="group"):
        draw_tape(tape, group="layers")


def test_a_large_tape_groups_by_module_by_default():
    model = mt.layers.Sequential([mt.layers.Dense(4, activation="relu") for _ in range(6)])
    x = mt.constant(np.ones((2, 4), np.float32))
    with mt.GradientTape() as tape:
        model(x)
    dot = draw_tape(tape, max_nodes=10).source
    assert dot.count("(Dense)</B>") == 6


def test_a_module_box_hides_the_constants_the_call_made_but_not_its_data():
    mt.random.set_seed(0)
    dense, drop = mt.layers.Dense(4), mt.layers.Dropout(0.5)
    x = mt.constant(np.ones((2, 3), np.float32))
    with mt.GradientTape() as tape:
        h = dense(x)
        drop(h, training=True)
    g = tape_graph(tape)
    mul = next(op for op in g.ops if op.type == "Mul")
    mask = next(i for i in mul.inputs if i != g.tensor(h).id)
    dot = draw_tape(tape, group="module").source
    assert f"\t{g.tensor(x).id} [" in dot and f"\t{g.tensor(h).id} [" in dot
    assert f"\t{mask} [" not in dot                 # Dropout's own mask: inside its box
