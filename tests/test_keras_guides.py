"""The Keras and TensorFlow guides that learners copy from, run with ``import minitape as tf``.

One test per section, with the guide's code as it is printed (the data made small and
synthetic in place of MNIST or a download); the numbers are checked where the guide prints
values that do not depend on randomness, else against a NumPy recomputation:

- Keras, "Making new layers and models via subclassing" (keras.io/guides/
  making_new_layers_and_models_via_subclassing; its Keras 2 version had ``add_metric`` and a
  functional VAE, which Keras 3 refuses, and so does minitape, with a message);
- Keras, "Customizing what happens in fit() with TensorFlow" (the Keras 3 text, with
  ``compute_loss`` and ``self.metrics``, and the Keras 2 text, with ``compiled_loss`` and
  ``compiled_metrics``), and "Writing a training loop from scratch in TensorFlow";
- TensorFlow, "Introduction to modules, layers, and models", "Basic training loops" and the
  "Custom training: walkthrough" (its dataset made up, in the shape of the guide's).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import minitape as tf
from minitape import keras
from minitape.keras import layers

RNG = np.random.default_rng(2024)


def _relu(a):
    return np.maximum(a, 0.0)


def _sparse_ce_from_logits(labels, logits):
    logits = logits - logits.max(axis=1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -log_p[np.arange(len(labels)), labels].mean()


# -- Making new layers and models via subclassing ----------------------------------------------

def test_subclassing_a_layer_with_add_weight():
    class Linear(keras.layers.Layer):
        def __init__(self, units=32, input_dim=32):
            super().__init__()
            self.w = self.add_weight(
                shape=(input_dim, units), initializer="random_normal", trainable=True
            )
            self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

    x = tf.ones((2, 2))
    linear_layer = Linear(4, 2)
    y = linear_layer(x)
    assert linear_layer.weights == [linear_layer.w, linear_layer.b]
    expected = np.ones((2, 2)) @ linear_layer.w.numpy() + linear_layer.b.numpy()
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6, atol=1e-7)
    assert 0 < linear_layer.w.numpy().std() < 0.15   # random_normal: stddev 0.05

    class Linear(keras.layers.Layer):   # (the Keras 2 text: tf.Variable and initializers)
        def __init__(self, units=32, input_dim=32):
            super().__init__()
            w_init = tf.random_normal_initializer()
            self.w = tf.Variable(
                initial_value=w_init(shape=(input_dim, units), dtype="float32"),
                trainable=True,
            )
            b_init = tf.zeros_initializer()
            self.b = tf.Variable(
                initial_value=b_init(shape=(units,), dtype="float32"), trainable=True
            )

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

    linear_layer = Linear(4, 2)
    y = linear_layer(x)
    assert linear_layer.weights == [linear_layer.w, linear_layer.b]
    np.testing.assert_allclose(y.numpy(), np.ones((2, 2)) @ linear_layer.w.numpy(), rtol=1e-6,
                               atol=1e-7)


def test_layers_can_have_non_trainable_weights(capsys):
    class ComputeSum(keras.layers.Layer):
        def __init__(self, input_dim):
            super().__init__()
            self.total = self.add_weight(
                initializer="zeros", shape=(input_dim,), trainable=False
            )

        def call(self, inputs):
            self.total.assign_add(tf.reduce_sum(inputs, axis=0))
            return self.total

    x = tf.ones((2, 2))
    my_sum = ComputeSum(2)
    y = my_sum(x)
    print(y.numpy())
    y = my_sum(x)
    print(y.numpy())
    print("weights:", len(my_sum.weights))
    print("non-trainable weights:", len(my_sum.non_trainable_weights))
    print("trainable_weights:", my_sum.trainable_weights)
    assert capsys.readouterr().out == ("[2. 2.]\n[4. 4.]\nweights: 1\nnon-trainable weights: 1\n"
                                       "trainable_weights: []\n")   # (the guide's output)


def test_deferring_weight_creation_to_build_and_layers_of_layers(capsys):
    class Linear(keras.layers.Layer):
        def __init__(self, units=32):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(
                shape=(input_shape[-1], self.units),
                initializer="random_normal",
                trainable=True,
            )
            self.b = self.add_weight(
                shape=(self.units,), initializer="random_normal", trainable=True
            )

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

    linear_layer = Linear(32)
    assert linear_layer.weights == []
    y = linear_layer(tf.ones((2, 2)))
    assert linear_layer.w.shape == (2, 32) and y.shape == (2, 32)

    class MLPBlock(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.linear_1 = Linear(32)
            self.linear_2 = Linear(32)
            self.linear_3 = Linear(1)

        def call(self, inputs):
            x = self.linear_1(inputs)
            x = tf.nn.relu(x)
            x = self.linear_2(x)
            x = tf.nn.relu(x)
            return self.linear_3(x)

    mlp = MLPBlock()
    y = mlp(tf.ones(shape=(3, 64)))  # The first call to the `mlp` will create the weights
    print("weights:", len(mlp.weights))
    print("trainable weights:", len(mlp.trainable_weights))
    assert capsys.readouterr().out == "weights: 6\ntrainable weights: 6\n"
    h = np.ones((3, 64))
    for lin in (mlp.linear_1, mlp.linear_2):
        h = _relu(h @ lin.w.numpy() + lin.b.numpy())
    np.testing.assert_allclose(y.numpy(), h @ mlp.linear_3.w.numpy() + mlp.linear_3.b.numpy(),
                               rtol=1e-5, atol=1e-6)


class ActivityRegularizationLayer(keras.layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * tf.reduce_mean(inputs))
        return inputs


def test_the_add_loss_method():
    class OuterLayer(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.activity_reg = ActivityRegularizationLayer(1e-2)

        def call(self, inputs):
            return self.activity_reg(inputs)

    layer = OuterLayer()
    assert len(layer.losses) == 0  # No losses yet since the layer has never been called

    _ = layer(tf.zeros(1, 1))   # (as printed: the dtype 1 is TensorFlow's enum for float32)
    assert len(layer.losses) == 1  # We created one loss value

    # `layer.losses` gets reset at the start of each __call__
    _ = layer(tf.ones((1, 1)) * 3.0)
    assert len(layer.losses) == 1  # This is the loss created during the call above
    assert float(layer.losses[0]) == pytest.approx(0.03)

    class OuterLayerWithKernelRegularizer(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(
                32, kernel_regularizer=keras.regularizers.l2(1e-3)
            )

        def call(self, inputs):
            return self.dense(inputs)

    layer = OuterLayerWithKernelRegularizer()
    _ = layer(tf.zeros((1, 1)))
    # This is `1e-3 * sum(layer.dense.kernel ** 2)`,
    # created by the `kernel_regularizer` above.
    (penalty,) = layer.losses
    assert float(penalty) == pytest.approx(1e-3 * np.sum(layer.dense.kernel.numpy() ** 2),
                                           rel=1e-5)


def test_add_loss_losses_are_added_by_fit_with_or_without_a_compiled_loss():
    inputs = keras.Input(shape=(3,))
    outputs = ActivityRegularizationLayer()(inputs)
    model = keras.Model(inputs, outputs)
    x, y = np.random.random((2, 3)), np.random.random((2, 3))

    # If there is a loss passed in `compile`, the regularization
    # losses get added to it
    model.compile(optimizer="adam", loss="mse")
    with pytest.warns(UserWarning, match="does not have any trainable weights"):
        history = model.fit(x, y, verbose=0)
    expected = np.mean((y - x) ** 2) + 1e-2 * np.mean(x)   # (the layer passes x through)
    assert history.history["loss"][0] == pytest.approx(expected, rel=1e-5)

    # It's also possible not to pass any loss in `compile`,
    # since the model already has a loss to minimize, via the `add_loss`
    # call during the forward pass!
    model.compile(optimizer="adam")
    x = np.random.random((2, 3))
    with pytest.warns(UserWarning, match="does not have any trainable weights"):
        history = model.fit(x, np.random.random((2, 3)), verbose=0)
    assert history.history["loss"][0] == pytest.approx(1e-2 * np.mean(x), rel=1e-5)


def test_add_metric_gives_keras_3s_error_and_the_endpoint_layer_pattern_works():
    class LogisticEndpoint(keras.layers.Layer):   # (the Keras 2 text)
        def __init__(self, name=None):
            super(LogisticEndpoint, self).__init__(name=name)
            self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
            self.accuracy_fn = keras.metrics.BinaryAccuracy()

        def call(self, targets, logits, sample_weights=None):
            loss = self.loss_fn(targets, logits, sample_weights)
            self.add_loss(loss)
            acc = self.accuracy_fn(targets, logits, sample_weights)
            self.add_metric(acc, name="accuracy")
            return tf.nn.softmax(logits)

    layer = LogisticEndpoint()
    with pytest.raises(NotImplementedError, match=r"add_metric\(\)` method is deprecated"
                                                  r"[\s\S]*update_state"):
        layer(tf.ones((2, 2)), tf.ones((2, 2)))

    class LogisticEndpoint(keras.layers.Layer):   # (Keras 3's way: a metric in an attribute)
        def __init__(self, name=None):
            super().__init__(name=name)
            self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
            self.accuracy_metric = keras.metrics.BinaryAccuracy(name="accuracy")

        def call(self, logits, targets=None, sample_weight=None):
            if targets is not None:
                loss = self.loss_fn(targets, logits, sample_weight)
                self.add_loss(loss)
                self.accuracy_metric.update_state(targets, logits, sample_weight)
            return tf.nn.softmax(logits)

    inputs = keras.Input((6,), name="inputs")
    logits = keras.layers.Dense(1)(inputs)
    targets = keras.Input((1,), name="targets")
    endpoint = LogisticEndpoint()
    preds = endpoint(logits, targets)
    model = keras.Model([inputs, targets], preds)
    data = {"inputs": RNG.random((40, 6)), "targets": RNG.integers(0, 2, (40, 1)) * 1.0}
    model.compile(keras.optimizers.Adam(1e-3))
    history = model.fit(data, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "accuracy"}
    assert endpoint.metrics == [endpoint.accuracy_metric]
    assert endpoint.accuracy_metric in model.metrics

    # evaluate resets the metric, then counts the samples with fixed weights:
    result = model.evaluate(data, return_dict=True, verbose=0)
    (dense,) = [layer for layer in model.layers if isinstance(layer, layers.Dense)]
    z = data["inputs"] @ dense.kernel.numpy() + dense.bias.numpy()
    accuracy = np.mean((z > 0.5) == (data["targets"] > 0.5))   # (threshold on the logits)
    bce = np.mean(np.maximum(z, 0) - z * data["targets"] + np.log1p(np.exp(-np.abs(z))))
    assert result["accuracy"] == pytest.approx(accuracy)
    assert result["loss"] == pytest.approx(bce, rel=1e-5)


def test_an_op_on_a_keras_tensor_says_to_compute_inside_a_layer():
    # The Keras 2 guide's functional VAE computed its KL loss with TensorFlow ops on the
    # symbolic outputs; Keras 3 refuses that, and minitape says what to do instead.
    original_inputs = tf.keras.Input(shape=(8,), name="encoder_input")
    z_mean = layers.Dense(2, name="z_mean")(original_inputs)
    with pytest.raises(TypeError, match="KerasTensor .*z_mean.*inside a layer's call"):
        tf.square(z_mean)


def test_serialization_with_get_config(capsys):
    class Linear(keras.layers.Layer):
        def __init__(self, units=32):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(
                shape=(input_shape[-1], self.units),
                initializer="random_normal",
                trainable=True,
            )
            self.b = self.add_weight(
                shape=(self.units,), initializer="random_normal", trainable=True
            )

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

        def get_config(self):
            return {"units": self.units}

    # Now you can recreate the layer from its config:
    layer = Linear(64)
    config = layer.get_config()
    print(config)
    new_layer = Linear.from_config(config)
    assert capsys.readouterr().out == "{'units': 64}\n"
    assert new_layer.units == 64

    class Linear(keras.layers.Layer):
        def __init__(self, units=32, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def call(self, inputs):
            return inputs

        def get_config(self):
            config = super().get_config()
            config.update({"units": self.units})
            return config

    layer = Linear(64, name="my_linear")
    config = layer.get_config()
    assert config["units"] == 64 and config["name"] == "my_linear"
    assert config["trainable"] is True and config["dtype"] == "float32"
    new_layer = Linear.from_config(config)
    assert new_layer.units == 64 and new_layer.name == "my_linear"


def test_the_privileged_training_argument():
    class CustomDropout(keras.layers.Layer):
        def __init__(self, rate, **kwargs):
            super().__init__(**kwargs)
            self.rate = rate

        def call(self, inputs, training=None):
            if training:
                return tf.nn.dropout(inputs, rate=self.rate)
            return inputs

    layer = CustomDropout(0.5)
    x = tf.ones((4, 50))
    np.testing.assert_array_equal(layer(x).numpy(), np.ones((4, 50)))
    dropped = layer(x, training=True).numpy()
    assert set(np.unique(dropped)) <= {0.0, 2.0} and 0 < np.mean(dropped == 0) < 1
    model = keras.Sequential([CustomDropout(0.5)])
    np.testing.assert_array_equal(model.predict(np.ones((3, 5)), verbose=0), np.ones((3, 5)))

    # "you enable the built-in training and evaluation loops (e.g. fit()) to correctly use
    # the layer": Keras's call context gives the mode of the outer call to the layers that
    # the model's call uses without passing it on.
    seen = []

    class Recording(CustomDropout):
        def call(self, inputs, training=None):
            seen.append(training)
            return super().call(inputs, training=training)

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)
            self.dropout = Recording(0.5)
            self.keras_dropout = layers.Dropout(0.5)

        def call(self, x):
            return self.dense(self.keras_dropout(self.dropout(x)))

    model = Model()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 200)), np.ones((4, 1)), batch_size=4, verbose=0)
    model.evaluate(np.ones((4, 200)), np.ones((4, 1)), verbose=0)
    model(np.ones((4, 200)))
    assert seen == [True, False, None]
    class Both(keras.layers.Layer):
        def call(self, x):
            return model.keras_dropout(model.dropout(x))

    with tf.GradientTape() as tape:
        x = tf.ones((2, 4000))
        tape.watch(x)
        y = Both()(x, training=True)   # (both layers drop: 1/4 kept, scaled by 4)
    kept = tape.gradient(y, x).numpy()
    assert set(np.unique(kept)) == {0.0, 4.0} and abs(np.mean(kept == 0) - 0.75) < 0.03
    np.testing.assert_array_equal(model.keras_dropout(x).numpy(), x.numpy())


class Sampling(layers.Layer):
    """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = tf.shape(z_mean)[0]
        dim = tf.shape(z_mean)[1]
        epsilon = keras.backend.random_normal(shape=(batch, dim))
        return z_mean + tf.exp(0.5 * z_log_var) * epsilon


