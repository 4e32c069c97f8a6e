"""Keras's attention layers: ``Attention`` (Luong's dot-product attention) and
``MultiHeadAttention`` (the Transformer's), with minitape ops.

Each is written as its equations (``matmul`` / ``einsum``, ``softmax``, ``where``), so the
tape records every step and the gradients are the ops' own. Semantics, defaults and the
weights' layout are Keras 3's, so that ``set_weights`` with a Keras layer's
``get_weights()`` gives the same outputs.

Masks (bool, True where a position may be attended to) are computed with NumPy: they are
not differentiated. A score that is masked out is replaced by -1e9 before the softmax, and
its weight after the softmax is set to 0 (so a row that is all masked gives zeros), as
Keras 3.
"""

from __future__ import annotations

import numpy as np

from .. import layers as _mt_layers
from ..engine.tensor import Tensor, convert_to_tensor
from ..ops import array_ops, math_ops, nn_ops, reduction_ops
from .layers import Layer
from ._keras_mask import get_keras_mask

__all__ = ["Attention", "MultiHeadAttention"]

_LARGE_NEGATIVE = -1e9   # (Keras's: what a masked score becomes before the softmax)


def _bool(mask, what):
    """``mask`` as a NumPy bool array (None stays None)."""
    if mask is None:
        return None
    value = mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    if value.dtype != np.bool_ and value.dtype.kind not in "iuf":
        raise TypeError(f"{what} must be a bool mask (True: may be attended to), got dtype "
                        f"{value.dtype}")
    return value.astype(bool) if value.dtype != np.bool_ else value


def _masked_softmax(scores, mask):
    """``softmax(scores)`` over the last axis, with ``mask`` (bool, broadcastable to
    ``scores``): masked scores become -1e9 first, masked weights 0 after (Keras 3's
    ``Softmax(mask=)``)."""
    if mask is None:
        return nn_ops.softmax(scores, axis=-1)
    keep = convert_to_tensor(np.broadcast_to(mask, scores.shape))
    scores = array_ops.where(keep, scores, _LARGE_NEGATIVE)
    weights = nn_ops.softmax(scores, axis=-1)
    return array_ops.where(keep, weights, 0.0)


def _causal(tq, tv):
    """``(1, tq, tv)``: True where ``j <= i`` (position ``i`` sees ``j``), as Keras."""
    return np.tril(np.ones((tq, tv), bool))[None]


def _floating(x, dtype, who):
    """``x`` as a Tensor of the layer's dtype (Keras casts a layer's inputs so)."""
    x = math_ops.floating(x, who)
    return x if x.dtype == dtype else math_ops.cast(x, dtype)


def _dropped(weights, rate, training, seed):
    if not _mt_layers.training_mode(training) or rate == 0.0:
        return weights
    return nn_ops.dropout(weights, rate, seed=seed)


