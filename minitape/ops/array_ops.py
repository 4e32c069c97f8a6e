"""Shape and indexing ops, and the functions that make new Tensors. Each forward, then its gradient.

Gradients of shape ops move ``dy`` back into the input's layout: reshape back, transpose by
the inverse permutation, slice the padding off, scatter-add a slice into zeros. The leading
``op.batch_ndim`` axes of ``dy`` (a vectorized Jacobian) are carried along untouched.
"""

from __future__ import annotations

import builtins
import string

import numpy as np

from .. import dtypes
from ..engine import backward as _backward, jacobians as _jacobians
from ..engine.registry import RegisterGradient, no_gradient, register_forward
from ..engine.recording import record
from ..engine.tensor import (Tensor, check_name, convert_to_tensor,
                             register_tensor_conversion_function)
from .axes import check_axes, check_axis, check_perm, invalid_argument


def as_shape(shape, op_type="shape"):
    """A shape argument (ints, 0-d int Tensors, a 1-D int Tensor, or a tuple) -> tuple of ints."""
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
        shape = [shape] if isinstance(shape, int) else shape
    if isinstance(shape, (int, np.integer)):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{op_type}: a shape must be a list or tuple of ints, got {shape!r}")
    out = []
    for n in shape:
        try:
            out.append(int(n.__index__()))
        except (AttributeError, TypeError):
            raise TypeError(f"{op_type}: every entry of a shape must be an int (or a 0-d int "
                            f"Tensor), got {n!r} in {shape!r}") from None
    return tuple(out)


def as_dims(shape, op_type, arg="shape", one=False):
    """``as_shape`` for a shape to create (zeros, eye, random ...): no negative sizes.

    ``arg`` names the argument in the message; ``one=True`` when ``shape`` is ``[size]``
    made from one size argument (``as_dims([num], "linspace", "num", one=True)``).
    """
    dims = as_shape(shape, op_type)
    if any(n < 0 for n in dims):
        shown = dims[0] if one else dims
        raise ValueError(f"{op_type}: sizes must be 0 or more, got {arg} {shown}; -1 (\"infer "
                         "this size\") only works in mt.reshape")
    return dims


# -- reshape, transpose, expand_dims, squeeze, broadcast_to ---------------------------------------


def reshape(tensor, shape, name=None):
    """Reshape (op ``Reshape``); one entry of ``shape`` may be -1, as ``tf.reshape``.

    Raises:
        mt.errors.InvalidArgumentError (a ``ValueError``): the number of elements does not
            match, with TensorFlow's words ("Input to reshape is a tensor with 30 values, but
            the requested shape requires a multiple of 7").
    """
    tensor = convert_to_tensor(tensor, what="reshape")
    shape = as_shape(shape, "reshape")
    if builtins.min(shape, default=0) < -1 or shape.count(-1) > 1:
        raise ValueError(f"reshape: shape={shape} is not a shape: sizes must be 0 or more, "
                         "except for one -1 that stands for \"the rest\" (e.g. [-1, 4])")
    try:
        value = tensor._value.reshape(shape)
    except ValueError:
        known = int(np.prod([d for d in shape if d != -1]))
        tf_words = (f"Input to reshape is a tensor with {tensor.size} values, but the requested "
                    + (f"shape requires a multiple of {known}" if -1 in shape
                       else f"shape has {known}"))
        raise invalid_argument(f"{tf_words} [Op:Reshape]. reshape: cannot reshape a Tensor of "
                               f"shape {tensor.shape} ({tensor.size} elements) into shape "
                               f"{shape}") from None
    y = Tensor(value, name=name)
    record("Reshape", (tensor,), (y,), keep_inputs=False)
    return y


register_forward("Reshape", lambda op, x: reshape(x, op.output_shapes[0]))


@RegisterGradient("Reshape", batched=True)
def _reshape_grad(op, dy):
    return reshape(dy, dy.shape[:op.batch_ndim] + op.input_shapes[0])


def transpose(a, perm=None, name=None):
    """Permute axes (op ``Transpose``); ``perm`` defaults to reversing them, as ``tf.transpose``.

    Raises:
        ValueError: ``perm`` is not a permutation of the axes (an entry out of range, a
            repeated axis, a wrong length); entries may be negative, counting from the end.
    """
    a = convert_to_tensor(a, what="transpose")
    perm = (tuple(builtins.range(a.ndim))[::-1] if perm is None
            else check_perm(perm, a.ndim, "transpose", shape=a.shape))
    return _transpose(a, perm, name)


def _transpose(a, perm, name=None):
    """The Transpose op itself, for a Tensor ``a`` and a checked ``perm`` of non-negative ints."""
    y = Tensor(a._value.transpose(perm), name=name)
    record("Transpose", (a,), (y,), attrs={"perm": perm}, keep_inputs=False)
    return y


register_forward("Transpose", lambda op, x: transpose(x, op.get_attr("perm")))


@RegisterGradient("Transpose", batched=True)
def _transpose_grad(op, dy):
    nb = op.batch_ndim
    inverse = np.argsort(op.get_attr("perm"))
    return transpose(dy, tuple(builtins.range(nb)) + tuple(int(p) + nb for p in inverse))


def matrix_transpose(a, name=None):
    """Swap the last two axes, as ``tf.linalg.matrix_transpose``."""
    a = convert_to_tensor(a, what="matrix_transpose")
    n = a.ndim
    if n < 2:
        raise ValueError(f"matrix_transpose needs rank 2 or more, got shape {a.shape}")
    # (The permutation is valid by construction: no need for transpose's checks.)
    return _transpose(a, tuple(builtins.range(n - 2)) + (n - 1, n - 2), name=name)


