# %% [markdown]
# # 04 · Inside the tape
#
# The first three lessons used the tape; this one opens it. A `GradientTape` is a list of the
# operations that ran while it was recording, each with the tensors its gradient will need.
# `gradient` walks that list backwards, applying the chain rule one operation at a time.
# minitape can draw the list, hand it to you as plain data, and replay it step by step.
#
# **You will learn:**
# - to draw a tape with `mt.viz.draw_tape` (or just by leaving a tape as the last line of a cell);
# - to read the tape as data with `mt.viz.tape_graph`: ops, tensors and edges;
# - to step through the forward and then the backward pass with `mt.viz.TapePlayer`, and see the
#   chain rule give each number;
# - how nested tapes build a second derivative: the outer tape records the inner tape's
#   backward pass; and to lay several tapes on one time line with `mt.viz.timeline`, with
#   what `stop_recording` and `reset` cut out;
# - what a persistent tape keeps that a non-persistent one lets go, counted tensor by tensor;
# - to ask `mt.viz.explain` why a gradient is `None`;
# - to find a wrong gradient rule with `mt.viz.check_tape`, which checks each op on its own.
#
# minitape's tests re-run this lesson and compare every output with the one stored here, except
# the drawings (tagged `nbval-ignore-output`): their pictures depend on the Graphviz version, so
# the tests check the graph as data instead.

# %% [markdown]
# ## Setup
#
# Import minitape as `mt`. The last line is for lessons: it seeds the random numbers, so
# every run draws the same ones, and prints results the way the guides print them, with
# arrays to 5 decimals (their last digits differ from one CPU to another).

# %%
import numpy as np

import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

# %% [markdown]
# ## 1. Draw a tape
#
# The first example of the basic guide: watch a constant `x = 3`, compute `y = x * x` and
# `z = y * y`. The tape is persistent so that we can look at it, ask for gradients and look
# again.

# %%
x = mt.constant(3.0, name='x')
with mt.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = x * x
    z = y * y
print(tape)

# %% [markdown]
# `mt.viz.draw_tape(tape, target, sources)` draws it. Ops are rounded boxes with their type and
# number (`#1`, `#2`: the order they ran in); tensors are ellipses with their shape, dtype and
# value. `x` has a green border because the tape watches it; the target `z` has a bold one.
# Tensors filled orange are the ones the tape saved for its backward pass. The legend under
# the drawing says the same, for the marks it uses (`legend=False` leaves it out). An arrow
# into an op whose argument order matters is named with the argument it is: `a - b` draws `a`
# as `Sub`'s `x` and `b` as its `y`, so `b - a` draws differently.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, z, x)

# %% [markdown]
# A tape left as the last expression of a cell draws itself (without a target, so nothing is
# marked as target or source):

# %% tags=["nbval-ignore-output"]
tape

# %% [markdown]
# After `gradient`, the drawing shows in red the gradient that reached each tensor, with red
# dashed arrows for the way it came back: dz/dy = 2y = 18, then
# dz/dx = dz/dy · 2x = 108.

# %%
print(tape.gradient(y, x).numpy())  # 6.0 (2 * x)
print(tape.gradient(z, x).numpy())  # 108.0 (4 * x**3)

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, z, x)

# %% [markdown]
# The drawing shows the *last* backward pass, here `dz/dx`. A persistent tape can be asked
# again and again; each call is a new walk back over the same list.

# %% [markdown]
# ## 2. The tape as data
#
# The drawing is made from plain data: `mt.viz.tape_graph(tape, target, sources)` returns a
# `TapeGraph` with a node per op, a node per tensor and the edges between them. The tape numbers
# the nodes: `op1`, `op2`, ... for the ops in the order they ran (the drawing's `#1`, `#2`),
# `t1`, `t2`, ... for the tensors in the order it met them. So the same program always gives the
# same graph; this is what the tests check instead of pictures. Each tensor node also carries
# the `label` the drawing shows: its `name=`, else the variable you assigned it to.

