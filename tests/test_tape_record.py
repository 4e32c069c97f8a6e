"""The one record of what a tape did: events, op origins, the last backward pass, release.

The engine keeps events; ``mt.viz``'s record (an observer of the tape) keeps the rest."""

import gc
import weakref

import numpy as np
import pytest

import minitape as mt
from minitape.backward import backward_steps, gradient_value
from minitape.viz.record import record_of, source_line


def note(tape, op):
    return record_of(tape).note(op)


def test_events_in_order_with_stamps_between_the_ops():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        a = x * x
        with tape.stop_recording():
            b = x * 3.0
        tape.reset()
        c = x * a
    tape.gradient(c, x)
    kinds = [e.kind for e in tape.events]
    assert kinds == ["entered", "paused", "resumed", "reset", "exited", "gradient", "released"]
    paused, resumed = tape.events[1], tape.events[2]
    (op,) = tape.operations                  # reset forgot the first Mul
    seq = note(tape, op).seq
    assert paused.seq < resumed.seq < tape.events[3].seq < seq < tape.events[4].seq
    assert tape.events[5].detail == "gradient" and tape.released
    assert b is not None
    # (kept as tuples while recording, TapeEvents when read: immutable, with a plain repr)
    event = tape.events[0]
    assert isinstance(event, mt.tape.TapeEvent) and tape.events == tape.events
    assert repr(event) == f"TapeEvent(kind='entered', seq={event.seq}, detail=None)"
    with pytest.raises(AttributeError):
        event.kind = "exited"


def test_tape_numbers_grow_in_order_of_creation():
    t1, t2 = mt.GradientTape(), mt.GradientTape(persistent=True)
    assert t2.number == t1.number + 1 and t2.persistent and not t1.persistent


def test_an_outer_tape_knows_which_ops_an_inner_backward_pass_made():
    x = mt.Variable(3.0)
    with mt.GradientTape() as outer:
        with mt.GradientTape() as inner:
            y = x * x * x
        dy = inner.gradient(y, x)
    assert dy.numpy() == 27.0
    recorded = outer.operations
    of = [note(outer, op).backward_of for op in recorded]
    assert set(of[:2]) == {None}                   # the forward ops
    assert set(of[2:]) == {inner.number}           # the inner backward
    assert outer.gradient(dy, x).numpy() == 18.0                        # 6x


def test_origin_is_the_learners_line_not_minitape():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = mt.nn.softmax(mt.stack([x, x * 2.0]))  # several ops inside minitape: one line
    assert y.shape == (2,)
    for op in tape.operations:
        location, text = source_line(note(tape, op).origin[0])
        assert location.startswith("test_tape_record.py:")
        assert text == "y = mt.nn.softmax(mt.stack([x, x * 2.0]))  # several ops inside " \
                       "minitape: one line"


def test_backward_steps_is_the_walk_gradient_takes():
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        a = x * 2.0
        b = x * 3.0
        s = a + b
    grads = {s.id: mt.ones_like(s)}
    steps = list(backward_steps(list(tape.operations), grads, {x.id}))
    assert [op.type for op, _, _ in steps] == ["AddV2", "Mul", "Mul"]
    # (Nothing records here, so the walk holds the gradients as arrays.)
    contributions = [float(gradient_value(in_grads[0])) for op, _, in_grads in steps[1:]]
    assert contributions == [3.0, 2.0]                       # two paths, in reverse order
    assert float(gradient_value(grads[x.id])) == 5.0 == float(tape.gradient(s, x).numpy())
    last = record_of(tape).last_pass
    assert last.visited == [note(tape, op).seq for op, _, _ in steps]
    assert float(last.gradients[x.id].numpy()) == 5.0


