"""Misuse fails at once, with the right exception type and a message that helps.

API.md, Errors: a wrong dtype or a value of the wrong kind raises ``TypeError``; a wrong shape,
axis or size ``ValueError``; asking a non-persistent tape twice ``RuntimeError``; a gradient
through an op with none registered ``LookupError``; registering a gradient twice ``KeyError``.
Each case checks with ``match=`` that the message names what was passed and, where there is
one, the fix.
"""

import numpy as np
import pytest

import minitape as mt


# -- values of the wrong kind: TypeError ----------------------------------------------------------

def test_target_computed_by_numpy():
    x = mt.Variable([[1.0, 2.0], [3.0, 4.0]])
    with mt.GradientTape() as tape:
        x2 = x * x
        y = np.mean(x2)
    with pytest.raises(TypeError, match=r"got a NumPy float32.*computed outside minitape.*"
                                        r"mt\.reduce_mean"):
        tape.gradient(y, x2)


def test_target_is_an_ndarray():
    x = mt.Variable([1.0, 2.0])
    with mt.GradientTape() as tape:
        y = np.sin(x * 2.0)
    with pytest.raises(TypeError, match=r"NumPy ndarray.*outside minitape"):
        tape.gradient(y, x)


@pytest.mark.parametrize("value, shown", [("abc", r"str 'abc'"), (None, r"NoneType None")])
def test_constant_of_a_string_or_none(value, shown):
    with pytest.raises(TypeError, match=rf"constant expected a Tensor.*number.*got {shown}"):
        mt.constant(value)


def test_variable_of_none():
    with pytest.raises(TypeError, match=r"^Variable expected a Tensor.*got NoneType None"):
        mt.Variable(None)


@pytest.mark.parametrize("other, shown", [("a", "str 'a'"), (None, "NoneType None")])
def test_operator_with_a_string_or_none(other, shown):
    with pytest.raises(TypeError, match=rf"AddV2 expected a Tensor.*got {shown}"):
        mt.Variable(2.0) + other


def test_watch_an_ndarray():
    with mt.GradientTape() as tape:
        with pytest.raises(TypeError, match=r"watch expects Tensors or Variables, got ndarray.*"
                                            r"mt\.constant"):
            tape.watch(np.ones(2))


def test_gradient_with_a_string_source():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
    with pytest.raises(TypeError, match=r"gradient source: expected a minitape Tensor or "
                                        r"Variable, got str 'x'"):
        tape.gradient(y, "x")


def test_gradient_with_a_none_target():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        x * x
    with pytest.raises(TypeError, match=r"gradient target: .*got NoneType None"):
        tape.gradient(None, x)


def test_mismatched_dtypes():
    with pytest.raises(TypeError, match=r"AddV2: cannot combine a float32 Tensor with a int32 "
                                        r"Tensor.*mt\.cast\(y, mt\.float32\)"):
        mt.constant([1.0, 2.0]) + mt.constant([1, 2])


def test_float_python_scalar_with_an_int_tensor():
    with pytest.raises(TypeError, match=r"Mul: .*2\.5.*int32.*mt\.cast"):
        mt.constant([1, 2]) * 2.5


def test_float_function_of_an_int_tensor():
    with pytest.raises(TypeError, match=r"Sin expects a floating Tensor.*got int32.*"
                                        r"mt\.cast\(x, mt\.float32\)"):
        mt.math.sin(mt.constant(4))


def test_output_gradients_of_another_dtype():
    x = mt.constant([1.0, 2.0])
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match=r"output_gradients: expected dtype float32, got .*int32"
                                        r".*mt\.cast"):
        tape.gradient(y, x, output_gradients=mt.constant([1, 2]))


def test_assign_a_value_of_another_dtype():
    with pytest.raises(TypeError, match=r"Variable\.assign: expected dtype float32, got a "
                                        r"Tensor of dtype int32.*mt\.cast"):
        mt.Variable([1.0, 2.0]).assign(mt.constant([1, 2]))


def test_jacobian_of_a_list_target():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * mt.ones(3)
    with pytest.raises(TypeError, match=r"jacobian: target must be a single Tensor, got a list;"
                                        r" stack the targets with mt\.stack"):
        tape.jacobian([y, y], x)


def test_custom_gradient_reading_a_variable_without_variables_kwarg():
    v = mt.Variable(3.0, name="scale")

    @mt.custom_gradient
    def scaled(x):
        return x * v, lambda dy: dy * v

    with pytest.raises(TypeError, match=r"scaled reads the Variable\(s\) \['scale'\].*keyword "
                                        r"argument 'variables'"):
        scaled(mt.constant(1.0))


