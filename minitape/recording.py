"""Recording: how an executed operation gets onto the tapes that watch it.

Every minitape operation ends with a call to ``record(op_type, inputs, outputs, ...)``. Each
active tape of the current thread checks whether one of the inputs is a tensor it *tracks* (a
watched tensor, or the output of an op it recorded). If so it appends an ``Operation`` to its
list and starts tracking the outputs. The list is in execution order, so it is already
topologically sorted: the backward pass (``backward.py``) simply walks it in reverse.

What an ``Operation`` keeps:

- what its gradient needs (the saved input/output Tensors, the attributes);
- for the pictures: ids, shapes, dtypes and small values of its inputs and outputs;
- ``origin``: *where in the learner's code* it was created, as a reference (the code object
  and the instruction offset of the first frame outside the ``minitape`` package). Nothing is
  formatted while recording; ``source_line(op)`` turns it into ``("cell 3:2", "y = x * x")``
  when a drawing asks. (On in IPython and Jupyter, off in plain scripts unless
  ``mt.config.record_source_lines(True)``: see ``capture_source``);
- ``backward_of``: the number of the tape whose backward pass executed it (an outer tape
  recording an inner tape's gradient: how second derivatives are made), else None;
- ``forward``: for ``mt.primitive`` and ``custom_gradient`` ops, the function that computes it
  again from its inputs (built-in ops are found in the registry by op type);
- ``module_calls``: the ``Module`` calls (a ``Dense``, a ``Sequential``) running when it was
  made, so a drawing can show each layer call as one box (``module_scope``).

Every op and every tape event gets a stamp from one global sequence (``next_seq``), so events
of several tapes can be ordered; the numbers learners see (``#1``, ``#2``) are positions on
one tape, never these stamps.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading


class _ThreadState(threading.local):
    """Per-thread recording state: a tape never records another thread's operations."""

    def __init__(self):
        self.tapes = []          # tapes currently recording, innermost last
        self.accumulators = []   # active ForwardAccumulators (minitape.forward)
        self.backward_of = []    # numbers of the tapes whose backward pass is running
        self.module_calls = ()   # ((module, stamp), ...): Module calls running, outermost first


state = _ThreadState()

tapes_recording: set = set()
"""Every GradientTape recording now, in any thread (``state.tapes`` has the current thread's
own). When it is empty, as outside any tape and during a non-persistent tape's backward pass,
``record`` skips the tapes after one global read: reading ``state`` (a ``threading.local``)
costs about as much as a small NumPy operation. A tape adds itself when it starts recording
and discards itself when it stops."""

accumulators_recording: set = set()
"""Every ForwardAccumulator active now, in any thread (``state.accumulators``: this thread's)."""

contexts_running: list = []
"""Every ``module_scope`` and backward pass running now, in any thread (``state.module_calls``
and ``state.backward_of`` have the current thread's). An op recorded outside both, the common
case, reads neither from ``state``."""