def expand_dims(input, axis, name=None):  # noqa: A002
    """Insert an axis of size 1 at ``axis`` (op ``ExpandDims``)."""
    input = convert_to_tensor(input, what="expand_dims")
    # (The new axis may go anywhere from before the first to after the last: rank + 1 places.)
    axis = check_axis(axis, input.ndim, "expand_dims", shape=input.shape, new_axis=True)
    shape = input._shape
    y = Tensor(input._value.reshape(shape[:axis] + (1,) + shape[axis:]), name=name)
    record("ExpandDims", (input,), (y,), keep_inputs=False)
    return y


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Remove axes of size 1 (all, or those in ``axis``) (op ``Squeeze``)."""
    input = convert_to_tensor(input, what="squeeze")
    if axis is not None:
        axis = check_axes(axis, input.ndim, "squeeze", shape=input.shape)
        for a in axis:
            if input.shape[a] != 1:
                raise invalid_argument(f"squeeze: axis={a} of shape {input.shape} has size "
                                 f"{input.shape[a]}, not 1; only axes of size 1 can be removed")
    y = Tensor(np.squeeze(input._value, axis=axis), name=name)
    record("Squeeze", (input,), (y,), keep_inputs=False)
    return y


register_forward("ExpandDims", lambda op, x: reshape(x, op.output_shapes[0]))
RegisterGradient("ExpandDims", batched=True)(_reshape_grad)
register_forward("Squeeze", lambda op, x: reshape(x, op.output_shapes[0]))
RegisterGradient("Squeeze", batched=True)(_reshape_grad)


def broadcast_to(input, shape, name=None):  # noqa: A002
    """Broadcast to ``shape`` (op ``BroadcastTo``); gradient: sum over the broadcast axes."""
    input = convert_to_tensor(input, what="broadcast_to")
    shape = as_shape(shape, "broadcast_to")
    # A new array filled by NumPy's broadcasting copy (as TensorFlow's op, which makes a new
    # tensor). ``np.broadcast_to`` would return a read-only view instead, but its Python
    # implementation costs ~5 us a call, more than the copy for all but large arrays.
    value = np.empty(shape, input._dtype)
    try:
        np.copyto(value, input._value)
    except ValueError:
        raise ValueError(f"broadcast_to: cannot broadcast shape {input.shape} to {shape}") \
            from None
    y = Tensor(value, name=name)
    record("BroadcastTo", (input,), (y,), keep_inputs=False)
    return y


register_forward("BroadcastTo", lambda op, x: broadcast_to(x, op.output_shapes[0]))


@RegisterGradient("BroadcastTo", batched=True)
def _broadcast_to_grad(op, dy):
    from .math_ops import unbroadcast
    return unbroadcast(dy, op.input_shapes[0], op.batch_ndim)


# -- indexing: getitem and gather, whose gradient is a scatter-add --------------------------------


def _index_key(key, op_type):
    """Normalize an indexing key: Tensors become ints or ndarrays; always a tuple."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k.numpy() if k.ndim else k.numpy().item()
        elif isinstance(k, (list, np.ndarray)):
            k = np.array(k)  # a copy: the key is saved for the gradient; the caller may change k
        if isinstance(k, np.ndarray) and k.dtype.kind not in "biu":
            raise TypeError(f"{op_type}: index arrays must be integer or bool, got {k.dtype}")
        if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice, np.ndarray))):
            raise TypeError(f"{op_type}: cannot index with {type(k).__name__} {k!r:.40}; use "
                            "ints, slices, None, ..., or integer/bool arrays")
        out.append(k)
    return tuple(out)


def _is_basic(key):
    return all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in key)


def _take(x, key, op_type, attrs):
    try:
        value = x._value[key]
    except IndexError as e:
        raise IndexError(f"{op_type}: index {key!r:.60} is out of range for shape {x.shape}: {e}") \
            from None
    y = Tensor(value)
    record(op_type, (x,), (y,), attrs=dict(attrs, key=key), keep_inputs=False)
    return y


def getitem(tensor, key):
    """``tensor[key]`` (op ``StridedSlice``): NumPy indexing; gradient: scatter-add into zeros."""
    tensor = convert_to_tensor(tensor, what="indexing")
    return _take(tensor, _index_key(key, "indexing"), "StridedSlice", {})


def gather(params, indices, axis=0, name=None):
    """Take ``indices`` along ``axis`` (op ``GatherV2``), as ``tf.gather`` (``batch_dims=0``).

    The gradient is a dense Tensor (a scatter-add), not TensorFlow's IndexedSlices: the
    Tensor that ``mt.convert_to_tensor`` makes of the ``mt.IndexedSlices`` TensorFlow returns.

    Raises:
        ValueError: ``axis`` out of range (a 0-d ``params`` has none).
        mt.errors.InvalidArgumentError (a ``ValueError``): an index out of ``[0, size)`` for
            that axis, with TensorFlow's message ``indices[0] = -1 is not in [0, 2)``: as in
            TensorFlow, a negative index is an error, not the last entry as in NumPy.
        TypeError: non-integer indices, a name that is not a str.
    """
    params = convert_to_tensor(params, what="gather")
    indices = np.asarray(convert_to_tensor(indices, what="gather indices").numpy())
    if indices.dtype.kind not in "iu":
        raise TypeError(f"gather: indices must be integers, got {indices.dtype}")
    axis = check_axis(axis, params.ndim, "gather", shape=params.shape)
    size = params.shape[axis]
    if indices.size and (indices.max() >= size or indices.min() < 0):
        # TensorFlow's message; its gather does not wrap a negative index around (NumPy does),
        # so a learner's off-by-one fails here instead of reading the last element.
        bad = np.argwhere((indices < 0) | (indices >= size))[0]
        where = ",".join(str(int(i)) for i in bad)
        raise invalid_argument((
            f"gather: indices[{where}] = {int(indices[tuple(bad)])} is not in [0, {size}) "
            f"(axis {axis} of params of shape {params.shape}); indices count from 0 and, unlike "
            f"NumPy's, never from the end: write {size} - 1 for the last entry"))
    y = _take(params, (slice(None),) * axis + (indices,), "GatherV2", {"axis": axis})
    y.name = check_name(name, "gather")
    return y


def _slice_grad(op, dy):
    return scatter_add(dy, op.get_attr("key"), op.input_shapes[0], op.batch_ndim)


register_forward("StridedSlice", lambda op, x: getitem(x, op.get_attr("key")))
RegisterGradient("StridedSlice", batched=True)(_slice_grad)
register_forward("GatherV2", lambda op, x: getitem(x, op.get_attr("key")))
RegisterGradient("GatherV2", batched=True)(_slice_grad)


def scatter_add(updates, key, shape, batch_ndim=0):
    """Zeros of ``batch + shape`` with ``updates`` added at ``[..batch.., *key]``.

    Op ``StridedSliceGrad``, the gradient of indexing.

    Repeated indices add up (``np.add.at``). Its gradient takes the same slice again.
    """
    updates = convert_to_tensor(updates, what="scatter_add")
    full_key = (slice(None),) * batch_ndim + key
    value = np.zeros(updates.shape[:batch_ndim] + tuple(shape), updates.dtype)
    if _is_basic(key):
        value[full_key] = updates._value
    else:
        np.add.at(value, full_key, updates._value)
    y = Tensor(value)
    record("StridedSliceGrad", (updates,), (y,), attrs={"key": key, "batch_ndim": batch_ndim},
           keep_inputs=False)
    return y


register_forward("StridedSliceGrad", lambda op, u: scatter_add(
    u, op.get_attr("key"), op.output_shapes[0][op.get_attr("batch_ndim"):],
    op.get_attr("batch_ndim")))


@RegisterGradient("StridedSliceGrad", batched=True)
def _scatter_add_grad(op, dy):
    nb = op.batch_ndim + op.get_attr("batch_ndim")
    return getitem(dy, (slice(None),) * nb + op.get_attr("key"))