class Attention(Layer):
    """Dot-product attention (Luong et al. 2015), as ``keras.layers.Attention``.

    ``layer([query, value])`` or ``layer([query, value, key])`` (``key`` defaults to
    ``value``), with ``query`` ``(batch, Tq, dim)`` and ``value``, ``key`` ``(batch, Tv,
    dim)``::

        scores = query @ key^T                  # (batch, Tq, Tv); times `scale` if use_scale
        weights = softmax(scores)               # over Tv, masked positions excluded
        output = weights @ value                # (batch, Tq, dim)

    ``score_mode="concat"`` (Bahdanau-like): ``scores = concat_score_weight *
    sum(tanh(scale * (query[:, :, None] + key[:, None])), axis=-1)``.

    Weights: ``scale`` ``()`` (ones) with ``use_scale=True``; ``concat_score_weight`` ``()``
    (ones) with ``score_mode="concat"``. ``dropout`` drops attention weights while training.

    Call arguments: ``mask=[query_mask, value_mask]`` (bool ``(batch, Tq)``, ``(batch, Tv)``;
    by default the masks the inputs carry, e.g. from ``Embedding(mask_zero=True)``): the
    value mask keeps padded values out of the softmax, the query mask sets the output to 0
    at padded queries (and is the output's mask). ``use_causal_mask=True``: query ``i``
    sees only values ``j <= i``. ``return_attention_scores=True`` returns ``(output,
    weights)``, the weights after masking and softmax ``(batch, Tq, Tv)``.

    Raises:
        ValueError: ``score_mode`` not "dot" or "concat"; inputs not a list of 2 or 3; a mask
            not a list of 2 or 3.
    """

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError("Invalid value for argument score_mode. Expected one of {'dot', "
                             f"'concat'}}. Received: score_mode={score_mode}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = float(dropout)
        self.seed = seed

    def _check(self, inputs, mask=None):
        if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
            raise ValueError(f"{type(self).__name__} layer must be called on a list of inputs, "
                             "namely [query, value] or [query, value, key]. Received: "
                             f"inputs={inputs!r:.80}.")
        if mask is not None and (not isinstance(mask, (list, tuple))
                                 or not 2 <= len(mask) <= 3):
            raise ValueError(f"{type(self).__name__} layer mask must be a list, namely "
                             f"[query_mask, value_mask]. Received: mask={mask!r:.80}.")

    def build(self, input_shape):
        self.scale = self.concat_score_weight = None
        if self.use_scale:
            self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(shape=(), initializer="ones",
                                                       name="concat_score_weight")
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = math_ops.matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        q = array_ops.expand_dims(query, -2)    # (batch, Tq, 1, dim)
        k = array_ops.expand_dims(key, -3)      # (batch, 1, Tv, dim)
        total = q + k if self.scale is None else self.scale * (q + k)
        return self.concat_score_weight * reduction_ops.reduce_sum(math_ops.tanh(total), -1)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._check(inputs, mask)
        who = f"{type(self).__name__} '{self.name}'"
        q = _floating(inputs[0], self.dtype, who)
        v = _floating(inputs[1], self.dtype, who)
        k = _floating(inputs[2], self.dtype, who) if len(inputs) > 2 else v
        q_mask = _bool(mask[0], "query_mask") if mask else None
        v_mask = _bool(mask[1], "value_mask") if mask else None
        scores = self._scores(q, k)
        keep = None if v_mask is None else v_mask[:, None, :]          # (batch, 1, Tv)
        if use_causal_mask:
            causal = _causal(scores.shape[-2], scores.shape[-1])
            keep = causal if keep is None else keep & causal
        weights = _masked_softmax(scores, keep)
        output = math_ops.matmul(_dropped(weights, self.dropout, training, self.seed), v)
        if q_mask is not None:   # padded queries give zeros
            output = array_ops.where(convert_to_tensor(q_mask[:, :, None]), output, 0.0)
        return (output, weights) if return_attention_scores else output

    def compute_mask(self, inputs, mask=None):
        """The query's mask (``mask[0]``), as Keras."""
        self._check(inputs, mask)
        if mask is None or mask[0] is None:
            return None
        return convert_to_tensor(mask[0])


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al. 2017), as ``keras.layers.MultiHeadAttention``.

    ``layer(query, value, key=None)``: ``query`` ``(batch, T, dim_q)``, ``value``
    ``(batch, S, dim_v)``, ``key`` ``(batch, S, dim_k)`` (default ``value``). With ``H =
    num_heads``::

        q = einsum("btd,dhk->bthk", query, query_kernel) + query_bias   # (batch, T, H, key_dim)
        k = einsum("bsd,dhk->bshk", key, key_kernel) + key_bias
        v = einsum("bsd,dhv->bshv", value, value_kernel) + value_bias   # value_dim
        scores = einsum("bshk,bthk->bhts", k, q / sqrt(key_dim))         # (batch, H, T, S)
        weights = softmax(scores)     # over S, masked positions excluded; dropout (training)
        heads = einsum("bhts,bshv->bthv", weights, v)
        output = einsum("bthv,hvo->bto", heads, output_kernel) + output_bias

    Weights (Keras 3's einsum-dense layout and order): ``query/kernel`` ``(dim_q, H,
    key_dim)``, ``query/bias`` ``(H, key_dim)``, the same for ``key`` and ``value`` (with
    ``value_dim``, default ``key_dim``), ``attention_output/kernel`` ``(H, value_dim,
    output_dim)``, ``attention_output/bias`` ``(output_dim,)``; ``output_dim`` is
    ``output_shape`` or ``dim_q``. Kernels glorot_uniform, biases zeros.

    Masks (bool, True: may be attended to): ``attention_mask`` ``(batch, T, S)`` (or
    broadcastable: Geron's padding mask ``(batch, 1, S)``), combined (AND) with the masks
    the inputs carry (the query's ``(batch, T, 1)``, the value's and key's ``(batch, 1,
    S)``) and, with ``use_causal_mask=True``, with ``j <= i``. ``return_attention_scores=True``
    returns ``(output, weights)``, weights ``(batch, H, T, S)``. The output carries the
    query's mask.

    Raises:
        TypeError / ValueError: ``num_heads`` or ``key_dim`` not a positive int; ``dropout``
            outside [0, 1); inputs that are not 3-D.
    """

    supports_masking = True

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", seed=None, **kwargs):
        for key in ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                    "kernel_constraint", "bias_constraint"):
            if kwargs.get(key) is not None:
                raise NotImplementedError(f"MultiHeadAttention: {key} is not in minitape")
            kwargs.pop(key, None)
        super().__init__(**kwargs)
        who = "MultiHeadAttention"
        self.num_heads = _mt_layers._positive_int(num_heads, who, "num_heads")
        self.key_dim = _mt_layers._positive_int(key_dim, who, "key_dim")
        self.value_dim = self.key_dim if value_dim is None else \
            _mt_layers._positive_int(value_dim, who, "value_dim")
        if isinstance(dropout, bool) or not 0.0 <= float(dropout) < 1.0:
            raise ValueError(f"{who}: dropout must be a number in [0, 1), got {dropout!r}")
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        if isinstance(output_shape, (list, tuple)):
            if len(output_shape) != 1:
                raise NotImplementedError(f"{who}: output_shape with several axes is not in "
                                          f"minitape, got {output_shape!r}")
            output_shape = output_shape[0]
        self._output_dim = None if output_shape is None else \
            _mt_layers._positive_int(output_shape, who, "output_shape")
        if attention_axes is not None and tuple(np.atleast_1d(attention_axes)) not in ((1,),
                                                                                      (-2,)):
            raise NotImplementedError(f"{who}: only attention over the time axis "
                                      "(attention_axes=None) is in minitape")
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.seed = seed

    def build(self, query_shape, value_shape=None, key_shape=None):
        """Make the weights for a query of last axis ``dim_q`` (and value and key, which
        default to the query's shape)."""
        query_shape = tuple(query_shape)
        value_shape = query_shape if value_shape is None else tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        h = self.num_heads
        output_dim = self._output_dim or query_shape[-1]

        def dense(name, shape, bias_shape):
            kernel = self.add_weight(shape=shape, initializer=self.kernel_initializer,
                                     name=f"{name}/kernel")
            bias = self.add_weight(shape=bias_shape, initializer=self.bias_initializer,
                                   name=f"{name}/bias") if self.use_bias else None
            return kernel, bias
        self.query_kernel, self.query_bias = dense("query", (query_shape[-1], h, self.key_dim),
                                                   (h, self.key_dim))
        self.key_kernel, self.key_bias = dense("key", (key_shape[-1], h, self.key_dim),
                                               (h, self.key_dim))
        self.value_kernel, self.value_bias = dense("value", (value_shape[-1], h, self.value_dim),
                                                   (h, self.value_dim))
        self.output_kernel, self.output_bias = dense(
            "attention_output", (h, self.value_dim, output_dim), (output_dim,))
        self.built = True

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None:
            raise TypeError(f"MultiHeadAttention '{self.name}' needs a value: "
                            "layer(query, value) (self-attention: layer(x, x))")
        if not self.built:   # (the weights need the value's and the key's sizes too)
            self._build_input_shape = tuple(query.shape)
            self.build(query.shape, value.shape, None if key is None else key.shape)
        return super().__call__(query, value, key, **kwargs)

    @staticmethod
    def _project(x, kernel, bias, equation):
        y = array_ops.einsum(equation, x, kernel)
        return y + bias if bias is not None else y

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        who = f"MultiHeadAttention '{self.name}'"
        # the masks the inputs carry (Embedding(mask_zero=True)), unless given
        query_mask = get_keras_mask(query) if query_mask is None else query_mask
        value_mask = get_keras_mask(value) if value_mask is None else value_mask
        key_mask = get_keras_mask(key) if key_mask is None and key is not None else key_mask
        q_in = _floating(query, self.dtype, who)
        v_in = _floating(value, self.dtype, who)
        k_in = v_in if key is None else _floating(key, self.dtype, who)
        for name, x in (("query", q_in), ("value", v_in), ("key", k_in)):
            if x.ndim != 3:
                raise ValueError(f"{who}: {name} must have shape (batch, steps, features), got "
                                 f"shape {tuple(x.shape)}")
        q = self._project(q_in, self.query_kernel, self.query_bias, "abc,cde->abde")
        k = self._project(k_in, self.key_kernel, self.key_bias, "abc,cde->abde")
        v = self._project(v_in, self.value_kernel, self.value_bias, "abc,cde->abde")
        q = q * (1.0 / np.sqrt(float(self.key_dim)))
        scores = array_ops.einsum("aecd,abcd->acbe", k, q)         # (batch, H, T, S)
        keep = self._attention_mask(q_in.shape[1], v_in.shape[1], query_mask, value_mask,
                                    key_mask, attention_mask, use_causal_mask)
        weights = _masked_softmax(scores, None if keep is None else keep[:, None])
        heads = array_ops.einsum("acbe,aecd->abcd",
                                 _dropped(weights, self.dropout, training, self.seed), v)
        output = array_ops.einsum("abcd,cde->abe", heads, self.output_kernel)
        if self.output_bias is not None:
            output = output + self.output_bias
        return (output, weights) if return_attention_scores else output

    @staticmethod
    def _attention_mask(t, s, query_mask, value_mask, key_mask, attention_mask, causal):
        """The bool mask ``(batch or 1, T, S)``, all the masks ANDed, or None (Keras's
        ``_compute_attention_mask``)."""
        keep = None

        def both(a, b):
            return b if a is None else a & b
        if query_mask is not None:
            keep = both(keep, _bool(query_mask, "query_mask")[:, :, None])
        if value_mask is not None:
            keep = both(keep, _bool(value_mask, "value_mask")[:, None, :])
        if key_mask is not None:
            keep = both(keep, _bool(key_mask, "key_mask")[:, None, :])
        if causal:
            keep = both(keep, _causal(t, s))
        if attention_mask is not None:
            given = _bool(attention_mask, "attention_mask")
            if given.ndim == 2:
                given = given[None]
            keep = both(keep, given)
        return keep

    def compute_mask(self, inputs, previous_mask=None):
        """The query's mask, as Keras."""
        return previous_mask
