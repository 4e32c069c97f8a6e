"""The backward pass: the chain rule, applied op by op while walking the tape in reverse.

``backward_steps(ops, grads, source_ids)`` is the one place where minitape applies the chain
rule. ``GradientTape.gradient`` consumes it; ``mt.viz.TapePlayer`` iterates it one frame at a
time and ``mt.viz.check_tape`` reads the same steps, so every picture shows exactly what
``gradient`` computed. The algorithm:

1. Walk the ops *forwards* once to find the ops that depend on a source: only they need a
   gradient (``reaches_source``).
2. ``grads`` starts with the seeds: ``{target id: ones}`` (or ``output_gradients``).
3. Walk the ops *backwards*. For each op whose outputs received a gradient and that depends
   on a source, call its gradient function ``fn(op, *output_grads)`` (the registry's, or the
   op's own for ``custom_gradient``): that is the op's vector-Jacobian product. Add each
   returned input gradient into ``grads`` under the input's id: a tensor used twice (fan-out)
   receives two *contributions*, and its gradient is their sum.
4. After the walk, ``grads`` holds the sources' gradients.

No recursion anywhere, so a chain of a million ops is fine, and the gradients live in a
dictionary local to the pass, so asking twice gives the same numbers.

Fast paths skip work whose result is known, and give the same numbers
(``tests/test_fast_paths.py`` checks each against the general path):

- step 1 is skipped when the tape's watched tensors are all sources: the tape's tracked set,
  filled while recording, already says which tensors lie downstream of them;
- when nothing records (no tape, no forward accumulator) and there are no batch axes, the
  walk holds every gradient as its array (``as_arrays``: an ndarray, or a NumPy scalar for a
  0-d gradient, as NumPy's own arithmetic gives), since no tape could record what it
  computes. An op with a NumPy gradient (``registry.register_numpy_gradient``) then computes
  its VJP on those arrays, instead of through minitape ops, and two contributions are summed
  with NumPy. Other ops get their output gradients wrapped in Tensors, as gradient functions
  expect, and their results unwrapped. ``backward`` returns Tensors. (A Tensor around each
  array, only to be unwrapped at the next op, was a seventh of a scalar op's cost.)

The walk keeps no record for the pictures: ``GradientTape`` hands each step to the tape's
observers (``backward(..., on_step=...)``), and ``mt.viz`` keeps what it draws.
"""

from __future__ import annotations

import numpy as np

from . import recording, registry
from ..dtypes import complex_gradient_error
from .recording import accumulators_recording, tapes_recording


