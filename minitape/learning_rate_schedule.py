"""``mt.optimizers.schedules`` (also ``mt.keras.optimizers.schedules``): learning rates that
change with the step, as ``keras.optimizers.schedules``.

A schedule is a function of the optimizer's step count. Give one to an optimizer as its
``learning_rate``; before each update the optimizer evaluates it at ``iterations`` (the
number of updates done so far: the first update uses step 0), as Keras does::

    lr_schedule = mt.keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate=0.01, decay_steps=20_000, decay_rate=0.1)
    optimizer = mt.keras.optimizers.SGD(learning_rate=lr_schedule)
    optimizer.learning_rate      # the rate the next update will use (a float32 Tensor)

The formulas are Keras 3's (``keras/src/optimizers/schedules/learning_rate_schedule.py``),
written out in each class's docstring and computed in float32, as Keras computes them for a
Python float ``initial_learning_rate``. Calling a schedule, ``lr_schedule(step)``, returns a
float32 Tensor of ``step``'s shape (``step``: a number, an array of steps to plot, a Tensor
or the optimizer's ``iterations`` Variable).

Subclass ``LearningRateSchedule`` for your own: define ``__call__(self, step)`` (and
``get_config`` to save it with ``model.save``).
"""

from __future__ import annotations

import math

import numpy as np

from .engine.tensor import Tensor
from .ops.constant_op import constant

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "PolynomialDecay", "InverseTimeDecay", "CosineDecay", "serialize", "deserialize"]


class LearningRateSchedule:
    """The base class of learning rate schedules, as
    ``keras.optimizers.schedules.LearningRateSchedule``.

    Subclass it and define ``__call__(self, step)``, which returns the learning rate at the
    optimizer step ``step`` (the optimizer passes its ``iterations`` Variable, an int64
    scalar; ``float(step)`` or ``mt.cast(step, mt.float32)`` turns it into a number)::

        class MyLRSchedule(mt.keras.optimizers.schedules.LearningRateSchedule):
            def __init__(self, initial_learning_rate):
                self.initial_learning_rate = initial_learning_rate
            def __call__(self, step):
                return self.initial_learning_rate / (float(step) + 1)
            def get_config(self):
                return {"initial_learning_rate": self.initial_learning_rate}

        optimizer = mt.keras.optimizers.SGD(learning_rate=MyLRSchedule(0.1))

    ``get_config`` (needed only to save the optimizer with ``model.save``) returns the
    constructor's arguments; ``from_config(config)`` is ``cls(**config)``.
    """

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        """The schedule ``cls(**config)``, from what ``get_config`` returned."""
        return cls(**config)

    def __repr__(self):
        try:
            config = self.get_config()
        except NotImplementedError:
            return f"<{type(self).__name__}>"
        args = ", ".join(f"{k}={v!r}" for k, v in config.items() if k != "name")
        return f"<{type(self).__name__} {args}>"


def _steps(step, who):
    """``step`` (a number, an array, a Tensor, a Variable) as a float32 array."""
    if isinstance(step, Tensor):
        step = step.numpy()
    try:
        array = np.asarray(step)
    except Exception:
        array = None
    if array is None or array.dtype.kind not in "iuf" or isinstance(step, (bool, np.bool_)):
        raise TypeError(f"{who}: the step must be a number (the optimizer's iterations), got "
                        f"{type(step).__name__} {step!r:.60}")
    return array.astype(np.float32)


def _positive(value, what, who):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{who}: {what} must be a number, got {type(value).__name__} "
                        f"{value!r:.60}")
    if value <= 0:
        raise ValueError(f"Argument `{what}` must be > 0. Received: {what}={value}")
    return value