# %%
g = mt.viz.tape_graph(tape, z, x)
label = {t.id: t.label for t in g.tensors}

for op in g.ops:
    ins = [label[i] for i in op.inputs]
    outs = [label[o] for o in op.outputs]
    print(f'{op.type} (#{op.number}): {ins} -> {outs}, gradient {op.gradient}')

# %%
for t in g.tensors:
    print(f'{t.label} ({t.id}): shape {t.shape}, {t.dtype}, value {t.value}, '
          f'watched {t.watched}, target {t.is_target}, source {t.is_source}, '
          f'made by an op: {t.produced_by is not None}')

# %% [markdown]
# The edges run forward, tensor to op (`input`, with the argument position) and op to tensor
# (`output`). `y = x * x` reads `x` twice, so there are two input edges from `x`, and in the
# backward pass both contributions add up (2x).

# %%
label |= {op.id: f'{op.type} #{op.number}' for op in g.ops}
for e in g.edges:
    tail, head = label[e.tail], label[e.head]
    print(f'{e.kind:6} #{e.index}: {tail} -> {head}')

# %% [markdown]
# After `gradient`, the graph also says what the backward pass did: `op.visited` is True for
# every op it went through, and each input edge carries the *contribution* it sent back to its
# tensor. `y = x * x` sends y's gradient times `x` along each of its two edges; `x`'s gradient
# is the sum of the two.

# %%
tape.gradient(z, x)
g = mt.viz.tape_graph(tape, z, x)
label = {t.id: t.label for t in g.tensors} | {op.id: f'{op.type} #{op.number}' for op in g.ops}
for e in g.edges:
    if e.carried:
        print(f'{label[e.head]} sends {e.gradient} back to {label[e.tail]}')
print('the gradient of x:', g.tensor(x).gradient)

# %% [markdown]
# `draw_tape(..., contributions=True)` writes those contributions on the red arrows and the sum
# at the tensor that received several; `source=True` writes under each op the line of code that
# made it (it is always the op's tooltip). Tensors in orange are the ones the tape *saved* for
# the backward pass (a persistent tape keeps everything).

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, z, x, contributions=True, source=True)

# %% [markdown]
# Underneath, the tape is just a list, `tape.operations`, of `Operation`s in the order they ran;
# `gradient` walks it in reverse (read `backward` in `minitape/engine/backward.py`). Each
# operation knows its inputs and outputs by the tensors' numbers, `id`: every tensor gets one
# when it is made,
# unique in the whole program (the graph's `t1`, `t2`, ... number only one tape's tensors).

# %%
ids = {x.id: 'x', y.id: 'y', z.id: 'z'}
for op in reversed(tape.operations):
    print(op.type, 'reads', [ids[i] for i in op.input_ids],
          'writes', [ids[i] for i in op.output_ids])

# %% [markdown]
# ## 3. Step through the forward and the backward pass
#
# `mt.viz.TapePlayer(tape, target, sources)` replays a tape: first each op of the forward pass
# with the value it computed, then each op of the backward pass with the gradient it sends to
# its inputs (the gradient arriving at its output times its local derivative), and last the
# gradient that reached each source.
#
# A slightly longer function, with a Variable: z = sin(x²) · x at x = 2. Its
# derivative is 2x² cos(x²) + sin(x²), which is 8 cos 4 + sin 4 ≈ −5.986.
# The player needs the tensors the ops saved, so the tape is persistent (or create the player
# before calling `gradient`).

# %%
x = mt.Variable(2.0, name='x')
with mt.GradientTape(persistent=True) as tape:
    y = x * x
    s = mt.math.sin(y)
    z = s * x

print(round(float(tape.gradient(z, x)), 4))                            # the tape
print(round(float(2 * 2.0**2 * np.cos(2.0**2) + np.sin(2.0**2)), 4))  # the formula

