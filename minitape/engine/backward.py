"""The backward pass: the chain rule, applied op by op while walking the tape in reverse.

``backward_steps(ops, grads, source_ids)`` is the one place where minitape applies the chain
rule. ``GradientTape.gradient`` consumes it; ``mt.viz.TapePlayer`` iterates it one frame at a
time and ``mt.viz.check_tape`` reads the same steps, so every picture shows exactly what
``gradient`` computed. The algorithm, the textbook loop:

1. Walk the ops *forwards* once to find the ops that depend on a source: only they need a
   gradient (``downstream_of``).
2. ``grads`` starts with the seeds: ``{target id: ones}`` (or ``output_gradients``).
3. Walk the ops *backwards*. For each op, gather the cotangents that arrived at its outputs;
   skip it if none arrived or no source lies upstream of it. Else call its gradient
   function ``fn(op, *output_grads)`` (the registry's, or the op's own for
   ``custom_gradient``): that is the op's vector-Jacobian product (VJP). Add each returned
   input cotangent into ``grads`` under the input's id: a tensor used twice (fan-out)
   receives two *contributions*, and its gradient is their sum (``add_gradients``: the
   ``AddV2`` op while a tape records, so that an outer tape sees it, for second derivatives).
4. After the walk, ``grads`` holds the sources' gradients.

Every op has exactly one gradient function, written with minitape ops so that an outer tape
can differentiate it again. When no tape records (the usual case: a non-persistent tape
stops recording before its backward pass), those ops cost little: ``record`` returns at
once, and their operand checks take their short path for the Tensors a rule passes. The
walk writes out its common case, an op with one output, and checks inline that a rule
returned a Tensor of its input's shape and dtype (anything else gets the full check,
``_check_gradient``, which explains the error).

No recursion anywhere, so a chain of a million ops is fine, and the gradients live in a
dictionary local to the pass, so asking twice gives the same numbers. The walk keeps no
record for the pictures: ``GradientTape`` hands each step to the tape's observers
(``backward(..., on_step=...)``), and ``mt.viz`` keeps what it draws.

The engine imports nothing above it. Two things the walk needs come from the layers above,
which install them when they are imported: ``recording.check_numerics`` (``mt.debugging``'s
check of every gradient for NaN and infinity) and ``call_per_row`` (``minitape.ops``' loop that runs
a gradient function without batch axes once per row of a vectorized Jacobian).
"""

from __future__ import annotations

import operator

import numpy as np

from . import recording, registry
from ..dtypes import complex_gradient_error

call_per_row = None
"""``call_per_row(op, fn, out_grads, batch_ndim)``: call a gradient function that knows no
batch axes once per batch row, and stack the rows. Installed by ``minitape.ops``."""


