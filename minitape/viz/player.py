"""``TapePlayer``: step through a tape, forward op by op, then backward op by op.

Each step highlights one op in the drawing and says in one line what happens there:

- forward: ``forward through Mul (#12): y = x * x = 9.0``
- backward: ``backward through Mul (#13): dz/dy = 2*y = 18.0`` (the gradient each input
  receives: the gradient that arrived at the op's output times the op's local derivative, as
  a rule in words, then the number)
- last: the gradient that reached each source.

The gradients on the way back come from re-running the tape's backward pass here, op by op,
with the tape's own gradient functions and without releasing anything. That needs the tensors
the ops saved: give the player a ``persistent=True`` tape, or create it *before* calling
``gradient`` on a non-persistent tape (after that call the saved tensors are gone and the
player raises ``RuntimeError``).

The state is plain Python, so it can be tested without a browser::

    player.step = 3
    player.text          # the sentence of step 3
    player.highlighted   # the node id drawn in orange, e.g. "op12"

In a notebook the player is a row with a Play button linked to a slider, the sentence, and the
graph as SVG (``ipywidgets``; JupyterLab 4 shows it with no extension to build).

>>> import minitape as mt
>>> from minitape.viz import TapePlayer
>>> x = mt.constant(3.0)
>>> with mt.GradientTape(persistent=True) as tape:
...     tape.watch(x)
...     y = x * x
...     z = y * y
>>> player = TapePlayer(tape, z, x, names={"x": x, "y": y, "z": z})
>>> player.step = 2
>>> player.text  # doctest: +ELLIPSIS
'backward through Mul (#...): dz/dy = 2*y = 18.0'
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from .. import registry
from ..tape import GradientTape, _call_gradient, _state, flatten, summarize
from ..tensor import Tensor
from .draw import draw_tape, format_value
from .graph import tape_graph

# Forward formulas: infix operators, and ops written as functions.
INFIX = {"AddV2": "+", "Sub": "-", "Mul": "*", "RealDiv": "/", "Pow": "**", "MatMul": "@",
         "BatchMatMulV2": "@"}


@dataclass
class Step:
    """One step of the player: ``kind`` is "forward", "backward" or "done"; ``op`` the
    Operation (None for "done"); ``highlight`` the node id to draw in orange."""

    kind: str
    op: object
    text: str
    highlight: str | None
    grads: dict = field(default_factory=dict)   # tensor id -> gradient so far (drawing)


class TapePlayer:
    """Step through the forward and backward passes of a recorded tape (see module doc).

    Args:
        tape: a GradientTape that still holds its saved tensors (persistent, or not yet asked
            for a gradient).
        target: the Tensor to differentiate (summed if not scalar).
        sources: a Tensor/Variable or a list of them; default: the watched tensors.
        names: optional ``{"x": x, "y": y}``: names to use in the sentences and drawing.
        **draw_kwargs: passed to ``draw_tape`` (``rankdir``, ``max_nodes``, ...).

    Raises:
        TypeError: ``tape`` is not a GradientTape or ``target`` not a Tensor.
        RuntimeError: the tape released its saved tensors (a non-persistent tape after
            ``gradient``).
    """

    def __init__(self, tape, target, sources=None, names=None, **draw_kwargs):
        if not isinstance(tape, GradientTape):
            raise TypeError(f"TapePlayer expects a minitape GradientTape, got "
                            f"{type(tape).__name__}")
        if not isinstance(target, Tensor):
            raise TypeError(f"TapePlayer target must be a minitape Tensor, got "
                            f"{type(target).__name__}")
        if tape._released or any(op._inputs is None for op in tape._ops):
            raise RuntimeError(
                "TapePlayer needs the tensors the tape saved for its backward pass, and this "
                "non-persistent tape released them when gradient() ran: record with "
                "mt.GradientTape(persistent=True), or create the player before calling gradient")
        self.tape = tape
        self.target = target
        self.sources = list(tape._watched.values()) if sources is None else flatten(sources)
        self._names = {t._id: n for n, t in (names or {}).items()}
        self._draw_kwargs = draw_kwargs
        self._graph = tape_graph(tape, target, self.sources)
        for node in self._graph.tensors:        # names given here also show in the drawing
            node.name = self._names.get(node.tensor_id, node.name)
        with _not_recording():   # replaying must not add ops to any tape
            self.steps = self._forward_steps() + self._backward_steps()
        self._step = 0
        self._svg = {}
        self._widgets = None

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
        if self._widgets is not None:
            self._widgets["slider"].value = k   # the slider's observer redraws
            self._refresh()

    @property
    def text(self) -> str:
        """The sentence of the current step."""
        return self.steps[self._step].text

    @property
    def highlighted(self):
        """The node id highlighted at the current step (``"op12"``, ``"t7"``), or None."""
        return self.steps[self._step].highlight

    def __len__(self):
        return len(self.steps)

    # -- naming -----------------------------------------------------------------------------
    def name(self, tensor_id) -> str:
        """The name used for a tensor: from ``names``, its own name, else its drawing label."""
        if tensor_id in self._names:
            return self._names[tensor_id]
        node = self._graph.tensor(tensor_id)
        if node.name and node.name != "Variable":
            return node.name
        return node.label or f"t{tensor_id}"

    # -- the forward steps ------------------------------------------------------------------
    def _forward_steps(self):
        steps = []
        for op in self.tape._ops:
            ins = [self.name(i) for i in op.input_ids]
            outs = ", ".join(self.name(o) for o in op.output_ids)
            if op.type in INFIX and len(ins) == 2:
                formula = f"{ins[0]} {INFIX[op.type]} {ins[1]}"
            else:
                formula = f"{op.type}({', '.join(ins)})"
            value = _value_text(op.output_values[0], op.output_shapes[0]) \
                if op.output_ids else ""
            text = f"forward through {op.type} (#{op.seq}): {outs} = {formula} = {value}"
            steps.append(Step("forward", op, text, f"op{op.seq}"))
        if not steps:
            steps.append(Step("forward", None, "the tape recorded no operations", None))
        return steps

    # -- the backward steps -----------------------------------------------------------------
    def _backward_steps(self):
        """Re-run the backward pass op by op (as ``tape.backward``), keeping each op's
        output and input gradients, without releasing anything."""
        from ..ops import array_ops, math_ops
        ops = self.tape._ops
        source_ids = {s._id for s in self.sources if isinstance(s, Tensor)}
        reaches = set(source_ids)
        for op in ops:
            if any(i in reaches for i in op.input_ids):
                reaches.update(op.output_ids)
        grads = {}
        if self.target.dtype.kind == "f":
            grads[self.target._id] = array_ops.ones_like(self.target)
        t_name = self.name(self.target._id)
        steps = []
        for op in reversed(ops):
            out_grads = [grads.get(i) for i in op.output_ids]
            if all(g is None for g in out_grads) or not any(i in reaches for i in op.input_ids):
                continue
            try:
                fn = op.grad_fn or registry.lookup(op.type)
            except LookupError:
                steps.append(Step("backward", op, f"backward through {op.type} (#{op.seq}): no "
                                  "gradient is registered for it, so tape.gradient raises "
                                  "LookupError here", f"op{op.seq}"))
                return steps + [self._done_step(grads, source_ids, t_name)]
            if fn is None:
                steps.append(Step("backward", op, f"backward through {op.type} (#{op.seq}): it "
                                  "has no gradient, so nothing flows to its input",
                                  f"op{op.seq}"))
                continue
            out_grads = [g if g is not None else Tensor(np.zeros(s, d))
                         for g, s, d in zip(out_grads, op.output_shapes, op.output_dtypes)]
            in_grads = _call_gradient(op, fn, out_grads, 0)
            sent = {}
            for i, g in zip(op.input_ids, in_grads):
                if g is None or i not in reaches:
                    continue
                sent[i] = g if i not in sent else math_ops.add(sent[i], g)
            for i, g in sent.items():
                grads[i] = g if i not in grads else math_ops.add(grads[i], g)
            text = self._backward_text(op, sent, t_name)
            steps.append(Step("backward", op, text, f"op{op.seq}", _summaries(grads)))
        return steps + [self._done_step(grads, source_ids, t_name)]

    def _backward_text(self, op, sent, t_name):
        out = op.output_ids[0]
        upstream = "" if out == self.target._id else f"d{t_name}/d{self.name(out)} * "
        rules = local_rules(op.type, [self.name(i) for i in op.input_ids], self.name(out))
        parts = []
        for i, g in sent.items():
            ks = [k for k, j in enumerate(op.input_ids) if j == i]
            rule = combine_rules([rules[k] for k in ks], op.type)
            parts.append(f"d{t_name}/d{self.name(i)} = {upstream}{rule} = "
                         f"{_value_text(g._value, g.shape)}")
        if not parts:
            parts.append("no input of it leads to a source")
        return f"backward through {op.type} (#{op.seq}): " + "; ".join(parts)

    def _done_step(self, grads, source_ids, t_name):
        parts = []
        for s in self.sources:
            g = grads.get(s._id)
            value = "None" if g is None else _value_text(g._value, g.shape)
            parts.append(f"d{t_name}/d{self.name(s._id)} = {value}")
        first = next(iter(self.sources), None)
        return Step("done", None, "done: " + "; ".join(parts),
                    f"t{first._id}" if first is not None else None, _summaries(grads))

    # -- the widget ---------------------------------------------------------------------------
    def svg(self, k=None) -> str:
        """The SVG drawing of step ``k`` (default: the current step), highlighted."""
        k = self._step if k is None else k
        if k not in self._svg:
            for node in self._graph.tensors:     # the gradients reached so far
                node.gradient = self.steps[k].grads.get(node.tensor_id)
            dot = draw_tape(self.tape, self.target, self.sources, graph=self._graph,
                            highlight=self.steps[k].highlight, **self._draw_kwargs)
            svg = dot.pipe(format="svg", encoding="utf-8")
            self._svg[k] = svg[svg.find("<svg"):]    # inline in HTML: no XML prologue
        return self._svg[k]

    @property
    def widget(self):
        """The ipywidgets box: Play + slider, the sentence, the graph."""
        if self._widgets is None:
            import ipywidgets as widgets
            n = len(self.steps) - 1
            play = widgets.Play(value=self._step, min=0, max=n, step=1, interval=1500,
                                description="Play")
            slider = widgets.IntSlider(value=self._step, min=0, max=n, description="step")
            widgets.jslink((play, "value"), (slider, "value"))
            text = widgets.HTML()
            graph = widgets.HTML()
            box = widgets.VBox([widgets.HBox([play, slider]), text, graph])
            self._widgets = {"play": play, "slider": slider, "text": text, "graph": graph,
                             "box": box}
            slider.observe(self._on_slider, names="value")
            self._refresh()
        return self._widgets["box"]

    def _on_slider(self, change):
        self._step = int(change["new"])
        self._refresh()

    def _refresh(self):
        import html
        w = self._widgets
        w["text"].value = f"<code>{html.escape(self.text)}</code>"
        # Graphviz sizes its SVG in points; let it shrink to the notebook's width instead.
        svg = self.svg().replace("<svg ", '<svg style="max-width:100%;height:auto" ', 1)
        w["graph"].value = f'<div style="max-width:100%;overflow-x:auto">{svg}</div>'

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.widget._repr_mimebundle_(include=include, exclude=exclude)

    def __repr__(self):
        return f"<TapePlayer step {self._step}/{len(self.steps) - 1}: {self.text}>"


@contextlib.contextmanager
def _not_recording():
    """Pause every tape of this thread while the player computes its gradients."""
    saved = list(_state.tapes)
    _state.tapes[:] = []
    try:
        yield
    finally:
        _state.tapes[:] = saved


def _summaries(grads) -> dict:
    return {i: summarize(g._value) for i, g in grads.items()}


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
