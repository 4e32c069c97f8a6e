"""Details of the TensorFlow surface (issues #19 and #20): ``mt.range``'s dtype, matmul's
``InvalidArgumentError``, and callable ``kernel_initializer`` for ``Dense`` and ``Conv2D``.

- ``mt.range`` infers its dtype from its arguments as ``tf.range``: the widest in the order
  int32 < int64 < float32 < float64 (a Python float is float32);
- a shape error of ``matmul`` is a ``mt.errors.InvalidArgumentError`` (as TensorFlow), which
  is also a ``ValueError`` (the API contract's type for shape errors);
- ``kernel_initializer`` may be a callable ``initializer(shape, dtype=...)``, as Keras calls
  one (``tf.random.normal`` in the guides); anything else fails at construction, clearly.
"""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt

# -- mt.range --------------------------------------------------------------------------------


@pytest.mark.parametrize("args, kwargs, dtype, values", [
    ((10,), {}, mt.int32, np.arange(10)),
    ((10.,), {}, mt.float32, np.arange(10.)),
    ((0, 5, 0.5), {}, mt.float32, np.arange(0, 5, 0.5)),
    ((1.5, 4), {}, mt.float32, [1.5, 2.5, 3.5]),
    ((5, 0, -2), {}, mt.int32, [5, 3, 1]),
    ((3,), {"dtype": mt.float64}, mt.float64, [0., 1., 2.]),
    ((mt.constant(3, mt.int64),), {}, mt.int64, [0, 1, 2]),
    ((mt.constant(2, mt.int64), 4.0), {}, mt.float32, [2., 3.]),  # int64 < float32
    ((mt.constant(3., mt.float64),), {}, mt.float64, [0., 1., 2.]),
    ((0,), {}, mt.int32, []),
])
def test_range_infers_its_dtype_as_tensorflow(args, kwargs, dtype, values):
    r = mt.range(*args, **kwargs)
    assert r.dtype == dtype
    np.testing.assert_array_equal(r.numpy(), np.asarray(values, dtype))


@pytest.mark.parametrize("call, error, message", [
    (lambda: mt.range(3.5, dtype=mt.int32), TypeError, r"cannot convert 3\.5"),
    (lambda: mt.range(True), TypeError, r"^range: limit must be an int or a float, got "
                                        r"limit=True \(bool\)"),
    (lambda: mt.range([1, 2]), ValueError, r"^range: limit must be a scalar, got shape \(2,\)"),
    (lambda: mt.range(3, dtype=mt.complex64), TypeError, r"^range: dtype=complex64 is not "
                                                         r"supported"),
    (lambda: mt.range(0, 5, 0), ValueError, r"^range: delta=0"),
])
def test_range_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- matmul's shape errors -------------------------------------------------------------------


@pytest.mark.parametrize("a, b, message", [
    ([2, 3], [2, 3], r"^matmul: cannot multiply shapes \(2, 3\) and \(2, 3\): the inner "
                     r"dimensions 3 and 2 differ"),
    ([3], [3, 3], r"^matmul needs two Tensors of rank 2 or more"),
    ([2, 2, 3], [3, 3, 4], r"^matmul: the batch dimensions of shapes \(2, 2, 3\) and "
                           r"\(3, 3, 4\) .*do not broadcast"),
])
def test_matmul_shape_errors_are_invalid_argument_errors(a, b, message):
    for call in (lambda: mt.matmul(mt.ones(a), mt.ones(b)), lambda: mt.ones(a) @ mt.ones(b),
                 lambda: mt.linalg.matmul(mt.ones(a), mt.ones(b))):
        with pytest.raises(mt.errors.InvalidArgumentError, match=message) as info:
            call()
        assert isinstance(info.value, ValueError)  # `except ValueError` keeps working
        assert info.value.message == str(info.value)


def test_matmul_batch_dimensions_that_broadcast_still_work():
    a, b = np.ones((2, 1, 2, 3), np.float32), np.ones((4, 3, 5), np.float32)
    np.testing.assert_array_equal(mt.matmul(a, b).numpy(), np.matmul(a, b))
    np.testing.assert_array_equal(mt.matmul(mt.ones([2, 3]), mt.ones([2, 3]),
                                            transpose_b=True).numpy(), np.full((2, 2), 3.0))


# -- callable kernel initializers ------------------------------------------------------------