def test_grad_of_an_integer_argument():
    with pytest.raises(TypeError, match=r"grad: cannot differentiate with respect to 3 of dtype "
                                        r"int32; pass a float \(e\.g\. 5\.0, not 5\)"):
        mt.grad(lambda x: x * 2)(3)


def test_float_of_a_multi_element_tensor():
    with pytest.raises(TypeError, match=r"float\(\) needs a one-element Tensor, got shape \(3,\)"):
        float(mt.ones(3))


def test_register_gradient_on_a_non_function():
    with pytest.raises(TypeError, match=r"RegisterGradient\('TestErrorsNotAFunction'\) must "
                                        r"decorate a function fn\(op, \*output_grads\), got 3"):
        mt.RegisterGradient("TestErrorsNotAFunction")(3)


def test_reshape_with_a_float_in_the_shape():
    with pytest.raises(TypeError, match=r"reshape: every entry of a shape must be an int.*got "
                                        r"2\.0"):
        mt.reshape(mt.ones(4), [2.0, 2])


# -- wrong shapes, axes and sizes: ValueError ---------------------------------------------------

@pytest.mark.parametrize("axis", [2, -3])
def test_bad_axis(axis):
    with pytest.raises(ValueError, match=rf"reduce_sum: axis={axis} is out of range for a Tensor "
                                         r"of rank 2 \(shape \(2, 3\)\); valid axes are -2 to 1"):
        mt.reduce_sum(mt.ones((2, 3)), axis=axis)


def test_bad_reshape():
    with pytest.raises(ValueError, match=r"cannot reshape a Tensor of shape \(2, 3\) \(6 "
                                         r"elements\) into shape \(4, 2\)"):
        mt.reshape(mt.ones((2, 3)), (4, 2))


def test_matmul_of_a_vector():
    with pytest.raises(ValueError, match=r"matmul needs two Tensors of rank 2 or more.*\(3,\) and "
                                         r"\(3, 2\).*mt\.expand_dims.*\[\[1\., 2\., 3\.\]\]"):
        mt.matmul(mt.ones(3), mt.ones((3, 2)))


def test_matmul_inner_dimension_mismatch():
    with pytest.raises(ValueError, match=r"cannot multiply shapes \(2, 3\) and \(2, 2\): the inner "
                                         r"dimensions 3 and 2 differ.*mt\.transpose"):
        mt.matmul(mt.ones((2, 3)), mt.ones((2, 2)))


def test_elementwise_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"AddV2: shapes \(2,\) and \(3,\) cannot be broadcast "
                                         r"together.*mt\.reshape"):
        mt.ones(2) + mt.ones(3)
    with pytest.raises(ValueError, match=r"Mul: shapes \(2, 3\) and \(2,\) cannot be broadcast"):
        mt.ones((2, 3)) * mt.ones(2)


def test_output_gradients_shape_mismatch():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * mt.ones(3)
    with pytest.raises(ValueError, match=r"output_gradients entry has shape \(2,\) but its "
                                         r"target has shape \(3,\); they must match"):
        tape.gradient(y, x, output_gradients=mt.ones(2))


def test_output_gradients_count_mismatch():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * 2.0
    with pytest.raises(ValueError, match=r"output_gradients has 2 entries but target has 1"):
        tape.gradient(y, x, output_gradients=[1.0, 2.0])


def test_unknown_unconnected_gradients():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * 2.0
    with pytest.raises(ValueError, match=r"unconnected_gradients must be "
                                         r"mt\.UnconnectedGradients\.NONE or \.ZERO, got 'zeros'"):
        tape.gradient(y, x, unconnected_gradients="zeros")


def test_batch_jacobian_batch_mismatch():
    a = mt.ones((3, 2))
    with mt.GradientTape() as tape:
        tape.watch(a)
        y = mt.reduce_sum(a) * mt.ones((4, 2))
    with pytest.raises(ValueError, match=r"batch sizes differ: target \(4, 2\) has 4, source "
                                         r"\(3, 2\) has 3; use jacobian"):
        tape.batch_jacobian(y, a)


def test_batch_jacobian_of_rank_one():
    a = mt.ones(3)
    with mt.GradientTape() as tape:
        tape.watch(a)
        y = a * 2.0
    with pytest.raises(ValueError, match=r"rank 2 or more \(batch, \.\.\.\), got shapes \(3,\) "
                                         r"and \(3,\)"):
        tape.batch_jacobian(y, a)