def backward_steps(ops, grads, source_ids, batch_ndim=0, release=False, check_complex=True,
                   reaches_source=None):
    """Walk ``ops`` in reverse and apply the chain rule; yield one step per op it passes.

    Args:
        ops: the recorded Operations, in execution order.
        grads: dict tensor id -> gradient Tensor, holding the seeds (e.g. ``{target id:
            ones}``); the walk adds into it, and when it ends it holds the sources' gradients.
        source_ids: ids of the tensors whose gradients are wanted.
        batch_ndim: leading batch axes on every gradient (vectorized Jacobians), else 0.
        release: free each op's saved tensors as soon as the walk is past it.
        check_complex: look for complex inputs on the path (and raise); a tape that recorded
            no complex tensor passes False and skips the check.
        reaches_source: the ids of the tensors downstream of a source, if the caller knows
            them (a tape whose watched tensors are all sources: what it tracked while
            recording); else the walk finds them itself (``downstream_of``). Only read.

    Yields:
        ``(op, out_grads, in_grads)`` for every op whose gradient function ran:
        ``out_grads`` the cotangent that arrived at each output (zeros for an output that got
        none), ``in_grads`` the contribution sent to each input (None where none is needed);
        all Tensors. When a step is yielded, its contributions are already added into
        ``grads``.

    Raises:
        LookupError: an op on the path has no registered gradient.
        TypeError: the path goes through a complex Tensor (minitape does not differentiate
            complex numbers).
        ValueError, TypeError: a gradient function returned the wrong number, shape or dtype
            of gradients.
    """
    if reaches_source is None:
        reaches_source = downstream_of(ops, source_ids)
    rules, lookup = registry._registry, registry.lookup
    for op in reversed(ops):
        # 1. Gather the cotangents that arrived at the op's outputs (None: none arrived).
        output_ids, input_ids = op.output_ids, op.input_ids
        if len(output_ids) == 1:   # (the common case, written out)
            dy = grads.get(output_ids[0])
            out_grads = None if dy is None else [dy]
        else:
            out_grads = _arrived(output_ids, grads)
        # 2. Skip the op if none arrived, if no source lies upstream of it, or if it is
        #    declared not differentiable (no gradient function).
        fn = None
        if out_grads is not None and not reaches_source.isdisjoint(input_ids):
            if check_complex:
                _check_complex_path(op, reaches_source)
            fn = op.grad_fn or rules.get(op.type) or lookup(op.type)   # (LookupError if none)
        if fn is None:
            if release:
                op.release()
            continue
        if len(output_ids) == 1:   # (nothing upstream needs the outputs' entries any more)
            if output_ids[0] not in source_ids:
                del grads[output_ids[0]]
        else:
            _take(op, grads, out_grads, source_ids, batch_ndim)
        # 3. The VJP: one cotangent per input. The rule may skip the inputs nobody needs
        #    (the 0.5 of ``x * 0.5``), which ``op.skip_input_indices`` names.
        all_needed = reaches_source.issuperset(input_ids)
        op.skip_input_indices = () if all_needed else _unneeded_inputs(op, reaches_source)
        in_grads = call_gradient(op, fn, out_grads, batch_ndim)
        op.skip_input_indices = None
        # 4. Accumulate each contribution into its input's cotangent: fan-out sums.
        for k, i in enumerate(input_ids):
            g = in_grads[k]
            if g is None:
                continue
            if not all_needed and i not in reaches_source:   # computed, not needed: not sent
                in_grads[k] = None
                continue
            # (The common case, a Tensor of the input's very shape and dtype, is checked
            # here; anything else takes the full check, which explains the error.)
            if (batch_ndim or type(g) is not Tensor or g._shape != op.shapes[k]
                    or g._dtype is not op.dtypes[k]):
                _check_gradient(op, k, g, batch_ndim)
            grads[i] = add_gradients(grads[i], g) if i in grads else g
        if recording.check_numerics:   # (mt.debugging.enable_check_numerics)
            recording.check_numerics.check_gradients(op, in_grads)
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
    return grads


def downstream_of(ops, source_ids):
    """The ids of the sources and of every tensor computed from one of them: one forward
    sweep over ``ops`` (in execution order). Only the ops with an input in it need a gradient."""
    reached = set(source_ids)
    for op in ops:
        if not reached.isdisjoint(op.input_ids):   # "some input is downstream of a source"
            reached.update(op.output_ids)
    return reached


def _arrived(output_ids, grads):
    """The cotangent that arrived at each of several outputs (None where none did), or None
    if none arrived at any."""
    out_grads = [grads.get(i) for i in output_ids]
    for g in out_grads:   # (not ``None in out_grads``: that compares Tensors with ``==``)
        if g is not None:
            return out_grads
    return None


def _check_complex_path(op, reaches_source):
    """Raise if a complex input of ``op`` lies on the path to a source: minitape does not
    differentiate complex numbers (a clear error, not a silent None)."""
    for k, d in enumerate(op.input_dtypes):
        if d.kind == "c" and op.input_ids[k] in reaches_source:
            raise complex_gradient_error(
                "GradientTape.gradient", f" (the path from the target to a source goes "
                f"through {op.type}, whose input {k} is {d.name})")


