# %% [markdown]
# # 02 · Advanced automatic differentiation
#
# Lesson 01 covered everything you need to compute gradients. This lesson follows TensorFlow's
# guide *Advanced automatic differentiation* on minitape, and goes into the deeper and less
# common features of the tape.
#
# **You will learn to:**
# - control recording: `stop_recording`, `reset`, and the precise `mt.stop_gradient`;
# - write custom gradients with `@mt.custom_gradient`, and give a brand-new op a gradient with
#   `mt.primitive` and `mt.RegisterGradient`; check that custom gradients survive saving and
#   loading a module's weights;
# - use several tapes at once, nest them for higher-order gradients, and use that for
#   input-gradient regularization;
# - compute Jacobians (scalar and tensor sources), a Hessian and a Newton step, and batch
#   Jacobians, and know when `batch_jacobian` gives meaningless numbers (BatchNormalization);
# - compute Jacobian-vector products in forward mode with `ForwardAccumulator`, including a
#   Hessian-vector product;
# - see it: several tapes on one time line (`mt.viz.timeline`), a Jacobian filled in by reverse
#   and forward passes (`mt.viz.JacobianExplorer`), and gradient descent against Newton's method
#   on a surface (`mt.viz.DescentExplorer`).

# %% [markdown]
# ## Setup
#
# Import minitape as `mt`. The last line is for lessons: it seeds the random numbers, so
# every run draws the same ones, and prints results the way the guides print them, with
# arrays to 5 decimals (their last digits differ from one CPU to another).

# %%
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

mpl.rcParams['figure.figsize'] = (8, 6)

# %% [markdown]
# ## Controlling gradient recording
#
# In lesson 01 you saw how to control which variables and tensors are watched by the tape while
# building the gradient computation. The tape also has methods to manipulate the recording.
#
# ### Stop recording
#
# If you wish to stop recording gradients, use `GradientTape.stop_recording` to temporarily
# suspend recording. This may be useful to reduce overhead if you do not wish to differentiate a
# complicated operation in the middle of your model, such as a metric or an intermediate result:

# %%
x = mt.Variable(2.0)
y = mt.Variable(3.0)

with mt.GradientTape() as t:
    x_sq = x * x
    with t.stop_recording():
        y_sq = y * y
    z = x_sq + y_sq

grad = t.gradient(z, {'x': x, 'y': y})

print('dz/dx:', grad['x'])  # 2*x => 4
print('dz/dy:', grad['y'])

# %% [markdown]
# The drawing shows the gap. `y * y` ran inside the `stop_recording()` block (the yellow note),
# so the tape holds no operation for it: its result `y_sq` enters the tape as a constant (grey,
# `= 9.0`) that nothing connects to `y`, and `y` (grey too) gets no gradient.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(t, z, [x, y])

# %%
print(mt.viz.explain(t, z, y))

# %% [markdown]
# ### Reset/start recording from scratch
#
# If you wish to start over entirely, use `GradientTape.reset`. Simply exiting the gradient tape
# block and restarting is usually easier to read, but you can use `reset` when exiting the tape
# block is difficult or impossible.

# %%
x = mt.Variable(2.0)
y = mt.Variable(3.0)
reset = True

with mt.GradientTape() as t:
    y_sq = y * y
    if reset:
        # Throw out all the tape recorded so far.
        t.reset()
    z = x * x + y_sq

grad = t.gradient(z, {'x': x, 'y': y})

print('dz/dx:', grad['x'])  # 2*x => 4
print('dz/dy:', grad['y'])

# %%
print(mt.viz.explain(t, z, y))

# %% [markdown]
# ### Stop gradient flow with precision
#
# In contrast to the global tape controls above, `mt.stop_gradient` is much more precise. It can
# be used to stop gradients from flowing along a particular path, without needing access to the
# tape itself:

# %%
x = mt.Variable(2.0)
y = mt.Variable(3.0)

with mt.GradientTape() as t:
    y_sq = y**2
    z = x**2 + mt.stop_gradient(y_sq)

grad = t.gradient(z, {'x': x, 'y': y})

print('dz/dx:', grad['x'])  # 2*x => 4
print('dz/dy:', grad['y'])

# %%
print(mt.viz.explain(t, z, y))


# %% [markdown]
# ## Custom gradients
#
# In some cases, you may want to control exactly how gradients are calculated rather than using
# the default. These situations include:
#
# 1. There is no defined gradient for a new op you are writing.
# 2. The default calculations are numerically unstable.
# 3. You wish to cache an expensive computation from the forward pass.
# 4. You want to modify a value (for example, using `mt.clip_by_value` or `mt.round`) without
#    modifying the gradient.
#
# For the first case, to write a new op you can use `mt.RegisterGradient` to set up your own
# (see below). Note that the gradient registry is global: change it with caution.
#
# For the latter three cases, you can use `mt.custom_gradient`.
#
# Here is an example that applies `mt.clip_by_norm` to the intermediate gradient:

# %%
# Establish an identity operation, but clip during the gradient pass.
@mt.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return mt.clip_by_norm(dy, 0.5)
    return y, backward

v = mt.Variable(2.0)
with mt.GradientTape() as t:
    output = clip_gradients(v * v)
print(t.gradient(output, v))  # calls "backward", which clips 4 to 2


# %% [markdown]
# The guide's comment is loose: the result is 2, but what `backward` clips is not 4. The
# incoming gradient `dy = 1` (the gradient of `output` with respect to itself) is clipped to
# norm 0.5, and only then multiplied by `d(v·v)/dv = 2v = 4`: `0.5 · 4 = 2`. Without the
# clipping the gradient would be 4.
#
# ### Registering a gradient for a new op
#
# The first case: a new operation. `mt.primitive("OpType")` turns a NumPy function into an op
# that the tape records under that type; `mt.RegisterGradient("OpType")` gives it a gradient, a
# function of `(op, dy)` exactly like the built-in ones in `minitape/ops/`. Here is a numerically
# stable log-sum-exp, whose gradient is the softmax `exp(x - logsumexp(x))`, written with
# minitape ops so that higher derivatives work too:

# %%
@mt.primitive("LogSumExp")
def logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))

@mt.RegisterGradient("LogSumExp")
def _logsumexp_grad(op, dy):
    axis = op.get_attr("axis")
    y = mt.expand_dims(op.outputs[0], axis)
    return mt.expand_dims(dy, axis) * mt.exp(op.inputs[0] - y)

x = mt.constant([1000., 1001., 1002.])   # naive log(sum(exp(x))) overflows here
with mt.GradientTape() as t:
    t.watch(x)
    y = logsumexp(x, axis=-1)
print(y.numpy().round(4))
print(t.gradient(y, x).numpy().round(4))
print(mt.nn.softmax(x).numpy().round(4))   # the gradient is the softmax

# %% [markdown]
# The registry is global: registering a second gradient for the same op type is refused (so
# re-running the cell above in the same kernel raises this error too; restart the kernel to
# redefine it):

# %%
try:
    mt.RegisterGradient("LogSumExp")(lambda op, dy: dy)
except KeyError as e:
    print(f'{type(e).__name__}: {e}')

# %% [markdown]
# ### Custom gradients when saving and loading
#
# In TensorFlow, custom gradients can be saved into a SavedModel with the option
# `tf.saved_model.SaveOptions(experimental_custom_gradients=True)`. minitape has no graphs to
# save: a module's `save_weights` writes its Variables to a `.npz` file, and `load_weights` reads
# them back. The custom gradient lives in the Python code of the module, so a module loaded from
# a file differentiates exactly as before:

# %%
import os
import tempfile

class MyModule(mt.Module):

    def __init__(self, scale):
        super().__init__()
        self.scale = mt.Variable(scale, name='scale')

    def call_custom_grad(self, x):
        return clip_gradients(self.scale * x)

model = MyModule(1.0)
path = os.path.join(tempfile.mkdtemp(), 'my_module.npz')
model.save_weights(path)

# The loaded gradients will be the same as the above example.
v = mt.Variable(2.0)
loaded = MyModule(0.0)        # a fresh module with other weights ...
loaded.load_weights(path)     # ... until the saved ones are loaded
print('scale:', loaded.scale.numpy())
with mt.GradientTape() as t:
    output = loaded.call_custom_grad(v * v)
print(t.gradient(output, v))

# %% [markdown]
# The guide itself does it with TensorFlow's names, and they work here too: `mt.function` with an
# `input_signature` (minitape runs the function eagerly, but checks each call against the
# signature as TensorFlow does), then `mt.saved_model.save` and `load`. The SavedModel holds the
# Variables and a manifest that names each `mt.function` by its module and name; `load` finds the
# functions again in this Python session, custom gradient included:

# %%
class MyModule(mt.Module):

    @mt.function(input_signature=[mt.TensorSpec(None)])
    def call_custom_grad(self, x):
        return clip_gradients(x)

model = MyModule()
export_dir = os.path.join(tempfile.mkdtemp(), 'saved_model')
mt.saved_model.save(
    model,
    export_dir,
    options=mt.saved_model.SaveOptions(experimental_custom_gradients=True))

