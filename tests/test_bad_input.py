"""The bad-input table (issue #18, items 4 and 5): one row per public function and misuse.

Misuse classes: a wrong axis (out of range, repeated, not an int, on a scalar), a negative
size, a wrong dtype, a name that is not a ``str``, an empty input, NaN or infinity where they
matter. Each row asserts the exception type and that the message names the argument (and,
where it helps, the value). Axis errors are ``mt.errors.InvalidArgumentError``, which is also
a ``ValueError`` (API.md: a wrong shape, axis or size raises ValueError; a wrong dtype or kind
TypeError).

Where TensorFlow defines a value instead of raising (the sum over an empty axis is 0, the
maximum -inf), the second half checks the value.
"""

import threading
import time
import warnings

import numpy as np
import pytest

import minitape as mt
import minitape.module as module_file

M = mt.ones((2, 3))               # a matrix
V = mt.ones((3,))                 # a vector
S = mt.constant(1.0)              # a scalar
B = mt.constant([True, False])    # bool
E = mt.zeros((0, 3))              # empty


def _row(id_, call, exc, pattern):
    return pytest.param(call, exc, pattern, id=id_)


AXIS = [
    # -- reductions
    _row("reduce_sum", lambda: mt.reduce_sum(M, axis=2), ValueError,
         r"^reduce_sum: axis=2 is out of range for a Tensor of rank 2 \(shape \(2, 3\)\); "
         r"valid axes are -2 to 1"),
    _row("reduce_mean", lambda: mt.reduce_mean(M, axis=-3), ValueError, r"reduce_mean: axis=-3"),
    _row("reduce_max", lambda: mt.reduce_max(M, axis=[0, 5]), ValueError, r"reduce_max: axis=5"),
    _row("reduce_min", lambda: mt.reduce_min(V, axis=1), ValueError, r"reduce_min: axis=1"),
    _row("reduce_prod", lambda: mt.reduce_prod(M, axis=2), ValueError, r"reduce_prod: axis=2"),
    _row("reduce_sum_repeated", lambda: mt.reduce_sum(M, axis=[1, -1]), ValueError,
         r"reduce_sum: axis=\[1, -1\] names the same axis twice"),
    _row("reduce_sum_bool_axis", lambda: mt.reduce_sum(M, axis=True), TypeError,
         r"reduce_sum: axis must be an int or a list of ints, got bool True"),
    _row("reduce_sum_float_axis", lambda: mt.reduce_sum(M, axis=0.5), TypeError,
         r"reduce_sum: axis must be an int"),
    _row("reduce_sum_scalar", lambda: mt.reduce_sum(S, axis=0), ValueError,
         r"reduce_sum: axis=0 is out of range for a Tensor of rank 0.*a scalar has no axes"),
    _row("reduce_logsumexp", lambda: mt.reduce_logsumexp(M, axis=2), ValueError,
         r"reduce_logsumexp: axis=2"),
    _row("reduce_variance", lambda: mt.math.reduce_variance(M, axis=2), ValueError,
         r"reduce_variance: axis=2"),
    _row("reduce_std", lambda: mt.math.reduce_std(M, axis=2), ValueError, r"reduce_std: axis=2"),
    _row("norm", lambda: mt.norm(M, axis=2), ValueError, r"norm: axis=2"),
    _row("clip_by_norm", lambda: mt.clip_by_norm(M, 1.0, axes=[3]), ValueError,
         r"clip_by_norm: axes=3"),
    _row("cumsum", lambda: mt.math.cumsum(M, axis=2), ValueError, r"cumsum: axis=2"),
    _row("argmax", lambda: mt.math.argmax(M, axis=2), ValueError, r"argmax: axis=2"),
    _row("argmin", lambda: mt.math.argmin(M, axis=-3), ValueError, r"argmin: axis=-3"),
    # -- shape ops
    _row("gather_axis", lambda: mt.gather(M, [0], axis=2), ValueError,
         r"^gather: axis=2 is out of range for a Tensor of rank 2 \(shape \(2, 3\)\)"),
    _row("gather_scalar", lambda: mt.gather(S, [0]), ValueError,
         r"^gather: axis=0 is out of range for a Tensor of rank 0.*rank 1 or more"),
    _row("unstack", lambda: mt.unstack(M, axis=2), ValueError, r"^unstack: axis=2"),
    _row("unstack_negative", lambda: mt.unstack(M, axis=-3), ValueError, r"^unstack: axis=-3"),
    _row("unstack_scalar", lambda: mt.unstack(S), ValueError, r"^unstack: axis=0.*scalar"),
    _row("transpose_out_of_range", lambda: mt.transpose(M, perm=[0, 2]), ValueError,
         r"^transpose: perm=\[0, 2\] is not a permutation .*\(2 is out of range\)"),
    _row("transpose_short", lambda: mt.transpose(M, perm=[0]), ValueError,
         r"^transpose: perm=\[0\] .*\(it has 1 entries\)"),
    _row("transpose_not_ints", lambda: mt.transpose(M, perm=[0.0, 1.0]), TypeError,
         r"^transpose: perm must be .*int"),
    _row("expand_dims", lambda: mt.expand_dims(V, 2), ValueError,
         r"^expand_dims: axis=2 is out of range for a new axis of a Tensor of rank 1 .*"
         r"valid positions are -2 to 1"),
    _row("squeeze_range", lambda: mt.squeeze(M, axis=2), ValueError, r"^squeeze: axis=2"),
    _row("squeeze_size", lambda: mt.squeeze(M, axis=0), ValueError,
         r"^squeeze: axis=0 .* has size 2, not 1"),
    _row("concat", lambda: mt.concat([V, V], axis=1), ValueError, r"^concat: axis=1"),
    _row("concat_scalars", lambda: mt.concat([S, S], axis=0), ValueError,
         r"^concat: axis=0.*scalar"),
    _row("stack", lambda: mt.stack([V, V], axis=2), ValueError,
         r"^stack: axis=2 is out of range for a new axis"),
    _row("reverse", lambda: mt.reverse(M, axis=[2]), ValueError, r"^reverse: axis=2"),
    _row("split", lambda: mt.split(M, 1, axis=2), ValueError, r"^split: axis=2"),
    _row("repeat", lambda: mt.repeat(M, 2, axis=2), ValueError, r"^repeat: axis=2"),
    _row("repeat_scalar", lambda: mt.repeat(S, 2, axis=0), ValueError,
         r"^repeat: axis=0.*a scalar has no axes"),
    _row("sort", lambda: mt.sort(M, axis=2), ValueError, r"^sort: axis=2"),
    _row("sort_scalar", lambda: mt.sort(S), ValueError, r"^sort: axis=-1.*a scalar has no axes"),
    # -- nn
    _row("softmax", lambda: mt.nn.softmax(V, axis=1), ValueError, r"^softmax: axis=1"),
    _row("log_softmax", lambda: mt.nn.log_softmax(V, axis=-2), ValueError,
         r"^log_softmax: axis=-2"),
    _row("softmax_cross_entropy", lambda: mt.nn.softmax_cross_entropy_with_logits(M, M, axis=2),
         ValueError, r"^softmax_cross_entropy_with_logits: axis=2"),
]

