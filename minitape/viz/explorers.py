"""Explorers: two ipywidgets widgets to play with on your own functions.

- ``JacobianExplorer(f, x)`` shows *how* a Jacobian gets computed. Reverse mode runs one
  vector-Jacobian product (VJP, one ``tape.gradient`` with ``output_gradients``) per output
  element and fills the Jacobian row by row; forward mode runs one Jacobian-vector product
  (JVP, one ``ForwardAccumulator`` pass) per input element and fills it column by column; the
  vectorized ``tape.jacobian`` does all the rows in one batched backward pass. So a function
  ``R^n -> R^m`` costs ``m`` reverse passes or ``n`` forward passes: reverse mode is the
  bargain for a wide function (a loss: many inputs, one output), forward mode for a tall one.
- ``DescentExplorer(f, x0)`` shows what a gradient, a learning rate and a Newton step do on a
  surface: the contours of a scalar ``f`` of a 2-vector, the downhill direction ``-grad f`` as
  arrows, and the path of gradient descent, momentum or Newton's method from ``x0``.

Both are ``ipywidgets.VBox`` widgets (JupyterLab 4 shows them with no extension to build),
but their state is plain Python attributes, so they can be driven and tested without a
browser::

    explorer.mode = "forward"; explorer.step = 2
    explorer.current        # the Jacobian after 2 forward passes (NaN where not computed yet)
    descent.learning_rate = 0.05
    descent.path            # the (steps + 1, 2) points of the current settings

The widgets only mirror that state; ``figure()`` returns the current picture as a matplotlib
``Figure`` (Agg, never pyplot, so nothing leaks into a notebook's inline figures), and the
widget shows it as a PNG. Displayed in a notebook, an explorer also carries that PNG, so a
reader of the stored notebook who does not run it still sees the picture.

This module imports matplotlib and ipywidgets: ``mt.viz`` loads it only when an explorer is
first used.
"""

from __future__ import annotations

import base64
import html
import io
import math
import time

import ipywidgets as widgets
import numpy as np

from ..engine.forward import ForwardAccumulator
from ..engine.tape import GradientTape
from ..engine.tensor import Tensor, convert_to_tensor
from ..ops.constant_op import constant
from ..functional import hessian
from ..lessons import fallback_metadata
from .draw import DARK_THEME_STYLE

MODES = ("reverse", "forward", "vectorized")
METHODS = ("gradient descent", "momentum", "newton")


# -- shared helpers ----------------------------------------------------------------------------

def _new_figure(width, height):
    """A matplotlib Figure on the Agg canvas (no pyplot: no inline figure leaks)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=80)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig) -> bytes:
    """The PNG bytes of a matplotlib Figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


class _Explorer(widgets.VBox):
    """What both explorers share: a PNG picture, a line of text, and a static fallback."""

    def _build_widgets(self, controls):
        self._syncing = False
        # natural size (not stretched to the notebook's width), shrunk if the notebook is narrow
        self._image = widgets.Image(format="png", layout=widgets.Layout(
            max_width="100%", align_self="flex-start", height="auto"))
        self._image.add_class("minitape-explorer-image")
        self._label = widgets.HTML()
        self._label.add_class("minitape-explorer-text")
        self.children = [*controls, self._label, self._image]
        self.add_class("minitape-explorer")

    def png(self) -> bytes:
        """The current picture as PNG bytes (what the widget shows)."""
        fig = self.figure()
        try:
            return figure_png(fig)
        finally:
            fig.clear()

    def _refresh(self):
        """Mirror the state into the widgets (called after every change of state)."""
        if getattr(self, "_image", None) is None:
            return
        self._syncing = True
        try:
            self._sync_controls()
        finally:
            self._syncing = False
        self._label.value = DARK_THEME_STYLE + "<br>".join(
            html.escape(line) for line in self.text.split("\n"))
        self._image.value = self.png()

    def _from_control(self, name):
        """An observer that copies a control's new value into the attribute ``name``."""
        def observe(change):
            if not self._syncing:
                setattr(self, name, change["new"])
        return observe

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        # The widget view for a running kernel; the PNG for a static viewer (an untrusted or
        # unexecuted notebook shows image/png, and never a widget view).
        data = super()._repr_mimebundle_(**kwargs) or {"text/plain": repr(self)}
        data["text/plain"] = repr(self)
        data["image/png"] = base64.b64encode(self._image.value or self.png()).decode("ascii")
        return data, fallback_metadata("image/png")    # (see minitape.lessons.pre_save_hook)


def _rounded_by(slider, new, current) -> bool:
    """True when ``new`` is only ``current`` rounded to ``slider``'s step (a float or
    logarithmic slider), not a move of the slider."""
    if isinstance(new, bool) or not isinstance(current, (int, float, np.number)):
        return False
    if isinstance(slider, widgets.FloatLogSlider):
        if new <= 0 or current <= 0:
            return False
        base = slider.base
        return abs(math.log(new, base) - math.log(current, base)) <= slider.step / 2 + 1e-12
    if isinstance(slider, widgets.FloatSlider):
        return abs(new - current) <= slider.step / 2 + 1e-12
    return False


