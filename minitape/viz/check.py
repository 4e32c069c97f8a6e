"""Which op's gradient is wrong? ``check_tape`` checks every recorded op on its own.

``mt.testing.check_grads`` (like ``torch.autograd.gradcheck`` or JAX's ``check_grads``) answers
"the gradient of this function is wrong somewhere". A tape knows more: every op it recorded,
with the inputs it ran on. So ``check_tape(tape, target, sources)`` takes each op between the
sources and the target and compares, *locally*:

- the op's **gradient rule**: the vector-Jacobian product its registered gradient function
  (or its ``custom_gradient``) computes for a random output gradient ``u``, called exactly as
  the backward pass calls it (``minitape.backward.call_gradient``), with
- **central finite differences** of the op's own forward computation at its recorded inputs:
  ``d/dx_i sum(u * f(x)) ~ (sum(u * f(x + h e_i)) - sum(u * f(x - h e_i))) / 2h``.

Both run in float64 (float32 ops are promoted for the check), so a tolerance of ``1e-5`` tells
a wrong rule from rounding. Inputs with more than ``max_elements`` elements are checked along a
few random directions ``v`` instead of element by element: ``<vjp(u), v>`` against
``(sum(u * f(x + h v)) - sum(u * f(x - h v))) / 2h``. Elementwise built-in ops (``Sin``,
``Mul``, ...: output element ``i`` depends on input element ``i`` only) move every element at
once, so they are checked element by element at the cost of two forward runs. If the op's
forward refuses float64 (a function with a float32 constant in it), the op is checked in its
own dtype, with a larger step and tolerances to match, and the row says so.

To run an op again the check needs its forward: built-in ops register one next to their
gradient (``registry.register_forward``), ``mt.primitive`` ops and ``custom_gradient``
functions hand theirs to the tape's observers, and ``mt.viz``'s record keeps it
(``OpNote.forward``). It also needs the inputs' values:
a persistent tape keeps them all; a non-persistent tape keeps what its gradients need until
``gradient`` is called, and values it did not keep are computed again from the earlier ops.

What each row says (``CheckRow.status``):

- ``"ok"``: the rule agrees with the finite differences;
- ``"failed"``: it does not (``max_abs_error`` > ``atol + rtol * |numeric|`` somewhere);
- ``"not differentiable"``: the op's forward has a kink or a jump at the recorded point
  (``abs`` at 0, ``maximum`` at a tie, ``relu`` at 0): the one-sided differences disagree, so
  no rule can be "right" there; reported, not counted as an error;
- ``"skipped"``: nothing to check (``no_gradient`` ops such as ``StopGradient``, integer or
  bool outputs, an op with no registered gradient or no known forward).

>>> import minitape as mt
>>> x = mt.constant([0.5, -1.0])
>>> with mt.GradientTape(persistent=True) as tape:
...     tape.watch(x)
...     y = mt.reduce_sum(mt.math.sin(x) * x)
>>> check = mt.viz.check_tape(tape, y, x)
>>> check.ok, [(r.index, r.op_type, r.status) for r in check.rows]
(True, [(1, 'Sin', 'ok'), (2, 'Mul', 'ok'), (3, 'Sum', 'ok')])
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass

import numpy as np

from ..engine import registry
from ..engine.backward import call_gradient
from ..nest import flatten
from ..engine.recording import Operation, state
from ..engine.tape import GradientTape
from ..engine.tensor import Tensor
from .graph import tape_graph
from .labels import is_fallback
from .record import record_of, summarize
from .draw import format_value

_TEXT_WIDTH = 92
"""The widest line of a check's text (``repr``): a notebook column's width in characters."""

STEP = 1e-6             # finite-difference step, relative to max(1, |x|)

# Built-in ops whose output element i depends on input element i only (where the input has the
# output's shape): their finite differences move every element at once.
ELEMENTWISE = frozenset({
    "Abs", "AddV2", "Cast", "Cos", "Elu", "Erf", "Exp", "Expm1", "Identity", "LeakyRelu", "Log",
    "Log1p", "Maximum", "Minimum", "Mul", "Neg", "Pow", "RealDiv", "Reciprocal", "Relu",
    "Sigmoid", "Sign", "Sin", "Softplus", "Sqrt", "Square", "Sub", "Tan", "Tanh",
})
KINK_TOLERANCE = 1e-3   # one-sided differences further apart than this (relative): a kink
# (For a smooth function they differ by about step * f'', so the tolerance grows with the step.)


@dataclass
class CheckRow:
    """One checked op.

    Attributes:
        index: the op's number on the tape, as drawings show it (``#1`` is 1): position + 1.
        op_type: e.g. ``"Mul"``; ``"CustomGradient"`` for a ``custom_gradient`` function
            (``name`` then says which).
        name: the custom_gradient function's name, else the op type.
        status: ``"ok"``, ``"failed"``, ``"not differentiable"`` or ``"skipped"``.
        ok: False only for ``"failed"``.
        max_abs_error, max_rel_error: the largest ``|analytic - numeric|`` and the largest
            ``|analytic - numeric| / |numeric|`` over the checked inputs (None if skipped).
        analytic, numeric: one entry per op input: the gradient rule's and the finite
            differences' vector-Jacobian product for that input (an ndarray of the input's
            shape when it has at most 16 elements, ``(min, mean, max)`` when larger, or the
            products along the random directions when ``directional``), None for an input that
            is not checked (integers, bools).
        directional: True if some input was checked along random directions.
        dtype: the dtype the check ran in (``float64``, or the op's own when its forward does
            not run in float64).
        note: why it was skipped, what was not differentiable, or what failed.
        output: the label of the op's (first) output, as the drawings name it (``y`` for
            ``y = x * x``), or None.
    """

    index: int
    op_type: str
    name: str
    status: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    analytic: tuple | None = None
    numeric: tuple | None = None
    directional: bool = False
    dtype: str | None = None
    note: str = ""
    output: str | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    def label(self) -> str:
        """``#3 Mul -> y`` (``#3 CustomGradient log1pexp -> y`` for a custom gradient): the
        op, and the learner's name for what it made."""
        extra = f" {self.name}" if self.name != self.op_type else ""
        made = f" -> {self.output}" if self.output else ""
        return f"#{self.index} {self.op_type}{extra}{made}"


