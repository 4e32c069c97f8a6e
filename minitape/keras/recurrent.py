"""Keras's recurrent layers, with minitape ops: ``SimpleRNN``, ``LSTM``, ``GRU``, their cells,
``RNN(cell)``, ``Bidirectional``, ``TimeDistributed``; and for time series ``Conv1D``,
``MaxPooling1D``, ``GlobalAveragePooling1D``, ``GlobalMaxPooling1D``.

Each layer is written as the textbook equations, with ``matmul``, ``sigmoid``, ``tanh`` and a
Python loop over the time steps: the tape records every step (backpropagation through time is
the ordinary gradient of the unrolled loop; no new gradient rule), and a drawing of the tape
shows the steps one after the other.

Semantics, defaults and the weights' layout are Keras 3's (``keras.layers.LSTM`` ...), so
that ``set_weights`` with a Keras layer's ``get_weights()`` gives the same outputs:

- ``kernel`` ``(input_dim, k * units)``, ``recurrent_kernel`` ``(units, k * units)``,
  ``bias`` ``(k * units,)``, with ``k`` gates side by side: 1 for ``SimpleRNN``; 4 for
  ``LSTM``, in the order i, f, c, o (input, forget, candidate, output); 3 for ``GRU``, in
  the order z, r, h (update, reset, candidate), and with ``reset_after=True`` (the default)
  a bias ``(2, 3 * units)``: row 0 for the input, row 1 for the recurrent state.
- Inputs ``(batch, timesteps, features)``; the output is the last step's ``(batch, units)``,
  or every step's ``(batch, timesteps, units)`` with ``return_sequences=True``;
  ``return_state=True`` adds the final states (``[output, h]``; LSTM ``[output, h, c]``).
- ``dropout`` / ``recurrent_dropout``: while training only, masks drawn once per sequence
  (the same at every step), on the inputs and on the previous state, as Keras 3: with
  ``recurrent_dropout``, LSTM and GRU draw one mask per gate (Keras's "implementation 1");
  with ``dropout`` alone, one input mask for all the gates.
"""

from __future__ import annotations

import numpy as np

from .. import layers as _mt_layers
from ..engine.tensor import convert_to_tensor
from ..ops import array_ops, math_ops, nn_ops
from .layers import Layer

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells", "RNN", "SimpleRNN",
           "LSTM", "GRU", "Bidirectional", "TimeDistributed", "Conv1D", "MaxPooling1D",
           "MaxPool1D", "GlobalAveragePooling1D", "GlobalAvgPool1D", "GlobalMaxPooling1D",
           "GlobalMaxPool1D"]


def _rate(value, who, arg):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(value) < 1.0:
        raise ValueError(f"{who}: {arg} is the fraction of units to drop and must be a number "
                         f"in [0, 1), got {arg}={value!r}")
    return float(value)


def _sequences(inputs, dtype, who):
    """``inputs`` as a floating Tensor of shape ``(batch, timesteps, features)``."""
    x = convert_to_tensor(inputs, what=who)
    if x.dtype.kind not in "f" or x.dtype != dtype:
        x = math_ops.cast(x, dtype)
    if x.ndim != 3:
        raise ValueError(f"{who} expects inputs of shape (batch, timesteps, features), got shape "
                         f"{tuple(x.shape)}; a single series of values needs a features axis: "
                         "x[..., None] (Geron: input_shape=[None, 1])")
    return x


def _named(tensor, name):
    """``tensor``, named ``name`` for the drawings of the tape (unless it has a name)."""
    if getattr(tensor, "name", "") is None:
        tensor.name = name
    return tensor


