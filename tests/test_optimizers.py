"""mt.optimizers: Keras's update rules, checked against the rules written out in NumPy here."""

import warnings

import numpy as np
import pytest

import minitape as mt

# A known function: f(w) = sum(a * w**2 + b * w), gradient 2 a w + b (float64 for exactness).
A = np.array([1.0, 3.0, 0.5])
B = np.array([0.5, -1.0, 2.0])
W0 = np.array([1.0, -2.0, 0.25])


def grad_np(w):
    return 2 * A * w + B


def run(opt, steps, lr_schedule=None):
    w = mt.Variable(W0.copy())
    out = []
    for step in range(steps):
        if lr_schedule is not None:
            opt.learning_rate = lr_schedule[step]
        with mt.GradientTape() as tape:
            loss = mt.reduce_sum(A * w**2 + B * w)
        opt.apply_gradients(zip([tape.gradient(loss, w)], [w]))
        out.append(w.numpy().copy())
    return np.array(out)


def sgd_np(steps, lr, momentum=0.0, nesterov=False):
    w, v, out = W0.copy(), np.zeros(3), []
    for _ in range(steps):
        g = grad_np(w)
        if momentum == 0.0:
            w = w - lr * g
        else:
            v = momentum * v - lr * g
            w = w + momentum * v - lr * g if nesterov else w + v
        out.append(w.copy())
    return np.array(out)


