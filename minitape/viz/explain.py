"""Why is my gradient None? One sentence, from what the tape actually recorded.

``explain(tape, target, source)`` checks, in this order:

1. the source is an integer tensor (integers have no gradient);
2. the target is not a minitape Tensor (an ndarray from NumPy) or is an integer tensor;
3. the tape never watched the source: a Tensor (only ``watch`` watches Tensors; also what you
   get when ``x = x + 1`` replaces a Variable), a non-trainable Variable, a tape created with
   ``watch_accessed_variables=False``, or a Variable never read while the tape recorded
   (read inside ``stop_recording``, before a ``reset``, or not at all);
4. the target was not produced by any recorded operation (the path went through NumPy);
5. the path exists but goes through ``stop_gradient``, another op without a gradient, or an
   integer tensor;
6. the source was read, but only by a Variable ``assign``/``assign_add``, which is not recorded;
7. the path is broken by a tensor computed in a ``stop_recording`` block or before a ``reset``;
8. otherwise the target simply does not depend on the source.

Each answer says what to do. ``diagnose`` returns the same sentence with a short reason code,
which the tests and the drawing use.

>>> import minitape as mt
>>> from minitape.viz import explain
>>> mt.config.record_source_lines(True)   # names from the code (on by itself in Jupyter)
>>> x = mt.constant(3.0)
>>> with mt.GradientTape() as tape:
...     y = x * x
>>> print(explain(tape, y, x).split(" (")[0])
the source x is a plain Tensor, not a Variable, and the tape never watched it
"""

from __future__ import annotations

import re

import numpy as np

from ..nest import flatten
from ..tape import GradientTape
from ..tensor import Tensor, Variable
from .graph import gradient_kind, stop_recording_spans
from .labels import is_fallback, tensor_labels
from .record import note_of


class Explanation(str):
    """The sentence ``explain`` returns: a ``str`` that a notebook shows as wrapped prose
    (not as a long quoted string) and a terminal prints wrapped at 88 columns."""

    def __repr__(self):
        import textwrap
        return textwrap.fill(str(self), 88)

    def _repr_html_(self):
        import html
        return f'<p style="max-width:60em">{html.escape(str(self))}</p>'


def explain(tape, target, source) -> str:
    """One sentence saying why ``tape.gradient(target, source)`` is (or is not) ``None``.

    Args:
        tape: the GradientTape (it may have released its saved tensors already).
        target: the target given to ``gradient`` (a Tensor, or whatever was passed).
        source: one source (a Tensor or Variable).

    Returns:
        An ``Explanation`` (a ``str``): the reason and what to do about it, naming tensors
        as the drawings label them (the learner's variable names).
    """
    return Explanation(_name_target(tape, target, source, diagnose(tape, target, source)[1]))


def _name_target(tape, target, source, sentence):
    """``sentence`` with "the target" called by the learner's name for it ("the target
    loss"), when the code gave it one (not ``t3``, not ``sin #3``)."""
    if not isinstance(target, Tensor) or not isinstance(source, Tensor):
        return sentence
    from .graph import tape_graph
    try:
        label = tape_graph(tape, target, source).tensor(target).label
    except (KeyError, TypeError):
        return sentence
    if is_fallback(label):
        return sentence
    return re.sub(r"\bthe target\b", f"the target {label}", sentence)