class _DropoutCell(Layer):
    """What the three cells share: their arguments, their weights, their dropout masks."""

    _gates = 1
    _default_name = "simple_rnn_cell"
    _walk_skip = ("_masks", "_keep_masks")

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        kwargs.pop("implementation", None)   # (Keras's choice of kernels: one here)
        if kwargs.get("name") is None:   # Keras's names: "lstm_cell", "lstm_cell_1", ...
            kwargs["name"] = _mt_layers._default_name(self._default_name)
        super().__init__(**kwargs)
        who = type(self).__name__
        self.units = _mt_layers._positive_int(units, who, "units")
        self.activation = _mt_layers._activation(activation) or (lambda x: x)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        self._regularizers = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self._constraints = (kernel_constraint, recurrent_constraint, bias_constraint)
        self.dropout = _rate(dropout, who, "dropout")
        self.recurrent_dropout = _rate(recurrent_dropout, who, "recurrent_dropout")
        self._seeds = None if seed is None else np.random.default_rng(seed)
        self._masks = {}
        self._keep_masks = False
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        """Make ``kernel`` ``(input_dim, k*units)``, ``recurrent_kernel`` ``(units, k*units)``
        and ``bias``, ``input_dim`` being the last axis of ``input_shape``."""
        input_dim = _mt_layers._last_dim(input_shape, type(self).__name__)
        width = self._gates * self.units
        self.kernel = self.add_weight(
            shape=(input_dim, width), initializer=self.kernel_initializer, name="kernel",
            regularizer=self._regularizers[0], constraint=self._constraints[0])
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, width), initializer=self.recurrent_initializer,
            name="recurrent_kernel", regularizer=self._regularizers[1],
            constraint=self._constraints[1])
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=self._bias_shape(), initializer=self._bias_initializer(), name="bias",
                regularizer=self._regularizers[2], constraint=self._constraints[2])
        self.built = True

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def get_initial_state(self, batch_size=None):
        """Zeros ``(batch_size, units)``, one per state, as a list (Keras's initial state)."""
        sizes = self.state_size if isinstance(self.state_size, (list, tuple)) \
            else [self.state_size]
        return [array_ops.zeros((batch_size, size), self.dtype) for size in sizes]

    def reset_dropout_mask(self):
        """Forget the dropout masks: the next call draws new ones (the RNN layer calls it
        after each sequence, so one sequence uses one mask at every step, as Keras)."""
        self._masks = {}

    def _dropped(self, x, kind, rate, training):
        """``x`` times the dropout mask ``kind`` (``1/(1-rate)`` or 0 per unit), while
        training; ``x`` itself otherwise."""
        if not training or rate == 0.0:
            return x
        mask = self._masks.get(kind)
        if mask is None or tuple(mask.shape) != tuple(x.shape):
            seed = None if self._seeds is None else int(self._seeds.integers(2**31))
            mask = nn_ops.dropout(array_ops.ones(x.shape, x.dtype), rate, seed=seed)
            if self._keep_masks:
                self._masks[kind] = mask
        return x * mask

    def _prepare(self, inputs, states, training):
        x = convert_to_tensor(inputs, what=type(self).__name__)
        if x.dtype != self.dtype:
            x = math_ops.cast(x, self.dtype)
        nested = isinstance(states, (list, tuple))
        state_list = list(states) if nested else [states]
        state_list = [convert_to_tensor(s) for s in state_list]
        training = _mt_layers.training_mode(training)
        return x, state_list, nested, training

    def _gate_inputs(self, x, h, training):
        """The input and the previous state as each gate sees them, two lists.

        As Keras 3: with ``recurrent_dropout`` while training (Keras's "implementation 1"),
        each gate has its own masks of ``x`` and ``h`` (one list item per gate); otherwise
        one masked ``x`` (``dropout``) and the ``h`` given serve all the gates (one item).
        """
        count = self._gates if training and self.recurrent_dropout > 0.0 else 1
        xs = [self._dropped(x, f"input{k}", self.dropout, training) for k in range(count)]
        hs = [self._dropped(h, f"recurrent{k}", self.recurrent_dropout, training)
              for k in range(count)]
        return xs, hs

    def _project(self, copies, matrix, gates):
        """``copies[k] @ matrix``'s columns of gate ``k``, for the first ``gates`` gates
        side by side (a single copy: one matmul)."""
        u = self.units
        if len(copies) == 1:
            m = matrix if gates == self._gates else matrix[:, :gates * u]
            return math_ops.matmul(copies[0], m)
        return array_ops.concat([math_ops.matmul(copies[k], matrix[:, k * u:(k + 1) * u])
                                 for k in range(gates)], axis=1)


class SimpleRNNCell(_DropoutCell):
    """One step of a fully-connected RNN, as ``keras.layers.SimpleRNNCell``::

        h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)

    ``cell(x, states)`` with ``x`` ``(batch, input_dim)`` and ``states`` ``[h_prev]`` (or
    ``h_prev``) ``(batch, units)`` returns ``(h, [h])`` (``(h, h)`` for a bare state). Weights:
    ``kernel`` ``(input_dim, units)`` (glorot_uniform), ``recurrent_kernel`` ``(units, units)``
    (orthogonal), ``bias`` ``(units,)`` (zeros). ``dropout`` masks ``x`` and
    ``recurrent_dropout`` masks ``h_prev``, while training.

    Raises:
        TypeError / ValueError: ``units`` not a positive int; a dropout rate outside [0, 1).
    """

    def call(self, inputs, states, training=None):
        x, (h_prev,), nested, training = self._prepare(inputs, states, training)
        x = self._dropped(x, "input0", self.dropout, training)
        h_prev = self._dropped(h_prev, "recurrent0", self.recurrent_dropout, training)
        z = math_ops.matmul(x, self.kernel)
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z + math_ops.matmul(h_prev, self.recurrent_kernel))
        return h, ([h] if nested else h)


class _ForgetBias:
    """LSTM's bias initializer with ``unit_forget_bias=True``: the forget gate's part ones,
    the rest from ``bias_initializer`` (Keras's)."""

    def __init__(self, units, initializer):
        self.units, self.initializer = units, initializer

    def __call__(self, shape, dtype=None):
        from .layers import _initial_value
        u = self.units
        rest = _initial_value(self.initializer, (u,), dtype, "LSTMCell bias_initializer")
        tail = _initial_value(self.initializer, (2 * u,), dtype, "LSTMCell bias_initializer")
        return np.concatenate([rest, np.ones(u, dtype), tail])


