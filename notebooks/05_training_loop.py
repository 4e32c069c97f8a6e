# %% [markdown]
# # 05 · A training loop, by hand
#
# A gradient tape is a tool for one job above all: training. This lesson puts the previous ones
# together and fits a small neural network with nothing but a tape, `gradient` and
# `assign_sub`, the loop that every optimizer library wraps.
#
# **You will learn to:**
# - make a small dataset (a noisy sine wave) with repeatable random numbers;
# - build a model from `mt.layers.Dense` layers and collect its `trainable_variables`;
# - write a gradient-descent loop: forward pass on a tape, `tape.gradient`, `assign_sub`;
# - watch the loss fall as it trains, and plot the fitted function;
# - see that Keras's `compile` and `fit` (`mt.keras`) run exactly this loop;
# - see what the learning rate does on a loss surface of two parameters
#   (`mt.viz.DescentExplorer`).

# %% [markdown]
# ## Setup
#
# Import minitape as `mt`. The last line is for lessons: it seeds the random numbers, so
# every run draws the same ones, and prints results the way the guides print them, with
# arrays to 5 decimals (their last digits differ from one CPU to another).

# %%
import matplotlib.pyplot as plt
from IPython.display import display
import numpy as np

import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

# %% [markdown]
# ## The data
#
# 200 points of `sin(x)` on `[-3, 3]`, with Gaussian noise of standard deviation 0.1. Because the
# cell sets the random seed first (`mt.random.set_seed(5)`), you get the same points every time
# you run it, and the model made next starts from the same weights.

# %%
mt.random.set_seed(5)

n = 200
x = mt.reshape(mt.linspace(-3.0, 3.0, n), [n, 1])
y_true = mt.math.sin(x)
y = y_true + 0.1 * mt.random.normal([n, 1])

plt.scatter(x.numpy(), y.numpy(), s=8, label='data')
plt.plot(x.numpy(), y_true.numpy(), 'k--', label='sin(x)')
plt.legend()
_ = plt.xlabel('x')
_ = plt.ylabel('y')

# %% [markdown]
# ## The model
#
# Two hidden layers of 32 `tanh` units and a linear output: a function from one number to one
# number with `1·32 + 32 + 32·32 + 32 + 32·1 + 1 = 1153` parameters. Layers build their Variables
# on the first call, so call the model once before counting.

# %%
model = mt.layers.Sequential([
    mt.layers.Dense(32, activation='tanh'),
    mt.layers.Dense(32, activation='tanh'),
    mt.layers.Dense(1),
])
_ = model(x)   # builds the layers

for v in model.trainable_variables:
    print(f'{v.path:20} {v.shape}')
print('parameters:', sum(int(np.prod(v.shape)) for v in model.trainable_variables))


# %% [markdown]
# The loss is the mean squared error. Before training, the network's output is nowhere near the
# sine wave:

# %%
def loss_fn(model, x, y):
    return mt.reduce_mean((model(x) - y)**2)

print(f'initial loss: {loss_fn(model, x, y).numpy():.3f}')

# %% [markdown]
# ## One step of gradient descent
#
# This is the whole algorithm. Record the forward pass on a tape, ask for the gradient of the
# loss with respect to every trainable variable, and move each variable a little *against* its
# gradient. `assign_sub` changes the Variable in place, so it stays the same Variable (lesson 01,
# "Replaced a variable with a tensor", shows what goes wrong with `v = v - ...`).

# %%
learning_rate = 0.02

def train_step(model, x, y):
    with mt.GradientTape() as tape:
        loss = loss_fn(model, x, y)
    grads = tape.gradient(loss, model.trainable_variables)
    for v, g in zip(model.trainable_variables, grads):
        v.assign_sub(learning_rate * g)
    return loss


