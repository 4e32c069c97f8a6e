"""Optimizers with Keras's names, defaults and update rules: ``SGD``, ``Adam``, ``RMSprop``,
``Nadam``, ``Adagrad``, ``Adadelta``, ``Adamax``, ``AdamW``.

An optimizer turns gradients into new values for Variables::

    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

The update is arithmetic on the Variables' current values, done in NumPy and written back
with ``Variable.assign``: it is not an operation of the model, so no tape records it (as in
Keras, where ``apply_gradients`` runs outside the tape). What an optimizer remembers between
steps (the momentum of SGD, the two moving averages of Adam) lives in non-trainable Variables
of its own, one per model Variable, so ``mt.train.Checkpoint`` can save it.

The formulas are Keras 3's (``keras/src/optimizers/sgd.py``, ``adam.py``, ``rmsprop.py``,
``nadam.py``, ``adagrad.py``, ``adadelta.py``, ``adamax.py``, ``adamw.py``), written out in each
class's docstring. ``weight_decay`` (every optimizer; AdamW's default is 0.004) is Keras's decoupled
weight decay: before the update, ``w = w - w * weight_decay * lr``.

``learning_rate`` may be a number or a schedule from ``mt.optimizers.schedules`` (Keras's
``ExponentialDecay``, ``PiecewiseConstantDecay``, ``PolynomialDecay``, ``InverseTimeDecay``,
``CosineDecay``, or a ``LearningRateSchedule`` subclass), evaluated at each step.

``get(name)`` and ``Model.compile(optimizer=name)`` take Keras's names, in any case:
``"sgd"``, ``"adam"``, ``"rmsprop"``, ``"nadam"``, ``"adagrad"``, ``"adadelta"``, ``"adamax"``,
``"adamw"``.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import learning_rate_schedule as schedules
from .module import Module
from .engine.tensor import Tensor, Variable
from .ops.constant_op import constant

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Nadam", "Adagrad", "Adadelta", "Adamax",
           "AdamW", "get", "schedules"]


class Optimizer(Module):
    """What every optimizer shares: the step counter, the learning rate, the weight decay,
    ``apply_gradients``.

    Attributes:
        iterations: an int64 Variable, the number of ``apply_gradients`` calls so far.
        learning_rate: a float32 Variable; assign a number to change it between steps
            (``opt.learning_rate = 0.01``), as Keras allows. An optimizer created with a
            schedule (``mt.optimizers.schedules.ExponentialDecay(...)``, any
            ``LearningRateSchedule``) evaluates it at ``iterations`` before each update
            (step 0 for the first one, as Keras); ``learning_rate`` then reads the value
            the next update will use, a float32 Tensor, and assigning a number raises
            ``TypeError``, as Keras.
        weight_decay: None, or a number: before each update, ``w = w - w * weight_decay *
            lr`` (Keras's decoupled weight decay, ``BaseOptimizer._apply_weight_decay``).
        clipnorm, clipvalue, global_clipnorm: None, or a number (at most one of them): the
            gradients are clipped before the update, as Keras's: each gradient rescaled to an
            L2 norm of at most ``clipnorm``, each entry clipped to ``[-clipvalue,
            clipvalue]``, or all gradients rescaled together so that their global norm is at
            most ``global_clipnorm`` (Geron's chapter 11, against exploding gradients).

    Subclasses implement ``_build_slots(index, variable)`` (create their per-Variable state)
    and ``_update(index, variable, gradient, lr)`` (compute the new value in NumPy), and may
    implement ``_prepare_step()`` (once per ``apply_gradients``, before the updates).
    """

    def __init__(self, learning_rate, name, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, **kwargs):
        if "lr" in kwargs:   # (Keras 2's name; Keras 3 refuses it too)
            raise ValueError(f"{type(self).__name__}: the argument `lr` is no longer supported; "
                             f"use `learning_rate` instead: learning_rate={kwargs['lr']!r}")
        if "decay" in kwargs:
            raise ValueError(f"{type(self).__name__}: the argument `decay` is no longer "
                             "supported (Keras 2's); use a learning rate schedule instead, "
                             "e.g. learning_rate=mt.optimizers.schedules.InverseTimeDecay("
                             "0.01, decay_steps=1, decay_rate=1e-4)")
        unknown = sorted(set(kwargs) - {"use_ema", "ema_momentum", "ema_overwrite_frequency",
                                        "loss_scale_factor", "gradient_accumulation_steps",
                                        "jit_compile"})
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {unknown}; "
                            "it takes learning_rate, its own arguments, weight_decay, clipnorm, "
                            "clipvalue and global_clipnorm")
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                             f"set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                             f"global_clipnorm={global_clipnorm}")
        super().__init__(name=name)
        self.clipnorm, self.clipvalue, self.global_clipnorm = (
            None if c is None else _number(c, what)
            for c, what in ((clipnorm, "clipnorm"), (clipvalue, "clipvalue"),
                            (global_clipnorm, "global_clipnorm")))
        self.iterations = Variable(np.int64(0), trainable=False, name="iteration")
        if isinstance(learning_rate, schedules.LearningRateSchedule) or (
                callable(learning_rate) and not isinstance(learning_rate, Tensor)):
            self._learning_rate = learning_rate   # evaluated before each update
        else:
            self._learning_rate = Variable(np.float32(_number(learning_rate, "learning_rate")),
                                           trainable=False, name="learning_rate")
        self.weight_decay = None if weight_decay is None else _number(weight_decay,
                                                                      "weight_decay")
        self._slot_index = {}   # Variable id -> index of its slot Variables

    # -- the learning rate, settable as in Keras ---------------------------------------------
    @property
    def learning_rate(self):
        """The learning rate the next update uses: the float32 Variable, or, for a schedule,
        its value at ``iterations`` (a float32 Tensor), as Keras's ``learning_rate``."""
        if isinstance(self._learning_rate, Variable):
            return self._learning_rate
        return constant(np.float32(self._current_learning_rate()))

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, schedules.LearningRateSchedule) or (
                callable(value) and not isinstance(value, Tensor)):
            self._learning_rate = value
            return
        if isinstance(self._learning_rate, schedules.LearningRateSchedule):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object as its "
                "`learning_rate` constructor argument, hence its learning rate is not "
                f"settable (got {value!r:.40}). If you need the learning rate to be settable, "
                "create the optimizer with a float `learning_rate` argument.")
        value = np.float32(_number(value, "learning_rate"))
        if isinstance(self._learning_rate, Variable):
            self._learning_rate.assign(value)
        else:   # (a callable before)
            self._learning_rate = Variable(value, trainable=False, name="learning_rate")

    @property
    def lr(self):
        """The same as ``learning_rate`` (read and assign), as Keras 2's optimizers (TensorFlow
        up to 2.15) have it: "Dive into Deep Learning" prints ``model.optimizer.lr.numpy()``.
        (Keras 3 dropped this alias; ``learning_rate`` is the name to use.)"""
        return self.learning_rate

    @lr.setter
    def lr(self, value):
        self.learning_rate = value

    def _current_learning_rate(self):
        """The learning rate of the next update as a Python float (float32 precision): a
        schedule is evaluated at ``iterations`` (0 for the first update), as Keras's
        ``_get_current_learning_rate``; a callable without arguments is called."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return float(lr)
        value = lr(self.iterations) if isinstance(lr, schedules.LearningRateSchedule) else lr()
        try:
            return float(np.float32(_number(value, "learning_rate")))
        except TypeError:
            raise TypeError(f"the learning rate schedule {lr!r:.60} returned "
                            f"{type(value).__name__} {value!r:.60}; it must return a number "
                            "(a float or a scalar Tensor)") from None

    # -- one step --------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None):
        """``apply_gradients(zip(grads, trainable_variables))``, as Keras 3's
        ``optimizer.apply(grads, trainable_variables)`` (its guides' ``train_step`` writes
        ``self.optimizer.apply(gradients, trainable_vars)``).

        Args:
            grads: a list of gradients (Tensors, or None), one per Variable.
            trainable_variables: the Variables, in the same order.

        Returns:
            ``iterations`` (after the increment).

        Raises:
            ValueError: ``trainable_variables`` not given (minitape's optimizers are not
                built ahead with a list of Variables), or a list of another length than
                ``grads``; and the errors of ``apply_gradients``.
        """
        if trainable_variables is None:
            raise ValueError(f"{type(self).__name__}.apply(grads): give the Variables too, "
                             "optimizer.apply(grads, model.trainable_variables), or call "
                             "optimizer.apply_gradients(zip(grads, variables))")
        grads, trainable_variables = list(grads), list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(f"{type(self).__name__}.apply: got {len(grads)} gradients for "
                             f"{len(trainable_variables)} Variables; give one per Variable, "
                             "in the same order (tape.gradient(loss, variables) does)")
        return self.apply_gradients(zip(grads, trainable_variables))

    def apply_gradients(self, grads_and_vars):
        """Update each Variable from its gradient, then add one to ``iterations``.

        Args:
            grads_and_vars: an iterable of ``(gradient, variable)`` pairs, usually
                ``zip(grads, variables)``. A gradient has its Variable's shape and dtype.

        Returns:
            ``iterations`` (after the increment).

        A Variable with a ``constraint`` (``kernel_constraint=``, ``mt.keras.constraints``)
        is then assigned ``constraint(variable)``, as Keras 3's optimizers do.

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
        lr = self._current_learning_rate()
        grads = self._clipped([(_gradient_array(grad, var, type(self).__name__), var)
                               for grad, var in pairs if grad is not None])
        self._prepare_step()
        for g, var in grads:
            index = self._slot_index.get(var.id)
            if index is None:
                index = self._slot_index[var.id] = len(self._slot_index)
                self._build_slots(index, var)
            w = var.value   # (the read-only array itself: no copy)
            if self.weight_decay:
                w = w - w * (self.weight_decay * lr)
            var.assign(_handed_over(self._update(index, w, g, lr), var))
        for _, var in grads:   # (as Keras 3: a Variable's constraint after its update)
            if var.constraint is not None:
                var.assign(var.constraint(var))
        self.iterations.assign_add(1)
        return self.iterations

    def _clipped(self, grads):
        """``[(gradient array, Variable)]`` after Keras's ``clipnorm``, ``clipvalue`` or
        ``global_clipnorm`` (``BaseOptimizer._clip_gradients``)."""
        if self.clipvalue is not None:
            return [(np.clip(g, -self.clipvalue, self.clipvalue), v) for g, v in grads]
        if self.clipnorm is not None:
            return [(_rescaled(g, np.sqrt(np.sum(g * g)), self.clipnorm), v) for g, v in grads]
        if self.global_clipnorm is not None:
            norm = np.sqrt(sum(float(np.sum(g * g)) for g, _ in grads))
            return [(_rescaled(g, norm, self.global_clipnorm), v) for g, v in grads]
        return grads

    def _prepare_step(self):
        """Called once per ``apply_gradients``, before the Variables are updated."""

    def _slot(self, variable, name, value=0.0):
        v = Variable(np.full(variable.shape, value, variable.dtype), trainable=False, name=name)
        v.path = f"{self.name}/{name}/{variable.path}"
        return v

    def get_config(self):
        """The constructor's arguments, as Keras's ``Optimizer.get_config``."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            lr = float(lr)
        elif isinstance(lr, schedules.LearningRateSchedule):
            lr = schedules.serialize(lr)   # (as Keras: a dict that from_config reads back)
        config = {"name": self.name, "learning_rate": lr}
        for key in ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm"):
            if getattr(self, key) is not None:
                config[key] = getattr(self, key)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The optimizer ``cls(**config)``, as Keras's ``Optimizer.from_config``: a
        ``learning_rate`` dict (a serialized schedule) is rebuilt first
        (``schedules.deserialize``, with ``custom_objects``)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"],
                                                            custom_objects)
        return cls(**config)

    def __repr__(self):
        config = dict(self.get_config())
        if not isinstance(self._learning_rate, Variable):
            config["learning_rate"] = self._learning_rate
        args = ", ".join(f"{k}={v!r}" for k, v in config.items() if k != "name")
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

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None,
                 name="SGD", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
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
        v = self.momentum * slot.value - lr * g
        slot.assign(_handed_over(v, slot))
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
                 amsgrad=False, weight_decay=None, name="adam", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
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
        t = float(self.iterations) + 1.0
        m, v = m_slot.value, v_slot.value
        m = m + (g - m) * (1.0 - self.beta_1)
        v = v + (g * g - v) * (1.0 - self.beta_2)
        m_slot.assign(_handed_over(m, m_slot))
        v_slot.assign(_handed_over(v, v_slot))
        alpha = lr * np.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t)
        return w - alpha * m / (np.sqrt(v) + self.epsilon)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


class RMSprop(Optimizer):
    """Root-mean-square propagation, as ``tf.keras.optimizers.RMSprop`` (Hinton's lecture 6e).

    With ``g`` the gradient, ``v`` (and ``a``, ``m``) starting at zero (Keras 3's rules;
    ``epsilon`` is added *inside* the square root, as Keras does)::

        v = rho * v + (1 - rho) * g**2
        a = rho * a + (1 - rho) * g          (centered=True only)
        denominator = v + epsilon            (centered=True: v - a**2 + epsilon)
        increment = lr * g / sqrt(denominator)
        w = w - increment                    (momentum == 0)
        m = momentum * m + increment         (momentum > 0)
        w = w - m

    Defaults as Keras: ``learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
    centered=False``. ``Model.compile(optimizer="rmsprop")`` makes one with these defaults.

    Raises:
        TypeError: an argument that is not a number.
        ValueError: ``rho`` or ``momentum`` outside ``[0, 1]``.

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.RMSprop(learning_rate=0.01)
    >>> _ = opt.apply_gradients([(mt.constant(2.0), w)])  # 1 - 0.01 * 2 / sqrt(0.1 * 4)
    >>> round(float(w), 5)
    0.96838
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, name="rmsprop", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.rho = _fraction(rho, "rho", "RMSprop")
        self.momentum = _fraction(momentum, "momentum", "RMSprop")
        self.epsilon = _number(epsilon, "epsilon")
        self.centered = bool(centered)
        self._velocities, self._momentums, self._average_gradients = [], [], []

    def _build_slots(self, index, variable):
        self._velocities.append(self._slot(variable, "velocity"))
        if self.momentum > 0:
            self._momentums.append(self._slot(variable, "momentum"))
        if self.centered:
            self._average_gradients.append(self._slot(variable, "average_gradient"))

    def _update(self, index, w, g, lr):
        rho = self.rho
        v_slot = self._velocities[index]
        v = rho * v_slot.value + (1.0 - rho) * (g * g)
        v_slot.assign(_handed_over(v, v_slot))
        if self.centered:
            a_slot = self._average_gradients[index]
            a = rho * a_slot.value + (1.0 - rho) * g
            a_slot.assign(_handed_over(a, a_slot))
            denominator = v - a * a + self.epsilon
        else:
            denominator = v + self.epsilon
        increment = lr * g / np.sqrt(denominator)
        if self.momentum > 0:
            m_slot = self._momentums[index]
            m = self.momentum * m_slot.value + increment
            m_slot.assign(_handed_over(m, m_slot))
            return w - m
        return w - increment

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}