class LSTMCell(_DropoutCell):
    """One step of a Long Short-Term Memory layer, as ``keras.layers.LSTMCell``::

        i, f, g, o = split(x @ kernel + h_prev @ recurrent_kernel + bias, 4)
        i, f, o = recurrent_activation(i), recurrent_activation(f), recurrent_activation(o)
        c = f * c_prev + i * activation(g)
        h = o * activation(c)

    ``cell(x, [h_prev, c_prev])`` returns ``(h, [h, c])``. Weights: ``kernel``
    ``(input_dim, 4*units)``, ``recurrent_kernel`` ``(units, 4*units)``, ``bias``
    ``(4*units,)``, the gates side by side in the order i, f, c, o (Keras's).
    ``unit_forget_bias=True`` (the default) starts the forget gate's bias at 1.
    ``recurrent_activation`` defaults to ``"sigmoid"``, ``activation`` to ``"tanh"``.
    """

    _gates = 4
    _default_name = "lstm_cell"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = _mt_layers._activation(recurrent_activation) or \
            (lambda x: x)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.state_size = [self.units, self.units]

    def _bias_initializer(self):
        if self.unit_forget_bias:
            return _ForgetBias(self.units, self.bias_initializer)
        return self.bias_initializer

    def call(self, inputs, states, training=None):
        x, state_list, _, training = self._prepare(inputs, states, training)
        if len(state_list) != 2:
            raise ValueError(f"LSTMCell '{self.name}' expects states [h, c], got "
                             f"{len(state_list)} state(s)")
        h_prev, c_prev = state_list
        xs, hs = self._gate_inputs(x, h_prev, training)
        z = self._project(xs, self.kernel, 4) + self._project(hs, self.recurrent_kernel, 4)
        if self.bias is not None:
            z = z + self.bias
        u = self.units
        i = _named(self.recurrent_activation(z[:, :u]), "input_gate")
        f = _named(self.recurrent_activation(z[:, u:2 * u]), "forget_gate")
        g = _named(self.activation(z[:, 2 * u:3 * u]), "candidate")
        o = _named(self.recurrent_activation(z[:, 3 * u:]), "output_gate")
        c = _named(f * c_prev + i * g, "c")
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_DropoutCell):
    """One step of a Gated Recurrent Unit, as ``keras.layers.GRUCell``.

    With ``reset_after=True`` (Keras 3's default; cuDNN's variant), ``bias`` is ``(2,
    3*units)``, ``b_x = bias[0]`` for the input and ``b_h = bias[1]`` for the state::

        x_z, x_r, x_h = split(x @ kernel + b_x, 3)
        h_z, h_r, h_h = split(h_prev @ recurrent_kernel + b_h, 3)
        z = recurrent_activation(x_z + h_z)          # update gate
        r = recurrent_activation(x_r + h_r)          # reset gate
        h_tilde = activation(x_h + r * h_h)          # candidate
        h = z * h_prev + (1 - z) * h_tilde

    With ``reset_after=False`` (the original GRU), ``bias`` is ``(3*units,)`` and the
    candidate is ``activation(x_h + (r * h_prev) @ recurrent_kernel[:, 2u:])``. The gates
    are side by side in the order z, r, h. ``cell(x, [h_prev])`` returns ``(h, [h])``.
    """

    _gates = 3
    _default_name = "gru_cell"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid",
                 use_bias=True, reset_after=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self.recurrent_activation = _mt_layers._activation(recurrent_activation) or \
            (lambda x: x)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def call(self, inputs, states, training=None):
        x, (h_prev,), nested, training = self._prepare(inputs, states, training)
        xs, hs = self._gate_inputs(x, h_prev, training)
        u = self.units
        mx = self._project(xs, self.kernel, 3)
        if self.bias is not None:
            mx = mx + (self.bias[0] if self.reset_after else self.bias)
        if self.reset_after:
            mh = self._project(hs, self.recurrent_kernel, 3)
            if self.bias is not None:
                mh = mh + self.bias[1]
        else:
            mh = self._project(hs, self.recurrent_kernel, 2)
        z = _named(self.recurrent_activation(mx[:, :u] + mh[:, :u]), "update_gate")
        r = _named(self.recurrent_activation(mx[:, u:2 * u] + mh[:, u:2 * u]), "reset_gate")
        if self.reset_after:
            recurrent_h = r * mh[:, 2 * u:]
        else:
            recurrent_h = math_ops.matmul(r * hs[-1], self.recurrent_kernel[:, 2 * u:])
        h_tilde = _named(self.activation(mx[:, 2 * u:] + recurrent_h), "candidate")
        h = z * h_prev + (1.0 - z) * h_tilde
        return h, ([h] if nested else h)