SIZE = [
    _row("zeros", lambda: mt.zeros([2, -1]), ValueError, r"^zeros: sizes must be 0 or more, got "
                                                          r"shape \(2, -1\)"),
    _row("ones", lambda: mt.ones([-3]), ValueError, r"^ones: .*shape \(-3,\)"),
    _row("fill", lambda: mt.fill([-2], 1.0), ValueError, r"^fill: .*got dims \(-2,\)"),
    _row("eye", lambda: mt.eye(-1), ValueError, r"^eye: .*got num_rows -1"),
    _row("eye_columns", lambda: mt.eye(2, -2), ValueError, r"^eye: .*got num_columns -2"),
    _row("linspace", lambda: mt.linspace(0.0, 1.0, -1), ValueError, r"^linspace: .*got num -1"),
    _row("reshape_negative", lambda: mt.reshape(V, [-3, -1]), ValueError,
         r"^reshape: shape=\(-3, -1\) is not a shape: sizes must be 0 or more"),
    _row("reshape_two_unknown", lambda: mt.reshape(V, [-1, -1]), ValueError,
         r"^reshape: shape=\(-1, -1\).*one -1"),
    _row("tile", lambda: mt.tile(V, [-1]), ValueError, r"^tile: .*got multiples \(-1,\)"),
    _row("pad", lambda: mt.pad(V, [[-1, 0]]), ValueError, r"^pad: paddings must be 0 or more"),
    _row("range_delta_0", lambda: mt.range(0, 5, 0), ValueError, r"^range: delta=0 .*not be 0"),
    _row("random_normal", lambda: mt.random.normal([-1]), ValueError,
         r"^random\.normal: .*shape \(-1,\)"),
    _row("random_uniform", lambda: mt.random.uniform([2, -2]), ValueError,
         r"^random\.uniform: .*shape \(2, -2\)"),
    _row("random_uniform_int_range", lambda: mt.random.uniform([2], 3, 3, dtype=mt.int32),
         ValueError, r"^random\.uniform: .*minval < maxval, got minval=3, maxval=3"),
    _row("Dense_zero", lambda: mt.layers.Dense(0), ValueError,
         r"^Dense: units must be a positive int .*got units=0"),
    _row("Dense_negative", lambda: mt.layers.Dense(-4), ValueError, r"^Dense: units.*units=-4"),
    _row("Dense_float", lambda: mt.layers.Dense(2.5), TypeError,
         r"^Dense: units must be a positive int, got float 2\.5"),
    _row("Dense_bool", lambda: mt.layers.Dense(True), TypeError, r"^Dense: units .*bool True"),
    _row("Dense_str", lambda: mt.layers.Dense("8"), TypeError, r"^Dense: units .*str '8'"),
]