# %% [markdown]
# The player's steps are plain state you can read: `player.step`, `player.text` (the sentence)
# and `player.highlighted` (the id of the node drawn in blue). Here is the whole walk as text:

# %%
player = mt.viz.TapePlayer(tape, z, x, names={'x': x, 'y': y, 's': s, 'z': z})
for k in range(len(player)):
    player.step = k
    print(k, player.text)
player.step = 0

# %% [markdown]
# Read steps 3 to 6 in order: the gradient starts at `z` as 1; the last `Mul` sends `x` (2.0)
# to `s` and `s` (sin 4) straight to `x`; `Sin` multiplies what arrived by cos y; the
# first `Mul` multiplies that by 2x; and `x` adds up its two contributions,
# −0.7568 − 5.229 = −5.986.
#
# And as a widget: press **Play**, or drag the slider. The sentence and the highlighted node
# follow the step; after each backward step the gradients reached so far are drawn in red.

# %% tags=["nbval-ignore-output"]
player

# %% [markdown]
# ### Your turn: the player as a quiz
#
# With `quiz=True` each backward step first asks for the number it is about to compute: until
# you have answered in the box, the drawing shows the graph as it was before the step. Then,
# right or wrong, the step shows its number with the chain-rule product that gives it.
#
# A new function to work out by hand: q = (3p)² + p at p = 2. The quiz starts at its first
# backward step: work out each number, type it in the box and press Enter, then move on with
# the slider. (Check the last step against dq/dp = 18p + 1.)

# %% tags=["nbval-ignore-output"]
p = mt.Variable(2.0, name='p')
with mt.GradientTape(persistent=True) as quiz_tape:
    p3 = p * 3.0
    sq = p3 * p3
    q = sq + p
quiz = mt.viz.TapePlayer(quiz_tape, q, p, names={'p': p, 'p3': p3, 'sq': sq, 'q': q},
                         quiz=True)
quiz.step = next(k for k, s in enumerate(quiz.steps) if s.kind == 'backward')
quiz

# %% [markdown]
# In code (on a small tape of its own, so as not to give the answers above away):
# `quiz.text` is the question, `quiz.expected` the number, `quiz.answer(value)` says whether
# `value` is right, and `quiz.feedback` then gives the chain-rule product.

# %%
u = mt.constant(3.0)
with mt.GradientTape(persistent=True) as small:
    small.watch(u)
    v = u * u
    w = v * v
demo = mt.viz.TapePlayer(small, w, u, names={'u': u, 'v': v, 'w': w}, quiz=True)
demo.step = 2
print(demo.text)           # the question
print(demo.answer(12.0))   # a guess
print(demo.feedback)       # the right number, and why

# %% [markdown]
# ### Take the player with you
#
# `player.to_html()` is one self-contained web page, every step's sentence and drawing and a
# slider, with nothing to install and no internet needed; `player.save_html('walk.html')` writes
# it to a file to open in any browser or send to someone. (The player's output in a notebook
# carries the same frames, so a notebook viewer that shows no widgets still shows the walk.)

# %%
page = player.to_html()
print(page.count('<section'), 'frames')
print('links to other sites:', 'http' in page.replace('http://www.w3.org', ''))

# %% [markdown]
# ## 4. Nested tapes: a second derivative
#
# The advanced guide's higher-order example. The inner tape `t1` records y = x³; its
# `gradient` runs *inside* the outer tape `t2`, and the backward pass is made of ordinary
# minitape ops, so `t2` records it. Differentiating that record again gives the second
# derivative.

# %%
x = mt.Variable(1.0, name='x')

with mt.GradientTape() as t2:
    with mt.GradientTape() as t1:
        y = x * x * x

    # Compute the gradient inside the outer `t2` context manager
    # which means the gradient computation is differentiable as well.
    dy_dx = t1.gradient(y, x)

print('t1 recorded:', [op.type for op in t1.operations])
print('t2 recorded:', [op.type for op in t2.operations])

