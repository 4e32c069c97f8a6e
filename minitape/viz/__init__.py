"""Seeing the tape: pictures of what a GradientTape recorded, and why a gradient is None.

- ``tape_graph(tape, target, sources)``: the tape as plain nodes and edges (no graphics).
- ``draw_tape(tape, target, sources)``: that graph drawn with graphviz (SVG in a notebook).
- ``explain(tape, target, source)``: one sentence on why a gradient is None, and what to do.
- ``TapePlayer(tape, target, sources)``: an ipywidgets player stepping through the forward
  and the backward pass.
- ``plot_gradient``, ``imshow_zero_center``, ``plot_as_patches``, ``plot_jacobian``: matplotlib
  figures for functions, Hessians and Jacobians.

``import minitape`` does not import this package; ``mt.viz`` loads it on first use. graphviz,
matplotlib and ipywidgets are imported only inside the functions that need them.
"""

from .draw import draw_tape
from .explain import explain
from .graph import TapeGraph, tape_graph
from .player import TapePlayer
from .plots import imshow_zero_center, plot_as_patches, plot_gradient, plot_jacobian

__all__ = ["draw_tape", "tape_graph", "TapeGraph", "explain", "TapePlayer", "plot_gradient",
           "imshow_zero_center", "plot_as_patches", "plot_jacobian"]