# -- concat, stack, pad, tile ---------------------------------------------------------------------


def _tensors(values, op_type):
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{op_type} expects a non-empty list of Tensors, got {values!r:.60}")
    given = [v for v in values if isinstance(v, Tensor)]
    dtype = given[0].dtype if given else None  # Python values take the Tensors' dtype
    ts = [convert_to_tensor(v, dtype=None if isinstance(v, Tensor) else dtype, what=op_type)
          for v in values]
    for t in ts:
        if t.dtype != ts[0].dtype:
            raise TypeError(f"{op_type}: all Tensors need the same dtype, got "
                            f"{sorted({t.dtype.name for t in ts})}; use mt.cast")
    return ts


def concat(values, axis, name=None):
    """Join Tensors along an existing ``axis`` (op ``ConcatV2``), as ``tf.concat``."""
    ts = _tensors(values, "concat")
    axis = check_axis(axis, ts[0].ndim, "concat", shape=ts[0].shape)
    try:
        value = np.concatenate([t._value for t in ts], axis=axis)
    except (ValueError, np.exceptions.AxisError) as e:
        raise ValueError(f"concat: shapes {[t.shape for t in ts]} cannot be joined on axis "
                         f"{axis}: {e}") from None
    y = Tensor(value, name=name)
    record("ConcatV2", ts, (y,), attrs={"axis": axis}, keep_inputs=False)
    return y


register_forward("ConcatV2", lambda op, *xs: concat(list(xs), op.get_attr("axis")))


@RegisterGradient("ConcatV2", batched=True)
def _concat_grad(op, dy):
    nb, axis = op.batch_ndim, op.get_attr("axis")
    grads, start = [], 0
    for shape in op.input_shapes:
        stop = start + shape[axis]
        grads.append(getitem(dy, (slice(None),) * (nb + axis) + (slice(start, stop),)))
        start = stop
    return grads


def stack(values, axis=0, name=None):
    """Stack Tensors of one shape along a new ``axis`` (op ``Pack``), as ``tf.stack``."""
    ts = _tensors(values, "stack")
    axis = check_axis(axis, ts[0].ndim, "stack", shape=ts[0].shape, new_axis=True)
    try:
        value = np.stack([t._value for t in ts], axis=axis)
    except ValueError as e:
        raise ValueError(f"stack: shapes {[t.shape for t in ts]} cannot be stacked: {e}") from None
    y = Tensor(value, name=name)
    record("Pack", ts, (y,), attrs={"axis": axis}, keep_inputs=False)
    return y


register_forward("Pack", lambda op, *xs: stack(list(xs), op.get_attr("axis")))


@RegisterGradient("Pack", batched=True)
def _stack_grad(op, dy):
    nb, axis = op.batch_ndim, op.get_attr("axis")
    return [getitem(dy, (slice(None),) * (nb + axis) + (i,))
            for i in builtins.range(len(op.input_ids))]


def unstack(value, axis=0):
    """Split along ``axis`` into a list of Tensors, as ``tf.unstack`` (recorded slices).

    Raises:
        ValueError: ``axis`` out of range (a 0-d Tensor cannot be unstacked).
    """
    value = convert_to_tensor(value, what="unstack")
    axis = check_axis(axis, value.ndim, "unstack", shape=value.shape)
    return [getitem(value, (slice(None),) * axis + (i,)) for i in builtins.range(value.shape[axis])]


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pad with ``constant_values`` (op ``Pad``/``PadV2``), as ``tf.pad`` in ``"CONSTANT"`` mode.

    ``paddings``: one ``[before, after]`` pair per axis. ``constant_values`` may be a Tensor;
    its gradient is the sum of ``dy`` over the padding.
    """
    tensor = convert_to_tensor(tensor, what="pad")
    if str(mode).upper() != "CONSTANT":
        raise ValueError(f"pad: only mode='CONSTANT' is supported, got {mode!r}")
    pads = np.asarray(paddings.numpy() if isinstance(paddings, Tensor) else paddings)
    if pads.shape != (tensor.ndim, 2):
        raise ValueError(f"pad: paddings must have shape ({tensor.ndim}, 2) for a Tensor of rank "
                         f"{tensor.ndim}, got {pads.shape}")
    if pads.size and pads.dtype.kind not in "iu":
        raise TypeError(f"pad: paddings must be integers, got {pads.tolist()!r:.60}")
    if pads.size and pads.min() < 0:
        raise ValueError(f"pad: paddings must be 0 or more, got paddings={pads.tolist()}")
    pads = tuple((int(a), int(b)) for a, b in pads)
    fill_value = (constant_values if isinstance(constant_values, Tensor)
                  else convert_to_tensor(constant_values, dtype=tensor.dtype, what="pad"))
    fill_value = convert_to_tensor(fill_value, dtype=tensor.dtype, what="pad constant_values")
    value = np.pad(tensor._value, pads, constant_values=fill_value._value)
    y = Tensor(value, name=name)
    record("PadV2", (tensor, fill_value), (y,), attrs={"paddings": pads}, keep_inputs=False)
    return y


register_forward("PadV2", lambda op, x, c: pad(x, op.get_attr("paddings"), constant_values=c))


@RegisterGradient("PadV2", batched=True)
def _pad_grad(op, dy):
    from .reduction_ops import reduce_sum
    nb = op.batch_ndim
    inner = (slice(None),) * nb + tuple(slice(a, a + n) for (a, _), n in
                                        zip(op.get_attr("paddings"), op.input_shapes[0]))
    g_tensor = getitem(dy, inner)
    axes = list(builtins.range(nb, dy.ndim))
    g_fill = reduce_sum(dy, axis=axes) - reduce_sum(g_tensor, axis=axes)
    return g_tensor, reshape(g_fill, dy.shape[:nb] + op.input_shapes[1])


def tile(input, multiples, name=None):  # noqa: A002
    """Repeat ``input`` ``multiples[i]`` times along axis i (op ``Tile``), as ``tf.tile``."""
    input = convert_to_tensor(input, what="tile")
    multiples = as_dims(multiples, "tile", "multiples")
    if len(multiples) != input.ndim:
        raise ValueError(f"tile: multiples {multiples} needs one entry per axis of shape "
                         f"{input.shape}")
    y = Tensor(np.tile(input._value, multiples), name=name)
    record("Tile", (input,), (y,), attrs={"multiples": multiples}, keep_inputs=False)
    return y


register_forward("Tile", lambda op, x: tile(x, op.get_attr("multiples")))


@RegisterGradient("Tile", batched=True)
def _tile_grad(op, dy):
    from .reduction_ops import reduce_sum
    nb = op.batch_ndim
    split = dy.shape[:nb]
    for m, n in zip(op.get_attr("multiples"), op.input_shapes[0]):
        split += (m, n)  # the tiled axis m*n viewed as (copy, element)
    g = reshape(dy, split)
    return reduce_sum(g, axis=[nb + 2 * i for i in builtins.range(len(op.input_shapes[0]))])


# -- where, identity, stop_gradient ---------------------------------------------------------------


def where(condition, x=None, y=None, name=None):
    """Elementwise select (op ``SelectV2``), as ``tf.where``.

    ``where(c, x, y)``: ``x`` where ``c`` is true, else ``y`` (broadcasting); gradient goes to
    the chosen side. ``where(c)`` alone returns the int64 indices of the true entries.
    """
    condition = convert_to_tensor(condition, what="where condition")
    if condition.dtype != np.bool_:
        raise TypeError(f"where: condition must be a bool Tensor, got {condition.dtype.name}")
    if x is None and y is None:
        return Tensor(np.argwhere(condition._value).astype(np.int64))
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    from .math_ops import binary_operands
    x, y = binary_operands(x, y, "SelectV2")
    try:
        value = np.where(condition._value, x._value, y._value)
    except ValueError:
        raise ValueError(f"where: the shapes of condition {condition.shape}, x {x.shape} and y "
                         f"{y.shape} do not broadcast together; reshape them so that they do") \
            from None
    z = Tensor(value, name=name)
    record("SelectV2", (condition, x, y), (z,), keep_inputs={0})
    return z


register_forward("SelectV2", lambda op, c, x, y: where(c, x, y))


@RegisterGradient("SelectV2", batched=True)
def _where_grad(op, dy):
    from .math_ops import unbroadcast
    condition = op.inputs[0]
    nb = op.batch_ndim
    zeros = zeros_like(dy)
    return (None, unbroadcast(where(condition, dy, zeros), op.input_shapes[1], nb),
            unbroadcast(where(condition, zeros, dy), op.input_shapes[2], nb))


def identity(input, name=None):  # noqa: A002
    """A new Tensor with the same value (op ``Identity``); the gradient passes through."""
    input = convert_to_tensor(input, what="identity")
    y = Tensor(input._value, name=name)
    record("Identity", (input,), (y,), keep_inputs=False)
    return y


register_forward("Identity", lambda op, x: identity(x))


@RegisterGradient("Identity", batched=True)
def _identity_grad(op, dy):
    return dy


def stop_gradient(input, name=None):  # noqa: A002
    """Identity whose gradient is ``None`` (op ``StopGradient``), as ``tf.stop_gradient``.

    >>> import minitape as mt
    >>> x = mt.Variable(2.0)
    >>> with mt.GradientTape() as tape:
    ...     y = x * mt.stop_gradient(x)
    >>> tape.gradient(y, x).numpy()   # only the first factor is differentiated: 2.0
    np.float32(2.0)
    """
    input = convert_to_tensor(input, what="stop_gradient")
    y = Tensor(input._value, name=name)
    record("StopGradient", (input,), (y,), keep_inputs=False)
    return y


no_gradient("StopGradient")


# -- einsum ---------------------------------------------------------------------------------------


def _parse_einsum(equation, ndims):
    """Equation -> (input subscripts, output subscripts), with ``...`` spelled out as letters."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(ndims):
        raise ValueError(f"einsum: equation {equation!r} names {len(subs)} operand(s), got "
                         f"{len(ndims)}")
    used = set(equation) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    n_ell = builtins.max([n - (len(s) - 3) for s, n in zip(subs, ndims) if "..." in s] or [0])
    ell = "".join(spare[:n_ell])
    out_subs = []
    for s, n in zip(subs, ndims):
        if "..." in s:
            k = n - (len(s) - 3)
            s = s.replace("...", ell[n_ell - k:] if k else "")
        if len(s) != n:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand of rank {n}")
        out_subs.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        letters = "".join(out_subs)
        once = [c for c in set(letters) if letters.count(c) == 1 and c not in ell]
        out = ell + "".join(sorted(once))
    return out_subs, out


