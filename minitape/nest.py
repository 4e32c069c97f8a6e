"""Nested structures of tensors: a target or sources may be a list, tuple or dict of them.

``flatten`` turns any nesting into a flat list (dicts in insertion order), ``pack_like`` puts a
flat list back into the same shape: ``gradient`` returns its results in the sources' structure.
"""

from __future__ import annotations


def flatten(structure):
    """Flatten nested lists/tuples/dicts (dicts in key order of insertion) into a list."""
    if not isinstance(structure, (list, tuple, dict)):
        return [structure]
    out = []
    for v in (structure.values() if isinstance(structure, dict) else structure):
        if isinstance(v, (list, tuple, dict)):
            out.extend(flatten(v))
        else:
            out.append(v)  # (a leaf: no recursive call for it)
    return out


def pack_like(structure, flat):
    """Inverse of ``flatten``: put the items of ``flat`` back into ``structure``'s shape."""
    return _pack(structure, iter(flat))


def _pack(s, items):
    # A module-level function, not a closure that calls itself: such a closure is a reference
    # cycle, which would keep every gradient alive until the garbage collector runs.
    if isinstance(s, dict):
        return {k: _pack(v, items) for k, v in s.items()}
    if isinstance(s, (list, tuple)):
        packed = [_pack(v, items) if isinstance(v, (list, tuple, dict)) else next(items)
                  for v in s]
        if type(s) is list:
            return packed
        return tuple(packed) if type(s) is tuple else type(s)(*packed)
    return next(items)
