"""Checking gradients against finite differences: ``central_difference`` and ``check_grads``.

A gradient rule can be wrong in ways no example catches by eye (a missing transpose, a sign, a
forgotten broadcast). The cure is to compare it with numbers computed *without* it: central
differences of the function itself.

The check, as in HIPS autograd's ``check_grads``:

1. Draw a random direction ``v`` (one array per argument, unit norm over all of them) and
   estimate the directional derivative numerically::

       J v  ~  (f(x + eps v) - f(x - eps v)) / (2 eps)          (error O(eps**2))

2. Reverse mode: draw a random cotangent ``u`` on the output and compare two numbers,
   ``<u, J v>`` (numeric) and ``<VJP(u), v>`` where ``VJP(u) = u^T J`` comes from a
   ``GradientTape``. They are equal exactly when the tape's VJP is right along ``v``.
3. Forward mode: compare the ``ForwardAccumulator`` tangent ``J v`` with the numeric ``J v``.
4. Second order: the map ``x -> VJP(u)(x)`` is itself a function of ``x``, computed with a
   tape; check *it* the same way. Its reverse-mode check runs a tape over a tape (a
   Hessian-vector product), its forward-mode check runs forward mode over reverse mode.

Everything runs in float64, where central differences with ``eps = 1e-6`` agree with exact
derivatives to about ``1e-9`` relative: a wrong rule shows up as an error of order 1.
"""

from __future__ import annotations

import numpy as np

from .engine.forward import ForwardAccumulator
from .engine.tape import GradientTape, UnconnectedGradients
from .engine.tensor import Tensor
from .ops.constant_op import constant

__all__ = ["central_difference", "check_grads"]

_MODES = ("rev", "fwd")
_MODE_NAMES = {"rev": "reverse mode", "fwd": "forward mode"}


def _as_float64(args):
    """Every argument as a fresh float64 Tensor (Tensors and Variables are copied by value)."""
    out = []
    for a in args:
        value = np.asarray(a) if isinstance(a, Tensor) else a
        out.append(constant(np.array(value, dtype=np.float64)))
    return out


def _outputs(result, what="f"):
    """``f``'s result (a Tensor, or a list/tuple of them) -> (list of Tensors, was it one?)."""
    single = not isinstance(result, (list, tuple))
    items = [result] if single else list(result)
    for r in items:
        if not isinstance(r, Tensor):
            raise TypeError(f"{what} must return a minitape Tensor or a list/tuple of Tensors, "
                            f"got {type(r).__name__} {r!r:.60}")
    return items, single


def _shifted(args, direction, step):
    """``args + step * direction`` as new float64 Tensors (``None`` in direction: unchanged)."""
    return [a if d is None else constant(np.asarray(a) + step * d) for a, d in zip(args, direction)]


def _difference(f, args, direction, eps):
    """Central differences of each output of ``f`` along ``direction`` (float64 arrays)."""
    plus, _ = _outputs(f(*_shifted(args, direction, eps)))
    minus, _ = _outputs(f(*_shifted(args, direction, -eps)))
    return [(np.asarray(p, dtype=np.float64) - np.asarray(m, dtype=np.float64))
            / (2 * eps) for p, m in zip(plus, minus)]


def central_difference(f, *args, arg=0, eps=1e-6, direction=None):
    """The directional derivative of ``f`` by central differences, in float64.

    Formula::

        (f(..., x + eps * d, ...) - f(..., x - eps * d, ...)) / (2 * eps)

    with ``x = args[arg]`` and ``d = direction``; the error is ``O(eps**2)`` plus rounding of
    order ``1e-16 / eps`` relative to ``f``.

    Args:
        f: a function of minitape Tensors returning a Tensor or a list/tuple of Tensors.
        *args: its arguments (numbers, lists, ndarrays or Tensors); all become float64 Tensors.
        arg: the index of the argument to move; ``None`` moves all of them at once, and then
            ``direction`` holds one array per argument.
        eps: the half step.
        direction: an array of ``args[arg]``'s shape (default: ones, so for a scalar argument
            this is the ordinary derivative ``df/dx``).

    Returns:
        A float64 ndarray of the output's shape, or a tuple of them if ``f`` returns a
        list/tuple.

    Raises:
        ValueError: ``arg`` out of range, or a direction of the wrong shape or count.
        TypeError: ``f`` returned something that is not a minitape Tensor.

    >>> import minitape as mt
    >>> from minitape.testing import central_difference
    >>> round(float(central_difference(lambda x: x ** 3, 2.0)), 6)   # 3 * 2**2
    12.0
    >>> d = central_difference(lambda x, y: x * y, [1.0, 2.0], [3.0, 4.0], arg=1)
    >>> d.round(6)                                                      # d(x*y)/dy = x
    array([1., 2.])
    """
    args = _as_float64(args)
    if arg is None:
        if direction is None or len(direction) != len(args):
            raise ValueError(f"central_difference: with arg=None give one direction per "
                             f"argument ({len(args)}), got {direction!r:.60}")
        directions = [np.asarray(d, dtype=np.float64) for d in direction]
    else:
        if not isinstance(arg, int) or not -len(args) <= arg < len(args):
            raise ValueError(f"central_difference: arg={arg!r} is not the index of one of the "
                             f"{len(args)} argument(s)")
        d = (np.ones(args[arg].shape) if direction is None
             else np.asarray(direction, dtype=np.float64))
        directions = [None] * len(args)
        directions[arg] = d
    for a, d in zip(args, directions):
        if d is not None and d.shape != a.shape:
            raise ValueError(f"central_difference: a direction of shape {d.shape} for an "
                             f"argument of shape {a.shape}; they must match")
    result = _difference(f, args, directions, eps)
    _, single = _outputs(f(*args))
    return result[0] if single else tuple(result)