class TapeCheck:
    """The result of ``check_tape``: one ``CheckRow`` per op between the sources and the target.

    Attributes:
        rows: the ``CheckRow``s, in tape order.
        ok: True if no row failed (skipped and not-differentiable rows do not fail).
        failing: the rows that failed.

    In a notebook it shows a short table; when a row failed, the tape drawn with the failing
    ops in red, each labelled with its rule's and the finite differences' values. ``str()``
    gives the same table as text (statuses only, and the values of the failing rows, so that
    it prints the same on every machine). ``draw()`` returns that drawing, ``summary()`` the
    first line, ``details()`` the failing rows' lines, and ``assert_ok("Exercise 1")`` raises
    ``AssertionError`` with them when a row failed (the lessons' check cells end with it).
    """

    def __init__(self, tape, target, sources, rows, rtol, atol):
        self.tape, self.target, self.sources = tape, target, sources
        self.rows = rows
        self.rtol, self.atol = rtol, atol

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    @property
    def failing(self) -> list:
        return [r for r in self.rows if not r.ok]

    def summary(self) -> str:
        """One line: how many ops were checked, and which failed."""
        if not self.rows:
            return "check_tape: no op lies between the sources and the target"
        counts = {}
        for r in self.rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        head = "every gradient agrees with finite differences" if self.ok else \
            "wrong gradient in " + ", ".join(r.label() for r in self.failing)
        ops = f"{len(self.rows)} op" + ("s" if len(self.rows) != 1 else "")
        return f"check_tape: {head} ({ops}: {parts})"

    def details(self) -> list:
        """Text lines for each failing row: why, and the rule's and the numeric values."""
        lines = []
        for r in self.failing:
            why = r.note or (f"its gradient disagrees with finite differences (max abs error "
                             f"{r.max_abs_error:.2g})")
            lines.append(f"{r.label()}: {why}")
            for k, (a, n) in enumerate(zip(r.analytic or (), r.numeric or ())):
                if a is not None:
                    lines.append(f"    input {k}: gradient rule  {_text(a)}")
                    lines.append(f"    {'':>{len(str(k)) + 6}} finite diffs   {_text(n)}")
        return lines

    def __repr__(self):
        # Only what is the same on every machine (statuses, failing values), not tiny errors.
        lines = [self.summary()]
        for r in self.rows:
            row = f"  {r.label():<28} {r.status}"
            if r.status in ("ok", "failed") or not r.note:
                lines.append(row)
                continue
            # A long note goes on over indented lines, so that no line is wider than a notebook's
            # column (a static page would break it in the middle of a word).
            lines += textwrap.wrap(f"({r.note})", width=_TEXT_WIDTH, initial_indent=row + "  ",
                                   subsequent_indent=" " * 6, break_on_hyphens=False)
        return "\n".join(lines + [("  " + line) for line in self.details()])

    def assert_ok(self, what=None):
        """Return ``self`` if no op failed; else show the check (the failing ops in red, in a
        notebook) and raise ``AssertionError`` naming each failing op and why.

        ``what`` (e.g. ``"Exercise 1"``) starts the message. For lessons' check cells. It also
        raises when nothing was checked (no recorded op between the sources and the target).
        """
        head = f"{what}: " if what else ""
        if not self.rows:
            raise AssertionError(
                head + "check_tape checked nothing: no op the tape recorded lies between the "
                "sources and the target; compute the target inside the `with GradientTape()` "
                "block, from the sources (watch constants with tape.watch)")
        if self.ok:
            return self
        try:
            from IPython import get_ipython
            if get_ipython() is not None:
                from IPython.display import display
                display(self)
        except ImportError:
            pass
        raise AssertionError(head + self.summary() + "\n" + "\n".join(self.details()))

    def _table_html(self) -> str:
        cells = []
        for r in self.rows:
            colour = {"failed": "#c0392b", "ok": "#1e7b34"}.get(r.status, "#777777")
            values = ""
            if r.status == "failed":
                values = "".join(
                    f"<br>input {k}: gradient rule {html.escape(_text(a))}; "
                    f"finite diffs {html.escape(_text(n))}"
                    for k, (a, n) in enumerate(zip(r.analytic or (), r.numeric or ()))
                    if a is not None)
            cells.append(f"<tr><td style='text-align:left'>{html.escape(r.label())}</td>"
                         f"<td style='text-align:left;color:{colour}'><b>{r.status}</b></td>"
                         f"<td style='text-align:left'>{html.escape(r.note)}{values}</td></tr>")
        return (f"<p><b>{html.escape(self.summary())}</b></p>"
                "<table><tr><th>op</th><th>status</th><th>details</th></tr>"
                + "".join(cells) + "</table>")

    def _repr_html_(self):
        return self._table_html()

    def draw(self, **kwargs):
        """The tape drawn by ``draw_tape`` with each failing op in red and a note next to it
        giving its rule's and the finite differences' values. ``kwargs`` go to ``draw_tape``."""
        from .draw import draw_tape
        styles = {f"op{r.index}": {"color": "#c0392b", "fillcolor": "#f9d6d2",
                                   "style": "rounded,filled,bold", "penwidth": "2.5"}
                  for r in self.failing}
        kwargs.setdefault("collapse", not styles)
        dot = draw_tape(self.tape, self.target, self.sources, node_styles=styles, **kwargs)
        for r in self.failing:
            lines = [f"{r.label()}: wrong gradient"]
            if r.note:
                lines.append(r.note)
            for k, (a, n) in enumerate(zip(r.analytic or (), r.numeric or ())):
                if a is not None:
                    lines.append(f"input {k}: rule {_text(a, 3)}")
                    lines.append(f"finite diffs {_text(n, 3)}")
            dot.node(f"check{r.index}", "\n".join(lines), shape="note", color="#c0392b",
                     fontcolor="#c0392b", fontsize="10")
            dot.edge(f"check{r.index}", f"op{r.index}", style="dashed", color="#c0392b",
                     arrowhead="none", constraint="false")
        return dot

    def _ipython_display_(self):
        from IPython.display import display
        if not self.ok:
            display(self.draw())
        display({"text/html": self._table_html(), "text/plain": repr(self)}, raw=True)