def _take(op, grads, out_grads, source_ids, batch_ndim):
    """For an op with several outputs: take their cotangents out of ``grads`` (nothing
    upstream needs them, unless an output is a source), and give zeros to an output that got
    none while another did."""
    for k, i in enumerate(op.output_ids):
        if i not in source_ids:
            grads.pop(i, None)
        if out_grads[k] is None:
            arrived = next(g for g in out_grads if g is not None)
            shape = arrived.shape[:batch_ndim] + op.output_shapes[k]
            out_grads[k] = Tensor(np.zeros(shape, op.output_dtypes[k]))


def _unneeded_inputs(op, reaches_source):
    """The indices of ``op``'s inputs whose gradient nobody needs (``skip_input_indices``):
    those no source lies upstream of, e.g. a constant, or the batch of data in a matmul."""
    return tuple([k for k, i in enumerate(op.input_ids) if i not in reaches_source])


def call_gradient(op, fn, out_grads, batch_ndim=0):
    """Call ``fn(op, *out_grads)``; return its gradients as a list, one entry per input.

    Raises ValueError if ``fn`` returned another number of gradients than ``op`` has inputs.
    """
    op.batch_ndim = batch_ndim
    if batch_ndim and (op.grad_fn is not None or not registry.is_batched(op.type)):
        in_grads = call_per_row(op, fn, out_grads, batch_ndim)
    else:
        in_grads = fn(op, *out_grads)
    if type(in_grads) is tuple:   # (the common case)
        in_grads = list(in_grads)
    elif type(in_grads) is not list:   # a one-input op may return its gradient bare
        in_grads = [in_grads]
    if len(in_grads) != len(op.input_ids):
        raise ValueError(
            f"the gradient function of {op.type} returned {len(in_grads)} gradient(s) but the op "
            f"has {len(op.input_ids)} input(s); return one per input (None where there is none)")
    return in_grads


def _check_gradient(op, k, g, batch_ndim):
    """Raise if ``g``, the gradient ``op``'s rule returned for input ``k``, is not a Tensor
    of that input's shape (after ``batch_ndim`` batch axes) and dtype. (A vectorized
    Jacobian's gradients all come here: the good ones return at once.)"""
    if (type(g) is Tensor and g._dtype is op.dtypes[k] and len(g._shape) >= batch_ndim
            and g._shape[batch_ndim:] == op.shapes[k]):
        return
    if not isinstance(g, Tensor):
        raise TypeError(f"the gradient function of {op.type} returned {type(g).__name__} for "
                        f"input {k}; gradients must be minitape Tensors (so that they can be "
                        "differentiated again): build them with minitape operations")
    expected = g.shape[:batch_ndim] + op.input_shapes[k]
    if g.shape != expected or g.ndim < batch_ndim:
        raise ValueError(
            f"the gradient function of {op.type} returned shape {g.shape[batch_ndim:]} for "
            f"input {k} of shape {op.input_shapes[k]}; a gradient must have its input's shape "
            "(sum over broadcast axes with unbroadcast)")
    if g.dtype != op.input_dtypes[k]:
        raise TypeError(f"the gradient function of {op.type} returned dtype {g.dtype.name} for "
                        f"input {k} of dtype {op.input_dtypes[k].name}")


def add_gradients(a, b):
    """``a + b``: two contributions to one tensor's gradient (fan-out). While a tape or a
    forward accumulator records, the ``AddV2`` op, so that it sees the sum (second
    derivatives); else the sum of the two arrays, which is what ``AddV2`` computes, without
    its checks: both contributions were checked against the input's shape and dtype
    (``tests/test_fast_paths.py`` checks the two give the same Tensor)."""
    if recording.tapes_recording or recording.accumulators_recording:
        return a + b
    return Tensor(a._value + b._value)


# ``gradient_value(g)``: the array of a Tensor the walk holds (a gradient, a seed, an op's
# input), neither copied nor viewed, for the tools that show or note it: they only read it.
# (``numpy()`` is the learner's read-only view; this is the observers' cheaper read, several
# per op, hence a C getter rather than a Python function.)
gradient_value = operator.attrgetter("_value")


from .tensor import Tensor  # noqa: E402  (circular: Tensor's module imports the tape)
