"""Convolution and max pooling on NHWC images: each forward, then its gradient.

A 2-D convolution as one matrix product ("im2col")
    ``sliding_window_view`` gives every ``kh x kw`` window of the (padded) image as a view,
    without copying; taking every ``stride``-th window and flattening each one gives the
    *patch matrix* ``cols`` of shape ``(N * Ho * Wo, kh * kw * C)``: one row per output pixel.
    The filters ``(kh, kw, C, O)`` flattened the same way are a ``(kh * kw * C, O)`` matrix,
    and the convolution is ``cols @ filters``: one matmul, no Python loop over pixels.

Its gradients are convolutions too (TensorFlow's three ops)
    ``Conv2D(x, w)`` is linear in ``x`` and in ``w``. Its gradient with respect to the
    filters is ``cols.T @ dy`` (op ``Conv2DBackpropFilter``); with respect to the input it is
    ``dy @ filters.T`` put back where each patch came from, overlapping patches adding up
    ("col2im", op ``Conv2DBackpropInput``: a loop over the ``kh * kw`` kernel offsets). Each of
    the three ops is linear in its two tensor inputs, and the gradient of each is written
    with the other two, so second derivatives (and forward mode, derived from them) work.

Vectorized Jacobians
    ``dy`` may carry leading batch axes. A convolution treats images, input channels and
    output channels independently, so the batch axes are folded into one of those axes
    (``_fold``), the op runs once, and the result is unfolded (``_unfold``).

Max pooling
    ``MaxPool`` remembers which input element won each window; its gradient sends ``dy`` to
    those places, a scatter-add (``StridedSliceGrad``, the gradient of indexing), whose own
    gradient is a gather: every order works.
"""

from __future__ import annotations

import math as _pymath

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..engine.recording import record
from ..engine.registry import RegisterGradient, register_forward
from ..engine.tensor import Tensor, convert_to_tensor
from . import array_ops
from .math_ops import floating, wanted

# -- arguments ------------------------------------------------------------------------------------


