# %% [markdown]
# # 08 · Watch a network learn
#
# Training is many tapes, one per step, and what matters is how they change: which gradients
# are large, why the loss stalls, what momentum or Adam carries from one step to the next,
# how the decision boundary moves. `mt.viz.TrainingView` trains a model and shows all of it in
# one widget, linked: the tape of the latest step, the loss curve, the data with the boundary,
# and the optimizer's state. We train the same small network three times, with plain gradient
# descent, with momentum and with Adam, and watch how each one moves. Then we draw the tape of
# a recurrent network written by hand, whose loop the drawing folds into one box.
#
# **You will learn to:**
# - train a model inside a `TrainingView` and read its panels (tape, loss, boundary, optimizer);
# - see what momentum and Adam change: the step actually taken against the gradient;
# - drive the same view from `model.fit(..., callbacks=[view.callback()])` or your own loop;
# - draw a loop's tape folded (`draw_tape(..., fold=True)`): the body once, marked `×N`, and
#   the gradient of a shared weight as the sum over the iterations.

# %% [markdown]
# ## Setup
#
# The data set comes from scikit-learn (`make_moons` computes it: nothing is downloaded), which
# comes with the `lessons` extra.

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons

import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

# %% [markdown]
# ## 1. Two moons
#
# Two interleaved half circles of points, labelled 0 and 1, with some noise. No straight line
# separates them: the network must learn a curved boundary.

# %%
x, y = make_moons(200, noise=0.15, random_state=0)
x = x.astype(np.float32)
y = y.astype(np.float32)[:, None]     # one column: the label, 0 or 1
x.shape, y.shape, y.mean()

# %% [markdown]
# A small network: 2 inputs, 16 `tanh` units, 1 `sigmoid` output, the probability of label 1.
# `make_model` seeds minitape's random numbers first, so every model below starts from the
# same weights and only the optimizer differs. The layers' names (`hidden`, `output`) name
# their parameters in the panels: `hidden/kernel`, `hidden/bias`, ...

# %%
def make_model():
    mt.random.set_seed(1)
    return mt.layers.Sequential([
        mt.layers.Dense(16, activation='tanh', name='hidden'),
        mt.layers.Dense(1, activation='sigmoid', name='output'),
    ])


# %% [markdown]
# ## 2. Plain gradient descent
#
# `TrainingView(model, x, y, loss=..., optimizer=...)` is a widget. **play** trains step after
# step, **one step** trains one, the slider sets the pace, **redraw every** how often the
# panels are redrawn, and **log scale** puts the loss on a log axis. Each step uses every point
# (full-batch gradient descent; pass `batch_size=` for mini-batches). `view.step(n)` trains `n`
# steps from code. In the widget:
#
# - the **tape** of the latest step, one box per layer call (`hidden`, `output`) with its
#   parameters and the gradient that reached them;
# - the **loss** per step and the **decision boundary**: the network's output over the plane
#   (blue: near 0, red: near 1), the black line where it is 0.5, and the points;
# - the **parameters** (value, gradient norm `‖g‖`, and a sparkline of `‖g‖` over the steps);
# - the **optimizer's state**: the step actually taken `‖Δw‖`, what the optimizer keeps per
#   parameter, the learning rate, and the *effective* learning rate `‖Δw‖ / ‖g‖`: how far it
#   moved per unit of gradient.
#
# Run the cell below, then press play: the boundary bends, step by step, around the moons.
# Saved without a kernel (on a static viewer) the widget shows its last redraw, with the
# earlier ones folded under it.

# %% tags=["nbval-ignore-output"]
sgd_view = mt.viz.TrainingView(make_model(), x, y, loss='binary_crossentropy',
                               optimizer=mt.optimizers.SGD(learning_rate=0.5),
                               redraw_every=40)
sgd_view.step(200)
sgd_view

# %% [markdown]
# `view.history` holds what was recorded, one entry per step: `"loss"`, `"val_loss"` (with
# `validation_data=`), and `"grad_norm"`, a list per parameter. Plain gradient descent gets the
# loss down quickly at first, then crawls: once the easy part is learned the gradients are
# small, and with plain SGD a small gradient means a small step.

# %%
def checkpoints(view):
    return [f"{view.history['loss'][k]:.2f}" for k in (0, 49, 99, 199)]


