"""Reductions: sum, mean, max, min, prod, norm. Each forward, then its gradient.

A reduction's gradient puts ``dy`` back on the reduced axes: reshape it to the "kept" shape
(reduced axes of size 1), then broadcast it to the input's shape.
"""

from __future__ import annotations

import collections
import math as _pymath

import numpy as np

from ..engine.registry import RegisterGradient, no_gradient, register_forward
from ..engine.recording import record
from ..engine.tensor import Tensor, convert_to_tensor
from . import array_ops, math_ops
from .axes import check_axes, check_axis


# The public name of each reduction op, for messages ("reduce_sum: axis=2 is out of range ...").
_PUBLIC = {"Sum": "reduce_sum", "Mean": "reduce_mean", "Max": "reduce_max",
           "Min": "reduce_min", "Prod": "reduce_prod"}


def numeric(x, what):
    """Convert ``x`` and check its dtype is numeric: sums, means, products and extrema of bool
    Tensors are refused, as TensorFlow does; complex values are summed, averaged and
    multiplied, but have no maximum or minimum (they are not ordered)."""
    x = convert_to_tensor(x, what=what)
    kind = x._dtype.kind
    if kind not in "iuf" and not (kind == "c" and what not in ("reduce_max", "reduce_min")):
        hint = (f"; to count the True entries use {what}(mt.cast(x, mt.int32))" if kind == "b"
                else "")
        raise TypeError(f"{what} expects a numeric Tensor (float or int), got "
                        f"{x.dtype.name}{hint}")
    return x


def _kept_shape(op):
    axes = op.get_attr("axis")
    return tuple(1 if i in axes else n for i, n in enumerate(op.input_shapes[0]))


def _reduce(op_type, fn, x, axis, keepdims, name, keep_inputs, keep_outputs):
    what = _PUBLIC[op_type]
    if type(x) is not Tensor or x._dtype.kind not in "iuf":  # (a float Tensor: as is)
        x = numeric(x, what)
    v = x._value
    axes = check_axes(axis, v.ndim, what, shape=v.shape)
    # ``fn`` is a ufunc's reduce (``np.add.reduce`` is what ``np.sum`` calls, without its
    # Python wrappers) or ``_mean``. A reduction over every axis gives a NumPy scalar.
    if v.size == 0 and fn in _EMPTY:  # max/min of nothing: TensorFlow's identity, not an error
        value = fn(v, axis=axes, keepdims=keepdims, initial=_EMPTY[fn](v.dtype))
    else:
        value = fn(v, axis=axes, keepdims=keepdims)
    if value.dtype != x._dtype:  # an integer sum comes back as int64, a mean as float64
        value = value.astype(x._dtype)
    y = Tensor(value, name=name)
    record(op_type, (x,), (y,), attrs={"axis": axes, "keepdims": bool(keepdims)},
           keep_inputs=keep_inputs, keep_outputs=keep_outputs)
    return y


def _spread(op, dy):
    """``dy`` with the reduced axes restored: shape ``batch + kept`` (size 1 on reduced axes),
    or ``dy`` itself where broadcasting restores them anyway (``keepdims=True``, or the
    reduced axes were the leading ones, as in a full reduction or a bias's batch axis)."""
    shape = _spread_shape(op, dy._shape)
    return dy if shape is None else array_ops.reshape(dy, shape)