def backward_steps(ops, grads, source_ids, batch_ndim=0, release=False, check_complex=True,
                   reaches_source=None):
    """Walk ``ops`` in reverse and apply the chain rule; yield one step per op it passes.

    Args:
        ops: the recorded Operations, in execution order.
        grads: dict tensor id -> gradient Tensor, holding the seeds (e.g. ``{target id:
            ones}``); the walk adds into it, and when it ends it holds the sources' gradients.
            When the walk holds gradients as arrays (see the module's docstring), it
            replaces the seeds with their arrays, and every value it puts in is an array:
            read them with ``gradient_value``.
        source_ids: ids of the tensors whose gradients are wanted.
        batch_ndim: leading batch axes on every gradient (vectorized Jacobians), else 0.
        release: free each op's saved tensors as soon as the walk is past it.
        check_complex: look for complex inputs on the path (and raise); a tape that recorded
            no complex tensor passes False and skips the check.
        reaches_source: the ids of the tensors downstream of a source, if the caller knows
            them (a tape whose watched tensors are all sources: what it tracked while
            recording); else the walk finds them itself, with a forward sweep. Only read.

    Yields:
        ``(op, out_grads, in_grads)`` for every op whose gradient function ran:
        ``out_grads`` the gradient that arrived at each output (zeros for an output that got
        none), ``in_grads`` the contribution sent to each input (None where none is needed);
        both Tensors, or arrays when the walk holds arrays. When a step is yielded, its
        contributions are already added into ``grads``.

    Raises:
        LookupError: an op on the path has no registered gradient.
        TypeError: the path goes through a complex Tensor (minitape does not differentiate
            complex numbers).
        ValueError, TypeError: a gradient function returned the wrong number, shape or dtype
            of gradients.
    """
    # 1. Forward sweep: which ops lie downstream of a source? Only they need gradients.
    if reaches_source is None:
        reaches_source = set(source_ids)
        for op in ops:
            if not reaches_source.isdisjoint(op.input_ids):  # "some input reaches a source"
                reaches_source.update(op.output_ids)
    batch_shape = next(iter(grads.values())).shape[:batch_ndim] if grads and batch_ndim else ()
    # Arrays or Tensors? (See the module's docstring.)
    as_arrays = not (batch_ndim or tapes_recording or accumulators_recording)
    if as_arrays:
        for i, g in grads.items():
            grads[i] = g._value
    # 2. Reverse sweep. (This loop runs once per recorded op: the common cases, one output
    # and no batch axes, are written out, and the helpers are local names.)
    lookup, numpy_gradients = registry.lookup, registry.numpy_gradients
    for op in reversed(ops):
        output_ids, input_ids = op.output_ids, op.input_ids
        single = len(output_ids) == 1
        if single:
            dy = grads.get(output_ids[0])
            arrived = dy is not None
        else:
            out_grads = list(map(grads.get, output_ids))  # None where none arrived
            arrived = not _all_none(out_grads)
        if not arrived or reaches_source.isdisjoint(input_ids):
            if release:
                op.release()
            continue
        if check_complex:
            _check_complex_path(op, reaches_source)
        # The fast path: the op's NumPy gradient, when the walk holds arrays (nothing
        # records) and the op has no custom gradient (see registry.register_numpy_gradient).
        fast = numpy_gradients.get(op.type) if as_arrays and op.grad_fn is None else None
        fn = fast or op.grad_fn or lookup(op.type)   # LookupError if none is registered
        if fn is None:                                 # declared not differentiable
            if release:
                op.release()
            continue
        # Nothing upstream needs the outputs' entries any more (unless one is a source).
        if single:
            out_grads = [dy]
            if output_ids[0] not in source_ids:
                del grads[output_ids[0]]
        else:
            for k, i in enumerate(output_ids):
                if i not in source_ids:
                    grads.pop(i, None)
                if out_grads[k] is None:  # another output got a gradient, this one none: zeros
                    zeros = np.zeros(batch_shape + op.output_shapes[k], op.output_dtypes[k])
                    out_grads[k] = zeros if as_arrays else Tensor(zeros)
        # Which inputs need no gradient? (e.g. the 0.5 in ``x * 0.5``: Mul then skips
        # computing ``dy * x``, MatMul skips the gradient of a batch of data.)
        all_needed = reaches_source.issuperset(input_ids)
        if all_needed:
            op.skip_input_indices = ()
        else:
            skip = ()
            for k, i in enumerate(input_ids):
                if i not in reaches_source:
                    skip += (k,)
            op.skip_input_indices = skip
        if fast is not None:
            op.batch_ndim = 0
            # Arrays in, arrays out; no check: a NumPy gradient's arrays have the inputs'
            # shapes and dtypes by construction.
            in_grads = fast(op, out_grads[0])
        else:   # (a gradient function takes and returns Tensors)
            given = [Tensor(g) for g in out_grads] if as_arrays else out_grads
            in_grads = list(call_gradient(op, fn, given, batch_ndim))
        op.skip_input_indices = None
        for k, i in enumerate(input_ids):
            g = in_grads[k]
            if g is None:
                continue
            if not all_needed and i not in reaches_source:   # computed, not needed: not sent
                in_grads = list(in_grads)
                in_grads[k] = None
                continue
            if fast is None:
                # The common case (a Tensor of the input's exact shape and dtype) is checked
                # inline; anything else goes through the full check, which explains the
                # error. (``is not`` on dtypes: NumPy's dtypes are shared objects, and an
                # equal dtype that is another object just takes the full check.)
                if (batch_ndim or type(g) is not Tensor or g._shape != op.shapes[k]
                        or g._dtype is not op.dtypes[k]):
                    _check_gradient(op, k, g, batch_ndim)
                if as_arrays:
                    in_grads[k] = g = g._value
            if i in grads:
                grads[i] = grads[i] + g if as_arrays else add_gradients(grads[i], g)
            else:
                grads[i] = g
        if recording.check_numerics:   # (mt.debugging.enable_check_numerics)
            recording.check_numerics.check_gradients(op, in_grads, gradient_value)
        if release:
            op.release()
        yield op, out_grads, in_grads


def backward(ops, seeds, source_ids, batch_ndim=0, release=False, check_complex=True,
             reaches_source=None, on_step=None):
    """Run ``backward_steps`` to the end; return dict tensor id -> gradient Tensor.
    ``on_step(op, out_grads, in_grads)``, if given, is called with every step."""
    grads = dict(seeds)
    steps = backward_steps(ops, grads, source_ids, batch_ndim, release, check_complex,
                           reaches_source)
    if on_step is None:
        for _ in steps:
            pass
    else:
        for step in steps:
            on_step(*step)
    for i, g in grads.items():   # (arrays, if the walk held arrays: now Tensors)
        if type(g) is not Tensor:
            grads[i] = Tensor(g)
    return grads