# %% [markdown]
# ## Training, with the loss plotted as it goes
#
# The figure is redrawn every 200 steps: the loss on the left, on a log scale, and the current
# fit on the right. `display(fig, display_id=True)` shows the first drawing and returns a handle;
# `handle.update(fig)` replaces it in place. When the run finishes, the last drawing stays.

# %%
def draw(losses, model):
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ax0.plot(losses)
    ax0.set_yscale('log')
    ax0.set_xlabel('step')
    ax0.set_ylabel('loss (mean squared error)')
    ax0.set_title(f'step {len(losses)}: loss {losses[-1]:.4f}')
    ax1.scatter(x.numpy(), y.numpy(), s=8, alpha=0.5, label='data')
    ax1.plot(x.numpy(), model(x).numpy(), 'r', label='model')
    ax1.legend()
    ax1.set_xlabel('x')
    return fig

losses = []
steps = 4000
handle = None
for step in range(steps):
    losses.append(float(train_step(model, x, y)))
    if (step + 1) % 200 == 0:
        fig = draw(losses, model)
        if handle is None:
            handle = display(fig, display_id=True)
        else:
            handle.update(fig)
        plt.close(fig)   # drawn already: keep the inline backend from showing it again

# %% [markdown]
# The loss falls quickly for the first few hundred steps, then slowly and steadily. A larger
# learning rate gets there faster at first but overshoots (the exercises try 0.2 and 0.5).
#
# The noise has a variance of `0.1² = 0.01`, so no model can get the loss on this data much below
# about 0.01 without memorizing the noise. The final loss, and the fit against the clean sine
# wave it never saw:

# %%
print(f'loss after {steps} steps: {losses[-1]:.3f}')
error = mt.reduce_mean((model(x) - y_true)**2).numpy()
print(f'mean squared distance to sin(x): {error:.3f}')

# %%
plt.plot(x.numpy(), y_true.numpy(), 'k--', label='sin(x)')
plt.plot(x.numpy(), model(x).numpy(), 'r', label='trained model')
plt.scatter(x.numpy(), y.numpy(), s=8, alpha=0.4, label='data')
plt.legend()
plt.xlabel('x')
plt.ylabel('y')
_ = plt.title('The fit after training')

# %% [markdown]
# ## The learning rate, on a surface you can see
#
# The network has 1153 parameters, so its loss is a surface in 1154 dimensions: nothing to
# look at. A model with two parameters has a loss surface you can draw. Fit a straight line
# `w · x + b` to the same data: the loss is a function of the 2-vector `p = (w, b)`.
# `mt.viz.DescentExplorer` draws its contour lines, the downhill direction `-∇loss` as arrows,
# and the path of gradient descent from a starting point, step by step: exactly the loop above,
# `p ← p - learning_rate · ∇loss(p)`.
#
# The contours are ellipses, longer along `b` than along `w`: the loss curves three times more
# steeply in `w` (the slope multiplies `x`, which reaches ±3) than in `b` (its Hessian is about
# `[[6, 0], [0, 2]]`). The steepest direction sets the limit: with a learning rate of 0.3 the
# path zigzags across the valley in `w` while `b` settles quickly; from about `2/6 ≈ 0.33` on it
# no longer converges, and above that it diverges (what exercise 1 shows on the network). Move
# the learning-rate slider to see it, then try `momentum`, and `newton`, which takes the
# curvature into account and lands on the best line in one step.

# %%
def line_loss(p):
    return mt.reduce_mean((p[0] * x + p[1] - y)**2)

mt.viz.DescentExplorer(line_loss, [-1.5, 1.5], learning_rate=0.3, steps=25, labels=('w', 'b'))

# %% [markdown]
# ## What the tape recorded for one step
#
# Each training step records the same short list of operations. Drawing one shows the forward
# pass through the three layers and, after `gradient`, the gradient that reached every Variable
# and every intermediate tensor. (A plain tape keeps only the *small* intermediate gradients for
# drawings: summarizing every large one would slow down every training step. This step is
# recorded on a persistent tape, which keeps everything, so that the drawing can show them all.)

