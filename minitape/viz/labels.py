"""The learner's own names for tensors: ``y`` for the result of ``y = x * x``.

When an op is recorded, ``mt.viz``'s record of the tape (``record.py``) notes references to
the learner's lines that made it (``OpNote.origin``: code objects and instruction offsets,
the line that made the op first, then the lines that called it). Here, when a drawing asks,
they become a name, by these rules (the first that applies wins):

1. an explicit ``name=`` (``mt.Variable(3.0, name="x")``, ``mt.math.square(x, name="sq")``);
2. the variable the result was assigned to: ``y = x * x`` labels the ``Mul`` output ``y``,
   ``a, b = mt.split(x, 2)`` labels the two outputs ``a`` and ``b``, and
   ``x = mt.Variable(3.0)`` or ``x = mt.constant(3.0)`` (before the tape too) labels the
   tensor ``x``;
3. what a function returns takes the name its caller gives it: with ``return mt.reduce_mean(d)``
   inside ``loss_fn``, ``loss = loss_fn(y, y_hat)`` labels the result ``loss`` (a helper, a
   training step, a Keras layer's ``call``); inside the function its own names count;
4. for a result inside a larger expression, the exact text of the sub-expression that made
   it when it is short (at most ``MAX_EXPRESSION`` characters): in ``z = mt.math.sin(x * x)``
   the ``Mul`` output is ``x * x`` (Python 3.11's ``co_positions`` gives the columns);
5. a scalar constant the code wrote as a number (the ``1.0`` of ``w = y + 1.0``): its value;
6. otherwise, the result of an op is called by the op and its number in the drawing
   (``sin #3``), and any other tensor ``t1``, ``t2``, ... counted per drawing.

One line can run several ops (``mt.nn.softmax`` computes an ``exp``, a sum and a division;
``model(x)`` runs every layer): only the last op recorded from that instruction made its
value, so only it takes the assigned name or the sub-expression's text.

``tensor_labels`` is the one function that decides; drawings, ``explain``, the player and
``check_tape`` all use its answer (through ``TapeGraph``'s ``TensorNode.label``).
"""

from __future__ import annotations

import ast
import dis
import linecache
import re

from .record import created, source_span

MAX_EXPRESSION = 12   # longer sub-expressions are not used as labels (``sin #3`` instead)

# Short names of op types for unnamed results (``add #2``); others are lowercased.
_SHORT_OP = {"AddV2": "add", "RealDiv": "div", "BatchMatMulV2": "matmul", "MatMul": "matmul",
             "Neg": "neg", "SquaredDifference": "sqdiff"}


def is_fallback(label) -> bool:
    """True for a label the code did not give (``t3``, ``sin #3``, ``split #2[1]``)."""
    return bool(re.fullmatch(r"t\d+|\S+ #\d+(\[\d+\])?", label))


def op_label(op_type, number, k=None) -> str:
    """``sin #3``: an unnamed result of op ``#number`` (``split #2[1]``: its output ``k``)."""
    short = _SHORT_OP.get(op_type, op_type.lower())
    return f"{short} #{number}" if k is None else f"{short} #{number}[{k}]"


def float_text(v, digits=4) -> str:
    """``18.0``, ``0.3333``, ``1.5e-08``: short, and always recognisably a float."""
    text = f"{v:.{digits}g}"
    return text if any(c in text for c in ".eni") else text + ".0"


class _Lines:
    """Parsed source lines, cached for one drawing."""

    def __init__(self):
        self._cache = {}

    def statement(self, filename, line):
        """``(text, indent, ast statement or None)`` for one source line."""
        key = (filename, line)
        if key not in self._cache:
            text = linecache.getline(filename, line).rstrip("\n")
            stripped = text.lstrip()
            indent = len(text) - len(stripped)
            try:
                body = ast.parse(stripped).body
                stmt = body[0] if len(body) == 1 else None
            except SyntaxError:   # a line of a multi-line statement, a `with ...:` header
                stmt = None
            self._cache[key] = (text, indent, stmt)
        return self._cache[key]

    def instructions(self, code):
        """``code``'s instructions (``dis``), cached like the lines."""
        if code not in self._cache:
            self._cache[code] = list(dis.get_instructions(code))
        return self._cache[code]


def _span_matches(node, indent, start, end):
    return (start is not None and node.col_offset + indent == start
            and node.end_col_offset + indent == end and node.lineno == node.end_lineno == 1)


def _assigned_names(origin, n_outputs, lines):
    """The names an assignment at ``origin`` (one ``(code, offset)``) gives to the last
    outputs of that instruction, or None: ``y = ...`` names one, ``a, b = ...`` two (at most
    ``n_outputs``)."""
    span = source_span(origin)
    if span is None:
        return None
    filename, line, start, end = span
    text, indent, stmt = lines.statement(filename, line)
    if not text:   # no source to read (``python -c``, standard input, ``exec`` of a string)
        return _stored_name(origin, lines)
    target = None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        if start is None or _span_matches(stmt.value, indent, start, end):
            target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        if start is None or _span_matches(stmt.value, indent, start, end):
            target = stmt.target
    elif isinstance(stmt, ast.AugAssign):   # y += x: the new y
        target = stmt.target
    if target is None:
        return None
    if isinstance(target, (ast.Tuple, ast.List)):
        names = [ast.unparse(e) for e in target.elts]
        return names if len(names) <= n_outputs else None
    return [ast.unparse(target)]