def _spread_shape(op, dy_shape):
    """The shape ``_spread`` reshapes ``dy`` to, or None where it keeps ``dy`` as it is."""
    if not dy_shape:   # a 0-d dy (a full reduction's, no batch axes) broadcasts as it is
        return None
    kept = _kept_shape(op)
    lead = len(kept) - len(dy_shape)
    if not op.batch_ndim and kept[lead:] == dy_shape and kept[:lead].count(1) == lead:
        return None
    return dy_shape[:op.batch_ndim] + kept


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over ``axis`` (all axes by default), as ``tf.reduce_sum`` (op ``Sum``).

    ``axis``: None, an int (negative counts from the end), a list of ints or an int Tensor.
    The sum over an empty axis is 0, as TensorFlow.

    Raises:
        TypeError: a bool Tensor (count True entries with ``mt.cast(x, mt.int32)`` first) or
            an axis that is not an int.
        ValueError: an axis out of range or named twice (``mt.errors.InvalidArgumentError``).

    >>> import minitape as mt
    >>> mt.reduce_sum(mt.constant([[1., 2.], [3., 4.]]), axis=0)
    <mt.Tensor: shape=(2,), dtype=float32, numpy=array([4., 6.], dtype=float32)>
    """
    return _reduce("Sum", np.add.reduce, input_tensor, axis, keepdims, name, False, False)


register_forward("Sum", lambda op, x: reduce_sum(x, op.get_attr("axis"), op.get_attr("keepdims")))


@RegisterGradient("Sum", batched=True)
def _sum_grad(op, dy):
    g = _spread(op, dy)
    return array_ops.broadcast_to(g, g._shape[:op.batch_ndim] + op.input_shapes[0])


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over ``axis``, as ``tf.reduce_mean`` (op ``Mean``); integer means truncate, as TF.

    The mean over an empty axis is NaN (TensorFlow's value); for an integer Tensor, which has
    no NaN, that raises ``ValueError``. Other errors as ``reduce_sum``.
    """
    return _reduce("Mean", _mean, input_tensor, axis, keepdims, name, False, False)


def _mean(x, axis, keepdims):
    """``np.mean``; for float32/float64 as ``sum / count`` (the same number, without
    ``np.mean``'s Python layers; narrower types keep ``np.mean``, which sums them wider).
    The mean of nothing is NaN, as in TensorFlow (an int Tensor has no NaN: ValueError)."""
    count = _reduced_count(x.shape, axis)
    if count == 0:
        if x.dtype.kind not in "fc":
            raise ValueError(f"reduce_mean: the mean over axis={axis} of a {x.dtype.name} "
                             f"Tensor of shape {x.shape} is a mean of no values (NaN), which "
                             "an integer cannot hold; cast it first: mt.cast(x, mt.float32)")
        return np.full_like(np.add.reduce(x, axis=axis, keepdims=keepdims), np.nan)[()]
    if x.dtype.kind != "f" or x.dtype.itemsize < 4 or not 0 < count <= 2**24:
        return np.mean(x, axis=axis, keepdims=keepdims)  # (a count exact in float32 only)
    return np.add.reduce(x, axis=axis, keepdims=keepdims) / x.dtype.type(count)


register_forward("Mean", lambda op, x: reduce_mean(x, op.get_attr("axis"), op.get_attr("keepdims")))


@RegisterGradient("Mean", batched=True)
def _mean_grad(op, dy):
    return _sum_grad(op, dy / float(_mean_count(op)))  # (divide first: fewer elements)


def _mean_count(op):
    """How many elements each mean of the recorded ``Mean`` op averaged, at least 1 (a mean
    over an empty axis has an empty gradient: nothing to divide, and no division by zero)."""
    return max(_reduced_count(op.input_shapes[0], op.get_attr("axis")), 1)


def _reduced_count(shape, axes):
    """How many elements of an array of ``shape`` each reduction over ``axes`` takes."""
    return _pymath.prod(shape if len(axes) == len(shape) else [shape[a] for a in axes])


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


# The maximum of no values is -inf (the lowest int for ints), the minimum +inf, as in
# TensorFlow; NumPy raises instead, so these are given as ``initial``.
_EMPTY = {np.maximum.reduce: _lowest, np.minimum.reduce: _highest}


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over ``axis`` (op ``Max``), as ``tf.reduce_max``; ties share the gradient
    equally, as TF. The maximum over an empty axis is ``-inf`` (the lowest int for ints), as
    TensorFlow. Errors as ``reduce_sum`` (complex Tensors too: they are not ordered)."""
    return _reduce("Max", np.maximum.reduce, input_tensor, axis, keepdims, name, True, True)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over ``axis`` (op ``Min``), as ``tf.reduce_min``; ties share the gradient
    equally, as TF. The minimum over an empty axis is ``inf`` (the highest int for ints), as
    TensorFlow. Errors as ``reduce_max``."""
    return _reduce("Min", np.minimum.reduce, input_tensor, axis, keepdims, name, True, True)


