# %% [markdown]
# # 03 · Gradient functions: four APIs, one engine
#
# Before TensorFlow 2 settled on `tf.GradientTape`, eager mode had four ways to get a gradient.
# A well-known Q&A answer ("What's the difference between GradientTape, implicit_gradients,
# gradients_function and implicit_value_and_gradients?") compares them on one small function.
# minitape keeps all four, as thin wrappers around the same tape, so you can run that answer
# and see that they are one idea called four ways. It then shows the same gradient as
# `mt.grad`, the style of JAX.
#
# **You will learn:**
# - `GradientTape`: record, then ask for any gradient you like;
# - `gradients_function(f)`: a new function returning the gradients of `f` with respect to its
#   *arguments* (all of them, or those named in `params`);
# - `implicit_gradients(f)`: gradients with respect to the trainable *Variables* `f` reads,
#   as `(gradient, variable)` pairs;
# - `implicit_value_and_gradients(f)`: the same plus the value of `f`, for free;
# - `mt.grad` / `mt.value_and_grad`: function transforms with JAX's call shapes.

# %% [markdown]
# ## Setup
#
# Import minitape as `mt`. The last line is for lessons: it seeds the random numbers, so
# every run draws the same ones, and prints results the way the guides print them, with
# arrays to 5 decimals (their last digits differ from one CPU to another).

# %%
import minitape as mt
import minitape.notebook

mt.notebook.setup(seed=0)  # the same random numbers every run; printing as in the guides

# %% [markdown]
# ## The function
#
# A weighted sum of two inputs, with the weights in two Variables:

# %%
w1 = mt.Variable(2.0)
w2 = mt.Variable(3.0)

def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2

s = weighted_sum(5., 7.)
print(s.numpy())  # 31

# %% [markdown]
# ## 1. `GradientTape`
#
# Within a `GradientTape` context, all operations are recorded; then you can compute the
# gradients of any tensor computed within the context, with regards to any trainable variable.
# Since `s = w1 * x1 + w2 * x2`, the gradient of `s` with regards to `w1` is `x1`:

# %%
with mt.GradientTape() as tape:
    s = weighted_sum(5., 7.)

[w1_grad] = tape.gradient(s, [w1])
print(w1_grad.numpy())  # 5.0 = gradient of s with regards to w1 = x1

# %% tags=["nbval-ignore-output"]
mt.viz.draw_tape(tape, s, [w1, w2])

# %% [markdown]
# ## 2. `gradients_function`
#
# `mt.gradients_function(f)` returns another function that computes the gradients of `f`'s
# returned value with regards to its *parameters*. For example, the gradients of `s` with
# regards to `x1` and `x2`:

# %%
grad_fn = mt.gradients_function(weighted_sum)
x1_grad, x2_grad = grad_fn(5., 7.)
print(x1_grad.numpy())  # 2.0 = gradient of s with regards to x1 = w1


# %% [markdown]
# In the context of optimization it makes more sense to compute gradients with regards to the
# things we can tweak. So change the function to take `w1` and `w2` as parameters as well, and
# tell `gradients_function` to only consider the parameters named `"w1"` and `"w2"`:

# %%
def weighted_sum_with_weights(w1, x1, w2, x2):
    return w1 * x1 + w2 * x2

grad_fn = mt.gradients_function(weighted_sum_with_weights, params=["w1", "w2"])
[w1_grad, w2_grad] = grad_fn(w1, 5., w2, 7.)
print(w2_grad.numpy())  # 7.0 = gradient of s with regards to w2 = x2

# %% [markdown]
# Under the hood this is nothing but a tape that watches the chosen arguments. Written out by
# hand:

# %%
a1, a2 = mt.constant(2.0), mt.constant(3.0)
with mt.GradientTape() as tape:
    tape.watch([a1, a2])
    s = weighted_sum_with_weights(a1, 5., a2, 7.)
print([g.numpy() for g in tape.gradient(s, [a1, a2])])

