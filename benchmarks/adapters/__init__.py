"""One small adapter module per contestant.

Every adapter exposes the same functions. Each takes NumPy data, does its setup (converting
the data to the library's own arrays, creating variables), and returns a zero-argument
function ``run()`` that does the timed work and returns NumPy results (so the benchmark can
check them against the hand-written NumPy floor before timing):

- ``chain(x0, steps)``: ``run() -> (y, dy/dx)``, forward plus backward, of ``steps`` steps of
  ``y = sin(y) * 1.0001 + y * y * 0.001`` (5 recorded ops per step); for a vector ``x0`` the
  gradient is that of ``sum(y)``.
- ``chain_forward(x0, steps)``: ``run() -> y``, the same chain with no gradient recording.
- ``mlp(layers, x, labels, onehot)``: ``run() -> (loss, [dW1, db1, dW2, db2, ...])`` for a relu
  MLP with a softmax cross-entropy loss (mean over the batch). ``layers`` is a list of (W, b).
- ``jacobian(params, x, mode)``: two Dense elu layers; ``mode`` is ``"vectorized"`` or
  ``"looped"`` (the full Jacobian, ``y.shape + x.shape``) or ``"batch"`` (``(B, out, in)``).
- ``hessian(params, x)``: the Hessian of ``mean(relu(relu(x W1 + b1) W2 + b2)**2)`` with
  respect to ``W1`` (the TensorFlow advanced-autodiff guide's example).
- ``conv(params, x, labels, onehot)``: ``run() -> (loss, [dW, db, dW2, db2])`` for
  ``relu(conv2d(x, W) + b)`` (NHWC images, HWIO 3x3 filters, ``"VALID"``), flattened in NHWC
  order, a Dense layer and the softmax cross-entropy (mean over the batch).
- ``train_step(layers, x, y, learning_rate)``: ``run() -> (loss, [W1, b1, ...] after the
  step)``, one SGD step of a tanh MLP on the mean squared error, written as a learner
  writes it with the library's model API (lesson 05 for minitape); the weights change in
  place, so only the first call is checked.

An adapter may leave a function out (or raise ``NotImplementedError``): that cell of the table
says ``n/a``.

Every table cell names the API that was timed. An adapter's ``API`` dict maps each function
name to the API its ``run`` calls (e.g. ``{"chain": "torch.autograd.grad"}``). Where a peer
has several ways to do the same thing (PyTorch's ``torch.func.jacrev`` and
``torch.autograd.functional.jacobian``), the function returns a dict ``{API name: run}``
instead of one ``run``: every variant is checked and timed side by side, and the table
reports the fastest one, under its name (``api_name`` and ``variants`` below).
"""

from __future__ import annotations

import importlib

# Chunk sizes of a vectorized Jacobian's cotangents, offered to every library that has the
# knob (minitape's ``parallel_iterations``, as TensorFlow's; ``torch.func.jacrev``'s
# ``chunk_size``), besides its one-pass default: the table keeps each library's fastest.
VECTORIZED_CHUNKS = (128, 256)

# Table order: the floor first, then minitape, then the peers; last ``lean``, a yardstick
# (``lean_tape.py``: the leanest tape on NumPy, what any NumPy tape can reach), not a library.
CONTESTANTS = ["numpy", "minitape", "torch", "autograd", "mygrad", "tensorflow", "jax", "lean"]

# What each peer's adapter needs to import, for the "skipped" notes.
MODULES = {
    "numpy": "numpy_hand",
    "minitape": "minitape_adapter",
    "torch": "torch_adapter",
    "autograd": "autograd_adapter",
    "mygrad": "mygrad_adapter",
    "tensorflow": "tensorflow_adapter",
    "jax": "jax_adapter",
    "lean": "lean_tape",
}

# The name a contestant imports under (for the `import` workload).
IMPORT_NAMES = {"numpy": "numpy", "minitape": "minitape", "torch": "torch",
                "autograd": "autograd", "mygrad": "mygrad", "tensorflow": "tensorflow",
                "jax": "jax", "lean": None}


def load(name):
    """Return ``(adapter module, None)``, or ``(None, note)`` when the library is missing."""
    try:
        module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    except ImportError as e:  # the adapter imports its library at the top
        return None, f"not installed ({e.name or e})"
    return module, None


def variants(module, function, made):
    """``[(API name, run)]`` of what ``module.function(...)`` returned (``made``): a dict of
    variants as it is, a single ``run`` under the name in ``module.API`` (the function's own
    name when the adapter has no ``API`` entry for it)."""
    if isinstance(made, dict):
        return list(made.items())
    return [(getattr(module, "API", {}).get(function, function), made)]
