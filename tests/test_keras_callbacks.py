"""mt.keras.callbacks: Keras 3's callbacks (keras/src/callbacks/), driven directly with logs
dicts (so no randomness decides) and inside fit."""

import csv
import math

import numpy as np
import pytest

import minitape as mt

callbacks = mt.keras.callbacks


def small_model(lr=0.1, metrics=None, optimizer=None):
    model = mt.keras.Sequential([mt.keras.Input(shape=(2,)), mt.keras.layers.Dense(1)])
    model.compile(optimizer=optimizer or mt.keras.optimizers.SGD(learning_rate=lr), loss="mse",
                  metrics=metrics)
    return model


def data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    return x, (x @ np.array([[1.0], [2.0]])).astype(np.float32)


def drive(cb, model, values, key="val_loss"):
    """Run the epoch hooks with logs {key: value}; return the epoch at which fit would stop."""
    cb.set_model(model)
    model.stop_training = False
    cb.on_train_begin({})
    for epoch, v in enumerate(values):
        cb.on_epoch_begin(epoch, {})
        cb.on_epoch_end(epoch, {key: v})
        if model.stop_training:
            return epoch
    return None


# -- EarlyStopping ---------------------------------------------------------------------------

def test_early_stopping_patience_on_a_crafted_sequence():
    # best: 1.0, 0.8, (0.81 waits 1), 0.79, (0.85 waits 1), (0.9 waits 2 = patience): stop at 5
    cb = callbacks.EarlyStopping(patience=2)
    assert drive(cb, small_model(), [1.0, 0.8, 0.81, 0.79, 0.85, 0.9, 0.95]) == 5
    assert cb.stopped_epoch == 5 and cb.best == 0.79 and cb.best_epoch == 3


def test_early_stopping_min_delta_is_the_improvement_to_beat():
    # with min_delta 0.05, 0.8 beats 1.0 (0.85 < 1.0); 0.81 and 0.79 do not beat 0.8 -> stop at 3
    cb = callbacks.EarlyStopping(patience=2, min_delta=0.05)
    assert drive(cb, small_model(), [1.0, 0.8, 0.81, 0.79, 0.5]) == 3
    assert cb.best == 0.8


def test_early_stopping_patience_zero_stops_at_the_first_non_improvement_never_epoch_0():
    assert drive(callbacks.EarlyStopping(), small_model(), [1.0, 0.9, 0.9, 0.1]) == 2
    assert drive(callbacks.EarlyStopping(monitor="loss"), small_model(), [1.0], "loss") is None


def test_early_stopping_mode_auto_maximizes_accuracy_and_minimizes_mae():
    model = small_model(metrics=["accuracy", "mae"])
    x, y = data()
    model.fit(x, (y > 0).astype(np.float32), epochs=1, verbose=0)   # builds the metrics
    cb = callbacks.EarlyStopping(monitor="val_accuracy", patience=1)
    assert drive(cb, model, [0.5, 0.7, 0.6, 0.8], "val_accuracy") == 2
    cb = callbacks.EarlyStopping(monitor="val_mae", patience=1)
    assert drive(cb, model, [0.5, 0.4, 0.6, 0.3], "val_mae") == 2
    cb = callbacks.EarlyStopping(monitor="val_auc")
    with pytest.raises(ValueError, match="mode='max'"):
        drive(cb, model, [0.5], "val_auc")
    cb = callbacks.EarlyStopping(monitor="val_auc", mode="max", patience=1)
    assert drive(cb, model, [0.5, 0.4, 0.3], "val_auc") == 1