# %% [markdown]
# `t2` holds the two forward `Mul`s (it was recording too) followed by the ops of `t1`'s backward
# pass. Drawn together, each op is coloured by the tapes that recorded it: the forward `Mul`s
# carry both colours (tape 1 is `t1`, tape 2 is `t2`), the backward ops only the outer tape's.
# The constant 1.0 that starts the backward pass is there too: dy/dy = 1. (The tensor labels
# `t1`, `t2`, ... are the drawing's short names for unnamed tensors; they have nothing to do
# with the tapes `t1` and `t2`.)

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape([t1, t2])

# %% [markdown]
# The outer tape alone, with `dy_dx` as its target: everything that connects `x` to `dy_dx`
# is what `t2.gradient` will walk back through.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(t2, dy_dx, x)

# %%
d2y_dx2 = t2.gradient(dy_dx, x)

print('dy_dx:', dy_dx.numpy())  # 3 * x**2 => 3.0
print('d2y_dx2:', d2y_dx2.numpy())  # 6 * x => 6.0


# %% [markdown]
# ### The same story on a time line
#
# `mt.viz.timeline(*tapes)` lays several tapes side by side on one time axis: one row per tape
# (in the order they were created), and along it every op the tape recorded and every moment
# of its life, in the order they happened. Blue dots are ops; the orange triangles on `t2`'s row
# are the ops of `t1`'s backward pass that `t2` recorded, with an arrow from `t1`'s `gradient`
# call (the star). The pale band is the time a tape was recording: `t1`'s ends at its
# `gradient` call, because a non-persistent tape stops recording before its backward pass. The
# cross is where a non-persistent tape released the tensors it saved.

# %%
mt.viz.timeline(t2, t1, names=['t2', 't1'])

# %% [markdown]
# It shows what `stop_recording` and `reset` cut out, too. Here an outer tape and an inner,
# persistent one record `x * x`; inside the inner tape's `stop_recording` an op reaches the outer
# tape only (the grey hatched span); then `reset` makes the inner tape forget what it had (the
# red hatched span, up to the red bar) and it records again.

# %%
x = mt.Variable(2.0, name='x')
with mt.GradientTape() as outer:
    with mt.GradientTape(persistent=True) as inner:
        a = x * x
        with inner.stop_recording():
            b = x + 1.0
        inner.reset()
        c = mt.math.sin(x * a)
    dc_dx = inner.gradient(c, x)
d2c_dx2 = outer.gradient(dc_dx, x)

print('inner recorded:', [op.type for op in inner.operations])
print('outer recorded:', [op.type for op in outer.operations])

# %%
mt.viz.timeline(outer, inner)

# %% [markdown]
# ## 5. What a persistent tape keeps
#
# Each recorded `Operation` keeps only the tensors its gradient needs, in `op._inputs` and
# `op._outputs` (`None` marks what it did not keep). `Mul` needs both inputs; `Exp` and `Relu`
# need only their output; `Sum` needs nothing but a shape. This helper counts the saved
# tensors:

# %%
def saved_tensors(tape):
    """How many tensors the ops of `tape` still hold for the backward pass."""
    return sum(t is not None
               for op in tape.operations
               for t in (op._inputs or ()) + (op._outputs or ()))

def record(persistent):
    a = mt.Variable([1.0, -2.0, 3.0], name='a')
    with mt.GradientTape(persistent=persistent) as tape:
        b = a * a
        c = mt.exp(-b)
        d = mt.nn.relu(c - 0.5)
        loss = mt.reduce_sum(d)
    return tape, loss, a

tape, loss, a = record(persistent=False)
for op in tape.operations:
    ins = ['kept' if t is not None else '-' for t in op._inputs]
    outs = ['kept' if t is not None else '-' for t in op._outputs]
    print(f'{op.type:6} inputs {ins}  outputs {outs}')

# %% [markdown]
# Now the same computation on both kinds of tape, before and after `gradient`:

# %%
ptape, ploss, pa = record(persistent=True)
print('before gradient: non-persistent keeps', saved_tensors(tape),
      'tensors, persistent keeps', saved_tensors(ptape))

tape.gradient(loss, a)
ptape.gradient(ploss, pa)
print('after gradient:  non-persistent keeps', saved_tensors(tape),
      'tensors, persistent keeps', saved_tensors(ptape))

# %% [markdown]
# On a time line: both tapes recorded the same ops and were asked once; only the
# non-persistent one (`tape 1`) released its tensors then (the cross).

# %%
mt.viz.timeline(tape, ptape)

# %% [markdown]
# The non-persistent tape frees each op's tensors as its backward pass goes past the op, so
# after `gradient` it holds nothing, and a second call is an error. The persistent tape keeps
# everything until you `del` it: you can ask it for as many gradients as you like, and step
# through it with a `TapePlayer`. The player says so when it cannot:

# %%
try:
    tape.gradient(loss, a)
except RuntimeError as e:
    print('RuntimeError:', e)

try:
    mt.viz.TapePlayer(tape, loss, a)
except RuntimeError as e:
    print('RuntimeError:', e)

# %% [markdown]
# The values drawn on a released tape are still there (small values are copied as metadata when
# an op is recorded), so you can still draw it:

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, loss, a)

# %%
del ptape  # a persistent tape holds its tensors until it is deleted

# %% [markdown]
# ## 6. Why is my gradient `None`?
#
# `mt.viz.explain(tape, target, source)` says in one sentence why `gradient` returned `None`
# (or that it did not), from what the tape recorded, and what to do about it. A classic slip:
# a Variable replaced by a plain Tensor with `x = x + 1`.

# %%
x = mt.Variable(2.0, name='x')
for epoch in range(2):
    with mt.GradientTape() as tape:
        y = x + 1

    print(type(x).__name__, tape.gradient(y, x))
    x = x + 1   # This should be `x.assign_add(1)`
print(mt.viz.explain(tape, y, x))

# %% [markdown]
# The drawing says the same thing, in a note next to the source. Since nothing the tape
# watched was used, it recorded no operation at all: the target `y` and the source `x` are two
# lone, grey nodes.

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, y, x)

# %% [markdown]
# Another: a `stop_gradient` on the way.

# %%
w = mt.Variable(3.0, name='w')
with mt.GradientTape() as tape:
    h = mt.stop_gradient(w * 2.0)
    out = h * h
print(tape.gradient(out, w))
print(mt.viz.explain(tape, out, w))

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, out, w)

# %% [markdown]
# ## 7. Is my gradient right?
#
# A gradient you write yourself (with `mt.RegisterGradient` or `mt.custom_gradient`) is only
# checked by you. `mt.viz.check_tape(tape, target, sources)` checks every op the tape recorded
# between the sources and the target, *each on its own*: the op's gradient rule (the
# vector-Jacobian product the backward pass would use, for a random output gradient) against
# central finite differences of the op's own forward, at the inputs the op recorded, in
# float64. So it does not just say "wrong somewhere": it names the op.
#
# Here a new op `Cube` gets a gradient with a planted mistake, 3x instead of 3x²:

# %%
@mt.primitive('Cube')
def cube(x):
    return x ** 3


@mt.RegisterGradient('Cube', override=True)   # override=True: the cell can be run again
def _cube_grad(op, dy):
    (x,) = op.inputs
    return dy * 3 * x        # wrong: the derivative of x**3 is 3 * x**2


x = mt.Variable([0.5, 1.0, 2.0], name='x')
with mt.GradientTape(persistent=True) as tape:
    y = mt.math.sin(x)
    z = cube(y) * x
    loss = mt.reduce_sum(z)

check = mt.viz.check_tape(tape, loss, x)
print(check)

