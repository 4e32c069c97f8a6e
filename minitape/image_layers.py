"""The layers of Chollet's computer-vision chapters ("Deep Learning with Python", 2nd ed.,
chapters 8 and 9) that ``mt.layers`` re-exports: depthwise separable convolutions
(``SeparableConv2D``, ``DepthwiseConv2D``) and the data augmentation layers
(``RandomFlip``, ``RandomRotation``, ``RandomZoom``).

The augmentation layers are active only while training (``training=True``, or inside a
``model.fit`` / ``model(x, training=True)`` call), as Keras; otherwise they return their
input. Rotation and zoom are Keras 3's affine transform: each output pixel ``(x, y)``
(column, row) reads the input at ``(a0 x + a1 y + a2, b0 x + b1 y + b2)``, bilinearly
interpolated from the four pixels around it, and points outside the image are filled as
``fill_mode`` says. The interpolation is a weighted sum of gathered pixels
(``mt.gather``), so gradients flow back to the images.
"""

from __future__ import annotations

import numpy as np

from .layers import (LayerMixin, _activation, _constrain, _default_name, _images,
                     _initial_kernel, _keras_padding, _last_dim, _layer_dtype, _layer_options,
                     _pair, _check_initializer, training_mode)
from .module import Module
from .engine.tensor import Variable, convert_to_tensor
from .ops import array_ops, conv_ops, math_ops, random_ops

__all__ = ["SeparableConv2D", "DepthwiseConv2D", "RandomFlip", "RandomRotation", "RandomZoom"]


def _glorot_limit(shape):
    """Keras's Glorot-uniform limit for a conv kernel ``(kh, kw, in, out)``."""
    receptive = shape[0] * shape[1]
    return np.sqrt(6.0 / (receptive * (shape[2] + shape[3])))


def _positive(value, what, arg):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what}: {arg} must be a positive int, got {value!r}")
    return int(value)


