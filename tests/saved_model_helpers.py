"""Module-level definitions for tests/test_saving.py: saved_model finds functions by name."""

import minitape as mt


@mt.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return mt.clip_by_norm(dy, 0.5)
    return y, backward


class Inner(mt.Module):
    def __init__(self):
        super().__init__()
        self.kernel = mt.Variable([[1.0, 2.0], [3.0, 4.0]], name="kernel")
        self.frozen = mt.Variable(0.5, trainable=False, name="frozen")

    @mt.function(input_signature=[mt.TensorSpec([None, 2])])
    def apply(self, x):
        return x @ self.kernel * self.frozen


class Outer(mt.Module):
    def __init__(self, scale=3.0):
        super().__init__()
        self.scale = mt.Variable(scale, name="scale")
        self.inner = Inner()
        self.blocks = [Inner(), {"a": mt.Variable([1.0, 2.0])}]
        self.shared = self.inner           # the same object twice: loaded once

    @mt.function(input_signature=[mt.TensorSpec(None)])
    def call_custom_grad(self, x):
        return clip_gradients(x) * self.scale

    @mt.function
    def forward(self, x):
        return self.inner.apply(x) + self.blocks[1]["a"] * self.scale


class Callable(mt.Module):
    def __init__(self):
        super().__init__()
        self.w = mt.Variable(2.0)

    @mt.function
    def __call__(self, x):
        return x * self.w
