"""model.save / mt.keras.models.load_model (issue 32): a round trip per model kind with custom
objects, predictions compared exactly; the file's content; atomic writes; foreign files refused."""

import json
import os
import zipfile

import numpy as np
import pytest

import minitape as mt

L = mt.keras.layers
X = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(7, 1)).astype(np.float32)


def double_relu(x):
    return mt.nn.relu(x) * 2.0


def scaled_mse(y_true, y_pred):
    return 0.5 * mt.reduce_mean(mt.square(y_true - y_pred), axis=-1)


class Scale(L.Layer):
    """A custom layer with a weight and a constructor argument (its automatic config)."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal",
                                 name="w", regularizer="l2")

    def call(self, x):
        return x * self.w * self.factor


class HalfError(mt.keras.metrics.MeanMetricWrapper):
    def __init__(self, name="half_error", dtype=None):
        super().__init__(scaled_mse, name=name, dtype=dtype)


class Wide(mt.keras.Model):
    """A subclassed model whose __init__ takes arguments but keeps none of them as such."""

    def __init__(self, units=5, activation="relu", **kwargs):
        super().__init__(**kwargs)
        self.hidden = L.Dense(units, activation=activation)
        self.scale = Scale(factor=3.0)
        self.norm = L.BatchNormalization()
        self.out = L.Dense(1)

    def call(self, x, training=None):
        return self.out(self.norm(self.scale(self.hidden(x)), training=bool(training)))


CUSTOM = {"double_relu": double_relu, "scaled_mse": scaled_mse, "Scale": Scale,
          "HalfError": HalfError, "Wide": Wide}


def sequential():
    return mt.keras.Sequential([L.Dense(6, activation=double_relu, input_shape=(4,),
                                        kernel_regularizer=mt.keras.regularizers.L1L2(0.01, 0.02)),
                                Scale(factor=2.0), L.Dropout(0.3), L.Dense(1)])


def functional():
    a = mt.keras.Input(shape=(4,), name="a")
    b = mt.keras.Input(shape=(4,), name="b")
    shared = L.Dense(3, activation="tanh")
    joined = L.Lambda(mt.concat, arguments={"axis": 1})([shared(a), Scale()(shared(b))])
    return mt.keras.Model([a, b], [L.Dense(1)(joined), joined])


def subclassed():
    return Wide(units=4, activation=double_relu)


def predict(model, kind):
    x = [X, X[::-1].copy()] if kind == "functional" else X
    out = model(x, training=False) if kind != "functional" else model(x)
    return [o.numpy() for o in out] if isinstance(out, list) else [out.numpy()]


@pytest.mark.parametrize("kind", ["sequential", "functional", "subclassed"])
def test_round_trip_predicts_exactly_the_same(kind, tmp_path):
    mt.keras.utils.set_random_seed(0)
    model = {"sequential": sequential, "functional": functional, "subclassed": subclassed}[kind]()
    if kind != "functional":
        model.compile(optimizer=mt.keras.optimizers.Adam(0.01), loss=scaled_mse,
                      metrics=["mae", HalfError()])
        model.fit(X, Y, epochs=2, batch_size=4, verbose=0)
    else:
        predict(model, kind)
    path = tmp_path / f"{kind}.keras"
    assert model.save(path) is None and path.exists()
    loaded = mt.keras.models.load_model(path, custom_objects=CUSTOM)
    assert type(loaded) is type(model)
    for a, b in zip(predict(loaded, kind), predict(model, kind)):
        np.testing.assert_array_equal(a, b)
    assert [p for p, _ in loaded._variables_with_paths()] == \
        [p for p, _ in model._variables_with_paths()]
    assert [v.trainable for v in loaded.variables] == [v.trainable for v in model.variables]
    if kind != "functional":   # compiled again: the same loss, metrics and optimizer settings
        assert loaded.loss is scaled_mse
        assert type(loaded.optimizer).__name__ == "Adam"
        assert loaded.optimizer.get_config() == model.optimizer.get_config()
        logs = loaded.evaluate(X, Y, verbose=0, return_dict=True)
        assert logs == model.evaluate(X, Y, verbose=0, return_dict=True)
        assert list(logs) == ["loss", "mae", "half_error"]
        assert [float(v) for v in loaded.losses] == [float(v) for v in model.losses]


def test_the_file_is_a_zip_of_json_and_npz_only(tmp_path):
    model = sequential()
    path = tmp_path / "m.keras"
    model.save(path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["minitape_model.json", "model.weights.npz"]
        document = json.loads(zf.read("minitape_model.json"))
    assert document["format"] == "minitape.keras.model"
    layers = document["model"]["__object__"]["config"]["layers"]
    assert layers[0]["__object__"]["config"]["activation"] == {"__function__": "double_relu"}
    assert layers[0]["__object__"]["config"]["kernel_regularizer"]["__object__"] == {
        "class_name": "L1L2", "kind": "regularizer", "config": {"l1": 0.01, "l2": 0.02}}
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".minitape")]


def test_custom_objects_are_required_and_named(tmp_path):
    path = tmp_path / "m.keras"
    subclassed().save(path)
    with pytest.raises(ValueError, match="custom_objects=\\{'Wide': Wide\\}"):
        mt.keras.models.load_model(path)
    with pytest.raises(ValueError, match="the function 'double_relu'"):
        mt.keras.models.load_model(path, custom_objects={"Wide": Wide})


def test_register_keras_serializable_replaces_custom_objects(tmp_path):
    @mt.keras.saving.register_keras_serializable(package="test")
    def triple(x):
        return 3.0 * x

    model = mt.keras.Sequential([L.Dense(2, activation=triple, input_shape=(4,))])
    model.save(tmp_path / "m.keras")
    loaded = mt.keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded(X).numpy(), model(X).numpy())


def test_saving_is_atomic_and_a_lambda_is_refused(tmp_path):
    path = tmp_path / "m.keras"
    good = sequential()
    good.save(path)
    before = path.read_bytes()
    bad = mt.keras.Sequential([L.Dense(2, activation=lambda t: t, input_shape=(4,))])
    with pytest.raises(ValueError, match="a lambda"):
        bad.save(path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.keras"]
    with pytest.raises(FileExistsError):
        good.save(path, overwrite=False)


def test_files_that_are_not_minitape_models_are_refused_by_name(tmp_path):
    keras_zip = tmp_path / "real.keras"
    with zipfile.ZipFile(keras_zip, "w") as zf:   # the layout of Keras 3's .keras files
        zf.writestr("config.json", "{}")
        zf.writestr("metadata.json", "{}")
        zf.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n")
    with pytest.raises(ValueError, match="is a Keras .keras file"):
        mt.keras.models.load_model(keras_zip)
    h5 = tmp_path / "model.h5"
    h5.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    with pytest.raises(ValueError, match="HDF5"):
        mt.keras.models.load_model(h5)
    saved_model_dir = tmp_path / "exported"
    saved_model_dir.mkdir()
    (saved_model_dir / "saved_model.pb").write_bytes(b"\x08\x01")
    with pytest.raises(ValueError, match="TensorFlow SavedModel directory"):
        mt.keras.models.load_model(saved_model_dir)
    mt.saved_model.save(sequential(), tmp_path / "mine")
    with pytest.raises(ValueError, match="mt.saved_model.load"):
        mt.keras.models.load_model(tmp_path / "mine")
    text = tmp_path / "notes.keras"
    text.write_text("hello")
    with pytest.raises(ValueError, match="not a model file"):
        mt.keras.models.load_model(text)
    with pytest.raises(FileNotFoundError, match="no file"):
        mt.keras.models.load_model(tmp_path / "missing.keras")


def test_get_config_of_builtin_layers_round_trips():
    layer = L.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu",
                     bias_regularizer="l1", name="c")
    again = L.Conv2D.from_config(layer.get_config())
    assert (again.kernel_size, again.strides, again.padding, again.name) == \
        ((3, 2), (2, 2), "SAME", "c")
    assert isinstance(again._weight_regularizers["bias"], mt.keras.regularizers.L1)
    assert Scale(factor=4.0).get_config()["factor"] == 4.0
