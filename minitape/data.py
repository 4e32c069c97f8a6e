"""``mt.data.Dataset``: the small part of ``tf.data`` that a training loop uses.

``Dataset.from_tensor_slices((x, y))`` cuts arrays along their first axis into elements;
``shuffle``, ``batch``, ``repeat`` and ``take`` each return a new Dataset (the original is
unchanged), and iterating yields Tensors, as ``tf.data.Dataset`` does in eager mode. Elements
are computed lazily, one pass per iteration; nothing here is recorded on a tape (the data are
constants of the computation, as with ``tf.data``).

>>> import minitape as mt
>>> ds = mt.data.Dataset.from_tensor_slices(([1.0, 2.0, 3.0], [10, 20, 30])).batch(2)
>>> [(x.numpy().tolist(), y.numpy().tolist()) for x, y in ds]
[([1.0, 2.0], [10, 20]), ([3.0], [30])]
"""

from __future__ import annotations

import numpy as np

from .ops import random_ops
from .engine.tensor import Tensor
from .ops.constant_op import constant

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "experimental"]

AUTOTUNE = -1  # accepted where tf.data takes it (prefetch); minitape has nothing to tune
INFINITE_CARDINALITY = -1  # what ``cardinality()`` gives after ``repeat()``, as tf.data
UNKNOWN_CARDINALITY = -2  # tf.data's value for a count it cannot know (never here)


def _structure_map(fn, structure):
    if isinstance(structure, tuple):
        return tuple(_structure_map(fn, s) for s in structure)
    if isinstance(structure, dict):
        return {k: _structure_map(fn, v) for k, v in structure.items()}
    return fn(structure)


def _leaves(structure):
    if isinstance(structure, tuple):
        return [leaf for s in structure for leaf in _leaves(s)]
    if isinstance(structure, dict):
        return [leaf for s in structure.values() for leaf in _leaves(s)]
    return [structure]


