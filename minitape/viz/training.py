"""``TrainingView``: watch a network learn, one linked view of every training step.

One widget trains a model and shows, at each redraw, side by side:

- **the tape of the latest step**, grouped by module (``draw_tape(..., group="module")``),
  with a table of the parameters: shape, a summary of the value, the gradient's norm and a
  sparkline of that norm over the steps so far;
- **the loss curve** per step (training, and validation when ``validation_data`` is given),
  on a log scale if asked;
- **the data and what the model makes of it**: for two input features, the decision boundary
  (the model's output over a grid, with the points coloured by their label), for one feature
  the regression curve through the points;
- **the optimizer's state** per parameter: the step actually taken (the change of the value,
  ``‖Δw‖``), its slots (SGD's momentum, Adam's first and second moments ``m`` and ``v``, as
  norms), the learning rate, and the *effective* learning rate ``‖Δw‖ / ‖g‖``: how far the
  optimizer moved per unit of gradient (``lr`` for plain SGD; grows with momentum; for Adam it
  depends on the gradient's history, not its size).

Three ways to drive it, all recording the same things:

- ``view.step(n)`` trains ``n`` steps itself (the lessons' loop: a ``GradientTape``, the loss,
  ``tape.gradient``, ``optimizer.apply_gradients``), and so do its Play / one-step buttons;
- ``model.fit(x, y, callbacks=[view.callback()])``: a Keras callback, after each batch;
- a training loop of your own calls ``view.record(tape, loss)`` after each step (after
  ``apply_gradients``; the tape must have computed the gradients of the model's variables).

Its state is plain attributes, so tests drive it without a browser: ``view.history`` (a dict
of lists: ``"loss"``, ``"val_loss"``, and ``"grad_norm"``, a dict of lists per parameter
path), ``view.optimizer_state`` and ``view.parameters`` (the latest panels' numbers),
``view.boundary`` (the model's output over the grid), ``view.frames`` (one per redraw).
``to_html()`` / ``save_html(path)`` export the recorded run as one self-contained page (a
frame per redraw, a slider, no CDN, no kernel); the notebook output carries the same frames
as static HTML beside the widget, for viewers that show no widgets.

>>> import numpy as np, minitape as mt
>>> from minitape.viz import TrainingView
>>> x = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]], np.float32)
>>> y = np.array([[1.0], [1.0], [0.0], [0.0]], np.float32)
>>> model = mt.layers.Dense(1, kernel_initializer="zeros", name="linear")
>>> view = TrainingView(model, x, y, loss="mse", optimizer=mt.optimizers.SGD(0.1))
>>> view.step(3)
>>> len(view.history["loss"]), sorted(view.history["grad_norm"])
(3, ['linear/bias', 'linear/kernel'])
"""

from __future__ import annotations

import base64
import html
import inspect
import io
import time
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..engine.tape import GradientTape
from ..engine.tensor import Tensor, Variable
from ..lessons import fallback_metadata
from ..ops.constant_op import constant
from .draw import DARK_THEME_STYLE

GRID = 60     # points per side of the decision-boundary grid


@dataclass
class Frame:
    """One redraw, as the static page shows it: the step number and its pieces of HTML."""

    step: int
    loss: float
    tape_svg: str
    plots_png: bytes
    tables: str


