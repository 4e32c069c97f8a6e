"""The learner's own names for tensors: ``y`` for the result of ``y = x * x``.

When an op is recorded, ``mt.viz``'s record of the tape (``record.py``) notes references to
the learner's lines that made it (``OpNote.origin``: code objects and instruction offsets,
the line that made the op first, then the lines that called it). Here, when a drawing asks,
they become a name, by these rules (the first that applies wins):

1. an explicit ``name=`` (``mt.Variable(3.0, name="x")``, ``mt.math.square(x, name="sq")``);
2. the variable the result was assigned to: ``y = x * x`` labels the ``Mul`` output ``y``,
   ``a, b = mt.split(x, 2)`` labels the two outputs ``a`` and ``b``, ``y += x`` the new
   ``y`` (not ``x``), ``(p := x * x)`` ``p``, ``self.h = ...`` ``self.h``, a statement over
   several lines too (the whole file is parsed), and ``x = mt.Variable(3.0)`` or
   ``x = mt.constant(3.0)`` (before the tape too) labels the tensor ``x``; each element of a
   list bound to a name is that name indexed: ``xs = [mt.constant(1.0), ...]`` and
   ``ys = [w * x for x in xs]`` (or ``list(...)`` of a generator) give ``xs[0]``, ``ys[1]``;
   the elements of a comprehension bound to no name (``mt.add_n([a * b for ...])``, a dict
   or set comprehension, a generator) are called by their op and number, never all by the
   element's text;
3. what a function (or a lambda) returns takes the name its caller gives it: with
   ``return mt.reduce_mean(d)`` inside ``loss_fn``, ``loss = loss_fn(y, y_hat)`` labels the
   result ``loss`` (a helper, a training step, a Keras layer's ``call``); ``return a, b``
   into ``p, q = f(x)`` labels them ``p`` and ``q`` (into ``out = f(x)``: ``out[0]``,
   ``out[1]``); inside the function its own names count;
4. for a result inside a larger expression, the exact text of the sub-expression that made
   it when it is short (at most ``MAX_EXPRESSION`` characters): in ``z = mt.math.sin(x * x)``
   the ``Mul`` output is ``x * x`` (Python 3.11's ``co_positions`` gives the columns); what a
   helper returns into an expression is the call's text (``square(x)``);
5. what a Keras layer (a ``Module``) returned, when the code does not name it (``model(x)``
   runs every layer, and only the model's result is assigned): the layer's name, ``dense``,
   ``dense_1`` or its ``name=``; the results of a layer called twice are numbered as a
   rebound name's values;
6. a tensor no recorded op made and nothing above names (``h = mt.zeros(...)`` or
   ``sequence[t]`` made by an op the tape did not record): the text of the operand of the
   first recorded op that read it (``h`` in ``h @ w_hh``), when it is a name or a short
   expression that is not a number; data a call turned into a tensor deep inside it
   (``logits = model(X)``, ``loss_fn(Y, logits)``): the call's one argument that is a
   plain name naming nothing else;
7. a scalar constant the code wrote as a number (the ``1.0`` of ``w = y + 1.0``): its value;
8. a target or source that nothing above names (no recorded op made it: ``y = x ** 2`` of a
   Variable the tape did not watch): the name the code that asked for the drawing holds it
   under (``held``);
9. otherwise, the result of an op is called by the op and its number in the drawing
   (``sin #3``), and any other tensor ``t1``, ``t2``, ... counted per drawing.

One line can run several ops (``mt.nn.softmax`` computes an ``exp``, a sum and a division;
``model(x)`` runs every layer): only the last op recorded from one run of that instruction
made its value, so only it takes the assigned name or the sub-expression's text; a line
that ran a model and then computed outside it (``model.fit(x, y)``, ``view.step(1)``: a
training step) returns none of them, and names none. A loop runs an instruction again
(``for i in range(3): y = y * x``, ``for w in ws: y = w * x``): each run is a value of its
own.

A name bound to several values in turn (``u = x * 2.0`` then ``u = u * 2.0``, a loop's
``y = y * x``, ``y += x``) labels the last one, which the learner's variable holds; the
earlier ones are numbered in the order they were made: ``u₁``, ``u₂``, then ``u``. An
explicit ``name=`` is never numbered.

``tensor_labels`` is the one function that decides; drawings, ``explain``, the player and
``check_tape`` all use its answer (through ``TapeGraph``'s ``TensorNode.label``).
"""

from __future__ import annotations

import ast
import collections
import dis
import linecache
import re

from .record import code_positions, created, source_span

