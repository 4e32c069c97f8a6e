"""``timeline(*tapes)``: several tapes on one time axis: which tape saw which op, and when.

Every op and every tape event (entered, exited, paused, resumed, reset, gradient, released)
takes a stamp from one global sequence (``minitape/engine/recording.py``), so the lives of several
tapes can be laid side by side. The timeline draws one row per tape, the x axis being that
sequence:

- a dot for every op the tape recorded (its op type written above it where there is room);
  ops that an *outer* tape recorded while an *inner* tape ran its backward pass are drawn as
  orange triangles: the inner tape's gradient, computed with minitape ops, is itself on the
  outer tape, and that is how a second derivative is made;
- a pale band while the tape was recording (from ``with`` to the end of the block, or to a
  non-persistent tape's ``gradient`` inside its block), a grey hatched band where it was
  inside ``stop_recording``, and a red hatched band over what a ``reset`` made it forget;
- markers at each ``reset`` (red bar), ``gradient`` / ``jacobian`` call (star) and where a
  non-persistent tape released the tensors it saved (cross).

As everywhere in ``mt.viz``, the picture is drawn from plain data first: ``timeline_data``
returns a ``Timeline`` (rows of op marks, spans and markers), which tests check; ``timeline``
draws it with matplotlib (imported only then).

>>> import minitape as mt
>>> from minitape.viz import timeline_data
>>> x = mt.Variable(2.0)
>>> with mt.GradientTape() as outer:
...     with mt.GradientTape() as inner:
...         y = x * x
...     dy = inner.gradient(y, x)        # 2x, computed with minitape ops ...
>>> d2 = outer.gradient(dy, x)           # ... that the outer tape recorded: 2.0
>>> data = timeline_data(outer, inner)
>>> [row.label for row in data.rows]
['tape 1', 'tape 2']
>>> [(op.type, op.backward_of) for op in data.rows[0].ops]   # y, then dy = x*1 + 1*x
[('Mul', None), ('Mul', 'tape 2'), ('Mul', 'tape 2'), ('AddV2', 'tape 2')]
>>> [kind for kind, seq, label in data.rows[1].markers]
['gradient', 'released']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..engine.tape import GradientTape
from .graph import stop_recording_spans
from .record import record_of


class OpMark(NamedTuple):
    """An op a tape recorded: its global ``seq``, its op ``type``, and ``backward_of``: the
    label of the tape whose backward pass ran it (``"tape 2"``), else None."""

    seq: int
    type: str
    backward_of: str | None


class Marker(NamedTuple):
    """A moment in a tape's life: ``kind`` is ``"reset"``, ``"gradient"`` or ``"released"``;
    ``label`` is what the picture writes (``"gradient"``, ``"jacobian"``, ...)."""

    kind: str
    seq: int
    label: str


@dataclass
class TimelineRow:
    """One tape's row.

    ``recording``, ``paused`` and ``forgotten`` are lists of ``(start, end)`` spans of the
    global sequence; ``end`` is None for a span still open when the data was taken.
    ``forgotten`` spans are what a ``reset`` dropped (from the previous reset, or the tape's
    start, to the reset).
    """

    label: str
    number: int
    persistent: bool
    ops: list = field(default_factory=list)
    recording: list = field(default_factory=list)
    paused: list = field(default_factory=list)
    forgotten: list = field(default_factory=list)
    markers: list = field(default_factory=list)

    @property
    def title(self) -> str:
        """The row's label, with ``(persistent)`` for a persistent tape."""
        return f"{self.label} (persistent)" if self.persistent else self.label


@dataclass
class Timeline:
    """The data of a timeline: ``rows`` (``TimelineRow``, in the tapes' order of creation)
    and the range of the global sequence they cover, ``start .. end``."""

    rows: list
    start: int
    end: int

    def figure(self):
        """Draw the timeline: a matplotlib ``Figure`` (Agg; see ``timeline``)."""
        return _draw(self)


