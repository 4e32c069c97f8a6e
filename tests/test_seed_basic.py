"""Every example of the basic guide, run with minitape.

Seeds: 001 (the English guide), 000 (a Korean copy of an older version, same examples plus
``exp(1/x)`` and a second stateful example), 004 (a Chinese notebook with its own variations:
a float64 variable, an int variable, watching non-trainable variables, a NumPy target).
Each test names the seed section it reproduces; the expected numbers are the seeds' printed
outputs, or, for values that depend on random numbers, a closed form computed in NumPy.
"""

import numpy as np
import pytest

import minitape as mt


# -- Computing gradients -------------------------------------------------------------------------

def test_gradient_tape_scalar_001():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = x**2
    dy_dx = tape.gradient(y, x)
    assert dy_dx.numpy() == 6.0
    assert dy_dx.dtype == mt.float32
    assert repr(dy_dx) == "<mt.Tensor: shape=(), dtype=float32, numpy=6.0>"
    assert str(dy_dx) == "mt.Tensor(6.0, shape=(), dtype=float32)"


def test_gradient_tape_scalar_004():
    x = mt.Variable(4.0)
    with mt.GradientTape() as tape:
        y = x**2
    assert tape.gradient(y, x).numpy() == 8.0


def _linear_loss_closed_form(x, w, b):
    """loss = mean((x @ w + b)**2): dl/dw = x^T (2 y / n), dl/db = sum_rows(2 y / n)."""
    x = np.asarray(x, np.float64)
    y = x @ w.numpy().astype(np.float64) + b.numpy().astype(np.float64)
    dy = 2 * y / y.size
    return x.T @ dy, dy.sum(axis=0)


@pytest.mark.parametrize("x", [
    [[1., 2., 3.]],                         # 001: a list on the left of @
    mt.constant([[1.0, 2.0, 3.0]]),         # 000: a Tensor
])
def test_gradients_with_respect_to_list_and_dict_001_000(x):
    w = mt.Variable(mt.random.normal((3, 2)), name='w')
    b = mt.Variable(mt.zeros(2, dtype=mt.float32), name='b')
    with mt.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = mt.reduce_mean(y**2)
    assert isinstance(y, mt.Tensor) and y.shape == (1, 2)
    [dl_dw, dl_db] = tape.gradient(loss, [w, b])
    assert w.shape == (3, 2)
    assert dl_dw.shape == (3, 2)
    assert dl_db.shape == (2,)
    want_w, want_b = _linear_loss_closed_form([[1., 2., 3.]], w, b)
    np.testing.assert_allclose(dl_dw.numpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dl_db.numpy(), want_b, rtol=1e-5, atol=1e-6)

    my_vars = {'w': w, 'b': b}
    grad = tape.gradient(loss, my_vars)
    assert isinstance(grad, dict) and list(grad) == ['w', 'b']
    np.testing.assert_array_equal(grad['w'].numpy(), dl_dw.numpy())
    np.testing.assert_array_equal(grad['b'].numpy(), dl_db.numpy())
    # In this example dl/dw's rows are x_i * dl/db (seed 004's printed numbers show it).
    np.testing.assert_allclose(dl_dw.numpy(), np.outer([1., 2., 3.], dl_db.numpy()), rtol=1e-5)