class StackedRNNCells(Layer):
    """Several cells as one, as ``keras.layers.StackedRNNCells`` (what ``RNN([cell1,
    cell2])`` makes): each step runs the cells one above the other; the states are the
    cells' states, in order."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        self.cells = list(cells)
        self.state_size = [s for c in self.cells for s in _sizes(c.state_size)]
        self.output_size = getattr(self.cells[-1], "output_size", None)

    def get_initial_state(self, batch_size=None):
        return [s for c in self.cells for s in _initial_state(c, batch_size, self.dtype)]

    def call(self, inputs, states, training=None):
        x, new_states, k = inputs, [], 0
        for cell in self.cells:
            n = len(_sizes(cell.state_size))
            x, cell_states = cell(x, list(states[k:k + n]), training=training)
            new_states += list(cell_states) if isinstance(cell_states, (list, tuple)) \
                else [cell_states]
            k += n
        return x, new_states


def _sizes(state_size):
    return list(state_size) if isinstance(state_size, (list, tuple)) else [state_size]


def _initial_state(cell, batch_size, dtype):
    """The cell's ``get_initial_state(batch_size=...)`` (Keras 3's call; ``dtype=`` too when
    it takes it, as tf.keras 2 passed), else zeros of each ``state_size``."""
    fn = getattr(cell, "get_initial_state", None)
    if fn is not None:
        from .layers import accepts
        kwargs = {"batch_size": batch_size}
        if accepts(fn, "dtype"):
            kwargs["dtype"] = dtype
        states = fn(**kwargs)
        return list(states) if isinstance(states, (list, tuple)) else [states]
    return [array_ops.zeros((batch_size, size), dtype) for size in _sizes(cell.state_size)]


class RNN(Layer):
    """Run a cell over the time steps of a sequence, as ``keras.layers.RNN(cell)``.

    ``cell`` is any layer with ``state_size`` (an int, or a list of ints, one per state)
    whose ``call(inputs, states)`` returns ``(output, new_states)``: a ``SimpleRNNCell``,
    ``LSTMCell``, ``GRUCell``, a ``Layer`` subclass of yours (Geron's ``LNSimpleRNNCell``), or
    a list of cells (stacked: ``StackedRNNCells``).

    ``layer(x)`` with ``x`` ``(batch, timesteps, features)`` starts from zero states (or
    ``initial_state=[...]``), calls the cell once per step in a Python loop (the tape records
    each step) and returns the last output ``(batch, units)``; every output ``(batch,
    timesteps, units)`` with ``return_sequences=True``; and ``[output] + final_states`` with
    ``return_state=True``. ``go_backwards=True`` reads the steps last to first (the sequence
    returned is then in that reversed order, as Keras). ``training`` reaches the cell
    (dropout). ``time_major=True`` (tf.keras 2's option, which "Dive into Deep Learning"
    uses; Keras 3 dropped it): inputs ``(timesteps, batch, features)`` and sequences
    returned ``(timesteps, batch, units)``.

    A call's second argument is ``initial_state`` (a Tensor or a list, one per state, as
    ``outputs, *state = layer(X, state)`` in d2l; None for zeros).

    Raises:
        ValueError: inputs that are not 3-D; a wrong number of initial states.
        ValueError: a ``mask`` whose shape is not ``(batch, timesteps)``.
        NotImplementedError: ``stateful=True`` (not in minitape).

    Masks (``mask=``, or the one that ``Embedding(mask_zero=True)`` attaches to its output:
    ``mt.keras.masking``): at a step where the mask is False the states carry over unchanged
    and the output repeats the previous one (zeros before the first real step), as Keras; so
    the last output is the last real step's. ``return_sequences=True`` passes the mask on.
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, time_major=False,
                 **kwargs):
        if stateful:
            raise NotImplementedError(
                f"{type(self).__name__}: stateful=True is not in minitape; pass the state "
                "yourself: outputs, *states = layer(x, initial_state=states) with "
                "return_state=True")
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell, dtype=getattr(cell[0], "dtype", None) if cell
                                   else None)
        if kwargs.get("dtype") is None and getattr(cell, "dtype", None) is not None:
            kwargs["dtype"] = cell.dtype   # (RNN(cell) computes in the cell's dtype)
        super().__init__(**kwargs)
        if not hasattr(cell, "state_size") or not callable(cell):
            raise TypeError(f"{type(self).__name__}: cell must be a layer with a state_size "
                            f"and a call(inputs, states), got {cell!r:.60}")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.time_major = bool(time_major)
        self.zero_output_for_mask = bool(zero_output_for_mask)

    def call(self, inputs, initial_state=None, training=None, mask=None):
        who = f"{type(self).__name__} '{self.name}'"
        x = _sequences(inputs, self.dtype, who)
        if self.time_major:   # (steps, batch, features), as tf.keras 2 (d2l's RNNs)
            x = array_ops.transpose(x, [1, 0, 2])
        batch, steps = x.shape[0], x.shape[1]
        keep = _step_mask(mask, batch, steps, who)
        if initial_state is None:
            states = _initial_state(self.cell, batch, self.dtype)
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            states = [math_ops.cast(convert_to_tensor(s), self.dtype) for s in states]
            if len(states) != len(_sizes(self.cell.state_size)):
                raise ValueError(f"{who}: initial_state has {len(states)} tensor(s), the cell "
                                 f"has {len(_sizes(self.cell.state_size))} state(s)")
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        outputs = []
        dropout_cells = [c for c in getattr(self.cell, "cells", [self.cell])
                         if isinstance(c, _DropoutCell)]
        for c in dropout_cells:   # one dropout mask per sequence, at every step
            c._keep_masks = True
        try:
            for t in order:
                kwargs = {} if training is None else {"training": training}
                output, new_states = self.cell(x[:, t, :], states, **kwargs)
                if t == order[0]:
                    self._name_cell_weights()
                new_states = list(new_states) if isinstance(new_states, (list, tuple)) \
                    else [new_states]
                if keep is not None:   # a masked step: the states carry over, and the
                    # output repeats the previous one (zeros before any; with
                    # zero_output_for_mask, zeros), as Keras
                    step = keep[:, t:t + 1]
                    previous = array_ops.zeros_like(output) if self.zero_output_for_mask \
                        or not outputs else outputs[-1]
                    output = array_ops.where(step, output, previous)
                    new_states = [array_ops.where(step, new, old)
                                  for new, old in zip(new_states, states)]
                states = new_states
                outputs.append(output)
        finally:
            for c in dropout_cells:
                c._keep_masks = False
                c.reset_dropout_mask()
        if not outputs:
            raise ValueError(f"{who}: the sequences have no time steps (shape "
                             f"{tuple(x.shape)})")
        if self.return_sequences:
            y = array_ops.stack(outputs, axis=0 if self.time_major else 1)
        else:
            y = outputs[-1]
        return [y] + states if self.return_state else y

    def compute_mask(self, inputs, mask=None):
        """The outputs' mask, as Keras's ``RNN.compute_mask``: the input's mask with
        ``return_sequences=True`` (one per step, as the input's), else None; with
        ``return_state=True`` a list, None for each state."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(_sizes(self.cell.state_size))
        return output_mask

    def _name_cell_weights(self):
        # Keras's paths: "lstm/lstm_cell/kernel" (the cell's weights exist after its first call)
        for v in self.cell.weights:
            if not getattr(v, "path", "").startswith(self.name + "/"):
                v.path = f"{self.name}/{v.path}"


def _step_mask(mask, batch, steps, who):
    """A call's ``mask=`` (Keras's: a bool ``(batch, timesteps)``, True for the real steps;
    a list: the first input's) as a bool Tensor, or None."""
    if isinstance(mask, (list, tuple)):
        mask = mask[0]
    if mask is None:
        return None
    keep = convert_to_tensor(mask)
    if keep.dtype != np.bool_:
        keep = math_ops.cast(keep, np.bool_)
    if tuple(keep.shape) != (batch, steps):
        raise ValueError(f"{who}: mask must have shape (batch, timesteps) = {(batch, steps)} "
                         f"(True for the real steps), got shape {tuple(keep.shape)}")
    return keep


