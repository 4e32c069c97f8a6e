"""``mt.keras.callbacks``: hooks into ``Model.fit``, as ``keras.callbacks``.

Subclass ``Callback`` and override the methods you need; ``fit(..., callbacks=[cb])`` calls
them::

    on_train_begin(logs)
        on_epoch_begin(epoch, logs)
            on_train_batch_begin(batch, logs)     # for each batch (calls on_batch_begin)
            on_train_batch_end(batch, logs)       # logs: {"loss": the epoch's mean so far,
                                                  #        metrics...}  (calls on_batch_end)
        on_epoch_end(epoch, logs)                 # logs: the epoch's means (and val_ ones)
    on_train_end(logs)                            # logs: the last epoch's

``self.model`` is the model being trained (``set_model``), ``self.params`` fit's
``{"epochs": ..., "steps": ..., "verbose": ...}``. As in Keras, ``logs`` hold plain floats,
and ``on_epoch_end`` receives one dict shared by all the callbacks and then recorded in the
``History``: a key a callback adds there (``logs["learning_rate"] = ...``) shows in
``history.history``. Setting ``self.model.stop_training = True`` ends ``fit`` after the
current batch (from a batch hook) or epoch (from ``on_epoch_end``), as Keras 3.
``model.last_train_step`` is ``(tape, loss)`` of the latest batch: ``mt.viz.TrainingView``'s
callback draws that tape.

The ready-made callbacks are Keras 3's (``keras/src/callbacks/``), with the same arguments,
defaults, logs and messages: ``EarlyStopping``, ``ModelCheckpoint``, ``LearningRateScheduler``,
``ReduceLROnPlateau``, ``LambdaCallback``, ``TerminateOnNaN``, ``CSVLogger``; ``History`` is
what ``fit`` returns.
"""

from __future__ import annotations

import csv
import os
import warnings

import numpy as np

from .models import History

__all__ = ["Callback", "History", "EarlyStopping", "ModelCheckpoint", "LearningRateScheduler",
           "ReduceLROnPlateau", "LambdaCallback", "TerminateOnNaN", "CSVLogger"]


class Callback:
    """Base class of ``fit``'s callbacks, as ``keras.callbacks.Callback``; every hook does
    nothing unless overridden. ``on_train_batch_begin`` / ``on_train_batch_end`` call
    ``on_batch_begin`` / ``on_batch_end`` (Keras's older names), so either may be overridden.
    """

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_batch_begin(self, batch, logs=None):
        pass

    def on_batch_end(self, batch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass


# -- choosing min or max for a monitored quantity ---------------------------------------------

def _direction(metric):
    """``"up"`` (higher is better), ``"down"`` or None for one of the model's metrics, as
    Keras 3's ``Metric._direction``: accuracies, precision and recall go up; the metrics that
    are losses (mse, mae, the cross-entropies) go down."""
    from . import metrics as m
    direction = getattr(metric, "_direction", None)
    if direction is not None:
        return direction
    if isinstance(metric, (m.Accuracy, m.BinaryAccuracy, m.CategoricalAccuracy,
                           m.SparseCategoricalAccuracy, m.Precision, m.Recall)):
        return "up"
    if isinstance(metric, (m.MeanSquaredError, m.MeanAbsoluteError, m.BinaryCrossentropy,
                           m.CategoricalCrossentropy, m.SparseCategoricalCrossentropy)):
        return "down"
    if isinstance(metric, m.MeanMetricWrapper) and metric._fn in m._LOSS_FUNCTIONS:
        return "down"
    return None


class _MonitorCallback(Callback):
    """What EarlyStopping, ModelCheckpoint and ReduceLROnPlateau share, as Keras 3's
    ``MonitorCallback``: the quantity watched, whether lower or higher is better, and the
    ``min_delta`` an improvement must beat."""

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        if not isinstance(monitor, str):
            raise TypeError(f"{type(self).__name__}: monitor must be the name of a logged "
                            f"quantity, e.g. 'val_loss', got {monitor!r:.60}")
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode '{mode}' is unknown, fallback to auto "
                          "mode.", stacklevel=3)
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op = None

    def _set_monitor_op(self):
        if self.mode == "min":
            self.monitor_op = np.less
        elif self.mode == "max":
            self.monitor_op = np.greater
        else:
            name = self.monitor.removeprefix("val_")
            if name == "loss":
                self.monitor_op = np.less
            for metric in getattr(self.model, "metrics", None) or []:
                if metric.name == name and _direction(metric) is not None:
                    self.monitor_op = np.greater if _direction(metric) == "up" else np.less
            if self.monitor_op is None:
                names = [m.name for m in getattr(self.model, "metrics", None) or []]
                raise ValueError(
                    f"{type(self).__name__} callback received monitor={self.monitor}, but "
                    "minitape (as Keras) isn't able to automatically determine whether that "
                    "metric should be maximized or minimized (the model's metrics are "
                    f"{names}). Pass `mode='max'` in order to monitor based on the highest "
                    "metric value, or pass `mode='min'` in order to use the lowest value.")
        if self.monitor_op is np.less:
            self.min_delta *= -1

    def _is_improvement(self, monitor_value, reference_value):
        if reference_value is None:
            return True
        return bool(self.monitor_op(monitor_value - self.min_delta, reference_value))


