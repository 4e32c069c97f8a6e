"""``TensorShape``: a Tensor's shape, as ``tf.TensorShape`` (TensorFlow's framework/tensor_shape).

A leaf below the engine, like ``dtypes``: it imports nothing of minitape.
"""

from __future__ import annotations

import numpy as np


class TensorShape(tuple):
    """A Tensor's shape: a tuple of ints with ``tf.TensorShape``'s methods.

    It is a tuple (``t.shape == (3, 1)``, ``t.shape[0]``, ``np.zeros(t.shape)`` all work) and
    prints as one, ``(3, 1)``, as ``print(t.shape)`` does in TensorFlow. A Tensor's sizes are
    all known (minitape runs eagerly); ``mt.TensorShape([None, 3])`` may leave one unknown.

    >>> import minitape as mt
    >>> s = mt.constant([[1], [2], [3]]).shape
    >>> s, s.as_list(), s.rank, s.num_elements()
    ((3, 1), [3, 1], 2, 3)
    """

    __slots__ = ()

    def as_list(self) -> list:
        """The sizes as a list of ints, as ``TensorShape.as_list``."""
        return list(self)

    @property
    def rank(self) -> int:
        """The number of axes."""
        return len(self)

    ndims = rank

    @property
    def dims(self) -> list:
        """The sizes as a list (TensorFlow 2 gives ints too)."""
        return list(self)

    def num_elements(self):
        """The number of elements: the product of the sizes (1 for a scalar); None when a
        size is unknown (``mt.TensorShape([None, 3])``, as a ``TensorSpec`` may have)."""
        if not self.is_fully_defined():
            return None
        return int(np.prod(self, dtype=np.int64))

    def is_fully_defined(self) -> bool:
        """Whether every size is known (always, for a Tensor's own shape)."""
        return all(d is not None for d in self)

    def is_compatible_with(self, other) -> bool:
        """Same rank and equal sizes where ``other``'s are known (``None`` matches any)."""
        other = tuple(other)
        return len(other) == len(self) and all(o is None or o == s for s, o in zip(self, other))