def diagnose(tape, target, source) -> tuple:
    """``(reason code, sentence)``; see the module docstring for the reasons, in order.

    A target given as a list/tuple/dict (their sum is differentiated) is connected if any of
    its entries is; otherwise the first entry's reason is given.
    """
    if not isinstance(tape, GradientTape):
        raise TypeError(f"explain expects a minitape GradientTape, got {type(tape).__name__}")
    if isinstance(target, (list, tuple, dict)):
        answers = [diagnose(tape, t, source) for t in flatten(target)] or \
            [("unconnected", "the target is empty: there is nothing to differentiate")]
        return next((a for a in answers if a[0] == "connected"), answers[0])
    if not isinstance(source, Tensor):
        return ("source_not_tensor",
                f"the source is a {type(source).__name__}, not a minitape Tensor or Variable, "
                "so no tape can follow it: create it with mt.Variable(...) or mt.constant(...)")
    label = _name_of(tape, target, source)
    # A name from the code (not ``t3``, not a constant's value) can be written as code.
    name = label if label.isidentifier() and not re.fullmatch(r"t\d+", label) else None
    src = _describe(source, "source", label)
    if source.dtype.kind != "f":
        return ("integer_source",
                f"{src} has the integer dtype {source.dtype.name}, and integers are not "
                "differentiable (the tape refuses to watch them): create it as a float, e.g. "
                + ("mt.Variable(1.0) instead of mt.Variable(1), or pass dtype=mt.float32"
                   if isinstance(source, Variable) else
                   "mt.constant(10.0) instead of mt.constant(10), or pass dtype=mt.float32"))
    if not isinstance(target, Tensor):
        kind = "a NumPy value" if isinstance(target, (np.ndarray, np.generic)) else \
            f"a {type(target).__name__}"
        return ("numpy_target",
                f"the target is {kind}, computed outside minitape, so no tape recorded how it "
                "was made: compute it with minitape operations (mt.reduce_mean, mt.math.sin, "
                "...) inside the tape")
    if target.dtype.kind != "f":
        return ("integer_target",
                f"the target has the integer dtype {target.dtype.name}, which has no gradient: "
                "keep the computation in floating point (mt.cast to float32 earlier)")
    if target._id == source._id:
        return ("connected", f"{src} is the target itself: its gradient is ones, not None")

    ops = list(tape.operations)
    watched = {w._id for w in tape.watched}
    produced = {i: op for op in ops for i in op.output_ids}
    tracked = source._id in watched or source._id in produced
    if not tracked:
        return _not_watched(tape, target, source, src, ops, produced, name)
    if target._id not in produced and target._id not in watched:
        return _target_not_recorded(tape, target, source, src, ops, produced)

    upstream = _upstream(ops, target._id)           # everything the target depends on
    if source._id in upstream:
        return _blocked_path(ops, target._id, source, src, upstream)
    if isinstance(source, Variable) and not any(source._id in op.input_ids for op in ops):
        return ("assign",
                f"{src} was read inside the tape, but no recorded operation used it: it was "
                "read without being used (read_value()) or only by a Variable update (such as "
                "x1.assign_add(x0)), which the tape does not record, and a Variable remembers "
                "its value, not how it got it; compute the target from the source with "
                "ordinary operations (y = (x1 + x0)**2)")
    when = _broken_by_pause(tape, ops, produced, upstream)
    if when:
        return when
    return ("unconnected",
            f"the target does not depend on {src}: no recorded operation leads from it to the "
            "target; differentiate a target computed from the source, or pass "
            "unconnected_gradients=mt.UnconnectedGradients.ZERO to get zeros")


def _code(name, fallback):
    """``name`` for advice written as code, or ``fallback`` when the learner gave none."""
    return name if name is not None else fallback


def _name_of(tape, target, source):
    """The learner's name for ``source`` (``x``): its label in ``draw_tape(tape, target,
    source)``, so the sentence and the drawing say the same thing."""
    from .graph import tape_graph
    targets = [t for t in flatten(target) if isinstance(t, Tensor)]
    try:
        return tape_graph(tape, targets or None, source).tensor(source).label
    except KeyError:       # a source the tape never saw: label it on its own
        ops = list(tape.operations)
        ids = [i for op in ops for i in op.input_ids + op.output_ids] + [source._id]
        labels = tensor_labels([(op, note_of(tape, op), n) for n, op in enumerate(ops, 1)],
                               list(dict.fromkeys(ids)), {source._id: source},
                               {source._id: source.name})
        return labels[source._id]


def _describe(t, role, name):
    """'the source x (a Variable)' and the like, for sentences."""
    if isinstance(t, Variable):
        kind = "a Variable" if t.trainable else "a non-trainable Variable"
        return f"the {role} {name} ({kind})"
    return f"the {role} {name}"


def _op_number(ops, op):
    """The op's number on its tape, as drawn: ``#1`` for the first op recorded."""
    return next(k for k, o in enumerate(ops, start=1) if o is op)


def _not_watched(tape, target, source, src, ops, produced, name):
    """The tape never watched the source: say why that happened."""
    if not isinstance(source, Variable):
        return ("tensor_not_watched",
                f"{src} is a plain Tensor, not a Variable, and the tape never watched it "
                "(a tape watches only trainable Variables by itself): call "
                f"tape.watch({_code(name, 'x')}) inside the tape; or, if it used to be a "
                f"Variable that a line like `{_code(name, 'x')} = {_code(name, 'x')} + 1` "
                "replaced with a Tensor, update the Variable in place with "
                f"{_code(name, 'x')}.assign_add(1) instead")
    if not source.trainable:
        return ("non_trainable",
                f"{src} was created with trainable=False, and a tape watches only trainable "
                "Variables by itself: call "
                f"tape.watch({_code(name, 'v')}) inside the tape, or make it trainable")
    if not tape.watch_accessed_variables:
        return ("watch_accessed_false",
                f"the tape was created with watch_accessed_variables=False, so it watches only "
                f"what you pass to tape.watch, and {src} was not: call "
                f"tape.watch({_code(name, 'v')}) inside the tape")
    pause = _broken_by_pause(tape, ops, produced, _upstream(ops, target._id))
    if pause:
        return pause
    if any(e.kind == "reset" for e in tape.events):
        return _reset_sentence()
    return ("not_read",
            f"{src} was never read while the tape was recording (the code that uses it ran "
            "outside the `with` block, on a branch not taken, or not at all), so nothing the tape "
            "recorded depends on it: compute the target from it inside the tape")