class Encoder(layers.Layer):
    """Maps MNIST digits to a triplet (z_mean, z_log_var, z)."""

    def __init__(self, latent_dim=32, intermediate_dim=64, name="encoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()

    def call(self, inputs):
        x = self.dense_proj(inputs)
        z_mean = self.dense_mean(x)
        z_log_var = self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        return z_mean, z_log_var, z


class Decoder(layers.Layer):
    """Converts z, the encoded digit vector, back into a readable digit."""

    def __init__(self, original_dim, intermediate_dim=64, name="decoder", **kwargs):
        super().__init__(name=name, **kwargs)
        self.dense_proj = layers.Dense(intermediate_dim, activation="relu")
        self.dense_output = layers.Dense(original_dim, activation="sigmoid")

    def call(self, inputs):
        x = self.dense_proj(inputs)
        return self.dense_output(x)


class VariationalAutoEncoder(keras.Model):
    """Combines the encoder and decoder into an end-to-end model for training."""

    def __init__(
        self,
        original_dim,
        intermediate_dim=64,
        latent_dim=32,
        name="autoencoder",
        **kwargs
    ):
        super().__init__(name=name, **kwargs)
        self.original_dim = original_dim
        self.encoder = Encoder(latent_dim=latent_dim, intermediate_dim=intermediate_dim)
        self.decoder = Decoder(original_dim, intermediate_dim=intermediate_dim)

    def call(self, inputs):
        z_mean, z_log_var, z = self.encoder(inputs)
        reconstructed = self.decoder(z)
        # Add KL divergence regularization loss.
        kl_loss = -0.5 * tf.reduce_mean(
            z_log_var - tf.square(z_mean) - tf.exp(z_log_var) + 1
        )
        self.add_loss(kl_loss)
        return reconstructed


def test_the_end_to_end_vae_with_a_training_loop_and_with_fit(capsys):
    tf.random.set_seed(0)
    x_train = RNG.integers(0, 256, (128, 8, 8)).astype("uint8")   # (MNIST, made small)
    x_train = x_train.reshape(128, 64).astype("float32") / 255
    original_dim = 64
    vae = VariationalAutoEncoder(original_dim, 16, 4)

    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    mse_loss_fn = keras.losses.MeanSquaredError()
    loss_metric = keras.metrics.Mean()

    train_dataset = tf.data.Dataset.from_tensor_slices(x_train)
    train_dataset = train_dataset.shuffle(buffer_size=1024).batch(64)

    epochs = 2
    seen = []
    for epoch in range(epochs):
        print("Start of epoch %d" % (epoch,))
        for step, x_batch_train in enumerate(train_dataset):
            with tf.GradientTape() as tape:
                reconstructed = vae(x_batch_train)
                # Compute reconstruction loss
                loss = mse_loss_fn(x_batch_train, reconstructed)
                loss += sum(vae.losses)  # Add KLD regularization loss

            grads = tape.gradient(loss, vae.trainable_weights)
            optimizer.apply_gradients(zip(grads, vae.trainable_weights))

            loss_metric(loss)
            seen.append(float(loss))

            if step % 100 == 0:
                print("step %d: mean loss = %.4f" % (step, loss_metric.result()))
    assert capsys.readouterr().out.startswith("Start of epoch 0\nstep 0: mean loss = ")
    assert float(loss_metric.result()) == pytest.approx(np.mean(seen), rel=1e-6)
    assert len(vae.trainable_weights) == 10 and optimizer.iterations.numpy() == 4

    # vae.losses is the KL term of the latest call, from the encoder's outputs:
    x = x_train[:5]
    vae(x)
    enc = vae.encoder
    h = _relu(x @ enc.dense_proj.kernel.numpy() + enc.dense_proj.bias.numpy())
    mean = h @ enc.dense_mean.kernel.numpy() + enc.dense_mean.bias.numpy()
    log_var = h @ enc.dense_log_var.kernel.numpy() + enc.dense_log_var.bias.numpy()
    kl = -0.5 * np.mean(log_var - mean**2 - np.exp(log_var) + 1)
    (kl_loss,) = vae.losses
    assert float(kl_loss) == pytest.approx(kl, rel=1e-5)

    vae = VariationalAutoEncoder(64, 16, 4)
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    vae.compile(optimizer, loss=keras.losses.MeanSquaredError())
    history = vae.fit(x_train, x_train, epochs=2, batch_size=64, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()


def test_keras_random_and_backend_random_normal():
    g = keras.random.SeedGenerator(1337)
    a, b = keras.random.normal((3, 2), seed=g), keras.random.normal((3, 2), seed=g)
    assert a.shape == (3, 2) and a.dtype == tf.float32 and not np.allclose(a, b)
    again = keras.random.SeedGenerator(1337)
    np.testing.assert_array_equal(keras.random.normal((3, 2), seed=again), a)
    np.testing.assert_array_equal(keras.random.uniform((4,), seed=7),
                                  keras.random.uniform((4,), seed=7))   # an int: the same
    u = keras.random.uniform((10000,), minval=2.0, maxval=3.0, seed=1).numpy()
    assert 2.0 <= u.min() and u.max() < 3.0 and abs(u.mean() - 2.5) < 0.02
    n = keras.backend.random_normal(shape=(tf.constant(20000), 1), mean=1.0, stddev=2.0)
    assert n.shape == (20000, 1)
    assert abs(float(np.mean(n)) - 1.0) < 0.1 and abs(float(np.std(n)) - 2.0) < 0.1
    with pytest.raises(TypeError, match="seed must be None, an int or a keras.random"):
        keras.random.normal((2,), seed="abc")


# -- Customizing what happens in fit() ---------------------------------------------------------

def _one_batch_data(n=64):
    return RNG.random((n, 32)), RNG.random((n, 1))


def _dense_of(model):
    (dense,) = [layer for layer in model.layers if isinstance(layer, layers.Dense)]
    return dense


def _first_epoch_numbers(model, x, y, sw=None):
    """The loss (mse, weighted as Keras's "sum_over_batch_size") and the mae (a weighted
    mean) of the model's predictions now, in NumPy."""
    dense = _dense_of(model)
    pred = x @ dense.kernel.numpy() + dense.bias.numpy()
    se, ae = (y - pred)[:, 0] ** 2, np.abs(y - pred)[:, 0]
    if sw is None:
        return se.mean(), ae.mean()
    w = sw[:, 0]
    return (w * se).mean(), (w * ae).sum() / w.sum()


def test_customizing_fit_a_first_simple_example_keras_3():
    class CustomModel(keras.Model):
        def train_step(self, data):
            # Unpack the data. Its structure depends on your model and
            # on what you pass to `fit()`.
            x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                # Compute the loss value
                # (the loss function is configured in `compile()`)
                loss = self.compute_loss(y=y, y_pred=y_pred)

            # Compute gradients
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)

            # Update weights
            self.optimizer.apply(gradients, trainable_vars)

            # Update metrics (includes the metric that tracks the loss)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)

            # Return a dict mapping metric names to current value
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    assert [m.name for m in model.metrics] == ["loss", "mae"]   # (before any batch)

    x, y = _one_batch_data()
    loss, mae = _first_epoch_numbers(model, x, y)
    history = model.fit(x, y, epochs=3, batch_size=64, verbose=0)   # (one batch an epoch)
    assert history.history["loss"][0] == pytest.approx(loss, rel=1e-5)
    assert history.history["mae"][0] == pytest.approx(mae, rel=1e-5)
    assert model.optimizer.iterations.numpy() == 3
    last_loss, last_mae = _first_epoch_numbers(model, x, y)
    assert last_loss < loss


def test_customizing_fit_going_lower_level():
    class CustomModel(keras.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = keras.metrics.Mean(name="loss")
            self.mae_metric = keras.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = keras.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                # Compute our own loss
                loss = self.loss_fn(y, y_pred)

            # Compute gradients
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)

            # Update weights
            self.optimizer.apply(gradients, trainable_vars)

            # Compute our own metrics
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {
                "loss": self.loss_tracker.result(),
                "mae": self.mae_metric.result(),
            }

        @property
        def metrics(self):
            # We list our `Metric` objects here so that `reset_states()` can be
            # called automatically at the start of each epoch
            # or at the start of `evaluate()`.
            return [self.loss_tracker, self.mae_metric]

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam")   # We don't pass a loss or metrics here.
    x, y = _one_batch_data()
    model.fit(x, y, epochs=2, batch_size=64, verbose=0)
    loss, mae = _first_epoch_numbers(model, x, y)
    history = model.fit(x, y, epochs=1, batch_size=64, verbose=0)
    # (reset before the epoch: the values of this epoch's one batch alone)
    assert history.history["loss"] == [pytest.approx(loss, rel=1e-5)]
    assert history.history["mae"] == [pytest.approx(mae, rel=1e-5)]


def test_customizing_fit_supporting_sample_weight():
    class CustomModel(keras.Model):
        def train_step(self, data):
            if len(data) == 3:
                x, y, sample_weight = data
            else:
                sample_weight = None
                x, y = data

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                loss = self.compute_loss(
                    y=y,
                    y_pred=y_pred,
                    sample_weight=sample_weight,
                )

            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)
            self.optimizer.apply(gradients, trainable_vars)

            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    x, y = _one_batch_data()
    sw = RNG.random((64, 1))
    loss, mae = _first_epoch_numbers(model, x, y, sw)
    history = model.fit(x, y, sample_weight=sw, epochs=3, batch_size=64, verbose=0)
    assert history.history["loss"][0] == pytest.approx(loss, rel=1e-5)
    assert history.history["mae"][0] == pytest.approx(mae, rel=1e-5)


