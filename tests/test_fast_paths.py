"""The engine's fast paths give exactly what the general paths give (issue 14's rule).

- ``registry.register_numpy_gradient``: an op's gradient rule on NumPy arrays, used by the
  backward pass when nothing records; compared bit for bit with the gradient function
  (broadcasting included), and switched off while ``RegisterGradient(override=True)``
  replaces the function it repeats.
- While nothing records, the backward walk holds gradients as arrays (and sums two
  contributions with NumPy); compared with the walk on Tensors, which runs every gradient
  function, on programs with fan-out, broadcasting, a multi-output op and a custom gradient.
- ``backward.add_gradients`` sums two contributions with NumPy when nothing records.
- The cross-entropies keep the softmax their forward computed (``Operation.residuals``) for
  their NumPy gradient, which gives what computing it again gives.
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
from minitape import backward, recording, registry
from minitape.ops import math_ops, nn_ops
from minitape.viz.record import record_of

# How to build each op with a NumPy gradient from its input(s).
BUILD = {
    "AddV2": lambda a, b: a + b,
    "Mul": lambda a, b: a * b,
    "Sub": lambda a, b: a - b,
    "Neg": lambda a, b: -a,
    "Sin": lambda a, b: mt.sin(a),
    "Cos": lambda a, b: mt.cos(a),
    "Exp": lambda a, b: mt.exp(a),
    "Tanh": lambda a, b: mt.tanh(a),
    "Sigmoid": lambda a, b: mt.sigmoid(a),
    "Pow": lambda a, b: a ** b,
}


def _sparse_loss(logits):
    """The sparse cross-entropy of ``logits`` with fixed integer labels (one per row)."""
    rows, classes = int(np.prod(logits.shape[:-1])), logits.shape[-1]
    labels = (np.arange(rows) * 3 % classes).reshape(logits.shape[:-1]).astype(np.int32)
    return mt.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


# The other ops with a NumPy gradient: (op type, build from the inputs, input shapes). Each
# case runs with every input watched, and with each input alone.
CASES = [
    ("MatMul", lambda a, b: mt.matmul(a, b), [(3, 4), (4, 5)]),
    ("MatMul", lambda a, b: mt.matmul(a, b, transpose_a=True), [(4, 3), (4, 5)]),
    ("MatMul", lambda a, b: mt.matmul(a, b, transpose_b=True), [(3, 4), (5, 4)]),
    ("MatMul", lambda a, b: mt.matmul(a, b, transpose_a=True, transpose_b=True),
     [(4, 3), (5, 4)]),
    ("BatchMatMulV2", lambda a, b: mt.matmul(a, b), [(2, 3, 4), (4, 5)]),
    ("BatchMatMulV2", lambda a, b: mt.matmul(a, b), [(2, 3, 4), (1, 4, 5)]),  # (b broadcast)
    ("BatchMatMulV2", lambda a, b: mt.matmul(a, b, transpose_a=True, transpose_b=True),
     [(2, 4, 3), (2, 5, 4)]),
    ("Relu", lambda a: mt.nn.relu(a), [(3, 4)]),
    ("Relu", lambda a: mt.nn.relu(a), [()]),
    ("SoftmaxCrossEntropyWithLogits",
     lambda labels, logits: mt.nn.softmax_cross_entropy_with_logits(labels, logits),
     [(4, 5), (4, 5)]),
    ("SoftmaxCrossEntropyWithLogits",
     lambda labels, logits: mt.nn.softmax_cross_entropy_with_logits(labels, logits, axis=0),
     [(4, 5), (4, 5)]),
    ("SoftmaxCrossEntropyWithLogits",
     lambda labels, logits: mt.nn.softmax_cross_entropy_with_logits(labels, logits), [(5,), (5,)]),
    # (BUILD has Pow with positive bases; here bases of both signs, where the exponent's
    # gradient is 0 and a fractional power is NaN, and the constant exponents of ``x**2``)
    ("Pow", lambda a: a ** 2, [(3, 4)]),
    # (``x * x``: one Mul whose two inputs are one Tensor; dy * x is computed once)
    ("Mul", lambda a: a * a, [(3, 4)]),
    ("Mul", lambda a: a * a, [()]),
    ("Mul", lambda a: a * a, [(8,)]),
    ("Pow", lambda a: a ** 0.5, [()]),
    ("Pow", lambda a, b: a ** b, [(3, 4), (3, 4)]),
    ("SparseSoftmaxCrossEntropyWithLogits", lambda logits: _sparse_loss(logits), [(4, 5)]),
    ("SparseSoftmaxCrossEntropyWithLogits", lambda logits: _sparse_loss(logits), [(5,)]),
    ("SparseSoftmaxCrossEntropyWithLogits", lambda logits: _sparse_loss(logits), [(2, 3, 5)]),
    ("Sum", lambda a: mt.reduce_sum(a), [(3, 4)]),
    ("Sum", lambda a: mt.reduce_sum(a, axis=0), [(3, 4)]),
    ("Sum", lambda a: mt.reduce_sum(a, axis=1), [(2, 3, 4)]),
    ("Sum", lambda a: mt.reduce_sum(a, axis=[0, 2], keepdims=True), [(2, 3, 4)]),
    ("Sum", lambda a: mt.reduce_sum(a), [()]),
    ("Mean", lambda a: mt.reduce_mean(a), [(3, 4)]),
    ("Mean", lambda a: mt.reduce_mean(a, axis=0), [(3, 4)]),
    ("Mean", lambda a: mt.reduce_mean(a, axis=-1), [(2, 3, 4)]),
    ("Mean", lambda a: mt.reduce_mean(a, axis=1, keepdims=True), [(3, 4)]),
]


def test_every_numpy_gradient_is_tested():
    assert set(registry.numpy_gradients) == set(BUILD) | {case[0] for case in CASES}


def _gradients(op_type, a0, b0, watch_b, general):
    """d(sum(y * w))/d(a, b) for y = op(a, b), w fixed weights; ``general`` hides the NumPy
    gradients so that every op runs its gradient function."""
    saved = dict(registry.numpy_gradients)
    calls = []
    if general:
        registry.numpy_gradients.clear()
    else:   # count the calls, to know the fast path ran
        fn = saved[op_type]
        registry.numpy_gradients[op_type] = lambda op, dy: calls.append(op.input_ids) or fn(op, dy)
    try:
        a, b = mt.constant(a0), mt.constant(b0)
        with mt.GradientTape() as tape:
            tape.watch(a)
            if watch_b:
                tape.watch(b)
            y = BUILD[op_type](a, b)
            w = mt.constant(np.linspace(0.5, 1.5, y.numpy().size).reshape(y.shape)
                            .astype(y.dtype))
            loss = mt.reduce_sum(y * w)
        # (the op under test is the one that reads a; the loss's own Mul does not)
        return tape.gradient(loss, [a, b]), sum(a.id in ids for ids in calls)
    finally:
        registry.numpy_gradients.clear()
        registry.numpy_gradients.update(saved)


SHAPES = [((), ()), ((8,), (8,)), ((3, 4), (3, 4)),
          ((3, 4), (4,)),    # broadcasting: the backward pass sums b's gradient over axis 0
          ((3, 4), ()), ((3, 4), (3, 1)), ((1, 4), (3, 1)), ((2, 3, 4), (3, 1))]


@pytest.mark.parametrize("op_type", sorted(BUILD))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("watch_b", [True, False])
def test_numpy_gradient_equals_the_gradient_function(op_type, dtype, shapes, watch_b):
    rng = np.random.default_rng(0)
    a0 = rng.uniform(0.2, 1.5, shapes[0]).astype(dtype)
    b0 = rng.uniform(0.2, 1.5, shapes[1]).astype(dtype)
    fast, calls = _gradients(op_type, a0, b0, watch_b, general=False)
    slow, _ = _gradients(op_type, a0, b0, watch_b, general=True)
    assert calls == 1   # taken, broadcasting or not (the backward pass undoes it)
    for f, s in zip(fast, slow):
        assert (f is None) == (s is None)
        if f is not None:
            assert f.dtype == s.dtype and f.shape == s.shape
            np.testing.assert_array_equal(f.numpy(), s.numpy())  # the same bits, not close


def _case_gradients(op_type, build, values, watched, general):
    """Gradients of sum(y * w), y = build(*inputs), with respect to every input (None for
    the unwatched ones), and the number of calls of the op's NumPy gradient."""
    saved = dict(registry.numpy_gradients)
    calls = []
    if general:
        registry.numpy_gradients.clear()
    else:
        fn = saved[op_type]
        registry.numpy_gradients[op_type] = lambda op, dy: calls.append(op.type) or fn(op, dy)
    try:
        inputs = [mt.constant(v) for v in values]
        with mt.GradientTape() as tape:
            for k in watched:
                tape.watch(inputs[k])
            y = build(*inputs)
            w = mt.constant(np.linspace(0.5, 1.5, y.numpy().size).reshape(y.shape)
                            .astype(y.dtype))
            loss = mt.reduce_sum(y * w) if y.shape else y * w
        assert any(op.type == op_type for op in tape.operations)
        return tape.gradient(loss, inputs), calls.count(op_type)
    finally:
        registry.numpy_gradients.clear()
        registry.numpy_gradients.update(saved)


