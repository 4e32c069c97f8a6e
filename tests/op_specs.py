"""The table of gradient test cases: one or more per op type, shared by the gradient tests.

Each ``OpSpec`` names the op type it exercises, a function of float Tensors that records that
op, and a maker of its inputs (float64 ndarrays drawn from a seeded generator). Inputs are kept
away from kinks and singularities (``abs``/``relu`` near 0, ties in ``max``, ``log`` of
non-positives, ill-conditioned matrices), where finite differences would not be the derivative.
Functions are dtype-agnostic (constants follow the inputs' dtype), so the same table also runs
in float32.

``tests/test_ops_gradients.py`` fails when a registered op type has no entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import minitape as mt
from minitape.ops import array_ops, conv_ops, math_ops, nn_ops


@dataclass(frozen=True)
class OpSpec:
    """One gradient test case.

    Attributes:
        op: the op type the case must record (``"CustomGradient"`` for ``mt.custom_gradient``).
        name: a short label, unique per op.
        fn: ``fn(*tensors)`` -> a Tensor or a tuple of Tensors; every argument is differentiated.
        make: ``make(rng)`` -> a tuple of float64 ndarrays, the arguments.
        check: extra keyword arguments for ``check_grads`` (``eps``, ``rtol``, ``order``...).
        tol: absolute tolerance when two exact computations are compared (Jacobians, JVPs).
    """

    op: str
    name: str
    fn: Callable
    make: Callable
    check: dict = field(default_factory=dict)
    tol: float = 1e-10

    @property
    def id(self):
        return f"{self.op}-{self.name}"

    def args(self, seed=0):
        return self.make(np.random.default_rng(seed))


# -- input makers: each returns a function of a numpy Generator ------------------------------------


def normal(shape):
    return lambda rng: rng.standard_normal(shape)


def uniform(shape, low, high):
    return lambda rng: rng.uniform(low, high, shape)


def positive(shape):
    """In [0.5, 2]: safe for log, sqrt, a ** b and as a divisor."""
    return uniform(shape, 0.5, 2.0)


def nonzero(shape):
    """|x| in [0.3, 1.5] with a random sign: away from the kink of abs, relu, sign."""
    def make(rng):
        return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.3, 1.5, shape)
    return make


def distinct_values(rng, n, spacing=0.3):
    """``n`` values on a shuffled grid, at least ~0.8 * spacing apart: no ties for max/min."""
    grid = (rng.permutation(n) - (n - 1) / 2) * spacing
    return grid + rng.uniform(-0.1 * spacing, 0.1 * spacing, n)


def distinct(*shapes):
    """Arrays of the given shapes whose entries are all distinct from each other."""
    def make(rng):
        sizes = [int(np.prod(s)) for s in shapes]
        values = distinct_values(rng, sum(sizes))
        out, start = [], 0
        for s, n in zip(shapes, sizes):
            out.append(values[start:start + n].reshape(s))
            start += n
        return tuple(out)
    return make


def well_conditioned(shape):
    """Square matrices ``2 I + 0.3 N``: safely invertible."""
    def make(rng):
        n = shape[-1]
        return 2.0 * np.eye(n) + 0.3 * rng.standard_normal(shape)
    return make


def args(*makers):
    """Combine single-array makers into one maker of a tuple."""
    return lambda rng: tuple(m(rng) for m in makers)


def constant_like(value, x):
    """A constant with ``x``'s dtype (keeps the specs dtype-agnostic)."""
    return mt.constant(np.asarray(value), dtype=x.dtype)


# -- custom gradients ------------------------------------------------------------------------------


@mt.custom_gradient
def log1pexp(x):
    """``log(1 + e**x)`` with the stable gradient of the TensorFlow guide."""
    e = mt.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return mt.log(1 + e), grad


@mt.custom_gradient
def scaled_product(x, y):
    """``(x * y, x + y)``: two inputs, two outputs, a hand-written gradient."""
    def grad(dz, ds):
        return dz * y + ds, dz * x + ds

    return (x * y, x + y), grad


# -- the table ------------------------------------------------------------------------------------