def _stored_name(origin, lines):
    """``[name]`` when the instruction right after ``origin`` stores its value in a name
    (``x = mt.Variable(0.0)`` compiles to the call, then ``STORE_NAME x``), else None: the
    bytecode says what the missing source line would."""
    code, lasti = origin
    following = next((i for i in lines.instructions(code) if i.offset > lasti), None)
    return [following.argval] if following is not None and following.opname in _STORES \
        else None


def _next_instruction(origin, lines):
    """The name of the instruction after ``origin``'s (``"RETURN_VALUE"``), or None."""
    code, lasti = origin
    return next((i.opname for i in lines.instructions(code) if i.offset > lasti), None)


_STORES = frozenset({"STORE_NAME", "STORE_FAST", "STORE_GLOBAL", "STORE_DEREF"})


def _returned(origin, lines):
    """True when the instruction at ``origin`` computes the whole value of a ``return``."""
    span = source_span(origin)
    if span is None:
        return False
    filename, line, start, end = span
    text, indent, stmt = lines.statement(filename, line)
    if not text:   # no source: the bytecode returns the value at once
        return _next_instruction(origin, lines) == "RETURN_VALUE"
    return (isinstance(stmt, ast.Return) and stmt.value is not None
            and _span_matches(stmt.value, indent, start, end))


def _names_from_code(frames, n_outputs, lines):
    """The names the learner's code gives to what the innermost of ``frames`` computed: its
    assignment, else, when it is a function's ``return``, what the caller assigns the call
    to (``loss = loss_fn(y, y_hat)``), climbing through callers that return it too."""
    for k, origin in enumerate(frames):
        names = _assigned_names(origin, n_outputs, lines)
        if names is not None:
            return names
        if k + 1 == len(frames) or not _returned(origin, lines):
            return None
    return None


def _expression_text(origin, lines):
    """The exact source text of the instruction at ``origin`` when it is short (``x * x``),
    else None."""
    span = source_span(origin)
    if span is None:
        return None
    filename, line, start, end = span
    if start is None or end is None:
        return None
    text, _, _ = lines.statement(filename, line)
    expression = " ".join(text[start:end].split())
    if expression and len(expression) <= MAX_EXPRESSION and expression.isprintable():
        return expression
    return None


def tensor_labels(ops, tensors, live, names, constants=None, origins=None):
    """Decide every tensor's label for one drawing.

    Args:
        ops: ``(Operation, OpNote or None, number in the drawing)`` of each op drawn, in
            execution order (the notes come from ``mt.viz``'s record of the tape).
        tensors: the tensor ids drawn, in order of first appearance (for ``t1``, ``t2``).
        live: tensor id -> the Tensor/Variable object when the drawing has it (watched
            tensors, targets, sources): where a constant or Variable was made.
        names: tensor id -> the explicit ``name=`` (None where there is none).
        constants: optional tensor id -> the text of a scalar constant's value (``1.0`` in
            ``w = y + 1.0``), used when the code gives the tensor no name.
        origins: optional tensor id -> where the learner made a constant or Variable that
            an op read (``TapeRecord.origins``).

    Returns:
        dict tensor id -> label.
    """
    lines = _Lines()
    from_code = {}
    produced = {}      # output id -> (op type, number, output index or None)
    for op, _, number in ops:
        for k, i in enumerate(op.output_ids):
            produced.setdefault(i, (op.type, number, None if len(op.output_ids) == 1 else k))
    k = 0
    while k < len(ops):            # one group of consecutive ops per instruction of code
        frames = _frames(ops[k])
        end = k + 1
        while end < len(ops) and frames and _frames(ops[end])[:1] == frames[:1]:
            end += 1
        group = [op for op, _, _ in ops[k:end]]
        k = end
        if not frames:
            continue
        outputs = [i for op in group for i in op.output_ids]
        # The statement names the group's last outputs (``a, b = mt.unstack(x)``: two ops,
        # one output each); each op's own sub-expression names the rest, when short.
        assigned = _names_from_code(frames, len(outputs), lines)
        if assigned is not None:
            for i, name in zip(outputs[len(outputs) - len(assigned):], assigned):
                from_code.setdefault(i, name)
        # The sub-expression's text names what the expression computed: the last op's
        # output (``model(x)`` runs many ops; only its result is ``model(x)``).
        last = group[-1]
        if len(last.output_ids) == 1:
            expression = _expression_text(frames[0], lines)
            if expression is not None:
                from_code.setdefault(last.output_ids[0], expression)
    made = dict(origins or {})
    for i in live:                   # ``x = mt.Variable(3.0)``: the Variable is ``x``
        origin = created(i)
        if origin is not None:
            made[i] = origin
    for i, origin in made.items():
        if i not in from_code:
            assigned = _assigned_names(origin[0], 1, lines)
            if assigned is not None:
                from_code[i] = assigned[0]
    labels, unnamed = {}, 0
    for i in tensors:
        explicit = names.get(i)
        if not isinstance(explicit, str) or explicit == "Variable":  # (the default name)
            explicit = None
        label = explicit or from_code.get(i) or (constants or {}).get(i)
        if label is None and i in produced:
            label = op_label(*produced[i])
        if label is None:
            unnamed += 1
            label = f"t{unnamed}"
        labels[i] = label
    return labels


def _frames(entry):
    note = entry[1]
    return note.origin if note is not None and note.origin else ()
