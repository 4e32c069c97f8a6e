"""minitape.viz.draw_tape: checked on the DOT source, never on SVG pixels."""

import re
import shutil

import numpy as np
import pytest

import minitape as mt
from minitape.recording import Operation
from minitape.viz import draw_tape, tape_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="graphviz 'dot' is not installed")


def node_names(dot):
    """Names of the nodes declared in a DOT source (``name [attrs]`` statements)."""
    names = re.findall(r"^\t(\w+) \[", dot.source, flags=re.M)
    return [n for n in names if n not in ("graph", "node", "edge")]


def nid(tape, thing):
    """The node id a drawing of ``tape`` gives an Operation or a Tensor (ids are counted per
    drawing: ``op1``, ``t1``, ...)."""
    g = tape_graph(tape)
    return g.op_of(thing).id if isinstance(thing, Operation) else g.tensor(thing).id


def node_line(dot, name):
    """The whole statement declaring node ``name`` (labels may span several lines)."""
    return re.search(rf"^\t{name} \[.*?\]\n(?=\t|\}})", dot.source, flags=re.M | re.S).group(0)


def test_ops_tensors_values_and_gradients_in_the_dot_source():
    x = mt.Variable(3.0, name="x")
    with mt.GradientTape() as tape:
        y = x**2
    dy = tape.gradient(y, x)
    dot = draw_tape(tape, y, x)
    op, tx, ty = nid(tape, tape.operations[0]), nid(tape, x), nid(tape, y)
    assert (op, tx, ty) == ("op1", "t1", "t3")          # the same ids whatever ran before
    assert set(node_names(dot)) >= {op, tx, ty}
    assert "<B>Pow</B>" in node_line(dot, op) and "#1" in node_line(dot, op)
    x_line = node_line(dot, tx)
    assert "<B>x</B>" in x_line and "Variable, watched,<BR/>source" in x_line
    assert "peripheries=2" in x_line
    assert f"grad {2 * 3.0}" in x_line and dy.numpy() == 6.0     # closed form 2x
    assert "= 9.0" in node_line(dot, ty)
    assert f"\t{tx} -> {op} [headlabel=x " in dot.source     # Pow's x (x ** y)
    assert f"\t{op} -> {tx} [" in dot.source and "dashed" in dot.source   # way back


def test_disconnected_parts_are_grey_and_stop_gradient_is_an_octagon():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape() as t:
        y_sq = y**2
        z = x**2 + mt.stop_gradient(y_sq)
    t.gradient(z, [x, y])
    dot = draw_tape(t, z, [x, y])
    stop = next(op for op in t.operations if op.type == "StopGradient")
    line = node_line(dot, nid(t, stop))
    assert "shape=octagon" in line and "gray70" in line and "blocks the gradient" in line
    assert "gray70" in node_line(dot, nid(t, y))
    assert "gray70" not in node_line(dot, nid(t, x))
    why_y, why_x = f"why_{nid(t, y)}", f"why_{nid(t, x)}"
    assert why_y in node_names(dot) and "stop_gradient" in node_line(dot, why_y)
    assert why_x not in node_names(dot)


def test_stop_recording_and_reset_notes():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    dot = draw_tape(t, z, [x, y])
    assert "stop_recording():" in dot.source
    g = tape_graph(t, z, [x, y])
    assert "stop_recording() block" in node_line(dot, f"why_{g.tensor(y).id}")
    # The note points at what the block computed, not at an op that was recorded.
    (event,) = g.events
    assert event.tensors == (g.tensor(y_sq).id,)
    assert f"stop_recording1 -> {g.tensor(y_sq).id} " in dot.source
    assert "op1 -> stop_recording1" not in dot.source
    with mt.GradientTape() as t2:
        a = y * y
        t2.reset()
        b = x * x + a
    assert "reset():" in draw_tape(t2, b).source


