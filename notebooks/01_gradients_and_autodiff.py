# %% [markdown]
# # 01 · Gradients and automatic differentiation
#
# Automatic differentiation is what makes training neural networks possible: the computer
# works out the derivative of a loss with respect to every parameter, exactly, by the chain rule.
# This lesson follows TensorFlow's guide *Automatic Differentiation and Gradients*, running
# every example on **minitape**, a small re-implementation of `tf.GradientTape` on NumPy that
# you can read from end to end.
#
# **You will learn to:**
# - record a computation on a `GradientTape` and ask it for `gradient(target, sources)`;
# - take gradients with respect to Variables, a model's `trainable_variables`, plain Tensors
#   (`watch`) and intermediate results;
# - use a `persistent` tape, and see what a tape costs in memory;
# - understand what happens with non-scalar targets and Python control flow;
# - diagnose every way a gradient can come back `None` (with `mt.viz.explain`), what happens when
#   an op has no gradient, and how to get zeros instead of `None`.
#
# The code is the guide's with `tf.` replaced by `mt.`. Where the guide's numbers do not depend on
# random values, the outputs below are the guide's numbers.

# %% [markdown]
# ## Setup
#
# Import minitape as `mt`. The last line is for lessons: it seeds the random numbers, so
# every run draws the same ones, and prints results the way the guides print them, with
# arrays to 5 decimals (their last digits differ from one CPU to another).

# %%
import matplotlib.pyplot as plt
import numpy as np

import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

# %% [markdown]
# ## Computing gradients
#
# To differentiate automatically, minitape needs to remember what operations happen in what
# order during the *forward pass*. Then, during the *backward pass*, it walks this list of
# operations in reverse order to compute gradients.
#
# ### Gradient tapes
#
# `mt.GradientTape` records the operations executed inside its context onto a "tape". The tape
# then computes the gradient of a recorded computation with *reverse-mode differentiation*:

# %%
x = mt.Variable(3.0)

with mt.GradientTape() as tape:
    y = x**2

# %% [markdown]
# Once you have recorded some operations, use `GradientTape.gradient(target, sources)` to
# calculate the gradient of some target (often a loss) relative to some source (often the
# model's variables):

# %%
# dy = 2x * dx
dy_dx = tape.gradient(y, x)
dy_dx.numpy()

# %% [markdown]
# What did the tape record? `mt.viz.draw_tape` draws it: the Variable `x` (a source), the `Pow`
# operation with its exponent 2 (a constant, grey: no gradient goes to it), and the result `y`.
# After `gradient`, red dashed arrows show the way the gradient came back, and each tensor it
# reached shows it in red (`grad 6.0` at `x`).

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, y, x)

# %% [markdown]
# The same with another starting value: at x = 4 the derivative of x² is 8.

# %%
x = mt.Variable(4.0)

with mt.GradientTape() as tape:
    y = x**2

dy_dx = tape.gradient(y, x)
print(dy_dx.numpy())

# %% [markdown]
# The example above uses scalars, but a tape works as easily on any tensor. The values of `w`
# are random, so your numbers depend on the seed set in the setup cell.

# %%
w = mt.Variable(mt.random.normal((3, 2)), name='w')
b = mt.Variable(mt.zeros(2, dtype=mt.float32), name='b')
x = [[1., 2., 3.]]

with mt.GradientTape(persistent=True) as tape:
    y = x @ w + b
    loss = mt.reduce_mean(y**2)

# %% [markdown]
# To get the gradient of `loss` with respect to both variables, pass both as sources. The tape
# accepts any nested combination of lists and dictionaries and returns the gradient structured
# the same way:

# %%
[dl_dw, dl_db] = tape.gradient(loss, [w, b])

# %% [markdown]
# The gradient with respect to each source has the shape of the source:

# %%
print(w.shape)
print(dl_dw.shape)

# %% [markdown]
# Here is the gradient calculation again, this time passing a dictionary of variables:

# %%
my_vars = {
    'w': w,
    'b': b
}