# %%
with mt.GradientTape(persistent=True) as tape:
    loss = loss_fn(model, x, y)
grads = tape.gradient(loss, model.trainable_variables)
print(len(tape.operations), 'operations recorded')

# %% [markdown]
# Drawn op by op, that is a tall picture. `group='module'` draws each call of a layer as one box,
# named after the layer, with its parameters (`kernel`, `bias`) listed inside and drawn next to
# it: the picture reads like the model. (A tape of more than `max_nodes` ops is grouped this way
# by default.)

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, loss, model.trainable_variables, group='module')

# %% [markdown]
# And op by op, for the curious: every `MatMul`, `AddV2` and activation of the three layers.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, loss, model.trainable_variables, group=False)

# %% [markdown]
# ## The update, done by an optimizer
#
# The last line of `train_step`, `v.assign_sub(learning_rate * g)` for every Variable, is the
# update rule of plain gradient descent. Libraries package update rules as **optimizers**:
# `mt.optimizers.SGD(learning_rate)` does exactly this update when it is handed the pairs of
# gradients and Variables, `optimizer.apply_gradients(zip(grads, variables))`, and counts its
# steps in `optimizer.iterations`. The tape part of the step does not change:

# %%
optimizer = mt.optimizers.SGD(learning_rate=learning_rate)

def train_step_with_optimizer(model, x, y):
    with mt.GradientTape() as tape:
        loss = loss_fn(model, x, y)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


# %% [markdown]
# Two networks made from the same seed, one stepped by hand and one by the optimizer, stay
# identical, weight for weight:

# %%
def same_start():
    mt.random.set_seed(7)   # the same initial weights each time
    twin = mt.layers.Sequential([
        mt.layers.Dense(32, activation='tanh'),
        mt.layers.Dense(32, activation='tanh'),
        mt.layers.Dense(1),
    ])
    twin(x)   # builds the layers
    return twin

by_hand, by_optimizer = same_start(), same_start()
for step in range(100):
    train_step(by_hand, x, y)
    train_step_with_optimizer(by_optimizer, x, y)

difference = max(float(mt.reduce_max(mt.abs(a - b)))
                 for a, b in zip(by_hand.trainable_variables, by_optimizer.trainable_variables))
print(f'steps taken by the optimizer: {int(optimizer.iterations)}')
print(f'largest difference between the two networks\' weights: {difference}')

# %% [markdown]
# Other update rules are other optimizers with the same `apply_gradients`:
# `mt.optimizers.SGD(learning_rate, momentum=0.9)` is the momentum of exercise 3, and
# `mt.optimizers.Adam`, which adapts the step size of every weight, trains the networks of
# lesson 07.

# %% [markdown]
# ## The same loop, as Keras writes it
#
# `mt.keras` gives this loop Keras's names, the ones TensorFlow's guides use: a `Sequential`
# model, an optimizer, `compile`, then `fit`. `fit` *is* the loop above. Its `train_step` (read
# it in `minitape/keras/models.py`) records the forward pass on a tape, asks for the gradient of
# the loss with respect to `model.trainable_variables` and hands the pairs to the optimizer,
# whose plain `SGD` update is `v.assign_sub(learning_rate * g)`; `fit` only cuts the data into
# batches and keeps the mean loss of each epoch. Two models made from the same seed, one trained
# by `train_step` and one by `fit` with the whole dataset as one batch, end with the same
# weights:

# %%
def fresh_model():
    mt.random.set_seed(7)   # the same initial weights each time ...
    model = mt.keras.Sequential([
        mt.keras.layers.Dense(32, activation='tanh'),
        mt.keras.layers.Dense(32, activation='tanh'),
        mt.keras.layers.Dense(1),
    ])
    model(x)                # ... drawn now: layers build on their first call
    return model

