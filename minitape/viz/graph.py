"""A tape as plain data: the nodes and edges that ``draw_tape`` and ``TapePlayer`` draw.

``tape_graph(tape, target, sources)`` reads what the tape recorded and returns a ``TapeGraph``:

- one ``OpNode`` per recorded operation (op type, its number ``#1``, ``#2``, ... in this
  drawing, which tape recorded it, whether its gradient is registered, whether the last
  backward pass went through it, the learner's source line that made it),
- one ``TensorNode`` per tensor the operations read or produced (name, shape, dtype, the value
  if it is small or ``(min, mean, max)`` if it is large and still saved, Variable / watched
  marks, and after ``gradient`` the gradient that reached it: small ones always, large ones as
  ``(min, mean, max)`` for the sources, and for intermediate tensors on a persistent tape),
- ``Edge``s from each input tensor to its op and from each op to its outputs; after
  ``gradient``, an input edge carries the *contribution* the backward pass sent along it,
- ``Event``s for the ``stop_recording`` blocks and ``reset`` calls, and each tape's whole
  event log (``TapeGraph.tape_events``).

Given a ``target`` (and ``sources``, by default the watched tensors) it also marks what connects
them: a node is *connected* when a gradient can flow from the target down to a source through
it. ``StopGradient`` and other ops declared not differentiable cut the flow; integer tensors too.

Everything is computed by walking the op list forwards and backwards, never recursively.
Node ids are counted per drawing (``"op1"`` for the first op, ``"t1"`` for the first tensor
to appear), and tensors are labelled in the learner's words (``labels.py``), so the same
program always gives the same graph, whatever ran before it.

>>> import minitape as mt
>>> from minitape.viz import tape_graph
>>> x = mt.Variable(3.0, name="x")
>>> with mt.GradientTape() as tape:
...     y = x * x
>>> g = tape_graph(tape, y, x)
>>> [(op.type, op.number, op.visited) for op in g.ops]
[('Mul', 1, False)]
>>> g.tensor(x).name, float(g.tensor(y).value)
('x', 9.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine import registry
from ..nest import flatten
from ..engine.tape import GradientTape
from .labels import float_text, tensor_labels
from .record import record_of, source_line, summarize
from ..engine.tensor import Tensor, Variable


# TensorFlow's names for the inputs of ops whose argument order matters (its op definitions);
# other such ops with several inputs number them 0, 1, ...
ARGUMENT_NAMES = {
    "Sub": ("x", "y"), "RealDiv": ("x", "y"), "Pow": ("x", "y"), "MatMul": ("a", "b"),
    "BatchMatMulV2": ("x", "y"), "Greater": ("x", "y"), "GreaterEqual": ("x", "y"),
    "Less": ("x", "y"), "LessEqual": ("x", "y"), "SelectV2": ("condition", "t", "e"),
    "MatrixSolve": ("matrix", "rhs"), "Conv2D": ("input", "filter"),
    "DepthwiseConv2dNative": ("input", "filter"),
}
# Ops whose result does not depend on the order of their inputs: their arrows carry no name.
COMMUTATIVE = frozenset({"AddV2", "AddN", "Mul", "Maximum", "Minimum", "Equal", "NotEqual",
                         "SquaredDifference"})


def argument_role(op_type, index, n_inputs):
    """The name of input ``index`` of an op, where the order of its inputs matters.

    ``Sub``'s inputs are ``x`` and ``y`` (``x - y``), ``MatMul``'s ``a`` and ``b``, as in
    TensorFlow's op definitions; other ops with several inputs number them ``"0"``, ``"1"``,
    ... None for one-input ops and for ops whose inputs can be swapped (``AddV2``, ``Mul``).

    >>> argument_role("Sub", 1, 2), argument_role("Mul", 1, 2), argument_role("ConcatV2", 0, 3)
    ('y', None, '0')
    """
    if n_inputs < 2 or op_type in COMMUTATIVE:
        return None
    names = ARGUMENT_NAMES.get(op_type, ())
    return names[index] if len(names) == n_inputs else str(index)


@dataclass
class OpNode:
    """One recorded operation.

    Attributes:
        id: ``"op<number>"``, the node id.
        type: the op type, e.g. ``"Mul"``.
        seq: the engine's global stamp of the op (ordering only; never shown).
        number: the op's number in this drawing, 1, 2, ... in execution order (``#1``): the
            same in the drawing, ``explain``, the player and ``check_tape``.
        tapes: indices (into the list of tapes drawn) of the tapes that recorded it.
        inputs, outputs: tensor node ids, in argument order (an input may repeat: ``x * x``).
        gradient: ``"registered"``, ``"custom"`` (``custom_gradient``), ``"none"`` (declared
            not differentiable: ``StopGradient``, ``Round``, comparisons) or ``"missing"`` (no
            registry entry: ``gradient`` through it raises ``LookupError``).
        connected: True when the gradient of the target flows through this op to a source.
        visited: True when the last backward pass went through it (its gradient ran).
        source: the learner's source line that made it (stripped), or None.
        location: ``"file.py:12"`` or ``"cell 3:2"`` of that line, or None.
        backward_of: the number of the tape whose backward pass ran this op, else None.
        module, module_type, module_call: the innermost Module call that made the op: its
            name (``"dense"``), class name (``"Dense"``) and the call's number in this
            drawing (1, 2, ...); None outside any Module.
        module_params: that Module's Variables as ``"kernel 784x256"`` strings.
    """

    id: str
    type: str
    seq: int
    tapes: tuple
    inputs: tuple
    outputs: tuple
    gradient: str
    connected: bool = True
    label: str = ""
    number: int = 0
    seqs: tuple = ()
    visited: bool = False
    source: str | None = None
    location: str | None = None
    backward_of: int | None = None
    module: str | None = None
    module_type: str | None = None
    module_call: int | None = None
    module_params: tuple = ()

    @property
    def stop_gradient(self) -> bool:
        return self.type == "StopGradient"


@dataclass
class TensorNode:
    """One tensor seen by the tape.

    Attributes:
        id: ``"t<k>"``, the node id (k counts tensors in order of first appearance).
        tensor_id: the Tensor's ``id`` (a Variable and every read of it share one id).
        name: the Tensor's name, or None.
        shape, dtype: as recorded (dtype as a string, e.g. ``"float32"``).
        value: the value (ndarray) if it has at most 16 elements, else None.
        summary: ``(min, mean, max)`` of a large value still available, else None.
        variable: True for a Variable (as far as the tape knows: watched or given).
        trainable: the Variable's ``trainable`` flag, or None for a Tensor.
        watched: True if the tape watched it (``watch``, or a trainable Variable read).
        is_target, is_source: it was given as the target / one of the sources.
        produced_by: id of the op that produced it, or None for a leaf.
        gradient: the gradient that reached it in the last backward pass: an ndarray (small)
            or ``(min, mean, max)``; None if none reached it, and for a large intermediate
            gradient of a non-persistent tape (not kept, as its large values: summarizing
            every one would cost the backward pass three extra passes over each array).
        connected: True when the gradient of the target flows through it to a source.
        label: what drawings call it, in the learner's words: its ``name=``, else the
            variable it was assigned to or its short source text, else ``t1``, ``t2``, ...
            (see ``labels.py``).
        saved: True when an op's gradient rule needs it, so a tape holds it for the backward
            pass (a persistent tape keeps every tensor, yet marks only these).
    """

    id: str
    tensor_id: int
    name: str | None
    shape: tuple
    dtype: str
    value: np.ndarray | None = None
    summary: tuple | None = None
    variable: bool = False
    trainable: bool | None = None
    watched: bool = False
    is_target: bool = False
    is_source: bool = False
    produced_by: str | None = None
    gradient: object = None
    connected: bool = True
    label: str = ""
    saved: bool = False

    @property
    def gradient_reached(self) -> bool:
        return self.gradient is not None


@dataclass
class Edge:
    """A forward edge: tensor -> op (``kind="input"``, ``index`` = argument position) or
    op -> tensor (``kind="output"``). ``gradient``: for an input edge the last backward pass
    went through, the contribution it carried back to the tensor (an ndarray if small, else
    ``(min, mean, max)`` or None when a large value was not kept); ``carried`` is True for
    every input edge the last backward pass sent a gradient along. A tensor used twice gets
    two contributions, and its gradient is their sum. ``role``: for an input edge of an op
    whose argument order matters, which argument it is (``"x"`` or ``"y"`` of ``Sub``, see
    ``argument_role``), else None."""

    tail: str
    head: str
    kind: str
    index: int
    connected: bool = True
    gradient: object = None
    carried: bool = False
    role: str | None = None


@dataclass
class Event:
    """A moment when the tape did not record: ``kind`` is ``"stop_recording"`` (a block from
    sequence number ``seq`` to ``end``) or ``"reset"`` (at ``seq``; what came before is gone).
    ``tape`` is the index of the tape; ``after`` the id of the last op recorded before it."""

    kind: str
    seq: int
    end: int | None
    tape: int
    after: str | None = None
    tensors: tuple = ()     # for a stop_recording block: the leaf tensors made inside it


@dataclass
class TapeGraph:
    """Nodes and edges of one or more tapes (see the module docstring)."""

    ops: list = field(default_factory=list)
    tensors: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    events: list = field(default_factory=list)
    target_ids: tuple = ()
    source_ids: tuple = ()
    n_tapes: int = 1
    tape_events: dict = field(default_factory=dict)   # tape index -> tuple of TapeEvents
    tape_numbers: tuple = ()                          # the tapes' ``number``s, in order
    backward_visited: bool = False                    # a backward pass was recorded
    op_nodes: dict = field(default_factory=dict, repr=False)  # id(Operation) -> its OpNode

    def node(self, node_id):
        """The OpNode or TensorNode with this id (KeyError if there is none)."""
        return self._index()[node_id]

    def tensor(self, t):
        """The TensorNode of a Tensor/Variable (or of a tensor's ``id``)."""
        tid = t.id if isinstance(t, Tensor) else int(t)
        for node in self.tensors:
            if node.tensor_id == tid:
                return node
        raise KeyError(f"no tensor with id {tid} in this graph")

    def op_of(self, seq):
        """The OpNode of an Operation (any of the tapes' copies), or of the op with this
        ``seq`` (the stamp ``mt.viz``'s record gave it)."""
        if not isinstance(seq, int):
            try:
                return self.op_nodes[id(seq)]
            except KeyError:
                raise KeyError(f"no op {seq!r} in this graph") from None
        for node in self.ops:
            if node.seq == seq or seq in node.seqs:
                return node
        raise KeyError(f"no op with seq {seq} in this graph")

    def op_number(self, number):
        """The OpNode ``#number``."""
        return self.node(f"op{number}")

    def label(self, t):
        """The label of a Tensor/Variable in this graph (``"y"``, ``"t3"``)."""
        return self.tensor(t).label

    def _index(self):
        return {n.id: n for n in self.ops} | {n.id: n for n in self.tensors}


def gradient_kind(op) -> str:
    """How the backward pass treats ``op``: registered, custom, none or missing."""
    if op.custom:
        return "custom"
    try:
        fn = registry.lookup(op.type)
    except LookupError:
        return "missing"
    return "none" if fn is None else "registered"


def as_tape_list(tape) -> list:
    """``tape`` or a list/tuple of tapes -> a list of GradientTapes (TypeError otherwise)."""
    tapes = list(tape) if isinstance(tape, (list, tuple)) else [tape]
    for t in tapes:
        if not isinstance(t, GradientTape):
            raise TypeError(f"expected a minitape GradientTape (or a list of them), got "
                            f"{type(t).__name__} {t!r:.60}")
    if not tapes:
        raise ValueError("expected at least one GradientTape, got an empty list")
    return tapes


def tape_graph(tape, target=None, sources=None) -> TapeGraph:
    """Turn one tape (or a list of tapes, e.g. nested ones) into a ``TapeGraph``.

    Args:
        tape: a ``GradientTape``, or a list of them (ops recorded by several tapes appear once,
            with ``OpNode.tapes`` listing them).
        target: optional Tensor (or structure of Tensors) to mark connectivity from.
        sources: optional Tensor/Variable or structure of them; defaults to the watched
            tensors when ``target`` is given.

    Returns:
        A ``TapeGraph``. Without ``target`` every node is marked connected. Ops the last
        backward pass went through are ``visited``, and their input edges carry the
        contributions it sent back.

    Raises:
        TypeError: ``tape`` is not a GradientTape.
    """
    tapes = as_tape_list(tape)
    targets = [t for t in flatten(target) if isinstance(t, Tensor)] if target is not None else []
    if sources is None:
        source_list = [w for t in tapes for w in t.watched] if target is not None else []
    else:
        source_list = [s for s in flatten(sources) if isinstance(s, Tensor)]

    graph = TapeGraph(n_tapes=len(tapes))
    graph.tape_numbers = tuple(t.number for t in tapes)
    graph.tape_events = {k: t.events for k, t in enumerate(tapes)}
    records = [record_of(t) for t in tapes]
    merged = _merged_ops(tapes, records)
    passes = [r.last_pass for r in records if r.last_pass is not None]
    visited = set().union(*(p.visited for p in passes)) if passes else set()
    graph.backward_visited = bool(visited)
    node_of = {}     # tensor _id -> node id ("t1", ...), in order of first appearance
    tensors = {}     # node id -> TensorNode
    calls = {}       # Module call stamp -> its number in this drawing
    for number, (op, tape_ids, copies, seqs, note) in enumerate(merged, start=1):
        for i, shape, dtype in zip(op.input_ids + op.output_ids, op.shapes, op.dtypes):
            if i not in node_of:
                node_of[i] = f"t{len(node_of) + 1}"
                tensors[node_of[i]] = _new_tensor_node(node_of[i], i, shape, dtype)
        location, text = source_line(note.origin[0] if note and note.origin else None)
        node = OpNode(f"op{number}", op.type, seqs[0], tape_ids,
                      tuple(node_of[i] for i in op.input_ids),
                      tuple(node_of[i] for i in op.output_ids), gradient_kind(op),
                      number=number, seqs=seqs, visited=not visited.isdisjoint(seqs),
                      source=text, location=location,
                      backward_of=note.backward_of if note else None)
        if note and note.module_calls:
            module, stamp = note.module_calls[-1]
            node.module, node.module_type = module.name, type(module).__name__
            node.module_call = calls.setdefault(stamp, len(calls) + 1)
            node.module_params = _params(module)
        graph.ops.append(node)
        for c in copies:
            graph.op_nodes[id(c)] = node
        _add_tensors(tensors, op, node, copies, note)
        for k, i in enumerate(node.inputs):
            carried, value = _contribution(passes, seqs, k)
            graph.edges.append(Edge(i, node.id, "input", k, gradient=value, carried=carried,
                                    role=argument_role(op.type, k, len(node.inputs))))
        for k, o in enumerate(node.outputs):
            graph.edges.append(Edge(node.id, o, "output", k))

    live = _live_tensors(tapes, targets, source_list)
    for t in live.values():   # given or watched tensors the ops never touched still appear
        if t.id not in node_of:
            node_of[t.id] = f"t{len(node_of) + 1}"
            tensors[node_of[t.id]] = _new_tensor_node(node_of[t.id], t.id, t.shape, t.dtype)
    for node in tensors.values():
        _describe(node, live.get(node.tensor_id), tapes, passes)
    graph.tensors = list(tensors.values())
    constants = {n.tensor_id: _number_text(n.value) for n in graph.tensors
                 if n.produced_by is None and not n.watched and not n.variable
                 and n.tensor_id not in live                  # (not a target or source)
                 and n.value is not None and np.ndim(n.value) == 0}
    labels = tensor_labels([(op, note, number) for number, (op, _, _, _, note)
                            in enumerate(merged, start=1)], list(node_of), live,
                           {n.tensor_id: n.name for n in graph.tensors}, constants,
                           {i: o for r in records for i, o in r.origins.items()},
                           # (a tape recorded without source lines is drawn without names)
                           _held_names(live) if any(r.tape_number is not None
                                                    for r in records) else {})
    for node in graph.tensors:
        node.label = labels[node.tensor_id]
    graph.target_ids = tuple(dict.fromkeys(node_of[t.id] for t in targets if t.id in node_of))
    graph.source_ids = tuple(dict.fromkeys(node_of[s.id] for s in source_list
                                           if s.id in node_of))
    for nid in graph.target_ids:
        tensors[nid].is_target = True
    for nid in graph.source_ids:
        tensors[nid].is_source = True
    graph.events = _events(tapes, graph.ops, graph.tensors)
    if targets:
        mark_connected(graph)
    return graph


def _held_names(live):
    """tensor id -> the name under which the learner's code that asked for the drawing (the
    first frame outside minitape) holds a target or source: what to call one that no
    recorded op made and no line of code names (``y = x ** 2`` of a Variable the tape did
    not watch: the tape recorded nothing)."""
    import sys
    from ..debugging import learner_frame_of
    frame = learner_frame_of(sys._getframe(2))
    if frame is None or not live:
        return {}
    held, passed = {}, {}
    # A helper's parameter (``def show(tape, target, source)``) holds what its caller
    # named: the callers' frames are looked at too, a few of them.
    for _ in range(4):
        code = frame.f_code
        arguments = set(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
        for name, value in list(frame.f_locals.items()):
            if isinstance(value, Tensor) and value.id in live and value.id not in held \
                    and name.isidentifier() and not name.startswith("_"):
                (passed if name in arguments else held).setdefault(value.id, name)
        frame = learner_frame_of(frame.f_back)
        if frame is None or all(i in held for i in live):
            break
    return {**passed, **held}


def _merged_ops(tapes, records):
    """All recorded ops in execution order, as ``(op, tape indices, every tape's copy, their
    stamps, the first copy's OpNote or None)``.

    Nested tapes each record their own Operation for one executed op; they share the output
    ids, which identifies them as one op. The stamps come from each tape's record (a tape
    without one numbers its ops by position).
    """
    by_outputs = {}
    for k, (t, r) in enumerate(zip(tapes, records)):
        for position, op in enumerate(t.operations):
            note = r.note(op)
            seq = note.seq if note is not None else position
            key = op.output_ids
            if key in by_outputs:
                first, ks, copies, seqs, first_note = by_outputs[key]
                if seq < seqs[0]:
                    first, first_note, copies, seqs = op, note, (op,) + copies, (seq,) + seqs
                else:
                    copies, seqs = copies + (op,), seqs + (seq,)
                by_outputs[key] = (first, ks + (k,), copies, seqs, first_note or note)
            else:
                by_outputs[key] = (op, (k,), (op,), (seq,), note)
    return sorted(by_outputs.values(), key=lambda item: item[3][0])


def _number_text(value):
    """``1.0``, ``0.5``, ``3``: a scalar constant as the code would write it."""
    v = np.asarray(value).item()
    return float_text(v, 6) if isinstance(v, float) else str(v)


def _params(module):
    """A Module's Variables as ``("kernel 3x2", "bias 2")``, for the drawing's module boxes."""
    try:
        variables = module.variables
    except Exception:      # a Module in the middle of being built
        return ()
    return tuple(f"{v.name} {'x'.join(map(str, v.shape)) or 'scalar'}" for v in variables)


def _contribution(passes, seqs, k):
    """``(carried, value)`` of input edge ``k`` of an op (any tape's copy) in the last pass."""
    for p in passes:
        for seq in seqs:
            if (seq, k) in p.contributions:
                return True, p.contributions[(seq, k)]
    return False, None


def _new_tensor_node(node_id, tensor_id, shape, dtype) -> TensorNode:
    return TensorNode(node_id, tensor_id, None, tuple(shape), np.dtype(dtype).name)


def _add_tensors(tensors, op, node, copies, note):
    """Fill in the TensorNodes of ``op``'s inputs and outputs (first appearance wins), and
    mark those a tape still holds for its backward pass as ``saved``. ``note``: what the
    tape's record noted of the op (small values, explicit names), or None."""
    n_in = len(op.input_ids)
    values = note.values if note is not None else (None,) * len(op.shapes)
    names = note.names if note is not None and note.names else (None,) * len(op.shapes)
    for k in range(n_in):
        tn = tensors[node.inputs[k]]
        saved = [c.saved[0][k] for c in copies if c.saved is not None]
        kept = next((t for t in saved if t is not None), None)
        tn.saved = tn.saved or (kept is not None and _needed(note, 0, k))
        tn.name = tn.name or names[k]
        _fill_value(tn, values[k], kept)
    for k in range(len(op.output_ids)):
        tn = tensors[node.outputs[k]]
        tn.produced_by = tn.produced_by or node.id
        saved = [c.saved[1][k] for c in copies if c.saved is not None]
        kept = next((t for t in saved if t is not None), None)
        tn.saved = tn.saved or (kept is not None and _needed(note, 1, k))
        tn.name = tn.name or names[n_in + k]
        _fill_value(tn, values[n_in + k], kept)


def _needed(note, side, k):
    """Does the op's gradient rule need its input (``side`` 0) or output (1) number ``k``?

    A persistent tape keeps every tensor; the tape's record notes what the rule needs
    (``OpNote.needs``, as the op gave it to ``record``). A non-persistent tape keeps only
    that, so what it kept is what is needed.
    """
    needs = note.needs if note is not None else None
    if needs is None:
        return True
    keep = needs[side]
    return keep is True or (keep is not False and k in keep)


def _fill_value(tn, small_value, saved_tensor):
    """Set the value (small) or summary (large, from a still-saved tensor), if not yet known."""
    if saved_tensor is not None and tn.name is None:
        tn.name = saved_tensor.name
    if tn.value is not None or tn.summary is not None:
        return
    if small_value is not None:
        tn.value = np.asarray(small_value)
    elif saved_tensor is not None:
        s = summarize(np.asarray(saved_tensor))
        if isinstance(s, tuple):
            tn.summary = s
        elif s is not None:
            tn.value = np.asarray(s)


def _live_tensors(tapes, targets, sources) -> dict:
    """id -> Tensor/Variable object we can still look at: watched, target, sources."""
    live = {}
    for t in tapes:
        for w in t.watched:
            live.setdefault(w.id, w)
    for t in list(targets) + list(sources):
        # A Variable beats a snapshot Tensor with the same id.
        if t.id not in live or isinstance(t, Variable):
            live[t.id] = t
    return live


def _describe(node, obj, tapes, passes):
    """Fill in name, Variable/watched marks, value and gradient of one TensorNode."""
    if obj is not None:
        node.name = obj.name if obj.name is not None else node.name
        if isinstance(obj, Variable):
            node.variable, node.trainable = True, obj.trainable
        if node.value is None and node.summary is None:
            _fill_value(node, None, obj)
    node.watched = any(w.id == node.tensor_id for t in tapes for w in t.watched)
    for p in passes:
        g = p.gradients.get(node.tensor_id)
        if g is not None:
            node.gradient = summarize(np.asarray(g))
            break
        if node.tensor_id in p.reached:
            node.gradient = p.reached[node.tensor_id]
            break


def stop_recording_spans(events):
    """``(start, end)`` stamps of each ``stop_recording`` block in a tape's events (a block
    ends when the tape resumes or leaves its ``with``; an unfinished one ends at None)."""
    spans, start = [], None
    for e in events:
        if e.kind == "paused":
            start = e.seq
        elif e.kind in ("resumed", "exited") and start is not None:
            spans.append((start, e.seq))
            start = None
    if start is not None:
        spans.append((start, None))
    return spans


def _events(tapes, ops, tensors=()) -> list:
    """The stop_recording blocks and resets of every tape, each placed after the last op
    recorded before it."""
    seqs = [(op.seq, op.id) for op in ops]
    events = []
    for k, t in enumerate(tapes):
        for start, end in stop_recording_spans(t.events):
            events.append(Event("stop_recording", start, end, k))
        for e in t.events:
            if e.kind == "reset":
                events.append(Event("reset", e.seq, None, k))
    for e in events:
        before = [op_id for s, op_id in seqs if s < e.seq]
        e.after = before[-1] if before else None
        if e.kind == "stop_recording":
            e.tensors = _made_during(ops, tensors, e.seq, e.end)
    return sorted(events, key=lambda e: e.seq)


def _made_during(ops, tensors, start, end):
    """Leaf tensors (no recorded op made them, not watched) created between the stamps
    ``start`` and ``end``: what a ``stop_recording`` block computed and the tape then read as
    constants. Tensor ids grow with time, so such a tensor's id lies between the outputs of
    the last op before the block and those of the first op after it."""
    tid = {n.id: n.tensor_id for n in tensors}
    lo = max((tid[o] for op in ops if op.seq < start for o in op.outputs), default=-1)
    hi = min((tid[o] for op in ops if end is not None and op.seq > end for o in op.outputs),
             default=float("inf"))
    return tuple(n.id for n in tensors if n.produced_by is None and not n.watched
                 and not n.variable and lo < n.tensor_id < hi)


def mark_connected(graph: TapeGraph) -> None:
    """Mark the nodes and edges through which the target's gradient reaches a source.

    A forward sweep finds what depends on a tracked source, a backward sweep what the target
    depends on; connected = both. Ops declared not differentiable (``StopGradient``, ``Round``) and
    integer tensors carry no gradient, so they break the path.
    """
    tensors = {n.id: n for n in graph.tensors}
    flows = {n.id: n.dtype.startswith(("float", "complex")) for n in graph.tensors}
    # As in the backward pass, a source counts only if the tape tracks it (watched, or the
    # output of a recorded op): an unwatched source gets None even if an op read it.
    downstream = {i for i in graph.source_ids if flows[i] and (
        tensors[i].watched or tensors[i].produced_by or tensors[i].is_target)}
    for op in graph.ops:                      # forward sweep
        if op.gradient != "none" and any(i in downstream for i in op.inputs):
            downstream.update(o for o in op.outputs if flows[o])
    upstream = {i for i in graph.target_ids if flows[i]}
    for op in reversed(graph.ops):            # backward sweep
        if op.gradient != "none" and any(o in upstream for o in op.outputs):
            upstream.update(i for i in op.inputs if flows[i])
    connected = downstream & upstream
    for node in graph.tensors:
        node.connected = node.id in connected
    for op in graph.ops:
        op.connected = (op.gradient != "none" and any(i in connected for i in op.inputs)
                        and any(o in connected for o in op.outputs))
    ops = {op.id: op for op in graph.ops}
    for e in graph.edges:
        op_id, tensor_id = (e.head, e.tail) if e.kind == "input" else (e.tail, e.head)
        e.connected = ops[op_id].connected and tensors[tensor_id].connected
