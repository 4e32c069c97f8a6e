"""The gradient registry: op type -> gradient function, as TensorFlow's ``ops.RegisterGradient``.

A gradient function receives the recorded operation and one gradient per output, and returns
one gradient per input (``None`` where an input gets none)::

    @mt.RegisterGradient("Sin")
    def _sin_grad(op, dy):
        (x,) = op.inputs
        return dy * mt.math.cos(x)

Every built-in op registers its gradient this way, right under its forward in ``minitape/ops``,
so reading one built-in gradient is enough to write your own.

Each built-in op also registers a *forward* with ``register_forward``: how to compute the op
again from its input Tensors and its recorded attributes. The backward pass never uses it;
``mt.viz.check_tape`` does, to compare each op's gradient with finite differences of the op's
own computation. (``mt.primitive`` and ``custom_gradient`` ops carry their function on the
recorded op, ``op.forward``, so they need no entry here.)

Each op type has exactly one gradient function: the one registered here. It is written with
minitape ops, so an outer tape records what it computes and can differentiate it again
(second derivatives, Hessians); there is no second copy of any rule.

A vectorized Jacobian runs the backward pass once with a *batch* of output gradients: ``dy``
then has extra leading axes (``op.batch_ndim`` of them) in front of the output's shape. The
built-in gradients are written for that and registered with ``batched=True``. A gradient
registered without it is simply called once per batch row, so it never sees the extra axes.
"""

from __future__ import annotations

_NOT_DIFFERENTIABLE = None  # a registry value: "this op has no gradient, by design"

_registry: dict = {}
_batched: set = set()
_forwards: dict = {}


class RegisterGradient:
    """Decorator registering a gradient function for an op type, as ``tf.RegisterGradient``.

    Args:
        op_type: the op type, e.g. ``"Sin"`` (TensorFlow's names).
        batched: True if the function accepts output gradients with extra leading batch axes
            (see the module docstring); False (the default) for ordinary functions.
        override: replace an existing entry instead of raising ``KeyError`` (minitape's own
            addition, for notebooks: re-running a cell that registers a gradient for your own
            op type, e.g. ``@mt.RegisterGradient("MySigmoid", override=True)``). Replacing a
            built-in op's gradient changes it for every later ``gradient`` call.

    Raises:
        TypeError: if ``op_type`` is not a string or the decorated object is not callable.
        KeyError: if ``op_type`` already has an entry (a gradient, or ``no_gradient``) and
            ``override`` is False.

    >>> import minitape as mt
    >>> @mt.RegisterGradient("DemoTwice", override=True)   # re-running this cell is fine
    ... def _twice_grad(op, dy):
    ...     return 2.0 * dy
    """

    def __init__(self, op_type: str, batched: bool = False, override: bool = False):
        if not isinstance(op_type, str):
            raise TypeError(f"RegisterGradient expects the op type as a string such as 'Sin', "
                            f"got {op_type!r}")
        self.op_type = op_type
        self.batched = batched
        self.override = override

    def __call__(self, fn):
        if not callable(fn):
            raise TypeError(f"RegisterGradient('{self.op_type}') must decorate a function "
                            f"fn(op, *output_grads), got {fn!r}")
        if self.op_type in _registry and not self.override:
            raise KeyError(
                f"Registering two gradients with name '{self.op_type}': the op already has "
                + ("a gradient" if _registry[self.op_type] is not None else "a no_gradient entry")
                + "; gradients are global, so pick another op type (mt.primitive) or use "
                "mt.custom_gradient for a one-off change (re-running a notebook cell that "
                f"registers your own op type: RegisterGradient('{self.op_type}', override=True))")
        _registry[self.op_type] = fn
        if self.batched:
            _batched.add(self.op_type)
        else:
            _batched.discard(self.op_type)
        return fn


def no_gradient(op_type: str) -> None:
    """Declare ``op_type`` not differentiable: gradients through it are ``None``.

    As ``tf.no_gradient``. Raises ``KeyError`` if the op type already has an entry.
    """
    if not isinstance(op_type, str):
        raise TypeError(f"no_gradient expects the op type as a string, got {op_type!r}")
    if op_type in _registry:
        raise KeyError(f"no_gradient('{op_type}'): the op type already has a registry entry")
    _registry[op_type] = _NOT_DIFFERENTIABLE


def lookup(op_type: str):
    """The gradient function of ``op_type``; ``None`` if it is declared not differentiable.

    Raises:
        LookupError: ``gradient registry has no entry for: <op_type>`` (TensorFlow's words).
    """
    try:
        return _registry[op_type]
    except KeyError:
        raise LookupError(f"gradient registry has no entry for: {op_type}") from None


def is_batched(op_type: str) -> bool:
    return op_type in _batched


def registered_op_types() -> list:
    """All op types with a registry entry, sorted (the tests iterate over it)."""
    return sorted(_registry)


def register_forward(op_type: str, fn=None):
    """Register how to compute op ``op_type`` again: ``fn(op, *inputs)`` -> output Tensor(s).

    ``fn`` receives the recorded operation (for ``op.get_attr(name)`` and ``op.output_shapes``)
    and the op's input Tensors (possibly of another floating dtype than recorded, e.g. float64
    for a float32 op), and returns the op's output Tensor, or a tuple of them for an op with
    several outputs. It is usually the op's public function, e.g.
    ``register_forward("Mul", lambda op, x, y: multiply(x, y))``. Usable as a decorator.

    The backward pass never calls it: ``mt.viz.check_tape`` does, to compare each recorded
    op's gradient with finite differences of the op's own forward.

    Raises:
        TypeError: ``op_type`` is not a string or ``fn`` is not callable.

    >>> import minitape as mt
    >>> from minitape import registry
    >>> registry.lookup_forward("Mul") is not None
    True
    """
    if not isinstance(op_type, str):
        raise TypeError(f"register_forward expects the op type as a string such as 'Mul', "
                        f"got {op_type!r}")
    if fn is None:
        return lambda f: register_forward(op_type, f)
    if not callable(fn):
        raise TypeError(f"register_forward('{op_type}') needs a function fn(op, *inputs), "
                        f"got {fn!r}")
    _forwards[op_type] = fn
    return fn


def lookup_forward(op_type: str):
    """The forward registered for ``op_type`` with ``register_forward``, or None."""
    return _forwards.get(op_type)