class Nadam(Optimizer):
    """Adam with Nesterov momentum, as ``tf.keras.optimizers.Nadam`` (Dozat, 2016).

    With ``g`` the gradient, ``t`` the step number (``iterations + 1``), ``m`` and ``v``
    starting at zero and ``u_product`` at one (Keras 3's rules, with the momentum schedule
    ``u_t = beta_1 * (1 - 0.5 * 0.96**t)``)::

        u_t = beta_1 * (1 - 0.5 * 0.96**t)
        u_next = beta_1 * (1 - 0.5 * 0.96**(t + 1))
        u_product = u_product * u_t                    (once per step, for all Variables)
        m = m + (g - m) * (1 - beta_1)
        v = v + (g**2 - v) * (1 - beta_2)
        m_hat = u_next * m / (1 - u_product * u_next) + (1 - u_t) * g / (1 - u_product)
        v_hat = v / (1 - beta_2**t)
        w = w - lr * m_hat / (sqrt(v_hat) + epsilon)

    Defaults as Keras: ``learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7``.

    Raises:
        TypeError: an argument that is not a number.

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.Nadam(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(mt.constant(4.0), w)])   # a little more than lr: the look-ahead
    >>> round(float(w), 4)
    0.8937
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, name="nadam", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_1 = _number(beta_1, "beta_1")
        self.beta_2 = _number(beta_2, "beta_2")
        self.epsilon = _number(epsilon, "epsilon")
        self._u_product = Variable(np.float64(1.0), trainable=False, name="u_product")
        self._momentums, self._velocities = [], []

    def _prepare_step(self):
        t = float(self.iterations) + 1.0
        u_t = self.beta_1 * (1.0 - 0.5 * 0.96 ** t)
        self._u_product.assign(np.float64(float(self._u_product) * u_t))

    def _build_slots(self, index, variable):
        self._momentums.append(self._slot(variable, "momentum"))
        self._velocities.append(self._slot(variable, "velocity"))

    def _update(self, index, w, g, lr):
        b1, b2 = self.beta_1, self.beta_2
        t = float(self.iterations) + 1.0
        u_t = b1 * (1.0 - 0.5 * 0.96 ** t)
        u_next = b1 * (1.0 - 0.5 * 0.96 ** (t + 1.0))
        u_product = float(self._u_product)
        m_slot, v_slot = self._momentums[index], self._velocities[index]
        m, v = m_slot.value, v_slot.value
        m = m + (g - m) * (1.0 - b1)
        v = v + (g * g - v) * (1.0 - b2)
        m_slot.assign(_handed_over(m, m_slot))
        v_slot.assign(_handed_over(v, v_slot))
        m_hat = u_next * m / (1.0 - u_product * u_next) + (1.0 - u_t) * g / (1.0 - u_product)
        v_hat = v / (1.0 - b2 ** t)
        return w - lr * m_hat / (np.sqrt(v_hat) + self.epsilon)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


class Adagrad(Optimizer):
    """Adaptive gradient, as ``tf.keras.optimizers.Adagrad`` (Duchi et al., 2011).

    With ``g`` the gradient and the accumulator ``s`` starting at
    ``initial_accumulator_value`` (Keras 3's rules; ``epsilon`` inside the square root)::

        s = s + g**2
        w = w - lr * g / sqrt(s + epsilon)

    Defaults as Keras: ``learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7``.

    Raises:
        TypeError: an argument that is not a number.
        ValueError: a negative ``initial_accumulator_value``.

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.Adagrad(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(mt.constant(3.0), w)])   # 1 - 0.1 * 3 / sqrt(0.1 + 9)
    >>> round(float(w), 5)
    0.90055
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, name="adagrad", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.initial_accumulator_value = _number(initial_accumulator_value,
                                                 "initial_accumulator_value")
        if self.initial_accumulator_value < 0:
            raise ValueError("Adagrad: initial_accumulator_value must be >= 0, got "
                             f"{initial_accumulator_value!r}")
        self.epsilon = _number(epsilon, "epsilon")
        self._accumulators = []

    def _build_slots(self, index, variable):
        self._accumulators.append(self._slot(variable, "accumulator",
                                             self.initial_accumulator_value))

    def _update(self, index, w, g, lr):
        slot = self._accumulators[index]
        s = slot.value + g * g
        slot.assign(_handed_over(s, slot))
        return w - lr * g / np.sqrt(s + self.epsilon)

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