def _recurrent_layer(cls, cell_cls, units, return_sequences, return_state, go_backwards,
                     stateful, unroll, kwargs):
    """(What SimpleRNN, LSTM and GRU share: the layer's own keywords, the rest to the cell.)"""
    layer_keys = ("name", "trainable", "input_shape", "input_dim", "batch_input_shape",
                  "batch_size", "activity_regularizer", "time_major")
    layer_kwargs = {k: kwargs.pop(k) for k in layer_keys if k in kwargs}
    if "dtype" in kwargs:
        layer_kwargs["dtype"] = kwargs["dtype"]
    if layer_kwargs.get("name") is None:
        layer_kwargs["name"] = _mt_layers._default_name(_snake(cls.__name__))
    cell = cell_cls(units, name=f"{_snake(cls.__name__)}_cell", **kwargs)
    return cell, dict(return_sequences=return_sequences, return_state=return_state,
                      go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                      **layer_kwargs)


def _snake(name):
    return {"SimpleRNN": "simple_rnn", "LSTM": "lstm", "GRU": "gru"}.get(name, name.lower())


class SimpleRNN(RNN):
    """A fully-connected RNN over a sequence, as ``keras.layers.SimpleRNN``:
    ``RNN(SimpleRNNCell(units, ...))`` (see both).

    ``SimpleRNN(units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
    recurrent_initializer="orthogonal", bias_initializer="zeros", dropout=0.0,
    recurrent_dropout=0.0, return_sequences=False, return_state=False, go_backwards=False)``;
    weights ``[kernel (input_dim, units), recurrent_kernel (units, units), bias (units,)]``.

    >>> import minitape as mt
    >>> layer = mt.keras.layers.SimpleRNN(3, return_sequences=True)
    >>> layer(mt.zeros((2, 5, 1))).shape
    (2, 5, 3)
    """

    _cell_class = SimpleRNNCell

    def __init__(self, units, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, **kwargs):
        cell, options = _recurrent_layer(type(self), self._cell_class, units, return_sequences,
                                         return_state, go_backwards, stateful, unroll, kwargs)
        super().__init__(cell, **options)

    @property
    def units(self):
        return self.cell.units