print("loss at steps 1, 50, 100, 200:", checkpoints(sgd_view))
print("steps recorded:", len(sgd_view.history["loss"]))
print("parameters:", list(sgd_view.history["grad_norm"]))

# %% [markdown]
# For plain SGD the effective learning rate is the learning rate itself: the step is exactly
# `0.5 * g`.

# %%
{name: round(state["effective_lr"], 3) for name, state in sgd_view.optimizer_state.items()}

# %% [markdown]
# ## 3. Momentum
#
# With `momentum=0.9`, SGD keeps a *velocity* per parameter, `v = 0.9 * v - lr * g`, and moves
# by it: `w = w + v`. While the gradients keep pointing the same way, the velocity adds them up
# and the steps grow to about `1 / (1 - 0.9) = 10` times `lr * g`. The optimizer panel shows the
# momentum slot `‖momentum‖` next to the step taken (they are equal: the step *is* the
# velocity), and the effective learning rate climbs above 0.5.

# %% tags=["nbval-ignore-output"]
momentum_view = mt.viz.TrainingView(make_model(), x, y, loss='binary_crossentropy',
                                    optimizer=mt.optimizers.SGD(learning_rate=0.5,
                                                                momentum=0.9),
                                    redraw_every=40)
momentum_view.step(200)
momentum_view

# %%
print("loss at steps 1, 50, 100, 200:", checkpoints(momentum_view))
state = momentum_view.optimizer_state["hidden/kernel"]
print(f"effective lr of hidden/kernel after 200 steps: {state['effective_lr']:.1f}")

# %% [markdown]
# ## 4. Adam
#
# Adam keeps two moving averages per parameter: `m`, of the gradient (a momentum), and `v`, of
# the squared gradient. It divides each weight's step by `sqrt(v)`, so every weight moves by
# about the learning rate, whatever the size of its gradient: a weight whose gradient is tiny
# still moves. The panel shows `‖m‖` and `‖v‖`, and an effective learning rate that has nothing
# to do with 0.05: it is large where the gradients are small.

# %% tags=["nbval-ignore-output"]
adam_view = mt.viz.TrainingView(make_model(), x, y, loss='binary_crossentropy',
                                optimizer=mt.optimizers.Adam(learning_rate=0.05),
                                redraw_every=40)
adam_view.step(200)
adam_view

# %%
print("loss at steps 1, 50, 100, 200:", checkpoints(adam_view))

# %% [markdown]
# The three loss curves on one plot (log scale). All start from the same weights: plain SGD
# stalls on a plateau, momentum and Adam get past it.

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, view in [("SGD", sgd_view), ("momentum", momentum_view), ("Adam", adam_view)]:
    ax.plot(np.arange(1, view.steps + 1), view.history["loss"], label=name)
ax.set_yscale("log")
ax.set_xlabel("step")
ax.set_ylabel("training loss")
ax.legend()
plt.show()

# %% [markdown]
# ## 5. The same view from `fit`, or from your own loop
#
# A view can watch `model.fit` through a Keras callback, `view.callback()`, or a loop you
# write yourself, by calling `view.record(tape, loss)` after each `apply_gradients`. All three
# record the same numbers. `view.save_html("run.html")` writes the recorded run as one page
# (a frame per redraw and a slider) that opens in any browser, without Python.

# %%
model = mt.keras.Sequential([mt.keras.layers.Dense(16, activation='tanh'),
                             mt.keras.layers.Dense(1, activation='sigmoid')])
model.compile(optimizer=mt.optimizers.Adam(learning_rate=0.05), loss='binary_crossentropy')
fit_view = mt.viz.TrainingView(model, x, y, redraw_every=100)
model.fit(x, y, batch_size=200, epochs=100, shuffle=False, verbose=0,
          callbacks=[fit_view.callback()])
print("steps recorded by the callback:", fit_view.steps)

# %% [markdown]
# ## 6. A loop, folded
#
# A recurrent network reads a sequence one element at a time and carries a hidden state `h`
# from step to step, with the *same* weights at every step. Here are a few lines of one,
# written by hand: 12 time steps of `h = tanh(x_t @ w_xh + h @ w_hh)`, then a prediction from
# the last `h`.

# %%
mt.random.set_seed(0)
w_xh = mt.Variable(mt.random.normal((1, 4), stddev=0.5), name="w_xh")
w_hh = mt.Variable(mt.random.normal((4, 4), stddev=0.5), name="w_hh")
w_hy = mt.Variable(mt.random.normal((4, 1), stddev=0.5), name="w_hy")
sequence = mt.constant(np.sin(np.linspace(0.0, 3.0, 12)).reshape(12, 1, 1).astype(np.float32))