class Adadelta(Optimizer):
    """Adagrad with moving averages and no need of a learning rate, as
    ``tf.keras.optimizers.Adadelta`` (Zeiler, 2012).

    With ``g`` the gradient and both accumulators ``s`` (of the squared gradients) and
    ``d`` (of the squared steps) starting at zero (Keras 3's rules; ``epsilon`` inside both
    square roots; ``d`` accumulates the step *before* it is scaled by ``lr``)::

        s = rho * s + (1 - rho) * g**2
        step = sqrt(d + epsilon) / sqrt(s + epsilon) * g
        d = rho * d + (1 - rho) * step**2
        w = w - lr * step

    Zeiler's algorithm is ``learning_rate=1.0``; Keras's defaults, kept here, are
    ``learning_rate=0.001, rho=0.95, epsilon=1e-7`` (so Adadelta is slow unless given a larger
    learning rate: "Dive into Deep Learning" uses 5.0).

    Raises:
        TypeError: an argument that is not a number.
        ValueError: ``rho`` outside ``[0, 1]``.

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-6)
    >>> _ = opt.apply_gradients([(mt.constant(2.0), w)])   # 1 - sqrt(1e-6) / sqrt(0.4) * 2
    >>> round(float(w), 5)
    0.99684
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None,
                 name="adadelta", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.rho = _fraction(rho, "rho", "Adadelta")
        self.epsilon = _number(epsilon, "epsilon")
        self._accumulated_grads, self._accumulated_steps = [], []

    def _build_slots(self, index, variable):
        self._accumulated_grads.append(self._slot(variable, "accumulated_grad"))
        self._accumulated_steps.append(self._slot(variable, "accumulated_delta_var"))

    def _update(self, index, w, g, lr):
        rho, eps = self.rho, self.epsilon
        s_slot, d_slot = self._accumulated_grads[index], self._accumulated_steps[index]
        s = rho * s_slot.value + (1.0 - rho) * (g * g)
        step = np.sqrt(d_slot.value + eps) / np.sqrt(s + eps) * g
        d = rho * d_slot.value + (1.0 - rho) * (step * step)
        s_slot.assign(_handed_over(s, s_slot))
        d_slot.assign(_handed_over(d, d_slot))
        return w - lr * step

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


class Adamax(Optimizer):
    """Adam with the infinity norm, as ``tf.keras.optimizers.Adamax`` (Kingma & Ba, section 7).

    With ``g`` the gradient, ``t`` the step number (``iterations + 1``), ``m`` and ``u``
    starting at zero (Keras 3's rules)::

        m = m + (g - m) * (1 - beta_1)
        u = maximum(beta_2 * u, abs(g))
        w = w - lr * m / ((1 - beta_1**t) * (u + epsilon))

    Defaults as Keras: ``learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7``.

    Raises:
        TypeError: an argument that is not a number.

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.Adamax(learning_rate=0.1)
    >>> _ = opt.apply_gradients([(mt.constant(4.0), w)])   # the first step moves by lr
    >>> round(float(w), 4)
    0.9
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=None, name="adamax", **kwargs):
        super().__init__(learning_rate, name, weight_decay, **kwargs)
        self.beta_1 = _number(beta_1, "beta_1")
        self.beta_2 = _number(beta_2, "beta_2")
        self.epsilon = _number(epsilon, "epsilon")
        self._m, self._u = [], []

    def _build_slots(self, index, variable):
        self._m.append(self._slot(variable, "momentum"))
        self._u.append(self._slot(variable, "norm"))

    def _update(self, index, w, g, lr):
        t = float(self.iterations) + 1.0
        m_slot, u_slot = self._m[index], self._u[index]
        m = m_slot.value
        m = m + (g - m) * (1.0 - self.beta_1)
        u = np.maximum(self.beta_2 * u_slot.value, np.abs(g))
        m_slot.assign(_handed_over(m, m_slot))
        u_slot.assign(_handed_over(u, u_slot))
        return w - lr * m / ((1.0 - self.beta_1 ** t) * (u + self.epsilon))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