def _result(value):
    return constant(np.asarray(value, np.float32))


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``, as
    ``keras.optimizers.schedules.ExponentialDecay``.

    With ``staircase=True``, ``step / decay_steps`` is rounded down (``floor``): the rate
    drops by a factor ``decay_rate`` every ``decay_steps`` steps. Computed in float32.

    Raises:
        ValueError: ``decay_steps <= 0``.

    >>> import minitape as mt
    >>> s = mt.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    >>> float(s(0)), float(s(10)), round(float(s(5)), 6)
    (0.10000000149011612, 0.05000000074505806, 0.070711)
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive(decay_steps, "decay_steps", "ExponentialDecay")
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        p = _steps(step, self.name) / np.float32(self.decay_steps)
        if self.staircase:
            p = np.floor(p)
        return _result(np.float32(self.initial_learning_rate)
                       * np.power(np.float32(self.decay_rate), p))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """A rate constant between boundaries, as ``keras.optimizers.schedules.PiecewiseConstantDecay``.

    ``values[0]`` while ``step <= boundaries[0]``, ``values[1]`` while ``boundaries[0] <
    step <= boundaries[1]``, ..., ``values[-1]`` once ``step > boundaries[-1]``.

    Raises:
        ValueError: ``len(boundaries) != len(values) - 1``.

    >>> import minitape as mt
    >>> s = mt.optimizers.schedules.PiecewiseConstantDecay([100, 200], [1.0, 0.5, 0.1])
    >>> [float(s(k)) for k in (0, 100, 101, 200, 201)]
    [1.0, 1.0, 0.5, 0.5, 0.10000000149011612]
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if not isinstance(boundaries, (list, tuple)) or not isinstance(values, (list, tuple)):
            raise TypeError("PiecewiseConstantDecay: boundaries and values must be lists, e.g. "
                            f"([100, 200], [0.1, 0.01, 0.001]), got {boundaries!r:.40} and "
                            f"{values!r:.40}")
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of "
                             f"values. Received: boundaries={boundaries} of length "
                             f"{len(boundaries)}, and values={values} of length {len(values)}.")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step):
        step = _steps(step, self.name)
        values = np.asarray(self.values, np.float32)
        bounds = np.asarray(self.boundaries, np.float32)
        # the number of boundaries that ``step`` is past (step > b): the index of its value
        index = np.sum(step[..., None] > bounds, axis=-1) if bounds.size else np.zeros(
            step.shape, np.int64)
        return _result(values[index])

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` in ``decay_steps`` steps along
    a polynomial, as ``keras.optimizers.schedules.PolynomialDecay``::

        step = min(step, decay_steps)
        (initial_learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power
            + end_learning_rate

    With ``cycle=True`` the step is not capped; ``decay_steps`` is multiplied by
    ``ceil(step / decay_steps)`` (by 1 at step 0), so the decay starts again.

    Raises:
        ValueError: ``decay_steps <= 0``.

    >>> import minitape as mt
    >>> s = mt.optimizers.schedules.PolynomialDecay(1.0, 10, end_learning_rate=0.0)
    >>> [round(float(s(k)), 6) for k in (0, 5, 10, 20)]
    [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name="PolynomialDecay"):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive(decay_steps, "decay_steps", "PolynomialDecay")
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        step = _steps(step, self.name)
        decay_steps = np.float32(self.decay_steps)
        if self.cycle:
            multiplier = np.where(step == 0, np.float32(1.0), np.ceil(step / decay_steps))
            decay_steps = decay_steps * multiplier.astype(np.float32)
        else:
            step = np.minimum(step, decay_steps)
        p = step / decay_steps
        initial, end = np.float32(self.initial_learning_rate), np.float32(self.end_learning_rate)
        return _result((initial - end) * np.power(np.float32(1.0) - p, np.float32(self.power))
                       + end)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``, as
    ``keras.optimizers.schedules.InverseTimeDecay`` (Geron's "power scheduling" with power 1).

    With ``staircase=True``, ``step / decay_steps`` is rounded down. Computed in float32.

    Raises:
        ValueError: ``decay_steps <= 0``.

    >>> import minitape as mt
    >>> s = mt.optimizers.schedules.InverseTimeDecay(0.01, decay_steps=100, decay_rate=1.0)
    >>> round(float(s(100)), 8), round(float(s(300)), 8)
    (0.005, 0.0025)
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive(decay_steps, "decay_steps", "InverseTimeDecay")
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        p = _steps(step, self.name) / np.float32(self.decay_steps)
        if self.staircase:
            p = np.floor(p)
        return _result(np.float32(self.initial_learning_rate)
                       / (np.float32(1.0) + np.float32(self.decay_rate) * p))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """A cosine decay, after an optional linear warmup, as
    ``keras.optimizers.schedules.CosineDecay`` (Loshchilov & Hutter, 2016).

    Without ``warmup_target`` (the default)::

        step = min(step, decay_steps)
        initial_learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)

    With ``warmup_target``: for ``step < warmup_steps`` the rate goes linearly from
    ``initial_learning_rate`` to ``warmup_target``,
    ``initial_learning_rate + (warmup_target - initial_learning_rate) * step /
    warmup_steps``; then the cosine decay above runs from ``warmup_target`` on
    ``step - warmup_steps`` (capped at ``decay_steps``).

    Raises:
        ValueError: ``decay_steps <= 0``.

    >>> import minitape as mt
    >>> s = mt.optimizers.schedules.CosineDecay(1.0, decay_steps=10, alpha=0.1)
    >>> [round(float(s(k)), 6) for k in (0, 5, 10, 99)]
    [1.0, 0.55, 0.1, 0.1]
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive(decay_steps, "decay_steps", "CosineDecay")
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step, decay_from):
        fraction = step / np.float32(self.decay_steps)
        cosine = np.float32(0.5) * (np.float32(1.0) + np.cos(np.float32(math.pi) * fraction))
        alpha = np.float32(self.alpha)
        return decay_from * ((np.float32(1.0) - alpha) * cosine + alpha)

    def __call__(self, step):
        step = _steps(step, self.name)
        initial = np.float32(self.initial_learning_rate)
        decay_steps = np.float32(self.decay_steps)
        if self.warmup_target is None:
            return _result(self._decay(np.minimum(step, decay_steps), initial))
        target = np.float32(self.warmup_target)
        warmup_steps = np.float32(self.warmup_steps)
        step = np.minimum(step, decay_steps + warmup_steps)
        with np.errstate(divide="ignore", invalid="ignore"):   # (warmup_steps == 0)
            warm = (target - initial) * (step / warmup_steps) + initial
        return _result(np.where(step < warmup_steps, warm,
                                self._decay(step - warmup_steps, target)))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