with mt.GradientTape() as tape:
    h = mt.zeros((1, 4))
    for t in range(12):
        h = mt.math.tanh(sequence[t] @ w_xh + h @ w_hh)
    prediction = h @ w_hy
    loss = mt.reduce_sum(mt.square(prediction - 0.5))
grads = tape.gradient(loss, [w_xh, w_hh, w_hy])
len(tape.operations)

# %% [markdown]
# 52 ops: four per time step (two matrix products, an addition, the `tanh`), then four more
# for the prediction and the loss.
# Drawn one by one they make a long ladder. `fold=True` finds the ops that repeat the same
# sequence from the same source line and draws the loop's body once, in a box marked `×12`:
#
# - the purple arrow from `h` back into the box is the hidden state carried to the next
#   iteration, drawn once;
# - `w_xh` and `w_hh` are read by every iteration: drawn once, outside the box;
# - a red gradient arrow of the body stands for all twelve iterations: its label is the sum of
#   what they carried back. For `w_hh` that sum *is* its gradient: a shared weight's gradient
#   adds up the contributions of every time step (backpropagation through time).
#
# A tape with more ops than `max_nodes` (300) is folded this way by default.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, loss, [w_xh, w_hh, w_hy], fold=True)

# %% [markdown]
# The box shows the last iteration. `iteration=0` shows the first one instead (a Python
# index: `-1` is the last), with the values it computed; `TapePlayer(..., fold=True)` passes the
# same keywords on and shows the iteration of the op it is stepping through.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, loss, [w_xh, w_hh, w_hy], fold=True, iteration=0)

# %% [markdown]
# The gradient of `w_hh` is the sum of the twelve contributions, one per time step. Each
# contribution is what one `h @ w_hh` sent back to `w_hh`; the tape kept them (small values
# are kept in full), and they add up to `tape.gradient`'s answer:

# %%
graph = mt.viz.tape_graph(tape, loss, [w_xh, w_hh, w_hy])
w_hh_node = graph.tensor(w_hh).id
parts = [e.gradient for e in graph.edges if e.kind == "input" and e.tail == w_hh_node]
print("contributions to dloss/dw_hh:", len(parts))
print("their sum equals the gradient:", np.allclose(sum(parts), grads[1].numpy(), atol=1e-6))

# %% [markdown]
# ## Exercises
#
# **1.** Train the momentum model again with `learning_rate=2.0`. What do the loss curve and
# the effective learning rate show?
#
# <details><summary>Answer</summary>
#
# The loss jumps up and down instead of falling: with momentum 0.9 the steps grow to about ten
# times `lr * g`, far too large, and the weights overshoot back and forth. The effective
# learning rate shows how large the steps became. Adam with a too-large learning rate
# misbehaves too, but more gently: its steps are bounded by about the learning rate.
#
# </details>

# %% [markdown]
# **2.** Give the first view `validation_data=` made with `make_moons(100, noise=0.15,
# random_state=1)` and train it for 500 steps. Does the validation loss follow the training
# loss?
#
# <details><summary>Answer</summary>
#
# ```python
# xv, yv = make_moons(100, noise=0.15, random_state=1)
# view = mt.viz.TrainingView(make_model(), x, y, loss='binary_crossentropy',
#                            optimizer=mt.optimizers.Adam(0.05),
#                            validation_data=(xv.astype(np.float32),
#                                             yv.astype(np.float32)[:, None]))
# view.step(500)
# view
# ```
# At first both fall together. Later the training loss keeps falling while the validation
# loss stops, or rises a little: the boundary starts to bend around single noisy points of the
# training set, which new points do not share (overfitting).
#
# </details>

# %% [markdown]
# **3.** Make the recurrent loop 40 steps long and draw it with `fold=False, max_nodes=None`,
# then with `fold=True`. How many op nodes does each drawing have?
#
# <details><summary>Answer</summary>
#
# Unfolded: all 4 * 40 + 4 = 164 ops (chains of elementwise ops are collapsed into one node
# unless you also pass `collapse=False`). Folded: 4 ops in the box plus the 4 after it, and a
# note saying that 160 ops are drawn as 4.
#
# </details>
