"""minitape.viz.graph: a tape as plain nodes and edges (no graphics)."""

import inspect
import sys

import numpy as np
import pytest

import minitape as mt
from minitape.viz import tape_graph


def test_ops_tensors_and_edges_of_x_times_x():
    x = mt.Variable(3.0, name="x")
    with mt.GradientTape() as tape:
        y = x * x
    g = tape_graph(tape)
    (op,) = g.ops
    assert op.id == "op1" and op.number == 1 and op.type == "Mul"
    tx, ty = g.tensor(x).id, g.tensor(y).id
    assert (tx, ty) == ("t1", "t2")
    assert op.inputs == (tx, tx) and op.outputs == (ty,)
    assert [(e.tail, e.head, e.kind) for e in g.edges] == [
        (tx, op.id, "input"), (tx, op.id, "input"),
        (op.id, ty, "output")]
    xn, yn = g.tensor(x), g.tensor(y)
    assert xn.name == "x" and xn.variable and xn.trainable and xn.watched
    assert xn.shape == () and xn.dtype == "float32"
    assert float(yn.value) == 3.0 * 3.0
    assert yn.produced_by == op.id and xn.produced_by is None
    assert not yn.watched and not yn.variable


def test_small_values_and_gradients_survive_a_non_persistent_release():
    # Seed 001: x = 3, y = x*x, z = y*y; dz/dx = 4 x**3 = 108, dz/dy = 2 y = 18.
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert tape.gradient(z, x).numpy() == 4 * 3.0**3
    assert all(op._inputs is None for op in tape._ops)    # released
    g = tape_graph(tape, z, x)
    assert float(g.tensor(y).value) == 9.0 and float(g.tensor(z).value) == 81.0
    assert float(g.tensor(x).gradient) == 108.0
    assert float(g.tensor(y).gradient) == 2 * 9.0
    assert float(g.tensor(z).gradient) == 1.0
    assert g.tensor(z).is_target and g.tensor(x).is_source


def test_large_values_summary_while_saved_and_none_after_release():
    data = np.linspace(-2.0, 5.0, 100).astype(np.float32)
    x = mt.constant(data)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.math.sin(x)
    node = tape_graph(tape).tensor(y)
    s = np.sin(data)
    assert node.value is None
    np.testing.assert_allclose(node.summary, (s.min(), s.mean(), s.max()), rtol=1e-5)

    with mt.GradientTape() as tape2:
        tape2.watch(x)
        y2 = mt.math.exp(x)     # Exp keeps only its output, not its input
        loss = mt.reduce_sum(y2)
    dx = tape2.gradient(loss, x)
    g = tape_graph(tape2, loss, x)
    assert g.tensor(y2).value is None and g.tensor(y2).summary is None   # released, large
    # The watched source is still alive: its summary comes from the Tensor itself.
    np.testing.assert_allclose(g.tensor(x).summary, (data.min(), data.mean(), data.max()),
                               rtol=1e-6)
    e = np.exp(data)
    np.testing.assert_allclose(g.tensor(x).gradient, (e.min(), e.mean(), e.max()), rtol=1e-5)
    # A large intermediate gradient is not kept either (as the large value): summarizing
    # every one would cost the backward pass three extra passes over each array.
    assert g.tensor(y2).gradient is None
    assert dx is not None

    # A persistent tape keeps its min/mean/max.
    with mt.GradientTape(persistent=True) as tape3:
        tape3.watch(x)
        y3 = mt.math.exp(x)
        loss3 = mt.reduce_sum(y3)
    tape3.gradient(loss3, x)
    np.testing.assert_allclose(tape_graph(tape3, loss3, x).tensor(y3).gradient, (1.0, 1.0, 1.0))


def test_connectivity_stop_gradient_seed_003():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape() as t:
        y_sq = y**2
        z = x**2 + mt.stop_gradient(y_sq)
    g = tape_graph(t, z, [x, y])
    ops = {op.type: op for op in g.ops if op.type != "Pow"}
    pows = [op for op in g.ops if op.type == "Pow"]
    assert ops["StopGradient"].stop_gradient and ops["StopGradient"].gradient == "none"
    assert not ops["StopGradient"].connected
    assert [p.connected for p in pows] == [False, True]      # y**2 greyed, x**2 on the path
    assert ops["AddV2"].connected
    assert g.tensor(x).connected and not g.tensor(y).connected
    assert not g.tensor(y_sq).connected and g.tensor(z).connected
    grey_edges = [e for e in g.edges if not e.connected]
    assert {e.head for e in grey_edges if e.kind == "input"} >= {pows[0].id,
                                                                 ops["StopGradient"].id}


