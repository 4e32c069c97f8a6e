"""Reductions: sum, mean, max, min, prod, norm. Each forward, then its gradient.

A reduction's gradient puts ``dy`` back on the reduced axes: reshape it to the "kept" shape
(reduced axes of size 1), then broadcast it to the input's shape.
"""

from __future__ import annotations

import math as _pymath

import numpy as np

from ..registry import RegisterGradient
from ..tape import record
from ..tensor import Tensor, convert_to_tensor
from . import array_ops, math_ops


def normalize_axes(axis, ndim, op_type):
    """``axis`` (None, int, negative int, list or 1-D int Tensor) -> sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, checked at once
        return (axis % ndim,)
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    out = []
    for a in axes:
        if isinstance(a, Tensor):
            a = int(a)
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op_type}: axis must be an int or a list of ints, got {axis!r}")
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{op_type}: axis {a} is out of range for a Tensor of rank {ndim} "
                             f"(valid: {-ndim} to {ndim - 1})")
        out.append(int(a) % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op_type}: axis {axis!r} repeats an axis")
    return tuple(sorted(out))


def _kept_shape(op):
    axes = op.get_attr("axis")
    return tuple(1 if i in axes else n for i, n in enumerate(op.input_shapes[0]))


def _reduce(op_type, fn, x, axis, keepdims, name, keep_inputs, keep_outputs, float_only=False):
    x = math_ops.floating(x, op_type) if float_only else convert_to_tensor(x, what=op_type)
    axes = normalize_axes(axis, x._value.ndim, op_type)
    # ``fn`` is a ufunc's reduce (``np.add.reduce`` is what ``np.sum`` calls, without its
    # Python wrappers) or ``np.mean``. A reduction over every axis gives a NumPy scalar.
    value = fn(x._value, axis=axes, keepdims=keepdims)
    if value.dtype != x._value.dtype:  # an integer sum comes back as int64, a mean as float64
        value = value.astype(x._value.dtype)
    y = Tensor(value, name=name)
    record(op_type, (x,), (y,), attrs={"axis": axes, "keepdims": bool(keepdims)},
           keep_inputs=keep_inputs, keep_outputs=keep_outputs)
    return y


def _spread(op, dy):
    """``dy`` with the reduced axes restored: shape ``batch + kept`` (size 1 on reduced axes),
    or ``dy`` itself where broadcasting restores them anyway (``keepdims=True``, or the
    reduced axes were the leading ones, as in a full reduction or a bias's batch axis)."""
    kept = _kept_shape(op)
    lead = len(kept) - len(dy.shape)
    if not op.batch_ndim and kept[lead:] == dy.shape and kept[:lead].count(1) == lead:
        return dy
    return array_ops.reshape(dy, dy.shape[:op.batch_ndim] + kept)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over ``axis`` (all axes by default), as ``tf.reduce_sum`` (op ``Sum``).

    >>> import minitape as mt
    >>> mt.reduce_sum(mt.constant([[1., 2.], [3., 4.]]), axis=0)
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([4., 6.], dtype=float32)>
    """
    return _reduce("Sum", np.add.reduce, input_tensor, axis, keepdims, name, False, False)


@RegisterGradient("Sum", batched=True)
def _sum_grad(op, dy):
    g = _spread(op, dy)
    return array_ops.broadcast_to(g, g.shape[:op.batch_ndim] + op.input_shapes[0])


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over ``axis``, as ``tf.reduce_mean`` (op ``Mean``); integer means truncate, as TF."""
    return _reduce("Mean", _mean, input_tensor, axis, keepdims, name, False, False)


def _mean(x, axis, keepdims):
    """``np.mean``; for float32/float64 as ``sum / count`` (the same number, without
    ``np.mean``'s Python layers; narrower types keep ``np.mean``, which sums them wider)."""
    count = _pymath.prod([x.shape[a] for a in axis])
    if x.dtype.kind != "f" or x.dtype.itemsize < 4 or not 0 < count <= 2**24:
        return np.mean(x, axis=axis, keepdims=keepdims)  # (a count exact in float32 only)
    return np.add.reduce(x, axis=axis, keepdims=keepdims) / x.dtype.type(count)


@RegisterGradient("Mean", batched=True)
def _mean_grad(op, dy):
    shape = op.input_shapes[0]
    count = _pymath.prod([shape[a] for a in op.get_attr("axis")])
    return _sum_grad(op, dy / float(max(count, 1)))  # (divide first: fewer elements)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over ``axis`` (op ``Max``); ties share the gradient equally, as TF."""
    return _reduce("Max", np.maximum.reduce, input_tensor, axis, keepdims, name, True, True)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over ``axis`` (op ``Min``); ties share the gradient equally, as TF."""
    return _reduce("Min", np.minimum.reduce, input_tensor, axis, keepdims, name, True, True)


def _extremum_grad(op, dy):
    (x,) = op.inputs
    (y,) = op.outputs
    y = array_ops.reshape(y, _kept_shape(op))
    hits = math_ops.cast(math_ops.equal(x, y), x.dtype)
    count = reduce_sum(hits, axis=op.get_attr("axis"), keepdims=True)
    return _spread(op, dy) * (hits / count)


RegisterGradient("Max", batched=True)(_extremum_grad)
RegisterGradient("Min", batched=True)(_extremum_grad)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over ``axis`` (op ``Prod``), as ``tf.reduce_prod``.

    Gradient: the product of the *other* elements. Where an element is 0 that product is
    computed directly, so zeros give exact first derivatives; second derivatives there are
    treated as constants.
    """
    return _reduce("Prod", np.multiply.reduce, input_tensor, axis, keepdims, name, True, True)


@RegisterGradient("Prod", batched=True)
def _prod_grad(op, dy):
    (x,) = op.inputs
    (y,) = op.outputs
    axes = op.get_attr("axis")
    y = array_ops.reshape(y, _kept_shape(op))
    zero = math_ops.equal(x, 0)
    safe_x = array_ops.where(zero, array_ops.ones_like(x), x)
    # Product of the others where x == 0: product with that one element replaced by 1.
    v = x._value
    others_at_zero = np.zeros_like(v)
    if np.any(v == 0):
        moved = np.moveaxis(v, axes, list(range(len(axes))))
        flat = moved.reshape((-1,) + moved.shape[len(axes):])
        out = np.zeros_like(flat)
        for k in range(flat.shape[0]):
            rest = np.delete(flat, k, axis=0)
            out[k] = np.prod(rest, axis=0)
        others_at_zero = np.moveaxis(out.reshape(moved.shape), list(range(len(axes))), axes)
    others = array_ops.where(zero, Tensor(others_at_zero), y / safe_x)
    return _spread(op, dy) * others


def norm(tensor, ord="euclidean", axis=None, keepdims=False, name=None):  # noqa: A002
    """Vector or Frobenius norm, as ``tf.norm``, composed of recorded ops.

    ``ord``: ``"euclidean"``/``"fro"``/2 (the default; over all axes it is the Frobenius norm),
    1, or ``np.inf``. The gradient of the euclidean norm at exactly 0 is NaN, as in TF.
    """
    tensor = math_ops.floating(tensor, "norm")
    if ord in ("euclidean", "fro", 2, 2.0):
        return math_ops.sqrt(reduce_sum(tensor * tensor, axis=axis, keepdims=keepdims), name=name)
    if ord in (1, 1.0):
        return reduce_sum(math_ops.abs(tensor), axis=axis, keepdims=keepdims, name=name)
    if ord == np.inf:
        return reduce_max(math_ops.abs(tensor), axis=axis, keepdims=keepdims, name=name)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2 or np.inf, got {ord!r}")
