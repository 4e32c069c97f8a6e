"""Every op's gradient, checked against central differences to second order (float64).

The table lives in ``tests/op_specs.py``. ``test_every_registered_op_has_a_spec`` fails as
soon as someone registers a gradient for a new op type without adding a case there.
Binary elementwise ops and matmul are also run on shapes drawn by hypothesis, so that
broadcasting is exercised beyond the hand-picked cases.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from op_specs import NO_GRADIENT_SPECS, SPECS, UNREGISTERED, distinct_values, recorded_op_types

import minitape as mt
from minitape import registry
from minitape.testing import central_difference, check_grads


def _builtin_registry():
    """The registry of a fresh ``import minitape``: op types that tests register are not in it."""
    code = ("import json, minitape, minitape.testing; from minitape import registry; "
            "print(json.dumps({k: registry.lookup(k) is None "
            "for k in registry.registered_op_types()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


BUILTIN = _builtin_registry()


# -- coverage of the registry ---------------------------------------------------------------------


def test_every_registered_op_has_a_spec():
    differentiable = {op for op, none in BUILTIN.items() if not none}
    missing = sorted(differentiable - {s.op for s in SPECS})
    assert not missing, (f"op types with a registered gradient but no test case in "
                         f"tests/op_specs.py: {missing}")


def test_every_no_gradient_op_has_a_spec():
    not_differentiable = {op for op, none in BUILTIN.items() if none}
    missing = sorted(not_differentiable - set(NO_GRADIENT_SPECS))
    assert not missing, (f"op types declared no_gradient without a case in "
                         f"NO_GRADIENT_SPECS: {missing}")


def test_spec_ids_are_unique():
    ids = [s.id for s in SPECS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_spec_records_its_op(spec):
    assert spec.op in recorded_op_types(spec.fn, spec.args())


# -- the gradients themselves ----------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_gradient_matches_finite_differences(spec):
    check_grads(spec.fn, *spec.args(), **{"order": 2, **spec.check})


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_float32_gradients_keep_the_input_dtype(spec):
    xs = [mt.constant(a.astype(np.float32)) for a in spec.args()]
    with mt.GradientTape() as tape:
        tape.watch(xs)
        out = spec.fn(*xs)
    grads = tape.gradient(out, xs)
    assert any(g is not None for g in grads)
    for x, g in zip(xs, grads):
        if g is not None:
            assert g.dtype == np.float32 and g.shape == x.shape


@pytest.mark.parametrize("op_type", sorted(NO_GRADIENT_SPECS))
def test_no_gradient_ops_give_none(op_type):
    assert registry.lookup(op_type) is None
    fn = NO_GRADIENT_SPECS[op_type]
    assert op_type in recorded_op_types(fn, [np.array([-1.2, 0.4, 2.0])])
    x = mt.constant([-1.2, 0.4, 2.0], dtype=mt.float64)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    assert tape.gradient(y, x) is None


def test_sign_gives_zeros_not_none():
    x = mt.constant([-2.0, 0.5, 3.0])
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.sign(x)
    g = tape.gradient(y, x)
    assert g is not None and g.dtype == np.float32
    np.testing.assert_array_equal(g.numpy(), np.zeros(3))


def test_round_and_comparisons_give_none():
    x = mt.constant([0.3, 1.7])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        r = mt.round(x)
        mask = mt.cast(mt.math.greater(x, 1.0), mt.float32)
    assert tape.gradient(r, x) is None
    assert tape.gradient(mask, x) is None


def test_unregistered_gradient_raises_lookup_error():
    for op_type in UNREGISTERED:
        assert op_type not in BUILTIN
    x = mt.constant(np.ones((2, 2, 1)))
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.image.adjust_contrast(x, 2.0)
    with pytest.raises(LookupError, match="AdjustContrastv2"):
        tape.gradient(y, x)


# -- hypothesis: broadcasting shapes for the binary ops --------------------------------------------


def _normal(rng, shape):
    return rng.standard_normal(shape)


def _positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _nonzero(rng, shape):
    return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.3, 1.5, shape)


def _distinct_pair(rng, sx, sy):
    nx, ny = int(np.prod(sx)), int(np.prod(sy))
    values = distinct_values(rng, nx + ny)
    return values[:nx].reshape(sx), values[nx:].reshape(sy)


BINARY = {
    "AddV2": (mt.add, lambda rng, sx, sy: (_normal(rng, sx), _normal(rng, sy))),
    "Sub": (mt.subtract, lambda rng, sx, sy: (_normal(rng, sx), _normal(rng, sy))),
    "Mul": (mt.multiply, lambda rng, sx, sy: (_normal(rng, sx), _normal(rng, sy))),
    "RealDiv": (mt.divide, lambda rng, sx, sy: (_normal(rng, sx), _nonzero(rng, sy))),
    "Pow": (mt.pow, lambda rng, sx, sy: (_positive(rng, sx), _normal(rng, sy))),
    "Maximum": (mt.maximum, _distinct_pair),
    "Minimum": (mt.minimum, _distinct_pair),
}

SEEDS = st.integers(0, 2**32 - 1)
SMALL = settings(max_examples=12, deadline=None)


@pytest.mark.parametrize("op_type", sorted(BINARY))
@SMALL
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       seed=SEEDS)
def test_binary_op_broadcasting(op_type, shapes, seed):
    fn, make = BINARY[op_type]
    sx, sy = shapes.input_shapes
    check_grads(fn, *make(np.random.default_rng(seed), sx, sy), order=2)


@SMALL
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       seed=SEEDS)
def test_select_broadcasting(shapes, seed):
    sc, sx, sy = shapes.input_shapes
    rng = np.random.default_rng(seed)
    # The condition comes from a differentiated argument through a comparison: its gradient is 0.
    check_grads(lambda c, x, y: mt.where(c > 0, x, y),
                _nonzero(rng, sc), _normal(rng, sx), _normal(rng, sy), order=2)


@SMALL
@given(shapes=hnp.mutually_broadcastable_shapes(
    signature="(m,n),(n,p)->(m,p)", max_dims=2, max_side=3), seed=SEEDS)
def test_matmul_broadcasting_batch_dims(shapes, seed):
    sa, sb = shapes.input_shapes
    rng = np.random.default_rng(seed)
    check_grads(mt.matmul, _normal(rng, sa), _normal(rng, sb), order=2)


# -- check_grads itself ---------------------------------------------------------------------------


def test_central_difference_of_known_derivatives():
    np.testing.assert_allclose(central_difference(mt.math.sin, [0.0, 1.0]), np.cos([0.0, 1.0]),
                               rtol=1e-9)
    d = central_difference(lambda x, y: x * y, 2.0, 5.0, arg=1)
    assert abs(float(d) - 2.0) < 1e-9
    both = central_difference(lambda x, y: (x * y, x + y), 2.0, 5.0, arg=None,
                              direction=[1.0, 1.0])
    np.testing.assert_allclose(both, [7.0, 2.0], rtol=1e-9)
    with pytest.raises(ValueError, match="direction"):
        central_difference(mt.math.sin, [1.0, 2.0], direction=[1.0])


def _wrong_gradient(scale):
    @mt.custom_gradient
    def f(x):
        return x * x, lambda dy: dy * x * scale
    return f


def test_check_grads_catches_a_wrong_first_derivative():
    check_grads(_wrong_gradient(2.0), [0.5, 1.5])
    with pytest.raises(AssertionError, match="reverse mode, order 1"):
        check_grads(_wrong_gradient(1.0), [0.5, 1.5], modes=["rev"])
    with pytest.raises(AssertionError, match="forward mode, order 1"):
        check_grads(_wrong_gradient(1.0), [0.5, 1.5], modes=["fwd"])


def test_check_grads_catches_a_wrong_second_derivative():
    @mt.custom_gradient
    def cube(x):
        # right first derivative 3 x**2, but computed from a constant: its derivative is 0
        three_x_squared = mt.constant(3.0 * x.numpy() ** 2)
        return x * x * x, lambda dy: dy * three_x_squared

    check_grads(cube, [0.5, 1.5], order=1)
    with pytest.raises(AssertionError, match="order 2"):
        check_grads(cube, [0.5, 1.5], order=2, modes=["rev"])
    with pytest.raises(AssertionError, match="order 2"):
        check_grads(cube, [0.5, 1.5], order=2, modes=["fwd"])


def test_check_grads_rejects_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        check_grads(mt.math.sin, 1.0, modes=["sideways"])
    with pytest.raises(ValueError, match="order"):
        check_grads(mt.math.sin, 1.0, order=0)
    with pytest.raises(TypeError, match="minitape Tensor"):
        check_grads(lambda x: np.sin(x), 1.0)
