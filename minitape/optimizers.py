"""Optimizers: ``SGD`` and ``Adam`` with Keras's names, defaults and update rules.

An optimizer turns gradients into new values for Variables::

    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

The update is arithmetic on the Variables' current values, done in NumPy and written back
with ``Variable.assign``: it is not an operation of the model, so no tape records it (as in
Keras, where ``apply_gradients`` runs outside the tape). What an optimizer remembers between
steps (the momentum of SGD, the two moving averages of Adam) lives in non-trainable Variables
of its own, one per model Variable, so ``mt.train.Checkpoint`` can save it.

The formulas are Keras 3's (``keras/src/optimizers/sgd.py`` and ``adam.py``), written out in
each class's docstring.
"""

from __future__ import annotations

import warnings

import numpy as np

from .module import Module
from .tensor import Tensor, Variable

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer(Module):
    """What ``SGD`` and ``Adam`` share: the step counter, the learning rate, ``apply_gradients``.

    Attributes:
        iterations: an int64 Variable, the number of ``apply_gradients`` calls so far.
        learning_rate: a float32 Variable; assign a number to change it between steps
            (``opt.learning_rate = 0.01``), as Keras allows.

    Subclasses implement ``_build_slots(index, variable)`` (create their per-Variable state)
    and ``_update(index, variable, gradient, lr)`` (compute the new value in NumPy).
    """

    def __init__(self, learning_rate, name):
        super().__init__(name=name)
        self.iterations = Variable(np.int64(0), trainable=False, name="iteration")
        self._learning_rate = Variable(np.float32(_number(learning_rate, "learning_rate")),
                                       trainable=False, name="learning_rate")
        self._slot_index = {}   # Variable id -> index of its slot Variables

    # -- the learning rate, settable as in Keras ---------------------------------------------
    @property
    def learning_rate(self):
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._learning_rate.assign(np.float32(_number(value, "learning_rate")))

    # -- one step --------------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Update each Variable from its gradient, then add one to ``iterations``.

        Args:
            grads_and_vars: an iterable of ``(gradient, variable)`` pairs, usually
                ``zip(grads, variables)``. A gradient has its Variable's shape and dtype.

        Returns:
            ``iterations`` (after the increment).

        Raises:
            ValueError: every gradient is ``None`` ("No gradients provided for any
                variable", as Keras), or a gradient's shape differs from its Variable's.
            TypeError: an entry is not a ``(gradient, Variable)`` pair.

        A pair whose gradient is ``None`` is skipped with a ``UserWarning`` naming the
        Variable, as Keras does: that Variable did not take part in computing the loss.
        """
        pairs = []
        for pair in grads_and_vars:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"{type(self).__name__}.apply_gradients expects (gradient, "
                                f"variable) pairs, e.g. zip(grads, model.trainable_variables); "
                                f"got {pair!r:.80}")
            grad, var = pair
            if not isinstance(var, Variable):
                raise TypeError(f"{type(self).__name__}.apply_gradients: the second item of each "
                                f"pair must be a Variable, got {type(var).__name__} {var!r:.60}; "
                                "pass zip(grads, variables), gradients first")
            pairs.append((grad, var))
        if not pairs or all(g is None for g, _ in pairs):
            names = [v.path for _, v in pairs]
            raise ValueError(f"No gradients provided for any variable: {names}. Check that the "
                             "loss was computed inside the GradientTape from these Variables")
        missing = [v.path for g, v in pairs if g is None]
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the "
                          "loss; they are left unchanged. Did the loss use them?", stacklevel=2)
        lr = float(self._learning_rate._value)
        for grad, var in pairs:
            if grad is None:
                continue
            g = _gradient_array(grad, var, type(self).__name__)
            index = self._slot_index.get(var._id)
            if index is None:
                index = self._slot_index[var._id] = len(self._slot_index)
                self._build_slots(index, var)
            # (``_update`` returns a new array: stored as it is, with no copy, as the slots)
            var._store(self._update(index, var._value, g, lr).astype(var.dtype, copy=False))
        self.iterations.assign(self.iterations._value + 1)
        return self.iterations

    def _slot(self, variable, name):
        v = Variable(np.zeros(variable.shape, variable.dtype), trainable=False, name=name)
        v.path = f"{self.name}/{name}/{variable.path}"
        return v

    def get_config(self):
        """The constructor's arguments, as Keras's ``Optimizer.get_config``."""
        return {"name": self.name, "learning_rate": float(self._learning_rate._value)}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items() if k != "name")
        return f"<mt.optimizers.{type(self).__name__} {args}, iterations={int(self.iterations)}>"


class SGD(Optimizer):
    """Gradient descent with optional momentum, as ``tf.keras.optimizers.SGD``.

    With ``g`` the gradient and ``lr`` the learning rate (Keras 3's rules)::

        momentum == 0:   w = w - lr * g
        momentum > 0:    v = momentum * v - lr * g           (v starts at zero)
                         w = w + v                            (nesterov=False)
                         w = w + momentum * v - lr * g        (nesterov=True)

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.SGD(learning_rate=0.1)
    >>> with mt.GradientTape() as tape:
    ...     loss = w * w
    >>> _ = opt.apply_gradients([(tape.gradient(loss, w), w)])   # w - 0.1 * 2w
    >>> w
    <mt.Variable 'Variable' shape=() dtype=float32, numpy=0.8>
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        super().__init__(learning_rate, name)
        self.momentum = _number(momentum, "momentum")
        if not 0.0 <= self.momentum <= 1.0:
            raise ValueError(f"SGD: momentum must be between 0 and 1, got {momentum!r}")
        self.nesterov = bool(nesterov)
        self._momentums = []

    def _build_slots(self, index, variable):
        if self.momentum:
            self._momentums.append(self._slot(variable, "momentum"))

    def _update(self, index, w, g, lr):
        if not self.momentum:
            return w - lr * g
        slot = self._momentums[index]
        v = self.momentum * slot._value - lr * g
        slot._store(v.astype(slot.dtype, copy=False))
        return w + self.momentum * v - lr * g if self.nesterov else w + v

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adaptive moment estimation, as ``tf.keras.optimizers.Adam`` (Kingma & Ba, 2014).

    With ``g`` the gradient, ``t`` the step number (``iterations + 1``), ``m`` and ``v``
    starting at zero (Keras 3's rules; ``epsilon`` is added to ``sqrt(v)``, outside the
    bias correction, as Keras does)::

        m = m + (g - m) * (1 - beta_1)
        v = v + (g**2 - v) * (1 - beta_2)
        alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        w = w - alpha * m / (sqrt(v) + epsilon)

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.Adam(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(mt.constant(4.0), w)])   # the first step moves by about lr
    >>> round(float(w), 4)
    0.9
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="adam"):
        super().__init__(learning_rate, name)
        self.beta_1 = _number(beta_1, "beta_1")
        self.beta_2 = _number(beta_2, "beta_2")
        self.epsilon = _number(epsilon, "epsilon")
        if amsgrad:
            raise NotImplementedError("Adam(amsgrad=True) is not implemented in minitape; "
                                      "use amsgrad=False (the default)")
        self._momentums = []
        self._velocities = []

    def _build_slots(self, index, variable):
        self._momentums.append(self._slot(variable, "m"))
        self._velocities.append(self._slot(variable, "v"))

    def _update(self, index, w, g, lr):
        m_slot, v_slot = self._momentums[index], self._velocities[index]
        t = float(self.iterations._value) + 1.0
        m = m_slot._value + (g - m_slot._value) * (1.0 - self.beta_1)
        v = v_slot._value + (g * g - v_slot._value) * (1.0 - self.beta_2)
        m_slot._store(m.astype(m_slot.dtype, copy=False))
        v_slot._store(v.astype(v_slot.dtype, copy=False))
        alpha = lr * np.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t)
        return w - alpha * m / (np.sqrt(v) + self.epsilon)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


