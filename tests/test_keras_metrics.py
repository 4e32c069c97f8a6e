"""mt.keras.metrics (issue 32): TensorFlow's documented values, several update_state calls,
reset_state, sample weights, subclassing Metric, and the metrics of compile/fit/evaluate."""

import numpy as np
import pytest

import minitape as mt

M = mt.keras.metrics


def result(metric):
    value = metric.result()
    assert isinstance(value, mt.Tensor) and value.dtype == mt.float32
    return value.numpy()


# -- the values of Keras's docstrings (keras/src/metrics/*.py), after reset_state too ---------

@pytest.mark.parametrize("make, args, expected, weights, weighted", [
    (M.Mean, ([1, 3, 5, 7],), 4.0, [1, 1, 0, 0], 2.0),
    (M.Sum, ([1, 3, 5, 7],), 16.0, [1, 1, 0, 0], 4.0),
    (M.Accuracy, ([[1], [2], [3], [4]], [[0], [2], [3], [4]]), 0.75, [1, 1, 0, 0], 0.5),
    (M.BinaryAccuracy, ([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]]), 0.75,
     [1, 0, 0, 1], 0.5),
    (M.CategoricalAccuracy, ([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]),
     0.5, [0.7, 0.3], 0.3),
    (M.SparseCategoricalAccuracy, ([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]]), 0.5,
     [0.7, 0.3], 0.3),
    (M.Precision, ([0, 1, 1, 1], [1, 0, 1, 1]), 2 / 3, [0, 0, 1, 0], 1.0),
    (M.Recall, ([0, 1, 1, 1], [1, 0, 1, 1]), 2 / 3, [0, 0, 1, 0], 1.0),
    (M.MeanSquaredError, ([[0, 1], [0, 0]], [[1, 1], [0, 0]]), 0.25, [1, 0], 0.5),
    (M.MeanAbsoluteError, ([[0, 1], [0, 0]], [[1, 1], [0, 0]]), 0.25, [1, 0], 0.5),
    (M.CategoricalCrossentropy, ([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]]),
     1.1769392, [0.3, 0.7], 1.6271976),
    (M.SparseCategoricalCrossentropy, ([1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]]),
     1.1769392, [0.3, 0.7], 1.6271976),
])
def test_documented_values_with_and_without_sample_weight(make, args, expected, weights,
                                                          weighted):
    m = make()
    m.update_state(*args)
    assert result(m) == pytest.approx(expected, rel=1e-6)
    m.reset_state()
    assert all(not v.numpy().any() for v in m.variables)
    m.update_state(*args, sample_weight=weights)
    assert result(m) == pytest.approx(weighted, rel=1e-6)


def test_precision_top_k_as_documented():
    m = M.Precision(top_k=2)
    m.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    assert result(m) == 0.0
    m = M.Precision(top_k=4)
    m.update_state([0, 0, 1, 1], [1, 1, 1, 1])
    assert result(m) == 0.5


def test_results_accumulate_over_several_update_state_calls():
    mean = M.Mean()
    mean.update_state([1.0, 2.0])
    mean.update_state(3.0)
    mean.update_state([[4.0, 6.0]])        # one sample: its values are averaged first
    assert result(mean) == pytest.approx((1 + 2 + 3 + 5) / 4)
    assert mean.count.numpy() == 4.0

    # Precision counts over all batches, then divides once (not a mean of per-batch values).
    y_true = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    y_pred = np.array([0.9, 0.8, 0.4, 0.7, 0.1, 0.6, 0.2, 0.3])
    precision, recall = M.Precision(), M.Recall()
    for start in (0, 3, 5):
        batch = slice(start, {0: 3, 3: 5, 5: 8}[start])
        precision.update_state(y_true[batch], y_pred[batch])
        recall.update_state(y_true[batch], y_pred[batch])
    predicted = y_pred > 0.5
    tp = np.sum(predicted & (y_true == 1))
    assert result(precision) == pytest.approx(tp / predicted.sum())
    assert result(recall) == pytest.approx(tp / (y_true == 1).sum())

    accuracy = M.SparseCategoricalAccuracy()
    accuracy.update_state([0, 1], [[0.9, 0.1], [0.8, 0.2]])     # 1 of 2
    accuracy.update_state([1], [[0.3, 0.7]])                    # 1 of 1
    assert result(accuracy) == pytest.approx(2 / 3)


def test_thresholds_list_gives_one_value_per_threshold_and_empty_metric_is_zero():
    m = M.Precision(thresholds=[0.0, 0.5, 0.95])
    assert result(m).tolist() == [0.0, 0.0, 0.0]            # 0/0 is 0 (divide_no_nan)
    m.update_state([1, 0, 1, 0], [0.9, 0.6, 0.3, 0.1])
    assert result(m) == pytest.approx([0.5, 0.5, 0.0])
    assert result(M.Mean()) == 0.0


def test_call_is_update_then_result_and_the_default_names():
    m = M.Mean()
    assert float(m([2.0, 4.0])) == 3.0 and float(m(6.0)) == 4.0
    assert (M.Mean().name, M.Accuracy().name, M.Precision().name.startswith("precision"),
            M.SparseCategoricalAccuracy().name) == \
        ("mean", "accuracy", True, "sparse_categorical_accuracy")
    assert M.BinaryAccuracy(threshold=0.7).get_config()["threshold"] == 0.7
    assert repr(M.Mean(name="train_loss")) == "<Mean name=train_loss>"


