"""The advanced guide (seed 003, Spanish), run with minitape.

Recording control (stop_recording, reset, stop_gradient), custom gradients (and keeping them
across save_weights/load_weights, minitape's stand-in for SavedModel), multiple tapes,
higher-order gradients, input-gradient regularization, Jacobians, a Hessian with a Newton step,
and batch Jacobians. Printed numbers come from the seed; values that depend on random numbers
are checked against closed forms or central differences computed in NumPy (float64).
"""

import numpy as np
import pytest

import minitape as mt


@pytest.fixture(autouse=True)
def _seed():
    mt.random.set_seed(2024)


# -- Controlling the recording -------------------------------------------------------------------

def test_stop_recording():
    x = mt.Variable(2.0)
    y = mt.Variable(3.0)
    with mt.GradientTape() as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grad = t.gradient(z, {'x': x, 'y': y})
    assert str(grad['x']) == "mt.Tensor(4.0, shape=(), dtype=float32)"
    assert grad['y'] is None


@pytest.mark.parametrize("reset", [True, False])
def test_reset(reset):
    x = mt.Variable(2.0)
    y = mt.Variable(3.0)
    with mt.GradientTape() as t:
        y_sq = y * y
        if reset:
            t.reset()  # Throw out all the tape recorded so far.
        z = x * x + y_sq
    grad = t.gradient(z, {'x': x, 'y': y})
    assert grad['x'].numpy() == 4.0
    if reset:
        assert grad['y'] is None
    else:
        assert grad['y'].numpy() == 6.0   # without the reset: 2 * y


def test_stop_gradient():
    x = mt.Variable(2.0)
    y = mt.Variable(3.0)
    with mt.GradientTape() as t:
        y_sq = y**2
        z = x**2 + mt.stop_gradient(y_sq)
    grad = t.gradient(z, {'x': x, 'y': y})
    assert grad['x'].numpy() == 4.0
    assert grad['y'] is None


# -- Custom gradients -------------------------------------------------------------------------

@mt.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return mt.clip_by_norm(dy, 0.5)
    return y, backward


def test_custom_gradient_clip():
    v = mt.Variable(2.0)
    with mt.GradientTape() as t:
        output = clip_gradients(v * v)
    assert output.numpy() == 4.0
    assert str(t.gradient(output, v)) == "mt.Tensor(2.0, shape=(), dtype=float32)"


def test_custom_gradient_clips_only_large_gradients():
    # clip_by_norm leaves a gradient of norm <= 0.5 alone: d(0.1 * v*v)/dv = 0.1 * 2v = 0.4.
    v = mt.Variable(2.0)
    with mt.GradientTape() as t:
        output = clip_gradients(v * v) * 0.1
    np.testing.assert_allclose(t.gradient(output, v).numpy(), 0.4, rtol=1e-6)


class MyModule(mt.Module):
    def __init__(self, scale=1.0):
        super().__init__()
        self.scale = mt.Variable(scale, name="scale")

    def call_custom_grad(self, x):
        return clip_gradients(x) * self.scale


def test_custom_gradient_survives_save_and_load(tmp_path):
    model = MyModule(scale=3.0)
    path = tmp_path / "saved_model.npz"
    model.save_weights(path)

    loaded = MyModule()            # a fresh module: scale 1.0 until the weights are loaded
    loaded.load_weights(path)
    assert loaded.scale.numpy() == 3.0
    v = mt.Variable(2.0)
    with mt.GradientTape() as t:
        output = loaded.call_custom_grad(v * v)
    assert output.numpy() == 12.0
    # Without the custom gradient this would be scale * 2v = 12; clipped: 0.5 * 2v = 2.
    assert str(t.gradient(output, v)) == "mt.Tensor(2.0, shape=(), dtype=float32)"


# -- Multiple tapes and higher-order gradients ---------------------------------------------------

def test_multiple_tapes():
    x0 = mt.constant(0.0)
    x1 = mt.constant(0.0)
    with mt.GradientTape() as tape0, mt.GradientTape() as tape1:
        tape0.watch(x0)
        tape1.watch(x1)
        y0 = mt.math.sin(x0)
        y1 = mt.nn.sigmoid(x1)
        y = y0 + y1
        ys = mt.reduce_sum(y)
    assert tape0.gradient(ys, x0).numpy() == 1.0    # cos(x) => 1.0
    assert tape1.gradient(ys, x1).numpy() == 0.25   # sigmoid(x1)*(1-sigmoid(x1)) => 0.25


