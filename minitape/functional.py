"""Gradients as functions: the old eager API (seed 002) and JAX-style transforms.

All of them are thin wrappers around ``GradientTape`` (and ``ForwardAccumulator`` for
``jvp``): there is one engine, and this file only changes how it is called.
"""

from __future__ import annotations

import functools
import inspect

from .engine.forward import ForwardAccumulator
from .engine.tape import GradientTape, flatten
from .engine.tensor import Tensor, convert_to_tensor


def _as_source(value, what):
    """An argument to differentiate with respect to: a Variable stays, the rest becomes a Tensor."""
    if isinstance(value, Tensor):
        return value
    t = convert_to_tensor(value, what=what)
    if t.dtype.kind != "f":
        raise TypeError(f"{what}: cannot differentiate with respect to {value!r} of dtype "
                        f"{t.dtype.name}; pass a float (e.g. 5.0, not 5)")
    return t


def _param_indices(f, params, what):
    """``params`` (None, names or positions) -> list of argument positions."""
    try:
        names = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        names = []
    if params is None:
        return None
    indices = []
    for p in params if isinstance(params, (list, tuple)) else [params]:
        if isinstance(p, str):
            if p not in names:
                raise ValueError(f"{what}: {p!r} is not a parameter of {f.__name__}; its "
                                 f"parameters are {names}")
            indices.append(names.index(p))
        elif isinstance(p, int):
            if names and not 0 <= p < len(names):
                raise ValueError(f"{what}: position {p} is out of range for {f.__name__}"
                                 f"{tuple(names)}")
            indices.append(p)
        else:
            raise TypeError(f"{what}: params must be parameter names or positions, got {p!r}")
    return indices


def value_and_gradients_function(f, params=None):
    """``fg(*args)`` returns ``(f(*args), [d f / d arg ...])``.

    As ``tfe.value_and_gradients_function``.

    Gradients are taken with respect to every argument, or those named (or numbered) in
    ``params``. A non-scalar output is summed.

    Raises:
        ValueError: a name in ``params`` that is not a parameter of ``f``.
    """
    indices = _param_indices(f, params, "gradients_function")

    @functools.wraps(f)
    def fg(*args):
        chosen = range(len(args)) if indices is None else indices
        args = list(args)
        for i in chosen:
            if i >= len(args):
                raise ValueError(f"gradients_function: parameter {i} was not passed "
                                 f"({len(args)} argument(s))")
            args[i] = _as_source(args[i], "gradients_function")
        with GradientTape() as tape:
            tape.watch([args[i] for i in chosen])
            value = f(*args)
        return value, tape.gradient(value, [args[i] for i in chosen])

    return fg


def gradients_function(f, params=None):
    """``fg(*args)`` returns the list of gradients of ``f`` with respect to its arguments.

    As ``tfe.gradients_function``; see ``value_and_gradients_function``.

    >>> import minitape as mt
    >>> w1, w2 = mt.Variable(2.0), mt.Variable(3.0)
    >>> def weighted_sum(x1, x2):
    ...     return w1 * x1 + w2 * x2
    >>> x1_grad, x2_grad = mt.gradients_function(weighted_sum)(5., 7.)
    >>> print(x1_grad.numpy())
    2.0
    """
    value_and_grads = value_and_gradients_function(f, params)

    @functools.wraps(f)
    def fg(*args):
        return value_and_grads(*args)[1]

    return fg


def implicit_value_and_gradients(f):
    """``fg(*args)`` returns ``(value, [(gradient, variable), ...])`` for every trainable
    Variable that ``f`` read, in first-use order, as ``tfe.implicit_value_and_gradients``."""

    @functools.wraps(f)
    def fg(*args, **kwargs):
        with GradientTape() as tape:
            value = f(*args, **kwargs)
        variables = tape.watched_variables()
        if not variables:
            raise ValueError(f"implicit_gradients: {f.__name__} read no trainable Variable, so "
                             "there is nothing to differentiate")
        return value, list(zip(tape.gradient(value, list(variables)), variables))

    return fg


def implicit_gradients(f):
    """``fg(*args)`` returns ``[(gradient, variable), ...]`` for every trainable Variable that
    ``f`` read, in first-use order, as ``tfe.implicit_gradients``."""
    value_and_grads = implicit_value_and_gradients(f)

    @functools.wraps(f)
    def fg(*args, **kwargs):
        return value_and_grads(*args, **kwargs)[1]

    return fg


# -- JAX-style transforms -------------------------------------------------------------------


def _argnums(argnums, n_args, what):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -n_args <= i < n_args:
            raise ValueError(f"{what}: argnums {argnums!r} does not fit {n_args} argument(s)")
    return single, tuple(i % n_args for i in nums)