def test_customizing_fit_providing_your_own_evaluation_step():
    class CustomModel(keras.Model):
        def test_step(self, data):
            # Unpack the data
            x, y = data
            # Compute predictions
            y_pred = self(x, training=False)
            # Updates the metrics tracking the loss
            loss = self.compute_loss(y=y, y_pred=y_pred)
            # Update the metrics.
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            # Return a dict mapping metric names to current value.
            # Note that it will include the loss (tracked in self.metrics).
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(loss="mse", metrics=["mae"])
    x, y = _one_batch_data(100)
    loss, mae = _first_epoch_numbers(model, x, y)
    assert model.evaluate(x, y, batch_size=100, verbose=0) == [pytest.approx(loss, rel=1e-5),
                                                                pytest.approx(mae, rel=1e-5)]


def test_customizing_fit_keras_2s_compiled_loss_and_compiled_metrics():
    class CustomModel(keras.Model):
        def train_step(self, data):
            if len(data) == 3:
                x, y, sample_weight = data
            else:
                x, y = data
                sample_weight = None

            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)  # Forward pass
                loss = self.compiled_loss(
                    y,
                    y_pred,
                    sample_weight=sample_weight,
                    regularization_losses=self.losses,
                )
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)
            self.optimizer.apply_gradients(zip(gradients, trainable_vars))
            self.compiled_metrics.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            self.compiled_loss(y, y_pred, regularization_losses=self.losses)
            self.compiled_metrics.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1, kernel_regularizer=keras.regularizers.l2(1e-2))(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    x, y = _one_batch_data()
    sw = RNG.random((64, 1))
    loss, mae = _first_epoch_numbers(model, x, y, sw)
    loss += 1e-2 * np.sum(_dense_of(model).kernel.numpy() ** 2)
    with pytest.warns(UserWarning, match=r"`model.compiled_(loss|metrics)\(\)` is deprecated"):
        history = model.fit(x, y, sample_weight=sw, epochs=2, batch_size=64, verbose=0)
    assert history.history["loss"][0] == pytest.approx(loss, rel=1e-5)
    assert history.history["mae"][0] == pytest.approx(mae, rel=1e-5)

    loss, mae = _first_epoch_numbers(model, x, y)
    loss += 1e-2 * np.sum(_dense_of(model).kernel.numpy() ** 2)
    with pytest.warns(UserWarning, match=r"`model.compiled_(loss|metrics)\(\)` is deprecated"):
        result = model.evaluate(x, y, return_dict=True, verbose=0)
    assert result == {"loss": pytest.approx(loss, rel=1e-5), "mae": pytest.approx(mae, rel=1e-5)}


def test_compute_loss_refuses_the_older_two_argument_call():
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(loss="mse")
    y = tf.ones((2, 1))
    with pytest.raises(TypeError, match=r"compute_loss\(y=y, y_pred=y_pred\)"):
        model.compute_loss(y, model(y))
    with pytest.raises(ValueError, match="No loss to compute"):
        keras.Sequential([keras.layers.Dense(1)]).compute_loss(y=y, y_pred=y)


def test_compiled_accuracy_takes_its_kind_from_the_first_batch_in_place():
    model = keras.Sequential([keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=["accuracy"])
    (pending,) = model.compiled_metrics
    assert pending.name == "accuracy" and float(pending.result()) == 0.0
    x, labels = RNG.random((10, 4)), RNG.integers(0, 3, (10,))
    for metric in model.metrics:    # (as a custom train_step walks them)
        if metric.name != "loss":
            metric.update_state(labels, model(x))
    (metric,) = model.compiled_metrics
    assert type(metric).__name__ == "SparseCategoricalAccuracy"
    expected = np.mean(np.argmax(model(x).numpy(), axis=1) == labels)
    assert float(metric.result()) == pytest.approx(expected)


def _small_gan_networks(latent_dim):
    # The guide's networks for 28x28 digits, made for 8x8 images (fewer filters).
    discriminator = keras.Sequential(
        [
            keras.Input(shape=(8, 8, 1)),
            layers.Conv2D(8, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(16, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.GlobalMaxPooling2D(),
            layers.Dense(1),
        ],
        name="discriminator",
    )
    generator = keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            # We want to generate 16 coefficients to reshape into a 2x2x16 map
            layers.Dense(2 * 2 * 16),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((2, 2, 16)),
            layers.Conv2DTranspose(16, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(16, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(1, (7, 7), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )
    return discriminator, generator


def test_customizing_fit_the_end_to_end_gan():
    latent_dim = 4
    discriminator, generator = _small_gan_networks(latent_dim)

    class GAN(keras.Model):
        def __init__(self, discriminator, generator, latent_dim):
            super().__init__()
            self.discriminator = discriminator
            self.generator = generator
            self.latent_dim = latent_dim
            self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
            self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
            self.seed_generator = keras.random.SeedGenerator(1337)

        @property
        def metrics(self):
            return [self.d_loss_tracker, self.g_loss_tracker]

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            super().compile()
            self.d_optimizer = d_optimizer
            self.g_optimizer = g_optimizer
            self.loss_fn = loss_fn

        def train_step(self, real_images):
            if isinstance(real_images, tuple):
                real_images = real_images[0]
            # Sample random points in the latent space
            batch_size = tf.shape(real_images)[0]
            random_latent_vectors = keras.random.normal(
                shape=(batch_size, self.latent_dim), seed=self.seed_generator
            )

            # Decode them to fake images
            generated_images = self.generator(random_latent_vectors)

            # Combine them with real images
            combined_images = tf.concat([generated_images, real_images], axis=0)

            # Assemble labels discriminating real from fake images
            labels = tf.concat(
                [tf.ones((batch_size, 1)), tf.zeros((batch_size, 1))], axis=0
            )
            # Add random noise to the labels - important trick!
            labels += 0.05 * keras.random.uniform(
                tf.shape(labels), seed=self.seed_generator
            )

            # Train the discriminator
            with tf.GradientTape() as tape:
                predictions = self.discriminator(combined_images)
                d_loss = self.loss_fn(labels, predictions)
            grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
            self.d_optimizer.apply(grads, self.discriminator.trainable_weights)

            # Sample random points in the latent space
            random_latent_vectors = keras.random.normal(
                shape=(batch_size, self.latent_dim), seed=self.seed_generator
            )

            # Assemble labels that say "all real images"
            misleading_labels = tf.zeros((batch_size, 1))

            # Train the generator (note that we should *not* update the weights
            # of the discriminator)!
            with tf.GradientTape() as tape:
                predictions = self.discriminator(self.generator(random_latent_vectors))
                g_loss = self.loss_fn(misleading_labels, predictions)
            grads = tape.gradient(g_loss, self.generator.trainable_weights)
            self.g_optimizer.apply(grads, self.generator.trainable_weights)

            # Update metrics and return their value.
            self.d_loss_tracker.update_state(d_loss)
            self.g_loss_tracker.update_state(g_loss)
            return {
                "d_loss": self.d_loss_tracker.result(),
                "g_loss": self.g_loss_tracker.result(),
            }

    batch_size = 16
    all_digits = RNG.integers(0, 256, (48, 8, 8)).astype("float32") / 255.0
    all_digits = np.reshape(all_digits, (-1, 8, 8, 1))
    dataset = tf.data.Dataset.from_tensor_slices(all_digits)
    dataset = dataset.shuffle(buffer_size=1024).batch(batch_size)

    gan = GAN(discriminator=discriminator, generator=generator, latent_dim=latent_dim)
    gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
        loss_fn=keras.losses.BinaryCrossentropy(from_logits=True),
    )
    d_before = [w.numpy() for w in discriminator.weights]
    history = gan.fit(dataset.take(2), epochs=1, verbose=0)
    assert set(history.history) == {"d_loss", "g_loss"}
    assert gan.d_optimizer.iterations.numpy() == 2 and gan.g_optimizer.iterations.numpy() == 2
    assert all(not np.array_equal(a, w.numpy()) for a, w in zip(d_before, discriminator.weights))
    assert generator(tf.zeros((3, latent_dim))).shape == (3, 8, 8, 1)
    # (d_loss near log 2 for a discriminator that cannot tell yet)
    assert 0.3 < history.history["d_loss"][0] < 1.2



# -- Writing a training loop from scratch --------------------------------------------------------

def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x1 = keras.layers.Dense(64, activation="relu")(inputs)
    x2 = keras.layers.Dense(64, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def _mnist_like(n):
    # (keras.datasets.mnist.load_data() downloads: uint8 pixels and labels of that shape)
    return (RNG.integers(0, 256, (n, 28, 28)).astype("uint8"),
            RNG.integers(0, 10, (n,)).astype("uint8"))


def test_training_loop_from_scratch_a_first_end_to_end_example(capsys):
    model = get_model()
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    batch_size = 32
    x_train, y_train = _mnist_like(96)
    x_train = np.reshape(x_train, (-1, 784))
    x_val, y_val = x_train[-32:], y_train[-32:]
    x_train, y_train = x_train[:-32], y_train[:-32]
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    train_dataset = train_dataset.shuffle(buffer_size=1024).batch(batch_size)
    val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val))
    val_dataset = val_dataset.batch(batch_size)

    epochs = 1
    for epoch in range(epochs):
        print(f"\nStart of epoch {epoch}")
        for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
            weights = [w.numpy() for w in model.trainable_weights]
            with tf.GradientTape() as tape:
                logits = model(x_batch_train, training=True)  # Logits for this minibatch
                loss_value = loss_fn(y_batch_train, logits)
            grads = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply(grads, model.trainable_weights)
            if step % 100 == 0:
                print(
                    f"Training loss (for 1 batch) at step {step}: {float(loss_value):.4f}"
                )
                print(f"Seen so far: {(step + 1) * batch_size} samples")
            # (NumPy: the loss of this batch with the weights before the step)
            h = np.asarray(x_batch_train, np.float64)
            for k in range(0, 6, 2):
                h = h @ weights[k] + weights[k + 1]
                h = _relu(h) if k < 4 else h
            assert float(loss_value) == pytest.approx(
                _sparse_ce_from_logits(np.asarray(y_batch_train), h), rel=1e-4)
    out = capsys.readouterr().out
    assert out.startswith("\nStart of epoch 0\nTraining loss (for 1 batch) at step 0: ")
    assert out.endswith("Seen so far: 32 samples\n") and optimizer.iterations.numpy() == 2

    # -- Low-level handling of metrics
    train_acc_metric = keras.metrics.SparseCategoricalAccuracy()
    val_acc_metric = keras.metrics.SparseCategoricalAccuracy()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss_value = loss_fn(y, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        train_acc_metric.update_state(y, logits)
        return loss_value

    @tf.function
    def test_step(x, y):
        val_logits = model(x, training=False)
        val_acc_metric.update_state(y, val_logits)

    hits = []
    for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
        logits = model(x_batch_train)   # (before the step: the metric sees these logits)
        hits.extend(np.argmax(logits.numpy(), axis=1) == np.asarray(y_batch_train))
        loss_value = train_step(x_batch_train, y_batch_train)
    train_acc = train_acc_metric.result()
    assert float(train_acc) == pytest.approx(np.mean(hits))
    train_acc_metric.reset_state()
    assert float(train_acc_metric.result()) == 0.0

    for x_batch_val, y_batch_val in val_dataset:
        test_step(x_batch_val, y_batch_val)
    val_acc = val_acc_metric.result()
    expected = np.mean(np.argmax(model.predict(x_val, verbose=0), axis=1) == y_val)
    assert float(val_acc) == pytest.approx(expected)


def test_training_loop_from_scratch_losses_tracked_by_the_model():
    class ActivityRegularizationLayer(keras.layers.Layer):
        def call(self, inputs):
            self.add_loss(1e-2 * tf.reduce_sum(inputs))
            return inputs

    inputs = keras.Input(shape=(784,), name="digits")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    # Insert activity regularization as a layer
    x = ActivityRegularizationLayer()(x)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(10, name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss_value = loss_fn(y, logits)
            # Add any extra losses created during the forward pass.
            loss_value += sum(model.losses)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        return loss_value

    x_batch, y_batch = _mnist_like(8)
    x_batch = x_batch.reshape(8, 784).astype("float32") / 255
    first = model.layers[1]
    h = _relu(x_batch @ first.kernel.numpy() + first.bias.numpy())
    logits = model(x_batch)
    expected = _sparse_ce_from_logits(y_batch, logits.numpy()) + 1e-2 * h.sum()
    assert float(train_step(x_batch, y_batch)) == pytest.approx(expected, rel=1e-4)


def test_training_loop_from_scratch_a_gan(capsys):
    latent_dim = 4
    discriminator, generator = _small_gan_networks(latent_dim)
    discriminator.summary()
    assert "Total params: 1,265" in capsys.readouterr().out   # (72+8 + 1152+16 + 16+1)

    d_optimizer = keras.optimizers.Adam(learning_rate=0.0003)
    g_optimizer = keras.optimizers.Adam(learning_rate=0.0004)
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    batch_size = 16

    @tf.function
    def train_step(real_images):
        # Sample random points in the latent space
        random_latent_vectors = tf.random.normal(shape=(batch_size, latent_dim))
        # Decode them to fake images
        generated_images = generator(random_latent_vectors)
        # Combine them with real images
        combined_images = tf.concat([generated_images, real_images], axis=0)

        # Assemble labels discriminating real from fake images
        labels = tf.concat(
            [tf.ones((batch_size, 1)), tf.zeros((real_images.shape[0], 1))], axis=0
        )
        # Add random noise to the labels - important trick!
        labels += 0.05 * tf.random.uniform(labels.shape)

        # Train the discriminator
        with tf.GradientTape() as tape:
            predictions = discriminator(combined_images)
            d_loss = loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, discriminator.trainable_weights)
        d_optimizer.apply(grads, discriminator.trainable_weights)

        # Sample random points in the latent space
        random_latent_vectors = tf.random.normal(shape=(batch_size, latent_dim))
        # Assemble labels that say "all real images"
        misleading_labels = tf.zeros((batch_size, 1))

        # Train the generator (note that we should *not* update the weights
        # of the discriminator)!
        with tf.GradientTape() as tape:
            predictions = discriminator(generator(random_latent_vectors))
            g_loss = loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, generator.trainable_weights)
        g_optimizer.apply(grads, generator.trainable_weights)
        return d_loss, g_loss, generated_images

    all_digits = RNG.integers(0, 256, (32, 8, 8)).astype("float32") / 255.0
    all_digits = np.reshape(all_digits, (-1, 8, 8, 1))
    dataset = tf.data.Dataset.from_tensor_slices(all_digits)
    dataset = dataset.shuffle(buffer_size=1024).batch(batch_size)

    for step, real_images in enumerate(dataset):
        d_loss, g_loss, generated_images = train_step(real_images)
        if step % 100 == 0:
            print(f"discriminator loss at step {step}: {d_loss:.2f}")
            print(f"adversarial loss at step {step}: {g_loss:.2f}")
    out = capsys.readouterr().out
    assert out.startswith("discriminator loss at step 0: ") and "adversarial loss" in out
    assert generated_images.shape == (16, 8, 8, 1)
    assert d_optimizer.iterations.numpy() == 2 and g_optimizer.iterations.numpy() == 2


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    # <conv2d(a, w), b> = <a, conv2d_transpose(b, w)>, and Keras's output sizes.
    a = RNG.standard_normal((2, 7, 6, 3))
    w = RNG.standard_normal((4, 3, 3, 5))
    for strides, padding in (((2, 2), "SAME"), ((2, 3), "VALID"), ((1, 1), "VALID")):
        conv = tf.nn.conv2d(tf.constant(a), tf.constant(w), strides, padding).numpy()
        b = RNG.standard_normal(conv.shape)
        back = tf.nn.conv2d_transpose(tf.constant(b), tf.constant(w), a.shape, strides,
                                      padding).numpy()
        assert back.shape == a.shape
        assert np.sum(conv * b) == pytest.approx(np.sum(a * back), rel=1e-10)
    for padding, kernel, strides, expected in (("same", (4, 4), (2, 2), (14, 14)),
                                               ("valid", (4, 4), (2, 2), (16, 16)),
                                               ("valid", (1, 3), (3, 2), (21, 15))):
        layer = layers.Conv2DTranspose(2, kernel, strides=strides, padding=padding)
        y = layer(tf.zeros((1, 7, 7, 3)))
        assert y.shape == (1,) + expected + (2,) and layer.kernel.shape == kernel + (2, 3)
    x = tf.constant(RNG.standard_normal((1, 3, 3, 2)))
    layer = layers.Conv2DTranspose(2, 2, strides=2, dtype="float64")
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(layer(x) ** 2)
    grad = tape.gradient(y, layer.kernel)
    k, eps = layer.kernel.numpy(), 1e-6   # central differences on one entry
    for sign in (1, -1):
        layer.kernel.assign(k + sign * eps * (np.arange(k.size).reshape(k.shape) == 5))
        if sign == 1:
            up = float(tf.reduce_sum(layer(x) ** 2))
        else:
            down = float(tf.reduce_sum(layer(x) ** 2))
    assert grad.numpy().flat[5] == pytest.approx((up - down) / (2 * eps), rel=1e-6)


# -- TensorFlow: Introduction to modules, layers, and models --------------------------------------

class SimpleModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.a_variable = tf.Variable(5.0, name="train_me")
        self.non_trainable_variable = tf.Variable(5.0, trainable=False, name="do_not_train_me")

    def __call__(self, x):
        return self.a_variable * x + self.non_trainable_variable


class Dense(tf.Module):
    def __init__(self, in_features, out_features, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(
            tf.random.normal([in_features, out_features]), name='w')
        self.b = tf.Variable(tf.zeros([out_features]), name='b')

    def __call__(self, x):
        y = tf.matmul(x, self.w) + self.b
        return tf.nn.relu(y)


class SequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)

        self.dense_1 = Dense(in_features=3, out_features=3)
        self.dense_2 = Dense(in_features=3, out_features=2)

    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


class FlexibleDenseModule(tf.Module):
    # Note: No need for `in_features`
    def __init__(self, out_features, name=None):
        super().__init__(name=name)
        self.is_built = False
        self.out_features = out_features

    def __call__(self, x):
        # Create variables on first call.
        if not self.is_built:
            self.w = tf.Variable(
                tf.random.normal([x.shape[-1], self.out_features]), name='w')
            self.b = tf.Variable(tf.zeros([self.out_features]), name='b')
            self.is_built = True

        y = tf.matmul(x, self.w) + self.b
        return tf.nn.relu(y)


class MySequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)

        self.dense_1 = FlexibleDenseModule(out_features=3)
        self.dense_2 = FlexibleDenseModule(out_features=2)

    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


class MySequentialModuleWithFunction(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)

        self.dense_1 = Dense(in_features=3, out_features=3)
        self.dense_2 = Dense(in_features=3, out_features=2)

    @tf.function
    def __call__(self, x):
        x = self.dense_1(x)
        return self.dense_2(x)


def _two_relu_layers(x, model):
    h = _relu(np.asarray(x) @ model.dense_1.w.numpy() + model.dense_1.b.numpy())
    return _relu(h @ model.dense_2.w.numpy() + model.dense_2.b.numpy())


def test_modules_defining_models_and_layers(capsys):
    simple_module = SimpleModule(name="simple")
    assert float(simple_module(tf.constant(5.0))) == 30.0   # (the guide's 30.0)
    assert [v.name for v in simple_module.trainable_variables] == ["train_me"]
    assert [v.name for v in simple_module.variables] == ["train_me", "do_not_train_me"]

    my_model = SequentialModule(name="the_model")
    x = tf.constant([[2.0, 2.0, 2.0]])
    np.testing.assert_allclose(my_model(x).numpy(), _two_relu_layers(x, my_model), rtol=1e-6)
    assert my_model.submodules == (my_model.dense_1, my_model.dense_2)
    assert len(my_model.variables) == 4

    # Waiting to create variables: the layers build on their first call.
    my_model = MySequentialModule(name="the_model")
    assert my_model.variables == ()
    result = my_model(tf.constant([[2.0, 2.0, 2.0]]))
    assert my_model.dense_1.w.shape == (3, 3) and my_model.dense_2.w.shape == (3, 2)
    np.testing.assert_allclose(result.numpy(), _two_relu_layers(x, my_model), rtol=1e-6)


def test_modules_saving_weights_with_a_checkpoint_and_delayed_restoration(tmp_path):
    tf.random.set_seed(3)
    my_model = MySequentialModule(name="the_model")
    x = tf.constant([[2.0, -1.0, 0.5]])
    expected = my_model(x)

    chkp_path = str(tmp_path / "my_checkpoint")
    checkpoint = tf.train.Checkpoint(model=my_model)
    checkpoint.write(chkp_path)
    names = {name: shape for name, shape in tf.train.list_variables(chkp_path)}
    assert names["model/dense_1/w"] == [3, 3] and names["model/dense_2/b"] == [2]

    # The new model has no Variables yet: its layers make them on the first call, and
    # take the checkpoint's values then (TensorFlow's delayed restoration).
    new_model = MySequentialModule()
    new_checkpoint = tf.train.Checkpoint(model=new_model)
    new_checkpoint.restore(chkp_path)
    assert new_model.variables == ()

    # Should be the same result as above
    np.testing.assert_array_equal(new_model(x).numpy(), expected.numpy())
    for a, b in zip(new_model.variables, my_model.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert "_deferred_restore" not in vars(new_model.dense_1)

    # A Keras layer that builds later takes its values the same way:
    class FlexibleDense(tf.keras.layers.Layer):
        def __init__(self, out_features, **kwargs):
            super().__init__(**kwargs)
            self.out_features = out_features

        def build(self, input_shape):
            self.w = tf.Variable(
                tf.random.normal([input_shape[-1], self.out_features]), name='w')
            self.b = tf.Variable(tf.zeros([self.out_features]), name='b')

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

    layer = FlexibleDense(4)
    layer(x)
    tf.train.Checkpoint(layer=layer).write(str(tmp_path / "layer"))
    again = FlexibleDense(4)
    tf.train.Checkpoint(layer=again).restore(str(tmp_path / "layer"))
    np.testing.assert_array_equal(again(x).numpy(), layer(x).numpy())

    wrong = FlexibleDense(5)   # (a Variable of another shape than the saved value)
    tf.train.Checkpoint(layer=wrong).restore(str(tmp_path / "layer"))
    with pytest.raises(ValueError, match=r"'layer/w' has shape \(3, 4\).*\(3, 5\)"):
        wrong(x)


def test_modules_saving_functions_and_keras_models(tmp_path, capsys):
    my_model = MySequentialModuleWithFunction(name="the_model")
    print(my_model([[2.0, 2.0, 2.0]]))
    print(my_model([[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]]))
    assert my_model([[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]]).shape == (1, 2, 2)

    tf.saved_model.save(my_model, str(tmp_path / "the_saved_model"))
    new_model = tf.saved_model.load(str(tmp_path / "the_saved_model"))
    assert not isinstance(new_model, SequentialModule)   # (as the guide says: False)
    np.testing.assert_array_equal(new_model([[2.0, 2.0, 2.0]]).numpy(),
                                  my_model([[2.0, 2.0, 2.0]]).numpy())

    class MyDense(tf.keras.layers.Layer):
        # Adding **kwargs to support base Keras layer arguments
        def __init__(self, in_features, out_features, **kwargs):
            super().__init__(**kwargs)

            # This will soon move to the build step; see below
            self.w = tf.Variable(
                tf.random.normal([in_features, out_features]), name='w')
            self.b = tf.Variable(tf.zeros([out_features]), name='b')

        def call(self, x):
            y = tf.matmul(x, self.w) + self.b
            return tf.nn.relu(y)

    simple_layer = MyDense(name="simple", in_features=3, out_features=3)
    y = simple_layer([[2.0, 2.0, 2.0]])
    np.testing.assert_allclose(y.numpy(), _relu(np.full((1, 3), 2.0) @ simple_layer.w.numpy()),
                               rtol=1e-6)

    @keras.saving.register_keras_serializable()
    class FlexibleDense(tf.keras.layers.Layer):
        # Note the added `**kwargs`, as Keras supports many arguments
        def __init__(self, out_features, **kwargs):
            super().__init__(**kwargs)
            self.out_features = out_features

        def build(self, input_shape):  # Create the state of the layer (weights)
            self.w = tf.Variable(
                tf.random.normal([input_shape[-1], self.out_features]), name='w')
            self.b = tf.Variable(tf.zeros([self.out_features]), name='b')

        def call(self, inputs):  # Defines the computation from inputs to outputs
            return tf.matmul(inputs, self.w) + self.b

    flexible_dense = FlexibleDense(out_features=3)
    assert flexible_dense.variables == ()
    flexible_dense(tf.constant([[2.0, 2.0, 2.0], [3.0, 3.0, 3.0]]))
    assert len(flexible_dense.variables) == 2
    try:
        print("Model results:", flexible_dense(tf.constant([[2.0, 2.0, 2.0, 2.0]])))
    except tf.errors.InvalidArgumentError as e:
        print("Failed:", e)
    assert "Failed:" in capsys.readouterr().out

    @keras.saving.register_keras_serializable()
    class MySequentialModel(tf.keras.Model):
        def __init__(self, name=None, **kwargs):
            super().__init__(**kwargs)

            self.dense_1 = FlexibleDense(out_features=3)
            self.dense_2 = FlexibleDense(out_features=2)

        def call(self, x):
            x = self.dense_1(x)
            return self.dense_2(x)

    my_sequential_model = MySequentialModel(name="the_model")
    result = my_sequential_model(tf.constant([[2.0, 2.0, 2.0]]))
    assert len(my_sequential_model.variables) == 4
    assert my_sequential_model.submodules[:2] == (my_sequential_model.dense_1,
                                                  my_sequential_model.dense_2)

    inputs = tf.keras.Input(shape=[3,])
    x = FlexibleDense(3)(inputs)
    x = FlexibleDense(2)(x)
    my_functional_model = tf.keras.Model(inputs=inputs, outputs=x)
    my_functional_model.summary()
    assert "Total params: 20" in capsys.readouterr().out   # (3*3+3 + 3*2+2)
    assert my_functional_model(tf.constant([[2.0, 2.0, 2.0]])).shape == (1, 2)

    path = str(tmp_path / "exname_of_file.keras")
    my_sequential_model.save(path)
    reconstructed_model = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(reconstructed_model(tf.constant([[2.0, 2.0, 2.0]])).numpy(),
                                  result.numpy())


# -- TensorFlow: Basic training loops ----------------------------------------------------------

class MyModel(tf.Module):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Initialize the weights to `5.0` and the bias to `0.0`
        # In practice, these should be randomly initialized
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


class MyModelKeras(tf.keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = tf.Variable(5.0)
        self.b = tf.Variable(0.0)

    def call(self, x):
        return self.w * x + self.b


def _descent(x, y, epochs=10, learning_rate=0.1):
    """Gradient descent on the mean squared error of ``w * x + b``, from (5, 0), in NumPy."""
    w, b, path = 5.0, 0.0, []
    for _ in range(epochs):
        r = y - (w * x + b)
        w, b = w + learning_rate * 2 * np.mean(r * x), b + learning_rate * 2 * np.mean(r)
        path.append((w, b))
    return path


def test_basic_training_loops_by_hand_and_with_keras(tmp_path, capsys):
    TRUE_W = 3.0
    TRUE_B = 2.0
    NUM_EXAMPLES = 201
    x = tf.linspace(-2, 2, NUM_EXAMPLES)
    x = tf.cast(x, tf.float32)

    def f(x):
        return x * TRUE_W + TRUE_B

    noise = tf.random.normal(shape=[NUM_EXAMPLES])
    y = f(x) + noise

    model = MyModel()
    print("Variables:", model.variables)
    assert model(3.0).numpy() == 15.0

    def loss(target_y, predicted_y):
        return tf.reduce_mean(tf.square(target_y - predicted_y))

    def train(model, x, y, learning_rate):
        with tf.GradientTape() as t:
            # Trainable variables are automatically tracked by GradientTape
            current_loss = loss(y, model(x))
        # Use GradientTape to calculate the gradients with respect to W and b
        dw, db = t.gradient(current_loss, [model.w, model.b])
        # Subtract the gradient scaled by the learning rate
        model.w.assign_sub(learning_rate * dw)
        model.b.assign_sub(learning_rate * db)

    weights = []
    biases = []
    epochs = range(10)

    def report(model, loss):
        return f"W = {model.w.numpy():1.2f}, b = {model.b.numpy():1.2f}, loss={loss:2.5f}"

    def training_loop(model, x, y):
        for epoch in epochs:
            # Update the model with the single giant batch
            train(model, x, y, learning_rate=0.1)
            # Track this before I update
            weights.append(model.w.numpy())
            biases.append(model.b.numpy())
            current_loss = loss(y, model(x))
            print(f"Epoch {epoch:2d}:")
            print("    ", report(model, current_loss))

    training_loop(model, x, y)
    expected = _descent(x.numpy().astype(np.float64), y.numpy().astype(np.float64))
    np.testing.assert_allclose(weights, [w for w, _ in expected], rtol=1e-5)
    np.testing.assert_allclose(biases, [b for _, b in expected], rtol=1e-5)
    out = capsys.readouterr().out
    assert out.startswith("Variables: (<mt.Variable 'Variable' shape=() dtype=float32, "
                          "numpy=5.0>, <mt.Variable 'Variable' shape=() dtype=float32, "
                          "numpy=0.0>)\nEpoch  0:\n     W = ")
    assert f"Epoch  9:\n     W = {expected[-1][0]:1.2f}, b = {expected[-1][1]:1.2f}, loss=" in out

    keras_model = MyModelKeras()
    training_loop(keras_model, x, y)
    keras_model.save_weights(str(tmp_path / "my_checkpoint"))
    assert float(keras_model.w) == pytest.approx(expected[-1][0], rel=1e-5)

    keras_model = MyModelKeras()
    keras_model.compile(
        run_eagerly=False,
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
        loss=tf.keras.losses.mean_squared_error,
    )
    print(x.shape[0])
    history = keras_model.fit(x, y, epochs=10, batch_size=1000, verbose=0)
    assert capsys.readouterr().out.endswith("201\n")
    # fit's one batch an epoch is the loop above: the same weights after 10 epochs
    assert float(keras_model.w) == pytest.approx(expected[-1][0], rel=1e-5)
    assert float(keras_model.b) == pytest.approx(expected[-1][1], rel=1e-5)
    w0, b0 = expected[0]
    first = np.mean((y.numpy() - (5.0 * x.numpy())) ** 2)   # (logged before the first step)
    assert history.history["loss"][0] == pytest.approx(first, rel=1e-5)
    assert history.history["loss"][1] == pytest.approx(
        np.mean((y.numpy() - (w0 * x.numpy() + b0)) ** 2), rel=1e-5)


# -- TensorFlow: Custom training walkthrough -----------------------------------------------------

def _penguins(n):
    """Made-up data in the shape of the walkthrough's ``penguins/processed``: four scaled
    measurements per penguin and a species 0, 1 or 2, the species shifting the measurements."""
    labels = RNG.integers(0, 3, n)
    centers = np.array([[0.2, 0.3, 0.6, 0.5], [0.4, 0.7, 0.3, 0.4], [0.8, 0.5, 0.5, 0.7]])
    features = centers[labels] + 0.05 * RNG.standard_normal((n, 4))
    return features.astype("float32"), labels.astype("int64")


def test_custom_training_walkthrough(capsys):
    # In place of tfds.load("penguins/processed", split=..., as_supervised=True):
    ds_test = tf.data.Dataset.from_tensor_slices(_penguins(30))
    ds_train = tf.data.Dataset.from_tensor_slices(_penguins(120))
    assert isinstance(ds_test, tf.data.Dataset)
    ds_train_batch = ds_train.batch(32)

    features, labels = next(iter(ds_train_batch))
    assert features.shape == (32, 4) and labels.dtype == tf.int64

    model = tf.keras.Sequential([
        tf.keras.layers.Dense(10, activation=tf.nn.relu, input_shape=(4,)),  # input shape required
        tf.keras.layers.Dense(10, activation=tf.nn.relu),
        tf.keras.layers.Dense(3)
    ])
    predictions = model(features)
    np.testing.assert_allclose(tf.nn.softmax(predictions[:5]).numpy().sum(axis=1), np.ones(5),
                               rtol=1e-6)
    print("Prediction: {}".format(tf.math.argmax(predictions, axis=1)))
    print("    Labels: {}".format(labels))

    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def loss(model, x, y, training):
        # training=training is needed only if there are layers with different
        # behavior during training versus inference (e.g. Dropout).
        y_ = model(x, training=training)

        return loss_object(y_true=y, y_pred=y_)

    l = loss(model, features, labels, training=False)  # noqa: E741 (the guide's name)
    print("Loss test: {}".format(l))
    assert float(l) == pytest.approx(_sparse_ce_from_logits(labels.numpy(), predictions.numpy()),
                                     rel=1e-5)

    def grad(model, inputs, targets):
        with tf.GradientTape() as tape:
            loss_value = loss(model, inputs, targets, training=True)
        return loss_value, tape.gradient(loss_value, model.trainable_variables)

    optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
    loss_value, grads = grad(model, features, labels)
    print("Step: {}, Initial Loss: {}".format(optimizer.iterations.numpy(),
                                              loss_value.numpy()))
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    print("Step: {},         Loss: {}".format(optimizer.iterations.numpy(),
                                              loss(model, features, labels, training=True).numpy()))
    out = capsys.readouterr().out
    assert "Step: 0, Initial Loss: " in out and "Step: 1,         Loss: " in out

    ## Note: Rerunning this cell uses the same model parameters
    # Keep results for plotting
    train_loss_results = []
    train_accuracy_results = []
    num_epochs = 61
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.3)

    for epoch in range(num_epochs):
        epoch_loss_avg = tf.keras.metrics.Mean()
        epoch_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()
        seen_losses, hits = [], []

        # Training loop - using batches of 32
        for x, y in ds_train_batch:
            # Optimize the model
            loss_value, grads = grad(model, x, y)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

            # Track progress
            epoch_loss_avg.update_state(loss_value)  # Add current batch loss
            # Compare predicted label to actual label
            # training=True is needed only if there are layers with different
            # behavior during training versus inference (e.g. Dropout).
            epoch_accuracy.update_state(y, model(x, training=True))
            seen_losses.append(float(loss_value))
            hits.extend(np.argmax(model(x).numpy(), axis=1) == y.numpy())

        # End epoch
        train_loss_results.append(epoch_loss_avg.result())
        train_accuracy_results.append(epoch_accuracy.result())

        if epoch % 50 == 0:
            print("Epoch {:03d}: Loss: {:.3f}, Accuracy: {:.3%}".format(epoch,
                                                                        epoch_loss_avg.result(),
                                                                        epoch_accuracy.result()))
    # (Mean weighs each batch's loss once: the last batch of 24 counts as much as one of 32)
    assert float(epoch_loss_avg.result()) == pytest.approx(np.mean(seen_losses), rel=1e-5)
    assert float(epoch_accuracy.result()) == pytest.approx(np.mean(hits))
    assert capsys.readouterr().out.startswith("Epoch 000: Loss: ")
    assert float(train_loss_results[-1]) < float(train_loss_results[0])

    test_accuracy = tf.keras.metrics.Accuracy()
    ds_test_batch = ds_test.batch(10)

    for (x, y) in ds_test_batch:
        # training=False is needed only if there are layers with different
        # behavior during training versus inference (e.g. Dropout).
        logits = model(x, training=False)
        prediction = tf.math.argmax(logits, axis=1, output_type=tf.int64)
        test_accuracy(prediction, y)

    print("Test set accuracy: {:.3%}".format(test_accuracy.result()))
    test_x, test_y = [np.concatenate(part) for part in zip(*[(a.numpy(), b.numpy())
                                                             for a, b in ds_test_batch])]
    expected = np.mean(np.argmax(model(test_x).numpy(), axis=1) == test_y)
    assert float(test_accuracy.result()) == pytest.approx(expected)
    assert expected > 0.8   # (three well-separated species)
    assert tf.stack([y, prediction], axis=1).shape == (10, 2)


def test_custom_training_walkthrough_iris_version_with_a_csv_like_dataset():
    # The walkthrough's older text read iris_training.csv with
    # tf.data.experimental.make_csv_dataset, which yields (an OrderedDict of columns, labels)
    # batches; the same batches, made here from columns, go through its map:
    column_names = ['sepal_length', 'sepal_width', 'petal_length', 'petal_width', 'species']
    feature_names = column_names[:-1]
    features, labels = _penguins(40)
    columns = collections.OrderedDict(zip(feature_names, features.T))
    train_dataset = tf.data.Dataset.from_tensor_slices((columns, labels)).batch(32)

    def pack_features_vector(features, labels):
        """Pack the features into a single array."""
        features = tf.stack(list(features.values()), axis=1)
        return features, labels

    train_dataset = train_dataset.map(pack_features_vector)
    features_batch, labels_batch = next(iter(train_dataset))
    np.testing.assert_array_equal(features_batch.numpy(), features[:32])
    np.testing.assert_array_equal(labels_batch.numpy(), labels[:32])


def test_fit_on_a_dataset_of_tensors_gives_train_step_each_tensor_as_keras():
    seen = []

    class Recorder(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            seen.append(data)
            return {}

    dataset = tf.data.Dataset.from_tensor_slices(np.ones((6, 2), "float32")).batch(4)
    model = Recorder()
    model.compile(optimizer="sgd")
    model.fit(dataset, verbose=0)
    assert [type(d).__name__ for d in seen] == ["Tensor", "Tensor"]
    assert [d.shape for d in seen] == [(4, 2), (2, 2)]
    assert model.predict(dataset, verbose=0).shape == (6, 1)


def test_subclassing_keras_3s_text_with_keras_ops(capsys):
    # keras.io's text since Keras 3 writes its layers with keras.ops and keras.random.
    from minitape.keras import ops

    class Linear(keras.layers.Layer):
        def __init__(self, units=32, input_dim=32):
            super().__init__()
            self.w = self.add_weight(
                shape=(input_dim, units),
                initializer="random_normal",
                trainable=True,
            )
            self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True)

        def call(self, inputs):
            return ops.matmul(inputs, self.w) + self.b

    x = ops.ones((2, 2))
    linear_layer = Linear(4, 2)
    y = linear_layer(x)
    np.testing.assert_allclose(y.numpy(), np.ones((2, 2)) @ linear_layer.w.numpy(), rtol=1e-6,
                               atol=1e-7)

    class ComputeSum(keras.layers.Layer):
        def __init__(self, input_dim):
            super().__init__()
            self.total = self.add_weight(
                initializer="zeros", shape=(input_dim,), trainable=False
            )

        def call(self, inputs):
            self.total.assign_add(ops.sum(inputs, axis=0))
            return self.total

    my_sum = ComputeSum(2)
    my_sum(x)
    print(my_sum(x).numpy())
    assert capsys.readouterr().out == "[4. 4.]\n"

    class ActivityRegularizationLayer(keras.layers.Layer):
        def __init__(self, rate=1e-2):
            super().__init__()
            self.rate = rate

        def call(self, inputs):
            self.add_loss(self.rate * ops.mean(inputs))
            return inputs

    layer = ActivityRegularizationLayer()
    _ = layer(ops.ones((1, 1)) * 2.0)
    assert len(layer.losses) == 1 and float(layer.losses[0]) == pytest.approx(0.02)

    class CustomDropout(keras.layers.Layer):
        def __init__(self, rate, **kwargs):
            super().__init__(**kwargs)
            self.rate = rate

        def call(self, inputs, training=None):
            if training:
                return keras.random.dropout(inputs, rate=self.rate)
            return inputs

    dropped = CustomDropout(0.25)(ops.ones((4, 400)), training=True).numpy()
    assert set(np.unique(dropped)) == {0.0, np.float32(1 / 0.75)}
    assert abs(np.mean(dropped == 0) - 0.25) < 0.05

    class Sampling(layers.Layer):
        """Uses (z_mean, z_log_var) to sample z, the vector encoding a digit."""

        def call(self, inputs):
            z_mean, z_log_var = inputs
            batch = ops.shape(z_mean)[0]
            dim = ops.shape(z_mean)[1]
            epsilon = keras.random.normal(shape=(batch, dim))
            return z_mean + ops.exp(0.5 * z_log_var) * epsilon

    z_mean, z_log_var = ops.zeros((3, 2)), ops.ones((3, 2)) * 2 * np.log(3.0)
    with tf.GradientTape() as tape:
        tape.watch(z_mean)
        z = Sampling()((z_mean, z_log_var))
    assert z.shape == (3, 2)
    np.testing.assert_allclose(tape.gradient(z, z_mean).numpy(), np.ones((3, 2)))
    kl = -0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1)
    assert float(kl) == pytest.approx(-0.5 * (2 * np.log(3.0) - 9.0 + 1), rel=1e-6)

    assert ops.argmax(ops.convert_to_tensor([[1.0, 3.0], [4.0, 0.0]]), axis=1).numpy().tolist() \
        == [1, 0]
    with pytest.raises(AttributeError, match="keras.ops has only the functions"):
        ops.logsumexp


def test_a_train_step_written_as_keras_default_with_compute_metrics():
    # Keras's own train_step, as its docs print it for overriding: compute_loss with
    # (x, y, y_pred, sample_weight), then compute_metrics for the logs.
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(x, y, y_pred, sample_weight)
            gradients = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
            self._loss_tracker.update_state(loss)   # (Keras 3's train_step does this too)
            return self.compute_metrics(x, y, y_pred, sample_weight)

    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae", "accuracy"])
    x, y = _one_batch_data()
    y = np.round(y)
    loss, mae = _first_epoch_numbers(model, x, y)
    dense = _dense_of(model)
    pred = x @ dense.kernel.numpy() + dense.bias.numpy()
    history = model.fit(x, y, epochs=1, batch_size=64, verbose=0)
    assert history.history == {"loss": [pytest.approx(loss, rel=1e-5)],
                               "mae": [pytest.approx(mae, rel=1e-5)],
                               "accuracy": [pytest.approx(np.mean((pred > 0.5) == y))]}
    assert type(model.compiled_metrics[1]).__name__ == "BinaryAccuracy"
    assert keras.utils.unpack_x_y_sample_weight((x,)) == (x, None, None)
    with pytest.raises(ValueError, match="found a tuple of 4"):
        keras.utils.unpack_x_y_sample_weight((1, 2, 3, 4))