# The loaded gradients will be the same as the above example.
v = mt.Variable(2.0)
loaded = mt.saved_model.load(export_dir)
with mt.GradientTape() as t:
    output = loaded.call_custom_grad(v * v)
print(t.gradient(output, v))

# %% [markdown]
# A note on the examples above: the files hold only numbers, and names of functions. In
# TensorFlow, loading a SavedModel saved without custom gradients in a fresh runtime fails with
# `LookupError: No gradient defined for operation 'IdentityN'`; in minitape the gradient is
# wherever `clip_gradients` is defined, so you need that code (here, the class) to load a module
# at all: after a kernel restart, `mt.saved_model.load` names the function it cannot find and
# asks you to run the cell that defines it first.

# %% [markdown]
# ## Multiple tapes
#
# Multiple tapes interact seamlessly. For example, here each tape watches a different set of
# tensors:

# %%
x0 = mt.constant(0.0)
x1 = mt.constant(0.0)

with mt.GradientTape() as tape0, mt.GradientTape() as tape1:
    tape0.watch(x0)
    tape1.watch(x1)

    y0 = mt.math.sin(x0)
    y1 = mt.nn.sigmoid(x1)

    y = y0 + y1

    ys = mt.reduce_sum(y)

# %%
tape0.gradient(ys, x0).numpy()   # cos(x) => 1.0

# %%
tape1.gradient(ys, x1).numpy()   # sigmoid(x1)*(1-sigmoid(x1)) => 0.25

# %% [markdown]
# ### Higher-order gradients
#
# Operations inside the `mt.GradientTape` context manager are recorded for automatic
# differentiation. If gradients are computed in that context, then the gradient computation is
# recorded as well. As a result, the exact same API works for higher-order gradients as well.
# For example:

# %%
x = mt.Variable(1.0)  # Create a minitape variable initialized to 1.0

with mt.GradientTape() as t2:
    with mt.GradientTape() as t1:
        y = x * x * x

    # Compute the gradient inside the outer `t2` context manager
    # which means the gradient computation is differentiable as well.
    dy_dx = t1.gradient(y, x)
d2y_dx2 = t2.gradient(dy_dx, x)

print('dy_dx:', dy_dx.numpy())  # 3 * x**2 => 3.0
print('d2y_dx2:', d2y_dx2.numpy())  # 6 * x => 6.0

# %% [markdown]
# The outer tape recorded the operations of the inner tape's backward pass: that is all a second
# derivative needs. Draw it to see them:

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(t2, dy_dx, x)

# %% [markdown]
# `mt.viz.timeline` puts both tapes on one time axis, one row each, in the order things
# happened. The forward `Mul`s are on both rows (both tapes were recording). The orange
# triangles are on the outer row only: the ops of `t1`'s backward pass, which `t2` recorded, with
# an arrow from `t1`'s `gradient` call (the star). `t1`'s pale "recording" band ends at that
# call: a non-persistent tape stops recording before its backward pass. Each tape released its
# saved tensors (the cross) right after its one `gradient` call.

# %%
mt.viz.timeline(t2, t1, names=['t2 (outer)', 't1 (inner)'])

# %% [markdown]
# While that does give you the second derivative of a *scalar* function, this pattern does not
# generalize to produce a Hessian matrix, since `GradientTape.gradient` only computes the gradient
# of a scalar. To construct a Hessian matrix, go to the Hessian example under the Jacobian
# section.
#
# "Nested calls to `GradientTape.gradient`" is a good pattern when you are calculating a scalar
# from a gradient, and then the resulting scalar acts as a source for a second gradient
# calculation, as in the following example.
#
# #### Example: Input gradient regularization
#
# Many models are susceptible to "adversarial examples": inputs modified to confuse the model's
# output. The simplest attack (the Fast Gradient Sign Method) takes a single step along the
# sign of the gradient of the output with respect to the input, the "input gradient".
#
# One technique to increase robustness to adversarial examples is input gradient regularization
# (Finlay & Oberman, 2019), which attempts to minimize the magnitude of the input gradient. If
# the input gradient is small, then the change in the output should be small too.
#
# Below is a naive implementation of input gradient regularization. The implementation is:
#
# 1. Calculate the gradient of the output with respect to the input using an inner tape.
# 2. Calculate the magnitude of that input gradient.
# 3. Calculate the gradient of that magnitude with respect to the model.

# %%
x = mt.random.normal([7, 5])

layer = mt.keras.layers.Dense(10, activation=mt.nn.relu)