grad = tape.gradient(loss, my_vars)
grad['b']

# %% [markdown]
# Printing a tensor shows its values, shape and dtype. Print both results: the list and the
# dictionary hold the same gradients:

# %%
print("dl/dw: ", dl_dw)
print("dl/db: ", dl_db)
print()
print("dl/dw: ", grad['w'])
print("dl/db: ", grad['b'])

# %% [markdown]
# Since `loss = mean(y²)` with `y = x @ w + b`, the gradient for `b` is `2·y / 2 = y`, and for
# `w` it is `xᵀ @ dl_db`: each row of `dl_dw` is `dl_db` times 1, 2 and 3. Check it:

# %%
print(np.allclose(dl_db.numpy(), y.numpy()[0]))
print(np.allclose(dl_dw.numpy(), np.array(x).T @ dl_db.numpy()[None, :]))

# %% [markdown]
# ## Gradients with respect to a model
#
# It is common to collect Variables into an `mt.Module` or one of its subclasses (the layers in
# `mt.layers`). A module gathers its variables in `Module.trainable_variables`, so the gradients
# with respect to all of them take a few lines:

# %%
layer = mt.layers.Dense(2, activation='relu')
x = mt.constant([[1., 2., 3.]])

with mt.GradientTape() as tape:
    # Forward pass
    y = layer(x)
    loss = mt.reduce_mean(y**2)

# Calculate gradients with respect to every trainable variable
grad = tape.gradient(loss, layer.trainable_variables)

# %%
for var, g in zip(layer.trainable_variables, grad):
    print(f'{var.name}, shape: {g.shape}')

# %% [markdown]
# A variable's `path` includes the layer's name, as TensorFlow's full names did
# (`dense/kernel:0` in older versions; minitape has no `:0` suffix). Feed the layer integers
# instead: like Keras, the layer casts them to its float dtype.

# %%
x = mt.constant([[1, 2, 3]])

with mt.GradientTape() as tape:
    y = layer(x)
    loss = mt.reduce_mean(y**2)

grad = tape.gradient(loss, layer.trainable_variables)
for var, g in zip(layer.trainable_variables, grad):
    print(f'{var.path}, shape: {g.shape}, dtype: {g.dtype}')

# %% [markdown]
# ## Controlling what the tape watches
#
# The default behavior is to record all operations after accessing a trainable `mt.Variable`.
# The reasons for this are:
#
# - The tape needs to know which operations to record in the forward pass to calculate the
#   gradients in the backwards pass.
# - The tape holds references to intermediate outputs, so you don't want to record unnecessary
#   operations.
# - The most common use case involves calculating the gradient of a loss with respect to all a
#   model's trainable variables.
#
# For example, the following fails to calculate a gradient for three of the four sources,
# because an `mt.Tensor` is not "watched" by default, and the second `mt.Variable` is not
# trainable:

# %%
# A trainable variable
x0 = mt.Variable(3.0, name='x0')
# Not trainable
x1 = mt.Variable(3.0, name='x1', trainable=False)
# Not a Variable: A variable + tensor returns a tensor.
x2 = mt.Variable(2.0, name='x2') + 1.0
# Not a variable
x3 = mt.constant(3.0, name='x3')

with mt.GradientTape() as tape:
    y = (x0**2) + (x1**2) + (x2**2)

grad = tape.gradient(y, [x0, x1, x2, x3])

for g in grad:
    print(g)

# %% [markdown]
# You can list the variables being watched by the tape with `GradientTape.watched_variables`:

# %%
[var.name for var in tape.watched_variables()]

# %% [markdown]
# `mt.GradientTape` provides hooks that give you control over what is or is not watched.
# To record gradients with respect to an `mt.Tensor`, call `GradientTape.watch(x)`:

# %%
x = mt.constant(3.0)
with mt.GradientTape() as tape:
    tape.watch(x)
    y = x**2

# dy = 2x * dx
dy_dx = tape.gradient(y, x)
print(dy_dx.numpy())

