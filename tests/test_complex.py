"""Complex values (issue #19, item 4): created, printed and computed with, never differentiated.

As TensorFlow: a Python complex becomes complex128, a complex ndarray keeps its dtype,
``mt.complex64`` / ``mt.complex128`` are NumPy's dtypes, and a complex Tensor prints as
``<mt.Tensor: shape=(), dtype=complex128, numpy=(1+2j)>``. Unlike TensorFlow, no gradient
flows through a complex Tensor: asking for one (with respect to a complex source, of a
complex target, or through a complex intermediate) raises a ``TypeError`` that says minitape
does not differentiate complex numbers, never a silent ``None``; ``tape.watch`` of a complex
Tensor warns as it does for an integer one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitape as mt

NO_COMPLEX = r"minitape does not differentiate complex numbers"


# -- creation and printing -------------------------------------------------------------------


def test_dtypes_are_numpys():
    assert mt.complex64 == np.dtype("complex64") and mt.complex128 == np.dtype("complex128")
    assert mt.dtypes.check_dtype("complex64", "cast") == mt.complex64


@pytest.mark.parametrize("value, dtype", [
    (1 + 2j, mt.complex128),                      # a Python complex: complex128, as TF
    ([1 + 2j, 3.0], mt.complex128),               # a list holding one
    ([[1j], [2]], mt.complex128),
    (np.array([1 + 1j], np.complex64), mt.complex64),   # an ndarray keeps its dtype
    (np.complex64(2 - 1j), mt.complex64),
])
def test_constant_and_convert_to_tensor(value, dtype):
    for make in (mt.constant, mt.convert_to_tensor):
        t = make(value)
        assert t.dtype == dtype
        np.testing.assert_array_equal(t.numpy(), np.asarray(value, dtype))


def test_conversion_to_a_complex_dtype_and_back():
    assert mt.constant(1.5, dtype=mt.complex64).numpy() == np.complex64(1.5)
    assert mt.constant([1, 2], dtype=mt.complex128).dtype == mt.complex128
    with pytest.raises(TypeError, match=r"cannot convert 1j \(complex128\) to a Tensor of dtype "
                                        r"float32 without losing information"):
        mt.constant(1j, dtype=mt.float32)
    with pytest.raises(TypeError, match="int32"):
        mt.convert_to_tensor(np.array([1j]), dtype=mt.int32)


def test_printing_as_tensorflow():
    assert repr(mt.constant(1 + 2j)) == "<mt.Tensor: shape=(), dtype=complex128, numpy=(1+2j)>"
    assert str(mt.constant(1 + 2j)) == "mt.Tensor((1+2j), shape=(), dtype=complex128)"
    assert repr(mt.constant(np.array([1 + 1j, 2], np.complex64))) == (
        "<mt.Tensor: shape=(2,), dtype=complex64, numpy=array([1.+1.j, 2.+0.j], "
        "dtype=complex64)>")
    assert repr(mt.Variable(1 + 2j, name="z")) == (
        "<mt.Variable 'z' shape=() dtype=complex128, numpy=(1+2j)>")


def test_variable_assign():
    v = mt.Variable([1j, 2.0])
    assert v.dtype == mt.complex128
    v.assign([3.0, 4j])
    v.assign_add([1j, 1.0])
    np.testing.assert_array_equal(v.numpy(), [3 + 1j, 1 + 4j])


# -- arithmetic, without gradients -----------------------------------------------------------


def test_arithmetic_against_numpy():
    a_np = np.array([1 + 2j, -0.5 + 1j], np.complex64)
    b_np = np.array([3 - 1j, 2j], np.complex64)
    a, b = mt.constant(a_np), mt.constant(b_np)
    cases = [
        (a + b, a_np + b_np), (a - b, a_np - b_np), (a * b, a_np * b_np), (a / b, a_np / b_np),
        (mt.add(a, 1), a_np + 1), (mt.multiply(a, 2.5), a_np * 2.5), (a * 1j, a_np * 1j),
        (-a, -a_np), (mt.square(a), a_np**2),
        (mt.matmul(mt.reshape(a, [1, 2]), mt.reshape(b, [2, 1])), a_np @ b_np),
    ]
    for got, want in cases:
        assert got.dtype == mt.complex64
        np.testing.assert_allclose(got.numpy().reshape(-1), np.reshape(want, -1), rtol=1e-6)
    # abs of a complex is its modulus, a float (as tf.abs).
    assert mt.abs(a).dtype == mt.float32
    np.testing.assert_allclose(mt.abs(a).numpy(), np.abs(a_np), rtol=1e-6)


def test_casts():
    z = mt.cast(mt.constant([1.0, -2.0]), mt.complex64)
    assert z.dtype == mt.complex64 and z.numpy().tolist() == [1 + 0j, -2 + 0j]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's ComplexWarning would be an error here
        real = mt.cast(mt.constant([1 + 2j, 3 - 4j]), mt.float32)
    assert real.dtype == mt.float32 and real.numpy().tolist() == [1.0, 3.0]  # the real part


def test_mixing_dtypes_is_refused():
    with pytest.raises(TypeError, match=r"cannot combine a complex128 Tensor with a float32"):
        mt.constant(1j) + mt.constant(1.0)
    with pytest.raises(TypeError, match=r"Mul: cannot convert 1j"):
        mt.constant(1.0) * 1j


def test_complex_values_are_not_ordered():
    with pytest.raises(TypeError, match=r"^reduce_max .*complex128"):
        mt.reduce_max(mt.constant([1j, 2.0]))


# -- gradients: a clear error, never a silent None ---------------------------------------------


def test_watching_a_complex_tensor_warns_like_an_integer_one():
    z = mt.constant(1 + 2j)
    with mt.GradientTape() as tape:
        with pytest.warns(UserWarning, match=r"^The dtype of the watched tensor must be floating "
                                             r"\(e\.g\. float32\), got complex128; minitape does "
                                             r"not differentiate complex numbers$"):
            tape.watch(z)
    assert tape.watched == ()


def test_gradient_with_respect_to_a_complex_source():
    z = mt.constant([1 + 2j, 3j])
    x = mt.constant(2.0)
    with mt.GradientTape() as tape, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tape.watch([x, z])
        y = mt.abs(z)          # a float target
    with pytest.raises(TypeError, match=NO_COMPLEX + r" \(a source is a complex128 Tensor of "
                                                     r"shape \(2,\)\)"):
        tape.gradient(y, [x, z])


def test_gradient_of_a_complex_target():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y = mt.cast(x, mt.complex64) * mt.constant(1 + 1j, mt.complex64)
    with pytest.raises(TypeError, match=NO_COMPLEX + r" \(the target is a complex64"):
        tape.gradient(y, x)
    with pytest.raises(TypeError, match=r"^GradientTape\.jacobian: " + NO_COMPLEX):
        tape.jacobian(y, x)


def test_gradient_through_a_complex_intermediate():
    x = mt.Variable([1.0, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        c = mt.cast(x, mt.complex64) * mt.constant(1j, mt.complex64)
        y = mt.reduce_sum(mt.abs(c))       # a float target, computed through complex values
        w = mt.reduce_sum(x * 3.0)         # a float path beside it
    with pytest.raises(TypeError, match=NO_COMPLEX + r" \(the path from the target to a source "
                                                     r"goes through Abs, whose input 0 is "
                                                     r"complex64\)"):
        tape.gradient(y, x)
    # A float path on the same tape still differentiates.
    np.testing.assert_array_equal(tape.gradient(w, x).numpy(), [3.0, 3.0])


def test_batch_jacobian_with_a_complex_source():
    z = mt.constant(np.ones((2, 2), np.complex64))
    x = mt.constant(np.ones((2, 2), np.float32))
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match=r"^GradientTape\.batch_jacobian: " + NO_COMPLEX):
        tape.batch_jacobian(y, z)


def test_forward_mode_through_a_complex_op():
    p = mt.constant(2.0)
    with pytest.raises(TypeError, match=r"^ForwardAccumulator: " + NO_COMPLEX):
        with mt.autodiff.ForwardAccumulator(p, mt.constant(1.0)):
            mt.abs(mt.cast(p, mt.complex64))


def test_a_complex_variable_read_in_a_tape_is_not_watched():
    v = mt.Variable(1 + 1j)
    with mt.GradientTape() as tape, warnings.catch_warnings():
        warnings.simplefilter("error")   # no warning: it was not asked for by watch
        v * 2
    assert tape.watched_variables() == ()