# %%
with mt.GradientTape() as t2:
    # The inner tape only takes the gradient with respect to the input,
    # not the variables.
    with mt.GradientTape(watch_accessed_variables=False) as t1:
        t1.watch(x)
        y = layer(x)
        out = mt.reduce_sum(layer(x)**2)
    # 1. Calculate the input gradient.
    g1 = t1.gradient(out, x)
    # 2. Calculate the magnitude of the input gradient.
    g1_mag = mt.norm(g1)

# 3. Calculate the gradient of the magnitude with respect to the model.
dg1_mag = t2.gradient(g1_mag, layer.trainable_variables)

# %%
[var.shape for var in dg1_mag]

# %% [markdown]
# ## Jacobians
#
# All the previous examples took the gradients of a scalar target with respect to some source
# tensor(s).
#
# The Jacobian matrix represents the gradients of a vector valued function. Each row contains
# the gradient of one of the vector's elements.
#
# The `GradientTape.jacobian` method allows you to efficiently calculate a Jacobian matrix.
#
# Note that:
#
# - Like `gradient`: the `sources` argument can be a tensor or a container of tensors.
# - Unlike `gradient`: the `target` tensor must be a single tensor.
#
# ### Scalar source
#
# As a first example, here is the Jacobian of a vector-target with respect to a scalar-source.

# %%
x = mt.linspace(-10.0, 10.0, 200+1)
delta = mt.Variable(0.0)

with mt.GradientTape() as tape:
    y = mt.nn.sigmoid(x+delta)

dy_dx = tape.jacobian(y, delta)

# %% [markdown]
# When you take the Jacobian with respect to a scalar the result has the shape of the target,
# and gives the gradient of each element with respect to the source:

# %%
print(y.shape)
print(dy_dx.shape)

# %%
plt.plot(x.numpy(), y, label='y')
plt.plot(x.numpy(), dy_dx, label='dy/dx')
plt.legend()
_ = plt.xlabel('x')

# %% [markdown]
# ### Tensor source
#
# Whether the input is scalar or tensor, `GradientTape.jacobian` efficiently calculates the
# gradient of each element of the source with respect to each element of the target(s).
#
# For example, the output of this layer has a shape of `(7, 10)` (7 examples, 10 units):

# %%
x = mt.random.normal([7, 5])
layer = mt.keras.layers.Dense(10, activation=mt.nn.relu)

with mt.GradientTape(persistent=True) as tape:
    y = layer(x)

y.shape

# %% [markdown]
# And the layer's kernel's shape is `(5, 10)`:

# %%
layer.kernel.shape

# %% [markdown]
# The shape of the Jacobian of the output with respect to the kernel is those two shapes
# concatenated together:

# %%
j = tape.jacobian(y, layer.kernel)
j.shape

# %% [markdown]
# The vectorized Jacobian (one backward pass over a batch of cotangents) agrees with the plain
# loop over the 70 target elements:

# %%
j_loop = tape.jacobian(y, layer.kernel, experimental_use_pfor=False)
print(np.allclose(j.numpy(), j_loop.numpy()))

# %% [markdown]
# The figure flattens the Jacobian to a 70 × 50 matrix: one row per output element `(i, k)`, one
# column per kernel entry `(j, k')`. Output `(i, k)` depends only on column `k` of the kernel, so
# each row has at most 5 non-zero entries (the value `x[i, j]`, for `j = 0..4`), which line up
# into diagonal stripes; a row is blank where the ReLU of that output was off.

# %%
_ = mt.viz.plot_jacobian(j, target_ndim=2)

# %% [markdown]
# If you sum over the target's dimensions, you're left with the gradient of the sum that would
# have been calculated by `GradientTape.gradient`:

# %%
g = tape.gradient(y, layer.kernel)
print('g.shape:', g.shape)

j_sum = mt.reduce_sum(j, axis=[0, 1])
delta = mt.reduce_max(abs(g - j_sum)).numpy()
assert delta < 1e-3
print('delta:', delta.round(6))   # equal up to float32 rounding

# %%
del tape

# %% [markdown]
# #### Example: Hessian
#
# While `mt.GradientTape` doesn't give an explicit method for constructing a Hessian matrix, it's
# possible to build one using the `GradientTape.jacobian` method.
#
# Note: the Hessian matrix contains `N**2` parameters. For this and other reasons it is not
# practical for most models. This example is included more as a demonstration of how to use the
# `GradientTape.jacobian` method, and is not an endorsement of direct Hessian-based optimization.
# A Hessian-vector product `H @ v` needs no Hessian at all: "Hessian-vector products" at the
# end computes one with forward mode over a tape, and with two nested tapes.

# %%
x = mt.random.normal([7, 5])
layer1 = mt.keras.layers.Dense(8, activation=mt.nn.relu)
layer2 = mt.keras.layers.Dense(6, activation=mt.nn.relu)