def test_early_stopping_start_from_epoch_and_baseline():
    cb = callbacks.EarlyStopping(patience=1, start_from_epoch=3)
    assert drive(cb, small_model(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == 4
    # without a baseline the first epoch resets wait: stop at 2; with baseline 0.5 (not
    # beaten), the first epoch counts too: wait reaches patience 2 at epoch 1
    assert drive(callbacks.EarlyStopping(patience=2), small_model(), [1.0, 1.1, 1.2]) == 2
    cb = callbacks.EarlyStopping(patience=2, baseline=0.5)
    assert drive(cb, small_model(), [1.0, 1.1, 1.2]) == 1


def test_early_stopping_missing_monitor_warns_and_does_not_count():
    cb = callbacks.EarlyStopping(monitor="val_loss")
    with pytest.warns(UserWarning, match="val_loss` which is not available. Available metrics "
                                         "are: loss"):
        assert drive(cb, small_model(), [1.0, 2.0, 3.0], "loss") is None


def test_early_stopping_restores_the_best_epochs_weights_at_train_end():
    model = small_model()
    cb = callbacks.EarlyStopping(patience=1, restore_best_weights=True)
    cb.set_model(model)
    cb.on_train_begin({})
    for epoch, v in enumerate([0.9, 0.4, 0.6, 0.7]):
        model.set_weights([np.full((2, 1), epoch, np.float32), np.full((1,), epoch, np.float32)])
        cb.on_epoch_end(epoch, {"val_loss": v})
        if model.stop_training:
            break
    assert epoch == 2 and cb.best_epoch == 1
    cb.on_train_end({})
    np.testing.assert_array_equal(model.get_weights()[0], np.full((2, 1), 1.0))


def test_fit_stops_after_the_epoch_early_stopping_chose():
    # LambdaCallback writes a crafted val_loss into the epoch's logs, which EarlyStopping
    # (next in the list) reads from the same dict, as Keras's CallbackList passes it
    crafted = [1.0, 0.5, 0.6, 0.7, 0.2, 0.1]
    override = callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: logs.update(val_loss=crafted[epoch]))
    model = small_model()
    x, y = data()
    history = model.fit(x, y, epochs=6, verbose=0, validation_data=(x, y),
                        callbacks=[override, callbacks.EarlyStopping(patience=2)])
    assert history.epoch == [0, 1, 2, 3]
    assert history.history["val_loss"] == crafted[:4]
    assert model.stop_training is True


def test_early_stopping_verbose_messages(capsys):
    model = small_model()
    cb = callbacks.EarlyStopping(patience=0, verbose=1, restore_best_weights=True)
    drive(cb, model, [1.0, 2.0])
    cb.on_train_end({})
    assert capsys.readouterr().out.splitlines() == [
        "Epoch 2: early stopping",
        "Restoring model weights from the end of the best epoch: 1."]


# -- stop_training from a batch, TerminateOnNaN ---------------------------------------------

def test_terminate_on_nan_stops_after_the_bad_batch(capsys):
    x, y = data(8)
    x[5, 0] = np.nan                                # in the second batch of 4
    model = small_model()
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[callbacks.TerminateOnNaN()])
    assert capsys.readouterr().out == "Batch 1: Invalid loss, terminating training\n"
    assert int(model.optimizer.iterations) == 2 and history.epoch == [0]
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 1"):
        small_model().fit(x, y, batch_size=4, shuffle=False, verbose=0,
                          callbacks=[callbacks.TerminateOnNaN(raise_error=True)])


# -- ModelCheckpoint ---------------------------------------------------------------------------

def test_model_checkpoint_writes_a_file_per_epoch_with_formatted_names(tmp_path):
    model = small_model()
    cb = callbacks.ModelCheckpoint(str(tmp_path / "m_{epoch:02d}-{val_loss:.2f}.keras"))
    drive(cb, model, [0.5, 0.25])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m_01-0.50.keras", "m_02-0.25.keras"]
    loaded = mt.keras.models.load_model(tmp_path / "m_02-0.25.keras")
    x, _ = data(3)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_model_checkpoint_save_best_only(tmp_path, capsys):
    cb = callbacks.ModelCheckpoint(str(tmp_path / "e{epoch}.keras"), save_best_only=True,
                                   verbose=1)
    drive(cb, small_model(), [0.5, 0.6, 0.4, 0.4])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e1.keras", "e3.keras"]
    out = capsys.readouterr().out
    assert "Epoch 1: val_loss improved from None to 0.50000, saving model to" in out
    assert "Epoch 2: val_loss did not improve from 0.50000" in out
    assert "Epoch 4: val_loss did not improve from 0.40000" in out
    cb = callbacks.ModelCheckpoint(str(tmp_path / "acc.keras"), monitor="val_acc", mode="max",
                                   save_best_only=True)
    drive(cb, small_model(), [0.5, 0.4], "val_acc")
    assert cb.best == 0.5


