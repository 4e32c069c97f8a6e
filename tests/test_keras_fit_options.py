"""fit's validation_split, sample_weight and class_weight, as Keras 3
(array_slicing.train_validation_split, losses.loss.reduce_weighted_values,
data_adapter_utils.class_weight_to_sample_weights)."""

import numpy as np
import pytest

import minitape as mt


def data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (x @ np.array([[1.0], [-1.0]]) + 0.5).astype(np.float32)
    return x, y


def model_and_start(loss="mse", lr=0.1, metrics=None):
    model = mt.keras.Sequential([mt.keras.Input(shape=(2,)), mt.keras.layers.Dense(1)])
    model.compile(optimizer=mt.keras.optimizers.SGD(learning_rate=lr), loss=loss,
                  metrics=metrics)
    return model, model.get_weights()


def np_mse_step(weights, x, y, w, lr):
    """One SGD step on sum(w_i * (pred_i - y_i)^2) / n, by hand in float64; returns the
    new weights and the loss before the step."""
    kernel, bias = (a.astype(np.float64) for a in weights)
    pred = x @ kernel + bias
    r = (pred - y)[:, 0]
    n = len(x)
    loss = np.sum(w * r * r) / n
    d = 2 * w * r / n
    return [kernel - lr * (x.T @ d)[:, None], bias - lr * np.array([d.sum()])], loss


def test_validation_split_holds_out_the_last_samples_before_shuffling():
    x, y = data(8)
    model, start = model_and_start()
    history = model.fit(x, y, validation_split=0.25, batch_size=6, epochs=1, shuffle=False,
                        verbose=0)
    want, loss = np_mse_step(start, x[:6], y[:6], np.ones(6), 0.1)   # trained on x[:6] only
    for a, b in zip(model.get_weights(), want):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert history.history["loss"][0] == pytest.approx(loss, rel=1e-5)
    held_out = np.mean((x[6:] @ want[0] + want[1] - y[6:]) ** 2)
    assert history.history["val_loss"][0] == pytest.approx(held_out, rel=1e-5)
    assert history.params["steps"] == 1


def test_validation_split_floor_and_errors():
    x, y = data(10)
    model, _ = model_and_start()
    history = model.fit(x, y, validation_split=0.15, epochs=1, verbose=0)   # floor(8.5) = 8
    assert "val_loss" in history.history
    with pytest.raises(ValueError, match="contains 1 samples, which is not sufficient"):
        model.fit(x[:1], y[:1], validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match="between 0 and 1.*got 1.5"):
        model.fit(x, y, validation_split=1.5, verbose=0)
    ds = mt.data.Dataset.from_tensor_slices((x, y)).batch(4)
    with pytest.raises(ValueError, match="validation_split` is only supported for Tensors"):
        model.fit(ds, validation_split=0.2, verbose=0)


def test_validation_data_wins_over_validation_split():
    x, y = data(8)
    model, _ = model_and_start()
    history = model.fit(x, y, validation_split=0.5, validation_data=(x[:2], y[:2]), epochs=1,
                        batch_size=8, verbose=0)
    assert history.params["steps"] == 1
    assert history.history["val_loss"][0] == pytest.approx(
        model.evaluate(x[:2], y[:2], verbose=0), rel=1e-6)


@pytest.mark.parametrize("loss", ["mse", mt.keras.losses.MeanSquaredError()])
def test_sample_weight_scales_each_samples_loss_sum_over_batch_size(loss):
    x, y = data(6)
    w = np.array([1.0, 0.0, 2.0, 0.5, 3.0, 1.0], np.float32)
    model, start = model_and_start(loss=loss)
    history = model.fit(x, y, sample_weight=w, batch_size=6, epochs=1, shuffle=False, verbose=0)
    want, loss_value = np_mse_step(start, x, y, w, 0.1)
    for a, b in zip(model.get_weights(), want):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert history.history["loss"][0] == pytest.approx(loss_value, rel=1e-5)


def test_sample_weight_reaches_evaluate_and_the_metrics():
    x, y = data(4)
    w = np.array([0.0, 1.0, 3.0, 0.0], np.float32)
    model, start = model_and_start(metrics=["mae"])
    pred = x @ start[0] + start[1]
    err = (pred - y)[:, 0]
    logs = model.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(np.sum(w * err ** 2) / 4, rel=1e-5)
    assert logs["mae"] == pytest.approx(np.sum(w * np.abs(err)) / np.sum(w), rel=1e-5)
    with pytest.raises(ValueError, match=r"one weight per sample, shape \(4,\), got shape \(3,\)"):
        model.evaluate(x, y, sample_weight=w[:3], verbose=0)