def adam_np(steps, lrs, b1=0.9, b2=0.999, eps=1e-7):
    w, m, v, out = W0.copy(), np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        g = grad_np(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        # Keras puts epsilon outside the bias correction: eps * sqrt(1 - b2**t) here.
        w = w - lrs[t - 1] * m_hat / (np.sqrt(v_hat) + eps / np.sqrt(1 - b2**t))
        out.append(w.copy())
    return np.array(out)


@pytest.mark.parametrize("momentum,nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_matches_the_update_rule(momentum, nesterov):
    opt = mt.optimizers.SGD(learning_rate=0.05, momentum=momentum, nesterov=nesterov)
    got = run(opt, 6)
    np.testing.assert_allclose(got, sgd_np(6, 0.05, momentum, nesterov), rtol=1e-6)
    assert int(opt.iterations) == 6
    assert opt.iterations.dtype == np.int64


def test_sgd_defaults_are_keras():
    opt = mt.optimizers.SGD()
    assert float(opt.learning_rate) == pytest.approx(0.01)
    assert opt.momentum == 0.0 and opt.nesterov is False


def test_adam_matches_the_update_rule():
    opt = mt.optimizers.Adam(learning_rate=0.1)
    np.testing.assert_allclose(run(opt, 8), adam_np(8, [0.1] * 8), rtol=1e-6)


def test_adam_defaults_are_keras():
    opt = mt.optimizers.Adam()
    assert float(opt.learning_rate) == pytest.approx(0.001)
    assert (opt.beta_1, opt.beta_2, opt.epsilon) == (0.9, 0.999, 1e-7)


def test_learning_rate_can_change_between_steps():
    lrs = [0.1, 0.1, 0.01, 0.01, 0.3]
    np.testing.assert_allclose(run(mt.optimizers.Adam(learning_rate=0.1), 5, lrs),
                               adam_np(5, lrs), rtol=1e-6)
    got = run(mt.optimizers.SGD(learning_rate=1.0), 5, lrs)
    w, want = W0.copy(), []
    for lr in lrs:
        w = w - lr * grad_np(w)
        want.append(w)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_learning_rate_variable_assign_also_works():
    opt = mt.optimizers.SGD(learning_rate=0.5)
    opt.learning_rate.assign(0.25)
    w = mt.Variable(1.0)
    opt.apply_gradients([(mt.constant(2.0), w)])
    assert float(w) == pytest.approx(0.5)


def test_float32_variables_stay_float32():
    w = mt.Variable([1.0, 2.0])
    mt.optimizers.Adam().apply_gradients([(mt.constant([1.0, 1.0]), w)])
    assert w.dtype == mt.float32


def test_none_gradient_is_skipped_with_a_warning_naming_the_variable():
    a, b = mt.Variable(1.0, name="a"), mt.Variable(1.0, name="unused")
    opt = mt.optimizers.SGD(learning_rate=0.1)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['unused'\]"):
        opt.apply_gradients([(mt.constant(1.0), a), (None, b)])
    assert float(a) == pytest.approx(0.9) and float(b) == 1.0
    assert int(opt.iterations) == 1


def test_all_none_gradients_raise():
    opt = mt.optimizers.Adam()
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.apply_gradients([(None, mt.Variable(1.0))])
    assert int(opt.iterations) == 0


def test_bad_pairs_and_shapes_are_clear_errors():
    opt = mt.optimizers.SGD()
    w = mt.Variable([1.0, 2.0], name="w")
    with pytest.raises(TypeError, match="second item of each pair must be a Variable"):
        opt.apply_gradients([(w, mt.constant([1.0, 2.0]))])
    with pytest.raises(ValueError, match=r"gradient for 'w' has shape \(3,\)"):
        opt.apply_gradients([(mt.ones(3), w)])
    with pytest.raises(TypeError, match="learning_rate must be a number"):
        mt.optimizers.SGD(learning_rate="fast")


def test_updates_are_not_recorded_on_a_tape():
    w = mt.Variable([1.0, 2.0])
    opt = mt.optimizers.SGD(learning_rate=0.1, momentum=0.5)
    with mt.GradientTape(persistent=True) as tape:
        loss = mt.reduce_sum(w * w)
        with pytest.warns(UserWarning, match="persistent tape inside its context"):
            g = tape.gradient(loss, w)
        n_ops = len(tape._ops)
        opt.apply_gradients([(g, w)])
        after = len(tape._ops)
        y = w * 1.0
    assert n_ops == after
    # The tape sees the new value as a fresh read of w, not as a function of the old one.
    assert np.allclose(tape.gradient(y, w).numpy(), [1.0, 1.0])


def test_slots_are_non_trainable_variables_of_the_optimizer():
    opt = mt.optimizers.Adam()
    w = mt.Variable([1.0, 2.0])
    opt.apply_gradients([(mt.constant([1.0, 1.0]), w)])
    assert all(not v.trainable for v in opt.variables)
    assert len(opt.variables) == 4   # iterations, learning_rate, m, v
    assert not any(v is w for v in opt.variables)


def test_no_warning_when_every_gradient_exists():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(mt.optimizers.SGD(), 2)


@pytest.mark.parametrize("make", [lambda: mt.optimizers.SGD(0.1),
                                  lambda: mt.optimizers.SGD(0.1, momentum=0.9),
                                  lambda: mt.optimizers.Adam(0.1)])
def test_each_step_stores_new_arrays_shared_with_nothing(make):
    # apply_gradients stores what the update rule computed without copying it again: it must
    # be new, never the gradient's array or an earlier value (which a tape may have saved).
    opt = make()
    w = mt.Variable([1.0, -2.0, 3.0])
    with mt.GradientTape() as tape:
        y = w * w                                   # saves w's value before the steps
    for _ in range(3):
        g = mt.constant([0.5, 0.25, -1.0])
        before = [w._value] + [s._value for s in opt.variables if s.shape == (3,)]
        opt.apply_gradients([(g, w)])
        after = [w._value] + [s._value for s in opt.variables if s.shape == (3,)]
        for new in after:
            assert type(new) is np.ndarray and new.dtype == np.float32 and new.shape == (3,)
            assert not np.shares_memory(new, g._value)
            assert not any(np.shares_memory(new, old) for old in before)
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [2.0, -4.0, 6.0])


# -- RMSprop, Nadam, Adagrad, Adamax, AdamW (issue #32): each against its formula in NumPy ---

def rmsprop_np(steps, lr, rho=0.9, momentum=0.0, eps=1e-7, centered=False):
    w, v, a, m, out = W0.copy(), np.zeros(3), np.zeros(3), np.zeros(3), []
    for _ in range(steps):
        g = grad_np(w)
        v = rho * v + (1 - rho) * g**2
        a = rho * a + (1 - rho) * g
        ms = v - a**2 if centered else v          # the (centered) mean square
        step = lr * g / np.sqrt(ms + eps)         # Keras: epsilon inside the square root
        m = momentum * m + step
        w = w - (m if momentum else step)
        out.append(w.copy())
    return np.array(out)


def nadam_np(steps, lr, b1=0.9, b2=0.999, eps=1e-7):
    # Dozat's Nadam with Keras's momentum schedule mu_t = b1 * (1 - 0.5 * 0.96**t).
    mu = [None] + [b1 * (1 - 0.5 * 0.96**t) for t in range(1, steps + 2)]
    w, m, v, out = W0.copy(), np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        g = grad_np(w)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        prod_t = np.prod(mu[1:t + 1])
        m_hat = mu[t + 1] * m / (1 - prod_t * mu[t + 1]) + (1 - mu[t]) * g / (1 - prod_t)
        w = w - lr * m_hat / (np.sqrt(v / (1 - b2**t)) + eps)
        out.append(w.copy())
    return np.array(out)


def adagrad_np(steps, lr, s0=0.1, eps=1e-7):
    w, s, out = W0.copy(), np.full(3, s0), []
    for _ in range(steps):
        g = grad_np(w)
        s = s + g * g
        w = w - lr * g / np.sqrt(s + eps)
        out.append(w.copy())
    return np.array(out)


def adamax_np(steps, lr, b1=0.9, b2=0.999, eps=1e-7):
    w, m, u, out = W0.copy(), np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        g = grad_np(w)
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        w = w - (lr / (1 - b1**t)) * m / (u + eps)
        out.append(w.copy())
    return np.array(out)


def adamw_np(steps, lr, wd, b1=0.9, b2=0.999, eps=1e-7):
    w, m, v, out = W0.copy(), np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        g = grad_np(w)                    # the gradient at w before the decay
        w = w * (1 - wd * lr)             # decoupled weight decay, then Adam's step
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        w = w - alpha * m / (np.sqrt(v) + eps)
        out.append(w.copy())
    return np.array(out)


@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.5}, {"centered": True},
                                    {"centered": True, "momentum": 0.9, "rho": 0.8}])
