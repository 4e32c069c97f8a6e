"""JAX without jit: jax.grad traces and runs op by op (float64 enabled for the chain)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

# The API each function's run() times (the table names it in every cell).
API = {"chain": "jax.value_and_grad (no jit)", "chain_forward": "jax.numpy (no jit)",
       "mlp": "jax.value_and_grad (no jit)"}


def _chain(y, steps):
    for _ in range(steps):
        y = jnp.sin(y) * 1.0001 + y * y * 0.001
    return y


def chain(x0, steps):
    f = jax.value_and_grad(lambda x: jnp.sum(_chain(x, steps)))

    def run():
        _, g = f(jnp.asarray(x0))
        return None, jax.device_get(g)
    return run


def chain_forward(x0, steps):
    x = jnp.asarray(x0)
    return lambda: jax.device_get(_chain(x, steps))


def mlp(layers, x, labels, onehot):
    flat = [jnp.asarray(a) for wb in layers for a in wb]

    def loss(params):
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i < len(params) - 2:
                h = jax.nn.relu(h)
        return -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(h), axis=1))

    f = jax.value_and_grad(loss)

    def run():
        value, grads = f(flat)
        return jax.device_get(value), [jax.device_get(g) for g in grads]
    return run