def gradient_value(g):
    """The array of a gradient the walk holds: a Tensor's value, or the array itself (when
    the walk holds arrays: see the module's docstring)."""
    return g._value if isinstance(g, Tensor) else g


def _check_complex_path(op, reaches_source):
    """Raise if a complex input of ``op`` lies on the path to a source: minitape does not
    differentiate complex numbers (a clear error, not a silent None)."""
    for k, d in enumerate(op.input_dtypes):
        if d.kind == "c" and op.input_ids[k] in reaches_source:
            raise complex_gradient_error(
                "GradientTape.gradient", f" (the path from the target to a source goes "
                f"through {op.type}, whose input {k} is {d.name})")


def _all_none(items):
    # A plain loop: ``None in items`` or ``items.count(None)`` would compare Tensors with
    # ``==``, which is an elementwise minitape op.
    for item in items:
        if item is not None:
            return False
    return True


def call_gradient(op, fn, out_grads, batch_ndim=0):
    """Call ``fn(op, *out_grads)`` and check it returned one entry per input."""
    op.batch_ndim = batch_ndim
    if batch_ndim and (op.grad_fn is not None or not registry.is_batched(op.type)):
        in_grads = _call_per_row(op, fn, out_grads, batch_ndim)
    else:
        in_grads = fn(op, *out_grads)
    if not isinstance(in_grads, (list, tuple)):
        in_grads = [in_grads]  # a one-input op may return its gradient bare
    if len(in_grads) != len(op.input_ids):
        raise ValueError(
            f"the gradient function of {op.type} returned {len(in_grads)} gradient(s) but the op "
            f"has {len(op.input_ids)} input(s); return one per input (None where there is none)"
        )
    return in_grads


def _call_per_row(op, fn, out_grads, batch_ndim):
    """Vectorized Jacobian through a gradient that only knows unbatched shapes: loop rows."""
    batch_shape = out_grads[0].shape[:batch_ndim]
    flat = [reshape(g, (-1,) + g.shape[batch_ndim:]) for g in out_grads]
    op.batch_ndim = 0
    rows = []
    for r in range(flat[0].shape[0]):
        row = fn(op, *[g[r] for g in flat])
        rows.append(list(row) if isinstance(row, (list, tuple)) else [row])
    op.batch_ndim = batch_ndim
    result = []
    for k in range(len(rows[0])):
        column = [row[k] for row in rows]
        if any(c is None for c in column):
            result.append(None)
            continue
        stacked = stack(column)
        result.append(reshape(stacked, batch_shape + stacked.shape[1:]))
    return result


def _check_gradient(op, k, g, batch_ndim):
    if not isinstance(g, Tensor):
        raise TypeError(f"the gradient function of {op.type} returned {type(g).__name__} for "
                        f"input {k}; gradients must be minitape Tensors (so that they can be "
                        "differentiated again): build them with minitape operations")
    expected = g.shape[:batch_ndim] + op.input_shapes[k]
    if g.shape != expected or g.ndim < batch_ndim:
        raise ValueError(
            f"the gradient function of {op.type} returned shape {g.shape[batch_ndim:]} for "
            f"input {k} of shape {op.input_shapes[k]}; a gradient must have its input's shape "
            "(sum over broadcast axes with unbroadcast)"
        )
    if g.dtype != op.input_dtypes[k]:
        raise TypeError(f"the gradient function of {op.type} returned dtype {g.dtype.name} for "
                        f"input {k} of dtype {op.input_dtypes[k].name}")


def add_gradients(a, b):
    """``a + b``: two contributions to one tensor's gradient (fan-out), with a minitape op so
    that an outer tape records the sum."""
    if not tapes_recording and not accumulators_recording:
        # Nothing can record the sum (the usual case: a non-persistent tape has stopped
        # recording): NumPy's addition, which is what ``add`` computes. Its checks have
        # nothing to find, as both contributions were checked against the input's shape
        # and dtype. (``tests/test_fast_paths.py`` checks the two give the same Tensor.)
        return Tensor(a._value + b._value)
    return a + b   # (the op ``add``: minitape/ops/math_ops.py gives Tensor its ``+``)


from .tensor import Tensor  # noqa: E402

# A vectorized Jacobian through a gradient that knows no batch axes reshapes and stacks its
# rows with these recorded ops; ``minitape/ops/array_ops.py`` (above the engine) installs them.
reshape = stack = None