def test_rmsprop_matches_the_update_rule(kwargs):
    opt = mt.optimizers.RMSprop(learning_rate=0.05, **kwargs)
    np.testing.assert_allclose(run(opt, 8), rmsprop_np(8, 0.05, **kwargs), rtol=1e-6)
    assert int(opt.iterations) == 8


def test_rmsprop_first_step_by_hand():
    # v = 0.1 * 2**2 = 0.4; w = 1 - 0.25 * 2 / sqrt(0.4 + 1e-7)   (0.25: exact in float32)
    w = mt.Variable(np.float64(1.0))
    mt.optimizers.RMSprop(learning_rate=0.25).apply_gradients([(mt.constant(2.0, mt.float64), w)])
    assert float(w) == pytest.approx(1 - 0.5 / np.sqrt(0.4 + 1e-7), rel=1e-12)


def test_nadam_matches_the_update_rule():
    np.testing.assert_allclose(run(mt.optimizers.Nadam(learning_rate=0.1), 8),
                               nadam_np(8, 0.1), rtol=1e-6, atol=1e-8)


def test_nadam_first_step_by_hand():
    # t = 1: mu1 = 0.9 * (1 - 0.48) = 0.468, mu2 = 0.9 * (1 - 0.5 * 0.9216) = 0.48528;
    # m = 0.1 g, v = 0.001 g**2, v_hat = g**2;
    # m_hat = mu2 * 0.1 g / (1 - mu1 mu2) + (1 - mu1) g / (1 - mu1)  (= g (1 + 0.04853 / ...)).
    g, lr = 4.0, 0.125
    mu1, mu2 = 0.468, 0.48528
    m_hat = mu2 * 0.1 * g / (1 - mu1 * mu2) + g
    want = 1.0 - lr * m_hat / (g + 1e-7)
    w = mt.Variable(np.float64(1.0))
    mt.optimizers.Nadam(learning_rate=lr).apply_gradients([(mt.constant(g, mt.float64), w)])
    assert float(w) == pytest.approx(want, rel=1e-12)


def test_adagrad_matches_the_update_rule():
    np.testing.assert_allclose(run(mt.optimizers.Adagrad(learning_rate=0.2), 8),
                               adagrad_np(8, 0.2), rtol=1e-6)
    np.testing.assert_allclose(
        run(mt.optimizers.Adagrad(learning_rate=0.2, initial_accumulator_value=1.0), 4),
        adagrad_np(4, 0.2, s0=1.0), rtol=1e-6)


def test_adamax_matches_the_update_rule():
    np.testing.assert_allclose(run(mt.optimizers.Adamax(learning_rate=0.1), 8),
                               adamax_np(8, 0.1), rtol=1e-6)


def test_adamw_matches_the_update_rule():
    np.testing.assert_allclose(run(mt.optimizers.AdamW(learning_rate=0.1, weight_decay=0.2), 8),
                               adamw_np(8, 0.1, 0.2), rtol=1e-6)
    # AdamW with no decay is Adam.
    np.testing.assert_allclose(run(mt.optimizers.AdamW(learning_rate=0.1, weight_decay=0.0), 5),
                               adam_np(5, [0.1] * 5), rtol=1e-6)