next_seq = itertools.count(1).__next__
"""A new stamp of the global sequence (ops and tape events share it)."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# Whether ``record`` notes the learner's line that made each op (``learner_frame``). It costs
# about 7% of a scalar op's time, so it is on where drawings are made, in IPython and Jupyter
# (decided when minitape is imported), and off in plain scripts and benchmarks;
# ``mt.config.record_source_lines(True)`` switches it on anywhere (``mt.notebook.setup()``
# does). Without it, drawings label tensors by ``name=``, else ``t1``, ``t2``, ...
capture_source = "IPython" in sys.modules


check_numerics = False
"""True while ``mt.debugging.enable_check_numerics()`` is on: ``record`` checks every op's
outputs for NaN and infinity (``debugging.check_outputs``), and the backward walk every
gradient it sends."""


def learner_frame(depth=2):
    """``(code, instruction offset)`` of the first frame outside the minitape package.

    That is the line of the learner's code that made the current op (``y = x * x`` calls
    ``Tensor.__mul__`` -> ``multiply`` -> ``record``). A reference only: formatting it is
    left to ``source_line``, when a drawing asks. None if every frame is minitape's own.
    """
    frame = sys._getframe(depth)
    inside = _inside
    while frame is not None:
        code = frame.f_code
        if id(code) in inside:     # (cheaper than comparing the file name every time)
            frame = frame.f_back
        elif code.co_filename.startswith(_PACKAGE_DIR):
            inside.add(id(code))
            frame = frame.f_back
        else:
            return (code, frame.f_lasti)
    return None


# ``id()``s of minitape's own code objects met by ``learner_frame``. They live as long as the
# package, so an id in this set never comes to mean another code object.
_inside: set = set()


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

    Attributes:
        type: the op type, e.g. ``"Mul"``.
        seq: a global sequence number (deterministic ids for the renderers).
        inputs, outputs: the Tensors the op saved for its backward pass (see ``_SavedTensors``).
        input_ids, output_ids, input_shapes, output_shapes, input_dtypes, output_dtypes:
            kept even after the saved tensors are released (the renderers use them).
        input_values, output_values: the value (ndarray) of each input/output with at most
            ``SMALL_VALUE_SIZE`` elements, else None; also kept after release, so that
            ``mt.viz`` can show small values on a non-persistent tape after ``gradient``.
        attrs: the op's non-tensor arguments, read with ``get_attr(name)``.
        batch_ndim: during a vectorized Jacobian, the number of extra leading batch axes on
            the output gradients (0 otherwise).
        skip_input_indices: during a backward pass, the indices of the inputs whose gradient
            nobody needs (constants, inputs not connected to a source), as TensorFlow's
            attribute of that name; a gradient function may return None for them instead of
            computing them (Mul, MatMul, ... do). None outside a backward pass: compute all.
        origin: ``(code, instruction offset)`` of the learner's line that made the op, or None
            (see ``learner_frame``; ``source_line`` formats it).
        backward_of: the ``number`` of the tape whose backward pass ran this op, else None.
        forward: the function that computes the op again (``primitive``, ``custom_gradient``),
            else None (built-in ops: the registry's forward for ``type``).
        custom: True when ``grad_fn`` was given (``custom_gradient``); stays True after
            ``release`` drops the function and what its closure holds.
        module_calls: ``((module, stamp), ...)``, the Module calls running when the op was
            made, outermost first (``()`` outside any).
        residuals: arrays the op's forward computed on the way that its NumPy gradient
            reuses instead of computing them again (JAX's name for them), else None. Only
            the cross-entropies keep one, the softmax of the logits: TensorFlow's kernel
            keeps the same, as the op's second output ``backprop``. Dropped by ``release``.
        needs: on a persistent tape (which keeps every input and output), what the gradient
            rule needs: ``(keep_inputs, keep_outputs)`` as given to ``record`` (True, False
            or a set of indices), so that a drawing marks only those as saved. Not set on a
            non-persistent tape, whose saved tensors are already only those.
    """

    __slots__ = ("type", "seq", "input_ids", "output_ids", "input_shapes", "input_dtypes",
                 "_described", "attrs", "_inputs", "_outputs", "grad_fn", "batch_ndim",
                 "skip_input_indices", "origin", "backward_of", "forward", "custom",
                 "module_calls", "residuals", "needs", "__weakref__")

    def __init__(self, op_type, inputs, outputs, attrs, keep_inputs, keep_outputs, grad_fn,
                 origin=None, forward=None, residuals=None):
        self.type = op_type
        self.seq = next_seq()
        self.attrs = attrs
        self.grad_fn = grad_fn
        self.custom = grad_fn is not None
        self.forward = forward
        self.origin = origin
        self.residuals = residuals
        if contexts_running:     # (a Module call or a backward pass is running somewhere)
            self.module_calls = state.module_calls
            backward_of = state.backward_of
            self.backward_of = backward_of[-1] if backward_of else None
        else:
            self.module_calls = ()
            self.backward_of = None
        self.batch_ndim = 0
        self.skip_input_indices = None
        # Ids, shapes, dtypes and small values of each side, kept after the saved tensors
        # are released. What the backward pass reads are tuples: ``input_ids``,
        # ``input_shapes``, ``input_dtypes``, ``output_ids``. What only the pictures read is
        # one flat tuple, ``_described``: the inputs' small values, then each output's shape,
        # dtype and small value (``input_values`` and the other properties below read it).
        # This runs for every recorded op, so it makes as few tuples as it can, and the
        # common cases, one or two inputs and one output, are written out: no call, no loop.
        # A small value is the Tensor's array itself (a reference: a Tensor's array is never
        # written to), told by an empty shape for scalars, the commonest; None for a large
        # value.
        if len(outputs) == 1 and 0 < len(inputs) <= 2:
            z = outputs[0]
            self.output_ids = (z._id,)
            z_value = z._value if not z._shape or z._value.size <= SMALL_VALUE_SIZE else None
            if len(inputs) == 1:
                a = inputs[0]
                self.input_ids, self.input_shapes, self.input_dtypes = \
                    (a._id,), (a._shape,), (a._dtype,)
                self._described = (
                    a._value if not a._shape or a._value.size <= SMALL_VALUE_SIZE else None,
                    z._shape, z._dtype, z_value)
            else:
                a, b = inputs
                self.input_ids, self.input_shapes, self.input_dtypes = \
                    (a._id, b._id), (a._shape, b._shape), (a._dtype, b._dtype)
                self._described = (
                    a._value if not a._shape or a._value.size <= SMALL_VALUE_SIZE else None,
                    b._value if not b._shape or b._value.size <= SMALL_VALUE_SIZE else None,
                    z._shape, z._dtype, z_value)
            # (Keeping nothing is the common case for outputs, everything for inputs.)
            self._outputs = ((None,) if keep_outputs is False else tuple(outputs)
                             if keep_outputs is True else _keep(outputs, keep_outputs))
        else:
            self.input_ids = tuple(t._id for t in inputs)
            self.input_shapes = tuple(t._shape for t in inputs)
            self.input_dtypes = tuple(t._dtype for t in inputs)
            self.output_ids = tuple(t._id for t in outputs)
            self._described = tuple(_small_value(t) for t in inputs) + _describe(outputs)
            self._outputs = _keep(outputs, keep_outputs)
        # (``_keep`` written out for its two common cases, all and none, as for the outputs)
        self._inputs = (tuple(inputs) if keep_inputs is True else
                        (None,) * len(inputs) if keep_inputs is False else
                        _keep(inputs, keep_inputs))

    # The pictures' view of ``_described`` (read when a drawing is made, not while recording).
    @property
    def input_values(self):
        return self._described[:len(self.input_ids)]

    @property
    def output_shapes(self):
        return self._described[len(self.input_ids)::3]

    @property
    def output_dtypes(self):
        return self._described[len(self.input_ids) + 1::3]

    @property
    def output_values(self):
        return self._described[len(self.input_ids) + 2::3]

    @property
    def inputs(self):
        saved = self._inputs
        if saved is not None:      # (every gradient function reads this: the common case,
            for t in saved:        # everything kept, returns the plain tuple with no call)
                if t is None:
                    break
            else:
                return saved
        return _saved(saved, self.type, "input", self.input_ids)

    @property
    def outputs(self):
        return _saved(self._outputs, self.type, "output", self.output_ids)

    def get_attr(self, name):
        """The non-tensor argument ``name`` (e.g. ``axis``), as ``tf.Operation.get_attr``."""
        try:
            return self.attrs[name]
        except (KeyError, TypeError):
            raise ValueError(f"{self.type} has no attribute {name!r}; it has "
                             f"{sorted(self.attrs or {})}") from None

    def release(self):
        """Drop the saved tensors and residuals, and a custom gradient's function with
        everything its closure holds (the metadata stays for the renderers)."""
        self._inputs = self._outputs = self.residuals = None
        self.grad_fn = self.forward = None

    def __repr__(self):
        return (f"<Operation {self.type} #{self.seq} inputs={self.input_ids} "
                f"outputs={self.output_ids}>")