# %% [markdown]
# Conversely, to disable the default behavior of watching all trainable Variables, set
# `watch_accessed_variables=False` when creating the tape. This calculation uses two variables,
# but only connects the gradient for one of them:

# %%
x0 = mt.Variable(0.0)
x1 = mt.Variable(10.0)

with mt.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(x1)
    y0 = mt.math.sin(x0)
    y1 = mt.nn.softplus(x1)
    y = y0 + y1
    ys = mt.reduce_sum(y)

# %% [markdown]
# Since `GradientTape.watch` was not called on `x0`, no gradient is computed with respect to it:

# %%
# dys/dx1 = exp(x1) / (1 + exp(x1)) = sigmoid(x1)
grad = tape.gradient(ys, {'x0': x0, 'x1': x1})

print('dy/dx0:', grad['x0'])
print('dy/dx1:', grad['x1'].numpy())

# %% [markdown]
# `watch` works on anything floating. Turn off automatic watching and watch the non-trainable
# Variable `x1` and the Tensor `x2` by hand. Now those two get gradients (2·3 = 6 and 2·4 = 8)
# and the trainable `x0`, never watched, gets `None`:

# %%
# a trainable variable
x0 = mt.Variable(3.0, name='x0')
# not trainable
x1 = mt.Variable(3.0, trainable=False, name='x1')
# not a variable: mt.Variable + mt.Tensor = mt.Tensor
x2 = mt.Variable(3.0, name='x2') + 1.0

with mt.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(x1)
    tape.watch(x2)
    y = (x0**2) + (x1**2) + (x2**2)

grad = tape.gradient(y, [x0, x1, x2])
grad

# %% [markdown]
# ## Intermediate results
#
# You can also request gradients of the output with respect to intermediate values computed
# inside the `mt.GradientTape` context.

# %%
x = mt.constant(3.0)

with mt.GradientTape() as tape:
    tape.watch(x)
    y = x * x
    z = y * y

# Use the tape to compute the gradient of z with respect to the
# intermediate value y.
# dz_dy = 2 * y and y = x ** 2 = 9
print(tape.gradient(z, y).numpy())

# %% [markdown]
# The drawing shows the two `Mul` operations; the gradient that reached `y` is the 18 we asked
# for, and `x` and the first `Mul` are greyed out because they do not lie between the target
# and the source.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, z, y)

# %% [markdown]
# ### Persistent tapes
#
# By default, the resources held by a `GradientTape` are released as soon as the
# `GradientTape.gradient` method is called. To compute multiple gradients over the same
# computation, create a gradient tape with `persistent=True`. This allows multiple calls to
# `gradient`, as the resources are released when the tape object is garbage collected.
# For example:

# %%
x = mt.constant([1, 3.0])
with mt.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = x * x
    z = y * y

print(tape.gradient(z, x).numpy())  # [4.0, 108.0] (4 * x**3 at x = [1.0, 3.0])
print(tape.gradient(y, x).numpy())  # [2.0, 6.0] (2 * x at x = [1.0, 3.0])

# %%
del tape   # Drop the reference to the tape

# %% [markdown]
# The same with a `float64` Variable; the dtype carries through:

# %%
x = mt.Variable([1, 2, 3], dtype=mt.float64)

with mt.GradientTape(persistent=True) as tape:
    y = x**2
    z = y**2

print(repr(tape.gradient(y, x).numpy()))  # dy_dx = 2 * x
print(repr(tape.gradient(z, x).numpy()))  # dz_dx = dz_dy * dy_dx = 2 * y * 2 * x
del tape

# %% [markdown]
# A non-persistent tape refuses a second question, and says why:

# %%
x = mt.constant(3.0)
with mt.GradientTape() as tape:
    tape.watch(x)
    y = x * x

print(tape.gradient(y, x).numpy())
try:
    tape.gradient(y, x)
except RuntimeError as e:
    print(f'{type(e).__name__}: {e}')