MAX_EXPRESSION = 12   # longer sub-expressions are not used as labels (``sin #3`` instead)

# Short names of op types for unnamed results (``add #2``), the name of the function a
# learner called where it differs from the op's (``mt.where`` records SelectV2, ``mt.stack``
# Pack); others are lowercased.
_SHORT_OP = {"AddV2": "add", "RealDiv": "div", "BatchMatMulV2": "matmul", "MatMul": "matmul",
             "Neg": "neg", "SquaredDifference": "sqdiff", "SelectV2": "where",
             "StopGradient": "stop_gradient", "Pack": "stack", "ConcatV2": "concat",
             "StridedSlice": "slice", "GatherV2": "gather", "AddN": "add_n",
             "LogSoftmax": "log_softmax", "ExpandDims": "expand_dims", "BiasAdd": "bias_add"}


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


_parsed: dict = {}
"""file name -> ``(its text, its bindings)``: each file is parsed once while it does not
change, whatever the number of drawings (the newest 64 files)."""


class _Lines:
    """Parsed source files, cached for one drawing."""

    def __init__(self):
        self._cache = {}

    def text(self, filename, line):
        """The text of one source line ("" when there is none)."""
        return linecache.getline(filename, line).rstrip("\n")

    def bindings(self, filename, line):
        """``(by_span, by_line)`` of the statements of ``filename`` around ``line``:

        ``by_span`` maps the exact position ``(line, end line, column, end column)`` of an
        expression to what the code does with its value: ``("names", [target, ...])`` when it
        is assigned (``y = ...``, ``a, b = ...``, ``y += ...``, ``(p := ...)``, each element
        of ``a, b = x * 2, x * 3``, each branch of ``y = a if c else b``),
        ``("return", None)`` when a function returns it, ``("return", k)`` when it is
        element ``k`` of a returned tuple; ``("operands",) + position`` maps an operator or
        call to the expressions it takes (``_operands``). ``by_line`` maps a line to the
        same for its one statement (for code compiled without columns).

        The whole file is parsed (a statement may span several lines); when it does not
        parse (a notebook cell with IPython syntax), the one line is.
        """
        if filename not in self._cache:
            source = "".join(linecache.getlines(filename))
            kept = _parsed.get(filename)
            if kept is not None and kept[0] == source:    # (the file has not changed)
                self._cache[filename] = kept[1]
            else:
                try:
                    found = _bindings(ast.parse(source), 0, 0) if source else None
                except (SyntaxError, ValueError):
                    found = None                  # parsed line by line below
                if len(_parsed) >= 64:
                    del _parsed[next(iter(_parsed))]
                _parsed[filename] = (source, found)
                self._cache[filename] = found
        found = self._cache[filename]
        if found is not None:
            return found
        key = (filename, line)
        if key not in self._cache:
            text = self.text(filename, line)
            stripped = text.lstrip()
            try:
                tree = ast.parse(stripped)
                self._cache[key] = _bindings(tree, line - 1, len(text) - len(stripped))
            except (SyntaxError, ValueError):  # a line of a multi-line statement, a header
                self._cache[key] = ({}, {})
        return self._cache[key]

    def instructions(self, code):
        """``code``'s instructions (``dis``), cached like the lines."""
        if code not in self._cache:
            self._cache[code] = list(dis.get_instructions(code))
        return self._cache[code]


