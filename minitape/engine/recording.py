"""Recording: how an executed operation gets onto the tapes that watch it.

Every minitape operation ends with a call to ``record(op_type, inputs, outputs, ...)``, which
hands the op to each active tape of the current thread (``GradientTape.record_operation``)
and each active forward accumulator (``ForwardAccumulator.propagate_tangents``). A tape checks
whether one of the inputs is a tensor it *tracks* (a watched tensor, or the output of an op
it recorded). If so it appends an ``Operation`` to its list and starts tracking the outputs.
The list is in execution order, so it is already topologically sorted: the backward pass
(``backward.py``) simply walks it in reverse.

An ``Operation`` keeps what its gradient needs (the saved Tensors, the attributes, ids,
shapes and dtypes), nothing more. Whatever else a tool wants to know about an op (the
learner's line that made it, small values, the Module call it belongs to) it notes itself,
as an observer of the tape: ``record`` hands each recorded op to the tape's observers
(``GradientTape.add_observer``). A tape with no observer pays nothing for them.

``next_seq`` stamps tape events from one global sequence, so that events of several tapes
(and an observer's notes of ops) can be ordered; the numbers learners see (``#1``, ``#2``)
are positions on one tape, never these stamps.
"""

from __future__ import annotations

import itertools
import threading


class _ThreadState(threading.local):
    """Per-thread recording state: a tape never records another thread's operations."""

    def __init__(self):
        self.tapes = []          # tapes currently recording, innermost last
        self.accumulators = []   # active ForwardAccumulators (forward.py)


state = _ThreadState()

tapes_recording: set = set()
"""Every GradientTape recording now, in any thread (``state.tapes`` has the current thread's
own). When it is empty, as outside any tape and during a non-persistent tape's backward pass,
``record`` skips the tapes after one global read: reading ``state`` (a ``threading.local``)
costs about as much as a small NumPy operation. A tape adds itself when it starts recording
and discards itself when it stops."""

accumulators_recording: set = set()
"""Every ForwardAccumulator active now, in any thread (``state.accumulators``: this thread's)."""

next_seq = itertools.count(1).__next__
"""A new stamp of the global sequence (tape events, and observers' notes of ops)."""


check_numerics = False
"""False, or while ``mt.debugging.enable_check_numerics()`` is on, the checker it installs:
``record`` calls its ``check_outputs(op_type, inputs, outputs)`` for every op (NaN and
infinity raise), and the backward walk its ``check_gradients(op, in_grads, value)`` for
every gradient it sends."""


class _SavedTensors(tuple):
    """``op.inputs`` / ``op.outputs``: a tuple that explains itself when an entry was not kept."""

    def __new__(cls, items, op_type, kind):
        obj = super().__new__(cls, items)
        obj._where = (op_type, kind)
        return obj

    def _missing(self, index):
        op_type, kind = self._where
        if kind == "released":
            return RuntimeError(f"the saved tensors of this {op_type} op were released: a "
                                "non-persistent tape frees them during its backward pass")
        return ValueError(
            f"{op_type} did not save {kind} {index} for its backward pass (ops keep only what "
            "their gradient needs); use the other saved tensors, or record the op on a "
            "persistent tape, which keeps everything"
        )

    def __getitem__(self, index):
        item = super().__getitem__(index)
        if item is None:
            raise self._missing(index)
        return item

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