class TrainingView(widgets.VBox):
    """Train a model and watch it learn (see the module docstring).

    Args:
        model: a callable Module (``mt.layers.Sequential``, ``mt.keras.Model``, a ``Dense``):
            ``model(x)`` gives the predictions.
        x, y: the training inputs ``(n, features)`` and targets (arrays, lists or Tensors,
            first axis the samples).
        loss: a function ``(y_true, y_pred) -> loss`` (its mean over the batch is used), a
            ``mt.keras.losses`` instance or name (``"mse"``,
            ``"sparse_categorical_crossentropy"``, ...); default: the model's compiled loss.
        optimizer: an optimizer (``mt.optimizers.SGD(0.1)``) or a name; default: the model's
            compiled optimizer.
        batch_size: samples per step, reshuffled each epoch with ``mt.random``'s generator
            (``mt.random.set_seed`` makes it repeatable); None (the default) uses every sample
            at every step (full-batch gradient descent, the clearest to watch; Keras's ``fit``
            defaults to 32).
        validation_data: optional ``(x_val, y_val)``: its loss is recorded at every step.
        redraw_every: redraw (and keep a frame) every that many steps.
        log_scale: draw the loss on a log scale.
        max_frames: keep at most this many frames for ``to_html`` (the oldest go first).

    Raises:
        TypeError: ``model`` is not callable, or ``loss`` / ``optimizer`` of a wrong kind.
        ValueError: no loss or optimizer given and none compiled; ``x`` and ``y`` differ in
            length; ``batch_size`` or ``redraw_every`` below 1.
    """

    def __init__(self, model, x, y, loss=None, optimizer=None, batch_size=None,
                 validation_data=None, *, redraw_every=1, log_scale=False, max_frames=200):
        from .. import optimizers as _optimizers
        from ..keras import losses as _losses
        if not callable(model):
            raise TypeError(f"TrainingView: model must be callable (a Module or layer), got "
                            f"{type(model).__name__}")
        self.model = model
        self.x, self.y = _array(x, "x"), _array(y, "y")
        if len(self.x) != len(self.y):
            raise ValueError(f"TrainingView: x has {len(self.x)} samples but y has "
                             f"{len(self.y)}; they must have the same first dimension")
        loss = loss if loss is not None else getattr(model, "loss", None)
        if loss is None:
            raise ValueError("TrainingView needs a loss: pass loss='mse' (or a function "
                             "(y_true, y_pred) -> loss), or compile the model first")
        self.loss_fn = _losses.get(loss)
        optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        if optimizer is None:
            raise ValueError("TrainingView needs an optimizer: pass "
                             "optimizer=mt.optimizers.SGD(learning_rate=0.1), or compile the "
                             "model first")
        self.optimizer = _optimizers.get(optimizer)
        if batch_size is not None and int(batch_size) < 1:
            raise ValueError(f"TrainingView: batch_size must be a positive integer or None, "
                             f"got {batch_size!r}")
        self.batch_size = None if batch_size is None else int(batch_size)
        self.validation_data = None
        if validation_data is not None:
            self.validation_data = (_array(validation_data[0], "validation x"),
                                    _array(validation_data[1], "validation y"))
        if int(redraw_every) < 1:
            raise ValueError(f"TrainingView: redraw_every must be at least 1, got "
                             f"{redraw_every!r}")
        self.redraw_every = int(redraw_every)
        self.log_scale = bool(log_scale)
        self.max_frames = int(max_frames)
        self.history = {"loss": [], "val_loss": [], "grad_norm": {}}
        self.steps = 0
        self.optimizer_state = {}
        self.parameters = {}
        self.frames = []
        self.last_tape = None
        self.boundary = None
        self.redraw_seconds = None       # how long the last redraw took
        self._order, self._cursor = None, 0
        self._figure = None
        if not _variables(model):        # build the model (a first call makes the Variables)
            model(constant(self.x[:1]))
        self._previous = {v.path: v.numpy() for v in _variables(model)}
        self._build_widgets()
        self._boundary_values()
        self._refresh_plots()

    # -- training ---------------------------------------------------------------------------
    def step(self, n=1) -> None:
        """Train ``n`` steps (each: a batch, a tape, the gradients, ``apply_gradients``,
        then ``record``)."""
        if int(n) < 0:
            raise ValueError(f"TrainingView.step: n must be 0 or more, got {n!r}")
        for _ in range(int(n)):
            xb, yb = self._next_batch()
            variables = _variables(self.model)
            with GradientTape() as tape:
                loss = self._loss(xb, yb, training=True)
            grads = tape.gradient(loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables))
            self.record(tape, loss)

    def record(self, tape, loss) -> None:
        """Record one step of a training loop: call it after ``apply_gradients``.

        Args:
            tape: the step's GradientTape, after ``tape.gradient(loss, variables)`` ran.
            loss: the step's loss (a scalar Tensor or number).

        Raises:
            TypeError: ``tape`` is not a GradientTape.
            ValueError: the tape has not computed gradients yet.
        """
        if not isinstance(tape, GradientTape):
            raise TypeError(f"TrainingView.record expects the step's GradientTape, got "
                            f"{type(tape).__name__}")
        from .record import record_of
        last_pass = record_of(tape).last_pass
        if last_pass is None:
            raise ValueError("TrainingView.record: this tape has not computed any gradient "
                             "(or was made while mt.config.record_source_lines(False)); "
                             "call it after grads = tape.gradient(loss, "
                             "model.trainable_variables) and apply_gradients")
        self.last_tape, self._last_loss = tape, loss
        self.steps += 1
        self.history["loss"].append(float(np.asarray(_value(loss)).mean()))
        if self.validation_data is not None:
            with _paused():
                val = self._loss(*self.validation_data, training=False)
            self.history["val_loss"].append(float(val.numpy()))
        gradients = last_pass.gradients
        lr = float(np.asarray(_value(self.optimizer.learning_rate)))
        slots = optimizer_slots(self.optimizer)
        for v in _variables(self.model):
            g = gradients.get(v.id)
            g = None if g is None else np.asarray(g.numpy(), dtype=np.float64)
            gnorm = float(np.linalg.norm(g)) if g is not None else float("nan")
            self.history["grad_norm"].setdefault(v.path, []).append(gnorm)
            value = v.numpy()
            before = self._previous.get(v.path)
            taken = None if before is None or before.shape != value.shape else value - before
            self._previous[v.path] = value
            step_norm = float(np.linalg.norm(taken)) if taken is not None else float("nan")
            state = {"lr": lr, "step": step_norm,
                     "effective_lr": step_norm / gnorm if gnorm > 0 else float("nan")}
            for name, array in slots.get(v.path, {}).items():
                state[name] = float(np.linalg.norm(array.astype(np.float64)))
            self.optimizer_state[v.path] = state
            self.parameters[v.path] = {
                "shape": tuple(v.shape), "norm": float(np.linalg.norm(value)),
                "min": float(value.min()), "mean": float(value.mean()),
                "max": float(value.max()), "grad_norm": gnorm}
        if self.steps % self.redraw_every == 0:
            self.redraw()

    def callback(self):
        """A Keras callback that records every batch of ``model.fit`` into this view::

            model.compile(optimizer=mt.optimizers.SGD(0.1), loss="mse")
            model.fit(x, y, callbacks=[view.callback()])

        The view then shows ``fit``'s optimizer (the model's compiled one).
        """
        from ..keras.callbacks import Callback

        view = self

        class TrainingViewCallback(Callback):
            """Records each batch of ``fit`` into a ``TrainingView``."""

            def on_train_begin(self, logs=None):
                if getattr(self.model, "optimizer", None) is not None:
                    view.optimizer = self.model.optimizer

            def on_train_batch_end(self, batch, logs=None):
                step = getattr(self.model, "last_train_step", None)
                if step is None:
                    raise TypeError(
                        f"TrainingView's callback needs the step's tape: "
                        f"{type(self.model).__name__}.train_step did not set "
                        "self.last_train_step = (tape, loss) (mt.keras.Model.train_step "
                        "does; an overriding train_step must too)")
                view.record(*step)

        return TrainingViewCallback()

    def _next_batch(self):
        n = len(self.x)
        if self.batch_size is None or self.batch_size >= n:     # (drawn as x and y)
            return constant(self.x, name="x"), constant(self.y, name="y")
        from ..ops import random_ops
        if self._order is None or self._cursor >= n:
            self._order, self._cursor = random_ops._rng(None).permutation(n), 0
        index = self._order[self._cursor:self._cursor + self.batch_size]
        self._cursor += self.batch_size
        return constant(self.x[index], name="x"), constant(self.y[index], name="y")

    def _loss(self, x, y, training):
        x = x if isinstance(x, Tensor) else constant(x)
        y = y if isinstance(y, Tensor) else constant(y)
        value = self.loss_fn(y, _call(self.model, x, training))
        if value.ndim:
            from ..ops import reduction_ops
            value = reduction_ops.reduce_mean(value)
        return value

    # -- pictures ---------------------------------------------------------------------------
    def redraw(self) -> None:
        """Redraw every panel from the latest step and keep a frame for ``to_html``."""
        start = time.perf_counter()
        self._boundary_values()
        svg = self._tape_svg()
        png = self._refresh_plots()
        tables = self._tables_html()
        self._tape_view.value = (DARK_THEME_STYLE + '<div class="minitape-drawing" '
                                 f'style="overflow:auto;max-height:34em">{svg}</div>')
        self._tables.value = tables
        self._status.value = self._status_text()
        self.frames.append(Frame(self.steps, self.history["loss"][-1] if self.steps else
                                 float("nan"), svg, png, tables))
        del self.frames[:-self.max_frames]
        self.redraw_seconds = time.perf_counter() - start

    def _tape_svg(self) -> str:
        from .draw import draw_tape
        from .graph import tape_graph
        from .labels import is_fallback
        if self.last_tape is None:
            return "<p>(no step yet)</p>"
        loss = self._last_loss if isinstance(self._last_loss, Tensor) else None
        graph = tape_graph(self.last_tape, loss, _variables(self.model))
        if loss is not None and loss.id in {n.tensor_id for n in graph.tensors}:
            node = graph.tensor(loss)
            if is_fallback(node.label):     # (computed inside the step: ``mean #9``)
                node.label = "loss"
        dot = draw_tape(self.last_tape, loss, _variables(self.model), group="module",
                        why=False, graph=graph)
        # Laid out for the notebook column as ``draw_tape`` lays out its drawings (never
        # shrunk below 11 px labels), and shown at that size: a box scrolls, it never shrinks.
        svg = dot.pipe(format="svg", encoding="utf-8")
        return svg[svg.find("<svg"):]

    def _boundary_values(self):
        """The model's output over the grid (two features) or the line (one feature)."""
        features = self.x.shape[1] if self.x.ndim == 2 else 0
        if features not in (1, 2):
            return
        lo, hi = self.x.min(axis=0), self.x.max(axis=0)
        pad = 0.1 * (hi - lo) + 1e-3
        lo, hi = lo - pad, hi + pad
        if features == 2:
            gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], GRID), np.linspace(lo[1], hi[1], GRID))
            points = np.stack([gx.ravel(), gy.ravel()], axis=1).astype(self.x.dtype)
        else:
            points = np.linspace(lo[0], hi[0], 200)[:, None].astype(self.x.dtype)
        with _paused():
            out = np.asarray(_call(self.model, constant(points), False).numpy(), np.float64)
        self._grid = points
        self.boundary = out.reshape(GRID, GRID, -1) if features == 2 else out.reshape(200, -1)

    def _refresh_plots(self) -> bytes:
        """The loss curve and the boundary as one PNG (matplotlib, no pyplot). The figure is
        made once and its artists updated: making axes and ticks is what costs most."""
        if self._figure is None:
            self._make_figure()
        steps = np.arange(1, len(self.history["loss"]) + 1)
        self._loss_line.set_data(steps, self.history["loss"])
        self._val_line.set_data(steps[:len(self.history["val_loss"])], self.history["val_loss"])
        ax = self._loss_ax
        log = self.log_scale and self.history["loss"] and min(self.history["loss"]) > 0
        ax.set_yscale("log" if log else "linear")
        ax.relim()
        ax.autoscale_view()
        if self.boundary is not None:
            self._update_data()
        buffer = io.BytesIO()
        self._figure.savefig(buffer, format="png")
        png = buffer.getvalue()
        self._plots.value = png
        return png

    def _make_figure(self):
        from matplotlib.figure import Figure
        has_data = self.boundary is not None
        fig = self._figure = Figure(figsize=(8.4 if has_data else 4.4, 3.4), dpi=80)
        fig.subplots_adjust(left=0.09 if has_data else 0.16, right=0.98, bottom=0.15,
                            top=0.9, wspace=0.25)
        ax = self._loss_ax = fig.add_subplot(1, 2 if has_data else 1, 1)
        (self._loss_line,) = ax.plot([], [], color="#1f5fbf", label="training loss")
        (self._val_line,) = ax.plot([], [], color="#e67e22", label="validation loss")
        ax.set_xlabel("step")
        ax.set_title("loss")
        ax.legend(handles=[self._loss_line] + ([self._val_line] if self.validation_data
                                                else []), loc="upper right", fontsize=8)
        self._contours = []
        if not has_data:
            return
        ax = self._data_ax = fig.add_subplot(1, 2, 2)
        labels = self.y.reshape(len(self.y), -1)
        colour = labels.argmax(axis=1) if labels.shape[1] > 1 else labels[:, 0]
        if self.boundary.ndim == 3:                      # two features: the boundary
            ax.scatter(self.x[:, 0], self.x[:, 1], c=colour, cmap="coolwarm", s=12,
                       edgecolors="k", linewidths=0.3, zorder=3)
            ax.set_title("decision boundary")
        else:                                             # one feature: the curve
            ax.scatter(self.x[:, 0], colour, s=10, color="gray")
            (self._curve,) = ax.plot(self._grid[:, 0], self.boundary[:, 0], color="#c0392b")
            ax.set_title("the model's curve")

    def _update_data(self):
        ax = self._data_ax
        if self.boundary.ndim == 2:
            self._curve.set_ydata(self.boundary[:, 0])
            ax.relim()
            ax.autoscale_view()
            return
        for c in self._contours:
            c.remove()
        g = self._grid
        gx, gy = g[:, 0].reshape(GRID, GRID), g[:, 1].reshape(GRID, GRID)
        out = self.boundary
        if out.shape[2] > 1:                              # classes: the argmax regions
            self._contours = [ax.contourf(gx, gy, out.argmax(axis=2), cmap="coolwarm",
                                          levels=np.arange(out.shape[2] + 1) - 0.5, alpha=0.35)]
            return
        z = out[:, :, 0]
        threshold = 0.5 if 0.0 <= z.min() and z.max() <= 1.0 else 0.0
        self._contours = [ax.contourf(gx, gy, z, levels=12, cmap="coolwarm", alpha=0.35)]
        if z.min() < threshold < z.max():
            self._contours.append(ax.contour(gx, gy, z, levels=[threshold], colors="k",
                                             linewidths=1.5))

    def _tables_html(self) -> str:
        rows = []
        for path, p in self.parameters.items():
            shape = "x".join(map(str, p["shape"])) or "scalar"
            rows.append(f"<tr><td><code>{html.escape(path)}</code></td><td>{shape}</td>"
                        f"<td>{p['min']:.3g} .. {p['mean']:.3g} .. {p['max']:.3g}</td>"
                        f"<td>{p['norm']:.4g}</td><td>{p['grad_norm']:.4g}</td>"
                        f"<td>{sparkline(self.history['grad_norm'].get(path, []))}</td></tr>")
        params = ("<table><tr><th>parameter</th><th>shape</th><th>min .. mean .. max</th>"
                  "<th>‖w‖</th><th>‖g‖</th><th>‖g‖ over the steps</th></tr>"
                  + "".join(rows) + "</table>")
        names = []
        for state in self.optimizer_state.values():
            names += [k for k in state if k not in ("lr", "step", "effective_lr")]
        names = list(dict.fromkeys(names))
        rows = []
        for path, s in self.optimizer_state.items():
            slots = "".join(f"<td>{s.get(n, float('nan')):.4g}</td>" for n in names)
            rows.append(f"<tr><td><code>{html.escape(path)}</code></td><td>{s['step']:.4g}</td>"
                        f"{slots}<td>{s['lr']:.4g}</td><td>{s['effective_lr']:.4g}</td></tr>")
        heads = "".join(f"<th>‖{html.escape(n)}‖</th>" for n in names)
        opt = (f"<table><tr><th>{html.escape(type(self.optimizer).__name__)}</th>"
               f"<th>step taken ‖Δw‖</th>{heads}<th>lr</th><th>effective lr ‖Δw‖/‖g‖</th>"
               "</tr>" + "".join(rows) + "</table>")
        style = ("<style>.mt-tv table{border-collapse:collapse;font-size:12px;margin:4px}"
                 ".mt-tv td,.mt-tv th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
                 "</style>")
        return (f'{style}<div class="mt-tv"><b>parameters</b>{params}'
                f"<b>optimizer state</b>{opt}</div>")

    def _status_text(self) -> str:
        if not self.steps:
            return "step 0: not trained yet"
        text = f"step {self.steps}: loss {self.history['loss'][-1]:.4g}"
        if self.history["val_loss"]:
            text += f", validation loss {self.history['val_loss'][-1]:.4g}"
        return text

    # -- the widget -------------------------------------------------------------------------
    def _build_widgets(self):
        self._play = widgets.Play(value=0, min=0, max=10**9, step=1, interval=300,
                                  description="play", show_repeat=False)
        self._one = widgets.Button(description="one step", layout=widgets.Layout(width="7em"))
        self._speed = widgets.IntSlider(value=300, min=20, max=2000, step=20,
                                        description="ms / step", readout=True)
        self._every = widgets.BoundedIntText(value=self.redraw_every, min=1, max=10**6,
                                             description="redraw every",
                                             style={"description_width": "initial"},
                                             layout=widgets.Layout(width="11em"))
        self._log = widgets.Checkbox(value=self.log_scale, description="log scale",
                                     indent=False, layout=widgets.Layout(width="7em"))
        self._status = widgets.HTML(self._status_text())
        self._tape_view = widgets.HTML("<p>(the tape of the latest step shows here)</p>",
                                       layout=widgets.Layout(max_width="100%"))
        self._plots = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self._tables = widgets.HTML()
        widgets.jslink((self._speed, "value"), (self._play, "interval"))
        self._play.observe(self._on_play, names="value")
        self._one.on_click(lambda _: self.step(1))
        self._every.observe(self._on_every, names="value")
        self._log.observe(self._on_log, names="value")
        super().__init__([
            widgets.HBox([self._play, self._one, self._speed, self._every, self._log]),
            self._status,
            # (wrapped: a drawing too wide to sit beside the plots goes above them, at its
            # legible size)
            widgets.HBox([self._tape_view, self._plots],
                         layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start")),
            self._tables])
        self.add_class("minitape-training-view")

    def _on_play(self, change):
        if change["new"] > change["old"]:
            self.step(change["new"] - change["old"])

    def _on_every(self, change):
        self.redraw_every = max(1, int(change["new"]))

    def _on_log(self, change):
        self.log_scale = bool(change["new"])
        self._refresh_plots()

    # -- static export ----------------------------------------------------------------------
    def _frame_html(self, frame) -> str:
        png = base64.b64encode(frame.plots_png).decode("ascii")
        return (f'<p><b>step {frame.step}</b>: loss {frame.loss:.4g}</p>'
                f'<div style="display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start">'
                f'<div class="minitape-drawing" style="flex:0 1 auto;max-width:100%;'
                f'overflow:auto;max-height:34em">{frame.tape_svg}</div>'
                f'<img alt="loss and data at step {frame.step}" style="max-width:100%" '
                f'src="data:image/png;base64,{png}"></div>{frame.tables}')

    def to_html(self, title="minitape TrainingView") -> str:
        """The recorded run as one self-contained page: a frame per redraw and a slider.

        No CDN, no kernel, no external URL (images are inline ``data:`` URLs, the tape is
        inline SVG); without JavaScript every frame shows, one under the other.
        """
        frames = "".join(f'<section class="frame" data-step="{f.step}">{self._frame_html(f)}'
                         "</section>" for f in self.frames)
        n = max(len(self.frames) - 1, 0)
        return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;background:#fff;color:#111}}
</style></head>
<body><h1>{html.escape(title)}</h1>
<p><input id="frame" type="range" min="0" max="{n}" value="{n}" hidden>
<span id="label" hidden></span></p>
{frames or "<p>(no step recorded yet)</p>"}
<script>
var frames = document.querySelectorAll(".frame"), s = document.getElementById("frame");
var label = document.getElementById("label");
function show() {{ frames.forEach(function (f, k) {{ f.hidden = (k != s.value); }});
  var f = frames[s.value]; label.textContent = f ? "step " + f.dataset.step : ""; }}
s.hidden = false; label.hidden = false; s.oninput = show; show();
</script></body></html>
"""

    def save_html(self, path) -> None:
        """Write ``to_html()`` to ``path`` (UTF-8)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html())

    def _static_html(self) -> str:
        """For notebook viewers that show no widgets: the latest frame open, the earlier ones
        folded under it (no JavaScript needed)."""
        if not self.frames:
            png = base64.b64encode(self._plots.value).decode("ascii")
            return (f'<div class="minitape-training-static"><p>{self._status_text()}</p>'
                    f'<img style="max-width:100%" src="data:image/png;base64,{png}"></div>')
        last = self.frames[-1]
        earlier = "".join(f"<details><summary>step {f.step}: loss {f.loss:.4g}</summary>"
                          f"{self._frame_html(f)}</details>" for f in self.frames[:-1])
        return (f'<div class="minitape-training-static">{self._frame_html(last)}'
                + (f"<details><summary>earlier steps ({len(self.frames) - 1} frames)</summary>"
                   f"{earlier}</details>" if earlier else "") + "</div>")

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        bundle = super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs) or {}
        bundle["text/html"] = DARK_THEME_STYLE + self._static_html()
        return bundle, fallback_metadata("text/html")   # (see minitape.lessons.pre_save_hook)

    def __repr__(self):
        return f"<TrainingView {self._status_text()}>"


