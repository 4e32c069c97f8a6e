"""Learning rate schedules (mt.optimizers.schedules, mt.keras.optimizers.schedules).

Expected values are Keras 3's formulas (keras/src/optimizers/schedules/
learning_rate_schedule.py) written out here in float64; minitape computes in float32, as
Keras does for a Python float initial_learning_rate.
"""

import math

import numpy as np
import pytest

import minitape as mt

schedules = mt.keras.optimizers.schedules


def value(schedule, step):
    out = schedule(step)
    assert isinstance(out, mt.Tensor) and out.dtype == np.float32
    return float(out)


def test_the_same_module_under_both_names():
    assert mt.keras.optimizers.schedules is mt.optimizers.schedules
    assert issubclass(schedules.ExponentialDecay, schedules.LearningRateSchedule)


@pytest.mark.parametrize("step, staircase, want", [
    (0, False, 0.01),
    (10_000, False, 0.01 * 0.1 ** 0.5),
    (20_000, False, 0.001),
    (30_000, False, 0.01 * 0.1 ** 1.5),
    (19_999, True, 0.01),            # floor(19999 / 20000) = 0
    (20_000, True, 0.001),
    (45_000, True, 0.01 * 0.1 ** 2),
])
def test_exponential_decay(step, staircase, want):
    s = schedules.ExponentialDecay(initial_learning_rate=0.01, decay_steps=20_000,
                                   decay_rate=0.1, staircase=staircase)
    assert value(s, step) == pytest.approx(want, rel=1e-6)


def test_piecewise_constant_decay_boundaries_belong_to_the_interval_below():
    s = schedules.PiecewiseConstantDecay(boundaries=[5, 15], values=[0.01, 0.005, 0.001])
    steps = [0, 4, 5, 6, 15, 16, 1000]
    want = [0.01, 0.01, 0.01, 0.005, 0.005, 0.001, 0.001]   # values[i] for b[i-1] < step <= b[i]
    assert [value(s, k) for k in steps] == pytest.approx(want, rel=1e-7)
    np.testing.assert_allclose(s(np.array(steps)).numpy(), want, rtol=1e-7)


@pytest.mark.parametrize("step, cycle, want", [
    (0, False, 0.1),
    (25, False, 0.09 * 0.75 ** 0.5 + 0.01),
    (100, False, 0.01),
    (150, False, 0.01),                       # capped at decay_steps
    (0, True, 0.1),                           # multiplier 1 at step 0
    (150, True, 0.09 * (1 - 150 / 200) ** 0.5 + 0.01),   # decay_steps * ceil(1.5) = 200
    (200, True, 0.01),
])
def test_polynomial_decay(step, cycle, want):
    s = schedules.PolynomialDecay(0.1, decay_steps=100, end_learning_rate=0.01, power=0.5,
                                  cycle=cycle)
    assert value(s, step) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("step, staircase, want", [
    (0, False, 0.01), (5_000, False, 0.01 / 1.5), (30_000, False, 0.01 / 4.0),
    (15_000, True, 0.01 / 2.0), (9_999, True, 0.01),
])
def test_inverse_time_decay(step, staircase, want):
    s = schedules.InverseTimeDecay(initial_learning_rate=0.01, decay_steps=10_000,
                                   decay_rate=1.0, staircase=staircase)
    assert value(s, step) == pytest.approx(want, rel=1e-6)


def test_cosine_decay_without_and_with_warmup():
    s = schedules.CosineDecay(0.1, decay_steps=100, alpha=0.2)
    for step in (0, 30, 50, 100, 500):
        k = min(step, 100)
        want = 0.1 * (0.8 * 0.5 * (1 + math.cos(math.pi * k / 100)) + 0.2)
        assert value(s, step) == pytest.approx(want, rel=1e-6, abs=1e-9)
    warm = schedules.CosineDecay(0.0, decay_steps=100, warmup_target=0.1, warmup_steps=10)
    assert value(warm, 0) == 0.0
    assert value(warm, 5) == pytest.approx(0.05, rel=1e-6)              # linear warmup
    assert value(warm, 10) == pytest.approx(0.1, rel=1e-6)              # decay starts
    assert value(warm, 60) == pytest.approx(0.1 * 0.5 * (1 + math.cos(math.pi * 0.5)), rel=1e-6)
    assert value(warm, 1000) == pytest.approx(0.0, abs=1e-9)            # capped
    assert value(schedules.CosineDecay(0.1, 10, warmup_target=0.2), 0) == pytest.approx(0.2)


