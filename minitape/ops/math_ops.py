"""Elementwise and binary math ops, matmul and casts: each forward, then its gradient.

Every op follows the same three steps: convert the arguments, compute the result with NumPy,
``record`` the op (saying what its gradient needs). Right below it, ``@RegisterGradient``
gives the gradient as a function of ``(op, dy)`` written with minitape ops, so that an outer
tape can differentiate it again.

``dy`` may carry ``op.batch_ndim`` extra leading axes (a vectorized Jacobian). Elementwise
rules such as ``dy * cos(x)`` broadcast over them by themselves; binary ops sum broadcast
axes away with ``unbroadcast``, the one place where broadcasting is undone.
"""

from __future__ import annotations

import builtins
import math as _pymath

import numpy as np

from .. import dtypes, errors
from ..engine import recording
from ..engine.registry import RegisterGradient, no_gradient, register_forward
from ..engine.recording import record
from ..engine.tensor import Tensor, Variable, convert_to_tensor
from .constant_op import convert_like
from . import array_ops, reduction_ops
from .axes import check_axes

# -- helpers ------------------------------------------------------------------------------------


def binary_operands(x, y, op_type):
    """Convert the two operands of a binary op; a Python value takes the Tensor's dtype."""
    # The hot path first (every ``a * b`` and ``a * 0.5`` comes here): two plain Tensors of
    # the very same dtype need no conversion, a Python float next to a floating Tensor
    # becomes a Tensor of that dtype, and a Variable of that dtype is read (``h @ w``,
    # ``z + b`` in a layer). Everything else takes the general path below.
    if type(x) is Tensor:
        dtype = x._dtype
        if type(y) is Tensor and y._dtype is dtype:
            return x, y
        if type(y) is float and dtype.kind == "f":
            return x, Tensor(dtype.type(y))
        if type(y) is Variable and y._dtype is dtype:
            return x, y._read()
    if isinstance(x, Tensor):
        x = convert_to_tensor(x)
        if isinstance(y, Tensor):
            y = convert_to_tensor(y)
            if x._dtype != y._dtype:
                raise errors.DTypeMismatchError(
                    None, None,
                    f"{dtypes.tf_mismatch_message(op_type, x._dtype, y._dtype)}. "
                    f"{op_type}: cannot combine a {x.dtype.name} Tensor with a {y.dtype.name} "
                    f"Tensor; minitape never casts silently: use mt.cast(y, mt.{x.dtype.name}) "
                    "(or cast x)"
                )
            return x, y
        return x, convert_like(y, x._dtype, op_type)
    if isinstance(y, Tensor):
        y = convert_to_tensor(y)
        return convert_like(x, y._dtype, op_type), y
    x = convert_to_tensor(x, what=op_type)
    return x, convert_like(y, x._dtype, op_type)


def elementwise_operands(x, y, op_type):
    """``binary_operands``, then check that the two shapes broadcast (TensorFlow's rule)."""
    # The hot paths first: two plain Tensors of one dtype and one shape need nothing done,
    # and a Python float next to a floating Tensor becomes a 0-d Tensor (which broadcasts).
    if type(x) is Tensor:
        if type(y) is Tensor:
            if x._dtype is y._dtype and x._shape == y._shape:
                return x, y
        elif type(y) is float and x._dtype.kind == "f":
            # A NumPy scalar next to a NumPy scalar, a 0-d array next to an array: NumPy
            # combines an array with a 0-d array about twice as fast as with a scalar.
            if x._shape:
                return x, Tensor(np.array(y, x._dtype))
            return x, Tensor(x._dtype.type(y))
    x, y = binary_operands(x, y, op_type)
    xs, ys = x._shape, y._shape
    # (A bias next to a batch, ``(64, 256) + (256,)``, needs no general check.)
    if xs != ys and xs and ys and xs[len(xs) - len(ys):] != ys:
        try:
            np.broadcast_shapes(xs, ys)
        except ValueError:
            raise ValueError(
                f"{op_type}: shapes {xs} and {ys} cannot be broadcast together (aligned from the "
                "right, each pair of axes must be equal or 1); reshape one operand first "
                "(mt.reshape, mt.expand_dims)") from None
    return x, y


def _no_bool(x, op_type):
    """Arithmetic on bool Tensors is refused, as in TensorFlow (NumPy would compute a logical
    or, or raise its own TypeError for ``-``)."""
    raise TypeError(f"{op_type}: arithmetic needs numeric Tensors (float or int), got x of dtype "
                    f"bool; cast it first, e.g. mt.cast(x, mt.float32)")


def numeric(x, op_type):
    """Convert ``x`` and check it is numeric (float, int or complex): no arithmetic on bools."""
    if type(x) is Tensor and x._dtype.kind in "fiu":
        return x  # the hot path: nothing to convert or check
    x = convert_to_tensor(x, what=op_type)
    if x._dtype.kind not in "fiuc":
        _no_bool(x, op_type)
    return x


def floating(x, op_type):
    """Convert ``x`` and check it is floating (sin, exp, ... are defined for floats only)."""
    if type(x) is Tensor and x._dtype.kind == "f":
        return x  # the hot path: nothing to convert or check
    x = convert_to_tensor(x, what=op_type)
    if x._dtype.kind != "f":
        raise TypeError(f"{op_type} expects a floating Tensor (e.g. float32), got "
                        f"{x.dtype.name}; use mt.cast(x, mt.float32)")
    return x


def unbroadcast(g, shape, batch_ndim=0):
    """Sum ``g`` over the axes that broadcasting added, so it gets ``batch + shape``.

    ``g`` has shape ``batch + broadcast(shape, other)``; the leading ``batch_ndim`` axes are
    kept. This is the one place in minitape where broadcasting is undone (``_summed_axes``
    says which axes).
    """
    g_shape = g._shape
    if g_shape == shape and not batch_ndim:  # the hot path: nothing was broadcast
        return g
    if g_shape[batch_ndim:] == shape:
        return g
    lead = len(g_shape) - batch_ndim - len(shape)
    if lead > 0 and g_shape[batch_ndim + lead:] == shape:   # a bias: only leading axes added
        return reduction_ops.reduce_sum(
            g, axis=batch_ndim if lead == 1 else tuple(range(batch_ndim, batch_ndim + lead)))
    _, axes = _summed_axes(g_shape, shape, batch_ndim)   # (and axes of size 1)
    if axes:
        g = reduction_ops.reduce_sum(g, axis=axes, keepdims=True)
    return array_ops.reshape(g, g.shape[:batch_ndim] + tuple(shape))


def unbroadcast_pair(op, gx, gy):
    """A binary elementwise op's two gradients (each a Tensor, or None), each summed back to
    its input's shape with ``unbroadcast``; two inputs of the output's shape, with no batch
    axes (the usual case), need nothing done."""
    shape_x, shape_y, shape_z = op.shapes
    if shape_x == shape_y == shape_z and not op.batch_ndim:
        return gx, gy
    nb = op.batch_ndim
    return (None if gx is None else unbroadcast(gx, shape_x, nb),
            None if gy is None else unbroadcast(gy, shape_y, nb))


