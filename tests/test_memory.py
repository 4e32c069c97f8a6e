"""What the tape keeps alive, proved with weak references.

API.md: operations keep only what their gradient needs (ReLU, sigmoid and exp keep their
output, not their input); a non-persistent tape releases what it holds as soon as ``gradient``
returns (and frees each op's saved tensors as the backward pass passes it); a persistent tape
keeps everything until it is deleted.

A weak reference to a Tensor created inside the function under test dies as soon as nothing
holds the Tensor: if it is still alive, the tape (or an op on it) is holding it.
"""

import gc
import weakref

import numpy as np
import pytest

import minitape as mt


def alive(refs):
    gc.collect()
    return [r() is not None for r in refs]


# -- ops keep only what their gradient needs -----------------------------------------------------

@pytest.mark.parametrize("fn, derivative", [
    (mt.nn.relu, lambda a: (a > 0).astype(np.float32)),
    (mt.nn.sigmoid, lambda a: 1 / (1 + np.exp(-a)) * (1 - 1 / (1 + np.exp(-a)))),
    (mt.exp, np.exp),
])
def test_relu_sigmoid_exp_keep_only_their_output(fn, derivative):
    x = mt.constant([-1.0, 0.5, 2.0])
    with mt.GradientTape() as tape:
        tape.watch(x)

        def build():
            a = x * 2.0                  # the op's input: nothing but the op could keep it
            return fn(a), weakref.ref(a), a.numpy().copy()

        y, a_ref, a_value = build()
    op = tape._ops[-1]
    assert op._inputs == (None,)             # the input was not saved ...
    assert op._outputs[0] is y               # ... the output was
    assert not alive([a_ref])[0]             # so the intermediate is gone already
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * derivative(a_value),
                               rtol=1e-6)


def test_an_op_that_needs_its_input_keeps_it():
    # The control for the test above: sin's gradient is cos(input), so sin keeps its input.
    x = mt.constant([-1.0, 0.5, 2.0])
    with mt.GradientTape() as tape:
        tape.watch(x)

        def build():
            a = x * 2.0
            return mt.math.sin(a), weakref.ref(a)

        y, a_ref = build()
    assert tape._ops[-1]._inputs[0] is a_ref()
    assert alive([a_ref]) == [True]
    del tape
    assert alive([a_ref]) == [False]


# -- a non-persistent tape releases what it holds ------------------------------------------------

def _chain(x):
    """A small graph; returns the target and weak references to every intermediate."""
    a = x * 3.0
    b = mt.math.sin(a)
    c = b * b
    d = mt.math.tanh(c) + a
    e = mt.reduce_sum(d * x)
    return e, [weakref.ref(t) for t in (a, b, c, d)]


def test_non_persistent_tape_drops_saved_tensors_when_gradient_returns():
    x = mt.constant([0.1, 0.2, 0.3])
    with mt.GradientTape() as tape:
        tape.watch(x)
        e, refs = _chain(x)
    assert any(alive(refs))   # before: the ops hold (some of) the intermediates
    g = tape.gradient(e, x)
    assert not any(alive(refs)), "the tape still holds intermediates after gradient returned"
    assert all(op._inputs is None and op._outputs is None for op in tape._ops)
    # The gradient itself is right (closed form, float64).
    xv = x.numpy().astype(np.float64)
    a = 3 * xv
    c = np.sin(a) ** 2
    d = np.tanh(c) + a
    dd_dx = (1 - np.tanh(c) ** 2) * 2 * np.sin(a) * np.cos(a) * 3 + 3
    np.testing.assert_allclose(g.numpy(), d + xv * dd_dx, rtol=1e-5)