def _bindings(tree, line_shift, col_shift):
    """``(by_span, by_line)`` for a parsed module (see ``_Lines.bindings``); ``line_shift``
    and ``col_shift`` place a single parsed line where it is in its file."""
    by_span, by_line = {}, {}

    def span(node):
        line, end_line, col, end_col = (node.lineno + line_shift, node.end_lineno + line_shift,
                                        node.col_offset, node.end_col_offset)
        if line_shift or col_shift:
            col, end_col = col + col_shift, end_col + col_shift
        return line, end_line, col, end_col

    def bind(value, target, key=None):
        if isinstance(target, (ast.Tuple, ast.List)):
            names = [ast.unparse(e) for e in target.elts]
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(names) \
                    and not any(isinstance(e, ast.Starred) for e in target.elts):
                for element, part in zip(value.elts, target.elts):
                    bind(element, part)   # (a, b = x * 2, x * 3; (a, b), c = f(x), y)
        else:
            names = [ast.unparse(target)]
            if isinstance(value, (ast.Tuple, ast.List)):   # xs = [mt.constant(1.0), ...]
                for k, element in enumerate(value.elts):
                    if not isinstance(element, ast.Starred):
                        by_span.setdefault(span(element), ("names", [f"{names[0]}[{k}]"]))
            elif isinstance(value, (ast.ListComp, ast.GeneratorExp)) or \
                    isinstance(value, ast.Call) and _is_list_of(value):
                # ys = [w * x for x in xs]: each element is ys[0], ys[1], ...
                by_span.setdefault(span(value.args[0].elt if isinstance(value, ast.Call)
                                        else value.elt),
                                   ("element", names[0], span(value)))
        meaning = ("names", names)
        by_span[key or span(value)] = meaning
        if isinstance(value, ast.IfExp):  # y = a if c else b: the branch taken is y
            bind(value.body, target)
            bind(value.orelse, target)
        return meaning

    for node in ast.walk(tree):
        meaning = None
        if isinstance(node, _COMPREHENSIONS):   # (one bound to a name is bound above)
            element = node.value if isinstance(node, ast.DictComp) else node.elt
            by_span.setdefault(span(element), ("element", None, span(node)))
        operands = _operands(node)
        if operands is not None:
            by_span.setdefault(("operands",) + span(node), operands)
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            meaning = bind(node.value, node.targets[0])
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            meaning = bind(node.value, node.target)
        elif isinstance(node, ast.AugAssign):      # y += x: the new y (the whole statement)
            meaning = bind(node.value, node.target, key=span(node))
            by_span[("operands",) + span(node)] = [node.target, node.value]
            by_span.pop(span(node.value), None)   # (``y * x`` of ``loss += y * x`` is not loss)
        elif isinstance(node, ast.NamedExpr):
            meaning = bind(node.value, node.target)
        elif isinstance(node, ast.Lambda) or isinstance(node, ast.Return) and node.value:
            value = node.body if isinstance(node, ast.Lambda) else node.value
            meaning = by_span[span(value)] = ("return", None)   # (a lambda returns its body)
            if isinstance(value, ast.Tuple):
                for k, element in enumerate(value.elts):
                    by_span[span(element)] = ("return", k)
        if meaning is not None and isinstance(node, ast.stmt):
            line = node.lineno + line_shift
            by_line[line] = None if line in by_line else meaning   # (one statement a line)
    return by_span, by_line


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _is_list_of(call):
    """Is ``call`` ``list(<generator>)`` or ``tuple(<generator>)`` (a list of elements in
    order, as a list comprehension makes)?"""
    return isinstance(call.func, ast.Name) and call.func.id in ("list", "tuple") \
        and len(call.args) == 1 and not call.keywords \
        and isinstance(call.args[0], ast.GeneratorExp)