def test_a_non_persistent_tape_releases_custom_gradient_closures():
    big = np.ones(2_000_000, np.float32)

    @mt.custom_gradient
    def scale(v):
        held = mt.constant(big)          # the closure of grad holds 8 MB

        def grad(dy):
            return dy * mt.reduce_sum(held) * 0.0 + dy
        return v * 1.0, grad

    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        y = scale(x)
    op = [o for o in tape.operations if o.custom][0]
    held_ref = weakref.ref(op.grad_fn)
    assert tape.gradient(y, x).numpy() == 1.0
    gc.collect()
    assert held_ref() is None and op.grad_fn is None and op.custom


def test_loop_jacobian_of_an_empty_target_is_an_empty_array():
    x = mt.Variable([1.0, 2.0])
    for pfor in (True, False):
        with mt.GradientTape(persistent=True) as tape:   # (the loop needs persistent=True)
            y = x[:0] * 2.0
        j = tape.jacobian(y, x, experimental_use_pfor=pfor)
        assert j is not None and j.shape == (0, 2)


def test_loop_batch_jacobian_of_an_empty_target_is_zeros_of_its_shape():
    x = mt.constant(np.arange(6.0).reshape(3, 2))
    for pfor in (True, False):
        with mt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x[:, :0] * 2.0                     # (3, 0): no element to differentiate
        j = tape.batch_jacobian(y, x, experimental_use_pfor=pfor)
        assert j is not None and j.shape == (3, 0, 2) and j.dtype == x.dtype


def test_loop_jacobian_builds_rows_without_an_identity(monkeypatch):
    calls = []
    real_eye = np.eye
    monkeypatch.setattr(np, "eye", lambda *a, **k: calls.append(a) or real_eye(*a, **k))
    x = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
    j = tape.jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_array_equal(j.numpy(), np.diag([2.0, 4.0, 6.0]))
    assert calls == []


def test_reset_keeps_the_tape_recording_and_logs_it():
    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        tape.reset()
        y = x * 2.0
    assert [e.kind for e in tape.events][:2] == ["entered", "reset"]
    assert tape.gradient(y, x).numpy() == 2.0


def test_no_module_imports_private_names_of_the_engine_core():
    import ast
    import pathlib
    root = pathlib.Path(mt.__file__).parent
    core = {"tape", "recording", "backward"}
    offenders = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module.split(".")[-1]
                if module in core and path.stem != module:
                    offenders += [f"{path.name}: {a.name}" for a in node.names
                                  if a.name.startswith("_")]
    assert offenders == []


@pytest.mark.parametrize("persistent", [True, False])
def test_last_pass_keeps_small_contributions(persistent):
    x = mt.Variable(3.0)
    with mt.GradientTape(persistent=persistent) as tape:
        y = x * x
    tape.gradient(y, x)
    (op,) = tape.operations
    c = record_of(tape).last_pass.contributions
    seq = note(tape, op).seq
    assert float(c[(seq, 0)]) == float(c[(seq, 1)]) == 3.0


def test_source_lines_are_recorded_by_default_in_scripts_and_can_be_switched_off(tmp_path):
    import subprocess
    import sys
    script = ("import minitape as mt\nx = mt.Variable(3.0)\nwith mt.GradientTape() as t:\n"
              "    y = x * x\nprint(mt.config.source_lines_recorded(), len(t.observers), "
              "mt.viz.tape_graph(t).tensor(y).label, sep='|')\n")

    def run(text):
        path = tmp_path / "learner.py"
        path.write_text(text)
        return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                              check=True).stdout.strip().split("|")

    assert run(script) == ["True", "1", "y"]   # a plain script names tensors as the code does
    off = run(script.replace("x = mt.Variable", "mt.config.record_source_lines(False)\n"
                                                "x = mt.Variable"))
    assert off == ["False", "0", "mul #1"]   # no observer: the engine does nothing for names
    with pytest.raises(TypeError, match="True or False"):
        mt.config.record_source_lines("yes")