class DepthwiseConv2D(LayerMixin, Module):
    """``activation(depthwise_conv2d(x, kernel) + bias)``, as ``keras.layers.DepthwiseConv2D``:
    each input channel convolved with its own ``depth_multiplier`` filters, channels never
    mixed.

    Builds on the first call: ``kernel`` ``(kh, kw, in_channels, depth_multiplier)``
    (Glorot-uniform), ``bias`` ``(in_channels * depth_multiplier,)`` (zeros).

    Raises:
        ValueError: bad sizes or padding at construction; an input that is not rank 4 or whose
            channels differ from those the layer was built for.

    >>> import minitape as mt
    >>> layer = mt.keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same")
    >>> layer(mt.zeros([1, 5, 5, 3])).shape, layer.kernel.shape
    ((1, 5, 5, 6), (3, 3, 3, 2))
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros", dtype=None,
                 name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("depthwise_conv2d"))
        what = "DepthwiseConv2D"
        _layer_options(self, kwargs, what, weights=("depthwise", "bias"))
        self._weight_regularizers = {("kernel" if k == "depthwise" else k): v
                                     for k, v in self._weight_regularizers.items()}
        self._weight_constraints["kernel"] = self._weight_constraints.pop("depthwise")
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{what}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.kernel_size = _pair(kernel_size, what, "kernel_size")
        self.strides = _pair(strides, what, "strides")
        self.padding = _keras_padding(padding, what)
        self.depth_multiplier = _positive(depth_multiplier, what, "depth_multiplier")
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = _check_initializer(depthwise_initializer, what,
                                                        "depthwise_initializer")
        self.bias_initializer = _check_initializer(bias_initializer, what, "bias_initializer")
        self.dtype = _layer_dtype(dtype)
        self.kernel = self.bias = None

    @property
    def built(self):
        return self.kernel is not None

    def build(self, in_channels):
        """Make ``kernel`` and ``bias`` for ``in_channels`` channels (or an input shape)."""
        c = _last_dim(in_channels, "DepthwiseConv2D")
        shape = self.kernel_size + (c, self.depth_multiplier)
        who = f"DepthwiseConv2D '{self.name}'"
        self.kernel = _constrain(self, "kernel", Variable(_initial_kernel(
            self.depthwise_initializer, shape, self.dtype, _glorot_limit(shape), who,
            "depthwise_initializer"), name="kernel"))
        self.kernel.path = f"{self.name}/kernel"
        if self.use_bias:
            self.bias = _constrain(self, "bias", Variable(_initial_kernel(
                self.bias_initializer, (c * self.depth_multiplier,), self.dtype, None, who,
                "bias_initializer"), name="bias"))
            self.bias.path = f"{self.name}/bias"

    def __call__(self, inputs):
        who = f"DepthwiseConv2D '{self.name}'"
        x = _images(inputs, self.dtype, who)
        if self.kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.kernel.shape[2]:
            raise ValueError(f"{who} was built for {self.kernel.shape[2]} input channels, got "
                             f"inputs of shape {x.shape}")
        y = conv_ops.depthwise_conv2d(x, self.kernel, self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


class SeparableConv2D(LayerMixin, Module):
    """A depthwise separable convolution, as ``keras.layers.SeparableConv2D``: a
    ``depthwise_conv2d`` (each channel filtered alone, ``strides`` and ``padding`` apply
    here), then a 1x1 ``conv2d`` mixing the channels, then the bias and the activation
    (``mt.nn.separable_conv2d``). Chollet's chapter 9 builds his mini-Xception with it.

    Builds on the first call: ``depthwise_kernel`` ``(kh, kw, in, depth_multiplier)``,
    ``pointwise_kernel`` ``(1, 1, in * depth_multiplier, filters)`` (both Glorot-uniform
    with Keras's fans) and ``bias`` ``(filters,)``: ``kh*kw*in*dm + in*dm*filters + filters``
    parameters, against ``kh*kw*in*filters + filters`` for a ``Conv2D``.

    Args:
        filters, kernel_size, strides, padding, activation, use_bias: as ``Conv2D``.
        depth_multiplier: filters per input channel in the depthwise step (1 by default).
        depthwise_initializer, pointwise_initializer, bias_initializer: as Keras.
        **kwargs: ``depthwise_regularizer``, ``pointwise_regularizer``,
            ``bias_regularizer``, their ``_constraint`` forms, ``activity_regularizer``,
            ``input_shape``.

    Raises:
        ValueError: bad sizes or padding at construction; an input that is not rank 4 or whose
            channels differ from those the layer was built for.

    >>> import minitape as mt
    >>> layer = mt.keras.layers.SeparableConv2D(8, 3, padding="same", use_bias=False)
    >>> layer(mt.zeros([1, 6, 6, 4])).shape
    (1, 6, 6, 8)
    >>> [v.shape for v in layer.trainable_variables]
    [(3, 3, 4, 1), (1, 1, 4, 8)]
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", dtype=None, name=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name("separable_conv2d"))
        what = "SeparableConv2D"
        _layer_options(self, kwargs, what, weights=("depthwise", "pointwise", "bias"))
        rename = {"depthwise": "depthwise_kernel", "pointwise": "pointwise_kernel"}
        self._weight_regularizers = {rename.get(k, k): v
                                     for k, v in self._weight_regularizers.items()}
        self._weight_constraints = {rename.get(k, k): v
                                    for k, v in self._weight_constraints.items()}
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{what}: only data_format='channels_last' is supported, got "
                             f"{data_format!r}")
        self.filters = _positive(filters, what, "filters")
        self.kernel_size = _pair(kernel_size, what, "kernel_size")
        self.strides = _pair(strides, what, "strides")
        self.padding = _keras_padding(padding, what)
        self.depth_multiplier = _positive(depth_multiplier, what, "depth_multiplier")
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = _check_initializer(depthwise_initializer, what,
                                                        "depthwise_initializer")
        self.pointwise_initializer = _check_initializer(pointwise_initializer, what,
                                                        "pointwise_initializer")
        self.bias_initializer = _check_initializer(bias_initializer, what, "bias_initializer")
        self.dtype = _layer_dtype(dtype)
        self.depthwise_kernel = self.pointwise_kernel = self.bias = None

    @property
    def built(self):
        return self.depthwise_kernel is not None

    def build(self, in_channels):
        """Make the two kernels and the bias for ``in_channels`` channels (or an input shape)."""
        c = _last_dim(in_channels, "SeparableConv2D")
        who = f"SeparableConv2D '{self.name}'"
        dm = self.depth_multiplier
        shapes = {"depthwise_kernel": self.kernel_size + (c, dm),
                  "pointwise_kernel": (1, 1, c * dm, self.filters)}
        inits = {"depthwise_kernel": ("depthwise_initializer", self.depthwise_initializer),
                 "pointwise_kernel": ("pointwise_initializer", self.pointwise_initializer)}
        for name, shape in shapes.items():
            arg, init = inits[name]
            var = Variable(_initial_kernel(init, shape, self.dtype, _glorot_limit(shape), who,
                                           arg), name=name)
            var.path = f"{self.name}/{name}"
            setattr(self, name, _constrain(self, name, var))
        if self.use_bias:
            self.bias = _constrain(self, "bias", Variable(_initial_kernel(
                self.bias_initializer, (self.filters,), self.dtype, None, who,
                "bias_initializer"), name="bias"))
            self.bias.path = f"{self.name}/bias"

    def __call__(self, inputs):
        who = f"SeparableConv2D '{self.name}'"
        x = _images(inputs, self.dtype, who)
        if self.depthwise_kernel is None:
            self.build(x.shape[3])
        elif x.shape[3] != self.depthwise_kernel.shape[2]:
            raise ValueError(f"{who} was built for {self.depthwise_kernel.shape[2]} input "
                             f"channels, got inputs of shape {x.shape}")
        y = conv_ops.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel,
                                      self.strides, self.padding)
        if self.use_bias:
            y = y + self.bias
        y = self.activation(y) if self.activation is not None else y
        return self._activity_loss(y) if self.activity_regularizer is not None else y