class EarlyStopping(_MonitorCallback):
    """Stop training when a monitored quantity has stopped improving, as
    ``keras.callbacks.EarlyStopping``.

    At each epoch's end (from epoch ``start_from_epoch`` on) the value ``logs[monitor]`` is
    an improvement when it beats the best so far by more than ``min_delta``: ``current -
    min_delta < best`` when lower is better, ``current - min_delta > best`` when higher is.
    After ``patience`` epochs in a row without one (and never at epoch 0), it sets
    ``model.stop_training = True``: ``fit`` ends after that epoch.

    Args:
        monitor: the logged quantity (``"val_loss"``, ``"val_accuracy"``, ``"loss"``...).
        min_delta: the smallest change that counts as an improvement (its absolute value).
        patience: epochs without improvement before stopping.
        verbose: 1 prints ``Epoch n: early stopping`` (and the restore) at the end.
        mode: ``"min"``, ``"max"`` or ``"auto"``: lower is better for a loss, higher for an
            accuracy, precision or recall, lower for the metrics that are losses (``mse``,
            ``mae``, cross-entropies); any other name in ``"auto"`` raises ``ValueError``
            at the first epoch's end, as Keras 3.
        baseline: a value to beat: ``wait`` is reset only by a value better than it too.
        restore_best_weights: at the end of training, set the model's weights back to those
            of the best epoch (``model.set_weights``), whether or not training stopped early.
        start_from_epoch: epochs to let pass before monitoring (warm-up).

    Attributes:
        stopped_epoch: the epoch (from 0) at which training was stopped, 0 if it was not.
        best, best_epoch, wait: the best value, its epoch, epochs since an improvement.

    A missing ``monitor`` key warns (``UserWarning``) and the epoch is not counted.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.best_weights = None
        self.start_from_epoch = start_from_epoch
        self.best_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print("Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(list(logs.keys()))}",
                          stacklevel=2)
        return value


class ModelCheckpoint(_MonitorCallback):
    """Save the model (or its weights) during training, as ``keras.callbacks.ModelCheckpoint``.

    Args:
        filepath: where to save; it may hold ``str.format`` fields filled from the epoch
            (counted from 1) and the logs: ``"model_{epoch:02d}-{val_loss:.2f}.keras"``.
            Whole models: a name ending in ``.keras`` (or Keras's older ``.h5``), written
            by ``model.save`` in minitape's format, read back by
            ``mt.keras.models.load_model(filepath)``. Weights only
            (``save_weights_only=True``): any name but ``.keras``, Keras's
            ``"best.weights.h5"`` included, written by ``model.save_weights`` as minitape's
            ``.npz`` file (``best.weights.h5.npz``); ``model.load_weights("best.weights.h5")``
            reads it back. minitape writes no HDF5.
        monitor: the logged quantity compared with ``save_best_only``.
        verbose: 1 prints a line for each save (and each epoch without improvement).
        save_best_only: save only when ``monitor`` improves on the best value so far (so a
            fixed ``filepath`` always holds the best model); a missing ``monitor`` warns and
            saves.
        save_weights_only: save ``model.save_weights(filepath)`` instead of
            ``model.save(filepath)``.
        mode: ``"auto"``, ``"min"`` or ``"max"``, as ``EarlyStopping``.
        save_freq: ``"epoch"`` (after each epoch) or an int: after that many batches.
        initial_value_threshold: the best value to start from (only better ones are saved).

    Raises:
        ValueError: a whole-model ``filepath`` that does not end in ``.keras`` (or ``.h5``),
            a weights ``filepath`` that ends in ``.keras``, or a bad ``save_freq``.
        KeyError: (during ``fit``) a format field of ``filepath`` that is not in the logs.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__(monitor, mode, initial_value_threshold)
        self.verbose = verbose
        self.filepath = os.fspath(filepath)
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = None
        self._current_epoch = 0
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)
                                     or save_freq < 1):
            raise ValueError(f"Unrecognized save_freq: {save_freq!r}. Expected save_freq are "
                             "'epoch' or a positive integer (a number of batches)")
        if save_weights_only:
            if self.filepath.endswith(".keras"):
                raise ValueError(
                    "ModelCheckpoint: with save_weights_only=True the file holds only the "
                    f"weights, but the filepath {self.filepath!r} ends in .keras (a whole "
                    "model). Name it e.g. 'best.weights.h5' (minitape writes its weights file "
                    "'best.weights.h5.npz', which model.load_weights('best.weights.h5') reads), "
                    "or pass save_weights_only=False")
        elif not self.filepath.endswith((".keras", ".h5")) or \
                self.filepath.endswith(".weights.h5"):
            raise ValueError(
                "The filepath provided must end in `.keras` (Keras model format). Received: "
                f"filepath={self.filepath}. For a weights file, pass save_weights_only=True "
                "(e.g. 'best.weights.h5')")

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(epoch=self._current_epoch, batch=batch, logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        if self.save_freq == "epoch":
            self._save_model(epoch=epoch, batch=None, logs=logs)

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        if self._last_batch_seen is None or batch <= self._last_batch_seen:
            add_batches = batch + 1   # a new epoch (batches count from 0)
        else:
            add_batches = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += add_batches
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _should_save_model(self, epoch, logs, filepath):
        logs = logs or {}
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.",
                          stacklevel=2)
            return True
        if self.monitor_op is None:
            self._set_monitor_op()
        best_str = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best_str} to "
                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best_str}")
        return False

    def _save_model(self, epoch, batch, logs):
        logs = dict(logs or {})
        filepath = self._get_file_path(epoch, batch, logs)
        if not self._should_save_model(epoch, logs, filepath):
            return
        folder = os.path.dirname(filepath)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if os.path.isdir(filepath):
            raise IsADirectoryError("Please specify a non-directory filepath for "
                                    "ModelCheckpoint. Filepath used is an existing directory: "
                                    f"{filepath}")
        if self.save_weights_only:
            self.model.save_weights(filepath)
        else:
            self.model.save(filepath, overwrite=True)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")

    def _get_file_path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e} is not in the logs, which have "
                           f"{['epoch'] + sorted(logs)}") from None


