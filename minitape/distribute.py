"""``mt.distribute``: the strategies of ``tf.distribute`` as TensorFlow's CPU build runs them on
a machine with one CPU: one replica, and ``strategy.scope()`` changes nothing.

"Dive into Deep Learning" (section 6.7, "GPUs") makes a model inside
``tf.distribute.MirroredStrategy().scope()``; with no GPU, TensorFlow mirrors over the one CPU
(``num_replicas_in_sync == 1``) and the model's Variables live on ``/device:CPU:0``. minitape
has one device, the CPU (see ``mt.config``), so a strategy here is that case: code written for
one runs unchanged, computing what it computes on a machine without GPUs.
"""

from __future__ import annotations

from . import config

__all__ = ["Strategy", "MirroredStrategy", "OneDeviceStrategy", "get_strategy",
           "has_strategy", "ReduceOp"]


class ReduceOp:
    """How ``Strategy.reduce`` combines the replicas' values, as ``tf.distribute.ReduceOp``."""

    SUM = "SUM"
    MEAN = "MEAN"


_CURRENT = []   # the strategies whose scope() is open, innermost last


class _Scope:
    def __init__(self, strategy):
        self.strategy = strategy

    def __enter__(self):
        _CURRENT.append(self.strategy)
        return self.strategy

    def __exit__(self, *exc):
        _CURRENT.pop()
        return False


class Strategy:
    """One replica on the CPU, as a ``tf.distribute.Strategy`` on a machine with one CPU.

    ``scope()`` is a context manager (Variables and models made inside are made as usual);
    ``num_replicas_in_sync`` is 1; ``run(fn, args, kwargs)`` calls ``fn`` once;
    ``reduce(op, value, axis)`` returns ``value`` (``axis=None``: one replica's value is the
    sum and the mean), or its sum or mean over ``axis``; ``experimental_distribute_dataset``
    returns the dataset.
    """

    def __init__(self, devices=None):
        names = [devices] if isinstance(devices, str) else list(devices or ["/CPU:0"])
        for name in names:
            config.device(name)   # (a string that is not a device name fails here)
        self.devices = ("/job:localhost/replica:0/task:0/device:CPU:0",)

    @property
    def num_replicas_in_sync(self):
        return 1

    def scope(self):
        return _Scope(self)

    def run(self, fn, args=(), kwargs=None):
        return fn(*args, **(kwargs or {}))

    def reduce(self, reduce_op, value, axis=None):
        if axis is None:
            return value
        from .ops import reduction_ops
        op = str(getattr(reduce_op, "value", reduce_op)).upper()
        if op not in (ReduceOp.SUM, ReduceOp.MEAN):
            raise ValueError(f"reduce: reduce_op must be tf.distribute.ReduceOp.SUM or MEAN, got "
                             f"{reduce_op!r}")
        fn = reduction_ops.reduce_sum if op == ReduceOp.SUM else reduction_ops.reduce_mean
        return fn(value, axis=axis)

    def experimental_distribute_dataset(self, dataset, options=None):
        return dataset

    def __repr__(self):
        return f"<mt.distribute.{type(self).__name__} on {self.devices[0]}>"


class MirroredStrategy(Strategy):
    """``tf.distribute.MirroredStrategy`` on a machine without GPUs: one replica, on the CPU.

    ``devices`` may name any device (``["/GPU:0", "/GPU:1"]``): as ``mt.device``, a device
    minitape lacks falls back to the CPU, and there is still one replica.

    >>> import minitape as mt
    >>> strategy = mt.distribute.MirroredStrategy()
    >>> with strategy.scope():
    ...     v = mt.Variable(1.0)
    >>> strategy.num_replicas_in_sync, v.device
    (1, '/job:localhost/replica:0/task:0/device:CPU:0')
    """

    def __init__(self, devices=None, cross_device_ops=None):
        super().__init__(devices)


class OneDeviceStrategy(Strategy):
    """``tf.distribute.OneDeviceStrategy(device)``: every op on ``device``, here the CPU."""

    def __init__(self, device):
        super().__init__([device])


_DEFAULT = Strategy()


def get_strategy():
    """The strategy whose ``scope()`` is open, else the default one, as
    ``tf.distribute.get_strategy``."""
    return _CURRENT[-1] if _CURRENT else _DEFAULT


def has_strategy():
    """Whether a strategy's ``scope()`` is open, as ``tf.distribute.has_strategy``."""
    return bool(_CURRENT)


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
