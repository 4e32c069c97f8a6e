"""Draw a tape with graphviz: ``draw_tape(tape, target, sources)`` -> ``graphviz.Digraph``.

The picture is made from ``tape_graph``'s plain data in three steps:

1. **Choose what to show.** With ``depth=k`` only the ops at most ``k`` steps upstream of the
   target are kept. Long chains of elementwise ops (``y = y * 1.01`` a thousand times) are
   collapsed into one node (``collapse=True``, chains of at least ``min_run`` ops). If the
   picture still has more than ``max_nodes`` nodes, the depth is reduced until it fits.
2. **Style the nodes.** Ops are boxes numbered ``#1``, ``#2``, ... in the order they ran
   (coloured per tape when several tapes are drawn), tensors are ellipses labelled in the
   learner's words (``y`` for ``y = x * x``) with their shape, dtype, value and, after
   ``gradient``, the gradient that reached them (in red). Tensors the tape saved for the
   backward pass are orange, as ``torchviz`` draws them. Variables have a double border,
   watched tensors a green one, the target a bold one. ``StopGradient`` is an octagon, an op
   with no registered gradient is red. Whatever does not connect the target to the sources
   is grey. Red dashed arrows show the gradient going back, only out of the ops the last
   backward pass went through (with ``contributions=True``, labelled with the contribution
   each carried, and a tensor that received several shows their sum). An arrow into an op
   whose argument order matters is named at its head with TensorFlow's name for the
   argument (``x`` and ``y`` of ``Sub``, ``a`` and ``b`` of ``MatMul``), so ``a - b`` and
   ``b - a`` differ. The target's chain of ops is kept straight (one graphviz ``group``).
3. **Add notes.** ``stop_recording`` blocks and ``reset`` calls appear as notes; a source whose
   gradient is ``None`` gets a "why" note from ``explain``; a legend under the drawing says
   what the marks it uses mean (``legend=False`` leaves it out).

Node names in the DOT source are the graph's ids, counted per drawing (``op1``, ``t1``), so
the same program drawn twice gives the same text, and tests compare it instead of pixels.
The drawing has an opaque white background and shows in a notebook as an ``<img>`` of its
SVG in ``text/html`` (what JupyterLab, trusted or not, nbconvert and Sphinx/myst-nb show),
with the SVG and a PNG copy next to it for other viewers. In a dark theme (JupyterLab's,
``nbconvert --theme dark``) it is a dark card: the SVG inverts its own lightness, keeping the
hues, where the page's CSS ``color-scheme`` is dark (``themed_svg``, ``drawing_html``). It is
laid out, when rendered, to be read in a 950 px notebook column with no text
under 11 px (``fit_to_column``): shrunk a little, turned from top-to-bottom to left-to-right
(or back), or left wide, so that the output scrolls sideways; never shrunk further.

>>> import minitape as mt
>>> from minitape.viz import draw_tape
>>> x = mt.Variable(3.0, name="x")
>>> with mt.GradientTape() as tape:
...     y = x * x
>>> dot = draw_tape(tape, y, x)
>>> "Mul" in dot.source
True
"""

from __future__ import annotations

import base64
import functools
import html
import re
import textwrap
import warnings

import numpy as np

from .graph import TapeGraph, as_tape_list, tape_graph
from .labels import float_text

# Ops applied element by element: a chain of them is collapsed into one node.
ELEMENTWISE = frozenset({
    "Abs", "AddV2", "Cast", "Cos", "Elu", "Erf", "Exp", "Expm1", "Identity", "LeakyRelu",
    "Log", "Log1p", "Maximum", "Minimum", "Mul", "Neg", "Pow", "RealDiv", "Reciprocal", "Relu",
    "Sigmoid", "Sign", "Sin", "Softplus", "Sqrt", "Square", "Sub", "Tan", "Tanh",
})

TAPE_COLOURS = ("#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf0", "#fff2b3", "#f6d5da")
GREY_FILL, GREY_LINE, GREY_TEXT = "#f4f4f4", "gray70", "gray55"
HIGHLIGHT = "#1f5fbf"        # the player's current step (blue: orange means "saved")
GRADIENT_COLOUR = "#c0392b"
SAVED_FILL = "#fdd9a8"       # tensors the tape holds for the backward pass (torchviz's orange)
# In JupyterLab's dark theme, a drawing or picture inside a widget (the player's, the
# explorers') shows as a dark card: its white background and dark ink inverted, the hues kept.
# (Only an inline <svg>: a drawing shown as an <img> darkens itself, see DARK_SVG_STYLE.)
DARK_FILTER = "invert(0.88) hue-rotate(180deg)"
DARK_THEME_STYLE = ("<style>[data-jp-theme-light='false'] .minitape-drawing > svg,"
                    "[data-jp-theme-light='false'] .minitape-explorer-image"
                    f"{{filter:{DARK_FILTER}}}</style>")
# A drawing shown as an image (<img src="data:image/svg+xml...">: a notebook output, the static
# player's frames) carries its own dark card: an SVG image follows the colour scheme of the
# element that shows it (CSS `color-scheme`; JupyterLab sets it on the page from its theme).
DARK_SVG_STYLE = ("<style>@media (prefers-color-scheme: dark)"
                  f"{{svg:root{{filter:{DARK_FILTER}}}}}</style>")
# ...and the page says which scheme: light unless the page is dark (JupyterLab's and nbconvert's
# `data-jp-theme-light`, pydata-sphinx-theme's `data-theme`), so that a light page stays light
# on a dark desktop. (A notebook that is not trusted drops this <style>: JupyterLab's own
# `color-scheme` then holds.)
PAGE_SCHEME_STYLE = ("<style>.minitape-graph img{color-scheme:light}"
                     "[data-jp-theme-light='false'] .minitape-graph img,"
                     "[data-theme='dark'] .minitape-graph img{color-scheme:dark}</style>")