@pytest.mark.parametrize("persistent", [True, False])
def test_ops_describe_each_input_and_output_after_release(persistent):
    # ``Operation`` keeps the ids, shapes and dtypes of its inputs and outputs, and the record
    # their small values, in a few tuples (written out for one and two inputs, a loop for
    # more or for several outputs): each must give the Tensors' own, also after a
    # non-persistent tape's backward pass released what the ops saved.
    x = mt.Variable(np.arange(3.0))
    big = mt.constant(np.ones((5, 4), np.float32))
    with mt.GradientTape(persistent=persistent) as tape:
        tape.watch(big)
        s = mt.sin(x)
        half = x * 0.5
        joined = mt.concat([x, s, half], 0)
        parts = mt.split(big, 2, axis=1)
        total = mt.reduce_sum(joined) + mt.cast(mt.reduce_sum(parts[0]), mt.float64)
    tape.gradient(total, [x, big])
    constant_half = tape.operations[1]

    def check(op_type, inputs, outputs):
        (op,) = [op for op in tape.operations if op.type == op_type]
        assert op.input_ids == tuple(t.id for t in inputs)
        assert op.input_shapes == tuple(t.shape for t in inputs)
        assert op.input_dtypes == tuple(t.dtype for t in inputs)
        assert op.output_ids == tuple(t.id for t in outputs)
        assert op.output_shapes == tuple(t.shape for t in outputs)
        assert op.output_dtypes == tuple(t.dtype for t in outputs)
        for kept, t in zip(note(tape, op).values, list(inputs) + list(outputs)):
            if t.size <= 16:
                np.testing.assert_array_equal(kept, t.numpy())
            else:
                assert kept is None

    check("Sin", [x], [s])                              # one input, one output
    assert constant_half.input_shapes == ((3,), ())     # two inputs (0.5 became a Tensor)
    values = note(tape, constant_half).values
    assert values[1] == 0.5 and constant_half.output_ids == (half.id,)
    np.testing.assert_array_equal(values[2], [0.0, 0.5, 1.0])
    check("ConcatV2", [x, s, half], [joined])           # three inputs
    check("Split", [big], parts)                        # two outputs; large values not kept


def test_backward_steps_yields_tensors_whether_or_not_a_tape_records():
    # The walk holds Tensors, and every op's one gradient function runs, whether an outer
    # tape records (second derivatives) or not: the same numbers either way.
    x = mt.Variable(np.array([0.5, -1.0]))
    with mt.GradientTape(persistent=True) as tape:
        y = mt.reduce_sum(mt.nn.softplus(x * 2.0))

    def walk():
        grads = {y.id: mt.ones_like(y)}
        return list(backward_steps(list(tape.operations), grads, {x.id})), grads

    steps, grads = walk()
    assert [op.type for op, _, _ in steps] == ["Sum", "Softplus", "Mul"]
    with mt.GradientTape():
        steps_t, grads_t = walk()
    for _, out_grads, in_grads in steps + steps_t:
        assert all(type(g) is mt.Tensor for g in out_grads)
        assert all(g is None or type(g) is mt.Tensor for g in in_grads)
    for (_, _, a), (_, _, t) in zip(steps, steps_t):
        for ga, gt in zip(a, t):
            assert (ga is None) == (gt is None)
            if ga is not None:
                np.testing.assert_array_equal(gradient_value(ga), gt.numpy())
    np.testing.assert_array_equal(gradient_value(grads[x.id]), grads_t[x.id].numpy())
    # d/dx sum(softplus(2x)) = 2 sigmoid(2x), by hand
    np.testing.assert_allclose(grads[x.id].numpy(), 2 / (1 + np.exp(-2 * x.numpy())))


# -- what the record keeps per op, kept cheap (issue 31 item 5, issue 30 item 3) ----------------

def _square_on_its_own_line(v):
    s = v * v
    return s


def _square_returned(v):
    return v * v


def _square_returned_inside_with(v):
    with mt.device("/CPU:0"):
        return v * v