def _target_not_recorded(tape, target, source, src, ops, produced):
    """The source is watched, but no recorded op produced the target."""
    if isinstance(target, Variable):
        return ("unconnected",
                f"the target is a Variable itself, not something computed from {src}: its "
                "gradient with respect to the source is None")
    pause = _pause_around(tape, ops, target._id, None)
    if pause:
        return pause
    return ("numpy_path",
            "the target was not produced by any operation this tape recorded, so nothing "
            f"connects it to {src}: somewhere the computation left minitape (a NumPy function "
            "such as np.mean, or .numpy()) and came back as a constant; use minitape operations "
            "(mt.reduce_mean, ...) all the way from the source to the target")


def _blocked_path(ops, target_id, source, src, upstream):
    """The target depends on the source, but an op on the way carries no gradient."""
    downstream = {source._id}
    for op in ops:
        if any(i in downstream for i in op.input_ids):
            downstream.update(op.output_ids)
    for op in ops:
        on_path = (any(i in downstream for i in op.input_ids)
                   and any(o in upstream for o in op.output_ids))
        if not on_path:
            continue
        kind = gradient_kind(op)
        number = _op_number(ops, op)
        if op.type == "StopGradient":
            return ("stop_gradient",
                    f"the only path from {src} to the target goes through stop_gradient "
                    f"(op #{number}), which blocks gradients on purpose: remove the "
                    "mt.stop_gradient call if the gradient should flow there")
        if kind == "none":
            return ("not_differentiable",
                    f"the path from {src} to the target goes through {op.type} (op #{number}), "
                    "which has no gradient by design: use a differentiable op instead, or "
                    "mt.custom_gradient to define one")
        if any(dt.kind == "c" for dt in op.output_dtypes):
            return ("complex_path",
                    f"the path from {src} to the target goes through {op.type} (op #{number}), "
                    "whose output is complex, and minitape does not differentiate complex "
                    "numbers: work with the real and imaginary parts as two float tensors")
        if any(dt.kind != "f" for dt in op.output_dtypes):
            return ("integer_path",
                    f"the path from {src} to the target goes through {op.type} (op #{number}), "
                    "whose output is an integer tensor, and integers carry no gradient: keep "
                    "the path in floating point")
        if kind == "missing":
            return ("missing_gradient",
                    f"the gradient is not None: tape.gradient raises LookupError because "
                    f"{op.type} (op #{number}) has no registered gradient; register one with "
                    f"mt.RegisterGradient('{op.type}') or rewrite it with other ops")
    return ("connected",
            f"{src} is connected to the target through the recorded operations, so its "
            "gradient is not None")


def _upstream(ops, target_id) -> set:
    """Ids the target depends on through recorded ops (a backward sweep, no recursion)."""
    need = {target_id}
    for op in reversed(ops):
        if any(o in need for o in op.output_ids):
            need.update(op.input_ids)
    return need


def _broken_by_pause(tape, ops, produced, upstream):
    """If a leaf the target depends on was made in a stop_recording block or before a reset."""
    watched = {w._id for w in tape.watched}
    for op in ops:
        for i in op.input_ids:
            if i in upstream and i not in produced and i not in watched:
                pause = _pause_around(tape, ops, i, _seq(tape, op))
                if pause:
                    return pause
    return None


def _pause_around(tape, ops, tensor_id, consumer_seq):
    """Was ``tensor_id`` made while ``tape`` was paused or before it was reset?

    Tensor ids and op sequence numbers both grow with time, so the tensor was made after the
    last recorded op whose outputs have smaller ids, and before the op that consumed it.
    """
    earlier = [_seq(tape, op) for op in ops if op.output_ids and max(op.output_ids) < tensor_id]
    after = earlier[-1] if earlier and earlier[-1] is not None else -1
    before = consumer_seq if consumer_seq is not None else float("inf")
    for start, end in stop_recording_spans(tape.events):
        if after < start and (end is None or end < before):
            return ("stop_recording",
                    "a value on the path to the target was computed inside a "
                    "tape.stop_recording() block, which the tape does not record, so the "
                    "gradient cannot flow back through it: compute it outside that block")
    if any(after < e.seq < before for e in tape.events if e.kind == "reset"):
        return _reset_sentence()
    return None


def _seq(tape, op):
    """The stamp ``mt.viz``'s record gave ``op`` (None if the tape has no record)."""
    note = note_of(tape, op)
    return note.seq if note is not None else None


def _reset_sentence():
    return ("reset",
            "tape.reset() threw away everything recorded (and watched) before it, including "
            "the operations that connect the source to the target: compute those after the "
            "reset, or do not reset")