def _prepare(args, argnums, what):
    single, nums = _argnums(argnums, len(args), what)
    args = list(args)
    for i in nums:
        args[i] = _as_source(args[i], what)
    return single, nums, args


def value_and_grad(f, argnums=0):
    """``fg(*args)`` returns ``(f(*args), gradient)``, as ``jax.value_and_grad``.

    ``argnums``: an int (one gradient) or a tuple (a tuple of gradients).

    Raises:
        ValueError: ``f`` returned a non-scalar (use ``mt.jacobian``, or sum it).
        TypeError: ``f`` returned something that is not a minitape Tensor.
    """

    @functools.wraps(f)
    def fg(*args):
        single, nums, args = _prepare(args, argnums, "grad")
        with GradientTape() as tape:
            tape.watch([args[i] for i in nums])
            value = f(*args)
        if not isinstance(value, Tensor):
            raise TypeError(f"grad: {f.__name__} must return a minitape Tensor, got "
                            f"{type(value).__name__}")
        if value.shape != ():
            raise ValueError(f"grad: {f.__name__} must return a scalar, got shape {value.shape}; "
                             "use mt.jacobian for a non-scalar output, or reduce it "
                             "(mt.reduce_sum)")
        # As JAX: an argument the output does not depend on gets zeros, not None.
        grads = tape.gradient(value, [args[i] for i in nums], unconnected_gradients="zero")
        return value, (grads[0] if single else tuple(grads))

    return fg


def grad(f, argnums=0):
    """``fg(*args)`` returns the gradient of the scalar ``f(*args)``, as ``jax.grad``.

    >>> import minitape as mt
    >>> print(mt.grad(lambda x: x ** 3)(2.0))
    mt.Tensor(12.0, shape=(), dtype=float32)
    """
    value_and_grads = value_and_grad(f, argnums)

    @functools.wraps(f)
    def fg(*args):
        return value_and_grads(*args)[1]

    return fg


def jacobian(f, argnums=0):
    """``fg(*args)`` returns the Jacobian ``f(*args).shape + arg.shape``, as ``jax.jacrev``.

    (The tape method ``GradientTape.jacobian`` is the same computation on a recorded tape.)
    """

    @functools.wraps(f)
    def fg(*args):
        single, nums, args = _prepare(args, argnums, "jacobian")
        with GradientTape() as tape:
            tape.watch([args[i] for i in nums])
            value = f(*args)
        j = tape.jacobian(value, [args[i] for i in nums], unconnected_gradients="zero")
        return j[0] if single else tuple(j)

    return fg


def hessian(f, argnums=0):
    """``fg(*args)`` returns the Hessian of the scalar ``f``: ``arg.shape + arg.shape``.

    A Jacobian of a gradient, as ``jax.hessian``; for a tuple ``argnums`` a tuple of tuples.
    """

    @functools.wraps(f)
    def fg(*args):
        single, nums, args = _prepare(args, argnums, "hessian")
        sources = [args[i] for i in nums]
        with GradientTape(persistent=True) as outer:
            outer.watch(sources)
            with GradientTape() as inner:
                inner.watch(sources)
                value = f(*args)
            if not isinstance(value, Tensor) or value.shape != ():
                raise ValueError(f"hessian: {f.__name__} must return a scalar Tensor")
            # zeros, not None, for an argument f does not use (or uses linearly), as JAX
            grads = inner.gradient(value, sources, unconnected_gradients="zero")
        rows = tuple(tuple(outer.jacobian(g, sources, unconnected_gradients="zero"))
                     for g in grads)
        return rows[0][0] if single else rows

    return fg


def jvp(f, primals, tangents):
    """``(f(*primals), J @ tangents)`` in forward mode, as ``jax.jvp``.

    ``primals`` and ``tangents`` are tuples (or lists) of the same length and shapes.
    """
    if not isinstance(primals, (list, tuple)) or not isinstance(tangents, (list, tuple)):
        raise TypeError("jvp: primals and tangents must be tuples, e.g. jvp(f, (x,), (v,))")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primal(s) but {len(tangents)} tangent(s)")
    primals = [_as_source(p, "jvp") for p in primals]
    with ForwardAccumulator(primals, list(tangents)) as acc:
        out = f(*primals)
    return out, acc.jvp(out, unconnected_gradients="zero")


def vjp(f, *primals):
    """``(f(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` returns one cotangent per primal.

    As ``jax.vjp``. ``vjp_fn`` may be called many times (the tape is persistent).
    """
    primals = [_as_source(p, "vjp") for p in primals]
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch(primals)
        out = f(*primals)

    def vjp_fn(cotangent):
        if len(flatten(cotangent)) != len(flatten(out)):
            raise ValueError("vjp_fn: the cotangent must have the structure of f's output")
        return tuple(tape.gradient(out, primals, output_gradients=cotangent,
                                   unconnected_gradients="zero"))

    return out, vjp_fn
