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


# -- resizing (as tf.image.resize, TensorFlow 2's half-pixel centers) -----------------------

class ResizeMethod:
    """The names of ``mt.image.resize``'s ``method``, as ``tf.image.ResizeMethod`` (plain
    strings, so ``method="nearest"`` and ``method=ResizeMethod.NEAREST_NEIGHBOR`` agree).
    minitape computes ``BILINEAR`` and ``NEAREST_NEIGHBOR``; the others raise
    ``NotImplementedError`` when used."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _bilinear_matrix(n_in, n_out):
    """The ``(n_out, n_in)`` matrix of bilinear interpolation along one axis, TensorFlow 2's
    rule (``half_pixel_centers=True``): output pixel ``i`` samples the input at
    ``x = (i + 0.5) * n_in / n_out - 0.5``, weights ``1 - (x - floor(x))`` on ``floor(x)`` and
    ``x - floor(x)`` on ``floor(x) + 1``, indices clamped to ``[0, n_in - 1]``."""
    x = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    lower = np.floor(x)
    frac = x - lower
    lo = np.clip(lower, 0, n_in - 1).astype(int)
    hi = np.clip(lower + 1, 0, n_in - 1).astype(int)
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), lo), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), hi), frac)
    return m.astype(np.float32)


def _nearest_indices(n_in, n_out):
    """The input index each output pixel copies, TensorFlow 2's nearest-neighbour rule
    (``half_pixel_centers=True``): ``floor((i + 0.5) * n_in / n_out)``, at most ``n_in - 1``."""
    return np.minimum(np.floor((np.arange(n_out) + 0.5) * (n_in / n_out)).astype(np.int64),
                      n_in - 1)


def _as_images(images, what):
    """``images`` as a 4-D Tensor ``(batch, height, width, channels)``, and whether it was 3-D."""
    from .constant_op import convert_to_tensor
    images = convert_to_tensor(images, what=what)
    if images.ndim not in (3, 4):
        raise ValueError(f"{what}: images must have shape (height, width, channels) or (batch, "
                         f"height, width, channels), got shape {images.shape}")
    if images.dtype.kind not in "iuf":
        raise TypeError(f"{what}: images must be numbers (integers or floats), got "
                        f"{images.dtype}")
    if images.ndim == 3:
        from .array_ops import expand_dims
        return expand_dims(images, 0), True
    return images, False


def _size_pair(size, what):
    from .array_ops import as_dims
    dims = as_dims(size, f"{what} size")
    if len(dims) != 2 or min(dims) <= 0:
        raise ValueError(f"{what}: size must be [new_height, new_width], two sizes of 1 or "
                         f"more, got {list(dims)}")
    return int(dims[0]), int(dims[1])


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Resize images to ``size = [new_height, new_width]``, as ``tf.image.resize``.

    ``images``: ``(batch, height, width, channels)`` or ``(height, width, channels)``; the
    result has the same rank. As TensorFlow 2 (pixel centers at half-integers):

    - ``"bilinear"`` (the default): each output pixel is the bilinear interpolation of the
      input at ``((i + 0.5) * height / new_height - 0.5, ...)``, clamped at the borders. The
      result is float32 whatever the input's dtype (``uint8`` pixels included), as
      TensorFlow's ``ResizeBilinear``. It is a linear map along each axis, computed as two
      ``Einsum`` ops with the interpolation matrices, so its gradient is the transposed map.
    - ``"nearest"``: each output pixel copies the input pixel ``floor((i + 0.5) * height /
      new_height)``; the dtype is kept. Two ``GatherV2`` ops (the gradient scatters back).

    ``preserve_aspect_ratio=True`` shrinks ``size`` to the largest size of the image's aspect
    ratio that fits (each side rounded), as TensorFlow. ``antialias`` changes nothing when
    enlarging (as TensorFlow); shrinking with it is not implemented.

    Raises:
        ValueError: images not 3-D or 4-D, a size that is not two positive sizes.
        NotImplementedError: another method (``"bicubic"``, ``"area"``, ``"lanczos3"``...),
            or ``antialias=True`` while shrinking; the message names what minitape has.

    >>> import minitape as mt
    >>> image = mt.reshape(mt.eye(5, dtype=mt.int32), (1, 5, 5, 1))
    >>> mt.image.resize(image, [3, 5])[0, ..., 0].numpy().round(4)   # TensorFlow's example
    array([[0.6667, 0.3333, 0.    , 0.    , 0.    ],
           [0.    , 0.    , 1.    , 0.    , 0.    ],
           [0.    , 0.    , 0.    , 0.3333, 0.6667]], dtype=float32)
    """
    from .array_ops import einsum, gather, identity, squeeze
    from .math_ops import cast
    what = "resize"
    images, single = _as_images(images, what)
    new_h, new_w = _size_pair(size, what)
    _, h, w, _ = images.shape
    if preserve_aspect_ratio:
        scale = min(new_h / h, new_w / w)
        new_h, new_w = max(int(round(h * scale)), 1), max(int(round(w * scale)), 1)
    method = str(method).lower()
    if (new_h, new_w) == (h, w) and method in (ResizeMethod.BILINEAR,
                                               ResizeMethod.NEAREST_NEIGHBOR):
        # (Both rules sample pixel i at i itself: the image, unchanged but for bilinear's
        # float32. d2l's loader "resizes" every 28 x 28 batch to 28 x 28.)
        keep = method == ResizeMethod.NEAREST_NEIGHBOR or images.dtype == np.float32
        y = identity(images, name=name) if keep else cast(images, np.float32, name=name)
    elif method == ResizeMethod.BILINEAR:
        if antialias and (new_h < h or new_w < w):
            raise NotImplementedError(
                "resize: antialias=True when shrinking is not implemented in minitape; use "
                "antialias=False (plain bilinear sampling)")
        x = images if images.dtype == np.float32 else cast(images, np.float32)
        x = einsum("ih,bhwc->biwc", _bilinear_matrix(h, new_h), x)
        y = einsum("jw,biwc->bijc", _bilinear_matrix(w, new_w), x, name=name)
    elif method == ResizeMethod.NEAREST_NEIGHBOR:
        x = gather(images, _nearest_indices(h, new_h), axis=1)
        y = gather(x, _nearest_indices(w, new_w), axis=2, name=name)
    else:
        raise NotImplementedError(
            f"resize: method {method!r} is not implemented in minitape; it has 'bilinear' "
            "(the default) and 'nearest'")
    return squeeze(y, [0]) if single else y