DTYPE = [
    _row("reduce_sum_bool", lambda: mt.reduce_sum(B), TypeError,
         r"^reduce_sum expects a numeric Tensor \(float or int\), got bool; to count the True "
         r"entries use reduce_sum\(mt\.cast\(x, mt\.int32\)\)"),
    _row("reduce_mean_bool", lambda: mt.reduce_mean(B), TypeError, r"^reduce_mean .*got bool"),
    _row("reduce_prod_bool", lambda: mt.reduce_prod(B), TypeError, r"^reduce_prod .*got bool"),
    _row("reduce_max_bool", lambda: mt.reduce_max(B), TypeError, r"^reduce_max .*got bool"),
    _row("cast_str", lambda: mt.cast(V, str), TypeError,
         r"^cast: dtype=str\d* is not supported: .*bool, integer or floating"),
    _row("cast_object", lambda: mt.cast(V, object), TypeError, r"^cast: dtype=object is not"),
    _row("cast_datetime", lambda: mt.cast(V, "datetime64[s]"), TypeError,
         r"^cast: dtype=datetime64\[s\] is not supported"),
    _row("cast_not_a_dtype", lambda: mt.cast(V, "floaty"), TypeError, r"expected a dtype"),
    _row("add_bool", lambda: B + B, TypeError,
         r"^AddV2: arithmetic needs numeric Tensors \(float or int\), got x of dtype bool"),
    _row("subtract_bool", lambda: mt.subtract(B, B), TypeError, r"^Sub: .*x of dtype bool"),
    _row("multiply_bool", lambda: B * True, TypeError, r"^Mul: .*x of dtype bool"),
    _row("divide_bool", lambda: mt.divide(B, B), TypeError, r"^RealDiv: .*x of dtype bool"),
    _row("pow_bool", lambda: B ** B, TypeError, r"^Pow: .*x of dtype bool"),
    _row("negative_bool", lambda: -B, TypeError, r"^Neg: .*x of dtype bool"),
    _row("abs_bool", lambda: abs(B), TypeError, r"^Abs: .*x of dtype bool"),
    _row("square_bool", lambda: mt.square(B), TypeError, r"^Square: .*x of dtype bool"),
    _row("maximum_bool", lambda: mt.maximum(B, B), TypeError, r"^Maximum: .*x of dtype bool"),
    _row("matmul_bool", lambda: mt.matmul([[True]], [[True]]), TypeError,
         r"^MatMul: .*x of dtype bool"),
    _row("sin_int", lambda: mt.math.sin(mt.constant([1])), TypeError,
         r"^Sin expects a floating Tensor .*got int32"),
    _row("zeros_str", lambda: mt.zeros([2], dtype=str), TypeError, r"^zeros: dtype=str"),
    _row("ones_like_object", lambda: mt.ones_like(V, dtype=object), TypeError,
         r"^ones_like: dtype=object"),
    _row("eye_str", lambda: mt.eye(2, dtype=str), TypeError, r"^eye: dtype=str"),
    _row("reduce_max_complex", lambda: mt.reduce_max(mt.cast(V, mt.complex64)), TypeError,
         r"^reduce_max expects a numeric Tensor \(float or int\), got complex64"),
    _row("range_str", lambda: mt.range(3, dtype=str), TypeError, r"^range: dtype=str"),
    _row("random_normal_int", lambda: mt.random.normal([2], dtype=mt.int32), TypeError,
         r"^random\.normal: dtype must be floating .*dtype=int32"),
    _row("random_uniform_bool", lambda: mt.random.uniform([2], dtype=mt.bool), TypeError,
         r"^random\.uniform: dtype .*bool"),
    _row("pad_float_paddings", lambda: mt.pad(V, [[0.5, 1]]), TypeError,
         r"^pad: paddings must be integers"),
]