def test_integer_list_input_004():
    # 004 writes x = [[1, 2, 3]] (ints): with a float32 Variable the list takes its dtype.
    w = mt.Variable(mt.random.normal((3, 2)), name="w")
    b = mt.Variable(mt.zeros(2, dtype=mt.float32), name="b")
    assert repr(b) == ("<mt.Variable 'b' shape=(2,) dtype=float32, "
                       "numpy=array([0., 0.], dtype=float32)>")
    with mt.GradientTape(persistent=True) as tape:
        y = [[1, 2, 3]] @ w + b
        loss = mt.reduce_mean(y ** 2)
    dl_dw, dl_db = tape.gradient(loss, [w, b])
    want_w, want_b = _linear_loss_closed_form([[1, 2, 3]], w, b)
    np.testing.assert_allclose(dl_dw.numpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dl_db.numpy(), want_b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("x", [[[1., 2., 3.]], [[1, 2, 3]]])  # 001/000 floats, 004 ints
def test_gradients_with_respect_to_a_model(x):
    layer = mt.layers.Dense(2, activation='relu')
    x = mt.constant(x)
    with mt.GradientTape() as tape:
        y = layer(x)
        loss = mt.reduce_mean(y**2)
    grad = tape.gradient(loss, layer.trainable_variables)
    assert [(var.name, g.shape) for var, g in zip(layer.trainable_variables, grad)] == [
        ("kernel", (3, 2)), ("bias", (2,))]
    # 000 prints the paths: dense/kernel:0, dense/bias:0 (no :0 suffix in minitape).
    assert [v.path for v in layer.trainable_variables] == [f"{layer.name}/kernel",
                                                           f"{layer.name}/bias"]
    # Closed form: y = relu(x K + b), loss = mean(y^2); dl/dz = 2 y / n * (z > 0).
    xv = np.array([[1., 2., 3.]])
    z = xv @ layer.kernel.numpy() + layer.bias.numpy()
    dz = 2 * np.maximum(z, 0) / z.size * (z > 0)
    np.testing.assert_allclose(grad[0].numpy(), xv.T @ dz, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grad[1].numpy(), dz.sum(0), rtol=1e-5, atol=1e-7)


# -- Controlling what the tape watches ----------------------------------------------------------

def test_what_the_tape_watches_001():
    x0 = mt.Variable(3.0, name='x0')
    x1 = mt.Variable(3.0, name='x1', trainable=False)
    x2 = mt.Variable(2.0, name='x2') + 1.0
    x3 = mt.constant(3.0, name='x3')
    assert repr(x0) == "<mt.Variable 'x0' shape=() dtype=float32, numpy=3.0>"
    assert type(x2) is mt.Tensor
    with mt.GradientTape() as tape:
        y = (x0**2) + (x1**2) + (x2**2)
    grad = tape.gradient(y, [x0, x1, x2, x3])
    assert [str(g) for g in grad] == ["mt.Tensor(6.0, shape=(), dtype=float32)",
                                      "None", "None", "None"]
    assert [var.name for var in tape.watched_variables()] == ['x0']
    assert tape.watched_variables() == (x0,)  # 004 In[28] prints the tuple


def test_watch_non_trainable_variable_and_tensor_004():
    x0 = mt.Variable(3.0, name='x0')
    x1 = mt.Variable(3.0, trainable=False, name='x1')
    x2 = mt.Variable(3.0, name='x2') + 1.0
    with mt.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        tape.watch(x2)
        y = (x0**2) + (x1**2) + (x2**2)
    grad = tape.gradient(y, [x0, x1, x2])
    assert grad[0] is None
    assert repr(grad[1]) == "<mt.Tensor: shape=(), dtype=float32, numpy=6.0>"
    assert repr(grad[2]) == "<mt.Tensor: shape=(), dtype=float32, numpy=8.0>"
    assert tape.watched_variables() == (x1,)


def test_watch_a_tensor_001():
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x**2
    assert tape.gradient(y, x).numpy() == 6.0


def test_watch_accessed_variables_false_001():
    x0 = mt.Variable(0.0)
    x1 = mt.Variable(10.0)
    with mt.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = mt.math.sin(x0)
        y1 = mt.nn.softplus(x1)
        y = y0 + y1
        ys = mt.reduce_sum(y)
    grad = tape.gradient(ys, {'x0': x0, 'x1': x1})
    assert grad['x0'] is None
    assert grad['x1'].numpy() == np.float32(0.9999546)  # the seed's printed float32, exactly
    assert grad['x1'].dtype == mt.float32


# -- Intermediate results -----------------------------------------------------------------------

def test_intermediate_results_001():
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert tape.gradient(z, y).numpy() == 18.0


def test_intermediate_results_variable_004():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = x**2
        z = y**2
    assert repr(tape.gradient(z, y)) == "<mt.Tensor: shape=(), dtype=float32, numpy=18.0>"


def test_persistent_tape_001():
    x = mt.constant([1, 3.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    dz_dx = tape.gradient(z, x)
    assert repr(dz_dx) == ("<mt.Tensor: shape=(2,), dtype=float32, "
                           "numpy=array([  4., 108.], dtype=float32)>")
    assert str(dz_dx) == "mt.Tensor([  4. 108.], shape=(2,), dtype=float32)"
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.float32([2., 6.]))
    del tape


def test_persistent_tape_float64_004():
    x = mt.Variable([1, 2, 3], dtype=mt.float64)
    with mt.GradientTape(persistent=True) as tape:
        y = x**2
        z = y**2
    dy_dx = tape.gradient(y, x).numpy()
    dz_dx = tape.gradient(z, x).numpy()
    assert dy_dx.dtype == np.float64 and dz_dx.dtype == np.float64
    np.testing.assert_array_equal(dy_dx, [2., 4., 6.])
    np.testing.assert_array_equal(dz_dx, [4., 32., 108.])
    assert repr(dz_dx) == "array([  4.,  32., 108.])"


# -- Gradients of non-scalar targets ----------------------------------------------------------

def test_two_targets_separately_001():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y0 = x**2
        y1 = 1 / x
    assert tape.gradient(y0, x).numpy() == 4.0
    assert tape.gradient(y1, x).numpy() == -0.25


def test_dict_of_targets_is_summed_001():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y0 = x**2
        y1 = 1 / x
    assert tape.gradient({'y0': y0, 'y1': y1}, x).numpy() == 3.75


def test_exp_targets_000():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y0 = x**2
        y1 = mt.exp(1 / x)
        y2 = y0 + y1
    d1 = -np.exp(0.5) / 4.0   # d/dx exp(1/x) = -exp(1/x) / x^2
    assert tape.gradient(y0, x).numpy() == 4.0
    np.testing.assert_allclose(tape.gradient(y1, x).numpy(), d1, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient({'y0': y0, 'y1': y1}, x).numpy(), 4 + d1, rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(y2, x).numpy(), 4 + d1, rtol=1e-6)
    # the seed's printed float32 values
    assert tape.gradient(y1, x).numpy() == np.float32(-0.4121803)
    assert tape.gradient(y2, x).numpy() == np.float32(3.5878196)


def test_non_scalar_target_is_summed_001():
    x = mt.Variable(2.)
    with mt.GradientTape() as tape:
        y = x * [3., 4.]
    assert tape.gradient(y, x).numpy() == 7.0


def test_sigmoid_elementwise_gradient_001():
    x = mt.linspace(-10.0, 10.0, 200 + 1)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.nn.sigmoid(x)
    dy_dx = tape.gradient(y, x)
    assert x.shape == y.shape == dy_dx.shape == (201,)
    s = 1 / (1 + np.exp(-np.linspace(-10.0, 10.0, 201)))
    np.testing.assert_allclose(dy_dx.numpy(), s * (1 - s), rtol=1e-5, atol=1e-7)
    # The plot in the seed passes Tensors to matplotlib: they convert to ndarrays.
    assert np.asarray(dy_dx).shape == (201,)


# -- Control flow ----------------------------------------------------------------------------

@pytest.mark.parametrize("watch_x", [True, False])  # 001 watches x, 004 does not
def test_control_flow(watch_x):
    x = mt.constant(1.0)
    v0 = mt.Variable(2.0)
    v1 = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        if watch_x:
            tape.watch(x)
        if x > 0.0:
            result = v0
        else:
            result = v1**2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert str(dv0) == "mt.Tensor(1.0, shape=(), dtype=float32)"
    assert dv1 is None
    assert tape.gradient(result, x) is None


def test_control_flow_other_branch():
    x = mt.constant(-1.0)
    v0 = mt.Variable(2.0)
    v1 = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        if x > 0.0:
            result = v0
        else:
            result = v1**2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert dv0 is None
    assert dv1.numpy() == 4.0


# -- Cases where gradient returns None ----------------------------------------------------------

def test_unconnected_is_none_001():
    x = mt.Variable(2.)
    y = mt.Variable(3.)
    with mt.GradientTape() as tape:
        z = y * y
    assert tape.gradient(z, x) is None


def test_replaced_variable_with_tensor_001():
    x = mt.Variable(2.0)
    seen = []
    for epoch in range(2):
        with mt.GradientTape() as tape:
            y = x + 1
        seen.append((type(x).__name__, str(tape.gradient(y, x))))
        x = x + 1  # This should be `x.assign_add(1)`
    assert seen == [("Variable", "mt.Tensor(1.0, shape=(), dtype=float32)"),
                    ("Tensor", "None")]


def test_replaced_variable_with_tensor_004():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        result = x + 1
    assert tape.gradient(result, x).numpy() == 1.0
    x = x + 1
    with mt.GradientTape() as tape:
        result = x + 1
    assert tape.gradient(result, x) is None


def test_calculation_outside_minitape_001():
    x = mt.Variable([[1.0, 2.0],
                     [3.0, 4.0]], dtype=mt.float32)
    with mt.GradientTape() as tape:
        x2 = x**2
        y = np.mean(x2, axis=0)   # This step is calculated with NumPy
        assert type(y) is np.ndarray
        y = mt.reduce_mean(y, axis=0)
    assert isinstance(y, mt.Tensor)
    assert tape.gradient(y, x) is None


def test_numpy_target_is_a_clear_type_error_004():
    # TensorFlow fails here with AttributeError: 'numpy.float64' object has no attribute '_id'
    x = mt.Variable([[1, 2],
                     [3, 4]])
    with mt.GradientTape() as tape:
        x2 = x * x
        y = np.mean(x2)
    assert isinstance(y, np.floating)
    with pytest.raises(TypeError, match=r"NumPy float64.*computed outside minitape"):
        tape.gradient(y, x2)


def test_integer_tensor_warns_and_gives_none_001():
    x = mt.constant(10)
    assert x.dtype == mt.int32
    with mt.GradientTape() as g:
        with pytest.warns(UserWarning, match=r"^The dtype of the watched tensor must be floating "
                                             r"\(e\.g\. float32\), got int32$"):
            g.watch(x)
        y = x * x
    assert y.dtype == mt.int32
    assert g.gradient(y, x) is None


def test_integer_variable_gives_none_004():
    x = mt.Variable(1)
    assert x.dtype == mt.int32
    with mt.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_stateful_object_stops_gradients_001_000():
    x0 = mt.Variable(3.0)
    x1 = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        x1.assign_add(x0)   # Update x1 = x1 + x0.
        y = x1**2           # The tape starts recording from x1.
    assert y.numpy() == 9.0
    assert tape.gradient(y, x0) is None
    # 000 goes on: without the assign, the gradient flows: 2 * (x1 + x0) = 2 * (3 + 3).
    with mt.GradientTape() as tape:
        x2 = x1 + x0
        y = x2**2
    assert tape.gradient(y, x0).numpy() == 12.0


# -- No gradient registered -------------------------------------------------------------------

def test_no_gradient_registered_001():
    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    delta = mt.Variable(0.1)
    with mt.GradientTape() as tape:
        new_image = mt.image.adjust_contrast(image, delta)
    with pytest.raises(LookupError) as info:
        tape.gradient(new_image, [image, delta])
    assert f'{type(info.value).__name__}: {info.value}' == (
        'LookupError: gradient registry has no entry for: AdjustContrastv2')


# -- Zeros instead of None --------------------------------------------------------------------

def test_zeros_instead_of_none_001():
    x = mt.Variable([2., 2.])
    y = mt.Variable(3.)
    with mt.GradientTape() as tape:
        z = y**2
    g = tape.gradient(z, x, unconnected_gradients=mt.UnconnectedGradients.ZERO)
    assert str(g) == "mt.Tensor([0. 0.], shape=(2,), dtype=float32)"