def _recorder(calls, value=None):
    def init(shape, dtype=None):
        calls.append((shape, dtype))
        return (mt.random.normal(shape, dtype=dtype) if value is None else value)
    return init


def test_dense_calls_the_initializer_as_keras():
    calls = []
    mt.random.set_seed(3)
    layer = mt.layers.Dense(3, kernel_initializer=_recorder(calls))
    y = layer(mt.ones([2, 4]))
    assert calls == [((4, 3), mt.float32)]
    mt.random.set_seed(3)
    expected = mt.random.normal((4, 3)).numpy()
    np.testing.assert_array_equal(layer.kernel.numpy(), expected)
    np.testing.assert_allclose(y.numpy(), np.ones((2, 4)) @ expected, rtol=1e-6)
    assert layer.kernel.dtype == mt.float32 and layer.kernel.path == f"{layer.name}/kernel"


def test_tf_random_normal_itself_is_an_initializer():
    mt.random.set_seed(0)
    layer = mt.layers.Dense(5, kernel_initializer=mt.random.normal)
    layer(mt.ones([1, 2]))
    mt.random.set_seed(0)
    np.testing.assert_array_equal(layer.kernel.numpy(), mt.random.normal((2, 5)).numpy())


def test_conv2d_calls_the_initializer_with_the_hwio_shape():
    calls = []
    kernel = np.arange(2 * 2 * 1 * 3, dtype=np.float64).reshape(2, 2, 1, 3)
    conv = mt.layers.Conv2D(3, 2, kernel_initializer=_recorder(calls, kernel))
    x = np.random.default_rng(0).normal(size=(1, 4, 4, 1)).astype(np.float32)
    y = conv(x)
    assert calls == [((2, 2, 1, 3), mt.float32)]
    assert conv.kernel.dtype == mt.float32  # a float64 value is cast to the layer's dtype
    np.testing.assert_array_equal(conv.kernel.numpy(), kernel.astype(np.float32))
    np.testing.assert_allclose(y.numpy(), mt.nn.conv2d(x, kernel.astype(np.float32), 1,
                                                       "VALID").numpy(), rtol=1e-6)


def test_keras_layers_take_it_too():
    layer = mt.keras.layers.Dense(2, kernel_initializer=lambda shape, dtype: mt.ones(shape, dtype))
    np.testing.assert_array_equal(layer(mt.ones([1, 3])).numpy(), [[3.0, 3.0]])


@pytest.mark.parametrize("make", [mt.layers.Dense, lambda **kw: mt.layers.Conv2D(2, 3, **kw)],
                         ids=["Dense", "Conv2D"])
@pytest.mark.parametrize("initializer, error, message", [
    (3, TypeError, r"kernel_initializer must be a Keras initializer name \(one of "
                   r"\['glorot_uniform', 'zeros', 'ones'\], 'he_normal', \.\.\.: see "
                   r"mt.keras.initializers\), an initializer, or a callable "
                   r"initializer\(shape, dtype=\.\.\.\) .*got int 3"),
    ("he_normall", ValueError, r"kernel_initializer must be a Keras .*got str 'he_normall'"),
    (None, TypeError, r"kernel_initializer must be a Keras .*got NoneType None"),
])
def test_bad_initializers_fail_at_construction(make, initializer, error, message):
    kwargs = {"kernel_initializer": initializer}
    with pytest.raises(error, match=message):
        make(**kwargs) if make is not mt.layers.Dense else make(2, **kwargs)


@pytest.mark.parametrize("initializer, error, message", [
    (lambda shape: mt.ones(shape), TypeError,
     r"could not be called as initializer\(shape, dtype=\.\.\.\) .*shape=\(3, 2\), "
     r"dtype=float32: .*unexpected keyword argument 'dtype'"),
    (lambda shape, dtype: mt.ones([2]), ValueError,
     r"the value of kernel_initializer\(\(3, 2\), dtype=float32\) has shape \(2,\), expected "
     r"\(3, 2\)"),
    (lambda shape, dtype: "zeros", TypeError,
     r"must be a Tensor or an array of numbers, got str 'zeros'"),
])
def test_bad_initializer_values_fail_when_the_layer_builds(initializer, error, message):
    layer = mt.layers.Dense(2, kernel_initializer=initializer)
    with pytest.raises(error, match=rf"^Dense '{layer.name}': .*" + message):
        layer(mt.ones([1, 3]))
    assert layer.kernel is None