class AdamW(Adam):
    """Adam with decoupled weight decay, as ``tf.keras.optimizers.AdamW`` (Loshchilov &
    Hutter, 2019).

    Each step first shrinks the Variable, ``w = w - w * weight_decay * lr``, then takes
    ``Adam``'s step (see ``Adam``) with the gradient computed before the shrink. Defaults as
    Keras: ``learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
    epsilon=1e-7``.

    Raises:
        ValueError: ``weight_decay=None`` (as Keras: AdamW needs a number).

    >>> import minitape as mt
    >>> w = mt.Variable(1.0)
    >>> opt = mt.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5)
    >>> _ = opt.apply_gradients([(mt.constant(4.0), w)])   # 1 - 0.05, then Adam's -0.1
    >>> round(float(w), 4)
    0.85
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name="adamw", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: "
                             "weight_decay=None (AdamW is Adam with weight decay; for none, "
                             "use mt.optimizers.Adam)")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad,
                         weight_decay=weight_decay, name=name, **kwargs)


def _rescaled(g, norm, limit):
    """``g * limit / norm`` when ``norm`` exceeds ``limit`` (same dtype), else ``g``."""
    return g if norm <= limit else (g * (limit / norm)).astype(g.dtype, copy=False)


# Keras's optimizer names (``keras.optimizers.get`` lowercases the name it is given).
_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "nadam": Nadam, "adagrad": Adagrad,
            "adadelta": Adadelta, "adamax": Adamax, "adamw": AdamW}
# Keras's other optimizers, which minitape does not implement.
_KERAS_ONLY = ("adafactor", "ftrl", "lion", "lamb", "muon", "schedulefreeadamw",
               "lossscaleoptimizer")


def get(identifier):
    """An optimizer from a name or an instance, as ``tf.keras.optimizers.get``.

    Args:
        identifier: an ``Optimizer`` (returned as it is); a Keras name in any case
            (``"sgd"``, ``"adam"``, ``"rmsprop"``, ``"nadam"``, ``"adagrad"``, ``"adadelta"``,
            ``"adamax"``, ``"adamw"``, ``"RMSprop"``...), which gives a new optimizer with Keras's
            defaults; a ``{"class_name": ..., "config": {...}}`` dict as Keras serializes
            one; or None (returns None).

    Raises:
        ValueError: an unknown name, or one of Keras's optimizers that minitape does not
            implement (``"ftrl"``, ``"lion"``, ...).
        TypeError: anything else.

    >>> import minitape as mt
    >>> opt = mt.optimizers.get("RMSprop")
    >>> type(opt).__name__, opt.rho, opt.epsilon
    ('RMSprop', 0.9, 1e-07)
    """
    if identifier is None or isinstance(identifier, Optimizer):
        return identifier
    config = {}
    if isinstance(identifier, dict) and "class_name" in identifier:
        config = dict(identifier.get("config") or {})
        identifier = identifier["class_name"]
    if isinstance(identifier, str):
        key = identifier.lower()
        if key in _BY_NAME:
            return _BY_NAME[key].from_config(config)
        names = ", ".join(repr(n) for n in _BY_NAME)
        if key in _KERAS_ONLY:
            raise ValueError(f"minitape does not implement Keras's {identifier!r} optimizer; "
                             f"it has {names}")
        raise ValueError(f"unknown optimizer {identifier!r}: pass one of {names} or an "
                         "instance such as mt.optimizers.SGD(learning_rate=0.1)")
    raise TypeError(f"expected an optimizer (e.g. mt.optimizers.Adam()) or its name ('adam'), "
                    f"got {type(identifier).__name__} {identifier!r:.60}")


def _fraction(value, what, who):
    value = _number(value, what)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{who}: {what} must be between 0 and 1, got {value!r}")
    return value


def _handed_over(array, variable):
    """``array``, a new value the optimizer computed for ``variable``, cast to its dtype and
    made ready for ``Variable.assign`` to keep without a copy: made read-only and passed as a
    read-only view of itself (``convert_to_tensor``'s rule for ``t.numpy()``). The optimizer
    keeps no other reference to it."""
    if type(array) is not np.ndarray or array.dtype != variable.dtype:
        array = np.asarray(array).astype(variable.dtype)   # (a NumPy scalar, a float64 step)
    array.setflags(write=False)
    return array.view()


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
        g = grad.numpy()   # (a read-only view; a NumPy scalar for a 0-d gradient)
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
