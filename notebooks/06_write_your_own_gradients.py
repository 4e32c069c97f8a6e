# %% [markdown]
# # 06 · Write your own gradients
#
# Every op in minitape is two functions side by side: its forward (NumPy) and its gradient
# (a *vector-Jacobian product*: given `dy`, the gradient of some loss with respect to the op's
# output, return the gradient with respect to each input). In this lesson you write gradients
# yourself, for new op types made with `mt.primitive` and for `mt.custom_gradient` functions,
# and `mt.viz.check_tape` tells you at once whether each one is right. When one is wrong, it
# names the op, draws it in red and shows your rule's numbers next to the finite differences.
#
# **You will learn to:**
# - check every op of a tape against finite differences with `mt.viz.check_tape`, and read
#   its report;
# - write gradient functions `fn(op, dy)` for one-input and two-input ops, from `op.inputs`,
#   `op.outputs` and `op.get_attr`;
# - undo broadcasting in a gradient (sum over the axes broadcasting added);
# - add a new op with `mt.primitive` and `mt.RegisterGradient`, and a numerically stable
#   gradient with `mt.custom_gradient`;
# - find the one wrong gradient in a program with `check_tape`.
#
# **How the exercises work.** Each exercise cell has a place for your code between two marker
# lines starting with `###` (nbgrader's solution markers); the cell below it checks your answer
# and is worth one point. This copy of the lesson holds worked solutions. Its exercise copy,
# `notebooks/exercises/06_write_your_own_gradients.ipynb` (made by `nbgrader
# generate_assignment`, see the README's "Teaching with minitape"), has `# YOUR CODE HERE` and
# `raise NotImplementedError()` in their place, and its check cells fail (with a message saying
# what is missing) until you fill the gaps in.

# %% [markdown]
# ## Setup

# %%
import numpy as np

import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

# %% [markdown]
# ## 1. Checking a gradient, op by op
#
# A gradient rule can be checked without knowing the right answer: nudge an input by a tiny
# `h` and see how much the output moves. For one op `f` and an output gradient `u`,
# the rule's answer for input element `i` must match the central difference
#
# > ∂/∂xᵢ sum(u · f(x))  ≈  ( sum(u · f(x + h·eᵢ)) − sum(u · f(x − h·eᵢ)) ) / 2h
#
# where `eᵢ` is 1 at element `i` and 0 elsewhere.
#
# `mt.viz.check_tape(tape, target, sources)` does this for *every op* the tape recorded between
# the sources and the target, each on its own, at the inputs it recorded, in float64, with a
# random `u`. Here is a function whose gradient was written by hand, wrongly: the derivative of
# x² is 2x, not x.

# %%
@mt.custom_gradient
def square(x):
    def grad(dy):
        return dy * x          # wrong: the derivative of x**2 is 2 * x

    return x * x, grad


x = mt.constant([1.0, 2.0, 3.0])
with mt.GradientTape() as tape:
    tape.watch(x)
    y = mt.reduce_sum(mt.math.sin(square(x)))

check = mt.viz.check_tape(tape, y, x)
print(check)

# %% [markdown]
# `#2` is the op's number on the tape, as `draw_tape` numbers it. (Op `#1` is the `x * x`
# inside `square`: the tape records it too, but it does not lie between `x` and `y`, the custom
# gradient stands in for it.) The rule's numbers are exactly half the finite differences: the
# missing factor 2. In a notebook the check also draws the tape with the failing op in red:

# %% tags=["nbval-ignore-output"]
check

# %% [markdown]
# `mt.testing.check_grads`, like PyTorch's `gradcheck`, checks a whole function. It finds that
# something is wrong, but not where:

# %%
try:
    mt.testing.check_grads(lambda x: mt.reduce_sum(mt.math.sin(square(x))), [1.0, 2.0, 3.0],
                           order=1, modes=["rev"])
except AssertionError as error:
    print("AssertionError:", str(error).split(":")[0], "disagrees with finite differences")