def test_sources_default_to_watched_and_integer_tensors_carry_no_gradient():
    x = mt.Variable(2.0)
    with mt.GradientTape() as t:
        r = mt.cast(x, mt.int32)
        y = x * 3.0
    g = tape_graph(t, y)
    assert g.source_ids == (g.tensor(x).id,)
    cast_op = next(op for op in g.ops if op.type == "Cast")
    assert not cast_op.connected and not g.tensor(r).connected
    assert g.tensor(r).dtype == "int32"


def test_events_for_stop_recording_and_reset():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        t.reset()
        z = x * x + y_sq
    g = tape_graph(t, z)
    kinds = [e.kind for e in g.events]
    assert kinds == ["stop_recording", "reset"]
    gap, reset = g.events
    assert gap.seq < gap.end < reset.seq
    assert gap.after is None and reset.after is None   # the op before them was forgotten
    assert all(op.seq > reset.seq for op in g.ops)
    assert x_sq is not None


def test_gradient_kinds_missing_none_custom():
    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    with mt.GradientTape() as t:
        a = mt.image.adjust_contrast(image, 0.1)
        b = mt.round(a)

        @mt.custom_gradient
        def double(v):
            return v * 2.0, lambda dy: dy * 2.0
        c = double(b)
    kinds = {op.type: op.gradient for op in tape_graph(t).ops}
    assert kinds["AdjustContrastv2"] == "missing"
    assert kinds["Round"] == "none"
    assert "custom" in kinds.values()
    assert c is not None


def test_non_trainable_variable_is_marked():
    v = mt.Variable(2.0, trainable=False, name="v")
    w = mt.Variable(1.0, name="w")
    with mt.GradientTape() as t:
        y = v * w
    g = tape_graph(t, y, [v, w])
    assert g.tensor(v).variable and g.tensor(v).trainable is False
    assert not g.tensor(v).watched and g.tensor(w).watched
    assert not g.tensor(v).connected and g.tensor(w).connected


def test_nested_tapes_share_one_op_node():
    x = mt.constant(3.0)
    with mt.GradientTape() as outer:
        outer.watch(x)
        with mt.GradientTape() as inner:
            inner.watch(x)
            y = x * x
        dy = inner.gradient(y, x)
    g = tape_graph([outer, inner], dy, x)
    first = g.ops[0]
    assert first.type == "Mul" and first.tapes == (0, 1)
    assert all(op.tapes == (0,) for op in g.ops[1:])          # the backward pass: outer only
    assert len(g.ops) == len(outer._ops)
    assert g.n_tapes == 2


def test_deterministic_ids_and_no_recursion_on_a_deep_chain():
    x = mt.Variable(1.0)
    with mt.GradientTape() as t:
        y = x
        for _ in range(3000):
            y = y + 1.0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 60)
    try:
        g1 = tape_graph(t, y, x)
        g2 = tape_graph(t, y, x)
    finally:
        sys.setrecursionlimit(limit)
    assert [op.id for op in g1.ops] == [f"op{k}" for k in range(1, 3001)]
    assert [n.id for n in g1.tensors] == [n.id for n in g2.tensors]
    assert all(op.connected for op in g1.ops)
    assert float(g1.tensor(y).value) == 3001.0


def test_rejects_what_is_not_a_tape():
    with pytest.raises(TypeError, match="GradientTape"):
        tape_graph("tape")


def test_unnamed_tensors_get_short_labels_that_do_not_depend_on_history():
    def labels():
        x = mt.constant(3.0, name="x")
        with mt.GradientTape() as tape:
            tape.watch(x)
            y = x * x
            z = mt.math.sin(y)
        g = tape_graph(tape, z, x)
        return [g.tensor(t).label for t in (x, y, z)]

    first = labels()
    for _ in range(50):               # move the global id counters on
        mt.constant(1.0) * 2.0
    assert first == labels() == ["x", "y", "z"]     # the names the code assigned
