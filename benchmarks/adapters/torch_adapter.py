"""PyTorch eager (CPU), with torch.autograd.grad so that no .grad fields accumulate."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def chain(x0, steps):
    x = torch.tensor(x0, requires_grad=True)

    def run():
        y = x
        for _ in range(steps):
            y = torch.sin(y) * 1.0001 + y * y * 0.001
        (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y))
        return y.detach().numpy(), g.numpy()
    return run


def chain_forward(x0, steps):
    x = torch.tensor(x0)

    def run():
        y = x
        for _ in range(steps):
            y = torch.sin(y) * 1.0001 + y * y * 0.001
        return y.numpy()
    return run


def mlp(layers, x, labels, onehot):
    params = [torch.tensor(a, requires_grad=True) for wb in layers for a in wb]
    xs, ys = torch.from_numpy(x), torch.from_numpy(labels.astype("int64"))

    def run():
        h = xs
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i < len(params) - 2:
                h = torch.relu(h)
        loss = F.cross_entropy(h, ys)
        grads = torch.autograd.grad(loss, params)
        return loss.detach().numpy(), [g.numpy() for g in grads]
    return run


def _two_layers(params):
    w1, b1, w2, b2 = [torch.from_numpy(a) for a in params]
    return lambda x: F.elu(F.elu(x @ w1 + b1) @ w2 + b2)


def jacobian(params, x, mode):
    f = _two_layers(params)
    xs = torch.from_numpy(x)
    jac = torch.autograd.functional.jacobian

    def run():
        if mode == "batch":   # rows are independent: the Jacobian of the batch sum
            return jac(lambda v: f(v).sum(0), xs, vectorize=True).permute(1, 0, 2).numpy()
        return jac(f, xs, vectorize=(mode == "vectorized")).numpy()
    return run


def hessian(params, x):
    w1, b1, w2, b2 = [torch.from_numpy(a) for a in params]
    xs = torch.from_numpy(x)

    def loss(w):
        return (torch.relu(torch.relu(xs @ w + b1) @ w2 + b2) ** 2).mean()

    def run():
        return torch.autograd.functional.hessian(loss, w1, vectorize=True).numpy()
    return run
