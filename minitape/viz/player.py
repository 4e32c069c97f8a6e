"""``TapePlayer``: step through a tape, forward op by op, then backward op by op.

Each step highlights one op in the drawing and says in one line what happens there, with the
op numbers and the names of the drawing (``#1``, ``#2`` on this tape; ``y`` for ``y = x * x``):

- forward: ``forward through Mul (#1): y = x * x = 9.0``
- backward: ``backward through Mul (#2): dz/dy = 2*y = 18.0`` (the gradient each input
  receives: the gradient that arrived at the op's output times the op's local derivative, as
  a rule in words, then the number). A tensor used twice receives two *contributions*, and
  the sentence says so: ``dz/dx = dz/da * 2.0 = 2.0 (adds 2.0 to dz/dx; total so far 5.0)``;
- last: the gradient that reached each source, as the sum of its contributions.

The backward steps come from ``minitape.backward.backward_steps``, the very walk that
``tape.gradient`` runs, here without releasing anything. That needs the tensors the ops saved:
give the player a ``persistent=True`` tape, or create it *before* calling ``gradient`` on a
non-persistent tape (after that call the saved tensors are gone and the player raises
``RuntimeError``).

With ``quiz=True`` each backward step first asks for the number about to be computed:
``player.expected`` is that number and ``player.answer(value)`` says whether it is right
(``player.feedback`` gives the chain-rule product that makes it). While a step waits for its
answer, nothing on screen gives it away: ``player.text`` is the question and ``player.svg()``
draws the graph as it was *before* the step (no new gradient, no new running total); after
the answer, right or wrong, both show the step with its chain-rule product.

The state is plain Python, so it can be tested without a browser::

    player.step = 3
    player.text          # the sentence of step 3
    player.highlighted   # the node id drawn in blue, e.g. "op2"

The player is itself an ipywidgets ``VBox`` (Play button and slider, the sentence, the quiz
box, the graph as SVG), so it can go into ``HBox([player, plot])``. Its notebook output also
carries ``frames_html()`` as ``text/html``: every frame as SVG with a slider, back/next buttons
and the quiz boxes in a few lines of inline JavaScript (no kernel, no internet), which is what
``jupyter nbconvert --to html``, nbviewer, GitHub and a Sphinx/myst-nb site show when no widget
state is stored (``scripts/run_notebooks.py`` stores the lessons so). ``to_html()`` is the same
frames as one self-contained page.

>>> import minitape as mt
>>> from minitape.viz import TapePlayer
>>> mt.config.record_source_lines(True)   # names from the code (on by itself in Jupyter)
>>> x = mt.constant(3.0)
>>> with mt.GradientTape(persistent=True) as tape:
...     tape.watch(x)
...     y = x * x
...     z = y * y
>>> player = TapePlayer(tape, z, x)
>>> player.step = 2
>>> player.text
'backward through Mul (#2): dz/dy = 2*y = 18.0'
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import re
from dataclasses import dataclass, field

import ipywidgets as widgets
import numpy as np

from ..engine import registry
from ..engine.backward import backward_steps, gradient_value
from ..lessons import fallback_metadata
from ..nest import flatten
from ..engine.recording import state
from ..engine.tape import GradientTape
from ..engine.tensor import Tensor
from .draw import DARK_THEME_STYLE, PAGE_SCHEME_STYLE, draw_tape, format_value, svg_image
from .graph import tape_graph
from .record import summarize

# Forward formulas: infix operators, and ops written as functions.
INFIX = {"AddV2": "+", "Sub": "-", "Mul": "*", "RealDiv": "/", "Pow": "**", "MatMul": "@",
         "BatchMatMulV2": "@"}


@dataclass
class Step:
    """One step of the player.

    Attributes:
        kind: ``"forward"``, ``"backward"`` or ``"done"``.
        op: the Operation (None for ``"done"``).
        text: the sentence.
        highlight: the node id drawn in blue.
        grads: tensor id -> gradient so far (small value or summary), for the drawing.
        visited: seqs of the ops the backward walk has gone through up to this step.
        edges: ``(op node id, input position)`` -> the contribution sent back along that
            edge, for every edge the walk has sent a gradient along up to this step.
        expected: for a backward step, the number about to be computed (the first
            contribution it sends), else None; ``question`` asks for it.
        question: the quiz question, e.g. ``"dz/dy = ?"``.
        before: for a backward step, ``(grads, visited, edges)`` just before it: what a quiz
            draws while it waits for the answer (nothing this step computes).
    """

    kind: str
    op: object
    text: str
    highlight: str | None
    grads: dict = field(default_factory=dict)
    visited: frozenset = frozenset()
    edges: dict = field(default_factory=dict)
    expected: object = None
    question: str | None = None
    before: tuple | None = None


class TapePlayer(widgets.VBox):
    """Step through the forward and backward passes of a recorded tape (see module doc).

    Args:
        tape: a GradientTape that still holds its saved tensors (persistent, or not yet asked
            for a gradient).
        target: the Tensor to differentiate (summed if not scalar).
        sources: a Tensor/Variable or a list of them; default: the watched tensors.
        names: optional ``{"x": x, "y": y}``: names to use instead of the drawing's labels.
        quiz: ask for each backward step's number before showing it.
        **draw_kwargs: passed to ``draw_tape`` (``rankdir``, ``max_nodes``, ...);
            ``fold=True`` draws a loop folded (``×N``), each box showing the iteration of
            the op the current step highlights (``iteration=k`` for the others).

    Raises:
        TypeError: ``tape`` is not a GradientTape or ``target`` not a Tensor.
        RuntimeError: the tape released its saved tensors (a non-persistent tape after
            ``gradient``).
    """

    def __init__(self, tape, target, sources=None, names=None, *, quiz=False, **draw_kwargs):
        if not isinstance(tape, GradientTape):
            raise TypeError(f"TapePlayer expects a minitape GradientTape, got "
                            f"{type(tape).__name__}")
        if not isinstance(target, Tensor):
            raise TypeError(f"TapePlayer target must be a minitape Tensor, got "
                            f"{type(target).__name__}")
        ops = tape.operations
        if tape.released or any(op.saved is None for op in ops):
            raise RuntimeError(
                "TapePlayer needs the tensors the tape saved for its backward pass, and this "
                "non-persistent tape released them when gradient() ran: record with "
                "mt.GradientTape(persistent=True), or create the player before calling gradient")
        self.tape = tape
        self.target = target
        self.sources = list(tape.watched) if sources is None else flatten(sources)
        self.quiz = bool(quiz)
        self._names = {t.id: n for n, t in (names or {}).items()}
        self._draw_kwargs = draw_kwargs
        self._graph = tape_graph(tape, target, self.sources)
        self._node = {n.tensor_id: n.id for n in self._graph.tensors}
        with _not_recording():   # replaying must not add ops to any tape
            self.steps = self._forward_steps(ops) + self._backward_steps(ops)
        self._step = 0
        self._svg = {}
        self.answered = {}       # step -> the learner's last answer was right (quiz)
        self.feedback = ""
        n = len(self.steps) - 1
        self._play = widgets.Play(value=0, min=0, max=n, step=1, interval=1500,
                                  description="Play")
        self._slider = widgets.IntSlider(value=0, min=0, max=n, description="step")
        widgets.jslink((self._play, "value"), (self._slider, "value"))
        self._text = widgets.HTML()
        # (continuous_update=False: the value changes on Enter or when the box loses focus)
        self._answer_box = widgets.Text(placeholder="your number", description="answer",
                                        continuous_update=False,
                                        layout=widgets.Layout(width="16em"))
        self._check = widgets.Button(description="check")
        self._feedback = widgets.HTML()
        self._quiz_row = widgets.HBox([self._answer_box, self._check, self._feedback])
        self._graph_view = widgets.HTML()
        super().__init__([widgets.HBox([self._play, self._slider]), self._text,
                          self._quiz_row, self._graph_view])
        self._slider.observe(self._on_slider, names="value")
        self._check.on_click(self._on_check)
        self._answer_box.observe(self._on_check, names="value")
        self._refresh()

    # -- state ----------------------------------------------------------------------------
    @property
    def step(self) -> int:
        """The current step, ``0 .. len(steps) - 1``."""
        return self._step

    @step.setter
    def step(self, k):
        k = int(k)
        if not 0 <= k < len(self.steps):
            raise ValueError(f"step must be between 0 and {len(self.steps) - 1}, got {k}")
        self._step = k
        self.feedback = ""
        if self._slider.value != k:
            self._slider.value = k   # the slider's observer refreshes
        else:
            self._refresh()

    @property
    def text(self) -> str:
        """The sentence of the current step (with ``quiz=True``, a backward step's sentence
        shows its question until it has been answered)."""
        s = self.steps[self._step]
        if self.asking():
            return self._ask(s)
        return s.text

    @property
    def highlighted(self):
        """The node id highlighted at the current step (``"op2"``, ``"t1"``), or None."""
        return self.steps[self._step].highlight

    @property
    def expected(self):
        """The number the current backward step computes (what the quiz asks), or None."""
        return self.steps[self._step].expected

    @property
    def widget(self):
        """The player itself (it is an ipywidgets VBox); kept for older code."""
        return self

    def __len__(self):
        return len(self.steps)

    def answer(self, value) -> bool:
        """Check the learner's number for the current backward step (quiz).

        Returns True if ``value`` equals ``expected`` (to 3 significant digits); either way
        ``feedback`` then says the right value and the chain-rule product that gives it.

        Raises:
            ValueError: the current step asks nothing (a forward step or the last one), or
                ``value`` is not a number.
        """
        s = self.steps[self._step]
        if s.expected is None:
            raise ValueError(f"step {self._step} asks no question: only backward steps do "
                             "(move the slider to one)")
        try:
            given = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"answer expects a number, got {value!r}") from None
        right = given.shape in ((), np.shape(s.expected)) and bool(
            np.allclose(given, s.expected, rtol=1e-3, atol=1e-6))
        self.answered[self._step] = True
        verdict = "right" if right else f"not quite (you said {format_value(given)})"
        self.feedback = f"{verdict}: {s.text.split(': ', 1)[1]}"
        self._refresh()
        return right

    # -- naming -----------------------------------------------------------------------------
    def name(self, tensor_id) -> str:
        """The name used for a tensor: from ``names``, else its label in the drawing."""
        if tensor_id in self._names:
            return self._names[tensor_id]
        return self._graph.tensor(tensor_id).label

    def _number(self, op):
        return self._graph.op_of(op).number

    def _op_id(self, op):
        return self._graph.op_of(op).id

    # -- the forward steps ------------------------------------------------------------------
    def _forward_steps(self, ops):
        steps = []
        for op in ops:
            ins = [self.name(i) for i in op.input_ids]
            outs = ", ".join(self.name(o) for o in op.output_ids)
            if op.type in INFIX and len(ins) == 2:
                formula = f"{term(ins[0])} {INFIX[op.type]} {term(ins[1])}"
            else:
                formula = f"{op.type}({', '.join(ins)})"
            out = self._graph.tensor(op.output_ids[0]) if op.output_ids else None
            value = _value_text(out.value, out.shape) if out is not None else ""
            # (a result labelled by its own text, ``x * 2.0``, is said once)
            said = formula if outs == formula else f"{outs} = {formula}"
            text = f"forward through {op.type} (#{self._number(op)}): {said} = {value}"
            steps.append(Step("forward", op, text, self._op_id(op)))
        if not steps:
            steps.append(Step("forward", None, "the tape recorded no operations", None))
        return steps

    # -- the backward steps -----------------------------------------------------------------
    def _backward_steps(self, ops):
        """Walk ``backward_steps`` (the walk ``gradient`` runs) and describe each step."""
        from ..ops import array_ops
        ops = list(ops)
        source_ids = {s.id for s in self.sources if isinstance(s, Tensor)}
        grads = {}
        if self.target.dtype.kind == "f":
            grads[self.target.id] = array_ops.ones_like(self.target)
        self._seeds = seeds = {i: summarize(gradient_value(g)) for i, g in grads.items()}
        t_name = self.name(self.target.id)
        received = {}     # tensor id -> the contributions it received so far (values)
        fan_in = _fan_in(ops, source_ids)
        steps, visited, edges = [], [], {}
        walk = backward_steps(ops, grads, source_ids)
        while True:
            # What the drawing shows before this step (the walk adds a step's contributions
            # into ``grads`` before yielding it): a quiz draws this while it asks.
            before = (_summaries(grads, received, seeds), frozenset(visited), dict(edges))
            try:
                op, out_grads, in_grads = next(walk)
            except StopIteration:
                break
            except LookupError:
                op = _first_missing(ops, grads, source_ids)
                steps.append(Step("backward", op, f"backward through {op.type} "
                                  f"(#{self._number(op)}): no gradient is registered for it, "
                                  "so tape.gradient raises LookupError here", self._op_id(op)))
                return steps + [self._done_step(grads, received, t_name)]
            visited.append(self._graph.op_of(op).seq)
            sent = {}
            for k, (i, g) in enumerate(zip(op.input_ids, in_grads)):
                if g is not None:
                    value = gradient_value(g)
                    sent[i] = value if i not in sent else sent[i] + value
                    edges[(self._op_id(op), k)] = summarize(np.asarray(value))
            for i, value in sent.items():
                received.setdefault(i, []).append(value)
            parts = self._backward_parts(op, sent, received, fan_in, t_name)
            first = next(iter(sent), None)
            steps.append(Step(
                "backward", op, f"backward through {op.type} (#{self._number(op)}): "
                + ("; ".join(parts) if parts else "no input of it leads to a source"),
                self._op_id(op), _summaries(grads, received, seeds), frozenset(visited),
                dict(edges),
                expected=None if first is None else np.asarray(sent[first]),
                question=None if first is None else
                f"d{term(t_name)}/d{term(self.name(first))} = ?",
                before=before))
        steps += self._blocked_steps(ops, source_ids)
        return steps + [self._done_step(grads, received, t_name, frozenset(visited), edges)]

    def _blocked_steps(self, ops, source_ids):
        """A step for each op the walk passed without a gradient (``stop_gradient``)."""
        steps = []
        upstream = {self.target.id}
        for op in reversed(ops):
            if upstream.isdisjoint(op.output_ids):
                continue
            upstream.update(op.input_ids)
            try:
                fn = op.grad_fn or registry.lookup(op.type)
            except LookupError:
                continue
            if fn is None:
                steps.append(Step("backward", op, f"backward through {op.type} "
                                  f"(#{self._number(op)}): it has no gradient, so nothing "
                                  "flows to its input", self._op_id(op)))
        return steps

    def _backward_parts(self, op, sent, received, fan_in, t_name):
        out = op.output_ids[0]
        upstream = "" if out == self.target.id else f"d{term(t_name)}/d{term(self.name(out))} * "
        rules = local_rules(op.type, [term(self.name(i)) for i in op.input_ids],
                            term(self.name(out)))
        parts = []
        for i, value in sent.items():
            ks = [k for k, j in enumerate(op.input_ids) if j == i]
            rule = combine_rules([rules[k] for k in ks], op.type)
            part = (f"d{term(t_name)}/d{term(self.name(i))} = {upstream}{rule} = "
                    f"{format_value(value)}")
            if fan_in.get(i, 0) > 1:
                total = sum(received[i][1:], received[i][0])
                part += (f" (adds {format_value(value)} to d{term(t_name)}/d{term(self.name(i))}; "
                         f"total so far {format_value(total)})")
            parts.append(part)
        return parts

    def _done_step(self, grads, received, t_name, visited=frozenset(), edges=None):
        parts = []
        for s in self.sources:
            g = grads.get(s.id)
            value = "None" if g is None else _value_text(gradient_value(g), g.shape)
            contributions = received.get(s.id, [])
            if len(contributions) > 1:
                value = " + ".join(format_value(c) for c in contributions) + " = " + value
            parts.append(f"d{term(t_name)}/d{term(self.name(s.id))} = {value}")
        first = next(iter(self.sources), None)
        highlight = self._node.get(first.id) if first is not None else None
        return Step("done", None, "done: " + "; ".join(parts), highlight,
                    _summaries(grads, received, self._seeds), visited, dict(edges or {}))

    # -- pictures -----------------------------------------------------------------------------
    def asking(self, k=None) -> bool:
        """True while step ``k`` (default: the current one) waits for a quiz answer: then the
        sentence, the drawing and the running totals show nothing that step computes."""
        k = self._step if k is None else k
        return self.quiz and self.steps[k].question is not None and not self.answered.get(k)

    def svg(self, k=None, *, reveal=None) -> str:
        """The SVG drawing of step ``k`` (default: the current step), highlighted: what the
        widget shows.

        While a quiz step waits for its answer (``asking(k)``), the drawing is the state just
        before that step: the gradients and totals it computes are not on it. ``reveal=True``
        draws the step as answered, ``reveal=False`` as asked (the static page needs both).
        """
        k = self._step if k is None else k
        s = self.steps[k]
        hide = self.asking(k) if reveal is None else (not reveal and s.before is not None)
        key = (k, bool(hide and s.before is not None))
        if key not in self._svg:
            grads, visited, edges = s.before if key[1] else (s.grads, s.visited, s.edges)
            for node in self._graph.tensors:     # the gradients reached so far
                node.gradient = grads.get(node.tensor_id)
            for node in self._graph.ops:         # the ops the walk went through so far
                node.visited = not visited.isdisjoint(node.seqs)
            for e in self._graph.edges:          # the contributions sent back so far
                if e.kind == "input":
                    e.carried = (e.head, e.index) in edges
                    e.gradient = edges.get((e.head, e.index))
            dot = draw_tape(self.tape, self.target, self.sources, graph=self._graph,
                            highlight=s.highlight, **self._draw_kwargs)
            svg = dot.pipe(format="svg", encoding="utf-8")
            self._svg[key] = svg[svg.find("<svg"):]    # inline in HTML: no XML prologue
        return self._svg[key]

    def frames_html(self, inline_svg=False) -> str:
        """Every step as static HTML: what a notebook viewer with no kernel shows (``jupyter
        nbconvert --to html``, nbviewer, GitHub, a Sphinx/myst-nb site, JupyterLab before the
        lesson is run), and the body of ``to_html()``.

        Each step is a ``<section class="minitape-frame">``: its sentence and its drawing (an
        ``<img>`` of the SVG, which HTML sanitizers keep; ``inline_svg=True`` writes the
        ``<svg>`` itself). Without JavaScript (GitHub and an untrusted notebook run none)
        every step shows, one under the other. With JavaScript (inline, a few lines: no CDN,
        no kernel) one step shows at a time, under a slider and back/next buttons the script
        adds, starting at the player's current step. With ``quiz=True`` a backward step shows
        its question and the drawing as it was before the step; the answer (sentence and
        drawing) waits in a closed ``<details>`` ("show the answer"), and with JavaScript a
        box first checks the learner's number, as the widget does.
        """
        def drawing(k, reveal, sentence):
            svg = self.svg(k, reveal=reveal)
            if not inline_svg:     # (a dark card in a dark theme, at its natural size)
                svg = svg_image(svg, sentence)
            return (f'<div class="minitape-drawing minitape-graph" style="overflow-x:auto">'
                    f"{svg}</div>")

        frames = []
        for k, s in enumerate(self.steps):
            said = f"step {k} of {len(self.steps) - 1}: "
            if self.quiz and s.question is not None:
                rule = s.text.split(": ", 1)[1]
                expected = json.dumps(np.asarray(s.expected, dtype=float).ravel().tolist())
                frames.append(
                    f'<section class="minitape-frame" data-step="{k}">'
                    f'<div class="minitape-ask" data-expected="{html.escape(expected)}" '
                    f'data-rule="{html.escape(rule)}"><p><code>'
                    f"{html.escape(said + self._ask(s))}</code></p>"
                    f"{drawing(k, False, said + self._ask(s))}</div>"
                    '<details class="minitape-answer"><summary>show the answer</summary>'
                    f"<p><code>{html.escape(said + s.text)}</code></p>"
                    f"{drawing(k, True, said + s.text)}</details></section>")
            else:
                frames.append(f'<section class="minitape-frame" data-step="{k}"><p><code>'
                              f"{html.escape(said + s.text)}</code></p>"
                              f"{drawing(k, True, said + s.text)}</section>")
        digest = hashlib.sha1("".join(frames).encode()).hexdigest()[:12]
        dom_id = f"minitape-player-{digest}"
        return (f'{PAGE_SCHEME_STYLE if not inline_svg else ""}'
                f'<div class="minitape-player" id="{dom_id}" data-start="{self._step}">'
                f'{"".join(frames)}</div>'
                f"<script>{_PLAYER_JS.replace('PLAYER_ID', dom_id)}</script>")

    def to_html(self, title="minitape TapePlayer") -> str:
        """One self-contained HTML page: every step's sentence and SVG, and a slider
        (``frames_html()`` in a page).

        No CDN, no kernel, no external URL: a few lines of plain JavaScript show one frame
        at a time; without JavaScript every frame is shown, one under the other.
        """
        return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;background:#fff;color:#111}}</style></head>
<body><h1>{html.escape(title)}</h1>
{self.frames_html(inline_svg=True)}
</body></html>
"""

    def save_html(self, path) -> None:
        """Write ``to_html()`` to ``path`` (UTF-8)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html())

    def _ask(self, s) -> str:
        return f"backward through {s.op.type} (#{self._number(s.op)}): {s.question}"

    # -- the widget ---------------------------------------------------------------------------
    def _on_slider(self, change):
        self._step = int(change["new"])
        self.feedback = ""
        self._refresh()

    def _on_check(self, _):
        try:
            self.answer(float(self._answer_box.value))
        except ValueError as e:
            self.feedback = str(e) if "asks no question" in str(e) else \
                f"type a number, e.g. 18.0 (got {self._answer_box.value!r})"
            self._refresh()

    def _refresh(self):
        self._text.value = f"<code>{html.escape(self.text)}</code>"
        s = self.steps[self._step]
        asking = self.quiz and s.question is not None
        self._quiz_row.layout.display = None if asking else "none"
        self._feedback.value = html.escape(self.feedback)
        # At its natural size (never shrunk below legible), scrolling if wider than the page;
        # a dark card in JupyterLab's dark theme.
        self._graph_view.value = DARK_THEME_STYLE + _scrolling(self.svg())

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        # The widget view for a running kernel, and the frames as static HTML beside it for
        # every reader without one (see frames_html; scripts/run_notebooks.py stores lessons
        # with this fallback only).
        # Marked, so that minitape.lessons.pre_save_hook saves it as the fallback alone.
        bundle = super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs) or {}
        bundle["text/plain"] = repr(self)
        bundle["text/html"] = self.frames_html()
        return bundle, fallback_metadata("text/html")

    def __repr__(self):
        return f"<TapePlayer step {self._step}/{len(self.steps) - 1}: {self.text}>"


def _scrolling(svg) -> str:
    """An SVG at its natural size in a box that scrolls sideways when the page is narrower."""
    return f'<div class="minitape-drawing" style="max-width:100%;overflow-x:auto">{svg}</div>'


# The static player's controls (frames_html): one frame at a time, a slider, back/next, and the
# quiz boxes, all added by the script (a page that runs no script shows no dead controls). Plain
# ES5 run inline; it only touches the elements under its own root: the element just before the
# script (the same player shown twice has the same id), else PLAYER_ID.
_PLAYER_JS = """(function () {
  var me = document.currentScript, root = me && me.previousElementSibling;
  if (!root || root.className !== "minitape-player") {
    root = document.getElementById("PLAYER_ID");
  }
  if (!root || root.getAttribute("data-ready")) { return; }
  root.setAttribute("data-ready", "1");
  var frames = root.querySelectorAll(".minitape-frame"), last = frames.length - 1;
  var controls = document.createElement("p");
  controls.className = "minitape-controls";
  controls.innerHTML = '<button type="button" class="minitape-back">&#9664; back</button> ' +
    '<input type="range" min="0" max="' + last + '" step="1" ' +
    'style="width:20em;vertical-align:middle"> ' +
    '<button type="button" class="minitape-next">next &#9654;</button> ' +
    '<span class="minitape-label"></span>';
  root.insertBefore(controls, root.firstChild);
  var range = controls.querySelector("input"), label = controls.querySelector("span");
  function show(k) {
    k = Math.max(0, Math.min(last, k));
    range.value = k;
    for (var i = 0; i <= last; i++) { frames[i].hidden = (i !== k); }
    label.textContent = "step " + k + " of " + last;
  }
  function current() { return parseInt(range.value, 10); }
  range.oninput = function () { show(current()); };
  range.onchange = range.oninput;
  controls.querySelector(".minitape-back").onclick = function () { show(current() - 1); };
  controls.querySelector(".minitape-next").onclick = function () { show(current() + 1); };
  function number(v) { return (Math.round(v) === v && isFinite(v)) ? v.toFixed(1) : String(v); }
  var asks = root.querySelectorAll(".minitape-ask");
  for (var q = 0; q < asks.length; q++) {
    (function (ask) {
      var drawing = ask.querySelector(".minitape-drawing");
      var answer = ask.parentNode.querySelector(".minitape-answer");
      var expected = JSON.parse(ask.getAttribute("data-expected"));
      var box = document.createElement("p");
      box.className = "minitape-quiz";
      box.innerHTML = '<input type="text" placeholder="your number" size="14"> ' +
        '<button type="button">check</button> <span class="minitape-feedback"></span>';
      ask.insertBefore(box, drawing);
      answer.hidden = true;
      var input = box.querySelector("input"), feedback = box.querySelector("span");
      function check() {
        var given = input.value.split(/[\\s,\\[\\]]+/).filter(function (t) {
          return t !== ""; }).map(Number);
        if (!given.length || given.some(isNaN)) {
          feedback.textContent = "type a number, e.g. 18.0";
          return;
        }
        var right = (given.length === 1 || given.length === expected.length) &&
          expected.every(function (e, i) {
            var g = given.length === 1 ? given[0] : given[i];
            return Math.abs(g - e) <= 1e-6 + 1e-3 * Math.abs(e); });
        var said = given.length === 1 ? number(given[0]) : "[" + given.map(number).join(", ") + "]";
        feedback.textContent = (right ? "right" : "not quite (you said " + said + ")") + ": " +
          ask.getAttribute("data-rule");
        drawing.hidden = true;
        answer.hidden = false;
        answer.open = true;
      }
      box.querySelector("button").onclick = check;
      input.onkeydown = function (e) { if (e.key === "Enter") { check(); } };
    })(asks[q]);
  }
  show(parseInt(root.getAttribute("data-start"), 10) || 0);
})();"""


@contextlib.contextmanager
def _not_recording():
    """Pause every tape of this thread while the player computes its gradients."""
    saved = list(state.tapes)
    state.tapes[:] = []
    try:
        yield
    finally:
        state.tapes[:] = saved


def _fan_in(ops, source_ids):
    """tensor id -> how many op inputs read it (on ops that depend on a source)."""
    reaches = set(source_ids)
    counts = {}
    for op in ops:
        if reaches.isdisjoint(op.input_ids):
            continue
        reaches.update(op.output_ids)
        for i in dict.fromkeys(op.input_ids):
            counts[i] = counts.get(i, 0) + 1
    return counts


def _first_missing(ops, grads, source_ids):
    """The op whose missing gradient stopped the walk: the latest op with no registry entry
    whose output had received a gradient."""
    for op in reversed(ops):
        if op.grad_fn is None and any(o in grads for o in op.output_ids):
            try:
                registry.lookup(op.type)
            except LookupError:
                return op
    return ops[-1]


def _summaries(grads, received, seeds=None) -> dict:
    out = {i: summarize(gradient_value(g)) for i, g in grads.items()}
    for i, value in (seeds or {}).items():   # the target's 1 stays drawn once handed on
        out.setdefault(i, value)
    for i, values in received.items():   # entries the walk already handed upstream
        if i not in out:
            out[i] = summarize(np.asarray(sum(values[1:], values[0])))
    return out


def term(label) -> str:
    """``label`` as a term of a sentence's formula: a name (``y``, ``y₂``, ``self.h``,
    ``ys[i]``) as it is, anything else in parentheses, so that ``dz/d(x * 2.0) * 2.0`` and
    ``(sin #1) * (cos #2)`` read as they mean, not as ``dz/dx * 2.0 * 2.0``.

    >>> term("y"), term("x * 2.0"), term("sin #3")
    ('y', '(x * 2.0)', '(sin #3)')
    """
    return label if re.fullmatch(r"[\w.]+(\[[^\]]*\])*", label) else f"({label})"


def _value_text(value, shape):
    if value is None:
        return f"(shape {tuple(shape)})"
    return format_value(value)


# -- local derivative rules, in words ---------------------------------------------------------

def local_rules(op_type, ins, out) -> list:
    """The local derivative d out / d input, one string per input, for common op types.

    >>> local_rules("Mul", ["x", "y"], "z")
    ['y', 'x']
    """
    x = ins[0] if ins else "x"
    y = ins[1] if len(ins) > 1 else "y"
    rules = {
        "AddV2": ["1", "1"],
        "Sub": ["1", "-1"],
        "Mul": [y, x],
        "RealDiv": [f"1/{y}", f"-{x}/{y}**2"],
        "Pow": [f"{y}*{x}**({y}-1)", f"{out}*log({x})"],
        "Square": [f"2*{x}"],
        "Sqrt": [f"0.5/{out}"],
        "Exp": [out],
        "Log": [f"1/{x}"],
        "Sin": [f"cos({x})"],
        "Cos": [f"-sin({x})"],
        "Tanh": [f"1 - {out}**2"],
        "Sigmoid": [f"{out}*(1 - {out})"],
        "Relu": [f"(1 where {x} > 0, else 0)"],
        "Neg": ["-1"],
        "Identity": ["1"],
        "Sum": ["1 for every element summed"],
        "Mean": ["1/n for each of the n elements averaged"],
        "MatMul": [f"(upstream) @ {y}^T", f"{x}^T @ (upstream)"],
        "Reshape": ["the gradient reshaped back"],
        "Transpose": ["the gradient transposed back"],
    }
    default = [f"the registered gradient of {op_type}"] * len(ins)
    return rules.get(op_type, default)[:len(ins)] + default[len(rules.get(op_type, [])):]


def combine_rules(rules, op_type) -> str:
    """The rule for an input used several times (``x * x``): the sum of its rules."""
    if len(rules) == 1:
        return rules[0]
    if len(set(rules)) == 1:
        return f"{len(rules)}*{rules[0]}"
    return "(" + " + ".join(rules) + ")"
