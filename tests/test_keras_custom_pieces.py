"""The pieces of Geron's chapter 12 ("Custom models and training with TensorFlow"):
constraints, a custom Loss subclass with get_config, tf.add_n in a custom training loop, the
noise layers. Expected values are Keras's formulas, written out here in NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt
from minitape import keras

RNG = np.random.default_rng(3)


def test_constraints_match_keras_formulas():
    w = RNG.normal(size=(4, 3))
    norms = np.sqrt((w ** 2).sum(axis=0, keepdims=True))
    c = keras.constraints
    np.testing.assert_allclose(c.MaxNorm(1.0)(mt.constant(w)).numpy(),
                               w * np.clip(norms, 0, 1.0) / (norms + 1e-7), rtol=1e-12)
    np.testing.assert_allclose(c.max_norm(2.0, axis=1)(mt.constant(w)).numpy(),
                               w * np.clip(np.sqrt((w ** 2).sum(1, keepdims=True)), 0, 2)
                               / (np.sqrt((w ** 2).sum(1, keepdims=True)) + 1e-7), rtol=1e-12)
    np.testing.assert_array_equal(c.NonNeg()(mt.constant(w)).numpy(), np.maximum(w, 0))
    np.testing.assert_allclose(c.UnitNorm()(mt.constant(w)).numpy(), w / (norms + 1e-7),
                               rtol=1e-12)
    desired = 0.5 * np.clip(norms, 0.5, 0.8) + 0.5 * norms
    np.testing.assert_allclose(
        c.MinMaxNorm(0.5, 0.8, rate=0.5)(mt.constant(w)).numpy(),
        w * desired / (norms + 1e-7), rtol=1e-12)
    assert isinstance(c.get("max_norm"), c.MaxNorm) and c.get(None) is None
    with pytest.raises(ValueError, match="could not interpret constraint identifier"):
        c.get("maxnorm")


def test_fit_and_apply_gradients_keep_a_constrained_kernel_in_bounds(tmp_path):
    model = keras.Sequential([keras.layers.Dense(
        3, input_shape=(4,), kernel_constraint=keras.constraints.max_norm(0.5),
        bias_constraint="non_neg")])
    dense = model.layers[0]
    assert isinstance(dense.kernel.constraint, keras.constraints.MaxNorm)
    assert isinstance(dense.bias.constraint, keras.constraints.NonNeg)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), loss="mse")
    x = RNG.normal(size=(16, 4)).astype(np.float32)
    model.fit(x, 10 * RNG.normal(size=(16, 3)).astype(np.float32), epochs=3, verbose=0)
    columns = np.sqrt((dense.kernel.numpy() ** 2).sum(axis=0))
    assert columns.max() <= 0.5 + 1e-6, columns
    assert dense.bias.numpy().min() >= 0.0
    model.save(tmp_path / "constrained.keras")
    loaded = keras.models.load_model(tmp_path / "constrained.keras")
    assert isinstance(loaded.layers[0].kernel.constraint, keras.constraints.MaxNorm)
    assert loaded.layers[0].kernel.constraint.max_value == 0.5


def test_geron_custom_training_loop_with_add_n_and_constraints():
    l2_reg = keras.regularizers.l2(0.05)
    model = keras.Sequential([
        keras.layers.Dense(8, activation="elu", kernel_initializer="he_normal",
                           kernel_regularizer=l2_reg, kernel_constraint=keras.constraints.NonNeg()),
        keras.layers.Dense(1, kernel_regularizer=l2_reg)])
    x = RNG.normal(size=(32, 3)).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    optimizer = keras.optimizers.Nadam(learning_rate=0.01)
    model(x)
    before = model.layers[1].kernel.numpy().copy()
    for _ in range(5):
        with mt.GradientTape() as tape:
            y_pred = model(x, training=True)
            main_loss = mt.reduce_mean(keras.losses.mean_squared_error(y, y_pred))
            loss = mt.add_n([main_loss] + model.losses)
        np.testing.assert_allclose(
            float(loss), float(main_loss) + sum(float(p) for p in model.losses), rtol=1e-5)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        for variable in model.variables:      # (the optimizer applied them already)
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))
    assert not np.array_equal(model.layers[1].kernel.numpy(), before)   # it trained
    assert model.layers[0].kernel.numpy().min() >= 0.0


def test_a_variable_and_add_weight_take_a_constraint():
    v = mt.Variable([-1.0, 2.0], constraint=lambda w: mt.maximum(w, 0.0))
    v.assign(v.constraint(v))
    np.testing.assert_array_equal(v.numpy(), [0.0, 2.0])
    assert mt.Variable(1.0).constraint is None
    with pytest.raises(ValueError, match="constraint must be a function"):
        mt.Variable(1.0, constraint="max_norm")

    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                     constraint="non_neg")

        def call(self, x):
            return x * self.w

    layer = Scale()
    layer(mt.ones([1, 2]))
    assert isinstance(layer.w.constraint, keras.constraints.NonNeg)


def test_add_n_sums_and_sends_the_gradient_to_every_input():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))
    ta, tb = mt.constant(a), mt.constant(b)
    np.testing.assert_allclose(mt.math.add_n([ta, tb, ta]).numpy(), 2 * a + b, rtol=1e-12)
    with mt.GradientTape() as tape:
        tape.watch([ta, tb])
        total = mt.reduce_sum(mt.add_n([ta, tb * tb, ta]))
    ga, gb = tape.gradient(total, [ta, tb])
    np.testing.assert_allclose(ga.numpy(), np.full((2, 3), 2.0))
    np.testing.assert_allclose(gb.numpy(), 2 * b, rtol=1e-12)
    with pytest.raises(mt.errors.InvalidArgumentError, match="same shape"):
        mt.add_n([mt.ones([2]), mt.ones([1])])
    with pytest.raises(ValueError, match="non-empty list"):
        mt.add_n(mt.ones([2]))


class HuberLoss(keras.losses.Loss):   # Geron, chapter 12, as written there
    def __init__(self, threshold=1.0, **kwargs):
        self.threshold = threshold
        super().__init__(**kwargs)

    def call(self, y_true, y_pred):
        error = y_true - y_pred
        is_small_error = mt.abs(error) < self.threshold
        squared_loss = mt.square(error) / 2
        linear_loss = self.threshold * mt.abs(error) - self.threshold ** 2 / 2
        return mt.where(is_small_error, squared_loss, linear_loss)

    def get_config(self):
        base_config = super().get_config()
        return {**base_config, "threshold": self.threshold}


def test_a_loss_subclass_with_get_config_saves_and_loads(tmp_path):
    assert keras.losses.MeanSquaredError().get_config() == {
        "name": "mean_squared_error", "reduction": "sum_over_batch_size"}
    assert keras.losses.Huber(delta=2.0).get_config()["delta"] == 2.0
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,))])
    model.compile(loss=HuberLoss(2.0), optimizer="nadam")
    x = RNG.normal(size=(8, 2)).astype(np.float32)
    model.fit(x, x[:, :1] * 3, epochs=1, verbose=0)
    model.save(tmp_path / "huber.keras")
    loaded = keras.models.load_model(tmp_path / "huber.keras",
                                     custom_objects={"HuberLoss": HuberLoss})
    assert isinstance(loaded.loss, HuberLoss) and loaded.loss.threshold == 2.0
    e = np.array([0.5, 3.0])
    np.testing.assert_allclose(float(HuberLoss(2.0)(np.zeros(2), e)),
                               np.where(e < 2, e ** 2 / 2, 2 * e - 2).mean(), rtol=1e-12)


def test_noise_layers_only_change_values_while_training():
    x = mt.constant(RNG.normal(size=(2000, 4)))
    layers = keras.layers
    for layer in (layers.GaussianNoise(0.5, seed=1), layers.GaussianDropout(0.2, seed=1),
                  layers.AlphaDropout(0.2, seed=1)):
        assert layer(x) is x or np.array_equal(layer(x).numpy(), x.numpy())
        y = layer(x, training=True).numpy()
        assert not np.array_equal(y, x.numpy())
    noise = keras.layers.GaussianNoise(0.5, seed=1)(x, training=True).numpy() - x.numpy()
    assert abs(noise.std() - 0.5) < 0.02 and abs(noise.mean()) < 0.02
    ones = mt.ones([4000, 5], mt.float64)
    factor = keras.layers.GaussianDropout(0.2, seed=2)(ones, training=True).numpy()
    assert abs(factor.mean() - 1) < 0.02 and abs(factor.std() - np.sqrt(0.25)) < 0.02
    # AlphaDropout keeps a standard normal input's mean and variance (its purpose)
    z = mt.constant(RNG.normal(size=(20000, 5)))
    out = keras.layers.AlphaDropout(0.3, seed=3)(z, training=True).numpy()
    assert abs(out.mean()) < 0.03 and abs(out.std() - 1) < 0.03
