"""``mt.viz.timeline``: the rows, spans and markers of several tapes, checked as data, then on
the axes of the figure (never as pixels)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import minitape as mt  # noqa: E402
from minitape.viz import Timeline, timeline, timeline_data  # noqa: E402
from minitape.viz.record import record_of  # noqa: E402


def nested_program():
    """Two nested tapes, a stop_recording, a reset, and a second derivative.

    Returns the tapes and a dict of landmarks: the ops made at each point of the program,
    found from the tensors they produced, not from the events under test."""
    x = mt.Variable(2.0)
    with mt.GradientTape() as outer:
        with mt.GradientTape(persistent=True) as inner:
            early = x * x                         # seen by both, then forgotten by inner
            with inner.stop_recording():
                paused = x + 1.0                  # seen by outer only
            inner.reset()
            y = x * x * x
            _ = mt.math.sin(y)
        dy = inner.gradient(y, x)                 # 3x^2, with ops the outer tape records
    d2 = outer.gradient(dy, x)                    # 6x = 12
    return outer, inner, {"early": early, "paused": paused, "y": y, "dy": dy, "d2": d2}


def seq_of(tape, tensor):
    """The global seq of the op of ``tape`` that produced ``tensor``."""
    (op,) = [op for op in tape.operations if tensor.id in op.output_ids]
    return record_of(tape).note(op).seq


@pytest.fixture()
def program():
    return nested_program()


def test_rows_follow_the_order_of_creation_with_labels(program):
    outer, inner, _ = program
    data = timeline_data(inner, outer)                    # given in any order
    assert isinstance(data, Timeline)
    assert [(r.label, r.persistent) for r in data.rows] == [("tape 1", False), ("tape 2", True)]
    assert [r.title for r in data.rows] == ["tape 1", "tape 2 (persistent)"]
    assert [r.number for r in data.rows] == [outer.number, inner.number]
    named = timeline_data(inner, outer, names=["inner", "outer"])
    assert [r.label for r in named.rows] == ["outer", "inner"]


def test_op_marks_and_the_backward_pass_recorded_by_the_outer_tape(program):
    outer, inner, marks = program
    assert float(marks["d2"]) == 12.0
    out_row, in_row = timeline_data(outer, inner).rows
    # the inner tape keeps only what it recorded after reset: x*x*x and sin
    assert [(op.type, op.backward_of) for op in in_row.ops] == \
        [("Mul", None), ("Mul", None), ("Sin", None)]
    assert [op.seq for op in in_row.ops] == [record_of(inner).note(op).seq
                                             for op in inner.operations]
    # the outer tape saw everything, including the inner tape's backward pass
    forward = [op for op in out_row.ops if op.backward_of is None]
    backward = [op for op in out_row.ops if op.backward_of is not None]
    assert [op.type for op in forward] == ["Mul", "AddV2", "Mul", "Mul", "Sin"]
    assert backward and {op.backward_of for op in backward} == {"tape 2"}
    (grad_marker,) = [m for m in in_row.markers if m.kind == "gradient"]
    assert all(op.seq > grad_marker.seq for op in backward)
    assert max(op.seq for op in backward) == seq_of(outer, marks["dy"])
    assert grad_marker.label == "gradient"


def test_spans_paused_recording_and_forgotten(program):
    outer, inner, marks = program
    out_row, in_row = timeline_data(outer, inner).rows
    early, paused = seq_of(outer, marks["early"]), seq_of(outer, marks["paused"])
    (p,) = in_row.paused
    assert p[0] < paused < p[1] and early < p[0]
    assert out_row.paused == []
    (reset,) = [m for m in in_row.markers if m.kind == "reset"]
    assert p[1] < reset.seq < min(op.seq for op in in_row.ops)
    (forgotten,) = in_row.forgotten
    assert forgotten[0] < early < forgotten[1] == reset.seq
    (rec_in,) = in_row.recording
    (rec_out,) = out_row.recording
    assert rec_out[0] < rec_in[0] < early                 # outer entered first
    assert max(op.seq for op in in_row.ops) < rec_in[1]   # inner exited after its last op
    assert rec_in[1] < rec_out[1]                         # and before the outer one


def test_markers_gradient_and_release(program):
    outer, inner, _ = program
    out_row, in_row = timeline_data(outer, inner).rows
    assert [m.kind for m in in_row.markers] == ["reset", "gradient"]   # persistent: kept
    assert [m.kind for m in out_row.markers] == ["gradient", "released"]
    g, r = out_row.markers
    assert out_row.recording[0][1] < g.seq < r.seq
    assert tuple(r) == ("released", r.seq, "released")


def test_a_non_persistent_tape_asked_inside_its_block_stops_recording_there():
    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.gradient(y, x)
        z = y * 3.0                                       # not recorded any more
    (row,) = timeline_data(tape).rows
    (g,) = [m for m in row.markers if m.kind == "gradient"]
    assert row.recording == [(row.recording[0][0], g.seq)]
    assert [op.type for op in row.ops] == ["Mul"]
    assert z.shape == ()


def test_open_spans_end_with_none_while_still_recording():
    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        _ = x * 2.0
        with tape.stop_recording():
            (row,) = timeline_data(tape).rows
    assert row.recording[0][1] is None and row.paused[0][1] is None
    assert row.forgotten == [] and row.markers == []


def test_jacobian_markers_are_named_after_the_method():
    x = mt.constant([1.0, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    tape.jacobian(y, x)
    tape.gradient(y, x)
    (row,) = timeline_data(tape).rows
    assert [m.label for m in row.markers] == ["jacobian", "gradient"]


def test_timeline_errors():
    with pytest.raises(ValueError, match="at least one"):
        timeline_data()
    with pytest.raises(TypeError, match="GradientTapes, got int"):
        timeline(3)
    tape = mt.GradientTape()
    with pytest.raises(ValueError, match="twice"):
        timeline_data(tape, tape)
    with pytest.raises(ValueError, match="one name per tape"):
        timeline_data(tape, names=["a", "b"])
    with pytest.raises(ValueError, match="differ"):
        timeline_data(tape, mt.GradientTape(), names=["a", "a"])


# -- the figure ---------------------------------------------------------------------------------

def _spans(ax, hatch):
    """(x0, x1) of the axvspan patches with this hatch."""
    out = []
    for p in ax.patches:
        if p.get_hatch() == hatch:
            xs = p.get_path().transformed(p.get_patch_transform()).vertices[:, 0] \
                if hasattr(p, "get_patch_transform") else p.get_xy()[:, 0]
            out.append((float(np.min(xs)), float(np.max(xs))))
    return sorted(out)


def test_figure_rows_marks_spans_and_markers(program):
    outer, inner, _ = program
    data = timeline_data(outer, inner)
    fig = timeline(outer, inner)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["tape 1", "tape 2 (persistent)"]
    ys = dict(zip([t.get_text() for t in ax.get_yticklabels()], ax.get_yticks()))
    assert ys["tape 1"] > ys["tape 2 (persistent)"]            # first row on top
    lines = ax.get_lines()
    dots = [line for line in lines if line.get_marker() == "o"]
    tris = [line for line in lines if line.get_marker() == "^"]
    out_row, in_row = data.rows
    assert sorted(x for line in dots if line.get_ydata().size and line.get_ydata()[0]
                  == ys["tape 1"] for x in line.get_xdata()) == \
        sorted(op.seq for op in out_row.ops if op.backward_of is None)
    assert sorted(x for line in tris for x in line.get_xdata()) == \
        sorted(op.seq for op in out_row.ops if op.backward_of is not None)
    stars = [line for line in lines if line.get_marker() == "*" and line.get_xdata().size]
    assert sorted(float(line.get_xdata()[0]) for line in stars) == \
        sorted(m.seq for row in data.rows for m in row.markers if m.kind == "gradient")
    crosses = [line for line in lines if line.get_marker() == "X" and line.get_xdata().size]
    assert [float(line.get_xdata()[0]) for line in crosses] == [out_row.markers[1].seq]
    assert _spans(ax, "//") == [tuple(map(float, in_row.paused[0]))]
    assert _spans(ax, "xx") == [tuple(map(float, in_row.forgotten[0]))]
    texts = [t.get_text() for t in ax.texts]
    assert "reset" in texts and "Sin" in texts and texts.count("gradient") == 2
    arrows = [c for c in ax.get_children()
              if type(c).__name__ == "Annotation" and c.arrow_patch is not None]
    assert len(arrows) == 1                      # tape 2's gradient -> its ops on tape 1
    assert arrows[0].xy[0] == min(op.seq for op in out_row.ops if op.backward_of)
    assert repr(fig).startswith("<Figure size") and fig._repr_png_().startswith(b"\x89PNG")