# %% [markdown]
# ## Notes on performance
#
# - There is a tiny overhead associated with doing operations inside a gradient tape context.
#   For most eager execution this will not be a noticeable cost, but you should still use tape
#   context around the areas only where it is required.
# - Gradient tapes use memory to store intermediate results, including inputs and outputs, for
#   use during the backwards pass.
# - For efficiency, some ops (like `ReLU`) don't need to keep their intermediate results and they
#   are pruned during the forward pass. However, if you use `persistent=True` on your tape,
#   nothing is discarded and your peak memory usage will be higher.
#
# Let us *see* all three. First the overhead: the same small computation, outside a tape and
# inside one. What holds on every machine: the tape adds a small, fixed cost for each op it
# records (it notes the op and keeps its inputs), whatever the size of the arrays, so the
# larger the arrays, the smaller its share of a step. The times themselves depend on your
# machine, and on a busy one they jump from run to run: the cell times the two in turn,
# several times, and keeps the fastest of each (the closest to the true cost; the difference
# can even come out as 0). The lesson is stored without the times: run the cell to see yours.

# %% tags=["nbval-skip"]
import timeit

a = mt.ones([100, 100])  # ones, not random: the random numbers below stay the same
wa = mt.Variable(mt.ones([100, 100]))

def step():
    return mt.reduce_mean(mt.nn.relu(a @ wa) ** 2)

def step_on_tape():
    with mt.GradientTape():
        return step()

plain, taped = [], []
for _ in range(15):   # in turn, so that a busy moment slows both alike
    plain.append(timeit.timeit(step, number=20) / 20)
    taped.append(timeit.timeit(step_on_tape, number=20) / 20)
plain, taped = min(plain), min(taped)
extra = max(taped - plain, 0.0)
print(f'outside a tape: {plain * 1e6:.0f} µs per step')
print(f'inside a tape:  {taped * 1e6:.0f} µs per step')
if extra > 0:
    print(f'the tape adds {extra * 1e6:.0f} µs per step: {extra / 4 * 1e6:.1f} µs for each of '
          f'the 4 ops it records ({extra / plain:.0%} of this step)')
else:
    print('no difference this machine can measure: the cost is below its timing noise')

# %% [markdown]
# Now memory. A small two-layer network on a batch of 1000 examples:

# %%
x = mt.random.normal([1000, 100])
w1 = mt.Variable(mt.random.normal([100, 100]) * 0.1, name='w1')
w2 = mt.Variable(mt.random.normal([100, 100]) * 0.1, name='w2')

def forward(tape_kwargs):
    with mt.GradientTape(**tape_kwargs) as tape:
        h = mt.nn.relu(x @ w1)
        y = mt.nn.relu(h @ w2)
        loss = mt.reduce_mean(y**2)
    return tape, loss

tape, loss = forward({})

# %% [markdown]
# The tape holds the operations it recorded, in order. Here they are: each op is drawn with the
# tensors it read and wrote. Every one of them will be walked backwards by `gradient`.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, loss, [w1, w2])


# %% [markdown]
# Each recorded operation (`tape.operations`, in the order they ran; every entry is an
# `Operation`) keeps only the tensors its gradient needs, in `op._inputs` and `op._outputs`
# (`None` marks what was not kept). This helper counts the arrays a tape holds on to, and
# their size:

# %%
def saved_arrays(tape):
    """The arrays a tape keeps for its backward pass: how many, and their size in KiB."""
    kept = {}
    for op in tape.operations:
        for t in (op._inputs or ()) + (op._outputs or ()):
            if t is not None:
                kept[id(t._value)] = t._value.nbytes
    return len(kept), sum(kept.values()) // 1024

for op in tape.operations:
    ins = ['kept' if t is not None else '-' for t in op._inputs]
    outs = ['kept' if t is not None else '-' for t in op._outputs]
    print(f'{op.type:8} inputs {ins}  outputs {outs}')
print('non-persistent tape keeps: %d arrays, %d KiB' % saved_arrays(tape))