def _summed_axes(g_shape, shape, batch_ndim):
    """``(lead, axes)``: how many leading axes broadcasting put in front of ``shape`` in
    ``g_shape`` (after ``batch_ndim`` batch axes), and every axis to sum: those, then each
    axis where ``shape`` has size 1 and ``g_shape`` does not."""
    lead = len(g_shape) - batch_ndim - len(shape)
    axes = list(range(batch_ndim, batch_ndim + lead))
    axes += [batch_ndim + lead + i for i, n in enumerate(shape)
             if n == 1 and g_shape[batch_ndim + lead + i] != 1]
    return lead, axes


def wanted(op, k):
    """Does the backward pass need the gradient of input ``k``? (``op.skip_input_indices``)

    False for a constant such as the 0.5 of ``x * 0.5``: the gradient function returns None
    for it and skips the work. Outside a backward pass every gradient is wanted.
    """
    skip = op.skip_input_indices
    return skip is None or k not in skip


# An op's result: ``_out(value, name)`` is simply ``Tensor(value, name)``. NumPy returns
# scalars for 0-d results; a Tensor keeps them as they are (cheaper than wrapping in arrays).
# (An alias rather than a function: one call less on every op.)
_out = Tensor


# -- add, subtract, multiply, divide --------------------------------------------------------------


def add(x, y, name=None):
    """``x + y`` elementwise with broadcasting (op ``AddV2``), as ``tf.add``."""
    x, y = elementwise_operands(x, y, "AddV2")
    if x._dtype.kind == "b":
        _no_bool(x, "AddV2")
    z = _out(x._value + y._value, name)
    record("AddV2", (x, y), (z,), keep_inputs=False)
    return z


register_forward("AddV2", lambda op, x, y: add(x, y))


@RegisterGradient("AddV2", batched=True)
def _add_grad(op, dy):
    return unbroadcast_pair(op, dy if wanted(op, 0) else None, dy if wanted(op, 1) else None)