MAX_WIDTH_INCHES = 9.5       # a JupyterLab notebook column is about 950 px wide
LABEL_WIDTH = 34             # characters per line in a tensor's label
PX_PER_INCH = 96             # graphviz's inch (72 pt) is 96 CSS px in a browser
MIN_TEXT_PX = 11             # no text of a drawing is shown smaller than this
SMALLEST_FONT = 10           # pt: edge labels, notes and the legend (node labels are 11 pt)
# The most a drawing may be shrunk to fit the column: its smallest text then shows at 11 px.
MIN_SCALE = MIN_TEXT_PX / (SMALLEST_FONT * PX_PER_INCH / 72)


# -- step 1: what to show -----------------------------------------------------------------------

class View:
    """Which ops and tensors of a TapeGraph are drawn, and which ops are collapsed.

    Attributes:
        ops: the visible OpNodes (not collapsed), in order.
        runs: lists of OpNodes drawn as one node each (``"run<first number>"``).
        tensors: ids of the visible TensorNodes.
        hidden_ops: how many ops the depth limit left out.
    """

    def __init__(self, ops, runs, tensors, hidden_ops):
        self.ops, self.runs, self.tensors, self.hidden_ops = ops, runs, tensors, hidden_ops

    def size(self) -> int:
        return len(self.ops) + len(self.runs) + len(self.tensors)


def op_depths(graph: TapeGraph) -> dict:
    """op id -> number of op steps between the op and the target (0: it produced the target).

    Without a target, the start is every tensor no op consumes (the ends of the graph). Ops
    that do not lead to the start are left out. One backward sweep, no recursion.
    """
    if graph.target_ids:
        start = set(graph.target_ids)
    else:
        consumed = {i for op in graph.ops for i in op.inputs}
        start = {o for op in graph.ops for o in op.outputs if o not in consumed}
    tensor_depth = dict.fromkeys(start, 0)
    depths = {}
    for op in reversed(graph.ops):
        ds = [tensor_depth[o] for o in op.outputs if o in tensor_depth]
        if not ds:
            continue
        d = depths[op.id] = min(ds)
        for i in op.inputs:
            tensor_depth[i] = min(tensor_depth.get(i, d + 1), d + 1)
    return depths


def choose_view(graph, depth=None, collapse=True, min_run=8, max_nodes=300,
                keep=()) -> View:
    """Apply the depth limit, the collapsing and the ``max_nodes`` budget (see module doc).

    ``keep``: tensor ids that must stay visible (e.g. the player's highlighted tensors).
    """
    depths = op_depths(graph) if (depth is not None or max_nodes) else {}
    view = _view_at_depth(graph, depths, depth, collapse, min_run, keep)
    if max_nodes and view.size() > max_nodes and depths:
        low, high = 0, max(depths.values()) if depth is None else depth
        while low < high:                 # the largest depth whose view fits
            mid = (low + high + 1) // 2
            if _view_at_depth(graph, depths, mid, collapse, min_run, keep).size() <= max_nodes:
                low = mid
            else:
                high = mid - 1
        view = _view_at_depth(graph, depths, low, collapse, min_run, keep)
    return view


def _view_at_depth(graph, depths, depth, collapse, min_run, keep):
    if depth is None:
        ops = list(graph.ops)
    else:
        ops = [op for op in graph.ops if depths.get(op.id, depth + 1) <= depth]
    known = {t.id for t in graph.tensors}
    pinned = [t for t in graph.target_ids + graph.source_ids + tuple(keep) if t in known]
    special = set(pinned) | {t.id for t in graph.tensors if t.watched}
    runs = find_runs(ops, special, min_run) if collapse else []
    in_runs = {op.id for run in runs for op in run}
    hidden = set()
    if runs:
        produced = {o for op in graph.ops for o in op.outputs}
        readers = {}
        for op in ops:
            for i in op.inputs:
                readers.setdefault(i, set()).add(op.id)
        for run in runs:
            hidden |= _inner_tensors(run, produced, readers, special)
    tensors = []
    for op in ops:
        tensors.extend(t for t in op.inputs + op.outputs if t not in hidden)
    if depth is None:   # watched tensors the tape never used still show up
        tensors.extend(t.id for t in graph.tensors if t.watched)
    tensors.extend(pinned)
    visible = [op for op in ops if op.id not in in_runs]
    return View(visible, runs, list(dict.fromkeys(tensors)), len(graph.ops) - len(ops))


def find_runs(ops, special, min_run) -> list:
    """Chains of at least ``min_run`` elementwise ops, each feeding only the next one.

    Ops in a run were recorded by the same tapes and are all connected or all not, so the
    collapsed node can be coloured like its ops. ``special`` tensors break a chain.
    """
    consumers = {}
    for op in ops:
        for i in op.inputs:
            consumers[i] = consumers.get(i, 0) + 1
    runs, current = [], []
    for op in ops:
        chains = op.type in ELEMENTWISE and len(op.outputs) == 1
        if chains and current:
            prev = current[-1]
            link = prev.outputs[0]
            if (link in op.inputs and consumers[link] == op.inputs.count(link)
                    and link not in special and op.tapes == prev.tapes
                    and op.connected == prev.connected):
                current.append(op)
                continue
        if len(current) >= min_run:
            runs.append(current)
        current = [op] if chains else []
    if len(current) >= min_run:
        runs.append(current)
    return runs