# %% [markdown]
# `MatMul` needs both of its inputs (the gradient of `a @ b` is `dy @ bᵀ` and `aᵀ @ dy`).
# `Relu` keeps only its *output* (its gradient is `dy` where the output is positive), and
# `Mean` keeps nothing at all (its gradient only needs the input's shape). Now the same on a
# persistent tape, which keeps everything, because it cannot know which gradients you will ask
# for later:

# %%
ptape, ploss = forward({'persistent': True})
print('persistent tape keeps:     %d arrays, %d KiB' % saved_arrays(ptape))

# %% [markdown]
# And after `gradient` returns, the non-persistent tape has let go of everything, while the
# persistent one holds its arrays until you `del` it:

# %%
tape.gradient(loss, [w1, w2])
ptape.gradient(ploss, [w1, w2])
print('after gradient, non-persistent: %d arrays, %d KiB' % saved_arrays(tape))
print('after gradient, persistent:     %d arrays, %d KiB' % saved_arrays(ptape))
del ptape

# %% [markdown]
# ## Gradients of non-scalar targets
#
# A gradient is fundamentally an operation on a scalar.

# %%
x = mt.Variable(2.0)
with mt.GradientTape(persistent=True) as tape:
    y0 = x**2
    y1 = 1 / x

print(tape.gradient(y0, x).numpy())
print(tape.gradient(y1, x).numpy())

# %% [markdown]
# Thus, if you ask for the gradient of multiple targets, the result for each source is:
#
# - The gradient of the sum of the targets, or equivalently
# - The sum of the gradients of each target.

# %%
x = mt.Variable(2.0)
with mt.GradientTape() as tape:
    y0 = x**2
    y1 = 1 / x

print(tape.gradient({'y0': y0, 'y1': y1}, x).numpy())

# %% [markdown]
# Check both readings with `y1 = exp(1/x)`:

# %%
x = mt.Variable(2.0)
with mt.GradientTape(persistent=True) as tape:
    y0 = x**2
    y1 = mt.exp(1 / x)
    y2 = y0 + y1

print('dy0/dx: ', tape.gradient(y0, x).numpy())
print('dy1/dx: ', tape.gradient(y1, x).numpy())
print('d(y1 + y0)/dx: ', tape.gradient({'y0': y0, 'y1': y1}, x).numpy())
print('dy2/dx: ', tape.gradient(y2, x).numpy())
del tape

# %% [markdown]
# Similarly, if the target(s) are not scalar the gradient of the sum is calculated:

# %%
x = mt.Variable(2.)
with mt.GradientTape() as tape:
    y = x * [3., 4.]

print(tape.gradient(y, x).numpy())

# %% [markdown]
# This makes it simple to take the gradient of the sum of a collection of losses, or the
# gradient of the sum of an element-wise loss calculation. If you need a separate gradient for
# each item, use a Jacobian (lesson 02).
#
# In some cases you can skip the Jacobian. For an element-wise calculation, the gradient of the
# sum gives the derivative of each element with respect to its input-element, since each
# element is independent:

# %%
x = mt.linspace(-10.0, 10.0, 200+1)

with mt.GradientTape() as tape:
    tape.watch(x)
    y = mt.nn.sigmoid(x)

dy_dx = tape.gradient(y, x)

# %%
plt.plot(x, y, label='y')
plt.plot(x, dy_dx, label='dy/dx')
plt.legend()
plt.xlabel('x')
_ = plt.ylabel('y = sigmoid(x) and dy/dx')

# %% [markdown]
# `mt.viz.plot_gradient(f, x)` draws the same figure for any element-wise function in one call
# (it runs the tape for you):

# %%
_ = mt.viz.plot_gradient(mt.nn.sigmoid, x)

# %% [markdown]
# ## Control flow
#
# Because a gradient tape records operations as they are executed, Python control flow is
# naturally handled (for example, `if` and `while` statements).
#
# Here a different variable is used on each branch of an `if`. The gradient only connects to the
# variable that was used:

# %%
x = mt.constant(1.0)

v0 = mt.Variable(2.0)
v1 = mt.Variable(2.0)

with mt.GradientTape(persistent=True) as tape:
    tape.watch(x)
    if x > 0.0:
        result = v0
    else:
        result = v1**2

dv0, dv1 = tape.gradient(result, [v0, v1])

print(dv0)
print(dv1)

# %% [markdown]
# Just remember that the control statements themselves are not differentiable, so they are
# invisible to gradient-based optimizers.
#
# Depending on the value of `x` in the above example, the tape either records `result = v0` or
# `result = v1**2`. The gradient with respect to `x` is always `None`.

# %%
dx = tape.gradient(result, x)

print(dx)

# %% [markdown]
# `mt.viz.explain` says why, from what the tape recorded:

# %%
print(mt.viz.explain(tape, result, x))
del tape

# %% [markdown]
# ## Cases where `gradient` returns `None`
#
# When a target is not connected to a source, `gradient` will return `None`.

# %%
x = mt.Variable(2.)
y = mt.Variable(3.)

with mt.GradientTape() as tape:
    z = y * y
print(tape.gradient(z, x))

# %%
print(mt.viz.explain(tape, z, x))

# %% [markdown]
# Here `z` is obviously not connected to `x`, but there are several less-obvious ways that a
# gradient can be disconnected.
#
# ### 1. Replaced a variable with a tensor
#
# In the section on "controlling what the tape watches" you saw that the tape will automatically
# watch an `mt.Variable` but not an `mt.Tensor`.
#
# One common error is to inadvertently replace a Variable with a Tensor, instead of using
# `Variable.assign` to update the Variable. Here is an example:

# %%
x = mt.Variable(2.0)

for epoch in range(2):
    with mt.GradientTape() as tape:
        y = x+1

    print(type(x).__name__, ":", tape.gradient(y, x))
    x = x + 1   # This should be `x.assign_add(1)`

# %% [markdown]
# The second time round, `x` was a plain Tensor (made by `x = x + 1`), which the tape does not
# watch. Ask `explain` why the gradient is `None`. `tape` and `y` are from the loop's last pass;
# `x` is newer still, since the loop's last line replaced it once more (now `x` is 4.0), but it
# is a plain Tensor the tape never watched all the same:

# %%
print(mt.viz.explain(tape, y, x))

# %% [markdown]
# ### 2. Did calculations outside of minitape
#
# The tape can't record the gradient path if the calculation exits minitape. For example:

# %%
x = mt.Variable([[1.0, 2.0],
                 [3.0, 4.0]], dtype=mt.float32)

with mt.GradientTape() as tape:
    x2 = x**2

    # This step is calculated with NumPy
    y = np.mean(x2, axis=0)

    # Like most ops, reduce_mean will cast the NumPy array to a constant tensor
    # using `mt.convert_to_tensor`.
    y = mt.reduce_mean(y, axis=0)

print(tape.gradient(y, x))

# %%
print(mt.viz.explain(tape, y, x))

# %% [markdown]
# One step further: ask for a gradient of the NumPy result itself. TensorFlow fails there with
# an unrelated `AttributeError: 'numpy.float64' object has no attribute '_id'`; minitape says
# what happened:

# %%
x = mt.Variable([[1., 2.],
                 [3., 4.]])

with mt.GradientTape() as tape:
    x2 = x * x
    y = np.mean(x2)

try:
    tape.gradient(y, x2)
except TypeError as e:
    print(f'{type(e).__name__}: {e}')

# %% [markdown]
# ### 3. Took gradients through an integer or string
#
# Integers and strings are not differentiable. If a calculation path uses these data types there
# will be no gradient.
#
# Nobody expects strings to be differentiable, but it's easy to accidentally create an `int`
# constant or variable if you don't specify the `dtype`.

# %%
x = mt.constant(10)

with mt.GradientTape() as g:
    g.watch(x)
    y = x * x