def _twice_returned(v):
    return _square_returned(v)


def _lines(origin):
    return [source_line(frame)[1] for frame in origin]


def test_origin_climbs_to_the_callers_only_through_return_lines():
    # The caller's line names what a helper returns (``loss = loss_fn(...)``); a line that is
    # not a ``return`` needs no caller, so only its own frame is kept.
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        a = _square_on_its_own_line(x)
        b = _square_returned(x)
        c = _square_returned_inside_with(x)
        d = _twice_returned(x)
    assert [float(t) for t in (a, b, c, d)] == [9.0] * 4
    origins = [note(tape, op).origin for op in tape.operations]
    assert _lines(origins[0]) == ["s = v * v"]
    assert _lines(origins[1]) == ["return v * v", "b = _square_returned(x)"]
    assert _lines(origins[2]) == ["return v * v", "c = _square_returned_inside_with(x)"]
    assert _lines(origins[3]) == ["return v * v", "return _square_returned(v)",
                                  "d = _twice_returned(x)"]
    # Every origin is a tuple of (code, instruction offset) pairs, whatever was stored.
    for origin in origins:
        assert all(isinstance(code, type(_lines.__code__)) and isinstance(offset, int)
                   for code, offset in origin)


def test_learner_frames_matches_the_note_of_an_op():
    from minitape.viz.record import learner_frames
    assert learner_frames(1)[0][0] is test_learner_frames_matches_the_note_of_an_op.__code__


@pytest.mark.parametrize("persistent", [True, False])
def test_last_pass_summarizes_large_contributions_and_sums_what_reached(persistent):
    x = mt.Variable(np.arange(20.0))
    w = mt.Variable(2.0, dtype=mt.float64)
    with mt.GradientTape(persistent=persistent) as tape:
        y = mt.reduce_sum(x * w) + w * w
    tape.gradient(y, [x, w])
    last = record_of(tape).last_pass
    mul_vec, reduce_sum, mul_w, add = tape.operations
    seq = {op.type + str(k): note(tape, op).seq for k, op in enumerate(tape.operations)}
    assert last.visited == [note(tape, op).seq for op in (add, mul_w, reduce_sum, mul_vec)]
    into_x = last.contributions[(seq["Mul0"], 0)]       # 20 elements: more than 16
    if persistent:                                      # (min, mean, max) of dy/dx = w
        assert into_x == (2.0, 2.0, 2.0)
    else:
        assert into_x is None
    # w gets sum(x) = 190 from x * w and 2 w = 4 from w * w: the pass's total is 194.
    assert float(last.contributions[(seq["Mul0"], 1)]) == 190.0
    assert float(last.contributions[(seq["Mul2"], 0)]) == float(
        last.contributions[(seq["Mul2"], 1)]) == 2.0
    assert float(last.reached[w.id]) == 194.0
    assert float(last.reached[y.id]) == 1.0             # the seed


def test_the_last_pass_holds_nothing_the_collector_walks():
    # The steps of a pass live as long as the tape: kept as tuples of arrays (no Tensors, no
    # lists), the garbage collector stops tracking them, so a full collection does not walk
    # the thousands of steps of a long pass again and again.
    x = mt.constant(np.full((3,), 0.5))
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(50):
            y = mt.math.sin(y) * 1.0001 + y * y * 0.001
        # (a gradient larger than 16 elements, which the record summarizes)
        z = mt.reduce_sum(mt.ones([20], dtype=mt.float64) * y[0])
    g = tape.gradient(z, x)
    last = record_of(tape).last_pass
    gc.collect()
    gc.collect()
    steps = last._steps
    assert len(steps) == len(tape.operations)
    assert not any(gc.is_tracked(step) for step in steps)
    # ... and the pictures still read the same gradients: the steps add up to the result.
    assert np.allclose(last.reached[x.id], gradient_value(g))