def test_a_schedule_takes_an_array_of_steps_for_a_plot():
    s = schedules.ExponentialDecay(0.01, 20_000, 0.1)
    steps = np.arange(0, 100_000, 10_000)
    out = s(steps)
    assert out.shape == (10,) and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), 0.01 * 0.1 ** (steps / 20_000), rtol=1e-6)


def test_bad_arguments_say_what_was_passed():
    with pytest.raises(ValueError, match="decay_steps` must be > 0. Received: decay_steps=0"):
        schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="boundaries should be 1 less"):
        schedules.PiecewiseConstantDecay([10, 20], [0.1, 0.01])
    with pytest.raises(TypeError, match="the step must be a number"):
        schedules.InverseTimeDecay(0.1, 10, 1.0)("ten")
    with pytest.raises(NotImplementedError, match="must override `__call__"):
        schedules.LearningRateSchedule()(0)
    with pytest.raises(AttributeError, match="CosineDecayRestarts"):
        schedules.CosineDecayRestarts


def test_the_optimizer_evaluates_the_schedule_at_iterations_before_each_update():
    # loss = 3 w: the gradient is 3, so step k moves w by 3 * lr_k, lr_k = 0.1 * 0.5 ** k
    s = schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    opt = mt.keras.optimizers.SGD(learning_rate=s)
    w = mt.Variable(1.0)
    expected_w = 1.0
    for k in range(4):
        assert float(opt.learning_rate) == pytest.approx(0.1 * 0.5 ** k, rel=1e-6)
        with mt.GradientTape() as tape:
            loss = 3.0 * w
        opt.apply_gradients(zip([tape.gradient(loss, w)], [w]))
        expected_w -= 3.0 * 0.1 * 0.5 ** k
        assert float(w) == pytest.approx(expected_w, rel=1e-6)
    assert int(opt.iterations) == 4
    assert isinstance(opt.learning_rate, mt.Tensor) and opt.learning_rate.dtype == np.float32


def test_a_subclassed_schedule_receives_the_step_count():
    seen = []

    class OneOverStep(schedules.LearningRateSchedule):
        def __init__(self, initial_learning_rate):
            self.initial_learning_rate = initial_learning_rate

        def __call__(self, step):
            seen.append(int(step))
            return self.initial_learning_rate / (float(step) + 1)

    opt = mt.keras.optimizers.SGD(learning_rate=OneOverStep(0.6))
    w = mt.Variable(0.0)
    for _ in range(3):
        opt.apply_gradients([(mt.constant(1.0), w)])
    assert seen == [0, 1, 2]
    assert float(w) == pytest.approx(-(0.6 + 0.3 + 0.2), rel=1e-6)


def test_adam_uses_the_scheduled_rate_too():
    s = schedules.PiecewiseConstantDecay([0], [0.1, 0.01])   # 0.1 at step 0, then 0.01
    opt = mt.keras.optimizers.Adam(learning_rate=s)
    w = mt.Variable(1.0)
    opt.apply_gradients([(mt.constant(4.0), w)])   # Adam's first step moves by about lr
    assert float(w) == pytest.approx(0.9, abs=1e-5)
    opt.apply_gradients([(mt.constant(4.0), w)])
    assert float(w) == pytest.approx(0.89, abs=1e-5)


def test_a_schedule_cannot_be_overwritten_by_a_number():
    opt = mt.keras.optimizers.SGD(learning_rate=schedules.ExponentialDecay(0.1, 10, 0.5))
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.01
    opt2 = mt.keras.optimizers.SGD(learning_rate=0.1)
    opt2.learning_rate = schedules.InverseTimeDecay(0.2, 1, 1.0)     # allowed, as Keras
    assert float(opt2.learning_rate) == pytest.approx(0.2)


