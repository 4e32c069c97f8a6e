"""Where Keras's masks are kept: ``set_keras_mask(x, mask)`` attaches a bool Tensor to the
Tensor ``x`` (Keras's ``x._keras_mask``), ``get_keras_mask(x)`` reads it back. A module of
its own, importing nothing of minitape's, so that the losses, metrics and layers can all
read masks (``mt.keras.masking`` explains what they are for)."""

from __future__ import annotations

import weakref

# The masks attached to Tensors: ``id(tensor) -> (weak reference to it, mask)``; an entry
# goes when its Tensor does.
_masks = {}


def set_keras_mask(x, mask):
    """Attach ``mask`` (a bool Tensor, or None to remove it) to the Tensor ``x``, as
    ``keras.backend.set_keras_mask``."""
    key = id(x)
    if mask is None:
        _masks.pop(key, None)
        return
    _masks[key] = (weakref.ref(x, lambda _, key=key: _masks.pop(key, None)), mask)


def get_keras_mask(x):
    """The mask attached to ``x`` (a bool Tensor ``(batch, timesteps)``), or None, as
    ``keras.backend.get_keras_mask`` (``x._keras_mask`` in Keras)."""
    entry = _masks.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]
