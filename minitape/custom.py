"""Controlling gradients: ``custom_gradient`` and ``primitive``.

``custom_gradient`` runs ``f`` (outer tapes record its inner operations, as in TensorFlow, so
that the gradient function can use ``f``'s intermediate results and still be differentiated
again), then records a single op from the inputs to new output tensors, whose gradient is the
function ``f`` returned. ``primitive`` turns a NumPy function into a new op type whose
gradient you register with ``mt.RegisterGradient``.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .nest import flatten
from .engine.recording import record
from .engine.tape import GradientTape
from .engine.tensor import Tensor, Variable, convert_to_tensor


def custom_gradient(f):
    """Decorator: define ``f``'s gradient yourself, as ``tf.custom_gradient``.

    ``f(*x)`` returns ``(y, grad_fn)``; ``y`` is a Tensor or a list/tuple of Tensors.
    ``grad_fn(*dy)`` returns one gradient per input of ``f``; if ``f`` reads trainable
    Variables, ``grad_fn(*dy, variables=None)`` returns ``(input_grads, variable_grads)``
    with ``variable_grads`` in the order of ``variables``.

    The gradient function runs with minitape ops, so an outer tape records it (nested tapes
    and higher derivatives work).

    Raises:
        TypeError: ``f`` read Variables but ``grad_fn`` takes no ``variables`` keyword.
        ValueError: (when ``gradient`` runs) ``grad_fn`` returned the wrong number of gradients.

    >>> import minitape as mt
    >>> @mt.custom_gradient
    ... def clip_gradients(y):
    ...     def backward(dy):
    ...         return mt.clip_by_norm(dy, 0.5)
    ...     return y, backward
    >>> v = mt.Variable(2.0)
    >>> with mt.GradientTape() as t:
    ...     output = clip_gradients(v * v)
    >>> print(t.gradient(output, v))
    mt.Tensor(2.0, shape=(), dtype=float32)
    """

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        inputs = [convert_to_tensor(a, what=f.__name__) if isinstance(a, Tensor) else a
                  for a in args]
        # Run f with the outer tapes recording, as TensorFlow does: what f computes (``e`` in
        # the guide's log1pexp) stays connected to x on them, so that grad_fn's result can be
        # differentiated again (second derivatives). The outputs get new ids below, so those
        # inner ops carry no gradient themselves. A private tape notes which Variables f reads.
        with GradientTape() as reads:
            result = f(*inputs, **kwargs)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError(f"@custom_gradient: {f.__name__} must return (outputs, grad_fn), "
                            f"got {type(result).__name__}")
        outputs, grad_fn = result
        variables = list(reads.watched_variables())
        if variables and "variables" not in inspect.signature(grad_fn).parameters:
            raise TypeError(
                f"@custom_gradient: {f.__name__} reads the Variable(s) "
                f"{[v.name for v in variables]}, so its grad_fn must accept a keyword argument "
                "'variables' and return (input_grads, variable_grads)"
            )
        flat_out = flatten(outputs)
        # New ids for the outputs: f may return an input unchanged (an identity).
        new_out = [Tensor(np.asarray(convert_to_tensor(o))) for o in flat_out]
        tensor_inputs = [a for a in inputs if isinstance(a, Tensor)]
        var_reads = [convert_to_tensor(v) for v in variables]
        n_in = len(tensor_inputs)

        def op_grad(op, *dys):
            if variables:
                in_grads, var_grads = grad_fn(*dys, variables=variables)
                in_grads = _as_list(in_grads)
                var_grads = _as_list(var_grads)
                if len(var_grads) != len(variables):
                    raise ValueError(
                        f"@custom_gradient {f.__name__}: grad_fn returned {len(var_grads)} "
                        f"variable gradient(s) for {len(variables)} variable(s)")
            else:
                in_grads, var_grads = _as_list(grad_fn(*dys)), []
            if len(in_grads) != n_in:
                raise ValueError(
                    f"@custom_gradient {f.__name__}: grad_fn returned {len(in_grads)} "
                    f"gradient(s) but the function has {n_in} Tensor input(s); return one per "
                    "input")
            return [None if g is None else convert_to_tensor(g, dtype=t.dtype)
                    for g, t in zip(in_grads + var_grads, tensor_inputs + var_reads)]

        record("CustomGradient", tensor_inputs + var_reads, new_out,
               attrs={"function": f.__name__, "variable_reads": len(var_reads)},
               grad_fn=op_grad, forward=f)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(new_out)
        return new_out[0]

    return wrapper


def _as_list(grads):
    return list(grads) if isinstance(grads, (list, tuple)) else [grads]


def primitive(op_type):
    """Decorator: turn a NumPy function into a new recorded op type.

    The function receives ndarrays (Tensor arguments converted; read-only views, since a
    Tensor never changes) and keyword attributes, and returns an ndarray or a tuple of them
    (copied into the new Tensors). Register its gradient with
    ``@mt.RegisterGradient(op_type)``: there ``op.inputs`` / ``op.outputs`` are Tensors and
    ``op.get_attr(name)`` returns a keyword attribute. Until then, a gradient through it
    raises ``LookupError``.

    >>> import numpy as np, minitape as mt
    >>> @mt.primitive("DemoCube")
    ... def cube(x):
    ...     return x ** 3
    >>> @mt.RegisterGradient("DemoCube")
    ... def _cube_grad(op, dy):
    ...     return dy * 3 * op.inputs[0] ** 2
    >>> x = mt.constant(2.0)
    >>> with mt.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = cube(x)
    >>> print(tape.gradient(y, x))
    mt.Tensor(12.0, shape=(), dtype=float32)
    """
    if not isinstance(op_type, str):
        raise TypeError(f"primitive expects the new op type as a string, e.g. "
                        f"@mt.primitive('MyOp'), got {op_type!r}")

    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **attrs):
            inputs = [convert_to_tensor(a, what=op_type) for a in args]
            # ``fn`` sees read-only views (writing into one would change a Tensor), and
            # the Tensors made from its results own their arrays (``fn`` may keep them).
            result = fn(*[t.numpy() for t in inputs], **attrs)
            single = not isinstance(result, tuple)
            outputs = [Tensor(np.array(r))
                       for r in ((result,) if single else result)]
            record(op_type, inputs, outputs, attrs=attrs, keep_inputs=True, keep_outputs=True,
                   forward=fn)
            return outputs[0] if single else tuple(outputs)

        op.op_type = op_type
        return op

    return decorate


_ = Variable