def test_weight_decay_applies_to_every_optimizer_as_keras():
    # SGD with weight_decay: w = w (1 - wd lr) - lr g(w)
    w, want = W0.copy(), []
    for _ in range(4):
        w = w * (1 - 0.3 * 0.1) - 0.1 * grad_np(w)
        want.append(w)
    np.testing.assert_allclose(run(mt.optimizers.SGD(0.1, weight_decay=0.3), 4), want, rtol=1e-6)


@pytest.mark.parametrize("cls,defaults", [
    ("RMSprop", {"learning_rate": 0.001, "rho": 0.9, "momentum": 0.0, "epsilon": 1e-7,
                 "centered": False}),
    ("Nadam", {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}),
    ("Adagrad", {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7}),
    ("Adamax", {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}),
    ("AdamW", {"learning_rate": 0.001, "weight_decay": 0.004, "beta_1": 0.9, "beta_2": 0.999,
               "epsilon": 1e-7}),
])
def test_defaults_are_keras(cls, defaults):
    config = getattr(mt.keras.optimizers, cls)().get_config()
    for key, value in defaults.items():
        assert config[key] == pytest.approx(value), key


@pytest.mark.parametrize("name,cls", [("sgd", "SGD"), ("adam", "Adam"), ("rmsprop", "RMSprop"),
                                      ("RMSprop", "RMSprop"), ("nadam", "Nadam"),
                                      ("Nadam", "Nadam"), ("adagrad", "Adagrad"),
                                      ("adamax", "Adamax"), ("adamw", "AdamW"),
                                      ("AdamW", "AdamW")])
def test_every_keras_name_in_get_and_compile(name, cls):
    assert type(mt.keras.optimizers.get(name)) is getattr(mt.optimizers, cls)
    model = mt.keras.Sequential([mt.keras.layers.Dense(1)])
    model.compile(optimizer=name, loss="mse")
    assert type(model.optimizer) is getattr(mt.optimizers, cls)
    model.fit(np.ones((4, 2), np.float32), np.zeros((4, 1), np.float32), epochs=1, verbose=0)
    assert int(model.optimizer.iterations) == 1


def test_get_other_forms_and_errors():
    opt = mt.optimizers.Nadam()
    assert mt.optimizers.get(opt) is opt and mt.optimizers.get(None) is None
    got = mt.optimizers.get({"class_name": "RMSprop", "config": {"learning_rate": 0.5}})
    assert type(got) is mt.optimizers.RMSprop and float(got.learning_rate) == 0.5
    with pytest.raises(ValueError, match="does not implement Keras's 'ftrl'"):
        mt.optimizers.get("ftrl")
    with pytest.raises(ValueError, match="unknown optimizer 'adamm'"):
        mt.optimizers.get("adamm")
    with pytest.raises(TypeError, match="expected an optimizer"):
        mt.optimizers.get(3)
    with pytest.raises(ValueError, match="weight_decay=None"):
        mt.optimizers.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match="rho must be between 0 and 1"):
        mt.optimizers.RMSprop(rho=1.5)


@pytest.mark.parametrize("make,n_slots", [
    (lambda: mt.optimizers.RMSprop(0.1), 1), (lambda: mt.optimizers.RMSprop(0.1, 0.9, 0.5), 2),
    (lambda: mt.optimizers.RMSprop(0.1, centered=True), 2), (lambda: mt.optimizers.Nadam(), 2),
    (lambda: mt.optimizers.Adagrad(), 1), (lambda: mt.optimizers.Adamax(), 2),
    (lambda: mt.optimizers.AdamW(), 2)])
def test_new_optimizers_keep_float32_and_fresh_arrays(make, n_slots):
    opt = make()
    w = mt.Variable([1.0, -2.0, 3.0])
    for _ in range(2):
        g = mt.constant([0.5, 0.25, -1.0])
        before = [w._value] + [s._value for s in opt.variables if s.shape == (3,)]
        opt.apply_gradients([(g, w)])
        after = [w._value] + [s._value for s in opt.variables if s.shape == (3,)]
        assert len(after) == 1 + n_slots
        for new in after:
            assert new.dtype == np.float32 and not np.shares_memory(new, g._value)
            assert not any(np.shares_memory(new, old) for old in before)
    assert all(not v.trainable for v in opt.variables)
