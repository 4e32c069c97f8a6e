"""input_shape=, mt.keras.Input, the functional Model(inputs, outputs) and
mt.keras.utils.set_random_seed (issue 32)."""

import random

import numpy as np
import pytest

import minitape as mt

L = mt.keras.layers


def test_input_shape_builds_a_sequential_at_once_as_keras():
    model = mt.keras.Sequential([L.Dense(3, activation="relu", input_shape=(4,)), L.Dense(2)])
    assert [v.shape for v in model.variables] == [(4, 3), (3,), (3, 2), (2,)]
    flat = mt.keras.Sequential([L.Flatten(input_shape=(28, 28)), L.Dense(10)])
    assert flat.layers[1].kernel.shape == (784, 10)
    conv = mt.keras.Sequential([L.Conv2D(4, 3, input_shape=(8, 8, 1)), L.MaxPooling2D(),
                                L.Flatten(), L.Dense(2)])
    assert [v.shape for v in conv.variables] == [(3, 3, 1, 4), (4,), (36, 2), (2,)]
    dim = mt.keras.Sequential([L.Dense(2, input_dim=5)])
    assert dim.layers[0].kernel.shape == (5, 2)
    with_input = mt.keras.Sequential([mt.keras.Input(shape=(3,)), L.Dense(2)])
    assert with_input.layers[0].kernel.shape == (3, 2) and len(with_input.layers) == 1
    lines = []
    model.summary(print_fn=lines.append)
    assert lines[-4:-1] == ["Total params: 23", "Trainable params: 23",
                            "Non-trainable params: 0"]
    # a layer alone keeps input_shape for a Sequential, and builds on its first call
    alone = L.Dense(2, input_shape=(4,))
    assert alone.kernel is None
    # Sequential.add after an input_shape builds the new layer too
    model.add(L.Dense(1))
    assert model.layers[-1].kernel.shape == (2, 1)
    built = mt.keras.Sequential([L.Dense(2)])
    built.build((None, 6))
    assert built.layers[0].kernel.shape == (6, 2)


def test_bad_input_shape():
    with pytest.raises(ValueError, match="input_shape must be a tuple of positive ints"):
        L.Dense(2, input_shape=(0,))
    with pytest.raises(ValueError, match="needs shape="):
        mt.keras.Input()
    with pytest.raises(ValueError, match="Input must come first"):
        mt.keras.Sequential([L.Dense(2), mt.keras.Input(shape=(3,))])


