"""TensorFlow code of a textbook's first chapters, run with ``import minitape as tf`` (issue #20).

The blocks follow the TensorFlow edition of "Dive into Deep Learning", chapter 2 (data
manipulation, linear algebra, automatic differentiation), where the issue's learner hit
``tf.tensordot``, ``tf.linalg.matvec`` and ``X_var[1, 2].assign(9)``. Expected values are
NumPy's or closed forms.
"""

from __future__ import annotations

import numpy as np

import minitape as tf


def test_data_manipulation_assigning_into_a_variable():
    X = tf.reshape(tf.range(12, dtype=tf.float32), (3, 4))
    X_var = tf.Variable(X)
    X_var[1, 2].assign(9)
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[1, 2] = 9
    np.testing.assert_array_equal(X_var.numpy(), expected)
    X_var[0:2, :].assign(tf.ones(X_var[0:2, :].shape, dtype=tf.float32) * 12)
    expected[0:2, :] = 12
    np.testing.assert_array_equal(X_var.numpy(), expected)
    Z = tf.Variable(tf.zeros_like(X))
    before = id(Z)
    Z.assign(X + X)
    assert id(Z) == before


def test_linear_algebra_dot_products_and_matrix_vector_products():
    x = tf.range(4, dtype=tf.float32)
    y = tf.ones(4, dtype=tf.float32)
    assert float(tf.tensordot(x, y, axes=1)) == 6.0 == float(tf.reduce_sum(x * y))
    A = tf.reshape(tf.range(20, dtype=tf.float32), (5, 4))
    Ax = tf.linalg.matvec(A, x)
    assert A.shape == (5, 4) and x.shape == (4,) and Ax.shape == (5,)
    np.testing.assert_array_equal(Ax.numpy(), np.arange(20.0).reshape(5, 4) @ np.arange(4.0))
    B = tf.ones((4, 3), tf.float32)
    np.testing.assert_array_equal(tf.matmul(A, B).numpy(), A.numpy() @ np.ones((4, 3)))
    u = tf.constant([3.0, -4.0])
    assert float(tf.norm(u)) == 5.0 and float(tf.reduce_sum(tf.abs(u))) == 7.0


def test_automatic_differentiation_chapter():
    x = tf.range(4, dtype=tf.float32)
    x = tf.Variable(x)
    with tf.GradientTape() as t:
        y = 2 * tf.tensordot(x, x, axes=1)
    x_grad = t.gradient(y, x)
    assert bool(tf.reduce_min(tf.cast(x_grad == 4 * x, tf.int32)) == 1)

    with tf.GradientTape() as t:
        y = tf.reduce_sum(x)
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), np.ones(4))

    with tf.GradientTape() as t:
        y = x * x
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), 2 * np.arange(4.0))

    with tf.GradientTape(persistent=True) as t:
        y = x * x
        u = tf.stop_gradient(y)
        z = u * x
    np.testing.assert_array_equal(t.gradient(z, x).numpy(), u.numpy())
    np.testing.assert_array_equal(t.gradient(y, x).numpy(), 2 * x.numpy())

    def f(a):
        b = a * 2
        while tf.norm(b) < 1000:
            b = b * 2
        if tf.reduce_sum(b) > 0:
            c = b
        else:
            c = 100 * b
        return c

    tf.random.set_seed(0)
    a = tf.Variable(tf.random.normal(shape=()))
    with tf.GradientTape() as t:
        d = f(a)
    d_grad = t.gradient(d, a)
    np.testing.assert_allclose(float(d_grad), float(d / a), rtol=1e-6)
