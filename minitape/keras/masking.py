"""Keras's masks: which time steps of a padded batch of sequences are real.

As Keras 3 does it:

- a layer that *makes* a mask (``Embedding(mask_zero=True)``: the ids that are not 0;
  ``Masking(mask_value=0.)``: the steps whose features are not all ``mask_value``) attaches
  it to its output Tensor, a bool Tensor ``(batch, timesteps)`` (Keras's ``_keras_mask``;
  here ``get_keras_mask(x)``);
- calling a layer on a Tensor that carries a mask passes it as ``mask=`` when the layer's
  ``call`` takes one (``SimpleRNN``, ``LSTM``, ``GRU``, ``Bidirectional``, ``Attention``...);
- after the call, a layer whose ``supports_masking`` is true attaches
  ``layer.compute_mask(inputs, mask)`` to its outputs (by default the mask it got: ``Dense``,
  ``Dropout``, ``LayerNormalization``, ``Add``...; an RNN with ``return_sequences=True``
  keeps it, one returning only its last output drops it);
- a layer that does not support masking and is given a masked input warns, as Keras 3:
  the mask stops there.

So the mask travels through ``Sequential`` and functional models (and through your own
code) with no more than ``mask_zero=True``. Masks are not differentiated: they are made
with NumPy from the ids or inputs.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from .. import module as _module
from ..engine.tensor import Tensor, convert_to_tensor
from ._keras_mask import _masks, get_keras_mask, set_keras_mask
from .layers import Layer

__all__ = ["Masking", "get_keras_mask", "set_keras_mask"]


def _mask_of(inputs):
    """The mask of ``inputs``: one mask, or a list (one per Tensor of a list), or None."""
    if isinstance(inputs, (list, tuple)):
        masks = [get_keras_mask(x) if isinstance(x, Tensor) else None for x in inputs]
        return masks if any(m is not None for m in masks) else None
    return get_keras_mask(inputs) if isinstance(inputs, Tensor) else None


def _any(mask):
    if isinstance(mask, (list, tuple)):
        return any(m is not None for m in mask)
    return mask is not None


def _takes_mask(layer):
    """Whether the layer's ``call`` (or ``__call__``) has a ``mask`` argument of its own."""
    fn = layer.call if isinstance(layer, Layer) else type(layer).__call__
    try:
        return "mask" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


# The layers of ``mt.layers`` (not ``Layer`` subclasses) that pass a mask on, as Keras 3's
# (their ``supports_masking`` is True there): the mask of their first input, unchanged.
_PASS_MASK_ON = ("Dense", "Dropout", "BatchNormalization", "LayerNormalization", "Activation",
                 "ReLU", "LeakyReLU", "Softmax", "Rescaling", "GaussianNoise", "GaussianDropout",
                 "AlphaDropout")
# The merging layers: the mask of the output is where all the inputs' masks are True.
_MERGE = ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate")


def supports_masking(layer):
    """Whether ``layer`` passes a mask on (Keras's ``layer.supports_masking``)."""
    own = getattr(layer, "supports_masking", None)
    if own is not None:
        return bool(own)
    return type(layer).__name__ in _PASS_MASK_ON + _MERGE or hasattr(layer, "compute_mask")


def compute_mask(layer, inputs, mask):
    """The mask of ``layer``'s output: its ``compute_mask(inputs, mask)``; for a merging
    layer the logical AND of its inputs' masks; else ``mask`` itself."""
    if hasattr(layer, "compute_mask"):
        return layer.compute_mask(inputs, mask)
    if type(layer).__name__ in _MERGE and isinstance(mask, (list, tuple)):
        known = [np.asarray(m) for m in mask if m is not None]
        if not known or any(m.shape != known[0].shape for m in known):
            return None   # (Concatenate along the time axis: not in minitape)
        return convert_to_tensor(np.logical_and.reduce(known))
    return mask


def _attach(outputs, masks):
    if isinstance(outputs, (list, tuple)):
        masks = masks if isinstance(masks, (list, tuple)) else [masks] + [None] * len(outputs)
        for y, m in zip(outputs, masks):
            _attach(y, m)
    elif isinstance(outputs, Tensor) and masks is not None and get_keras_mask(outputs) is None:
        set_keras_mask(outputs, masks)


def _may_make_a_mask(layer):
    """``Embedding(mask_zero=True)``, or a ``Layer`` with its own ``compute_mask`` (``Masking``;
    Chollet's ``PositionalEmbedding``, whose ``compute_mask`` returns ``inputs != 0``)."""
    if getattr(layer, "mask_zero", False):
        return True
    return isinstance(layer, Layer) and type(layer).compute_mask is not Layer.compute_mask


def masked_call(layer, call, args, kwargs):
    """Run ``call(layer, *args, **kwargs)`` (a layer's ``__call__``) the way Keras 3 treats
    masks (see the module): ``minitape.module`` calls this for every layer call."""
    if not _masks and kwargs.get("mask") is None and not _may_make_a_mask(layer):
        return call(layer, *args, **kwargs)   # (no mask anywhere: the usual call)
    if callable(getattr(layer, "fit", None)):   # (a Model: its layers pass the masks on)
        return call(layer, *args, **kwargs)
    inputs = args[0]
    incoming = _mask_of(inputs)
    if kwargs.get("mask") is None and incoming is not None and _takes_mask(layer):
        kwargs = dict(kwargs, mask=incoming)
    outputs = call(layer, *args, **kwargs)
    previous = kwargs.get("mask") if kwargs.get("mask") is not None else incoming
    if supports_masking(layer):
        _attach(outputs, compute_mask(layer, inputs, previous))
    elif _any(previous):
        warnings.warn(
            f"Layer '{layer.name}' (of type {type(layer).__name__}) was passed an input with "
            "a mask attached to it. However, this layer does not support masking and will "
            "therefore destroy the mask information. Downstream layers will not see the mask.",
            stacklevel=3)
    return outputs


_module.masked_call = masked_call


class Masking(Layer):
    """Mask the time steps whose features all equal ``mask_value``, as
    ``keras.layers.Masking``.

    ``(batch, timesteps, features)`` in; the output is ``inputs`` with those steps set to 0,
    and carries the mask ``any(inputs != mask_value, axis=-1)`` ``(batch, timesteps)`` for the
    layers after it (an RNN then skips those steps).

    >>> import minitape as mt
    >>> x = mt.constant([[[1.0], [0.0], [2.0]]])
    >>> y = mt.keras.layers.Masking(mask_value=0.0)(x)
    >>> mt.keras.masking.get_keras_mask(y).numpy()
    array([[ True, False,  True]])
    """

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def compute_mask(self, inputs, mask=None):
        """``any(inputs != mask_value, axis=-1)``, a bool Tensor."""
        x = convert_to_tensor(inputs, what=f"Masking '{self.name}'")
        return convert_to_tensor(np.any(x.numpy() != self.mask_value, axis=-1))

    def call(self, inputs):
        from ..ops import math_ops
        x = math_ops.floating(inputs, f"Masking '{self.name}'")
        x = x if x.dtype == self.dtype else math_ops.cast(x, self.dtype)
        keep = self.compute_mask(x).numpy()[..., None]
        return x * math_ops.cast(convert_to_tensor(keep), x.dtype)