def check_grads(f, *args, order=2, modes=_MODES, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Check ``f``'s reverse- and forward-mode derivatives against central differences.

    Every argument is converted to a float64 Tensor and differentiated (close over
    arguments that are not: indices, axes, masks). For a random unit direction ``v`` over
    all arguments and a random cotangent ``u`` on the output(s):

    - ``"rev"``: ``<u, J v>`` (central differences) must equal ``<VJP(u), v>`` from a
      ``GradientTape``, i.e. ``sum(u * Jv) == sum_k sum(tape.gradient(f, x_k, u) * v_k)``;
    - ``"fwd"``: ``ForwardAccumulator``'s ``J v`` must equal the numeric ``J v`` elementwise;
    - ``order=2`` then checks the function ``x -> VJP(u)(x)`` (computed with a tape, so the
      second-order checks run nested tapes and forward-over-reverse) the same way, and so on.

    Shapes: each ``args[k]`` any shape; ``f`` returns a Tensor or a list/tuple of Tensors
    (outputs of non-floating dtype are skipped). Agreement means
    ``|expected - got| <= atol + rtol * |expected|``.

    Args:
        f: the function, of minitape Tensors.
        *args: the point at which to check.
        order: how many derivatives deep to check (1 or more).
        modes: a subset of ``("rev", "fwd")``.
        eps: the central-difference half step.
        rtol, atol: the tolerances above.
        seed: seeds the random directions and cotangents (repeatable checks).

    Raises:
        AssertionError: a derivative disagrees; the message names the mode, the order, the
            expected (numeric) and the computed values.
        ValueError: an unknown mode or an order below 1.

    >>> import minitape as mt
    >>> from minitape.testing import check_grads
    >>> check_grads(mt.math.sin, [0.1, 0.5, 2.0])         # silent: the gradients are right
    >>> @mt.custom_gradient
    ... def wrong_square(x):
    ...     return x * x, lambda dy: dy * x                  # forgot the factor 2
    >>> check_grads(wrong_square, 1.5, modes=["rev"])       # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    AssertionError: check_grads, reverse mode, order 1: <u, J v> by central differences is ...
    """
    modes = tuple(modes)
    for m in modes:
        if m not in _MODES:
            raise ValueError(f"check_grads: unknown mode {m!r}; use 'rev' and/or 'fwd'")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be an int >= 1, got {order!r}")
    rng = np.random.default_rng(seed)
    _check(f, _as_float64(args), order, modes, eps, rtol, atol, rng, level=1)


def _check(f, args, order, modes, eps, rtol, atol, rng, level):
    direction = [rng.standard_normal(a.shape) for a in args]
    total = np.sqrt(sum(float(np.sum(d * d)) for d in direction)) or 1.0
    direction = [d / total for d in direction]

    outputs, _ = _outputs(f(*args))
    keep = [k for k, o in enumerate(outputs) if o.dtype.kind == "f"]
    if not keep:
        return  # nothing differentiable comes out
    numeric = _difference(f, args, direction, eps)
    numeric = [numeric[k] for k in keep]
    cotangents = [rng.standard_normal(outputs[k].shape).astype(outputs[k].dtype) for k in keep]

    def vjp(*xs):
        with GradientTape() as tape:
            tape.watch(list(xs))
            outs, _ = _outputs(f(*xs))
        outs = [outs[k] for k in keep]
        seeds = [constant(u) for u in cotangents]
        return tuple(tape.gradient(outs, list(xs), output_gradients=seeds,
                                   unconnected_gradients=UnconnectedGradients.ZERO))

    where = f"order {level}" + (" (a derivative of the gradient)" if level > 1 else "")
    if "rev" in modes:
        grads = vjp(*args)
        expected = sum(float(np.sum(u * n)) for u, n in zip(cotangents, numeric))
        got = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, direction))
        if not abs(expected - got) <= atol + rtol * abs(expected):
            raise AssertionError(
                f"check_grads, reverse mode, {where}: <u, J v> by central differences is "
                f"{expected!r} but <VJP(u), v> from GradientTape is {got!r} "
                f"(difference {abs(expected - got):.3g}, rtol={rtol}, atol={atol})")
    if "fwd" in modes:
        with ForwardAccumulator(list(args), [constant(d) for d in direction]) as acc:
            outs, _ = _outputs(f(*args))
        tangents = acc.jvp([outs[k] for k in keep],
                           unconnected_gradients=UnconnectedGradients.ZERO)
        for k, (t, n) in enumerate(zip(tangents, numeric)):
            t = np.asarray(t, dtype=np.float64)
            if t.shape != n.shape or not np.allclose(t, n, rtol=rtol, atol=atol):
                raise AssertionError(
                    f"check_grads, forward mode, {where}: output {keep[k]}: J v by central "
                    f"differences is {n!r} but ForwardAccumulator gives {t!r} "
                    f"(rtol={rtol}, atol={atol})")
    if order > 1:
        _check(vjp, args, order - 1, modes, eps, rtol, atol, rng, level + 1)
