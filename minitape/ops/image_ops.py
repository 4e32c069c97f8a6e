"""Image ops. ``adjust_contrast`` deliberately has no registered gradient.

The basic guide uses it to show what happens when a float op has no gradient: the tape raises
``LookupError: gradient registry has no entry for: AdjustContrastv2`` rather than silently
returning ``None``. Register one with ``mt.RegisterGradient("AdjustContrastv2")`` to fix it.
"""

from __future__ import annotations

import numpy as np

from ..engine.recording import record
from ..engine.tensor import Tensor
from .constant_op import convert_like
from .math_ops import floating


def adjust_contrast(images, contrast_factor, name=None):
    """``(x - mean) * contrast_factor + mean`` per channel, as ``tf.image.adjust_contrast``.

    ``images``: ``(..., height, width, channels)``; the mean is over height and width.
    Op ``AdjustContrastv2``, which has no registered gradient.
    """
    images = floating(images, "AdjustContrastv2")
    if images.ndim < 3:
        raise ValueError(f"adjust_contrast expects images of shape (..., height, width, "
                         f"channels), got {images.shape}")
    factor = convert_like(contrast_factor, images.dtype, "AdjustContrastv2")
    v = images._value
    mean = np.mean(v, axis=(-3, -2), keepdims=True)
    y = Tensor(((v - mean) * factor._value + mean).astype(v.dtype), name=name)
    record("AdjustContrastv2", (images, factor), (y,))
    return y
