"""Jacobians: the derivative of every element of a target, by many backward passes at once.

``jacobian(tape, target, sources)`` needs one backward pass per element of the target (a
reverse-mode pass computes one row, a vector-Jacobian product). Vectorized (the default), it
runs *one* backward pass over a batch of cotangents, the rows of an identity matrix: every
gradient function carries the extra leading axis. ``experimental_use_pfor=False`` loops over
the rows instead; both give the same numbers.

``parallel_iterations`` splits the vectorized pass into several, each over at most that many
cotangents, as TensorFlow's ``pfor`` dispatches its iterations in chunks: the same numbers
with temporaries that many rows tall instead of ``n`` (1,024 rows of a ``(64, 64)`` hidden
layer's cotangents are 16 MB a temporary, 256 rows 4 MB). Without it, the Jacobian chooses
the chunk itself (``auto_chunk``: temporaries of at most ``AUTO_CHUNK_BYTES``).

``batch_jacobian`` is the same for per-example Jacobians, without the cross-example blocks.
``GradientTape.jacobian`` and ``GradientTape.batch_jacobian`` call these functions.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import complex_target_error, outside_minitape_error
from .tape import UnconnectedGradients, check_sources, pack_results
from .tensor import Tensor

# A Jacobian's rows are joined and reshaped with recorded ops, so that a tape around the call
# can differentiate the Jacobian again (a Hessian). Those ops live in ``minitape/ops``, above
# the engine, which installs them here when it loads (the end of ``ops/array_ops.py``).
reshape = transpose = stack = concat = None


def _check_parallel_iterations(parallel_iterations, what):
    """``parallel_iterations`` as an int, or None; ValueError unless None or a positive int."""
    p = parallel_iterations
    if p is None or isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p >= 1:
        return None if p is None else int(p)
    raise ValueError(f"GradientTape.{what}: parallel_iterations must be None (one backward "
                     f"pass) or a positive int (at most that many rows a pass), got "
                     f"{parallel_iterations!r}")


# A vectorized pass's temporaries are (cotangents in the pass) x (a tensor of the tape). When
# one grows past a few MB, glibc hands the memory back to the system after each pass and the
# next pass takes it again page by page (the hidden-64 network of benchmarks/ spent 8-25 ms a
# call in page faults with its 16 MB temporaries). So with ``parallel_iterations=None`` the
# Jacobian picks its own chunk: as many cotangents as keep the largest temporary under this.
AUTO_CHUNK_BYTES = 4 * 2**20


def auto_chunk(tape, n, itemsize):
    """The chunk size of a vectorized Jacobian given no ``parallel_iterations``: the number
    of cotangents whose gradients of the tape's largest tensor fit in ``AUTO_CHUNK_BYTES``
    (``n``, one pass, when everything fits)."""
    shapes = {shape for op in tape.operations for shape in op.shapes}   # (each shape once)
    largest = max(map(math.prod, shapes), default=1)   # (np.prod: ~5 us a shape)
    return max(1, min(n, AUTO_CHUNK_BYTES // max(1, largest * itemsize)))


def _begin(tape, what, target, sources, experimental_use_pfor):
    """The checks both Jacobians make, then ``tape.begin_backward``; returns the flat sources.

    TensorFlow's rule for the loop (``experimental_use_pfor=False``): it asks the tape once
    per element of the target, so it needs a persistent tape; its error is raised before
    the tape is used (the tape stays usable)."""
    if not isinstance(target, Tensor):
        raise outside_minitape_error(target, f"GradientTape.{what} target")
    if not experimental_use_pfor and not tape.persistent:
        raise RuntimeError(   # (TensorFlow's error, and why)
            f"GradientTape must be created with persistent=True to compute the {what} with "
            "experimental_use_pfor set to False: the loop runs one backward pass per element "
            "of the target, and a non-persistent tape answers once")
    tape.begin_backward(what)
    flat_sources = check_sources(sources, what)
    if target.dtype.kind == "c":
        raise complex_target_error(target, f"GradientTape.{what}")
    return flat_sources


def _backward(tape, target, n, seeds, flat_sources, experimental_use_pfor, parallel_iterations):
    """``{source id: gradient (n,) + source.shape}`` for the connected sources, from the
    cotangents ``seeds(start, stop)``: vectorized passes, or one pass per cotangent."""
    if target.dtype.kind != "f":
        return {}   # an integer target has no gradient
    if experimental_use_pfor:
        return _vectorized_backward(tape, target, n, seeds, flat_sources, parallel_iterations)
    return _loop_backward(tape, target, flat_sources, (seeds(k, k + 1)[0] for k in range(n)))


def _vectorized_backward(tape, target, n, seeds, flat_sources, parallel_iterations):
    """The backward passes of a vectorized Jacobian: ``{source id: gradient}``, each
    gradient ``(n,) + source.shape``; connected sources only.

    ``seeds(start, stop)`` gives the cotangents ``start`` to ``stop`` (an array ``(stop -
    start,) + target.shape``). One pass carries all ``n`` of them (the leading batch axis),
    or, with ``parallel_iterations`` smaller than ``n``, each pass carries that many and the
    results are joined with ``concat`` (a recorded op, so a tape around the call can
    differentiate the Jacobian again). Each cotangent's row is computed by the same
    operations either way.
    """
    if parallel_iterations is None:
        parallel_iterations = auto_chunk(tape, n, np.dtype(target.dtype).itemsize)
    rows = {}
    for start in range(0, max(n, 1), parallel_iterations):   # (n = 0: one empty pass)
        stop = min(start + parallel_iterations, n)   # (the last pass releases the tape)
        grads = tape.run_backward({target.id: Tensor(seeds(start, stop))}, flat_sources,
                                   batch_ndim=1, release=None if stop == n else False)
        for s in flat_sources:
            if grads.get(s.id) is not None:
                rows.setdefault(s.id, []).append(grads[s.id])
    return {i: parts[0] if len(parts) == 1 else concat(parts, axis=0)
            for i, parts in rows.items()}


def jacobian(tape, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
             experimental_use_pfor=True, parallel_iterations=None):
    """Jacobian of ``target`` with respect to each source, as ``tf.GradientTape.jacobian``.

    Args:
        target: one Tensor (not a structure: stack several with ``mt.stack``).
        sources: a Tensor/Variable or a nested structure of them.
        experimental_use_pfor: True (default) runs *one* backward pass over a batch of
            cotangents, the rows of an identity matrix (every gradient function carries
            the leading batch axis). False loops over the target's elements, one backward
            pass each. Both give the same numbers.
        parallel_iterations: None (default: minitape picks the chunk, ``auto_chunk``: one
            backward pass when its temporaries stay under ``AUTO_CHUNK_BYTES``, else
            passes of as many cotangents as fit) or a positive int: vectorized passes of at
            most that many cotangents each, as TensorFlow's knob to bound memory (same
            numbers; temporaries that many rows tall). The loop
            (``experimental_use_pfor=False``) checks it and runs one at a time.

    Returns:
        ``sources``' structure; each entry of shape ``target.shape + source.shape``.

    Raises:
        TypeError: ``target`` is a list/tuple/dict or not a minitape Tensor.
        RuntimeError: a non-persistent tape asked a second time, or asked with
            ``experimental_use_pfor=False`` (TensorFlow's error: the loop needs
            ``persistent=True``).
        ValueError: ``parallel_iterations`` neither None nor a positive int.
    """
    parallel_iterations = _check_parallel_iterations(parallel_iterations, "jacobian")
    if isinstance(target, (list, tuple, dict)):
        raise TypeError("GradientTape.jacobian: target must be a single Tensor, got a "
                        f"{type(target).__name__}; stack the targets with mt.stack or "
                        "call jacobian once per target")
    flat_sources = _begin(tape, "jacobian", target, sources, experimental_use_pfor)
    n = target.size

    def seeds(start, stop):   # rows start..stop of the (n, n) identity, none other made
        rows = np.zeros((stop - start, n), target.dtype)
        rows.reshape(-1)[start::n + 1] = 1   # (row r's 1 is at column start + r)
        return rows.reshape((stop - start,) + target.shape)

    grads = _backward(tape, target, n, seeds, flat_sources, experimental_use_pfor,
                      parallel_iterations)
    grads = {s.id: reshape(grads[s.id], target.shape + s.shape) for s in flat_sources
             if s.id in grads}
    if n == 0 and target.dtype.kind == "f":   # an empty Jacobian: zeros of its shape
        grads = {s.id: Tensor(np.zeros(target.shape + s.shape, s.dtype)) for s in flat_sources
                 if s.dtype.kind == "f"}
    return pack_results(sources, flat_sources, grads, unconnected_gradients, target.shape)


def batch_jacobian(tape, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                   experimental_use_pfor=True, parallel_iterations=None):
    """Per-example Jacobians, as ``tf.GradientTape.batch_jacobian``.

    ``target`` ``(b, y...)`` (rank 2 or more) and ``source`` ``(b, x...)``; result
    ``(b, y..., x...)``: entry ``[i]`` is the Jacobian of ``target[i]`` with respect to
    ``source[i]``. It assumes example i of the target depends only on example i of the
    source (true for most layers, not for batch normalization in training mode) and
    never computes the cross-batch blocks: the cotangent for output position t is 1 at
    position t of *every* example at once. As in TensorFlow, the loop version
    (``experimental_use_pfor=False``) needs a persistent tape.

    ``parallel_iterations``: as ``jacobian`` (passes of at most that many cotangents).

    Raises:
        ValueError: rank below 2, batch sizes that differ, or ``parallel_iterations``
            neither None nor a positive int.
        RuntimeError: ``experimental_use_pfor=False`` on a non-persistent tape (as
            TensorFlow), or a non-persistent tape asked a second time.
    """
    parallel_iterations = _check_parallel_iterations(parallel_iterations, "batch_jacobian")
    for t, kind in ((target, "target"), (source, "source")):
        if not isinstance(t, Tensor):
            raise outside_minitape_error(t, f"GradientTape.batch_jacobian {kind}")
    if target.ndim < 2 or source.ndim < 2:
        raise ValueError(f"batch_jacobian needs target and source of rank 2 or more "
                         f"(batch, ...), got shapes {target.shape} and {source.shape}")
    if target.shape[0] != source.shape[0]:
        raise ValueError(f"batch_jacobian: the batch sizes differ: target {target.shape} has "
                         f"{target.shape[0]}, source {source.shape} has {source.shape[0]}; "
                         "use jacobian for unrelated batches")
    _begin(tape, "batch_jacobian", target, source, experimental_use_pfor)
    b, rest = target.shape[0], target.shape[1:]
    n = int(np.prod(rest))
    one_hots = np.broadcast_to(np.eye(n, dtype=target.dtype).reshape((n, 1) + rest),
                               (n, b) + rest)
    g = _backward(tape, target, n, lambda start, stop: one_hots[start:stop], [source],
                  experimental_use_pfor, parallel_iterations).get(source.id)
    shape = (b,) + rest + source.shape[1:]
    if g is None:
        # An empty target needs no backward pass, and its Jacobian is zeros of its shape.
        empty = (n == 0 or b == 0) and target.dtype.kind == "f" and source.dtype.kind == "f"
        zero = UnconnectedGradients(unconnected_gradients) is UnconnectedGradients.ZERO
        return Tensor(np.zeros(shape, source.dtype)) if empty or zero else None
    # (n, b, x...) -> (b, n, x...) -> (b, y..., x...)
    return reshape(transpose(g, (1, 0) + tuple(range(2, g.ndim))), shape)


def _loop_backward(tape, target, flat_sources, seeds):
    """One backward pass per seed (``experimental_use_pfor=False``, on a persistent tape,
    which keeps what it saved); stacks the results."""
    per_source = {s.id: [] for s in flat_sources}
    connected = set()
    for seed in seeds:
        grads = tape.run_backward({target.id: Tensor(np.array(seed))}, flat_sources,
                                   batch_ndim=0, release=False)
        for s in flat_sources:
            g = grads.get(s.id)
            if g is not None:
                connected.add(s.id)
            per_source[s.id].append(g if g is not None else Tensor(np.zeros(s.shape, s.dtype)))
    return {i: stack(rows) for i, rows in per_source.items() if i in connected and rows}