def einsum(equation, *inputs, name=None):
    """Einstein summation (op ``Einsum``), as ``tf.einsum``.

    The gradient for operand k is itself an einsum: ``dy`` contracted with the other operands
    into operand k's subscripts; letters only operand k has are broadcast back (a ones
    vector), and repeated letters (a diagonal, e.g. ``'bxby->bxy'``) are put back on the
    diagonal (an identity matrix).
    """
    from .math_ops import binary_operands
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the first argument must be the equation string, got "
                        f"{equation!r:.40}")
    ts = [convert_to_tensor(x, what="einsum") for x in inputs]
    for t in ts[1:]:
        binary_operands(ts[0], t, "Einsum")  # same dtype check as every binary op
    subs, out = _parse_einsum(equation, [t.ndim for t in ts])
    explicit = ",".join(subs) + "->" + out
    try:
        value = np.einsum(explicit, *[t._value for t in ts])
    except ValueError as e:
        raise ValueError(f"einsum {equation!r} with shapes {[t.shape for t in ts]}: {e}") from None
    y = Tensor(value, name=name)
    record("Einsum", ts, (y,), attrs={"equation": explicit})
    return y


register_forward("Einsum", lambda op, *xs: einsum(op.get_attr("equation"), *xs))


@RegisterGradient("Einsum", batched=True)
def _einsum_grad(op, dy):
    lhs, out = op.get_attr("equation").split("->")
    subs = lhs.split(",")
    ts = op.inputs
    spare = [c for c in string.ascii_letters if c not in op.get_attr("equation")]
    batch = "".join(spare[:op.batch_ndim])
    spare = spare[op.batch_ndim:]
    grads = []
    for k, sub in enumerate(subs):
        terms, operands = [batch + out], [dy]
        for j, other in enumerate(subs):
            if j != k:
                terms.append(other)
                operands.append(ts[j])
        available = set("".join(terms))
        target = ""
        for pos, c in enumerate(sub):
            size = op.input_shapes[k][pos]
            if c in target:  # a repeated letter: a fresh letter tied to c by an identity matrix
                fresh = spare.pop(0)
                terms.append(c + fresh)
                operands.append(eye(size, dtype=dy.dtype))
                c = fresh
            elif c not in available:  # summed away in the forward pass: broadcast back
                terms.append(c)
                operands.append(ones((size,), dtype=dy.dtype))
                available.add(c)
            target += c
        grads.append(einsum(",".join(terms) + "->" + batch + target, *operands))
    return grads


# -- making Tensors (not recorded: they have no tensor inputs) ------------------------------------


def zeros(shape, dtype=dtypes.float32, name=None):
    """Zeros of ``shape`` (float32 by default), as ``tf.zeros``."""
    return Tensor(np.zeros(as_dims(shape, "zeros"), dtypes.check_dtype(dtype, "zeros")),
                  name=name)