class Dataset:
    """A sequence of elements (Tensors, or tuples/dicts of them), as ``tf.data.Dataset``.

    Build one with ``Dataset.from_tensor_slices``; chain ``shuffle``, ``batch``, ``repeat``,
    ``take``, ``map``; iterate with ``for``. Each method returns a new Dataset.
    """

    def __init__(self, make_iterator, length):
        # ``make_iterator()`` starts a new pass; ``length`` is the number of elements or
        # None when unknown (after ``repeat()`` without a count: infinite).
        self._make_iterator = make_iterator
        self._length = length

    @staticmethod
    def from_tensor_slices(tensors):
        """One element per index of the first axis, as ``tf.data.Dataset.from_tensor_slices``.

        Args:
            tensors: an array-like (Tensor, ndarray, list: a list is one array, as in
                TensorFlow), or a tuple or dict of them, all with the same first dimension.
                Python floats become float32, as ``mt.constant``.

        Raises:
            ValueError: the components differ in their first dimension, or one is a scalar.
        """
        arrays = _structure_map(lambda t: np.asarray(t if isinstance(t, Tensor)
                                                     else constant(t)), tensors)
        sizes = {a.shape[0] if a.ndim else None for a in _leaves(arrays)}
        if None in sizes:
            raise ValueError("from_tensor_slices: every component needs a first axis to slice, "
                             "got a scalar; wrap it in a list")
        if len(sizes) != 1:
            raise ValueError(f"from_tensor_slices: all components must have the same first "
                             f"dimension, got sizes {sorted(sizes)}")
        n = sizes.pop()

        def iterate():
            for i in range(n):
                yield _structure_map(lambda a: Tensor(np.array(a[i])), arrays)
        return Dataset(iterate, n)

    @staticmethod
    def range(*args):
        """``0, 1, ..., n - 1`` (int64 scalars), as ``tf.data.Dataset.range(start, stop, step)``."""
        values = range(*args)
        return Dataset(lambda: (Tensor(np.int64(v)) for v in values), len(values))

    def __iter__(self):
        return iter(self._make_iterator())

    def __len__(self):
        if self._length is None:
            raise TypeError("the length of an infinite Dataset (repeat() without a count) is "
                            "not defined")
        return self._length

    def cardinality(self):
        """The number of elements as a scalar int64 Tensor, as ``tf.data.Dataset.cardinality``:
        ``mt.data.INFINITE_CARDINALITY`` (-1) after ``repeat()`` without a count.

        >>> import minitape as mt
        >>> mt.data.Dataset.range(10).batch(3).cardinality().numpy()
        np.int64(4)
        """
        return Tensor(np.int64(INFINITE_CARDINALITY if self._length is None else self._length))

    def batch(self, batch_size, drop_remainder=False):
        """Stack ``batch_size`` consecutive elements into one, as ``tf.data.Dataset.batch``.

        The last batch is smaller unless ``drop_remainder=True``.
        """
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"batch: batch_size must be positive, got {batch_size}")
        source = self

        def iterate():
            chunk = []
            for element in source:
                chunk.append(element)
                if len(chunk) == batch_size:
                    yield _stack(chunk)
                    chunk = []
            if chunk and not drop_remainder:
                yield _stack(chunk)
        length = None if self._length is None else (
            self._length // batch_size if drop_remainder else -(-self._length // batch_size))
        return Dataset(iterate, length)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        """Shuffle with a buffer of ``buffer_size`` elements, as ``tf.data.Dataset.shuffle``.

        As in TensorFlow, elements are drawn at random from a buffer that is refilled from
        the input; a buffer at least as large as the dataset gives a full shuffle. Each pass
        reshuffles (unless ``reshuffle_each_iteration=False``). The random numbers come from
        ``seed``, else from ``mt.random``'s generator (``mt.random.set_seed``).
        """
        buffer_size = int(buffer_size)
        if buffer_size < 1:
            raise ValueError(f"shuffle: buffer_size must be positive, got {buffer_size}")
        source = self
        fixed = np.random.default_rng(seed).integers(2**32) if (
            seed is not None or not reshuffle_each_iteration) else None
        if fixed is None and not reshuffle_each_iteration:
            fixed = random_ops._rng(None).integers(2**32)

        def iterate():
            rng = np.random.default_rng(fixed) if fixed is not None else random_ops._rng(None)
            buffer = []
            for element in source:
                buffer.append(element)
                if len(buffer) == buffer_size:
                    yield buffer.pop(int(rng.integers(len(buffer))))
            while buffer:
                yield buffer.pop(int(rng.integers(len(buffer))))
        return Dataset(iterate, self._length)

    def repeat(self, count=None):
        """Pass over the data ``count`` times (forever when None), as ``tf.data``."""
        source = self

        def iterate():
            i = 0
            while count is None or i < count:
                yield from source
                i += 1
        return Dataset(iterate, None if count is None or self._length is None
                       else self._length * int(count))

    def take(self, count):
        """The first ``count`` elements (all of them for -1), as ``tf.data.Dataset.take``."""
        count = int(count)
        source = self

        def iterate():
            if count < 0:
                yield from source
                return
            for i, element in enumerate(source):
                if i >= count:
                    return
                yield element
        length = self._length if count < 0 else (
            count if self._length is None else min(count, self._length))
        return Dataset(iterate, length)

    def skip(self, count):
        """All but the first ``count`` elements, as ``tf.data.Dataset.skip``."""
        count = int(count)
        source = self

        def iterate():
            for i, element in enumerate(source):
                if i >= count:
                    yield element
        return Dataset(iterate, None if self._length is None else max(0, self._length - count))

    def map(self, map_func, num_parallel_calls=None):
        """Apply ``map_func`` to each element (a tuple element is passed as arguments)."""
        source = self

        def iterate():
            for element in source:
                yield map_func(*element) if isinstance(element, tuple) else map_func(element)
        return Dataset(iterate, self._length)

    def prefetch(self, buffer_size):
        """Accepted for ``tf.data`` pipelines; minitape computes eagerly, so nothing changes."""
        return self

    def cache(self, filename=""):
        """Accepted for ``tf.data`` pipelines; each pass recomputes (the data are in memory)."""
        return self

    def as_numpy_iterator(self):
        """Iterate with NumPy values instead of Tensors, as TensorFlow's method of that name."""
        for element in self:
            yield _structure_map(lambda t: t.numpy() if isinstance(t, Tensor) else t, element)

    def __repr__(self):
        n = "infinite" if self._length is None else self._length
        return f"<mt.data.Dataset elements={n}>"


class experimental:  # noqa: N801 (TensorFlow's name: tf.data.experimental)
    """``tf.data.experimental``: the function form of ``cardinality``, which "Dive into Deep
    Learning" uses (``tf.data.experimental.cardinality(data_iter).numpy()``, the number of
    batches of an epoch), and the two constants it compares with.

    >>> import minitape as mt
    >>> ds = mt.data.Dataset.from_tensor_slices([1.0, 2.0, 3.0]).batch(2)
    >>> int(mt.data.experimental.cardinality(ds))
    2
    """

    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY

    @staticmethod
    def cardinality(dataset):
        """``dataset.cardinality()``: its number of elements, a scalar int64 Tensor (-1 for an
        infinite one), as ``tf.data.experimental.cardinality``.

        Raises:
            TypeError: ``dataset`` is not an ``mt.data.Dataset``.
        """
        if not isinstance(dataset, Dataset):
            raise TypeError(f"cardinality: expected an mt.data.Dataset, got "
                            f"{type(dataset).__name__}; build one with "
                            f"mt.data.Dataset.from_tensor_slices")
        return dataset.cardinality()


def _stack(elements):
    first = elements[0]
    if isinstance(first, tuple):
        return tuple(_stack([e[i] for e in elements]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([e[k] for e in elements]) for k in first}
    return Tensor(np.stack([np.asarray(e) for e in elements]))


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
