"""Why is my gradient None, or NaN? One sentence, from what the tape actually recorded.

``explain(tape, target, source)`` checks, in this order:

1. the source is an integer tensor (integers have no gradient);
2. the target is not a minitape Tensor (an ndarray from NumPy) or is an integer tensor;
3. the tape never watched the source: a Tensor (only ``watch`` watches Tensors; also what you
   get when ``x = x + 1`` replaces a Variable), a non-trainable Variable, a tape created with
   ``watch_accessed_variables=False``, or a Variable never read by an op while the tape
   recorded (read inside ``stop_recording``, before a ``reset``, only by NumPy: the line of
   ``np.square(x)`` is named, or not at all);
4. the target was not produced by any recorded operation: it was computed after the ``with``
   block ended, or before ``tape.watch(x)`` (the watch came too late), or from the integer
   output of an op without a gradient (``argmax``, a comparison: the tape records nothing
   computed from it, a cast included), or the path went through NumPy or Python (the line
   of ``np.mean(y)``, ``y.numpy()`` or ``float(y)`` is named: ``minitape.tensor.on_leaving``
   tells ``mt.viz`` where a value left minitape);
5. the path exists, but every path goes through ``stop_gradient``, another op without a
   gradient, or an integer tensor (one path that carries a gradient is enough: in
   ``mt.where(x > 0, x, 0.0)`` the comparison only chooses the branch);
6. the source went into a Variable update (``v.assign_add(x)``) inside the tape, which is not a
   recorded operation (the tape notes it as an ``assigned`` event), or a Variable source was
   read without being used;
7. the path is broken by a tensor computed in a ``stop_recording`` block or before a ``reset``;
8. otherwise the target simply does not depend on the source.

When the source is connected, ``explain`` checks the gradient's value too. If it is NaN or
infinite:

- when the forward pass already held a NaN or an infinity on the way (the data, a Variable
  an earlier step made NaN, or an op that made one from finite inputs: ``exp`` overflowing
  float32, ``log`` at 0, a softmax over a row masked with -inf), no derivative is to blame:
  it names where the forward pass went wrong (a NaN is looked for before an infinity, which
  in a mask is often meant);
- else it finds the first step of the backward walk (``backward_steps``, run again on the
  tape's ops, or the record of the tape's last pass once a non-persistent tape has released
  them) that produced a non-finite value, and says which op, at which line of the learner's
  code, at which element (``x[1]``), with the local derivative and the upstream gradient
  that multiplied into it (``log at x = 0.0 has derivative inf; where (op #3) sends it 0.0;
  inf * 0.0 = nan``; or a finite product too large for float32: an exploding gradient, or
  a diverged training loop), and the usual fix (the double ``mt.where``, an epsilon,
  ``mt.math.divide_no_nan``, a smaller learning rate).

After ``tape.jacobian(y, x)`` or ``tape.batch_jacobian(y, x)``, ``explain(tape, y, x)``
checks the Jacobian rather than the gradient of ``y``'s sum: each row (the gradient of
``y[i]``; for ``batch_jacobian``, of one position of every example), and names the first
that holds NaN or inf (``row 0 of the Jacobian of y ..., the gradient of y[0]``) with the op,
the line and the fix as above; the seed that reached the op is that row's (1 at ``y[0]``, 0
elsewhere: a zero there times an infinite derivative is NaN off the diagonal). A released
tape's rows are read from what its record kept of the vectorized pass. Passing what the tape
returned as the target (``explain(tape, J, x)``) gets the call to write instead.

A finite gradient of a target that is itself NaN (``log`` of a negative ``sigma``) is said
to be finite, with where the target went NaN.

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
import sys

import numpy as np

from ..nest import flatten
from ..engine.tape import GradientTape
from ..engine.tensor import Tensor, Variable
from .graph import gradient_kind, stop_recording_spans
from .labels import is_fallback, tensor_labels
from .record import created, left_at, note_of, source_line
from ..debugging import learner_frame_of


class Explanation(str):
    """The sentence ``explain`` returns: a ``str`` that a notebook shows as wrapped prose
    (not as a long quoted string) and a terminal shows, or ``print`` prints, wrapped at word
    boundaries within 88 columns. Its value (``in``, ``==``, slicing) is the one-line
    sentence."""

    def _wrapped(self):
        import textwrap
        # (One paragraph per source when several were asked about.)
        return "\n".join(textwrap.fill(part, 88, break_long_words=False,
                                        break_on_hyphens=False)
                         for part in str.__str__(self).split("\n"))

    def __str__(self):
        return self._wrapped()

    def __repr__(self):
        return self._wrapped()

    def _repr_html_(self):
        import html
        return "".join(f'<p style="max-width:60em">{html.escape(part)}</p>'
                       for part in str.__str__(self).split("\n"))


def explain(tape, target, source) -> str:
    """One sentence saying why ``tape.gradient(target, source)`` is (or is not) ``None``.

    Args:
        tape: the GradientTape (it may have released its saved tensors already).
        target: the target given to ``gradient`` (a Tensor, or whatever was passed).
        source: a source (a Tensor or Variable), or the sources given to ``gradient`` (a
            list, tuple or dict of them, e.g. ``model.trainable_variables``): then one
            sentence per source, a line each.

    Returns:
        An ``Explanation`` (a ``str``): the reason and what to do about it, naming tensors
        as the drawings label them (the learner's variable names). When the tape's last
        call was ``tape.jacobian(target, source)`` (or ``batch_jacobian``), it is about
        the Jacobian: the first row holding NaN or inf, the op, the line and the fix.
    """
    frame = learner_frame_of(sys._getframe(1))
    if isinstance(source, (list, tuple, dict)) and source and all(
            isinstance(s, Tensor) for s in flatten(source)):
        return _explain_each(tape, target, flatten(source), frame)
    return Explanation(_explain_one(tape, target, source, frame)[1])


def _explain_each(tape, target, sources, frame):
    """One line per source; a source with the same reason as one above says so briefly."""
    lines, first_of = [], {}
    labels = [_name_of(tape, target, s) for s in sources]
    if len(set(labels)) < len(labels):   # (two layers' "kernel": their paths tell them apart)
        labels = [s.path if isinstance(s, Variable) and s.path else label
                  for s, label in zip(sources, labels)]
    for s, label in zip(sources, labels):
        code, sentence = _explain_one(tape, target, s, frame, label)
        if code in first_of and code != "connected":
            lines.append(f"{_describe(s, 'source', label)}: the same as for {first_of[code]}")
            continue
        first_of.setdefault(code, label)
        lines.append(sentence)
    return Explanation("\n".join(lines))


def _explain_one(tape, target, source, frame, label=None):
    """``(reason code, sentence)`` for one source, with the names ``frame`` holds; ``label``:
    what to call the source (two layers' ``kernel`` told apart by their paths)."""
    caller = _names_in(frame, target, source)
    code, sentence = diagnose(tape, target, source, caller.get("source"), frame=frame,
                              label=label)
    return code, _name_target(tape, target, source, sentence, caller.get("target"))


def _names_in(frame, target, source):
    """``{"target": name, "source": name}``: the names ``frame`` (the code that called
    ``explain``) holds the target and the source under, where it holds one."""
    names = {}
    if frame is None:
        return names
    for key, value in (("target", target), ("source", source)):
        held = [k for k, v in list(frame.f_locals.items())
                if v is value and k.isidentifier() and not k.startswith("_")]
        if held:
            names[key] = held[0]
    return names


def _name_target(tape, target, source, sentence, caller_name=None):
    """``sentence`` with "the target" called by the learner's name for it ("the target
    loss"), when the code gave it one (not ``t3``, not ``sin #3``): the drawing's label, else
    the name the calling code holds it under (``caller_name``: a target the tape never
    recorded, computed after the ``with`` block)."""
    if not isinstance(target, Tensor) or not isinstance(source, Tensor):
        return sentence
    from .graph import tape_graph
    try:
        label = tape_graph(tape, target, source).tensor(target).label
    except (KeyError, TypeError):
        label = None
    if label is None or is_fallback(label):
        label = caller_name
    if label is None:
        return sentence
    return re.sub(r"\bthe target\b", f"the target {label}", sentence)


def diagnose(tape, target, source, source_name=None, frame=None, label=None) -> tuple:
    """``(reason code, sentence)``; see the module docstring for the reasons, in order.

    A target given as a list/tuple/dict (their sum is differentiated) is connected if any of
    its entries is; otherwise the first entry's reason is given. ``source_name``: what to
    call the source when the drawing can only call it ``t1`` (``explain`` passes the name
    the calling code holds it under). ``frame``: the calling code's frame, whose names
    can tell what data a NaN came from (``features``). ``label``: what to call the source,
    whatever the drawing calls it.
    """
    if not isinstance(tape, GradientTape):
        raise TypeError(f"explain expects a minitape GradientTape, got {type(tape).__name__}")
    if isinstance(target, (list, tuple, dict)):
        answers = [diagnose(tape, t, source, source_name, frame, label)
                   for t in flatten(target)] or \
            [("unconnected", "the target is empty: there is nothing to differentiate")]
        return next((a for a in answers if a[0] == "connected"), answers[0])
    if isinstance(source, (list, tuple, dict)) and not flatten(source):
        return ("no_sources",
                f"the sources are an empty {type(source).__name__}, so there is no gradient to "
                "explain: a model's trainable_variables stays empty until the model is called "
                "once (which builds its layers), and leaves out a layer made inside call() "
                "(create layers in __init__, so that the model tracks their weights)")
    if not isinstance(source, Tensor):
        return ("source_not_tensor",
                f"the source is a {type(source).__name__}, not a minitape Tensor or Variable, "
                "so no tape can follow it: create it with mt.Variable(...) or mt.constant(...)")
    label = label or _name_of(tape, target, source)
    if source_name and is_fallback(label):
        label = source_name
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
    if target is None:
        return ("numpy_target",
                "the target is None: pass the Tensor you differentiate (the loss, computed "
                "with minitape operations inside the tape)")
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
    if target.id == source.id:
        return ("connected", f"{src} is the target itself: its gradient is ones, not None")

    ops = list(tape.operations)
    watched = {w.id for w in tape.watched}
    produced = {i: op for op in ops for i in op.output_ids}
    tracked = source.id in watched or source.id in produced
    if not tracked:
        return _not_watched(tape, target, source, src, ops, produced, name)
    if target.id not in produced and target.id not in watched:
        answer = _a_result_of_the_tape(tape, target, source, ops)
        if answer is not None:
            return answer
        return _target_not_recorded(tape, target, source, src, ops, produced, name)

    upstream = _upstream(ops, target.id)           # everything the target depends on
    if source.id in upstream:
        answer = _blocked_path(tape, ops, target.id, source, src, upstream)
        if answer[0] == "connected":
            found = _non_finite(tape, target, source, src, ops, frame)
            if found == "unchecked":
                code, sentence = _where_note(ops, source, src, upstream, answer)
                return (code, sentence + " (the tape has released what it recorded, so "
                        "explain could not check whether the gradient is finite; record with "
                        "mt.GradientTape(persistent=True) to have it checked)")
            if found:
                return found
            code, sentence = _where_note(ops, source, src, upstream, answer)
            return code, sentence + _target_note(tape, target, source, ops, frame)
        return answer
    assigned = _assigned(tape, source)
    if assigned:
        method, variable = assigned
        variable = _label_of(tape, target, variable[1]) or variable[0]
        return ("assign",
                f"{src} went into {variable}.{method}(...) inside the tape, and a Variable "
                "update is not a recorded operation (it has no gradient): the Variable "
                "remembers its new value, not how it got it, so nothing recorded after the "
                f"update depends on {label}; compute the target from it with ordinary "
                f"operations instead (y = f({_combined(method, variable, _code(name, 'x'))})"
                " rather than "
                f"{variable}.{method}({_code(name, 'x')}) then y = f({variable}))")
    if isinstance(source, Variable) and not any(source.id in op.input_ids for op in ops):
        return ("assign",
                f"{src} was read inside the tape, but no recorded operation used it: it was "
                "read without being used (read_value()) or only by a Variable update (such as "
                "x1.assign_add(x0)), which the tape does not record, and a Variable remembers "
                "its value, not how it got it; compute the target from the source with "
                "ordinary operations (y = (x1 + x0)**2)")
    when = _broken_by_pause(tape, ops, produced, upstream)
    if when:
        return when
    rebound = _rebound_target(tape, ops, target, source)
    if rebound:
        return ("unconnected",
                f"the target does not depend on {src}: {rebound}")
    return ("unconnected",
            f"the target does not depend on {src}: no recorded operation leads from it to the "
            "target; differentiate a target computed from the source, or pass "
            "unconnected_gradients=mt.UnconnectedGradients.ZERO to get zeros")


def _rebound_target(tape, ops, target, source):
    """When an earlier value of the target's name depends on the source (``for w in ws:
    y = w * x`` leaves in ``y`` only the last product, ``y₁`` and ``y₂`` are gone): say so,
    and how to keep every value. Else ``""``."""
    from .graph import tape_graph
    from .labels import is_fallback
    try:
        graph = tape_graph(tape, target, source)
        name = graph.tensor(target).label
    except (KeyError, TypeError, ValueError):
        return ""
    if is_fallback(name) or not name.isidentifier():
        return ""
    down = {source.id}
    for op in ops:
        if any(i in down for i in op.input_ids):
            down.update(op.output_ids)
    for op in ops:
        for i in op.output_ids:
            if i not in down:
                continue
            label = graph.tensor(i).label
            if re.fullmatch(re.escape(name) + "[₀-₉]+", label):
                return (f"{label}, an earlier value of {name} ({_op_ref(tape, ops, op)}), "
                        f"depends on it, but {name} was bound again after it (a loop's "
                        f"{name} = ... keeps only the last value), and the target is its "
                        f"last value; to differentiate them all, add them up ({name} = "
                        f"{name} + ..., starting from 0.0) or collect them in a list and "
                        "differentiate mt.add_n(the list)")
    return ""


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
        ids = [i for op in ops for i in op.input_ids + op.output_ids] + [source.id]
        labels = tensor_labels([(op, note_of(tape, op), n) for n, op in enumerate(ops, 1)],
                               list(dict.fromkeys(ids)), {source.id: source},
                               {source.id: source.name})
        return labels[source.id]


def _describe(t, role, name):
    """'the source x (a Variable)' and the like, for sentences."""
    if isinstance(t, Variable):
        kind = "a Variable" if t.trainable else "a non-trainable Variable"
        return f"the {role} {name} ({kind})"
    return f"the {role} {name}"


def _op_number(ops, op):
    """The op's number on its tape, as drawn: ``#1`` for the first op recorded."""
    return next(k for k, o in enumerate(ops, start=1) if o is op)


def _op_ref(tape, ops, op):
    """``op #3`` and, when the tape's record noted it, the learner's line: ``op #3, line 2
    of its cell: z = x * y`` (a notebook cell) or ``op #3, train.py:12: z = x * y`` (a
    file)."""
    note = note_of(tape, op)
    location, text = _line_of(note.origin[0] if note is not None and note.origin else None)
    return (f"op #{_op_number(ops, op)}" + _loop_place(tape, op)
            + (f", {location}" + (f": {text}" if text else "") if location else ""))


def _line_of(origin):
    """``(location, text)`` of the learner's line ``origin`` (``source_line``), a notebook
    cell's as ``line 3 of its cell`` ("cell 59:3": the code says which cell)."""
    location, text = source_line(origin)
    if location and location.startswith("cell "):
        location = f"line {location.split(':')[-1]} of its cell"
    return location, _without_comment(text)


def _without_comment(text):
    """The line ``text`` without its trailing ``# comment`` (a ``#`` inside a string stays)."""
    if not text or "#" not in text:
        return text
    import io
    import tokenize
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                return text[:token.start[1]].rstrip() or text
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return text


def _loop_place(tape, op):
    """`` in iteration 16 of 50 of a loop [draw_tape(tape, fold=True, iteration=15) draws
    it]`` when ``op`` lies in a repeated block of the tape (a Python loop's iterations, as
    ``draw_tape(fold=True)`` folds them: ``fold.find_folds``), else ``""``: the drawing of
    a long loop shows one iteration, and this says which one to unfold to see the op."""
    from .fold import find_folds
    from .graph import tape_graph
    try:
        graph = tape_graph(tape)
        node = graph.op_of(op)
    except (KeyError, TypeError, ValueError):
        return ""
    for fold in find_folds(graph.ops):
        for j, iteration in enumerate(fold.iterations):
            if any(o is node for o in iteration):
                return (f" in iteration {j + 1} of {fold.count} of a loop "
                        f"[draw_tape(tape, fold=True, iteration={j}) draws it]")
    return ""


def _made_after_block(tape, tensor_id):
    """True if the tensor ``tensor_id`` was made after the tape's last ``with`` block ended
    (its ``exited`` event holds an id larger than any made inside)."""
    exits = [e for e in tape.events if e.kind == "exited" and isinstance(e.detail, int)]
    return bool(exits) and not tape.recording and tensor_id > exits[-1].detail


def _not_watched(tape, target, source, src, ops, produced, name):
    """The tape never watched the source: say why that happened."""
    if _made_after_block(tape, source.id) and \
            created(source.id) is not None:   # (a constant made later; x = x + 1 is below)
        return ("source_after_tape",
                f"{src} was made after the `with` block had ended, so no operation the tape "
                "recorded can have read it (a new Tensor, even of the same value, is not the "
                "one the target was computed from): pass the Tensor or Variable that the code "
                "inside the block used, and watch it there if it is a plain Tensor")
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
    pause = _broken_by_pause(tape, ops, produced, _upstream(ops, target.id))
    if pause:
        return pause
    if any(e.kind == "reset" for e in tape.events):
        return _reset_sentence()
    where = _left_while_recording(tape, source.id)
    if where:
        return ("left_minitape",
                f"{src} was turned into a constant or a NumPy or Python value at {where}, "
                "inside the tape: model.predict, mt.constant, a NumPy function (np.square(x)), "
                ".numpy() or float() gives a plain value that no tape can follow, so nothing "
                f"the tape recorded depends on {_code(name, 'it')}; use minitape's operations "
                "on the Tensor itself (mt.stack, mt.math.square, mt.reduce_mean, ...) all the "
                "way to the target")
    path = getattr(source, "path", None) or ""
    if "/" in path:     # (a layer's weight: "dense_2/kernel")
        layer = path.rsplit("/", 1)[0]
        return ("not_read",
                f"{src} belongs to the layer {layer}, which was not called while the tape was "
                "recording (a layer the model creates but its call() does not use, or one "
                "called outside the `with` block), so nothing the tape recorded depends on "
                "it and its gradient is None: call the layer in the forward pass, or leave "
                "its weights out of the list given to tape.gradient and the optimizer")
    return ("not_read",
            f"{src} was never read while the tape was recording (the code that uses it ran "
            "outside the `with` block, on a branch not taken, or not at all), so nothing the tape "
            "recorded depends on it: compute the target from it inside the tape")


def _target_not_recorded(tape, target, source, src, ops, produced, name=None):
    """The source is watched, but no recorded op produced the target."""
    if isinstance(target, Variable):
        return ("unconnected",
                f"the target is a Variable itself, not something computed from {src}: its "
                "gradient with respect to the source is None")
    pause = _pause_around(tape, ops, target.id, None)
    if pause:
        return pause
    if _made_after_block(tape, target.id):
        return ("target_after_tape",
                "the target was computed after the `with` block had ended, when the tape no "
                "longer recorded, so no recorded operation produced it and nothing connects "
                f"it to {src}: compute it inside the `with` block (indent the line that "
                "computes it), then call tape.gradient after the block")
    watches = [e.detail[0] for e in tape.events
               if e.kind == "watched" and source.id in e.detail[1]]
    if watches and watches[0] > target.id:
        name = _code(name, "x")
        return ("watched_late",
                f"tape.watch({name}) came after the target was computed: a tape records an "
                "operation only when one of its inputs is already watched, so the operations "
                f"that made the target from {src} were not recorded; call tape.watch({name}) "
                "first, at the top of the `with` block, before the lines that use it")
    broken = _integer_output_op(ops, source)
    if broken is not None:
        return _integer_sentence(tape, ops, broken, src, recorded=False)
    left = []
    for i in _tape_ids(tape, ops):
        found = _left_while_recording(tape, i, stamp=True, before=target.id)
        if found:
            left.append((found, i))
    if left:
        (_, where), i = max(left)    # the last value that left (the nearest to the target)
        name = _label_of(tape, target, i) or "a tensor the tape recorded"
        return ("numpy_path",
                "the target was not produced by any operation this tape recorded: "
                f"{name} was turned into a constant or a NumPy or Python value at {where} "
                "(model.predict, mt.constant, a NumPy function, .numpy() or float() gives a "
                "plain value that no tape can follow), so nothing connects the target to "
                f"{src}; use minitape operations (mt.stack, mt.reduce_mean, mt.math.square, "
                "...) all the way from the source to the target")
    return ("numpy_path",
            "the target was not produced by any operation this tape recorded, so nothing "
            f"connects it to {src}: somewhere the computation left minitape (a NumPy function "
            "such as np.mean, or .numpy()) and came back as a constant; use minitape operations "
            "(mt.reduce_mean, ...) all the way from the source to the target")


def _tape_ids(tape, ops):
    """The ids of the tensors ``tape`` watched or whose ops it recorded, in order."""
    ids = dict.fromkeys(w.id for w in tape.watched)
    for op in ops:
        ids.update(dict.fromkeys(op.input_ids + op.output_ids))
    return ids


def _left_while_recording(tape, tensor_id, stamp=False, before=None):
    """Where (``"cell 3:2 (`y = np.square(x)`)"``) the learner's code took ``tensor_id`` out
    of minitape while ``tape`` recorded, or None; ``stamp=True``: ``(stamp, where)``;
    ``before``: only if it happened before the tensor of that id was made (the target)."""
    left = left_at(tensor_id)
    if not left:      # (the common case: asked of every tensor the tape saw)
        return None
    entered = [e.seq for e in tape.events if e.kind in ("entered", "resumed")]
    ended = [e.seq for e in tape.events if e.kind in ("exited", "paused")]
    found = [(seq, origin) for seq, origin, mark in left
             if (before is None or mark <= before)
             and any(a < seq and not any(a < b < seq for b in ended) for a in entered)]
    if not found:
        return None
    seq, origin = found[-1]      # (the last one while the tape recorded)
    location, text = _line_of(origin[0])
    where = f"{location} (`{text}`)" if text else location
    return (seq, where) if stamp else where


def _blocked_path(tape, ops, target_id, source, src, upstream):
    """The target depends on the source: does a gradient reach it? Follow only the edges
    that carry one (into an op with a gradient, out of its float outputs); a comparison, an
    ``argmax`` or ``stop_gradient`` on one path does not matter when another path carries
    the gradient (``mt.where(x > 0, x, 0.0)``: the comparison only chooses)."""
    carry = {source.id}
    blockers, missing = [], None
    for op in ops:
        if not any(i in carry for i in op.input_ids):
            continue
        if not any(o in upstream for o in op.output_ids):   # off the way to the target
            continue
        kind = gradient_kind(op)
        if op.type == "StopGradient" or kind == "none":
            blockers.append(op)
            continue
        if kind == "missing" and missing is None:
            missing = op
        floats = [o for o, dt in zip(op.output_ids, op.output_dtypes) if dt.kind == "f"]
        if floats:
            carry.update(floats)
        else:
            blockers.append(op)
    if target_id in carry:
        if missing is not None:
            return ("missing_gradient",
                    f"the gradient is not None: tape.gradient raises LookupError because "
                    f"{missing.type} ({_op_ref(tape, ops, missing)}) has no registered "
                    f"gradient; register one with mt.RegisterGradient('{missing.type}') or "
                    "rewrite it with other ops")
        return ("connected",
                f"{src} is connected to the target through the recorded operations, so its "
                "gradient is not None")
    for op in blockers:
        ref = _op_ref(tape, ops, op)
        if op.type == "StopGradient":
            return ("stop_gradient",
                    f"the only path from {src} to the target goes through stop_gradient "
                    f"({ref}), which blocks gradients on purpose: remove the "
                    "mt.stop_gradient call if the gradient should flow there")
        if any(dt.kind == "c" for dt in op.output_dtypes):
            return ("complex_path",
                    f"the path from {src} to the target goes through {op.type} ({ref}), "
                    "whose output is complex, and minitape does not differentiate complex "
                    "numbers: work with the real and imaginary parts as two float tensors")
        if any(dt.kind != "f" for dt in op.output_dtypes):
            return _integer_sentence(tape, ops, op, src, recorded=True)
        if op.type == "Round":
            return ("not_differentiable",
                    f"the path from {src} to the target goes through Round ({ref}), which has "
                    "no gradient, in TensorFlow too (its derivative is 0 almost everywhere, "
                    "which would tell the source nothing): to round in the forward pass and "
                    "let the gradient through as if it were the identity (the straight-through "
                    "estimator), write x + mt.stop_gradient(mt.round(x) - x)")
        return ("not_differentiable",
                f"the path from {src} to the target goes through {op.type} ({ref}), "
                "which has no gradient by design: use a differentiable op instead, or "
                "mt.custom_gradient to define one")
    return ("connected",
            f"{src} is connected to the target through the recorded operations, so its "
            "gradient is not None")


# What to use instead of an op whose output is an integer or a bool (no gradient).
_SMOOTH = {
    "ArgMax": "mt.nn.softmax(x) gives a differentiable 'soft' choice, and mt.reduce_max(x) "
              "the largest value itself, whose gradient flows to it",
    "ArgMin": "mt.nn.softmax(-x) gives a differentiable 'soft' choice, and mt.reduce_min(x) "
              "the smallest value itself, whose gradient flows to it",
}
_COMPARISONS = ("Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual")


def _integer_output_op(ops, source):
    """The first recorded op downstream of ``source`` whose outputs are all integers or
    bools (ArgMax, a comparison, a cast to int): the break in a path, or None."""
    down = {source.id}
    for op in ops:
        if any(i in down for i in op.input_ids):
            if all(dt.kind in "biu" for dt in op.output_dtypes):
                return op
            down.update(op.output_ids)
    return None


def _integer_sentence(tape, ops, op, src, recorded):
    """Why a path through ``op`` (integer or bool output) carries no gradient."""
    ref = _op_ref(tape, ops, op)
    dtype = op.output_dtypes[0].name
    after = ("everything computed from it is a constant to the tape" if recorded else
             "the tape did not record what was computed from it")
    head = (f"the path from {src} to the target goes through {op.type} ({ref}), whose "
            f"output is {dtype}: ")
    if op.type in _SMOOTH:
        return ("no_gradient_op",
                head + f"an index does not change when {src.split(' (')[0]} changes a little, "
                f"so {op.type} has no gradient (in TensorFlow too) and {after}; casting the "
                f"index back to a float does not help. Instead, {_SMOOTH[op.type]}")
    if op.type in _COMPARISONS:
        return ("no_gradient_op",
                head + f"a comparison has no gradient (a step from False to True), and "
                f"{after}; casting it to a float does not help. To choose between two "
                "differentiable values use mt.where(condition, a, b) (the gradient flows to "
                "the chosen one); for a smooth step use mt.sigmoid((x - threshold) / width)")
    return ("integer_path",
            head + f"integers carry no gradient, and {after}: keep the path in floating point")


def _where_note(ops, source, src, upstream, answer):
    """A connected path through ``where`` whose condition depends on the source: say that
    the comparison only chooses (its missing gradient does not matter)."""
    down = {source.id}
    for op in ops:
        if any(i in down for i in op.input_ids):
            down.update(op.output_ids)
            if (op.type == "SelectV2" and op.input_ids[0] in down
                    and any(o in upstream for o in op.output_ids)):
                return ("connected",
                        f"{src} is connected to the target: where (op #{_op_number(ops, op)}) "
                        "passes the gradient to the branch it chose, element by element, and "
                        "0 to the other; its condition (a comparison) has no gradient, but it "
                        "only chooses, so the gradient is not None: it is 0 where the branch "
                        "chosen does not depend on the source")
    return answer


def _combined(method, variable, value):
    """What ``variable.method(value)`` leaves in the Variable, as an expression."""
    return {"assign_add": f"{variable} + {value}", "assign_sub": f"{variable} - {value}"}.get(
        method, value)


def _assigned(tape, source):
    """``(method, (Variable name, Variable id))`` if a Variable update inside the tape took
    ``source``, else None."""
    for e in tape.events:
        if e.kind == "assigned" and e.detail[2] == source.id:
            return e.detail[0], (e.detail[1], e.detail[3])
    return None


def _label_of(tape, target, tensor_id):
    """The drawing's label of the tensor with this id (None if the drawing has none)."""
    from .graph import tape_graph
    targets = [t for t in flatten(target) if isinstance(t, Tensor)]
    try:
        return tape_graph(tape, targets or None).tensor(tensor_id).label
    except KeyError:
        return None


# -- why a gradient is NaN or infinite ------------------------------------------------------------

# The learner's function for an op type, in sentences ("log at x = 0.0 has derivative inf").
_FUNCTIONS = {"SelectV2": "where", "Log": "log", "Sqrt": "sqrt", "RealDiv": "divide",
              "Mul": "multiply", "Pow": "pow", "Reciprocal": "reciprocal", "Sum": "reduce_sum",
              "AddV2": "add", "Sub": "subtract", "Exp": "exp", "Log1p": "log1p",
              "Square": "square", "Maximum": "maximum", "Minimum": "minimum",
              "MatMul": "matmul", "BatchMatMulV2": "matmul", "Neg": "negative",
              "Mean": "reduce_mean", "Tanh": "tanh", "Sigmoid": "sigmoid",
              "Softplus": "softplus", "Abs": "abs", "Rsqrt": "rsqrt", "Prod": "reduce_prod",
              "Softmax": "softmax", "LogSoftmax": "log_softmax", "DivNoNan": "divide_no_nan",
              "Sin": "sin", "Cos": "cos", "Tan": "tan", "Relu": "relu", "Max": "reduce_max",
              "StridedSlice": "a slice", "GatherV2": "gather", "Reshape": "reshape"}

_FIXES = {
    "RealDiv": "use mt.math.divide_no_nan(a, b), which is 0 where b is 0 and so are its "
               "gradients, or keep the divisor away from 0 with an epsilon",
    "Sqrt": "add an epsilon under the square root (mt.sqrt(s + 1e-12); for a norm, "
            "mt.sqrt(mt.reduce_sum(v ** 2) + 1e-12) instead of mt.norm(v)), or take the root "
            "only where s > 0 with the double where (as mt.clip_by_norm does)",
    "Log": "add an epsilon (mt.math.log(p + 1e-7)), or use an op that is stable there: "
           "mt.nn.log_softmax(logits) rather than the log of mt.nn.softmax(logits), "
           "mt.nn.softmax_cross_entropy_with_logits, and for a sigmoid the cross-entropy "
           "computed from the logits z (mt.nn.softplus(z) - y * z, or "
           "mt.keras.losses.BinaryCrossentropy(from_logits=True))",
    "Pow": "keep the base away from 0 with an epsilon, or use the double where",
    "Reciprocal": "use mt.math.divide_no_nan(1.0, x), or keep x away from 0 with an epsilon",
    "Softmax": "for a mask, add a large negative number (-1e9) rather than -inf, so that a "
               "row whose entries are all masked gives a uniform softmax instead of NaN (or "
               "leave such rows out with mt.where)",
    "LogSoftmax": "for a mask, add a large negative number (-1e9) rather than -inf, so that "
                  "a row whose entries are all masked stays finite (or leave such rows out "
                  "with mt.where)",
    "Exp": "subtract the largest value first (mt.exp(x - mt.reduce_max(x)), as mt.nn.softmax "
           "does), or stay in log space (mt.nn.log_softmax, mt.math.reduce_logsumexp)",
}
_GENERIC_FIX = ("the usual fixes: the double mt.where (make the branch that is not chosen "
                "safe too), an epsilon (x + 1e-7), or mt.math.divide_no_nan for a division")
_OVERFLOW_FIX = ("the usual fixes for a gradient that grows at every step of a long chain (an "
                 "exploding gradient): scale the inputs or the initial weights down, clip the "
                 "gradient (mt.clip_by_norm) before the update, or compute in float64")


_UNKNOWN = object()   # a gradient the record of a released tape did not keep


def _non_finite(tape, target, source, src, ops, frame=None):
    """The source is connected; is its gradient NaN or infinite? If so, say why (None
    otherwise): a NaN or inf already in the forward pass (in the data, or made by an op: the
    first op that made one), or else the first step of the backward walk that made one.
    After ``tape.jacobian`` or ``tape.batch_jacobian`` of this target, each row of the
    Jacobian is checked instead (``_jacobian_story``)."""
    asked = _jacobian_asked(tape, target, source)
    if asked is not None:
        return _jacobian_story(tape, target, source, src, ops, frame, *asked)
    walk = _walk(tape, target, source, ops)
    if walk is None:
        return "unchecked" if tape.released else None
    final, steps = walk
    if final is None or _finite(final):
        return None
    return _story(tape, target, source, src, ops, frame, final, steps,
                  f"the gradient of {src} is {_value_text(final)}: ")


def _story(tape, target, source, src, ops, frame, final, steps, head, seed_text=None,
           row_finite=False):
    """``("non_finite", sentence)`` for a gradient ``final`` that holds a NaN or inf,
    from the ``steps`` of the walk that made it; ``head`` opens the sentence, ``seed_text``
    names what seeded the walk (a Jacobian's row), ``row_finite``: that row's element of the
    target is finite (its NaN comes from the backward pass, not the forward values)."""
    first = None
    for n, (op, outs, ins) in enumerate(steps):
        if any(o is _UNKNOWN for o in outs) or not all(_finite(o) for o in outs):
            continue      # (not the first: it received a NaN or inf, or may have)
        bad = [k for k, g in enumerate(ins) if g is not None and not _finite(g)]
        if bad:
            first = n, bad[0]
            break
    targets = [t for t in flatten(target) if isinstance(t, Tensor)]
    values = _forward_values(tape, ops)
    upstream = set()
    for t in targets:
        upstream |= _upstream(ops, t.id)
    origin = _forward_origin(ops, upstream, values)
    names = _Names(tape, targets, source)
    # The forward pass is to blame if the backward step read a NaN or inf, or if one reached
    # the target from an op before it (not if ``where`` dropped it on the way).
    reached = not _finite(_target_value(targets))
    if row_finite and first is not None:
        origin = None      # (a Jacobian's row whose own element is finite: the walk made it)
    if origin is not None and (
            first is None or _reads_non_finite(steps[first[0]][0], values)
            or reached and _op_number(ops, origin[1]) < _op_number(ops, steps[first[0]][0])):
        return ("non_finite", head + _forward_story(tape, ops, origin, values, names, targets,
                                                    frame))
    if first is None:
        value = _target_value(targets)
        seen = (f" (the target is {_value_text(value)})" if value is not None
                and not _finite(value) else "")
        return ("non_finite",
                head + f"a value on the way was already NaN or infinite in the forward "
                f"pass{seen}, and the tape no longer holds the values that would say where "
                "(a tape that is not persistent drops them after tape.gradient, and keeps "
                "only small ones): check the inputs (np.isnan(x).any()), or call "
                "mt.debugging.enable_check_numerics() and run the step again, which stops "
                "at the first op that makes a NaN or inf and names its line; " + _GENERIC_FIX)
    n, k = first
    clause = ""
    value = _target_value(targets)
    if origin is not None and value is not None and not _finite(value):
        if origin[1] is steps[n][0]:
            clause = (f" (in the forward pass it already gave {_num(origin[3])} there, so the "
                      f"target is {_value_text(value)} too)")
        else:
            clause = (f"; the target is {_value_text(value)} in the forward pass too, from "
                      f"{_fname(origin[1])} (op #{_op_number(ops, origin[1])}), which gives "
                      f"{_num(origin[3])}")
    return ("non_finite", head + _backward_story(tape, ops, steps, n, k, names, targets,
                                                 clause, seed_text))


def _a_result_of_the_tape(tape, target, source, ops):
    """``("result_as_target", sentence)`` when ``target`` is what the tape's last
    ``gradient``, ``jacobian`` or ``batch_jacobian`` returned (``explain(tape, J, x)``): the
    tape did not record it; ``explain`` takes the target that was differentiated. Else
    None."""
    from .record import record_of
    asked = [e.detail for e in tape.events if e.kind == "gradient"]
    if not asked:
        return None
    record = record_of(tape)
    what = asked[-1]
    if what in ("jacobian", "batch_jacobian"):
        shapes = {i: shape for op in ops for i, shape in zip(op.output_ids, op.output_shapes)}
        rows = record.last_jacobian
        last = record.last_pass
        ids = [rows.target_id] if rows is not None else list(last.seeds) if last else []
        differentiated = [i for i in ids if i in shapes]
        if not differentiated:
            return None
        y_shape = shapes[differentiated[0]]
        expected = (y_shape + source.shape if what == "jacobian" else
                    y_shape + source.shape[1:])
        if target.shape != expected:
            return None
        y = _label_of(tape, None, differentiated[0]) or "y"
    else:
        last = record.last_pass
        if last is None or not any(g is target for g in last.gradients.values()):
            return None
        y = next((_label_of(tape, None, i) for i in last.seeds), None) or "y"
    x = _name_of(tape, None, source)
    return ("result_as_target",
            f"the target is what tape.{what} returned, not a value the tape recorded, so "
            f"nothing connects it to the source: explain takes what you differentiated, "
            f"explain(tape, {y}, {x}) (after tape.{what}({y}, {x}) it checks "
            + (f"each row of the Jacobian, the gradient of each element of {y}, and names "
               "the first that holds NaN or inf)" if what != "gradient" else
               "that gradient)"))


def _jacobian_asked(tape, target, source):
    """``(what, rows)`` when the tape's last backward call was ``jacobian`` or
    ``batch_jacobian`` of ``target`` (``what``), ``rows`` the ``JacobianPass`` its record
    kept of a vectorized one (None after the loop, ``experimental_use_pfor=False``); else
    None (then ``explain`` checks the gradient of the target's sum, as ``gradient``)."""
    from .record import record_of
    asked = [e.detail for e in tape.events if e.kind == "gradient"]
    if not asked or asked[-1] not in ("jacobian", "batch_jacobian"):
        return None
    if not isinstance(target, Tensor) or target.dtype.kind != "f":
        return None
    record = record_of(tape)
    rows = record.last_jacobian
    if rows is not None:
        return (asked[-1], rows) if rows.target_id == target.id else None
    last = record.last_pass           # (the loop: one pass per row, the last one's seed)
    if last is not None and target.id not in last.seeds:
        return None
    return asked[-1], None


def _jacobian_seeds(what, target):
    """The cotangents of a Jacobian's rows, rows first, as ``jacobian.py`` makes them: the
    rows of the identity for ``jacobian``; for ``batch_jacobian``, 1 at one position of
    every example."""
    if what == "jacobian":
        n = target.size
        return np.eye(n, dtype=target.dtype).reshape((n,) + target.shape)
    rest = target.shape[1:]
    n = int(np.prod(rest))
    return np.broadcast_to(np.eye(n, dtype=target.dtype).reshape((n, 1) + rest),
                           (n,) + target.shape)


def _jacobian_rows(tape, target, source, ops, what, rows):
    """``(row, its seed, the source's gradient for it, steps)`` for each row of the Jacobian:
    read from what the record kept of a vectorized pass, else walked again on a tape that
    still holds its values (None when neither can be)."""
    if rows is not None and rows.chunks:
        from .record import _NOT_KEPT, record_of
        if any(g is _NOT_KEPT for _, chunk in rows.chunks for _, _, ins in chunk for g in ins):
            yield None           # (a Jacobian too large for the record to keep)
            return
        record = record_of(tape)
        by_seq = {}
        for op in ops:
            note = record.note(op)
            if note is not None:
                by_seq[note.seq] = op
        start = 0
        for seeds, chunk in rows.chunks:
            for r in range(seeds.shape[0]):
                reached = {rows.target_id: seeds[r]}
                steps = []
                for seq, input_ids, in_grads in chunk:
                    op = by_seq.get(seq)
                    if op is None:
                        continue
                    outs = [reached.get(o) for o in op.output_ids]
                    ins = [None if g is None else g[r] for g in in_grads]
                    for i, g in zip(input_ids, ins):
                        if g is not None:
                            reached[i] = g if i not in reached else reached[i] + g
                    steps.append((op, outs, ins))
                yield start + r, seeds[r], reached.get(source.id), steps
            start += seeds.shape[0]
        return
    if tape.released:
        yield None
        return
    for r, seed in enumerate(_jacobian_seeds(what, target)):
        walk = _walk(tape, target, source, ops, seed=seed)
        if walk is None:
            yield None
            return
        yield (r, seed) + walk


def _jacobian_story(tape, target, source, src, ops, frame, what, rows):
    """``explain`` after ``tape.jacobian(y, x)`` (or ``batch_jacobian``): the first row of
    the Jacobian that holds a NaN or inf (the gradient of ``y[r]``), which op made it, at
    which line, and the fix; None when every row is finite, ``"unchecked"`` when the rows
    cannot be known."""
    bad = []
    for found in _jacobian_rows(tape, target, source, ops, what, rows):
        if found is None:
            return "unchecked"
        r, seed, final, steps = found
        if final is not None and not _finite(final):
            bad.append((r, seed, final, steps))
    if not bad:
        return None
    r, seed, final, steps = bad[0]
    names = _Names(tape, [target], source)
    y = names(target.id, "the target")
    value = np.asarray(target.numpy())
    if what == "jacobian":
        index = tuple(int(i) for i in np.unravel_index(r, target.shape))
        element = _element(y, index, target.shape)
        row_value = value[index] if index else value
        head = (f"row {_index_text(index) if len(index) > 1 else r} of the Jacobian of "
                f"{y} with respect to {src}, the gradient of {element}, is "
                f"{_value_text(final)}")
        seed_text = f"the seed of {element} (1.0 there, 0.0 at the other elements of {y})"
    else:
        position = tuple(int(i) for i in np.unravel_index(r, target.shape[1:]))
        element = f"{y}[:, {', '.join(map(str, position))}]" if re.fullmatch(
            r"[\w.\[\]]+", y) else f"({y})[:, {', '.join(map(str, position))}]"
        row_value = value[(slice(None),) + position]
        head = (f"the batch Jacobian of {y} with respect to {src} holds "
                f"{'NaN' if np.isnan(final).any() else 'inf'} for {element} (position "
                f"{', '.join(map(str, position))} of every example), whose gradient is "
                f"{_value_text(final)}")
        seed_text = f"the seed of {element} (1.0 there in every example, 0.0 elsewhere)"
    others = [b[0] for b in bad[1:]]
    if others:
        more = ", ".join(map(str, others[:5])) + (", ..." if len(others) > 5 else "")
        unit = "row" if what == "jacobian" else "position"
        head += f" ({unit}{'s' if len(others) > 1 else ''} {more} too)"
    return _story(tape, target, source, src, ops, frame, final, steps, head + ": ",
                  seed_text, row_finite=_finite(row_value))


class _Names:
    """The drawing's labels of the tensors (``x``, ``1.0 - p``, ``sum #2``)."""

    def __init__(self, tape, targets, source):
        from .graph import tape_graph
        try:
            self.graph = tape_graph(tape, targets or None, source)
        except (KeyError, TypeError, ValueError):
            self.graph = None

    def __call__(self, tensor_id, fallback="its input"):
        try:
            return self.graph.tensor(tensor_id).label
        except (KeyError, AttributeError):
            return fallback


def _target_value(targets):
    """The target's forward value (the first non-finite one if several), or None."""
    values = [np.asarray(t.numpy()) for t in targets if t.dtype.kind in "fc"]
    return next((v for v in values if not _finite(v)), values[0] if values else None)


def _forward_values(tape, ops):
    """``{tensor id: ndarray}``: the forward value of every tensor the ops read or made that
    is still known (saved by the tape, or small enough for its record to keep)."""
    values = {}
    for op in ops:
        n_in, n_out = len(op.input_ids), len(op.output_ids)
        note = note_of(tape, op)
        kept = note.values if note is not None and note.values is not None else ()
        kept_in, kept_out = (op.saved or (None, None))[:2]   # (None once released)
        saved = list(kept_in or (None,) * n_in) + list(kept_out or (None,) * n_out)
        for k, i in enumerate(op.input_ids + op.output_ids):
            if i in values:
                continue
            v = saved[k] if k < len(saved) and saved[k] is not None else (
                kept[k] if k < len(kept) else None)
            if v is not None and not isinstance(v, tuple):
                values[i] = np.asarray(v)
    return values


def _forward_origin(ops, upstream, values):
    """Where the forward pass first held a NaN (else an infinity) on the way to the target:
    ``("data", op, k, value)``, input ``k`` of ``op`` held one and no recorded op made it
    (data, a constant, a Variable; an infinity there that ``op`` turns into NaN too, as inf
    * 0 in a matmul), or ``("op", op, index, value)``, ``op`` made one from inputs without
    one (``index``: the element of its first such output; a softmax over a row masked with
    -inf makes a NaN from infinities). None if neither (or the values are no longer known).
    A NaN is looked for first: an infinity in a mask is often meant."""
    produced = {i for op in ops for i in op.output_ids}
    nan = _origin_of(ops, upstream, values, produced, _has_nan)
    if nan is None:
        return None
    inf = _origin_of(ops, upstream, values, produced, lambda v: not _finite(v))
    if nan is False:
        return inf or None
    # A NaN made from an infinity that an op made before it (exp overflowed, then inf / inf):
    # that op is where it began. (An infinity in the data, a mask, is often meant.)
    if inf and inf[0] == "op" and _op_number(ops, inf[1]) < _op_number(ops, nan[1]):
        return inf
    return nan


def _has_nan(value):
    value = np.asarray(value)
    return value.dtype.kind in "fc" and bool(np.isnan(value).any())


def _origin_of(ops, upstream, values, produced, bad):
    """``_forward_origin`` for the values that ``bad`` finds; False if none on the way is."""
    for op in ops:
        if not any(o in upstream for o in op.output_ids):
            continue
        ins = [values.get(i) for i in op.input_ids]
        leaves = [(k, v) for k, (i, v) in enumerate(zip(op.input_ids, ins))
                  if v is not None and i not in produced]
        for k, v in leaves:
            if bad(v):
                return ("data", op, k, _first_bad(v, bad)[1])
        for o in op.output_ids:
            v = values.get(o)
            if v is not None and bad(v):
                if any(v_in is None or bad(v_in) for v_in, dt in
                       zip(ins, op.input_dtypes) if dt.kind in "fc"):
                    return None   # (an input not known: where it began is not known)
                for k, v_in in leaves:
                    if not _finite(v_in):
                        return ("data", op, k, _first_bad(v_in)[1])
                index, value = _first_bad(v, bad)
                return ("op", op, index, value)
    return False


def _held_as(frame, value):
    """The name under which ``frame`` (the learner's code) holds an array or Tensor equal to
    ``value`` (NaN equal to NaN), or None: what a NaN from the data is called there."""
    if frame is None:
        return None
    for key, held in list(frame.f_locals.items()):
        if key.startswith("_") or not isinstance(held, (np.ndarray, Tensor)):
            continue
        held = np.asarray(held)
        if held.shape == value.shape and held.dtype.kind in "fc" and np.array_equal(
                held, value, equal_nan=True):
            return key
    return None


def _first_bad(value, bad=None):
    """``(index, element)`` of the first NaN or infinity in ``value`` (the first NaN, if
    ``bad`` is ``_has_nan``)."""
    value = np.asarray(value)
    wrong = np.isnan(value) if bad is _has_nan else ~np.isfinite(value)
    index = tuple(int(i) for i in np.argwhere(wrong)[0]) if value.ndim else ()
    return index, value[index]


def _reads_non_finite(op, values):
    """True if the forward value of one of ``op``'s inputs holds a NaN or an infinity."""
    return any(i in values and not _finite(values[i]) for i in op.input_ids)


def _forward_story(tape, ops, origin, values, names, targets, frame=None):
    """The forward pass held a NaN or inf before any gradient was computed: say where."""
    kind, op, where, bad = origin
    ref = _op_ref(tape, ops, op)
    fname = _fname(op)
    value = _target_value(targets)
    reached = (f" (the target is {_value_text(value)})" if value is not None
               and not _finite(value) else "")
    if kind == "data":
        i = op.input_ids[where]
        v = values[i]
        name = names(i, None)
        if name is None or is_fallback(name):
            name = _held_as(frame, v) or name
        at = f" at {_index_text(_first_bad(v)[0])}" if v.ndim else ""
        variable = next((w for w in getattr(tape, "watched", ()) if w.id == i
                         and isinstance(w, Variable)), None)
        if variable is not None:
            return (f"no derivative is to blame: the Variable {name} already holds {_num(bad)}"
                    f"{at} before the tape's first op, so the forward pass{reached} and the "
                    "gradients computed from it are not finite either. An earlier update put "
                    "it there (often a training step with a NaN or inf gradient, or a "
                    "learning rate too large); print the loss at every step, or call "
                    "mt.debugging.enable_check_numerics(), to find the step that first made it "
                    "NaN, and give the Variable a finite value again")
        named = name is not None and not is_fallback(name)
        who = f"the input {name}" if named else f"an input of {fname}"
        code = name if named and name.isidentifier() else "x"
        return (f"no derivative is to blame: {who} already holds {_num(bad)}{at} before any "
                f"op of the tape (it comes from the data or a constant, not from an op the "
                f"tape recorded); {fname} ({ref}) reads it, so the forward pass{reached} and "
                "every gradient computed from it are not finite either, in TensorFlow too. "
                f"Check the data with np.isnan({code}).any() and np.isinf({code}).any(), and "
                "drop or replace those entries (np.nan_to_num, or "
                f"mt.where(mt.math.is_nan({code}), 0.0, {code})) before they reach the model")
    made = _made_by(tape, ops, op, where, bad, values, names)
    fix = _fix_of(op, made)
    note = note_of(tape, op)
    inner = ""
    if note is not None and note.backward_of is not None:
        inner = (". That op belongs to a gradient computed while this tape recorded (a first "
                 "derivative): that gradient is not finite itself, so explain it first, with "
                 "the inner tape and its target")
    return (f"the forward pass already went wrong, before any gradient: {made}, and the ops "
            f"after it carry it on{reached}; a gradient computed from a NaN or an infinity is "
            "not finite either, in TensorFlow too. "
            + (f"The usual fix: {fix}" if fix else _GENERIC_FIX[0].upper() + _GENERIC_FIX[1:])
            + inner)


def _target_note(tape, target, source, ops, frame):
    """``"; its value is finite, but the target itself is nan ..."``: a gradient that is
    finite although the target's forward value is not (the log of a negative sigma, whose
    derivative 1/sigma is finite); ``""`` if the target is finite."""
    targets = [t for t in flatten(target) if isinstance(t, Tensor)]
    value = _target_value(targets)
    if value is None or _finite(value):
        return ""
    head = (f"; its value is finite, but the target itself is {_value_text(value)} in the "
            "forward pass")
    values = _forward_values(tape, ops)
    upstream = set()
    for t in targets:
        upstream |= _upstream(ops, t.id)
    origin = _forward_origin(ops, upstream, values)
    if origin is None:
        return head + (" (mt.debugging.enable_check_numerics() stops at the op that makes "
                       "it and names its line)")
    kind, op, where, bad = origin
    names = _Names(tape, targets, source)
    if kind == "data":
        i = op.input_ids[where]
        name = names(i, None)
        if name is None or is_fallback(name):
            name = _held_as(frame, values[i]) or f"an input of {_fname(op)}"
        return head + f": {name} already holds {_num(bad)} before any op of the tape"
    made = _made_by(tape, ops, op, where, bad, values, names)
    fix = _fix_of(op, made)
    return head + f": {made}" + (f"; the usual fix: {fix}" if fix else "")


def _made_by(tape, ops, op, where, bad, values, names):
    """``exp (op #1, line 6: e = mt.exp(s)) at s[1] = 100.0 gives inf: the result is larger
    than float32 can hold ...``: ``op`` made the first NaN or inf of the forward pass."""
    at = _inputs_at(tape, op, where, values, names, op.output_shapes[0])
    limit = ""
    if np.isinf(bad) and all(v is not None and _finite(v) for v in
                             (values.get(i) for i in op.input_ids)) and op.type in (
                                 "Exp", "Mul", "Square", "Pow", "AddV2", "Sum", "MatMul",
                                 "BatchMatMulV2", "Prod", "Sub"):
        dtype = op.output_dtypes[0]
        limit = (f": the result is larger than {dtype.name} can hold (about "
                 f"{np.finfo(dtype).max:.2g})")
        if op.type == "Exp":
            limit += f", as exp of anything above {np.log(np.finfo(dtype).max):.1f} is"
    elif np.isnan(bad):
        ins = [values.get(i) for i in op.input_ids]
        if any(v is not None and not _finite(v) for v in ins):
            limit = (" from an infinite input (inf - inf, 0 * inf, inf / inf, and a softmax "
                     "over entries that are all -inf, are NaN)")
        elif op.type in ("Log", "Sqrt", "Pow", "Log1p") and ins and ins[0] is not None and (
                np.asarray(ins[0]).size == 1 or np.shape(ins[0]) == op.output_shapes[0]):
            x = _at(ins[0], where)
            if x is not None and x < (-1 if op.type == "Log1p" else 0):
                limit = (f": the {'square root' if op.type == 'Sqrt' else _fname(op)} of a "
                         "negative number is NaN")
    return f"{_fname(op)} ({_op_ref(tape, ops, op)}){at} gives {_num(bad)}{limit}"


def _finite(value):
    """True unless ``value`` (an array, a ``(min, mean, max)`` summary, or None: unknown)
    holds a NaN or an infinity."""
    if value is None:
        return True
    if isinstance(value, tuple):
        return all(np.isfinite(v) for v in value)
    value = np.asarray(value)
    return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())


def _walk(tape, target, source, ops, seed=None):
    """``(the source's gradient, steps)``: the steps ``(op, output gradients, input
    gradients)`` of ``backward_steps`` (arrays; None where there is none), run again on the
    tape's ops when they still hold what their gradients need; else read from the record of
    the tape's last backward pass, if it was for this target and source. None if neither.
    ``seed``: the target's cotangent (an ndarray; ones by default), on a tape that still
    holds its values."""
    from ..engine import recording
    from ..engine.backward import backward_steps, gradient_value
    targets = [t for t in flatten(target) if isinstance(t, Tensor) and t.dtype.kind == "f"]
    if not targets:
        return None
    if not tape.released and not recording.tapes_recording:
        grads = {}
        for t in targets:
            ones = Tensor(np.ones(t.shape, t.dtype) if seed is None else np.array(seed))
            grads[t.id] = ones if t.id not in grads else grads[t.id] + ones
        steps = []
        checking, recording.check_numerics = recording.check_numerics, False

        def arrays(gs):
            return [None if g is None else np.asarray(gradient_value(g)) for g in gs]
        try:
            with np.errstate(all="ignore"):
                for op, out_grads, in_grads in backward_steps(ops, grads, {source.id}):
                    steps.append((op, arrays(out_grads), arrays(in_grads)))
        except (LookupError, TypeError, ValueError, RuntimeError):
            return None
        finally:
            recording.check_numerics = checking
        final = grads.get(source.id)
        return (None if final is None else np.asarray(gradient_value(final))), steps
    if seed is not None:
        return None
    from .record import record_of
    record = record_of(tape)
    last = record.last_pass
    if (last is None or source.id not in last.gradients
            or any(t.id not in last.seeds for t in targets)):
        return None
    notes = [(record.note(op), op) for op in ops]
    by_seq = {note.seq: op for note, op in notes if note is not None}
    reached = last.reached
    # (A gradient made of several large contributions was not kept: unknown, not missing.)
    steps = [(by_seq[seq], [_UNKNOWN if i in reached and reached[i] is None else reached.get(i)
                            for i in by_seq[seq].output_ids],
              [last.contributions.get((seq, k)) for k in range(len(by_seq[seq].input_ids))])
             for seq in last.visited if seq in by_seq]
    final = last.gradients[source.id]
    return (None if final is None else np.asarray(final)), steps


def _value_text(value):
    """``nan``, ``inf``, ``0.0``, or a short array on one line."""
    if isinstance(value, tuple):
        return "between {:g} and {:g}".format(value[0], value[2])
    value = np.asarray(value)
    if value.size == 1:
        return _num(value.reshape(-1)[0])
    if value.size <= 6:
        return " ".join(np.array2string(value, separator=", ").split())
    return f"an array of shape {value.shape} with NaN or inf in it"


def _num(v):
    """A number as NumPy prints it in its own dtype (``0.33333334`` for a float32, not
    ``0.3333333432674408``)."""
    if isinstance(v, np.generic):
        if np.iscomplexobj(v):
            v = v.real
        return str(v)
    return repr(v)


def _at(value, index):
    """``value[index]`` (a NumPy scalar of its dtype) if ``value`` is an array with that
    element (a value of size 1 broadcasts), else None."""
    if value is None or isinstance(value, tuple):
        return None
    value = np.asarray(value)
    if value.size == 1:
        return value.reshape(-1)[0]
    try:
        return value[index]
    except (IndexError, TypeError, ValueError):
        return None


def _index_text(index):
    """``[1, 0]``."""
    return "[" + ", ".join(str(i) for i in index) + "]"


def _element(name, index, shape):
    """``x[1]`` for element ``index`` of a tensor called ``name`` (``name`` for a scalar)."""
    if not shape or not index or int(np.prod(shape)) == 1:
        return name
    if not re.fullmatch(r"[\w.\[\]]+", name):
        name = f"({name})"
    return name + _index_text(index)


def _inputs_at(tape, op, index, values, names, shape, only=None):
    """`` at x[1] = 2.0, counts[1] = 0.0``: ``op``'s inputs at element ``index`` of a value
    of ``shape`` (the inputs of that shape, or of size 1); ``""`` if none is known. ``only``:
    just that input."""
    parts = []
    for j, i in enumerate(op.input_ids):
        if only is not None and j != only:
            continue
        v = values.get(i) if values is not None else None
        if v is None:
            v = _input_value(tape, op, j)
        if v is None or not (np.shape(v) == tuple(shape) or np.size(v) == 1):
            continue
        x = _at(v, index)
        name = names(i)
        if x is not None and np.asarray(x).dtype.kind in "fc" and not _is_number(name):
            parts.append(f"{_element(name, index, np.shape(v))} = {_num(x)}")
    return " at " + ", ".join(parts) if parts else ""


def _is_number(label):
    """True for a constant's label that is its value (``10.0``): no need to say ``10.0 =
    10.0``."""
    try:
        float(label)
    except (TypeError, ValueError):
        return False
    return True


def _fname(op):
    """The learner's function for ``op`` (``log``), as ``_FUNCTIONS`` names it."""
    if op.type == "CustomGradient":
        return (op.attrs or {}).get("function", "a function")
    if op.type not in _FUNCTIONS and op.type.endswith("Grad") and op.type[:-4] in _FUNCTIONS:
        return f"the gradient of {_FUNCTIONS[op.type[:-4]]} ({op.type})"   # (SqrtGrad)
    return _FUNCTIONS.get(op.type, op.type)


def _fix_of(op, made=""):
    """The usual fix for a NaN or inf made by ``op`` (or by its gradient op: SqrtGrad), else
    None; ``made``: what ``_made_by`` said of it (the log of a negative number)."""
    if "of a negative number" in made:
        return ("keep the input positive: for a scale such as a standard deviation, learn its "
                "log (sigma = mt.exp(log_sigma)) or use mt.nn.softplus(raw) + 1e-6")
    fix = _FIXES.get(op.type)
    if fix is None and op.type.endswith("Grad"):
        fix = _FIXES.get(op.type[:-4])
    return fix


def _input_value(tape, op, k):
    """The value of input ``k`` of ``op``: its saved Tensor, else the small value the tape's
    record kept (None if neither)."""
    try:
        return np.asarray(op.inputs[k])
    except (RuntimeError, ValueError, IndexError, AttributeError):
        pass
    note = note_of(tape, op)
    return None if note is None or note.values is None else note.values[k]


def _local_derivative(tape, op, k, index):
    """The derivative of an elementwise ``op``'s output with respect to input ``k`` at
    ``index``, computed again from the op's forward at its recorded inputs (None if it
    cannot be)."""
    from ..engine.registry import lookup_forward
    from ..engine.tape import GradientTape
    forward = lookup_forward(op.type)
    if forward is None or len(op.output_ids) != 1 or op.input_shapes[k] != op.output_shapes[0]:
        return None
    values = [_input_value(tape, op, j) for j in range(len(op.input_ids))]
    if any(v is None for v in values):
        return None
    from ..engine import recording
    checking, recording.check_numerics = recording.check_numerics, False
    try:
        with np.errstate(all="ignore"):
            inputs = [Tensor(np.array(v)) for v in values]
            with GradientTape() as tape:
                tape.watch(inputs[k])
                out = forward(op, *inputs)
            d = tape.gradient(out, inputs[k])
    except Exception:       # (a forward that needs more than its inputs: no detail)
        return None
    finally:
        recording.check_numerics = checking
    return None if d is None else _at(np.asarray(d), index)


def _backward_story(tape, ops, steps, n, k, names, targets, clause="", seed_text=None):
    """``op`` (step ``n`` of the walk) sent a non-finite gradient to its input ``k``: which
    op, at which line, the local derivative and upstream gradient that multiplied, and the
    usual fix; ``clause`` follows the numbers; ``seed_text``: what seeded the walk (the
    target's ones by default)."""
    op, outs, ins = steps[n]
    fname = _fname(op)
    x_name = names(op.input_ids[k])
    g = ins[k]
    index = None
    if not isinstance(g, tuple):
        g = np.asarray(g)
        index = _first_bad(g)[0]
    result = _at(g, index) if index is not None else None
    upstream = _at(outs[0], index) if index is not None and outs else None
    local = _local_derivative(tape, op, k, index) if index is not None else None
    at = (_inputs_at(tape, op, index, None, names, op.input_shapes[k])
          if index is not None else "")
    wrt = (f" with respect to {x_name}"
           if len(op.input_ids) > 1 and op.type != "CustomGradient" else "")
    # Who sent the upstream gradient: the one visited op that uses the output, or the target.
    visited = [s[0] for s in steps[:n]]
    users = [o for o in visited if op.output_ids[0] in o.input_ids]
    target_ids = {t.id for t in targets}
    if op.output_ids[0] in target_ids and not users:
        sender = seed_text or "the seed of the target (ones)"
    elif len(users) == 1:
        sender = f"{_fname(users[0])} (op #{_op_number(ops, users[0])})"
    else:
        sender = "the ops that use its output"
    known = upstream is not None and result is not None
    infinite = local is not None and not np.isfinite(local)
    # A finite derivative times a finite gradient (or a sum of such products, as in a
    # matmul) that is too large for the dtype: an overflow, not a singular derivative.
    overflow = (known and op.type != "CustomGradient" and np.isfinite(upstream)
                and np.isinf(result) and (local is None or np.isfinite(local))
                and all(_finite(_input_value(tape, op, j)) for j in range(len(op.input_ids))))
    if op.type == "CustomGradient":
        story = (f"the gradient function that {fname} defines with mt.custom_gradient{at} "
                 f"turned the finite gradient {_num(upstream)} that {sender} sent into "
                 f"{_num(result)}" if known else
                 f"the gradient function that {fname} defines with mt.custom_gradient gave "
                 f"{_value_text(g)}")
    elif known and local is not None and (infinite or overflow):
        story = (f"{fname}{at} has derivative {_num(local)}{wrt}; {sender} sends it "
                 f"{_num(upstream)}; {_num(local)} * {_num(upstream)} = {_num(result)}")
        if overflow:
            dtype = np.asarray(g).dtype
            story += (f", larger than {dtype.name} can hold (about "
                      f"{np.finfo(dtype).max:.2g})")
    elif known:
        story = (f"the gradient of {fname}{at} turned the finite gradient {_num(upstream)} "
                 f"that {sender} sent into {_num(result)}")
        if overflow:
            dtype = np.asarray(g).dtype
            story += (f", larger than {dtype.name} can hold (about "
                      f"{np.finfo(dtype).max:.2g})")
    else:
        story = f"the gradient of {fname} gave {_value_text(g)}"
    where = f" ({_op_ref(tape, ops, op)})"
    from_where = (upstream == 0.0 and len(users) == 1 and users[0].type == "SelectV2")
    if op.type == "CustomGradient":
        fix = ("check that function's gradient at these values: make it return a finite "
               "value there (an epsilon, mt.math.divide_no_nan, or the double mt.where)")
    elif from_where:
        fix = _double_where(tape, op, names)
    elif overflow:
        fix = _diverged(tape, names) or _OVERFLOW_FIX
    else:
        fix = "the usual fix: " + _fix_of(op) if _fix_of(op) else _GENERIC_FIX
    if op.type == "CustomGradient":
        why = "minitape runs that gradient function as it is written, as TensorFlow does"
    elif infinite and np.isnan(local):
        why = ("A derivative that is itself NaN (such as 0 / 0) gives NaN whatever it is "
               "multiplied by, in TensorFlow too")
    elif infinite and upstream == 0.0:
        why = "A zero gradient times an infinite derivative is NaN, in TensorFlow too"
    elif infinite:
        why = ("An infinite derivative makes the gradient infinite, and NaN where it meets a "
               "zero later, in TensorFlow too")
    elif overflow and _diverged(tape, names):
        why = ("Numbers near the largest the dtype holds overflow at the next product, in "
               "TensorFlow too")
    elif overflow:
        why = ("A gradient multiplied at every step of a long chain can pass the largest "
               "number the dtype holds, in TensorFlow too")
    else:
        why = "TensorFlow computes the same"
    if op.type == "CustomGradient":
        fname = f"the gradient function of {fname}"
    return (f"the first step of the backward pass that produced NaN or inf is {fname}{where}: "
            f"{story}{clause}. {why}; {fix}")


def _diverged(tape, names):
    """``"w has grown to -3.9e+36: ..."`` when a Variable the tape read holds numbers so
    large (beyond 1e18) that a training loop has diverged, else ``""``."""
    for w in getattr(tape, "watched", ()):
        if not isinstance(w, Variable) or w.dtype.kind != "f":
            continue
        value = np.asarray(w.numpy())
        if value.size and np.isfinite(value).all() and np.abs(value).max() > 1e18:
            big = value.reshape(-1)[np.argmax(np.abs(value))]
            return (f"{names(w.id, 'a Variable')} has grown to {big:.2g}, as it does when "
                    "the steps of a training loop overshoot (it diverged): lower the learning "
                    "rate (try 10 times smaller), scale the inputs down, and watch the loss at "
                    "every step")
    return ""


def _double_where(tape, op, names):
    """The double-where fix for ``op``, written with the learner's names where it can be."""
    def code(k, fallback):
        name = names(op.input_ids[k])
        return name if name.isidentifier() and not is_fallback(name) else fallback
    head = ("the usual fix is the double where: make the branch where does not choose safe "
            "too, so that its derivative is finite there, e.g. ")
    v = code(0, "x")
    if op.type in ("Log", "Sqrt", "Reciprocal"):
        return head + (f"mt.where({v} > 0.0, mt.math.{_fname(op)}(mt.where({v} > 0.0, {v}, "
                       "1.0)), 0.0)")
    exponent = _input_value(tape, op, 1) if op.type == "Pow" else None
    if exponent is not None and np.size(exponent) == 1:
        e = _num(np.asarray(exponent).reshape(-1)[0])
        return head + f"mt.where({v} > 0.0, mt.where({v} > 0.0, {v}, 1.0) ** {e}, 0.0)"
    if op.type == "RealDiv":
        d = code(1, "d")
        return head + (f"mt.where({d} != 0.0, {v} / mt.where({d} != 0.0, {d}, 1.0), 0.0), "
                       f"or mt.math.divide_no_nan({v}, {d}), which does just that")
    return ("the usual fix is the double where: feed the op a safe value where its result is "
            "not chosen (an inner mt.where), so that its derivative is finite there")


def _upstream(ops, target_id) -> set:
    """Ids the target depends on through recorded ops (a backward sweep, no recursion)."""
    need = {target_id}
    for op in reversed(ops):
        if any(o in need for o in op.output_ids):
            need.update(op.input_ids)
    return need


def _broken_by_pause(tape, ops, produced, upstream):
    """If a leaf the target depends on was made in a stop_recording block or before a reset."""
    watched = {w.id for w in tape.watched}
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