print(g.gradient(y, x))

# %%
print(mt.viz.explain(g, y, x))

# %% [markdown]
# minitape, like TensorFlow, doesn't automatically cast between types, so in practice you'll often
# get a type error instead of a missing gradient. An integer *Variable* gives the same `None`:

# %%
x = mt.Variable(1)

with mt.GradientTape() as tape:
    y = x * x

print(tape.gradient(y, x))

# %%
print(mt.viz.explain(tape, y, x))

# %% [markdown]
# ### 4. Took gradients through a stateful object
#
# State stops gradients. When you read from a stateful object, the tape can only observe the
# current state, not the history that led to it.
#
# An `mt.Tensor` is immutable: it has a value, but no state. All the operations discussed so far
# are also stateless: the output of `mt.matmul` only depends on its inputs.
#
# An `mt.Variable` has internal state, its value. When you use the variable, the state is read.
# It's normal to calculate a gradient with respect to a variable, but the variable's state blocks
# gradient calculations from going farther back. For example:

# %%
x0 = mt.Variable(3.0)
x1 = mt.Variable(0.0)

with mt.GradientTape() as tape:
    # Update x1 = x1 + x0.
    x1.assign_add(x0)
    # The tape starts recording from x1.
    y = x1**2   # y = (x1 + x0)**2

# This doesn't work.
print(tape.gradient(y, x0))   # dy/dx0 = 2*(x1 + x0)

# %%
print(mt.viz.explain(tape, y, x0))

# %% [markdown]
# The fix: compute the sum as a Tensor, so the tape sees the addition (now `x1` is 3, so
# `dy/dx0 = 2·(3 + 3) = 12`):

# %%
with mt.GradientTape() as tape:
    x2 = x1 + x0
    y = x2**2

print('dy/dx0: ', tape.gradient(y, x0))

# %% [markdown]
# Why does state stop the gradient? The tape records *operations*: each one's inputs, its
# output and how to send a gradient back from one to the other. Writing into a stateful object
# (`assign_add` into `x1`) and reading from it later are not one operation from the written
# value to the read one: the read returns whatever the object holds now, with no record of where
# it came from. So the chain from `y` back to `x0` ends at the read of `x1`.
#
# The same goes for every stateful object, not only Variables. In TensorFlow, `tf.data.Dataset`
# iterators and `tf.queue`s are stateful: a tensor put into one comes out as a new tensor read
# from its state, so all gradients stop there. Prepare input data with them, outside the
# gradient; compute everything you differentiate inside the tape, from Tensors and Variables.

# %% [markdown]
# ## No gradient registered
#
# Some operations are registered as being non-differentiable and will return `None`. Others have
# no gradient registered. `mt.registry.registered_op_types()` lists the op types that have one.
#
# If you attempt to take a gradient through a float op that has no gradient registered, the tape
# will throw an error instead of silently returning `None`. This way you know something has gone
# wrong.
#
# For example, `mt.image.adjust_contrast` records the op `AdjustContrastv2`, which could have a
# gradient, but the gradient is not implemented:

# %%
image = mt.Variable([[[0.5, 0.0, 0.0]]])
delta = mt.Variable(0.1)

with mt.GradientTape() as tape:
    new_image = mt.image.adjust_contrast(image, delta)

try:
    print(tape.gradient(new_image, [image, delta]))
    assert False   # This should not happen.
except LookupError as e:
    print(f'{type(e).__name__}: {e}')

# %%
print('AdjustContrastv2' in mt.registry.registered_op_types())
print('Mul' in mt.registry.registered_op_types())

# %% [markdown]
# If you need to differentiate through this op, you'll either need to implement the gradient and
# register it (using `mt.RegisterGradient`, shown in lesson 02) or re-implement the function
# using other ops.
#
# ## Zeros instead of `None`
#
# In some cases it would be convenient to get 0 instead of `None` for unconnected gradients. You
# can decide what to return when you have unconnected gradients using the
# `unconnected_gradients` argument:

# %%
x = mt.Variable([2., 2.])
y = mt.Variable(3.)

with mt.GradientTape() as tape:
    z = y**2
print(tape.gradient(z, x, unconnected_gradients=mt.UnconnectedGradients.ZERO))

# %% [markdown]
# ## When the gradient is NaN
#
# A gradient can also come back as `nan`, "not a number". The commonest cause is `mt.where`
# guarding a function that is undefined on one side: at `x = 0` the branch `mt.math.log(x)` is
# not chosen, but the backward pass still goes through it. `where` sends it a gradient of 0, and
# log's derivative there, `1 / x`, is infinite: `0 * inf` is `nan` (TensorFlow gives `nan` too).
# NumPy's warning points at the line, and `mt.viz.explain` says which step of the backward pass
# made the `nan`, and what to do about it:

# %%
x = mt.Variable(0.0)
with mt.GradientTape() as tape:
    y = mt.where(x > 0.0, mt.math.log(x), 0.0)
print(tape.gradient(y, x))
print(mt.viz.explain(tape, y, x))

# %% [markdown]
# The fix it names is the "double where": give `log` a safe input where its result is not
# chosen, so that its derivative is finite everywhere:

# %%
x = mt.Variable(0.0)
with mt.GradientTape() as tape:
    safe_x = mt.where(x > 0.0, x, 1.0)
    y = mt.where(x > 0.0, mt.math.log(safe_x), 0.0)
print(tape.gradient(y, x))

# %% [markdown]
# `mt.debugging.enable_check_numerics()` (TensorFlow's name) goes further: from then on, the
# first operation, forward or backward, that produces a NaN or an infinity raises an error that
# names the op and your line. `mt.debugging.disable_check_numerics()` switches it off again.

# %%
mt.debugging.enable_check_numerics()
try:
    mt.math.log(mt.constant([1.0, 0.0]))
except mt.errors.InvalidArgumentError as e:
    print(str(e).splitlines()[0])
mt.debugging.disable_check_numerics()

# %% [markdown]
# ## Exercises
#
# Try each one in a new cell before opening the answer.

# %% [markdown]
# **1.** With a tape, compute the derivative of `y = x**3` at `x = 2.0`. What number do you expect?
#
# <details><summary>Answer</summary>
#
# `3·x² = 12`.
#
# ```python
# x = mt.Variable(2.0)
# with mt.GradientTape() as tape:
#     y = x**3
# print(tape.gradient(y, x).numpy())   # 12.0
# ```
#
# </details>

# %% [markdown]
# **2.** Why does this print `None`, and what are two ways to fix it?
#
# ```python
# x = mt.constant(2.0)
# with mt.GradientTape() as tape:
#     y = x * x
# print(tape.gradient(y, x))
# ```
#
# <details><summary>Answer</summary>
#
# `x` is a Tensor, and tapes only watch trainable Variables automatically
# (`mt.viz.explain(tape, y, x)` says so). Either call `tape.watch(x)` inside the `with`
# block, or make `x` an `mt.Variable(2.0)`. Both give `4.0`.
#
# </details>

# %% [markdown]
# **3.** `y = x * [3., 4.]` gave the single number `7.0`. How do you get the derivative of
# each element of `y` separately?
#
# <details><summary>Answer</summary>
#
# Ask for a Jacobian instead of a gradient (lesson 02):
#
# ```python
# x = mt.Variable(2.)
# with mt.GradientTape() as tape:
#     y = x * [3., 4.]
# print(tape.jacobian(y, x).numpy())   # [3. 4.]
# ```
#
# </details>

# %% [markdown]
# **4.** In the training-loop bug of case 1, replace `x = x + 1` with the fix the comment
# suggests. What does the loop print now?
#
# <details><summary>Answer</summary>
#
# `x.assign_add(1)` changes the Variable's value in place, so `x` stays a Variable that the
# tape watches: both passes print `Variable : mt.Tensor(1.0, shape=(), dtype=float32)`.
#
# </details>
