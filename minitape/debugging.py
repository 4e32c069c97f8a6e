"""``mt.debugging``: where did a NaN or an infinity come from? (as ``tf.debugging``)

Two helps, both pointing at the learner's own line of code rather than into minitape:

- ``enable_check_numerics()`` (TensorFlow's name): from then on, the first op whose output
  holds a NaN or an infinity raises ``mt.errors.InvalidArgumentError``, in the forward pass
  (``y = mt.math.log(x)`` at ``x = 0``) or in the backward pass (the gradient of an op). The
  message names the op, its inputs, and the learner's line: where the op was called, or, in
  the backward pass, the line that recorded the op whose gradient produced it.
  ``disable_check_numerics()`` switches it off. Off, it costs nothing but one test of a flag
  per op.
- NumPy's ``RuntimeWarning`` (``divide by zero encountered in log``) raised while an op
  computes is reported at the learner's line (the warning's ``filename`` and ``lineno``), not
  at the line of ``minitape/ops/math_ops.py`` that called NumPy: for a forward op, the line
  that called it; in the backward pass, the line that recorded the op whose gradient is
  being computed (when source lines are recorded: ``mt.config.record_source_lines``),
  else the line that asked for the gradient. It works through NumPy's error callback
  (``np.seterrcall``), installed when minitape is imported for the kinds NumPy warns about
  (``divide``, ``over``, ``invalid``); a NumPy setting of your own (``np.errstate``,
  ``np.seterr``) still wins. NumPy code outside minitape warns as before, at its own line
  (the message without NumPy's ufunc name: "divide by zero encountered").

Why is a *gradient* NaN? ``mt.viz.explain(tape, target, source)`` finds the step of the
backward pass that first produced it and says why.

>>> import minitape as mt
>>> mt.debugging.enable_check_numerics()
>>> try:
...     mt.math.log(mt.constant([1.0, 0.0]))
... except mt.errors.InvalidArgumentError as e:
...     print(str(e).splitlines()[0])
!!! Detected Infinity or NaN in output 0 of op "Log" (# of outputs: 1) !!!
>>> mt.debugging.disable_check_numerics()
"""

from __future__ import annotations

import linecache
import os
import sys
import types
import warnings

import numpy as np

from . import errors
from .engine import recording

