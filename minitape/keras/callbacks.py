"""``mt.keras.callbacks.Callback``: hooks into ``Model.fit``, as ``keras.callbacks.Callback``.

Subclass it and override the methods you need; ``fit(..., callbacks=[cb])`` calls them::

    on_train_begin(logs)
        on_epoch_begin(epoch, logs)
            on_train_batch_begin(batch, logs)     # for each batch
            on_train_batch_end(batch, logs)       # logs: {"loss": the batch's loss}
        on_epoch_end(epoch, logs)                 # logs: the epoch's means (and val_ ones)
    on_train_end(logs)

``self.model`` is the model being trained (``set_model``), ``self.params`` fit's
``{"epochs": ..., "steps": ..., "verbose": ...}``. As in Keras, ``logs`` hold plain floats.
``model.last_train_step`` is ``(tape, loss)`` of the latest batch: ``mt.viz.TrainingView``'s
callback draws that tape.
"""

from __future__ import annotations

__all__ = ["Callback"]


class Callback:
    """Base class of ``fit``'s callbacks; every hook does nothing unless overridden."""

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

    def on_train_batch_begin(self, batch, logs=None):
        pass

    def on_train_batch_end(self, batch, logs=None):
        pass