def test_backward_pass_frees_each_op_as_it_passes():
    # A test-only op type whose gradient looks at the tape while the backward pass runs:
    # the ops after it (already visited) must have released their saved tensors, the ops
    # before it (still to visit) must still have theirs.
    seen = {}

    @mt.primitive("TestMemoryProbe")
    def probe(v):
        return v * 1.0

    @mt.RegisterGradient("TestMemoryProbe")
    def _probe_grad(op, dy):
        ops = seen["tape"]._ops
        k = next(i for i, o in enumerate(ops) if o is op)
        seen["before"] = [o._inputs is not None or o._outputs is not None for o in ops[:k]]
        seen["after"] = [o._inputs is None and o._outputs is None for o in ops[k + 1:]]
        seen["self"] = op._inputs is not None
        return dy

    x = mt.constant([0.5, -0.25])
    with mt.GradientTape() as tape:
        tape.watch(x)
        a = mt.math.sin(x)          # op 0: keeps x
        b = probe(a * a)            # ops 1 (Mul), 2 (the probe)
        c = mt.math.cos(b) * b      # ops 3, 4
        y = mt.reduce_sum(c * c)    # ops 5, 6
    del a, b, c
    seen["tape"] = tape
    g = tape.gradient(y, x)
    assert seen["before"] == [True, True]
    assert seen["self"] is True
    assert seen["after"] == [True] * 4
    # d/dx of sum((cos(s) s)^2), s = sin(x)^2
    xv = x.numpy().astype(np.float64)
    s = np.sin(xv) ** 2
    c = np.cos(s) * s
    np.testing.assert_allclose(g.numpy(), 2 * c * (np.cos(s) - s * np.sin(s))
                               * 2 * np.sin(xv) * np.cos(xv), rtol=1e-5)


def test_non_persistent_jacobian_releases_too():
    x = mt.constant([0.1, 0.2, 0.3])
    with mt.GradientTape() as tape:
        tape.watch(x)

        def build():
            a = x * 3.0
            return mt.math.sin(a) * x, weakref.ref(a)

        y, a_ref = build()
    assert alive([a_ref]) == [True]
    j = tape.jacobian(y, x)
    assert j.shape == (3, 3)
    assert alive([a_ref]) == [False]


# -- a persistent tape keeps everything until it is deleted --------------------------------------

def test_persistent_tape_keeps_everything_until_deleted():
    x = mt.constant([0.1, 0.2, 0.3])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)

        def build():
            a = x * 2.0
            r = mt.nn.relu(a)   # keeps its input too on a persistent tape
            return mt.reduce_sum(r * r), [weakref.ref(a), weakref.ref(r)]

        y, refs = build()
    assert tape._ops[1]._inputs[0] is refs[0]()
    first = tape.gradient(y, x).numpy()
    assert all(alive(refs))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), first)
    assert all(alive(refs))
    np.testing.assert_allclose(first, 8 * x.numpy(), rtol=1e-6)   # d sum((2x)^2) / dx
    del tape
    assert not any(alive(refs))


def test_deleting_a_persistent_tape_frees_large_arrays():
    # The same with memory: a persistent tape holding ~8 MB of intermediates frees them.
    import tracemalloc
    x = mt.random.normal([1_000_000], dtype=mt.float64)
    gc.collect()
    tracemalloc.start()
    try:
        with mt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = mt.reduce_sum(mt.math.sin(x * 2.0))
        held = tracemalloc.get_traced_memory()[0]
        assert held > 7_000_000          # x * 2.0 and sin's output: 8 MB each
        del tape
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after < 1_000_000
    assert y.shape == ()


def test_a_training_step_leaves_no_reference_cycles():
    # Cyclic garbage is freed only when the collector runs: gradients caught in a cycle
    # would stay in memory (and cost fresh pages) step after step.
    w = mt.Variable(np.ones((3, 2), np.float32))
    b = mt.Variable(np.zeros(2, np.float32))
    x = mt.constant(np.ones((4, 3), np.float32))

    def step():
        with mt.GradientTape() as tape:
            loss = mt.reduce_mean(mt.nn.relu(x @ w + b) ** 2)
        grads = tape.gradient(loss, {"w": w, "b": b})
        with mt.GradientTape() as tape2:
            tape2.watch(x)
            y = mt.math.sin(x)
        tape2.jacobian(y, [x])
        return grads

    step()
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            step()
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()
