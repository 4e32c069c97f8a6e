"""The training-loop code of Geron's "Hands-On Machine Learning" (3rd ed., chapters 10-11) and
Chollet's "Deep Learning with Python" (2nd ed., chapter 7), run with ``import minitape as tf``:
callbacks, learning rate schedules, validation_split. Tiny data stand in for Fashion MNIST;
what is checked is that the calls run as Keras runs them and give the values Keras's rules
give."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitape as tf
from minitape import keras

K = tf.keras.backend


def fashion_like(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4, 4)).astype(np.float32)
    y = (x.reshape(n, -1)[:, :3].argmax(1)).astype(np.int64)    # 3 classes
    return x, y


def build_model(seed=42):
    tf.random.set_seed(seed)
    return tf.keras.Sequential([
        tf.keras.layers.Flatten(input_shape=[4, 4]),
        tf.keras.layers.Dense(8, activation="relu", kernel_initializer="he_normal"),
        tf.keras.layers.Dense(3, activation="softmax"),
    ])


def test_geron_ch10_checkpoints_early_stopping_and_a_custom_callback(tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    X, y = fashion_like()
    model = build_model()
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), metrics=["accuracy"])
    checkpoint_cb = tf.keras.callbacks.ModelCheckpoint("my_checkpoints.weights.h5",
                                                       save_weights_only=True)
    early_stopping_cb = tf.keras.callbacks.EarlyStopping(patience=10,
                                                         restore_best_weights=True)

    class PrintValTrainRatioCallback(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs):
            ratio = logs["val_loss"] / logs["loss"]
            print(f"Epoch={epoch}, val/train={ratio:.2f}")

    history = model.fit(X, y, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[checkpoint_cb, early_stopping_cb,
                                   PrintValTrainRatioCallback()])
    lines = capsys.readouterr().out.splitlines()
    ratios = [v / t for v, t in zip(history.history["val_loss"], history.history["loss"])]
    assert lines == [f"Epoch={e}, val/train={r:.2f}" for e, r in enumerate(ratios)]
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    # restore_best_weights: the weights are those of the epoch with the lowest val_loss
    best = int(np.argmin(history.history["val_loss"]))
    assert early_stopping_cb.best_epoch == best
    val_loss = model.evaluate(X[30:], y[30:], verbose=0)[0]   # validation_split: the last 10
    assert val_loss == pytest.approx(history.history["val_loss"][best], rel=1e-5)
    # the book's older spelling, without an extension, writes my_checkpoints.npz
    model.fit(X, y, epochs=1, verbose=0, callbacks=[
        tf.keras.callbacks.ModelCheckpoint("my_checkpoints", save_weights_only=True)])
    other = build_model(seed=0)
    other.load_weights("my_checkpoints")
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert (tmp_path / "my_checkpoints.weights.h5.npz").exists()


def test_geron_ch11_schedules_in_fit():
    X, y = fashion_like()
    n_epochs, batch_size = 2, 10
    for lr_schedule in (
        tf.keras.optimizers.schedules.InverseTimeDecay(
            initial_learning_rate=0.01, decay_steps=10_000, decay_rate=1.0, staircase=False),
        tf.keras.optimizers.schedules.ExponentialDecay(
            initial_learning_rate=0.01, decay_steps=20_000, decay_rate=0.1, staircase=False),
        tf.keras.optimizers.schedules.PiecewiseConstantDecay(
            boundaries=[50_000 * n_epochs // batch_size, 80_000 * n_epochs // batch_size],
            values=[0.01, 0.005, 0.001]),
    ):
        optimizer = tf.keras.optimizers.SGD(learning_rate=lr_schedule)
        model = build_model()
        model.compile(loss="sparse_categorical_crossentropy", optimizer=optimizer,
                      metrics=["accuracy"])
        history = model.fit(X, y, epochs=n_epochs, batch_size=batch_size, verbose=0)
        assert len(history.history["loss"]) == n_epochs
        assert int(optimizer.iterations) == 8
        assert float(optimizer.learning_rate) == pytest.approx(float(lr_schedule(8)))
    # the book's loop listing the schedules by their docstring's first line
    names = [name for name in sorted(dir(tf.keras.optimizers.schedules))
             if name[0] != name[0].lower()]
    for name in names:
        first_line = getattr(tf.keras.optimizers.schedules, name).__doc__.splitlines()[0]
        assert first_line.strip()
    assert "ExponentialDecay" in names and "LearningRateSchedule" in names


def test_geron_ch11_learning_rate_scheduler_and_performance_scheduling():
    X, y = fashion_like()

    def exponential_decay(lr0, s):
        def exponential_decay_fn(epoch):
            return lr0 * 0.1 ** (epoch / s)
        return exponential_decay_fn

    def piecewise_constant(boundaries, values):
        boundaries = np.array([0] + boundaries)
        values = np.array(values)

        def piecewise_constant_fn(epoch):
            return values[(boundaries > epoch).argmax() - 1]
        return piecewise_constant_fn

    for fn, want in ((exponential_decay(lr0=0.01, s=20), [0.01 * 0.1 ** (e / 20)
                                                          for e in range(3)]),
                     (piecewise_constant([1, 2], [0.01, 0.005, 0.001]), [0.01, 0.005, 0.001])):
        model = build_model()
        model.compile(loss="sparse_categorical_crossentropy",
                      optimizer=tf.keras.optimizers.Nadam(learning_rate=0.01))
        lr_scheduler = tf.keras.callbacks.LearningRateScheduler(fn)
        history = model.fit(X, y, epochs=3, validation_data=(X, y), verbose=0,
                            callbacks=[lr_scheduler])
        assert history.history["learning_rate"] == pytest.approx(want, rel=1e-6)

    model = build_model()
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.01))
    lr_scheduler = tf.keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=5)
    history = model.fit(X, y, epochs=3, validation_data=(X, y), verbose=0,
                        callbacks=[lr_scheduler])
    assert history.epoch == [0, 1, 2] and len(history.history["learning_rate"]) == 3


def test_geron_ch11_find_learning_rate_and_one_cycle():
    X, y = fashion_like()

    class ExponentialLearningRate(tf.keras.callbacks.Callback):
        def __init__(self, factor):
            self.factor = factor
            self.rates = []
            self.losses = []

        def on_epoch_begin(self, epoch, logs=None):
            self.sum_of_epoch_losses = 0

        def on_batch_end(self, batch, logs=None):
            mean_epoch_loss = logs["loss"]
            new_sum_of_epoch_losses = mean_epoch_loss * (batch + 1)
            batch_loss = new_sum_of_epoch_losses - self.sum_of_epoch_losses
            self.sum_of_epoch_losses = new_sum_of_epoch_losses
            lr = self.model.optimizer.learning_rate.numpy()
            self.rates.append(lr)
            self.losses.append(batch_loss)
            self.model.optimizer.learning_rate = lr * self.factor

    def find_learning_rate(model, X, y, epochs=1, batch_size=32, min_rate=1e-4, max_rate=1):
        init_weights = model.get_weights()
        iterations = math.ceil(len(X) / batch_size) * epochs
        factor = (max_rate / min_rate) ** (1 / iterations)
        init_lr = K.get_value(model.optimizer.learning_rate)
        model.optimizer.learning_rate = min_rate
        exp_lr = ExponentialLearningRate(factor)
        model.fit(X, y, epochs=epochs, batch_size=batch_size, callbacks=[exp_lr], verbose=0)
        model.optimizer.learning_rate = init_lr
        model.set_weights(init_weights)
        return exp_lr.rates, exp_lr.losses

    model = build_model()
    model.compile(loss="sparse_categorical_crossentropy",
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.001), metrics=["accuracy"])
    start = model.get_weights()
    rates, losses = find_learning_rate(model, X, y, epochs=1, batch_size=10)
    assert rates == pytest.approx([1e-4 * 10 ** k for k in range(4)], rel=1e-5)
    assert len(losses) == 4 and all(np.isfinite(losses))
    assert float(model.optimizer.learning_rate) == pytest.approx(0.001)
    for a, b in zip(model.get_weights(), start):
        np.testing.assert_array_equal(a, b)

    class OneCycleScheduler(tf.keras.callbacks.Callback):
        def __init__(self, iterations, max_lr=1e-3, start_lr=None):
            self.iterations = iterations
            self.max_lr = max_lr
            self.start_lr = start_lr or max_lr / 10
            self.half_iteration = iterations // 2
            self.iteration = 0
            self.seen = []

        def on_batch_begin(self, batch, logs):
            if self.iteration < self.half_iteration:
                lr = self.start_lr + (self.max_lr - self.start_lr) * (
                    self.iteration / self.half_iteration)
            else:
                lr = self.max_lr
            self.iteration += 1
            self.model.optimizer.learning_rate = lr
            self.seen.append(lr)

    onecycle = OneCycleScheduler(math.ceil(len(X) / 10) * 2, max_lr=0.1)
    model.fit(X, y, epochs=2, batch_size=10, callbacks=[onecycle], verbose=0)
    assert onecycle.seen[:4] == pytest.approx([0.01, 0.0325, 0.055, 0.0775])
    assert float(model.optimizer.learning_rate) == pytest.approx(0.1)


def test_chollet_ch7_callbacks_list_and_loss_history(tmp_path):
    X, y = fashion_like(60)
    model = build_model()
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    path = str(tmp_path / "checkpoint_path.keras")
    callbacks_list = [
        keras.callbacks.EarlyStopping(monitor="val_accuracy", patience=2),
        keras.callbacks.ModelCheckpoint(filepath=path, monitor="val_loss", save_best_only=True),
    ]

    class LossHistory(keras.callbacks.Callback):
        def on_train_begin(self, logs):
            self.per_batch_losses = []
            self.epochs = []

        def on_batch_end(self, batch, logs):
            self.per_batch_losses.append(logs.get("loss"))

        def on_epoch_end(self, epoch, logs):
            self.epochs.append(len(self.per_batch_losses))
            self.per_batch_losses = []

    loss_history = LossHistory()
    history = model.fit(X[:45], y[:45], epochs=4, batch_size=15,
                        validation_data=(X[45:], y[45:]),
                        callbacks=callbacks_list + [loss_history], verbose=0)
    assert loss_history.epochs == [3] * len(history.epoch)
    best = keras.models.load_model(path)
    want = min(history.history["val_loss"])
    assert best.evaluate(X[45:], y[45:], verbose=0)[0] == pytest.approx(want, rel=1e-5)