def _text(value, digits=4) -> str:
    """A value for the report: as the drawings write it (``format_value``), ``-`` for none."""
    return "-" if value is None else format_value(value, digits)


# -- check_tape ---------------------------------------------------------------------------------


def check_tape(tape, target, sources=None, *, rtol=1e-5, atol=1e-7, max_elements=64,
               directions=3, seed=0) -> TapeCheck:
    """Check the gradient rule of every op the tape recorded between ``sources`` and ``target``.

    Each op is checked on its own, at the inputs it recorded: its registered gradient (the
    vector-Jacobian product the backward pass would use, for a random output gradient) against
    central finite differences of the op's forward, in float64 (see the module docstring). A
    single wrong rule is found even in a long program, and named by its number on the tape.
    This is minitape's own tool; ``mt.testing.check_grads`` (as ``torch.autograd.gradcheck``)
    checks a whole function instead.

    Args:
        tape: a GradientTape that still holds its saved tensors: persistent, or not yet asked
            for a gradient.
        target: a Tensor (or a list of Tensors) the tape computed.
        sources: a Tensor/Variable or a list of them; None: every op upstream of ``target``.
        rtol, atol: a row fails where ``|analytic - numeric| > atol + rtol * |numeric|``.
        max_elements: inputs with more elements are checked along ``directions`` random
            directions instead of element by element.
        directions: how many random directions for a large input.
        seed: seeds the random output gradients and directions (the same check each run).

    Returns:
        A ``TapeCheck``: ``.ok``, ``.rows`` (one ``CheckRow`` per op, in tape order),
        ``.failing``; it draws the failing ops in red in a notebook.

    Raises:
        TypeError: ``tape`` is not a GradientTape, or ``target``/``sources`` hold something
            other than Tensors.
        RuntimeError: the tape released its saved tensors (a non-persistent tape after
            ``gradient``): record with ``mt.GradientTape(persistent=True)``, or check before
            calling ``gradient``.

    >>> import minitape as mt
    >>> @mt.custom_gradient
    ... def square(x):
    ...     return x * x, lambda dy: dy * x      # wrong: should be dy * 2 * x
    >>> x = mt.constant(3.0)
    >>> with mt.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = mt.math.sin(square(x))
    >>> check = mt.viz.check_tape(tape, y, x)
    >>> check.ok, [r.label() for r in check.failing]
    (False, ['#2 CustomGradient square -> square(x)'])
    >>> round(float(check.failing[0].analytic[0] / check.failing[0].numeric[0]), 6)
    0.5
    """
    if not isinstance(tape, GradientTape):
        raise TypeError(f"check_tape expects a GradientTape, got {type(tape).__name__}; pass "
                        "the tape of a `with mt.GradientTape(persistent=True) as tape:` block")
    if tape.released:
        raise RuntimeError(
            "check_tape needs the tensors the tape saved, but this non-persistent tape released "
            "them when gradient() ran: record with mt.GradientTape(persistent=True), or call "
            "check_tape before tape.gradient")
    targets = flatten(target)
    for t in targets:
        if not isinstance(t, Tensor):
            raise TypeError(f"check_tape: target must be a minitape Tensor (or a list of them), "
                            f"got {type(t).__name__}")
    source_list = None
    if sources is not None:
        source_list = flatten(sources)
        for s in source_list:
            if not isinstance(s, Tensor):
                raise TypeError(f"check_tape: sources must be minitape Tensors or Variables, "
                                f"got {type(s).__name__}")
    record = record_of(tape)
    ops = [_Recorded(op, record.note(op)) for op in tape.operations]
    chosen, reaches = _between(ops, [t.id for t in targets],
                               None if source_list is None else [s.id for s in source_list])
    rng = np.random.default_rng(seed)
    saved_tapes, saved_acc = state.tapes, state.accumulators
    state.tapes, state.accumulators = [], []   # the checks' own ops are not recorded anywhere
    try:
        with np.errstate(all="ignore"):   # finite differences may step outside a domain
            values = _Values(ops, tape.watched)
            watched = {t.id: t for t in tape.watched}
            rows = []
            for position, op in enumerate(ops):
                if position in chosen:
                    inputs = values.inputs(op)
                    wanted = [reaches is None or i in reaches for i in op.input_ids]
                    variables = [watched.get(i) for i in op.input_ids[_function_inputs(op):]] \
                        if op.custom else []
                    rows.append(_check_op(op, position + 1, inputs, wanted, rng, rtol, atol,
                                          max_elements, directions, variables))
                values.advance(op)
    finally:
        state.tapes, state.accumulators = saved_tapes, saved_acc
    graph = tape_graph(tape)       # (the labels the drawings give the ops' outputs)
    for row in rows:
        node = graph.op_number(row.index)
        label = graph.node(node.outputs[0]).label if node.outputs else None
        row.output = None if label is None or is_fallback(label) else label
    return TapeCheck(tape, target, sources, rows, rtol, atol)