with mt.GradientTape() as t2:
    with mt.GradientTape() as t1:
        x = layer1(x)
        x = layer2(x)
        loss = mt.reduce_mean(x**2)

    g = t1.gradient(loss, layer1.kernel)

h = t2.jacobian(g, layer1.kernel)

# %%
print(f'layer.kernel.shape: {layer1.kernel.shape}')
print(f'h.shape: {h.shape}')

# %% [markdown]
# To use this Hessian for a Newton's method step, you would first flatten out its axes into a
# matrix, and flatten out the gradient into a vector:

# %%
n_params = mt.reduce_prod(layer1.kernel.shape)

g_vec = mt.reshape(g, [n_params, 1])
h_mat = mt.reshape(h, [n_params, n_params])

# %% [markdown]
# The Hessian matrix should be symmetric. The guide defines a helper `imshow_zero_center` that
# centres the colour map on zero (red positive, blue negative); minitape ships it as
# `mt.viz.imshow_zero_center`:
#
# ```python
# def imshow_zero_center(image, **kwargs):
#     lim = tf.reduce_max(abs(image))
#     plt.imshow(image, vmin=-lim, vmax=lim, cmap='seismic', **kwargs)
#     plt.colorbar()
# ```

# %%
_ = mt.viz.imshow_zero_center(h_mat)

# %%
print('symmetric:', np.allclose(h_mat.numpy(), h_mat.numpy().T, atol=1e-6))

# %% [markdown]
# The Newton's method update step is shown below:

# %%
eps = 1e-3
eye_eps = mt.eye(h_mat.shape[0])*eps

# %%
# X(k+1) = X(k) - (∇²f(X(k)))^-1 @ ∇f(X(k))
# h_mat = ∇²f(X(k))
# g_vec = ∇f(X(k))
update = mt.linalg.solve(h_mat + eye_eps, g_vec)

# Reshape the update and apply it to the variable.
_ = layer1.kernel.assign_sub(mt.reshape(update, layer1.kernel.shape))

# %% [markdown]
# With ReLU layers the loss is a quadratic function of `layer1.kernel` near the current point
# (as long as no unit switches on or off), so one Newton step lands close to that quadratic's
# minimum. Compare the loss before and after the step, on the same input:

# %%
x0 = mt.random.normal([7, 5])
layer1 = mt.keras.layers.Dense(8, activation=mt.nn.relu)
layer2 = mt.keras.layers.Dense(6, activation=mt.nn.relu)

def loss_fn():
    return mt.reduce_mean(layer2(layer1(x0))**2)

with mt.GradientTape() as t2:
    with mt.GradientTape() as t1:
        loss = loss_fn()
    g = t1.gradient(loss, layer1.kernel)
h = t2.jacobian(g, layer1.kernel)

n_params = mt.reduce_prod(layer1.kernel.shape)
g_vec = mt.reshape(g, [n_params, 1])
h_mat = mt.reshape(h, [n_params, n_params])
update = mt.linalg.solve(h_mat + mt.eye(h_mat.shape[0]) * 1e-3, g_vec)
_ = layer1.kernel.assign_sub(mt.reshape(update, layer1.kernel.shape))

print(f'loss before the Newton step: {loss.numpy():.4f}')
print(f'loss after the Newton step:  {loss_fn().numpy():.4f}')

# %% [markdown]
# While this is relatively simple for a single Variable, applying this to a non-trivial model
# would require careful concatenation and slicing to produce a full Hessian across multiple
# variables.

# %% [markdown]
# #### Explore: gradient descent against a Newton step
#
# What does the Newton step buy? `mt.viz.DescentExplorer(f, x0)` draws a function of two
# numbers as contour lines, the downhill direction `-∇f` at each point as arrows, and the path
# of an optimizer from `x0`: gradient descent (`x ← x - lr·∇f`), momentum, or Newton's method
# (`x ← x - H⁻¹∇f` with `H = mt.hessian(f)(x)`: the step above, without the `eps`). Choose the
# method from the menu and move the sliders (learning rate, momentum, number of steps, and the
# two coordinates of `x0`), or set the same attributes in code: `explorer.learning_rate = 0.05`;
# `explorer.path` holds the points.
#
# On a round bowl the gradient points straight at the minimum, and gradient descent walks there:

# %%
def round_bowl(p):
    return p[0]**2 + p[1]**2

mt.viz.DescentExplorer(round_bowl, [1.5, 1.0], learning_rate=0.2, steps=15)