# %% [markdown]
# A few things `check_tape` reports besides `ok` and `failed`:
#
# - ops with no gradient by design (`StopGradient`, comparisons, integer results) are
#   `skipped`;
# - at a point where the forward has a kink (`abs` at 0, `relu` at 0, `maximum` at a tie) no
#   rule can be right on both sides: such ops are `not differentiable`, which is not an error;
# - it needs the tensors the tape saved: use a persistent tape, or call it before `gradient`.

# %%
x = mt.constant([0.0, 1.5])
with mt.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = mt.reduce_sum(mt.abs(x) * mt.stop_gradient(x))
print(mt.viz.check_tape(tape, y, x))

# %% [markdown]
# ## 2. The exercises
#
# Each exercise defines a new op type with `mt.primitive` (a NumPy forward) and registers its
# gradient with `mt.RegisterGradient`, exactly as minitape's own ops do (open
# `minitape/ops/math_ops.py` to compare). `override=True` lets you re-run a cell: without it,
# registering a second gradient for one op type raises `KeyError`.
#
# Inside a gradient function:
# - `op.inputs` and `op.outputs` are the op's input and output Tensors;
# - `dy` has the output's shape; return one gradient per input, each of that input's shape;
# - write it with minitape operations (`*`, `mt.exp`, `mt.matmul`, ...), not NumPy, so that the
#   result is a Tensor an outer tape could differentiate again.
#
# ### Exercise 1 · Sigmoid
#
# σ(x) = 1 / (1 + e⁻ˣ) has the derivative σ(x) · (1 − σ(x)). The op keeps
# its output, so use `y = op.outputs[0]`.

# %% nbgrader={"grade": false, "grade_id": "exercise-1", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MySigmoid")
def my_sigmoid(x):
    return 1 / (1 + np.exp(-x))


@mt.RegisterGradient("MySigmoid", override=True)
def _my_sigmoid_grad(op, dy):
    (y,) = op.outputs
    ### BEGIN SOLUTION
    return dy * y * (1 - y)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-1-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.constant([-3.0, -0.5, 0.0, 2.0])
with mt.GradientTape() as tape:
    tape.watch(x)
    y = my_sigmoid(x)
mt.viz.check_tape(tape, y, x).assert_ok("Exercise 1")

# %% [markdown]
# ### Exercise 2 · Tanh
#
# d/dx tanh(x) = 1 − tanh²(x): again a function of the output.

# %% nbgrader={"grade": false, "grade_id": "exercise-2", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MyTanh")
def my_tanh(x):
    return np.tanh(x)


@mt.RegisterGradient("MyTanh", override=True)
def _my_tanh_grad(op, dy):
    (y,) = op.outputs
    ### BEGIN SOLUTION
    return dy * (1 - y * y)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-2-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.constant([[-2.0, -0.1], [0.4, 1.5]])
with mt.GradientTape() as tape:
    tape.watch(x)
    y = my_tanh(x)
mt.viz.check_tape(tape, y, x).assert_ok("Exercise 2")

# %% [markdown]
# ### Exercise 3 · Softplus
#
# softplus(x) = log(1 + eˣ), computed stably with `np.logaddexp`. Its derivative is
# the sigmoid of the *input*: `op.inputs[0]` (`mt.math.sigmoid` is there for you).

# %% nbgrader={"grade": false, "grade_id": "exercise-3", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MySoftplus")
def my_softplus(x):
    return np.logaddexp(0, x)


@mt.RegisterGradient("MySoftplus", override=True)
def _my_softplus_grad(op, dy):
    (x,) = op.inputs
    ### BEGIN SOLUTION
    return dy * mt.math.sigmoid(x)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-3-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.constant([-4.0, 0.0, 0.7, 30.0])
with mt.GradientTape() as tape:
    tape.watch(x)
    y = my_softplus(x)
mt.viz.check_tape(tape, y, x).assert_ok("Exercise 3")

# %% [markdown]
# ### Exercise 4 · Pow, both inputs
#
# z = xʸ for positive `x`. Two inputs, so return two gradients:
# ∂z/∂x = y · xʸ⁻¹ and ∂z/∂y = xʸ · log(x) = z · log(x).

# %% nbgrader={"grade": false, "grade_id": "exercise-4", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MyPow")
def my_pow(x, y):
    return x ** y