SMALL_VALUE_SIZE = 16  # values of at most this many elements are kept for the renderers


def _small_value(t):
    """What ``Operation`` keeps of ``t``'s value: the array itself if small, else None."""
    return t._value if t._value.size <= SMALL_VALUE_SIZE else None


def _describe(tensors):
    """``(shape, dtype, small value, shape, dtype, small value, ...)`` of ``tensors``, as
    ``Operation`` keeps its outputs' (it writes out the common case of one output)."""
    described = ()
    for t in tensors:
        described += (t._shape, t._dtype, _small_value(t))
    return described


def summarize(value):
    """``value`` (an ndarray) itself if it is small, else its ``(min, mean, max)`` as floats."""
    if value.size <= SMALL_VALUE_SIZE:
        return value
    if value.size == 0 or value.dtype.kind not in "biuf":
        return None
    # This runs for every intermediate gradient of a backward pass, so the mean is
    # ``sum / size``: the same number as ``value.mean()`` without its Python overhead
    # (small dtypes keep ``mean()``, which sums them in a wider type).
    mean = value.sum() / value.size if value.dtype.itemsize >= 4 else value.mean()
    return (float(value.min()), float(mean), float(value.max()))


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
    """Record one executed operation on every active tape that tracks one of its inputs.

    Args:
        op_type: the registry key of the op's gradient (e.g. ``"Mul"``).
        inputs, outputs: sequences of Tensors.
        attrs: dict of non-tensor arguments (``axis``, ``perm``, ...).
        keep_inputs, keep_outputs: what the gradient needs: True, False or a set of indices.
            A persistent tape keeps everything regardless.
        grad_fn: a gradient function for this one op (``custom_gradient``), else the registry's.
        forward: the function that computes the op again from its inputs (``primitive``,
            ``custom_gradient``), for ``mt.viz.check_tape``; built-in ops leave it None.
        residuals: see ``Operation.residuals``.
    """
    if check_numerics:   # (mt.debugging.enable_check_numerics: raises at a NaN or inf)
        from .debugging import check_outputs
        check_outputs(op_type, inputs, outputs)
    if tapes_recording:  # (else the fast path: no tape is recording, in any thread)
        origin = 0  # not looked up yet (0, not None: None means "no learner frame")
        for tape in state.tapes:
            tracked = tape._tracked
            for t in inputs:
                if t._id in tracked:
                    break
            else:
                continue
            if origin == 0:
                origin = learner_frame() if capture_source else None
            if tape._persistent:   # (keeps everything)
                op = Operation(op_type, inputs, outputs, attrs, True, True, grad_fn, origin,
                               forward, residuals)
                op.needs = (keep_inputs, keep_outputs)
            else:
                op = Operation(op_type, inputs, outputs, attrs, keep_inputs, keep_outputs,
                               grad_fn, origin, forward, residuals)
            tape._ops.append(op)
            for t in outputs:
                kind = t._dtype.kind
                if kind == "f":
                    tracked.add(t._id)
                elif kind == "c":
                    # Tracked too, so that a gradient asked through it raises a clear error in
                    # the backward pass instead of a silent None (the tape then checks for it).
                    tracked.add(t._id)
                    tape._has_complex = True
    if accumulators_recording and state.accumulators:
        from .forward import propagate_tangents
        propagate_tangents(op_type, inputs, outputs, attrs, grad_fn)