def test_higher_order_gradients():
    x = mt.Variable(1.0)
    with mt.GradientTape() as t2:
        with mt.GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0     # 3 * x**2
    assert d2y_dx2.numpy() == 6.0   # 6 * x


# -- Input-gradient regularization ----------------------------------------------------------

def _input_gradient_norm(x, kernel, bias):
    """NumPy: || d/dx sum(relu(x K + b)^2) || = || 2 relu(x K + b) K^T ||."""
    return np.linalg.norm(2 * np.maximum(x @ kernel + bias, 0) @ kernel.T)


def _central_differences(f, params, eps=1e-6):
    grads = []
    for p in params:
        g = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + eps
            hi = f()
            p[idx] = old - eps
            lo = f()
            p[idx] = old
            g[idx] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def _input_gradient_regularization(x, layer):
    with mt.GradientTape() as t2:
        # The inner tape only takes the gradient with respect to the input, not the variables.
        with mt.GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(x)
            y = layer(x)  # noqa: F841 (as in the seed)
            out = mt.reduce_sum(layer(x)**2)
        g1 = t1.gradient(out, x)          # 1. the input gradient
        g1_mag = mt.norm(g1)              # 2. its magnitude
    return g1_mag, t2.gradient(g1_mag, layer.trainable_variables)   # 3. d magnitude / d model


def test_input_gradient_regularization_shapes():
    x = mt.random.normal([7, 5])
    layer = mt.layers.Dense(10, activation=mt.nn.relu)
    _, dg1_mag = _input_gradient_regularization(x, layer)
    assert [var.shape for var in dg1_mag] == [(5, 10), (10,)]


def test_input_gradient_regularization_values():
    x = mt.random.normal([7, 5], dtype=mt.float64)
    layer = mt.layers.Dense(10, activation=mt.nn.relu, dtype=mt.float64)
    layer(x)                                         # build
    layer.bias.assign(mt.random.normal([10], dtype=mt.float64) * 0.1)   # a non-zero bias
    g1_mag, dg1_mag = _input_gradient_regularization(x, layer)

    xv = x.numpy()
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    np.testing.assert_allclose(g1_mag.numpy(), _input_gradient_norm(xv, kernel, bias), rtol=1e-12)
    want = _central_differences(lambda: _input_gradient_norm(xv, kernel, bias), [kernel, bias])
    for got, w in zip(dg1_mag, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-7)


# -- Jacobians ---------------------------------------------------------------------------------

@pytest.mark.parametrize("use_pfor", [True, False])
def test_jacobian_scalar_source(use_pfor):
    x = mt.linspace(-10.0, 10.0, 200 + 1)
    delta = mt.Variable(0.0)
    # (The loop asks the tape once per element: persistent, as TensorFlow requires.)
    with mt.GradientTape(persistent=not use_pfor) as tape:
        y = mt.nn.sigmoid(x + delta)
    dy_dx = tape.jacobian(y, delta, experimental_use_pfor=use_pfor)
    assert y.shape == (201,)
    assert dy_dx.shape == (201,)
    s = 1 / (1 + np.exp(-np.linspace(-10.0, 10.0, 201)))
    np.testing.assert_allclose(dy_dx.numpy(), s * (1 - s), rtol=1e-5, atol=1e-7)


def test_jacobian_tensor_source():
    x = mt.random.normal([7, 5])
    layer = mt.layers.Dense(10, activation=mt.nn.relu)
    with mt.GradientTape(persistent=True) as tape:
        y = layer(x)
    assert y.shape == (7, 10)
    assert layer.kernel.shape == (5, 10)
    j = tape.jacobian(y, layer.kernel)
    assert j.shape == (7, 10, 5, 10)

    g = tape.gradient(y, layer.kernel)
    assert g.shape == (5, 10)
    j_sum = mt.reduce_sum(j, axis=[0, 1])
    delta = mt.reduce_max(abs(g - j_sum)).numpy()
    assert delta < 1e-3

    # Closed form: dy[i, a] / dK[k, c] = x[i, k] * (z[i, a] > 0) * (a == c).
    z = x.numpy() @ layer.kernel.numpy() + layer.bias.numpy()
    want = np.einsum("ik,ia,ac->iakc", x.numpy(), (z > 0).astype(np.float32), np.eye(10))
    np.testing.assert_allclose(j.numpy(), want, rtol=1e-6, atol=1e-7)
    # The loop version agrees with the vectorized one.
    np.testing.assert_allclose(tape.jacobian(y, layer.kernel, experimental_use_pfor=False).numpy(),
                               j.numpy(), rtol=1e-6, atol=1e-7)