# %% [markdown]
# ## 3. `implicit_gradients`
#
# `mt.implicit_gradients(f)` returns a function that computes the gradients of `f`'s returned
# value with regards to **all trainable variables it depends on**, without passing them
# explicitly. Back to the first `weighted_sum`. The gradient function returns a list of
# `(gradient, variable)` pairs:

# %%
grad_fn = mt.implicit_gradients(weighted_sum)
[(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)
print(w1_grad.numpy())  # 5.0 = gradient of s with regards to w1 = x1

assert w1_var is w1
assert w2_var is w2

# %% [markdown]
# Those pairs are exactly what a gradient-descent step needs:
# `for g, v in pairs: v.assign_sub(learning_rate * g)`.
#
# The answer suggests an experiment: make `w1` untrainable and redefine `weighted_sum`;
# `grad_fn` then only returns the gradient with regards to `w2`:

# %%
w1 = mt.Variable(2., trainable=False)

def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2

grad_fn = mt.implicit_gradients(weighted_sum)
pairs = grad_fn(5., 7.)
print(len(pairs))
print(pairs[0][1] is w2, pairs[0][0].numpy())

# %%
w1 = mt.Variable(2.0)   # trainable again for the rest of the lesson

def weighted_sum(x1, x2):
    return w1 * x1 + w2 * x2


# %% [markdown]
# ## 4. `implicit_value_and_gradients`
#
# Almost identical to `implicit_gradients`, except that the function it creates also returns
# the result of the function being differentiated:

# %%
grad_fn = mt.implicit_value_and_gradients(weighted_sum)
s, [(w1_grad, w1_var), (w2_grad, w2_var)] = grad_fn(5., 7.)
print(s.numpy())  # 31.0 = s = w1 * x1 + w2 * x2

# %% [markdown]
# When you need both the output of a function and its gradients, this gives you the output for
# free: it was computed on the way to the gradients anyway.
#
# ## Side by side
#
# | API | with respect to | returns |
# | --- | --- | --- |
# | `GradientTape` | any source passed to `gradient` | gradients, in the sources' structure |
# | `gradients_function(f, params)` | `f`'s arguments (or `params`) | a list of gradients |
# | `implicit_gradients(f)` | the trainable Variables `f` read | `[(gradient, variable), ...]` |
# | `implicit_value_and_gradients(f)` | the same | `(value, [(gradient, variable), ...])` |
#
# Here are all four on the same function and inputs. They do not all answer the same question:
# three differentiate with respect to the Variables `w1, w2`, `gradients_function` with respect
# to the arguments `x1, x2`. Nor do they return the same structure (a list, a list, pairs,
# a value and pairs), so the cell takes the numbers out of each:

# %%
with mt.GradientTape() as tape:
    s = weighted_sum(5., 7.)
print('GradientTape:                ', [g.numpy() for g in tape.gradient(s, [w1, w2])])

print('gradients_function:          ',
      [g.numpy() for g in mt.gradients_function(weighted_sum)(5., 7.)])

print('implicit_gradients:          ',
      [g.numpy() for g, v in mt.implicit_gradients(weighted_sum)(5., 7.)])

value, pairs = mt.implicit_value_and_gradients(weighted_sum)(5., 7.)
print('implicit_value_and_gradients:', value.numpy(), [g.numpy() for g, v in pairs])

# %% [markdown]
# The three that differentiate with respect to `w1, w2` agree: the inputs, 5 and 7.
# `gradients_function` differentiates with respect to `x1, x2`, so it gives the weights, 2 and
# 3. `implicit_value_and_gradients` also returns the value, 31.
#
# ### Which one to use
#
# The answer's advice: in machine learning you usually want the gradients of the loss with
# respect to the model's Variables *and* the value of the loss itself. For that, the simplest and
# most efficient options are `GradientTape` and `implicit_value_and_gradients`: the other two do
# not return the loss, so getting it costs another forward pass. Its author preferred
# `implicit_value_and_gradients` for production code and `GradientTape` for experimenting in a
# notebook.
#
# In TensorFlow 2 only `tf.GradientTape` remains (as the answer's later edit notes), so in code
# you will meet today, use the tape.
#
# ## Heading to JAX: `mt.grad`
#
# JAX has no tape object at all: `jax.grad(f)` transforms a function into its gradient
# function, differentiating with respect to positional arguments chosen by `argnums`. minitape
# offers the same call shapes, so the step from here to JAX is small:

# %%
# d s / d w1 and d s / d w2: arguments 0 and 2
dw1, dw2 = mt.grad(weighted_sum_with_weights, argnums=(0, 2))(2.0, 5.0, 3.0, 7.0)
print(dw1.numpy(), dw2.numpy())  # 5.0 7.0

# An int argnums gives a single gradient
dx1 = mt.grad(weighted_sum_with_weights, argnums=1)(2.0, 5.0, 3.0, 7.0)
print(dx1.numpy())  # 2.0

# %%
value_and_grad_fn = mt.value_and_grad(weighted_sum_with_weights, argnums=(0, 2))
value, (dw1, dw2) = value_and_grad_fn(2.0, 5.0, 3.0, 7.0)
print(value.numpy(), dw1.numpy(), dw2.numpy())  # 31.0 5.0 7.0


# %% [markdown]
# Transforms compose: the gradient function is an ordinary function, so `mt.grad` of it is the
# second derivative:

# %%
def cube(x):
    return x**3

print(mt.grad(cube)(2.0).numpy())            # 3 * x**2 = 12
print(mt.grad(mt.grad(cube))(2.0).numpy())   # 6 * x = 12

# %% [markdown]
# `mt.grad` insists on a scalar output, as JAX does, and says what to do otherwise:

# %%
try:
    mt.grad(lambda x: x * 2.0)(mt.constant([1., 2.]))
except (TypeError, ValueError) as e:
    print(f'{type(e).__name__}: {e}')

# %% [markdown]
# ## Exercises

# %% [markdown]
# **1.** Using `mt.gradients_function` with `params`, get the gradient of
# `weighted_sum_with_weights(w1, x1, w2, x2)` with respect to `x2` only, at
# `(2., 5., 3., 7.)`.
#
# <details><summary>Answer</summary>
#
# ```python
# [x2_grad] = mt.gradients_function(weighted_sum_with_weights, params=["x2"])(2., 5., 3., 7.)
# print(x2_grad.numpy())   # 3.0 = w2
# ```
# `params` also accepts positions: `params=[3]`.
#
# </details>

# %% [markdown]
# **2.** Write one step of gradient descent on `loss = (weighted_sum(5., 7.) - 10.)**2`
# with `mt.implicit_value_and_gradients` and a learning rate of `0.001`. Does the loss go
# down?
#
# <details><summary>Answer</summary>
#
# ```python
# def loss():
#     return (weighted_sum(5., 7.) - 10.)**2
#
# step = mt.implicit_value_and_gradients(loss)
# value, pairs = step()
# for g, v in pairs:
#     v.assign_sub(0.001 * g)
# print(value.numpy(), loss().numpy())   # 441.0, then about 320
# ```
#
# </details>

# %% [markdown]
# **3.** Which of the four APIs can give you the gradient with respect to an *intermediate*
# value inside `weighted_sum` (say, `w1 * x1`)?
#
# <details><summary>Answer</summary>
#
# Only the `GradientTape`: the function-based APIs only see the function's arguments or the
# Variables it reads, while a tape can be asked about any tensor it recorded. You need a
# handle on that tensor, so compute it in the `with` block yourself:
#
# ```python
# with mt.GradientTape() as tape:
#     a = w1 * 5.
#     s = a + w2 * 7.
# print(tape.gradient(s, a).numpy())   # 1.0
# ```
#
# </details>
