"""The floor: forward and backward written out by hand in NumPy, no tape at all."""

from __future__ import annotations

import numpy as np

# The API each function's run() times (the table names it in every cell).
API = {"chain": "hand-written forward+backward", "chain_forward": "NumPy ufuncs",
       "mlp": "hand-written forward+backward", "jacobian": "hand-written closed form",
       "hessian": "hand-written closed form (einsum)",
       "conv": "hand-written im2col forward+backward",
       "train_step": "hand-written forward+backward, SGD in place"}


def chain(x0, steps):
    def run():
        y = x0
        ys = []
        for _ in range(steps):          # forward, keeping what the backward pass needs
            ys.append(y)
            y = np.sin(y) * 1.0001 + y * y * 0.001
        g = np.ones_like(x0)
        for yk in reversed(ys):         # backward: dy_{k+1}/dy_k = cos(y_k)*1.0001 + 0.002*y_k
            g = g * (np.cos(yk) * 1.0001 + yk * 0.002)
        return y, g
    return run


def chain_forward(x0, steps):
    def run():
        y = x0
        for _ in range(steps):
            y = np.sin(y) * 1.0001 + y * y * 0.001
        return y
    return run


def mlp(layers, x, labels, onehot):
    batch = x.shape[0]

    def run():
        hs = [x]                     # each layer's input; relu' is read off it (h > 0)
        h = x
        for i, (w, b) in enumerate(layers):
            z = h @ w + b
            h = np.maximum(z, 0) if i < len(layers) - 1 else z
            hs.append(h)
        shifted = h - h.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -(onehot * logp).sum() / batch
        dz = (np.exp(logp) - onehot) / batch          # d loss / d logits
        grads = []
        for i in reversed(range(len(layers))):
            w = layers[i][0]
            grads[:0] = [hs[i].T @ dz, dz.sum(axis=0)]
            if i:
                dz = (dz @ w.T) * (hs[i] > 0)         # through the previous relu
        return loss, grads
    return run


def _elu(z):
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0)))


def _elu_slope(z):
    return np.where(z > 0, 1, np.exp(np.minimum(z, 0))).astype(z.dtype)


def jacobian(params, x, mode):
    w1, b1, w2, b2 = params

    def per_sample():
        z1 = x @ w1 + b1
        z2 = _elu(z1) @ w2 + b2
        # dy_b/dx_b = diag(elu'(z2_b)) W2^T diag(elu'(z1_b)) W1^T, one (out, in) block per row
        inner = w2.T[None, :, :] * _elu_slope(z1)[:, None, :]       # (B, out, hidden)
        return (inner @ w1.T) * _elu_slope(z2)[:, :, None]          # (B, out, in)

    def run_batch():
        return per_sample()

    def run_full():
        blocks = per_sample()
        b = x.shape[0]
        full = np.zeros((b, blocks.shape[1], b, x.shape[1]), x.dtype)
        full[np.arange(b), :, np.arange(b), :] = blocks   # block diagonal: rows are independent
        return full

    return run_batch if mode == "batch" else run_full


def hessian(params, x):
    w1, b1, w2, b2 = params
    n = x.shape[0] * w2.shape[1]          # mean over every element of y

    def run():
        m1 = (x @ w1 + b1 > 0).astype(x.dtype)
        m2 = ((np.maximum(x @ w1 + b1, 0) @ w2 + b2) > 0).astype(x.dtype)
        # Directional derivative of the gradient along every unit direction E_ij of W1:
        # d(dL/dz2) = 2/n * relu'(z2) * (relu'(z1) * x E_ij) W2, then back through W2, relu', x.
        dgz2 = np.einsum("ni,nj,jo,no->ijno", x, m1, w2, m2, optimize=True) * (2 / n)
        dgz1 = np.einsum("ijno,co,nc->ijnc", dgz2, w2, m1, optimize=True)
        return np.einsum("na,ijnc->ijac", x, dgz1, optimize=True)
    return run


def conv(params, x, labels, onehot):
    """relu(conv2d(x, W) + b) (3x3, "VALID", NHWC), flattened, then Dense and the loss."""
    w, b, w2, b2 = params
    kh, kw, c, o = w.shape
    n = x.shape[0]
    wm = w.reshape(-1, o)                                   # (kh*kw*c, o)

    def run():
        # im2col: every 3x3 window as a row; (n, ho, wo, c, kh, kw) -> (n*ho*wo, kh*kw*c)
        win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))
        ho, wo = win.shape[1:3]
        cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(n * ho * wo, kh * kw * c)
        z = cols @ wm + b                                   # (n*ho*wo, o)
        h = np.maximum(z, 0).reshape(n, -1)                 # NHWC order, flattened
        logits = h @ w2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -(onehot * logp).sum() / n
        dz2 = (np.exp(logp) - onehot) / n
        dh = (dz2 @ w2.T).reshape(z.shape) * (z > 0)
        return loss, [(cols.T @ dh).reshape(w.shape), dh.sum(axis=0), h.T @ dz2,
                      dz2.sum(axis=0)]
    return run


def train_step(layers, x, y, learning_rate):
    """One SGD step of a tanh MLP on the mean squared error; the weights change in place."""
    params = [a.copy() for wb in layers for a in wb]
    scale = 2.0 / y.size                                  # d mean(d**2) / d d = 2 d / n

    def run():
        hs = [x]                     # each layer's input; tanh' is read off it (1 - h**2)
        h = x
        for i in range(0, len(params), 2):
            z = h @ params[i] + params[i + 1]
            h = np.tanh(z) if i < len(params) - 2 else z
            hs.append(h)
        diff = h - y
        loss = (diff * diff).mean()
        dz = diff * scale
        grads = [None] * len(params)
        for i in reversed(range(0, len(params), 2)):
            grads[i], grads[i + 1] = hs[i // 2].T @ dz, dz.sum(axis=0)
            if i:
                dz = (dz @ params[i].T) * (1 - hs[i // 2] * hs[i // 2])
        for p, g in zip(params, grads):
            p -= learning_rate * g
        return loss, params
    return run