def test_dense_width_change():
    layer = mt.layers.Dense(2)
    layer(mt.ones((1, 3)))
    with pytest.raises(ValueError, match=r"was built for 3 input features, got inputs of shape "
                                         r"\(1, 4\).*new Dense layer"):
        layer(mt.ones((1, 4)))


def test_dense_of_a_vector():
    with pytest.raises(ValueError, match=r"expects inputs of shape \(batch, features\), got "
                                         r"\(3,\); e\.g\. wrap a vector as \[\[\.\.\.\]\]"):
        mt.layers.Dense(2)(mt.ones(3))


def test_unknown_activation():
    with pytest.raises(ValueError, match=r"unknown activation 'relux'; use one of \[.*'relu'.*\] "
                                         r"or a callable"):
        mt.layers.Dense(2, activation="relux")


def test_custom_gradient_returning_the_wrong_number_of_gradients():
    @mt.custom_gradient
    def product(a, b):
        return a * b, lambda dy: dy   # should return two gradients

    a, b = mt.constant(1.0), mt.constant(2.0)
    with mt.GradientTape() as tape:
        tape.watch([a, b])
        y = product(a, b)             # no error yet: the forward pass is fine
    assert y.numpy() == 2.0
    with pytest.raises(ValueError, match=r"product: grad_fn returned 1 gradient\(s\) but the "
                                         r"function has 2 Tensor input\(s\); return one per input"):
        tape.gradient(y, [a, b])


def test_custom_gradient_returning_the_wrong_number_of_variable_gradients():
    v, w = mt.Variable(3.0), mt.Variable(2.0)

    @mt.custom_gradient
    def scaled(x):
        def grad_fn(dy, variables=None):
            return dy, [dy]           # two Variables were read
        return x * v * w, grad_fn

    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    with pytest.raises(ValueError, match=r"scaled: grad_fn returned 1 variable gradient\(s\) "
                                         r"for 2 variable\(s\)"):
        tape.gradient(y, x)


def test_gradient_function_returning_the_wrong_shape():
    @mt.custom_gradient
    def bad(x):
        return x * 1.0, lambda dy: mt.ones((3,))

    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = bad(x)
    with pytest.raises(ValueError, match=r"returned shape \(3,\) for input 0 of shape \(\); a "
                                         r"gradient must have its input's shape"):
        tape.gradient(y, x)


def test_grad_of_a_non_scalar():
    with pytest.raises(ValueError, match=r"must return a scalar, got shape \(3,\); use "
                                         r"mt\.jacobian.*mt\.reduce_sum"):
        mt.grad(lambda x: x * mt.ones(3))(1.0)


def test_gradients_function_with_a_bad_parameter_name():
    def f(a, b):
        return a * b
    with pytest.raises(ValueError, match=r"'c' is not a parameter of f; its parameters are "
                                         r"\['a', 'b'\]"):
        mt.gradients_function(f, params=["c"])


def test_load_weights_missing_key(tmp_path):
    saved = mt.Module()
    saved.a = mt.Variable(1.0)
    saved.save_weights(tmp_path / "w.npz")
    other = mt.Module()
    other.b = mt.Variable(1.0)
    with pytest.raises(ValueError, match=r"has no entry 'b' \(it has \['a'\]\); was it saved "
                                         r"from this module\?"):
        other.load_weights(tmp_path / "w.npz")


def test_load_weights_shape_mismatch(tmp_path):
    saved = mt.Module()
    saved.a = mt.Variable([1.0, 2.0])
    saved.save_weights(tmp_path / "w.npz")
    other = mt.Module()
    other.a = mt.Variable(1.0)
    with pytest.raises(ValueError, match=r"'a' has shape \(2,\) in .* but \(\) here"):
        other.load_weights(tmp_path / "w.npz")


def test_bool_of_a_multi_element_tensor():
    with pytest.raises(ValueError, match=r"truth value of a Tensor of shape \(3,\) is ambiguous"):
        if mt.ones(3) > 0.0:
            pass


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_variable_assign_with_a_wrong_shape(method):
    v = mt.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match=rf"Variable\.{method}: the value has shape \(3,\) but "
                                         r"the Variable 'v' has shape \(2,\); reshape it first"):
        getattr(v, method)([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])   # unchanged


@pytest.mark.parametrize("make, op_type", [
    (lambda: mt.zeros((2, -1)), "zeros"),
    (lambda: mt.ones([-3]), "ones"),
    (lambda: mt.eye(-1), "eye"),
    (lambda: mt.random.normal([2, -3]), "random.normal"),
])
def test_negative_sizes(make, op_type):
    arg = "num_rows -1" if op_type == "eye" else r"shape \(.*-\d.*\)"
    with pytest.raises(ValueError, match=rf"^{op_type}: sizes must be 0 or more, got {arg};"
                                         r".*only works in mt\.reshape"):
        make()