# -- Hessian and a Newton step ----------------------------------------------------------------

def _two_layer_loss_gradient(x, layer1, layer2):
    with mt.GradientTape() as t1:
        h = layer2(layer1(x))
        loss = mt.reduce_mean(h**2)
    return loss, t1.gradient(loss, layer1.kernel)


def test_hessian():
    x = mt.random.normal([7, 5], dtype=mt.float64)
    layer1 = mt.layers.Dense(8, activation=mt.nn.relu, dtype=mt.float64)
    layer2 = mt.layers.Dense(6, activation=mt.nn.relu, dtype=mt.float64)
    with mt.GradientTape() as t2:
        with mt.GradientTape() as t1:
            h = layer1(x)
            h = layer2(h)
            loss = mt.reduce_mean(h**2)
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)
    assert layer1.kernel.shape == (5, 8)
    assert h.shape == (5, 8, 5, 8)

    n_params = mt.reduce_prod(layer1.kernel.shape)
    assert n_params.ndim == 0 and n_params.dtype == mt.int32 and int(n_params) == 40
    h_mat = mt.reshape(h, [n_params, n_params])
    np.testing.assert_allclose(h_mat.numpy(), h_mat.numpy().T, rtol=1e-10, atol=1e-12)

    # Each row of the Hessian is the derivative of the gradient along one kernel entry.
    kernel0 = layer1.kernel.numpy()
    eps = 1e-6
    fd = np.zeros((5, 8, 5, 8))
    for idx in np.ndindex(5, 8):
        grads = []
        for sign in (1, -1):
            k = kernel0.copy()
            k[idx] += sign * eps
            layer1.kernel.assign(k)
            grads.append(_two_layer_loss_gradient(x, layer1, layer2)[1].numpy())
        fd[:, :, idx[0], idx[1]] = (grads[0] - grads[1]) / (2 * eps)
    layer1.kernel.assign(kernel0)
    np.testing.assert_allclose(h.numpy(), fd, rtol=1e-5, atol=1e-8)


def _newton_step(layer1, g, h):
    """The seed's code, verbatim but for tf -> mt (and eye's dtype, for float64 layers)."""
    n_params = mt.reduce_prod(layer1.kernel.shape)
    g_vec = mt.reshape(g, [n_params, 1])
    h_mat = mt.reshape(h, [n_params, n_params])
    eps = 1e-3
    eye_eps = mt.eye(h_mat.shape[0], dtype=h_mat.dtype)*eps
    # X(k+1) = X(k) - (∇²f(X(k)))^-1 @ ∇f(X(k))
    update = mt.linalg.solve(h_mat + eye_eps, g_vec)
    # Reshape the update and apply it to the variable.
    _ = layer1.kernel.assign_sub(mt.reshape(update, layer1.kernel.shape))
    return g_vec, h_mat, update


