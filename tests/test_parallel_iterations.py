"""``parallel_iterations`` of ``jacobian`` and ``batch_jacobian``: vectorized passes over
chunks of the cotangents, as TensorFlow's ``pfor`` dispatches its iterations in chunks.

Every chunk size must give the Jacobian of the single vectorized pass (each cotangent's row is
computed by the same operations) and of the loop (one backward pass per output element, an
independent computation); the tape must be released or kept as after one pass; a chunked
Jacobian must still be differentiable by an outer tape; and a bad value is refused at once.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_specs import SPECS

import minitape as mt


def _network(persistent=True):
    rng = np.random.default_rng(3)
    w1 = mt.Variable(rng.standard_normal((4, 6)).astype(np.float32))
    b1 = mt.Variable(rng.standard_normal(6).astype(np.float32))
    w2 = mt.Variable(rng.standard_normal((6, 3)).astype(np.float32))
    unused = mt.Variable(np.ones(2, np.float32))
    x = mt.constant(rng.standard_normal((5, 4)).astype(np.float32))
    with mt.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        y = mt.nn.elu(mt.matmul(mt.nn.elu(mt.matmul(x, w1) + b1), w2))
    return tape, y, [x, w1, b1, w2, unused]


@pytest.mark.parametrize("chunk", [1, 2, 4, 7, 15, 16, 1000])
def test_chunked_jacobian_equals_one_pass_and_loop(chunk):
    tape, y, sources = _network()
    one_pass = tape.jacobian(y, sources)
    looped = tape.jacobian(y, sources, experimental_use_pfor=False)
    chunked = tape.jacobian(y, sources, parallel_iterations=chunk)
    assert chunked[-1] is None and one_pass[-1] is None   # the unused Variable
    for c, p, lp, s in zip(chunked[:-1], one_pass[:-1], looped[:-1], sources):
        assert c.shape == y.shape + s.shape and c.dtype == s.dtype
        np.testing.assert_array_equal(c.numpy(), p.numpy())
        np.testing.assert_allclose(c.numpy(), lp.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 100])
def test_chunked_batch_jacobian_equals_one_pass_and_loop(chunk):
    tape, y, (x, *_) = _network()
    one_pass = tape.batch_jacobian(y, x).numpy()
    looped = tape.batch_jacobian(y, x, experimental_use_pfor=False).numpy()
    chunked = tape.batch_jacobian(y, x, parallel_iterations=chunk).numpy()
    assert chunked.shape == (5, 3, 4)
    np.testing.assert_array_equal(chunked, one_pass)
    np.testing.assert_allclose(chunked, looped, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_every_op_chunked_jacobian_equals_one_pass(spec):
    xs = [mt.constant(a) for a in spec.args()]
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        out = spec.fn(*xs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    for o in outs:
        one = tape.jacobian(o, xs, unconnected_gradients="zero")
        chunked = tape.jacobian(o, xs, unconnected_gradients="zero", parallel_iterations=2)
        for a, b in zip(one, chunked):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-12)


def test_a_non_persistent_tape_is_released_after_its_chunked_jacobian():
    tape, y, sources = _network(persistent=False)
    j = tape.jacobian(y, sources[0], parallel_iterations=4)
    assert j.shape == (5, 3, 5, 4)
    assert tape.released
    with pytest.raises(RuntimeError, match="only be called once"):
        tape.jacobian(y, sources[0], parallel_iterations=4)


def test_a_persistent_tape_keeps_its_ops_after_a_chunked_jacobian():
    tape, y, sources = _network()
    first = tape.jacobian(y, sources[0], parallel_iterations=4).numpy()
    again = tape.jacobian(y, sources[0], parallel_iterations=4).numpy()
    np.testing.assert_array_equal(first, again)
    assert not tape.released


def test_a_chunked_jacobian_is_differentiated_by_an_outer_tape():
    # The Hessian of sum(x**3) is diag(6x): the inner Jacobian (the gradient, 3x**2, as a
    # Jacobian of the sum's elements) joined from chunks must still carry the chain rule.
    x = mt.constant([0.5, -1.0, 2.0, 3.0, 1.5])
    results = []
    for chunk in (None, 2):
        with mt.GradientTape() as outer:
            outer.watch(x)
            with mt.GradientTape() as inner:
                inner.watch(x)
                y = x ** 3
            j = inner.jacobian(y, x, parallel_iterations=chunk)    # diag(3x^2)
            total = mt.reduce_sum(j, axis=0)                         # 3x^2
        results.append(outer.jacobian(total, x).numpy())
    np.testing.assert_allclose(results[1], np.diag(6 * x.numpy()), rtol=1e-6)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_a_bad_parallel_iterations_is_refused_at_once(bad):
    tape, y, sources = _network()
    with pytest.raises(ValueError, match=r"parallel_iterations must be None .* got "):
        tape.jacobian(y, sources, parallel_iterations=bad)
    with pytest.raises(ValueError, match=r"batch_jacobian: parallel_iterations"):
        tape.batch_jacobian(y, sources[0], parallel_iterations=bad)
    assert len(tape.jacobian(y, sources, parallel_iterations=np.int64(3))) == len(sources)


def test_default_jacobian_picks_its_chunk_from_the_tapes_largest_tensor():
    """Without parallel_iterations the Jacobian bounds its temporaries itself (issue 31):
    a tape whose largest tensor is 64 x 4096 float32 (1 MB a cotangent) gets chunks of 4
    cotangents under the 4 MB budget, a small tape one pass, and the numbers are those of
    one pass, bit for bit."""
    from minitape import jacobians
    rng = np.random.default_rng(0)
    x = mt.constant(rng.standard_normal((64, 4096)).astype(np.float32))
    w = mt.constant(rng.standard_normal((4096, 3)).astype(np.float32))
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.matmul(mt.tanh(x), w)[:2]          # 6 cotangents
    assert jacobians.auto_chunk(tape, 6, 4) == jacobians.AUTO_CHUNK_BYTES // (64 * 4096 * 4)
    default = tape.jacobian(y, x).numpy()
    one_pass = tape.jacobian(y, x, parallel_iterations=6).numpy()
    np.testing.assert_array_equal(default, one_pass)
    with mt.GradientTape() as small:
        s = mt.constant([1.0, 2.0])
        small.watch(s)
        s * s
    assert jacobians.auto_chunk(small, 2, 4) == 2