def _extremum_grad(op, dy):
    (x,) = op.inputs
    (y,) = op.outputs
    y = array_ops.reshape(y, _kept_shape(op))
    hits = math_ops.cast(math_ops.equal(x, y), x.dtype)
    count = reduce_sum(hits, axis=op.get_attr("axis"), keepdims=True)
    return _spread(op, dy) * (hits / count)


register_forward("Max", lambda op, x: reduce_max(x, op.get_attr("axis"), op.get_attr("keepdims")))
RegisterGradient("Max", batched=True)(_extremum_grad)
register_forward("Min", lambda op, x: reduce_min(x, op.get_attr("axis"), op.get_attr("keepdims")))
RegisterGradient("Min", batched=True)(_extremum_grad)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over ``axis`` (op ``Prod``), as ``tf.reduce_prod``; the product of no values is 1.

    Gradient: for each element, the product of the *other* elements of its slice, computed
    without dividing (``y / x`` fails at zeros) as TensorFlow does: the exclusive cumulative
    product from the left times the one from the right. Both are written with minitape ops
    (slices, ``concat`` and ``Mul``), so the gradient is exact at zeros to every order and
    symmetric second derivatives come out symmetric.

    Raises:
        TypeError: a bool (or other non-numeric) Tensor. ValueError: an axis out of range.

    >>> import minitape as mt
    >>> x = mt.Variable([0.0, 2.0, 3.0])
    >>> with mt.GradientTape() as tape:
    ...     y = mt.reduce_prod(x)
    >>> tape.gradient(y, x).numpy()      # the products of the others: 2*3, 0*3, 0*2
    array([6., 0., 0.], dtype=float32)
    """
    return _reduce("Prod", np.multiply.reduce, input_tensor, axis, keepdims, name, True, False)


def _exclusive_cumprod(x):
    """``[1, x0, x0*x1, ..., x0*...*x(n-2)]`` along the last axis, with minitape ops only.

    A scan by doubling (Hillis and Steele): after the step with shift ``d``, each entry holds
    the product of up to ``2d`` entries ending at it; ``log2(n)`` steps of a slice, a
    ``concat`` and a ``Mul``, so every derivative of it is exact (no division anywhere).
    """
    n = x.shape[-1]
    lead = x.shape[:-1]
    p = array_ops.concat([array_ops.ones(lead + (1,), x.dtype), x[..., :n - 1]], axis=-1)
    d = 1
    while d < n:
        p = p * array_ops.concat([array_ops.ones(lead + (d,), x.dtype), p[..., :n - d]],
                                 axis=-1)
        d *= 2
    return p


register_forward("Prod", lambda op, x: reduce_prod(x, op.get_attr("axis"), op.get_attr("keepdims")))


@RegisterGradient("Prod", batched=True)
def _prod_grad(op, dy):
    (x,) = op.inputs
    axes = op.get_attr("axis")
    shape = op.input_shapes[0]
    if not x.size:
        return _spread(op, dy) * array_ops.ones(shape, x.dtype)
    # (No reduced axis, as for a rank-0 tensor, takes the same path: each product is of one
    # element, the product of the others is 1, and it still depends on x, so a second
    # derivative is 0, not None, as TensorFlow's.)
    # The reduced axes moved last and made one axis of length n: each row is one product.
    rest = [i for i in range(len(shape)) if i not in axes]
    perm = tuple(rest) + tuple(axes)
    rows = array_ops.reshape(array_ops.transpose(x, perm),
                             [shape[i] for i in rest] + [_pymath.prod(shape[a] for a in axes)])
    left = _exclusive_cumprod(rows)                       # product of the elements before
    right = _exclusive_cumprod(rows[..., ::-1])[..., ::-1]  # product of the elements after
    others = array_ops.reshape(left * right, [shape[i] for i in perm])
    others = array_ops.transpose(others, tuple(int(i) for i in np.argsort(perm)))
    return _spread(op, dy) * others


def norm(tensor, ord="euclidean", axis=None, keepdims=False, name=None):  # noqa: A002
    """Vector or Frobenius norm, as ``tf.norm``, composed of recorded ops.

    ``ord``: ``"euclidean"``/``"fro"``/2 (the default; over all axes it is the Frobenius norm),
    1, or ``np.inf``. The gradient of the euclidean norm at exactly 0 is NaN, as in TF.
    """
    tensor = math_ops.floating(tensor, "norm")
    axis = check_axes(axis, tensor.ndim, "norm", shape=tensor.shape)
    if ord in ("euclidean", "fro", 2, 2.0):
        return math_ops.sqrt(reduce_sum(tensor * tensor, axis=axis, keepdims=keepdims), name=name)
    if ord in (1, 1.0):
        return reduce_sum(math_ops.abs(tensor), axis=axis, keepdims=keepdims, name=name)
    if ord == np.inf:
        return reduce_max(math_ops.abs(tensor), axis=axis, keepdims=keepdims, name=name)
    raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2 or np.inf, got {ord!r}")


# -- composed reductions: logsumexp, variance, std ----------------------------------------------


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """``log(sum(exp(x), axis))`` without overflow, as ``tf.math.reduce_logsumexp``.

    Computed as ``m + log(sum(exp(x - m)))`` where ``m`` is the maximum over ``axis`` taken
    as a constant (TensorFlow stops the gradient there too; the result does not depend on
    ``m``, so its gradient is the same: ``softmax(x)`` along ``axis``). An all ``-inf`` slice
    gives ``-inf``, as TensorFlow. Composed of recorded ops (``Sub``, ``Exp``, ``Sum``, ``Log``,
    ``AddV2``), so every order of derivative and forward mode come for free.

    Args:
        input_tensor: a floating Tensor.
        axis: None (all axes), an int or a list of ints; negative counts from the end.
        keepdims: keep the reduced axes with size 1.

    Raises:
        TypeError: a non-floating input. ValueError: an axis out of range.

    >>> import minitape as mt
    >>> mt.math.reduce_logsumexp(mt.constant([1000.0, 1000.0])).numpy()   # no overflow
    np.float32(1000.6932)
    """
    x = math_ops.floating(input_tensor, "reduce_logsumexp")
    axes = check_axes(axis, x.ndim, "reduce_logsumexp", shape=x.shape)
    peak = np.maximum.reduce(x._value, axis=axes, keepdims=True) if x.size else \
        np.zeros([1 if i in axes else n for i, n in enumerate(x.shape)], x.dtype)
    peak = Tensor(np.where(np.isfinite(peak), peak, 0).astype(x.dtype))  # a constant
    total = reduce_sum(math_ops.exp(x - peak), axis=axes, keepdims=True)
    result = math_ops.log(total) + peak
    if not keepdims:
        result = array_ops.reshape(result, [n for i, n in enumerate(x.shape) if i not in axes])
    if name is not None:
        result.name = name
    return result


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The (biased) variance ``mean((x - mean(x))**2)`` over ``axis``, as
    ``tf.math.reduce_variance``, composed of recorded ops (``Mean``, ``Sub``, ``Square``).

    Raises:
        TypeError: a non-floating input (TensorFlow refuses integers too).
        ValueError: an axis out of range.

    >>> import minitape as mt
    >>> mt.math.reduce_variance(mt.constant([1.0, 2.0, 3.0, 4.0])).numpy()
    np.float32(1.25)
    """
    x = math_ops.floating(input_tensor, "reduce_variance")
    axes = check_axes(axis, x.ndim, "reduce_variance", shape=x.shape)
    mean = reduce_mean(x, axis=axes, keepdims=True)
    return reduce_mean(math_ops.square(x - mean), axis=axes, keepdims=keepdims, name=name)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(reduce_variance(x))``, as ``tf.math.reduce_std``.

    Its gradient is infinite (NaN) where every value of a slice is equal (the square root at
    0), as in TensorFlow.

    >>> import minitape as mt
    >>> mt.math.reduce_std(mt.constant([[1.0, 3.0], [2.0, 2.0]]), axis=1).numpy()
    array([1., 0.], dtype=float32)
    """
    x = math_ops.floating(input_tensor, "reduce_std")
    axes = check_axes(axis, x.ndim, "reduce_std", shape=x.shape)  # (named as reduce_std)
    variance = reduce_variance(x, axis=axes, keepdims=keepdims)
    return math_ops.sqrt(variance, name=name)


# -- cumsum: a scan whose gradient is the scan the other way ---------------------------------------


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along ``axis`` (op ``Cumsum``), as ``tf.math.cumsum``.

    ``exclusive=True`` leaves each element out of its own sum (the first is 0);
    ``reverse=True`` sums from the end. The gradient of a cumulative sum is the cumulative sum
    of ``dy`` in the opposite direction (same ``exclusive``), a Cumsum again, so every order
    of derivative works.

    Raises:
        TypeError: a non-numeric input, or an axis that is not an int.
        ValueError: an axis out of range (a 0-d input has no axis: TensorFlow refuses it too).

    >>> import minitape as mt
    >>> mt.math.cumsum(mt.constant([1.0, 2.0, 3.0])).numpy()
    array([1., 3., 6.], dtype=float32)
    >>> mt.math.cumsum(mt.constant([1.0, 2.0, 3.0]), exclusive=True, reverse=True).numpy()
    array([5., 3., 0.], dtype=float32)
    """
    x = convert_to_tensor(x, what="cumsum")
    if x.dtype.kind not in "iuf":
        raise TypeError(f"cumsum expects a numeric Tensor, got {x.dtype.name}")
    axis = check_axis(axis, x.ndim, "cumsum", shape=x.shape)
    y = Tensor(_cumsum_values(x._value, axis, bool(exclusive), bool(reverse)), name=name)
    record("Cumsum", (x,), (y,), attrs={"axis": axis, "exclusive": bool(exclusive),
                                        "reverse": bool(reverse)}, keep_inputs=False)
    return y


