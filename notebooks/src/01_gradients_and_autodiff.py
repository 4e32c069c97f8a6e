"""Lesson 01: gradients and automatic differentiation (the basic GradientTape guide)."""

from _lesson import Lesson


def build():
    L = Lesson("01-gradients")

    L.md("""
    # 01 · Gradients and automatic differentiation

    Automatic differentiation is what makes training neural networks possible: the computer
    works out the derivative of a loss with respect to every parameter, exactly, by the chain rule.
    This lesson follows TensorFlow's guide *Automatic Differentiation and Gradients*, running
    every example on **minitape**, a small re-implementation of `tf.GradientTape` on NumPy that
    you can read from end to end.

    **You will learn to:**
    - record a computation on a `GradientTape` and ask it for `gradient(target, sources)`;
    - take gradients with respect to Variables, a model's `trainable_variables`, plain Tensors
      (`watch`) and intermediate results;
    - use a `persistent` tape, and see what a tape costs in memory;
    - understand what happens with non-scalar targets and Python control flow;
    - diagnose every way a gradient can come back `None` (with `mt.viz.explain`), what happens when
      an op has no gradient, and how to get zeros instead of `None`.

    The code is the guide's with `tf.` replaced by `mt.`. Where the guide's numbers do not depend on
    random values, the outputs below are the guide's numbers.
    """)

    L.md("## Setup")
    L.setup("import matplotlib.pyplot as plt")

    # ------------------------------------------------------------------ gradient tapes
    L.md("""
    ## Computing gradients

    To differentiate automatically, minitape needs to remember what operations happen in what
    order during the *forward pass*. Then, during the *backward pass*, it walks this list of
    operations in reverse order to compute gradients.

    ### Gradient tapes

    `mt.GradientTape` records the operations executed inside its context onto a "tape". The tape
    then computes the gradient of a recorded computation with *reverse-mode differentiation*:
    """)
    L.code("""
    x = mt.Variable(3.0)

    with mt.GradientTape() as tape:
        y = x**2
    """)
    L.md("""
    Once you have recorded some operations, use `GradientTape.gradient(target, sources)` to
    calculate the gradient of some target (often a loss) relative to some source (often the
    model's variables):
    """)
    L.code("""
    # dy = 2x * dx
    dy_dx = tape.gradient(y, x)
    dy_dx.numpy()
    """)
    L.md("""
    What did the tape record? `mt.viz.draw_tape` draws it: the Variable `x` (a source), the `Pow`
    operation, and the result `y`; after `gradient` each tensor also shows the gradient that
    reached it.
    """)
    L.code("""
    # NBVAL_IGNORE_OUTPUT
    mt.viz.draw_tape(tape, y, x)
    """)
    L.md("The same with another starting value (a variation from a reader's notebook): "
         "at x = 4 the derivative of x² is 8.")
    L.code("""
    x = mt.Variable(4.0)

    with mt.GradientTape() as tape:
        y = x**2

    dy_dx = tape.gradient(y, x)
    print(dy_dx.numpy())
    """)
    L.md("""
    The example above uses scalars, but a tape works as easily on any tensor. The values of `w`
    are random, so your numbers depend on the seed set in the setup cell.
    """)
    L.code("""
    w = mt.Variable(mt.random.normal((3, 2)), name='w')
    b = mt.Variable(mt.zeros(2, dtype=mt.float32), name='b')
    x = [[1., 2., 3.]]

    with mt.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = mt.reduce_mean(y**2)
    """)
    L.md("""
    To get the gradient of `loss` with respect to both variables, pass both as sources. The tape
    accepts any nested combination of lists and dictionaries and returns the gradient structured
    the same way:
    """)
    L.code("""
    [dl_dw, dl_db] = tape.gradient(loss, [w, b])
    """)
    L.md("The gradient with respect to each source has the shape of the source:")
    L.code("""
    print(w.shape)
    print(dl_dw.shape)
    """)
    L.md("Here is the gradient calculation again, this time passing a dictionary of variables:")
    L.code("""
    my_vars = {
        'w': w,
        'b': b
    }

    grad = tape.gradient(loss, my_vars)
    grad['b']
    """)
    L.md("""
    Printing a tensor shows its values, shape and dtype. The Korean copy of the guide prints both
    results this way: the list and the dictionary hold the same gradients:
    """)
    L.code("""
    print("dl/dw: ", dl_dw)
    print("dl/db: ", dl_db)
    print()
    print("dl/dw: ", grad['w'])
    print("dl/db: ", grad['b'])
    """)
    L.md("""
    Since `loss = mean(y²)` with `y = x @ w + b`, the gradient for `b` is `2·y / 2 = y`, and for
    `w` it is `xᵀ @ dl_db`: each row of `dl_dw` is `dl_db` times 1, 2 and 3. Check it:
    """)
    L.code("""
    print(np.allclose(dl_db.numpy(), y.numpy()[0]))
    print(np.allclose(dl_dw.numpy(), np.array(x).T @ dl_db.numpy()[None, :]))
    """)

    # ------------------------------------------------------------------ model
    L.md("""
    ## Gradients with respect to a model

    It is common to collect Variables into an `mt.Module` or one of its subclasses (the layers in
    `mt.layers`). A module gathers its variables in `Module.trainable_variables`, so the gradients
    with respect to all of them take a few lines:
    """)
    L.code("""
    layer = mt.layers.Dense(2, activation='relu')
    x = mt.constant([[1., 2., 3.]])

    with mt.GradientTape() as tape:
        # Forward pass
        y = layer(x)
        loss = mt.reduce_mean(y**2)

    # Calculate gradients with respect to every trainable variable
    grad = tape.gradient(loss, layer.trainable_variables)
    """)
    L.code("""
    for var, g in zip(layer.trainable_variables, grad):
        print(f'{var.name}, shape: {g.shape}')
    """)
    L.md("""
    A variable's `path` includes the layer's name, as TensorFlow's full names did
    (`dense/kernel:0` in older versions; minitape has no `:0` suffix). The reader's notebook
    variation feeds the layer integers: like Keras, the layer casts them to its float dtype.
    """)
    L.code("""
    x = mt.constant([[1, 2, 3]])

    with mt.GradientTape() as tape:
        y = layer(x)
        loss = mt.reduce_mean(y**2)

    grad = tape.gradient(loss, layer.trainable_variables)
    for var, g in zip(layer.trainable_variables, grad):
        print(f'{var.path}, shape: {g.shape}, dtype: {g.dtype}')
    """)

    # ------------------------------------------------------------------ watching
    L.md("""
    ## Controlling what the tape watches

    The default behavior is to record all operations after accessing a trainable `mt.Variable`.
    The reasons for this are:

    - The tape needs to know which operations to record in the forward pass to calculate the
      gradients in the backwards pass.
    - The tape holds references to intermediate outputs, so you don't want to record unnecessary
      operations.
    - The most common use case involves calculating the gradient of a loss with respect to all a
      model's trainable variables.

    For example, the following fails to calculate a gradient for three of the four sources,
    because an `mt.Tensor` is not "watched" by default, and the second `mt.Variable` is not
    trainable:
    """)
    L.code("""
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
    """)
    L.md("You can list the variables being watched by the tape with "
         "`GradientTape.watched_variables`:")
    L.code("""
    [var.name for var in tape.watched_variables()]
    """)
    L.md("""
    `mt.GradientTape` provides hooks that give you control over what is or is not watched.
    To record gradients with respect to an `mt.Tensor`, call `GradientTape.watch(x)`:
    """)
    L.code("""
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x**2

    # dy = 2x * dx
    dy_dx = tape.gradient(y, x)
    print(dy_dx.numpy())
    """)
    L.md("""
    Conversely, to disable the default behavior of watching all trainable Variables, set
    `watch_accessed_variables=False` when creating the tape. This calculation uses two variables,
    but only connects the gradient for one of them:
    """)
    L.code("""
    x0 = mt.Variable(0.0)
    x1 = mt.Variable(10.0)

    with mt.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(x1)
        y0 = mt.math.sin(x0)
        y1 = mt.nn.softplus(x1)
        y = y0 + y1
        ys = mt.reduce_sum(y)
    """)
    L.md("Since `GradientTape.watch` was not called on `x0`, no gradient is computed with "
         "respect to it:")
    L.code("""
    # dys/dx1 = exp(x1) / (1 + exp(x1)) = sigmoid(x1)
    grad = tape.gradient(ys, {'x0': x0, 'x1': x1})

    print('dy/dx0:', grad['x0'])
    print('dy/dx1:', grad['x1'].numpy())
    """)
    L.md("""
    `watch` works on anything floating: a variation from the reader's notebook turns off automatic
    watching and watches the non-trainable Variable `x1` and the Tensor `x2` by hand. Now those two
    get gradients (2·3 = 6 and 2·4 = 8) and the trainable `x0`, never watched, gets `None`:
    """)
    L.code("""
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
    """)

    # ------------------------------------------------------------------ intermediate
    L.md("""
    ## Intermediate results

    You can also request gradients of the output with respect to intermediate values computed
    inside the `mt.GradientTape` context.
    """)
    L.code("""
    x = mt.constant(3.0)

    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * y

    # Use the tape to compute the gradient of z with respect to the
    # intermediate value y.
    # dz_dy = 2 * y and y = x ** 2 = 9
    print(tape.gradient(z, y).numpy())
    """)
    L.md("""
    The drawing shows the two `Mul` operations; the gradient that reached `y` is the 18 we asked
    for, and `x` is greyed out because it does not lie between the target and the source.
    """)
    L.code("""
    # NBVAL_IGNORE_OUTPUT
    mt.viz.draw_tape(tape, z, y)
    """)

    L.md("""
    ### Persistent tapes

    By default, the resources held by a `GradientTape` are released as soon as the
    `GradientTape.gradient` method is called. To compute multiple gradients over the same
    computation, create a gradient tape with `persistent=True`. This allows multiple calls to
    `gradient`, as the resources are released when the tape object is garbage collected.
    For example:
    """)
    L.code("""
    x = mt.constant([1, 3.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y

    print(tape.gradient(z, x).numpy())  # [4.0, 108.0] (4 * x**3 at x = [1.0, 3.0])
    print(tape.gradient(y, x).numpy())  # [2.0, 6.0] (2 * x at x = [1.0, 3.0])
    """)
    L.code("""
    del tape   # Drop the reference to the tape
    """)
    L.md("The reader's notebook does the same with a `float64` Variable; the dtype carries "
         "through:")
    L.code("""
    x = mt.Variable([1, 2, 3], dtype=mt.float64)

    with mt.GradientTape(persistent=True) as tape:
        y = x**2
        z = y**2

    print(repr(tape.gradient(y, x).numpy()))  # dy_dx = 2 * x
    print(repr(tape.gradient(z, x).numpy()))  # dz_dx = dz_dy * dy_dx = 2 * y * 2 * x
    del tape
    """)
    L.md("A non-persistent tape refuses a second question, and says why:")
    L.code("""
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x

    print(tape.gradient(y, x).numpy())
    try:
        tape.gradient(y, x)
    except RuntimeError as e:
        print(f'{type(e).__name__}: {e}')
    """)

    # ------------------------------------------------------------------ performance
    L.md("""
    ## Notes on performance

    - There is a tiny overhead associated with doing operations inside a gradient tape context.
      For most eager execution this will not be a noticeable cost, but you should still use tape
      context around the areas only where it is required.
    - Gradient tapes use memory to store intermediate results, including inputs and outputs, for
      use during the backwards pass.
    - For efficiency, some ops (like `ReLU`) don't need to keep their intermediate results and they
      are pruned during the forward pass. However, if you use `persistent=True` on your tape,
      nothing is discarded and your peak memory usage will be higher.

    Let us *see* all three. First the overhead: the same small computation, outside a tape and
    inside one (the times depend on your machine, so this cell's output is not checked):
    """)
    L.code("""
    # NBVAL_IGNORE_OUTPUT
    import timeit

    a = mt.random.normal([100, 100])
    wa = mt.Variable(mt.random.normal([100, 100]))

    def step():
        return mt.reduce_mean(mt.nn.relu(a @ wa) ** 2)

    def step_on_tape():
        with mt.GradientTape():
            return step()

    n = 300
    plain = timeit.timeit(step, number=n) / n
    taped = timeit.timeit(step_on_tape, number=n) / n
    print(f'outside a tape: {plain * 1e6:.0f} µs per step')
    print(f'inside a tape:  {taped * 1e6:.0f} µs per step')
    """)
    L.md("""
    Now memory. A small two-layer network on a batch of 1000 examples:
    """)
    L.code("""
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
    """)
    L.md("""
    The tape holds the operations it recorded, in order. Here they are: each op is drawn with the
    tensors it read and wrote. Every one of them will be walked backwards by `gradient`.
    """)
    L.code("""
    # NBVAL_IGNORE_OUTPUT
    mt.viz.draw_tape(tape, loss, [w1, w2])
    """)
    L.md("""
    Each recorded operation (`tape._ops`, a plain list; every entry is an `Operation`) keeps only
    the tensors its gradient needs, in `op._inputs` and `op._outputs` (`None` marks what was not
    kept). This helper counts the arrays a tape holds on to, and their size:
    """)
    L.code("""
    def saved_arrays(tape):
        \"\"\"The arrays a tape keeps for its backward pass: how many, and their size in KiB.\"\"\"
        kept = {}
        for op in tape._ops:
            for t in (op._inputs or ()) + (op._outputs or ()):
                if t is not None:
                    kept[id(t._value)] = t._value.nbytes
        return len(kept), sum(kept.values()) // 1024

    for op in tape._ops:
        ins = ['kept' if t is not None else '-' for t in op._inputs]
        outs = ['kept' if t is not None else '-' for t in op._outputs]
        print(f'{op.type:8} inputs {ins}  outputs {outs}')
    print('non-persistent tape keeps: %d arrays, %d KiB' % saved_arrays(tape))
    """)
    L.md("""
    `MatMul` needs both of its inputs (the gradient of `a @ b` is `dy @ bᵀ` and `aᵀ @ dy`).
    `Relu` keeps only its *output* (its gradient is `dy` where the output is positive), and
    `Mean` keeps nothing at all (its gradient only needs the input's shape). Now the same on a
    persistent tape, which keeps everything, because it cannot know which gradients you will ask
    for later:
    """)
    L.code("""
    ptape, ploss = forward({'persistent': True})
    print('persistent tape keeps:     %d arrays, %d KiB' % saved_arrays(ptape))
    """)
    L.md("""
    And after `gradient` returns, the non-persistent tape has let go of everything, while the
    persistent one holds its arrays until you `del` it:
    """)
    L.code("""
    tape.gradient(loss, [w1, w2])
    ptape.gradient(ploss, [w1, w2])
    print('after gradient, non-persistent: %d arrays, %d KiB' % saved_arrays(tape))
    print('after gradient, persistent:     %d arrays, %d KiB' % saved_arrays(ptape))
    del ptape
    """)

    # ------------------------------------------------------------------ non-scalar
    L.md("""
    ## Gradients of non-scalar targets

    A gradient is fundamentally an operation on a scalar.
    """)
    L.code("""
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y0 = x**2
        y1 = 1 / x

    print(tape.gradient(y0, x).numpy())
    print(tape.gradient(y1, x).numpy())
    """)
    L.md("""
    Thus, if you ask for the gradient of multiple targets, the result for each source is:

    - The gradient of the sum of the targets, or equivalently
    - The sum of the gradients of each target.
    """)
    L.code("""
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y0 = x**2
        y1 = 1 / x

    print(tape.gradient({'y0': y0, 'y1': y1}, x).numpy())
    """)
    L.md("The Korean copy of the guide checks both readings with `y1 = exp(1/x)`:")
    L.code("""
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
    """)
    L.md("Similarly, if the target(s) are not scalar the gradient of the sum is calculated:")
    L.code("""
    x = mt.Variable(2.)
    with mt.GradientTape() as tape:
        y = x * [3., 4.]

    print(tape.gradient(y, x).numpy())
    """)
    L.md("""
    This makes it simple to take the gradient of the sum of a collection of losses, or the
    gradient of the sum of an element-wise loss calculation. If you need a separate gradient for
    each item, use a Jacobian (lesson 02).

    In some cases you can skip the Jacobian. For an element-wise calculation, the gradient of the
    sum gives the derivative of each element with respect to its input-element, since each
    element is independent:
    """)
    L.code("""
    x = mt.linspace(-10.0, 10.0, 200+1)

    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.nn.sigmoid(x)

    dy_dx = tape.gradient(y, x)
    """)
    L.code("""
    plt.plot(x, y, label='y')
    plt.plot(x, dy_dx, label='dy/dx')
    plt.legend()
    _ = plt.xlabel('x')
    """)
    L.md("""
    `mt.viz.plot_gradient(f, x)` draws the same figure for any element-wise function in one call
    (it runs the tape for you):
    """)
    L.code("""
    _ = mt.viz.plot_gradient(mt.nn.sigmoid, x)
    """)

    # ------------------------------------------------------------------ control flow
    L.md("""
    ## Control flow

    Because a gradient tape records operations as they are executed, Python control flow is
    naturally handled (for example, `if` and `while` statements).

    Here a different variable is used on each branch of an `if`. The gradient only connects to the
    variable that was used:
    """)
    L.code("""
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
    """)
    L.md("""
    Just remember that the control statements themselves are not differentiable, so they are
    invisible to gradient-based optimizers.

    Depending on the value of `x` in the above example, the tape either records `result = v0` or
    `result = v1**2`. The gradient with respect to `x` is always `None`.
    """)
    L.code("""
    dx = tape.gradient(result, x)

    print(dx)
    """)
    L.md("`mt.viz.explain` says why, from what the tape recorded:")
    L.code("""
    print(mt.viz.explain(tape, result, x))
    del tape
    """)

    # ------------------------------------------------------------------ None cases
    L.md("""
    ## Cases where `gradient` returns `None`

    When a target is not connected to a source, `gradient` will return `None`.
    """)
    L.code("""
    x = mt.Variable(2.)
    y = mt.Variable(3.)

    with mt.GradientTape() as tape:
        z = y * y
    print(tape.gradient(z, x))
    """)
    L.code("""
    print(mt.viz.explain(tape, z, x))
    """)
    L.md("""
    Here `z` is obviously not connected to `x`, but there are several less-obvious ways that a
    gradient can be disconnected.

    ### 1. Replaced a variable with a tensor

    In the section on "controlling what the tape watches" you saw that the tape will automatically
    watch an `mt.Variable` but not an `mt.Tensor`.

    One common error is to inadvertently replace a Variable with a Tensor, instead of using
    `Variable.assign` to update the Variable. Here is an example:
    """)
    L.code("""
    x = mt.Variable(2.0)

    for epoch in range(2):
        with mt.GradientTape() as tape:
            y = x+1

        print(type(x).__name__, ":", tape.gradient(y, x))
        x = x + 1   # This should be `x.assign_add(1)`
    """)
    L.md("The second time round, `x` was a plain Tensor (made by `x = x + 1`). Ask why:")
    L.code("""
    # `tape`, `y` and `x` are the ones from the loop's last pass.
    print(mt.viz.explain(tape, y, x))
    """)
    L.md("""
    ### 2. Did calculations outside of minitape

    The tape can't record the gradient path if the calculation exits minitape. For example:
    """)
    L.code("""
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
    """)
    L.code("""
    print(mt.viz.explain(tape, y, x))
    """)
    L.md("""
    The reader's notebook goes one step further and asks for a gradient of the NumPy result itself.
    TensorFlow failed there with an unrelated `AttributeError: 'numpy.float64' object has no
    attribute '_id'`; minitape says what happened:
    """)
    L.code("""
    x = mt.Variable([[1., 2.],
                     [3., 4.]])

    with mt.GradientTape() as tape:
        x2 = x * x
        y = np.mean(x2)

    try:
        tape.gradient(y, x2)
    except TypeError as e:
        print(f'{type(e).__name__}: {e}')
    """)
    L.md("""
    ### 3. Took gradients through an integer or string

    Integers and strings are not differentiable. If a calculation path uses these data types there
    will be no gradient.

    Nobody expects strings to be differentiable, but it's easy to accidentally create an `int`
    constant or variable if you don't specify the `dtype`.
    """)
    L.code("""
    x = mt.constant(10)

    with mt.GradientTape() as g:
        g.watch(x)
        y = x * x

    print(g.gradient(y, x))
    """)
    L.code("""
    print(mt.viz.explain(g, y, x))
    """)
    L.md("""
    minitape, like TensorFlow, doesn't automatically cast between types, so in practice you'll often
    get a type error instead of a missing gradient. The reader's notebook meets the same `None`
    with an integer *Variable*:
    """)
    L.code("""
    x = mt.Variable(1)

    with mt.GradientTape() as tape:
        y = x * x

    print(tape.gradient(y, x))
    """)
    L.code("""
    print(mt.viz.explain(tape, y, x))
    """)
    L.md("""
    ### 4. Took gradients through a stateful object

    State stops gradients. When you read from a stateful object, the tape can only observe the
    current state, not the history that led to it.

    An `mt.Tensor` is immutable: it has a value, but no state. All the operations discussed so far
    are also stateless: the output of `mt.matmul` only depends on its inputs.

    An `mt.Variable` has internal state, its value. When you use the variable, the state is read.
    It's normal to calculate a gradient with respect to a variable, but the variable's state blocks
    gradient calculations from going farther back. For example:
    """)
    L.code("""
    x0 = mt.Variable(3.0)
    x1 = mt.Variable(0.0)

    with mt.GradientTape() as tape:
        # Update x1 = x1 + x0.
        x1.assign_add(x0)
        # The tape starts recording from x1.
        y = x1**2   # y = (x1 + x0)**2

    # This doesn't work.
    print(tape.gradient(y, x0))   # dy/dx0 = 2*(x1 + x0)
    """)
    L.code("""
    print(mt.viz.explain(tape, y, x0))
    """)
    L.md("""
    The Korean copy of the guide shows the fix: compute the sum as a Tensor, so the tape sees the
    addition (now `x1` is 3, so `dy/dx0 = 2·(3 + 3) = 12`):
    """)
    L.code("""
    with mt.GradientTape() as tape:
        x2 = x1 + x0
        y = x2**2

    print('dy/dx0: ', tape.gradient(y, x0))
    """)

    # ------------------------------------------------------------------ no gradient
    L.md("""
    ## No gradient registered

    Some operations are registered as being non-differentiable and will return `None`. Others have
    no gradient registered. `mt.registry.registered_op_types()` lists the op types that have one.

    If you attempt to take a gradient through a float op that has no gradient registered, the tape
    will throw an error instead of silently returning `None`. This way you know something has gone
    wrong.

    For example, `mt.image.adjust_contrast` records the op `AdjustContrastv2`, which could have a
    gradient, but the gradient is not implemented:
    """)
    L.code("""
    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    delta = mt.Variable(0.1)

    with mt.GradientTape() as tape:
        new_image = mt.image.adjust_contrast(image, delta)

    try:
        print(tape.gradient(new_image, [image, delta]))
        assert False   # This should not happen.
    except LookupError as e:
        print(f'{type(e).__name__}: {e}')
    """)
    L.code("""
    print('AdjustContrastv2' in mt.registry.registered_op_types())
    print('Mul' in mt.registry.registered_op_types())
    """)
    L.md("""
    If you need to differentiate through this op, you'll either need to implement the gradient and
    register it (using `mt.RegisterGradient`, shown in lesson 02) or re-implement the function
    using other ops.

    ## Zeros instead of `None`

    In some cases it would be convenient to get 0 instead of `None` for unconnected gradients. You
    can decide what to return when you have unconnected gradients using the
    `unconnected_gradients` argument:
    """)
    L.code("""
    x = mt.Variable([2., 2.])
    y = mt.Variable(3.)

    with mt.GradientTape() as tape:
        z = y**2
    print(tape.gradient(z, x, unconnected_gradients=mt.UnconnectedGradients.ZERO))
    """)

    # ------------------------------------------------------------------ exercises
    L.md("""
    ## Exercises

    Try each one in a new cell before opening the answer.
    """)
    L.exercise(
        "**1.** With a tape, compute the derivative of `y = x**3` at `x = 2.0`. What number do you "
        "expect?",
        """
        `3·x² = 12`.

        ```python
        x = mt.Variable(2.0)
        with mt.GradientTape() as tape:
            y = x**3
        print(tape.gradient(y, x).numpy())   # 12.0
        ```
        """)
    L.exercise(
        """
        **2.** Why does this print `None`, and what are two ways to fix it?

        ```python
        x = mt.constant(2.0)
        with mt.GradientTape() as tape:
            y = x * x
        print(tape.gradient(y, x))
        ```
        """,
        """
        `x` is a Tensor, and tapes only watch trainable Variables automatically
        (`mt.viz.explain(tape, y, x)` says so). Either call `tape.watch(x)` inside the `with`
        block, or make `x` an `mt.Variable(2.0)`. Both give `4.0`.
        """)
    L.exercise(
        """
        **3.** `y = x * [3., 4.]` gave the single number `7.0`. How do you get the derivative of
        each element of `y` separately?
        """,
        """
        Ask for a Jacobian instead of a gradient (lesson 02):

        ```python
        x = mt.Variable(2.)
        with mt.GradientTape() as tape:
            y = x * [3., 4.]
        print(tape.jacobian(y, x).numpy())   # [3. 4.]
        ```
        """)
    L.exercise(
        """
        **4.** In the training-loop bug of case 1, replace `x = x + 1` with the fix the comment
        suggests. What does the loop print now?
        """,
        """
        `x.assign_add(1)` changes the Variable's value in place, so `x` stays a Variable that the
        tape watches: both passes print `Variable : mt.Tensor(1.0, shape=(), dtype=float32)`.
        """)
    return L.notebook()