# %% [markdown]
# Only `#2 Cube` fails: its rule's numbers are the finite differences divided by
# y = sin x, the factor the rule forgot. Shown in a notebook, the check draws the tape with
# the failing op in red, its rule's values next to the finite differences:

# %% tags=["nbval-ignore-output"]
check

# %% [markdown]
# Register the right rule and check the same tape again (gradients are looked up when they are
# used). Lesson 06 is a series of exercises built on this check.

# %%
@mt.RegisterGradient('Cube', override=True)
def _cube_grad_fixed(op, dy):
    (x,) = op.inputs
    return dy * 3 * x * x


print(mt.viz.check_tape(tape, loss, x))

# %% [markdown]
# ## Exercises
#
# Try each one in a new cell; the answers are folded away.

# %% [markdown]
# **1.** Record `z = mt.math.sin(x) * mt.math.cos(x)` for a Variable `x = 0.5` on a persistent
# tape and step through it with a `TapePlayer`. How many steps are there, and which op does the
# backward pass visit first?
#
# <details><summary>Answer</summary>
#
# ```python
# x = mt.Variable(0.5, name='x')
# with mt.GradientTape(persistent=True) as tape:
#     z = mt.math.sin(x) * mt.math.cos(x)
# player = mt.viz.TapePlayer(tape, z, x)
# print(len(player))           # 7: 3 forward, 3 backward, 1 "done"
# player.step = 3
# print(player.text)           # backward through Mul ...: the last op runs back first
# ```
# (Without `names=`, the player numbers the tensors it has no name for: `t1`, `t2`, ...)
# The forward pass has three ops (`Sin`, `Cos`, `Mul`), the backward pass visits the same
# three in reverse, and the last step gives dz/dx = cos² x − sin² x = cos 1 ≈
# 0.5403.
#
# </details>

# %% [markdown]
# **2.** Extend the nested-tape example to a *third* derivative of y = x³ (it is 6
# everywhere). How many tapes do you need, and how many ops does the outermost one record?
#
# <details><summary>Answer</summary>
#
# Three tapes, each one's `gradient` called inside the next:
# ```python
# x = mt.Variable(1.0)
# with mt.GradientTape() as t3:
#     with mt.GradientTape() as t2:
#         with mt.GradientTape() as t1:
#             y = x * x * x
#         dy = t1.gradient(y, x)
#     d2y = t2.gradient(dy, x)
# d3y = t3.gradient(d2y, x)
# print(d3y.numpy())        # 6.0
# print(len(t3.operations))       # 20: the 2 forward Muls, t1's backward pass (6 ops), t2's (12)
# ```
# `mt.viz.draw_tape([t1, t2, t3])` colours each op by the tapes that recorded it.
#
# </details>

# %% [markdown]
# **3.** Using `saved_tensors`, find an op that keeps *nothing* for its backward pass. Why
# can it afford to?
#
# <details><summary>Answer</summary>
#
# `reduce_sum` (op type `Sum`): its gradient is the incoming gradient broadcast back to the
# input's shape, and the shape is kept as metadata (`op.input_shapes`), so no tensor is needed.
# `AddV2` and `Sub` need nothing either (their local derivatives are 1 and -1).
#
# </details>

# %% [markdown]
# **4.** Make `explain` give three different sentences: an unwatched `mt.constant`, a
# computation that leaves minitape through NumPy (`np.mean(y.numpy())`), and a Variable that
# the target does not use at all.
#
# <details><summary>Answer</summary>
#
# ```python
# c = mt.constant(1.0)
# v = mt.Variable(2.0, name='v')
# u = mt.Variable(5.0, name='u')
# with mt.GradientTape() as tape:
#     y = v * c
#     out = mt.constant(np.mean(y.numpy()))
# print(mt.viz.explain(tape, y, c))    # c was never watched
# print(mt.viz.explain(tape, out, v))  # no recorded op produced `out`: NumPy made it
# print(mt.viz.explain(tape, y, u))    # u was never read while the tape recorded
# ```
#
# </details>
