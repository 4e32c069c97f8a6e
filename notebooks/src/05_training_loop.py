"""Lesson 05: a training loop, written by hand with a tape."""

from _lesson import Lesson


def build():
    L = Lesson("05-training")

    L.md("""
    # 05 · A training loop, by hand

    A gradient tape is a tool for one job above all: training. This lesson puts the previous ones
    together and fits a small neural network with nothing but a tape, `gradient` and
    `assign_sub`, the loop that every optimizer library wraps.

    **You will learn to:**
    - make a small dataset (a noisy sine wave) with repeatable random numbers;
    - build a model from `mt.layers.Dense` layers and collect its `trainable_variables`;
    - write a gradient-descent loop: forward pass on a tape, `tape.gradient`, `assign_sub`;
    - watch the loss fall as it trains, and plot the fitted function.
    """)
    L.md("## Setup")
    L.setup("""
    import matplotlib.pyplot as plt
    from IPython.display import display""")

    L.md("""
    ## The data

    200 points of `sin(x)` on `[-3, 3]`, with Gaussian noise of standard deviation 0.1. Because the
    cell sets the random seed first (`mt.random.set_seed(5)`), you get the same points every time
    you run it, and the model made next starts from the same weights.
    """)
    L.code("""
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
    """)
    L.md("""
    ## The model

    Two hidden layers of 32 `tanh` units and a linear output: a function from one number to one
    number with `1·32 + 32 + 32·32 + 32 + 32·1 + 1 = 1153` parameters. Layers build their Variables
    on the first call, so call the model once before counting.
    """)
    L.code("""
    model = mt.layers.Sequential([
        mt.layers.Dense(32, activation='tanh'),
        mt.layers.Dense(32, activation='tanh'),
        mt.layers.Dense(1),
    ])
    _ = model(x)   # builds the layers

    for v in model.trainable_variables:
        print(f'{v.path:20} {v.shape}')
    print('parameters:', sum(int(np.prod(v.shape)) for v in model.trainable_variables))
    """)
    L.md("""
    The loss is the mean squared error. Before training, the network's output is nowhere near the
    sine wave:
    """)
    L.code("""
    def loss_fn(model, x, y):
        return mt.reduce_mean((model(x) - y)**2)

    print(f'initial loss: {loss_fn(model, x, y).numpy():.3f}')
    """)
    L.md("""
    ## One step of gradient descent

    This is the whole algorithm. Record the forward pass on a tape, ask for the gradient of the
    loss with respect to every trainable variable, and move each variable a little *against* its
    gradient. `assign_sub` changes the Variable in place, so it stays the same Variable (lesson 01,
    "Replaced a variable with a tensor", shows what goes wrong with `v = v - ...`).
    """)
    L.code("""
    learning_rate = 0.2

    def train_step(model, x, y):
        with mt.GradientTape() as tape:
            loss = loss_fn(model, x, y)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(learning_rate * g)
        return loss
    """)
    L.md("""
    ## Training, with the loss plotted as it goes

    The figure is redrawn every 200 steps: the loss on the left, on a log scale, and the current
    fit on the right. `display(fig, display_id=True)` shows the first drawing and returns a handle;
    `handle.update(fig)` replaces it in place. When the run finishes, the last drawing stays.
    """)
    L.code("""
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
    """)
    L.md("""
    The spikes in the first few hundred steps are steps that overshot: a learning rate of 0.2 is
    close to the largest this network tolerates (try 0.5 in the exercises). The loss recovers each
    time and then falls steadily.

    The noise has a variance of `0.1² = 0.01`, so no model can get the loss on this data much below
    about 0.01 without memorizing the noise. The final loss, and the fit against the clean sine
    wave it never saw:
    """)
    L.code("""
    print(f'loss after {steps} steps: {losses[-1]:.3f}')
    error = mt.reduce_mean((model(x) - y_true)**2).numpy()
    print(f'mean squared distance to sin(x): {error:.3f}')
    """)
    L.code("""
    plt.plot(x.numpy(), y_true.numpy(), 'k--', label='sin(x)')
    plt.plot(x.numpy(), model(x).numpy(), 'r', label='trained model')
    plt.scatter(x.numpy(), y.numpy(), s=8, alpha=0.4, label='data')
    plt.legend()
    plt.xlabel('x')
    plt.ylabel('y')
    _ = plt.title('The fit after training')
    """)
    L.md("""
    ## What the tape recorded for one step

    Each training step records the same short list of operations. Drawing one shows the forward
    pass through the three layers and, after `gradient`, the gradient that reached every Variable
    and every intermediate tensor. (A plain tape keeps only the *small* intermediate gradients for
    drawings: summarizing every large one would slow down every training step. This step is
    recorded on a persistent tape, which keeps everything, so that the drawing can show them all.)
    """)
    L.code("""
    with mt.GradientTape(persistent=True) as tape:
        loss = loss_fn(model, x, y)
    grads = tape.gradient(loss, model.trainable_variables)
    print(len(tape._ops), 'operations recorded')
    """)
    L.code("""
    # NBVAL_IGNORE_OUTPUT
    mt.viz.draw_tape(tape, loss, model.trainable_variables)
    """)

    L.md("## Exercises")
    L.exercise(
        """
        **1.** Re-run the training with `learning_rate = 0.5`, then `0.02`. What happens to the
        loss curve? (Change `learning_rate` in the step cell, then re-run the notebook from the data
        cell: it resets the seed, so every run starts from the same fresh weights.)
        """,
        """
        With 0.5 the steps overshoot so far that the loss blows up: within the first 50 steps it is
        `nan` (and NumPy warns about overflow), and it never recovers. With 0.02 the curve has no
        spikes; it falls more slowly at first (about 0.09 after 50 steps, against 0.035 with 0.2),
        but it keeps falling steadily and ends *lower* after 4000 steps (about 0.0105 against
        0.0121), because 0.2 wasted its early steps overshooting. Gradient descent needs a step
        size matched to the curvature of the loss: too large diverges, smaller is safer but
        slower.
        """)
    L.exercise(
        """
        **2.** Replace the loop's body with `mt.implicit_value_and_gradients` (lesson 03). What
        does `train_step` look like?
        """,
        """
        ```python
        def train_step(model, x, y):
            # the value of loss_fn(model, x, y), and (gradient, variable) pairs for the
            # trainable Variables it read: the model's
            loss, pairs = mt.implicit_value_and_gradients(loss_fn)(model, x, y)
            for g, v in pairs:
                v.assign_sub(learning_rate * g)
            return loss
        ```
        """)
    L.exercise(
        """
        **3.** Add momentum: keep a velocity per variable, `u = 0.9 * u + g`, and step with
        `v.assign_sub(learning_rate * u)`. Does the loss fall faster?
        """,
        """
        ```python
        velocity = [mt.zeros_like(v) for v in model.trainable_variables]

        def train_step(model, x, y):
            with mt.GradientTape() as tape:
                loss = loss_fn(model, x, y)
            grads = tape.gradient(loss, model.trainable_variables)
            for i, (v, g) in enumerate(zip(model.trainable_variables, grads)):
                velocity[i] = 0.9 * velocity[i] + g
                v.assign_sub(learning_rate * velocity[i])
            return loss
        ```
        With momentum, use a smaller learning rate (about 0.02): the velocity adds up past
        gradients, so once they agree the effective step is about `1 / (1 - 0.9) = 10` times
        larger. Re-run from the data cell (fresh weights, and a fresh `velocity`). Yes, the loss
        falls faster: about 0.022 after 50 steps (plain gradient descent with 0.02: 0.09) and about
        0.009 after 4000 steps, without the spikes of plain descent with 0.2.
        """)
    return L.notebook()
