"""Initializers, mt.keras.backend and Layer.add_weight / add_variable (issue #32).

Expected values are NumPy's own draws from the same generator (minitape draws from
``np.random.default_rng``), closed forms (Glorot's and He's limits and standard deviations)
and the defining properties (an orthogonal matrix's Q^T Q = I).
"""

import numpy as np
import pytest

import minitape as mt

init = mt.keras.initializers


@pytest.fixture
def restore_backend():
    yield
    mt.keras.backend.set_floatx("float32")
    mt.keras.backend.set_epsilon(1e-7)


def test_glorot_uniform_is_numpys_uniform_with_glorots_limit():
    mt.random.set_seed(5)
    got = init.GlorotUniform()((30, 20)).numpy()
    limit = np.sqrt(6.0 / (30 + 20))
    want = np.random.default_rng(5).uniform(-limit, limit, (30, 20)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("cls,shape,limit", [
    ("GlorotUniform", (40, 60), np.sqrt(6 / 100)),
    ("HeUniform", (40, 60), np.sqrt(6 / 40)),
    ("LecunUniform", (40, 60), np.sqrt(3 / 40)),
    ("GlorotUniform", (3, 3, 8, 16), np.sqrt(6 / (9 * 8 + 9 * 16))),   # conv fans
])
def test_uniform_schemes_stay_within_their_limit_and_fill_it(cls, shape, limit):
    mt.random.set_seed(0)
    values = getattr(init, cls)()(shape).numpy()
    assert values.shape == shape and values.dtype == np.float32
    assert np.abs(values).max() <= limit
    assert np.abs(values).max() > 0.95 * limit
    assert values.std() == pytest.approx(limit / np.sqrt(3), rel=0.05)


@pytest.mark.parametrize("cls,fan,scale", [("HeNormal", "in", 2.0), ("GlorotNormal", "avg", 1.0),
                                           ("LecunNormal", "in", 1.0)])
def test_truncated_normal_schemes_have_the_scheme_stddev(cls, fan, scale):
    mt.random.set_seed(1)
    shape = (300, 200)
    values = getattr(init, cls)()(shape).numpy()
    n = 300 if fan == "in" else 250
    stddev = np.sqrt(scale / n)            # the spread the scheme asks for, after truncation
    corrected = stddev / 0.87962566103423978
    assert np.abs(values).max() <= 2 * corrected
    assert values.std() == pytest.approx(stddev, rel=0.03)


def test_random_normal_uniform_truncated_defaults_are_keras():
    mt.random.set_seed(2)
    got = init.RandomNormal()((4, 5)).numpy()
    want = np.random.default_rng(2).normal(0.0, 0.05, (4, 5)).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    mt.random.set_seed(2)
    got = init.RandomUniform()((4, 5)).numpy()
    np.testing.assert_allclose(got, np.random.default_rng(2).uniform(-0.05, 0.05, (4, 5)),
                               rtol=1e-6)
    values = init.TruncatedNormal(mean=1.0, stddev=0.5)((2000,)).numpy()
    assert values.min() >= 0.0 and values.max() <= 2.0
    assert init.TruncatedNormal().get_config() == {"mean": 0.0, "stddev": 0.05, "seed": None}


def test_tensorflows_own_initializers_are_the_same_classes():
    assert mt.random_normal_initializer is init.RandomNormal
    assert mt.random_uniform_initializer is init.RandomUniform
    assert mt.zeros_initializer is init.Zeros and mt.ones_initializer is init.Ones
    assert mt.constant_initializer is init.Constant
    np.testing.assert_array_equal(mt.zeros_initializer()([2, 3]).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(mt.ones_initializer()([2], dtype=mt.float64).numpy(),
                                  np.ones(2))
    assert mt.ones_initializer()([2], dtype=mt.float64).dtype == mt.float64
    np.testing.assert_array_equal(mt.constant_initializer(3.0)([2, 2]).numpy(),
                                  np.full((2, 2), 3.0))
    values = mt.random_uniform_initializer(-1.0, 1.0, seed=4)([1000]).numpy()
    assert -1.0 <= values.min() and values.max() < 1.0


def test_seeded_initializers_repeat_and_unseeded_ones_do_not():
    a = init.HeNormal(seed=3)
    np.testing.assert_array_equal(a((5, 5)).numpy(), a((5, 5)).numpy())
    b = init.HeNormal()
    assert not np.array_equal(b((5, 5)).numpy(), b((5, 5)).numpy())


def test_constant_identity_orthogonal():
    np.testing.assert_array_equal(init.Constant([1, 2, 3, 4, 5, 6])((2, 3)).numpy(),
                                  [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match="has 3 elements but the shape"):
        init.Constant([1, 2, 3])((2, 2))
    np.testing.assert_array_equal(init.Identity(gain=2.0)((2, 3)).numpy(),
                                  [[2, 0, 0], [0, 2, 0]])
    with pytest.raises(ValueError, match="only be used for 2D matrices"):
        init.Identity()((2, 2, 2))
    tall = init.Orthogonal(seed=0)((6, 3)).numpy().astype(np.float64)
    np.testing.assert_allclose(tall.T @ tall, np.eye(3), atol=1e-6)
    wide = init.Orthogonal(gain=3.0, seed=0)((3, 6)).numpy().astype(np.float64)
    np.testing.assert_allclose(wide @ wide.T, 9 * np.eye(3), atol=1e-5)
    kernel = init.Orthogonal(seed=1)((2, 2, 3, 4)).numpy().reshape(12, 4).astype(np.float64)
    np.testing.assert_allclose(kernel.T @ kernel, np.eye(4), atol=1e-6)


def test_variance_scaling_arguments_and_errors():
    vs = init.VarianceScaling(scale=2.0, mode="fan_out", distribution="uniform", seed=0)
    values = vs((10, 50)).numpy()
    assert np.abs(values).max() <= np.sqrt(3 * 2.0 / 50)
    assert init.VarianceScaling(distribution="normal").distribution == "truncated_normal"
    with pytest.raises(ValueError, match="scale` must be positive"):
        init.VarianceScaling(scale=0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument: fan_mid"):
        init.VarianceScaling(mode="fan_mid")
    with pytest.raises(ValueError, match="Invalid `distribution` argument: cauchy"):
        init.VarianceScaling(distribution="cauchy")
    with pytest.raises(TypeError, match="dtype must be floating"):
        init.HeNormal()((2, 2), dtype=mt.int32)


@pytest.mark.parametrize("name,cls", [
    ("glorot_uniform", "GlorotUniform"), ("GlorotUniform", "GlorotUniform"),
    ("glorot_normal", "GlorotNormal"), ("he_normal", "HeNormal"), ("he_uniform", "HeUniform"),
    ("lecun_normal", "LecunNormal"), ("random_normal", "RandomNormal"),
    ("random_uniform", "RandomUniform"), ("truncated_normal", "TruncatedNormal"),
    ("zeros", "Zeros"), ("ones", "Ones"), ("orthogonal", "Orthogonal"),
    ("identity", "Identity"), ("constant", "Constant"), ("variance_scaling", "VarianceScaling"),
])
def test_get_by_every_keras_name(name, cls):
    got = init.get(name)
    assert type(got) is getattr(init, cls)
    assert getattr(init, name) is getattr(init, cls)       # the snake-case alias
    assert init.deserialize(init.serialize(got)).get_config() == got.get_config()


def test_get_errors():
    with pytest.raises(ValueError, match="Could not interpret initializer identifier: 'he_norml'"):
        init.get("he_norml")
    with pytest.raises(TypeError, match="Could not interpret initializer identifier"):
        init.get(3)
    assert type(init.get(init.HeNormal)) is init.HeNormal and init.get(None) is None


@pytest.mark.parametrize("kernel_initializer", [
    "he_normal", mt.keras.initializers.HeNormal(), mt.keras.initializers.HeNormal,
    mt.keras.initializers.he_normal(seed=None)])
def test_dense_takes_initializer_names_objects_and_classes(kernel_initializer):
    layer = mt.keras.layers.Dense(400, kernel_initializer=kernel_initializer)
    layer(mt.ones([1, 500]))
    values = layer.kernel.numpy()
    assert values.shape == (500, 400)
    assert values.std() == pytest.approx(np.sqrt(2 / 500), rel=0.03)   # He: fan_in = 500


def test_dense_with_tensorflows_random_normal_initializer():
    mt.random.set_seed(8)
    layer = mt.layers.Dense(3, kernel_initializer=mt.random_normal_initializer(stddev=0.1))
    layer(mt.ones([2, 4]))
    want = np.random.default_rng(8).normal(0.0, 0.1, (4, 3)).astype(np.float32)
    np.testing.assert_allclose(layer.kernel.numpy(), want, rtol=1e-6)


def test_conv2d_takes_initializer_names_with_keras_fans():
    conv = mt.keras.layers.Conv2D(64, 3, kernel_initializer="he_uniform")
    conv(mt.zeros([1, 5, 5, 32]))
    limit = np.sqrt(6 / (3 * 3 * 32))
    values = conv.kernel.numpy()
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.95 * limit
    conv = mt.keras.layers.Conv2D(2, 1, kernel_initializer=init.Constant(0.5))
    np.testing.assert_array_equal(conv(mt.ones([1, 1, 1, 3])).numpy(), [[[[1.5, 1.5]]]])


def test_the_default_initializer_names_draw_as_before():
    # "glorot_uniform" by name keeps the draws lessons were executed with.
    mt.random.set_seed(11)
    a = mt.layers.Dense(3)
    a(mt.ones([1, 4]))
    mt.random.set_seed(11)
    b = mt.layers.Dense(3, kernel_initializer=init.GlorotUniform())
    b(mt.ones([1, 4]))
    np.testing.assert_allclose(a.kernel.numpy(), b.kernel.numpy(), rtol=1e-6)


# -- mt.keras.backend ---------------------------------------------------------------------------

def test_backend_defaults_are_keras():
    assert mt.keras.backend.floatx() == "float32"
    assert mt.keras.backend.epsilon() == 1e-7
    assert mt.keras.backend.image_data_format() == "channels_last"


def test_set_floatx_changes_the_weights_layers_make(restore_backend):
    mt.keras.backend.set_floatx("float64")
    assert mt.keras.backend.floatx() == "float64"
    dense = mt.keras.layers.Dense(2)
    y = dense(np.ones((1, 3)))                   # a float64 ndarray, as NumPy makes
    assert dense.kernel.dtype == mt.float64 and y.dtype == mt.float64
    conv = mt.keras.layers.Conv2D(1, 1)
    assert conv(np.ones((1, 2, 2, 1))).dtype == mt.float64
    assert init.GlorotUniform()((2, 2)).dtype == mt.float64

    class W(mt.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],))

        def call(self, x):
            return x * self.w

    layer = W()
    layer(mt.ones([1, 2], mt.float64))
    assert layer.w.dtype == mt.float64
    assert mt.keras.layers.Dense(2, dtype="float32").dtype == mt.float32
    with pytest.raises(ValueError, match="Unknown `floatx` value: 'int32'"):
        mt.keras.backend.set_floatx("int32")
    mt.keras.backend.set_floatx(np.float16)
    assert mt.keras.backend.floatx() == "float16"


def test_set_epsilon_is_what_crossentropy_clips_with(restore_backend):
    y_true, y_pred = mt.constant([[1.0]]), mt.constant([[0.0]])
    loss = mt.keras.losses.binary_crossentropy(y_true, y_pred)
    assert float(loss[0]) == pytest.approx(-np.log(1e-7), rel=1e-4)
    mt.keras.backend.set_epsilon(1e-3)
    assert mt.keras.backend.epsilon() == 1e-3
    loss = mt.keras.losses.binary_crossentropy(y_true, y_pred)
    assert float(loss[0]) == pytest.approx(-np.log(1e-3), rel=1e-5)
    with pytest.raises(TypeError, match="set_epsilon expects a number"):
        mt.keras.backend.set_epsilon("small")


def test_clear_session_restarts_the_layer_names():
    mt.keras.layers.Dense(1)
    mt.keras.backend.clear_session()
    assert mt.keras.layers.Dense(1).name == "dense"
    assert mt.keras.layers.Dense(1).name == "dense_1"
    assert mt.keras.layers.Conv2D(1, 1).name == "conv2d"


# -- Layer.add_weight and add_variable ---------------------------------------------------------

class NameFirst(mt.keras.layers.Layer):
    """Keras 2's spelling, as in TensorFlow's custom-layers tutorial."""

    def __init__(self, units):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=[int(input_shape[-1]), self.units])

    def call(self, inputs):
        return mt.matmul(inputs, self.kernel)


def test_add_weight_with_the_name_first_as_keras_2():
    layer = NameFirst(10)
    out = layer(mt.zeros([10, 5]))
    assert out.shape == (10, 10)
    assert layer.kernel.shape == (5, 10) and layer.kernel.name == "kernel"
    assert [v.path for v in layer.trainable_variables] == [f"{layer.name}/kernel"]
    limit = np.sqrt(6 / 15)                            # glorot_uniform, the default
    assert np.abs(layer.kernel.numpy()).max() <= limit


def test_add_weight_keras_3_positions_and_keywords_and_add_variable():
    layer = mt.keras.layers.Layer()
    a = layer.add_weight((2, 3), "ones")
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3)))
    b = layer.add_weight(shape=(2,), initializer=init.Constant(4.0), trainable=False, name="b")
    np.testing.assert_array_equal(b.numpy(), [4.0, 4.0])
    assert not b.trainable
    c = layer.add_variable(shape=(3,), initializer="he_normal", name="c")
    assert c.shape == (3,) and c.path == f"{layer.name}/c"
    d = layer.add_variable("d", (2,), mt.float64, "zeros")           # Keras 2's order
    assert d.dtype == mt.float64 and d.name == "d"
    e = layer.add_weight(shape=(2, 2), initializer="identity", regularizer=None)
    np.testing.assert_array_equal(e.numpy(), np.eye(2))
    assert len(layer.weights) == 5
    with pytest.raises(TypeError, match="got multiple values for argument 'shape'"):
        layer.add_weight((2,), shape=(3,))
    with pytest.raises(TypeError, match="at most 4 positional arguments"):
        layer.add_weight("w", (2,), None, "zeros", True)
    with pytest.raises(ValueError, match="unknown initializer 'he_norml'"):
        layer.add_weight(shape=(2,), initializer="he_norml")


@pytest.mark.parametrize("make,shape", [(lambda **kw: mt.keras.layers.Dense(3, **kw), (2, 4)),
                                        (lambda **kw: mt.keras.layers.Conv2D(3, 1, **kw),
                                         (1, 2, 2, 4))])
def test_bias_initializer_as_keras(make, shape):
    layer = make()
    layer(mt.ones(shape))
    np.testing.assert_array_equal(layer.bias.numpy(), np.zeros(3))     # "zeros", the default
    layer = make(bias_initializer=init.Constant(0.1))
    layer(mt.ones(shape))
    np.testing.assert_allclose(layer.bias.numpy(), [0.1] * 3, rtol=1e-6)
    layer = make(bias_initializer="ones")
    layer(mt.ones(shape))
    np.testing.assert_array_equal(layer.bias.numpy(), np.ones(3))
    with pytest.raises(ValueError, match="bias_initializer must be a Keras initializer name"):
        make(bias_initializer="zero")
