"""minitape, used as a learner would: GradientTape, Variables, mt ops."""

from __future__ import annotations

import numpy as np

import minitape as mt

from . import VECTORIZED_CHUNKS

# Every tape gets mt.viz's record of the learner's lines, as ``import minitape`` sets it in a
# notebook or script (issue 30: source capture on by default; issue 31's targets hold with it).
# Said here so that the benchmark cannot time a lighter minitape than a learner runs.
mt.config.record_source_lines(True)

# The API each function's run() times (the table names it in every cell).
API = {"chain": "GradientTape.gradient", "chain_forward": "mt ops, no tape",
       "mlp": "GradientTape.gradient",
       "hessian": "GradientTape.jacobian of GradientTape.gradient",
       "conv": "GradientTape.gradient (mt.nn.conv2d)",
       "train_step": "GradientTape.gradient + Variable.assign_sub (model.trainable_variables)"}


def chain(x0, steps):
    x = mt.constant(x0)

    def run():
        with mt.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(steps):
                y = mt.math.sin(y) * 1.0001 + y * y * 0.001
        return y.numpy(), tape.gradient(y, x).numpy()
    return run


def chain_forward(x0, steps):
    x = mt.constant(x0)

    def run():
        y = x
        for _ in range(steps):
            y = mt.math.sin(y) * 1.0001 + y * y * 0.001
        return y.numpy()
    return run


def mlp(layers, x, labels, onehot, persistent=False):
    variables = [mt.Variable(a) for wb in layers for a in wb]
    xs, targets = mt.constant(x), mt.constant(onehot)

    def run():
        with mt.GradientTape(persistent=persistent) as tape:
            h = xs
            for i in range(0, len(variables), 2):
                h = mt.matmul(h, variables[i]) + variables[i + 1]
                if i < len(variables) - 2:
                    h = mt.nn.relu(h)
            # The fused loss, as the NumPy (softmax - onehot) and PyTorch (F.cross_entropy)
            # adapters do.
            loss = mt.reduce_mean(mt.nn.softmax_cross_entropy_with_logits(targets, h))
        grads = tape.gradient(loss, variables)
        return loss.numpy(), [g.numpy() for g in grads]
    return run


def jacobian(params, x, mode):
    w1, b1, w2, b2 = [mt.Variable(a) for a in params]
    xs = mt.constant(x)
    api = {"vectorized": "GradientTape.jacobian (experimental_use_pfor=True)",
           "looped": "GradientTape.jacobian (experimental_use_pfor=False)",
           "batch": "GradientTape.batch_jacobian"}[mode]

    def make(chunk=None):
        def run():
            # (the loop asks the tape once per row: persistent, as TensorFlow requires)
            with mt.GradientTape(watch_accessed_variables=False,
                                 persistent=(mode == "looped")) as tape:
                tape.watch(xs)
                y = mt.nn.elu(mt.matmul(mt.nn.elu(mt.matmul(xs, w1) + b1), w2) + b2)
            if mode == "batch":
                return tape.batch_jacobian(y, xs).numpy()
            return tape.jacobian(y, xs, experimental_use_pfor=(mode == "vectorized"),
                                 parallel_iterations=chunk).numpy()
        return run
    runs = {api: make()}
    if mode == "vectorized":   # (PyTorch's adapter offers jacrev the same chunk sizes)
        for chunk in VECTORIZED_CHUNKS:
            runs[f"GradientTape.jacobian (experimental_use_pfor=True, "
                 f"parallel_iterations={chunk})"] = make(chunk)
    return runs


def hessian(params, x):
    w1, b1, w2, b2 = [mt.Variable(a) for a in params]
    xs = mt.constant(x)

    def run():
        with mt.GradientTape() as t2:
            with mt.GradientTape() as t1:
                h = mt.nn.relu(mt.matmul(xs, w1) + b1)
                y = mt.nn.relu(mt.matmul(h, w2) + b2)
                loss = mt.reduce_mean(y**2)
            g = t1.gradient(loss, w1)
        return t2.jacobian(g, w1).numpy()
    return run


def conv(params, x, labels, onehot):
    variables = [mt.Variable(a) for a in params]
    xs, targets = mt.constant(x), mt.constant(onehot)

    def run():
        w, b, w2, b2 = variables
        with mt.GradientTape() as tape:
            h = mt.nn.relu(mt.nn.conv2d(xs, w, strides=1, padding="VALID") + b)
            logits = mt.matmul(mt.reshape(h, [x.shape[0], -1]), w2) + b2
            loss = mt.reduce_mean(mt.nn.softmax_cross_entropy_with_logits(targets, logits))
        grads = tape.gradient(loss, variables)
        return loss.numpy(), [g.numpy() for g in grads]
    return run


_ = np


def train_step(layers, x, y, learning_rate):
    # As lesson 05 writes it: a Sequential of Dense layers, the gradient with respect to
    # model.trainable_variables, and each Variable moved with assign_sub.
    model = mt.layers.Sequential([
        mt.layers.Dense(w.shape[1], activation="tanh" if k < len(layers) - 1 else None)
        for k, (w, b) in enumerate(layers)])
    xs, ys = mt.constant(x), mt.constant(y)
    model(xs)                                    # builds the layers
    for layer, (w, b) in zip(model.layers, layers):
        layer.kernel.assign(w)
        layer.bias.assign(b)
    weights = model.trainable_variables          # (only to return them)

    def run():
        with mt.GradientTape() as tape:
            loss = mt.reduce_mean((model(xs) - ys) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(learning_rate * g)
        return loss.numpy(), [v.numpy() for v in weights]
    return run
