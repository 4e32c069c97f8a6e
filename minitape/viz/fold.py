"""Fold repeated structure: a Python loop's iterations drawn once, in a box marked ``×N``.

A loop such as ::

    y = x
    for _ in range(50):
        y = mt.math.sin(y) * 1.01 + 0.1

records 150 ops: ``Sin``, ``Mul``, ``AddV2``, fifty times over, each from the same source line.
``find_folds`` finds such runs in a ``TapeGraph``'s op list: a block of ``period`` ops whose
*signature* (op type, the learner's source line, the Module that made it, the tapes that
recorded it) repeats ``count`` times in a row. A Module called again and again (an RNN cell)
repeats the same way: its ops come from the same lines of the same Module. Where the tape
noted no source lines (a plain script, unless ``mt.config.record_source_lines(True)``), the
signature is the op type and the Module alone, so any repeated sequence of op types folds.

``draw_tape(tape, fold=True)`` then draws one iteration of each fold, by default the last one
(its values are the final ones), inside a box labelled ``×50``, and says how many ops the box
stands for. Each tensor of the other iterations is drawn as the matching tensor of the shown one, so

- an edge from one iteration into the next (``y`` carried round the loop) is drawn once, as an
  arrow from the body's output back to the op that reads it, labelled ``next iteration (×49)``;
- an edge from outside into the first iteration (``x``) is labelled ``iteration 1``;
- a tensor every iteration reads (a weight) is drawn once, outside the box;
- a red gradient arrow of the body stands for all its iterations, and is labelled with the sum
  of the contributions they carried back (``Σ 50 iterations: 3.2``), which is what a shared
  weight's gradient is.

``iteration=k`` (0-based, negative from the end, as a Python index) shows another iteration in
the box; the player passes it on (``TapePlayer(tape, z, x, fold=True, iteration=0)``), and when
the op it highlights lies in a fold, the box shows that op's iteration.

This is pure bookkeeping on ``TapeGraph`` data; the drawing reuses ``draw.py``'s styles.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

MAX_PERIOD = 64     # longest loop body looked for, in ops


@dataclass
class Fold:
    """A run of ``count`` repetitions of the same ``period`` ops.

    Attributes:
        iterations: ``count`` lists of ``period`` OpNodes, in execution order.
        shown: the index of the iteration drawn inside the box.
    """

    iterations: list
    shown: int = -1

    @property
    def count(self) -> int:
        return len(self.iterations)

    @property
    def period(self) -> int:
        return len(self.iterations[0])

    @property
    def body(self) -> list:
        """The ops of the iteration drawn."""
        return self.iterations[self.shown]

    @property
    def ops(self) -> list:
        return [op for it in self.iterations for op in it]

    @property
    def id(self) -> str:
        return f"fold{self.iterations[0][0].number}"

    def label(self) -> str:
        """``×50  (Sin, Mul, AddV2) · ops #1 ... #150 · iteration 50 shown``."""
        body = self.iterations[0]
        first, last = body[0], self.iterations[-1][-1]
        modules = {op.module for op in body}
        what = textwrap.shorten(", ".join(op.type for op in body), 60, placeholder=", ...")
        if len(modules) == 1 and None not in modules:
            what = f"calls of {first.module} ({first.module_type})"
        where = f" at {first.location}" if first.location else ""
        k = self.shown % self.count
        return (f"×{self.count}  {what}{where}\nops #{first.number} ... #{last.number}, "
                f"iteration {k + 1} of {self.count} shown")


def _signature(op):
    return (op.type, op.location, op.module, op.module_type, op.tapes)