def add_n(inputs, name=None):
    """The elementwise sum of a list of Tensors of one shape and dtype (op ``AddN``), as
    ``tf.math.add_n``: no broadcasting. Gradient: the upstream gradient, to every input.

    Raises:
        ValueError: ``inputs`` is not a non-empty list or tuple.
        mt.errors.InvalidArgumentError (a ``ValueError``): shapes that differ, as TensorFlow
            ("Inputs to AddN must have the same shape"); add them with ``+`` to broadcast.
        TypeError: dtypes that differ (minitape never casts silently).

    >>> import minitape as mt
    >>> mt.add_n([mt.constant([1.0, 2.0]), mt.constant([3.0, 4.0]), mt.constant([5.0, 6.0])])
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([ 9., 12.], dtype=float32)>
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"add_n expects a non-empty list of Tensors, got {inputs!r:.60}; e.g. "
                         "mt.add_n([main_loss] + model.losses)")
    first = convert_to_tensor(inputs[0], what="AddN")
    xs = [first] + [convert_like(x, first._dtype, "AddN") for x in inputs[1:]]
    for k, x in enumerate(xs):   # (``convert_like`` refused another dtype)
        if x._shape != first._shape:
            raise errors.InvalidArgumentError(None, "AddN", (
                f"Inputs to AddN must have the same shape: input {k} has shape {x.shape}, "
                f"input 0 {first.shape}; use + to add with broadcasting"))
    if first._dtype.kind == "b":
        _no_bool(first, "AddN")
    total = xs[0]._value
    for x in xs[1:]:
        total = total + x._value
    z = _out(total if len(xs) > 1 else total.copy(), name)
    record("AddN", tuple(xs), (z,), keep_inputs=False)
    return z


register_forward("AddN", lambda op, *xs: add_n(list(xs)))


@RegisterGradient("AddN", batched=True)
def _add_n_grad(op, dy):
    return [dy if wanted(op, k) else None for k in range(len(op.input_ids))]


def subtract(x, y, name=None):
    """``x - y`` elementwise with broadcasting (op ``Sub``)."""
    x, y = elementwise_operands(x, y, "Sub")
    if x._dtype.kind == "b":
        _no_bool(x, "Sub")
    z = _out(x._value - y._value, name)
    record("Sub", (x, y), (z,), keep_inputs=False)
    return z


register_forward("Sub", lambda op, x, y: subtract(x, y))


@RegisterGradient("Sub", batched=True)
def _sub_grad(op, dy):
    return unbroadcast_pair(op, dy if wanted(op, 0) else None, -dy if wanted(op, 1) else None)


def multiply(x, y, name=None):
    """``x * y`` elementwise with broadcasting (op ``Mul``)."""
    x, y = elementwise_operands(x, y, "Mul")
    if x._dtype.kind == "b":
        _no_bool(x, "Mul")
    z = _out(x._value * y._value, name)
    record("Mul", (x, y), (z,))
    return z


register_forward("Mul", lambda op, x, y: multiply(x, y))


@RegisterGradient("Mul", batched=True)
def _mul_grad(op, dy):
    x, y = op.inputs
    if x is y and not op.skip_input_indices:   # ``x * x``: both are ``dy * x``, computed once
        g = dy * x
        return g, g
    return unbroadcast_pair(op, dy * y if wanted(op, 0) else None,
                            dy * x if wanted(op, 1) else None)


def divide(x, y, name=None):
    """``x / y`` (op ``RealDiv``), as TensorFlow's truediv.

    Integer operands are cast to a float first, by TensorFlow's table: 8- and 16-bit integers
    to float32 (so ``uint8`` pixels ``/ 255`` are float32, as "Dive into Deep Learning"'s
    Fashion-MNIST loader expects), 32- and 64-bit integers to float64.
    """
    x, y = elementwise_operands(x, y, "RealDiv")
    if x._dtype.kind == "b":
        _no_bool(x, "RealDiv")
    if x._dtype.kind not in "fc":
        to = np.float32 if x._dtype.itemsize <= 2 else np.float64
        x, y = cast(x, to), cast(y, to)
    z = _out(x._value / y._value, name)
    record("RealDiv", (x, y), (z,))
    return z


register_forward("RealDiv", lambda op, x, y: divide(x, y))


@RegisterGradient("RealDiv", batched=True)
def _div_grad(op, dy):
    x, y = op.inputs
    nb = op.batch_ndim
    # (As TensorFlow's _RealDivGrad: dy * ((-x / y) / y), which keeps a finite number where
    # y * y would overflow or underflow.)
    return (unbroadcast(dy / y, op.input_shapes[0], nb) if wanted(op, 0) else None,
            unbroadcast(dy * (-x / y / y), op.input_shapes[1], nb) if wanted(op, 1) else None)


def divide_no_nan(x, y, name=None):
    """``x / y``, but 0 where ``y`` is 0 (op ``DivNoNan``), as ``tf.math.divide_no_nan``.

    The usual fix for a NaN from a division by a quantity that can be 0 (a norm, a count):
    the result and both gradients are 0 where ``y == 0``, whatever ``x`` is. Floating
    dtypes only; broadcasting as ``divide``.

    Gradients (TensorFlow's ``_DivNoNanGrad``): ``dx = divide_no_nan(dy, y)``,
    ``dy_ = dy * divide_no_nan(divide_no_nan(-x, y), y)``.

    Raises:
        TypeError: a non-floating operand. ValueError: shapes that do not broadcast.

    >>> import minitape as mt
    >>> mt.math.divide_no_nan(mt.constant([3.0, 1.0]), mt.constant([2.0, 0.0])).numpy()
    array([1.5, 0. ], dtype=float32)
    """
    x, y = elementwise_operands(x, y, "DivNoNan")
    if x._dtype.kind != "f":
        raise TypeError(f"divide_no_nan expects floating Tensors (e.g. float32), got "
                        f"{x.dtype.name}; use mt.cast(x, mt.float32)")
    xv, yv = x._value, y._value
    nonzero = yv != 0
    value = np.zeros(np.broadcast_shapes(np.shape(xv), np.shape(yv)), x._dtype)
    np.divide(xv, yv, out=value, where=nonzero)
    z = _out(value[()], name)
    record("DivNoNan", (x, y), (z,))
    return z


register_forward("DivNoNan", lambda op, x, y: divide_no_nan(x, y))


@RegisterGradient("DivNoNan", batched=True)
def _div_no_nan_grad(op, dy):
    x, y = op.inputs
    nb = op.batch_ndim
    return (unbroadcast(divide_no_nan(dy, y), op.input_shapes[0], nb) if wanted(op, 0) else None,
            unbroadcast(dy * divide_no_nan(divide_no_nan(-x, y), y), op.input_shapes[1], nb)
            if wanted(op, 1) else None)


def negative(x, name=None):
    """``-x`` (op ``Neg``)."""
    x = numeric(x, "Neg")
    y = _out(-x._value, name)
    record("Neg", (x,), (y,), keep_inputs=False)
    return y


register_forward("Neg", lambda op, x: negative(x))


@RegisterGradient("Neg", batched=True)
def _neg_grad(op, dy):
    return -dy


# -- powers, exponentials, logarithms -----------------------------------------------------------


def pow(x, y, name=None):  # noqa: A001 (TensorFlow's name)
    """``x ** y`` elementwise (op ``Pow``).

    Gradient: ``d/dx = y * x**(y-1)``; ``d/dy = x**y * log(x)`` where ``x > 0``, else 0 (as TF).
    """
    x, y = elementwise_operands(x, y, "Pow")
    if x._dtype.kind == "b":
        _no_bool(x, "Pow")
    z = _out(np.power(x._value, y._value), name)
    record("Pow", (x, y), (z,), keep_outputs=True)
    return z


register_forward("Pow", lambda op, x, y: pow(x, y))


@RegisterGradient("Pow", batched=True)
def _pow_grad(op, dy):
    x, y = op.inputs
    (z,) = op.outputs
    nb = op.batch_ndim
    gx = gy = None
    if wanted(op, 0):
        # (``x ** (y - 1)`` is ``x`` itself for ``x**2``: one op fewer on a tape that records
        # this gradient, a Hessian's outer tape, with the same numbers to every order)
        power = x if _constant_two(y) else x ** (y - 1)
        gx = unbroadcast(dy * y * power, op.input_shapes[0], nb)
    if wanted(op, 1):  # skipped for a constant exponent, as in x**2: no log to compute
        positive = greater(x, 0)
        safe_x = array_ops.where(positive, x, array_ops.ones_like(x))
        gy = dy * z * array_ops.where(positive, log(safe_x), array_ops.zeros_like(x))
        gy = unbroadcast(gy, op.input_shapes[1], nb)
    return gx, gy


def _constant_two(y):
    """Is the exponent ``y`` the number 2 and a constant to every recording tape and forward
    accumulator? Then no one needs the dependence of ``x ** (y - 1)`` on ``y``."""
    if y._shape != () or y._value != 2 or recording.accumulators_recording:
        return False
    return not recording.tapes_recording or not builtins.any(
        tape.tracks(y) for tape in recording.state.tapes)


def square(x, name=None):
    """``x * x`` (op ``Square``)."""
    x = numeric(x, "Square")
    y = _out(np.square(x._value), name)
    record("Square", (x,), (y,))
    return y


register_forward("Square", lambda op, x: square(x))


@RegisterGradient("Square", batched=True)
def _square_grad(op, dy):
    (x,) = op.inputs
    return dy * (x * 2)


def sqrt(x, name=None):
    """Square root (op ``Sqrt``); keeps its output: ``d/dx = 0.5 / sqrt(x)``.

    The gradient is 0 where the incoming gradient is 0, even at ``x = 0`` where the
    derivative is infinite (TensorFlow's ``SqrtGrad``): ``sqrt(x) * 0.0`` and
    ``square(sqrt(x))`` have gradient 0 at 0, not NaN. With a nonzero incoming gradient the
    gradient at 0 is ``inf`` (``mt.norm`` of a zero vector: NaN, as in TensorFlow).
    """
    x = floating(x, "Sqrt")
    y = _out(np.sqrt(x._value), name)
    record("Sqrt", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Sqrt", lambda op, x: sqrt(x))


@RegisterGradient("Sqrt", batched=True)
def _sqrt_grad(op, dy):
    (y,) = op.outputs
    return sqrt_grad(y, dy)


def _where_dy_nonzero(rule, y, dy):
    """``rule(y, dy)`` where ``dy != 0``, else 0: the backward kernels of TensorFlow's Sqrt,
    Rsqrt and Reciprocal (``cwise_ops_gradients.h``), so a zero upstream gradient stays 0
    even where the local derivative is infinite (``sqrt(x) * 0.0`` at ``x = 0``: 0, not
    ``inf * 0 = nan``). Where ``dy`` is 0 the rule sees ``y = 1`` (its result is replaced)."""
    zero = dy == 0
    if not zero.any():
        return rule(y, dy)
    return np.where(zero, dy.dtype.type(0), rule(np.where(zero, y.dtype.type(1), y), dy))


def sqrt_grad(y, dy, name=None):
    """Sqrt's backward pass as one op (op ``SqrtGrad``, as TensorFlow's
    ``gen_math_ops.sqrt_grad``): ``0.5 * dy / y`` where ``dy != 0``, else 0, for ``y =
    sqrt(x)``. Shapes: ``dy`` is ``y``'s shape, possibly with leading batch axes."""
    y, dy = floating(y, "SqrtGrad"), floating(dy, "SqrtGrad")
    dx = _out(_where_dy_nonzero(lambda y, dy: dy * y.dtype.type(0.5) / y, y._value,
                                dy._value), name)
    record("SqrtGrad", (y, dy), (dx,), keep_outputs=True)
    return dx


register_forward("SqrtGrad", lambda op, y, dy: sqrt_grad(y, dy))


@RegisterGradient("SqrtGrad", batched=True)
def _sqrt_grad_grad(op, g):
    # TensorFlow's _SqrtGradGrad: with out = 0.5 * dy / y, d/dy... = -g * out / y and
    # d/d(dy) = 0.5 * g / y.
    y, _ = op.inputs
    (out,) = op.outputs
    nb = op.batch_ndim
    ga = g / y
    return (unbroadcast(-ga * out, op.input_shapes[0], nb) if wanted(op, 0) else None,
            unbroadcast(ga * 0.5, op.input_shapes[1], nb) if wanted(op, 1) else None)


def rsqrt(x, name=None):
    """``1 / sqrt(x)`` (op ``Rsqrt``), as ``tf.math.rsqrt``; keeps its output:
    ``d/dx = -0.5 * rsqrt(x)**3``, and 0 where the incoming gradient is 0 (TensorFlow's
    ``RsqrtGrad``), even at ``x = 0``."""
    x = floating(x, "Rsqrt")
    y = _out(np.reciprocal(np.sqrt(x._value)), name)
    record("Rsqrt", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Rsqrt", lambda op, x: rsqrt(x))


@RegisterGradient("Rsqrt", batched=True)
def _rsqrt_grad(op, dy):
    (y,) = op.outputs
    return rsqrt_grad(y, dy)


def rsqrt_grad(y, dy, name=None):
    """Rsqrt's backward pass as one op (op ``RsqrtGrad``, as TensorFlow's
    ``gen_math_ops.rsqrt_grad``): ``-0.5 * dy * y**3`` where ``dy != 0``, else 0, for
    ``y = rsqrt(x)``."""
    y, dy = floating(y, "RsqrtGrad"), floating(dy, "RsqrtGrad")
    dx = _out(_where_dy_nonzero(lambda y, dy: y.dtype.type(-0.5) * dy * (y * y * y),
                                y._value, dy._value), name)
    record("RsqrtGrad", (y, dy), (dx,))
    return dx


register_forward("RsqrtGrad", lambda op, y, dy: rsqrt_grad(y, dy))


@RegisterGradient("RsqrtGrad", batched=True)
def _rsqrt_grad_grad(op, g):
    # TensorFlow's _RsqrtGradGrad: out = -0.5 * dy * y**3, so d/dy = -1.5 * g * dy * y**2
    # and d/d(dy) = RsqrtGrad(y, g).
    y, dy = op.inputs
    nb = op.batch_ndim
    return (unbroadcast(g * -1.5 * dy * (y * y), op.input_shapes[0], nb) if wanted(op, 0)
            else None,
            unbroadcast(rsqrt_grad(y, g), op.input_shapes[1], nb) if wanted(op, 1) else None)


def exp(x, name=None):
    """``e**x`` (op ``Exp``); keeps only its output: ``d/dx = exp(x)``."""
    x = floating(x, "Exp")
    y = _out(np.exp(x._value), name)
    record("Exp", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Exp", lambda op, x: exp(x))


@RegisterGradient("Exp", batched=True)
def _exp_grad(op, dy):
    (y,) = op.outputs
    return dy * y


def expm1(x, name=None):
    """``exp(x) - 1``, accurate near 0 (op ``Expm1``)."""
    x = floating(x, "Expm1")
    y = _out(np.expm1(x._value), name)
    record("Expm1", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Expm1", lambda op, x: expm1(x))


@RegisterGradient("Expm1", batched=True)
def _expm1_grad(op, dy):
    (y,) = op.outputs
    return dy * (y + 1)


def log(x, name=None):
    """Natural logarithm (op ``Log``): ``d/dx = 1 / x``."""
    x = floating(x, "Log")
    y = _out(np.log(x._value), name)
    record("Log", (x,), (y,))
    return y


register_forward("Log", lambda op, x: log(x))


@RegisterGradient("Log", batched=True)
def _log_grad(op, dy):
    (x,) = op.inputs
    return dy / x


def log1p(x, name=None):
    """``log(1 + x)``, accurate near 0 (op ``Log1p``)."""
    x = floating(x, "Log1p")
    y = _out(np.log1p(x._value), name)
    record("Log1p", (x,), (y,))
    return y


register_forward("Log1p", lambda op, x: log1p(x))


@RegisterGradient("Log1p", batched=True)
def _log1p_grad(op, dy):
    (x,) = op.inputs
    return dy / (x + 1)


def reciprocal(x, name=None):
    """``1 / x`` (op ``Reciprocal``): ``d/dx = -1/x**2``."""
    x = floating(x, "Reciprocal")
    y = _out(np.reciprocal(x._value), name)
    record("Reciprocal", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Reciprocal", lambda op, x: reciprocal(x))


@RegisterGradient("Reciprocal", batched=True)
def _reciprocal_grad(op, dy):
    (y,) = op.outputs
    return reciprocal_grad(y, dy)


def reciprocal_grad(y, dy, name=None):
    """Reciprocal's backward pass as one op (op ``ReciprocalGrad``, as TensorFlow's
    ``gen_math_ops.reciprocal_grad``): ``-dy * y * y`` where ``dy != 0``, else 0, for
    ``y = 1 / x`` (so ``reciprocal(x) * 0.0`` has gradient 0 at ``x = 0``, as in TF)."""
    y, dy = floating(y, "ReciprocalGrad"), floating(dy, "ReciprocalGrad")
    dx = _out(_where_dy_nonzero(lambda y, dy: -dy * y * y, y._value, dy._value), name)
    record("ReciprocalGrad", (y, dy), (dx,))
    return dx


register_forward("ReciprocalGrad", lambda op, y, dy: reciprocal_grad(y, dy))


@RegisterGradient("ReciprocalGrad", batched=True)
def _reciprocal_grad_grad(op, g):
    # TensorFlow's _ReciprocalGradGrad: out = -dy * y**2, so d/dy = -2 * g * dy * y and
    # d/d(dy) = -g * y**2 (ReciprocalGrad again).
    y, dy = op.inputs
    nb = op.batch_ndim
    return (unbroadcast(g * -2.0 * dy * y, op.input_shapes[0], nb) if wanted(op, 0) else None,
            unbroadcast(reciprocal_grad(y, g), op.input_shapes[1], nb) if wanted(op, 1)
            else None)


# -- trigonometry and friends ---------------------------------------------------------------------


def sin(x, name=None):
    """Sine (op ``Sin``): ``d/dx = cos(x)``."""
    x = floating(x, "Sin")
    y = _out(np.sin(x._value), name)
    record("Sin", (x,), (y,))
    return y


register_forward("Sin", lambda op, x: sin(x))


@RegisterGradient("Sin", batched=True)
def _sin_grad(op, dy):
    (x,) = op.inputs
    return dy * cos(x)


def cos(x, name=None):
    """Cosine (op ``Cos``): ``d/dx = -sin(x)``."""
    x = floating(x, "Cos")
    y = _out(np.cos(x._value), name)
    record("Cos", (x,), (y,))
    return y


register_forward("Cos", lambda op, x: cos(x))


@RegisterGradient("Cos", batched=True)
def _cos_grad(op, dy):
    (x,) = op.inputs
    return -dy * sin(x)


def tan(x, name=None):
    """Tangent (op ``Tan``): ``d/dx = 1 + tan(x)**2``."""
    x = floating(x, "Tan")
    y = _out(np.tan(x._value), name)
    record("Tan", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Tan", lambda op, x: tan(x))


@RegisterGradient("Tan", batched=True)
def _tan_grad(op, dy):
    (y,) = op.outputs
    return dy * (y * y + 1)


def asin(x, name=None):
    """Arcsine (op ``Asin``), in ``[-pi/2, pi/2]``: ``d/dx = 1 / sqrt(1 - x**2)`` (infinite at
    ``x = +-1``; ``nan`` outside ``[-1, 1]``, as NumPy and TensorFlow)."""
    x = floating(x, "Asin")
    y = _out(np.arcsin(x._value), name)
    record("Asin", (x,), (y,))
    return y


register_forward("Asin", lambda op, x: asin(x))


@RegisterGradient("Asin", batched=True)
def _asin_grad(op, dy):
    (x,) = op.inputs
    return dy / sqrt(1.0 - x * x)


def acos(x, name=None):
    """Arccosine (op ``Acos``), in ``[0, pi]``: ``d/dx = -1 / sqrt(1 - x**2)``."""
    x = floating(x, "Acos")
    y = _out(np.arccos(x._value), name)
    record("Acos", (x,), (y,))
    return y


register_forward("Acos", lambda op, x: acos(x))


@RegisterGradient("Acos", batched=True)
def _acos_grad(op, dy):
    (x,) = op.inputs
    return -dy / sqrt(1.0 - x * x)


def atan(x, name=None):
    """Arctangent (op ``Atan``), in ``(-pi/2, pi/2)``: ``d/dx = 1 / (1 + x**2)``."""
    x = floating(x, "Atan")
    y = _out(np.arctan(x._value), name)
    record("Atan", (x,), (y,))
    return y


register_forward("Atan", lambda op, x: atan(x))


@RegisterGradient("Atan", batched=True)
def _atan_grad(op, dy):
    (x,) = op.inputs
    return dy / (1.0 + x * x)


def atan2(y, x, name=None):
    """The angle of the point ``(x, y)`` (op ``Atan2``, note the order ``y, x`` as
    ``tf.math.atan2``), in ``(-pi, pi]``, with broadcasting. Gradient, with ``r2 = x**2 +
    y**2``: ``d/dy = x / r2``, ``d/dx = -y / r2`` (``nan`` at the origin, as TensorFlow)."""
    y, x = elementwise_operands(y, x, "Atan2")
    if y._dtype.kind != "f":
        raise TypeError(f"Atan2 expects floating Tensors (e.g. float32), got {y.dtype.name}; "
                        "use mt.cast")
    z = _out(np.arctan2(y._value, x._value), name)
    record("Atan2", (y, x), (z,))
    return z


register_forward("Atan2", lambda op, y, x: atan2(y, x))


@RegisterGradient("Atan2", batched=True)
def _atan2_grad(op, dz):
    y, x = op.inputs
    scale = dz / (x * x + y * y)
    return unbroadcast_pair(op, scale * x if wanted(op, 0) else None,
                            -scale * y if wanted(op, 1) else None)


def sinh(x, name=None):
    """Hyperbolic sine (op ``Sinh``): ``d/dx = cosh(x)``."""
    x = floating(x, "Sinh")
    y = _out(np.sinh(x._value), name)
    record("Sinh", (x,), (y,))
    return y


register_forward("Sinh", lambda op, x: sinh(x))


@RegisterGradient("Sinh", batched=True)
def _sinh_grad(op, dy):
    (x,) = op.inputs
    return dy * cosh(x)


def cosh(x, name=None):
    """Hyperbolic cosine (op ``Cosh``): ``d/dx = sinh(x)``."""
    x = floating(x, "Cosh")
    y = _out(np.cosh(x._value), name)
    record("Cosh", (x,), (y,))
    return y


register_forward("Cosh", lambda op, x: cosh(x))


@RegisterGradient("Cosh", batched=True)
def _cosh_grad(op, dy):
    (x,) = op.inputs
    return dy * sinh(x)


def asinh(x, name=None):
    """Inverse hyperbolic sine (op ``Asinh``): ``d/dx = 1 / sqrt(x**2 + 1)``."""
    x = floating(x, "Asinh")
    y = _out(np.arcsinh(x._value), name)
    record("Asinh", (x,), (y,))
    return y


register_forward("Asinh", lambda op, x: asinh(x))


@RegisterGradient("Asinh", batched=True)
def _asinh_grad(op, dy):
    (x,) = op.inputs
    return dy / sqrt(x * x + 1.0)


def acosh(x, name=None):
    """Inverse hyperbolic cosine (op ``Acosh``), for ``x >= 1``: ``d/dx = 1 / sqrt(x**2 - 1)``."""
    x = floating(x, "Acosh")
    y = _out(np.arccosh(x._value), name)
    record("Acosh", (x,), (y,))
    return y


register_forward("Acosh", lambda op, x: acosh(x))


@RegisterGradient("Acosh", batched=True)
def _acosh_grad(op, dy):
    (x,) = op.inputs
    return dy / sqrt(x * x - 1.0)


def atanh(x, name=None):
    """Inverse hyperbolic tangent (op ``Atanh``), for ``|x| < 1``: ``d/dx = 1 / (1 - x**2)``."""
    x = floating(x, "Atanh")
    y = _out(np.arctanh(x._value), name)
    record("Atanh", (x,), (y,))
    return y


register_forward("Atanh", lambda op, x: atanh(x))


@RegisterGradient("Atanh", batched=True)
def _atanh_grad(op, dy):
    (x,) = op.inputs
    return dy / (1.0 - x * x)


def floor(x, name=None):
    """The largest integer not above ``x``, as a float (op ``Floor``); not differentiable
    (gradient ``None``, as TensorFlow)."""
    x = floating(x, "Floor")
    y = _out(np.floor(x._value), name)
    record("Floor", (x,), (y,), keep_inputs=False)
    return y


no_gradient("Floor")


def ceil(x, name=None):
    """The smallest integer not below ``x``, as a float (op ``Ceil``); not differentiable
    (gradient ``None``, as TensorFlow)."""
    x = floating(x, "Ceil")
    y = _out(np.ceil(x._value), name)
    record("Ceil", (x,), (y,), keep_inputs=False)
    return y


no_gradient("Ceil")


def floordiv(x, y, name=None):
    """``floor(x / y)`` elementwise with broadcasting, as ``tf.math.floordiv`` and ``x // y``
    (op ``FloorDiv``): integers stay integers (``tf.shape(x)[-1] // 3``, Géron's chapter 14).
    Not differentiable (gradient ``None``, as TensorFlow).

    >>> import minitape as mt
    >>> (mt.constant([7, -7]) // 2).numpy()
    array([ 3, -4], dtype=int32)
    """
    x, y = elementwise_operands(x, y, "FloorDiv")
    z = _out(np.floor_divide(x._value, y._value), name)
    record("FloorDiv", (x, y), (z,), keep_inputs=False)
    return z


no_gradient("FloorDiv")


def squared_difference(x, y, name=None):
    """``(x - y)**2`` elementwise with broadcasting, as ``tf.math.squared_difference`` (two
    ops here, ``Sub`` then ``Square``, so a tape draws and differentiates each)."""
    return square(subtract(x, y), name=name)


def tanh(x, name=None):
    """Hyperbolic tangent (op ``Tanh``); keeps its output: ``d/dx = 1 - tanh(x)**2``."""
    x = floating(x, "Tanh")
    y = _out(np.tanh(x._value), name)
    record("Tanh", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Tanh", lambda op, x: tanh(x))


@RegisterGradient("Tanh", batched=True)
def _tanh_grad(op, dy):
    (y,) = op.outputs
    return dy * (1 - y * y)


def sigmoid(x, name=None):
    """``1 / (1 + exp(-x))`` (op ``Sigmoid``); keeps its output: ``d/dx = y * (1 - y)``."""
    x = floating(x, "Sigmoid")
    # exp(-log(1 + exp(-x))) written with logaddexp, which never overflows; computed in
    # float64 and rounded once, so float32 results are correctly rounded (0.9999546 at 10).
    v = x._value
    y = _out(np.exp(-np.logaddexp(0, -v.astype(np.float64))).astype(v.dtype)[()], name)
    record("Sigmoid", (x,), (y,), keep_inputs=False, keep_outputs=True)
    return y


register_forward("Sigmoid", lambda op, x: sigmoid(x))


@RegisterGradient("Sigmoid", batched=True)
def _sigmoid_grad(op, dy):
    (y,) = op.outputs
    return dy * (y * (1 - y))


def softplus(x, name=None):
    """``log(1 + exp(x))`` computed stably (op ``Softplus``): ``d/dx = sigmoid(x)``."""
    x = floating(x, "Softplus")
    v = x._value
    y = _out(np.logaddexp(0, v.astype(np.float64)).astype(v.dtype)[()], name)
    record("Softplus", (x,), (y,))
    return y


register_forward("Softplus", lambda op, x: softplus(x))


@RegisterGradient("Softplus", batched=True)
def _softplus_grad(op, dy):
    (x,) = op.inputs
    return dy * sigmoid(x)


_erf_ufunc = np.frompyfunc(_pymath.erf, 1, 1)


def erf(x, name=None):
    """The error function (op ``Erf``): ``d/dx = 2/sqrt(pi) * exp(-x**2)``."""
    x = floating(x, "Erf")
    y = _out(np.asarray(_erf_ufunc(x._value), dtype=x.dtype)[()], name)
    record("Erf", (x,), (y,))
    return y


register_forward("Erf", lambda op, x: erf(x))


@RegisterGradient("Erf", batched=True)
def _erf_grad(op, dy):
    (x,) = op.inputs
    return dy * (2 / _pymath.sqrt(_pymath.pi)) * exp(-(x * x))


# -- abs, sign, round, maximum, minimum, clipping -----------------------------------------------


def abs(x, name=None):  # noqa: A001
    """``|x|`` (op ``Abs``): ``d/dx = sign(x)``."""
    x = numeric(x, "Abs")
    y = _out(np.abs(x._value), name)
    record("Abs", (x,), (y,))
    return y


register_forward("Abs", lambda op, x: abs(x))


@RegisterGradient("Abs", batched=True)
def _abs_grad(op, dy):
    (x,) = op.inputs
    return dy * sign(x)


def sign(x, name=None):
    """-1, 0 or 1 (op ``Sign``); its gradient is zero."""
    x = numeric(x, "Sign")
    y = _out(np.sign(x._value), name)
    record("Sign", (x,), (y,), keep_inputs=False)
    return y


register_forward("Sign", lambda op, x: sign(x))


@RegisterGradient("Sign", batched=True)
def _sign_grad(op, dy):
    return array_ops.zeros_like(dy)


def round(x, name=None):  # noqa: A001
    """Round half to even (op ``Round``); not differentiable (gradient ``None``)."""
    x = numeric(x, "Round")
    y = _out(np.round(x._value), name)
    record("Round", (x,), (y,), keep_inputs=False)
    return y


no_gradient("Round")


def maximum(x, y, name=None):
    """Elementwise max with broadcasting (op ``Maximum``); ties send the gradient to ``x``."""
    x, y = elementwise_operands(x, y, "Maximum")
    if x._dtype.kind == "b":
        _no_bool(x, "Maximum")
    z = _out(np.maximum(x._value, y._value), name)
    record("Maximum", (x, y), (z,))
    return z


def minimum(x, y, name=None):
    """Elementwise min with broadcasting (op ``Minimum``); ties send the gradient to ``x``."""
    x, y = elementwise_operands(x, y, "Minimum")
    if x._dtype.kind == "b":
        _no_bool(x, "Minimum")
    z = _out(np.minimum(x._value, y._value), name)
    record("Minimum", (x, y), (z,))
    return z


def _select_grad(op, dy, x_wins):
    nb = op.batch_ndim
    zeros = array_ops.zeros_like(dy)
    gx = array_ops.where(x_wins, dy, zeros)
    gy = array_ops.where(x_wins, zeros, dy)
    return unbroadcast(gx, op.input_shapes[0], nb), unbroadcast(gy, op.input_shapes[1], nb)


register_forward("Maximum", lambda op, x, y: maximum(x, y))


@RegisterGradient("Maximum", batched=True)
def _maximum_grad(op, dy):
    x, y = op.inputs
    return _select_grad(op, dy, greater_equal(x, y))


register_forward("Minimum", lambda op, x, y: minimum(x, y))


@RegisterGradient("Minimum", batched=True)
def _minimum_grad(op, dy):
    x, y = op.inputs
    return _select_grad(op, dy, less_equal(x, y))


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clip ``t`` to ``[clip_value_min, clip_value_max]``, as ``tf.clip_by_value``.

    Composed of ``minimum`` and ``maximum`` (as TensorFlow does), so the gradient flows where
    ``t`` is inside the range and to the bound where it is clipped.
    """
    t = convert_to_tensor(t, what="clip_by_value")
    return maximum(minimum(t, clip_value_max), clip_value_min, name=name)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Rescale ``t`` so its L2 norm (over ``axes``) is at most ``clip_norm`` (``tf.clip_by_norm``).

    ``t * clip_norm / max(norm(t), clip_norm)``, composed of recorded ops as TensorFlow
    composes it: the norm is taken with the double ``where`` (the square root only of a
    positive sum), so a zero ``t`` has gradient ones, as in TensorFlow (``[1., 1., 1.]`` for
    a zero vector), not NaN.
    """
    t = floating(t, "clip_by_norm")
    axes = check_axes(axes, t.ndim, "clip_by_norm", "axes", shape=t.shape)
    l2sum = reduction_ops.reduce_sum(t * t, axis=axes, keepdims=True)
    positive = greater(l2sum, 0.0)
    l2sum_safe = array_ops.where(positive, l2sum, array_ops.ones_like(l2sum))
    norm = array_ops.where(positive, sqrt(l2sum_safe), l2sum)
    clip = convert_like(clip_norm, t.dtype, "clip_by_norm")
    return divide(t * clip, maximum(norm, clip), name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None):
    """``x / sqrt(max(sum(x**2, axis), epsilon))``, as ``tf.math.l2_normalize`` (also
    ``mt.nn.l2_normalize``), composed as TensorFlow composes it: ``x * rsqrt(maximum(
    square_sum, epsilon))``. A zero slice stays zero, and its gradient is
    ``1 / sqrt(epsilon)`` (``maximum`` sends none to the sum), TensorFlow's number.

    Raises:
        TypeError: a non-floating ``x``. ValueError: an axis out of range.
    """
    x = floating(x, "l2_normalize")
    axes = check_axes(axis, x.ndim, "l2_normalize", shape=x.shape)
    square_sum = reduction_ops.reduce_sum(square(x), axis=axes, keepdims=True)
    inv_norm = rsqrt(maximum(square_sum, convert_like(epsilon, x.dtype, "l2_normalize")))
    return multiply(x, inv_norm, name=name)


# -- casts and comparisons -------------------------------------------------------------------------


def cast(x, dtype, name=None):
    """Convert ``x`` to ``dtype`` (op ``Cast``), as ``tf.cast``.

    The gradient flows between floating dtypes (cast back); to or from an integer or bool it
    is None. A complex value cast to a real dtype keeps its real part, as TensorFlow; a cast
    to or from a complex dtype computes, but a gradient asked through it raises
    ``TypeError`` (minitape does not differentiate complex numbers).

    Raises:
        TypeError: a ``dtype`` minitape does not compute with (``str``, ``object``, dates):
            only bool, integer, floating and complex dtypes.
    """
    from ..dtypes import check_dtype
    dtype = check_dtype(dtype, "cast")
    x = convert_to_tensor(x, what="cast")
    if x._dtype == dtype:
        return x
    value = np.asarray(x._value)
    if value.dtype.kind == "c" and dtype.kind != "c":
        value = value.real  # (NumPy would warn that it drops the imaginary part)
    y = _out(value.astype(dtype)[()], name)
    record("Cast", (x,), (y,), attrs={"dtype": dtype}, keep_inputs=False)
    return y


register_forward("Cast", lambda op, x: cast(x, op.get_attr("dtype")))


@RegisterGradient("Cast", batched=True)
def _cast_grad(op, dy):
    if op.input_dtypes[0].kind != "f":
        return None
    return cast(dy, op.input_dtypes[0])


def _comparison(op_type, fn):
    def compare(x, y, name=None):
        x, y = elementwise_operands(x, y, op_type)
        z = _out(fn(x._value, y._value), name)
        record(op_type, (x, y), (z,), keep_inputs=False)
        return z

    compare.__name__ = fn.__name__
    compare.__doc__ = (f"Elementwise ``{fn.__name__}`` with broadcasting (op ``{op_type}``); "
                       "returns a bool Tensor; not differentiable.")
    no_gradient(op_type)
    return compare


greater = _comparison("Greater", np.greater)
greater_equal = _comparison("GreaterEqual", np.greater_equal)
less = _comparison("Less", np.less)
less_equal = _comparison("LessEqual", np.less_equal)
equal = _comparison("Equal", np.equal)
not_equal = _comparison("NotEqual", np.not_equal)


# -- matrix multiplication ------------------------------------------------------------------------


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product ``a @ b``, as ``tf.linalg.matmul``.

    Shapes: ``a`` ``(..., m, k)``, ``b`` ``(..., k, n)`` -> ``(..., m, n)``; both need rank
    2 or more and the batch dimensions broadcast. ``transpose_a=True`` uses ``a``'s
    transpose (``a`` of shape ``(..., k, m)``), likewise ``transpose_b``: as in TensorFlow
    they are attributes of the one op, not separate Transpose ops. Op ``MatMul`` for two
    matrices, else ``BatchMatMulV2``. Gradient: ``da = dy @ b^T``, ``db = a^T @ dy`` (with
    the transposes moved around when the op had them).

    Raises:
        mt.errors.InvalidArgumentError: rank below 2, inner dimensions that differ, or batch
            dimensions that do not broadcast, as TensorFlow; it is also a ``ValueError``.

    >>> import minitape as mt
    >>> mt.matmul(mt.ones([2, 3]), mt.ones([2, 3]))
    Traceback (most recent call last):
    ...
    minitape.errors.InvalidArgumentError: matmul: cannot multiply shapes (2, 3) and (2, 3): ...
    """
    a, b = binary_operands(a, b, "MatMul")
    av, bv = a._value, b._value
    # The common case first: two float matrices (a layer's ``h @ w``, and the products of its
    # gradient). A transpose is a NumPy view (no copy); BLAS reads it as a transposed matrix.
    if av.ndim == 2 and bv.ndim == 2 and a._dtype.kind == "f":
        if transpose_a:
            av = av.T
        if transpose_b:
            bv = bv.T
        if av.shape[1] == bv.shape[0]:
            c = _out(av @ bv, name)
            record("MatMul", (a, b), (c,), attrs=_TRANSPOSES[bool(transpose_a), bool(transpose_b)])
            return c
    return _matmul_general(a, b, transpose_a, transpose_b, name)


# A MatMul's attributes, one dict per pair of flags, made once (an op's ``attrs`` is only read).
_TRANSPOSES = {(ta, tb): {"transpose_a": ta, "transpose_b": tb}
               for ta in (False, True) for tb in (False, True)}


def _matmul_general(a, b, transpose_a, transpose_b, name):
    """``matmul`` of two converted operands: the checks (and their errors), stacks of matrices
    (``BatchMatMulV2``), integer matrices."""
    if a._dtype.kind == "b":
        _no_bool(a, "MatMul")
    av, bv = a._value, b._value
    if av.ndim < 2 or bv.ndim < 2:
        raise errors.InvalidArgumentError(None, "MatMul", (
            f"matmul needs two Tensors of rank 2 or more (matrices), got shapes {a.shape} and "
            f"{b.shape}; add an axis with mt.reshape or mt.expand_dims, e.g. [[1., 2., 3.]]"))
    if transpose_a:
        av = av.swapaxes(-1, -2)
    if transpose_b:
        bv = bv.swapaxes(-1, -2)
    if av.shape[-1] != bv.shape[-2]:
        flags = (f" (after transpose_a={transpose_a}, transpose_b={transpose_b})"
                 if transpose_a or transpose_b else "")
        raise errors.InvalidArgumentError(None, "MatMul", (
            f"matmul: cannot multiply shapes {av.shape} and {bv.shape}{flags}: the inner "
            f"dimensions {av.shape[-1]} and {bv.shape[-2]} differ (a's last axis must equal "
            "b's second-to-last); transpose one of them (mt.transpose, or transpose_a=True / "
            "transpose_b=True)"))
    if av.ndim > 2 and bv.ndim > 2:
        try:
            np.broadcast_shapes(av.shape[:-2], bv.shape[:-2])
        except ValueError:
            raise errors.InvalidArgumentError(None, "BatchMatMulV2", (
                f"matmul: the batch dimensions of shapes {a.shape} and {b.shape} (all but the "
                f"last two axes: {av.shape[:-2]} and {bv.shape[:-2]}) do not broadcast; they "
                "must be equal or 1")) from None
    op_type = "MatMul" if av.ndim == 2 and bv.ndim == 2 else "BatchMatMulV2"
    c = _out(_matmul_values(av, bv), name)
    record(op_type, (a, b), (c,), attrs=_TRANSPOSES[bool(transpose_a), bool(transpose_b)])
    return c


def _matmul_values(av, bv):
    """``np.matmul(av, bv)`` of two NumPy arrays, with one fast path (same numbers).

    A stack of matrices times one matrix, ``(..., m, k) @ (k, n)``, is one tall matrix
    ``(B*m, k)`` times ``(k, n)``, where ``B`` is the number of matrices in the stack:
    ``np.matmul`` runs ``B`` small matrix products (GEMMs), the tall product is a single
    GEMM, which BLAS runs much faster. Every gradient of a vectorized Jacobian through a
    Dense layer has this shape (the cotangents' batch axis in front): for
    ``(1024, 64, 64) @ (64, 32)``, 5.2 ms as 1,024 GEMMs, 2.5 ms as one. Each output entry is
    the same dot product either way (``tests/test_matmul_fast_path.py`` checks the two paths
    agree). The reshape is free only when the stack is contiguous in memory; any other
    operands take ``np.matmul``, the general path.
    """
    if bv.ndim == 2 and av.ndim > 2 and av.size and av.flags.c_contiguous:
        tall = av.reshape(-1, av.shape[-1])               # (B*m, k): a view, no copy
        return (tall @ bv).reshape(av.shape[:-1] + bv.shape[-1:])
    return np.matmul(av, bv)


def _matmul_grad(op, dy):
    # TensorFlow's four cases. With c = a @ b: da = dy @ b^T, db = a^T @ dy; when the op
    # used a^T (or b^T) the same rule, transposed, gives the gradient of the stored a (or b).
    a, b = op.inputs
    attrs = op.attrs
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    # Two matrices need no unbroadcast (batch axes of a vectorized Jacobian stay in front).
    batched = op.type != "MatMul"
    # Skipping an unneeded side matters here: for a layer's input batch it is a whole matmul.
    da = db = None
    if wanted(op, 0):
        if not ta:
            da = matmul(dy, b, transpose_b=not tb)           # dy @ b^T  (or dy @ b)
        else:
            da = matmul(b, dy, transpose_a=tb, transpose_b=True)  # (dy @ b^T)^T
        if batched:
            da = unbroadcast(da, op.input_shapes[0], op.batch_ndim)
    if wanted(op, 1):
        if not tb:
            db = matmul(a, dy, transpose_a=not ta)           # a^T @ dy  (or a @ dy)
        else:
            db = matmul(dy, a, transpose_a=True, transpose_b=ta)  # (a^T @ dy)^T
        if batched:
            db = unbroadcast(db, op.input_shapes[1], op.batch_ndim)
    return da, db


register_forward("MatMul", lambda op, a, b: matmul(a, b, op.get_attr("transpose_a"),
                                                     op.get_attr("transpose_b")))
RegisterGradient("MatMul", batched=True)(_matmul_grad)
register_forward("BatchMatMulV2", lambda op, a, b: matmul(a, b, op.get_attr("transpose_a"),
                                                           op.get_attr("transpose_b")))
RegisterGradient("BatchMatMulV2", batched=True)(_matmul_grad)

_ = builtins


# -- Tensor's Python operators ----------------------------------------------------------------
# ``x * y`` on Tensors is ``multiply(x, y)``: the ops give the engine's Tensor its operators,
# one line each, as TensorFlow's math_ops does (``_override_operator``), so the engine imports
# no op. (Indexing, ``x[0]``, is ``array_ops.getitem``, attached in ``array_ops``.)
Tensor.__add__ = add
Tensor.__radd__ = lambda x, y: add(y, x)
Tensor.__sub__ = subtract
Tensor.__rsub__ = lambda x, y: subtract(y, x)
Tensor.__mul__ = multiply
Tensor.__rmul__ = lambda x, y: multiply(y, x)
Tensor.__truediv__ = divide
Tensor.__rtruediv__ = lambda x, y: divide(y, x)
Tensor.__floordiv__ = floordiv
Tensor.__rfloordiv__ = lambda x, y: floordiv(y, x)
Tensor.__pow__ = pow
Tensor.__rpow__ = lambda x, y: pow(y, x)
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda x, y: matmul(y, x)
Tensor.__neg__ = negative
Tensor.__pos__ = lambda x: x
Tensor.__abs__ = abs
Tensor.__lt__ = less
Tensor.__le__ = less_equal
Tensor.__gt__ = greater
Tensor.__ge__ = greater_equal
Tensor.__eq__ = equal
Tensor.__ne__ = not_equal


# -- logical ops on bool Tensors (nlpgeron: Geron's chapter 16 combines masks,
# ``causal_mask & decoder_pad_mask``). Their inputs are bool, never on a tape (nothing to
# differentiate), so they compute without recording an op.

def _logical(op_type, fn, word):
    def logical(x, y, name=None):
        x, y = elementwise_operands(x, y, op_type)
        if x.dtype != np.bool_ or y.dtype != np.bool_:
            raise TypeError(f"{op_type} ({word}) takes bool Tensors, got {x.dtype.name} and "
                            f"{y.dtype.name}; make a mask with a comparison, e.g. "
                            "mt.not_equal(ids, 0)")
        return _out(fn(x._value, y._value), name)

    logical.__name__ = fn.__name__
    logical.__doc__ = (f"Elementwise {word} of two bool Tensors, with broadcasting (as "
                       f"``tf.math.{fn.__name__}``, op ``{op_type}``); not differentiable.\n\n"
                       "    Raises:\n        TypeError: an operand that is not bool.\n")
    return logical


logical_and = _logical("LogicalAnd", np.logical_and, "AND")
logical_or = _logical("LogicalOr", np.logical_or, "OR")
logical_xor = _logical("LogicalXor", np.logical_xor, "XOR")


def logical_not(x, name=None):
    """Elementwise NOT of a bool Tensor (as ``tf.math.logical_not``; ``~x``); not
    differentiable.

    Raises:
        TypeError: ``x`` is not bool (``~`` on integers, TensorFlow's bitwise invert, is not
            in minitape).
    """
    x = convert_to_tensor(x, what="LogicalNot")
    if x.dtype != np.bool_:
        raise TypeError(f"LogicalNot (~x) takes a bool Tensor, got {x.dtype.name}; for "
                        "numbers use -x or 1 - x")
    return _out(np.logical_not(x._value), name)


Tensor.__and__ = logical_and
Tensor.__rand__ = lambda x, y: logical_and(y, x)
Tensor.__or__ = logical_or
Tensor.__ror__ = lambda x, y: logical_or(y, x)
Tensor.__xor__ = logical_xor
Tensor.__rxor__ = lambda x, y: logical_xor(y, x)
Tensor.__invert__ = logical_not