def test_fit_follows_the_schedule_step_by_step():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 2)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0]]) + 0.5).astype(np.float32)

    def make():
        return mt.keras.Sequential([mt.keras.layers.Dense(1, kernel_initializer="ones")])

    def schedule():
        return schedules.InverseTimeDecay(0.1, decay_steps=1, decay_rate=1.0)

    model = make()
    model.compile(optimizer=mt.keras.optimizers.SGD(learning_rate=schedule()), loss="mse")
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    by_hand = make()
    by_hand(x[:1])
    for step in range(6):                                   # 3 batches x 2 epochs
        lr = 0.1 / (1 + step)
        xb, yb = x[(step % 3) * 4:(step % 3) * 4 + 4], y[(step % 3) * 4:(step % 3) * 4 + 4]
        with mt.GradientTape() as tape:
            loss = mt.reduce_mean((by_hand(xb) - yb) ** 2)
        grads = tape.gradient(loss, by_hand.trainable_variables)
        for g, v in zip(grads, by_hand.trainable_variables):
            v.assign(v - lr * g)
    for a, b in zip(model.get_weights(), by_hand.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert int(model.optimizer.iterations) == 6
    assert float(model.optimizer.learning_rate) == pytest.approx(0.1 / 7, rel=1e-6)


def test_the_config_round_trips_through_get_and_model_save(tmp_path):
    s = schedules.ExponentialDecay(0.01, decay_steps=50, decay_rate=0.3, staircase=True)
    opt = mt.keras.optimizers.SGD(learning_rate=s, momentum=0.9)
    config = opt.get_config()
    assert config["learning_rate"]["class_name"] == "ExponentialDecay"
    again = mt.optimizers.get({"class_name": "SGD", "config": config})
    assert again._learning_rate.get_config() == s.get_config() and again.momentum == 0.9
    assert schedules.deserialize(schedules.serialize(s)).get_config() == s.get_config()

    model = mt.keras.Sequential([mt.keras.Input(shape=(2,)), mt.keras.layers.Dense(1)])
    model.compile(optimizer=opt, loss="mse")
    model.save(tmp_path / "m.keras")
    loaded = mt.keras.models.load_model(tmp_path / "m.keras")
    lr = loaded.optimizer._learning_rate
    assert isinstance(lr, schedules.ExponentialDecay) and lr.get_config() == s.get_config()


class HalfEachStep(schedules.LearningRateSchedule):
    def __init__(self, start):
        self.start = start

    def __call__(self, step):
        return self.start * 0.5 ** float(step)

    def get_config(self):
        return {"start": self.start}


def test_a_custom_schedule_loads_with_custom_objects(tmp_path):
    model = mt.keras.Sequential([mt.keras.Input(shape=(2,)), mt.keras.layers.Dense(1)])
    model.compile(optimizer=mt.keras.optimizers.Adam(learning_rate=HalfEachStep(0.2)),
                  loss="mse")
    model.save(tmp_path / "m.keras")
    with pytest.raises(ValueError, match="HalfEachStep"):
        mt.keras.models.load_model(tmp_path / "m.keras")
    loaded = mt.keras.models.load_model(tmp_path / "m.keras",
                                        custom_objects={"HalfEachStep": HalfEachStep})
    assert isinstance(loaded.optimizer._learning_rate, HalfEachStep)
    assert float(loaded.optimizer.learning_rate) == pytest.approx(0.2)


def test_a_registered_schedule_loads_without_custom_objects(tmp_path):
    @mt.keras.saving.register_keras_serializable(package="test_schedules")
    class ThirdEachStep(HalfEachStep):
        def __call__(self, step):
            return self.start / 3 ** float(step)

    model = mt.keras.Sequential([mt.keras.Input(shape=(2,)), mt.keras.layers.Dense(1)])
    model.compile(optimizer=mt.keras.optimizers.SGD(learning_rate=ThirdEachStep(0.9)),
                  loss="mse")
    model.save(tmp_path / "m.keras")
    loaded = mt.keras.models.load_model(tmp_path / "m.keras")
    assert isinstance(loaded.optimizer._learning_rate, ThirdEachStep)