def _between(ops, target_ids, source_ids):
    """Positions of the ops that lie on a path from a source to a target, and the ids of the
    tensors that depend on a source (None without sources). No recursion."""
    upstream = set(target_ids)
    needed = set()
    for position in range(len(ops) - 1, -1, -1):
        op = ops[position]
        if not upstream.isdisjoint(op.output_ids):
            needed.add(position)
            upstream.update(op.input_ids)
    if source_ids is None:
        return needed, None
    downstream = set(source_ids)
    chosen = set()
    for position, op in enumerate(ops):
        if not downstream.isdisjoint(op.input_ids):
            downstream.update(op.output_ids)
            if position in needed:
                chosen.add(position)
    return chosen, downstream


class _Recorded:
    """A recorded Operation with what ``mt.viz``'s record noted of it: ``forward`` (the
    function of an ``mt.primitive`` or ``custom_gradient`` op, else None) and the small
    values of its inputs and outputs."""

    def __init__(self, op, note):
        self._op = op
        self.forward = note.forward if note is not None else None
        n_in = len(op.input_ids)
        values = note.values if note is not None else (None,) * len(op.shapes)
        self.input_values, self.output_values = values[:n_in], values[n_in:]

    def __getattr__(self, name):
        return getattr(self._op, name)


class _Values:
    """The value of every tensor the ops read: saved by the tape, kept small for the pictures,
    watched, or computed again from the earlier ops (a non-persistent tape keeps only what its
    gradients need)."""

    def __init__(self, ops, watched):
        self.known = {}
        for t in watched:
            self.known[t.id] = np.asarray(t)
        for op in ops:   # saved tensors win over a Variable's current value
            for ids, values, saved in ((op.input_ids, op.input_values, _saved(op, "inputs")),
                                       (op.output_ids, op.output_values, _saved(op, "outputs"))):
                for i, small, t in zip(ids, values, saved):
                    if t is not None:
                        self.known[i] = np.asarray(t)
                    elif small is not None:
                        self.known[i] = small

    def inputs(self, op):
        """The op's input values (ndarrays), None where unknown."""
        return [self.known.get(i) for i in op.input_ids]

    def advance(self, op):
        """Compute ``op``'s outputs again if the tape kept neither them nor their value."""
        if all(i in self.known for i in op.output_ids):
            return
        inputs = self.inputs(op)
        if any(v is None for v in inputs):
            return
        try:
            outs = _run_forward(op, [Tensor(v) for v in inputs], op)
        except Exception:   # no forward known, or it fails: later ops just lack this value
            return
        if outs is not None:
            for i, v in zip(op.output_ids, outs):
                self.known.setdefault(i, v)