def _learning_rate(optimizer, who):
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError(f'{who}: the model has no optimizer with a "learning_rate" attribute; '
                         "call model.compile(optimizer=...) first")
    return float(np.asarray(optimizer.learning_rate))


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of each epoch from a function, as
    ``keras.callbacks.LearningRateScheduler``.

    Args:
        schedule: ``schedule(epoch, lr) -> new lr`` (``epoch`` counts from 0, ``lr`` is the
            current learning rate as a float); a function of the epoch alone,
            ``schedule(epoch)``, works too (Keras's older form: tried when the two-argument
            call raises ``TypeError``).
        verbose: 1 prints the rate set at each epoch.

    At each epoch's end ``logs["learning_rate"]`` is the optimizer's learning rate (so
    ``history.history["learning_rate"]`` lists one per epoch), as Keras 3.

    Raises:
        ValueError: the schedule returned something that is not a number.
        TypeError: the optimizer's learning rate is a schedule (it cannot be set).
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        if not callable(schedule):
            raise TypeError("LearningRateScheduler: schedule must be a function (epoch, lr) -> "
                            f"lr, got {type(schedule).__name__} {schedule!r:.60}")
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        lr = _learning_rate(optimizer, "LearningRateScheduler")
        try:
            lr = self.schedule(epoch, lr)
        except TypeError:   # (Keras's older API: schedule(epoch))
            lr = self.schedule(epoch)
        if hasattr(lr, "numpy"):
            lr = lr.numpy()
        if isinstance(lr, (bool, np.bool_)) or not isinstance(lr, (int, float, np.number)) \
                and not (isinstance(lr, np.ndarray) and lr.ndim == 0):
            raise ValueError("The output of the `schedule` function should be a float. Got: "
                             f"{lr!r:.60}")
        optimizer.learning_rate = float(lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{float(lr)}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _learning_rate(self.model.optimizer, "LearningRateScheduler")


class ReduceLROnPlateau(_MonitorCallback):
    """Reduce the learning rate when a monitored quantity stops improving, as
    ``keras.callbacks.ReduceLROnPlateau``.

    At each epoch's end: an improvement (``current`` beats the best by more than
    ``min_delta``, see ``EarlyStopping``) resets the count; otherwise, outside a cooldown,
    the count grows, and when it reaches ``patience`` the learning rate becomes
    ``max(lr * factor, min_lr)`` (if ``lr`` is above ``min_lr``), the count restarts and
    ``cooldown`` epochs follow during which the count stays at 0.
    ``logs["learning_rate"]`` is the rate at the epoch's end, before any reduction (it shows
    in ``history.history["learning_rate"]``), as Keras 3.

    Args:
        monitor, mode: as ``EarlyStopping``.
        factor: the multiplier, below 1.
        patience: epochs without improvement before reducing (default 10).
        verbose: 1 prints each reduction.
        min_delta: the smallest change that counts as an improvement (default 1e-4).
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: the lowest learning rate.

    Raises:
        ValueError: ``factor >= 1``.
        TypeError: an argument Keras does not have.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        if kwargs:
            raise TypeError(f"ReduceLROnPlateau got unexpected arguments {sorted(kwargs)}; it "
                            "takes monitor, factor, patience, verbose, mode, min_delta, "
                            "cooldown, min_lr")
        super().__init__(monitor, mode, min_delta=min_delta)
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. Received "
                             f"factor={factor}")
        self.factor = factor
        self.min_lr = min_lr
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0

    def _reset(self):
        self.best = None
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def _reduce_optimizer_lr(self, optimizer, epoch):
        old_lr = _learning_rate(optimizer, "ReduceLROnPlateau")
        if old_lr > np.float32(self.min_lr):
            new_lr = max(old_lr * self.factor, self.min_lr)
            optimizer.learning_rate = new_lr
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                      f"{new_lr}.")
            return True
        return False

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs if logs is not None else {}
        optimizer = getattr(self.model, "optimizer", None)
        logs["learning_rate"] = _learning_rate(optimizer, "ReduceLROnPlateau")
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn("Learning rate reduction is conditioned on metric "
                          f"`{self.monitor}` which is not available. Available metrics are: "
                          f"{','.join(list(logs.keys()))}.", stacklevel=2)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and self._reduce_optimizer_lr(optimizer, epoch):
                self.cooldown_counter = self.cooldown
                self.wait = 0

    def in_cooldown(self):
        return self.cooldown_counter > 0


class LambdaCallback(Callback):
    """A callback made of functions, as ``keras.callbacks.LambdaCallback``.

    Each argument, when given, replaces that hook, with the same arguments:
    ``on_epoch_begin(epoch, logs)``, ``on_epoch_end(epoch, logs)``,
    ``on_train_begin(logs)``, ``on_train_end(logs)``, ``on_train_batch_begin(batch, logs)``,
    ``on_train_batch_end(batch, logs)``. Other keyword arguments become attributes, as Keras.
    ``on_batch_begin`` / ``on_batch_end`` (Keras 2's names) are accepted for the batch hooks.

    >>> import minitape as mt
    >>> seen = []
    >>> cb = mt.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    >>> cb.on_epoch_end(3, {}); seen
    [3]
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        self.__dict__.update(kwargs)   # (on_batch_begin=f sets the hook that the batch hooks call)
        hooks = {"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end,
                 "on_train_begin": on_train_begin, "on_train_end": on_train_end,
                 "on_train_batch_begin": on_train_batch_begin,
                 "on_train_batch_end": on_train_batch_end}
        for name, fn in hooks.items():
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be a function, got "
                                f"{type(fn).__name__} {fn!r:.60}")
            setattr(self, name, fn)


class TerminateOnNaN(Callback):
    """Stop training when a batch's loss is NaN or infinite, as
    ``keras.callbacks.TerminateOnNaN``.

    It prints ``Batch k: Invalid loss, terminating training`` and sets
    ``model.stop_training = True`` (``fit`` stops after that batch); with
    ``raise_error=True`` it raises ``RuntimeError`` instead.
    """

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            if self.raise_error:
                raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: "
                                   f"{loss}. Terminating training immediately.")
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file, as ``keras.callbacks.CSVLogger``.

    The columns are ``epoch`` (from 0) and the log keys in sorted order (with the ``val_``
    ones added when the first epoch has none); the file is flushed after each epoch.

    Args:
        filename: the CSV file.
        separator: the column separator.
        append: add to an existing file (its header is written only if the file is empty)
            instead of overwriting it.
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}

        def handle_value(k):
            if isinstance(k, str):
                return k
            if isinstance(k, (list, tuple)) or (isinstance(k, np.ndarray) and k.ndim):
                return f'"[{", ".join(map(str, k))}]"'
            return k

        if self.keys is None:
            self.keys = sorted(logs.keys())
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys.extend([f"val_{k}" for k in self.keys])
        if not self.writer:
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         delimiter=self.sep)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow (tf.keras) has it (see
    # ``minitape/_tf_names.py``).
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