# %% [markdown]
# Squeeze the bowl 25 times in one direction: an *ill-conditioned* quadratic, whose Hessian has
# eigenvalues 2 and 50. The gradient no longer points at the minimum. A learning rate small
# enough not to diverge along the steep direction (below `2/50 = 0.04`) crawls along the flat
# one, and the path zigzags down the valley:

# %%
def narrow_valley(p):
    return p[0]**2 + 25.0 * p[1]**2

valley = mt.viz.DescentExplorer(narrow_valley, [1.5, 1.0], learning_rate=0.035, steps=30)
valley

# %% [markdown]
# Newton's method divides each direction's step by that direction's curvature, so on a
# quadratic it lands on the minimum in one step, whatever the conditioning (choose `newton` in
# the menu above, or):

# %%
print('gradient descent, after 30 steps:', valley.path[-1].round(4))
newton = mt.viz.DescentExplorer(narrow_valley, [1.5, 1.0], method='newton', steps=3)
print('Newton, after 1 step:', newton.path[1].round(4))

# %% [markdown]
# Rosenbrock's banana-shaped valley is the classic hard case: its minimum `(1, 1)` sits at the
# bottom of a long curved valley. Newton's method gets there in a handful of steps; try gradient
# descent (a learning rate near 0.001, hundreds of steps) and momentum on it.

# %%
def rosenbrock(p):
    return (1.0 - p[0])**2 + 100.0 * (p[1] - p[0]**2)**2

mt.viz.DescentExplorer(rosenbrock, np.array([-1.5, 2.0]), method='newton', steps=8)

# %% [markdown]
# ### Batch Jacobian
#
# In some cases, you want to take the Jacobian of each of a stack of targets with respect to a
# stack of sources, where the Jacobians for each target-source pair are independent.
#
# For example, here the input `x` is shaped `(batch, ins)` and the output `y` is shaped
# `(batch, outs)`:

# %%
x = mt.random.normal([7, 5])

layer1 = mt.keras.layers.Dense(8, activation=mt.nn.elu)
layer2 = mt.keras.layers.Dense(6, activation=mt.nn.elu)

with mt.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = layer1(x)
    y = layer2(y)

y.shape

# %% [markdown]
# The full Jacobian of `y` with respect to `x` has a shape of `(batch, outs, batch, ins)`, even if
# you only want `(batch, outs, ins)`:

# %%
j = tape.jacobian(y, x)
j.shape

# %% [markdown]
# If the gradients of each item in the stack are independent, then every `(batch, batch)` slice
# of this tensor is a diagonal matrix:

# %%
mt.viz.imshow_zero_center(j[:, 0, :, 0])
_ = plt.title('A (batch, batch) slice')
_ = plt.xlabel('input example (batch index of x)')
_ = plt.ylabel('output example (batch index of y)')

# %% [markdown]
# To see all the slices at once, the guide's `plot_as_patches` (here `mt.viz.plot_as_patches`)
# reorders the axes so that each diagonal forms a contiguous patch, pads between the patches and
# reshapes the result into one image:
#
# ```python
# def plot_as_patches(j):
#     # Reorder axes so the diagonals will each form a contiguous patch.
#     j = tf.transpose(j, [1, 0, 3, 2])
#     # Pad in between each patch.
#     lim = tf.reduce_max(abs(j))
#     j = tf.pad(j, [[0, 0], [1, 1], [0, 0], [1, 1]],
#                constant_values=-lim)
#     # Reshape to form a single image.
#     s = j.shape
#     j = tf.reshape(j, [s[0]*s[1], s[2]*s[3]])
#     imshow_zero_center(j, extent=[-0.5, s[2]-0.5, s[0]-0.5, -0.5])
# ```

# %%
mt.viz.plot_as_patches(j)
_ = plt.title('All (batch, batch) slices are diagonal')

# %% [markdown]
# To get the desired result you can sum over the duplicate `batch` dimension, or else select the
# diagonals using `mt.einsum`:

# %%
j_sum = mt.reduce_sum(j, axis=2)
print(j_sum.shape)
j_select = mt.einsum('bxby->bxy', j)
print(j_select.shape)

# %% [markdown]
# It would be much more efficient to do the calculation without the extra dimension in the first
# place. The `GradientTape.batch_jacobian` method does exactly that:

# %%
jb = tape.batch_jacobian(y, x)
jb.shape

# %%
error = mt.reduce_max(abs(jb - j_sum))
assert error < 1e-3
print(error.numpy().round(6))   # equal up to float32 rounding (the last bit varies by CPU)

# %%
del tape

