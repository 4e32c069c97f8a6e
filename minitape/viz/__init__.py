"""Seeing the tape: pictures of what a GradientTape recorded, and why a gradient is None.

- ``tape_graph(tape, target, sources)``: the tape as plain nodes and edges (no graphics).
- ``draw_tape(tape, target, sources)``: that graph drawn with graphviz (SVG in a notebook).
- ``explain(tape, target, source)``: one sentence on why a gradient is None, and what to do.
- ``check_tape(tape, target, sources)``: every recorded op's gradient rule against finite
  differences of its own forward, so a wrong rule is found and named (``TapeCheck``).
- ``TapePlayer(tape, target, sources)``: an ipywidgets player stepping through the forward
  and the backward pass.
- ``plot_gradient``, ``imshow_zero_center``, ``plot_as_patches``, ``plot_jacobian``: matplotlib
  figures for functions, Hessians and Jacobians.
- ``timeline(*tapes)``: several tapes on one time axis (ops, stop_recording, reset, gradient).
- ``JacobianExplorer(f, x)``, ``DescentExplorer(f, x0)``: ipywidgets explorers of how a
  Jacobian is computed and of gradient descent, momentum and Newton's method on a surface.
- ``TrainingView(model, x, y, loss=..., optimizer=...)``: an ipywidgets view that trains a
  model and shows, linked, the latest step's tape, the loss curve, the decision boundary and
  the optimizer's state.
- ``draw_tape(tape, fold=True)``: a loop's repeated ops drawn once, in a box marked ``×N``.

``import minitape`` does not import this package; ``mt.viz`` loads it on first use. graphviz,
matplotlib and ipywidgets are imported only inside the functions that need them (``TapePlayer``
is an ipywidgets widget, so its module loads on first use of the name).
"""

from .check import CheckRow, TapeCheck, check_tape
from .draw import draw_tape
from .explain import explain
from .graph import TapeGraph, tape_graph
from .plots import imshow_zero_center, plot_as_patches, plot_gradient, plot_jacobian
from .timeline import Timeline, timeline, timeline_data

__all__ = ["check_tape", "TapeCheck", "CheckRow",
           "draw_tape", "tape_graph", "TapeGraph", "explain", "TapePlayer", "plot_gradient",
           "imshow_zero_center", "plot_as_patches", "plot_jacobian", "timeline", "timeline_data",
           "Timeline", "JacobianExplorer", "DescentExplorer", "TrainingView"]


def __getattr__(name):
    # The player and the explorers are ipywidgets widgets (their modules import ipywidgets
    # and matplotlib): load them on first use only.
    if name == "TapePlayer":
        from .player import TapePlayer
        return TapePlayer
    if name == "TrainingView":
        from .training import TrainingView
        return TrainingView
    if name in ("JacobianExplorer", "DescentExplorer"):
        from . import explorers
        return getattr(explorers, name)
    raise AttributeError(f"module 'minitape.viz' has no attribute {name!r}")