S = OpSpec
SPECS = [
    # arithmetic, with broadcasting (more shapes are drawn by hypothesis in the tests)
    S("AddV2", "broadcast", lambda x, y: x + y, args(normal((2, 3)), normal((3,)))),
    S("AddV2", "python_scalar", lambda x: 2.0 + x * x, args(normal((3,)))),
    S("AddN", "three", lambda x, y: mt.add_n([x, y * y, x * y]),
      args(normal((2, 3)), normal((2, 3)))),
    S("AddN", "one", lambda x: mt.add_n([x * x]), args(normal((3,)))),
    S("Sub", "broadcast", lambda x, y: x - y * y, args(normal((3, 1)), normal((1, 4)))),
    S("Sub", "reflected", lambda x: 1.0 - x * x, args(normal((2,)))),
    S("Mul", "broadcast", lambda x, y: x * y, args(normal((2, 3)), normal((2, 1)))),
    S("Mul", "same_tensor_twice", lambda x: x * x * x, args(normal((4,)))),
    S("RealDiv", "broadcast", lambda x, y: x / y, args(normal((2, 3)), nonzero((3,)))),
    S("RealDiv", "reflected", lambda x: 1.0 / x, args(nonzero((3,)))),
    S("Neg", "plain", lambda x: -(x * x), args(normal((2, 2)))),
    S("Pow", "tensor_exponent", lambda x, y: x ** y, args(positive((2, 3)), normal((3,)))),
    S("Pow", "scalar_exponent_negative_base", lambda x: x ** 3.0, args(normal((4,)))),
    S("Pow", "scalar_base", lambda y: 2.0 ** y, args(normal((3,)))),
    S("Square", "plain", mt.square, args(normal((2, 3)))),
    S("Sqrt", "positive", mt.sqrt, args(positive((2, 3)))),
    S("Exp", "plain", mt.exp, args(normal((2, 3)))),
    S("Expm1", "plain", mt.math.expm1, args(normal((3,)))),
    S("Log", "positive", mt.log, args(positive((2, 3)))),
    S("Log1p", "above_minus_one", mt.math.log1p, args(uniform((4,), -0.5, 2.0))),
    S("Reciprocal", "nonzero", mt.math.reciprocal, args(nonzero((4,)))),
    S("DivNoNan", "nonzero", mt.math.divide_no_nan, args(normal((2, 3)), nonzero((2, 3)))),
    S("DivNoNan", "broadcast", mt.math.divide_no_nan, args(normal((2, 3)), nonzero((3,)))),
    S("Sin", "plain", mt.math.sin, args(normal((2, 3)))),
    S("Cos", "plain", mt.math.cos, args(normal((2, 3)))),
    S("Tan", "inside_pi_over_2", mt.math.tan, args(uniform((4,), -1.0, 1.0))),
    S("Tanh", "plain", mt.math.tanh, args(normal((2, 3)))),
    S("Asin", "inside_unit", mt.math.asin, args(uniform((4,), -0.8, 0.8))),
    S("Acos", "inside_unit", mt.math.acos, args(uniform((4,), -0.8, 0.8))),
    S("Atan", "plain", mt.math.atan, args(normal((2, 3)))),
    S("Atan2", "broadcast", lambda y, x: mt.math.atan2(y, x * x + 0.5),
      args(normal((2, 3)), normal((3,)))),
    S("Sinh", "plain", mt.math.sinh, args(uniform((4,), -2.0, 2.0))),
    S("Cosh", "plain", mt.math.cosh, args(uniform((4,), -2.0, 2.0))),
    S("Asinh", "plain", mt.math.asinh, args(normal((2, 3)))),
    S("Acosh", "above_one", mt.math.acosh, args(uniform((4,), 1.2, 3.0))),
    S("Atanh", "inside_unit", mt.math.atanh, args(uniform((4,), -0.8, 0.8))),
    S("Sigmoid", "plain", mt.math.sigmoid, args(normal((2, 3)))),
    S("Softplus", "plain", mt.math.softplus, args(normal((2, 3)))),
    S("Erf", "plain", mt.math.erf, args(uniform((4,), -1.5, 1.5))),
    S("Abs", "nonzero", lambda x: mt.abs(x) * x, args(nonzero((2, 3)))),
    S("Sign", "times_square", lambda x: mt.sign(x) * x * x, args(nonzero((2, 3)))),
    S("Maximum", "broadcast", mt.maximum, distinct((3, 1), (1, 4))),
    S("Minimum", "broadcast", mt.minimum, distinct((2, 3), (3,))),
    S("Maximum", "clip_by_value", lambda x: mt.clip_by_value(x, -0.5, 0.5),
      distinct((3, 4))),
    S("Minimum", "clip_by_value_tensor_bounds", lambda x, lo, hi: mt.clip_by_value(x * x, lo, hi),
      lambda rng: (distinct_values(rng, 6, 0.4), np.array(0.2), np.array(0.9))),
    S("Maximum", "clip_by_norm_clipped", lambda x: mt.clip_by_norm(x, 1.0),
      lambda rng: (3.0 * rng.standard_normal((2, 3)),)),
    S("Maximum", "clip_by_norm_not_clipped", lambda x: mt.clip_by_norm(x, 5.0),
      lambda rng: (0.3 * rng.standard_normal((2, 3)),)),
    S("Maximum", "clip_by_norm_axes", lambda x: mt.clip_by_norm(x, 1.0, axes=[1]),
      lambda rng: (rng.standard_normal((3, 4)) * np.array([[0.1], [3.0], [0.2]]),)),
    # casts: the float32 stretch limits the precision of finite differences
    S("Cast", "float64_to_float32_and_back",
      lambda x: mt.math.sin(mt.cast(mt.cast(x, mt.float32), mt.float64)) if x.dtype == np.float64
      else mt.math.sin(mt.cast(mt.cast(x, mt.float64), mt.float32)),
      args(normal((3,))), check={"eps": 1e-3, "rtol": 1e-3, "atol": 1e-3}, tol=1e-6),
    S("Cast", "float32_output", lambda x: mt.cast(x * x, mt.float32)
      if x.dtype == np.float64 else mt.cast(x * x, mt.float64),
      args(normal((3,))), check={"eps": 1e-3, "rtol": 1e-3, "atol": 1e-3}, tol=1e-6),
    # matrix products
    S("MatMul", "plain", mt.matmul, args(normal((2, 3)), normal((3, 4)))),
    S("MatMul", "transposed", lambda a, b: mt.matmul(a, b, transpose_a=True, transpose_b=True),
      args(normal((3, 2)), normal((4, 3)))),
    S("MatMul", "transpose_a", lambda a, b: mt.matmul(a, b, transpose_a=True),
      args(normal((3, 2)), normal((3, 4)))),
    S("MatMul", "transpose_b", lambda a, b: mt.matmul(a, b, transpose_b=True),
      args(normal((2, 3)), normal((4, 3)))),
    S("MatMul", "operator", lambda a, b: (a @ b) @ a, args(normal((3, 3)), normal((3, 3)))),
    S("BatchMatMulV2", "batch_transposed", lambda a, b: mt.matmul(a, b, transpose_a=True,
                                                                   transpose_b=True),
      args(normal((2, 1, 3, 2)), normal((3, 4, 3)))),
    S("BatchMatMulV2", "broadcast_batch", mt.matmul, args(normal((2, 1, 2, 3)), normal((3, 3, 2)))),
    S("BatchMatMulV2", "matrix_times_batch", mt.matmul, args(normal((2, 3)), normal((4, 3, 2)))),
    # shapes
    S("Reshape", "minus_one", lambda x: mt.reshape(x, [3, -1]) ** 2, args(normal((2, 3, 2)))),
    S("Reshape", "tensor_entries", lambda x: mt.reshape(x, [mt.constant(6), 1]) ** 2,
      args(normal((2, 3)))),
    S("Transpose", "perm", lambda x: mt.transpose(x, [2, 0, 1]) ** 2, args(normal((2, 3, 4)))),
    S("Transpose", "default", lambda x, y: mt.transpose(x) * y,
      args(normal((2, 3)), normal((3, 2)))),
    S("ExpandDims", "axis0", lambda x: mt.expand_dims(x, 0) ** 2, args(normal((2, 3)))),
    S("ExpandDims", "negative_axis", lambda x, y: mt.expand_dims(x, -1) * y,
      args(normal((2, 3)), normal((3, 2)))),
    S("Squeeze", "all", lambda x: mt.squeeze(x) ** 2, args(normal((1, 3, 1)))),
    S("Squeeze", "axis", lambda x: mt.squeeze(x, axis=2) ** 2, args(normal((2, 3, 1)))),
    S("BroadcastTo", "plain", lambda x: mt.broadcast_to(x, [2, 3, 4]) ** 2, args(normal((3, 1)))),
    # indexing: basic slices, fancy indices (repeated: the gradient is a scatter-add), masks
    S("StridedSlice", "basic", lambda x: x[1:, ::-1] ** 2, args(normal((3, 4)))),
    S("StridedSlice", "int_none_ellipsis", lambda x: x[..., 1, None] ** 2, args(normal((2, 3, 4)))),
    S("StridedSlice", "repeated_fancy", lambda x: x[[0, 2, 0, 0]] ** 2, args(normal((3, 2)))),
    S("StridedSlice", "mixed_fancy", lambda x: x[1, [2, 0, 2]] ** 2, args(normal((2, 3)))),
    S("StridedSlice", "bool_mask",
      lambda x: x[np.array([[True, False, True], [False, True, True]])] ** 2, args(normal((2, 3)))),
    S("StridedSlice", "unstack", lambda x: tuple(u ** 2 for u in mt.unstack(x, axis=1)),
      args(normal((2, 3)))),
    S("StridedSliceGrad", "repeated", lambda u: array_ops.scatter_add(
        u * u, (np.array([0, 2, 0]),), (4, 2)), args(normal((3, 2)))),
    S("StridedSliceGrad", "basic", lambda u: array_ops.scatter_add(
        u * u, (slice(1, 3),), (4, 2)), args(normal((2, 2)))),
    S("GatherV2", "repeated", lambda x: mt.gather(x, [2, 0, 2]) ** 2, args(normal((3, 2)))),
    S("GatherV2", "axis1_2d_indices", lambda x: mt.gather(x, [[0, 1], [1, 1]], axis=1) ** 2,
      args(normal((3, 2)))),
    S("GatherV2", "negative_axis", lambda x: mt.gather(x, [1, 1, 0], axis=-1) ** 2,
      args(normal((2, 2, 3)))),
    S("ConcatV2", "axis1", lambda x, y, z: mt.concat([x, y * y, z], axis=1),
      args(normal((2, 1)), normal((2, 3)), normal((2, 2)))),
    S("ConcatV2", "negative_axis", lambda x, y: mt.concat([x * y, y], axis=-1) ** 2,
      args(normal((2, 3)), normal((2, 3)))),
    S("Pack", "axis0", lambda x, y: mt.stack([x, y * x]), args(normal((2, 3)), normal((2, 3)))),
    S("Pack", "last_axis", lambda x, y: mt.stack([x, y], axis=-1) ** 2,
      args(normal((2, 3)), normal((2, 3)))),
    S("PadV2", "zeros", lambda x: mt.pad(x * x, [[1, 0], [2, 1]]), args(normal((2, 3)))),
    S("PadV2", "tensor_constant_values",
      lambda x, c: mt.pad(x, [[0, 2], [1, 1]], constant_values=c * c) ** 2,
      args(normal((2, 3)), normal(()))),
    S("Tile", "2d", lambda x: mt.tile(x, [2, 3]) ** 2, args(normal((2, 3)))),
    S("Tile", "3d", lambda x: mt.tile(x, [1, 2, 2]) ** 2, args(normal((2, 1, 3)))),
    S("SelectV2", "broadcast", lambda c, x, y: mt.where(c > 0, x * x, y),
      args(nonzero((3, 1)), normal((1, 4)), normal((4,)))),
    S("SelectV2", "python_scalar", lambda x: mt.where(x > 0, x * x, 0.5), args(nonzero((2, 3)))),
    S("Identity", "plain", lambda x: mt.square(mt.identity(x)), args(normal((2, 3)))),
    # einsum: products, a diagonal, summed-away letters, an ellipsis, a trace
    S("Einsum", "matmul", lambda a, b: mt.einsum("ij,jk->ik", a, b),
      args(normal((2, 3)), normal((3, 4)))),
    S("Einsum", "diagonal_bxby", lambda a: mt.einsum("bxby->bxy", a * a),
      args(normal((2, 3, 2, 4)))),
    S("Einsum", "summed_away", lambda a: mt.einsum("ij->i", a * a), args(normal((3, 4)))),
    S("Einsum", "ellipsis", lambda a, b: mt.einsum("...ij,...jk->...ik", a, b),
      args(normal((2, 2, 3)), normal((2, 3, 2)))),
    S("Einsum", "implicit_output", lambda a, b: mt.einsum("ij,jk", a, b * b),
      args(normal((2, 3)), normal((3, 2)))),
    S("Einsum", "trace", lambda a: mt.einsum("ii->", a @ a), args(normal((3, 3)))),
    S("Einsum", "outer", lambda a, b: mt.einsum("i,j->ij", a, b), args(normal((3,)), normal((2,)))),
    S("Einsum", "three_operands", lambda a, b, c: mt.einsum("ij,jk,kl->il", a, b, c),
      args(normal((2, 3)), normal((3, 2)), normal((2, 2)))),
    # reductions: axis None / int / negative / list, keepdims
    S("Sum", "all", lambda x: mt.reduce_sum(x * x), args(normal((2, 3)))),
    S("Sum", "axis1", lambda x: mt.reduce_sum(x * x, axis=1), args(normal((2, 3)))),
    S("Sum", "negative_axis_keepdims", lambda x: mt.reduce_sum(x * x, axis=-1, keepdims=True),
      args(normal((2, 3, 2)))),
    S("Sum", "axis_list", lambda x: mt.reduce_sum(x * x, axis=[0, 2]), args(normal((2, 3, 2)))),
    S("Mean", "all", lambda x: mt.reduce_mean(x * x), args(normal((2, 3)))),
    S("Mean", "axis0_keepdims", lambda x: mt.reduce_mean(x * x, axis=0, keepdims=True),
      args(normal((3, 2)))),
    S("Mean", "axis_list", lambda x: mt.reduce_mean(x * x, axis=[-1, 0]), args(normal((2, 3, 2)))),
    S("Max", "all", lambda x: mt.reduce_max(x) ** 2, distinct((3, 4))),
    S("Max", "axis1", lambda x: mt.reduce_max(x, axis=1) ** 2, distinct((3, 4))),
    S("Max", "axis_list_keepdims", lambda x: mt.reduce_max(x, axis=[0, 2], keepdims=True) ** 2,
      distinct((2, 3, 2))),
    S("Min", "negative_axis", lambda x: mt.reduce_min(x, axis=-1) ** 2, distinct((3, 4))),
    S("Min", "all_keepdims", lambda x: mt.reduce_min(x, keepdims=True) ** 2, distinct((2, 3))),
    S("Prod", "all", lambda x: mt.reduce_prod(x), args(nonzero((2, 3)))),
    S("Prod", "rank0", lambda x: mt.reduce_prod(x) * x, args(nonzero(()))),
    S("Prod", "axis0", lambda x: mt.reduce_prod(x, axis=0), args(nonzero((3, 2)))),
    S("Prod", "axis_list_keepdims", lambda x: mt.reduce_prod(x, axis=[1], keepdims=True),
      args(nonzero((2, 3, 2)))),
    # at an exact zero only the first derivative is exact (documented in reduce_prod)
    S("Prod", "with_a_zero_first_order", lambda x: mt.reduce_prod(x, axis=1),
      lambda rng: (rng.standard_normal((2, 3)) * np.array([[1, 0, 1], [1, 1, 1]]),),
      check={"order": 1}),
    S("Sqrt", "norm_euclidean", lambda x: mt.norm(x), args(normal((2, 3)))),
    S("Sqrt", "norm_axis_keepdims", lambda x: mt.norm(x, axis=1, keepdims=True),
      args(normal((3, 4)))),
    S("Abs", "norm_ord1", lambda x: mt.norm(x, ord=1, axis=0), args(nonzero((3, 2)))),
    S("Max", "norm_inf", lambda x: mt.norm(x, ord=np.inf) ** 2,
      lambda rng: (np.abs(distinct_values(rng, 6)) * rng.choice([-1, 1], 6) + 0.05,)),
    # activations
    S("Relu", "nonzero", lambda x: mt.nn.relu(x) ** 2, args(nonzero((2, 3)))),
    S("Elu", "nonzero", mt.nn.elu, args(nonzero((2, 3)))),
    S("LeakyRelu", "nonzero", lambda x: mt.nn.leaky_relu(x, alpha=0.1) ** 2, args(nonzero((2, 3)))),
    S("Softmax", "last_axis", mt.nn.softmax, args(normal((2, 3)))),
    S("Softmax", "axis0", lambda x: mt.nn.softmax(x, axis=0), args(normal((3, 2)))),
    S("Softmax", "middle_axis", lambda x: mt.nn.softmax(x, axis=1), args(normal((2, 3, 2)))),
    S("LogSoftmax", "last_axis", mt.nn.log_softmax, args(normal((2, 3)))),
    S("LogSoftmax", "axis0", lambda x: mt.nn.log_softmax(x, axis=0), args(normal((3, 2)))),
    S("ReluGrad", "nonzero", lambda dy, y: nn_ops.relu_grad(dy, y) ** 2,
      args(normal((2, 3)), nonzero((2, 3)))),
    S("EluGrad", "nonzero", lambda dy, y: nn_ops.elu_grad(dy, y) ** 2,
      args(normal((2, 3)), nonzero((2, 3)))),
    S("Rsqrt", "positive", mt.math.rsqrt, args(positive((2, 3)))),
    S("RsqrtGrad", "positive", lambda y, dy: math_ops.rsqrt_grad(y, dy) ** 2,
      args(positive((2, 3)), normal((2, 3)))),
    S("Rsqrt", "l2_normalize", lambda x: mt.math.l2_normalize(x, axis=1), args(normal((2, 3)))),
    S("SqrtGrad", "positive", lambda y, dy: math_ops.sqrt_grad(y, dy) ** 2,
      args(positive((2, 3)), normal((2, 3)))),
    S("ReciprocalGrad", "nonzero", lambda y, dy: math_ops.reciprocal_grad(y, dy) ** 2,
      args(nonzero((2, 3)), normal((2, 3)))),
    S("LeakyReluGrad", "nonzero", lambda dy, x: nn_ops.leaky_relu_grad(dy, x, 0.1) ** 2,
      args(normal((2, 3)), nonzero((2, 3)))),
    S("SoftmaxCrossEntropyWithLogits", "broadcast_labels",
      lambda labels, logits: mt.nn.softmax_cross_entropy_with_logits(labels, logits),
      args(normal((1, 3)), normal((2, 3)))),
    S("SoftmaxCrossEntropyWithLogits", "distribution",
      lambda labels, logits: mt.nn.softmax_cross_entropy_with_logits(labels, logits),
      lambda rng: (mt.nn.softmax(mt.constant(rng.standard_normal((2, 3)))).numpy(),
                   rng.standard_normal((2, 3)))),
    S("SoftmaxCrossEntropyWithLogits", "any_labels_axis0",
      lambda labels, logits: mt.nn.softmax_cross_entropy_with_logits(labels, logits, axis=0),
      args(normal((3, 2)), normal((3, 2)))),
    S("SoftmaxCrossEntropyWithLogitsGrad", "any_labels",
      lambda dy, labels, logits: nn_ops.softmax_cross_entropy_with_logits_grad(
          dy, labels, logits) ** 2,
      args(normal((2,)), normal((2, 3)), normal((2, 3)))),
    S("SoftmaxCrossEntropyWithLogitsGrad", "axis0",
      lambda dy, labels, logits: nn_ops.softmax_cross_entropy_with_logits_grad(
          dy, labels, logits, axis=0) ** 2,
      args(normal((2,)), normal((3, 2)), normal((3, 2)))),
    S("SoftmaxCrossEntropyWithLogitsGrad", "batched_dy",  # dy with a leading batch axis
      lambda dy, labels, logits: nn_ops.softmax_cross_entropy_with_logits_grad(
          dy, labels, logits) ** 2,
      args(normal((4, 2)), normal((2, 3)), normal((2, 3)))),
    # linear algebra on well-conditioned matrices
    S("MatrixSolve", "plain", mt.linalg.solve, args(well_conditioned((3, 3)), normal((3, 2)))),
    S("MatrixSolve", "batched", mt.linalg.solve,
      args(well_conditioned((2, 3, 3)), normal((2, 3, 1)))),
    S("MatrixSolve", "broadcast_matrix", mt.linalg.solve,
      args(well_conditioned((3, 3)), normal((2, 3, 2)))),
    S("MatrixSolve", "adjoint", lambda a, b: mt.linalg.solve(a, b, adjoint=True),
      args(well_conditioned((3, 3)), normal((3, 2)))),
    S("MatrixInverse", "plain", mt.linalg.inv, args(well_conditioned((3, 3)))),
    S("MatrixInverse", "batched", mt.linalg.inv, args(well_conditioned((2, 3, 3)))),
    S("MatrixDeterminant", "plain", mt.linalg.det, args(well_conditioned((3, 3)))),
    S("MatrixDeterminant", "batched", mt.linalg.det, args(well_conditioned((2, 3, 3)))),
    # edge cases: scalars, negative and Tensor indices, empty axis lists, broadcast batches
    S("Sum", "scalar_input", lambda x: mt.reduce_sum(x * x), args(normal(()))),
    S("Sum", "axis_tensor", lambda x: mt.reduce_sum(x * x, axis=mt.constant([0, 1])),
      args(normal((2, 3)))),
    S("Mean", "empty_axis_list", lambda x: mt.reduce_mean(x * x, axis=[]), args(normal((2,)))),
    S("GatherV2", "scalar_index", lambda x: mt.gather(x, 1, axis=1) ** 2, args(normal((2, 3)))),
    S("GatherV2", "repeated_indices", lambda x: mt.gather(x, [2, 0, 2]) ** 2,
      args(normal((3, 2)))),
    S("StridedSlice", "negative_int_and_step", lambda x: x[-1, ::2] ** 2, args(normal((3, 4)))),
    S("StridedSlice", "tensor_index", lambda x: x[mt.constant(1)] ** 2, args(normal((3, 4)))),
    S("StridedSlice", "two_repeated_fancy", lambda x: x[[0, 0, 1], [2, 2, 0]] ** 2,
      args(normal((2, 3)))),
    S("StridedSlice", "fancy_after_slice", lambda x: x[:, [1, 1]] ** 2, args(normal((2, 3, 2)))),
    S("Einsum", "diagonal_ii", lambda a: mt.einsum("ii->i", a * a), args(normal((3, 3)))),
    S("Einsum", "dot", lambda a, b: mt.einsum("ij,ij->", a, b),
      args(normal((2, 3)), normal((2, 3)))),
    S("Einsum", "ellipsis_broadcast", lambda a, b: mt.einsum("...ij,...jk->...ik", a, b),
      args(normal((2, 2, 3)), normal((3, 2)))),
    S("Einsum", "repeated_and_shared", lambda a, b: mt.einsum("iij,j->i", a, b),
      args(normal((2, 2, 3)), normal((3,)))),
    S("PadV2", "tensor_paddings", lambda x: mt.pad(x, mt.constant([[1, 2]])) ** 2,
      args(normal((3,)))),
    S("Softmax", "vector", mt.nn.softmax, args(normal((4,)))),
    S("MatrixSolve", "both_batches_broadcast", mt.linalg.solve,
      args(well_conditioned((2, 1, 3, 3)), normal((4, 3, 2)))),
    S("MatrixDeterminant", "of_inverse", lambda a: mt.linalg.det(mt.linalg.inv(a)),
      args(well_conditioned((2, 2)))),
    S("BroadcastTo", "scalar", lambda x: mt.broadcast_to(x, [2, 3]) ** 2, args(normal(()))),
    S("SelectV2", "python_scalar_x", lambda c, y: mt.where(c > 0, 1.5, y * y),
      args(nonzero((2, 3)), normal((3,)))),
    S("Transpose", "negative_perm", lambda x: mt.transpose(x, [-1, 0, 1]) ** 2,
      args(normal((2, 3, 4)))),
    S("Reshape", "to_scalar", lambda x: mt.reshape(x, []) ** 2, args(normal((1,)))),
    S("Prod", "two_zeros_first_order", lambda x: mt.reduce_prod(x, axis=0),
      lambda rng: (np.array([[0.0, 2.0], [0.0, 3.0], [1.5, 0.0]]),), check={"order": 1}),
    S("Pow", "square_at_zero", lambda x: x ** 2.0, lambda rng: (np.array([0.0, 1.0]),)),
    # issue #13: the ops learners reach for
    S("Fill", "value", lambda v, x: mt.fill([2, 3], v) * x, args(normal(()), normal((2, 3)))),
    S("Fill", "value_squared_scalar_dims", lambda v: mt.fill([], v * v) * v, args(normal(()))),
    S("Cumsum", "axis1", lambda x: mt.math.cumsum(x, axis=1) ** 2, args(normal((2, 3)))),
    S("Cumsum", "exclusive_reverse_negative_axis",
      lambda x: mt.cumsum(x * x, axis=-2, exclusive=True, reverse=True),
      args(normal((3, 2, 2)))),
    S("Cumsum", "reverse", lambda x: mt.math.cumsum(x, reverse=True) * x, args(normal((4,)))),
    S("ReverseV2", "two_axes", lambda x: mt.reverse(x, [0, -1]) * x, args(normal((2, 3, 2)))),
    S("ReverseV2", "int_axis", lambda x: mt.reverse(x * x, 1), args(normal((2, 3)))),
    S("Split", "equal", lambda x: tuple(p ** 2 for p in mt.split(x, 3, axis=1)),
      args(normal((2, 6)))),
    S("Split", "one_piece_used", lambda x: mt.split(x, 2)[1] ** 2, args(normal((4, 2)))),
    S("SplitV", "sizes_minus_one", lambda x: tuple(p * p for p in mt.split(x, [1, -1, 2], -1)),
      args(normal((2, 6)))),
    S("OneHot", "on_off_values",
      lambda on, off: mt.one_hot([0, 2, -1], 3, on_value=on, off_value=off) ** 2,
      args(normal(()), normal(()))),
    S("OneHot", "axis0_2d_indices",
      lambda on, off: mt.one_hot([[1, 0], [3, 2]], 4, on_value=on * off, off_value=off, axis=0),
      args(normal(()), normal(()))),
    S("GatherV2", "boolean_mask", lambda x: mt.boolean_mask(
        x, np.array([[True, False, True], [False, True, True]])) ** 2, args(normal((2, 3)))),
    S("GatherV2", "boolean_mask_axis1", lambda x: mt.boolean_mask(
        x, mt.constant([False, True, True]), axis=1) ** 2, args(normal((2, 3, 2)))),
    S("Log", "reduce_logsumexp_axis1", lambda x: mt.math.reduce_logsumexp(x, axis=1),
      args(normal((2, 3)))),
    S("Exp", "reduce_logsumexp_all_keepdims",
      lambda x: mt.reduce_logsumexp(x * x, keepdims=True), args(normal((2, 3)))),
    S("Mean", "reduce_variance_axis0", lambda x: mt.math.reduce_variance(x, axis=0),
      args(normal((4, 3)))),
    S("Sqrt", "reduce_std_axis_list_keepdims",
      lambda x: mt.math.reduce_std(x, axis=[0, 2], keepdims=True), args(normal((3, 2, 2)))),
    S("Mul", "dropout_seeded", lambda x: mt.nn.dropout(x, 0.5, seed=3) * x, args(normal((3, 4)))),
    S("Mul", "dropout_noise_shape", lambda x: mt.nn.dropout(x, 0.3, noise_shape=[3, 1], seed=1),
      args(normal((3, 4)))),
    S("SparseSoftmaxCrossEntropyWithLogits", "plain",
      lambda logits: mt.nn.sparse_softmax_cross_entropy_with_logits([0, 2], logits),
      args(normal((2, 3)))),
    S("SparseSoftmaxCrossEntropyWithLogits", "rank3_logits",
      lambda logits: mt.nn.sparse_softmax_cross_entropy_with_logits([[0, 1], [2, 2]], logits),
      args(normal((2, 2, 3)))),
    S("Conv2D", "valid", lambda x, w: mt.nn.conv2d(x, w, 1, "VALID"),
      args(normal((2, 4, 4, 2)), normal((2, 2, 2, 3)))),
    S("Conv2D", "same_stride2_odd", lambda x, w: mt.nn.conv2d(x, w, [2, 2], "SAME"),
      args(normal((1, 5, 4, 2)), normal((3, 2, 2, 2)))),
    S("Conv2D", "valid_stride_2x1_squared", lambda x, w: mt.nn.conv2d(x, w, [1, 2, 1, 1],
                                                                     "VALID") ** 2,
      args(normal((1, 5, 4, 1)), normal((2, 3, 1, 2)))),
    S("Conv2DBackpropInput", "same_stride2",
      lambda w, dy: conv_ops.conv2d_backprop_input((1, 4, 3, 2), w, dy, 2, "SAME") ** 2,
      args(normal((3, 2, 2, 3)), normal((1, 2, 2, 3)))),
    S("Conv2DBackpropFilter", "valid",
      lambda x, dy: conv_ops.conv2d_backprop_filter(x, (2, 2, 2, 3), dy, 1, "VALID") ** 2,
      args(normal((2, 3, 3, 2)), normal((2, 2, 2, 3)))),
    # Chollet chapter 9: SeparableConv2D's depthwise step and its two gradient ops
    S("DepthwiseConv2dNative", "valid_multiplier2",
      lambda x, w: mt.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID") ** 2,
      args(normal((2, 4, 3, 2)), normal((2, 2, 2, 2)))),
    S("DepthwiseConv2dNative", "same_stride2_odd",
      lambda x, w: mt.nn.depthwise_conv2d(x, w, 2, "SAME") ** 2,
      args(normal((1, 5, 4, 3)), normal((3, 2, 3, 1)))),
    S("DepthwiseConv2dNativeBackpropInput", "same_stride2",
      lambda w, dy: mt.nn.depthwise_conv2d_backprop_input((1, 4, 3, 2), w, dy, 2, "SAME") ** 2,
      args(normal((3, 2, 2, 2)), normal((1, 2, 2, 4)))),
    S("DepthwiseConv2dNativeBackpropFilter", "valid",
      lambda x, dy: mt.nn.depthwise_conv2d_backprop_filter(x, (2, 2, 2, 3), dy, 1,
                                                           "VALID") ** 2,
      args(normal((2, 3, 3, 2)), normal((2, 2, 2, 6)))),
    S("MaxPool", "valid_2x2", lambda x: mt.nn.max_pool2d(x, 2, 2, "VALID") ** 2,
      distinct((2, 4, 4, 2))),
    S("MaxPool", "same_overlapping", lambda x: mt.nn.max_pool2d(x, 3, 2, "SAME") ** 2,
      distinct((1, 5, 5, 1))),
    # d2l chapter 7 (LeNet's pooling): AvgPool and its gradient op, padding not averaged in
    S("AvgPool", "valid_2x2", lambda x: mt.nn.avg_pool2d(x, 2, 2, "VALID") ** 2,
      args(normal((2, 4, 4, 2)))),
    S("AvgPool", "same_overlapping_3x2", lambda x: mt.nn.avg_pool2d(x, [3, 2], [2, 1], "SAME") ** 2,
      args(normal((1, 5, 4, 2)))),
    S("AvgPoolGrad", "same_stride2",
      lambda dy: conv_ops.avg_pool_grad((1, 5, 5, 2), dy, 3, 2, "SAME") ** 2,
      args(normal((1, 3, 3, 2)))),
    S("LinSpace", "scalars", lambda a, b: mt.linspace(a, b * b, 5), args(normal(()), normal(()))),
    S("LinSpace", "vectors_broadcast", lambda a, b: mt.linspace(a, b, 4) ** 2,
      args(normal((3,)), normal(()))),
    # issue #20: tensordot (one Einsum op) and matvec (ExpandDims, MatMul, Squeeze)
    S("Einsum", "tensordot_dot_same_tensor", lambda x: 2 * mt.tensordot(x, x, axes=1),
      args(normal((4,)))),
    S("Einsum", "tensordot_axes2", lambda a, b: mt.tensordot(a, b, 2),
      args(normal((2, 3, 4)), normal((3, 4, 2)))),
    S("Einsum", "tensordot_axes0_outer", lambda a, b: mt.tensordot(a, b * b, axes=0),
      args(normal((2,)), normal((3, 2)))),
    S("Einsum", "tensordot_axis_lists_negative", lambda a, b: mt.tensordot(
        a, b, axes=[[2, -3], [0, 1]]) ** 2, args(normal((2, 3, 4)), normal((4, 2, 3)))),
    S("Einsum", "tensordot_int_pair", lambda a, b: mt.tensordot(a, b, axes=[0, 1]),
      args(normal((3, 2)), normal((2, 3)))),
    S("MatMul", "matvec", lambda a, b: mt.linalg.matvec(a, b) ** 2,
      args(normal((3, 4)), normal((4,)))),
    S("MatMul", "matvec_transpose_a", lambda a, b: mt.linalg.matvec(a, b, transpose_a=True),
      args(normal((4, 3)), normal((4,)))),
    S("BatchMatMulV2", "matvec_broadcast_batch", lambda a, b: mt.linalg.matvec(
        a, b, adjoint_a=True) * b[..., :1], args(normal((2, 1, 3, 3)), normal((4, 3)))),
    # d2l chapter 11: tf.repeat and tf.sort, made of a GatherV2 (the copies' cotangents add up;
    # each sorted entry's goes back to where it came from)
    S("GatherV2", "repeat_per_entry_axis1", lambda x: mt.repeat(x, [2, 0, 3], axis=1) ** 2,
      args(normal((2, 3)))),
    S("GatherV2", "repeat_flattened", lambda x: mt.repeat(x * x, 2), args(normal((2, 2)))),
    S("GatherV2", "sort_axis0", lambda x: mt.sort(x, axis=0) ** 3, distinct((3, 2))),
    S("GatherV2", "sort_descending_last_axis",
      lambda x: mt.sort(x, direction="DESCENDING") * x, distinct((2, 4))),
    # user-defined gradients
    S("CustomGradient", "log1pexp", log1pexp, args(normal((2, 3)))),
    S("CustomGradient", "two_in_two_out", scaled_product, args(normal((3,)), normal((3,)))),
    # the k largest entries (d2l 10.8, beam search): distinct values, no ties to move
    S("TopKV2", "last_axis", lambda x: mt.math.top_k(x, k=2).values ** 2, args(normal((2, 3, 4)))),
    S("TopKV2", "vector_all", lambda x: mt.nn.top_k(x * x, k=5)[0], args(normal((5,)))),
]