__all__ = ["enable_check_numerics", "disable_check_numerics"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Raise at the first op, forward or backward, that produces a NaN or an infinity.

    As ``tf.debugging.enable_check_numerics``: every op executed from now on (in any tape or
    none, and the ops a backward pass runs) has its floating outputs checked; the first that
    holds ``nan``, ``inf`` or ``-inf`` raises ``mt.errors.InvalidArgumentError`` naming the
    op, its inputs' values and the learner's line. ``stack_height_limit`` and
    ``path_length_limit`` are accepted for TensorFlow's signature and ignored (minitape
    names one line: the learner's).
    """
    del stack_height_limit, path_length_limit
    recording.check_numerics = _CHECKER   # (the engine calls its two checks)


def disable_check_numerics():
    """Stop checking op outputs for NaN and infinity (``tf.debugging.disable_check_numerics``)."""
    recording.check_numerics = False


# -- what an op produced -----------------------------------------------------------------------

def _non_finite(value):
    """True if the ndarray (or NumPy scalar) ``value`` of a float/complex dtype holds a NaN or
    an infinity."""
    value = np.asarray(value)
    return value.dtype.kind in "fc" and not np.isfinite(value).all()


def check_outputs(op_type, inputs, outputs):
    """Called by ``record`` for every op while checking is on: raise if an output is not
    finite."""
    for k, out in enumerate(outputs):
        if _non_finite(out.numpy()):
            raise _error(f'output {k} of op "{op_type}" (# of outputs: {len(outputs)})', out,
                         inputs)


def check_gradients(op, in_grads):
    """Called by the backward walk for each step while checking is on (this module installs
    it in ``recording.check_numerics``): raise if the gradient an op sent to one of its inputs is
    not finite."""
    for k, g in enumerate(in_grads):
        if g is not None and _non_finite(g.numpy()):
            raise _error(f'the gradient of input {k} of op "{op.type}", computed in the '
                         'backward pass', g, (), op)


def _error(what, tensor, inputs, backward_op=None):
    value = np.asarray(getattr(tensor, "_value", tensor))
    if backward_op is None:
        backward_op = _op_of_backward_step()
        if backward_op is not None:    # an op that a gradient function ran
            what += f', computed in the backward pass for op "{backward_op.type}"'
    lines = [f"!!! Detected Infinity or NaN in {what} !!!",
             f"  dtype: {value.dtype.name}", f"  shape: {value.shape}",
             f"  value: {_short(value)}"]
    for k, t in enumerate(inputs):
        lines.append(f"  input {k}: {_short(t.numpy())}")
    where = _where(backward_op)
    if where:
        lines.append(f"  {where}")
    lines.append("  (mt.debugging.enable_check_numerics is on; mt.viz.explain(tape, target, "
                 "source) says why a gradient is NaN)")
    return errors.InvalidArgumentError(None, None, "\n".join(lines))


def _short(value):
    value = np.asarray(value)
    if value.size <= 8:
        return np.array2string(value, precision=4, separator=", ")
    return f"array of shape {value.shape}"


def _where(backward_op):
    """'called at file.py:12: y = mt.math.log(x)' (forward) or 'the op was recorded at ...'
    (backward; the line that asked for the gradient if the op's line was not noted)."""
    if backward_op is not None:
        from .viz.record import source_line
        location, text = source_line(_recorded_at(backward_op))
        if location:   # (no text for a program with no file: ``python -c``, stdin)
            return f"the op was recorded at {location}" + (f": {text}" if text else "")
    frame = learner_frame_of(sys._getframe(1))
    if frame is None:
        return None
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    verb = "the backward pass was asked for at" if backward_op is not None else "called at"
    from .viz.record import short_location
    return (f"{verb} {short_location(frame.f_code.co_filename, frame.f_lineno)}"
            + (f": {text}" if text else ""))


# -- the learner's frame, and the op a backward step is computing ---------------------------------

def learner_frame_of(frame):
    """The first frame, from ``frame`` outwards, whose code is not minitape's (or None)."""
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def _recorded_at(op):
    """The learner's line that recorded ``op`` (a ``(code, instruction offset)`` pair), as the
    record of the tape whose backward pass is running noted it (``mt.viz.record``), or None
    (no record: ``mt.config.record_source_lines(False)``)."""
    from .engine.tape import GradientTape
    from .viz.record import note_of
    frame = sys._getframe(1)
    while frame is not None:       # the tape: ``self`` of the frame that runs the walk
        tape = frame.f_locals.get("self")
        if isinstance(tape, GradientTape):
            note = note_of(tape, op)
            return note.origin[0] if note is not None and note.origin else None
        frame = frame.f_back
    return None


def _op_of_backward_step():
    """The recorded op whose gradient the innermost running backward walk is computing, or
    None outside a backward pass: read from the walk's own frame (its local ``op``), so the
    walk pays nothing for it."""
    from .engine.backward import backward_steps
    code = backward_steps.__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return frame.f_locals.get("op")
        frame = frame.f_back
    return None


# -- NumPy's warnings, at the learner's line -----------------------------------------------------

_OPERATORS = {"__add__": "add", "__radd__": "add", "__sub__": "subtract",
              "__rsub__": "subtract", "__mul__": "multiply", "__rmul__": "multiply",
              "__truediv__": "divide", "__rtruediv__": "divide", "__pow__": "pow",
              "__rpow__": "pow", "__neg__": "negative", "__matmul__": "matmul",
              "__rmatmul__": "matmul", "__floordiv__": "floordiv", "__rfloordiv__": "floordiv"}
_registries: dict = {}   # filename -> the warnings registry of a recorded op's file


def _numpy_error(kind, flag):
    """NumPy's error callback (``np.seterrcall``): warn as NumPy would, at the learner's line."""
    caller = sys._getframe(1)
    frame = learner_frame_of(caller)
    if frame is caller:    # NumPy called from outside minitape: NumPy's own warning
        warnings.warn(f"{kind} encountered", RuntimeWarning, stacklevel=2)
        return
    op = _op_of_backward_step()
    if op is not None:
        message = f"{kind} encountered in the gradient of {op.type}"
        from .viz.record import source_span
        span = source_span(_recorded_at(op))
        if span is not None:
            filename, line = span[0], span[1]
            registry = _registries.setdefault(filename, {})
            warnings.warn_explicit(message, RuntimeWarning, filename, line, registry=registry)
            return
    else:
        outer = caller     # the outermost minitape frame: the op the learner called
        while outer.f_back is not None and outer.f_back is not frame:
            outer = outer.f_back
        name = outer.f_code.co_name
        if name == "__call__" and "self" in outer.f_locals:   # a layer: its class
            name = type(outer.f_locals["self"]).__name__
        message = f"{kind} encountered in {_OPERATORS.get(name, name)}"
    if frame is None:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    # (No ``module_globals``: with it, ``warn_explicit`` asks the module's loader for its
    # source at once, and for a program given with ``python -c`` or on standard input that
    # loader raises ImportError. The line is read from the file, as ``warnings.warn`` does.)
    module_globals = frame.f_globals
    warnings.warn_explicit(message, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=module_globals.get("__name__"),
                           registry=module_globals.setdefault("__warningregistry__", {}))


def install_numpy_warnings():
    """Route NumPy's floating-point warnings through ``_numpy_error`` (called on import),
    for the kinds NumPy is set to warn about, unless an error callback is already set."""
    if np.geterrcall() is not None:
        return
    np.seterrcall(_numpy_error)
    np.seterr(**{kind: "call" for kind, mode in np.geterr().items()
                 if mode == "warn" and kind != "under"})


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)


# What ``enable_check_numerics`` hands the engine: ``recording.record`` calls
# ``check_outputs`` for every op, the backward walk ``check_gradients`` for every gradient.
_CHECKER = types.SimpleNamespace(check_outputs=check_outputs, check_gradients=check_gradients)