# -- helpers --------------------------------------------------------------------------------

def optimizer_slots(optimizer) -> dict:
    """``{variable path: {slot name: ndarray}}``: what an optimizer keeps per Variable
    (SGD's ``momentum``, Adam's ``m`` and ``v``), found by the slots' paths
    (``"<optimizer>/<slot>/<variable path>"``, as ``Optimizer._slot`` names them)."""
    prefix = f"{optimizer.name}/"
    found = {}
    for v in optimizer.variables:
        path = getattr(v, "path", "") or ""
        if not path.startswith(prefix) or path.count("/") < 2:
            continue
        slot, owner = path[len(prefix):].split("/", 1)
        found.setdefault(owner, {})[slot] = v.numpy()
    return found


def sparkline(values, width=90, height=18) -> str:
    """A tiny inline SVG line of ``values`` (NaNs skipped), for a table cell."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if len(v) < 2:
        return ""
    lo, hi = v.min(), v.max()
    ys = (height - 2) * (1 - (v - lo) / (hi - lo if hi > lo else 1.0)) + 1
    xs = np.linspace(1, width - 1, len(v))
    points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys))
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<polyline fill="none" stroke="#c0392b" stroke-width="1.2" points="{points}"/>'
            "</svg>")


def _array(data, what):
    if isinstance(data, Tensor):
        return data.numpy()
    try:
        a = np.asarray(data)
    except Exception:
        a = None
    if a is None or a.dtype.kind not in "biuf" or a.ndim == 0:
        raise TypeError(f"TrainingView: {what} must be an array of numbers with the samples "
                        f"on the first axis, got {type(data).__name__} {data!r:.60}")
    return a.astype(np.float32) if a.dtype == np.float64 else a


def _value(t):
    return t.numpy() if isinstance(t, Tensor) else t


def _variables(model):
    variables = getattr(model, "trainable_variables", None)
    if variables is None:
        raise TypeError(f"TrainingView: the model must have trainable_variables (a Module), "
                        f"got {type(model).__name__}")
    return [v for v in variables if isinstance(v, Variable)]


def _call(model, x, training):
    """``model(x, training=...)`` if the model takes ``training``, else ``model(x)``."""
    try:
        params = inspect.signature(model.call if hasattr(model, "call") else model).parameters
    except (TypeError, ValueError):
        params = {}
    takes = "training" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())
    return model(x, training=training) if takes else model(x)


class _paused:
    """Pause every tape of this thread (the view's own forward passes are not the learner's)."""

    def __enter__(self):
        from ..engine.recording import state
        self._saved = list(state.tapes)
        state.tapes[:] = []

    def __exit__(self, *exc):
        from ..engine.recording import state
        state.tapes[:] = self._saved