def _pair(value, what, arg):
    """``strides``/``ksize``: an int, ``[n]``, ``[h, w]`` or ``[1, h, w, 1]`` -> ``(h, w)``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        items = [int(value)] * 2
    else:
        try:
            items = list(array_ops.as_shape(value, what))
        except TypeError:
            raise TypeError(f"{what}: {arg} must be an int or a list of 1, 2 or 4 ints, got "
                            f"{value!r:.60}") from None
        if len(items) == 1:
            items = items * 2
        elif len(items) == 4:
            if items[0] != 1 or items[3] != 1:
                raise ValueError(f"{what}: {arg}={items} would move across images or channels; "
                                 "with 4 entries the first and last must be 1 (NHWC), e.g. "
                                 f"[1, {items[1]}, {items[2]}, 1]")
            items = items[1:3]
        elif len(items) != 2:
            raise ValueError(f"{what}: {arg} must have 1, 2 or 4 entries, got {items}")
    if any(n < 1 for n in items):
        raise ValueError(f"{what}: {arg} must be 1 or more, got {value!r}")
    return tuple(items)


def _padding(padding, what):
    if not isinstance(padding, str) or padding.upper() not in ("VALID", "SAME"):
        raise ValueError(f"{what}: padding must be \"VALID\" (no padding: the output shrinks) or "
                         f"\"SAME\" (pad with zeros so that output size = ceil(input / stride)), "
                         f"got {padding!r}")
    return padding.upper()


def _geometry(size, k, s, padding, what):
    """Output length and ``(before, after)`` padding of one spatial axis, as TensorFlow."""
    if padding == "VALID":
        if size < k:
            raise ValueError(f"{what}: a window of {k} does not fit in an input of {size} with "
                             "padding \"VALID\"; use a smaller window or padding \"SAME\"")
        return (size - k) // s + 1, (0, 0)
    out = -(-size // s)  # ceil(size / s)
    total = max((out - 1) * s + k - size, 0)
    return out, (total // 2, total - total // 2)


def _layout(in_shape, window, strides, padding, what):
    """``(Ho, Wo)`` and the paddings ``((top, bottom), (left, right))`` of an NHWC input."""
    ho, pad_h = _geometry(in_shape[1], window[0], strides[0], padding, what)
    wo, pad_w = _geometry(in_shape[2], window[1], strides[1], padding, what)
    return (ho, wo), (pad_h, pad_w)


def _rank4(t, what, arg, layout):
    if t.ndim != 4:
        raise ValueError(f"{what}: {arg} must have rank 4 {layout}, got shape {t.shape}")


def _check_format(data_format, dilations, what):
    if data_format != "NHWC":
        raise ValueError(f"{what}: only data_format=\"NHWC\" (batch, height, width, channels) is "
                         f"supported, got {data_format!r}; move the channels last with "
                         "mt.transpose(x, [0, 2, 3, 1])")
    if dilations is not None and _pair(dilations, what, "dilations") != (1, 1):
        raise ValueError(f"{what}: dilations other than 1 are not supported, got {dilations!r}")


# -- im2col and col2im (NumPy) --------------------------------------------------------------------


def _windows(x, window, strides, pads, fill=0.0):
    """Every window of the padded ``x``, strided: a view of shape ``(N, Ho, Wo, C, kh, kw)``."""
    (top, bottom), (left, right) = pads
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    view = sliding_window_view(x, window, axis=(1, 2))
    return view[:, ::strides[0], ::strides[1]]


def _im2col(x, window, strides, pads):
    """The patch matrix ``(N * Ho * Wo, kh * kw * C)``: one flattened window per row."""
    w = _windows(x, window, strides, pads)
    n, ho, wo, c, kh, kw = w.shape
    return w.transpose(0, 1, 2, 4, 5, 3).reshape(n * ho * wo, kh * kw * c)


def _col2im(cols, in_shape, out_hw, window, strides, pads):
    """The adjoint of ``_im2col``: add each patch row back where it came from."""
    n, h, w, c = in_shape
    (ho, wo), (kh, kw), (sh, sw) = out_hw, window, strides
    (top, bottom), (left, right) = pads
    patches = cols.reshape(n, ho, wo, kh, kw, c)
    padded = np.zeros((n, h + top + bottom, w + left + right, c), cols.dtype)
    for i in range(kh):  # a loop over the kernel's offsets, not over pixels
        for j in range(kw):
            at_rows = slice(i, i + sh * (ho - 1) + 1, sh)
            at_cols = slice(j, j + sw * (wo - 1) + 1, sw)
            padded[:, at_rows, at_cols] += patches[:, :, :, i, j]
    return padded[:, top:top + h, left:left + w]


# -- folding the batch axes of a vectorized Jacobian into an independent axis ---------------------


def _fold(t, nb, axis):
    """Merge the ``nb`` leading batch axes of ``t`` into its axis ``axis`` (counted after the
    batch axes), batch outermost; returns the folded Tensor and the batch shape."""
    if not nb:
        return t, ()
    batch, rest = t.shape[:nb], t.shape[nb:]
    b = _pymath.prod(batch)
    t = array_ops.reshape(t, (b,) + rest)
    if axis:
        t = array_ops.transpose(t, list(range(1, axis + 1)) + [0] +
                                list(range(axis + 1, len(rest) + 1)))
    return array_ops.reshape(t, rest[:axis] + (b * rest[axis],) + rest[axis + 1:]), batch


def _unfold(t, batch, axis):
    """The inverse of ``_fold``: split axis ``axis`` into (batch, size), batch axes first."""
    if not batch:
        return t
    b, shape = _pymath.prod(batch), t.shape
    size = shape[axis] // b
    t = array_ops.reshape(t, shape[:axis] + (b, size) + shape[axis + 1:])
    if axis:
        t = array_ops.transpose(t, [axis] + [i for i in range(t.ndim) if i != axis])
    return array_ops.reshape(t, batch + shape[:axis] + (size,) + shape[axis + 1:])


# -- Conv2D ---------------------------------------------------------------------------------------


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,  # noqa: A002
           name=None):
    """2-D convolution (op ``Conv2D``), as ``tf.nn.conv2d`` (strictly, cross-correlation).

    ``out[n, i, j, o] = sum over (di, dj, c) of x[n, i*sh + di, j*sw + dj, c] * w[di, dj, c, o]``
    with ``x`` the input padded as ``padding`` says. Computed as im2col and one matmul (see
    the module docstring).

    Args:
        input: ``(batch, height, width, in_channels)`` floating Tensor (NHWC).
        filters: ``(kh, kw, in_channels, out_channels)`` Tensor of the same dtype (HWIO).
        strides: an int, ``[sh, sw]`` or ``[1, sh, sw, 1]``.
        padding: ``"VALID"`` (no padding; output ``(H - kh) // sh + 1``) or ``"SAME"``
            (zeros around, more after than before when odd; output ``ceil(H / sh)``).
        data_format, dilations: only ``"NHWC"`` and 1 are supported.

    Returns:
        ``(batch, Ho, Wo, out_channels)``, the input's dtype.

    Raises:
        ValueError: a rank other than 4, channels that differ, a bad ``padding`` string or
            stride, a window larger than a ``"VALID"`` input.
        TypeError: non-floating input, or input and filters of different dtypes.

    >>> import minitape as mt
    >>> x = mt.reshape(mt.range(0.0, 16.0), [1, 4, 4, 1])
    >>> w = mt.ones([2, 2, 1, 1])
    >>> mt.reshape(mt.nn.conv2d(x, w, strides=2, padding="VALID"), [2, 2]).numpy()
    array([[10., 18.],
           [42., 50.]], dtype=float32)
    """
    what = "conv2d"
    # An array or list next to a Tensor takes the Tensor's dtype, as TensorFlow converts it
    # (Géron's chapter 14: float64 NumPy filters on float32 images).
    if isinstance(input, Tensor) and not isinstance(filters, Tensor):
        filters = convert_to_tensor(filters, dtype=input.dtype, what=what)
    elif isinstance(filters, Tensor) and not isinstance(input, Tensor):
        input = convert_to_tensor(input, dtype=filters.dtype, what=what)  # noqa: A001
    x = floating(input, what)
    w = floating(filters, what)
    _rank4(x, what, "input", "(batch, height, width, channels)")
    _rank4(w, what, "filters", "(height, width, in_channels, out_channels)")
    if x.dtype != w.dtype:
        raise TypeError(f"conv2d: input is {x.dtype.name} but filters are {w.dtype.name}; use "
                        f"mt.cast(filters, mt.{x.dtype.name})")
    if x.shape[3] != w.shape[2]:
        raise ValueError(f"conv2d: the input has {x.shape[3]} channels (shape {x.shape}) but the "
                         f"filters expect {w.shape[2]} (shape {w.shape}, layout (height, width, "
                         "in_channels, out_channels))")
    _check_format(data_format, dilations, what)
    strides = _pair(strides, what, "strides")
    padding = _padding(padding, what)
    window = w.shape[:2]
    (ho, wo), pads = _layout(x.shape, window, strides, padding, what)
    cols = _im2col(x._value, window, strides, pads)
    value = (cols @ w._value.reshape(-1, w.shape[3])).reshape(x.shape[0], ho, wo, w.shape[3])
    y = Tensor(value, name=name)
    record("Conv2D", (x, w), (y,), attrs={"strides": strides, "padding": padding})
    return y


register_forward("Conv2D", lambda op, x, w: conv2d(x, w, op.get_attr("strides"),
                                                  op.get_attr("padding")))


@RegisterGradient("Conv2D", batched=True)
def _conv2d_grad(op, dy):
    x, w = op.inputs
    strides, padding = op.get_attr("strides"), op.get_attr("padding")
    dx = dw = None
    if wanted(op, 0):  # batch axes folded into the images
        g, batch = _fold(dy, op.batch_ndim, 0)
        sizes = (g.shape[0],) + op.input_shapes[0][1:]
        dx = _unfold(conv2d_backprop_input(sizes, w, g, strides, padding), batch, 0)
    if wanted(op, 1):  # batch axes folded into the output channels
        g, batch = _fold(dy, op.batch_ndim, 3)
        sizes = op.input_shapes[1][:3] + (g.shape[3],)
        dw = _unfold(conv2d_backprop_filter(x, sizes, g, strides, padding), batch, 3)
    return dx, dw


def conv2d_backprop_input(input_sizes, filters, out_backprop, strides, padding, name=None):
    """The gradient of ``conv2d`` with respect to its input (op ``Conv2DBackpropInput``), as
    ``tf.compat.v1.nn.conv2d_backprop_input``: ``out_backprop @ filters.T``, each patch
    added back where it came from (a transposed convolution).

    ``input_sizes`` (the input's shape) is an attribute here, not a Tensor input.
    Shapes: ``filters`` ``(kh, kw, C, O)``, ``out_backprop`` ``(N, Ho, Wo, O)`` -> ``(N, H, W, C)``.
    """
    what = "conv2d_backprop_input"
    w = floating(filters, what)
    dy = floating(out_backprop, what)
    in_shape = array_ops.as_shape(input_sizes, what)
    strides, padding = _pair(strides, what, "strides"), _padding(padding, what)
    (ho, wo), pads = _layout(in_shape, w.shape[:2], strides, padding, what)
    if dy.shape != (in_shape[0], ho, wo, w.shape[3]):
        raise ValueError(f"{what}: out_backprop has shape {dy.shape}, expected "
                         f"{(in_shape[0], ho, wo, w.shape[3])}")
    cols = dy._value.reshape(-1, w.shape[3]) @ w._value.reshape(-1, w.shape[3]).T
    value = _col2im(cols, in_shape, (ho, wo), w.shape[:2], strides, pads)
    dx = Tensor(value, name=name)
    record("Conv2DBackpropInput", (w, dy), (dx,),
           attrs={"input_sizes": in_shape, "strides": strides, "padding": padding})
    return dx


register_forward("Conv2DBackpropInput", lambda op, w, dy: conv2d_backprop_input(
    op.get_attr("input_sizes"), w, dy, op.get_attr("strides"), op.get_attr("padding")))


@RegisterGradient("Conv2DBackpropInput", batched=True)
def _conv2d_backprop_input_grad(op, g):
    # <BI(w, dy), g> = <dy, conv2d(g, w)>: linear in each argument.
    w, dy = op.inputs
    strides, padding = op.get_attr("strides"), op.get_attr("padding")
    dw = d_dy = None
    if wanted(op, 0):  # batch folded into the channels of g
        gf, batch = _fold(g, op.batch_ndim, 3)
        sizes = op.input_shapes[0][:2] + (gf.shape[3], op.input_shapes[0][3])
        dw = _unfold(conv2d_backprop_filter(gf, sizes, dy, strides, padding), batch, 2)
    if wanted(op, 1):  # batch folded into the images of g
        gf, batch = _fold(g, op.batch_ndim, 0)
        d_dy = _unfold(conv2d(gf, w, strides, padding), batch, 0)
    return dw, d_dy


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NHWC", dilations=None, name=None):
    """The transposed convolution, as ``tf.nn.conv2d_transpose``: the gradient of a
    ``conv2d`` with respect to its input, applied to ``input``. TensorFlow computes it with
    that gradient's op, and so does minitape: ``conv2d_backprop_input(output_shape, filters,
    input, ...)`` (op ``Conv2DBackpropInput``, whose own gradients exist).

    Args:
        input: ``(batch, h, w, in_channels)`` floating Tensor (NHWC).
        filters: ``(kh, kw, out_channels, in_channels)``: note the order, that of the
            ``conv2d`` this transposes.
        output_shape: ``(batch, H, W, out_channels)``: the input shape of that ``conv2d``
            (with ``"SAME"``, ``H = h * sh``; with ``"VALID"``, ``H = (h - 1) * sh + kh``
            or up to ``sh - 1`` more).
        strides, padding: those of that ``conv2d``.
        data_format, dilations: only ``"NHWC"`` and 1.

    Raises:
        ValueError: shapes that do not fit: a ``conv2d`` of ``output_shape`` with these
            filters, strides and padding must give ``input``'s shape.

    >>> import minitape as mt
    >>> x = mt.ones([1, 2, 2, 1])
    >>> y = mt.nn.conv2d_transpose(x, mt.ones([2, 2, 1, 1]), [1, 4, 4, 1], strides=2)
    >>> mt.reshape(y, [4, 4]).numpy()[0]
    array([1., 1., 1., 1.], dtype=float32)
    """
    what = "conv2d_transpose"
    _check_format(data_format, dilations, what)
    x = floating(input, what)
    w = floating(filters, what)
    _rank4(x, what, "input", "(batch, height, width, channels)")
    _rank4(w, what, "filters", "(height, width, out_channels, in_channels)")
    shape = array_ops.as_shape(output_shape, what)
    if len(shape) != 4 or x.shape[3] != w.shape[3] or shape[3] != w.shape[2]:
        raise ValueError(f"{what}: input {x.shape}, filters {w.shape} (height, width, "
                         f"out_channels, in_channels) and output_shape {tuple(shape)} do not fit "
                         "together: the filters' last axis is the input's channels, their third "
                         "the output's")
    return conv2d_backprop_input(shape, w, x, strides, padding, name=name)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           name=None):
    """The gradient of ``conv2d`` with respect to its filters (op ``Conv2DBackpropFilter``),
    as ``tf.compat.v1.nn.conv2d_backprop_filter``: ``cols(input).T @ out_backprop``.

    ``filter_sizes`` is an attribute here, not a Tensor input. Shapes: ``input``
    ``(N, H, W, C)``, ``out_backprop`` ``(N, Ho, Wo, O)`` -> ``(kh, kw, C, O)``.
    """
    what = "conv2d_backprop_filter"
    x = floating(input, what)
    dy = floating(out_backprop, what)
    w_shape = array_ops.as_shape(filter_sizes, what)
    strides, padding = _pair(strides, what, "strides"), _padding(padding, what)
    (ho, wo), pads = _layout(x.shape, w_shape[:2], strides, padding, what)
    if dy.shape != (x.shape[0], ho, wo, w_shape[3]) or x.shape[3] != w_shape[2]:
        raise ValueError(f"{what}: shapes input {x.shape}, filter_sizes {w_shape} and "
                         f"out_backprop {dy.shape} do not fit together")
    cols = _im2col(x._value, w_shape[:2], strides, pads)
    value = (cols.T @ dy._value.reshape(-1, w_shape[3])).reshape(w_shape)
    dw = Tensor(value, name=name)
    record("Conv2DBackpropFilter", (x, dy), (dw,),
           attrs={"filter_sizes": w_shape, "strides": strides, "padding": padding})
    return dw


register_forward("Conv2DBackpropFilter", lambda op, x, dy: conv2d_backprop_filter(
    x, op.get_attr("filter_sizes"), dy, op.get_attr("strides"), op.get_attr("padding")))


@RegisterGradient("Conv2DBackpropFilter", batched=True)
def _conv2d_backprop_filter_grad(op, g):
    # <BF(x, dy), g> = <dy, conv2d(x, g)>: linear in each argument.
    x, dy = op.inputs
    strides, padding = op.get_attr("strides"), op.get_attr("padding")
    dx = d_dy = None
    if wanted(op, 0):  # batch folded into the input channels of g
        gf, batch = _fold(g, op.batch_ndim, 2)
        sizes = op.input_shapes[0][:3] + (gf.shape[2],)
        dx = _unfold(conv2d_backprop_input(sizes, gf, dy, strides, padding), batch, 3)
    if wanted(op, 1):  # batch folded into the output channels of g
        gf, batch = _fold(g, op.batch_ndim, 3)
        d_dy = _unfold(conv2d(x, gf, strides, padding), batch, 3)
    return dx, d_dy


# -- MaxPool --------------------------------------------------------------------------------------


def _pool_arguments(input, ksize, strides, padding, data_format, what):
    """A pooling op's checked arguments: ``(x, window, strides, padding, (Ho, Wo), pads)``
    (raises as ``max_pool2d`` and ``avg_pool2d`` say)."""
    x = floating(input, what)
    _rank4(x, what, "input", "(batch, height, width, channels)")
    _check_format(data_format, None, what)
    window = _pair(ksize, what, "ksize")
    strides = _pair(strides, what, "strides")
    padding = _padding(padding, what)
    out_size, pads = _layout(x.shape, window, strides, padding, what)
    return x, window, strides, padding, out_size, pads


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """The maximum of each window (op ``MaxPool``), as ``tf.nn.max_pool2d``.

    Args:
        input: ``(batch, height, width, channels)`` floating Tensor (NHWC).
        ksize, strides: an int, ``[h, w]`` or ``[1, h, w, 1]``.
        padding: ``"VALID"`` or ``"SAME"`` (padding never wins: it counts as ``-inf``).

    Returns:
        ``(batch, Ho, Wo, channels)``, sizes as in ``conv2d``.

    The gradient goes to the element that won each window (the first one on a tie), summed
    where windows overlap; TensorFlow's ``MaxPoolGrad`` does the same.

    Raises:
        ValueError: a rank other than 4, a bad ``padding`` string, ``ksize`` or stride.

    >>> import minitape as mt
    >>> x = mt.reshape(mt.range(0.0, 16.0), [1, 4, 4, 1])
    >>> mt.reshape(mt.nn.max_pool2d(x, ksize=2, strides=2, padding="VALID"), [2, 2]).numpy()
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    what = "max_pool2d"
    x, window, strides, padding, (ho, wo), pads = _pool_arguments(
        input, ksize, strides, padding, data_format, what)
    n, _, _, c = x.shape
    windows = _windows(x._value, window, strides, pads, fill=-np.inf)
    flat = windows.reshape(n, ho, wo, c, window[0] * window[1])
    winner = flat.argmax(axis=-1)
    value = np.take_along_axis(flat, winner[..., None], axis=-1)[..., 0]
    # Where each winner sits in the input: one index array per axis, each (N, Ho, Wo, C).
    rows = np.arange(ho).reshape(1, ho, 1, 1) * strides[0] + winner // window[1] - pads[0][0]
    cols = np.arange(wo).reshape(1, 1, wo, 1) * strides[1] + winner % window[1] - pads[1][0]
    key = (np.arange(n).reshape(n, 1, 1, 1), rows, cols, np.arange(c).reshape(1, 1, 1, c))
    y = Tensor(value, name=name)
    record("MaxPool", (x,), (y,), attrs={"ksize": window, "strides": strides,
                                         "padding": padding, "argmax": key}, keep_inputs=False)
    return y


def max_pool(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """``tf.nn.max_pool`` on NHWC images: ``max_pool2d``, or, with ``ksize`` and ``strides``
    both ``[1, 1, 1, k]`` and ``"VALID"``, the maximum over each group of ``k`` consecutive
    channels ("depthwise" pooling, as TensorFlow on the CPU: Géron's chapter 14), computed as
    a reshape to ``(..., channels // k, k)`` and ``reduce_max``.

    Raises:
        ValueError: a depth window that differs from its stride, does not divide the
            channels, is combined with spatial pooling or with ``"SAME"``; and whatever
            ``max_pool2d`` raises.
    """
    what = "max_pool"
    depth = [list(v) if isinstance(v, (list, tuple)) and len(v) == 4 else None
             for v in (ksize, strides)]
    if depth[0] is None or depth[0][3] == 1:
        return max_pool2d(input, ksize, strides, padding, data_format, name=name)
    x = floating(input, what)
    _rank4(x, what, "input", "(batch, height, width, channels)")
    _check_format(data_format, None, what)
    k = depth[0][3]
    if (depth[0][:3] != [1, 1, 1] or depth[1] != depth[0] or _padding(padding, what) != "VALID"
            or x.shape[3] % k):
        raise ValueError(f"{what}: pooling over channels needs ksize = strides = [1, 1, 1, k] "
                         f"with k dividing the {x.shape[3]} channels and padding \"VALID\" "
                         f"(as TensorFlow), got ksize={ksize}, strides={strides}, "
                         f"padding={padding!r}")
    from .reduction_ops import reduce_max
    grouped = array_ops.reshape(x, x.shape[:3] + (x.shape[3] // k, k))
    return reduce_max(grouped, axis=-1, name=name)


register_forward("MaxPool", lambda op, x: max_pool2d(
    x, op.get_attr("ksize"), op.get_attr("strides"), op.get_attr("padding")))


@RegisterGradient("MaxPool", batched=True)
def _max_pool_grad(op, dy):
    return array_ops.scatter_add(dy, op.get_attr("argmax"), op.input_shapes[0], op.batch_ndim)


# -- AvgPool (chapter 7 of "Dive into Deep Learning": LeNet's pooling) ----------------------------


def _avg_counts(in_shape, window, strides, pads):
    """How many input elements (padding excluded) each window holds: ``(1, Ho, Wo, 1)``."""
    ones = np.ones((1,) + tuple(in_shape[1:3]) + (1,))
    return _windows(ones, window, strides, pads).sum(axis=(-2, -1))


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """The mean of each window (op ``AvgPool``), as ``tf.nn.avg_pool2d``.

    Args:
        input: ``(batch, height, width, channels)`` floating Tensor (NHWC).
        ksize, strides: an int, ``[h, w]`` or ``[1, h, w, 1]``.
        padding: ``"VALID"`` or ``"SAME"``. As TensorFlow, padding is not averaged in: a
            window that hangs over the border is the mean of the elements it covers.

    Returns:
        ``(batch, Ho, Wo, channels)``, sizes as in ``conv2d``.

    ``AvgPool`` is linear; its gradient is ``AvgPoolGrad`` (each ``dy`` divided by its
    window's count and spread over the window, overlaps adding up, as TensorFlow's op of that
    name), whose own gradient is ``AvgPool`` again: every order works.

    Raises:
        ValueError: a rank other than 4, a bad ``padding`` string, ``ksize`` or stride.

    >>> import minitape as mt
    >>> x = mt.reshape(mt.range(0.0, 16.0), [1, 4, 4, 1])
    >>> mt.reshape(mt.nn.avg_pool2d(x, ksize=2, strides=2, padding="VALID"), [2, 2]).numpy()
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    what = "avg_pool2d"
    x, window, strides, padding, _, pads = _pool_arguments(
        input, ksize, strides, padding, data_format, what)
    sums = _windows(x._value, window, strides, pads).sum(axis=(-2, -1))
    value = sums / _avg_counts(x.shape, window, strides, pads)
    y = Tensor(value.astype(x._value.dtype, copy=False), name=name)
    record("AvgPool", (x,), (y,), attrs={"ksize": window, "strides": strides,
                                         "padding": padding}, keep_inputs=False)
    return y


register_forward("AvgPool", lambda op, x: avg_pool2d(
    x, op.get_attr("ksize"), op.get_attr("strides"), op.get_attr("padding")))


@RegisterGradient("AvgPool", batched=True)
def _avg_pool_grad(op, dy):
    g, batch = _fold(dy, op.batch_ndim, 0)  # images are pooled independently
    sizes = (g.shape[0],) + op.input_shapes[0][1:]
    return _unfold(avg_pool_grad(sizes, g, op.get_attr("ksize"), op.get_attr("strides"),
                                 op.get_attr("padding")), batch, 0)


def avg_pool_grad(orig_input_shape, grad, ksize, strides, padding, name=None):
    """The gradient of ``avg_pool2d`` with respect to its input (op ``AvgPoolGrad``, as
    TensorFlow's): each element of ``grad`` ``(N, Ho, Wo, C)``, divided by the number of
    input elements its window averaged, is added to each of them -> ``orig_input_shape``."""
    what = "avg_pool_grad"
    dy = floating(grad, what)
    in_shape = array_ops.as_shape(orig_input_shape, what)
    window = _pair(ksize, what, "ksize")
    strides, padding = _pair(strides, what, "strides"), _padding(padding, what)
    (ho, wo), pads = _layout(in_shape, window, strides, padding, what)
    if len(in_shape) != 4 or dy.shape != (in_shape[0], ho, wo, in_shape[3]):
        raise ValueError(f"{what}: grad has shape {dy.shape}, expected "
                         f"{(in_shape[0], ho, wo) + tuple(in_shape[3:])} for an input of shape "
                         f"{tuple(in_shape)}")
    share = dy._value / _avg_counts(in_shape, window, strides, pads)
    patches = np.broadcast_to(share[:, :, :, None, None, :],
                              (in_shape[0], ho, wo) + window + (in_shape[3],))
    value = _col2im(patches, in_shape, (ho, wo), window, strides, pads)
    dx = Tensor(value.astype(dy._value.dtype, copy=False), name=name)
    record("AvgPoolGrad", (dy,), (dx,), attrs={"orig_input_shape": in_shape, "ksize": window,
                                               "strides": strides, "padding": padding},
           keep_inputs=False)
    return dx


register_forward("AvgPoolGrad", lambda op, dy: avg_pool_grad(
    op.get_attr("orig_input_shape"), dy, op.get_attr("ksize"), op.get_attr("strides"),
    op.get_attr("padding")))


@RegisterGradient("AvgPoolGrad", batched=True)
def _avg_pool_grad_grad(op, g):
    # AvgPoolGrad is the adjoint (transpose) of the linear AvgPool: its gradient is AvgPool.
    gf, batch = _fold(g, op.batch_ndim, 0)
    return _unfold(avg_pool2d(gf, op.get_attr("ksize"), op.get_attr("strides"),
                              op.get_attr("padding")), batch, 0)


# -- DepthwiseConv2dNative ------------------------------------------------------------------------


def _depthwise_args(x, w_shape, strides, padding, what):
    strides, padding = _pair(strides, what, "strides"), _padding(padding, what)
    (ho, wo), pads = _layout(x, w_shape[:2], strides, padding, what)
    return strides, padding, (ho, wo), pads


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=None, name=None):
    """One filter per input channel (op ``DepthwiseConv2dNative``), as
    ``tf.nn.depthwise_conv2d_native``:

    ``out[n, i, j, c * M + m] = sum over (di, dj) of x[n, i*sh + di, j*sw + dj, c] *
    w[di, dj, c, m]``: channel ``c`` is convolved with its own ``M`` filters (the channel
    multiplier) and never mixed with the other channels.

    Args:
        input: ``(batch, height, width, C)`` floating Tensor (NHWC).
        filter: ``(kh, kw, C, M)`` Tensor of the same dtype.
        strides, padding: as ``conv2d`` (``strides`` an int, ``[sh, sw]`` or
            ``[1, sh, sw, 1]``; ``padding`` ``"VALID"`` or ``"SAME"``).
        data_format, dilations: only ``"NHWC"`` and 1.

    Returns:
        ``(batch, Ho, Wo, C * M)``, the input's dtype; ``Ho``, ``Wo`` as ``conv2d``.

    Raises:
        ValueError: a rank other than 4, channels that differ, bad strides or padding.
        TypeError: non-floating input, or input and filter of different dtypes.

    Its gradients are the ops ``DepthwiseConv2dNativeBackpropInput`` and
    ``...BackpropFilter``, each linear in its two inputs, whose own gradients are written with
    the other two (as ``Conv2D``'s): derivatives of every order.

    >>> import minitape as mt
    >>> x = mt.reshape(mt.range(0.0, 8.0), [1, 2, 2, 2])
    >>> w = mt.reshape(mt.constant([1.0, 10.0]), [1, 1, 2, 1])
    >>> mt.nn.depthwise_conv2d(x, w, 1, "VALID").numpy()[0, :, :, 1]
    array([[10., 30.],
           [50., 70.]], dtype=float32)
    """
    what = "depthwise_conv2d"
    if isinstance(input, Tensor) and not isinstance(filter, Tensor):
        filter = convert_to_tensor(filter, dtype=input.dtype, what=what)  # noqa: A001
    elif isinstance(filter, Tensor) and not isinstance(input, Tensor):
        input = convert_to_tensor(input, dtype=filter.dtype, what=what)  # noqa: A001
    x = floating(input, what)
    w = floating(filter, what)
    _rank4(x, what, "input", "(batch, height, width, channels)")
    _rank4(w, what, "filter", "(height, width, in_channels, channel_multiplier)")
    if x.dtype != w.dtype:
        raise TypeError(f"{what}: input is {x.dtype.name} but filter is {w.dtype.name}; use "
                        f"mt.cast(filter, mt.{x.dtype.name})")
    if x.shape[3] != w.shape[2]:
        raise ValueError(f"{what}: the input has {x.shape[3]} channels (shape {x.shape}) but the "
                         f"filter expects {w.shape[2]} (shape {w.shape}, layout (height, width, "
                         "in_channels, channel_multiplier))")
    _check_format(data_format, dilations, what)
    strides, padding, (ho, wo), pads = _depthwise_args(x.shape, w.shape, strides, padding, what)
    windows = _windows(x._value, w.shape[:2], strides, pads)        # (N, Ho, Wo, C, kh, kw)
    value = np.einsum("nhwcij,ijcm->nhwcm", windows, w._value)
    y = Tensor(value.reshape(x.shape[0], ho, wo, -1), name=name)
    record("DepthwiseConv2dNative", (x, w), (y,), attrs={"strides": strides, "padding": padding})
    return y


def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """``tf.nn.depthwise_conv2d``: ``depthwise_conv2d_native`` with ``strides`` of 4 entries
    ``[1, sh, sw, 1]`` (as TensorFlow asks) or the shorter forms. See
    ``depthwise_conv2d_native`` for shapes and errors."""
    return depthwise_conv2d_native(input, filter, strides, padding,
                                   data_format if data_format is not None else "NHWC",
                                   dilations, name)


register_forward("DepthwiseConv2dNative", lambda op, x, w: depthwise_conv2d_native(
    x, w, op.get_attr("strides"), op.get_attr("padding")))


@RegisterGradient("DepthwiseConv2dNative")
def _depthwise_grad(op, dy):
    x, w = op.inputs
    strides, padding = op.get_attr("strides"), op.get_attr("padding")
    dx = dw = None
    if wanted(op, 0):
        dx = depthwise_conv2d_native_backprop_input(x.shape, w, dy, strides, padding)
    if wanted(op, 1):
        dw = depthwise_conv2d_native_backprop_filter(x, w.shape, dy, strides, padding)
    return dx, dw


def depthwise_conv2d_native_backprop_input(input_sizes, filter, out_backprop, strides,  # noqa: A002
                                           padding, data_format="NHWC",
                                           dilations=None, name=None):
    """The gradient of ``depthwise_conv2d_native`` with respect to its input (op
    ``DepthwiseConv2dNativeBackpropInput``, as ``tf.nn.depthwise_conv2d_backprop_input``):
    each channel's ``out_backprop`` times its filters, added back where each window came
    from. Shapes: ``filter`` ``(kh, kw, C, M)``, ``out_backprop`` ``(N, Ho, Wo, C * M)`` ->
    ``input_sizes`` ``(N, H, W, C)`` (an attribute here, not a Tensor input)."""
    what = "depthwise_conv2d_backprop_input"
    _check_format(data_format, dilations, what)
    w = floating(filter, what)
    dy = floating(out_backprop, what)
    in_shape = tuple(array_ops.as_shape(input_sizes, what))
    kh, kw, c, m = w.shape
    strides, padding, (ho, wo), pads = _depthwise_args(in_shape, w.shape, strides, padding, what)
    if dy.shape != (in_shape[0], ho, wo, c * m) or in_shape[3] != c:
        raise ValueError(f"{what}: input_sizes {in_shape}, filter {w.shape} and out_backprop "
                         f"{dy.shape} do not fit together")
    g = dy._value.reshape(in_shape[0], ho, wo, c, m)
    patches = np.einsum("nhwcm,ijcm->nhwijc", g, w._value)
    value = _col2im(patches, in_shape, (ho, wo), (kh, kw), strides, pads)
    dx = Tensor(value, name=name)
    record("DepthwiseConv2dNativeBackpropInput", (w, dy), (dx,),
           attrs={"input_sizes": in_shape, "strides": strides, "padding": padding})
    return dx


register_forward("DepthwiseConv2dNativeBackpropInput",
                 lambda op, w, dy: depthwise_conv2d_native_backprop_input(
                     op.get_attr("input_sizes"), w, dy, op.get_attr("strides"),
                     op.get_attr("padding")))


@RegisterGradient("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input_grad(op, g):
    # <BI(w, dy), g> = <dy, depthwise(g, w)>: linear in each argument.
    w, dy = op.inputs
    strides, padding = op.get_attr("strides"), op.get_attr("padding")
    dw = d_dy = None
    if wanted(op, 0):
        dw = depthwise_conv2d_native_backprop_filter(g, w.shape, dy, strides, padding)
    if wanted(op, 1):
        d_dy = depthwise_conv2d_native(g, w, strides, padding)
    return dw, d_dy


def depthwise_conv2d_native_backprop_filter(input, filter_sizes, out_backprop,  # noqa: A002
                                            strides, padding, data_format="NHWC",
                                           dilations=None, name=None):
    """The gradient of ``depthwise_conv2d_native`` with respect to its filter (op
    ``DepthwiseConv2dNativeBackpropFilter``, as ``tf.nn.depthwise_conv2d_backprop_filter``):
    each channel's windows times its ``out_backprop``, summed over images and positions.
    Shapes: ``input`` ``(N, H, W, C)``, ``out_backprop`` ``(N, Ho, Wo, C * M)`` ->
    ``filter_sizes`` ``(kh, kw, C, M)`` (an attribute here)."""
    what = "depthwise_conv2d_backprop_filter"
    _check_format(data_format, dilations, what)
    x = floating(input, what)
    dy = floating(out_backprop, what)
    w_shape = tuple(array_ops.as_shape(filter_sizes, what))
    kh, kw, c, m = w_shape
    strides, padding, (ho, wo), pads = _depthwise_args(x.shape, w_shape, strides, padding, what)
    if dy.shape != (x.shape[0], ho, wo, c * m) or x.shape[3] != c:
        raise ValueError(f"{what}: input {x.shape}, filter_sizes {w_shape} and out_backprop "
                         f"{dy.shape} do not fit together")
    windows = _windows(x._value, (kh, kw), strides, pads)
    g = dy._value.reshape(x.shape[0], ho, wo, c, m)
    dw = Tensor(np.einsum("nhwcij,nhwcm->ijcm", windows, g), name=name)
    record("DepthwiseConv2dNativeBackpropFilter", (x, dy), (dw,),
           attrs={"filter_sizes": w_shape, "strides": strides, "padding": padding})
    return dw


register_forward("DepthwiseConv2dNativeBackpropFilter",
                 lambda op, x, dy: depthwise_conv2d_native_backprop_filter(
                     x, op.get_attr("filter_sizes"), dy, op.get_attr("strides"),
                     op.get_attr("padding")))


@RegisterGradient("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_backprop_filter_grad(op, g):
    # <BF(x, dy), g> = <dy, depthwise(x, g)>: linear in each argument.
    x, dy = op.inputs
    strides, padding = op.get_attr("strides"), op.get_attr("padding")
    dx = d_dy = None
    if wanted(op, 0):
        dx = depthwise_conv2d_native_backprop_input(x.shape, g, dy, strides, padding)
    if wanted(op, 1):
        d_dy = depthwise_conv2d_native(x, g, strides, padding)
    return dx, d_dy


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     data_format=None, dilations=None, name=None):
    """A depthwise convolution, then a 1x1 convolution mixing the channels, as
    ``tf.nn.separable_conv2d`` (what ``SeparableConv2D`` computes).

    Args:
        input: ``(batch, height, width, C)``.
        depthwise_filter: ``(kh, kw, C, M)``; strides and padding apply to it.
        pointwise_filter: ``(1, 1, C * M, out_channels)``.

    Returns:
        ``(batch, Ho, Wo, out_channels)``.

    Raises:
        ValueError: as ``depthwise_conv2d`` and ``conv2d``; a pointwise filter that is not 1x1.
    """
    what = "separable_conv2d"
    p = floating(pointwise_filter, what)
    if p.ndim != 4 or p.shape[:2] != (1, 1):
        raise ValueError(f"{what}: pointwise_filter must have shape (1, 1, C * M, out_channels), "
                         f"got {p.shape}")
    y = depthwise_conv2d(input, depthwise_filter, strides, padding, data_format, dilations)
    return conv2d(y, p, 1, "VALID", name=name)