class Operation:
    """One recorded operation, as the gradient functions see it (``tf.Operation``'s shape).

    It keeps what the backward pass needs, and nothing for the pictures: the tools that draw,
    replay or check a tape (``mt.viz``) keep their own record of it through the tape's
    observer interface (``GradientTape.add_observer``).

    Attributes:
        type: the op type, e.g. ``"Mul"``.
        attrs: the op's non-tensor arguments, read with ``get_attr(name)``.
        input_ids, output_ids: the ids of the input and output Tensors (the backward pass
            adds gradients into a dictionary under these ids).
        shapes, dtypes: the shape and dtype of every input, then of every output; kept even
            after the saved tensors are released (``input_shapes``, ``output_shapes``,
            ``input_dtypes`` and ``output_dtypes`` read them).
        saved: ``(inputs, outputs, residuals)``: the Tensors the op saved for its backward
            pass (None where the gradient does not need one; see ``inputs``), and
            ``residuals``: arrays the op's forward computed on the way that its NumPy
            gradient reuses (JAX's name for them), else None. Only the cross-entropies keep
            one, the softmax of the logits: TensorFlow's kernel keeps the same, as the op's
            second output ``backprop``. None once ``release`` dropped them.
        grad_fn: the op's own gradient function (``custom_gradient``), else None (the
            registry's, found by ``type``).
        batch_ndim: during a vectorized Jacobian, the number of extra leading batch axes on
            the output gradients (0 otherwise).
        skip_input_indices: during a backward pass, the indices of the inputs whose gradient
            nobody needs (constants, inputs not connected to a source), as TensorFlow's
            attribute of that name; a gradient function may return None for them instead of
            computing them (Mul, MatMul, ... do). None outside a backward pass: compute all.
    """

    __slots__ = ("type", "attrs", "input_ids", "output_ids", "shapes", "dtypes", "saved",
                 "grad_fn", "batch_ndim", "skip_input_indices", "__weakref__")

    def __init__(self, op_type, inputs, outputs, attrs, keep_inputs, keep_outputs, grad_fn,
                 residuals=None):
        self.type = op_type
        self.attrs = attrs
        self.grad_fn = grad_fn
        self.batch_ndim = 0
        self.skip_input_indices = None
        # This runs for every recorded op, so it makes as few tuples as it can, and the
        # common cases, one or two inputs and one output, are written out: no call, no loop.
        if len(outputs) == 1 and 0 < len(inputs) <= 2:
            z = outputs[0]
            self.output_ids = (z.id,)
            if len(inputs) == 1:
                a = inputs[0]
                self.input_ids, self.shapes, self.dtypes = \
                    (a.id,), (a._shape, z._shape), (a._dtype, z._dtype)
            else:
                a, b = inputs
                self.input_ids, self.shapes, self.dtypes = \
                    (a.id, b.id), (a._shape, b._shape, z._shape), (a._dtype, b._dtype, z._dtype)
            # (Keeping nothing is the common case for outputs, everything for inputs.)
            kept_outputs = ((None,) if keep_outputs is False else tuple(outputs)
                            if keep_outputs is True else _keep(outputs, keep_outputs))
        else:
            self.input_ids = tuple(t.id for t in inputs)
            self.output_ids = tuple(t.id for t in outputs)
            both = tuple(inputs) + tuple(outputs)
            self.shapes = tuple(t._shape for t in both)
            self.dtypes = tuple(t._dtype for t in both)
            kept_outputs = _keep(outputs, keep_outputs)
        # (``_keep`` written out for its two common cases, all and none, as for the outputs)
        self.saved = (tuple(inputs) if keep_inputs is True else
                      (None,) * len(inputs) if keep_inputs is False else
                      _keep(inputs, keep_inputs)), kept_outputs, residuals

    @property
    def input_shapes(self):
        return self.shapes[:len(self.input_ids)]

    @property
    def output_shapes(self):
        return self.shapes[len(self.input_ids):]

    @property
    def input_dtypes(self):
        return self.dtypes[:len(self.input_ids)]

    @property
    def output_dtypes(self):
        return self.dtypes[len(self.input_ids):]

    @property
    def custom(self):
        """True for a ``custom_gradient`` op (also after ``release`` dropped its function)."""
        return self.type == "CustomGradient"

    # The saved tuples themselves, None once released (the NumPy gradients read these).
    @property
    def _inputs(self):
        saved = self.saved
        return None if saved is None else saved[0]

    @property
    def _outputs(self):
        saved = self.saved
        return None if saved is None else saved[1]

    @property
    def residuals(self):
        saved = self.saved
        return None if saved is None else saved[2]

    @property
    def inputs(self):   # (every gradient function reads it: ``saved`` read directly)
        return _saved(self.saved and self.saved[0], self.type, "input", self.input_ids)

    @property
    def outputs(self):
        return _saved(self.saved and self.saved[1], self.type, "output", self.output_ids)

    def get_attr(self, name):
        """The non-tensor argument ``name`` (e.g. ``axis``), as ``tf.Operation.get_attr``."""
        try:
            return self.attrs[name]
        except (KeyError, TypeError):
            raise ValueError(f"{self.type} has no attribute {name!r}; it has "
                             f"{sorted(self.attrs or {})}") from None

    def release(self):
        """Drop the saved tensors and residuals, and a custom gradient's function with
        everything its closure holds (ids, shapes and dtypes stay)."""
        self.saved = self.grad_fn = None

    def __repr__(self):
        return (f"<Operation {self.type} inputs={self.input_ids} "
                f"outputs={self.output_ids}>")


def _saved(saved, op_type, kind, ids):
    """``op.inputs`` / ``op.outputs``: the plain tuple when everything was saved (the common
    case, read by every gradient function, so kept cheap), else a ``_SavedTensors`` that
    explains the missing entries."""
    if saved is None:
        return _SavedTensors((None,) * len(ids), op_type, "released")
    for t in saved:
        if t is None:
            return _SavedTensors(saved, op_type, kind)
    return saved


def _keep(tensors, keep):
    if keep is True:
        return tuple(tensors)
    if not keep:
        return (None,) * len(tensors)
    return tuple(t if i in keep else None for i, t in enumerate(tensors))


def record(op_type, inputs, outputs, attrs=None, keep_inputs=True, keep_outputs=False,
           grad_fn=None, forward=None, residuals=None):
    """Record one executed operation on every active tape that tracks one of its inputs, and
    push tangents through it for every active forward accumulator.

    Args:
        op_type: the registry key of the op's gradient (e.g. ``"Mul"``).
        inputs, outputs: sequences of Tensors.
        attrs: dict of non-tensor arguments (``axis``, ``perm``, ...).
        keep_inputs, keep_outputs: what the gradient needs: True, False or a set of indices.
            A persistent tape keeps everything regardless.
        grad_fn: a gradient function for this one op (``custom_gradient``), else the registry's.
        forward: the function that computes the op again from its inputs (``primitive``,
            ``custom_gradient``); not kept: handed to the tape's observers (``mt.viz.check_tape``
            runs it). Built-in ops leave it None (the registry has their forward).
        residuals: see ``Operation.saved``.
    """
    if check_numerics:   # (mt.debugging.enable_check_numerics: raises at a NaN or inf)
        check_numerics.check_outputs(op_type, inputs, outputs)
    if tapes_recording:  # (else the fast path: no tape is recording, in any thread)
        for tape in state.tapes:
            tape.record_operation(op_type, inputs, outputs, attrs, keep_inputs, keep_outputs,
                                  grad_fn, forward, residuals)
    if accumulators_recording and state.accumulators:
        for accumulator in list(state.accumulators):
            accumulator.propagate_tangents(op_type, inputs, outputs, attrs, grad_fn)