def test_pad_with_wrong_paddings_shape():
    with pytest.raises(ValueError, match=r"pad: paddings must have shape \(2, 2\) for a Tensor of "
                                         r"rank 2, got \(1, 2\)"):
        mt.pad(mt.ones((2, 2)), [[1, 1]])


def test_gather_out_of_range():
    with pytest.raises(ValueError, match=r"gather: indices\[0\] = 5 is not in \[0, 3\)"):
        mt.gather(mt.ones(3), [5])


def test_gather_negative_index_is_an_error_as_in_tensorflow():
    # TensorFlow: "indices[0] = -1 is not in [0, 2)"; NumPy would read the last entry.
    with pytest.raises(mt.errors.InvalidArgumentError,
                       match=r"indices\[0\] = -1 is not in \[0, 2\)"):
        mt.gather(mt.constant([1.0, 2.0]), [-1])
    with pytest.raises(ValueError, match=r"indices\[1,0\] = -3 is not in \[0, 3\)"):
        mt.gather(mt.ones((3, 2)), [[0], [-3]])


def test_transpose_with_a_bad_perm():
    with pytest.raises(ValueError, match=r"perm=\[0, 0\] is not a permutation of the 2 axes of a "
                                         r"Tensor of shape \(2, 3\) \(it repeats an axis\)"):
        mt.transpose(mt.ones((2, 3)), [0, 0])


def test_forward_accumulator_tangent_shape():
    x = mt.constant([1.0, 2.0])
    with pytest.raises(ValueError, match=r"tangent of shape \(1,\) for a primal of shape \(2,\)"):
        with mt.autodiff.ForwardAccumulator(x, mt.constant([1.0])):
            pass


# -- the tape's life cycle: RuntimeError ---------------------------------------------------------

def test_non_persistent_tape_asked_twice():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match=r"can only be called once on a non-persistent tape.*"
                                           r"mt\.GradientTape\(persistent=True\)"):
        tape.gradient(y, x)


def test_stop_recording_outside_the_context():
    tape = mt.GradientTape()
    with pytest.raises(RuntimeError, match=r"stop_recording\(\) is only valid while the tape is "
                                           r"recording \(inside its `with` block\)"):
        with tape.stop_recording():
            pass


def test_entering_a_tape_twice():
    with mt.GradientTape() as tape:
        with pytest.raises(RuntimeError, match=r"already recording.*open a second tape"):
            with tape:
                pass


# -- the registry: LookupError and KeyError -------------------------------------------------------

def test_gradient_through_an_op_without_one():
    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    delta = mt.Variable(0.1)
    with mt.GradientTape() as tape:
        new_image = mt.image.adjust_contrast(image, delta)
    with pytest.raises(LookupError, match=r"^gradient registry has no entry for: "
                                          r"AdjustContrastv2$"):
        tape.gradient(new_image, [image, delta])


def test_gradient_through_a_new_primitive_without_one():
    @mt.primitive("TestErrorsDouble")
    def double(x):
        return x * 2

    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    assert y.numpy() == 2.0
    with pytest.raises(LookupError, match=r"no entry for: TestErrorsDouble$"):
        tape.gradient(y, x)


def test_register_gradient_twice():
    with pytest.raises(KeyError, match=r"Registering two gradients with name 'Mul'.*"
                                       r"mt\.custom_gradient"):
        @mt.RegisterGradient("Mul")
        def _my_mul_grad(op, dy):
            return dy, dy
    with pytest.raises(KeyError, match=r"no_gradient\('Sin'\).*already has"):
        mt.no_gradient("Sin")


def test_register_gradient_for_a_new_op_then_again():
    @mt.primitive("TestErrorsTriple")
    def triple(x):
        return x * 3

    @mt.RegisterGradient("TestErrorsTriple")
    def _triple_grad(op, dy):
        return dy * 3.0

    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = triple(x)
    assert tape.gradient(y, x).numpy() == 3.0
    with pytest.raises(KeyError, match=r"'TestErrorsTriple'"):
        mt.RegisterGradient("TestErrorsTriple")(_triple_grad)


def test_where_with_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"where: the shapes of condition \(3,\), x \(2,\)"):
        mt.where(mt.constant([True, False, True]), mt.constant([1.0, 2.0]), 0.0)
