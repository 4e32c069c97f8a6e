"""The tape object: ``GradientTape``, what it watches, and the events of its life.

How minitape differentiates, in four files a learner can read one at a time:

- ``recording.py``: every op calls ``record``, which appends an ``Operation`` to each active
  tape that watches one of its inputs;
- ``tape.py`` (this file): ``GradientTape``, the context manager that turns recording on and
  off, watches tensors, and answers ``gradient``;
- ``backward.py``: the chain rule, walking the recorded ops in reverse (``backward_steps``);
- ``jacobians.py``: ``jacobian`` and ``batch_jacobian``, many backward passes at once.

A tape also keeps a short log of its life (``events``: entered, paused, resumed, reset,
gradient, released, exited), each with a stamp of the global sequence.

**Observers.** The tape records what the gradient needs and nothing more. A tool that wants
to know more (``mt.viz`` draws the learner's names and source lines, small values, Module
calls and the last backward pass) attaches an observer (``add_observer``): an object with the
methods of ``TapeObserver``, which the tape calls as each op is recorded, at each event and
at each step of a backward pass. A tape with no observer does no work for them. Every new
tape attaches the observers that the factories in ``observer_factories`` make, so a tool can
be there from a tape's first op (``mt.config.record_source_lines`` adds ``mt.viz``'s).
"""

from __future__ import annotations

import contextlib
import functools
import enum
import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from .backward import add_gradients, backward
from ..dtypes import complex_gradient_error
from ..errors import complex_target_error, outside_minitape_error
from ..nest import flatten, pack_like
from .recording import Operation, next_seq, record, state, tapes_recording  # noqa: F401
from .tensor import Tensor, Variable, convert_to_tensor, new_tensor_id


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for an unconnected source, as ``tf.UnconnectedGradients``."""

    NONE = "none"
    ZERO = "zero"


@dataclass(frozen=True)
class TapeEvent:
    """One moment in a tape's life: ``kind`` is ``"entered"``, ``"exited"`` (``detail``: a
    tensor id larger than any made before), ``"paused"`` (``stop_recording`` began),
    ``"resumed"``, ``"reset"``, ``"gradient"`` (a backward pass began; ``detail`` names the
    method), ``"released"`` (a non-persistent tape freed what it saved), or ``"assigned"``
    (a Variable update took a tensor the tape tracks, which is not recorded as an op:
    ``detail`` is ``(method, Variable name, tensor id, Variable id)``), or ``"watched"``
    (``watch`` was called: ``detail`` is ``(a tensor id larger than any made before, the ids
    watched)``; a Variable watched because an op read it makes no event). ``seq`` is a stamp
    of the global sequence that ops get too: the event happened after every op with a
    smaller ``seq`` and before every op with a larger one."""

    kind: str
    seq: int
    detail: str | None = None


class TapeObserver:
    """What a tape tells its observers (``GradientTape.add_observer``): subclass it and
    override what you need; every method here does nothing.

    The engine calls these while it records and differentiates, so an observer must not
    change the tape, and should be quick: ``op_recorded`` runs for every recorded op.
    """

    def op_recorded(self, tape, op, inputs, outputs, forward, needs):
        """``tape`` appended ``op`` (an ``Operation``), made from the Tensors ``inputs`` into
        ``outputs``. ``forward``: the function that computes the op again (``mt.primitive``,
        ``custom_gradient``), else None. ``needs``: ``(keep_inputs, keep_outputs)``, what the
        op's gradient rule needs of its inputs and outputs (True, False or a set of indices),
        as the op gave them to ``record`` (a persistent tape keeps everything regardless).
        Called from inside the op, so the learner's line that made it is on the call stack."""

    def event(self, tape, kind, seq, detail):
        """A ``TapeEvent`` of ``tape`` happened (``kind``, stamp ``seq``, ``detail``)."""

    def backward_began(self, tape, seeds, source_ids, batch_ndim):
        """A backward pass over ``tape`` begins: ``seeds`` maps each target's id to its
        output gradient (a Tensor); ``batch_ndim`` is 0 but in a vectorized Jacobian."""

    def backward_step(self, tape, op, out_grads, in_grads):
        """One step of the walk (``backward.backward_steps``): ``op``'s gradient ran, with
        ``out_grads`` arriving at its outputs and ``in_grads`` sent to its inputs (Tensors;
        None where none is sent)."""

    def backward_ended(self, tape, gradients):
        """The pass ended (also when it raised: ``gradients`` is then None); ``gradients``
        maps tensor ids to the gradients it returned."""