def timeline_data(*tapes, names=None) -> Timeline:
    """The data behind ``timeline(*tapes)``: a ``Timeline`` of one ``TimelineRow`` per tape.

    Args:
        *tapes: one or more GradientTapes (any order; rows follow the order of creation).
        names: optional list of labels, one per tape in the order given; default ``tape 1``,
            ``tape 2``, ... by order of creation among the tapes shown (so the labels do not
            depend on how many tapes the program made before).

    Raises:
        ValueError: no tape, the same tape twice, or ``names`` of the wrong length or with a
            name twice.
        TypeError: an argument that is not a GradientTape, or a name that is not a string.
    """
    if not tapes:
        raise ValueError("timeline needs at least one GradientTape, e.g. timeline(outer, inner)")
    for t in tapes:
        if not isinstance(t, GradientTape):
            raise TypeError(f"timeline expects minitape GradientTapes, got {type(t).__name__}")
    if len({id(t) for t in tapes}) != len(tapes):
        raise ValueError("timeline: the same tape was given twice; give each tape once")
    if names is not None:
        names = list(names)
        if len(names) != len(tapes):
            raise ValueError(f"timeline: {len(names)} name(s) for {len(tapes)} tape(s); give "
                             "one name per tape, in the order the tapes are given")
        if not all(isinstance(n, str) for n in names):
            raise TypeError(f"timeline: names must be strings, got {names!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"timeline: names must differ from each other, got {names!r}")
    order = sorted(range(len(tapes)), key=lambda i: tapes[i].number)
    label_of = {}
    for rank, i in enumerate(order, 1):
        label_of[tapes[i].number] = names[i] if names is not None else f"tape {rank}"
    rows = [_row(tapes[i], label_of) for i in order]
    seqs = [s for r in rows for s in _seqs(r)]
    return Timeline(rows, min(seqs, default=0), max(seqs, default=0))


def _row(tape, label_of) -> TimelineRow:
    row = TimelineRow(label_of[tape.number], tape.number, tape.persistent)
    record = record_of(tape)
    for position, op in enumerate(tape.operations):
        note = record.note(op)
        of = note.backward_of if note is not None else None
        row.ops.append(OpMark(note.seq if note is not None else position, op.type,
                              None if of is None else label_of.get(of, f"tape #{of}")))
    row.paused = stop_recording_spans(tape.events)
    life_start = None        # where the current stretch of remembered ops began
    recording_from = None
    for event in tape.events:
        kind, seq = event.kind, event.seq
        if life_start is None:
            life_start = seq
        if kind == "entered":
            recording_from = seq
        elif kind == "exited":
            if recording_from is not None:
                row.recording.append((recording_from, seq))
                recording_from = None
        elif kind == "reset":
            row.forgotten.append((life_start, seq))
            life_start = seq
            row.markers.append(Marker("reset", seq, "reset"))
        elif kind == "gradient":
            if recording_from is not None and not tape.persistent:
                # a non-persistent tape stops recording before its backward pass
                row.recording.append((recording_from, seq))
                recording_from = None
            row.markers.append(Marker("gradient", seq, event.detail or "gradient"))
        elif kind == "released":
            row.markers.append(Marker("released", seq, "released"))
    if recording_from is not None:
        row.recording.append((recording_from, None))
    return row


def _seqs(row):
    yield from (op.seq for op in row.ops)
    yield from (m.seq for m in row.markers)
    for spans in (row.recording, row.paused, row.forgotten):
        for a, b in spans:
            yield a
            if b is not None:
                yield b


def timeline(*tapes, names=None):
    """Draw several tapes on one time axis: which op each recorded, when each was paused,
    reset, asked for a gradient, or released what it saved (see the module docstring).

    Args:
        *tapes: one or more GradientTapes; ``names``: optional labels, one per tape.

    Returns:
        A matplotlib ``Figure`` (drawn on the Agg canvas, not through pyplot) with one Axes:
        one row per tape from top to bottom in order of creation, labelled ``tape 1``,
        ``tape 2 (persistent)``, ...; x is the global sequence number that ops and tape
        events share. In a notebook it shows itself as a PNG.

    Raises:
        TypeError, ValueError: as ``timeline_data``.

    >>> import minitape as mt
    >>> x = mt.Variable(1.0)
    >>> with mt.GradientTape(persistent=True) as tape:
    ...     y = mt.math.sin(x)
    >>> fig = mt.viz.timeline(tape)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['tape 1 (persistent)']
    """
    return timeline_data(*tapes, names=names).figure()


# -- drawing -------------------------------------------------------------------------------

_COLORS = {"op": "C0", "backward": "C1", "reset": "C3", "gradient": "C2", "released": "0.2"}


_figure_class = None


def _notebook_figure(width, height):
    """An Agg Figure that shows itself as a PNG in a notebook (no pyplot involved)."""
    global _figure_class
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    if _figure_class is None:
        import matplotlib.figure

        class Figure(matplotlib.figure.Figure):
            """A matplotlib Figure with ``_repr_png_``: a notebook shows it without pyplot."""

            def _repr_png_(self):
                import io
                buf = io.BytesIO()
                self.savefig(buf, format="png", bbox_inches="tight")
                return buf.getvalue()

        _figure_class = Figure
    fig = _figure_class(figsize=(width, height), dpi=80)
    FigureCanvasAgg(fig)
    return fig


def _draw(data: Timeline):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    n = len(data.rows)
    lo, hi = data.start - 1, data.end + 1
    width = 10.0
    fig = _notebook_figure(width, 1.6 + 1.1 * n)
    ax = fig.add_subplot()
    y_of = {row.number: n - 1 - k for k, row in enumerate(data.rows)}   # first row on top
    # at most one op label per ~11 points of width
    min_gap = (hi - lo) / max(1.0, width * 72 * 0.8 / 11)
    for row in data.rows:
        y = y_of[row.number]
        for a, b in row.recording:
            ax.axvspan(a, hi if b is None else b, ymin=(y + 0.1) / n, ymax=(y + 0.9) / n,
                       color="C0", alpha=0.08, lw=0)
        for a, b in row.paused:
            ax.axvspan(a, hi if b is None else b, ymin=(y + 0.1) / n, ymax=(y + 0.9) / n,
                       facecolor="0.85", edgecolor="0.5", hatch="//", lw=0)
        for a, b in row.forgotten:
            ax.axvspan(a, b, ymin=(y + 0.1) / n, ymax=(y + 0.9) / n, facecolor="none",
                       edgecolor="C3", alpha=0.5, hatch="xx", lw=0)
        plain = [op.seq for op in row.ops if op.backward_of is None]
        back = [op.seq for op in row.ops if op.backward_of is not None]
        ax.plot(plain, [y] * len(plain), "o", color=_COLORS["op"], ms=6, ls="none",
                label="_ops")
        ax.plot(back, [y] * len(back), "^", color=_COLORS["backward"], ms=7, ls="none",
                label="_backward ops")
        last = -float("inf")
        for op in row.ops:
            if op.seq - last >= min_gap:
                ax.text(op.seq, y + 0.12, op.type, rotation=90, ha="center", va="bottom",
                        fontsize=7, clip_on=True)
                last = op.seq
        for m in row.markers:
            if m.kind == "reset":
                ax.plot([m.seq, m.seq], [y - 0.35, y + 0.35], color=_COLORS["reset"], lw=2.5)
                ax.text(m.seq, y - 0.38, "reset", color=_COLORS["reset"], ha="center",
                        va="top", fontsize=8)
            elif m.kind == "gradient":
                ax.plot(m.seq, y, "*", color=_COLORS["gradient"], ms=14, mec="k", mew=0.5)
                ax.text(m.seq, y - 0.22, m.label, color="darkgreen", ha="center", va="top",
                        fontsize=8)
            elif m.kind == "released":
                ax.plot(m.seq, y, "X", color=_COLORS["released"], ms=9)
                ax.text(m.seq, y + 0.2, "released", color="0.2", ha="left", va="bottom",
                        fontsize=8)
    _draw_backward_links(ax, data, y_of)
    ax.set_yticks([y_of[row.number] for row in data.rows], [row.title for row in data.rows])
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("global sequence number (ops and tape events, in the order they happened)")
    ax.set_ylabel("tape")
    ax.grid(axis="x", color="0.92")
    handles = [
        Line2D([], [], marker="o", ls="none", color=_COLORS["op"], label="op recorded"),
        Line2D([], [], marker="^", ls="none", color=_COLORS["backward"],
               label="op of a backward pass (recorded)"),
        Patch(facecolor="C0", alpha=0.15, label="recording"),
        Patch(facecolor="0.85", edgecolor="0.5", hatch="//", label="stop_recording"),
        Patch(facecolor="none", edgecolor="C3", hatch="xx", label="forgotten by reset"),
        Line2D([], [], marker="*", ls="none", color=_COLORS["gradient"], mec="k", ms=11,
               label="gradient call"),
        Line2D([], [], marker="X", ls="none", color=_COLORS["released"], label="released"),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22 - 0.1 / n),
              ncol=4, fontsize=8, frameon=False)
    fig.subplots_adjust(left=0.16, right=0.98, top=0.95, bottom=0.12 + 0.55 / (n + 1))
    return fig


def _draw_backward_links(ax, data, y_of):
    """An arrow from an inner tape's gradient call to the ops of its backward pass that an
    outer tape recorded."""
    for row in data.rows:
        for inner in data.rows:
            if inner is row:
                continue
            calls = [m.seq for m in inner.markers if m.kind == "gradient"]
            for k, call in enumerate(calls):
                until = calls[k + 1] if k + 1 < len(calls) else float("inf")
                seqs = [op.seq for op in row.ops if op.backward_of == inner.label
                        and call < op.seq < until]
                if seqs:
                    ax.annotate("", xy=(seqs[0], y_of[row.number]),
                                xytext=(call, y_of[inner.number]),
                                arrowprops=dict(arrowstyle="->", color=_COLORS["backward"],
                                                lw=1.2, shrinkA=6, shrinkB=6))