def test_missing_gradient_and_custom_marks():
    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    with mt.GradientTape() as tape:
        out = mt.image.adjust_contrast(image, 0.1)
    line = node_line(draw_tape(tape, out), "op1")
    assert "no gradient registered" in line and "color=red" in line


def test_large_tensor_shows_min_mean_max():
    data = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = mt.constant(data)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
    line = node_line(draw_tape(tape), nid(tape, y))
    assert "4x6 float32" in line
    assert f"min {0.0:.4g}, mean {2 * data.mean():.4g}, max {2 * 23.0:.4g}" in line


def test_the_same_tape_draws_the_same_text():
    x = mt.Variable(1.5)
    with mt.GradientTape(persistent=True) as tape:
        y = mt.math.sin(x) * mt.math.exp(x)
    tape.gradient(y, x)
    assert draw_tape(tape, y, x).source == draw_tape(tape, y, x).source


def _long_chain(n):
    x = mt.Variable(1.0, name="x")
    with mt.GradientTape() as tape:
        y = x
        for _ in range(n):
            y = y * 1.0001
    return tape, x, y


@needs_dot
def test_a_2000_op_tape_renders_collapsed():
    tape, x, y = _long_chain(2000)
    tape.gradient(y, x)
    dot = draw_tape(tape, y, x)
    names = node_names(dot)
    assert "run1" in names and len(names) == 3      # x, the run, y
    assert "2000 elementwise ops" in dot.source and "Mul x2000" in dot.source
    svg = dot.pipe(format="svg", encoding="utf-8")
    assert svg.count('class="node"') == 3


def test_depth_and_max_nodes_limit_the_picture():
    tape, x, y = _long_chain(50)
    dot = draw_tape(tape, y, x, collapse=False, depth=2)
    ops = [n for n in node_names(dot) if n.startswith("op")]
    assert ops == ["op48", "op49", "op50"]
    assert "47 earlier ops not shown" in dot.source
    dot = draw_tape(tape, y, x, collapse=False, max_nodes=40, fold=False)
    assert len(node_names(dot)) <= 40 + 1
    assert "op50" in node_names(dot)
    dot = draw_tape(tape, y, x, min_run=5)
    assert "50 elementwise ops" in dot.source


def test_nested_tapes_say_which_tape_recorded_which_op():
    x = mt.constant(3.0)
    with mt.GradientTape() as outer:
        outer.watch(x)
        with mt.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy = inner.gradient(y, x)
    d2 = outer.gradient(dy, x)
    assert d2.numpy() == 2.0
    dot = draw_tape([outer, inner], dy, x)
    line = node_line(dot, "op1")
    assert "tape 1, 2" in line and "striped" in line
    assert "cluster_legend" in dot.source
    last = tape_graph([outer, inner]).op_of(outer.operations[-1]).id
    assert "<BR/>tape 1>" in node_line(dot, last)


@needs_dot
def test_a_tape_draws_itself_in_a_notebook():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        x * x
    bundle = tape._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"]


def _seed_programs():
    """Small programs from the seeds' examples: each must draw and render."""
    def basic():
        x = mt.Variable(3.0)
        with mt.GradientTape() as tape:
            y = x**2
        return tape, y, x

    def layer():
        w = mt.Variable(np.ones((3, 2), np.float32), name="w")
        b = mt.Variable(np.zeros(2, np.float32), name="b")
        x = [[1.0, 2.0, 3.0]]
        with mt.GradientTape(persistent=True) as tape:
            y = x @ w + b
            loss = mt.reduce_mean(y**2)
        tape.gradient(loss, [w, b])
        return tape, loss, [w, b]

    def dense_model():
        layer = mt.layers.Dense(2, activation="relu")
        x = mt.constant([[1.0, 2.0, 3.0]])
        with mt.GradientTape() as tape:
            y = layer(x)
            loss = mt.reduce_mean(y**2)
        tape.gradient(loss, layer.trainable_variables)
        return tape, loss, layer.trainable_variables

    def sigmoid():
        x = mt.linspace(-10.0, 10.0, 201)
        with mt.GradientTape() as tape:
            tape.watch(x)
            y = mt.nn.sigmoid(x)
        tape.gradient(y, x)
        return tape, y, x

    def dict_targets():
        x = mt.Variable(2.0)
        with mt.GradientTape() as tape:
            y0 = x**2
            y1 = 1 / x
        tape.gradient({"y0": y0, "y1": y1}, x)
        return tape, {"y0": y0, "y1": y1}, x

    def batch_jacobian():
        x = mt.random.normal([7, 5], seed=1)
        l1 = mt.layers.Dense(8, activation=mt.nn.elu)
        l2 = mt.layers.Dense(6, activation=mt.nn.elu)
        with mt.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
            tape.watch(x)
            y = l2(l1(x))
        tape.batch_jacobian(y, x)
        return tape, y, x

    return [basic, layer, dense_model, sigmoid, dict_targets, batch_jacobian]


