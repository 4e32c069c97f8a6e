"""PyTorch eager (CPU), with torch.autograd.grad so that no .grad fields accumulate.

For Jacobians and Hessians PyTorch has two APIs, and both are timed (the table reports the
faster, by name): ``torch.func`` (``jacrev``, ``hessian``, ``vmap``: functorch's transforms,
PyTorch's fastest eager Jacobians) and ``torch.autograd.functional`` (``jacobian``,
``hessian``; ``vectorize=True`` batches the backward passes with ``vmap`` too).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import VECTORIZED_CHUNKS

# The API each function's run() times (the table names it in every cell); jacobian and
# hessian return one run per API instead.
API = {"chain": "torch.autograd.grad", "chain_forward": "torch ops, no grad",
       "mlp": "torch.autograd.grad", "conv": "torch.autograd.grad (F.conv2d)"}


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
    if mode == "looped":
        return {"torch.autograd.functional.jacobian (vectorize=False)":
                lambda: jac(f, xs).numpy()}
    if mode == "vectorized":
        jacrev = torch.func.jacrev(f)
        runs = {"torch.func.jacrev": lambda: jacrev(xs).numpy(),
                "torch.autograd.functional.jacobian (vectorize=True)":
                lambda: jac(f, xs, vectorize=True).numpy()}
        for chunk in VECTORIZED_CHUNKS:   # (as minitape's parallel_iterations)
            chunked = torch.func.jacrev(f, chunk_size=chunk)
            runs[f"torch.func.jacrev (chunk_size={chunk})"] = \
                lambda chunked=chunked: chunked(xs).numpy()
        return runs
    # batch: each row's Jacobian with vmap over the rows, or (rows being independent) the
    # Jacobian of the batch sum.
    per_row = torch.func.vmap(torch.func.jacrev(f))
    return {"torch.func.vmap(torch.func.jacrev)":
            lambda: per_row(xs[:, None, :])[:, 0, :, 0, :].numpy(),
            "torch.autograd.functional.jacobian (vectorize=True) of the batch sum":
            lambda: jac(lambda v: f(v).sum(0), xs, vectorize=True).permute(1, 0, 2).numpy()}


def hessian(params, x):
    w1, b1, w2, b2 = [torch.from_numpy(a) for a in params]
    xs = torch.from_numpy(x)

    def loss(w):
        return (torch.relu(torch.relu(xs @ w + b1) @ w2 + b2) ** 2).mean()

    hess = torch.func.hessian(loss)
    return {"torch.func.hessian": lambda: hess(w1).numpy(),
            "torch.autograd.functional.hessian (vectorize=True)":
            lambda: torch.autograd.functional.hessian(loss, w1, vectorize=True).numpy()}


def conv(params, x, labels, onehot):
    # PyTorch's layout is NCHW with OIHW filters: the same weights, transposed once here.
    w, b, w2, b2 = params
    params = [torch.tensor(w.transpose(3, 2, 0, 1), requires_grad=True),
              torch.tensor(b, requires_grad=True), torch.tensor(w2, requires_grad=True),
              torch.tensor(b2, requires_grad=True)]
    xs = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
    ys = torch.from_numpy(labels.astype("int64"))

    def run():
        tw, tb, tw2, tb2 = params
        h = torch.relu(F.conv2d(xs, tw, tb))
        # flattened in NHWC order, as the other contestants' Dense layer reads it
        logits = h.permute(0, 2, 3, 1).reshape(x.shape[0], -1) @ tw2 + tb2
        loss = F.cross_entropy(logits, ys)
        gw, gb, gw2, gb2 = torch.autograd.grad(loss, params)
        return loss.detach().numpy(), [gw.numpy().transpose(2, 3, 1, 0), gb.numpy(),
                                       gw2.numpy(), gb2.numpy()]
    return run


def train_step(layers, x, y, learning_rate):
    # nn.Sequential of nn.Linear (weights stored (out, in): returned transposed), timed two
    # ways: torch.autograd.grad with an in-place update, and the optimizer's usual loop.
    def build():
        modules = []
        for k, (w, b) in enumerate(layers):
            linear = torch.nn.Linear(*w.shape)
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(w.T))
                linear.bias.copy_(torch.from_numpy(b))
            modules.append(linear)
            if k < len(layers) - 1:
                modules.append(torch.nn.Tanh())
        return torch.nn.Sequential(*modules)

    xs, ys = torch.from_numpy(x), torch.from_numpy(y)

    def weights(model):
        return [p.detach().numpy().T if p.ndim == 2 else p.detach().numpy()
                for p in model.parameters()]

    manual = build()

    def run_grad():
        loss = ((manual(xs) - ys) ** 2).mean()
        grads = torch.autograd.grad(loss, list(manual.parameters()))
        with torch.no_grad():
            for p, g in zip(manual.parameters(), grads):
                p.sub_(learning_rate * g)
        return loss.detach().numpy(), weights(manual)

    optimized = build()
    optimizer = torch.optim.SGD(optimized.parameters(), lr=learning_rate)

    def run_optim():
        optimizer.zero_grad(set_to_none=True)
        loss = ((optimized(xs) - ys) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss.detach().numpy(), weights(optimized)

    return {"torch.autograd.grad + Tensor.sub_": run_grad,
            "loss.backward + torch.optim.SGD.step": run_optim}
