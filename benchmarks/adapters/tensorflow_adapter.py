"""TensorFlow eager (no tf.function): the API minitape reproduces."""

from __future__ import annotations

import tensorflow as tf

# The API each function's run() times (the table names it in every cell).
API = {"chain": "tf.GradientTape.gradient (eager)", "chain_forward": "tf ops (eager)",
       "mlp": "tf.GradientTape.gradient (eager)"}


def chain(x0, steps):
    x = tf.constant(x0)

    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(steps):
                y = tf.sin(y) * 1.0001 + y * y * 0.001
        return y.numpy(), tape.gradient(y, x).numpy()
    return run


def chain_forward(x0, steps):
    x = tf.constant(x0)

    def run():
        y = x
        for _ in range(steps):
            y = tf.sin(y) * 1.0001 + y * y * 0.001
        return y.numpy()
    return run


def mlp(layers, x, labels, onehot):
    variables = [tf.Variable(a) for wb in layers for a in wb]
    xs, ys = tf.constant(x), tf.constant(labels.astype("int64"))

    def run():
        with tf.GradientTape() as tape:
            h = xs
            for i in range(0, len(variables), 2):
                h = tf.matmul(h, variables[i]) + variables[i + 1]
                if i < len(variables) - 2:
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(ys, h))
        grads = tape.gradient(loss, variables)
        return loss.numpy(), [g.numpy() for g in grads]
    return run