observer_factories: list = []
"""Callables ``factory(tape) -> observer or None``: each new GradientTape attaches what they
return, so the observer sees the tape from its first op (``mt.config.record_source_lines``
adds ``mt.viz``'s record here)."""

_tape_numbers = itertools.count(1).__next__


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
        self._has_complex = False   # an op recorded a complex output (backward checks paths)
        self._watched = {}          # id -> watched Tensor/Variable, in first-watch order
        self._recording = False     # inside the context and not paused
        self._used = False          # a non-persistent tape's one gradient call happened
        self._released = False
        self._events = []           # (kind, seq, detail) of each TapeEvent, in order
        self.number = _tape_numbers()  # "tape 1", "tape 2", ... in order of creation
        self._observers = ()        # see add_observer
        for factory in observer_factories:
            observer = factory(self)
            if observer is not None:
                self.add_observer(observer)

    # -- what the renderers read -------------------------------------------------------------
    @property
    def persistent(self):
        """True if the tape may be asked for gradients more than once."""
        return self._persistent

    @property
    def operations(self):
        """The recorded Operations since the last ``reset``, in execution order (a tuple).
        An op's number on this tape, as drawings show it (``#1``), is its position + 1."""
        return tuple(self._ops)

    @property
    def events(self):
        """The tape's life as a tuple of ``TapeEvent`` (entered, paused, reset, ...)."""
        return tuple(TapeEvent(*event) for event in self._events)

    @property
    def watch_accessed_variables(self):
        """True if the tape watches every trainable Variable an op reads inside it."""
        return self._watch_accessed_variables

    @property
    def watched(self):
        """The watched Tensors and Variables, in first-watch order (a tuple)."""
        return tuple(self._watched.values())

    @property
    def observers(self):
        """The attached observers, in the order they were added (a tuple)."""
        return self._observers

    def add_observer(self, observer):
        """Attach ``observer`` (an instance of a ``TapeObserver`` subclass): the tape calls it
        as each op is recorded, at each event and at each backward step.

        Raises:
            TypeError: ``observer`` is not a ``TapeObserver``.
        """
        if not isinstance(observer, TapeObserver):
            raise TypeError(f"add_observer expects a TapeObserver, got {type(observer).__name__}"
                            " (subclass mt.tape.TapeObserver and override what you need)")
        if observer not in self._observers:
            self._observers += (observer,)

    def remove_observer(self, observer):
        """Detach ``observer`` (nothing happens if it is not attached)."""
        self._observers = tuple(o for o in self._observers if o is not observer)

    @property
    def recording(self):
        """True while the tape records: inside its ``with`` block and not paused."""
        return self._recording

    @property
    def released(self):
        """True once a non-persistent tape has freed the tensors its ops saved."""
        return self._released

    def _event(self, kind, detail=None):
        # A plain tuple, made a TapeEvent when ``events`` is read: a training loop makes
        # four events a step, and a frozen dataclass costs ten times as much to build.
        seq = next_seq()
        self._events.append((kind, seq, detail))
        for observer in self._observers:
            observer.event(self, kind, seq, detail)

    # -- the context -------------------------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise RuntimeError("this GradientTape is already recording; a tape cannot be "
                               "entered twice at once (open a second tape instead)")
        self._push()
        self._event("entered")
        return self

    def __exit__(self, *exc):
        if self._recording:
            self._pop()
        # (The detail: an id no tensor made inside the block reaches, so ``mt.viz.explain``
        # can tell a target computed after the block.)
        self._event("exited", new_tensor_id())
        return False

    def _push(self):
        state.tapes.append(self)
        tapes_recording.add(self)
        self._recording = True

    def _pop(self):
        if self not in state.tapes:
            raise RuntimeError("a GradientTape must be exited in the thread that entered it")
        state.tapes.remove(self)
        tapes_recording.discard(self)
        self._recording = False

    # -- watching ----------------------------------------------------------------------------
    def watch(self, tensor):
        """Watch a Tensor or Variable (or a nested list/tuple/dict of them).

        A non-floating tensor is not watched: ``UserWarning`` "The dtype of the watched tensor
        must be floating (e.g. float32), got int32", and its gradient is ``None``. A complex
        tensor gets the same warning (minitape does not differentiate complex numbers; asking
        for its gradient raises ``TypeError``).

        Raises:
            TypeError: if an item is not a minitape Tensor or Variable.
        """
        flat = flatten(tensor)
        for t in flat:
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"GradientTape.watch expects Tensors or Variables, got "
                    f"{type(t).__name__} {t!r:.60}; convert it first with mt.constant(...)")
            self._watch_one(t, warn=True)
        # (``detail``: a tensor id larger than any made before, and the ids watched, so that
        # ``mt.viz.explain`` can tell a ``watch`` that came after the target was computed.)
        self._event("watched", (new_tensor_id(), tuple(t.id for t in flat)))

    def _watch_one(self, t, warn):
        if t._dtype.kind != "f":
            if warn:
                extra = ("; minitape does not differentiate complex numbers"
                         if t._dtype.kind == "c" else "")
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. float32), "
                              f"got {t.dtype.name}{extra}", UserWarning, stacklevel=3)
            return
        self._watched.setdefault(t.id, t)
        self._tracked.add(t.id)

    def watched_variables(self):
        """The Variables this tape watched, in first-use order (a tuple)."""
        return tuple(v for v in self._watched.values() if isinstance(v, Variable))

    def tracks(self, tensor):
        """True if this tape would record an op that reads ``tensor``: it is watched, or an op
        the tape recorded made it (the ``Pow`` rule asks, to know an exponent is a constant)."""
        return tensor.id in self._tracked

    # -- what recording.py and Variable call ------------------------------------------------
    def record_operation(self, op_type, inputs, outputs, attrs, keep_inputs, keep_outputs,
                         grad_fn=None, forward=None, residuals=None):
        """Append an ``Operation`` for an op that ran, if one of its ``inputs`` is a tensor
        this tape tracks (watched, or made by an op it recorded), and track its outputs.
        ``recording.record`` calls it for every op while the tape records (its arguments
        are ``record``'s); a persistent tape keeps every input and output."""
        tracked = self._tracked
        for t in inputs:
            if t.id in tracked:
                break
        else:
            return
        keep = self._persistent   # (a persistent tape keeps every input and output)
        op = Operation(op_type, inputs, outputs, attrs, keep or keep_inputs, keep or keep_outputs,
                       grad_fn, residuals)
        self._ops.append(op)
        for t in outputs:
            kind = t._dtype.kind
            # A complex output is tracked too, so that a gradient asked through it raises a
            # clear error in the backward pass instead of a silent None.
            if kind == "f" or kind == "c":
                tracked.add(t.id)
                self._has_complex = self._has_complex or kind == "c"
        for observer in self._observers:
            observer.op_recorded(self, op, inputs, outputs, forward, (keep_inputs, keep_outputs))

    def variable_accessed(self, variable):
        """An op read the trainable ``variable`` while this tape records: watch it if the tape
        watches accessed variables (every read of a Variable calls it, ``Variable._read``)."""
        # (A Variable the tape tracks is already watched: its id enters ``_tracked`` only by
        # ``_watch_one``, as a Variable is no op's output.)
        if self._watch_accessed_variables and variable.id not in self._tracked:
            self._watch_one(variable, warn=False)

    def variable_assigned(self, variable, value, method):
        """``variable.assign(value)`` (``method``: ``"assign"``, ``"assign_add"``, ...) ran
        while this tape records: if the tape tracks ``value``, note an ``"assigned"`` event.
        The update is not an op (it has no gradient); the note lets ``mt.viz.explain`` name
        it."""
        value_id = getattr(value, "id", None)
        if value_id is not None and value_id in self._tracked:
            self._event("assigned", (method, variable.name, value_id, variable.id))

    # -- controlling the recording -----------------------------------------------------------
    @contextlib.contextmanager
    def stop_recording(self):
        """Context manager: operations inside it are not recorded by this tape."""
        if not self._recording:
            raise RuntimeError("GradientTape.stop_recording() is only valid while the tape is "
                               "recording (inside its `with` block)")
        self._event("paused")
        self._pop()
        try:
            yield
        finally:
            self._push()
            self._event("resumed")

    def reset(self):
        """Forget everything recorded and watched so far; the tape keeps recording."""
        self._event("reset")
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
            TypeError: a target or source that is not a minitape Tensor; a complex target or
                source, or a path from the target to a source through a complex Tensor
                (minitape does not differentiate complex numbers).
            ValueError: ``output_gradients`` of the wrong shape.
            LookupError: a path goes through an op with no registered gradient.
        """
        self.begin_backward("gradient")
        targets = flatten(target)
        seeds = _seed_gradients(targets, output_gradients)
        flat_sources = check_sources(sources, "gradient")
        grads = self.run_backward(seeds, flat_sources, batch_ndim=0)
        return pack_results(sources, flat_sources, grads, unconnected_gradients, ())

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """Jacobian of ``target`` with respect to each source, as ``tf.GradientTape.jacobian``
        (see ``minitape/engine/jacobians.py``, which computes it).

        ``parallel_iterations``: None (one backward pass over all of the target's elements)
        or a positive int (passes of at most that many): the same numbers with temporaries
        that many rows tall, as TensorFlow's knob; for a target of a thousand elements or
        more, a few hundred a pass is often faster than one pass.
        """
        from .jacobians import jacobian
        return jacobian(self, target, sources, unconnected_gradients, experimental_use_pfor,
                        parallel_iterations)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per-example Jacobians, as ``tf.GradientTape.batch_jacobian`` (see
        ``minitape/engine/jacobians.py``, which computes it); ``parallel_iterations`` as in
        ``jacobian``."""
        from .jacobians import batch_jacobian
        return batch_jacobian(self, target, source, unconnected_gradients,
                              experimental_use_pfor, parallel_iterations)

    def begin_backward(self, what):
        """Start answering ``what`` (``"gradient"``, ``"jacobian"``, ...): a non-persistent tape
        answers once (``RuntimeError`` the second time) and stops recording; a persistent tape
        asked inside its context warns, as TensorFlow. ``gradient`` and ``jacobians.py`` call
        it before their backward passes."""
        if self._used and not self._persistent:
            raise RuntimeError(
                f"GradientTape.{what} can only be called once on a non-persistent tape (it "
                "released what it recorded after the first call). To compute several gradients, "
                "create the tape with mt.GradientTape(persistent=True).")
        self._used = True
        self._event("gradient", what)
        if self._recording and not self._persistent:
            self._pop()  # a non-persistent tape stops recording before its backward pass
        elif self._recording:
            warnings.warn(  # (TensorFlow's warning, word for word)
                "Calling GradientTape.gradient on a persistent tape inside its context is "
                "significantly less efficient than calling it outside the context (it causes the "
                "gradient ops to be recorded on the tape, leading to increased CPU and memory "
                "usage). Only call GradientTape.gradient inside the context if you actually want "
                "to trace the gradient in order to compute higher order derivatives.",
                UserWarning, stacklevel=3)

    def run_backward(self, seeds, flat_sources, batch_ndim=0, release=None):
        """One backward pass over this tape, after ``begin_backward``: ``seeds`` maps target
        ids to their output gradients (Tensors, with ``batch_ndim`` leading batch axes in a
        vectorized Jacobian), ``flat_sources`` is a list of Tensors; returns ``{tensor id:
        gradient Tensor}`` for the sources reached. ``release``: free what the ops saved as
        the walk passes them (default: if the tape is not persistent). The observers see the
        pass (``backward_began``, ``backward_step``, ``backward_ended``)."""
        tracked = self._tracked
        source_ids = {s.id for s in flat_sources if s.id in tracked or s.id in seeds}
        if release is None:
            release = not self._persistent
        # Which tensors lie downstream of a source? When every watched tensor is a source
        # (the usual case) and the tape is not recording, it is what the tape tracked while
        # recording (the float ones; the walk's own sweep would add the integer outputs of
        # recorded ops, which carry no gradient), so the walk need not sweep the ops again.
        reaches = None
        if not self._recording and source_ids <= tracked and source_ids.issuperset(self._watched):
            reaches = tracked
        observers, on_step, grads = self._observers, None, None
        if observers:   # (the usual case, one observer: one C-level partial call per step)
            calls = [functools.partial(o.backward_step, self) for o in observers]
            on_step = calls[0] if len(calls) == 1 else lambda *step: [f(*step) for f in calls]
        for observer in observers:
            observer.backward_began(self, seeds, source_ids, batch_ndim)
        try:
            grads = backward(list(self._ops), seeds, source_ids, batch_ndim, release,
                             check_complex=self._has_complex, reaches_source=reaches,
                             on_step=on_step)
        finally:
            for observer in observers:
                observer.backward_ended(self, grads)
        if release:
            self.release(ops=False)   # (the walk released each op as it passed it)
        return grads

    def release(self, ops=True):
        """Free the tensors the recorded ops saved (``jacobians.py`` calls it after its last
        pass over a non-persistent tape; ``run_backward`` does it for ``gradient``).
        ``ops=False``: the walk already freed each op; only note the ``"released"`` event."""
        if ops:
            for op in self._ops:
                op.release()
        if not self._released:
            self._released = True
            self._event("released")

    def __del__(self):
        # A tape deleted while recording (e.g. an exception in a generator) stops recording.
        try:
            if self._recording and self in state.tapes:
                state.tapes.remove(self)
            tapes_recording.discard(self)
        except Exception:
            pass

    def __repr__(self):
        kind = "persistent " if self._persistent else ""
        return f"<mt.GradientTape {kind}ops={len(self._ops)} watched={len(self._watched)}>"


# -- targets, sources and results ---------------------------------------------------------------

def _seed_gradients(targets, output_gradients):
    for t in targets:
        if not isinstance(t, Tensor):
            raise outside_minitape_error(t, "GradientTape.gradient target")
    flat_out = [None] * len(targets) if output_gradients is None else flatten(output_gradients)
    if len(flat_out) != len(targets):
        raise ValueError(f"output_gradients has {len(flat_out)} entries but target has "
                         f"{len(targets)}; give one per target (same structure)")
    seeds = {}
    for t, g in zip(targets, flat_out):
        if t._dtype.kind == "c":
            raise complex_target_error(t, "GradientTape.gradient")
        if t._dtype.kind != "f":
            continue  # integer targets have no gradient
        if g is None:
            g = Tensor(np.ones(t._shape, t._dtype))   # (a constant: nothing to record)
        else:
            g = convert_to_tensor(g, dtype=t.dtype, what="output_gradients")
            if g.shape != t.shape:
                raise ValueError(f"output_gradients entry has shape {g.shape} but its target "
                                 f"has shape {t.shape}; they must match")
        seeds[t.id] = g if t.id not in seeds else add_gradients(seeds[t.id], g)
    return seeds


def check_sources(sources, what):
    flat = flatten(sources)
    for s in flat:
        if not isinstance(s, Tensor):
            raise outside_minitape_error(s, f"GradientTape.{what} source")
        if s._dtype.kind == "c":
            raise complex_gradient_error(f"GradientTape.{what}",
                                         f" (a source is a {s.dtype.name} Tensor of shape "
                                         f"{s.shape})")
    return flat


def pack_results(sources, flat_sources, grads, unconnected, batch_shape):
    if not isinstance(unconnected, UnconnectedGradients):
        try:
            unconnected = UnconnectedGradients(unconnected)
        except ValueError:
            raise ValueError(f"unconnected_gradients must be mt.UnconnectedGradients.NONE or "
                             f".ZERO, got {unconnected!r}") from None
    results = []
    for s in flat_sources:
        g = grads.get(s.id) if s._dtype.kind == "f" else None
        if g is None and unconnected is UnconnectedGradients.ZERO:
            g = Tensor(np.zeros(batch_shape + s.shape, s.dtype))
        results.append(g)
    if not isinstance(sources, (list, tuple, dict)):
        return results[0]
    return pack_like(sources, results)