def test_model_checkpoint_weights_only_maps_keras_names_to_the_npz_file(tmp_path):
    model = small_model()
    path = str(tmp_path / "best.weights.h5")
    drive(callbacks.ModelCheckpoint(path, save_weights_only=True), model, [0.3])
    assert (tmp_path / "best.weights.h5.npz").exists()
    other = small_model()
    other.load_weights(path)
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_model_checkpoint_in_fit_keeps_the_best_model(tmp_path):
    x, y = data()
    model = small_model()
    path = tmp_path / "best.keras"
    model.fit(x, y, epochs=3, verbose=0, validation_data=(x, y),
              callbacks=[callbacks.ModelCheckpoint(path, save_best_only=True)])
    assert path.exists()
    best = mt.keras.models.load_model(path)
    # SGD on this quadratic lowers the loss each epoch: the best is the last epoch's model
    np.testing.assert_allclose(best.evaluate(x, y, verbose=0), model.evaluate(x, y, verbose=0),
                               rtol=1e-6)


def test_model_checkpoint_errors_name_the_path_and_the_fix(tmp_path):
    with pytest.raises(ValueError, match=r"must end in `.keras`.*filepath=model\.txt"):
        callbacks.ModelCheckpoint("model.txt")
    with pytest.raises(ValueError, match="save_weights_only=True"):
        callbacks.ModelCheckpoint("w.weights.h5")
    with pytest.raises(ValueError, match="ends in .keras"):
        callbacks.ModelCheckpoint("m.keras", save_weights_only=True)
    with pytest.raises(ValueError, match="save_freq"):
        callbacks.ModelCheckpoint("m.keras", save_freq="batch")
    cb = callbacks.ModelCheckpoint(str(tmp_path / "m-{val_acc:.2f}.keras"))
    with pytest.raises(KeyError, match="val_acc"):
        drive(cb, small_model(), [0.5])


def test_model_checkpoint_save_freq_in_batches(tmp_path):
    x, y = data(8)
    cb = callbacks.ModelCheckpoint(str(tmp_path / "m-{epoch}-{batch}.keras"), save_freq=3)
    small_model().fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0, callbacks=[cb])
    # 4 batches per epoch, batch numbers from 1 in the name: saved after batches 3 and 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-1-3.keras", "m-2-2.keras"]


# -- learning rates ---------------------------------------------------------------------------

def test_learning_rate_scheduler_sets_the_rate_each_epoch_and_logs_it():
    x, y = data(8)
    model = small_model(lr=0.1)
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[
        callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)])
    assert history.history["learning_rate"] == pytest.approx([0.05, 0.025, 0.0125], rel=1e-6)
    # the one-argument form (Geron's exponential_decay_fn(epoch)) works too
    model = small_model(lr=0.1)
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[
        callbacks.LearningRateScheduler(lambda epoch: 0.01 * 0.1 ** (epoch / 20))])
    want = [0.01 * 0.1 ** (e / 20) for e in range(3)]
    assert history.history["learning_rate"] == pytest.approx(want, rel=1e-6)


def test_learning_rate_scheduler_rate_is_the_one_each_step_used():
    x, y = data(4)
    model = small_model(lr=1.0)
    start = model.get_weights()
    model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0, callbacks=[
        callbacks.LearningRateScheduler(lambda epoch, lr: [0.05, 0.02][epoch])])
    by_hand = small_model()
    by_hand.set_weights(start)
    for lr in (0.05, 0.02):
        with mt.GradientTape() as tape:
            loss = mt.reduce_mean((by_hand(x) - y) ** 2)
        grads = tape.gradient(loss, by_hand.trainable_variables)
        for g, v in zip(grads, by_hand.trainable_variables):
            v.assign(v - lr * g)
    for a, b in zip(model.get_weights(), by_hand.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_learning_rate_scheduler_refuses_a_non_number():
    cb = callbacks.LearningRateScheduler(lambda epoch, lr: "fast")
    cb.set_model(small_model())
    with pytest.raises(ValueError, match="should be a float. Got: 'fast'"):
        cb.on_epoch_begin(0, {})
    with pytest.raises(TypeError, match="schedule must be a function"):
        callbacks.LearningRateScheduler(0.1)


def test_reduce_lr_on_plateau_on_a_crafted_sequence():
    model = small_model(lr=1.0)
    cb = callbacks.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_delta=0.0)
    cb.set_model(model)
    cb.on_train_begin({})
    logged = []
    for epoch, v in enumerate([1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5]):
        logs = {"val_loss": v}
        cb.on_epoch_end(epoch, logs)
        logged.append(logs["learning_rate"])
    # reductions at epochs 2 (wait 2), 4 (cooldown epoch 3, then waits 1, 2) and 7
    assert logged == pytest.approx([1.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.25])
    assert float(model.optimizer.learning_rate) == pytest.approx(0.125)