@needs_dot
@pytest.mark.parametrize("program", _seed_programs(), ids=lambda f: f.__name__)
def test_seed_examples_render(program):
    tape, target, sources = program()
    svg = draw_tape(tape, target, sources).pipe(format="svg", encoding="utf-8")
    assert svg.count('class="node"') >= 3


def test_no_why_note_for_a_source_connected_to_one_of_several_targets():
    x, w = mt.Variable(2.0), mt.Variable(1.0)
    with mt.GradientTape() as tape:
        y0 = x**2
        y1 = 1 / x
        u = w * 3.0
    dot = draw_tape(tape, {"y0": y0, "y1": y1}, [x, w])
    assert f"why_{nid(tape, x)}" not in node_names(dot)
    assert f"why_{nid(tape, w)}" in node_names(dot)
    assert u is not None


# -- legible and self-explaining (issue 30) ----------------------------------------------------

def _edge_roles(dot):
    """``{(tail node's bold label, role)}`` of the arrows named at their head."""
    labels = dict(re.findall(r"^\t(\w+) \[label=<<B>([^<]*)</B>", dot.source, flags=re.M))
    return {(labels.get(tail), role) for tail, role in
            re.findall(r"^\t(\w+) -> \w+ \[headlabel=(\w+) ", dot.source, flags=re.M)}


def test_argument_order_is_drawn():
    a, b = mt.Variable(5.0, name="a"), mt.Variable(2.0, name="b")
    with mt.GradientTape(persistent=True) as tape:
        d1 = a - b
    with mt.GradientTape(persistent=True) as tape2:
        d2 = b - a
    assert float(d1) == 3.0 and float(d2) == -3.0
    assert _edge_roles(draw_tape(tape, d1)) == {("a", "x"), ("b", "y")}
    assert _edge_roles(draw_tape(tape2, d2)) == {("b", "x"), ("a", "y")}
    w = mt.Variable(np.ones((2, 3), np.float32), name="w")
    v = mt.Variable(np.ones((3, 1), np.float32), name="v")
    with mt.GradientTape() as tape3:
        mt.matmul(w, v) + mt.matmul(w, v) * 2.0
    roles = _edge_roles(draw_tape(tape3))
    assert ("w", "a") in roles and ("v", "b") in roles
    assert all(role in ("a", "b") for _, role in roles)   # AddV2 and Mul name no argument


def test_graph_edges_carry_argument_roles():
    from minitape.viz.graph import argument_role
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = mt.math.divide(x, 4.0) + mt.math.pow(x, 3.0)
    g = tape_graph(tape, y, x)
    roles = {(g.node(e.head).type, e.index): e.role for e in g.edges if e.kind == "input"}
    assert roles == {("RealDiv", 0): "x", ("RealDiv", 1): "y", ("Pow", 0): "x",
                     ("Pow", 1): "y", ("AddV2", 0): None, ("AddV2", 1): None}
    assert argument_role("ConcatV2", 2, 3) == "2" and argument_role("Exp", 0, 1) is None


