"""The learner's own names for tensors: ``y`` for the result of ``y = x * x``.

When an op is recorded, the tape keeps a reference to the learner's line that made it
(``Operation.origin``: a code object and an instruction offset). Here, when a drawing asks,
that reference becomes a name, by these rules (the first that applies wins):

1. an explicit ``name=`` (``mt.Variable(3.0, name="x")``);
2. the variable the result was assigned to: ``y = x * x`` labels the ``Mul`` output ``y``,
   ``a, b = mt.split(x, 2)`` labels the two outputs ``a`` and ``b``, and
   ``x = mt.Variable(3.0)`` labels the Variable ``x``;
3. for a result inside a larger expression, the exact text of the sub-expression that made
   it when it is short: in ``z = mt.math.sin(x * x)`` the ``Mul`` output is ``x * x``
   (Python 3.11's ``co_positions`` gives the instruction's columns);
4. a scalar constant the code wrote as a number (the ``1.0`` of ``w = y + 1.0``): its value;
5. otherwise ``t1``, ``t2``, ... counted per drawing.

One line can run several ops (``mt.nn.softmax`` computes an ``exp``, a sum and a division;
``model(x)`` runs every layer): only the last op recorded from that instruction made its
value, so only it takes the assigned name or the sub-expression's text; the others are
``t1``, ``t2``, ...

``tensor_labels`` is the one function that decides; drawings, ``explain``, the player and
``check_tape`` all use its answer (through ``TapeGraph``'s ``TensorNode.label``).
"""

from __future__ import annotations

import ast
import linecache

from ..recording import source_span

MAX_EXPRESSION = 24   # longer sub-expressions are not used as labels


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


def _span_matches(node, indent, start, end):
    return (start is not None and node.col_offset + indent == start
            and node.end_col_offset + indent == end and node.lineno == node.end_lineno == 1)


def _assigned_names(op, n_outputs, lines):
    """The names an assignment on ``op``'s line gives to the last outputs of that line, or
    None: ``y = ...`` names one, ``a, b = ...`` two (at most ``n_outputs``)."""
    span = source_span(op)
    if span is None:
        return None
    filename, line, start, end = span
    _, indent, stmt = lines.statement(filename, line)
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


def _expression_text(op, lines):
    """The exact source text of the instruction that made ``op`` when it is short
    (``x * x``), else None."""
    span = source_span(op)
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


def tensor_labels(ops, tensors, live, names, constants=None):
    """Decide every tensor's label for one drawing.

    Args:
        ops: the recorded Operations drawn, in execution order.
        tensors: the tensor ids drawn, in order of first appearance (for ``t1``, ``t2``).
        live: tensor id -> the Tensor/Variable object when the drawing has it (watched
            tensors, targets, sources): where a constant or Variable was made.
        names: tensor id -> the explicit ``name=`` (None where there is none).
        constants: optional tensor id -> the text of a scalar constant's value (``1.0`` in
            ``w = y + 1.0``), used when the code gives the tensor no name.

    Returns:
        dict tensor id -> label.
    """
    lines = _Lines()
    from_code = {}
    k = 0
    while k < len(ops):            # one group of consecutive ops per line of code
        end = k + 1
        while end < len(ops) and ops[end].origin == ops[k].origin:
            end += 1
        group = ops[k:end]
        k = end
        if group[0].origin is None:
            continue
        outputs = [i for op in group for i in op.output_ids]
        # The statement names the group's last outputs (``a, b = mt.unstack(x)``: two ops,
        # one output each); each op's own sub-expression names the rest, when short.
        assigned = _assigned_names(group[-1], len(outputs), lines)
        if assigned is not None:
            for i, name in zip(outputs[len(outputs) - len(assigned):], assigned):
                from_code.setdefault(i, name)
        # The sub-expression's text names what the expression computed: the last op's
        # output (``model(x)`` runs many ops; only its result is ``model(x)``).
        last = group[-1]
        if len(last.output_ids) == 1:
            expression = _expression_text(last, lines)
            if expression is not None:
                from_code.setdefault(last.output_ids[0], expression)
    for i, obj in live.items():      # ``x = mt.Variable(3.0)``: the Variable is ``x``
        origin = getattr(obj, "_origin", None)
        if origin is not None and i not in from_code:
            assigned = _assigned_names(_Origin(origin), 1, lines)
            if assigned is not None:
                from_code[i] = assigned[0]
    labels, unnamed = {}, 0
    for i in tensors:
        explicit = names.get(i)
        if not isinstance(explicit, str) or explicit == "Variable":  # (the default name)
            explicit = None
        label = explicit or from_code.get(i) or (constants or {}).get(i)
        if label is None:
            unnamed += 1
            label = f"t{unnamed}"
        labels[i] = label
    return labels


class _Origin:
    """Something with an ``.origin``, for ``source_span`` (a constant's or Variable's)."""

    __slots__ = ("origin",)

    def __init__(self, origin):
        self.origin = origin