def _inner_tensors(run, produced, readers, special):
    """Tensors a collapsed run hides: the links between its ops, and constants only it reads.

    ``produced``: ids of tensors some op produced; ``readers``: tensor id -> ids of the ops
    that read it.
    """
    inside = {op.id for op in run}
    inner = {op.outputs[0] for op in run[:-1]}
    for op in run:
        for i in op.inputs:
            if i not in produced and i not in special and readers[i] <= inside:
                inner.add(i)
    return inner


# -- step 2: styling ------------------------------------------------------------------------------

def format_value(value, digits=4) -> str:
    """A value for a label: ``9.0``, ``[1, 2]`` (small arrays) or ``min .. mean .. max``."""
    if value is None:
        return ""
    if isinstance(value, tuple):
        lo, mean, hi = value
        return f"min {lo:.{digits}g}, mean {mean:.{digits}g}, max {hi:.{digits}g}"
    array = np.asarray(value)
    if array.ndim == 0:
        v = array.item()
        return float_text(v, digits) if isinstance(v, float) else str(v)
    text = np.array2string(array, precision=digits, separator=", ", suppress_small=True)
    return " ".join(text.split())



def printable(text) -> str:
    """``text`` with control characters shown as escapes (``a\\x00b``): graphviz rejects them."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _table(lines) -> str:
    """An HTML-like graphviz label: one row per ``(text, colour or None, bold)``."""
    rows = []
    for text, colour, bold in lines:
        cell = html.escape(printable(text))
        if bold:
            cell = f"<B>{cell}</B>"
        if colour:
            cell = f'<FONT COLOR="{colour}">{cell}</FONT>'
        rows.append(cell)
    return "<" + "<BR/>".join(rows) + ">"


def _tensor_label(t, grey, received=()):
    title = t.label or t.id
    kind = ("Variable" if t.trainable else "Variable (not trainable)") if t.variable else ""
    constant = not (t.variable or t.watched or t.produced_by)
    marks = [m for m in (kind, "constant to the tape" if constant else "",
                         "watched" if t.watched else "",
                         "target" if t.is_target else "", "source" if t.is_source else "") if m]
    lines = [(title, None, True)]
    if marks:
        lines.extend((part, None, False) for part in _wrap(", ".join(marks), 20))
    shape = "scalar" if t.shape == () else "x".join(str(d) for d in t.shape)
    lines.append((f"{shape} {t.dtype}", None, False))
    value = format_value(t.value if t.value is not None else t.summary)
    if value:
        lines.append((f"= {value}", None, False))
    if t.gradient is not None:
        total = format_value(t.gradient)
        if len(received) > 1 and all(r is not None for r in received):
            total = " + ".join(format_value(r) for r in received) + " = " + total
        lines.append((f"grad {total}", None if grey else GRADIENT_COLOUR, False))
    # A long line (a large tensor's min, mean and max) is wrapped in two: an ellipse is about
    # 1.4 times as wide as its longest line, and two such tensors side by side must fit.
    return _table([(part, c, b) for s, c, b in lines for part in _wrap(s)])


def _wrap(text, width=LABEL_WIDTH) -> list:
    """``text`` in lines of at most about ``width`` characters, broken after commas where it
    can (``min -0.9466, mean 0.000314,`` / ``max 0.951``), at most two lines."""
    lines = []
    for piece in text.split(", "):
        if lines and len(lines[-1]) + 2 + len(piece) <= width:
            lines[-1] += ", " + piece
        else:
            if lines:
                lines[-1] += ","
            lines.append(piece)
    if len(lines) > 2 or any(len(line) > width + 8 for line in lines):
        lines = textwrap.wrap(text, width, max_lines=2, placeholder=" ...")
    return lines or [""]


def _tensor_attrs(t, highlighted, received=()):
    grey = not t.connected
    attrs = {"shape": "ellipse", "style": "filled", "color": "black",
             "fillcolor": SAVED_FILL if t.saved else "white"}
    if t.variable:
        attrs["peripheries"] = "2"
        if not t.trainable:
            attrs["style"] = "filled,dashed"
    if t.watched:
        attrs["color"] = "darkgreen"
    if t.is_target:
        attrs["penwidth"] = "2.5"
    if grey:
        attrs.update(fillcolor=GREY_FILL, color=GREY_LINE, fontcolor=GREY_TEXT)
    if highlighted:
        attrs.update(color=HIGHLIGHT, penwidth="3")
    attrs["label"] = _tensor_label(t, grey, received)
    if t.saved:
        attrs["tooltip"] = "saved by the tape for the backward pass"
    return attrs


def _op_attrs(op, n_tapes, highlighted, show_source=False):
    lines = [(op.type, None, True), (f"#{op.number}", None, False)]
    attrs = {"shape": "box", "style": "rounded,filled"}
    if op.source:
        attrs["tooltip"] = printable(f"{op.location}: {op.source}")
        if show_source:
            lines.append((textwrap.shorten(op.source, 40), "gray30", False))
    colours = [TAPE_COLOURS[k % len(TAPE_COLOURS)] for k in op.tapes]
    if n_tapes > 1:
        lines.append(("tape " + ", ".join(str(k + 1) for k in op.tapes), None, False))
    if len(colours) > 1:
        attrs.update(style="filled,striped", fillcolor=":".join(colours))
    else:
        attrs["fillcolor"] = colours[0]
    if op.stop_gradient:
        attrs.update(shape="octagon", style="filled")
        lines.append(("blocks the gradient", None, False))
    elif op.gradient == "none":
        attrs["style"] += ",dashed"
        lines.append(("no gradient (by design)", None, False))
    elif op.gradient == "missing":
        attrs.update(color="red", penwidth="2")
        lines.append(("no gradient registered", "red", False))
    elif op.gradient == "custom":
        lines.append(("custom gradient", None, False))
    if not op.connected:
        attrs.update(fillcolor=GREY_FILL, color=GREY_LINE, fontcolor=GREY_TEXT)
    if highlighted:
        attrs.update(color=HIGHLIGHT, penwidth="3")
    attrs["label"] = _table(lines)
    return attrs


def _run_attrs(run, n_tapes, highlighted):
    counts = {}
    for op in run:
        counts[op.type] = counts.get(op.type, 0) + 1
    kinds = ", ".join(f"{t} x{n}" for t, n in counts.items())
    lines = [(f"{len(run)} elementwise ops", None, True),
             (textwrap.shorten(kinds, 50), None, False),
             (f"#{run[0].number} ... #{run[-1].number}", None, False)]
    attrs = _op_attrs(run[0], n_tapes, highlighted)
    attrs.update(shape="box3d", style="filled", label=_table(lines))
    if not run[0].connected:
        attrs.update(fillcolor=GREY_FILL)
    return attrs


def _group_by_module(graph, view):
    """Take the ops of each Module call out of ``view`` and return them as groups, with the
    tensors that only live inside a call hidden (``(new view, groups)``)."""
    groups, by_call = [], {}
    for op in view.ops:
        if op.module_call is not None:
            if op.module_call not in by_call:
                by_call[op.module_call] = []
                groups.append(by_call[op.module_call])
            by_call[op.module_call].append(op)
    grouped = {op.id for g in groups for op in g}
    tensors = {t.id: t for t in graph.tensors}
    special = set(graph.target_ids) | set(graph.source_ids)
    special |= {t.id for t in graph.tensors if t.watched or t.variable}
    readers = {}
    for op in graph.ops:
        for i in op.inputs:
            readers.setdefault(i, set()).add(op.id)
    hidden, params = set(), {}
    for g in groups:
        inside = {op.id for op in g}
        for op in g:
            for t in op.inputs:      # the call's own parameters go inside its box
                if tensors[t].variable and readers.get(t, set()) <= inside:
                    hidden.add(t)
                    params.setdefault(g[0].module_call, {})[t] = tensors[t]
            for t in op.inputs:      # constants the call made itself (Dropout's mask)
                if (tensors[t].produced_by is None and t not in special
                        and readers.get(t, set()) <= inside
                        and any(tensors[u].produced_by is not None
                                and tensors[u].produced_by not in inside
                                and tensors[u].tensor_id < tensors[t].tensor_id
                                for o in g for u in o.inputs)):
                    hidden.add(t)
            for t in op.outputs + op.inputs:
                if t in special:
                    continue
                # Hidden: what the call made and only the call itself read (the layer's
                # inner steps). Its inputs and its result stay visible.
                if tensors[t].produced_by in inside and readers.get(t, set()) <= inside \
                        and readers.get(t):
                    hidden.add(t)
    new = View([op for op in view.ops if op.id not in grouped], view.runs,
               [t for t in view.tensors if t not in hidden], view.hidden_ops)
    return new, [(g, list(params.get(g[0].module_call, {}).values())) for g in groups]


def _module_attrs(ops, params, n_tapes, highlighted):
    first = ops[0]
    counts = {}
    for op in ops:
        counts[op.type] = counts.get(op.type, 0) + 1
    kinds = ", ".join(t if n == 1 else f"{t} x{n}" for t, n in counts.items())
    lines = [(f"{first.module} ({first.module_type})", None, True),
             (textwrap.shorten(kinds, 50), None, False),
             (f"#{first.number} ... #{ops[-1].number}" if len(ops) > 1 else f"#{first.number}",
              None, False)]
    if params:   # the Variables drawn inside the box, with the gradient that reached them
        for p in params:
            shape = "x".join(str(d) for d in p.shape) or "scalar"
            lines.append((f"{p.label} {shape}", "gray30", False))
            if p.gradient is not None:
                lines.append((textwrap.shorten(f"grad {format_value(p.gradient, 3)}", 48),
                              GRADIENT_COLOUR, False))
    else:
        lines += [(p, "gray30", False) for p in first.module_params[:4]]
    attrs = _op_attrs(first, n_tapes, highlighted)
    attrs.update(shape="box", style="rounded,filled,bold", label=_table(lines))
    if not any(op.connected for op in ops):
        attrs.update(fillcolor=GREY_FILL)
    attrs.pop("tooltip", None)
    if first.source:
        attrs["tooltip"] = printable(f"{first.location}: {first.source}")
    return attrs


# -- step 3: the Digraph --------------------------------------------------------------------------

@functools.cache
def _drawing_class():
    """``TapeDrawing``: a ``graphviz.Digraph`` that fits a notebook column legibly, whose
    text form has no memory address, and that renders through ``minitape.viz.render``
    (Graphviz in-process with pygraphviz, or the ``dot`` program): ``pipe``, ``render`` and
    the notebook display work without ``dot``.

    Made on first use, so that ``import minitape.viz`` does not import graphviz. Notebooks
    store an output's text form next to its SVG; a stable one keeps re-executed lessons from
    changing in git for nothing.
    """
    import os
    import pathlib

    import graphviz

    from .render import graphviz_route, render_dot

    class TapeDrawing(graphviz.Digraph):
        fit = True          # lay out to fit the column when rendered (``draw_tape(fit=...)``)
        _fitted_cache = None

        def __repr__(self):
            nodes = sum(1 for line in self.body if "[" in line and "->" not in line)
            return f"<minitape tape drawing: {nodes} nodes; graphviz.Digraph>"

        def fitted(self):
            """The drawing as it is rendered: ``fit_to_column`` of it (itself with
            ``fit=False``)."""
            if not self.fit:
                return self
            source = self.source
            if self._fitted_cache is None or self._fitted_cache[0] != source:
                self._fitted_cache = (source, fit_to_column(self))
            return self._fitted_cache[1]

        def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
            # The SVG as an <img> in text/html, which JupyterLab (trusted or not), nbconvert
            # and myst-nb all show first: a dark card in a dark theme (drawing_html). The
            # SVG itself, and a PNG copy for viewers that show neither (GitHub may not).
            bundle = super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs)
            metadata = {}
            if "image/svg+xml" in bundle and (exclude is None or "text/html" not in exclude) \
                    and (include is None or "text/html" in include):
                bundle["text/html"] = drawing_html(bundle["image/svg+xml"], repr(self))
            if "image/svg+xml" in bundle and (exclude is None or "image/png" not in exclude):
                try:
                    bundle["image/png"] = self.pipe(format="png")
                except Exception as e:     # (a graphviz without PNG support, a crash)
                    warnings.warn(f"draw_tape: the PNG copy of the drawing failed ({e}); the "
                                  "SVG is shown alone (a notebook that is not trusted shows "
                                  "no SVG: run the cell)", RuntimeWarning, stacklevel=2)
                if self.fitted().graph_attr.get("size") is None and \
                        _svg_width_px(bundle["image/svg+xml"]) > MAX_WIDTH_INCHES * PX_PER_INCH:
                    # Wider than the column at its legible size: shown whole, and the output
                    # scrolls sideways, instead of JupyterLab shrinking the PNG to the column.
                    metadata = {m: {"unconfined": True} for m in bundle if m.startswith("image/")}
            return (bundle, metadata) if metadata else bundle

        def pipe(self, format=None, renderer=None, formatter=None, neato_no_op=None,
                 quiet=False, *, engine=None, encoding=None):
            """As ``graphviz.Digraph.pipe`` of the drawing laid out for the column
            (``fitted``), through ``minitape.viz.render.render_dot``."""
            fitted = self.fitted()
            if renderer or formatter or neato_no_op:    # options only the `dot` program has
                return graphviz.Digraph.pipe(fitted, format, renderer=renderer,
                                             formatter=formatter, neato_no_op=neato_no_op,
                                             quiet=quiet, engine=engine, encoding=encoding)
            data = render_dot(fitted.source, format or self.format, engine or self.engine,
                              quiet)
            return data.decode(encoding) if encoding else data

        def render(self, filename=None, directory=None, view=False, cleanup=False,
                   format=None, renderer=None, formatter=None, neato_no_op=None, quiet=False,
                   quiet_view=False, *, outfile=None, engine=None,
                   raise_if_result_exists=False, overwrite_source=False):
            """As ``graphviz.Digraph.render`` (source saved to ``filename``, the picture to
            ``filename.format`` or ``outfile``), in-process where pygraphviz is installed."""
            if renderer or formatter or neato_no_op or graphviz_route() == "dot":
                return super().render(filename, directory=directory, view=view,
                                      cleanup=cleanup, format=format, renderer=renderer,
                                      formatter=formatter, neato_no_op=neato_no_op,
                                      quiet=quiet, quiet_view=quiet_view,
                                      outfile=outfile, engine=engine,
                                      raise_if_result_exists=raise_if_result_exists,
                                      overwrite_source=overwrite_source)
            if outfile is not None:
                outfile = pathlib.Path(outfile)
                format = format or outfile.suffix.lstrip(".")
                if directory is None:
                    outfile = pathlib.Path(self.directory, outfile)
                if filename is None:
                    filename = outfile.with_suffix(".gv")
            format = format or self.format
            filepath = self.save(filename, directory=directory, skip_existing=None)
            rendered = outfile if outfile is not None else pathlib.Path(f"{filepath}.{format}")
            if raise_if_result_exists and rendered.exists():
                raise graphviz.FileExistsError(f"output file exists: {rendered}")
            rendered.write_bytes(render_dot(self.fitted().source, format,
                                            engine or self.engine, quiet))
            if cleanup:
                os.remove(filepath)
            if view or quiet_view:
                self._view(rendered, format=format, quiet=quiet_view)
            return str(rendered)

    return TapeDrawing


def themed_svg(svg: str) -> str:
    """``svg`` (graphviz's SVG text) with ``DARK_SVG_STYLE`` in it: shown as an image, it is a
    dark card where the page's colour scheme is dark, as it is (white) elsewhere. Inline in a
    page the style does nothing (``svg:root`` is not the root there)."""
    start = svg.find("<svg")
    if start < 0:
        raise ValueError(f"themed_svg: no <svg> element in {svg[:80]!r}")
    end = svg.index(">", start) + 1
    return svg[:end] + DARK_SVG_STYLE + svg[end:]


def svg_image(svg: str, alt: str) -> str:
    """An ``<img>`` of ``themed_svg(svg)`` at its natural size (never shrunk to the page, so
    its labels keep their legible size), in a box that scrolls sideways when the page is
    narrower: what a notebook output and the static player show. An ``<img>`` with a
    ``data:`` URL is what HTML sanitizers keep (JupyterLab's for an untrusted notebook, and
    static viewers'); an inline ``<svg>`` would be dropped."""
    data = base64.b64encode(themed_svg(svg).encode("utf-8")).decode("ascii")
    return (f'<img src="data:image/svg+xml;base64,{data}" style="max-width:none" '
            f'alt="{html.escape(alt)}">')


def drawing_html(svg: str, alt: str) -> str:
    """The ``text/html`` of a drawing's notebook output: ``svg_image`` with
    ``PAGE_SCHEME_STYLE`` (light on a light page, a dark card on a dark one)."""
    return (PAGE_SCHEME_STYLE + '<div class="minitape-graph" style="overflow-x:auto">'
            + svg_image(svg, alt) + "</div>")


def _svg_width_px(svg) -> float:
    """The width of a graphviz SVG in CSS px (graphviz writes it in pt)."""
    match = re.search(r'<svg[^>]*?\swidth="([\d.]+)pt"', svg)
    return float(match.group(1)) * PX_PER_INCH / 72 if match else 0.0


def _natural_size(dot):
    """``(width, height)`` in CSS px of ``dot`` laid out at full size (its padding included),
    or None without graphviz's ``dot`` program."""
    import graphviz

    from .render import GraphvizNotFound, render_dot
    try:
        svg = render_dot(dot.source, "svg").decode("utf-8")
    except (GraphvizNotFound, graphviz.CalledProcessError, RuntimeError):
        return None
    height = re.search(r'<svg[^>]*?\sheight="([\d.]+)pt"', svg)
    return _svg_width_px(svg), float(height.group(1)) * PX_PER_INCH / 72 if height else 0.0


def fit_to_column(dot, width_inches=MAX_WIDTH_INCHES):
    """A copy of a drawing laid out to be read in a notebook column ``width_inches`` wide.

    Its text is never shown smaller than ``MIN_TEXT_PX`` (11 CSS px):

    - a drawing that fits is left at its full size (11 pt labels show at 14.7 px);
    - one a little wider is shrunk to the column, by at most ``MIN_SCALE``;
    - one wider still is laid out in the other direction (left to right instead of top to
      bottom, or the reverse) if that fits better;
    - one that fits neither way keeps its full size: the notebook's output then scrolls
      sideways (``TapeDrawing`` marks its images ``unconfined``).

    Without graphviz's ``dot`` program it returns the copy unchanged.
    """
    fitted = dot.copy()
    fitted.fit = False
    fitted.graph_attr.pop("size", None)
    column = width_inches * PX_PER_INCH
    size = _natural_size(fitted)
    if size is None or size[0] <= column:
        return fitted
    rankdir = fitted.graph_attr.get("rankdir", "TB")
    if size[0] * MIN_SCALE > column and rankdir in ("TB", "LR"):
        fitted.graph_attr["rankdir"] = "LR" if rankdir == "TB" else "TB"
        other = _natural_size(fitted)
        if other is not None and other[0] < size[0]:
            size = other
        else:
            fitted.graph_attr["rankdir"] = rankdir
    if column < size[0] <= column / MIN_SCALE:
        fitted.graph_attr["size"] = f"{width_inches},1000"     # shrinks it to the column
    return fitted


def draw_tape(tape, target=None, sources=None, collapse=True, min_run=8, max_nodes=300,
              depth=None, highlight=None, why=True, rankdir="TB", graph=None,
              contributions=False, source=False, node_styles=None, group=None, fold=None,
              iteration=None, legend=True, fit=True):
    """Draw a tape (or a list of tapes) as a ``graphviz.Digraph``.

    Args:
        tape: a GradientTape, or a list of them (nested tapes: each op says which tapes
            recorded it, and is coloured accordingly).
        target, sources: optional; mark what connects them (the rest is grey). ``sources``
            defaults to the watched tensors.
        collapse: collapse chains of at least ``min_run`` elementwise ops into one node.
        max_nodes: if the picture has more nodes, keep only the ops nearest to the target.
        depth: keep only the ops at most ``depth`` steps upstream of the target.
        highlight: a node id (``"op12"``, ``"t7"``) to draw in orange (``TapePlayer``).
        why: add a note saying why a source's gradient is None (needs one tape and a target).
        rankdir: graphviz direction, ``"TB"`` (top to bottom) or ``"LR"``.
        graph: a ``TapeGraph`` already built from these arguments (skips ``tape_graph``).
        contributions: label each gradient arrow with the contribution it carried back; a
            tensor that received several shows their sum (``3.0 + 3.0 = 6.0``).
        source: write the learner's source line under each op (it is always the tooltip).
        node_styles: optional ``{node id: {graphviz attribute: value}}`` applied last (e.g.
            ``check_tape`` draws failing ops in red).
        group: ``"module"`` draws each call of a ``Module`` (a ``Dense``, a ``Sequential``'s
            layers) as one box labelled with the module's name and its parameters, the ops
            between modules as usual. None (the default) groups by module only when the
            tape has more than ``max_nodes`` ops; ``False`` never groups.
        fold: ``True`` draws a loop's repeated ops once, in a box marked ``×N`` (see
            ``fold.py``); None (the default) folds when the drawing would otherwise have more
            than ``max_nodes`` nodes (and ``group`` is not ``"module"``); ``False`` never folds.
            When folding, chains of elementwise ops are not collapsed, and a note says how many
            ops the boxes stand for.
        iteration: with ``fold``, which iteration each box shows (0-based, negative from
            the end as a Python index; default the last). The op given as ``highlight``
            shows its own iteration.
        legend: add a small legend under the drawing saying what its shapes, colours,
            borders and arrows mean (only those it uses); ``legend=False`` leaves it out.
        fit: when rendered, lay the drawing out for a notebook column of 950 px with no text
            smaller than 11 px (``fit_to_column``: shrink it a little, or turn it from top to
            bottom to left to right or back, or leave it wide so that the output scrolls);
            ``fit=False`` renders the DOT source as it is, at full size.

    Returns:
        A ``graphviz.Digraph``; in a notebook it shows as SVG (and PNG). ``.source`` is the
        DOT text, the same for the same program; ``.fitted().source`` is what is rendered.

    Raises:
        TypeError: ``tape`` is not a GradientTape (or a list of them).
    """
    tapes = as_tape_list(tape)
    if graph is None:
        graph = tape_graph(tapes, target, sources)
    if group is None:
        group = "module" if (max_nodes and len(graph.ops) > max_nodes
                             and any(op.module_call for op in graph.ops)) else False
    if group not in (False, "module"):
        raise ValueError(f"draw_tape: group must be 'module', None or False, got {group!r}")
    folds = _folds(graph, fold, group, depth, collapse, min_run, max_nodes, highlight, iteration)
    if folds:
        from .fold import finish_folded
        view = choose_view(graph, depth, False, min_run, None,
                           keep=(highlight,) if highlight else ())
        return finish_folded(_drawing_class(), tapes, graph, target, sources, view, folds,
                             highlight, rankdir, contributions, source, node_styles or {}, why,
                             legend, fit)
    if group == "module":
        collapse = False    # a module box replaces the chains inside it
    view = choose_view(graph, depth, collapse, min_run,
                       max_nodes if group != "module" else None,
                       keep=(highlight,) if highlight else ())
    modules = []
    if group == "module":
        view, modules = _group_by_module(graph, view)
    dot = _drawing_class()("tape", graph_attr={"rankdir": rankdir, "fontname": "Helvetica",
                                               "bgcolor": "white", "pad": "0.1"},
                           node_attr={"fontname": "Helvetica", "fontsize": "11"},
                           edge_attr={"arrowsize": "0.7"})
    dot.fit = bool(fit)
    tensors = {t.id: t for t in graph.tensors}
    received = {}
    for e in graph.edges:
        if e.kind == "input" and e.carried:
            received.setdefault(e.tail, []).append(e.gradient)
    styles = node_styles or {}
    spine = _spine(graph)
    for tid in view.tensors:
        attrs = _tensor_attrs(tensors[tid], tid == highlight,
                              received.get(tid, ()) if contributions else ())
        if tid in spine:
            attrs["group"] = "spine"
        dot.node(tid, **{**attrs, **styles.get(tid, {})})
    run_of = {}
    for run in view.runs:
        run_id = f"run{run[0].number}"
        for op in run:
            run_of[op.id] = run_id
        dot.node(run_id, **_run_attrs(run, graph.n_tapes, highlight in run_of and
                                      run_of[highlight] == run_id))
    for module, params in modules:
        module_id = f"module{module[0].module_call}"
        for op in module:
            run_of[op.id] = module_id
        dot.node(module_id, **_module_attrs(module, params, graph.n_tapes,
                                            highlight in run_of and
                                            run_of[highlight] == module_id))
    for op in view.ops:
        attrs = _op_attrs(op, graph.n_tapes, op.id == highlight, source)
        if op.id in spine:
            attrs["group"] = "spine"
        dot.node(op.id, **{**attrs, **styles.get(op.id, {})})
    roles, back = _draw_edges(dot, graph, view, run_of, contributions)
    _draw_events(dot, graph, view, run_of)
    if view.hidden_ops:
        dot.node("hidden", f"{view.hidden_ops} earlier ops not shown\n(depth / max_nodes limit)",
                 shape="plaintext", fontcolor=GREY_TEXT)
    if why and len(tapes) == 1 and target is not None:
        _draw_why(dot, tapes[0], graph, target, sources, set(view.tensors))
    if graph.n_tapes > 1:
        _draw_legend(dot, graph.n_tapes)
    if legend:
        dot.attr(label=legend_label(graph, view, highlight, roles, back), labelloc="b",
                 labeljust="l", fontsize=str(SMALLEST_FONT))
    return dot


def _folds(graph, fold, group, depth, collapse, min_run, max_nodes, highlight, iteration):
    """The ``Fold``s to draw (``fold.py``), or ``[]`` to draw the tape unfolded."""
    if fold not in (None, True, False):
        raise ValueError(f"draw_tape: fold must be True, False or None, got {fold!r}")
    if fold is None:
        keep = (highlight,) if highlight else ()
        fold = bool(max_nodes) and group != "module" and choose_view(
            graph, depth, collapse, min_run, None, keep).size() > max_nodes
    if not fold:
        return []
    from .fold import choose_iteration, find_folds
    folds = find_folds(graph.ops)
    choose_iteration(folds, iteration, highlight)
    return folds


def _spine(graph) -> set:
    """The ids of the target's main chain: the target, the op that made it, that op's first
    input made by an op, and so on back to a leaf. Drawn with one graphviz ``group``, the
    chain stays a straight line and the other inputs hang off its sides, instead of the
    picture drifting sideways with every op (a layer's ``x @ kernel + bias``)."""
    ops = {op.id: op for op in graph.ops}
    produced = {t.id: t.produced_by for t in graph.tensors}
    if graph.target_ids:
        tensor = graph.target_ids[0]
    elif graph.ops and graph.ops[-1].outputs:
        tensor = graph.ops[-1].outputs[0]
    else:
        return set()
    spine = set()
    while tensor is not None and tensor not in spine:
        spine.add(tensor)
        op = ops.get(produced.get(tensor))
        if op is None or not op.inputs:
            break
        spine.add(op.id)
        tensor = next((i for i in op.inputs if produced.get(i)), op.inputs[0])
    return spine


def _draw_edges(dot, graph, view, run_of, contributions) -> tuple:
    """Forward edges (black, grey when disconnected) and, where the last backward pass sent a
    gradient back along an edge, a red dashed edge from the op to that input. An input edge
    of an op whose argument order matters is named at its head (``x`` and ``y`` of ``Sub``),
    so that ``a - b`` and ``b - a`` draw differently. Returns ``(some edge was named, some
    gradient arrow was drawn)``."""
    shown = set(view.tensors) | {op.id for op in view.ops} | set(run_of.values())
    visited = {op.id for op in graph.ops if op.visited}
    done = set()
    named = back_drawn = False
    for e in graph.edges:
        tail, head = run_of.get(e.tail, e.tail), run_of.get(e.head, e.head)
        if tail not in shown or head not in shown:
            continue
        if tail == head or (tail, head, e.index) in done:
            continue
        done.add((tail, head, e.index))
        attrs = {} if e.connected else {"color": GREY_LINE}
        if e.role is not None and head == e.head:     # (not into a collapsed run)
            attrs.update(headlabel=e.role, labelfontsize=str(SMALLEST_FONT),
                         labelfontname="Helvetica", labelfontcolor="gray25",
                         labeldistance="1.6", labelangle="-35")
            named = True
        dot.edge(tail, head, **attrs)
        if e.kind == "input" and e.carried and e.head in visited:
            back = {"color": GRADIENT_COLOUR, "style": "dashed", "constraint": "false",
                    "arrowsize": "0.5"}
            if contributions and e.gradient is not None:
                back.update(label=printable(format_value(e.gradient)),
                            fontcolor=GRADIENT_COLOUR, fontsize=str(SMALLEST_FONT))
            elif (head, tail) in done:
                continue   # one unlabelled arrow is enough for ``x * x``
            done.add((head, tail))
            dot.edge(head, tail, **back)
            back_drawn = True
    return named, back_drawn


def _draw_events(dot, graph, view, run_of):
    visible = {op.id for op in view.ops} | set(run_of)
    for k, e in enumerate(graph.events, start=1):
        if e.after is not None and e.after not in visible:
            continue
        node_id = f"{e.kind}{k}"
        if e.kind == "stop_recording":
            text = "stop_recording():\noperations here were not recorded"
        else:
            text = "reset():\neverything recorded before was forgotten"
        if graph.n_tapes > 1:
            text += f"\n(tape {e.tape})"
        dot.node(node_id, text, shape="note", style="filled", fillcolor="#fff8dc",
                 fontcolor="gray30", color="gray60")
        shown = [t for t in e.tensors if t in view.tensors]
        if shown:     # the note points at what the block computed
            for t in shown:
                dot.edge(node_id, t, style="dotted", arrowhead="none", color="gray60")
        elif e.after is not None:
            dot.edge(run_of.get(e.after, e.after), node_id, style="dotted", arrowhead="none",
                     color="gray60")


def _draw_why(dot, tape, graph, target, sources, visible):
    """A note next to each source whose gradient is None, or NaN or inf, saying why
    (``explain``)."""
    from ..nest import flatten
    from .explain import diagnose
    if sources is None:
        sources = list(tape.watched)
    for s in flatten(sources):
        code, sentence = diagnose(tape, target, s)
        if code in ("connected", "missing_gradient") or not hasattr(s, "id"):
            continue
        try:
            node = graph.tensor(s).id
        except KeyError:
            continue
        if node not in visible:       # (drawn inside a module's box, or cut by depth)
            continue
        note = f"why_{node}"
        asked = "why NaN or inf: " if code == "non_finite" else "why None: "
        dot.node(note, printable(asked + textwrap.fill(sentence, 48)), shape="note",
                 style="filled", fillcolor="#fdecea", color=GRADIENT_COLOUR, fontsize="10")
        dot.edge(note, node, style="dotted", arrowhead="none", color=GRADIENT_COLOUR)


def legend_label(graph, view, highlight=None, roles=False, back=False) -> str:
    """The legend under a drawing (an HTML-like graphviz label): one line for each kind of
    mark the drawing uses, saying what it means (``roles``: some arrow names its argument;
    ``back``: some red dashed gradient arrow is drawn)."""
    shown = set(view.tensors)
    tensors = [t for t in graph.tensors if t.id in shown]
    ops = list(view.ops) + [op for run in view.runs for op in run]
    rows = [("box: an op; #1, #2, ... is the order it ran", None, None),
            ("ellipse: a tensor: its name, shape, dtype and value", None, None)]
    borders = [text for text, used in (
        ("double border: a Variable", any(t.variable for t in tensors)),
        ("green border: watched", any(t.watched for t in tensors)),
        ("bold border: the target", any(t.is_target for t in tensors))) if used]
    if borders:
        rows.append(("; ".join(borders), None, None))
    if any(t.saved for t in tensors):
        rows.append(("orange: saved by the tape for the backward pass", None, SAVED_FILL))
    if any(not t.connected for t in tensors) or any(not op.connected for op in ops):
        rows.append(("grey: not on a path from the target to a source", GREY_TEXT, GREY_FILL))
    if any(t.gradient is not None for t in tensors):
        rows.append(("red text: the gradient that reached the tensor", GRADIENT_COLOUR, None))
    if back:
        rows.append(("red dashed arrow: the gradient going back through an op",
                     GRADIENT_COLOUR, None))
    if roles:
        rows.append(("x, y (a, b) at an arrow: which argument of the op (x - y, a @ b)",
                     None, None))
    if any(op.stop_gradient for op in ops):
        rows.append(("octagon: stop_gradient, no gradient passes", None, None))
    if highlight:
        rows.append(("blue border: this step", HIGHLIGHT, None))
    cells = []
    for text, colour, fill in rows:
        cell = html.escape(text)
        if colour:
            cell = f'<FONT COLOR="{colour}">{cell}</FONT>'
        bg = f' BGCOLOR="{fill}"' if fill else ""
        cells.append(f'<TR><TD ALIGN="LEFT"{bg}>{cell}</TD></TR>')
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            '<TR><TD ALIGN="LEFT"><B>legend</B></TD></TR>' + "".join(cells) + "</TABLE>>")


def _draw_legend(dot, n_tapes):
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="tapes", fontname="Helvetica", color="gray70")
        for k in range(n_tapes):
            legend.node(f"legend{k}", f"tape {k + 1}", shape="box", style="rounded,filled",
                        fillcolor=TAPE_COLOURS[k % len(TAPE_COLOURS)])
