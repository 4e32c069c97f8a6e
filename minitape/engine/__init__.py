"""The engine: everything ``tape.gradient`` needs, and nothing else. Read it in this order.

1. ``tensor.py``: ``Tensor`` (an immutable NumPy value with an id) and ``Variable`` (a value
   that changes only through ``assign``).
2. ``recording.py``: ``record``: how an op that has run gets onto every tape that watches one
   of its inputs, as an ``Operation`` (what its gradient rule will need, and nothing more).
3. ``registry.py``: one gradient rule per op type (``RegisterGradient``), TensorFlow's way.
4. ``tape.py``: ``GradientTape``: watching, recording, ``gradient``, and the hook the drawings
   use to observe it (``add_observer``).
5. ``backward.py``: the backward walk: cotangents times vector-Jacobian products, op by op, in
   reverse.
6. ``forward.py``: forward mode (``ForwardAccumulator``): tangents pushed forwards, each op's
   JVP derived from its VJP.
7. ``jacobians.py``: ``jacobian`` and ``batch_jacobian``: one backward walk per row, or all
   rows at once with a batch axis.

The ops (``minitape/ops``) sit above the engine: each op's NumPy forward and its gradient rule,
side by side. The engine imports nothing above it: no op module, no drawing, no Keras (only the
leaf helpers ``dtypes``, ``nest``, ``errors``, ``tensor_shape``). What the layers above add, they
attach, as TensorFlow does: the ops give ``Tensor`` its operators (``x * y`` is ``multiply``)
and register the conversion of Python data; ``ops/array_ops.py`` installs the ops the
Jacobians reshape and stack their rows with. ``pyproject.toml`` writes the layers down as an
import-linter contract.
"""