def ones(shape, dtype=dtypes.float32, name=None):
    """Ones of ``shape`` (float32 by default), as ``tf.ones``."""
    return Tensor(np.ones(as_dims(shape, "ones"), dtypes.check_dtype(dtype, "ones")), name=name)


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros with ``input``'s shape and dtype (not connected to ``input``)."""
    input = input if isinstance(input, Tensor) else convert_to_tensor(input, what="zeros_like")
    return Tensor(np.zeros(input.shape, dtypes.check_dtype(dtype, "zeros_like") or input.dtype),
                  name=name)


def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones with ``input``'s shape and dtype (not connected to ``input``)."""
    input = input if isinstance(input, Tensor) else convert_to_tensor(input, what="ones_like")
    dtype = input._dtype if dtype is None else dtypes.check_dtype(dtype, "ones_like")
    # Every gradient's seed is made here. A 0-d one (a loss) is a NumPy scalar, as a Python
    # float is in ``x * 0.5``; any other is ``np.ones``' own two steps, without its Python layer.
    if not input._shape:
        return Tensor(dtype.type(1), name=name)
    value = np.empty(input._shape, dtype)
    value.fill(1)
    return Tensor(value, name=name)


def fill(dims, value, name=None):
    """A Tensor of shape ``dims`` filled with the scalar ``value`` (its dtype), as ``tf.fill``.

    Recorded (op ``Fill``): every element is ``value``, so the gradient with respect to
    ``value`` is the sum of the incoming gradient, as in TensorFlow.

    Raises:
        ValueError: ``value`` is not a scalar, or ``dims`` has a negative size.

    >>> import minitape as mt
    >>> v = mt.Variable(2.0)
    >>> with mt.GradientTape() as tape:
    ...     y = mt.reduce_sum(mt.fill([2, 3], v) * mt.constant([1., 2., 3.]))
    >>> tape.gradient(y, v).numpy()   # (1 + 2 + 3) * 2 rows
    np.float32(12.0)
    """
    value = convert_to_tensor(value, what="fill")
    if value.ndim != 0:
        raise ValueError(f"fill: value must be a scalar (0-d), got shape {value.shape}; use "
                         "mt.broadcast_to to repeat a Tensor")
    dims = as_dims(dims, "fill", "dims")
    y = Tensor(np.full(dims, value._value), name=name)
    record("Fill", (value,), (y,), attrs={"dims": dims}, keep_inputs=False)
    return y


register_forward("Fill", lambda op, v: fill(op.get_attr("dims"), v))


@RegisterGradient("Fill", batched=True)
def _fill_grad(op, dy):
    from .reduction_ops import reduce_sum
    return reduce_sum(dy, axis=list(builtins.range(op.batch_ndim, dy.ndim)))


def eye(num_rows, num_columns=None, dtype=dtypes.float32, name=None):
    """Identity matrix ``(num_rows, num_columns)``, as ``tf.eye``."""
    n = as_dims([num_rows], "eye", "num_rows", one=True)[0]
    m = n if num_columns is None else as_dims([num_columns], "eye", "num_columns", one=True)[0]
    return Tensor(np.eye(n, m, dtype=dtypes.check_dtype(dtype, "eye")), name=name)