def get(identifier):
    """An optimizer from a name (``"sgd"``, ``"adam"``) or an instance, as ``keras.optimizers.get``.

    Raises:
        ValueError: an unknown name.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in ("sgd", "adam"):
        return SGD() if identifier.lower() == "sgd" else Adam()
    raise ValueError(f"unknown optimizer {identifier!r}: pass 'sgd', 'adam' or an instance such "
                     "as mt.optimizers.SGD(learning_rate=0.1)")


def _number(value, what):
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r:.60}")
    return float(value)


def _gradient_array(grad, var, who):
    if var.dtype.kind != "f":
        raise TypeError(f"{who}.apply_gradients: Variable '{var.path}' has dtype "
                        f"{var.dtype.name}; only floating Variables can be trained")
    if isinstance(grad, Tensor):
        g = grad._value
    else:
        try:
            g = np.asarray(grad)
        except Exception:
            g = None
        if g is None or g.dtype.kind not in "fiu":
            raise TypeError(f"{who}.apply_gradients: the gradient for '{var.path}' must be a "
                            f"Tensor, got {type(grad).__name__} {grad!r:.60}")
    if g.shape != var.shape:
        raise ValueError(f"{who}.apply_gradients: the gradient for '{var.path}' has shape "
                         f"{g.shape} but the Variable has shape {var.shape}")
    return g.astype(var.dtype, copy=False)   # (only read: the gradient's own array will do)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