@pytest.mark.filterwarnings("ignore:invalid value encountered in power")   # (Pow's NaNs)
@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_gradient_of_other_ops_equals_the_gradient_function(case, dtype):
    op_type, build, shapes = CASES[case]
    rng = np.random.default_rng(case)
    values = [rng.uniform(-1.5, 1.5, shape).astype(dtype) for shape in shapes]
    for watched in [range(len(shapes))] + [[k] for k in range(len(shapes))]:
        fast, calls = _case_gradients(op_type, build, values, watched, general=False)
        slow, _ = _case_gradients(op_type, build, values, watched, general=True)
        assert calls >= 1
        for k, (f, s) in enumerate(zip(fast, slow)):
            assert (f is None) == (s is None) == (k not in watched)
            if f is not None:
                assert f.dtype == s.dtype and f.shape == s.shape
                np.testing.assert_array_equal(f.numpy(), s.numpy())  # the same bits


def test_numpy_gradient_is_used_only_when_nothing_records(monkeypatch):
    calls = []
    original = registry.numpy_gradients["Sin"]
    monkeypatch.setitem(registry.numpy_gradients, "Sin",
                        lambda op, dy: calls.append(op.type) or original(op, dy))
    x = mt.constant(0.5)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.sin(x)
    tape.gradient(y, x)
    assert calls == ["Sin"]
    # An outer tape records the inner backward pass (second derivatives): the gradient
    # function runs, so that the outer tape sees its ops.
    with mt.GradientTape() as outer:
        outer.watch(x)
        with mt.GradientTape() as inner:
            inner.watch(x)
            y = mt.sin(x)
        dy = inner.gradient(y, x)
    assert calls == ["Sin"]
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), -np.sin(np.float32(0.5)),
                               rtol=1e-6)