def linspace(start, stop, num, name=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive, as ``tf.linspace``.

    Raises:
        TypeError: ``num`` is not an int. ValueError: ``num`` is negative.
    """
    start = convert_to_tensor(start, what="linspace")
    stop = convert_to_tensor(stop, dtype=start.dtype, what="linspace")
    (num,) = as_dims([num], "linspace", "num", one=True)
    y = Tensor(np.linspace(start._value, stop._value, num).astype(start.dtype), name=name)
    if y.dtype.kind == "f":  # differentiable in start and stop (op ``LinSpace``), as TensorFlow
        record("LinSpace", (start, stop), (y,), keep_inputs=False)
    return y


register_forward("LinSpace", lambda op, a, b: linspace(a, b, op.output_shapes[0][0]))


@RegisterGradient("LinSpace", batched=True)
def _linspace_grad(op, dy):
    # y[k] = start + (stop - start) * f[k] with f[k] = k / (num - 1): linear in start and stop.
    from .math_ops import unbroadcast
    from .reduction_ops import reduce_sum
    shape = op.output_shapes[0]
    f = np.linspace(0.0, 1.0, shape[0]).reshape((shape[0],) + (1,) * (len(shape) - 1))
    f = Tensor(f.astype(dy.dtype))
    nb = op.batch_ndim
    return (unbroadcast(reduce_sum(dy * (1.0 - f), axis=nb), op.input_shapes[0], nb),
            unbroadcast(reduce_sum(dy * f, axis=nb), op.input_shapes[1], nb))


def range(start, limit=None, delta=1, dtype=None, name=None):  # noqa: A001
    """``[start, start+delta, ...)`` up to ``limit`` (excluded), as ``tf.range``.

    ``range(n)`` counts from 0. Without ``dtype`` the dtype comes from the arguments, as
    TensorFlow infers it: the widest of their dtypes in the order int32 < int64 < float32 <
    float64, so Python ints give int32 and any Python float gives float32 (``range(10.)`` and
    ``range(0, 1, 0.25)`` are float32). With ``dtype`` the Python arguments are converted to it
    (without losing information, as ``mt.constant``).

    Returns:
        A 1-D Tensor of ``ceil((limit - start) / delta)`` elements (none if that is <= 0),
        counted and filled in its dtype as TensorFlow's kernel does: the elements are a
        running sum ``start, start + delta, ...`` (in float32, ``range(-2, 2, 0.01)`` has 400
        elements and its last is ``1.9899968``, where float64 would give 401 and ``1.99``).

    Raises:
        ValueError: ``delta`` is 0 (the range would never reach ``limit``), as TensorFlow; an
            argument that is not a scalar, or not finite.
        TypeError: a non-numeric argument or ``dtype``, or a bool.

    >>> import minitape as mt
    >>> mt.range(5)
    <mt.Tensor: shape=(5,), dtype=int32, numpy=array([0, 1, 2, 3, 4], dtype=int32)>
    >>> mt.range(3.)
    <mt.Tensor: shape=(3,), dtype=float32, numpy=array([0., 1., 2.], dtype=float32)>
    >>> mt.range(1, 2, 0.25).numpy()
    array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    """
    if limit is None:
        start, limit = 0, start
    dtype = dtypes.check_dtype(dtype, "range")
    if dtype is not None and dtype.kind not in "iuf":
        raise TypeError(f"range: dtype={dtype.name} is not supported; a range has an integer or "
                        "floating dtype (as tf.range), e.g. mt.int32 or mt.float32")
    args = {}
    for arg, v in (("start", start), ("limit", limit), ("delta", delta)):
        t = convert_to_tensor(v, dtype=None if isinstance(v, Tensor) else dtype, what="range")
        if t.dtype.kind not in "iuf":
            raise TypeError(f"range: {arg} must be an int or a float, got {arg}={v!r:.40} "
                            f"({t.dtype.name})")
        if t.ndim != 0:
            raise ValueError(f"range: {arg} must be a scalar, got shape {t.shape}")
        if not np.isfinite(t._value):
            raise ValueError(f"range: {arg} must be a finite number, got {arg}={t._value}")
        args[arg] = t
    if args["delta"]._value == 0:
        raise ValueError(f"range: delta={delta!r} would never reach limit={limit!r}; delta must "
                         "not be 0 (e.g. delta=1, or a negative delta to count down)")
    if dtype is None:  # TensorFlow's order: int32 < int64 < float32 < float64
        dtype = max((t.dtype for t in args.values()),
                    key=lambda d: (d.kind == "f", d.itemsize))
    # As TensorFlow's kernel (RangeOp): the arguments in the result's dtype, the length
    # ceil(|(limit - start) / delta|) computed in that dtype (float32 for Python floats: 400
    # elements for range(-2, 2, 0.01), where float64 arithmetic gives 401), and the values a
    # running sum, start, start + delta, (start + delta) + delta, ... in that dtype.
    start, limit, delta = (args[k]._value.astype(dtype) for k in ("start", "limit", "delta"))
    if dtype.kind == "f":
        size = int(np.ceil(np.abs((limit - start) / delta))) if (limit - start) / delta > 0 else 0
    else:
        size = max(0, -(-int(limit - start) // int(delta)))
    steps = np.full(size, delta, dtype)
    if size:
        steps[0] = start
    return Tensor(np.add.accumulate(steps, dtype=dtype), name=name)


def shape(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shape as a 1-D int32 Tensor, as ``tf.shape``."""
    input = input if isinstance(input, Tensor) else convert_to_tensor(input, what="shape")
    return Tensor(np.array(input.shape, dtype=out_type), name=name)


def size(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The number of elements as a 0-d int32 Tensor, as ``tf.size``."""
    input = input if isinstance(input, Tensor) else convert_to_tensor(input, what="size")
    return Tensor(np.array(input.size, dtype=out_type), name=name)


def rank(input, name=None):  # noqa: A002
    """The number of axes of ``input`` as a 0-d int32 Tensor, as ``tf.rank``.

    ``x.ndim`` gives the same number as a Python int. Not differentiable (an integer).

    Raises:
        TypeError: ``input`` cannot be converted to a Tensor.

    >>> import minitape as mt
    >>> mt.rank(mt.zeros([3, 2, 4]))
    <mt.Tensor: shape=(), dtype=int32, numpy=3>
    """
    input = input if isinstance(input, Tensor) else convert_to_tensor(input, what="rank")
    return Tensor(np.array(input.ndim, dtype=dtypes.int32), name=name)


# -- split, reverse, boolean_mask, one_hot --------------------------------------------------------


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Split ``value`` along ``axis`` into a list of Tensors, as ``tf.split``.

    ``num_or_size_splits``: an int ``n`` (``n`` equal pieces; op ``Split``) or a list of sizes
    that add up to the axis length, one of which may be -1 for "the rest" (op ``SplitV``).
    One op with several outputs; its gradient concatenates the pieces' gradients (zeros for a
    piece that got none), as TensorFlow's.

    Raises:
        ValueError: an axis out of range, a length not divisible by ``n``, sizes that do not
            add up, or more than one -1.
        TypeError: ``num_or_size_splits`` is neither an int nor a list of ints.

    >>> import minitape as mt
    >>> a, b = mt.split(mt.constant([1., 2., 3., 4., 5.]), [2, -1])
    >>> b.numpy()
    array([3., 4., 5.], dtype=float32)
    """
    from .axes import check_axis
    value = convert_to_tensor(value, what="split")
    axis = check_axis(axis, value.ndim, "split", shape=value.shape)
    length = value.shape[axis]
    if isinstance(num_or_size_splits, Tensor) and num_or_size_splits.ndim == 0:
        num_or_size_splits = num_or_size_splits._value.item()  # a 0-d Tensor: a count
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits,
                                                                           bool):
        n = int(num_or_size_splits)
        if n <= 0 or length % n:
            raise ValueError(f"split: cannot split axis {axis} of length {length} (shape "
                             f"{value.shape}) into {n} equal pieces; give a number that divides "
                             f"{length}, or a list of sizes such as [{length // 2}, -1]")
        sizes, op_type = [length // n] * n, "Split"
    else:
        sizes, op_type = list(as_shape(num_or_size_splits, "split")), "SplitV"
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise ValueError(f"split: size_splits {sizes} may hold one -1 (\"the rest\") and "
                             "otherwise sizes of 0 or more")
        if -1 in sizes:
            rest = length - (sum(sizes) + 1)
            if rest < 0:
                raise ValueError(f"split: sizes {sizes} already exceed the length {length} of "
                                 f"axis {axis}")
            sizes[sizes.index(-1)] = rest
        if sum(sizes) != length:
            raise ValueError(f"split: sizes {sizes} add up to {sum(sizes)}, but axis {axis} of "
                             f"shape {value.shape} has length {length}; make them add up, or "
                             "use -1 for one of them")
        if not sizes:
            raise ValueError("split: size_splits must not be empty")
    if num is not None and int(num) != len(sizes):
        raise ValueError(f"split: num={num} but the split gives {len(sizes)} pieces")
    cuts = np.cumsum(sizes)[:-1]
    pieces = [Tensor(p) for p in np.split(value._value, cuts, axis=axis)]
    record(op_type, (value,), tuple(pieces), attrs={"axis": axis, "sizes": tuple(sizes)},
           keep_inputs=False)
    return pieces


register_forward("Split", lambda op, x: tuple(split(x, list(op.get_attr("sizes")),
                                                       op.get_attr("axis"))))


@RegisterGradient("Split", batched=True)
def _split_grad(op, *dys):
    return concat(list(dys), axis=op.get_attr("axis") + op.batch_ndim)


register_forward("SplitV", lambda op, x: tuple(split(x, list(op.get_attr("sizes")),
                                                       op.get_attr("axis"))))
RegisterGradient("SplitV", batched=True)(_split_grad)


def reverse(tensor, axis, name=None):
    """Reverse the order of the elements along each axis in ``axis`` (op ``ReverseV2``), as
    ``tf.reverse``. ``axis`` is a list of ints (an int is accepted too); the gradient is
    ``dy`` reversed along the same axes.

    Raises:
        ValueError: an axis out of range or named twice.

    >>> import minitape as mt
    >>> mt.reverse(mt.constant([[1., 2., 3.]]), axis=[1]).numpy()
    array([[3., 2., 1.]], dtype=float32)
    """
    from .axes import check_axes
    tensor = convert_to_tensor(tensor, what="reverse")
    axes = check_axes(axis, tensor.ndim, "reverse", shape=tensor.shape)
    y = Tensor(np.flip(tensor._value, axes).copy(), name=name)
    record("ReverseV2", (tensor,), (y,), attrs={"axis": axes}, keep_inputs=False)
    return y


register_forward("ReverseV2", lambda op, x: reverse(x, list(op.get_attr("axis"))))


@RegisterGradient("ReverseV2", batched=True)
def _reverse_grad(op, dy):
    return reverse(dy, [a + op.batch_ndim for a in op.get_attr("axis")])


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The entries of ``tensor`` where ``mask`` is True, as ``tf.boolean_mask``.

    ``mask`` (rank ``k`` >= 1) must have the shape of ``tensor``'s axes ``axis`` to
    ``axis + k`` (``axis`` defaults to 0); those axes become one axis holding the selected
    entries, in row-major order. As in TensorFlow this is a ``Reshape`` then a ``GatherV2``
    (so the gradient scatters ``dy`` back to the selected places, zeros elsewhere).

    ``mask`` is bool, or numbers where non-zero means True: TensorFlow finds the selected
    places with ``tf.where(mask)``, which takes numbers too, so "Dive into Deep Learning"'s
    ``tf.boolean_mask(y_hat, tf.one_hot(y, depth=3))`` picks each row's entry of class ``y``.

    Raises:
        TypeError: a mask that is neither bool nor numbers (strings, ``None``).
        ValueError: a scalar mask, or a mask whose shape does not match ``tensor``'s.

    >>> import minitape as mt
    >>> x = mt.constant([[1., 2.], [3., 4.]])
    >>> mt.boolean_mask(x, [[True, False], [False, True]]).numpy()
    array([1., 4.], dtype=float32)
    >>> mt.boolean_mask(x, mt.one_hot([1, 0], depth=2)).numpy()
    array([2., 3.], dtype=float32)
    """
    from .axes import check_axis
    tensor = convert_to_tensor(tensor, what="boolean_mask")
    m = mask._value if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype.kind not in "biuf":
        raise TypeError(f"boolean_mask: mask must be bool (or numbers, non-zero meaning True), "
                        f"got {m.dtype}; compare first, e.g. mt.math.greater(x, 0.0)")
    if m.ndim == 0:
        raise ValueError("boolean_mask: mask must have rank 1 or more, got a scalar")
    axis = check_axis(0 if axis is None else axis, tensor.ndim, "boolean_mask",
                      shape=tensor.shape)
    covered = tensor.shape[axis:axis + m.ndim]
    if covered != m.shape:
        raise ValueError(f"boolean_mask: a mask of shape {m.shape} does not match axes {axis} "
                         f"to {axis + m.ndim - 1} of a Tensor of shape {tensor.shape} "
                         f"(they have shape {covered})")
    flat_shape = tensor.shape[:axis] + (m.size,) + tensor.shape[axis + m.ndim:]
    flat = reshape(tensor, flat_shape)
    return gather(flat, np.flatnonzero(m), axis=axis, name=name)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """One-hot vectors (op ``OneHot``), as ``tf.one_hot``.

    The result has ``indices``' shape with a new axis of size ``depth`` at ``axis`` (the last
    by default): ``on_value`` (1) where the position equals the index, else ``off_value`` (0).
    An index outside ``[0, depth)`` gives a vector of ``off_value`` (TensorFlow's rule, used
    for "no label"). ``dtype`` is float32 unless given or taken from ``on_value``.

    ``on_value`` and ``off_value`` may be floating Tensors, and their gradients are the sums of
    ``dy`` over the on and off places (TensorFlow returns None there; a silent None teaches
    nothing). ``indices`` gets no gradient: they are integers.

    Raises:
        TypeError: non-integer indices, or on/off values of different dtypes.
        ValueError: a negative depth or an axis out of range.

    >>> import minitape as mt
    >>> mt.one_hot([0, 2], 3).numpy()
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    from .axes import check_axis
    indices = convert_to_tensor(indices, what="one_hot indices")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"one_hot: indices must be integers, got {indices.dtype.name}; use "
                        "mt.cast(indices, mt.int32)")
    depth = as_dims([depth], "one_hot depth")[0]
    axis = check_axis(-1 if axis is None else axis, indices.ndim, "one_hot",
                      shape=indices.shape, new_axis=True)
    given = [v for v in (on_value, off_value) if isinstance(v, Tensor)]
    dtype = dtypes.as_dtype(dtype) if dtype is not None else (
        given[0].dtype if given else np.dtype(np.float32))
    on = convert_to_tensor(1 if on_value is None else on_value, dtype=dtype, what="one_hot")
    off = convert_to_tensor(0 if off_value is None else off_value, dtype=dtype, what="one_hot")
    if on.ndim or off.ndim:
        raise ValueError(f"one_hot: on_value and off_value must be scalars, got shapes "
                         f"{on.shape} and {off.shape}")
    mask = _one_hot_mask(indices._value, depth, axis)
    y = Tensor(np.where(mask, on._value, off._value).astype(dtype), name=name)
    record("OneHot", (indices, on, off), (y,), attrs={"depth": depth, "axis": axis},
           keep_inputs={0})
    return y