def test_reduce_lr_on_plateau_stops_at_min_lr():
    model = small_model(lr=1.0)
    cb = callbacks.ReduceLROnPlateau(factor=0.5, patience=1, min_lr=0.3)
    drive(cb, model, [1.0] * 6)
    assert float(model.optimizer.learning_rate) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="factor >= 1.0. Received factor=2"):
        callbacks.ReduceLROnPlateau(factor=2)
    with pytest.raises(TypeError, match="epsilon"):
        callbacks.ReduceLROnPlateau(epsilon=1e-4)


def test_reduce_lr_on_plateau_in_fit_logs_learning_rate_in_the_history():
    x, y = data()
    history = small_model().fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
                                callbacks=[callbacks.ReduceLROnPlateau(factor=0.5, patience=5)])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.1])


def test_a_keras_2_style_callback_changes_the_rate_each_batch():
    # Geron's chapter 11 callback: on_batch_begin, no super().__init__(), logs['lr'] added
    class ExponentialDecay(mt.keras.callbacks.Callback):
        def __init__(self, n_steps):
            self.n_steps = n_steps

        def on_batch_begin(self, batch, logs=None):
            lr = self.model.optimizer.learning_rate.numpy()
            self.model.optimizer.learning_rate = lr * 0.1 ** (1 / self.n_steps)

        def on_epoch_end(self, epoch, logs=None):
            logs["lr"] = mt.keras.backend.get_value(self.model.optimizer.learning_rate)

    x, y = data(8)
    model = small_model(lr=0.01)
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0,
                        callbacks=[ExponentialDecay(n_steps=4)])
    want = [0.01 * 0.1 ** (2 / 4), 0.01 * 0.1 ** (4 / 4)]
    assert [float(v) for v in history.history["lr"]] == pytest.approx(want, rel=1e-5)


# -- LambdaCallback, CSVLogger, the base class --------------------------------------------

def test_lambda_callback_hooks_in_keras_order():
    calls = []
    cb = callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(f"epoch_begin {epoch}"),
        on_batch_end=lambda batch, logs: calls.append(f"batch_end {batch}"),
        on_epoch_end=lambda epoch, logs: calls.append(f"epoch_end {epoch} {sorted(logs)}"),
        on_train_end=lambda logs: calls.append(f"train_end {sorted(logs)}"))
    x, y = data(4)
    small_model().fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[cb])
    assert calls == ["train_begin", "epoch_begin 0", "batch_end 0", "batch_end 1",
                     "epoch_end 0 ['loss']", "train_end ['loss']"]
    with pytest.raises(TypeError, match="on_epoch_end must be a function"):
        callbacks.LambdaCallback(on_epoch_end=3)


def test_csv_logger_writes_one_row_per_epoch(tmp_path):
    x, y = data()
    path = tmp_path / "log.csv"
    history = small_model().fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
                                callbacks=[callbacks.CSVLogger(path)])
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "val_loss"]
    assert [r[0] for r in rows[1:]] == ["0", "1"]
    assert [float(r[1]) for r in rows[1:]] == pytest.approx(history.history["loss"])
    assert [float(r[2]) for r in rows[1:]] == pytest.approx(history.history["val_loss"])
    small_model().fit(x, y, epochs=1, verbose=0,
                      callbacks=[callbacks.CSVLogger(path, append=True)])
    with open(path, newline="") as f:
        assert len(list(csv.reader(f))) == 4   # no second header


def test_fit_checks_its_callbacks():
    x, y = data(4)
    with pytest.raises(TypeError, match="callbacks must be mt.keras.callbacks.Callback"):
        small_model().fit(x, y, verbose=0, callbacks=[lambda epoch: None])


def test_history_is_the_keras_callbacks_history():
    assert callbacks.History is mt.keras.History
    assert math.isclose(mt.keras.backend.get_value(mt.constant(2.0)), 2.0)
    v = mt.Variable(1.0)
    mt.keras.backend.set_value(v, 3.0)
    assert float(v) == 3.0
    with pytest.raises(TypeError, match="must be a Variable"):
        mt.keras.backend.set_value(mt.constant(1.0), 2.0)