def _saved(op, which):
    """The op's saved input (or output) Tensors, None where one was not kept."""
    try:
        return tuple(getattr(op, which))
    except (ValueError, RuntimeError):
        saved = getattr(op, which)
        out = []
        for k in range(len(saved)):
            try:
                out.append(saved[k])
            except (ValueError, RuntimeError):
                out.append(None)
        return tuple(out)


class _OpView:
    """What a forward function reads of the recorded op (attributes and shapes), with floating
    dtypes in the attributes replaced by the dtype of the check (``Cast`` to float32 becomes
    a cast to float64 when the check runs in float64)."""

    def __init__(self, op, dtype):
        self.type = op.type
        self.attrs = op.attrs if dtype is None else {
            k: (dtype if isinstance(v, np.dtype) and v.kind == "f" else v)
            for k, v in (op.attrs or {}).items()}
        self.input_shapes, self.output_shapes = op.input_shapes, op.output_shapes
        self.batch_ndim, self.skip_input_indices = 0, None

    def get_attr(self, name):
        try:
            return self.attrs[name]
        except (KeyError, TypeError):
            raise ValueError(f"{self.type} has no attribute {name!r}") from None


def _run_forward(op, inputs, view):
    """The op's outputs (ndarrays) computed again from ``inputs`` (Tensors); None if no forward
    is known. A custom_gradient function returns ``(outputs, grad_fn)``; only the outputs."""
    if op.custom:
        if op.forward is None:
            return None
        result = op.forward(*inputs[:_function_inputs(op)])[0]
    elif op.forward is not None:   # mt.primitive: a NumPy function of arrays and attributes
        result = op.forward(*[np.asarray(t) for t in inputs], **(view.attrs or {}))
        return [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]
    else:
        forward = registry.lookup_forward(op.type)
        if forward is None:
            return None
        result = forward(view, *inputs)
    return [np.asarray(t) for t in flatten(result)]


