"""The gradient tape: recording operations, then running them backwards.

Recording (the forward pass)
    Every minitape operation ends with a call to ``record(op_type, inputs, outputs, ...)``.
    Each active tape of the current thread checks whether one of the inputs is a tensor it
    *tracks* (a watched tensor, or the output of an op it recorded). If so it appends an
    ``Operation`` to its list and starts tracking the outputs. The list is in execution order,
    so it is already topologically sorted.

The backward pass (``backward``)
    1. Walk the list forwards once to find the ops that depend on a source.
    2. Seed ``grads = {target id: ones}`` (or ``output_gradients``).
    3. Walk the list *backwards*. For each op whose outputs received a gradient and that
       depends on a source, call its registered gradient function ``fn(op, *output_grads)``
       and add the results into ``grads`` under the input ids.
    4. Read the sources' entries out of ``grads``.
    There is no recursion anywhere, so a chain of a million ops is fine, and gradients live
    in a dictionary local to the pass, so asking twice gives the same numbers.

Gradient functions are written with minitape operations, so when another tape is recording
(an outer tape, or this persistent tape inside its own context) the backward pass is itself
recorded: that is all higher-order gradients need.
"""

from __future__ import annotations

import enum
import threading
import warnings

import numpy as np

from . import dtypes, registry


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for an unconnected source, as ``tf.UnconnectedGradients``."""

    NONE = "none"
    ZERO = "zero"


class _ThreadState(threading.local):
    """Per-thread recording state: a tape never records another thread's operations."""

    def __init__(self):
        self.tapes = []          # tapes currently recording, innermost last
        self.accumulators = []   # active ForwardAccumulators (minitape.forward)


