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

import dis
import os
import sys
import sysconfig
import threading
from types import CodeType

import numpy as np

from ..module import calls_running, module_calls
from ..engine.backward import gradient_value as array_of   # (a Tensor's array, no copy)
from ..engine.recording import next_seq
from ..engine.tape import TapeObserver
from ..engine.tensor import Tensor, new_tensor_id

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
    innermost first (up to a module's top level: a script or a notebook cell); None if every
    frame is minitape's own.

    The first is the line of the learner's code that made the current op (``y = x * x``
    calls ``Tensor.__mul__`` -> ``multiply`` -> ``record``). The next ones, at most
    ``MAX_FRAMES`` in all, are the lines that called it, kept only while the line is a
    function's ``return`` (``loss = loss_fn(y, y_hat)`` names what the helper returned:
    ``labels._names_from_code`` climbs no further). References only: ``source_span`` formats
    one when a drawing asks.
    """
    found = _learner_frame(sys._getframe(depth))
    if found is None:
        return None
    frame, code, lasti = found
    return _with_callers(frame, code, lasti) if lasti in _return_offsets(code) else \
        ((code, lasti),)


def _learner_frame(frame):
    """``(frame, code, instruction offset)`` of the first frame outside minitape from
    ``frame`` outwards, or None."""
    is_inside = _is_inside
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        inside = is_inside.get(filename)
        if inside is None:
            inside = is_inside[filename] = filename.startswith(_PACKAGE_DIR)
        if not inside:
            return frame, code, frame.f_lasti
        frame = frame.f_back
    return None


def _with_callers(frame, code, lasti):
    """``learner_frames`` from the learner's ``frame`` (at ``code``, ``lasti``) on: it and
    the learner's frames that called it, while each is a ``return`` line."""
    found = ((code, lasti),)
    while len(found) < MAX_FRAMES and code.co_name != "<module>" and \
            lasti in _return_offsets(code):
        caller = _learner_frame(frame.f_back)
        if caller is None:
            break
        frame, code, lasti = caller
        found += ((code, lasti),)
    return found


_returns: dict = {}
"""``id(code)`` -> ``(code, offsets)``: the instruction offsets on the lines of the code
object that hold a ``return`` (a frozenset), met by ``_return_offsets``, so that each code
object is read once. Keyed by ``id``, not by the code object: hashing a code object hashes
its constants again every time (a notebook cell's are many), and this is read for every op.
The entry holds the code object, so its id is not reused while the entry lives."""


def _return_offsets(code):
    """The offsets of the instructions of ``code`` whose line holds a ``return``: the
    instructions whose value the function may return, the only ones whose callers' lines
    name what they computed."""
    entry = _returns.get(id(code))
    if entry is None or entry[0] is not code:
        if len(_returns) > 10_000:     # (every run of a notebook cell makes new code objects)
            _returns.clear()
        entry = _returns[id(code)] = (code, _find_return_offsets(code))
    return entry[1]


def _find_return_offsets(code):
    # One entry of ``co_positions`` per code unit, inline caches included: a frame's
    # ``f_lasti`` inside a call points at the call's last cache entry.
    positions = list(code.co_positions())
    raw = code.co_code
    lines = set()
    for k, (line, end, _, _) in enumerate(positions):
        if raw[2 * k] in _RETURN_OPCODES and line is not None:
            # (a ``return`` inside ``with`` is marked with the lines of the whole statement)
            lines.update(range(line, (end or line) + 1))
    return frozenset(2 * k for k, (line, _, _, _) in enumerate(positions) if line in lines)


_RETURN_OPCODES = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST")
                            if name in dis.opmap)


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


_left: dict = {}
"""tensor id -> ``((stamp, origin, mark), ...)``, the last four times the learner's code
turned the Tensor into a NumPy or Python value while a tape recorded (``np.square(x)``,
``float(y)``, ``y.numpy()``), each stamped from the global sequence so that ``explain`` can
tell it happened while a given tape recorded, with ``mark``, a tensor id larger than any
made before it (so that it can tell it happened before the target was made); the newest
``MAX_CREATED`` tensors."""


