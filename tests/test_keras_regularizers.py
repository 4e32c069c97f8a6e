"""mt.keras.regularizers, layers' regularizers, add_loss / losses, and fit adding them (issue 32):
hand-computed penalties, Keras 3's defaults, gradients against central finite differences."""

import numpy as np
import pytest

import minitape as mt

R = mt.keras.regularizers
W = np.array([[1.0, -2.0], [3.0, -4.0]], np.float32)


def test_penalties_by_hand_and_keras_defaults():
    assert float(R.L1(0.1)(mt.constant(W))) == pytest.approx(0.1 * 10)
    assert float(R.L2(0.01)(mt.constant(W))) == pytest.approx(0.01 * 30)
    assert float(R.L1L2(l1=0.1, l2=0.2)(mt.constant(W))) == pytest.approx(0.1 * 10 + 0.2 * 30)
    assert (R.L1().l1, R.L2().l2, R.L1L2().l1, R.L1L2().l2) == (0.01, 0.01, 0.0, 0.0)
    assert R.l1 is R.L1 and R.l2 is R.L2 and R.l1_l2 is R.L1L2
    assert R.get("l2").get_config() == {"l2": 0.01}
    assert R.get("l1_l2").get_config() == {"l1": 0.0, "l2": 0.0}
    assert R.get(None) is None and isinstance(R.get(R.L1), R.L1)
    reg = R.L1L2(l1=0.5, l2=0.25)
    assert R.L1L2.from_config(reg.get_config()).get_config() == {"l1": 0.5, "l2": 0.25}
    assert R.get(R.serialize(reg)).get_config() == reg.get_config()
    assert R.L2(0.5)(mt.constant(W)).dtype == mt.float32


def test_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        R.L2(-0.1)
    with pytest.raises(ValueError, match="non-negative"):
        R.L1(float("nan"))
    with pytest.raises(ValueError, match="could not interpret regularizer identifier 'l3'"):
        R.get("l3")
    with pytest.raises(TypeError, match="expects a Tensor"):
        R.L2()(W)
    with pytest.raises(TypeError, match="unexpected keyword argument kernel_regulariser"):
        mt.keras.layers.Dense(2, kernel_regulariser="l2")


def built_dense(dtype=mt.float32, **kwargs):
    layer = mt.keras.layers.Dense(2, kernel_initializer=lambda s, dtype: np.asarray(W, dtype),
                                  dtype=dtype, **kwargs)
    layer(mt.ones((1, 2), dtype))
    layer.bias.assign(np.array([0.5, -1.5], dtype))
    return layer


def test_a_regularized_dense_losses_are_recomputed_from_the_current_weights():
    layer = built_dense(kernel_regularizer=R.L2(0.01), bias_regularizer=R.L1(0.1))
    assert [float(v) for v in layer.losses] == pytest.approx([0.01 * 30, 0.1 * 2.0])
    layer.kernel.assign(2 * W)
    assert float(layer.losses[0]) == pytest.approx(0.01 * 120)
    model = mt.keras.Sequential([layer])
    assert len(model.losses) == 2
    layer.trainable = False          # frozen weights are not penalized (trainable_weights)
    assert model.losses == []


def test_activity_regularizer_is_divided_by_the_batch_size_and_cleared_each_call():
    layer = built_dense(activity_regularizer=R.L1(0.1))
    x = mt.constant([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = layer(x)
    assert len(layer.losses) == 1
    assert float(layer.losses[0]) == pytest.approx(0.1 * np.abs(y.numpy()).sum() / 3)
    layer(x)
    assert len(layer.losses) == 1      # the losses of the latest call only


def test_add_loss_in_a_custom_layer_reaches_the_model_and_is_cleared_by_the_outer_call():
    class ActivityPenalty(mt.keras.layers.Layer):
        def call(self, x):
            self.add_loss(0.5 * mt.reduce_sum(x))
            return x

    inner = ActivityPenalty()
    model = mt.keras.Sequential([inner, mt.keras.layers.Dense(1, kernel_regularizer="l2")])
    model(mt.ones((2, 3)))
    model(mt.ones((2, 3)))
    losses = model.losses
    assert len(losses) == 2 and float(losses[0]) == 3.0       # add_loss first, as Keras 3
    assert float(losses[1]) == pytest.approx(0.01 * np.sum(model.layers[1].kernel.numpy() ** 2))
    with pytest.raises(TypeError, match="add_loss expects a scalar Tensor"):
        inner.add_loss("much")


@pytest.mark.parametrize("regularizer", [R.L1(0.3), R.L2(0.2), R.L1L2(l1=0.1, l2=0.4)])
def test_regularization_gradients_match_central_differences(regularizer):
    layer = built_dense(dtype=mt.float64, kernel_regularizer=regularizer,
                        bias_regularizer=regularizer, activity_regularizer=regularizer)
    x = mt.constant(np.array([[0.5, -1.0], [2.0, 0.25]]))

    def total():
        y = layer(x)
        value = mt.reduce_sum(y * y)
        for loss in layer.losses:      # the kernel's, the bias's and the output's penalties
            value = value + loss
        return value

    with mt.GradientTape() as tape:
        value = total()
    grads = tape.gradient(value, [layer.kernel, layer.bias])
    eps = 1e-6
    for var, grad in zip([layer.kernel, layer.bias], grads):
        numeric = np.zeros(var.shape)
        base = var.numpy().copy()
        for index in np.ndindex(var.shape):
            for sign in (1, -1):
                moved = base.copy()
                moved[index] += sign * eps
                var.assign(moved)
                numeric[index] += sign * float(total()) / (2 * eps)
            var.assign(base)
        np.testing.assert_allclose(grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_fit_and_evaluate_add_the_penalty_to_the_loss_as_keras():
    x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    y = np.array([[1.0], [0.0]], np.float32)
    layer = mt.keras.layers.Dense(1, kernel_regularizer=R.L2(0.1),
                                  kernel_initializer=lambda s, dtype: np.ones(s, dtype))
    model = mt.keras.Sequential([layer])
    model.compile(optimizer=mt.keras.optimizers.SGD(learning_rate=0.05), loss="mse")
    kernel = np.ones((2, 1))
    mse = np.mean((x @ kernel - y) ** 2)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(mse + 0.1 * 2, rel=1e-6)
    history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    assert history.history["loss"][0] == pytest.approx(mse + 0.1 * 2, rel=1e-6)
    # one SGD step on mse + 0.1 * sum(k**2): the penalty's gradient 0.2 * k joins the tape's
    grad = 2 * x.T @ (x @ kernel - y) / 2 + 0.2 * kernel
    np.testing.assert_allclose(layer.kernel.numpy(), kernel - 0.05 * grad, rtol=1e-6)


def test_add_weight_regularizer_and_conv2d_regularizers():
    class Scale(mt.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                     regularizer=R.L1(0.5), name="w")

        def call(self, x):
            return x * self.w

    layer = Scale()
    layer(mt.ones((1, 3)))
    assert [float(v) for v in layer.losses] == [1.5]
    conv = mt.keras.layers.Conv2D(2, 3, kernel_regularizer="l2", bias_regularizer="l1",
                                  kernel_initializer="ones")
    conv(mt.zeros((1, 4, 4, 1)))
    assert [float(v) for v in conv.losses] == pytest.approx([0.01 * 18, 0.0])