# -- data augmentation ----------------------------------------------------------------------------

_FILL_MODES = ("reflect", "wrap", "constant", "nearest", "mirror")


def _fix_index(i, n, fill_mode):
    """Integer pixel indices ``i`` outside ``[0, n)`` mapped back inside, as Keras's
    ``map_coordinates`` pads: ``reflect`` (``dcba|abcd|dcba``, the edge repeated),
    ``mirror`` (``dcb|abcd|cba``), ``wrap`` (``abcd|abcd``), ``nearest`` (``aaaa|abcd|dddd``);
    ``constant`` clips here and its mask (returned second) zeroes those taps."""
    inside = (i >= 0) & (i < n)
    if fill_mode == "reflect":
        r = np.mod(i, 2 * n)
        return np.where(r >= n, 2 * n - 1 - r, r), inside
    if fill_mode == "mirror":
        if n == 1:
            return np.zeros_like(i), inside
        r = np.mod(i, 2 * n - 2)
        return np.where(r >= n, 2 * n - 2 - r, r), inside
    if fill_mode == "wrap":
        return np.mod(i, n), inside
    return np.clip(i, 0, n - 1), inside


def affine_transform(images, transforms, interpolation="bilinear", fill_mode="reflect",
                     fill_value=0.0):
    """Resample NHWC ``images`` by one affine map each, as ``keras.ops.image.affine_transform``.

    Args:
        images: ``(N, H, W, C)`` floating Tensor.
        transforms: ``(N, 8)`` or ``(8,)`` array ``[a0, a1, a2, b0, b1, b2, 0, 0]``: output
            pixel ``(x, y)`` (column, row) reads the input at ``(a0 x + a1 y + a2,
            b0 x + b1 y + b2)``. Projective terms other than 0 are refused.
        interpolation: ``"bilinear"`` (the four pixels around, weighted) or ``"nearest"``.
        fill_mode: where a point falls outside: ``"reflect"``, ``"wrap"``, ``"constant"``
            (``fill_value``), ``"nearest"`` or ``"mirror"``.

    Returns:
        a Tensor of ``images``' shape and dtype; linear in ``images`` (differentiable).

    Raises:
        ValueError: a bad shape, interpolation or fill mode.
    """
    x = math_ops.floating(images, "affine_transform")
    if x.ndim != 4:
        raise ValueError(f"affine_transform: images must be (batch, height, width, channels), "
                         f"got shape {x.shape}")
    n, h, w, c = x.shape
    t = np.asarray(transforms, dtype=np.float64).reshape(-1, 8)
    if t.shape[0] not in (1, n) or np.any(t[:, 6:] != 0):
        raise ValueError(f"affine_transform: transforms must be (8,) or ({n}, 8) affine maps "
                         f"(last two entries 0), got shape {np.shape(transforms)}")
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"affine_transform: interpolation must be 'bilinear' or 'nearest', got "
                         f"{interpolation!r}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"affine_transform: fill_mode must be one of {_FILL_MODES}, got "
                         f"{fill_mode!r}")
    t = np.broadcast_to(t, (n, 8))
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    xin = t[:, 0, None, None] * cols + t[:, 1, None, None] * rows + t[:, 2, None, None]
    yin = t[:, 3, None, None] * cols + t[:, 4, None, None] * rows + t[:, 5, None, None]
    if interpolation == "nearest":
        taps = [(np.floor(yin + 0.5), np.floor(xin + 0.5), np.ones_like(yin))]
    else:
        y0, x0 = np.floor(yin), np.floor(xin)
        taps = [(y0 + dy, x0 + dx, (1 - np.abs(yin - y0 - dy)) * (1 - np.abs(xin - x0 - dx)))
                for dy in (0, 1) for dx in (0, 1)]
    flat = array_ops.reshape(x, [n * h * w, c])
    image_base = (np.arange(n) * h * w)[:, None, None]
    out, filled = None, np.zeros((n, h, w), np.float64)
    for yi, xi, weight in taps:
        yi, y_in = _fix_index(yi.astype(np.int64), h, fill_mode)
        xi, x_in = _fix_index(xi.astype(np.int64), w, fill_mode)
        if fill_mode == "constant":
            filled += weight * ~(y_in & x_in)
            weight = weight * (y_in & x_in)
        gathered = array_ops.gather(flat, (image_base + yi * w + xi).reshape(-1))
        term = gathered * weight.reshape(-1, 1).astype(x.dtype)
        out = term if out is None else out + term
    if fill_mode == "constant" and fill_value:
        out = out + (fill_value * filled).reshape(-1, 1).astype(x.dtype)
    return array_ops.reshape(out, [n, h, w, c])


