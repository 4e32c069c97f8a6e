"""MyGrad: NumPy-like tensors with .backward(); it has no Jacobian or Hessian API."""

from __future__ import annotations

import mygrad as mg
from mygrad.nnet.activations import relu
from mygrad.nnet.losses import softmax_crossentropy

# The API each function's run() times (the table names it in every cell).
API = {"chain": "Tensor.backward", "chain_forward": "mygrad ops (constant=True)",
       "mlp": "Tensor.backward"}


def chain(x0, steps):
    def run():
        x = mg.tensor(x0)
        y = x
        for _ in range(steps):
            y = mg.sin(y) * 1.0001 + y * y * 0.001
        (y if y.ndim == 0 else mg.sum(y)).backward()
        return y.data, x.grad
    return run


def chain_forward(x0, steps):
    def run():
        y = mg.tensor(x0, constant=True)
        for _ in range(steps):
            y = mg.sin(y) * 1.0001 + y * y * 0.001
        return y.data
    return run


def mlp(layers, x, labels, onehot):
    flat = [a for wb in layers for a in wb]

    def run():
        params = [mg.tensor(a, copy=False) for a in flat]
        h = x
        for i in range(0, len(params), 2):
            h = mg.matmul(h, params[i]) + params[i + 1]
            if i < len(params) - 2:
                h = relu(h)
        loss = softmax_crossentropy(h, labels)
        loss.backward()
        return loss.data, [p.grad for p in params]
    return run