def test_newton_step_runs_as_in_the_seed():
    x = mt.random.normal([7, 5])
    layer1 = mt.layers.Dense(8, activation=mt.nn.relu)
    layer2 = mt.layers.Dense(6, activation=mt.nn.relu)
    with mt.GradientTape() as t2:
        with mt.GradientTape() as t1:
            y = layer2(layer1(x))
            loss = mt.reduce_mean(y**2)
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)
    before = layer1.kernel.numpy()
    g_vec, h_mat, update = _newton_step(layer1, g, h)
    assert g_vec.shape == (40, 1) and h_mat.shape == (40, 40) and update.shape == (40, 1)
    np.testing.assert_allclose(
        update.numpy(), np.linalg.solve(h_mat.numpy().astype(np.float64) + 1e-3 * np.eye(40),
                                        g_vec.numpy().astype(np.float64)), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(layer1.kernel.numpy(), before - update.numpy().reshape(5, 8),
                               rtol=1e-6, atol=1e-7)


def test_newton_step_lowers_a_convex_loss():
    # A linear layer and a squared error: the loss is a convex quadratic in the kernel K,
    # loss = sum((X K + b - T)^2) / N with N = 20 * 8, so in closed form
    # g = 2/N X^T (X K + b - T) and H = kron(2/N X^T X, I_8) (row-major flattening of K).
    x = mt.random.normal([20, 5], dtype=mt.float64)
    target = mt.random.normal([20, 8], dtype=mt.float64)
    layer1 = mt.layers.Dense(8, dtype=mt.float64)

    def loss_fn():
        return mt.reduce_mean((layer1(x) - target)**2)

    with mt.GradientTape() as t2:
        with mt.GradientTape() as t1:
            loss = loss_fn()
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)

    xv, tv, k0, b0 = x.numpy(), target.numpy(), layer1.kernel.numpy(), layer1.bias.numpy()
    n = tv.size
    g_want = 2 / n * xv.T @ (xv @ k0 + b0 - tv)
    h_want = np.kron(2 / n * xv.T @ xv, np.eye(8))
    np.testing.assert_allclose(g.numpy(), g_want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.numpy().reshape(40, 40), h_want, rtol=1e-10, atol=1e-12)

    _newton_step(layer1, g, h)
    k_want = k0 - np.linalg.solve(h_want + 1e-3 * np.eye(40), g_want.reshape(40, 1)).reshape(5, 8)
    np.testing.assert_allclose(layer1.kernel.numpy(), k_want, rtol=1e-8, atol=1e-10)
    after = loss_fn().numpy()
    assert after < loss.numpy()
    # ... and nearly to the least-squares minimum (eps = 1e-3 keeps it from landing exactly).
    best = np.linalg.lstsq(xv, tv - b0, rcond=None)[0]
    best_loss = np.mean((xv @ best + b0 - tv) ** 2)
    assert best_loss <= after < best_loss + 1e-3 * (loss.numpy() - best_loss)


# -- Batch Jacobians ----------------------------------------------------------------------------

def test_batch_jacobian():
    x = mt.random.normal([7, 5])
    layer1 = mt.layers.Dense(8, activation=mt.nn.elu)
    layer2 = mt.layers.Dense(6, activation=mt.nn.elu)
    with mt.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer1(x)
        y = layer2(y)
    assert y.shape == (7, 6)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    # Every (batch, batch) slice is diagonal: examples are independent.
    jv = j.numpy()
    off = jv.copy()
    for b in range(7):
        off[b, :, b, :] = 0
    assert np.all(off == 0)

    j_sum = mt.reduce_sum(j, axis=2)
    assert j_sum.shape == (7, 6, 5)
    j_select = mt.einsum('bxby->bxy', j)
    assert j_select.shape == (7, 6, 5)

    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
    error = mt.reduce_max(abs(jb - j_sum))
    assert error < 1e-3
    assert mt.reduce_max(abs(jb - j_select)).numpy() < 1e-3
    np.testing.assert_allclose(jb.numpy(), np.einsum('bxby->bxy', jv), rtol=1e-6, atol=1e-7)
    jb_loop = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    np.testing.assert_allclose(jb_loop.numpy(), jb.numpy(), rtol=1e-6, atol=1e-7)


def test_batch_jacobian_with_batch_normalization_is_not_block_diagonal():
    x = mt.random.normal([7, 5])
    layer1 = mt.layers.Dense(8, activation=mt.nn.elu)
    bn = mt.layers.BatchNormalization()
    layer2 = mt.layers.Dense(6, activation=mt.nn.elu)
    with mt.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer1(x)
        y = bn(y, training=True)
        y = layer2(y)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    # Batch statistics couple the examples: the off-diagonal (batch, batch) blocks are non-zero.
    jv = j.numpy()
    off_diagonal = [np.abs(jv[a, :, b, :]).max() for a in range(7) for b in range(7) if a != b]
    assert min(off_diagonal) > 0
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
    # What batch_jacobian returns: its cotangent is 1 at output t of every example at once,
    # so jb[b, t, s] = sum over b' of dy[b', t] / dx[b, s], not the diagonal block here.
    np.testing.assert_allclose(jb.numpy(), jv.sum(axis=0).transpose(1, 0, 2),
                               rtol=1e-4, atol=1e-5)
    assert not np.allclose(jb.numpy(), np.einsum('bxby->bxy', jv), rtol=1e-3, atol=1e-4)