def test_legend_explains_the_marks_used_and_can_be_switched_off():
    x = mt.Variable(3.0, name="x")
    with mt.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    source = draw_tape(tape, y, x).source
    assert "<B>legend</B>" in source and "labelloc=b" in source
    assert "double border: a Variable" in source and "red dashed arrow" in source
    assert "stop_gradient" not in source.split("<B>legend</B>")[1]   # (not used here)
    assert "legend" not in draw_tape(tape, y, x, legend=False).source
    with mt.GradientTape() as tape2:
        z = x * x + mt.stop_gradient(x)
    legend = draw_tape(tape2, z, x).source.split("<B>legend</B>")[1]
    assert "octagon: stop_gradient" in legend and "red dashed arrow" not in legend


def test_a_persistent_tape_marks_only_what_the_rules_need_as_saved():
    x = mt.Variable(1.5, name="x")
    for persistent in (False, True):
        with mt.GradientTape(persistent=persistent) as tape:
            e = mt.exp(x)            # Exp keeps its output, not its input
            s = e + 1.0              # AddV2 keeps nothing
            r = mt.nn.relu(s)        # Relu keeps its output
        g = tape_graph(tape, r, x)
        saved = {n.tensor_id for n in g.tensors if n.saved}
        assert saved == {e.id, r.id}, persistent
        assert len(tape.operations[1].inputs) == 2 or not persistent  # (it keeps them all)


@needs_dot
def test_a_wide_drawing_is_never_shrunk_below_11_px():
    from minitape.viz.draw import MIN_SCALE, PX_PER_INCH, MAX_WIDTH_INCHES, _natural_size
    assert 11 <= MIN_SCALE * 10 * PX_PER_INCH / 72 < 11.01   # the smallest text, 10 pt
    column = MAX_WIDTH_INCHES * PX_PER_INCH
    xs = [mt.Variable(float(k), name=f"x{k}") for k in range(6)]
    for n, rankdir in ((1, "TB"), (2, "TB"), (3, "TB"), (6, "TB"), (6, "LR")):
        with mt.GradientTape() as t:
            y = xs[0] * 1.0
            for v in xs[1:n]:
                y = y + v * 2.0
        dot = draw_tape(t, y, rankdir=rankdir)
        fitted = dot.fitted()
        size = fitted.graph_attr.get("size")
        full = fitted.copy()
        full.graph_attr.pop("size", None)
        natural = _natural_size(full)
        if size is None:     # full size: it fits, or it is left wide (and scrolls)
            assert natural[0] <= column or natural[0] * MIN_SCALE > column
        else:                # shrunk to the column, by no more than MIN_SCALE
            assert column < natural[0] <= column / MIN_SCALE
        svg = dot.pipe(format="svg", encoding="utf-8")
        scale = float(re.search(r"scale\(([\d.]+)", svg).group(1))
        fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', svg)]
        assert min(fonts) * scale * PX_PER_INCH / 72 >= 11 - 1e-6, (n, rankdir)
    # A long left-to-right chain does not fit; top to bottom does: it is turned.
    assert draw_tape(t, y, rankdir="LR").fitted().graph_attr["rankdir"] == "TB"
    assert draw_tape(t, y, rankdir="LR", fit=False).fitted().graph_attr["rankdir"] == "LR"


@needs_dot
def test_a_failed_png_still_shows_the_svg(monkeypatch):
    import graphviz
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = x * x
    dot = draw_tape(tape, y, x)
    real = type(dot).pipe      # (renders through minitape.viz.render, dot or in-process)

    def no_png(self, format=None, *args, **kwargs):
        if format == "png":
            raise graphviz.CalledProcessError(1, ["dot", "-Tpng"], stderr=b"no png here")
        return real(self, format, *args, **kwargs)

    monkeypatch.setattr(type(dot), "pipe", no_png)
    with pytest.warns(RuntimeWarning, match="PNG copy of the drawing failed"):
        bundle = dot._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"] and "image/png" not in bundle