class _Augmentation(LayerMixin, Module):
    """An image augmentation layer: random while training, the identity otherwise. Images
    are cast to the layer's ``dtype`` (``mt.keras.backend.floatx()`` unless given), as Keras.

    Draws come from the layer's own generator when ``seed`` is given (a run is repeatable,
    each call draws anew), else from minitape's (``mt.random.set_seed``)."""

    def __init__(self, seed=None, name=None, base="augmentation", dtype=None, **kwargs):
        super().__init__(name=name if name is not None else _default_name(base))
        _layer_options(self, kwargs, type(self).__name__)
        self.dtype = _layer_dtype(dtype)
        self.seed = seed
        self._seeds = None if seed is None else np.random.default_rng(seed)

    def _uniform(self, shape, low, high):
        if self._seeds is not None:
            return self._seeds.uniform(low, high, shape)
        return np.asarray(random_ops.uniform(shape, low, high, dtype="float64"))

    def __call__(self, inputs, training=None):
        who = f"{type(self).__name__} '{self.name}'"
        x = convert_to_tensor(inputs, what=who)
        if x.dtype != self.dtype:   # as Keras: images come out in the layer's (float) dtype
            x = math_ops.cast(x, self.dtype)
        if x.ndim not in (3, 4):
            raise ValueError(f"{who} expects images (batch, height, width, channels) or one "
                             f"image (height, width, channels), got shape {x.shape}")
        if not training_mode(training):
            return x
        if x.ndim == 3:
            return array_ops.reshape(self._augment(array_ops.reshape(x, (1,) + x.shape)),
                                     x.shape)
        return self._augment(x)


def _factor_range(factor, what, arg):
    """Keras's ``factor``: a number ``f`` (the range ``[-|f|, |f|]``) or a pair ``(low, high)``."""
    if isinstance(factor, (tuple, list)) and len(factor) == 2:
        low, high = sorted(float(f) for f in factor)
    elif isinstance(factor, (int, float, np.integer, np.floating)) \
            and not isinstance(factor, bool):
        low, high = -abs(float(factor)), abs(float(factor))
    else:
        raise ValueError(f"{what}: {arg} must be a number or a pair (low, high), got "
                         f"{factor!r}")
    return low, high


def _check_fill(fill_mode, interpolation, what):
    if fill_mode not in _FILL_MODES:
        raise NotImplementedError(f"{what}: unknown fill_mode {fill_mode!r}; expected one of "
                                  f"{_FILL_MODES}")
    if interpolation not in ("bilinear", "nearest"):
        raise NotImplementedError(f"{what}: unknown interpolation {interpolation!r}; expected "
                                  "'bilinear' or 'nearest'")


class RandomFlip(_Augmentation):
    """Flip each image with probability 1/2 while training, as ``keras.layers.RandomFlip``.

    ``mode``: ``"horizontal"`` (left-right: the width axis reversed), ``"vertical"``
    (top-bottom) or ``"horizontal_and_vertical"`` (the default; one draw per image flips
    both, as Keras 3). Inference (``training=False``, the default outside ``fit``) returns
    the images unchanged. ``(batch, h, w, c)`` or one ``(h, w, c)`` image; no Variables.

    Raises:
        ValueError: another ``mode``; an input that is not rank 3 or 4.
    """

    def __init__(self, mode="horizontal_and_vertical", seed=None, name=None, **kwargs):
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip: mode must be 'horizontal', 'vertical' or "
                             f"'horizontal_and_vertical', got {mode!r}")
        super().__init__(seed=seed, name=name, base="random_flip", **kwargs)
        self.mode = mode

    def _augment(self, x):
        flips = self._uniform((x.shape[0],), 0.0, 1.0) <= 0.5
        flipped = x
        if self.mode != "vertical":
            flipped = array_ops.reverse(flipped, [2])
        if self.mode != "horizontal":
            flipped = array_ops.reverse(flipped, [1])
        mask = flips.reshape(-1, 1, 1, 1)
        return array_ops.where(np.broadcast_to(mask, x.shape), flipped, x)