def _cumsum_values(v, axis, exclusive, reverse):
    if reverse:
        v = np.flip(v, axis)
    out = np.cumsum(v, axis=axis, dtype=v.dtype)
    if exclusive:  # shift by one: [0, x0, x0 + x1, ...]
        out = out - v
    return np.flip(out, axis).copy() if reverse else out


register_forward("Cumsum", lambda op, x: cumsum(x, op.get_attr("axis"), op.get_attr("exclusive"),
                                          op.get_attr("reverse")))


@RegisterGradient("Cumsum", batched=True)
def _cumsum_grad(op, dy):
    return cumsum(dy, axis=op.get_attr("axis") + op.batch_ndim,
                  exclusive=op.get_attr("exclusive"), reverse=not op.get_attr("reverse"))


# -- argmax, argmin: integer results, no gradient --------------------------------------------------


def _arg_extremum(op_type, fn, input, axis, output_type, name):  # noqa: A002
    from .. import dtypes
    x = convert_to_tensor(input, what=op_type)
    if x.dtype.kind not in "iuf":
        raise TypeError(f"{op_type} expects a numeric Tensor, got {x.dtype.name}")
    if x.ndim == 0:
        raise ValueError(f"{op_type} needs a Tensor of rank 1 or more, got a scalar")
    axis = check_axis(0 if axis is None else axis, x.ndim, op_type.lower(), shape=x.shape)
    output_type = dtypes.as_dtype(output_type)
    if output_type not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{op_type}: output_type must be mt.int32 or mt.int64, got "
                        f"{output_type.name}")
    y = Tensor(fn(x._value, axis=axis).astype(output_type), name=name)
    record(op_type, (x,), (y,), attrs={"axis": axis}, keep_inputs=False)
    return y


