"""Forward mode: ``ForwardAccumulator`` pushes tangents through operations as they run.

How a tangent crosses an op, with nothing but the op's registered *gradient* (TensorFlow's
trick, so every op that has a VJP also has a JVP, with no second rule to get wrong):

    the VJP  ``u -> vjp(u)`` is linear in the cotangent ``u``, and its transpose is the JVP.
    So record ``g = vjp(u)`` at a dummy ``u`` on a small tape, then differentiate
    ``sum(g * tangent_in)`` with respect to ``u``: the result is ``J @ tangent_in``.

That costs about two backward steps per op: fine for learning, and exact.
"""

from __future__ import annotations

import numpy as np

from . import registry
from ..dtypes import complex_gradient_error
from ..nest import flatten, pack_like
from .recording import Operation, accumulators_recording
from .recording import state as _state
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, convert_to_tensor


class ForwardAccumulator:
    """Compute Jacobian-vector products in forward mode, as ``tf.autodiff.ForwardAccumulator``.

    Args:
        primals: a Tensor/Variable or a (nested) list of them.
        tangents: the same structure: one tangent of the primal's shape and dtype each.

    Use it as a context manager; operations inside it carry tangents forwards. Then
    ``acc.jvp(target)`` returns the tangent of ``target`` (the JVP).

    Raises:
        ValueError: primals and tangents differ in count or a tangent in shape.
        TypeError: a primal that is not a floating minitape Tensor.

    >>> import minitape as mt
    >>> x = mt.constant(3.0)
    >>> with mt.autodiff.ForwardAccumulator(x, mt.constant(1.0)) as acc:
    ...     y = x * x
    >>> print(acc.jvp(y))
    mt.Tensor(6.0, shape=(), dtype=float32)
    """

    def __init__(self, primals, tangents):
        flat_p, flat_t = flatten(primals), flatten(tangents)
        if len(flat_p) != len(flat_t):
            raise ValueError(f"ForwardAccumulator: {len(flat_p)} primal(s) but {len(flat_t)} "
                             "tangent(s); give one tangent per primal")
        self._tangents = {}
        for p, t in zip(flat_p, flat_t):
            if not isinstance(p, Tensor) or p.dtype.kind != "f":
                raise TypeError(f"ForwardAccumulator: primals must be floating Tensors or "
                                f"Variables, got {p!r:.60}")
            t = convert_to_tensor(t, dtype=p.dtype, what="ForwardAccumulator tangent")
            if t.shape != p.shape:
                raise ValueError(f"ForwardAccumulator: a tangent of shape {t.shape} for a primal "
                                 f"of shape {p.shape}; they must match")
            self._tangents[p.id] = t

    def __enter__(self):
        _state.accumulators.append(self)
        accumulators_recording.add(self)
        return self

    def __exit__(self, *exc):
        if self in _state.accumulators:
            _state.accumulators.remove(self)
        accumulators_recording.discard(self)
        return False

    def propagate_tangents(self, op_type, inputs, outputs, attrs, grad_fn):
        """Give the outputs of an op that ran their tangents, ``J @ tangents_in`` (``record``
        calls it for every op while the accumulator is active; its arguments are
        ``record``'s)."""
        tangents_in = [self._tangents.get(t.id) for t in inputs]
        if all(t is None for t in tangents_in):
            return
        tangents_out = _jvp(self, op_type, inputs, outputs, attrs, grad_fn, tangents_in)
        for out, tangent in zip(outputs, tangents_out):
            # An output no tangent reaches (stop_gradient, round, sign: a JVP that does not
            # depend on the tangent) gets none, as in TensorFlow: ``jvp`` then gives None,
            # or zeros with ``unconnected_gradients=ZERO``.
            if tangent is not None and out.dtype.kind == "f":
                self._tangents[out.id] = tangent

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangent of each of ``primals`` (same structure); ``None`` or zeros if unconnected.

        As in TensorFlow, a value computed only through ops whose tangent is not connected
        to the primals' (``stop_gradient``, ``round``, ``sign``, comparisons) is unconnected:
        its tangent is ``None`` unless ``unconnected_gradients=mt.UnconnectedGradients.ZERO``.
        """
        zero = UnconnectedGradients(unconnected_gradients) is UnconnectedGradients.ZERO
        results = []
        for p in flatten(primals):
            if not isinstance(p, Tensor):
                raise TypeError(f"ForwardAccumulator.jvp expects minitape Tensors, got "
                                f"{type(p).__name__}")
            t = self._tangents.get(p.id)
            if t is None and zero:
                t = Tensor(np.zeros(p.shape, p.dtype))
            results.append(t)
        return pack_like(primals, results) if isinstance(primals, (list, tuple, dict)) \
            else results[0]


def _jvp(acc, op_type, inputs, outputs, attrs, grad_fn, tangents_in):
    fn = grad_fn or registry.lookup(op_type)
    if fn is None:  # not differentiable: no tangent flows
        return [None] * len(outputs)
    for t in list(inputs) + list(outputs):
        if t.dtype.kind == "c":
            raise complex_gradient_error(
                "ForwardAccumulator", f" (a tangent reached {op_type}, which has a "
                f"{t.dtype.name} {'output' if any(t is o for o in outputs) else 'input'})")
    op = Operation(op_type, inputs, outputs, attrs, True, True, grad_fn)
    accumulators = _state.accumulators
    position = accumulators.index(acc)
    accumulators.remove(acc)  # this accumulator must not watch its own bookkeeping
    try:
        dummies = [Tensor(np.zeros(o.shape, o.dtype)) for o in outputs]
        with GradientTape() as tape:
            tape.watch(dummies)
            grads = fn(op, *dummies)
        grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
        pairs = [(g, t) for g, t in zip(grads, tangents_in) if g is not None and t is not None]
        if not pairs:
            return [None] * len(outputs)
        return tape.gradient([g for g, _ in pairs], dummies,
                             output_gradients=[t for _, t in pairs])
    finally:
        accumulators.insert(position, acc)