def _function_inputs(op):
    """How many of a custom_gradient op's inputs are the function's own arguments (the rest
    are the Variables it read)."""
    return len(op.input_ids) - (op.attrs or {}).get("variable_reads", 0)


def _check_op(op, index, inputs, wanted, rng, rtol, atol, max_elements, directions,
              variables=()):
    name = (op.attrs or {}).get("function", op.type) if op.custom else op.type
    row = CheckRow(index, op.type, name, "skipped")
    if not op.custom:
        try:
            grad = registry.lookup(op.type)
        except LookupError:
            row.note = "no gradient registered: gradient() through it raises LookupError"
            return row
        if grad is None:
            row.note = "declared not differentiable (no_gradient)"
            return row
    else:
        grad = None
    if not any(d.kind == "f" for d in op.output_dtypes):
        row.note = "integer or bool outputs: no gradient"
        return row
    # The inputs the backward pass would send a gradient to: floating, and (given sources)
    # depending on one. A constant such as the 3.0 of ``x ** 3.0`` is not checked.
    checked = [k for k, d in enumerate(op.input_dtypes) if d.kind == "f" and wanted[k]]
    if op.custom:
        checked = [k for k in checked if k < _function_inputs(op)]
    if not checked:
        row.note = "no floating inputs"
        return row
    if any(inputs[k] is None for k in range(len(inputs))):
        row.note = ("an input's value was not kept; record with "
                    "mt.GradientTape(persistent=True)")
        return row
    if op.custom and op.forward is None:
        row.note = "the custom_gradient function was released"
        return row
    if not op.custom and op.forward is None and registry.lookup_forward(op.type) is None:
        row.note = (f"no forward registered for {op.type}: "
                    f"minitape.registry.register_forward('{op.type}', fn)")
        return row
    # First in float64; an op whose forward or rule refuses float64 (a function with a float32
    # constant in it) is checked in its own dtype, with a step and tolerances to match.
    try:
        row = _compare(op, row, grad, inputs, checked, np.dtype(np.float64), rng, rtol, atol,
                       max_elements, directions, variables=variables)
        if variables and row.status != "failed":
            row.note = "the gradients of the Variables it reads are not checked"
        return row
    except _RuleError as error:
        if not isinstance(error.__cause__, TypeError):
            return _rule_failed(row, error.__cause__)
        first = error.__cause__
    except (TypeError, ValueError) as error:
        first = error
    dtype = op.input_dtypes[checked[0]]
    eps = float(np.finfo(dtype).eps)
    try:
        row = _compare(op, row, grad, inputs, checked, None, rng, max(rtol, eps ** 0.5 * 10),
                       max(atol, eps ** 0.5), max_elements, directions, step=eps ** (1 / 3),
                       variables=variables)
    except _RuleError as error:
        return _rule_failed(row, error.__cause__)
    except Exception as error:  # the forward itself fails: say so, do not crash
        row.status = "failed"
        row.note = f"could not run the op again: {type(error).__name__}: {error}"
        return row
    row.note = (row.note + "; " if row.note else "") + \
        f"checked in {dtype.name}: in float64 it raised {type(first).__name__}: {first}"
    return row


class _RuleError(Exception):
    """The gradient function itself raised (its exception is the ``__cause__``)."""


def _rule_failed(row, error):
    row.status = "failed"
    if isinstance(error, NotImplementedError):
        row.note = "its gradient function is not written yet (it raises NotImplementedError)"
    else:
        row.note = f"its gradient function raised {type(error).__name__}: {error}"
    return row


