"""``mt.errors``: TensorFlow's exception classes, for code that catches them.

TensorFlow raises subclasses of ``tf.errors.OpError`` from its kernels. minitape raises
Python's own exceptions (``TypeError``, ``ValueError``, ...; see the API contract), so each
class here is *also* the matching Python exception: ``except mt.errors.InvalidArgumentError``
catches what a guide expects, and ``except ValueError`` keeps working. Names and
constructor ``(node_def, op, message)`` as ``tf.errors`` (``tensorflow/python/framework/
errors_impl.py``). minitape itself raises ``NotFoundError`` for a missing checkpoint or
SavedModel, as TensorFlow does.
"""

from __future__ import annotations

import numpy as np

from .dtypes import complex_gradient_error

__all__ = [
    "OpError", "CancelledError", "UnknownError", "InvalidArgumentError",
    "DeadlineExceededError", "NotFoundError", "AlreadyExistsError", "PermissionDeniedError",
    "UnauthenticatedError", "ResourceExhaustedError", "FailedPreconditionError", "AbortedError",
    "OutOfRangeError", "UnimplementedError", "InternalError", "UnavailableError", "DataLossError",
]


class OpError(Exception):
    """The base class of TensorFlow's op errors: ``OpError(node_def, op, message)``.

    ``message`` is also the exception's text; ``node_def`` and ``op`` are kept (minitape
    has no graph nodes: they are usually None).
    """

    error_code = 2

    def __init__(self, node_def=None, op=None, message="", *args, **kwargs):
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message

    def __str__(self):
        return self.message


def _error(name, code, *bases, doc):
    cls = type(name, (OpError, *bases), {"error_code": code, "__doc__": doc})
    cls.__module__ = __name__
    return cls


CancelledError = _error("CancelledError", 1, doc="An operation was cancelled.")
UnknownError = _error("UnknownError", 2, doc="An unknown error.")
InvalidArgumentError = _error("InvalidArgumentError", 3, ValueError,
                              doc="A bad argument (also a ``ValueError``).")
DeadlineExceededError = _error("DeadlineExceededError", 4, TimeoutError,
                               doc="A deadline expired.")
NotFoundError = _error("NotFoundError", 5, FileNotFoundError,
                       doc="A file or object was not found (also a ``FileNotFoundError``).")
AlreadyExistsError = _error("AlreadyExistsError", 6, FileExistsError,
                            doc="What was to be created exists already.")
PermissionDeniedError = _error("PermissionDeniedError", 7, PermissionError,
                               doc="No permission.")
ResourceExhaustedError = _error("ResourceExhaustedError", 8, MemoryError,
                                doc="Out of memory or another resource.")
FailedPreconditionError = _error("FailedPreconditionError", 9, RuntimeError,
                                 doc="The system is not in a state for this operation.")
AbortedError = _error("AbortedError", 10, RuntimeError, doc="An operation was aborted.")
OutOfRangeError = _error("OutOfRangeError", 11, IndexError,
                         doc="Iteration went past the end (also an ``IndexError``).")
UnimplementedError = _error("UnimplementedError", 12, NotImplementedError,
                            doc="Not implemented (also a ``NotImplementedError``).")
InternalError = _error("InternalError", 13, RuntimeError, doc="An internal error.")
UnavailableError = _error("UnavailableError", 14, RuntimeError,
                          doc="A service is unavailable.")
DataLossError = _error("DataLossError", 15, ValueError, doc="Unrecoverable data corruption.")
UnauthenticatedError = _error("UnauthenticatedError", 16, PermissionError,
                              doc="No valid credentials.")


class DTypeMismatchError(InvalidArgumentError, TypeError):
    """Two Tensors of different dtypes in one op (``float32 + float64``, ``int32 * float32``).

    TensorFlow refuses them with an ``InvalidArgumentError`` ("cannot compute AddV2 as input
    #1(zero-based) was expected to be a float tensor but is a double tensor [Op:AddV2]");
    minitape's message starts with the same words and adds the fix. The exception is both
    an ``mt.errors.InvalidArgumentError`` (what TensorFlow code catches) and a
    ``TypeError`` (minitape's rule for a wrong dtype).
    """


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)


# -- the messages the engine raises with Python's own exceptions --------------------------------

def outside_minitape_error(t, what):
    """The TypeError for a target or source ``t`` that is not a minitape Tensor."""
    if isinstance(t, (np.ndarray, np.generic)):
        return TypeError(
            f"{what}: got a NumPy {type(t).__name__}, which was computed outside minitape (for "
            "example by np.mean), so no tape recorded how it was made; compute it with minitape "
            "operations (mt.reduce_mean, mt.math.sin, ...) inside the tape"
        )
    return TypeError(f"{what}: expected a minitape Tensor or Variable, got "
                     f"{type(t).__name__} {t!r:.60}")


def complex_target_error(target, what):
    """The TypeError for a complex target: minitape does not differentiate complex numbers."""
    return complex_gradient_error(what, f" (the target is a {target.dtype.name} Tensor of "
                                        f"shape {target.shape})")
