"""What TensorFlow's tensor guide and customization tutorials use, with ``import minitape as tf``.

The tensorflow/docs notebooks ``site/en/guide/tensor.ipynb`` and
``site/en/tutorials/customization/{basics,custom_layers,custom_training_walkthrough}.ipynb``
are TensorFlow's text and are not shipped here (see README, "TensorFlow's guides,
unmodified"). These tests exercise, in minitape's own words and numbers, every API those
notebooks call, with the values TensorFlow documents (hand-computed here), and check that
the families minitape leaves out (text, ragged and sparse tensors, text-file datasets) are
refused at once with a message naming the family and docs/tensorflow_coverage.md.

What still fails in those notebooks, run offline with the import switched: the cells that
download (the walkthrough's ``tensorflow_datasets``), the out-of-scope cells below, and (until
issue #32's other half lands) ``input_shape=`` and ``tf.keras.metrics``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitape as tf

COVERAGE = "docs/tensorflow_coverage.md"

# -- the tensor guide ----------


def test_tensors_of_each_rank_and_their_default_dtypes():
    scalar = tf.constant(7)
    assert scalar.dtype == tf.int32 and scalar.ndim == 0
    vector = tf.constant([1.5, 2.5])
    assert vector.dtype == tf.float32
    matrix = tf.constant([[1, 2], [3, 4], [5, 6]], dtype=tf.float16)
    assert matrix.dtype == tf.float16 and matrix.shape == (3, 2)
    cube = tf.constant(np.arange(24).reshape(2, 3, 4))
    assert cube.dtype == tf.int64             # a NumPy int64 array keeps its dtype
    np.testing.assert_array_equal(np.array(matrix), matrix.numpy())


def test_rank_shape_size_and_tensorshape():
    t = tf.zeros([2, 3, 4, 5])
    r = tf.rank(t)
    assert r.dtype == tf.int32 and int(r) == 4 == t.ndim
    np.testing.assert_array_equal(tf.shape(t).numpy(), [2, 3, 4, 5])
    assert int(tf.size(t)) == 120
    s = tf.constant([[1], [2], [3]]).shape
    assert isinstance(s, tf.TensorShape) and isinstance(s, tuple)
    assert s.as_list() == [3, 1] and s.rank == 2 and s.ndims == 2 and s.num_elements() == 3
    assert str(s) == "(3, 1)" and s == (3, 1) and s[-1] == 1
    assert s.is_fully_defined() and s.is_compatible_with([None, 1])
    assert not s.is_compatible_with([3])
    assert tf.Variable([[1.0, 2.0]]).shape.as_list() == [1, 2]


def test_newaxis_adds_an_axis():
    x = tf.constant([1.0, 2.0, 3.0])
    assert tf.newaxis is None and np.newaxis is None
    assert x[:, tf.newaxis].shape == (3, 1) and x[tf.newaxis, :].shape == (1, 3)
    col = tf.constant([[1], [2]])
    np.testing.assert_array_equal((col * tf.constant([1, 10, 100])[tf.newaxis]).numpy(),
                                  [[1, 10, 100], [2, 20, 200]])


def test_device_is_the_cpu():
    x = tf.random.uniform([2, 2])
    assert x.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert x.device.endswith("CPU:0") and not x.device.endswith("GPU:0")
    with tf.device("CPU:0"):
        assert tf.linalg.matmul(x, x).device.endswith("CPU:0")
    assert tf.Variable(1.0).device.endswith("CPU:0")
    assert tf.config.list_physical_devices("GPU") == []


@pytest.mark.parametrize("name,np_dtype", [("uint8", np.uint8), ("uint16", np.uint16),
                                           ("uint32", np.uint32), ("uint64", np.uint64),
                                           ("int8", np.int8), ("int16", np.int16)])
def test_the_other_integer_dtypes(name, np_dtype):
    dtype = getattr(tf, name)
    assert dtype == np.dtype(np_dtype) and getattr(tf.dtypes, name) is dtype
    t = tf.constant([1, 2, 3], dtype=dtype)
    assert t.dtype == dtype and (t + 1).dtype == dtype


def test_casting_down_to_uint8_drops_the_fraction():
    f64 = tf.constant([1.1, 5.5, 9.9], dtype=tf.float64)
    f16 = tf.cast(f64, dtype=tf.float16)
    u8 = tf.cast(f16, dtype=tf.uint8)
    assert u8.dtype == tf.uint8
    np.testing.assert_array_equal(u8.numpy(), [1, 5, 9])
    assert str(u8) == "mt.Tensor([1 5 9], shape=(3,), dtype=uint8)"


@pytest.mark.parametrize("a,b,tf_names", [
    (tf.constant([1.0]), tf.constant([1.0], tf.float64), ("float", "double")),
    (tf.constant([1]), tf.constant([1.0]), ("int32", "float")),
    (tf.constant([1.0], tf.float16), tf.constant([1.0]), ("half", "float")),
])
def test_mixed_dtype_arithmetic_is_refused_with_tensorflows_words(a, b, tf_names):
    want = (rf"^cannot compute AddV2 as input #1\(zero-based\) was expected to be a "
            rf"{tf_names[0]} tensor but is a {tf_names[1]} tensor \[Op:AddV2\]\. .*mt\.cast")
    with pytest.raises(tf.errors.InvalidArgumentError, match=want):
        a + b
    with pytest.raises(TypeError, match="MatMul"):          # also a TypeError, minitape's rule
        tf.matmul(tf.ones([1, 1], a.dtype), tf.ones([1, 1], b.dtype))


def test_python_scalars_still_take_the_tensors_dtype():
    assert (tf.constant([1, 2]) * 2).dtype == tf.int32
    assert (tf.constant([1.0], tf.float64) + 1.5).dtype == tf.float64
    assert (2.0 * tf.constant([1.0], tf.float16)).dtype == tf.float16
    with pytest.raises(TypeError, match="2.5"):
        tf.constant([1, 2]) * 2.5


def test_ops_on_python_lists_and_broadcasting():
    assert int(tf.reduce_max([4, 9, 2])) == 9
    assert int(tf.reduce_max(np.array([4, 9, 2]))) == 9
    assert tf.convert_to_tensor([4, 9]).dtype == tf.int32
    c = tf.constant([[2.0, 1.0], [0.0, 5.0]])
    np.testing.assert_array_equal(tf.math.argmax(c).numpy(), [0, 1])
    np.testing.assert_allclose(tf.nn.softmax(c).numpy()[0], [np.e / (np.e + 1), 1 / (np.e + 1)],
                               rtol=1e-6)
    x = tf.reshape(tf.constant([1, 2]), [2, 1])
    np.testing.assert_array_equal(tf.multiply(x, tf.range(1, 4)).numpy(), [[1, 2, 3], [2, 4, 6]])
    np.testing.assert_array_equal(tf.broadcast_to(tf.constant([7, 8]), [2, 2]).numpy(),
                                  [[7, 8], [7, 8]])


def test_indexing_and_reshaping():
    v = tf.constant([0, 1, 1, 2, 3, 5, 8])
    assert int(v[-1]) == 8 and v[1:5:2].numpy().tolist() == [1, 2] and v[::-1].numpy()[0] == 8
    m = tf.reshape(tf.range(12), [3, 4])
    assert m[1, :].numpy().tolist() == [4, 5, 6, 7] and m[:, -1].numpy().tolist() == [3, 7, 11]
    assert tf.reshape(m, [-1]).shape == (12,) and tf.reshape(m, [2, -1]).shape == (2, 6)
    try:
        tf.reshape(m, [5, -1])
    except Exception as e:        # the guide prints the error's type and message
        assert type(e).__name__ == "InvalidArgumentError"
        assert str(e).startswith("Input to reshape is a tensor with 12 values, but the requested "
                                 "shape requires a multiple of 5")
    else:
        raise AssertionError("reshape to 5 rows should fail")


def test_a_ragged_list_is_not_a_tensor():
    with pytest.raises(ValueError, match="rectangular"):
        tf.constant([[1, 2, 3], [4]])


# -- what minitape will not do ----------

@pytest.mark.parametrize("get,named", [
    (lambda: tf.strings, "tf.strings"), (lambda: tf.string, "tf.string"),
    (lambda: tf.ragged, "tf.ragged"), (lambda: tf.RaggedTensor, "tf.RaggedTensor"),
    (lambda: tf.sparse, "tf.sparse"), (lambda: tf.SparseTensor, "tf.SparseTensor"),
    (lambda: tf.sets, "tf.sets"), (lambda: tf.queue, "tf.queue"),
    (lambda: tf.data.TFRecordDataset, "tf.data.TFRecordDataset"),
    (lambda: tf.data.TextLineDataset, "tf.data.TextLineDataset"),
    (lambda: tf.Graph, "tf.Graph"),
])
def test_out_of_scope_families_are_refused_at_once(get, named):
    with pytest.raises(AttributeError, match=rf"{named} is outside minitape's scope, and "
                                             rf"minitape will not implement it: .*{COVERAGE}"):
        get()


@pytest.mark.parametrize("value", ["Gray wolf", "café", ["a", "bc"], b"bytes",
                                   np.array(["x", "y"])])
def test_text_tensors_are_refused_with_the_reason(value):
    with pytest.raises(TypeError, match=rf"A text Tensor \(tf.string\) is outside minitape's "
                                        rf"scope.*text has no gradient.*{COVERAGE}"):
        tf.constant(value)


def test_a_traced_functions_graph_is_refused():
    f = tf.function(lambda x: x * 2.0)
    concrete = f.get_concrete_function(tf.constant(1.0))
    for name in ("graph", "function_def"):
        with pytest.raises(AttributeError, match=rf"A traced function's {name} is outside "
                                                 r"minitape's scope.*mt.viz.draw_tape"):
            getattr(concrete, name)
        assert not hasattr(concrete, name)


def test_the_coverage_page_has_the_section_it_points_to():
    from pathlib import Path
    page = (Path(__file__).resolve().parents[1] / COVERAGE).read_text()
    assert "## What minitape will not do" in page
    for family in ("`tf.strings`", "`tf.sparse`", "`tf.ragged`", "`tf.sets`", "`tf.queue`",
                   "`tf.data.TFRecordDataset`", "`concrete_function.graph`"):
        assert family in page


def test_tensorflow_version_is_the_one_the_names_come_from():
    from pathlib import Path
    data = json.loads((Path(tf.__file__).with_name("_tf_names.json")).read_text())
    assert tf.tensorflow_version == data["tensorflow_version"]
    assert tf.tensorflow_version.startswith("2.")
    assert tf.__version__ != tf.tensorflow_version     # minitape's own version stays its own


# -- the customization basics tutorial ----------

def test_ops_convert_python_values_and_numpy_arrays():
    assert int(tf.math.add(3, 4)) == 7
    np.testing.assert_array_equal(tf.math.add([1, 2], [10, 20]).numpy(), [11, 22])
    assert int(tf.math.square(6)) == 36 and int(tf.math.reduce_sum([4, 5, 6])) == 15
    assert int(tf.math.square(1) + tf.math.square(2)) == 5
    x = tf.linalg.matmul([[2]], [[3, 4]])
    assert x.shape == (1, 2) and x.dtype == tf.int32 and x.numpy().tolist() == [[6, 8]]
    t = tf.math.multiply(np.full([2, 2], 0.5), 4)      # float64 ndarray, int scalar
    assert t.dtype == tf.float64 and t.numpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]
    back = np.add(t, 1)
    assert isinstance(back, np.ndarray) and back.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_datasets_map_shuffle_batch():
    ds = tf.data.Dataset.from_tensor_slices([1, 2, 3, 4, 5])
    ds = ds.map(tf.math.square).shuffle(2).batch(2)
    batches = [b.numpy().tolist() for b in ds]
    assert [len(b) for b in batches] == [2, 2, 1]
    assert sorted(v for b in batches for v in b) == [1, 4, 9, 16, 25]


# -- the custom layers tutorial ----------

def test_a_dense_layers_variables():
    layer = tf.keras.layers.Dense(4)
    out = layer(tf.zeros([6, 3]))
    assert out.shape == (6, 4)
    kernel, bias = layer.kernel, layer.bias
    assert [v.shape for v in layer.variables] == [(3, 4), (4,)]
    assert kernel.shape == (3, 4) and bias.numpy().tolist() == [0.0] * 4


class Linear(tf.keras.layers.Layer):
    def __init__(self, units):
        super(Linear, self).__init__()
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", shape=[int(input_shape[-1]), self.units])

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel)


def test_a_layer_written_as_the_tutorial_writes_it():
    layer = Linear(3)
    x = tf.ones([2, 4])
    y = layer(x)
    assert y.shape == (2, 3)
    assert [v.name for v in layer.trainable_variables] == ["kernel"]
    np.testing.assert_allclose(y.numpy(), np.ones((2, 4)) @ layer.kernel.numpy(), rtol=1e-6)


class Residual(tf.keras.Model):
    def __init__(self, kernel_size, filters):
        super(Residual, self).__init__(name="")
        f1, f2 = filters
        self.conv_a = tf.keras.layers.Conv2D(f1, (1, 1))
        self.bn_a = tf.keras.layers.BatchNormalization()
        self.conv_b = tf.keras.layers.Conv2D(f2, kernel_size, padding="same")
        self.bn_b = tf.keras.layers.BatchNormalization()

    def call(self, x_in, training=False):
        x = tf.nn.relu(self.bn_a(self.conv_a(x_in), training=training))
        x = self.bn_b(self.conv_b(x), training=training)
        x += x_in
        return tf.nn.relu(x)


def test_a_model_of_conv_and_batch_norm_blocks(capsys):
    block = Residual(3, [2, 4])
    out = block(tf.zeros([1, 3, 3, 4]))
    assert out.shape == (1, 3, 3, 4)
    assert len(block.layers) == 4
    assert len(block.variables) == 2 * 2 + 2 * 4     # two convs (kernel, bias), two BNs (4 each)
    block.summary()
    assert "Total params" in capsys.readouterr().out


# -- the custom training walkthrough ----------

def test_the_walkthroughs_training_step():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 12)
    features = tf.constant(rng.normal(size=(12, 4)).astype(np.float32) + labels[:, None])
    labels = tf.constant(labels)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation=tf.nn.relu),
        tf.keras.layers.Dense(8, activation=tf.nn.relu),
        tf.keras.layers.Dense(3),
    ])
    predictions = model(features)
    probabilities = tf.nn.softmax(predictions[:5])
    np.testing.assert_allclose(tf.reduce_sum(probabilities, axis=1).numpy(), np.ones(5),
                               rtol=1e-6)
    assert tf.math.argmax(predictions, axis=1).dtype == tf.int64
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def loss(model, x, y, training):
        return loss_object(y_true=y, y_pred=model(x, training=training))

    def grad(model, inputs, targets):
        with tf.GradientTape() as tape:
            loss_value = loss(model, inputs, targets, training=True)
        return loss_value, tape.gradient(loss_value, model.trainable_variables)

    # The loss is the mean of -log softmax at the label, by hand in NumPy.
    logits = model(features).numpy().astype(np.float64)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    by_hand = -log_p[np.arange(12), labels.numpy()].mean()
    assert float(loss(model, features, labels, training=False)) == pytest.approx(by_hand,
                                                                                 rel=1e-5)
    optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
    before, grads = grad(model, features, labels)
    assert int(optimizer.iterations.numpy()) == 0
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    assert int(optimizer.iterations.numpy()) == 1
    for _ in range(30):
        _, grads = grad(model, features, labels)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    assert float(loss(model, features, labels, training=True)) < float(before)
    prediction = tf.math.argmax(model(features, training=False), axis=1, output_type=tf.int64)
    pairs = tf.stack([tf.cast(labels, tf.int64), prediction], axis=1)
    assert pairs.shape == (12, 2) and pairs.dtype == tf.int64
    for i, logit in enumerate(model(tf.convert_to_tensor([[0.3, 0.8, 0.4, 0.5]]))):
        class_idx = tf.math.argmax(logit).numpy()
        p = tf.nn.softmax(logit)[class_idx]
        assert f"{100 * p:4.1f}%"


def test_a_tensorshape_made_by_hand_may_have_unknown_sizes():
    s = tf.TensorShape([None, 3])
    assert s.as_list() == [None, 3] and not s.is_fully_defined() and s.num_elements() is None
    assert tf.TensorShape([2, 3]).num_elements() == 6 and tf.TensorShape([]).num_elements() == 1
    assert tf.zeros([2, 3]).shape.is_compatible_with(s)


# -- scripts/run_tf_notebook.py (runs a fetched tensorflow/docs notebook) ----------

def test_the_notebook_runner_switches_the_import_and_reports_each_cell(tmp_path):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "run_tf_notebook.py"
    spec = importlib.util.spec_from_file_location("run_tf_notebook", script)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)

    def cell(source, kind="code"):
        return {"cell_type": kind, "source": source, "metadata": {}}

    notebook = {"cells": [
        cell("#@title Licensed under the Apache License, Version 2.0"),
        cell("A guide's text", "markdown"),
        cell("!pip install -q tensorflow\nimport tensorflow as tf\nx = tf.constant([1, 2])"),
        cell("print(tf.rank(x).numpy())"),
        cell("tf.strings.split(x)"),
    ]}
    path = tmp_path / "guide.ipynb"
    path.write_text(json.dumps(notebook))
    import io
    out = io.StringIO()
    results = runner.run(path, out=out)
    assert [(n, e is None) for n, _, e in results] == [(1, True), (2, True), (3, False)]
    assert "import minitape as tf" in results[0][1] and "pass" in results[0][1]
    assert "tf.strings is outside minitape's scope" in results[2][2]
    assert out.getvalue().endswith("guide.ipynb: 2 of 3 code cells ran; failed: [3]\n")
    assert runner.switch_imports(
        "import tensorflow as tf\nfrom tensorflow import keras\n"
        "  from tensorflow.keras import layers\nimport tensorflow_datasets as tfds") == (
        "import minitape as tf\nfrom minitape import keras\n"
        "  from minitape.keras import layers\nimport tensorflow_datasets as tfds")


def test_tf_version_names_minitapes_own_version():
    # The Keras tutorials begin with ``print(tf.version.VERSION)``.
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert tf.version.VERSION == tf.__version__ == project["project"]["version"]
    assert tf.version.TENSORFLOW_VERSION == tf.tensorflow_version