def _compare(op, row, grad, inputs, checked, dtype, rng, rtol, atol, max_elements, directions,
             step=STEP, variables=()):
    """Fill ``row`` with the comparison of the gradient rule and the finite differences."""
    view = _OpView(op, dtype)
    xs = [np.asarray(v, dtype) if dtype is not None and np.asarray(v).dtype.kind == "f"
          else np.asarray(v) for v in inputs]
    x_tensors = [Tensor(x) for x in xs]
    outs = _run_forward(op, x_tensors, view)
    if len(outs) != len(op.output_ids) or any(
            o.shape != s for o, s in zip(outs, op.output_shapes)):
        raise ValueError(f"the forward of {op.type} gave shapes {[o.shape for o in outs]}, the "
                         f"recorded op has {list(op.output_shapes)}")
    # A random output gradient: entries of size 0.5 to 1.5 with random signs (never near 0,
    # so a kink in any output shows in the weighted sum).
    us = [_cotangent(rng, o) for o in outs]
    try:
        analytic = _rule(op, grad, x_tensors, outs, us, view, checked, variables)
    except Exception as error:
        raise _RuleError() from error
    row.dtype = "float64" if dtype is not None else str(outs[0].dtype)
    a_out, n_out = [None] * len(inputs), [None] * len(inputs)
    elementwise = op.type in ELEMENTWISE and op.forward is None and not op.custom
    worst_abs = worst_rel = 0.0
    failed, kinks, wrong_shape = False, [], []
    for k in checked:
        g = analytic[k]
        if g is not None and g.shape != xs[k].shape:
            wrong_shape.append(f"input {k}: the rule returned shape {g.shape}, the input has "
                               f"{xs[k].shape}")
            failed = True
            continue
        g = np.zeros(xs[k].shape) if g is None else g.astype(np.float64)

        def phi(x, k=k):
            moved = list(x_tensors)
            moved[k] = Tensor(x)
            return _run_forward(op, moved, view)

        # An elementwise op (output i depends on input i only) is differenced in one go: all
        # elements moved at once. Others element by element, or along random directions.
        diagonal = elementwise and all(o.shape == xs[k].shape for o in outs)
        if diagonal or xs[k].size <= max_elements:
            method = _diagonal if diagonal else _elementwise

            def differences(h, phi=phi, x=xs[k], method=method):
                return method(phi, x, outs, us, h)

            num, kink = differences(step)
            a = g.reshape(-1)
            shown_a, shown_n = summarize(g), summarize(num.reshape(xs[k].shape))
        else:
            vs = rng.standard_normal((directions,) + xs[k].shape)

            def differences(h, phi=phi, x=xs[k], vs=vs):
                return _directional(phi, x, outs, us, vs, h)

            a = np.array([np.sum(g * v) for v in vs])
            num, kink = differences(step)
            shown_a, shown_n = a, num
            row.directional = True
        err = np.abs(a - num)
        bad = ~(err <= atol + rtol * np.abs(num))   # (NaN is bad)
        both_infinite = np.isinf(a) & np.isinf(num) & (np.sign(a) == np.sign(num))
        bad &= ~both_infinite
        err = np.where(both_infinite, 0.0, err)
        if bad.any():
            # A jump (sign at 0, round at .5): the differences grow as the step shrinks.
            num_small = differences(step / 8)[0]
            jump = np.abs(num_small - num) > KINK_TOLERANCE * (1 + np.abs(num))
            # A forward that is not finite next to the point (sqrt at 0): no derivative.
            kink = kink | jump | ~np.isfinite(num)
        a_out[k], n_out[k] = shown_a, shown_n
        if err.size:
            rel = err / np.maximum(np.abs(num), 1e-300)
            worst_abs = max(worst_abs, float(err.max()))
            worst_rel = max(worst_rel, float(rel.max()))
        if kink.any():
            kinks.append(k)
        elif bad.any():
            failed = True
    row.analytic, row.numeric = tuple(a_out), tuple(n_out)
    row.max_abs_error, row.max_rel_error = worst_abs, worst_rel
    if wrong_shape:
        row.status, row.note = "failed", "; ".join(wrong_shape)
    elif kinks:
        row.status = "not differentiable"
        row.note = ("a kink or a jump at the recorded value of input "
                    + ", ".join(str(k) for k in kinks) + ": the one-sided differences disagree")
    else:
        row.status = "failed" if failed else "ok"
    return row


def _rule(op, grad, x_tensors, outs, us, view, checked, variables=()):
    """The gradient rule's vector-Jacobian product for output gradients ``us``: ndarrays (or
    None) aligned with the op's inputs."""
    out_grads = [Tensor(u) for u in us]
    if op.custom:
        # Run the function again at the check's inputs: its grad_fn then closes over them.
        n = _function_inputs(op)
        _, grad_fn = op.forward(*x_tensors[:n])
        if variables:   # f read Variables: grad_fn(*dy, variables) -> (input grads, var grads)
            if any(v is None for v in variables):
                raise ValueError("the Variables the function read are not watched by the tape")
            result = grad_fn(*out_grads, variables=list(variables))[0]
        else:
            result = grad_fn(*out_grads)
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(result) != n:
            _raise_arity(op, len(result), n)
        in_grads = result + [None] * (len(x_tensors) - n)
    else:
        recorded = Operation(op.type, x_tensors, [Tensor(o) for o in outs], view.attrs, True,
                             True, None)
        # As in the backward pass: inputs whose gradient nobody needs may be skipped.
        recorded.skip_input_indices = tuple(k for k in range(len(x_tensors)) if k not in checked)
        in_grads = call_gradient(recorded, grad, out_grads)
        recorded.skip_input_indices = None
    for k, g in enumerate(in_grads):
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"it returned {type(g).__name__} for input {k}; gradients must be "
                            "minitape Tensors (so that they can be differentiated again): "
                            "build them with minitape operations")
    return [None if g is None else np.asarray(g) for g in in_grads]


