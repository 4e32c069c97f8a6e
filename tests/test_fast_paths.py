"""The engine's fast paths give exactly what the general paths give (issue 14's rule).

Every op has one gradient rule, written with minitape ops (issue 31); what remains fast:

- ``record`` returns at once while nothing records, so a rule's ops cost little in the usual
  backward pass; the walk gives the same numbers, bit for bit, and the same record of the
  pass, whether or not a tape records the ops its rules run (``test_the_walk_...``).
- Two contributions to one gradient (fan-out) are summed with ``+``, the ``AddV2`` op, which
  an outer tape records.
- ``Mul``'s rule for ``x * x`` computes ``dy * x`` once and sends it to both inputs.
- The cross-entropies keep the softmax their forward computed (``Operation.residuals``) for
  their gradient, which gives what computing it again gives.
- ``recording.tapes_recording`` / ``accumulators_recording``, ``module.calls_running``: global
  "is anything happening in any thread" sets that let ``record`` skip the thread state.
- A Tensor's ``_shape`` / ``_dtype`` are read once from its array.

(A tape's events, kept as tuples and made ``TapeEvent``s when read, are checked in
``test_tape_record.py``.)
"""

import threading

import numpy as np
import pytest

import minitape as mt
from minitape import backward, recording
from minitape.engine.tape import TapeObserver
from minitape.ops import math_ops, nn_ops
from minitape.viz.record import record_of