def _floating_tensor(value, what):
    """``value`` as a floating minitape Tensor (a Python list becomes float32, as mt)."""
    if isinstance(value, Tensor):
        t = value
    else:
        try:
            t = convert_to_tensor(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what} must be a floating Tensor or an array of numbers, got "
                            f"{type(value).__name__} ({e})") from None
    if t.dtype.kind != "f":
        raise TypeError(f"{what} must have a floating dtype (float32 or float64), got "
                        f"{t.dtype}; convert it with mt.cast({what.split()[-1]}, mt.float32)")
    return t


def _format_seconds(s):
    if s is None:
        return "not measured"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


# -- JacobianExplorer --------------------------------------------------------------------------

class JacobianExplorer(_Explorer):
    """Watch a Jacobian fill in: row by row (reverse mode), column by column (forward mode), or
    all at once (the vectorized ``tape.jacobian``).

    Args:
        f: a function of one Tensor returning one Tensor, written with minitape ops; any
            shapes (``x`` of shape ``s_in`` with ``n`` elements, ``f(x)`` of shape ``s_out``
            with ``m`` elements). The Jacobian is shown flattened, as an ``(m, n)`` matrix.
        x: the point (a floating Tensor, Variable, or array of numbers; a Python list becomes
            float32).
        mode: ``"reverse"`` (default), ``"forward"`` or ``"vectorized"``.
        step: how many passes of ``mode`` are done at first (default: half of them).
        batch: True when ``x`` and ``f(x)`` have a leading batch axis of the same size ``b``
            whose examples do not interact: the picture then marks the ``b x b`` blocks, of
            which only the diagonal ones can be non-zero (what ``batch_jacobian`` computes).
        repeat: each mode is timed this many times on ``x`` (the fastest run is kept);
            0 skips timing until ``measure()`` is called (or its button pressed).

    Attributes (plain Python state; setting ``mode`` or ``step`` redraws the widget):
        passes: ``{"reverse": m, "forward": n, "vectorized": 1}``.
        times: seconds to compute the whole Jacobian in each mode on this input (fastest of
            ``repeat`` runs), or None when not measured.
        full: the ``(m, n)`` float64 Jacobian from the vectorized pass.
        current: the ``(m, n)`` Jacobian after ``step`` passes of ``mode``: the first ``step``
            rows (reverse) or columns (forward) filled, NaN elsewhere.

    Raises:
        TypeError: ``f`` is not callable, ``x`` is not floating, or ``f(x)`` is not a floating
            minitape Tensor.
        ValueError: an unknown mode, a step out of range, ``batch=True`` without a shared
            leading axis, or more than ``max_passes`` passes in a mode.

    The three modes are TensorFlow's: ``tape.gradient(y, x, output_gradients=e_i)`` (one row),
    ``tf.autodiff.ForwardAccumulator(x, e_j)`` (one column), ``tape.jacobian(y, x)`` (pfor).

    >>> import minitape as mt
    >>> from minitape.viz import JacobianExplorer
    >>> e = JacobianExplorer(lambda x: mt.stack([x[0] * x[1], mt.math.sin(x[2])]),
    ...                      [1.0, 2.0, 0.0], repeat=0)
    >>> e.passes
    {'reverse': 2, 'forward': 3, 'vectorized': 1}
    >>> e.step = 1
    >>> e.current        # one VJP: the first row
    array([[ 2.,  1.,  0.],
           [nan, nan, nan]])
    >>> e.mode = "forward"
    >>> e.current        # one JVP: the first column
    array([[ 2., nan, nan],
           [ 0., nan, nan]])
    """

    def __init__(self, f, x, *, mode="reverse", step=None, batch=False, repeat=3,
                 max_passes=4096, **kwargs):
        super().__init__(**kwargs)
        if not callable(f):
            raise TypeError(f"JacobianExplorer expects a function f(x), got "
                            f"{type(f).__name__}")
        self.f = f
        self.x = _floating_tensor(x, "JacobianExplorer x")
        y = f(self.x)
        if not isinstance(y, Tensor) or y.dtype.kind != "f":
            got = f"a {y.dtype} Tensor" if isinstance(y, Tensor) else type(y).__name__
            raise TypeError(f"JacobianExplorer: f(x) must return a floating minitape Tensor, "
                            f"got {got}; write f with minitape operations")
        self.y = y
        self.n, self.m = int(self.x.size), int(y.size)
        self.passes = {"reverse": self.m, "forward": self.n, "vectorized": 1}
        if max(self.m, self.n) > max_passes:
            raise ValueError(f"JacobianExplorer: f maps {self.n} inputs to {self.m} outputs, "
                             f"more than max_passes={max_passes} passes in one mode; explore a "
                             "smaller input, or raise max_passes")
        self.batch = self._check_batch(batch)
        self._rows = self._reverse_rows()
        self._columns = self._forward_columns()
        self.full = self._vectorized()
        self.times = {k: None for k in MODES}
        if repeat:
            self.measure(repeat)
        if mode not in MODES:
            raise ValueError(f"JacobianExplorer: mode must be one of {MODES}, got {mode!r}")
        self._mode = mode
        self._step = 0
        self._image = None
        self.step = math.ceil(self.passes[mode] / 2) if step is None else step
        self._build()

    # -- the three ways to compute it ------------------------------------------------------
    def _basis(self, k, size, shape, dtype):
        e = np.zeros(size, dtype=dtype)
        e[k] = 1
        return constant(e.reshape(shape))

    def _reverse_rows(self):
        """One VJP per output element: the rows of the Jacobian, from one recorded tape."""
        with GradientTape(persistent=True) as tape:
            tape.watch(self.x)
            y = self.f(self.x)
        rows = []
        for i in range(self.m):
            seed = self._basis(i, self.m, y.shape, y.dtype)
            g = tape.gradient(y, self.x, output_gradients=seed, unconnected_gradients="zero")
            rows.append(np.asarray(g.numpy(), dtype=float).reshape(-1))
        return rows

    def _forward_columns(self):
        """One JVP per input element: the columns, each from its own forward pass."""
        columns = []
        for j in range(self.n):
            tangent = self._basis(j, self.n, self.x.shape, self.x.dtype)
            with ForwardAccumulator(self.x, tangent) as acc:
                y = self.f(self.x)
            col = acc.jvp(y, unconnected_gradients="zero")
            columns.append(np.asarray(col.numpy(), dtype=float).reshape(-1))
        return columns

    def _vectorized(self):
        """The whole Jacobian in one batched backward pass (``tape.jacobian``)."""
        with GradientTape() as tape:
            tape.watch(self.x)
            y = self.f(self.x)
        j = tape.jacobian(y, self.x, unconnected_gradients="zero")
        return np.asarray(j.numpy(), dtype=float).reshape(self.m, self.n)

    def measure(self, repeat=3):
        """Time each mode (the whole Jacobian), keeping the fastest of ``repeat`` runs; sets
        and returns ``times``. Timings vary from run to run: compare them, do not rely on
        them."""
        runs = {"reverse": self._reverse_rows, "forward": self._forward_columns,
                "vectorized": self._vectorized}
        times = {}
        for mode, run in runs.items():
            best = math.inf
            for _ in range(max(1, int(repeat))):
                t0 = time.perf_counter()
                run()
                best = min(best, time.perf_counter() - t0)
            times[mode] = best
        self.times = times
        self._refresh()
        return times

    def _check_batch(self, batch):
        if not batch:
            return None
        xs, ys = self.x.shape, self.y.shape
        if len(xs) < 1 or len(ys) < 1 or xs[0] != ys[0]:
            raise ValueError(f"JacobianExplorer: batch=True needs x and f(x) with the same "
                             f"leading (batch) axis, got shapes {xs} and {ys}")
        return int(xs[0])

    # -- state -----------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """``"reverse"``, ``"forward"`` or ``"vectorized"``; changing it keeps ``step``
        (clipped to the new mode's number of passes)."""
        return self._mode

    @mode.setter
    def mode(self, value):
        if value not in MODES:
            raise ValueError(f"JacobianExplorer: mode must be one of {MODES}, got {value!r}")
        self._mode = value
        self._step = min(self._step, self.passes[value])
        self._refresh()

    @property
    def step(self) -> int:
        """How many passes of the current mode are done: ``0 .. passes[mode]``."""
        return self._step

    @step.setter
    def step(self, k):
        total = self.passes[self._mode]
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= total:
            raise ValueError(f"JacobianExplorer: step must be an int from 0 to {total} "
                             f"(the {self._mode} mode's passes), got {k!r}")
        self._step = int(k)
        self._refresh()

    @property
    def current(self) -> np.ndarray:
        """The ``(m, n)`` Jacobian after ``step`` passes of ``mode``, NaN where not yet
        computed."""
        j = np.full((self.m, self.n), np.nan)
        k = self._step
        if self._mode == "reverse" and k:
            j[:k] = np.stack(self._rows[:k])
        elif self._mode == "forward" and k:
            j[:, :k] = np.stack(self._columns[:k], axis=1)
        elif self._mode == "vectorized" and k:
            j[:] = self.full
        return j

    @property
    def text(self) -> str:
        """What the picture shows, the passes each mode needs, and the measured times."""
        k, total = self._step, self.passes[self._mode]
        what = {"reverse": f"one VJP per output: {k} of {total} rows",
                "forward": f"one JVP per input: {k} of {total} columns",
                "vectorized": "one batched backward pass for all rows: "
                              + ("done" if k else "not yet run")}[self._mode]
        lines = [f"{self._mode} mode, pass {k} of {total} ({what})",
                 f"passes needed for f: R^{self.n} -> R^{self.m}: reverse {self.m} "
                 f"(one per output), forward {self.n} (one per input), vectorized 1"]
        if any(t is not None for t in self.times.values()):
            lines.append("measured on this input: " + ", ".join(
                f"{m} {_format_seconds(self.times[m])}" for m in MODES))
        else:
            lines.append("times: not measured yet (the button 'time the three modes', or "
                         ".measure())")
        if self.batch:
            b = self.batch
            lines.append(f"batch of {b}: only the {b} diagonal blocks can be non-zero; "
                         f"batch_jacobian computes just those ({self.m * self.n // b} of "
                         f"{self.m * self.n} entries)")
        return "\n".join(lines)

    # -- the picture -----------------------------------------------------------------------
    def figure(self):
        """The current picture: a matplotlib ``Figure`` with one Axes showing ``current`` as
        an image (zero-centred colour map, computed entries coloured, the rest grey), the
        latest pass outlined, and a colour bar."""
        from matplotlib.patches import Rectangle
        m, n = self.m, self.n
        width = min(9.0, max(4.5, 2.5 + 0.3 * n))
        height = min(7.0, max(2.5, 1.6 + 0.3 * m))
        square = max(m, n) <= 40 and max(m, n) <= 4 * min(m, n)
        fig = _new_figure(width, height)
        fig.set_layout_engine("tight")
        ax = fig.add_subplot()
        lim = float(np.max(np.abs(self.full))) if self.full.size else 1.0
        lim = lim if lim > 0 else 1.0
        import matplotlib
        cmap = matplotlib.colormaps["seismic"].with_extremes(bad="0.85")
        im = ax.imshow(np.ma.masked_invalid(self.current), cmap=cmap, vmin=-lim, vmax=lim,
                       interpolation="nearest", aspect="equal" if square else "auto")
        fig.colorbar(im, ax=ax, shrink=0.8)
        k = self._step
        if self._mode == "reverse" and k:
            ax.add_patch(Rectangle((-0.5, k - 1.5), n, 1, fill=False, lw=2, ec="orange"))
        elif self._mode == "forward" and k:
            ax.add_patch(Rectangle((k - 1.5, -0.5), 1, m, fill=False, lw=2, ec="orange"))
        if self.batch:
            b = self.batch
            for r in range(1, b):
                ax.axhline(r * m / b - 0.5, color="0.3", lw=0.8)
                ax.axvline(r * n / b - 0.5, color="0.3", lw=0.8)
        from matplotlib.ticker import MaxNLocator
        for axis, size in ((ax.xaxis, n), (ax.yaxis, m)):   # element indices: integers
            axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            if size <= 12:
                axis.set_ticks(range(size))
        ax.set_xlabel(f"input element (x shape {tuple(self.x.shape)}, flattened)")
        ax.set_ylabel(f"output element (f(x) shape {tuple(self.y.shape)})")
        ax.set_title(f"{self._mode} mode: pass {k} of {self.passes[self._mode]}")
        return fig

    # -- the widget ------------------------------------------------------------------------
    def _build(self):
        self._mode_buttons = widgets.ToggleButtons(options=list(MODES), value=self._mode,
                                                   description="mode")
        self._play = widgets.Play(value=self._step, min=0, max=self.passes[self._mode],
                                  interval=700, description="Play")
        self._slider = widgets.IntSlider(value=self._step, min=0,
                                         max=self.passes[self._mode], description="passes")
        self._slider.add_class("minitape-explorer-step")
        widgets.jslink((self._play, "value"), (self._slider, "value"))
        self._mode_buttons.observe(self._from_control("mode"), names="value")
        self._slider.observe(self._from_control("step"), names="value")
        # Timing on request: measured times differ on every run (a stored notebook that
        # held them would change each time it is executed).
        self._time_button = widgets.Button(description="time the three modes")
        self._time_button.add_class("minitape-explorer-measure")
        self._time_button.on_click(lambda _: self.measure())
        self._build_widgets([self._mode_buttons,
                             widgets.HBox([self._play, self._slider, self._time_button])])
        self._refresh()

    def _sync_controls(self):
        total = self.passes[self._mode]
        self._mode_buttons.value = self._mode
        for w in (self._slider, self._play):
            if w.max != total:      # the order keeps value <= max at every moment
                if total > w.max:
                    w.max = total
                    w.value = self._step
                else:
                    w.value = self._step
                    w.max = total
            w.value = self._step

    def __repr__(self):
        return (f"<JacobianExplorer {self._mode} mode, pass {self._step} of "
                f"{self.passes[self._mode]}: f: R^{self.n} -> R^{self.m}>")


# -- DescentExplorer ---------------------------------------------------------------------------

class DescentExplorer(_Explorer):
    """Gradient descent, momentum and Newton's method on the contour plot of ``f(x, y)``.

    Args:
        f: a scalar function of a 2-vector, written with minitape ops: ``f(p)`` with ``p`` a
            Tensor of shape ``(2,)`` returns a Tensor of shape ``()``. (If ``f`` also works
            element by element on a ``(2, N)`` Tensor, the grid is computed in one call.)
        x0: the starting point, 2 numbers (its dtype is kept if it is a floating Tensor or
            array; a list becomes float32, as ``mt.constant``).
        bounds: ``((xmin, xmax), (ymin, ymax))`` of the plot; default: a square around the
            origin that holds ``x0`` with a margin, ``[-r, r]^2`` with
            ``r = max(2, 1.5 * max|x0|)``.
        method: ``"gradient descent"``, ``"momentum"`` or ``"newton"``.
        learning_rate, momentum, steps: the optimizer's settings.
        resolution: grid points per axis for the contours; ``arrows``: per axis for the
            gradient field.
        labels: the names of the two coordinates, for the axes and the sliders.

    The updates, with ``g`` the gradient at the current point:
        - gradient descent: ``x <- x - learning_rate * g``;
        - momentum (as Keras ``SGD(momentum=...)``): ``v <- momentum * v - learning_rate * g``,
          ``x <- x + v``, with ``v = 0`` at first;
        - newton: ``x <- x - H^-1 g`` with ``H = hessian(f)(x)`` (the guide's Newton step;
          the learning rate is not used). Newton's method heads for the nearest *stationary*
          point, which on a non-convex surface may be a saddle or a maximum.

    Attributes (plain Python state; setting one redraws the widget):
        x0, bounds, method, learning_rate, momentum, steps.
        path: ``(steps + 1, 2)`` float64 array of the points visited from ``x0``; when a step
            gives a non-finite point or a singular Hessian, the rest of the rows are NaN and
            ``stopped`` says why.
        values: ``f`` at each point of ``path``.
        grid: ``(X, Y, Z)``, the contour grid; ``field``: ``(X, Y, U, V)``, the gradient at
            the arrows' points.

    Raises:
        TypeError: ``f`` not callable, ``f(x0)`` not a floating minitape Tensor, or its
            gradient is None (``f`` uses NumPy instead of minitape ops).
        ValueError: ``x0`` not 2 numbers, ``f(x0)`` not a scalar, ``x0`` outside ``bounds``,
            malformed ``bounds``, an unknown method or a setting out of range.

    >>> import minitape as mt
    >>> from minitape.viz import DescentExplorer
    >>> d = DescentExplorer(lambda p: p[0]**2 + 10.0 * p[1]**2, [1.0, 1.0],
    ...                     learning_rate=0.05, steps=2)
    >>> d.path        # x - 0.05 * (2x, 20y): x shrinks by 0.9, y by 0
    array([[1.  , 1.  ],
           [0.9 , 0.  ],
           [0.81, 0.  ]])
    """

    def __init__(self, f, x0, *, bounds=None, method="gradient descent", learning_rate=0.1,
                 momentum=0.9, steps=20, resolution=60, arrows=15, labels=("x[0]", "x[1]"),
                 **kwargs):
        super().__init__(**kwargs)
        if not callable(f):
            raise TypeError(f"DescentExplorer expects a function f(p) of a 2-vector, got "
                            f"{type(f).__name__}")
        self.f = f
        start = _floating_tensor(x0, "DescentExplorer x0")
        if start.shape != (2,):
            raise ValueError(f"DescentExplorer: x0 must be 2 numbers (shape (2,)), got shape "
                             f"{start.shape}")
        self.dtype = start.dtype
        # The learner's numbers as written (0.3 stays 0.3, not float32's 0.30000001); f is
        # evaluated at them in ``dtype``.
        given = np.asarray(x0 if not isinstance(x0, Tensor) else start.numpy(), dtype=float)
        value, grad = self._value_and_grad(given)
        del value, grad           # f(x0) checked: scalar, floating, differentiable
        self._image = None
        self._resolution, self._arrows = int(resolution), int(arrows)
        if len(labels) != 2 or not all(isinstance(s, str) for s in labels):
            raise ValueError(f"DescentExplorer: labels must be two strings (the names of the "
                             f"two coordinates), got {labels!r}")
        self.labels = tuple(labels)
        self._x0 = given
        self._bounds = None
        self.bounds = bounds
        self.x0 = self._x0
        self.method = method
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.steps = steps
        self._build()

    # -- f, its gradient and Hessian at one point ------------------------------------------
    def _point(self, p):
        return constant(np.asarray(p, dtype=self.dtype))

    def _value_and_grad(self, p):
        x = self._point(p)
        with GradientTape() as tape, np.errstate(over="ignore", invalid="ignore"):
            tape.watch(x)
            y = self.f(x)
        if not isinstance(y, Tensor) or y.dtype.kind != "f":
            raise TypeError(f"DescentExplorer: f must return a floating minitape Tensor, got "
                            f"{type(y).__name__}; write f with minitape operations")
        if y.shape != ():
            raise ValueError(f"DescentExplorer: f must return a scalar (shape ()), got shape "
                             f"{y.shape}; reduce it, e.g. with mt.reduce_sum")
        with np.errstate(over="ignore", invalid="ignore"):
            g = tape.gradient(y, x)
        if g is None:
            raise TypeError("DescentExplorer: the gradient of f is None: f does not use its "
                            "argument through minitape operations (NumPy functions hide it "
                            "from the tape)")
        return float(y.numpy()), np.asarray(g.numpy(), dtype=float)

    def _hessian(self, p):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(hessian(self.f)(self._point(p)).numpy(), dtype=float)

    # -- the grid ----------------------------------------------------------------------------
    def _on_grid(self, xs, ys, with_grad):
        """``f`` (and its gradient) at every point of the grid ``xs x ys``: one call on a
        ``(2, N)`` Tensor when ``f`` works element by element (checked at three points), else
        one call per point."""
        X, Y = np.meshgrid(xs, ys)
        pts = np.stack([X.ravel(), Y.ravel()])
        z = g = None
        try:
            t = constant(pts.astype(self.dtype))
            with GradientTape() as tape:
                tape.watch(t)
                out = self.f(t)
            if isinstance(out, Tensor) and out.shape == (pts.shape[1],):
                z = np.asarray(out.numpy(), dtype=float)
                if with_grad:
                    gt = tape.gradient(out, t)
                    g = None if gt is None else np.asarray(gt.numpy(), dtype=float)
                for k in (0, pts.shape[1] // 2, pts.shape[1] - 1):
                    v, gk = self._value_and_grad(pts[:, k])
                    tol = 1e-4 * (1 + abs(v))
                    if not abs(z[k] - v) <= tol or (with_grad and (
                            g is None or not np.allclose(g[:, k], gk, rtol=1e-4, atol=tol))):
                        z = g = None
                        break
            else:
                z = None
        except Exception:   # f does not take a (2, N) Tensor: evaluate point by point
            z = g = None
        if z is None:
            if with_grad:
                both = [self._value_and_grad(pts[:, k]) for k in range(pts.shape[1])]
                z = np.array([v for v, _ in both])
                g = np.stack([gk for _, gk in both], axis=1)
            else:
                z = np.array([float(self.f(self._point(pts[:, k])).numpy())
                              for k in range(pts.shape[1])])
        z = z.reshape(X.shape)
        if with_grad:
            return X, Y, z, g[0].reshape(X.shape), g[1].reshape(X.shape)
        return X, Y, z

    def _compute_grid(self):
        (x_lo, x_hi), (y_lo, y_hi) = self._bounds
        r, a = self._resolution, self._arrows
        self.grid = self._on_grid(np.linspace(x_lo, x_hi, r), np.linspace(y_lo, y_hi, r),
                                  with_grad=False)
        X, Y, _, U, V = self._on_grid(np.linspace(x_lo, x_hi, a + 2)[1:-1],
                                      np.linspace(y_lo, y_hi, a + 2)[1:-1], with_grad=True)
        self.field = (X, Y, U, V)

    # -- settings ------------------------------------------------------------------------------
    @property
    def bounds(self):
        """``((xmin, xmax), (ymin, ymax))``, the plotted box (``x0`` must stay inside)."""
        return self._bounds

    @bounds.setter
    def bounds(self, value):
        if value is None:
            r = max(2.0, 1.5 * float(np.max(np.abs(self._x0))))
            value = ((-r, r), (-r, r))
        try:
            b = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            b = None
        if b is None or b.shape != (2, 2) or not np.all(np.isfinite(b)) \
                or not np.all(b[:, 0] < b[:, 1]):
            raise ValueError(f"DescentExplorer: bounds must be ((xmin, xmax), (ymin, ymax)) "
                             f"with min < max, got {value!r}")
        if not (np.all(b[:, 0] <= self._x0) and np.all(self._x0 <= b[:, 1])):
            raise ValueError(f"DescentExplorer: x0 = {tuple(self._x0)} is outside bounds "
                             f"{tuple(map(tuple, b))}; widen the bounds")
        self._bounds = tuple((float(lo), float(hi)) for lo, hi in b)
        self._compute_grid()
        self._refresh()

    @property
    def x0(self) -> np.ndarray:
        """The starting point, a float64 array of shape ``(2,)``."""
        return self._x0.copy()

    @x0.setter
    def x0(self, value):
        p = np.asarray(value, dtype=float)
        if p.shape != (2,) or not np.all(np.isfinite(p)):
            raise ValueError(f"DescentExplorer: x0 must be 2 finite numbers, got {value!r}")
        b = np.asarray(self._bounds)
        if not (np.all(b[:, 0] <= p) and np.all(p <= b[:, 1])):
            raise ValueError(f"DescentExplorer: x0 = {tuple(p)} is outside bounds "
                             f"{self._bounds}; set bounds first")
        self._x0 = p
        self._refresh()

    def _setting(name, check, doc):
        def get(self):
            return getattr(self, "_" + name)

        def set_(self, value):
            setattr(self, "_" + name, check(value))
            self._refresh()
        return property(get, set_, doc=doc)

    def _check_method(value):
        if value not in METHODS:
            raise ValueError(f"DescentExplorer: method must be one of {METHODS}, got {value!r}")
        return value

    def _number_check(name, lo, hi, kind=float):
        def check(value):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or \
                    (kind is int and not float(value).is_integer()) or not lo <= value <= hi:
                raise ValueError(f"DescentExplorer: {name} must be a"
                                 f"{'n int' if kind is int else ' number'} from {lo} to {hi}, "
                                 f"got {value!r}")
            return kind(value)
        return check

    method = _setting("method", _check_method,
                      "``'gradient descent'``, ``'momentum'`` or ``'newton'``.")
    learning_rate = _setting("learning_rate", _number_check("learning_rate", 0.0, 100.0),
                             "The step size of gradient descent and momentum (>= 0).")
    momentum = _setting("momentum", _number_check("momentum", 0.0, 1.0),
                        "The momentum coefficient, from 0 to 1.")
    steps = _setting("steps", _number_check("steps", 0, 10_000, int),
                     "How many updates the path takes.")
    del _setting, _check_method, _number_check

    # -- the path --------------------------------------------------------------------------
    @property
    def path(self) -> np.ndarray:
        """The ``(steps + 1, 2)`` points from ``x0`` with the current settings."""
        return self._run()[0]

    @property
    def stopped(self):
        """None, or why the path stopped early (its later rows are NaN)."""
        return self._run()[1]

    @property
    def values(self) -> np.ndarray:
        """``f`` at each point of ``path`` (NaN where the path stopped)."""
        return np.array([self._value_and_grad(p)[0] if np.all(np.isfinite(p)) else np.nan
                         for p in self.path])

    def _run(self):
        key = (tuple(self._x0), self._method, self._learning_rate, self._momentum, self._steps)
        if getattr(self, "_cache_key", None) == key:
            return self._cache
        path = np.full((self._steps + 1, 2), np.nan)
        path[0] = x = self._x0
        v = np.zeros(2)
        stopped = None
        with np.errstate(over="ignore", invalid="ignore"):   # a diverging path is shown
            for k in range(1, self._steps + 1):
                g = self._value_and_grad(x)[1]
                if self._method == "gradient descent":
                    x = x - self._learning_rate * g
                elif self._method == "momentum":
                    v = self._momentum * v - self._learning_rate * g
                    x = x + v
                else:
                    try:
                        x = x - np.linalg.solve(self._hessian(x), g)
                    except np.linalg.LinAlgError:
                        stopped = f"the Hessian is singular at step {k - 1}: no Newton step"
                        break
                if not np.all(np.isfinite(x)):
                    stopped = f"diverged at step {k} (the point is no longer finite)"
                    break
                path[k] = x
        self._cache_key, self._cache = key, (path, stopped)
        return path, stopped

    @property
    def text(self) -> str:
        """The settings and where the path ended."""
        path, stopped = self._run()
        if self._method == "newton":
            how = "newton (x <- x - H^-1 g)"
        elif self._method == "momentum":
            how = f"momentum {self._momentum:g}, learning rate {self._learning_rate:g}"
        else:
            how = f"gradient descent, learning rate {self._learning_rate:g}"
        x0 = ", ".join(f"{c:.3g}" for c in self._x0)
        line = f"{how}, {self._steps} steps from ({x0})"
        if stopped:
            return f"{line}: {stopped}"
        end = path[-1]
        value = self._value_and_grad(end)[0]
        (x_lo, x_hi), (y_lo, y_hi) = self._bounds
        inside = (x_lo <= path[:, 0]) & (path[:, 0] <= x_hi) & (y_lo <= path[:, 1]) \
            & (path[:, 1] <= y_hi)
        out = "" if inside.all() else \
            f" (left the plotted box at step {int(np.argmin(inside))})"
        return f"{line}: ends at ({end[0]:.4g}, {end[1]:.4g}), f = {value:.4g}{out}"

    # -- the picture -----------------------------------------------------------------------
    def figure(self):
        """The current picture: a matplotlib ``Figure`` with one Axes: contour lines of
        ``f``, arrows of ``-grad f`` (downhill; direction only, all the same length), and the
        path (a line with a dot per point, labelled with the method; ``x0`` a square)."""
        X, Y, Z = self.grid
        fig = _new_figure(6.0, 5.0)
        ax = fig.add_subplot()
        finite = Z[np.isfinite(Z)]
        levels = np.unique(np.quantile(finite, np.linspace(0, 1, 16) ** 2)) \
            if finite.size else None
        if levels is not None and len(levels) >= 2:
            cs = ax.contour(X, Y, Z, levels=levels, cmap="viridis", linewidths=0.9)
            fig.colorbar(cs, ax=ax, shrink=0.8, label="f")
        FX, FY, U, V = self.field
        norm = np.hypot(U, V)
        norm[norm == 0] = 1.0
        ax.quiver(FX, FY, -U / norm, -V / norm, color="0.55", angles="xy", pivot="mid",
                  label="-gradient (downhill)")
        path = self.path
        ax.plot(path[:, 0], path[:, 1], "o-", color="C3", ms=3.5, lw=1.5, label=self._method)
        ax.plot(self._x0[0], self._x0[1], "s", color="k", ms=7, label="x0")
        (x_lo, x_hi), (y_lo, y_hi) = self._bounds
        ax.set_xlim(x_lo, x_hi)
        ax.set_ylim(y_lo, y_hi)
        if 1 / 3 <= (y_hi - y_lo) / (x_hi - x_lo) <= 3:
            ax.set_aspect("equal")   # so the gradient looks perpendicular to the contours
        ax.set_xlabel(self.labels[0])
        ax.set_ylabel(self.labels[1])
        ax.set_title(self._method if self._method == "newton"
                     else f"{self._method}, learning rate {self._learning_rate:g}")
        ax.legend(loc="upper right", fontsize="small")
        return fig

    # -- the widget ------------------------------------------------------------------------
    def _build(self):
        (x_lo, x_hi), (y_lo, y_hi) = self._bounds
        self._controls = {
            "method": widgets.Dropdown(options=list(METHODS), value=self._method,
                                       description="method"),
            "learning_rate": widgets.FloatLogSlider(value=max(self._learning_rate, 1e-4),
                                                    base=10, min=-4, max=1, step=0.001,
                                                    description="learning rate",
                                                    readout_format=".3g"),
            "momentum": widgets.FloatSlider(value=self._momentum, min=0.0, max=0.99,
                                            step=0.01, description="momentum"),
            "steps": widgets.IntSlider(value=self._steps, min=0, max=max(200, self._steps),
                                       description="steps"),
            "x0_0": widgets.FloatSlider(value=self._x0[0], min=x_lo, max=x_hi,
                                        step=(x_hi - x_lo) / 1000, readout_format=".3g",
                                        description=f"start {self.labels[0]}"),
            "x0_1": widgets.FloatSlider(value=self._x0[1], min=y_lo, max=y_hi,
                                        step=(y_hi - y_lo) / 1000, readout_format=".3g",
                                        description=f"start {self.labels[1]}"),
        }
        style = {"description_width": "initial"}
        for name, w in self._controls.items():
            w.style = style
            w.add_class(f"minitape-explorer-{name.replace('_', '-')}")
            if name.startswith("x0_"):
                w.observe(self._x0_from_control(int(name[-1])), names="value")
            else:
                w.observe(self._setting_from_control(name, w), names="value")
        c = self._controls
        self._build_widgets([
            widgets.HBox([c["method"], c["steps"]]),
            widgets.HBox([c["learning_rate"], c["momentum"]]),
            widgets.HBox([c["x0_0"], c["x0_1"]]),
        ])
        self._refresh()

    def _setting_from_control(self, name, control):
        """Copy a control's new value into the setting ``name``, unless it is the learner's
        own number rounded to the slider's step (a slider snaps 0.3 to its nearest step and
        may send that back): the setting keeps the number as the learner wrote it."""
        def observe(change):
            if not self._syncing and not _rounded_by(control, change["new"],
                                                     getattr(self, "_" + name)):
                setattr(self, name, change["new"])
        return observe

    def _x0_from_control(self, axis):
        def observe(change):
            if not self._syncing and not _rounded_by(change["owner"], change["new"],
                                                     self._x0[axis]):
                p = self._x0.copy()
                p[axis] = change["new"]
                self.x0 = p
        return observe

    def _sync_controls(self):
        c = self._controls
        (x_lo, x_hi), (y_lo, y_hi) = self._bounds
        for w, lo, hi, v in ((c["x0_0"], x_lo, x_hi, self._x0[0]),
                             (c["x0_1"], y_lo, y_hi, self._x0[1])):
            w.min, w.max = min(lo, w.min), max(hi, w.max)   # widen, set, then narrow
            w.value = v
            w.min, w.max, w.step = lo, hi, (hi - lo) / 1000
        c["method"].value = self._method
        c["learning_rate"].value = max(self._learning_rate, 1e-4)
        c["momentum"].value = min(self._momentum, 0.99)
        c["steps"].max = max(c["steps"].max, self._steps)
        c["steps"].value = self._steps
        c["learning_rate"].disabled = self._method == "newton"
        c["momentum"].disabled = self._method != "momentum"

    def __repr__(self):
        return (f"<DescentExplorer {self._method}, {self._steps} steps from "
                f"({self._x0[0]:.3g}, {self._x0[1]:.3g})>")