NAME = [
    _row("constant", lambda: mt.constant(1.0, name=5), TypeError,
         r"name must be a str or None, got int 5"),
    _row("convert_to_tensor", lambda: mt.convert_to_tensor([1.0], name=3.5), TypeError,
         r"name must be a str or None, got float 3\.5"),
    _row("Variable", lambda: mt.Variable(1.0, name=5), TypeError,
         r"^Variable: name must be a str or None, got int 5"),
    _row("Variable_bytes", lambda: mt.Variable(1.0, name=b"w"), TypeError,
         r"^Variable: name must be a str .*bytes b'w'"),
    _row("add", lambda: mt.add(V, V, name=1), TypeError, r"name must be a str or None, got int"),
    _row("reduce_sum", lambda: mt.reduce_sum(V, name=["s"]), TypeError,
         r"name must be a str or None, got list"),
    _row("zeros", lambda: mt.zeros([2], name=0), TypeError, r"name must be a str or None"),
    _row("gather", lambda: mt.gather(V, [0], name=2), TypeError, r"name must be a str or None"),
    _row("Module", lambda: mt.Module(name=5), TypeError,
         r"^Module: name must be a str or None, got int 5"),
    _row("Dense", lambda: mt.layers.Dense(3, name=7), TypeError,
         r"^Dense: name must be a str or None, got int 7"),
]

EMPTY_AND_NAN = [
    _row("reduce_mean_empty_int", lambda: mt.reduce_mean(mt.zeros([0], mt.int32)), ValueError,
         r"^reduce_mean: the mean over axis=\(0,\) of a int32 Tensor of shape \(0,\).*mt\.cast"),
    _row("concat_nothing", lambda: mt.concat([], axis=0), TypeError,
         r"^concat expects a non-empty list of Tensors"),
    _row("stack_nothing", lambda: mt.stack([]), TypeError, r"^stack expects a non-empty list"),
    _row("range_inf_limit", lambda: mt.range(0.0, float("inf")), ValueError,
         r"^range: limit must be a finite number, got limit=inf"),
    _row("range_nan_delta", lambda: mt.range(0.0, 5.0, float("nan")), ValueError,
         r"^range: delta must be a finite number, got delta=nan"),
    _row("random_uniform_inf", lambda: mt.random.uniform([2], 0.0, float("inf")), ValueError,
         r"^random\.uniform: maxval must be a finite number, got maxval=inf"),
    _row("random_normal_nan", lambda: mt.random.normal([2], stddev=float("nan")), ValueError,
         r"^random\.normal: stddev must be a finite number, got stddev=nan"),
    _row("random_normal_negative_stddev", lambda: mt.random.normal([2], stddev=-1.0), ValueError,
         r"^random\.normal: stddev must be 0 or more, got stddev=-1\.0"),
    _row("random_normal_str_mean", lambda: mt.random.normal([2], mean="0"), TypeError,
         r"^random\.normal: mean must be a number, got str '0'"),
    _row("Dense_nan", lambda: mt.layers.Dense(float("nan")), TypeError,
         r"^Dense: units must be a positive int, got float nan"),
    _row("linspace_float_num", lambda: mt.linspace(0.0, 1.0, 2.5), TypeError,
         r"^linspace: every entry .* must be an int"),
]


@pytest.mark.parametrize("call, exc, pattern", AXIS + SIZE + DTYPE + NAME + EMPTY_AND_NAN)
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.parametrize("call", [p.values[0] for p in AXIS if p.values[1] is ValueError],
                         ids=[p.id for p in AXIS if p.values[1] is ValueError])