@mt.RegisterGradient("MyPow", override=True)
def _my_pow_grad(op, dy):
    x, y = op.inputs
    (z,) = op.outputs
    ### BEGIN SOLUTION
    return dy * y * x ** (y - 1), dy * z * mt.math.log(x)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-4-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.constant([0.5, 1.0, 2.0])
p = mt.constant([3.0, -1.0, 0.5])
with mt.GradientTape() as tape:
    tape.watch([x, p])
    z = my_pow(x, p)
mt.viz.check_tape(tape, z, [x, p]).assert_ok("Exercise 4")

# %% [markdown]
# ### Exercise 5 · MatMul, both inputs
#
# C = A B with A of shape `(m, k)` and B of shape `(k, n)`. The gradients are matrix
# products too: dA = dC Bᵀ (shape `(m, k)`) and dB = Aᵀ dC (shape `(k, n)`). Check the
# shapes before the algebra: that is usually enough to get them right. `mt.matmul` takes
# `transpose_a=True` / `transpose_b=True`.

# %% nbgrader={"grade": false, "grade_id": "exercise-5", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MyMatMul")
def my_matmul(a, b):
    return a @ b


@mt.RegisterGradient("MyMatMul", override=True)
def _my_matmul_grad(op, dy):
    a, b = op.inputs
    ### BEGIN SOLUTION
    return mt.matmul(dy, b, transpose_b=True), mt.matmul(a, dy, transpose_a=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-5-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
a = mt.random.normal((2, 3))
b = mt.random.normal((3, 4))
with mt.GradientTape() as tape:
    tape.watch([a, b])
    c = my_matmul(a, b)
mt.viz.check_tape(tape, c, [a, b]).assert_ok("Exercise 5")

# %% [markdown]
# ### Exercise 6 · Add with broadcasting
#
# `x + b` with `x` of shape `(2, 3, 4)` and `b` of shape `(3, 1)`: NumPy stretches `b` to
# `(2, 3, 4)`. Each element of `b` was used in many places, so its gradient is the *sum* of
# `dy` over those places: over the leading axes broadcasting added, and over each axis where
# `b` has size 1. Write `sum_to_shape(g, shape)`, which sums `g` down to `shape`
# (`mt.reduce_sum(g, axis=..., keepdims=True)` keeps a summed axis with size 1); the gradient
# function uses it for both inputs.

# %% nbgrader={"grade": false, "grade_id": "exercise-6", "locked": false, "schema_version": 3, "solution": true, "task": false}
def sum_to_shape(g, shape):
    """Sum ``g`` (the shape of a broadcast result) down to ``shape``."""
    ### BEGIN SOLUTION
    while g.ndim > len(shape):                       # axes broadcasting added in front
        g = mt.reduce_sum(g, axis=0)
    for axis, n in enumerate(shape):                 # axes of size 1 that were stretched
        if n == 1 and g.shape[axis] != 1:
            g = mt.reduce_sum(g, axis=axis, keepdims=True)
    return g
    ### END SOLUTION


@mt.primitive("MyAdd")
def my_add(x, y):
    return x + y


@mt.RegisterGradient("MyAdd", override=True)
def _my_add_grad(op, dy):
    return sum_to_shape(dy, op.input_shapes[0]), sum_to_shape(dy, op.input_shapes[1])


# %% nbgrader={"grade": true, "grade_id": "exercise-6-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.random.normal((2, 3, 4))
b = mt.random.normal((3, 1))
with mt.GradientTape() as tape:
    tape.watch([x, b])
    y = my_add(x, b)
mt.viz.check_tape(tape, y, [x, b]).assert_ok("Exercise 6")

# %% [markdown]
# ### Exercise 7 · Softmax
#
# y = softmax(x) along the last axis. Each output depends on every input of its row,
# but the vector-Jacobian product is short: dx = y · (dy − sum(dy · y)), the products
# elementwise and the sum taken along the last axis (keep it with `keepdims=True` so that it
# broadcasts back).

# %% nbgrader={"grade": false, "grade_id": "exercise-7", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MySoftmax")
def my_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@mt.RegisterGradient("MySoftmax", override=True)
def _my_softmax_grad(op, dy):
    (y,) = op.outputs
    ### BEGIN SOLUTION
    return y * (dy - mt.reduce_sum(dy * y, axis=-1, keepdims=True))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-7-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.random.normal((2, 5))
with mt.GradientTape() as tape:
    tape.watch(x)
    y = my_softmax(x)
mt.viz.check_tape(tape, y, x).assert_ok("Exercise 7")

# %% [markdown]
# ### Exercise 8 · LogSumExp, a new op
#
# lse(x) = log(sum(eˣ)) along the last axis, computed as
# m + log(sum(eˣ⁻ᵐ)) with m = max(x) so that it never overflows. The output
# has one axis less than the input: `(2, 5)` gives `(2,)`. Its derivative with respect to
# each element of x is the same element of softmax(x), so dx = dy[..., None] · softmax(x):
# give `dy` its axis back with `mt.expand_dims(dy, -1)`.

# %% nbgrader={"grade": false, "grade_id": "exercise-8", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.primitive("MyLogSumExp")
def my_logsumexp(x):
    m = x.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[..., 0]


@mt.RegisterGradient("MyLogSumExp", override=True)
def _my_logsumexp_grad(op, dy):
    (x,) = op.inputs
    ### BEGIN SOLUTION
    return mt.expand_dims(dy, -1) * mt.nn.softmax(x, axis=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-8-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.constant([[1.0, 2.0, 3.0, 4.0, 5.0], [1000.0, 1000.0, 0.0, -3.0, 999.0]])
with mt.GradientTape() as tape:
    tape.watch(x)
    y = my_logsumexp(x)
mt.viz.check_tape(tape, y, x).assert_ok("Exercise 8")

# %%
print(y)   # no overflow: 1000 + log(2 + e**-1)

# %% [markdown]
# ### Exercise 9 · A numerically stable custom gradient
#
# The advanced guide's `log1pexp(x) = log(1 + e^x)`. Its derivative eˣ / (1 + eˣ), written
# that way, is `inf / inf = nan` at `x = 100` in float32. Write the gradient in a form that
# never divides two huge numbers: 1 − 1 / (1 + eˣ). `e` (computed in the forward) is
# available to the gradient function.

# %% nbgrader={"grade": false, "grade_id": "exercise-9", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.custom_gradient
def log1pexp(x):
    e = mt.exp(x)

    def grad(dy):
        ### BEGIN SOLUTION
        return dy * (1 - 1 / (1 + e))
        ### END SOLUTION

    return mt.math.log(1 + e), grad


# %% nbgrader={"grade": true, "grade_id": "exercise-9-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
x = mt.constant([-3.0, 0.0, 10.0, 100.0])
with np.errstate(over="ignore"):   # e**100 overflows in float32: on purpose
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    print(mt.viz.check_tape(tape, y, x).assert_ok("Exercise 9").summary())

    with mt.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    dy_dx = tape.gradient(y, x)
assert np.all(np.isfinite(dy_dx.numpy())), f"Exercise 9: the gradient is {dy_dx.numpy()}"
print(dy_dx)

mt.testing.check_grads(log1pexp, [-3.0, 0.0, 2.5], order=2)
print("log1pexp: first and second derivatives agree with finite differences")

# %% [markdown]
# Three checks in one cell. `check_tape` compares in float64, where e¹⁰⁰ is still finite.
# Then the float32 tape itself is asked for the gradient at 100: there the forward's `mt.exp`
# overflows, `e` is `inf`, and yet 1 − 1 / (1 + ∞) = 1 is the right slope. Last,
# `mt.testing.check_grads` checks the whole function, to second order, in reverse and forward
# mode: the gradient is written with minitape ops, so it can be differentiated again.

# %% [markdown]
# ### Exercise 10 · Find the wrong gradient
#
# Someone wrote three small ops and a training loss that uses them. The loss trains badly, and
# `check_grads` on the whole loss says only "wrong". Use `check_tape` to find the op whose
# gradient is wrong, then register a correct gradient for it (with `override=True`).

# %%
@mt.primitive("Swish")
def swish(x):
    return x / (1 + np.exp(-x))


@mt.RegisterGradient("Swish", override=True)
def _swish_grad(op, dy):
    (x,) = op.inputs
    s = mt.math.sigmoid(x)
    return dy * (s + x * s * (1 + s))


@mt.primitive("Cube")
def cube(x):
    return x ** 3


@mt.RegisterGradient("Cube", override=True)
def _cube_grad(op, dy):
    (x,) = op.inputs
    return dy * 3 * x * x


@mt.primitive("ScaledTanh")
def scaled_tanh(x, scale=1.0):
    return scale * np.tanh(x / scale)


@mt.RegisterGradient("ScaledTanh", override=True)
def _scaled_tanh_grad(op, dy):
    (y,) = op.outputs
    scale = op.get_attr("scale")
    return dy * (1 - (y / scale) ** 2)


w = mt.Variable(mt.random.normal((3, 4)), name="w")
inputs = mt.random.normal((5, 3))
with mt.GradientTape(persistent=True) as tape:
    h = scaled_tanh(inputs @ w, scale=2.0)
    h = swish(h) + 0.1 * cube(h)
    loss = mt.reduce_mean(h * h)

# %% [markdown]
# Check every op between `w` and `loss`; the drawing shows the failing op in red, its rule's
# values next to the finite differences:

# %% tags=["nbval-ignore-output"]
check = mt.viz.check_tape(tape, loss, w)
check

# %%
print([r.label() for r in check.failing])

# %% [markdown]
# Now write the right gradient for that op. (Its derivative: with s = σ(x),
# d/dx (x · s) = s + x · s · (1 − s).) The check runs on the same tape: gradients are
# looked up when they are used, so the new rule replaces the old one.

# %% nbgrader={"grade": false, "grade_id": "exercise-10", "locked": false, "schema_version": 3, "solution": true, "task": false}
@mt.RegisterGradient("Swish", override=True)
def _swish_grad_fixed(op, dy):
    (x,) = op.inputs
    ### BEGIN SOLUTION
    s = mt.math.sigmoid(x)
    return dy * (s + x * s * (1 - s))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "exercise-10-check", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false} tags=["exercise-check"]
mt.viz.check_tape(tape, loss, w).assert_ok("Exercise 10")

# %% [markdown]
# ## Exercises
#
# A few more questions about what you have just done.
#
# 1. `check_tape` multiplies the op's output by a random `u` before differencing. Why not check
#    the full Jacobian instead, and why random rather than all ones?
#
# <details><summary>Answer</summary>
#
# A gradient function computes a vector-Jacobian product, `u^T J`, never `J` itself; checking
# that product is checking exactly what the backward pass uses, with one forward evaluation per
# perturbed input element instead of one per output element too. With `u` all ones, a rule
# that mixes up two outputs (say, the rows of a softmax) could still sum to the right numbers;
# a random `u` weighs every output differently, so such a mix-up shows.
#
# </details>

# %% [markdown]
# 2. Register a wrong gradient for `MyTanh` (e.g. `dy * (1 - y)`) and run
#    `mt.viz.check_tape` on a tape that uses `my_tanh` *and* `my_sigmoid`. Which op is drawn
#    in red, and what does `mt.testing.check_grads` say about the same function?
#
# <details><summary>Answer</summary>
#
# Only the `MyTanh` op fails; the `MySigmoid` op stays `ok`, because each op is checked on its
# own at its recorded inputs. `check_grads` raises an `AssertionError` saying that the gradient
# of the whole function disagrees with finite differences, without naming an op. Re-run the
# Exercise 2 cell afterwards to restore the right rule.
#
# </details>

# %% [markdown]
# 3. Why is `relu` at exactly 0 reported as `not differentiable` rather than `failed`, whatever
#    its rule returns there?
#
# <details><summary>Answer</summary>
#
# `check_tape` also compares the one-sided differences `(f(x + h) - f(x)) / h` and
# `(f(x) - f(x - h)) / h`. At a kink they differ (1 and 0 for relu at 0), so the function has no
# derivative there and any rule (TensorFlow picks 0) is a convention, not an error.
#
# </details>