by_hand, by_fit = fresh_model(), fresh_model()
for step in range(100):
    train_step(by_hand, x, y)

by_fit.compile(optimizer=mt.keras.optimizers.SGD(learning_rate=learning_rate), loss='mse')
history = by_fit.fit(x, y, epochs=100, batch_size=n, shuffle=False, verbose=0)

difference = max(float(mt.reduce_max(mt.abs(a - b)))
                 for a, b in zip(by_hand.trainable_variables, by_fit.trainable_variables))
print(f'largest difference between the two models\' weights: {difference}')
print(f'loss of the last epoch: {history.history["loss"][-1]:.4f}')

# %% [markdown]
# With `verbose=1` (the default) `fit` prints Keras's line for each epoch; by default it also
# cuts the data into shuffled batches of 32, which makes 7 steps per epoch (*stochastic*
# gradient descent). The layers are the same `mt.layers` classes, so every drawing of the
# previous lessons works on a Keras model too.

# %%
history = by_fit.fit(x, y, epochs=3)

# %% [markdown]
# ## Exercises

# %% [markdown]
# **1.** Re-run the training with `learning_rate = 0.2`, then `0.5`. What happens to the
# loss curve? (Change `learning_rate` in the step cell, then re-run the notebook from the data
# cell: it resets the seed, so every run starts from the same fresh weights.)
#
# <details><summary>Answer</summary>
#
# With 0.2 the loss falls faster at first (about 0.036 after 50 steps, against 0.089 with
# 0.02), but the curve has spikes: steps that overshot, after which the loss recovers. It
# ends *higher* after 4000 steps (about 0.012 against 0.0105), because it wasted steps
# overshooting. In that regime the run is also chaotic: the last digits of the result, which
# differ from one CPU to another, grow step after step, so the final numbers depend on your
# CPU (the distance to `sin(x)` came out 0.0022 on one machine and 0.0049 on another). With
# 0.5 the steps overshoot so far that the loss blows up: within the first 50 steps it is `nan`
# (and NumPy warns about invalid values), and it never recovers. Gradient descent needs a
# step size matched to the curvature of the loss: too large diverges, smaller is safer but
# slower.
#
# </details>

# %% [markdown]
# **2.** Replace the loop's body with `mt.implicit_value_and_gradients` (lesson 03). What
# does `train_step` look like?
#
# <details><summary>Answer</summary>
#
# ```python
# def train_step(model, x, y):
#     # the value of loss_fn(model, x, y), and (gradient, variable) pairs for the
#     # trainable Variables it read: the model's
#     loss, pairs = mt.implicit_value_and_gradients(loss_fn)(model, x, y)
#     for g, v in pairs:
#         v.assign_sub(learning_rate * g)
#     return loss
# ```
#
# </details>

# %% [markdown]
# **3.** Add momentum: keep a velocity per variable, `u = 0.9 * u + g`, and step with
# `v.assign_sub(learning_rate * u)`. Does the loss fall faster?
#
# <details><summary>Answer</summary>
#
# ```python
# velocity = [mt.zeros_like(v) for v in model.trainable_variables]
#
# def train_step(model, x, y):
#     with mt.GradientTape() as tape:
#         loss = loss_fn(model, x, y)
#     grads = tape.gradient(loss, model.trainable_variables)
#     for i, (v, g) in enumerate(zip(model.trainable_variables, grads)):
#         velocity[i] = 0.9 * velocity[i] + g
#         v.assign_sub(learning_rate * velocity[i])
#     return loss
# ```
# Keep the learning rate at 0.02 (not more): the velocity adds up past gradients, so once
# they agree the effective step is about `1 / (1 - 0.9) = 10` times larger. Re-run from the
# data cell (fresh weights, and a fresh `velocity`). Yes, the loss falls faster: about 0.022
# after 50 steps (plain gradient descent: 0.089) and about 0.009 after 4000 steps.
#
# </details>
