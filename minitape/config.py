"""``mt.config`` and ``mt.device``: minitape runs on the CPU, and says so; and the one switch
of ``mt.viz``'s record of every tape, ``record_source_lines``.

As ``tf.config.list_physical_devices`` and ``tf.device``: code written for TensorFlow that
asks which devices exist, or places work on ``"/CPU:0"`` or ``"GPU:0"``, runs unchanged.
A device minitape does not have (a GPU, a TPU) falls back to the CPU, as TensorFlow's soft
device placement (on by default in TensorFlow 2) does on a machine without one.
"""

from __future__ import annotations

import collections
import re

from . import errors

__all__ = ["list_physical_devices", "list_logical_devices", "device", "PhysicalDevice",
           "LogicalDevice", "run_functions_eagerly", "functions_run_eagerly",
           "record_source_lines", "source_lines_recorded", "experimental"]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])

# A device name as TensorFlow's ``DeviceSpec`` parses it: ``/job:x/replica:0/task:0`` parts,
# then a device ``[/][device:]TYPE[:index]`` (``CPU``, ``gpu:0``, ``/device:GPU:1``, ...).
_DEVICE = re.compile(r"^(/job:[^/]+)?(/replica:\d+)?(/task:\d+)?"
                     r"(/?(device:)?[A-Za-z_]+(:(\d+|\*))?)?$")


def list_physical_devices(device_type=None):
    """The devices minitape can use: one CPU, as ``tf.config.list_physical_devices``.

    >>> import minitape as mt
    >>> mt.config.list_physical_devices()
    [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]
    >>> mt.config.list_physical_devices("GPU")
    []
    """
    cpu = PhysicalDevice("/physical_device:CPU:0", "CPU")
    return [cpu] if device_type is None or str(device_type).upper() == "CPU" else []


def list_logical_devices(device_type=None):
    """As ``list_physical_devices``, with TensorFlow's logical name ``/device:CPU:0``."""
    return [LogicalDevice("/device:CPU:0", d.device_type)
            for d in list_physical_devices(device_type)]


class experimental:  # noqa: N801 (TensorFlow's name: tf.config.experimental)
    """``tf.config.experimental``, the older home of the device functions, which "Dive into
    Deep Learning" uses (``len(tf.config.experimental.list_physical_devices('GPU'))`` is its
    ``num_gpus()``: 0 here, as with TensorFlow on a machine without a GPU).

    ``list_physical_devices`` and ``list_logical_devices`` are ``mt.config``'s;
    ``set_memory_growth`` / ``get_memory_growth`` raise TensorFlow's ``ValueError`` for the
    CPU, the one device there is (the usual loop over the GPUs runs zero times).

    >>> import minitape as mt
    >>> mt.config.experimental.list_physical_devices("GPU")
    []
    """

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)

    @staticmethod
    def set_memory_growth(device, enable):
        raise ValueError(f"Cannot set memory growth on non-GPU devices (got {device!r}); "
                         "minitape has only the CPU, whose memory needs no setting")

    @staticmethod
    def get_memory_growth(device):
        raise ValueError(f"Cannot get memory growth on non-GPU devices (got {device!r}); "
                         "minitape has only the CPU")


class device:  # noqa: N801 (TensorFlow's name: mt.device)
    """Place the operations of a ``with`` block on a device, as ``tf.device``.

    minitape has one device, the CPU, and every op runs there. Any device name TensorFlow
    accepts is accepted: ``"CPU"``, ``"/CPU:0"``, ``"/device:CPU:0"`` (with or without a
    ``/job:.../task:...`` prefix), ``None``, and also ``"GPU:0"`` or ``"/TPU:0"``, which fall
    back to the CPU as TensorFlow's soft device placement does when the device is missing
    (``mt.config.list_physical_devices("GPU")`` is ``[]``). The block changes nothing.

    Raises:
        mt.errors.InvalidArgumentError (a ``ValueError``): a string that is not a device
            name (``"my gpu"``).
        TypeError: a device that is neither a str nor None.

    >>> import minitape as mt
    >>> with mt.device("GPU:0"):      # no GPU here: the CPU computes it, as in TensorFlow
    ...     y = mt.constant(2.0) * 3.0
    >>> float(y)
    6.0
    """

    def __init__(self, device_name):
        if device_name is not None and not isinstance(device_name, str):
            raise TypeError(f"mt.device expects a device name such as '/CPU:0' (a str) or "
                            f"None, got {type(device_name).__name__} {device_name!r:.40}")
        if device_name and not _DEVICE.match(device_name):
            raise errors.InvalidArgumentError(
                None, None,
                f"mt.device({device_name!r}): not a device name; write it as TensorFlow does, "
                "e.g. '/CPU:0' or '/device:GPU:0' (minitape runs every op on the CPU)")
        self.name = device_name
        # (TensorFlow's device context keeps the name as given in ``_device_name``, and "Dive
        # into Deep Learning"'s ``train_ch6`` reads it there: ``device._device_name``.)
        self._device_name = device_name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<mt.device {self.name!r}: every op runs on the CPU>"


_RUN_EAGERLY = True


def run_functions_eagerly(run_eagerly):
    """Accepted, as ``tf.config.run_functions_eagerly``; changes nothing.

    minitape always runs ``mt.function``s eagerly (it has no graphs), whatever is passed here;
    TensorFlow's guides switch this on and off around their examples.
    """
    return None


def functions_run_eagerly():
    """Always True: ``mt.function`` runs the Python function on every call."""
    return _RUN_EAGERLY


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)


def record_source_lines(enabled=True):
    """Switch on (or off) ``mt.viz``'s record of every new tape: the learner's names and
    source lines, small values, Module calls and the last backward pass.

    With it (the default, in notebooks and scripts alike), each new ``GradientTape`` attaches
    ``mt.viz``'s observer (``minitape/viz/record.py``) from its first op, and constants and
    Variables note where the code made them, so drawings, the player, ``explain`` and
    ``check_tape`` name tensors as the code does (``y`` for ``y = x * x``) and show each op's
    line. Without it the engine does no work for the tools, and a tape is drawn with shapes
    and dtypes only. (minitape's own; TensorFlow has no such setting.)

    Args:
        enabled: True or False.

    Raises:
        TypeError: ``enabled`` is not a bool.

    >>> import minitape as mt
    >>> was = mt.config.source_lines_recorded()
    >>> mt.config.record_source_lines(True)
    >>> mt.config.source_lines_recorded()
    True
    >>> mt.config.record_source_lines(was)
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"record_source_lines expects True or False, got {enabled!r}")
    from .engine import tape, tensor
    if enabled and _attach_record not in tape.observer_factories:
        tape.observer_factories.append(_attach_record)
    elif not enabled and _attach_record in tape.observer_factories:
        tape.observer_factories.remove(_attach_record)
    tensor.on_creation = _note_creation if enabled else None
    tensor.on_leaving = _note_leaving if enabled else None


def source_lines_recorded():
    """True if new tapes get ``mt.viz``'s record (see ``record_source_lines``)."""
    from .engine import tape
    return _attach_record in tape.observer_factories


# (These import mt.viz's record on first use, so that ``import minitape`` stays light.)
def _attach_record(tape):
    from .viz.record import attach
    return attach(tape)


def _note_creation(tensor):
    from .viz.record import note_creation
    note_creation(tensor)


def _note_leaving(tensor, frame):
    from .viz.record import note_leaving
    note_leaving(tensor, frame)