class LSTM(SimpleRNN):
    """A Long Short-Term Memory layer (Hochreiter and Schmidhuber 1997), as
    ``keras.layers.LSTM``: ``RNN(LSTMCell(units, ...))`` (see ``LSTMCell`` for the
    equations and the weights' layout, i, f, c, o). ``return_state=True`` returns
    ``[output, h, c]``.

    >>> import minitape as mt
    >>> output, h, c = mt.keras.layers.LSTM(4, return_state=True)(mt.zeros((2, 3, 5)))
    >>> output.shape, h.shape, c.shape
    ((2, 4), (2, 4), (2, 4))
    """

    _cell_class = LSTMCell


class GRU(SimpleRNN):
    """A Gated Recurrent Unit layer (Cho et al. 2014), as ``keras.layers.GRU``:
    ``RNN(GRUCell(units, ...))`` (see ``GRUCell`` for the equations, ``reset_after`` and the
    weights' layout, z, r, h)."""

    _cell_class = GRUCell


class Bidirectional(Layer):
    """Run a recurrent layer forwards and a copy of it backwards, as
    ``keras.layers.Bidirectional``.

    The backward layer is ``layer``'s class made from ``layer.get_config()`` with
    ``go_backwards`` flipped (its own weights), or ``backward_layer``. The two outputs are
    merged by ``merge_mode``: ``"concat"`` (the default: ``(batch, 2*units)``), ``"sum"``,
    ``"mul"``, ``"ave"``, or ``None`` (a list of both). With ``return_sequences=True`` the
    backward outputs are put back in forward time order first, as Keras. Weights: the
    forward layer's, then the backward layer's (``weights=`` sets them at the first call).
    A layer made with ``return_state=True`` gives ``[output, *forward_states,
    *backward_states]`` (Geron's encoder: ``outputs, *state = encoder(x)``, LSTM states
    ``h_fwd, c_fwd, h_bwd, c_bwd``). A mask reaches both layers; with it, the sequences
    returned are zeros at the masked steps (Keras sets ``zero_output_for_mask`` so).

    Raises:
        ValueError: an unknown ``merge_mode``.
        TypeError: ``layer`` is not a recurrent layer.
    """

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None,
                 **kwargs):
        if merge_mode not in ("concat", "sum", "mul", "ave", None):
            raise ValueError(f"Bidirectional: merge_mode must be 'concat', 'sum', 'mul', 'ave' "
                             f"or None, got {merge_mode!r}")
        if not isinstance(layer, RNN):
            raise TypeError(f"Bidirectional wraps a recurrent layer (SimpleRNN, LSTM, GRU, "
                            f"RNN), got {layer!r:.60}")
        super().__init__(**kwargs)
        if backward_layer is None:
            config = layer.get_config()
            config["go_backwards"] = not layer.go_backwards
            config["name"] = "backward_" + layer.name
            backward_layer = type(layer).from_config(config)
        layer.name = "forward_" + layer.name
        self.forward_layer = layer
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self._initial_weights = None if weights is None else list(weights)
        # As Keras: with a mask, the sequences returned are zeros at the masked steps
        for direction in (self.forward_layer, self.backward_layer):
            direction.zero_output_for_mask = direction.return_sequences

    def compute_mask(self, inputs, mask=None):
        """The input's mask with ``return_sequences=True`` (a pair with ``merge_mode=None``),
        else None; None for each state with ``return_state=True``, as Keras."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_sequences and self.merge_mode is None:
            output_mask = [mask, mask]
        if self.return_state:
            states = 2 * len(_sizes(self.forward_layer.cell.state_size))
            return ([output_mask] if not isinstance(output_mask, list) else output_mask) + \
                [None] * states
        return output_mask

    def call(self, inputs, training=None, mask=None):
        kwargs = {} if training is None else {"training": training}
        if mask is not None:   # (both directions skip the masked steps)
            kwargs["mask"] = mask
        y = self.forward_layer(inputs, **kwargs)
        y_rev = self.backward_layer(inputs, **kwargs)
        if self._initial_weights is not None:   # (weights=: set once both layers exist)
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)
            y = self.forward_layer(inputs, **kwargs)
            y_rev = self.backward_layer(inputs, **kwargs)
        if self.return_state:   # [output, *states]: the merged output, then both layers' states
            (y, *states), (y_rev, *states_rev) = y, y_rev
            return [self._merge(y, y_rev)] + states + states_rev
        return self._merge(y, y_rev)

    def _merge(self, y, y_rev):
        if self.return_sequences:
            y_rev = array_ops.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            return array_ops.concat([y, y_rev], axis=-1)
        if self.merge_mode == "sum":
            return y + y_rev
        if self.merge_mode == "mul":
            return y * y_rev
        if self.merge_mode == "ave":
            return (y + y_rev) / 2.0
        return [y, y_rev]


class TimeDistributed(Layer):
    """Apply ``layer`` to every time step, as ``keras.layers.TimeDistributed``.

    ``(batch, timesteps, ...)`` is reshaped to ``(batch * timesteps, ...)``, given to
    ``layer`` (the same weights at every step) and reshaped back to ``(batch, timesteps,
    ...)``. (A ``Dense`` already acts on the last axis, so ``TimeDistributed(Dense(n))`` is
    ``Dense(n)``, as Geron notes.)

    Raises:
        ValueError: inputs with fewer than 3 axes.
    """

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        if not callable(layer):
            raise TypeError(f"TimeDistributed wraps a layer, got {layer!r:.60}")
        self.layer = layer

    def call(self, inputs, training=None):
        x = convert_to_tensor(inputs, what=f"TimeDistributed '{self.name}'")
        if x.ndim < 3:
            raise ValueError(f"TimeDistributed '{self.name}' expects inputs of shape (batch, "
                             f"timesteps, ...), got shape {tuple(x.shape)}")
        batch, steps = x.shape[0], x.shape[1]
        flat = array_ops.reshape(x, (batch * steps,) + tuple(x.shape[2:]))
        kwargs = {} if training is None or not _accepts_training(self.layer) \
            else {"training": training}
        y = self.layer(flat, **kwargs)
        return array_ops.reshape(y, (batch, steps) + tuple(y.shape[1:]))


def _accepts_training(layer):
    from .layers import accepts
    return accepts(layer, "training") or accepts(getattr(layer, "call", None), "training")


class Conv1D(Layer):
    """1-D convolution over time, as ``keras.layers.Conv1D`` (Geron's and Chollet's time
    series; WaveNet with ``padding="causal"`` and ``dilation_rate``).

    Inputs ``(batch, steps, channels)``; ``kernel`` ``(kernel_size, channels, filters)``
    (glorot_uniform), ``bias`` ``(filters,)`` (zeros); Keras's layout. Computed as the sum
    over the kernel's taps ``k`` of ``x[:, k*dilation_rate :: strides, :] @ kernel[k]``
    (slices and matmuls: the tape records each tap), after padding:

    - ``"valid"``: none; ``steps_out = (steps - (kernel_size-1)*dilation_rate - 1)
      // strides + 1``;
    - ``"same"``: ``steps_out = ceil(steps / strides)``, zeros split as TensorFlow does
      (the extra one after);
    - ``"causal"``: ``(kernel_size-1)*dilation_rate`` zeros before, so the output at step
      ``t`` sees only steps up to ``t``.

    Raises:
        ValueError: an unknown ``padding``; inputs not 3-D; a sequence shorter than the
            kernel's span with ``"valid"``.
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        if kwargs.get("name") is None:
            kwargs["name"] = _mt_layers._default_name("conv1d")
        super().__init__(**kwargs)
        self.filters = _mt_layers._positive_int(filters, "Conv1D", "filters")
        self.kernel_size = _mt_layers._positive_int(_one(kernel_size), "Conv1D", "kernel_size")
        self.strides = _mt_layers._positive_int(_one(strides), "Conv1D", "strides")
        self.dilation_rate = _mt_layers._positive_int(_one(dilation_rate), "Conv1D",
                                                      "dilation_rate")
        if str(padding).lower() not in ("valid", "same", "causal"):
            raise ValueError(f"Conv1D: padding must be 'valid', 'same' or 'causal', got "
                             f"{padding!r}")
        if data_format not in (None, "channels_last") or groups != 1:
            raise NotImplementedError("Conv1D: only data_format='channels_last' and groups=1 "
                                      "are in minitape")
        self.padding = str(padding).lower()
        self.activation = _mt_layers._activation(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self._regularizers = (kernel_regularizer, bias_regularizer)
        self._constraints = (kernel_constraint, bias_constraint)

    def build(self, input_shape):
        channels = _mt_layers._last_dim(input_shape, "Conv1D")
        self.kernel = self.add_weight(
            shape=(self.kernel_size, channels, self.filters), initializer=self.kernel_initializer,
            name="kernel", regularizer=self._regularizers[0], constraint=self._constraints[0])
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(self.filters,), initializer=self.bias_initializer, name="bias",
                regularizer=self._regularizers[1], constraint=self._constraints[1])
        self.built = True

    def call(self, inputs):
        who = f"Conv1D '{self.name}'"
        x = _sequences(inputs, self.dtype, who)
        steps, span = x.shape[1], (self.kernel_size - 1) * self.dilation_rate + 1
        if self.padding == "causal":
            before, after = span - 1, 0
        elif self.padding == "same":
            out = -(-steps // self.strides)
            total = max((out - 1) * self.strides + span - steps, 0)
            before, after = total // 2, total - total // 2
        else:
            before = after = 0
        if before or after:
            x = array_ops.pad(x, [[0, 0], [before, after], [0, 0]])
        n = x.shape[1]
        if n < span:
            raise ValueError(f"{who}: the sequences have {steps} steps, fewer than the "
                             f"kernel's span {span} (kernel_size={self.kernel_size}, "
                             f"dilation_rate={self.dilation_rate}); use padding='same' or "
                             "'causal', or longer sequences")
        out = (n - span) // self.strides + 1
        y = None
        for k in range(self.kernel_size):
            start = k * self.dilation_rate
            tap = x[:, start:start + (out - 1) * self.strides + 1:self.strides, :]
            term = math_ops.matmul(tap, self.kernel[k])
            y = term if y is None else y + term
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y) if self.activation is not None else y