def _operands(node):
    """The expressions whose values an operator or call at ``node`` takes, in the order an
    op takes its inputs (``a @ b``: ``a``, ``b``; ``mt.matmul(a, b)``: its positional
    arguments), or None."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args):
        return list(node.args)
    return None


def _operand_names(ops, lines, named, direct):
    """Labels for tensors no op on the tape made and nothing else names (a constant an
    unrecorded op made: ``h = mt.zeros((1, 4))``, ``sequence[t]`` of a tensor the tape does
    not watch), from the text of the operand of the first recorded op that read it:
    ``h @ w_hh`` reads ``h``. Only names and short expressions, never a number, and only
    for ops that are the whole work of their instruction (``direct``: ids of such ops)."""
    found = {}
    for op, note, _ in ops:
        if note is None or not note.origin or note.backward_of is not None:
            continue   # (a backward pass's ops read what ``tape.gradient(y, x)`` made)
        if id(op) not in direct:
            continue   # (inside ``model.fit(x, y)``, an op's inputs are not the call's)
        inputs = [i for i in op.input_ids if i not in named and i not in found]
        if not inputs:
            continue
        code, lasti = note.origin[0]
        positions = _positions(code, lasti)
        if positions is None or None in positions:
            continue
        by_span, _ = lines.bindings(code.co_filename, positions[0])
        operands = by_span.get(("operands",) + tuple(positions))
        if operands is None or len(operands) != len(op.input_ids):
            continue
        for i, operand in zip(op.input_ids, operands):
            if i not in inputs or _is_number(operand):
                continue
            text = _operand_text(operand)
            if text is not None:
                found[i] = (text, isinstance(operand, ast.Name))
    return found


def _operand_text(operand):
    """The label an operand's source text gives the tensor it made: the text when short
    (``h``, ``x[0]``), a long call by its function's name (``mt.ones_like(fake_output)`` is
    ``ones_like(…)``: the tensor it made is on no tape, so it has no op number), else None."""
    text = " ".join(ast.unparse(operand).split())
    if len(text) <= MAX_EXPRESSION and text.isprintable():
        return text
    if isinstance(operand, ast.Call):
        func = operand.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else None
        if name is not None and len(name) <= MAX_EXPRESSION:
            return f"{name}(…)"
    return None


def _call_argument_names(runs, lines, known, from_code, direct):
    """Labels for the data a call of a model or a loss read that nothing else names: in
    ``logits = model(X)`` or ``loss = loss_fn(Y, logits)``, the NumPy array ``X`` or ``Y``
    became a tensor inside the call, read by some op deep in it. When one run of the
    learner's call read exactly one tensor nothing names, and exactly one positional
    argument of the call is a plain name that names no other input, that is the name."""
    found = {}
    for group, frames in runs:
        if len(group) == 1 and id(group[0]) in direct:
            continue                  # (``_operand_names`` reads an op's own operands)
        made = {i for op in group for i in op.output_ids}
        unknown = list(dict.fromkeys(i for op in group for i in op.input_ids
                                     if i not in known and i not in made
                                     and i not in found))
        if len(unknown) != 1:
            continue
        code, lasti = frames[0]
        positions = _positions(code, lasti)
        if positions is None or None in positions:
            continue
        by_span, _ = lines.bindings(code.co_filename, positions[0])
        operands = by_span.get(("operands",) + tuple(positions))
        if not operands:
            continue
        labels = {from_code.get(i) for op in group for i in op.input_ids}
        names = [a.id for a in operands if isinstance(a, ast.Name) and a.id not in labels]
        if len(names) == 1:
            found[unknown[0]] = names[0]
            continue
        # ``loss_fn(mt.ones_like(fake_output), fake_output)``: the one argument that is
        # neither a name the drawing knows nor a number made the one unnamed tensor.
        others = [a for a in operands if not isinstance(a, ast.Name) and not _is_number(a)]
        if not names and len(others) == 1 and isinstance(others[0], ast.Call):
            text = _operand_text(others[0])
            if text is not None:
                found[unknown[0]] = text
    return found


def _is_number(node):
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant)


def _meaning(origin, lines):
    """What the code does with the value the instruction at ``origin`` computes (see
    ``_Lines.bindings``), or None."""
    code, lasti = origin
    positions = _positions(code, lasti)
    if positions is None:
        return None
    line, end_line, start, end = positions
    by_span, by_line = lines.bindings(code.co_filename, line)
    if start is None or end is None or end_line is None:
        return by_line.get(line)
    return by_span.get((line, end_line, start, end))


def _positions(code, lasti):
    """``(line, end line, column, end column)`` of the instruction at ``lasti`` (Python
    3.11's ``co_positions``), or None."""
    if hasattr(code, "co_positions"):
        positions = code_positions(code)
        index = lasti // 2
        if 0 <= index < len(positions) and positions[index][0] is not None:
            return positions[index]
    span = source_span((code, lasti))
    return None if span is None else (span[1], span[1], None, None)


def _assigned_names(origin, n_outputs, lines, element=None):
    """The names an assignment at ``origin`` (one ``(code, offset)``) gives to the last
    outputs of that instruction, or None: ``y = ...`` names one, ``a, b = ...`` two (at most
    ``n_outputs``). ``element``: the value is element ``element`` of a tuple a function
    returned (``a, b = f(x)`` names it ``a`` or ``b``, ``out = f(x)`` names it ``out[k]``)."""
    code, lasti = origin
    positions = _positions(code, lasti)
    if positions is None:
        return None
    if not lines.text(code.co_filename, positions[0]):
        # no source to read (``python -c``, standard input, ``exec`` of a string)
        names = _stored_name(origin, lines)
        return names if element is None else None
    meaning = _meaning(origin, lines)
    if meaning is None:
        return None
    if meaning[0] != "names":
        return None
    names = meaning[1]
    starred = [k for k, name in enumerate(names) if name.startswith("*")]
    if starred and element is None:      # first, *rest = mt.unstack(v): rest[0], rest[1]
        k = starred[0]
        middle = n_outputs - len(names) + 1
        if middle < 0:
            return None
        names = names[:k] + [f"{names[k][1:]}[{j}]" for j in range(middle)] + names[k + 1:]
    if element is not None:
        if len(names) == 1:
            return [f"{names[0]}[{element}]"]
        return [names[element]] if element < len(names) else None
    return names if len(names) <= n_outputs else None


def _stored_name(origin, lines):
    """``[name]`` when the instruction right after ``origin`` stores its value in a name
    (``x = mt.Variable(0.0)`` compiles to the call, then ``STORE_NAME x``), ``[a, b]`` when
    it unpacks it into names (``a, b = mt.split(v, 2)``: ``UNPACK_SEQUENCE 2``, then two
    stores), else None: the bytecode says what the missing source line would."""
    code, lasti = origin
    following = [i for i in lines.instructions(code) if i.offset > lasti][:9]
    if following and following[0].opname in _STORES:
        return [following[0].argval]
    if following and following[0].opname == "UNPACK_SEQUENCE":
        stores = following[1:1 + following[0].argval]
        if len(stores) == following[0].argval and all(i.opname in _STORES for i in stores):
            return [i.argval for i in stores]
    return None


def _next_instruction(origin, lines):
    """The name of the instruction after ``origin``'s (``"RETURN_VALUE"``), or None."""
    code, lasti = origin
    return next((i.opname for i in lines.instructions(code) if i.offset > lasti), None)


_STORES = frozenset({"STORE_NAME", "STORE_FAST", "STORE_GLOBAL", "STORE_DEREF"})


def _returned(origin, lines):
    """``(True, element)`` when the instruction at ``origin`` computes the whole value of a
    ``return`` (element None) or element ``element`` of a returned tuple, else
    ``(False, None)``."""
    code, lasti = origin
    positions = _positions(code, lasti)
    if positions is None:
        return False, None
    if not lines.text(code.co_filename, positions[0]):   # no source: the bytecode says
        return _next_instruction(origin, lines) == "RETURN_VALUE", None
    meaning = _meaning(origin, lines)
    if meaning is not None and meaning[0] == "return":
        return True, meaning[1]
    return False, None


def _names_from_code(frames, n_outputs, lines):
    """The names the learner's code gives to what the innermost of ``frames`` computed: its
    assignment, else, when it is a function's ``return``, what the caller assigns the call
    to (``loss = loss_fn(y, y_hat)``), climbing through callers that return it too; an
    element of a returned tuple takes its place among the caller's targets (``a, b = f(x)``).
    """
    element = None
    for k, origin in enumerate(frames):
        names = _assigned_names(origin, n_outputs, lines, element)
        if names is not None:
            return names
        if k + 1 == len(frames):
            return None
        returned, position = _returned(origin, lines)
        if not returned:
            return None
        if position is not None:
            if element is not None:       # (a tuple's element returned inside a tuple)
                return None
            element = position
    return None


def _element_of(frames, lines):
    """``(key, owner, scope)`` when the innermost of ``frames`` computed an element of a
    comprehension (``[w * x for x in xs]``), directly or through functions that return it
    (``[f(x) for x in xs]``), else None. ``key`` is the element's instruction, ``owner`` the
    name the comprehension is bound to (``ys`` in ``ys = [...]``) or None, ``scope``
    ``(codes, filename, span)``: the code objects that run the comprehension's statement
    and the comprehension's place, so that a later op of that statement outside it ends
    the count of its elements."""
    for k, origin in enumerate(frames):
        meaning = _meaning(origin, lines)
        if meaning is not None and meaning[0] == "element":
            code = origin[0]
            codes = {code}
            if k + 1 < len(frames) and code.co_name in _COMPREHENSION_CODES:
                codes.add(frames[k + 1][0])        # (Python 3.11: the comprehension's caller)
            return origin, meaning[1], (codes, code.co_filename, meaning[2])
        returned, element = _returned(origin, lines)
        if not returned or element is not None:
            return None
    return None


_COMPREHENSION_CODES = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})


