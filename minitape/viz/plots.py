"""matplotlib figures for gradients and Jacobians (matplotlib is imported only when called).

- ``plot_gradient(f, x)``: a function and its derivative on one plot (the guide's sigmoid figure).
- ``imshow_zero_center(matrix)``: a signed matrix with zero in the middle of the colour map
  (white), as the advanced guide shows its Hessian.
- ``plot_as_patches(j)``: a ``(batch, out, batch, in)`` Jacobian as a grid of patches, one per
  pair of batch entries (the guide's batch-Jacobian figure: only the diagonal is non-zero).
- ``plot_jacobian(j)``: any Jacobian, reshaped to ``(target elements, source elements)``.

Each draws on ``ax`` if given, else on a new figure, and returns the ``Axes``
(``ax.figure`` is the figure). Signed images get a colour bar.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import minitape as mt
>>> from minitape.viz import plot_gradient
>>> ax = plot_gradient(mt.math.sigmoid, mt.linspace(-10.0, 10.0, 201))
>>> [line.get_label() for line in ax.get_lines()]
['y', 'dy/dx']
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..engine.tape import GradientTape
from ..engine.tensor import Tensor, convert_to_tensor
from ..ops.math_ops import cast


def _axes(ax):
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots()
    return ax


def _array(value, what):
    if isinstance(value, Tensor):
        return np.asarray(value)
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{what} expects a Tensor or an array of numbers, got "
                        f"{type(value).__name__}") from None


def plot_gradient(f, x, ax=None, label="y", title=None):
    """Plot ``y = f(x)`` and its derivative ``dy/dx`` against ``x``.

    Args:
        f: a function of a Tensor, applied element by element (``mt.math.sigmoid``,
            ``lambda x: x**2``), returning a Tensor of ``x``'s shape.
        x: a 1-D Tensor or array of points, shape ``(n,)``.
        ax: optional matplotlib Axes to draw on.
        label: the name of the function in the legend.

    Returns:
        The Axes, with two lines labelled ``label`` and ``"d<label>/dx"``.

    The derivative is ``tape.gradient(y, x)``: the gradient of the sum of ``y``, which for an
    elementwise ``f`` is the derivative at each point.
    """
    x = convert_to_tensor(x, what="plot_gradient x")
    if x.dtype.kind != "f":
        x = cast(x, dtypes.float32)
    if x.ndim != 1:
        raise ValueError(f"plot_gradient expects a 1-D x of shape (n,), got shape {x.shape}")
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    dy_dx = tape.gradient(y, x)
    if dy_dx is None:
        raise ValueError("plot_gradient: f(x) does not depend on x through minitape operations "
                         "(its gradient is None); use minitape ops inside f")
    ax = _axes(ax)
    ax.plot(x.numpy(), _array(y, "plot_gradient"), label=label)
    ax.plot(x.numpy(), dy_dx.numpy(), label=f"d{label}/dx")
    ax.set_xlabel("x")
    ax.set_ylabel(f"{label} and d{label}/dx")
    ax.set_title(title or f"{label} and its derivative d{label}/dx")
    ax.legend()
    return ax


def imshow_zero_center(matrix, ax=None, quantity="value", title=None, xlabel="column",
                       ylabel="row", **kwargs):
    """Show a signed matrix with the colour map centred on zero (blue < 0 < red).

    Args:
        matrix: a 2-D Tensor or array, shape ``(rows, columns)``.
        ax: optional Axes; other keyword arguments go to ``Axes.imshow`` (e.g. ``extent``).
        quantity: what the colours mean, the colour bar's label (e.g. ``"d2y/dx2"``).
        title, xlabel, ylabel: the Axes' title (default: the quantity and the shape) and
            axis labels.

    Returns:
        The Axes; its image has ``vmin = -vmax = -max|matrix|`` and a labelled colour bar.
    """
    image = _array(matrix, "imshow_zero_center")
    if image.ndim != 2:
        raise ValueError(f"imshow_zero_center expects a 2-D matrix, got shape {image.shape}")
    lim = float(np.max(np.abs(image))) if image.size else 0.0
    lim = lim if lim > 0 else 1.0
    ax = _axes(ax)
    kwargs.setdefault("cmap", "seismic")
    im = ax.imshow(image, vmin=-lim, vmax=lim, **kwargs)
    bar = ax.figure.colorbar(im, ax=ax)
    bar.set_label(f"{quantity} (blue < 0 < red)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title or f"{quantity}, shape {image.shape}")
    return ax


def plot_as_patches(j, ax=None):
    """Show a ``(batch, out, batch, in)`` Jacobian as a grid of ``(batch, batch)`` patches.

    As the advanced guide's ``plot_as_patches``: the axes are reordered to
    ``(out, batch, in, batch)``, so patch ``(o, i)`` (row o, column i of the grid) is the
    ``(batch, batch)`` slice ``j[:, o, :, i]``: how output ``o`` of every example depends on
    input ``i`` of every example. Patches are separated by a border of ``-max|j|``. When the
    examples are independent, every patch is diagonal (``batch_jacobian`` then gives the same
    numbers without the zero blocks).

    Returns:
        The Axes (x: input index, y: output index, one patch per index).
    """
    j = _array(j, "plot_as_patches")
    if j.ndim != 4:
        raise ValueError(f"plot_as_patches expects a Jacobian of shape (batch, out, batch, in), "
                         f"got shape {j.shape}")
    j = np.transpose(j, (1, 0, 3, 2))              # contiguous (batch, batch) blocks
    lim = float(np.max(np.abs(j))) if j.size else 1.0
    j = np.pad(j, [(0, 0), (1, 1), (0, 0), (1, 1)], constant_values=-lim)
    s = j.shape
    image = j.reshape(s[0] * s[1], s[2] * s[3])
    ax = imshow_zero_center(image, ax=ax, extent=[-0.5, s[2] - 0.5, s[0] - 0.5, -0.5],
                            quantity="d output / d input",
                            title="Jacobian as (batch, batch) patches",
                            xlabel="input index (each patch: a (batch, batch) slice)",
                            ylabel="output index")
    return ax


def plot_jacobian(j, target_ndim=None, ax=None):
    """Show a Jacobian of shape ``target.shape + source.shape`` as a 2-D image.

    Args:
        j: the Jacobian (Tensor or array).
        target_ndim: how many leading axes belong to the target; default half of ``j.ndim``
            (rounded up), so a ``(m, n)`` Jacobian is shown as it is.
        ax: optional Axes.

    Returns:
        The Axes: rows are target elements, columns source elements, with a colour bar.
    """
    j = _array(j, "plot_jacobian")
    if j.ndim == 0:
        j = j.reshape(1, 1)
    k = (j.ndim + 1) // 2 if target_ndim is None else int(target_ndim)
    if not 0 <= k <= j.ndim:
        raise ValueError(f"plot_jacobian: target_ndim={k} is not between 0 and {j.ndim}")
    rows = int(np.prod(j.shape[:k]))
    matrix = j.reshape(rows, -1) if j.size else np.zeros((rows, 0))
    ax = imshow_zero_center(matrix, ax=ax, quantity="d target / d source",
                            title=f"Jacobian {j.shape}",
                            xlabel=f"source element (source shape {j.shape[k:]})",
                            ylabel=f"target element (target shape {j.shape[:k]})")
    return ax
