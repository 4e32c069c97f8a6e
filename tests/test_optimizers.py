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
