"""HIPS autograd: functions of NumPy arrays, differentiated by grad/jacobian/hessian."""

from __future__ import annotations

import autograd
import autograd.numpy as anp

# The API each function's run() times (the table names it in every cell).
API = {"chain": "autograd.value_and_grad", "chain_forward": "autograd.numpy, no grad",
       "mlp": "autograd.value_and_grad", "jacobian": "autograd.jacobian",
       "hessian": "autograd.hessian"}


def _chain(y, steps):
    for _ in range(steps):
        y = anp.sin(y) * 1.0001 + y * y * 0.001
    return y


def chain(x0, steps):
    if x0.ndim == 0:
        f = autograd.value_and_grad(lambda x: _chain(x, steps))
    else:
        f = autograd.value_and_grad(lambda x: anp.sum(_chain(x, steps)))

    def run():
        _, g = f(x0)
        return None, g     # value_and_grad returns sum(y) for a vector: y is not checked
    return run


def chain_forward(x0, steps):
    return lambda: _chain(x0, steps)


def mlp(layers, x, labels, onehot):
    flat = [a for wb in layers for a in wb]

    def loss(params):
        h = x
        for i in range(0, len(params), 2):
            h = anp.dot(h, params[i]) + params[i + 1]
            if i < len(params) - 2:
                h = anp.maximum(h, 0)
        shifted = h - anp.max(h, axis=1, keepdims=True)
        logp = shifted - anp.log(anp.sum(anp.exp(shifted), axis=1, keepdims=True))
        return -anp.sum(onehot * logp) / x.shape[0]

    f = autograd.value_and_grad(loss)

    def run():
        value, grads = f(flat)
        return value, list(grads)
    return run


def _elu(z):
    return anp.where(z > 0, z, anp.expm1(anp.minimum(z, 0)))


def jacobian(params, x, mode):
    w1, b1, w2, b2 = params
    if mode == "vectorized":
        raise NotImplementedError("autograd.jacobian loops over the outputs")

    def f(v):
        return _elu(anp.dot(_elu(anp.dot(v, w1) + b1), w2) + b2)

    if mode == "batch":   # rows are independent: the Jacobian of the batch sum
        jac = autograd.jacobian(lambda v: anp.sum(f(v), axis=0))
        return {"autograd.jacobian of the batch sum": lambda: jac(x).transpose(1, 0, 2)}
    jac = autograd.jacobian(f)
    return {"autograd.jacobian (loops over outputs)": lambda: jac(x)}


def hessian(params, x):
    w1, b1, w2, b2 = params

    def loss(w):
        return anp.mean(anp.maximum(anp.dot(anp.maximum(anp.dot(x, w) + b1, 0), w2) + b2, 0)
                        ** 2)

    h = autograd.hessian(loss)
    return lambda: h(w1)