def test_sample_weight_with_a_validation_split_is_split_too():
    x, y = data(8)
    w = np.array([1, 1, 1, 1, 1, 1, 0, 2], np.float32)
    model, start = model_and_start()
    history = model.fit(x, y, sample_weight=w, validation_split=0.25, batch_size=6,
                        shuffle=False, verbose=0)
    want, _ = np_mse_step(start, x[:6], y[:6], w[:6], 0.1)
    err = (x[6:] @ want[0] + want[1] - y[6:])[:, 0]
    assert history.history["val_loss"][0] == pytest.approx(np.sum(w[6:] * err ** 2) / 2,
                                                           rel=1e-5)


def test_class_weight_weights_each_sample_by_its_class():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 2)).astype(np.float32)
    labels = np.array([0, 1, 1, 0, 2, 1])
    class_weight = {0: 1.0, 1: 3.0}                      # class 2 not listed: weight 1
    expected_w = np.array([1.0, 3.0, 3.0, 1.0, 1.0, 3.0])
    kernel = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]], np.float32)

    def fitted(y, loss, **kwargs):
        model = mt.keras.Sequential([mt.keras.Input(shape=(2,)),
                                     mt.keras.layers.Dense(3, activation="softmax")])
        model.set_weights([kernel, np.zeros(3, np.float32)])
        model.compile(optimizer=mt.keras.optimizers.SGD(0.5), loss=loss)
        history = model.fit(x, y, batch_size=6, shuffle=False, verbose=0, **kwargs)
        return model, history.history["loss"][0]

    logits = x.astype(np.float64) @ kernel
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want_loss = np.sum(expected_w * -np.log(p[np.arange(6), labels])) / 6
    sparse = "sparse_categorical_crossentropy"
    model_a, loss_a = fitted(labels, sparse, class_weight=class_weight)
    model_b, loss_b = fitted(labels, sparse, sample_weight=expected_w)
    assert loss_a == pytest.approx(want_loss, rel=1e-5)
    assert loss_b == pytest.approx(want_loss, rel=1e-5)
    for a, b in zip(model_a.get_weights(), model_b.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # one-hot labels: the class is the argmax
    one_hot = np.eye(3, dtype=np.float32)[labels]
    _, loss_c = fitted(one_hot, "categorical_crossentropy", class_weight=class_weight)
    assert loss_c == pytest.approx(want_loss, rel=1e-5)


def test_class_weight_errors():
    x, y = data(4)
    model, _ = model_and_start()
    with pytest.raises(ValueError, match="cannot use `class_weight` and `sample_weight`"):
        model.fit(x, y, class_weight={0: 1.0}, sample_weight=np.ones(4), verbose=0)
    with pytest.raises(ValueError, match="integer keys.*'cat'"):
        model.fit(x, y, class_weight={"cat": 2.0}, verbose=0)
    with pytest.raises(ValueError, match="dict-like mapping"):
        model.fit(x, y, class_weight=[1.0, 2.0], verbose=0)


def test_a_dataset_can_carry_sample_weights():
    x, y = data(6)
    w = np.array([1.0, 0.0, 2.0, 0.5, 3.0, 1.0], np.float32)
    model, start = model_and_start()
    ds = mt.data.Dataset.from_tensor_slices((x, y, w)).batch(6)
    model.fit(ds, epochs=1, verbose=0)
    want, _ = np_mse_step(start, x, y, w, 0.1)
    for a, b in zip(model.get_weights(), want):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    with pytest.raises(ValueError, match=r"\(x, y, sample_weight\) triples"):
        model.fit(mt.data.Dataset.from_tensor_slices((x, y)).batch(6), sample_weight=w,
                  verbose=0)


def test_fit_still_refuses_arguments_it_does_not_take():
    x, y = data(4)
    model, _ = model_and_start()
    with pytest.raises(TypeError, match=r"unsupported arguments \['validation_freq'\]"):
        model.fit(x, y, validation_freq=2, verbose=0)