def _one_hot_mask(indices, depth, axis):
    """Bool array: ``indices`` with a new axis of ``depth`` at ``axis``, True at each index."""
    positions = np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - axis))
    return np.expand_dims(indices, axis) == positions


register_forward("OneHot", lambda op, i, on, off: one_hot(i, op.get_attr("depth"), on, off,
                                                           op.get_attr("axis")))


@RegisterGradient("OneHot", batched=True)
def _one_hot_grad(op, dy):
    from .reduction_ops import reduce_sum
    indices = op.inputs[0]
    mask = _one_hot_mask(indices._value, op.get_attr("depth"), op.get_attr("axis"))
    on = Tensor(mask.astype(dy.dtype))
    axes = list(builtins.range(op.batch_ndim, dy.ndim))
    return None, reduce_sum(dy * on, axis=axes), reduce_sum(dy * (1.0 - on), axis=axes)


# -- a gradient without batch axes, in a vectorized Jacobian ---------------------------------------


def call_per_row(op, fn, out_grads, batch_ndim):
    """Call the gradient function ``fn`` of ``op`` once per batch row, and stack the rows.

    A vectorized Jacobian runs the backward pass with ``batch_ndim`` leading batch axes on
    every cotangent; a gradient function registered without ``batched=True`` (or a
    ``custom_gradient``) knows only the unbatched shapes, so the walk
    (``engine.backward.call_gradient``) calls it through this loop, installed there as
    ``backward.call_per_row`` (the engine imports nothing from the ops).
    """
    batch_shape = out_grads[0].shape[:batch_ndim]
    flat = [reshape(g, (-1,) + g.shape[batch_ndim:]) for g in out_grads]
    op.batch_ndim = 0
    rows = []
    for r in builtins.range(flat[0].shape[0]):
        row = fn(op, *[g[r] for g in flat])
        rows.append(list(row) if isinstance(row, (list, tuple)) else [row])
    op.batch_ndim = batch_ndim
    result = []
    for k in builtins.range(len(rows[0])):
        column = [row[k] for row in rows]
        if any(c is None for c in column):
            result.append(None)
            continue
        stacked = stack(column)
        result.append(reshape(stacked, batch_shape + stacked.shape[1:]))
    return result


