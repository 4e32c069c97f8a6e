"""What ``mt.viz`` remembers of a tape: the record its tools read.

The engine keeps what the gradient needs. Everything a picture needs besides is noted here,
by a ``TapeRecord`` that watches the tape as one of its observers (``GradientTape``'s
``add_observer``, see ``minitape/engine/tape.py``):

- for every recorded op (``op_recorded``): a stamp of the global sequence (to order ops and
  events of several tapes), where the learner's code made it (``origin``: references to the
  code and instruction of the first frames outside the ``minitape`` package, never a
  formatted string), the ``Module`` calls running, the number of the tape whose backward
  pass ran it (an outer tape recording an inner tape's gradient), the small values of its
  inputs and outputs, their explicit ``name=``, and the function that computes it again
  (``mt.primitive``, ``custom_gradient``) for ``check_tape``;
- for every constant or Variable made while the record is switched on: where it was made
  (``x = mt.constant(3.0)`` before the tape is drawn ``x``);
- the last backward pass (``LastPass``): which ops it visited, the contribution each edge
  carried back and the gradient that reached each tensor, gathered from the steps of the
  walk (``backward.backward_steps``) as the tape hands them over.

``mt.config.record_source_lines(True)`` (the default, in notebooks and scripts) makes every
new tape attach a ``TapeRecord`` from its first op on; ``record_of(tape)`` finds it. A tape
without one is still drawn, with shapes and dtypes only.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

from ..module import calls_running, module_calls
from ..engine.recording import next_seq
from ..engine.tape import TapeObserver
from ..engine.tensor import Tensor

SMALL_VALUE_SIZE = 16  # values of at most this many elements are kept for the renderers

MAX_FRAMES = 4
"""How many of the learner's frames an op's origin keeps, innermost first: the line that made
the op, and the lines that called it (``loss = loss_fn(y, y_hat)`` names what the helper
returned)."""

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# file name -> True if the file is minitape's own, False if it is the learner's (a notebook
# cell, a script): met by ``learner_frames``, so that each file name is compared once.
_is_inside: dict = {}


def learner_frames(depth=2):
    """``((code, instruction offset), ...)`` of the first frames outside the minitape package,
    innermost first, at most ``MAX_FRAMES`` (up to a module's top level: a script or a notebook
    cell); None if every frame is minitape's own.

    The first is the line of the learner's code that made the current op (``y = x * x``
    calls ``Tensor.__mul__`` -> ``multiply`` -> ``record``); the next ones the lines that
    called it (a helper, a Keras layer's ``call``). References only: ``source_span`` formats
    one when a drawing asks.
    """
    frame = sys._getframe(depth)
    is_inside = _is_inside
    found = ()
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        inside = is_inside.get(filename)
        if inside is None:
            inside = is_inside[filename] = filename.startswith(_PACKAGE_DIR)
        if not inside:
            found += ((code, frame.f_lasti),)
            if len(found) == MAX_FRAMES or code.co_name == "<module>":
                break
        frame = frame.f_back
    return found or None


_created: dict = {}
"""tensor id -> origin of each constant and Variable made while the record is on, the newest
``MAX_CREATED`` (ids are never reused; a record copies the origins of the tensors its ops
read, so an older one is only forgotten if no tape read it)."""

MAX_CREATED = 100_000


def note_creation(tensor):
    """``minitape.tensor.on_creation``: note where the learner made a constant or Variable."""
    origin = learner_frames(3)
    if origin is not None:
        _created[tensor.id] = origin
        if len(_created) > MAX_CREATED:
            del _created[next(iter(_created))]


def created(tensor_id):
    """Where the learner made the constant or Variable ``tensor_id`` (an origin), or None."""
    return _created.get(tensor_id)


def summarize(value):
    """``value`` (an ndarray) itself if it is small, else its ``(min, mean, max)`` as floats."""
    if value.size <= SMALL_VALUE_SIZE:
        return value
    if value.size == 0 or value.dtype.kind not in "biuf":
        return None
    # This runs for intermediate gradients of a backward pass, so the mean is ``sum / size``:
    # the same number as ``value.mean()`` without its Python overhead (small dtypes keep
    # ``mean()``, which sums them in a wider type).
    mean = value.sum() / value.size if value.dtype.itemsize >= 4 else value.mean()
    return (float(value.min()), float(mean), float(value.max()))


class _Passes(threading.local):
    def __init__(self):
        self.running = []     # numbers of the tapes whose backward pass runs in this thread


_passes = _Passes()
_passes_running: list = []    # every record's pass running now, in any thread (fast check)


class OpNote:
    """What a ``TapeRecord`` noted of one recorded op.

    Attributes:
        seq: a stamp of the global sequence (ordering only; never shown).
        origin: ``((code, instruction offset), ...)``, the learner's frames that made the op,
            innermost first (``learner_frames``), or None.
        module_calls: ``((module, stamp), ...)``, the Module calls running, outermost first.
        backward_of: the ``number`` of the tape whose backward pass ran the op, else None.
        values: the value (ndarray) of each input, then of each output, with at most
            ``SMALL_VALUE_SIZE`` elements, else None.
        names: the explicit ``name=`` of each input, then of each output, else None.
        forward: the function that computes the op again (``mt.primitive``,
            ``custom_gradient``), else None; dropped when the tape releases what it saved.
        needs: on a persistent tape (which keeps every input and output), what the op's
            gradient rule needs: ``(keep_inputs, keep_outputs)`` (True, False or a set of
            indices), so that a drawing marks only those as saved; else None.
    """

    __slots__ = ("seq", "origin", "module_calls", "backward_of", "values", "names", "forward",
                 "needs")

    def __init__(self, seq, origin, calls, backward_of, values, names, forward, needs=None):
        self.seq, self.origin, self.module_calls, self.backward_of = \
            seq, origin, calls, backward_of
        self.values, self.names, self.forward, self.needs = values, names, forward, needs


class LastPass:
    """What one backward pass did, as the pictures show it.

    Attributes:
        visited: the ``seq`` of every op whose gradient function ran, in the order it ran.
        contributions: ``(op seq, input index) -> value`` of the gradient that edge carried
            back: the ndarray itself when it has at most 16 elements, ``(min, mean, max)`` for a
            larger one when ``summarize_large`` (persistent tapes), else None.
        reached: ``tensor id -> value`` of the total gradient of each tensor the pass sent
            gradient to, or of a target (its seed): the sum of its contributions (same rule
            for large values; a large total made of several contributions is None).
        gradients: ``tensor id -> Tensor``, the gradients the pass returned (the sources').
    """

    __slots__ = ("visited", "contributions", "gradients", "summarize_large", "seeds",
                 "_inputs", "_reached")

    def __init__(self, summarize_large=True):
        self.visited = []
        self.contributions = {}
        self.gradients = {}
        self.summarize_large = summarize_large
        self.seeds = {}        # target id -> kept value of its seed
        self._inputs = {}      # op seq -> input ids, to find each edge's tensor
        self._reached = None

    def keep(self, value):
        """What to keep of a gradient's ndarray: itself (small), a summary, or None."""
        if value.size <= SMALL_VALUE_SIZE:
            return value
        return summarize(value) if self.summarize_large else None

    @property
    def reached(self):
        if self._reached is None:
            parts = {}
            for (seq, k), value in self.contributions.items():
                parts.setdefault(self._inputs[seq][k], []).append(value)
            reached = dict(self.seeds)
            for i, values in parts.items():
                if len(values) == 1:
                    reached[i] = values[0]
                elif all(isinstance(v, np.ndarray) or np.isscalar(v) for v in values):
                    reached[i] = sum(values[1:], np.asarray(values[0]))
                else:
                    reached[i] = None    # (summaries of large values do not add up)
            self._reached = reached
        return self._reached


def _small(t):
    return t._value if not t._shape or t._value.size <= SMALL_VALUE_SIZE else None


class TapeRecord(TapeObserver):
    """The observer ``mt.viz`` attaches to a tape (see the module's docstring).

    Attributes:
        tape_number: the observed tape's ``number``.
        last_pass: the ``LastPass`` of the tape's last ``gradient`` call (None before one).
        origins: tensor id -> origin of a constant or Variable an op read (where the learner
            made it).
    """

    def __init__(self, tape=None):
        self.tape_number = None if tape is None else tape.number
        self.last_pass = None
        self.origins = {}
        self._notes = {}       # id(op) -> OpNote (the tape holds its ops until a reset,
                               # which clears this too, so an id means one op here)
        self._pass = None      # the LastPass being filled
        self._persistent = bool(tape is not None and tape.persistent)

    # -- what the tools read ------------------------------------------------------------------
    def note(self, op):
        """The ``OpNote`` of ``op``, or None if this record did not see it recorded."""
        note = self._notes.get(id(op))
        if type(note) is tuple:
            note = self._notes[id(op)] = OpNote(*note)
        return note

    # -- the observer -------------------------------------------------------------------------
    def op_recorded(self, tape, op, inputs, outputs, forward, needs):
        # (This runs for every recorded op: the common case, one output, is written out,
        # and the note is a plain tuple, made an OpNote when a tool reads it.)
        if len(outputs) == 1 and len(inputs) <= 2:
            z = outputs[0]
            both = (*inputs, z)
            if len(inputs) == 2:
                a, b = inputs
                values = (a._value if not a._shape or a._value.size <= SMALL_VALUE_SIZE
                          else None,
                          b._value if not b._shape or b._value.size <= SMALL_VALUE_SIZE
                          else None, z._value if not z._shape or z._value.size <= 16 else None)
            else:
                values = tuple(map(_small, both))
        else:
            both = (*inputs, *outputs)
            values = tuple(map(_small, both))
        names = None
        for t in both:
            if t.name is not None:
                names = tuple(t.name for t in both)
                break
        if _created:
            origins = self.origins
            for t in inputs:
                origin = _created.get(t.id)   # (a constant or Variable the learner made)
                if origin is not None:
                    origins[t.id] = origin
        self._notes[id(op)] = (
            next_seq(), learner_frames(2), module_calls() if calls_running else (),
            _passes.running[-1] if _passes_running and _passes.running else None,
            values, names, forward, needs if self._persistent else None)

    def event(self, tape, kind, seq, detail):
        if kind == "reset":          # the tape forgot its ops
            self._notes = {}
        elif kind == "released":     # drop what a custom gradient's function holds
            notes = self._notes
            for key, note in notes.items():
                if type(note) is tuple:
                    if note[6] is not None:
                        notes[key] = note[:6] + (None,) + note[7:]
                else:
                    note.forward = None

    def backward_began(self, tape, seeds, source_ids, batch_ndim):
        _passes.running.append(tape.number)
        _passes_running.append(self)
        if batch_ndim == 0:
            last = self._pass = LastPass(tape.persistent)
            last.seeds = {i: last.keep(g._value) for i, g in seeds.items()}

    def backward_step(self, tape, op, out_grads, in_grads):
        last = self._pass
        if last is None:
            return
        note = self._notes.get(id(op))
        seq = note[0] if type(note) is tuple else note.seq if note is not None else -id(op)
        last._inputs[seq] = op.input_ids
        contributions = last.contributions
        for k, g in enumerate(in_grads):
            if g is not None:
                value = g if type(g) is not Tensor else g._value
                # (``keep`` written out for the common case, a small value kept as it is)
                contributions[(seq, k)] = value if value.size <= SMALL_VALUE_SIZE else \
                    last.keep(value)
        last.visited.append(seq)

    def backward_ended(self, tape, gradients):
        _passes.running.pop()
        _passes_running.remove(self)
        last, self._pass = self._pass, None
        if last is not None and gradients is not None:
            last.gradients = gradients
            self.last_pass = last


def record_of(tape):
    """The ``TapeRecord`` attached to ``tape``, or an empty one if none is (the tape was made
    while ``mt.config.record_source_lines(False)``): it knows nothing of the ops."""
    for observer in tape.observers:
        if isinstance(observer, TapeRecord):
            return observer
    return TapeRecord(None)


def attach(tape):
    """``tape.observer_factories`` entry: a new tape gets a new ``TapeRecord``."""
    return TapeRecord(tape)


def note_of(tape, op):
    """``record_of(tape).note(op)``, or None."""
    return record_of(tape).note(op)


# -- formatting an origin, when a drawing asks ---------------------------------------------------

def source_span(origin):
    """``(filename, line, start column, end column)`` of the instruction ``origin`` (one
    ``(code, instruction offset)`` pair) points at (Python 3.11's ``co_positions``; the
    columns may be None), or None."""
    if not origin:
        return None
    code, lasti = origin
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


def source_line(origin):
    """``(location, text)`` of the learner's line ``origin`` points at (one ``(code,
    instruction offset)`` pair), or ``(None, None)``.

    ``location`` is ``"file.py:12"``, or ``"cell 3:2"`` (execution count, line) in Jupyter;
    ``text`` the stripped source line, read with ``linecache`` (IPython registers every cell
    there).
    """
    span = source_span(origin)
    if span is None:
        return None, None
    filename, line, _, _ = span
    import linecache
    text = linecache.getline(filename, line).strip() or None
    return f"{_short_filename(filename)}:{line}", text


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