def test_a_functional_chain_computes_as_its_layers_and_trains():
    inputs = mt.keras.Input(shape=(4,), name="features")
    assert inputs.shape == (None, 4) and inputs.dtype == mt.float32
    hidden = L.Dense(8, activation="tanh")
    out = L.Dense(1)
    h = hidden(inputs)
    assert h.shape == (None, 8)
    model = mt.keras.Model(inputs, out(h))
    assert type(model).__name__ == "Functional" and isinstance(model, mt.keras.Model)
    assert type(model.layers[0]).__name__ == "InputLayer"
    assert model.layers[1:] == [hidden, out]
    assert model.variables == hidden.variables + out.variables
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_array_equal(model(x).numpy(), out(hidden(mt.constant(x))).numpy())
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(out(hidden(mt.constant(x))) ** 2)
    for a, b in zip(grads, tape.gradient(loss, model.trainable_variables)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, np.zeros((5, 1), np.float32), epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    with pytest.raises(ValueError, match="expects shape \\(None, 4\\)"):
        model(np.ones((2, 3), np.float32))


def test_several_inputs_and_outputs_and_a_shared_layer():
    a = mt.keras.Input(shape=(2,), name="a")
    b = mt.keras.Input(shape=(2,), name="b")
    shared = L.Dense(3)
    joined = L.Lambda(lambda t: mt.concat(t, axis=1))([shared(a), shared(b)])
    head = L.Dense(1)
    model = mt.keras.Model(inputs=[a, b], outputs=[head(joined), joined])
    assert len(model.variables) == 4          # the shared layer's weights once
    xa, xb = np.ones((3, 2), np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
    first, second = model([xa, xb])
    expected = np.concatenate([shared(xa).numpy(), shared(xb).numpy()], axis=1)
    np.testing.assert_array_equal(second.numpy(), expected)
    np.testing.assert_array_equal(first.numpy(), head(expected).numpy())
    named = mt.keras.Model({"a": a, "b": b}, {"out": head(joined)})
    assert named({"a": xa, "b": xb})["out"].shape == (3, 1)
    with pytest.raises(ValueError, match="has 2 inputs, got 1"):
        model([xa])


def test_keras_tensor_misuse_is_a_clear_error():
    x = mt.keras.Input(shape=(3,))
    with pytest.raises(TypeError, match="Lambda"):
        mt.exp(x)   # (an op; Python's operators, x + 1.0, are recorded as Keras 3's)
    other = mt.keras.Input(shape=(3,))
    with pytest.raises(ValueError, match="not among the model's inputs"):
        mt.keras.Model(x, L.Dense(1)(other))
    with pytest.raises(TypeError, match="expects KerasTensors"):
        mt.keras.Model(x, mt.ones((1, 3)))


def test_set_random_seed_repeats_python_numpy_and_minitape_random_numbers():
    def draw():
        layer = L.Dense(3)
        layer(mt.ones((1, 2)))
        return (random.random(), np.random.rand(), mt.random.normal([2]).numpy().tolist(),
                layer.kernel.numpy().tolist())

    mt.keras.utils.set_random_seed(1234)
    first = draw()
    mt.keras.utils.set_random_seed(1234)
    assert draw() == first
    mt.keras.utils.set_random_seed(99)
    assert draw() != first
    with pytest.raises(ValueError, match="Expected `seed` argument to be an integer"):
        mt.keras.utils.set_random_seed(1.5)


def test_to_categorical():
    np.testing.assert_array_equal(mt.keras.utils.to_categorical([[1], [0]]),
                                  [[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="labels must be in \\[0, 2\\)"):
        mt.keras.utils.to_categorical([2], num_classes=2)


def test_a_vector_fits_a_model_whose_input_ends_in_one_as_keras_3():
    # TensorFlow's regression tutorial: Normalization(input_shape=[1,], axis=None) then
    # Dense(1), trained and asked on a vector of horsepowers, shape (n,): Keras 3 gives a
    # model that knows its input one axis more (or fewer) of size 1 (``_adjust_input_rank``).
    layers = mt.keras.layers
    horsepower = np.array([130.0, 165.0, 150.0, 95.0, 88.0, 110.0], np.float32)
    normalizer = layers.Normalization(input_shape=[1, ], axis=None)
    normalizer.adapt(horsepower)
    model = mt.keras.Sequential([normalizer, layers.Dense(units=1)])
    w, b = (v.numpy() for v in model.layers[1].weights)
    expected = (horsepower - horsepower.mean()) / horsepower.std() * w[0, 0] + b[0]
    got = model.predict(horsepower[:4], verbose=0)
    assert got.shape == (4, 1)
    np.testing.assert_allclose(got[:, 0], expected[:4], rtol=1e-5)
    model.compile(optimizer=mt.keras.optimizers.Adam(0.1), loss="mean_absolute_error")
    history = model.fit(horsepower, horsepower / 10, epochs=2, verbose=0, validation_split=0.5)
    assert len(history.history["val_loss"]) == 2
    # A functional model the same; a trailing axis of 1 too many is dropped; a tape sees it.
    inputs = mt.keras.Input(shape=(1,))
    functional = mt.keras.Model(inputs, layers.Dense(2)(inputs))
    assert functional(horsepower).shape == (6, 2)
    assert functional(horsepower[:, None, None]).shape == (6, 2)
    x = mt.constant(horsepower)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = mt.reduce_sum(functional(x))
    kernel = functional.layers[-1].kernel.numpy()
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.full(6, kernel.sum()), rtol=1e-6)
    with pytest.raises(ValueError):          # anything else is still refused
        functional(np.ones((6, 3), np.float32))