def _outside(frames, scope, lines):
    """Did the innermost of ``frames`` run the statement of comprehension ``scope`` (see
    ``_element_of``) outside the comprehension (its element count ends there)?"""
    codes, filename, (line, end_line, col, end_col) = scope
    code, lasti = frames[0]
    if code not in codes:
        return False            # (a helper the element calls: still inside)
    positions = _positions(code, lasti)
    if positions is None or None in positions:
        return True
    start, end = (positions[0], positions[2]), (positions[1], positions[3])
    return not ((line, col) <= start and end <= (end_line, end_col))


def _expression_text(origin, lines):
    """The exact source text of the instruction at ``origin`` when it is short (``x * x``),
    else None."""
    span = source_span(origin)
    if span is None:
        return None
    filename, line, start, end = span
    if start is None or end is None:
        return None
    text = lines.text(filename, line)
    expression = " ".join(text[start:end].split())
    if expression and len(expression) <= MAX_EXPRESSION and expression.isprintable():
        return expression
    return None


def _call_text(frames, lines):
    """The short text of what the innermost of ``frames`` computed, as the learner's code
    that used it wrote it: a value a function returns is the call that asked for it
    (``square(y)`` rather than ``t * t`` inside ``square``) when that text is short; else the
    text of the returned expression itself, else None."""
    for k, origin in enumerate(frames[:-1]):
        returned, element = _returned(origin, lines)
        if not returned or element is not None:
            break
        text = _expression_text(frames[k + 1], lines)
        if text is not None:
            return text
    return _expression_text(frames[0], lines)