_backward.call_per_row = call_per_row


def _len(tensor):
    if tensor.ndim == 0:
        raise TypeError("len() of a 0-d Tensor (a scalar) is not defined")
    return tensor.shape[0]


def _iter(tensor):
    if tensor.ndim == 0:
        raise TypeError("iteration over a 0-d Tensor (a scalar) is not defined")
    return (getitem(tensor, i) for i in builtins.range(tensor.shape[0]))


# ``x[0]``, ``x[:, 1]``, ``len(x)`` and ``for row in x`` on a Tensor: ``getitem`` (the ops give
# the engine's Tensor its operators, as TensorFlow's array_ops does; the arithmetic ones are
# attached in ``math_ops``).
Tensor.__getitem__ = getitem
Tensor.__len__ = _len
Tensor.__iter__ = _iter


def _contains_tensor(seq):
    return builtins.any(isinstance(item, Tensor) or isinstance(item, (list, tuple))
                        and _contains_tensor(item) for item in seq)


def _autopack(value, dtype, name, what):
    """``mt.constant([x, 2.0 * x])``: a list that holds Tensors is stacked, a recorded op, so
    gradients flow to its entries (TensorFlow's autopacking)."""
    if not _contains_tensor(value):
        return NotImplemented
    return stack([convert_to_tensor(v, dtype=dtype, what=what) for v in value], name=name)


register_tensor_conversion_function((list, tuple), _autopack, priority=99)   # (before data)


# The engine reshapes, transposes and joins gradients with these recorded ops (the rows of a
# vectorized Jacobian), but imports nothing above it: the ops install them.
_jacobians.reshape, _jacobians.transpose = reshape, transpose
_jacobians.stack, _jacobians.concat = stack, concat


# -- "Dive into Deep Learning", chapter 11 (d2lattn): repeat and sort, made of GatherV2 ---------


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Repeat each entry of ``input`` along ``axis``, as ``tf.repeat`` (and ``np.repeat``).

    ``repeats`` is an int, or one int per entry along ``axis`` (a list or 1-D int Tensor of
    length ``input.shape[axis]``); ``axis=None`` flattens ``input`` first. Entry ``i`` comes
    ``repeats[i]`` times, in order: ``repeat([[1, 2], [3, 4]], 2, axis=0)`` is
    ``[[1, 2], [1, 2], [3, 4], [3, 4]]``. As TensorFlow's (a composite of ops), it records no
    op of its own: a ``GatherV2`` (after a ``Reshape`` for ``axis=None``), whose gradient adds
    up the copies' cotangents.

    Raises:
        ValueError: ``axis`` out of range (a scalar ``input`` needs ``axis=None``).
        mt.errors.InvalidArgumentError (a ``ValueError``): ``repeats`` of the wrong length,
            negative, or not a scalar or a vector.
        TypeError: non-integer ``repeats``.

    >>> import minitape as mt
    >>> mt.repeat(mt.constant([1, 2]), repeats=[2, 3]).numpy()
    array([1, 1, 2, 2, 2], dtype=int32)
    >>> mt.repeat(mt.constant([[1., 2.], [3., 4.]]), 2, axis=0).numpy()
    array([[1., 2.],
           [1., 2.],
           [3., 4.],
           [3., 4.]], dtype=float32)
    """
    input = convert_to_tensor(input, what="repeat")
    counts = np.asarray(convert_to_tensor(repeats, what="repeat repeats").numpy())
    if counts.dtype.kind not in "iu":
        raise TypeError(f"repeat: repeats must be ints, got {counts.dtype} {repeats!r:.60}")
    if axis is None:
        input = reshape(input, [-1])
        axis = 0
    axis = check_axis(axis, input.ndim, "repeat", shape=input.shape)
    size = input.shape[axis]
    if counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, size)):
        raise invalid_argument(
            f"repeat: repeats of shape {counts.shape} cannot go with axis {axis} of size {size} "
            f"(input of shape {input.shape}): give one int, or {size} ints, one per entry")
    if counts.size and counts.min() < 0:
        raise invalid_argument(f"repeat: repeats must be 0 or more, got {counts.tolist()}")
    indices = np.repeat(np.arange(size), np.broadcast_to(counts.reshape(-1), (size,)))
    y = _take(input, (slice(None),) * axis + (indices,), "GatherV2", {"axis": axis})
    y.name = check_name(name, "repeat")
    return y


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (the last by default), as ``tf.sort``.

    ``direction`` is ``"ASCENDING"`` or ``"DESCENDING"``. Equal values keep their order (a
    stable sort, as TensorFlow's, which sorts with ``top_k``). The result is a ``GatherV2`` of
    ``values`` at the sorted positions (TensorFlow records ``TopKV2``): the gradient sends each
    output's cotangent back to the entry that went there.

    Raises:
        ValueError: ``direction`` not one of the two, ``axis`` out of range (a scalar has none).
        TypeError: ``values`` not real numbers (bool, complex), which TensorFlow's sort refuses.

    >>> import minitape as mt
    >>> mt.sort(mt.constant([[3., 1., 2.]])).numpy()
    array([[1., 2., 3.]], dtype=float32)
    >>> mt.sort(mt.constant([3, 1, 2]), direction="DESCENDING").numpy()
    array([3, 2, 1], dtype=int32)
    """
    values = convert_to_tensor(values, what="sort")
    if values.dtype.kind not in "iuf":
        raise TypeError(f"sort: values must be real numbers (ints or floats), got "
                        f"{values.dtype.name}; cast them first (mt.cast)")
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"sort: direction must be \"ASCENDING\" or \"DESCENDING\", got "
                         f"{direction!r}")
    axis = check_axis(axis, values.ndim, "sort", shape=values.shape)
    keys = values._value if direction == "ASCENDING" else -values._value
    if direction == "DESCENDING" and values.dtype.kind == "u":
        keys = np.iinfo(values.dtype).max - values._value
    order = np.argsort(keys, axis=axis, kind="stable")
    key = list(np.ix_(*(np.arange(n) for n in values.shape)))
    key[axis] = order
    y = _take(values, tuple(key), "GatherV2", {"axis": axis})
    y.name = check_name(name, "sort")
    return y