# %% [markdown]
# **Caution:** `batch_jacobian` only verifies that the first dimension of the source and target
# match. It doesn't check that the gradients are actually independent. It's up to you to make
# sure you only use `batch_jacobian` where it makes sense. For example, adding a
# `BatchNormalization` layer destroys the independence, since it normalizes across the `batch`
# dimension:

# %%
x = mt.random.normal([7, 5])

layer1 = mt.keras.layers.Dense(8, activation=mt.nn.elu)
bn = mt.keras.layers.BatchNormalization()
layer2 = mt.keras.layers.Dense(6, activation=mt.nn.elu)

with mt.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
    tape.watch(x)
    y = layer1(x)
    y = bn(y, training=True)
    y = layer2(y)

j = tape.jacobian(y, x)
print(f'j.shape: {j.shape}')

# %%
mt.viz.plot_as_patches(j)

_ = plt.title('These slices are not diagonal')
_ = plt.xlabel("Don't use `batch_jacobian`")

# %% [markdown]
# In this case, `batch_jacobian` still runs and returns *something* with the expected shape, but
# its contents have an unclear meaning:

# %%
jb = tape.batch_jacobian(y, x)
print(f'jb.shape: {jb.shape}')

# %% [markdown]
# It no longer matches the sum over the full Jacobian's second batch axis:

# %%
error = mt.reduce_max(abs(jb - mt.reduce_sum(j, axis=2))).numpy()
print('batch_jacobian matches:', bool(error < 1e-3))
del tape

# %% [markdown]
# ## Forward mode
#
# Everything so far was *reverse mode*: one backward pass gives the gradient of one scalar with
# respect to every source. *Forward mode* goes the other way: one forward pass carries a
# *tangent* (a direction `v` in input space) along with each value, and gives the
# Jacobian-vector product `J @ v` of every output. `mt.autodiff.ForwardAccumulator` does this,
# as `tf.autodiff.ForwardAccumulator` does:

# %%
x = mt.constant([1., 2., 3.])
v = mt.constant([1., 0., 0.])   # the direction: along x[0]

with mt.autodiff.ForwardAccumulator(primals=x, tangents=v) as acc:
    y = x**2 * mt.math.sin(x)

# d/dx0 of x0**2 * sin(x0) = 2*x0*sin(x0) + x0**2*cos(x0); the other outputs do not move.
print(acc.jvp(y).numpy().round(5))
print(round(2 * np.sin(1.0) + np.cos(1.0), 5))

# %% [markdown]
# The JVP is one column of the Jacobian; check it against the reverse-mode Jacobian:

# %%
with mt.GradientTape() as tape:
    tape.watch(x)
    y = x**2 * mt.math.sin(x)
print(tape.jacobian(y, x).numpy()[:, 0].round(5))

# %% [markdown]
# ### Reverse or forward: what a Jacobian costs
#
# The Jacobian of `f: Rⁿ → Rᵐ` has `m` rows and `n` columns. Reverse mode gets one *row* per
# backward pass (a vector-Jacobian product, `tape.gradient(y, x, output_gradients=e_i)`), so it
# needs `m` passes; forward mode gets one *column* per forward pass (a Jacobian-vector product
# with the tangent `e_j`), so it needs `n`. `mt.viz.JacobianExplorer(f, x)` fills the Jacobian
# in pass by pass: choose the mode, then press Play or drag the slider. Its third mode,
# `vectorized`, is `tape.jacobian`: every row in one batched backward pass. The line under the
# controls gives the passes each mode needs and the time each took on this input (your times
# will differ).
#
# A *wide* function, many inputs and one output (every loss is one), is one reverse pass, and
# as many forward passes as there are inputs (the button *time the three modes* measures what
# each costs on your machine):

# %%
def loss_like(x):
    return mt.reduce_sum(mt.math.tanh(x)**2)

wide = mt.viz.JacobianExplorer(loss_like, mt.linspace(-2.0, 2.0, 20), repeat=0)
print(wide.passes)
wide

# %% [markdown]
# A *tall* function, one input and many outputs (a curve), is the other way round: one forward
# pass gives the whole column.

# %%
def curve(t):
    return mt.math.sin(t * mt.linspace(1.0, 4.0, 12))

tall = mt.viz.JacobianExplorer(curve, [0.5], mode='forward', repeat=0)
print(tall.passes)
tall

# %% [markdown]
# Back to the batch Jacobian: when the examples of a batch do not interact, the full Jacobian of
# a `(batch, outs)` output by a `(batch, ins)` input is block-diagonal, one `outs × ins` block
# per example (`batch=True` draws the blocks). Reverse mode spends a pass on each of the
# `batch · outs` rows to fill in blocks that are mostly zero; `batch_jacobian` computes only the
# diagonal blocks, which is why it is cheaper.