def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR,
                    antialias=False):
    """Resize keeping the aspect ratio, then pad with zeros to ``(target_height,
    target_width)``, as ``tf.image.resize_with_pad``.

    The image is resized by ``ratio = max(width / target_width, height / target_height)`` to
    ``(floor(height / ratio), floor(width / ratio))`` with ``mt.image.resize`` (so the result
    is float32 for ``"bilinear"``, even at the same size), then centered: ``floor((target -
    resized) / 2)`` rows (columns) of zeros before, the rest after. "Dive into Deep
    Learning" resizes Fashion-MNIST with it: ``tf.image.resize_with_pad(X, 32, 32)``.

    Raises:
        ValueError: images not 3-D or 4-D, a target size below 1.

    >>> import minitape as mt
    >>> mt.image.resize_with_pad(mt.ones((2, 4, 1)), 4, 4)[..., 0].numpy()
    array([[0., 0., 0., 0.],
           [1., 1., 1., 1.],
           [1., 1., 1., 1.],
           [0., 0., 0., 0.]], dtype=float32)
    """
    from .array_ops import pad, squeeze
    what = "resize_with_pad"
    images, single = _as_images(image, what)
    target_h, target_w = _size_pair([target_height, target_width], what)
    _, h, w, _ = images.shape
    # (float32 arithmetic, as TensorFlow computes these sizes)
    ratio32 = max(np.float32(w) / np.float32(target_w), np.float32(h) / np.float32(target_h))
    resized_h = int(np.floor(np.float32(h) / ratio32))
    resized_w = int(np.floor(np.float32(w) / ratio32))
    top = max(0, int(np.floor((np.float32(target_h) - np.float32(h) / ratio32) / 2)))
    left = max(0, int(np.floor((np.float32(target_w) - np.float32(w) / ratio32) / 2)))
    resized = resize(images, [resized_h, resized_w], method=method, antialias=antialias)
    padded = pad(resized, [[0, 0], [top, target_h - resized_h - top],
                           [left, target_w - resized_w - left], [0, 0]])
    return squeeze(padded, [0]) if single else padded