def _one(value):
    """Keras's ``kernel_size=3`` or ``(3,)``: the int."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        return value[0]
    return value


class MaxPooling1D(Layer):
    """The maximum of each window of ``pool_size`` steps, as ``keras.layers.MaxPooling1D``
    (Chollet's chapter 10 convnet for time series).

    Inputs ``(batch, steps, channels)``; ``strides`` defaults to ``pool_size`` (windows side
    by side). ``"valid"``: ``steps_out = (steps - pool_size) // strides + 1``; ``"same"``:
    ``ceil(steps / strides)``, the windows at the ends seeing only the steps there (as
    TensorFlow). Computed as the elementwise maximum of the window's strided slices. No
    weights.

    Raises:
        ValueError: an unknown ``padding``; inputs not 3-D; fewer steps than ``pool_size``
            with ``"valid"``.
    """

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None,
                 **kwargs):
        if kwargs.get("name") is None:
            kwargs["name"] = _mt_layers._default_name("max_pooling1d")
        super().__init__(**kwargs)
        self.pool_size = _mt_layers._positive_int(_one(pool_size), "MaxPooling1D", "pool_size")
        self.strides = self.pool_size if strides is None else \
            _mt_layers._positive_int(_one(strides), "MaxPooling1D", "strides")
        if str(padding).lower() not in ("valid", "same"):
            raise ValueError(f"MaxPooling1D: padding must be 'valid' or 'same', got {padding!r}")
        if data_format not in (None, "channels_last"):
            raise NotImplementedError("MaxPooling1D: only data_format='channels_last' is in "
                                      "minitape")
        self.padding = str(padding).lower()

    def call(self, inputs):
        who = f"MaxPooling1D '{self.name}'"
        x = math_ops.floating(inputs, who)
        if x.ndim != 3:
            raise ValueError(f"{who} expects inputs of shape (batch, steps, channels), got shape "
                             f"{tuple(x.shape)}")
        steps, p, s = x.shape[1], self.pool_size, self.strides
        if self.padding == "same":   # -inf around: a window at an end takes the max inside
            out = -(-steps // s)
            total = max((out - 1) * s + p - steps, 0)
            if total:
                x = array_ops.pad(x, [[0, 0], [total // 2, total - total // 2], [0, 0]],
                                  constant_values=-np.inf)
        else:
            if steps < p:
                raise ValueError(f"{who}: the sequences have {steps} steps, fewer than "
                                 f"pool_size={p}; use padding='same' or longer sequences")
            out = (steps - p) // s + 1
        y = None
        for k in range(p):   # the k-th step of every window, a strided slice
            tap = x[:, k:k + (out - 1) * s + 1:s, :]
            y = tap if y is None else math_ops.maximum(y, tap)
        return y


class _GlobalPooling1D(Layer):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        if kwargs.get("name") is None:
            kwargs["name"] = _mt_layers._default_name(self._default_name)
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise NotImplementedError(f"{type(self).__name__}: only "
                                      "data_format='channels_last' is in minitape")
        self.keepdims = bool(keepdims)

    def call(self, inputs):
        who = f"{type(self).__name__} '{self.name}'"
        x = convert_to_tensor(inputs, what=who)
        if x.ndim != 3:
            raise ValueError(f"{who} expects inputs of shape (batch, steps, channels), got shape "
                             f"{tuple(x.shape)}")
        return self._reduce(x, axis=1, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean over the steps, ``(batch, steps, channels)`` -> ``(batch, channels)``
    (``(batch, 1, channels)`` with ``keepdims=True``), as
    ``keras.layers.GlobalAveragePooling1D``. No weights."""

    _default_name = "global_average_pooling1d"

    @staticmethod
    def _reduce(x, axis, keepdims):
        from ..ops import reduction_ops
        return reduction_ops.reduce_mean(x, axis=axis, keepdims=keepdims)


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over the steps, ``(batch, steps, channels)`` -> ``(batch, channels)``, as
    ``keras.layers.GlobalMaxPooling1D``. No weights."""

    _default_name = "global_max_pooling1d"

    @staticmethod
    def _reduce(x, axis, keepdims):
        from ..ops import reduction_ops
        return reduction_ops.reduce_max(x, axis=axis, keepdims=keepdims)


# Keras's other names for them
MaxPool1D, GlobalAvgPool1D, GlobalMaxPool1D = MaxPooling1D, GlobalAveragePooling1D, \
    GlobalMaxPooling1D