def test_axis_errors_are_invalid_argument_errors(call):
    with pytest.raises(mt.errors.InvalidArgumentError):
        call()


def test_every_axis_taking_op_goes_through_the_one_helper():
    # Each op module checks axes with minitape.ops.axes, none with a modulo of its own.
    import inspect

    import re

    from minitape.ops import array_ops, math_ops, nn_ops, reduction_ops
    for mod in (array_ops, math_ops, nn_ops, reduction_ops):
        source = inspect.getsource(mod)
        # (the old ways: ``axis % params.ndim``, ``p % a.ndim``: they wrap out-of-range axes)
        assert not re.findall(r"%\s*[\w\[\]]+\.ndim", source), mod.__name__
        assert "check_axis" in source or "check_axes" in source, mod.__name__


# -- where TensorFlow defines a value: give it -------------------------------------------------

@pytest.mark.parametrize("reduce, expected", [
    (mt.reduce_sum, [0.0, 0.0, 0.0]),
    (mt.reduce_prod, [1.0, 1.0, 1.0]),
    (mt.reduce_max, [-np.inf] * 3),
    (mt.reduce_min, [np.inf] * 3),
    (mt.reduce_mean, [np.nan] * 3),
])
def test_reductions_over_an_empty_axis(reduce, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no "Mean of empty slice" from NumPy
        out = reduce(E, axis=0)
    assert out.shape == (3,) and out.dtype == mt.float32
    np.testing.assert_array_equal(out.numpy(), np.array(expected, np.float32))


def test_max_of_an_empty_int_tensor_is_the_lowest_int():
    out = mt.reduce_max(mt.zeros([0], mt.int32))
    assert out.numpy() == np.iinfo(np.int32).min


def test_gradient_of_a_reduction_over_an_empty_axis():
    x = mt.Variable(np.zeros((0, 3), np.float32))
    with mt.GradientTape(persistent=True) as tape:
        targets = [mt.reduce_sum(reduce(x, axis=0)) for reduce in
                   (mt.reduce_max, mt.reduce_sum, mt.reduce_prod, mt.reduce_mean)]
    for target in targets:
        assert tape.gradient(target, x).shape == (0, 3)


def test_transpose_accepts_negative_entries_in_range():
    out = mt.transpose(mt.ones((2, 3, 4)), perm=[-1, 0, 1])
    assert out.shape == (4, 2, 3)


def test_reshape_still_infers_one_size():
    assert mt.reshape(mt.ones(6), [-1, 2]).shape == (3, 2)


def test_a_0d_int_tensor_is_an_axis():
    np.testing.assert_array_equal(mt.reduce_sum(M, axis=mt.constant(1)).numpy(), [3.0, 3.0])
    assert mt.layers.Dense(mt.constant(4)).units == 4


def test_a_str_subclass_is_a_name():
    class Name(str):
        pass
    assert mt.Variable(1.0, name=Name("w")).name == "w"


# -- Module auto-names are unique across threads --------------------------------------------------

class _SlowCounts(dict):
    """A name counter whose reads hand the GIL to other threads (time.sleep releases it), so
    an unlocked read-then-write would interleave and give two Modules one name."""

    def get(self, key, default=None):
        value = super().get(key, default)
        time.sleep(0.0002)
        return value


def test_module_auto_names_are_unique_across_threads(monkeypatch):
    monkeypatch.setattr(module_file, "_name_counts", _SlowCounts())
    names = []
    start = threading.Barrier(4)

    def build():
        start.wait()
        names.extend(mt.layers.Dense(2).name for _ in range(20))
        names.extend(mt.layers.Conv2D(1, 1).name for _ in range(5))   # Keras-style names too

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(names) == 100
    assert len(set(names)) == 100, sorted(n for n in names if names.count(n) > 1)[:6]
    assert {n for n in names if n.startswith("conv2d")} == \
        {"conv2d"} | {f"conv2d_{i}" for i in range(1, 20)}


def test_a_rejected_dense_takes_no_auto_name(monkeypatch):
    monkeypatch.setattr(module_file, "_name_counts", {})
    with pytest.raises(ValueError):
        mt.layers.Dense(0)
    assert mt.layers.Dense(1).name == "dense"