# %%
w = mt.constant([[1.0, -0.5, 0.3], [0.2, 0.8, -1.0]])

def per_example(x):
    return mt.math.tanh(x @ w)

blocks = mt.viz.JacobianExplorer(per_example, mt.reshape(mt.linspace(-1.0, 1.0, 8), [4, 2]),
                                 batch=True, repeat=0)
blocks

# %% [markdown]
# ### Hessian-vector products
#
# Forward mode over reverse mode computes a Hessian-vector product `H @ v` without ever building
# `H`: take the gradient with a tape *inside* an accumulator, then ask the accumulator for the
# tangent of that gradient. Compare it with the full Hessian from `mt.hessian`:

# %%
A = mt.random.normal([4, 4])

def f(x):
    return mt.reduce_sum(mt.math.sin(x) * mt.reshape(A @ mt.reshape(x, [4, 1]), [4]))

x = mt.random.normal([4])
v = mt.constant([1., 0., -1., 2.])

with mt.autodiff.ForwardAccumulator(primals=x, tangents=v) as acc:
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)
hvp = acc.jvp(g)

h = mt.hessian(f)(x)
print(np.allclose(hvp.numpy(), h.numpy() @ v.numpy(), atol=1e-5))

# %% [markdown]
# Two nested tapes do it too (reverse mode over reverse mode): `H @ v` is the gradient of the
# scalar `g · v`, so the outer tape records the inner tape's gradient `g`, and its own gradient
# of `g · v` is the product. It takes two backward passes where forward over reverse takes one
# forward pass carrying a tangent, but it needs no accumulator:

# %%
with mt.GradientTape() as outer:
    outer.watch(x)
    with mt.GradientTape() as inner:
        inner.watch(x)
        y = f(x)
    g = inner.gradient(y, x)
    g_dot_v = mt.reduce_sum(g * v)
hvp_nested = outer.gradient(g_dot_v, x)

print(np.allclose(hvp_nested.numpy(), hvp.numpy(), atol=1e-5))

# %% [markdown]
# ## Exercises

# %% [markdown]
# **1.** Use `@mt.custom_gradient` to write `round_straight_through(x)`: in the forward pass
# it rounds (`mt.round`), in the backward pass it lets the gradient through unchanged (the
# "straight-through estimator", case 4 in the list above). What gradient does
# `mt.round` alone give?
#
# <details><summary>Answer</summary>
#
# ```python
# @mt.custom_gradient
# def round_straight_through(x):
#     def backward(dy):
#         return dy
#     return mt.round(x), backward
#
# x = mt.Variable(1.7)
# with mt.GradientTape(persistent=True) as t:
#     a = round_straight_through(x)
#     b = mt.round(x)
# print(t.gradient(a, x))   # mt.Tensor(1.0, ...): the gradient passes straight through
# print(t.gradient(b, x))   # None: Round has no gradient
# ```
#
# </details>

# %% [markdown]
# **2.** With nested tapes, compute the third derivative of `y = x**4` at `x = 1.0`.
#
# <details><summary>Answer</summary>
#
# `d³(x⁴)/dx³ = 24·x = 24`. Two tapes give the second derivative; the third needs three:
#
# ```python
# x = mt.Variable(1.0)
# with mt.GradientTape() as t3:
#     with mt.GradientTape() as t2:
#         with mt.GradientTape() as t1:
#             y = x**4
#         dy = t1.gradient(y, x)
#     d2y = t2.gradient(dy, x)
# d3y = t3.gradient(d2y, x)
# print(d3y.numpy())   # 24.0
# ```
#
# </details>

# %% [markdown]
# **3.** For `y = layer(x)` with a Dense layer and `x` of shape `(7, 5)`, which is cheaper:
# `tape.jacobian(y, x)` or `tape.batch_jacobian(y, x)`? What shapes do they return for 10
# units?
#
# <details><summary>Answer</summary>
#
# `jacobian` returns `(7, 10, 7, 5)`, of which only the `(batch, batch)` diagonals are
# non-zero; `batch_jacobian` returns just those, `(7, 10, 5)`, with 7 times fewer numbers to
# compute. They agree (after summing over the second batch axis) as long as the rows are
# independent, which a BatchNormalization layer in training mode breaks.
#
# </details>

# %% [markdown]
# **4.** How many forward passes does it take to get the full `(4, 4)` Hessian of `f` above
# with Hessian-vector products?
#
# <details><summary>Answer</summary>
#
# Four: one per basis vector `v = e₀, e₁, e₂, e₃`; each `hvp` is a column of the Hessian.
#
# </details>