def find_folds(ops, min_count=2, max_period=MAX_PERIOD) -> list:
    """Runs of ops that repeat the same block of ops (see the module docstring).

    Scans from the first op: at each position, the period whose repetitions cover the most ops
    wins (the shortest such period on a tie); a run needs ``min_count`` repetitions. Folds do
    not overlap. Cost: about ``len(ops) * max_period`` comparisons of small integers.

    >>> from types import SimpleNamespace as Op
    >>> ops = [Op(type=t, location="f.py:3", module=None, module_type=None, tapes=(0,), number=k)
    ...        for k, t in enumerate(["Exp"] + ["Sin", "Mul", "AddV2"] * 4, start=1)]
    >>> [(f.count, f.period, f.iterations[0][0].number) for f in find_folds(ops)]
    [(4, 3, 2)]
    """
    ids = {}
    sig = [ids.setdefault(_signature(op), len(ids)) for op in ops]
    n = len(sig)
    folds, i = [], 0
    while i < n:
        best_cover, best_p = 0, 0
        for p in range(1, min(max_period, (n - i) // 2) + 1):
            if sig[i + p] != sig[i]:
                continue
            j = i + p
            while j < n and sig[j] == sig[j - p]:
                j += 1
            count = (j - i) // p
            if count >= min_count and count * p > best_cover:
                best_cover, best_p = count * p, p
        if best_p:
            count = best_cover // best_p
            folds.append(Fold([list(ops[i + k * best_p: i + (k + 1) * best_p])
                               for k in range(count)]))
            i += best_cover
        else:
            i += 1
    return folds


def fold_map(graph, folds):
    """How each folded op and tensor is drawn: ``(node_map, iteration_of)``.

    ``node_map``: node id -> the id of the node drawn for it (the matching op or tensor of the
    shown iteration). ``iteration_of``: op id -> ``(fold, iteration index, position)``.
    Targets, sources, Variables and watched tensors are never mapped: they are drawn as
    themselves.
    """
    tensors = {t.id: t for t in graph.tensors}
    special = set(graph.target_ids) | set(graph.source_ids)
    special |= {t.id for t in graph.tensors if t.watched or t.variable}
    readers = {}
    for op in graph.ops:
        for t in op.inputs:
            readers.setdefault(t, set()).add(op.id)
    node_map, iteration_of = {}, {}
    for fold in folds:
        body = fold.body
        inside = {op.id for op in fold.ops}
        produced_inside = {o for op in fold.ops for o in op.outputs}
        for j, it in enumerate(fold.iterations):
            for b, op in enumerate(it):
                iteration_of[op.id] = (fold, j, b)
                node_map[op.id] = body[b].id
                for k, o in enumerate(op.outputs):
                    if o not in special and k < len(body[b].outputs):
                        node_map.setdefault(o, body[b].outputs[k])
                for k, t in enumerate(op.inputs):
                    if (t in produced_inside or t in special or t in node_map
                            or k >= len(body[b].inputs)):
                        continue
                    rep = body[b].inputs[k]
                    # A constant this iteration made for itself (the ``1.01`` of ``* 1.01``)
                    # is drawn as the shown iteration's one.
                    if (rep not in produced_inside and readers.get(t, set()) <= inside
                            and tensors[t].produced_by is None):
                        node_map[t] = rep
    return node_map, iteration_of


def draw_folded(dot, graph, view, folds, highlight, contributions, show_source, styles):
    """Add the folded picture's nodes and edges to ``dot`` (called by ``draw_tape``).

    ``view``: the ``draw.View`` of the unfolded graph; returns ``(node_map, view)`` with the
    view reduced to what is drawn, so that ``draw_tape`` can add its notes.
    """
    from .draw import View, _op_attrs, _tensor_attrs
    node_map, iteration_of = fold_map(graph, folds)
    folded_ops = set(iteration_of)
    shown_ops = [op for op in view.ops if op.id not in folded_ops]
    tensors = {t.id: t for t in graph.tensors}
    drawn_tensors = list(dict.fromkeys(node_map.get(t, t) for t in view.tensors))
    inside_tensors = {}
    for fold in folds:
        for op in fold.body:
            for o in op.outputs:
                if node_map.get(o, o) == o and o in drawn_tensors:
                    inside_tensors[o] = fold
    received = {}
    for e in graph.edges:
        if e.kind == "input" and e.carried:
            received.setdefault(node_map.get(e.tail, e.tail), []).append(e.gradient)
    hl = node_map.get(highlight, highlight)

    for tid in drawn_tensors:
        if tid in inside_tensors:
            continue
        attrs = _tensor_attrs(tensors[tid], tid == hl,
                              received.get(tid, ()) if contributions else ())
        dot.node(tid, **{**attrs, **styles.get(tid, {})})
    for fold in folds:
        with dot.subgraph(name=f"cluster_{fold.id}") as box:
            box.attr(label=fold.label(), style="rounded,dashed", color="#7d3c98",
                     fontcolor="#4a235a", fontname="Helvetica", fontsize="12", labeljust="l")
            for op in fold.body:
                attrs = _op_attrs(op, graph.n_tapes, op.id == hl, show_source)
                box.node(op.id, **{**attrs, **styles.get(op.id, {})})
                for o in op.outputs:
                    if inside_tensors.get(o) is fold:
                        attrs = _tensor_attrs(tensors[o], o == hl,
                                              received.get(o, ()) if contributions else ())
                        box.node(o, **{**attrs, **styles.get(o, {})})
    for op in shown_ops:
        attrs = _op_attrs(op, graph.n_tapes, op.id == hl, show_source)
        dot.node(op.id, **{**attrs, **styles.get(op.id, {})})
    _folded_edges(dot, graph, node_map, iteration_of, set(drawn_tensors)
                  | {op.id for op in shown_ops} | {op.id for f in folds for op in f.body},
                  contributions)
    reduced = View(shown_ops + [op for f in folds for op in f.body], [], drawn_tensors,
                   view.hidden_ops)
    return node_map, reduced


def _folded_edges(dot, graph, node_map, iteration_of, shown, contributions):
    from .draw import GRADIENT_COLOUR, GREY_LINE, format_value, printable
    producer = {}
    for op in graph.ops:
        for o in op.outputs:
            producer[o] = op.id
    visited = {op.id for op in graph.ops if op.visited}
    forward, backward = {}, {}
    for e in graph.edges:
        tail, head = node_map.get(e.tail, e.tail), node_map.get(e.head, e.head)
        if tail not in shown or head not in shown or tail == head:
            continue
        kind = "plain"
        if e.kind == "input" and e.head in iteration_of:
            fold, j, b = iteration_of[e.head]
            p = iteration_of.get(producer.get(e.tail))
            if p is not None and p[0] is fold and p[1] == j - 1:
                kind = "carried"
            elif j == 0 and fold.count > 1:
                # the value the loop starts from: iteration 2 reads iteration 1's output here
                second = fold.iterations[1][b].inputs[e.index]
                q = iteration_of.get(producer.get(second))
                if q is not None and q[0] is fold and q[1] == 0:
                    kind = "enters"
        key = (tail, head, e.index if e.kind == "input" else -1 - e.index, kind)
        forward.setdefault(key, []).append(e)
        if e.kind == "input" and e.carried and e.head in visited:
            backward.setdefault((head, tail), []).append(e.gradient)
    for (tail, head, _, kind), edges in forward.items():
        attrs = {} if any(e.connected for e in edges) else {"color": GREY_LINE}
        if kind == "carried":
            attrs.update(label=f"next iteration (×{len(edges)})", color="#7d3c98",
                         fontcolor="#7d3c98", fontsize="9", style="bold", constraint="false")
        elif kind == "enters":
            fold = iteration_of[edges[0].head][0]
            if fold.shown % fold.count != 0:
                attrs.update(label="iteration 1", fontcolor="#7d3c98", fontsize="9")
        elif len(edges) > 1 and len({e.tail for e in edges}) == 1:   # a shared tensor
            attrs.update(label=f"read by {len(edges)} iterations", fontsize="9",
                         fontcolor="gray30")
        dot.edge(tail, head, **attrs)
    for (head, tail), values in backward.items():
        back = {"color": GRADIENT_COLOUR, "style": "dashed", "constraint": "false",
                "arrowsize": "0.5"}
        total = _sum(values)
        if len(values) > 1 and total is not None:
            text = textwrap.shorten(f"Σ {len(values)} iterations: {format_value(total)}", 60,
                                    placeholder=" ...")
            back.update(label=printable(text),
                        fontcolor=GRADIENT_COLOUR, fontsize="9")
        elif contributions and values[0] is not None:
            back.update(label=printable(format_value(values[0])), fontcolor=GRADIENT_COLOUR,
                        fontsize="9")
        dot.edge(head, tail, **back)


def _sum(values):
    """The sum of the contributions (ndarrays), or None when one was only summarized."""
    if not values or not all(isinstance(v, np.ndarray) or np.isscalar(v) for v in values):
        return None
    return sum(values[1:], np.asarray(values[0]))


def choose_iteration(folds, iteration, highlight):
    """Set each fold's shown iteration: the highlighted op's one, else ``iteration``."""
    for fold in folds:
        k = -1 if iteration is None else int(iteration)
        if not -fold.count <= k < fold.count:
            raise ValueError(f"draw_tape: iteration={iteration!r} is out of range for a loop "
                             f"of {fold.count} iterations (use 0 .. {fold.count - 1}, or -1 "
                             "for the last)")
        for j, it in enumerate(fold.iterations):
            if any(op.id == highlight for op in it):
                k = j
        fold.shown = k


def finish_folded(drawing_class, tapes, graph, target, sources, view, folds, highlight,
                  rankdir, contributions, show_source, styles, why, legend=True, fit=True):
    """The whole folded drawing (``draw_tape(..., fold=True)``): a ``graphviz.Digraph``,
    laid out for the notebook column as every drawing (``draw.fit_to_column``)."""
    from .draw import (GREY_TEXT, SMALLEST_FONT, _draw_events, _draw_legend, _draw_why,
                       legend_label)
    dot = drawing_class("tape", graph_attr={"rankdir": rankdir, "fontname": "Helvetica",
                                            "bgcolor": "white", "pad": "0.1"},
                        node_attr={"fontname": "Helvetica", "fontsize": "11"},
                        edge_attr={"arrowsize": "0.7"})
    node_map, reduced = draw_folded(dot, graph, view, folds, highlight, contributions,
                                    show_source, styles)
    _draw_events(dot, graph, reduced, {k: v for k, v in node_map.items() if k.startswith("op")})
    folded = sum(f.count * f.period for f in folds)
    drawn = sum(f.period for f in folds)
    loops = ", ".join(f"{f.count} iterations of {f.period} ops" for f in folds)
    note = f"{folded} ops drawn as {drawn} (folded: {loops})"
    if view.hidden_ops:
        note += f"\n{view.hidden_ops} earlier ops not shown (depth limit)"
    dot.node("folded", note, shape="plaintext", fontcolor=GREY_TEXT)
    if why and len(tapes) == 1 and target is not None:
        _draw_why(dot, tapes[0], graph, target, sources, set(reduced.tensors))
    if graph.n_tapes > 1:
        _draw_legend(dot, graph.n_tapes)
    dot.fit = bool(fit)
    if legend:
        dot.attr(label=legend_label(graph, reduced, highlight, False, bool(contributions)),
                 labelloc="b", labeljust="l", fontsize=str(SMALLEST_FONT))
    return dot
