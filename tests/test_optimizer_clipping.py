"""Gradient clipping on every optimizer (clipnorm, clipvalue, global_clipnorm), as Keras's
BaseOptimizer._clip_gradients; Geron's chapter 11 uses it against exploding gradients."""

from __future__ import annotations

import numpy as np
import pytest

import minitape as mt

OPTIMIZERS = [mt.optimizers.SGD, mt.optimizers.Adam, mt.optimizers.RMSprop, mt.optimizers.Nadam,
              mt.optimizers.Adagrad, mt.optimizers.Adamax, mt.optimizers.AdamW]


def _step(opt, grads):
    variables = [mt.Variable(np.zeros_like(g)) for g in grads]
    opt.apply_gradients(zip([mt.constant(g) for g in grads], variables))
    return [v.numpy() for v in variables]


def test_sgd_updates_with_the_clipped_gradients():
    g = [np.array([3.0, 4.0], np.float32), np.array([0.0, 12.0], np.float32)]
    by_norm = _step(mt.optimizers.SGD(learning_rate=1.0, clipnorm=5.0), g)
    np.testing.assert_allclose(by_norm[0], [-3.0, -4.0])            # norm 5: unchanged
    np.testing.assert_allclose(by_norm[1], [0.0, -5.0])             # norm 12 -> 5
    by_value = _step(mt.optimizers.SGD(learning_rate=1.0, clipvalue=2.0), g)
    np.testing.assert_allclose(by_value[0], [-2.0, -2.0])
    np.testing.assert_allclose(by_value[1], [0.0, -2.0])
    glob = _step(mt.optimizers.SGD(learning_rate=1.0, global_clipnorm=6.5), g)
    scale = 6.5 / 13.0                                               # sqrt(25 + 144) = 13
    np.testing.assert_allclose(glob[0], -scale * g[0], rtol=1e-6)
    np.testing.assert_allclose(glob[1], -scale * g[1], rtol=1e-6)
    assert glob[0].dtype == np.float32


@pytest.mark.parametrize("cls", OPTIMIZERS)
def test_every_optimizer_takes_the_clipping_arguments(cls):
    g = [np.array([30.0, -40.0])]
    clipped = _step(cls(clipnorm=1.0), g)
    unclipped_small = _step(cls(), [g[0] / 50.0])    # the same direction at norm 1
    np.testing.assert_allclose(clipped[0], unclipped_small[0], rtol=1e-5, atol=1e-12)
    config = cls(clipvalue=0.5).get_config()
    assert config["clipvalue"] == 0.5 and cls.from_config(config).clipvalue == 0.5
    with pytest.raises(ValueError, match="Only one of"):
        cls(clipnorm=1.0, global_clipnorm=1.0)


def test_keras_2_arguments_get_the_fix():
    with pytest.raises(ValueError, match="use `learning_rate` instead"):
        mt.keras.optimizers.SGD(lr=0.01)
    with pytest.raises(ValueError, match="learning rate schedule instead"):
        mt.keras.optimizers.SGD(learning_rate=0.01, decay=1e-4)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['momentun'\]"):
        mt.keras.optimizers.Adam(momentun=0.9)