def tensor_labels(ops, tensors, live, names, constants=None, origins=None, held=None):
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
        held: optional tensor id -> the name the learner's code holds a target or source
            under, for one that nothing above names (no recorded op made it).

    Returns:
        dict tensor id -> label.
    """
    lines = _Lines()
    from_code = {}
    produced = {}      # output id -> (op type, number, output index or None)
    for op, _, number in ops:
        for k, i in enumerate(op.output_ids):
            produced.setdefault(i, (op.type, number, None if len(op.output_ids) == 1 else k))
    assigned_ids = set()     # the tensors named by an assignment (versions are numbered)
    direct = set()           # ops that are one run of an instruction on their own
    counts = {}              # a comprehension's element instruction -> (elements, scope)
    ops_notes = {id(op): note for op, note, _ in ops}
    runs = []                # (group, frames) of each run, for ``_call_argument_names``
    expressions = set()      # the op outputs called by the text of their sub-expression
    for group, frames in _instructions(ops):
        runs.append((group, frames))
        if len(group) == 1:
            direct.add(id(group[0]))
        for key, (_, scope) in list(counts.items()):
            if _outside(frames, scope, lines):
                del counts[key]            # (the statement went on: a new count next time)
        element = _element_of(frames, lines)
        if element is not None:
            # Each run is one element: ys[0], ys[1], ... when the comprehension is bound
            # to ys, else the op and its number (never the element's text, the same for all).
            # (Elements that read only older tensors, ``w * x`` over ``xs``, came as one
            # group: the element's ops repeat, one period per element.)
            key, owner, scope = element
            period = _period([op.type for op in group])
            for start in range(0, len(group), period):
                k = counts[key][0] if key in counts else 0
                counts[key] = (k + 1, scope)
                outputs = group[start + period - 1].output_ids
                if owner is not None and len(outputs) == 1 and outputs[0] not in from_code:
                    from_code[outputs[0]] = f"{owner}[{k}]"
                    assigned_ids.add(outputs[0])
            continue
        if _ran_several_things(group, ops_notes):
            continue     # (``model.fit(x, y)``: its last op, the loss, is not what it returns)
        outputs = [i for op in group for i in op.output_ids]
        # The statement names the group's last outputs (``a, b = mt.unstack(x)``: two ops,
        # one output each); each op's own sub-expression names the rest, when short.
        assigned = _names_from_code(frames, len(outputs), lines)
        if assigned is not None and len(assigned) == 1 and _is_list(group):
            assigned = [f"{assigned[0]}[{k}]" for k in range(len(outputs))]
        if assigned is not None:
            for i, name in zip(outputs[len(outputs) - len(assigned):], assigned):
                if i not in from_code:
                    from_code[i] = name
                    assigned_ids.add(i)
        # The sub-expression's text names what the expression computed: the last op's
        # output (``model(x)`` runs many ops; only its result is ``model(x)``).
        last = group[-1]
        if len(last.output_ids) == 1:
            expression = _call_text(frames, lines)
            if expression is not None and last.output_ids[0] not in from_code:
                from_code[last.output_ids[0]] = expression
                expressions.add(last.output_ids[0])
    made = dict(origins or {})
    for i in live:                   # ``x = mt.Variable(3.0)``: the Variable is ``x``
        origin = created(i)
        if origin is not None:
            made[i] = origin
    made_elements = {}     # ws = [mt.Variable(0.0) for _ in range(3)]: ws[0], ws[1], ...
    for i, origin in sorted(made.items()):
        if i not in from_code:
            assigned = _assigned_names(origin[0], 1, lines)
            if assigned is not None:
                from_code[i] = assigned[0]
                assigned_ids.add(i)
                continue
            element = _element_of(origin, lines)
            if element is not None and element[1] is not None:
                k = made_elements[element[0]] = made_elements.get(element[0], -1) + 1
                from_code[i] = f"{element[1]}[{k}]"
                assigned_ids.add(i)
    layer_outputs = _layer_outputs(ops)
    produced_ids = {i for op, _, _ in ops for i in op.output_ids}
    explicit_ids = {i for i, name in names.items() if isinstance(name, str)
                    and name != "Variable"}
    for i, (text, is_name) in _operand_names(
            ops, lines, produced_ids | explicit_ids | set(from_code), direct).items():
        if not is_name and i in (constants or {}):
            continue                   # (``x * float(k)``: its value, 2.0, says more)
        from_code[i] = text
        if is_name:
            assigned_ids.add(i)
    known = produced_ids | explicit_ids | set(from_code) | set(constants or {})
    for i, name in _call_argument_names(runs, lines, known, from_code, direct).items():
        from_code[i] = name
        if name.isidentifier():      # (a name is numbered by version; ``ones_like(…)`` not)
            assigned_ids.add(i)
    labels, unnamed = {}, 0
    for i in tensors:
        explicit = names.get(i)
        if not isinstance(explicit, str) or explicit == "Variable":  # (the default name)
            explicit = None
        label = explicit or from_code.get(i) or layer_outputs.get(i) or \
            (constants or {}).get(i) or (held or {}).get(i)
        if label is None and i in produced:
            label = op_label(*produced[i])
        if label is None:
            unnamed += 1
            label = f"t{unnamed}"
        labels[i] = label
    # One sub-expression run several times (``mt.sin(y)`` in a loop) made several values:
    # its text would call them all the same, so each is called by its op and number.
    texts = collections.Counter(labels[i] for i in tensors if i in expressions)
    for i in tensors:
        if i in expressions and texts[labels[i]] > 1 and labels[i] == from_code.get(i):
            labels[i] = op_label(*produced[i])
    _number_versions(labels, [i for i in tensors if i in assigned_ids and labels[i] ==
                              from_code[i]])
    # A layer called twice (a GAN's discriminator on real and on generated data): its
    # results are numbered as a rebound name's values are (``dense₁``, then ``dense``).
    _number_versions(labels, [i for i in tensors if i in layer_outputs and i not in from_code
                              and labels[i] == layer_outputs[i]])
    return labels


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def version_label(name, k) -> str:
    """``y₂``: the ``k``-th value a rebound name held (``version_label("y", 2)``)."""
    return name + str(k).translate(_SUBSCRIPTS)


def _number_versions(labels, assigned):
    """Tell apart the values one name was bound to in turn (``u = x * 2.0`` then
    ``u = u * 2.0``, a loop's ``y = y * x``, ``y += x``): the last keeps the name, as the
    learner's variable does, the earlier ones are numbered in the order they were made
    (``u₁``, ``u₂``, then ``u``). Tensor ids grow with time, so that order is theirs."""
    by_name = {}
    for i in assigned:
        by_name.setdefault(labels[i], []).append(i)
    for name, ids in by_name.items():
        for k, i in enumerate(sorted(ids)[:-1], start=1):
            labels[i] = version_label(name, k)


def _instructions(ops):
    """``(ops, frames)`` for each run of the code: the consecutive ops one execution of an
    instruction of the learner's code recorded (``mt.nn.softmax(x)`` records several), with
    the learner's frames that made them. A loop runs one instruction again and again
    (``for i in range(3): y = y * x``): consecutive runs of the same instruction are told
    apart when their ops repeat the same op types and each repetition reads what the one
    before made (``y`` of the run before) or a tensor made since (``_runs_again``), as long
    as no Module call started inside them (a ``Sequential`` of like layers repeats too, in
    one call). (``mt.unstack`` repeats its slices in one call, each reading the same input:
    one run.)"""
    k = 0
    while k < len(ops):
        frames = _frames(ops[k])
        end = k + 1
        while end < len(ops) and frames and _frames(ops[end])[:1] == frames[:1]:
            end += 1
        entries, k = ops[k:end], end
        if not frames:
            continue
        group = [op for op, _, _ in entries]
        period = len(group)
        calls = {note.module_calls if note is not None else () for _, note, _ in entries}
        backward = any(note is not None and note.backward_of is not None
                       for _, note, _ in entries)
        if backward:                           # (one ``gradient`` call: one run)
            yield group, frames
        elif len(calls) == 1:
            period = _repetition(group)
            for start in range(0, len(group), period):
                yield group[start:start + period], frames
        else:
            for run in _module_runs(entries):
                yield run, frames


def _module_runs(entries):
    """The runs of one instruction whose ops ran inside Module calls: a loop calls the same
    Module again (``for _ in range(3): h = layer(h)``), one call each run; anything else
    (``model(x)``: one call of a ``Sequential`` of several layers) is one run."""
    group = [op for op, _, _ in entries]
    calls = [note.module_calls if note is not None else () for _, note, _ in entries]
    depth = 0
    while all(len(c) > depth for c in calls) and len({c[depth][1] for c in calls}) == 1:
        depth += 1                          # (calls running around the learner's line)
    if not all(len(c) > depth for c in calls):
        return [group]
    runs, keys = [], []
    for op, c in zip(group, calls):
        if not keys or c[depth][1] != keys[-1][1]:
            runs.append([])
            keys.append(c[depth])
        runs[-1].append(op)
    same = len({id(module) for module, _ in keys}) == 1 and \
        len({tuple(op.type for op in run) for run in runs}) == 1
    if len(runs) > 1 and same and all(_runs_again(a, b) for a, b in zip(runs, runs[1:])):
        return runs
    return [group]


def _is_list(group):
    """Do the ops of one run of an instruction make a list of values, each one element of
    what the code assigns (``halves = mt.split(v, 2)``: one op, two outputs; ``parts =
    mt.unstack(v)``: one slice of ``v`` per element)?"""
    if len(group) == 1:
        return len(group[0].output_ids) > 1
    first = group[0]
    return all(op.type == first.type and op.input_ids == first.input_ids
               and len(op.output_ids) == 1 for op in group)


def _ran_several_things(group, notes):
    """Did one run of an instruction call a Module and also compute outside it (a training
    step: ``model.fit(x, y)``, ``view.step(1)`` run the model, then the loss)? Its last op
    is then no value the instruction returns, and takes no name from it."""
    tops = {note.module_calls[0] if note is not None and note.module_calls else None
            for note in (notes.get(id(op)) for op in group)}
    return len(tops) > 1 and any(top is not None for top in tops)


def _layer_outputs(ops):
    """tensor id -> the name of the Module (a Keras layer: ``dense``, ``dense_1``, or its
    ``name=``) whose call returned it: the output of the last op each call recorded; of
    nested calls (a ``Sequential`` and its last layer), the innermost. For what the code
    does not name (``model(x)`` runs every layer; only the model's result is assigned)."""
    last = {}         # (module, stamp) of a call -> (depth, its last op)
    for op, note, _ in ops:
        if note is None or not note.module_calls or note.backward_of is not None:
            continue
        for depth, call in enumerate(note.module_calls):
            last[(id(call[0]), call[1])] = (depth, op, call[0])
    found = {}
    for depth, op, module in sorted(last.values(), key=lambda entry: entry[0]):
        name = getattr(module, "name", None)
        if len(op.output_ids) == 1 and isinstance(name, str) and name:
            found[op.output_ids[0]] = name            # (deeper calls come later: they win)
    return found


def _period(types):
    """The shortest ``p`` such that ``types`` is its first ``p`` repeated."""
    for p in range(1, len(types) // 2 + 1):
        if len(types) % p == 0 and types == types[:p] * (len(types) // p):
            return p
    return len(types)


def _repetition(group):
    """The length of one run of a loop in ``group`` (see ``_instructions``), else
    ``len(group)``."""
    types = [op.type for op in group]
    for p in range(1, len(group) // 2 + 1):
        if len(group) % p or types != types[:p] * (len(group) // p):
            continue
        runs = [group[start:start + p] for start in range(0, len(group), p)]
        if all(_runs_again(before, run) for before, run in zip(runs, runs[1:])):
            return p
    return len(group)


def _runs_again(before, run):
    """Is ``run`` a new run of the code that made ``before`` (see ``_instructions``)? It is
    when it reads what ``before`` made (``y = y * x``), or a tensor made after ``before``
    that it did not make itself (``x * float(k)`` in a comprehension: a new constant each
    time), or when it reads other tensors than ``before`` did (``for w in ws: y = w * x``);
    one call's ops read the same tensors, there before the call (``mt.unstack``)."""
    made_before = {i for op in before for i in op.output_ids}
    made_here = {i for op in run for i in op.output_ids}
    newest = max(made_before)
    if any(i in made_before or (i > newest and i not in made_here)
           for op in run for i in op.input_ids):
        return True
    # ``for w in ws: y = w * x``: each run reads other tensors, all older (one call reads
    # the same ones each time: ``mt.unstack`` slices one input).
    return [op.input_ids for op in run] != [op.input_ids for op in before]


def _frames(entry):
    note = entry[1]
    return note.origin if note is not None and note.origin else ()