def _raise_arity(op, got, expected):
    raise ValueError(f"the gradient function of {op.type} returned {got} gradient(s) for "
                     f"{expected} input(s)")


def _cotangent(rng, out):
    """A random output gradient: entries of size 0.5 to 1.5 with random signs (never near 0,
    so that a kink in any output shows in the weighted sum); zeros for a non-float output."""
    if out.dtype.kind != "f":
        return np.zeros(out.shape, out.dtype)
    u = rng.uniform(-1.0, 1.0, out.shape)
    return (u + np.copysign(0.5, u)).astype(out.dtype)


def _weighted(outs_a, outs_b, us):
    """``sum(u * (a - b))`` over every floating output (differences first: exact zeros stay)."""
    total = 0.0
    for a, b, u in zip(outs_a, outs_b, us):
        if u.dtype.kind == "f":
            d = a - b
            if d.dtype != np.float64:
                d = d.astype(np.float64)
            total += float(np.dot(u.reshape(-1), d.reshape(-1)))
    return total


def _kink_tolerance(step):
    """How far apart the one-sided differences may be (relative) before we call it a kink:
    ``KINK_TOLERANCE`` in float64; in float32 the step is 5000 times larger, and so is the
    gap a smooth function leaves (``step * f''``): only a clear kink counts there."""
    return KINK_TOLERANCE if step <= STEP else 0.5


def _elementwise(phi, x, outs, us, step):
    """Central differences for each element of ``x``; also whether the one-sided ones agree."""
    flat = x.reshape(-1)
    num = np.zeros(flat.size)
    kink = np.zeros(flat.size, bool)
    for i in range(flat.size):
        h = step * max(1.0, abs(float(flat[i])))
        up, down = flat.copy(), flat.copy()
        up[i] += h
        down[i] -= h
        h_up, h_down = float(up[i]) - float(flat[i]), float(flat[i]) - float(down[i])
        forward = _weighted(phi(up.reshape(x.shape)), outs, us) / h_up
        backward = _weighted(outs, phi(down.reshape(x.shape)), us) / h_down
        num[i] = (forward * h_up + backward * h_down) / (h_up + h_down)
        kink[i] = abs(forward - backward) > _kink_tolerance(step) * (1 + abs(num[i]))
    return num, kink


def _diagonal(phi, x, outs, us, step):
    """Central differences of an elementwise op for every element of ``x`` at once (its
    Jacobian is diagonal); and whether the one-sided ones agree."""
    h = step * np.maximum(1.0, np.abs(x))
    up, down = x + h, x - h
    h_up, h_down = up - x, x - down   # (the steps as represented)
    f_up, f_down = phi(up), phi(down)
    forward = backward = 0.0
    for a, b, c, u in zip(f_up, outs, f_down, us):
        if u.dtype.kind == "f":
            forward = forward + u * (a - b).astype(np.float64) / h_up
            backward = backward + u * (b - c).astype(np.float64) / h_down
    num = (forward * h_up + backward * h_down) / (h_up + h_down)
    kink = np.abs(forward - backward) > _kink_tolerance(step) * (1 + np.abs(num))
    return np.reshape(num, -1), np.reshape(kink, -1)


def _directional(phi, x, outs, us, vs, step):
    """Central differences along each direction in ``vs``; and whether one-sided ones agree."""
    h = step * max(1.0, float(np.max(np.abs(x))))
    num = np.zeros(len(vs))
    kink = np.zeros(len(vs), bool)
    for d, v in enumerate(vs):
        forward = _weighted(phi((x + h * v).astype(x.dtype)), outs, us) / h
        backward = _weighted(outs, phi((x - h * v).astype(x.dtype)), us) / h
        num[d] = (forward + backward) / 2
        kink[d] = abs(forward - backward) > _kink_tolerance(step) * (1 + abs(num[d]))
    return num, kink