class RandomRotation(_Augmentation):
    """Rotate each image by a random angle while training, as ``keras.layers.RandomRotation``.

    ``factor`` is a fraction of a full turn: ``0.1`` draws angles uniformly in
    ``[-0.1 * 2 pi, 0.1 * 2 pi]`` (``(low, high)`` for another range). The image turns about
    its center (counter-clockwise for a positive angle as displayed, rows going down);
    points that come from outside are filled as ``fill_mode`` says (``"reflect"`` by
    default), values interpolated bilinearly (see ``affine_transform``).

    Raises:
        ValueError: a bad ``factor``. NotImplementedError: an unknown fill mode or
            interpolation (as Keras).
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, name=None, **kwargs):
        _check_fill(fill_mode, interpolation, "RandomRotation")
        super().__init__(seed=seed, name=name, base="random_rotation", **kwargs)
        self.factor = factor
        self.lower, self.upper = _factor_range(factor, "RandomRotation", "factor")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _augment(self, x):
        n, h, w = x.shape[:3]
        angles = self._uniform((n,), self.lower * 2 * np.pi, self.upper * 2 * np.pi)
        return affine_transform(x, rotation_transforms(angles, h, w), self.interpolation,
                                self.fill_mode, self.fill_value)


def rotation_transforms(angles, height, width):
    """The ``(N, 8)`` maps that turn images by ``angles`` (radians) about their centers, as
    Keras's ``RandomRotation`` (output pixel -> input point)."""
    a = np.asarray(angles, np.float64)
    cos, sin = np.cos(a), np.sin(a)
    x_offset = ((width - 1) - (cos * (width - 1) - sin * (height - 1))) / 2.0
    y_offset = ((height - 1) - (sin * (width - 1) + cos * (height - 1))) / 2.0
    zeros = np.zeros_like(a)
    return np.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


class RandomZoom(_Augmentation):
    """Zoom each image in or out by a random factor while training, as
    ``keras.layers.RandomZoom``.

    ``height_factor=0.2`` draws a zoom ``z`` uniformly in ``[1 - 0.2, 1 + 0.2]`` per image;
    the output pixel ``(x, y)`` reads the input at ``((W - 1) / 2 + z (x - (W - 1) / 2), ...)``
    about the center: ``z > 1`` zooms out (more of the image shows, edges filled as
    ``fill_mode`` says), ``z < 1`` zooms in. ``width_factor=None`` (the default) uses the same
    zoom for both axes (the aspect ratio kept). ``(low, high)`` pairs give other ranges.

    Raises:
        ValueError: a bad factor. NotImplementedError: an unknown fill mode or interpolation.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, name=None, **kwargs):
        _check_fill(fill_mode, interpolation, "RandomZoom")
        super().__init__(seed=seed, name=name, base="random_zoom", **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self.height_lower, self.height_upper = _factor_range(height_factor, "RandomZoom",
                                                             "height_factor")
        if width_factor is not None:
            self.width_lower, self.width_upper = _factor_range(width_factor, "RandomZoom",
                                                               "width_factor")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _augment(self, x):
        n, h, w = x.shape[:3]
        zy = self._uniform((n,), 1.0 + self.height_lower, 1.0 + self.height_upper)
        zx = zy if self.width_factor is None else self._uniform(
            (n,), 1.0 + self.width_lower, 1.0 + self.width_upper)
        return affine_transform(x, zoom_transforms(zx, zy, h, w), self.interpolation,
                                self.fill_mode, self.fill_value)


def zoom_transforms(zoom_x, zoom_y, height, width):
    """The ``(N, 8)`` maps of Keras's ``RandomZoom``: scale by ``zoom_x``, ``zoom_y`` about
    the image's center (output pixel -> input point)."""
    zx, zy = np.asarray(zoom_x, np.float64), np.asarray(zoom_y, np.float64)
    zeros = np.zeros_like(zx)
    return np.stack([zx, zeros, (width - 1) / 2.0 * (1 - zx), zeros, zy,
                     (height - 1) / 2.0 * (1 - zy), zeros, zeros], axis=1)