def argmax(input, axis=None, output_type=np.int64, name=None):  # noqa: A002
    """Index of the largest value along ``axis`` (op ``ArgMax``), as ``tf.math.argmax``.

    ``axis`` defaults to 0, as TensorFlow. Returns int64 (or ``output_type``); the first index
    wins a tie. Not differentiable: an index does not change smoothly with the values.

    >>> import minitape as mt
    >>> mt.math.argmax(mt.constant([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]]), axis=1)
    <mt.Tensor: shape=(2,), dtype=int64, numpy=array([1, 0])>
    """
    return _arg_extremum("ArgMax", np.argmax, input, axis, output_type, name)


def argmin(input, axis=None, output_type=np.int64, name=None):  # noqa: A002
    """Index of the smallest value along ``axis`` (op ``ArgMin``), as ``tf.math.argmin``.

    ``axis`` defaults to 0; returns int64 (or ``output_type``); not differentiable.
    """
    return _arg_extremum("ArgMin", np.argmin, input, axis, output_type, name)


no_gradient("ArgMax")
no_gradient("ArgMin")


# -- top_k: the k largest entries (beam search, d2l 10.8), gradient a scatter-add ---------------


# What ``top_k`` returns, as TensorFlow's named tuple of the same name.
TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=np.int32, name=None):  # noqa: A002
    """The ``k`` largest entries along the last axis and their indices (op ``TopKV2``), as
    ``tf.math.top_k`` (also ``tf.nn.top_k``).

    ``input`` of shape ``(..., n)``, int or float, rank 1 or more; ``k`` an int (or 0-d
    Tensor) in ``[0, n]``. Returns ``TopKV2(values, indices)``, both of shape ``(..., k)``:
    ``values`` of ``input``'s dtype in descending order, ``indices`` (int32, or
    ``index_type``) their positions; of two equal entries the lower index comes first, as in
    TensorFlow. ``sorted=False`` is accepted (TensorFlow leaves the order open then; minitape
    still sorts). The gradient of ``values`` goes back to the entries it took (a
    scatter-add, as ``tf.gather``'s); ``indices`` are integers, with no gradient. The tape
    records the ``values`` output.

    Raises:
        TypeError: a non-numeric ``input``, a ``k`` that is not an integer, an
            ``index_type`` other than int32 or int64.
        ValueError: a scalar ``input``.
        mt.errors.InvalidArgumentError (a ``ValueError``): ``k`` negative or larger than the
            last axis, with TensorFlow's message.

    >>> import minitape as mt
    >>> result = mt.math.top_k([1, 2, 98, 1, 1, 99, 3, 1, 3, 96, 4, 1], k=3)
    >>> result.values.numpy(), result.indices.numpy()
    (array([99, 98, 96], dtype=int32), array([5, 2, 9], dtype=int32))
    """
    from .. import dtypes
    from ..engine.tensor import check_name
    from .axes import invalid_argument
    x = convert_to_tensor(input, what="top_k")
    if x.dtype.kind not in "iuf":
        raise TypeError(f"top_k expects a numeric Tensor (int or float), got {x.dtype.name}")
    if x.ndim == 0:
        raise ValueError("top_k needs a Tensor of rank 1 or more (it takes the k largest "
                         f"entries along the last axis), got a scalar {x.numpy()!r}")
    if isinstance(k, Tensor) and k.ndim == 0 and k.dtype.kind in "iu":
        k = k.numpy().item()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"top_k: k must be an int (how many entries to keep), got {k!r:.40}")
    k, n = int(k), x.shape[-1]
    if k < 0:
        raise invalid_argument(f"top_k: Need k >= 0, got {k}")
    if k > n:
        raise invalid_argument(f"top_k: input must have at least k columns. Had {n}, needed "
                               f"{k} (input of shape {x.shape}: k can be at most {n})")
    index_type = dtypes.as_dtype(index_type)
    if index_type not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"top_k: index_type must be mt.int32 or mt.int64, got "
                        f"{index_type.name}")
    # Descending and stable (ties: lower index first): sort the reversed last axis ascending
    # (stable), reverse that order, and map positions of the reversed axis back.
    order = np.argsort(np.flip(x._value, -1), axis=-1, kind="stable")
    idx = (n - 1 - np.flip(order, -1))[..., :k]
    key = tuple(np.indices(idx.shape, sparse=True)[:-1]) + (idx,)
    values = array_ops._take(x, key, "TopKV2", {"k": k, "sorted": bool(sorted)})
    values.name = check_name(name, "top_k")
    return TopKV2(values, Tensor(idx.astype(index_type)))


register_forward("TopKV2", lambda op, x: top_k(x, op.get_attr("k")).values)


@RegisterGradient("TopKV2", batched=True)
def _top_k_grad(op, dy):
    # dy goes back to the entries that were taken, zeros elsewhere (as tf.gather's gradient)
    return array_ops.scatter_add(dy, op.get_attr("key"), op.input_shapes[0], op.batch_ndim)
