"""The leanest reverse-mode tape on NumPy we could write: a yardstick, not a contestant to beat.

What any tape on NumPy can reach on these workloads, in Python: each op computes its array,
wraps it in a one-slot object and appends ``(output, inputs, vjp)`` to a list; the backward
pass walks the list in reverse, calls each VJP and sums the cotangents in a dict. It has none
of what minitape does per op: no dtype or shape checks (a wrong input gives NumPy's error or a
wrong number), no TensorFlow conversions, no ids, names or explicit ``name=``, no record for
the drawings (``mt.viz``), no observers, no persistent or nested tapes, no higher order, no
Variables. The distance between this and minitape is the price of those; the distance between
this and PyTorch is what Python and NumPy cost (``benchmarks/README.md`` has both).

Five ops: the chains' ``sin``, ``mul`` and ``add``, and the MLP's ``matmul``, bias ``add``,
``relu`` and fused softmax cross-entropy. Nothing in minitape imports it.
"""

from __future__ import annotations

import numpy as np

API = {"chain": "a 60-line tape (no checks, names or record; first order)",
       "mlp": "a 60-line tape (no checks, names or record; first order)"}


class Node:
    """A value the tape knows: its array, and whether a gradient may flow into it (False for
    data: the MLP's input batch gets no gradient, as in every contestant)."""
    __slots__ = ("value", "wanted")

    def __init__(self, value, wanted=True):
        self.value, self.wanted = value, wanted


tape = []   # (output Node, input Nodes, vjp: output cotangent -> one cotangent per input)


def sin(x):
    z = Node(np.sin(x.value))
    tape.append((z, (x,), lambda g, x=x.value: (g * np.cos(x),)))
    return z


def mul(x, y):
    z = Node(x.value * y.value)
    tape.append((z, (x, y), lambda g, x=x.value, y=y.value: (g * y, g * x)))
    return z


def add(x, y):
    z = Node(x.value + y.value)
    tape.append((z, (x, y), lambda g: (g, g)))
    return z


def matmul(x, w):
    z = Node(x.value @ w.value)
    tape.append((z, (x, w), lambda g, x=x, w=w.value: (g @ w.T if x.wanted else None,
                                                       x.value.T @ g)))
    return z


def add_bias(h, b):
    z = Node(h.value + b.value)
    tape.append((z, (h, b), lambda g: (g, g.sum(axis=0))))
    return z


def relu(x):
    z = Node(np.maximum(x.value, 0))
    tape.append((z, (x,), lambda g, x=x.value: (g * (x > 0),)))
    return z


def mean_cross_entropy(logits, onehot):
    """``mean(softmax_cross_entropy(onehot, logits))`` over the batch, one op."""
    shifted = logits.value - logits.value.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    n = logp.shape[0]
    z = Node(-(onehot * logp).sum() / n)
    tape.append((z, (logits,), lambda g, logp=logp: (g * (np.exp(logp) - onehot) / n,)))
    return z


def gradients(target, sources):
    """d sum(target) / d source for each source (None if unconnected); empties the tape."""
    grads = {target: np.ones_like(target.value)}
    for z, inputs, vjp in reversed(tape):
        g = grads.pop(z, None)
        if g is None:
            continue
        for x, gx in zip(inputs, vjp(g)):
            if gx is not None:
                grads[x] = grads[x] + gx if x in grads else gx
    tape.clear()
    return [grads.get(s) for s in sources]


# -- the adapter functions (see ``benchmarks/adapters/__init__.py``) ----------------------------

def _chain(y, steps, c1, c2):
    for _ in range(steps):
        y = add(mul(sin(y), c1), mul(mul(y, y), c2))
    return y


def chain(x0, steps):
    c1, c2 = Node(np.asarray(1.0001, x0.dtype)), Node(np.asarray(0.001, x0.dtype))

    def run():
        x = Node(x0)
        y = _chain(x, steps, c1, c2)
        return y.value, gradients(y, [x])[0]
    return run


def mlp(layers, x, labels, onehot):
    params = [Node(a) for wb in layers for a in wb]
    xs = Node(x, wanted=False)

    def run():
        h = xs
        for i in range(0, len(params), 2):
            h = add_bias(matmul(h, params[i]), params[i + 1])
            if i < len(params) - 2:
                h = relu(h)
        loss = mean_cross_entropy(h, onehot)
        return loss.value, gradients(loss, params)
    return run