_CLASSES = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay,
                                          PolynomialDecay, InverseTimeDecay, CosineDecay)}


def serialize(learning_rate_schedule):
    """``{"module", "class_name", "config", "registered_name"}`` of a schedule, as
    ``keras.optimizers.schedules.serialize``.

    Raises:
        TypeError: not a ``LearningRateSchedule``.
        NotImplementedError: a custom schedule without ``get_config``.
    """
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise TypeError("schedules.serialize expects a LearningRateSchedule, got "
                        f"{type(learning_rate_schedule).__name__} {learning_rate_schedule!r:.60}")
    name = type(learning_rate_schedule).__name__
    return {"module": "keras.optimizers.schedules", "class_name": name,
            "config": learning_rate_schedule.get_config(),
            "registered_name": None if name in _CLASSES else name}


def deserialize(config, custom_objects=None):
    """The schedule that ``serialize`` described, as ``keras.optimizers.schedules.deserialize``.

    The class is looked up in ``custom_objects`` (``{"Name": class}``), then among
    minitape's own. (``load_model`` adds the classes registered with
    ``mt.keras.saving.register_keras_serializable`` to ``custom_objects``.)

    Raises:
        ValueError: an unknown class name (pass it in ``custom_objects``).
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise TypeError("schedules.deserialize expects {'class_name': ..., 'config': {...}}, "
                        f"got {config!r:.80}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"unknown learning rate schedule {name!r}; pass it as "
                         f"custom_objects={{{name!r}: {name}}} or decorate it with "
                         "@mt.keras.saving.register_keras_serializable()")
    return cls.from_config(dict(config.get("config") or {}))


def __getattr__(name):
    # Only for a name this module lacks: Keras's other schedules.
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in ("CosineDecayRestarts",):
        raise AttributeError(f"minitape does not implement keras.optimizers.schedules.{name}; "
                             f"it has {', '.join(sorted(_CLASSES))}, or subclass "
                             "LearningRateSchedule (or use the LearningRateScheduler callback)")
    raise AttributeError(f"mt.optimizers.schedules has no attribute {name!r}; it has "
                         f"{', '.join(['LearningRateSchedule'] + sorted(_CLASSES))}")