def test_a_metric_subclass_as_keras_documents_it():
    class BinaryTruePositives(M.Metric):
        def __init__(self, name="binary_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_weight(name="tp", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            values = mt.cast(y_true, mt.float32) * mt.cast(y_pred, mt.float32)
            self.true_positives.assign_add(mt.reduce_sum(values))

        def result(self):
            return self.true_positives

    m = BinaryTruePositives()
    m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    m.update_state([1], [1])
    assert float(m.result()) == 3.0
    assert [v.trainable for v in m.variables] == [False]
    m.reset_state()
    assert float(m.result()) == 0.0

    class Forgot(M.Metric):
        def __init__(self):
            self.total = self.add_weight(name="total")

    with pytest.raises(RuntimeError, match="super\\(\\).__init__"):
        Forgot()
    with pytest.raises(NotImplementedError, match="update_state"):
        M.Metric().update_state(1.0)


def test_get_and_bad_input():
    assert isinstance(M.get("precision"), M.Precision)
    assert isinstance(M.get("SparseCategoricalAccuracy"), M.SparseCategoricalAccuracy)
    assert M.get("mse") is mt.keras.losses.mean_squared_error and M.get(None) is None
    with pytest.raises(ValueError, match="unknown metric 'bogus'"):
        M.get("bogus")
    with pytest.raises(TypeError, match="expected numbers"):
        M.Mean().update_state("abc")
    with pytest.raises(ValueError, match="thresholds"):
        M.Precision(thresholds=1.5)
    with pytest.raises(ValueError, match="must match"):
        M.Recall().update_state([0, 1], [0.1, 0.2, 0.3])


# -- compile(metrics=[...]) with fit and evaluate ----------------------------------------------

def classifier(seed=0):
    mt.keras.utils.set_random_seed(seed)
    return mt.keras.Sequential([mt.keras.layers.Dense(3, activation="softmax", input_shape=(2,))])


@pytest.mark.parametrize("labels, expected", [
    (np.array([0, 1, 2, 1, 0, 2]), "SparseCategoricalAccuracy"),
    (np.eye(3)[[0, 1, 2, 1, 0, 2]], "CategoricalAccuracy"),
])
def test_accuracy_string_is_chosen_from_the_shapes_and_evaluate_accumulates(labels, expected):
    x = np.random.default_rng(1).normal(size=(6, 2)).astype(np.float32)
    model = classifier()
    loss = "sparse_categorical_crossentropy" if labels.ndim == 1 else "categorical_crossentropy"
    model.compile(optimizer="sgd", loss=loss, metrics=["accuracy", "precision"]
                  if labels.ndim == 2 else ["accuracy"])
    logs = model.evaluate(x, labels, batch_size=4, verbose=0, return_dict=True)
    assert type(model.compiled_metrics[0]).__name__ == expected
    assert model.compiled_metrics[0].name == "accuracy"
    probs = model.predict(x, verbose=0)
    true = labels if labels.ndim == 1 else labels.argmax(-1)
    assert logs["accuracy"] == pytest.approx(np.mean(probs.argmax(-1) == true))
    if labels.ndim == 2:   # precision over the whole data, not a mean over the two batches
        predicted = probs > 0.5
        tp = np.sum(predicted & (labels == 1))
        assert logs["precision"] == pytest.approx(tp / max(predicted.sum(), 1))
    # each evaluate starts from reset metrics
    assert model.evaluate(x, labels, batch_size=4, verbose=0, return_dict=True) == logs
    assert model.metrics_names == ["loss"] + [m.name for m in model.compiled_metrics]


def test_binary_accuracy_and_metric_objects_in_fit_history():
    x = np.array([[1.0], [2.0], [-1.0], [-2.0]], np.float32)
    y = np.array([1.0, 1.0, 0.0, 0.0], np.float32)
    mt.keras.utils.set_random_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=mt.keras.optimizers.SGD(0.5), loss="binary_crossentropy",
                  metrics=["acc", M.Recall(name="rec"), M.MeanAbsoluteError()])
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0, shuffle=False)
    assert list(history.history) == ["loss", "acc", "rec", "mean_absolute_error"]
    assert type(model.compiled_metrics[0]).__name__ == "BinaryAccuracy"
    # one batch per epoch: the logs are that step's metrics on the predictions before it
    assert all(isinstance(v, float) for v in history.history["acc"])


def test_train_step_returning_a_dict_as_keras_custom_training_guide():
    class Custom(mt.keras.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = mt.keras.layers.Dense(1)
            self.loss_tracker = M.Mean(name="loss")
            self.mae_metric = M.MeanAbsoluteError(name="mae")

        def call(self, x):
            return self.dense(x)

        @property
        def metrics(self):
            return [self.loss_tracker, self.mae_metric]

        def train_step(self, data):
            x, y = data
            with mt.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = mt.reduce_mean(mt.square(y_pred - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    model = Custom()
    model.compile(optimizer="sgd")
    x = np.ones((8, 2), np.float32)
    history = model.fit(x, np.ones((8, 1), np.float32), batch_size=4, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "mae"}
    assert model.loss_tracker.count.numpy() == 2.0     # reset at the start of each epoch
    assert not any(v is model.loss_tracker.total for v in model.variables)