@pytest.mark.parametrize("shape", [(), (8,), (3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_x_times_x_sends_dy_times_x_to_both_inputs(shape, dtype):
    rng = np.random.default_rng(2)
    x0 = rng.uniform(-1.5, 1.5, shape).astype(dtype)
    w0 = rng.uniform(0.5, 1.5, shape).astype(dtype)
    x, w = mt.constant(x0), mt.constant(w0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        loss = mt.reduce_sum(y * w)
    (mul,) = [op for op in tape.operations if op.input_ids == (x.id, x.id)]
    seen = []
    tape.add_observer(type("Steps", (TapeObserver,), {
        "backward_step": lambda self, tape, op, out, sent: seen.append((op, sent))})())
    g = tape.gradient(loss, x)
    (sent,) = [sent for op, sent in seen if op is mul]
    assert sent[0] is sent[1]
    # ... summed by the walk: dy * x + dy * x, computed by hand with NumPy (the same bits)
    dy = (np.ones(shape, dtype) * w0).astype(dtype)
    np.testing.assert_array_equal(g.numpy(), dy * x0 + dy * x0)
    assert g.dtype == dtype


@pytest.mark.parametrize("sparse", [False, True])
def test_cross_entropy_residual_is_the_softmax_and_gives_the_same_gradient(sparse):
    rng = np.random.default_rng(3)
    logits = mt.constant(rng.normal(size=(6, 5)).astype(np.float32))
    onehot = np.eye(5, dtype=np.float32)[[0, 3, 1, 4, 2, 2]]
    labels = mt.constant([0, 3, 1, 4, 2, 2]) if sparse else mt.constant(onehot)
    loss_fn = (mt.nn.sparse_softmax_cross_entropy_with_logits if sparse
               else mt.nn.softmax_cross_entropy_with_logits)
    assert not recording.tapes_recording
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        loss = mt.reduce_mean(loss_fn(labels, logits))
    (op,) = [op for op in tape.operations if op.type.endswith("CrossEntropyWithLogits")]
    (softmax,) = op.residuals
    np.testing.assert_array_equal(softmax, nn_ops._softmax_values(logits.numpy(), 1))
    kept = tape.gradient(loss, logits)
    op.saved = op.saved[:2] + (None,)   # what an op without them does: the softmax again
    again = tape.gradient(loss, logits)
    np.testing.assert_array_equal(kept.numpy(), again.numpy())
    # No tape recording: nothing kept (no gradient can be asked for).
    assert loss_fn(labels, logits).shape == (6,)
    # A non-persistent tape drops them with the saved tensors, as its walk passes the op.
    with mt.GradientTape() as tape:
        tape.watch(logits)
        loss = mt.reduce_mean(loss_fn(labels, logits))
    (op,) = [op for op in tape.operations if op.type.endswith("CrossEntropyWithLogits")]
    assert op.residuals is not None
    np.testing.assert_array_equal(tape.gradient(loss, logits).numpy(), kept.numpy())
    assert op.residuals is None


def test_cross_entropy_keeps_no_residual_when_no_tape_records():
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recording, "record", lambda *a, **k: calls.append(k.get("residuals")))
        patch.setattr(nn_ops, "record", recording.record)
        mt.nn.softmax_cross_entropy_with_logits([[0.0, 1.0]], [[1.0, 2.0]])
        mt.nn.sparse_softmax_cross_entropy_with_logits([1], [[1.0, 2.0]])
    assert calls == [None, None]


@pytest.mark.parametrize("shape", [(), (8,), (2, 3)])
def test_fan_out_contributions_are_summed_with_the_add_op(shape):
    rng = np.random.default_rng(1)
    a = mt.constant(rng.normal(size=shape))
    b = mt.constant(rng.normal(size=shape))
    assert not recording.tapes_recording
    summed = backward.add_gradients(a, b)
    general = math_ops.add(a, b)
    assert summed.dtype == general.dtype and summed.shape == general.shape
    np.testing.assert_array_equal(summed.numpy(), a.numpy() + b.numpy())
    # While a tape records, the sum is an op the tape can see.
    with mt.GradientTape() as tape:
        tape.watch(a)
        backward.add_gradients(a, b)
    assert [op.type for op in tape.operations] == ["AddV2"]


def test_recording_sets_empty_again_after_use():
    x = mt.Variable(2.0)
    layer = mt.layers.Dense(2)
    with mt.GradientTape(persistent=True) as tape:
        with mt.GradientTape() as inner:
            y = layer(mt.ones((1, 3))) * x
            assert len(recording.tapes_recording) == 2
        assert len(recording.tapes_recording) == 1
        inner.gradient(y, x)
    with mt.autodiff.ForwardAccumulator(x, mt.constant(1.0)) as acc:
        assert recording.accumulators_recording == {acc}
        z = x * x
    assert float(acc.jvp(z)) == pytest.approx(4.0)
    tape.gradient(y, x)
    assert not recording.tapes_recording
    assert not recording.accumulators_recording
    # and what mt.viz's record noted of the contexts is still there
    notes = [record_of(tape).note(op) for op in tape.operations]
    assert any(n.module_calls for n in notes)
    assert any(n.backward_of == inner.number for n in notes)


def test_a_tape_in_another_thread_does_not_record_this_threads_ops():
    x = mt.constant(1.0)
    entered, done = threading.Event(), threading.Event()
    tapes = []

    def other():
        with mt.GradientTape() as tape:
            tape.watch(x)
            tapes.append(tape)
            entered.set()
            done.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(10)
    assert recording.tapes_recording   # a tape records somewhere: record looks closer
    y = x * 2.0                          # ... and finds none on this thread
    done.set()
    thread.join()
    assert tapes[0].operations == ()
    assert float(y) == 2.0


def test_cached_shape_and_dtype_match_the_array():
    v = mt.Variable(np.ones((2, 3), np.float32))
    for t in (mt.constant(1.5), mt.constant([1, 2]), v, v * 2.0, mt.sin(mt.constant(0.5)),
              mt.reduce_sum(v), v[0]):
        value = t._value
        assert t.shape == value.shape and t.dtype == value.dtype
    v.assign(np.zeros((2, 3), np.float32))
    assert v.shape == v._value.shape and v.dtype == v._value.dtype


PROGRAMS = {
    "chain": lambda x, w: mt.reduce_sum(mt.sin(x) * w + x * x),
    "integer outputs": lambda x, w: mt.reduce_sum(
        mt.gather(x * w, mt.argmax(x, axis=0)) + mt.cast(x > 0.5, mt.float64) * x),
    "unused branch": lambda x, w: mt.reduce_sum(x * 2.0) + mt.reduce_sum(mt.exp(w) * 0.0),
    "where": lambda x, w: mt.reduce_sum(mt.where(x > 0.5, x * w, -x)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tracked_set_gives_the_same_pass_as_the_forward_sweep(name):
    """When every watched tensor is a source, the walk reads the tape's tracked set instead
    of sweeping the ops forwards: same gradients, same visited ops, same contributions."""
    x0 = np.array([0.3, 0.9, 0.6])
    x, w = mt.constant(x0), mt.constant(np.array([1.5, -2.0, 0.5]))
    with mt.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = PROGRAMS[name](x, w)
    shortcut = tape.gradient(y, [x, w])
    first = record_of(tape).last_pass
    swept = []
    grads = backward.backward(list(tape.operations), {y.id: mt.ones_like(y)},
                              {x.id, w.id},
                              on_step=lambda op, out, sent: swept.append((op, sent)))
    for g, t in zip(shortcut, (x, w)):
        np.testing.assert_array_equal(g.numpy(), grads[t.id].numpy())
    seq = {id(op): record_of(tape).note(op).seq for op in tape.operations}
    assert first.visited == [seq[id(op)] for op, _ in swept]
    assert set(first.contributions) == {(seq[id(op)], k) for op, sent in swept
                                        for k, g in enumerate(sent) if g is not None}
    # Only x a source (w watched too): the walk sweeps, and w's branch is not visited.
    only_x = tape.gradient(y, x)
    np.testing.assert_array_equal(only_x.numpy(), shortcut[0].numpy())
    assert set(record_of(tape).last_pass.visited) <= set(first.visited)


@mt.custom_gradient
def _clip_gradient(x):
    return mt.identity(x), lambda dy: mt.clip_by_value(dy, -0.5, 0.5)


WALKS = dict(PROGRAMS, **{
    "fan-out and broadcasting": lambda x, w: mt.reduce_sum(
        mt.reshape(x, (3, 1)) * w + mt.tanh(x) * x - mt.exp(w) / (x + 2.0)),
    "one of two outputs": lambda x, w: mt.reduce_sum(mt.split(x * w, 3)[1] * 4.0 + x),
    "custom gradient": lambda x, w: mt.reduce_sum(_clip_gradient(x * w) * 3.0 + mt.sigmoid(x)),
    "softmax, matmul, relu": lambda x, w: mt.reduce_mean(
        mt.nn.softmax_cross_entropy_with_logits(
            mt.constant(np.eye(3)), mt.nn.relu(mt.matmul(mt.reshape(x, (3, 1)),
                                                         mt.reshape(w, (1, 3))) + w))),
})


@pytest.mark.parametrize("name", sorted(WALKS))
@pytest.mark.parametrize("persistent", [True, False])
def test_the_walk_gives_the_same_whether_or_not_a_tape_records(name, persistent):
    """While nothing records, the ops a gradient rule runs return as soon as they have
    computed; while a tape records (here an unrelated one), they go through ``record``'s
    general path: the same gradients, bit for bit, and the same record of the pass."""
    def run(recorded):
        x = mt.constant(np.array([0.3, 0.9, 0.6]))
        w = mt.constant(np.array([1.5, -2.0, 0.5]))
        with mt.GradientTape(persistent=persistent) as tape:
            tape.watch([x, w])
            y = WALKS[name](x, w)
        if recorded:
            with mt.GradientTape():       # something records: record's general path
                assert recording.tapes_recording
                grads = tape.gradient(y, [x, w])
        else:
            assert not recording.tapes_recording
            grads = tape.gradient(y, [x, w])
        # The pass's record, by op position (seq stamps differ between the two runs).
        position = {record_of(tape).note(op).seq: n for n, op in enumerate(tape.operations)}
        last = record_of(tape).last_pass
        return (grads, [position[seq] for seq in last.visited],
                {(position[seq], k): v for (seq, k), v in last.contributions.items()})

    (quiet, visited, sent), (recorded, visited_t, sent_t) = run(False), run(True)
    for a, t in zip(quiet, recorded):
        assert type(a) is type(t) is mt.Tensor
        assert a.dtype == t.dtype and a.shape == t.shape
        np.testing.assert_array_equal(a.numpy(), t.numpy())   # the same bits
    assert visited == visited_t and sent.keys() == sent_t.keys()
    for edge, value in sent.items():
        other = sent_t[edge]
        if isinstance(value, tuple):      # (min, mean, max) of a large value
            assert value == other
        elif value is not None:
            assert type(value) is type(other)
            np.testing.assert_array_equal(value, other)