def note_leaving(tensor, frame):
    """``minitape.tensor.on_leaving`` while a tape records: note where the learner's code
    took ``tensor`` out of minitape. ``frame`` asked for the value; it may be a library's
    (``np.mean`` is Python code in NumPy that calls ``np.asarray``, ``plt.plot`` is
    matplotlib's): the learner's line is the first frame outwards that is no library's.
    minitape's own reads (a drawing's ``np.asarray``) are not noted."""
    while frame is not None and _in_library(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return
    code = frame.f_code
    if code.co_filename.startswith(_PACKAGE_DIR):
        return
    earlier = _left.pop(tensor.id, ())  # (re-inserted: the newest last, the oldest dropped)
    _left[tensor.id] = earlier[-3:] + ((next_seq(), ((code, frame.f_lasti),), new_tensor_id()),)
    if len(_left) > MAX_CREATED:
        del _left[next(iter(_left))]


def _in_library(filename):
    """True for a file of the standard library or of an installed package (NumPy,
    matplotlib, IPython, ...), not the learner's code nor minitape's (each file name is
    looked up once)."""
    inside = _libraries.get(filename)
    if inside is None:
        inside = _libraries[filename] = (filename.startswith(_LIBRARY_DIRS)
                                         and not filename.startswith(_PACKAGE_DIR))
    return inside


def _library_dirs():
    """Where the standard library and installed packages live (``sysconfig``'s paths)."""
    paths = sysconfig.get_paths()
    dirs = {os.path.join(paths[key], "") for key in ("stdlib", "platstdlib", "purelib",
                                                      "platlib") if paths.get(key)}
    return tuple(sorted(dirs)) + ("<frozen ",)


_libraries: dict = {}   # file name -> True for a library's file (``_in_library``)
_LIBRARY_DIRS = _library_dirs()


def left_at(tensor_id):
    """``((stamp, origin, mark), ...)`` (see ``_left``): where the learner's code took
    ``tensor_id`` out of minitape while a tape recorded, oldest first (empty if never)."""
    return _left.get(tensor_id, ())


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

    The walk hands over one step per op (``add_step``); the three views above are made from
    them when a tool first reads one (after the pass: ``TapeRecord.last_pass``), so a pass
    nobody draws costs one tuple per step.
    """

    __slots__ = ("gradients", "summarize_large", "seeds", "_steps", "_visited",
                 "_contributions", "_reached")

    def __init__(self, summarize_large=True):
        self.gradients = {}
        self.summarize_large = summarize_large
        self.seeds = {}        # target id -> kept value of its seed
        self._steps = []       # (op seq, input ids, tuple of kept values, one per input)
        self._visited = self._contributions = self._reached = None

    def keep(self, value):
        """What to keep of a gradient's ndarray: itself (small), a summary, or None."""
        if value.size <= SMALL_VALUE_SIZE:
            return value
        return summarize(value) if self.summarize_large else None

    def add_step(self, seq, input_ids, in_grads):
        """Note one step of the walk: op ``seq`` (with inputs ``input_ids``) sent
        ``in_grads`` (ndarrays, Tensors or None) back to its inputs."""
        # (Arrays in a tuple, which the garbage collector stops tracking; a large gradient
        # is summarized now, not kept: the walk frees it.)
        values = [None if g is None else g if type(g) is not Tensor else array_of(g)
                  for g in in_grads]
        self._steps.append((seq, input_ids, tuple(None if v is None else _kept(self.keep(v))
                                                  for v in values)))

    @property
    def visited(self):
        if self._visited is None:
            self._visited = [seq for seq, _, _ in self._steps]
        return self._visited

    @property
    def contributions(self):
        if self._contributions is None:
            contributions = {}
            for seq, _, in_grads in self._steps:
                for k, g in enumerate(in_grads):
                    if g is not None:
                        contributions[(seq, k)] = None if g is _NOT_KEPT else g
            self._contributions = contributions
        return self._contributions

    @property
    def reached(self):
        if self._reached is None:
            inputs = {seq: ids for seq, ids, _ in self._steps}
            parts = {}
            for (seq, k), value in self.contributions.items():
                parts.setdefault(inputs[seq][k], []).append(value)
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


MAX_JACOBIAN_KEPT = 4096
"""A vectorized Jacobian's step gradients with at most this many elements are kept (whole,
every row), so that ``explain`` can say which row went NaN once the tape released them."""


class JacobianPass:
    """What a tape's last ``jacobian`` or ``batch_jacobian`` did, when it ran vectorized
    (one backward pass carrying every row of cotangents on a leading axis).

    Attributes:
        what: ``"jacobian"`` or ``"batch_jacobian"``.
        target_id: the id of the target.
        chunks: ``(seeds, steps)`` per backward pass (one, or one per ``parallel_iterations``
            rows): ``seeds`` the cotangents (rows first, an ndarray), ``steps`` ``(op seq,
            input ids, in_grads)`` in the order the walk ran, each gradient an ndarray
            with the rows first, None (no gradient) or ``_NOT_KEPT`` (too large to keep).
    """

    __slots__ = ("what", "target_id", "chunks")

    def __init__(self, what, target_id):
        self.what, self.target_id, self.chunks = what, target_id, []


_NOT_KEPT = ("not kept",)
"""What ``LastPass.add_step`` stores for a large gradient it keeps nothing of (None there
means no gradient)."""


def _kept(value):
    return _NOT_KEPT if value is None else value


def _small(t):
    value = array_of(t)
    return value if value.size <= SMALL_VALUE_SIZE else None


class TapeRecord(TapeObserver):
    """The observer ``mt.viz`` attaches to a tape (see the module's docstring).

    Attributes:
        tape_number: the observed tape's ``number``.
        last_pass: the ``LastPass`` of the tape's last ``gradient`` call (None before one).
        last_jacobian: the ``JacobianPass`` of the tape's last call when it was a vectorized
            ``jacobian`` or ``batch_jacobian`` (None otherwise).
        origins: tensor id -> origin of a constant or Variable an op read (where the learner
            made it).
    """

    def __init__(self, tape=None):
        self.tape_number = None if tape is None else tape.number
        self.last_pass = None
        self.last_jacobian = None   # a JacobianPass, when the last call was a vectorized one
        self.origins = {}
        self._asked = None     # the method of the tape's last backward call ("jacobian")
        self._jacobian_steps = None   # the steps list of the vectorized pass running
        self._notes = {}       # id(op) -> OpNote (the tape holds its ops until a reset,
                               # which clears this too, so an id means one op here)
        self._pass = None      # the LastPass being filled
        self._with_forward = []   # the keys of the notes that hold a ``forward``
        self._persistent = bool(tape is not None and tape.persistent)

    # -- what the tools read ------------------------------------------------------------------
    def note(self, op):
        """The ``OpNote`` of ``op``, or None if this record did not see it recorded."""
        note = self._notes.get(id(op))
        if type(note) is tuple:     # (the flat tuple ``op_recorded`` made: see there)
            seq, first, lasti, calls, backward_of, forward, needs, names = note[:8]
            origin = ((first, lasti),) if type(first) is CodeType else first
            note = self._notes[id(op)] = OpNote(seq, origin, calls, backward_of, note[8:],
                                                names, forward, needs)
        return note

    # -- the observer -------------------------------------------------------------------------
    def op_recorded(self, tape, op, inputs, outputs, forward, needs):
        # This runs for every recorded op, so it makes one object, a flat tuple, made an
        # OpNote when a tool reads it: ``(seq, code, offset, module calls, backward_of,
        # forward, needs, names, *values)``, where ``code, offset`` is the learner's line
        # when it is not a ``return`` (the common case), else ``origin, None`` (the line and
        # its callers': see ``learner_frames``). The common case, one output, is written out.
        # The walk starts above the op function that called ``record`` (frame 3, always
        # minitape's: only minitape's ops record), so that Python need not make a frame
        # object for it on every op: the learner's frame, usually the next one, has one.
        try:
            found = _learner_frame(sys._getframe(4))
        except ValueError:       # (called with a shallower stack than ``record``'s)
            found = _learner_frame(sys._getframe(1))
        if found is None:
            first = lasti = None
        else:
            frame, first, lasti = found
            entry = _returns.get(id(first))   # (``_return_offsets``, its common case inline)
            if lasti in (entry[1] if entry is not None and entry[0] is first
                         else _return_offsets(first)):
                first, lasti = _with_callers(frame, first, lasti), None
        calls = module_calls() if calls_running else ()
        backward_of = _passes.running[-1] if _passes_running and _passes.running else None
        if not self._persistent:
            needs = None
        if forward is not None:
            self._with_forward.append(id(op))
        if _created:
            origins = self.origins
            for t in inputs:
                origin_made = _created.get(t.id)   # (a constant or Variable the learner made)
                if origin_made is not None:
                    origins[t.id] = origin_made
        if len(outputs) == 1 and len(inputs) == 2:
            a, b = inputs
            z = outputs[0]
            names = (None if a.name is None and b.name is None and z.name is None else
                     (a.name, b.name, z.name))
            va, vb, vz = array_of(a), array_of(b), array_of(z)   # (``_small``, written out)
            self._notes[id(op)] = (
                next_seq(), first, lasti, calls, backward_of, forward, needs, names,
                va if va.size <= SMALL_VALUE_SIZE else None,
                vb if vb.size <= SMALL_VALUE_SIZE else None,
                vz if vz.size <= SMALL_VALUE_SIZE else None)
            return
        if len(outputs) == 1 and len(inputs) == 1:
            a, z = inputs[0], outputs[0]
            names = None if a.name is None and z.name is None else (a.name, z.name)
            va, vz = array_of(a), array_of(z)
            self._notes[id(op)] = (
                next_seq(), first, lasti, calls, backward_of, forward, needs, names,
                va if va.size <= SMALL_VALUE_SIZE else None,
                vz if vz.size <= SMALL_VALUE_SIZE else None)
            return
        both = (*inputs, *outputs)
        names = None
        for t in both:
            if t.name is not None:
                names = tuple(t.name for t in both)
                break
        self._notes[id(op)] = (next_seq(), first, lasti, calls, backward_of, forward, needs,
                               names, *map(_small, both))

    def event(self, tape, kind, seq, detail):
        if kind == "gradient":       # a new backward call: gradient, jacobian, ...
            self._asked = detail
            self.last_jacobian = None
        if kind == "reset":          # the tape forgot its ops
            self._notes = {}
            self._with_forward = []
        elif kind == "released":     # drop what a custom gradient's function holds
            notes = self._notes
            for key in self._with_forward:
                note = notes.get(key)
                if type(note) is tuple:
                    notes[key] = note[:5] + (None,) + note[6:]
                elif note is not None:
                    note.forward = None
            self._with_forward = []

    def backward_began(self, tape, seeds, source_ids, batch_ndim):
        _passes.running.append(tape.number)
        _passes_running.append(self)
        if batch_ndim == 0:
            last = self._pass = LastPass(tape.persistent)
            last.seeds = {i: last.keep(array_of(g)) for i, g in seeds.items()}
        elif batch_ndim == 1 and len(seeds) == 1 and self._asked in ("jacobian",
                                                                       "batch_jacobian"):
            (target_id, seed), = seeds.items()
            jac = self.last_jacobian
            if jac is None or jac.target_id != target_id:
                jac = self.last_jacobian = JacobianPass(self._asked, target_id)
            self._jacobian_steps = []
            jac.chunks.append((np.array(array_of(seed)), self._jacobian_steps))

    def backward_step(self, tape, op, out_grads, in_grads):
        # (Once per step of every pass: ``LastPass.add_step`` written out for its common
        # case, one or two small gradients, kept whole.) The step keeps the gradients'
        # arrays in a tuple, not the walk's list of Tensors: a tuple of arrays holds nothing
        # the garbage collector follows, so it stops tracking it, and the thousands of
        # steps of a long pass are not walked again by every full collection.
        last = self._pass
        if last is None and self._jacobian_steps is not None:   # (a vectorized Jacobian)
            note = self._notes.get(id(op))
            seq = note[0] if type(note) is tuple else note.seq if note is not None else -id(op)
            values = [None if g is None else array_of(g) if type(g) is Tensor else
                      np.asarray(g) for g in in_grads]
            self._jacobian_steps.append((seq, op.input_ids, tuple(
                v if v is None or v.size <= MAX_JACOBIAN_KEPT else _NOT_KEPT
                for v in values)))
            return
        if last is not None:
            note = self._notes.get(id(op))
            seq = note[0] if type(note) is tuple else note.seq if note is not None else -id(op)
            if len(in_grads) == 1:
                g = in_grads[0]
                value = None if g is None else array_of(g)
                if value is None or value.size <= SMALL_VALUE_SIZE:
                    last._steps.append((seq, op.input_ids, (value,)))
                    return
            elif len(in_grads) == 2:
                g, h = in_grads
                value = None if g is None else array_of(g)
                other = None if h is None else array_of(h)
                if (value is None or value.size <= SMALL_VALUE_SIZE) and \
                        (other is None or other.size <= SMALL_VALUE_SIZE):
                    last._steps.append((seq, op.input_ids, (value, other)))
                    return
            last.add_step(seq, op.input_ids, in_grads)

    def backward_ended(self, tape, gradients):
        _passes.running.pop()
        _passes_running.remove(self)
        self._jacobian_steps = None
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
        positions = code_positions(code)
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


_positions: dict = {}
"""code object -> ``list(code.co_positions())``, read once per code object (a module's code
has an entry per instruction: a drawing asks for many of them)."""


def code_positions(code):
    """``list(code.co_positions())``, cached (``_positions``)."""
    positions = _positions.get(code)
    if positions is None:
        if len(_positions) > 1_000:    # (every run of a notebook cell makes new code objects)
            _positions.clear()
        positions = _positions[code] = list(code.co_positions())
    return positions


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