@pytest.mark.parametrize("op_type, build, expected", [
    ("Sin", mt.sin, lambda x: 10 * np.cos(x)),
    ("Relu", mt.nn.relu, lambda x: 10 * (x > 0)),
])
def test_a_replaced_gradient_is_used_and_the_numpy_gradient_comes_back(op_type, build,
                                                                        expected):
    """RegisterGradient(..., override=True) on a built-in op: the backward pass runs the new
    function, not the NumPy gradient that repeats the old one, until the old one is back."""
    original = registry.lookup(op_type)
    x0 = np.array([-0.5, 0.5, 1.5])

    def gradient():
        x = mt.constant(x0)
        with mt.GradientTape() as tape:
            tape.watch(x)
            y = build(x)
        return tape.gradient(y, x).numpy()

    try:
        @mt.RegisterGradient(op_type, batched=True, override=True)
        def _ten_times(op, dy):
            return 10.0 * original(op, dy)

        assert op_type not in registry.numpy_gradients
        np.testing.assert_allclose(gradient(), expected(x0))
    finally:
        mt.RegisterGradient(op_type, batched=True, override=True)(original)
    assert op_type in registry.numpy_gradients
    np.testing.assert_allclose(gradient(), expected(x0) / 10)


def test_a_numpy_gradient_needs_the_gradient_function_it_repeats():
    with pytest.raises(KeyError, match="register the op's gradient function first"):
        registry.register_numpy_gradient("FastPathsTestNoGradient")(lambda op, dy: (dy,))
    assert "FastPathsTestNoGradient" not in registry.numpy_gradients


def test_numpy_gradient_not_used_for_a_custom_gradient():
    @mt.custom_gradient
    def f(x):
        def grad(dy):
            return dy * 10.0
        return mt.sin(x), grad

    x = mt.constant(0.5)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert float(tape.gradient(y, x)) == pytest.approx(10.0)


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
def test_add_gradients_fast_path_equals_add(shape):
    rng = np.random.default_rng(1)
    a = mt.constant(rng.normal(size=shape))
    b = mt.constant(rng.normal(size=shape))
    assert not recording.tapes_recording
    fast = backward.add_gradients(a, b)
    general = math_ops.add(a, b)
    assert fast.dtype == general.dtype and fast.shape == general.shape
    np.testing.assert_array_equal(fast.numpy(), general.numpy())
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
def test_the_walk_on_arrays_equals_the_walk_on_tensors(name, persistent):
    """While nothing records, the walk holds gradients as arrays and runs NumPy gradients.
    While a tape records (here an unrelated one), it holds Tensors and runs every gradient
    function: the same gradients, bit for bit, and the same record of the pass."""
    def run(tensors):
        x = mt.constant(np.array([0.3, 0.9, 0.6]))
        w = mt.constant(np.array([1.5, -2.0, 0.5]))
        with mt.GradientTape(persistent=persistent) as tape:
            tape.watch([x, w])
            y = WALKS[name](x, w)
        if tensors:
            with mt.GradientTape():       # something records: the general walk
                assert backward.tapes_recording
                grads = tape.gradient(y, [x, w])
        else:
            assert not backward.tapes_recording
            grads = tape.gradient(y, [x, w])
        # The pass's record, by op position (seq stamps differ between the two runs).
        position = {record_of(tape).note(op).seq: n for n, op in enumerate(tape.operations)}
        last = record_of(tape).last_pass
        return (grads, [position[seq] for seq in last.visited],
                {(position[seq], k): v for (seq, k), v in last.contributions.items()})

    (on_arrays, visited, sent), (on_tensors, visited_t, sent_t) = run(False), run(True)
    for a, t in zip(on_arrays, on_tensors):
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