def variable_accessed(variable):
    """Called by ``Variable._read`` while a tape records (it checks ``tapes_recording``):
    the tapes that watch accessed variables watch it."""
    if variable.trainable:
        for tape in state.tapes:
            # (A Variable the tape tracks is already watched: its id enters ``_tracked`` only
            # by ``_watch_one``, as a Variable is no op's output.)
            if tape._watch_accessed_variables and variable._id not in tape._tracked:
                tape._watch_one(variable, warn=False)




def variable_assigned(variable, value, method):
    """Called by ``Variable.assign``/``assign_add``/``assign_sub`` while a tape records: a
    tape that tracks ``value`` notes the update as an ``"assigned"`` event. The update is not
    an op (it has no gradient); the note lets ``mt.viz.explain`` name it."""
    value_id = getattr(value, "_id", None)
    if value_id is None:
        return
    for tape in state.tapes:
        if value_id in tape._tracked:
            tape._event("assigned", (method, variable.name, value_id, variable._id))


class module_scope:
    """Context manager: ops made inside it belong to one call of ``module``.

    ``Module`` wraps every subclass's ``__call__`` in it, so a drawing can show each call of
    a layer as one box (``draw_tape(tape, group="module")``). Each call gets a new stamp.
    """

    __slots__ = ("module", "saved")

    def __init__(self, module):
        self.module = module

    def __enter__(self):
        self.saved = state.module_calls
        state.module_calls = self.saved + ((self.module, next_seq()),)
        contexts_running.append(self)

    def __exit__(self, *exc):
        state.module_calls = self.saved
        contexts_running.remove(self)
        return False


def source_line(op):
    """``(location, text)`` of the learner's line that made ``op``, or ``(None, None)``.

    ``location`` is ``"file.py:12"``, or ``"cell 3:2"`` (execution count, line) in Jupyter;
    ``text`` the stripped source line. Read from ``op.origin`` with ``linecache`` (IPython
    registers every cell there), only when asked.
    """
    span = source_span(op)
    if span is None:
        return None, None
    filename, line, _, _ = span
    import linecache
    text = linecache.getline(filename, line).strip() or None
    return f"{_short_filename(filename)}:{line}", text


def source_span(op):
    """``(filename, line, start column, end column)`` of the instruction that made ``op``
    (Python 3.11's ``co_positions``; the columns may be None), or None."""
    if not op.origin:
        return None
    code, lasti = op.origin
    line = start = end = None
    if hasattr(code, "co_positions"):
        positions = list(code.co_positions())
        index = lasti // 2
        if 0 <= index < len(positions):
            line, end_line, start, end = positions[index]
            if end_line != line:
                start = end = None
    if line is None:
        import dis
        for offset, lineno in dis.findlinestarts(code):
            if offset > lasti:
                break
            line = lineno
    if line is None:
        return None
    return code.co_filename, line, start, end


def short_location(filename, line):
    """``"file.py:12"``, or ``"cell 3:2"`` for a notebook cell: a place in the learner's code
    as ``source_line`` writes it."""
    return f"{_short_filename(filename)}:{line}"


def _short_filename(filename):
    """``cell 3`` for an IPython cell (``/tmp/ipykernel_1/123456.py`` or ``<ipython-input-3-..>``),
    else the file's base name."""
    ipython = sys.modules.get("IPython")
    if ipython is not None:
        try:
            shell = ipython.get_ipython()
            compiler = getattr(shell, "compile", None)
            cache = getattr(compiler, "_filename_map", None)
            if cache and filename in cache:
                return f"cell {cache[filename]}"
        except Exception:  # not in IPython, or another IPython version: use the file name
            pass
    if filename.startswith("<ipython-input-"):
        return "cell " + filename.split("-")[2]
    return os.path.basename(filename)