_state = _ThreadState()
_op_seq = iter(range(1, 1 << 62)).__next__  # a global sequence number per recorded op


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
    """

    __slots__ = ("type", "seq", "input_ids", "output_ids", "input_shapes", "output_shapes",
                 "input_dtypes", "output_dtypes", "input_values", "output_values", "attrs",
                 "_inputs", "_outputs", "grad_fn", "batch_ndim", "skip_input_indices",
                 "__weakref__")

    def __init__(self, op_type, inputs, outputs, attrs, keep_inputs, keep_outputs, grad_fn):
        self.type = op_type
        self.seq = _op_seq()
        # This runs for every recorded op, so each side is read in one pass (``_describe``)
        # rather than with one generator per attribute. The small values are for mt.viz.
        self.input_ids, self.input_shapes, self.input_dtypes, self.input_values = \
            _describe(inputs)
        self.output_ids, self.output_shapes, self.output_dtypes, self.output_values = \
            _describe(outputs)
        self.attrs = attrs
        self.grad_fn = grad_fn
        self.batch_ndim = 0
        self.skip_input_indices = None
        # (Keeping everything is the common case for inputs, keeping nothing for outputs.)
        self._inputs = tuple(inputs) if keep_inputs is True else _keep(inputs, keep_inputs)
        self._outputs = (None,) * len(outputs) if keep_outputs is False else \
            _keep(outputs, keep_outputs)

    @property
    def inputs(self):
        return _saved(self._inputs, self.type, "input", self.input_ids)

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
        """Drop the saved tensors (the metadata stays for the renderers)."""
        self._inputs = self._outputs = None

    def __repr__(self):
        return (f"<Operation {self.type} #{self.seq} inputs={self.input_ids} "
                f"outputs={self.output_ids}>")


SMALL_VALUE_SIZE = 16  # values of at most this many elements are kept for the renderers


def _describe(tensors):
    """``(ids, shapes, dtypes, small values)`` of ``tensors``, four tuples built in one pass."""
    # Most ops have one output and one or two inputs: those cases are written out, no loop.
    if len(tensors) == 1:
        value = tensors[0]._value
        return ((tensors[0]._id,), (value.shape,), (value.dtype,),
                (value if value.size <= SMALL_VALUE_SIZE else None,))
    if len(tensors) == 2:
        a, b = tensors[0]._value, tensors[1]._value
        return ((tensors[0]._id, tensors[1]._id), (a.shape, b.shape), (a.dtype, b.dtype),
                (a if a.size <= SMALL_VALUE_SIZE else None,
                 b if b.size <= SMALL_VALUE_SIZE else None))
    ids, shapes, dtypes_, values = [], [], [], []
    for t in tensors:
        value = t._value
        ids.append(t._id)
        shapes.append(value.shape)
        dtypes_.append(value.dtype)
        # A reference, not a copy: a Tensor's array is never written to (Variable.assign
        # makes a new one). None for a large value.
        values.append(value if value.size <= SMALL_VALUE_SIZE else None)
    return tuple(ids), tuple(shapes), tuple(dtypes_), tuple(values)


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
           grad_fn=None):
    """Record one executed operation on every active tape that tracks one of its inputs.

    Args:
        op_type: the registry key of the op's gradient (e.g. ``"Mul"``).
        inputs, outputs: sequences of Tensors.
        attrs: dict of non-tensor arguments (``axis``, ``perm``, ...).
        keep_inputs, keep_outputs: what the gradient needs: True, False or a set of indices.
            A persistent tape keeps everything regardless.
        grad_fn: a gradient function for this one op (``custom_gradient``), else the registry's.
    """
    state = _state
    if not state.tapes and not state.accumulators:
        return  # the fast path: nothing is recording
    for tape in state.tapes:
        tracked = tape._tracked
        for t in inputs:
            if t._id in tracked:
                break
        else:
            continue
        if tape._persistent:
            op = Operation(op_type, inputs, outputs, attrs, True, True, grad_fn)
        else:
            op = Operation(op_type, inputs, outputs, attrs, keep_inputs, keep_outputs, grad_fn)
        tape._ops.append(op)
        for t in outputs:
            if t._value.dtype.kind == "f":
                tracked.add(t._id)
    if state.accumulators:
        from .forward import propagate_tangents
        propagate_tangents(op_type, inputs, outputs, attrs, grad_fn)


def variable_accessed(variable):
    """Called on every read of a Variable: tapes that watch accessed variables watch it."""
    if variable.trainable:
        for tape in _state.tapes:
            if tape._watch_accessed_variables:
                tape._watch_one(variable, warn=False)


class GradientTape:
    """Record operations to differentiate them, as ``tf.GradientTape``.

    Args:
        persistent: if False (the default) ``gradient`` (or ``jacobian``) may be called once,
            and the tape frees what it saved while that call runs. If True it may be called
            any number of times and keeps everything until the tape is deleted.
        watch_accessed_variables: if True (the default) every trainable Variable that an
            operation reads inside the tape is watched automatically.

    >>> import minitape as mt
    >>> x = mt.Variable(3.0)
    >>> with mt.GradientTape() as tape:
    ...     y = x**2
    >>> tape.gradient(y, x)
    <mt.Tensor: shape=(), dtype=float32, numpy=6.0>
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._ops = []              # Operations in execution order
        self._tracked = set()       # ids of watched tensors and of recorded outputs
        self._watched = {}          # id -> watched Tensor/Variable, in first-watch order
        self._recording = False     # inside the context and not paused
        self._used = False          # a non-persistent tape's one gradient call happened
        self._released = False
        self._resets = []           # seq numbers at which reset() was called (for renderers)
        self._gaps = []             # (start seq, end seq) of stop_recording blocks
        self._last_gradients = {}   # id -> gradient reached, from the last backward pass
        self._reached_gradients = {}  # id -> summarize(gradient) of intermediates (renderers)

    # -- the context -------------------------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise RuntimeError("this GradientTape is already recording; a tape cannot be "
                               "entered twice at once (open a second tape instead)")
        self._push()
        return self

    def __exit__(self, *exc):
        if self._recording:
            self._pop()
        return False

    def _push(self):
        _state.tapes.append(self)
        self._recording = True

    def _pop(self):
        tapes = _state.tapes
        if self not in tapes:
            raise RuntimeError("a GradientTape must be exited in the thread that entered it")
        tapes.remove(self)
        self._recording = False

    # -- watching ----------------------------------------------------------------------------
    def watch(self, tensor):
        """Watch a Tensor or Variable (or a nested list/tuple/dict of them).

        A non-floating tensor is not watched: ``UserWarning`` "The dtype of the watched tensor
        must be floating (e.g. float32), got int32", and its gradient is ``None``.

        Raises:
            TypeError: if an item is not a minitape Tensor or Variable.
        """
        for t in flatten(tensor):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"GradientTape.watch expects Tensors or Variables, got "
                    f"{type(t).__name__} {t!r:.60}; convert it first with mt.constant(...)"
                )
            self._watch_one(t, warn=True)

    def _watch_one(self, t, warn):
        if t._value.dtype.kind != "f":
            if warn:
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. float32), "
                              f"got {t.dtype.name}", UserWarning, stacklevel=3)
            return
        if t._id not in self._watched:
            self._watched[t._id] = t
        self._tracked.add(t._id)

    def watched_variables(self):
        """The Variables this tape watched, in first-use order (a tuple)."""
        return tuple(v for v in self._watched.values() if isinstance(v, Variable))

    # -- controlling the recording -----------------------------------------------------------
    def stop_recording(self):
        """Context manager: operations inside it are not recorded by this tape."""
        return _StopRecording(self)

    def reset(self):
        """Forget everything recorded and watched so far; the tape keeps recording."""
        self._resets.append(_op_seq())
        self._ops = []
        self._tracked = set()
        self._watched = {}
        self._used = self._released = False

    # -- reverse mode ------------------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradient of ``target`` with respect to ``sources``, as ``tf.GradientTape.gradient``.

        Args:
            target: a Tensor, or a nested list/tuple/dict of Tensors; a non-scalar target (or
                several) is summed, i.e. the output gradient defaults to ones.
            sources: a Tensor/Variable or a nested list/tuple/dict of them.
            output_gradients: optional, the gradient of some loss with respect to ``target``:
                same structure and shapes as ``target``.
            unconnected_gradients: ``UnconnectedGradients.NONE`` (default, ``None`` for an
                unconnected source) or ``.ZERO`` (zeros of the source's shape).

        Returns:
            ``sources``' structure with one gradient per source: a Tensor of the source's shape
            and dtype, or ``None``.

        Raises:
            RuntimeError: a non-persistent tape asked a second time.
            TypeError: a target or source that is not a minitape Tensor.
            ValueError: ``output_gradients`` of the wrong shape.
            LookupError: a path goes through an op with no registered gradient.
        """
        self._begin_backward("gradient")
        targets = flatten(target)
        seeds = _seed_gradients(targets, output_gradients)
        flat_sources = _check_sources(sources, "gradient")
        grads = self._run_backward(seeds, flat_sources, batch_ndim=0)
        return _pack_results(sources, flat_sources, grads, unconnected_gradients, ())

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """Jacobian of ``target`` with respect to each source, as ``tf.GradientTape.jacobian``.

        Args:
            target: one Tensor (not a structure: stack several with ``mt.stack``).
            sources: a Tensor/Variable or a nested structure of them.
            experimental_use_pfor: True (default) runs *one* backward pass over a batch of
                cotangents, the rows of an identity matrix (every gradient function carries
                the leading batch axis). False loops over the target's elements, one backward
                pass each. Both give the same numbers.
            parallel_iterations: accepted for TensorFlow compatibility; unused.

        Returns:
            ``sources``' structure; each entry of shape ``target.shape + source.shape``.

        Raises:
            TypeError: ``target`` is a list/tuple/dict or not a minitape Tensor.
            RuntimeError: a non-persistent tape asked a second time.
        """
        if not isinstance(target, Tensor):
            if isinstance(target, (list, tuple, dict)):
                raise TypeError("GradientTape.jacobian: target must be a single Tensor, got a "
                                f"{type(target).__name__}; stack the targets with mt.stack or "
                                "call jacobian once per target")
            raise _outside_minitape_error(target, "GradientTape.jacobian target")
        self._begin_backward("jacobian")
        flat_sources = _check_sources(sources, "jacobian")
        n = target.size
        if target.dtype.kind != "f":
            grads = {}
        elif experimental_use_pfor:
            seed = Tensor(np.eye(n, dtype=target.dtype).reshape((n,) + target.shape))
            grads = self._run_backward({target._id: seed}, flat_sources, batch_ndim=1)
        else:
            grads = self._loop_backward(
                target, flat_sources,
                (np.eye(n, dtype=target.dtype)[k].reshape(target.shape) for k in range(n)))
        results = []
        for s in flat_sources:
            g = grads.get(s._id)
            if g is not None:
                g = _reshape(g, target.shape + s.shape)
            results.append(g)
        return _pack_results(sources, flat_sources, dict(zip([s._id for s in flat_sources],
                                                               results)),
                             unconnected_gradients, target.shape)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians, as ``tf.GradientTape.batch_jacobian``.

        ``target`` ``(b, y...)`` (rank 2 or more) and ``source`` ``(b, x...)``; result
        ``(b, y..., x...)``: entry ``[i]`` is the Jacobian of ``target[i]`` with respect to
        ``source[i]``. It assumes example i of the target depends only on example i of the
        source (true for most layers, not for batch normalization in training mode) and
        never computes the cross-batch blocks: the cotangent for output position t is 1 at
        position t of *every* example at once. Unlike TensorFlow, the loop version also
        works on a non-persistent tape.

        Raises:
            ValueError: rank below 2, or batch sizes that differ.
        """
        if not isinstance(target, Tensor):
            raise _outside_minitape_error(target, "GradientTape.batch_jacobian target")
        if not isinstance(source, Tensor):
            raise _outside_minitape_error(source, "GradientTape.batch_jacobian source")
        if target.ndim < 2 or source.ndim < 2:
            raise ValueError(f"batch_jacobian needs target and source of rank 2 or more "
                             f"(batch, ...), got shapes {target.shape} and {source.shape}")
        if target.shape[0] != source.shape[0]:
            raise ValueError(f"batch_jacobian: the batch sizes differ: target {target.shape} has "
                             f"{target.shape[0]}, source {source.shape} has {source.shape[0]}; "
                             "use jacobian for unrelated batches")
        self._begin_backward("batch_jacobian")
        b, rest = target.shape[0], target.shape[1:]
        n = int(np.prod(rest))
        one_hots = np.broadcast_to(np.eye(n, dtype=target.dtype).reshape((n, 1) + rest),
                                   (n, b) + rest)
        if target.dtype.kind != "f":
            g = None
        elif experimental_use_pfor:
            g = self._run_backward({target._id: Tensor(one_hots)}, [source],
                                   batch_ndim=1).get(source._id)
        else:
            g = self._loop_backward(target, [source], iter(one_hots)).get(source._id)
        if g is None:
            return _unconnected(source, unconnected_gradients, (b,) + rest)
        from .ops import array_ops  # (n, b, x...) -> (b, n, x...) -> (b, y..., x...)
        g = array_ops.transpose(g, (1, 0) + tuple(range(2, g.ndim)))
        return _reshape(g, (b,) + rest + source.shape[1:])

    def _loop_backward(self, target, flat_sources, seeds):
        """One backward pass per seed (``experimental_use_pfor=False``); stacks the results."""
        from .ops import array_ops
        per_source = {s._id: [] for s in flat_sources}
        connected = set()
        for seed in seeds:
            grads = self._run_backward({target._id: Tensor(np.array(seed))}, flat_sources,
                                       batch_ndim=0, release=False)
            for s in flat_sources:
                g = grads.get(s._id)
                if g is not None:
                    connected.add(s._id)
                per_source[s._id].append(g if g is not None else
                                         Tensor(np.zeros(s.shape, s.dtype)))
        if not self._persistent:
            for op in self._ops:
                op.release()
            self._released = True
        return {i: array_ops.stack(rows) for i, rows in per_source.items()
                if i in connected and rows}

    def _begin_backward(self, what):
        if self._used and not self._persistent:
            raise RuntimeError(
                f"GradientTape.{what} can only be called once on a non-persistent tape (it "
                "released what it recorded after the first call). To compute several gradients, "
                "create the tape with mt.GradientTape(persistent=True)."
            )
        self._used = True
        if self._recording:
            if self._persistent:
                warnings.warn(
                    "Calling GradientTape.gradient on a persistent tape inside its context is "
                    "significantly less efficient than calling it outside the context (it "
                    "causes the gradient ops to be recorded on the tape, leading to increased "
                    "CPU and memory usage). Only call GradientTape.gradient inside the context "
                    "if you actually want to trace the gradient in order to compute higher "
                    "order derivatives.", UserWarning, stacklevel=3)
            else:
                self._pop()  # a non-persistent tape stops recording before its backward pass

    def _run_backward(self, seeds, flat_sources, batch_ndim, release=None):
        source_ids = {s._id for s in flat_sources if s._id in self._tracked or s._id in seeds}
        if release is None:
            release = not self._persistent
        reached = {} if batch_ndim == 0 else None
        # For the renderers, the intermediate gradients' values (small) or min/mean/max
        # (large). A non-persistent tape keeps only the small ones, as it does for the
        # tensors' values: summarizing every large gradient would cost its backward pass
        # three extra passes over each array.
        grads = backward(list(self._ops), seeds, source_ids, batch_ndim, release, reached,
                         summarize_large=self._persistent)
        self._last_gradients = grads if batch_ndim == 0 else {}
        self._reached_gradients = reached or {}
        if release:
            self._released = True
        return grads

    def __del__(self):
        # A tape deleted while recording (e.g. an exception in a generator) stops recording.
        try:
            if self._recording and self in _state.tapes:
                _state.tapes.remove(self)
        except Exception:
            pass

    def _repr_mimebundle_(self, include=None, exclude=None):
        """A tape shown as the last expression of a notebook cell draws itself."""
        try:
            from .viz import draw_tape
            return draw_tape(self)._repr_mimebundle_(include=include, exclude=exclude)
        except (ImportError, RuntimeError) as e:  # no graphviz, or no `dot` binary on PATH
            return {"text/plain": f"{self!r} (cannot draw it: {e}; see the README's set-up)"}

    def __repr__(self):
        kind = "persistent " if self._persistent else ""
        return f"<mt.GradientTape {kind}ops={len(self._ops)} watched={len(self._watched)}>"


class _StopRecording:
    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        if not self.tape._recording:
            raise RuntimeError("GradientTape.stop_recording() is only valid while the tape is "
                               "recording (inside its `with` block)")
        self.start = _op_seq()
        self.tape._pop()

    def __exit__(self, *exc):
        self.tape._push()
        self.tape._gaps.append((self.start, _op_seq()))
        return False


# -- the backward pass --------------------------------------------------------------------------

def backward(ops, seeds, source_ids, batch_ndim=0, release=False, reached=None,
             summarize_large=True):
    """Reverse-mode pass over ``ops`` (a list in execution order).

    Args:
        ops: the recorded Operations.
        seeds: dict id -> output gradient (a Tensor of shape batch + target shape).
        source_ids: ids whose gradients are wanted.
        batch_ndim: leading batch axes on every gradient (vectorized Jacobians), else 0.
        release: free each op's saved tensors as soon as the pass is past it.
        reached: optional dict, filled with id -> ``summarize(gradient)`` for the intermediate
            gradients the pass drops once used (for the renderers; small values or min/mean/max).
        summarize_large: False keeps only the small intermediate gradients in ``reached``
            (three reductions over every large gradient cost ~15% of a small MLP's step).

    Returns:
        dict id -> gradient Tensor, for every id the pass reached.
    """
    # 1. Forward sweep: which ops lie downstream of a source? Only they need gradients.
    reaches_source = set(source_ids)
    for op in ops:
        if not reaches_source.isdisjoint(op.input_ids):  # "some input reaches a source"
            reaches_source.update(op.output_ids)
    grads = dict(seeds)
    batch_shape = next(iter(seeds.values())).shape[:batch_ndim] if seeds else ()
    # 2. Reverse sweep.
    for op in reversed(ops):
        out_grads = list(map(grads.get, op.output_ids))  # None where no gradient arrived
        if reaches_source.isdisjoint(op.input_ids) or _all_none(out_grads):
            if release:
                op.release()
            continue
        fn = op.grad_fn or registry.lookup(op.type)   # LookupError if none is registered
        if fn is None:                                  # declared not differentiable
            if release:
                op.release()
            continue
        for k, i in enumerate(op.output_ids):
            if i not in source_ids:
                g = grads.pop(i, None)  # nothing upstream needs this entry any more
                if reached is not None and g is not None:
                    value = g._value  # (a small value is kept as it is: no call needed)
                    if value.size <= SMALL_VALUE_SIZE:
                        reached[i] = value
                    elif summarize_large:
                        reached[i] = summarize(value)
            if out_grads[k] is None:  # another output got a gradient, this one none: zeros
                out_grads[k] = Tensor(np.zeros(batch_shape + op.output_shapes[k],
                                               op.output_dtypes[k]))
        # Which inputs need no gradient? (e.g. the 0.5 in ``x * 0.5``: Mul then skips
        # computing ``dy * x``, MatMul skips the gradient of a batch of data.)
        op.skip_input_indices = (() if reaches_source.issuperset(op.input_ids)  # (all needed)
                                 else _skipped_inputs(op.input_ids, reaches_source))
        in_grads = _call_gradient(op, fn, out_grads, batch_ndim)
        op.skip_input_indices = None
        for k, (i, g) in enumerate(zip(op.input_ids, in_grads)):
            if g is None or i not in reaches_source:
                continue
            # The common case (a Tensor of the input's exact shape and dtype) is checked
            # inline; anything else goes through the full check, which explains the error.
            # (``is not`` on dtypes: NumPy's dtypes are shared objects, and an equal dtype
            # that is another object just takes the full check.)
            if (batch_ndim or type(g) is not Tensor or g._value.shape != op.input_shapes[k]
                    or g._value.dtype is not op.input_dtypes[k]):
                _check_gradient(op, k, g, batch_ndim)
            grads[i] = g if i not in grads else _add(grads[i], g)
        if release:
            op.release()
    return grads


def _skipped_inputs(input_ids, reaches_source):
    skipped = ()
    for k, i in enumerate(input_ids):
        if i not in reaches_source:
            skipped += (k,)
    return skipped


def _all_none(items):
    # A plain loop: ``None in items`` or ``items.count(None)`` would compare Tensors with
    # ``==``, which is an elementwise minitape op.
    for item in items:
        if item is not None:
            return False
    return True


def _call_gradient(op, fn, out_grads, batch_ndim):
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
    from .ops import array_ops
    batch_shape = out_grads[0].shape[:batch_ndim]
    flat = [array_ops.reshape(g, (-1,) + g.shape[batch_ndim:]) for g in out_grads]
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
        stacked = array_ops.stack(column)
        result.append(array_ops.reshape(stacked, batch_shape + stacked.shape[1:]))
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


def _add(a, b):
    return _math_ops.add(a, b)


# -- targets, sources and results ---------------------------------------------------------------

def flatten(structure):
    """Flatten nested lists/tuples/dicts (dicts in key order of insertion) into a list."""
    if not isinstance(structure, (list, tuple, dict)):
        return [structure]
    out = []
    for v in (structure.values() if isinstance(structure, dict) else structure):
        if isinstance(v, (list, tuple, dict)):
            out.extend(flatten(v))
        else:
            out.append(v)  # (a leaf: no recursive call for it)
    return out


def pack_like(structure, flat):
    """Inverse of ``flatten``: put the items of ``flat`` back into ``structure``'s shape."""
    return _pack(structure, iter(flat))


def _pack(s, items):
    # A module-level function, not a closure that calls itself: such a closure is a reference
    # cycle, which would keep every gradient alive until the garbage collector runs.
    if isinstance(s, dict):
        return {k: _pack(v, items) for k, v in s.items()}
    if isinstance(s, (list, tuple)):
        packed = [_pack(v, items) if isinstance(v, (list, tuple, dict)) else next(items)
                  for v in s]
        return type(s)(packed) if type(s) in (list, tuple) else type(s)(*packed)
    return next(items)


def _outside_minitape_error(t, what):
    if isinstance(t, (np.ndarray, np.generic)):
        return TypeError(
            f"{what}: got a NumPy {type(t).__name__}, which was computed outside minitape (for "
            "example by np.mean), so no tape recorded how it was made; compute it with minitape "
            "operations (mt.reduce_mean, mt.math.sin, ...) inside the tape"
        )
    return TypeError(f"{what}: expected a minitape Tensor or Variable, got "
                     f"{type(t).__name__} {t!r:.60}")


def _seed_gradients(targets, output_gradients):
    from .ops import array_ops
    for t in targets:
        if not isinstance(t, Tensor):
            raise _outside_minitape_error(t, "GradientTape.gradient target")
    if output_gradients is None:
        flat_out = [None] * len(targets)
    else:
        flat_out = flatten(output_gradients)
        if len(flat_out) != len(targets):
            raise ValueError(f"output_gradients has {len(flat_out)} entries but target has "
                             f"{len(targets)}; give one per target (same structure)")
    seeds = {}
    for t, g in zip(targets, flat_out):
        if t._value.dtype.kind != "f":
            continue  # integer targets have no gradient
        if g is None:
            g = array_ops.ones_like(t)
        else:
            g = convert_to_tensor(g, dtype=t.dtype, what="output_gradients")
            if g.shape != t.shape:
                raise ValueError(f"output_gradients entry has shape {g.shape} but its target "
                                 f"has shape {t.shape}; they must match")
        seeds[t._id] = g if t._id not in seeds else _add(seeds[t._id], g)
    return seeds


def _check_sources(sources, what):
    flat = flatten(sources)
    for s in flat:
        if not isinstance(s, Tensor):
            raise _outside_minitape_error(s, f"GradientTape.{what} source")
    return flat


def _pack_results(sources, flat_sources, grads, unconnected, batch_shape):
    if not isinstance(unconnected, UnconnectedGradients):
        try:
            unconnected = UnconnectedGradients(unconnected)
        except ValueError:
            raise ValueError(f"unconnected_gradients must be mt.UnconnectedGradients.NONE or "
                             f".ZERO, got {unconnected!r}") from None
    results = []
    for s in flat_sources:
        g = grads.get(s._id) if s._value.dtype.kind == "f" else None
        if g is None and unconnected is UnconnectedGradients.ZERO:
            g = Tensor(np.zeros(batch_shape + s.shape, s.dtype))
        results.append(g)
    if not isinstance(sources, (list, tuple, dict)):
        return results[0]
    return pack_like(sources, results)


def _reshape(g, shape):
    from .ops import array_ops
    return array_ops.reshape(g, shape)


def _unconnected(source, unconnected, batch_shape):
    if UnconnectedGradients(unconnected) is UnconnectedGradients.ZERO:
        return Tensor(np.zeros(batch_shape + source.shape[1:], source.dtype))
    return None


from .tensor import Tensor, Variable, convert_to_tensor  # noqa: E402,F401
from .ops import math_ops as _math_ops  # noqa: E402  (the backward pass adds gradients with it)
_ = dtypes
