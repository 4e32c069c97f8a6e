"""The audit of issue #13: no public function may give a silent ``None`` gradient.

Every public function of ``mt``, ``mt.math``, ``mt.nn`` and ``mt.linalg`` is called on small
floating inputs under a tape. If it takes a floating Tensor and returns a floating Tensor,
the gradient of its output with respect to *each* floating argument must exist (not
``None``): the function recorded ops with registered gradients all the way from that
argument to its output. The only exceptions are on ``NOT_DIFFERENTIABLE`` below, each with the
reason, and for those the audit checks that the gradient really is ``None`` (so the list
cannot go stale).

A new public function fails this audit until it is either differentiable, or listed here
with its reason. A function that needs arguments other than one float Tensor gets a calling
convention in ``CALLS``; functions that do not compute on Tensors are in ``NOT_TENSOR_OPS``.

``mt.fill(dims, value)`` is the defect that motivated the audit: it did not record, so the
gradient with respect to ``value`` was silently ``None``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minitape as mt

MODULES = {"mt": mt, "mt.math": mt.math, "mt.nn": mt.nn, "mt.linalg": mt.linalg}

# Not operations on Tensors: function transforms, decorators, the registry, constructors from
# a shape. (Their own tests live with them.)
NOT_TENSOR_OPS = {
    "custom_gradient": "a decorator", "primitive": "a decorator", "function": "a decorator",
    "no_gradient": "the registry", "grad": "a function transform",
    "value_and_grad": "a function transform", "jacobian": "a function transform",
    "hessian": "a function transform", "jvp": "a function transform",
    "vjp": "a function transform", "gradients_function": "a function transform",
    "value_and_gradients_function": "a function transform",
    "implicit_gradients": "a function transform",
    "implicit_value_and_gradients": "a function transform",
    "zeros": "takes a shape", "ones": "takes a shape", "eye": "takes sizes",
}

# Float -> float functions whose gradient is None by design (as in TensorFlow).
NOT_DIFFERENTIABLE = {
    "round": "piecewise constant: op Round is declared not differentiable, as in TensorFlow",
    "floor": "piecewise constant: TensorFlow's Floor gradient is None",
    "ceil": "piecewise constant: op Ceil is declared not differentiable, as in TensorFlow",
    "floordiv": "piecewise constant: op FloorDiv is not differentiable, as in TensorFlow",
    "stop_gradient": "its whole point: the gradient stops here (op StopGradient)",
    "constant": "makes a new Tensor from a value, not connected on any tape (as the API says)",
    "zeros_like": "constant in its input (TensorFlow declares ZerosLike not differentiable)",
    "ones_like": "constant in its input (TensorFlow declares OnesLike not differentiable)",
    "range": "TensorFlow declares Range not differentiable",
}

# Functions whose inputs or outputs are not floating: checked to stay that way.
NOT_FLOAT_TO_FLOAT = {
    "shape": "returns int32", "size": "returns int32", "rank": "returns int32",
    "argmax": "returns int64", "argmin": "returns int64",
    "greater": "returns bool", "greater_equal": "returns bool", "less": "returns bool",
    "less_equal": "returns bool", "equal": "returns bool", "not_equal": "returns bool",
    "is_finite": "returns bool", "is_inf": "returns bool", "is_nan": "returns bool",
    "logical_and": "bool to bool", "logical_or": "bool to bool", "logical_xor": "bool to bool",
    "logical_not": "bool to bool",
}


def _x():
    return mt.constant(np.array([[0.6, 1.3, 0.9], [1.7, 0.8, 1.1]]))  # (2, 3), positive


def _square():
    return mt.constant(2.0 * np.eye(3) + 0.3 * np.arange(9.0).reshape(3, 3) / 9.0)


def _scalar(v):
    return mt.constant(v, dtype=mt.float64)


def _image():
    return mt.constant(np.linspace(-1.0, 1.0, 2 * 4 * 4 * 2).reshape(2, 4, 4, 2))


# How to call each function that needs more than one float Tensor: a maker of the arguments.
# Default: f(x) with x of shape (2, 3).
CALLS = {
    # binary ops
    **{name: lambda: (_x(), _x() * 0.5 + 0.2) for name in (
        "add", "subtract", "multiply", "divide", "divide_no_nan", "pow", "maximum", "minimum",
        "atan2", "squared_difference",
        "greater",
        "greater_equal", "less", "less_equal", "equal", "not_equal")},
    "matmul": lambda: (_x(), mt.transpose(_x())),
    "einsum": lambda: ("ij,kj->ik", _x(), _x()),
    "tensordot": lambda: (_x(), mt.transpose(_x()), 1),
    "matvec": lambda: (_square(), mt.constant([0.5, 1.0, -1.0], dtype=mt.float64)),
    "solve": lambda: (_square(), mt.constant(np.ones((3, 2)))),
    "inv": lambda: (_square(),), "det": lambda: (_square(),),
    "cast": lambda: (_x(), mt.float32),
    "clip_by_value": lambda: (_x(), _scalar(0.7), _scalar(1.5)),
    "clip_by_norm": lambda: (_x(), _scalar(1.0)),
    # shapes and indexing
    "reshape": lambda: (_x(), [3, 2]),
    "expand_dims": lambda: (_x(), 0),
    "squeeze": lambda: (mt.reshape(_x(), [1, 2, 3]),),
    "broadcast_to": lambda: (_x(), [2, 2, 3]),
    "concat": lambda: ([_x(), _x()], 0),
    "stack": lambda: ([_x(), _x()],),
    "add_n": lambda: ([_x(), _x() * 0.5],),
    "tile": lambda: (_x(), [1, 2]),
    "pad": lambda: (_x(), [[1, 0], [0, 2]], "CONSTANT", _scalar(0.5)),
    "gather": lambda: (_x(), [1, 0, 1]),
    "repeat": lambda: (_x(), [2, 0, 1], 1),   # (sort takes one float Tensor as it is)
    "where": lambda: (mt.constant([[True, False, True], [False, True, True]]), _x(), _x()),
    "fill": lambda: ([2, 3], _scalar(1.5)),
    "linspace": lambda: (_scalar(-1.0), _scalar(2.0), 4),
    "range": lambda: (_scalar(0.5), _scalar(3.0), _scalar(0.5)),
    "split": lambda: (_x(), 3, 1),
    "reverse": lambda: (_x(), [1]),
    "boolean_mask": lambda: (_x(), [[True, False, True], [False, True, True]]),
    "one_hot": lambda: ([0, 2, 1], 3, _scalar(2.0), _scalar(-1.0)),
    "cumsum": lambda: (_x(), 1),
    "shape": lambda: (_x(),), "size": lambda: (_x(),), "rank": lambda: (_x(),),
    # control flow: three squarings of x
    "while_loop": lambda: (lambda i, x: i < 3, lambda i, x: (i + 1, x * x), (mt.constant(0), _x())),
    "meshgrid": lambda: (mt.constant([0.5, 1.0, 2.0], dtype=mt.float64),
                         mt.constant([1.0, -1.0], dtype=mt.float64)),
    # neural networks
    "softmax_cross_entropy_with_logits": lambda: (mt.nn.softmax(_x()), _x()),
    "sparse_softmax_cross_entropy_with_logits": lambda: ([0, 2], _x()),
    "dropout": lambda: (_x(), 0.5, None, 0),
    "conv2d": lambda: (_image(), mt.constant(np.ones((2, 2, 2, 3)) * 0.1), 1, "SAME"),
    "max_pool2d": lambda: (_image(), 2, 2, "VALID"),
    "avg_pool2d": lambda: (_image(), 3, 2, "SAME"),
    "floordiv": lambda: (_x() * 3.0, _scalar(2.0)),
    **{name: lambda: ([[True, False]], [[True, True]]) for name in (
        "logical_and", "logical_or", "logical_xor")},
    "logical_not": lambda: ([True, False],),
    "band_part": lambda: (_x(), -1, 0),
    "max_pool": lambda: (_image(), [1, 1, 1, 2], [1, 1, 1, 2], "VALID"),   # over channels
    "conv2d_transpose": lambda: (_image(), mt.constant(np.ones((2, 2, 3, 2)) * 0.1),
                                 (2, 8, 8, 3), 2, "SAME"),
    # Chollet chapter 9: depthwise and separable convolutions
    "depthwise_conv2d": lambda: (_image(), mt.constant(np.ones((2, 2, 2, 2)) * 0.1),
                                 [1, 1, 1, 1], "SAME"),
    "separable_conv2d": lambda: (_image(), mt.constant(np.ones((2, 2, 2, 2)) * 0.1),
                                 mt.constant(np.ones((1, 1, 4, 3)) * 0.1), 1, "VALID"),
    "depthwise_conv2d_backprop_input": lambda: ((2, 4, 4, 2),
                                                mt.constant(np.ones((2, 2, 2, 1)) * 0.1),
                                                _image(), 1, "SAME"),
    "depthwise_conv2d_backprop_filter": lambda: (_image(), (2, 2, 2, 1), _image(), 1, "SAME"),
}


def _public_functions():
    out = []
    for module_name, module in MODULES.items():
        for name in sorted(dir(module)):
            obj = getattr(module, name)
            if not name.startswith("_") and inspect.isfunction(obj):
                out.append((f"{module_name}.{name}", obj))
    return out


FUNCTIONS = _public_functions()


def _floats(items):
    """The floating Tensors in ``items`` (nested lists included)."""
    out = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out += _floats(item)
        elif isinstance(item, mt.Tensor) and item.dtype.kind == "f":
            out.append(item)
    return out


def test_the_audit_sees_the_functions_of_issue_13():
    names = {q for q, _ in FUNCTIONS}
    for q in ("mt.fill", "mt.math.reduce_logsumexp", "mt.math.cumsum", "mt.nn.conv2d",
              "mt.nn.dropout", "mt.split", "mt.linalg.det", "mt.nn.relu"):
        assert q in names


@pytest.mark.parametrize("qualname, fn", FUNCTIONS, ids=[q for q, _ in FUNCTIONS])
def test_no_silent_none_gradient(qualname, fn):
    audit(qualname, fn)


def test_the_audit_catches_a_function_that_does_not_record():
    def fill_as_it_was(dims, value):  # the defect of issue #13
        return mt.constant(np.full(dims, value.numpy()))

    CALLS["fill_as_it_was"] = CALLS["fill"]
    try:
        with pytest.raises(AssertionError, match="argument 0 is a silent None"):
            audit("mt.fill_as_it_was", fill_as_it_was)
    finally:
        del CALLS["fill_as_it_was"]


def audit(qualname, fn):
    """Call ``fn`` on small inputs under a tape and check its gradients (see the docstring)."""
    name = qualname.rsplit(".", 1)[1]
    if name in NOT_TENSOR_OPS:
        return
    args = CALLS[name]() if name in CALLS else (_x(),)
    sources = _floats(args)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(sources)
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 (the message says what to do)
            pytest.fail(f"{qualname}{tuple(type(a).__name__ for a in args)} raised {e!r}; "
                        "give it a calling convention in CALLS (tests/test_gradient_audit.py)")
    outputs = _floats([result])
    float_to_float = bool(sources) and bool(outputs)
    if name in NOT_FLOAT_TO_FLOAT:
        assert not float_to_float, (f"{qualname} takes and returns floating Tensors: take it "
                                    "off NOT_FLOAT_TO_FLOAT and make it differentiable")
        return
    assert float_to_float, (f"{qualname} did not map floating Tensors to floating Tensors; "
                            "if that is by design, list it in NOT_FLOAT_TO_FLOAT with the reason")
    grads = tape.gradient(outputs, sources)
    if name in NOT_DIFFERENTIABLE:
        assert all(g is None for g in grads), (
            f"{qualname} now has a gradient: take it off NOT_DIFFERENTIABLE")
        return
    recorded = {op.type for op in tape._ops}
    for k, g in enumerate(grads):
        assert g is not None, (
            f"{qualname}: the gradient with respect to floating argument {k} is a silent None "
            f"(recorded ops: {sorted(recorded) or 'none'}). Record an op with a registered "
            "gradient, or list the function in NOT_DIFFERENTIABLE with the reason")
        assert g.shape == sources[k].shape


def test_every_listed_name_exists():
    names = {q.rsplit(".", 1)[1] for q, _ in FUNCTIONS}
    stale = sorted((set(NOT_DIFFERENTIABLE) | set(NOT_FLOAT_TO_FLOAT)) - names)
    assert not stale, f"listed in the audit but not public functions any more: {stale}"
