"""Neural-network activations: relu, elu, leaky_relu, softmax, log_softmax. Forward, then gradient.

ReLU and ELU keep only their output for the backward pass, as the basic guide says: the
input is not needed to know where the unit was active.
"""

from __future__ import annotations

import numpy as np

from ..engine.registry import RegisterGradient, register_forward
from ..engine import recording
from ..engine.recording import record
from ..engine.tensor import Tensor, convert_to_tensor
from .constant_op import convert_like
from . import array_ops, math_ops, reduction_ops
from .axes import check_axis
from .math_ops import floating


def relu(features, name=None):
    """``max(x, 0)`` (op ``Relu``); keeps only its output: ``d/dx = 1 where y > 0``."""
    x = floating(features, "Relu")
    # (A Python 0 takes x's dtype: the result is x's dtype, float16 too.)
    y = Tensor(np.maximum(x._value, 0), name=name)
    record("Relu", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Relu", lambda op, x: relu(x))


@RegisterGradient("Relu", batched=True)
def _relu_grad(op, dy):
    (y,) = op.outputs
    return relu_grad(dy, y)


def relu_grad(gradients, features, name=None):
    """ReLU's backward pass as one op (op ``ReluGrad``, as TensorFlow's ``gen_nn_ops.relu_grad``).

    ``gradients * (features > 0)`` in one NumPy expression, where the same rule written with
    ``greater``, ``cast`` and ``multiply`` would make three ops and three passes over the
    array. ``features`` is ReLU's output (or input: both are positive at the same places).
    It has its own gradient, so second derivatives through ReLU still work.
    """
    dy = floating(gradients, "ReluGrad")
    y = floating(features, "ReluGrad")
    dx = Tensor(_relu_grad_values(dy._value, y._value), name=name)
    record("ReluGrad", (dy, y), (dx,), keep_inputs={1})
    return dx


def _relu_grad_values(dy, y):
    # (The bool mask as it is: the multiply casts it to 0.0 and 1.0 in its loop. Casting it
    # first costs the same alone, and in a training step more: one more array to write.)
    return dy * (y > 0)


register_forward("ReluGrad", lambda op, dy, y: relu_grad(dy, y))


@RegisterGradient("ReluGrad", batched=True)
def _relu_grad_grad(op, ddx):
    # ReluGrad is linear in ``gradients``: its gradient is ReluGrad again. With respect to
    # ``features`` it is a step function: zeros (TensorFlow's ``_ReluGradGrad`` gives zeros
    # too, so a second derivative through ReLU is 0, not None).
    y = op.inputs[1]
    dy = math_ops.unbroadcast(relu_grad(ddx, y), op.input_shapes[0], op.batch_ndim) \
        if math_ops.wanted(op, 0) else None
    return dy, _zero_gradient(op, ddx, 1)


def _zero_gradient(op, g, k):
    """Zeros for input ``k`` of ``op`` (with ``g``'s batch axes), or None if it is not
    wanted: the gradient of a step function, as TensorFlow's ``zeros_like(x)``."""
    if not math_ops.wanted(op, k):
        return None
    return Tensor(np.zeros(g._shape[:op.batch_ndim] + op.shapes[k], op.dtypes[k]))


def elu(features, name=None):
    """``x`` if ``x > 0`` else ``exp(x) - 1`` (op ``Elu``); keeps only its output.

    Gradient: 1 where ``y > 0``, else ``y + 1`` (which equals ``exp(x)``).
    """
    x = floating(features, "Elu")
    v = x._value
    y = Tensor(np.where(v > 0, v, np.expm1(np.minimum(v, 0))).astype(x.dtype), name=name)
    record("Elu", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Elu", lambda op, x: elu(x))


@RegisterGradient("Elu", batched=True)
def _elu_grad(op, dy):
    (y,) = op.outputs
    return elu_grad(dy, y)


def elu_grad(gradients, outputs, name=None):
    """ELU's backward pass as one op (op ``EluGrad``, as TensorFlow's ``gen_nn_ops.elu_grad``).

    ``gradients * slope``, where ``outputs`` is ELU's output ``y`` and the slope is 1 where
    ``y > 0``, else ``y + 1`` (which equals ``exp(x)``). Written with ``greater``, ``where``,
    ``ones_like``, ``add`` and ``multiply`` it would be five recorded ops (and five op
    overheads per layer in every backward pass); here the slope is one NumPy expression. It
    has its own gradient, so second derivatives through ELU still work.

    Shapes: ``gradients`` has ``outputs``' shape, or more leading axes (the batch of
    cotangents of a vectorized Jacobian); the result has ``gradients``' shape and dtype.

    Raises:
        TypeError: non-floating operands, or two different dtypes.
    """
    dy = floating(gradients, "EluGrad")
    y = floating(outputs, "EluGrad")
    if dy.dtype != y.dtype:
        raise TypeError(f"EluGrad: gradients is {dy.dtype.name} but outputs is {y.dtype.name}; "
                        f"they must have one dtype (mt.cast one of them)")
    yv = y._value
    slope = np.where(yv > 0, 1, yv + 1).astype(yv.dtype, copy=False)
    dx = Tensor(dy._value * slope, name=name)
    record("EluGrad", (dy, y), (dx,))
    return dx


register_forward("EluGrad", lambda op, dy, y: elu_grad(dy, y))


@RegisterGradient("EluGrad", batched=True)
def _elu_grad_grad(op, ddx):
    # EluGrad is linear in ``gradients``: that side's gradient is EluGrad again. With respect
    # to ``outputs``: ``gradients * (y + 1)`` where y <= 0 has derivative ``gradients`` there,
    # and the constant slope 1 where y > 0 has derivative 0.
    dy, y = op.inputs
    nb = op.batch_ndim
    d_dy = d_y = None
    if math_ops.wanted(op, 0):
        d_dy = math_ops.unbroadcast(elu_grad(ddx, y), op.input_shapes[0], nb)
    if math_ops.wanted(op, 1):
        negative = math_ops.cast(math_ops.less_equal(y, 0), y.dtype)
        d_y = math_ops.unbroadcast(ddx * dy * negative, op.input_shapes[1], nb)
    return d_dy, d_y


def leaky_relu(features, alpha=0.2, name=None):
    """``x`` if ``x > 0`` else ``alpha * x`` (op ``LeakyRelu``), as ``tf.nn.leaky_relu``."""
    x = floating(features, "LeakyRelu")
    v = x._value
    y = Tensor(np.where(v > 0, v, v * x.dtype.type(alpha)), name=name)
    record("LeakyRelu", (x,), (y,), attrs={"alpha": float(alpha)})
    return y


register_forward("LeakyRelu", lambda op, x: leaky_relu(x, op.get_attr("alpha")))


@RegisterGradient("LeakyRelu", batched=True)
def _leaky_relu_grad(op, dy):
    (x,) = op.inputs
    return leaky_relu_grad(dy, x, op.get_attr("alpha"))


def leaky_relu_grad(gradients, features, alpha=0.2, name=None):
    """Leaky ReLU's backward pass as one op (op ``LeakyReluGrad``, as TensorFlow's
    ``gen_nn_ops.leaky_relu_grad``): ``gradients`` where ``features > 0``, else
    ``alpha * gradients``. Linear in ``gradients``; a step function of ``features``, whose
    gradient is zeros, so a second derivative through leaky ReLU is 0 (TensorFlow's too)."""
    dy = floating(gradients, "LeakyReluGrad")
    x = floating(features, "LeakyReluGrad")
    v = dy._value
    dx = Tensor(np.where(x._value > 0, v, v * v.dtype.type(alpha)), name=name)
    record("LeakyReluGrad", (dy, x), (dx,), attrs={"alpha": float(alpha)}, keep_inputs={1})
    return dx


register_forward("LeakyReluGrad", lambda op, dy, x: leaky_relu_grad(dy, x,
                                                                     op.get_attr("alpha")))


@RegisterGradient("LeakyReluGrad", batched=True)
def _leaky_relu_grad_grad(op, ddx):
    x = op.inputs[1]
    dy = math_ops.unbroadcast(leaky_relu_grad(ddx, x, op.get_attr("alpha")),
                              op.input_shapes[0], op.batch_ndim) \
        if math_ops.wanted(op, 0) else None
    return dy, _zero_gradient(op, ddx, 1)


# The public function of each op, for messages ("softmax: axis=1 is out of range ...").
_PUBLIC = {"Softmax": "softmax", "LogSoftmax": "log_softmax",
           "SoftmaxCrossEntropyWithLogits": "softmax_cross_entropy_with_logits",
           "SoftmaxCrossEntropyWithLogitsGrad": "softmax_cross_entropy_with_logits_grad"}


def _axis(axis, ndim, op_type):
    if type(axis) is int and -ndim <= axis < ndim:  # the common case: axis=-1
        return axis % ndim
    return check_axis(axis, ndim, _PUBLIC.get(op_type, op_type))


def _softmax_parts(x, axis):
    """What softmax and log-softmax of the ndarray ``x`` along ``axis`` are made of:
    ``(shifted, e, total)`` with ``shifted = x - max(x)`` (no overflow), ``e = exp(shifted)``
    and ``total`` the sum of ``e`` along ``axis`` (kept as an axis of size 1)."""
    shifted = x - np.maximum.reduce(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return shifted, e, np.add.reduce(e, axis=axis, keepdims=True)


def _softmax_values(x, axis):
    """Softmax of the ndarray ``x`` along ``axis``: ``e / total``."""
    _, e, total = _softmax_parts(x, axis)
    return e / total


def _log_softmax_values(x, axis):
    """Log-softmax of the ndarray ``x`` along ``axis``: ``shifted - log(total)``."""
    shifted, _, total = _softmax_parts(x, axis)
    return shifted - np.log(total)


def _log_softmax_and_residuals(x, axis):
    """``_log_softmax_values(x, axis)``, and the residuals a cross-entropy keeps for its
    gradient (``Operation.residuals``): ``(softmax,)``, the very array
    ``_softmax_values`` gives, at the cost of one division; None when no tape is recording
    (no gradient can be asked for)."""
    shifted, e, total = _softmax_parts(x, axis)
    return shifted - np.log(total), ((e / total,) if recording.tapes_recording else None)


def softmax(logits, axis=-1, name=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (op ``Softmax``); keeps its output.

    Gradient: ``y * (dy - sum(dy * y, axis))``.
    """
    x = floating(logits, "Softmax")
    axis = _axis(axis, x.ndim, "Softmax")
    return _softmax_op(x, axis, _softmax_values(x._value, axis), name)


def _softmax_op(x, axis, value, name=None):
    """Record op ``Softmax`` of ``x`` (checked; ``axis`` non-negative) whose value is
    ``value``: computed here, or kept by a cross-entropy's forward (``Operation.residuals``)."""
    y = Tensor(value, name=name)
    record("Softmax", (x,), (y,), attrs={"axis": axis}, keep_inputs=False, keep_outputs=True)
    return y


register_forward("Softmax", lambda op, x: softmax(x, op.get_attr("axis")))


@RegisterGradient("Softmax", batched=True)
def _softmax_grad(op, dy):
    (y,) = op.outputs
    axis = op.get_attr("axis") + op.batch_ndim
    return y * (dy - reduction_ops.reduce_sum(dy * y, axis=axis, keepdims=True))


def log_softmax(logits, axis=-1, name=None):
    """``x - log(sum(exp(x)))`` along ``axis`` (op ``LogSoftmax``); keeps its output.

    Gradient: ``dy - exp(y) * sum(dy, axis)``.
    """
    x = floating(logits, "LogSoftmax")
    axis = _axis(axis, x.ndim, "LogSoftmax")
    y = Tensor(_log_softmax_values(x._value, axis), name=name)
    record("LogSoftmax", (x,), (y,), attrs={"axis": axis}, keep_inputs=False, keep_outputs=True)
    return y


register_forward("LogSoftmax", lambda op, x: log_softmax(x, op.get_attr("axis")))


@RegisterGradient("LogSoftmax", batched=True)
def _log_softmax_grad(op, dy):
    (y,) = op.outputs
    axis = op.get_attr("axis") + op.batch_ndim
    return dy - math_ops.exp(y) * reduction_ops.reduce_sum(dy, axis=axis, keepdims=True)


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """``-sum(labels * log_softmax(logits), axis)`` as one op, as TensorFlow's function.

    Op ``SoftmaxCrossEntropyWithLogits``. ``labels`` has ``logits``' shape, or one that
    broadcasts to it, as in TensorFlow (each slice along ``axis`` is normally a probability
    distribution, e.g. one-hot); the result has the logits' shape without ``axis``, one
    loss per example. Fusing the two steps is what every framework does:
    the gradient with respect to the logits is simply ``softmax(logits) - labels`` (times the
    incoming ``dy``), one pass instead of the chain rule through log_softmax, multiply and sum.

    Gradients: logits ``(softmax * sum(labels, axis) - labels) * dy`` (the sum is 1 for a
    distribution, which gives TensorFlow's ``softmax - labels``; keeping it makes the rule
    exact for any labels), labels ``-log_softmax(logits) * dy``.
    """
    logits = floating(logits, "SoftmaxCrossEntropyWithLogits")
    labels = convert_like(labels, logits._dtype, "SoftmaxCrossEntropyWithLogits")
    if labels._shape != logits._shape:
        # TensorFlow broadcasts the labels against the logits (one distribution for every
        # example, say): here a recorded BroadcastTo, whose gradient sums back.
        try:
            labels = array_ops.broadcast_to(labels, logits._shape)
        except ValueError:
            raise ValueError(
                f"softmax_cross_entropy_with_logits: labels of shape {labels.shape} do not "
                f"broadcast to the logits' shape {logits.shape}; give labels of the logits' "
                "shape (or one that broadcasts to it)") from None
    axis = _axis(axis, len(logits._shape), "SoftmaxCrossEntropyWithLogits")
    # (``np.add.reduce`` is what ``ndarray.sum`` calls, without its Python wrapper.)
    log_sm, residuals = _log_softmax_and_residuals(logits._value, axis)
    loss = Tensor(-np.add.reduce(labels._value * log_sm, axis=axis), name=name)
    record("SoftmaxCrossEntropyWithLogits", (labels, logits), (loss,), attrs={"axis": axis},
           residuals=residuals)
    return loss


register_forward("SoftmaxCrossEntropyWithLogits", lambda op, labels, logits: (
    softmax_cross_entropy_with_logits(labels, logits, op.get_attr("axis"))))


@RegisterGradient("SoftmaxCrossEntropyWithLogits", batched=True)
def _softmax_cross_entropy_grad(op, dy):
    labels, logits = op.inputs
    axis = op.get_attr("axis")
    d_labels = d_logits = None
    if math_ops.wanted(op, 0):
        e = array_ops.expand_dims(dy, axis + op.batch_ndim)  # dy has one entry per example
        d_labels = -log_softmax(logits, axis=axis) * e
    if math_ops.wanted(op, 1):
        # (the op's own softmax of the logits, which its forward kept: not computed again)
        d_logits = _logits_grad(dy, labels, logits, axis, op.residuals)
    return d_labels, d_logits


def softmax_cross_entropy_with_logits_grad(dy, labels, logits, axis=-1, name=None):
    """The logits gradient of ``softmax_cross_entropy_with_logits`` as one op.

    Op ``SoftmaxCrossEntropyWithLogitsGrad``: ``(softmax(logits) * sum(labels, axis) - labels)
    * dy``, with ``dy`` (one entry per example) broadcast along ``axis``. Written with
    softmax, reduce_sum, expand_dims, multiply and subtract it would be six ops; as ReluGrad,
    this one op computes it in NumPy (``dy`` may carry the leading batch axes of a vectorized
    Jacobian) and has its own gradient, so second derivatives still work. (An op of
    minitape's own: TensorFlow's kernel computes this gradient in the forward pass, as a
    second output of ``SoftmaxCrossEntropyWithLogits``.)

    Shapes: ``labels`` and ``logits`` alike; ``dy`` as the loss (``logits`` without ``axis``),
    possibly with leading batch axes; the result is ``dy``'s batch axes + ``logits.shape``.
    """
    dy = floating(dy, "SoftmaxCrossEntropyWithLogitsGrad")
    labels = floating(labels, "SoftmaxCrossEntropyWithLogitsGrad")
    logits = floating(logits, "SoftmaxCrossEntropyWithLogitsGrad")
    axis = _axis(axis, logits.ndim, "SoftmaxCrossEntropyWithLogitsGrad")
    return _logits_grad(dy, labels, logits, axis, None, name)


def _logits_grad(dy, labels, logits, axis, residuals, name=None):
    """The op ``SoftmaxCrossEntropyWithLogitsGrad`` of checked Tensors (``axis``
    non-negative); ``residuals``, if given, are the ``(softmax,)`` of ``logits`` that the
    cross-entropy's forward kept (``Operation.residuals``): the same array, not computed
    again (``tests/test_fast_paths.py`` checks the two give the same numbers)."""
    d_logits = Tensor(_ce_logits_grad_values(dy._value, labels._value, logits._value, axis,
                                             residuals[0] if residuals else None), name=name)
    record("SoftmaxCrossEntropyWithLogitsGrad", (dy, labels, logits), (d_logits,),
           attrs={"axis": axis})
    return d_logits


def _ce_logits_grad_values(dy, labels, logits, axis, softmax=None):
    """``softmax_cross_entropy_with_logits_grad`` on ndarrays (``axis`` non-negative); the
    logits' ``softmax``, if the forward kept it (``Operation.residuals``), is not computed
    again."""
    if softmax is None:
        softmax = _softmax_values(logits, axis)
    total = np.add.reduce(labels, axis=axis, keepdims=True)
    at = _axis_after_batch(axis, logits.ndim, dy.ndim)
    dy = dy.reshape(dy.shape[:at] + (1,) + dy.shape[at:])
    # ``(softmax * total - labels) * dy``, the last two steps written into the first's new
    # array (the same numbers, without two more arrays); with a vectorized Jacobian's batch
    # axes, ``dy`` makes the result larger: then a new array.
    d_logits = softmax * total
    d_logits -= labels
    if dy.ndim > d_logits.ndim:
        return d_logits * dy
    d_logits *= dy
    return d_logits


register_forward("SoftmaxCrossEntropyWithLogitsGrad", lambda op, dy, labels, logits: (
    softmax_cross_entropy_with_logits_grad(dy, labels, logits, op.get_attr("axis"))))


@RegisterGradient("SoftmaxCrossEntropyWithLogitsGrad")
def _softmax_cross_entropy_grad_grad(op, g):
    # With s = softmax(logits), T = sum(labels, axis) and e = dy broadcast along axis, the op
    # is (s * T - labels) * e. Its vector-Jacobian products for a cotangent g:
    #   dy:     sum(g * (s * T - labels), axis)
    #   labels: e * (sum(g * s, axis) - g)          (T grows by 1 with every label)
    #   logits: T * e * s * (g - sum(g * s, axis))  (softmax's own rule, for g * T * e)
    dy, labels, logits = op.inputs
    axis = op.get_attr("axis")
    at = _axis_after_batch(axis, len(op.input_shapes[2]), len(op.input_shapes[0]))
    s = softmax(logits, axis=axis)
    total = reduction_ops.reduce_sum(labels, axis=axis, keepdims=True)
    e = array_ops.expand_dims(dy, at)
    gs = reduction_ops.reduce_sum(g * s, axis=at, keepdims=True)
    unbroadcast = math_ops.unbroadcast
    d_dy = reduction_ops.reduce_sum(g * (s * total - labels), axis=at) \
        if math_ops.wanted(op, 0) else None
    d_labels = unbroadcast(e * (gs - g), op.input_shapes[1]) if math_ops.wanted(op, 1) else None
    d_logits = unbroadcast(total * e * s * (g - gs), op.input_shapes[2]) \
        if math_ops.wanted(op, 2) else None
    return d_dy, d_labels, d_logits


def _axis_after_batch(axis, logits_ndim, dy_ndim):
    """Where the (non-negative) class ``axis`` of the logits lies in the gradient
    ``dy_batch + logits.shape``: ``dy`` is the loss (logits without ``axis``) after its
    leading batch axes, if any."""
    return axis + dy_ndim - (logits_ndim - 1)


# -- sparse softmax cross-entropy, dropout --------------------------------------------------------


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """``-log_softmax(logits)[..., labels]`` as one op, as TensorFlow's function.

    Op ``SparseSoftmaxCrossEntropyWithLogits``. ``labels`` are class indices (integers, shape
    ``logits.shape[:-1]``, each in ``[0, classes)``), ``logits`` floating ``(..., classes)``;
    the result has ``labels``' shape, one loss per example. The same loss as
    ``softmax_cross_entropy_with_logits`` with one-hot labels, without building them.

    Gradient with respect to the logits: ``(softmax(logits) - one_hot(labels)) * dy``, written
    with recorded ops (so it can be differentiated again); none for the integer labels.

    Raises:
        TypeError: non-integer labels or non-floating logits.
        ValueError: a shape mismatch, or a label outside ``[0, classes)`` (TensorFlow raises
            ``InvalidArgumentError`` on the CPU too).

    >>> import minitape as mt
    >>> loss = mt.nn.sparse_softmax_cross_entropy_with_logits(
    ...     mt.constant([0, 1]), mt.constant([[2.0, 0.0], [0.0, 0.0]]))
    >>> loss.numpy().round(4)
    array([0.1269, 0.6931], dtype=float32)
    """
    what = "SparseSoftmaxCrossEntropyWithLogits"
    logits = floating(logits, what)
    labels = convert_to_tensor(labels, what=f"{what} labels")
    if labels.dtype.kind not in "iu":
        raise TypeError(f"sparse_softmax_cross_entropy_with_logits: labels must be integer class "
                        f"indices, got {labels.dtype.name}; for one-hot or probability labels "
                        "use softmax_cross_entropy_with_logits")
    if logits.ndim < 1 or labels.shape != logits.shape[:-1]:
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels of shape "
                         f"{labels.shape} need logits of shape {labels.shape} + (classes,), got "
                         f"{logits.shape}")
    classes = logits.shape[-1]
    lv = labels._value
    if lv.size and (lv.min() < 0 or lv.max() >= classes):
        bad = lv[(lv < 0) | (lv >= classes)].ravel()[0]
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: received a label value of "
                         f"{bad} which is outside the valid range of [0, {classes})")
    log_sm, residuals = _log_softmax_and_residuals(logits._value, logits.ndim - 1)
    loss = -np.take_along_axis(log_sm, lv[..., None].astype(np.intp), axis=-1)[..., 0]
    y = Tensor(loss, name=name)
    record(what, (labels, logits), (y,), residuals=residuals)
    return y


register_forward("SparseSoftmaxCrossEntropyWithLogits", lambda op, labels, logits: (
    sparse_softmax_cross_entropy_with_logits(labels, logits)))


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits", batched=True)
def _sparse_softmax_cross_entropy_grad(op, dy):
    labels, logits = op.inputs
    hot = Tensor(array_ops._one_hot_mask(labels._value, logits.shape[-1], labels.ndim)
                 .astype(logits.dtype))
    axis = logits.ndim - 1   # (the softmax the forward kept, if it did: not computed again)
    kept = op.residuals
    s = (_softmax_op(logits, axis, kept[0]) if kept else softmax(logits))
    return None, (s - hot) * array_ops.expand_dims(dy, -1)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Inverted dropout, as ``tf.nn.dropout``: each element is zeroed with probability
    ``rate`` and the survivors are scaled by ``1 / (1 - rate)``, so the expected value of
    every element is unchanged (and nothing needs rescaling at test time).

    Recorded as one ``Mul`` by a constant mask of ``0`` and ``1 / (1 - rate)``: the gradient
    flows through the kept elements only, scaled the same way.

    Args:
        x: a floating Tensor.
        rate: the probability of dropping an element, in ``[0, 1)``.
        noise_shape: optional shape of the mask, broadcast against ``x`` (e.g. ``[n, 1]``
            drops whole rows).
        seed: an int for a repeatable mask; else the global generator (``mt.random.set_seed``).

    Raises:
        ValueError: ``rate`` outside ``[0, 1)``, or a ``noise_shape`` that does not broadcast.
        TypeError: a non-floating ``x`` or a ``rate`` that is not a number.

    >>> import minitape as mt
    >>> y = mt.nn.dropout(mt.ones([2, 4]), rate=0.5, seed=1)
    >>> sorted(set(y.numpy().ravel().tolist()))   # dropped, or kept and doubled
    [0.0, 2.0]
    """
    from . import random_ops
    x = floating(x, "dropout")
    if isinstance(rate, Tensor):
        rate = float(rate)
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)):
        raise TypeError(f"dropout: rate must be a number in [0, 1), got {rate!r:.40}")
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"dropout: rate is the probability of dropping an element and must be "
                         f"in [0, 1), got {rate}; rate=0 keeps everything (rate is *not* the "
                         "keep probability)")
    shape = x.shape if noise_shape is None else array_ops.as_shape(noise_shape, "dropout")
    try:
        fits = np.broadcast_shapes(shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"dropout: noise_shape {shape} does not broadcast to the shape "
                         f"{x.shape} of x")
    keep = random_ops._rng(seed).random(shape) >= float(rate)
    mask = Tensor((keep / (1.0 - float(rate))).astype(x.dtype))
    y = math_ops.multiply(x, mask, name=name)
    return y
