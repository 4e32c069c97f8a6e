"""Settings for lessons and teaching notebooks: ``minitape.notebook.setup()``.

A lesson's first code cell is what a learner would write, plus one line::

    import minitape as mt
    import minitape.notebook

    mt.notebook.setup(seed=0)

``setup`` makes a notebook print the same thing on every machine and every run, so that its
stored outputs can be checked by re-running it (nbval): the seed fixes the random numbers, the
print settings drop the digits that differ between CPUs, and warnings print as one short line.
``import minitape`` does not import this module: the settings are NumPy-wide, and a program that
only uses minitape should not have its printing changed.
"""

from __future__ import annotations

import warnings

import numpy as np

from .config import record_source_lines
from .ops.random_ops import set_seed

__all__ = ["setup", "PRECISION"]

# Digits after the decimal point when an array prints. float32 holds about 7 significant digits,
# and the last one or two differ between CPUs (a matrix product sums in a different order with
# AVX2/FMA than without; NumPy's vectorized exp, tanh, ... differ in the last bit), so a lesson
# prints 5: `1.1624806` shows as `1.16248` everywhere.
PRECISION = 5


def _one_line_warning(message, category, filename, lineno, line=None):
    return f"{category.__name__}: {message}\n"


def setup(seed: int | None = 0) -> None:
    """Prepare a notebook for teaching: repeatable random numbers, printing as in the guides.

    For lessons and teaching notebooks: call it once, in the first code cell. It

    - seeds minitape's random numbers with ``seed`` (``mt.random.set_seed(seed)``; ``None``
      leaves them unseeded), so every run draws the same values;
    - asks NumPy for its 1.25 printing (``np.set_printoptions(legacy="1.25")``): NumPy 2 shows a
      bare scalar as ``np.float32(6.0)``, and the TensorFlow guides, written with NumPy 1, show
      ``6.0``;
    - prints arrays with ``PRECISION`` (5) digits after the decimal point instead of 8, because
      the last digits of a float32 result differ from one CPU to another; scalars still print
      with every digit (``0.9999546``), as NumPy's shortest exact form;
    - shows a warning as one line, ``UserWarning: message``, instead of two lines starting with a
      file name that changes every run;
    - makes sure every new tape notes the line of code that made each op
      (``mt.config.record_source_lines(True)``, the default), so drawings name tensors as
      the lesson's code does.

    The settings are process-wide (NumPy's print options, ``warnings.formatwarning``), which is
    why ``import minitape`` does not do this.

    Args:
        seed: an ``int`` for ``mt.random.set_seed``, or ``None`` to leave the seed alone.

    Raises:
        TypeError: ``seed`` is neither an ``int`` nor ``None``.

    >>> import warnings
    >>> import numpy as np
    >>> import minitape as mt
    >>> import minitape.notebook
    >>> saved = np.get_printoptions(), warnings.formatwarning
    >>> mt.notebook.setup(seed=0)
    >>> print(mt.constant([-0.20043272, 1.1624806]))
    mt.Tensor([-0.20043  1.16248], shape=(2,), dtype=float32)
    >>> print(mt.constant(0.9999546))
    mt.Tensor(0.9999546, shape=(), dtype=float32)
    >>> np.set_printoptions(**saved[0])
    >>> warnings.formatwarning = saved[1]
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"setup(seed=...) takes an int or None, got {seed!r} "
                        f"({type(seed).__name__}); pass e.g. seed=0")
    if seed is not None:
        set_seed(int(seed))
    np.set_printoptions(legacy="1.25", precision=PRECISION)
    warnings.formatwarning = _one_line_warning
    record_source_lines(True)   # drawings name tensors as the lesson's code does