# Ops registered as not differentiable: a function through which the gradient must be None.
NO_GRADIENT_SPECS = {
    "Round": lambda x: mt.round(x * 3.0),
    "Floor": lambda x: mt.math.floor(x * 3.0),
    "Ceil": lambda x: mt.math.ceil(x * 3.0),
    "FloorDiv": lambda x: mt.math.floordiv(x * 3.0, 2.0),
    "Greater": lambda x: mt.cast(mt.math.greater(x, 0.0), x.dtype),
    "GreaterEqual": lambda x: mt.cast(mt.math.greater_equal(x, 0.0), x.dtype),
    "Less": lambda x: mt.cast(mt.math.less(x, 0.0), x.dtype),
    "LessEqual": lambda x: mt.cast(mt.math.less_equal(x, 0.0), x.dtype),
    "Equal": lambda x: mt.cast(mt.math.equal(x, x), x.dtype),
    "NotEqual": lambda x: mt.cast(mt.math.not_equal(x, 0.0), x.dtype),
    "StopGradient": lambda x: mt.stop_gradient(x * x),
    "ArgMax": lambda x: mt.cast(mt.math.argmax(x), x.dtype),
    "ArgMin": lambda x: mt.cast(mt.math.argmin(x * x), x.dtype),
    "IsNan": lambda x: mt.cast(mt.math.is_nan(x * x), x.dtype),
    "IsInf": lambda x: mt.cast(mt.math.is_inf(x * x), x.dtype),
    "IsFinite": lambda x: mt.cast(mt.math.is_finite(x * x), x.dtype),
}

# Ops whose gradient is deliberately not registered (a seed lesson).
UNREGISTERED = {"AdjustContrastv2"}


def recorded_op_types(fn, arrays):
    """The op types that running ``fn`` on ``arrays`` records on a tape watching them."""
    xs = [mt.constant(a) for a in arrays]
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        fn(*xs)
    return {op.type for op in tape.operations} | (
        {"CustomGradient"} if any(op.custom for op in tape.operations) else set())
