"""``mt.viz.TrainingView`` driven without a browser: its history, panels and static page."""

import re
from html.parser import HTMLParser

import numpy as np
import pytest

import minitape as mt
from minitape.viz import TrainingView

X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.5, 0.2]], np.float32)
Y = np.array([[1.0], [1.0], [0.0], [0.0], [1.0]], np.float32)


def linear():
    return mt.layers.Dense(1, kernel_initializer="zeros", name="lin")


def by_hand(steps, lr):
    """Full-batch gradient descent on the mean squared error of x @ w + b, in float64."""
    x, y = X.astype(np.float64), Y.astype(np.float64)
    w, b = np.zeros((2, 1)), np.zeros(1)
    losses, kernel_norms, bias_norms = [], [], []
    for _ in range(steps):
        r = x @ w + b - y
        losses.append(np.mean(r**2))
        gw, gb = 2 * x.T @ r / len(x), 2 * r.sum(axis=0) / len(x)
        kernel_norms.append(np.linalg.norm(gw))
        bias_norms.append(np.linalg.norm(gb))
        w, b = w - lr * gw, b - lr * gb
    return losses, kernel_norms, bias_norms


def test_history_grows_by_one_per_step_and_matches_a_loss_by_hand():
    view = TrainingView(linear(), X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1),
                        redraw_every=100)
    for k in range(1, 4):
        view.step()
        assert len(view.history["loss"]) == k == view.steps
        assert len(view.history["grad_norm"]["lin/kernel"]) == k
    view.step(2)
    losses, gk, gb = by_hand(5, 0.1)
    np.testing.assert_allclose(view.history["loss"], losses, rtol=1e-5)
    np.testing.assert_allclose(view.history["grad_norm"]["lin/kernel"], gk, rtol=1e-5)
    np.testing.assert_allclose(view.history["grad_norm"]["lin/bias"], gb, rtol=1e-5)
    assert view.history["val_loss"] == []


def test_validation_loss_is_the_loss_on_the_validation_data():
    xv, yv = X[:2], Y[:2]
    model = linear()
    view = TrainingView(model, X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1),
                        validation_data=(xv, yv))
    view.step(2)
    w, b = model.kernel.numpy().astype(np.float64), model.bias.numpy().astype(np.float64)
    assert view.history["val_loss"][-1] == pytest.approx(np.mean((xv @ w + b - yv) ** 2),
                                                         rel=1e-5)


@pytest.mark.parametrize("make", [
    lambda: mt.optimizers.SGD(0.1),
    lambda: mt.optimizers.SGD(0.1, momentum=0.9),
    lambda: mt.optimizers.Adam(0.05),
])
def test_the_optimizer_panel_shows_the_optimizer_slots_and_the_step_taken(make):
    opt = make()
    model = linear()
    view = TrainingView(model, X, Y, loss="mse", optimizer=opt, redraw_every=100)
    view.step(2)
    before = model.kernel.numpy().copy()
    view.step()
    taken = model.kernel.numpy() - before
    state = view.optimizer_state["lin/kernel"]
    assert state["step"] == pytest.approx(np.linalg.norm(taken), rel=1e-6)
    assert state["lr"] == pytest.approx(float(opt.learning_rate.numpy()))
    g = view.history["grad_norm"]["lin/kernel"][-1]
    assert state["effective_lr"] == pytest.approx(np.linalg.norm(taken) / g, rel=1e-5)
    slots = {v.path: v.numpy() for v in opt.variables if v.path.endswith("/lin/kernel")}
    if isinstance(opt, mt.optimizers.Adam):
        assert set(state) == {"lr", "step", "effective_lr", "m", "v"}
        assert state["m"] == pytest.approx(np.linalg.norm(slots["adam/m/lin/kernel"]))
        assert state["v"] == pytest.approx(np.linalg.norm(slots["adam/v/lin/kernel"]))
    elif opt.momentum:
        assert state["momentum"] == pytest.approx(
            np.linalg.norm(slots["SGD/momentum/lin/kernel"]))
        # with momentum the step taken is the momentum slot itself (w = w + v)
        np.testing.assert_allclose(taken, slots["SGD/momentum/lin/kernel"], rtol=1e-5,
                                   atol=1e-7)
    else:
        assert set(state) == {"lr", "step", "effective_lr"}
        assert state["effective_lr"] == pytest.approx(0.1, rel=1e-5)   # plain SGD: lr
    html = view._tables_html()
    assert f"{state['step']:.4g}" in html and f"{state['effective_lr']:.4g}" in html


def test_callback_and_record_give_the_same_history_as_step():
    def keras_model():
        return mt.keras.Sequential([mt.keras.layers.Dense(1, kernel_initializer="zeros",
                                                          name="lin")])

    by_step = TrainingView(keras_model(), X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1),
                           redraw_every=100)
    by_step.step(4)

    model = keras_model()
    model.compile(optimizer=mt.optimizers.SGD(0.1), loss="mse")
    by_fit = TrainingView(model, X, Y, redraw_every=100)
    model.fit(X, Y, batch_size=len(X), epochs=4, shuffle=False, verbose=0,
              callbacks=[by_fit.callback()])

    model = keras_model()
    opt = mt.optimizers.SGD(0.1)
    by_loop = TrainingView(model, X, Y, loss="mse", optimizer=opt, redraw_every=100)
    for _ in range(4):
        with mt.GradientTape() as tape:
            loss = mt.reduce_mean(mt.square(mt.constant(Y) - model(mt.constant(X))))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        by_loop.record(tape, loss)

    for other in (by_fit, by_loop):
        assert other.steps == 4
        np.testing.assert_allclose(other.history["loss"], by_step.history["loss"], rtol=1e-6)
        assert other.history["grad_norm"].keys() == by_step.history["grad_norm"].keys()
        for k, v in by_step.history["grad_norm"].items():
            np.testing.assert_allclose(other.history["grad_norm"][k], v, rtol=1e-6)
        assert other.optimizer_state.keys() == by_step.optimizer_state.keys()


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.frames, self.urls, self.inputs = 0, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and "frame" in (attrs.get("class") or ""):
            self.frames += 1
        if tag == "input":
            self.inputs.append(attrs)
        for name in ("src", "href", "xlink:href", "action"):
            if attrs.get(name):
                self.urls.append(attrs[name])


def test_to_html_is_one_self_contained_page_with_a_frame_per_step(tmp_path):
    view = TrainingView(linear(), X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1))
    view.step(3)
    page = view.to_html()
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.frames == 3 == len(view.frames)
    assert [i.get("type") for i in parser.inputs] == ["range"]
    assert parser.inputs[0]["max"] == "2"
    assert parser.urls and all(u.startswith("data:") or u.startswith("#") for u in parser.urls)
    assert "<script src" not in page
    # the only URLs left are SVG's namespace names, which no browser fetches
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    view.save_html(tmp_path / "run.html")
    assert (tmp_path / "run.html").read_text(encoding="utf-8") == page
    # redraw every 2 steps: a frame at steps 2 and 4
    view = TrainingView(linear(), X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1),
                        redraw_every=2)
    view.step(5)
    assert [f.step for f in view.frames] == [2, 4]


def test_the_notebook_output_is_the_widget_and_its_static_html():
    view = TrainingView(linear(), X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1))
    view.step(2)
    bundle, metadata = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert metadata == {"minitape": {"static_fallback": "text/html"}}   # (pre_save_hook)
    static = bundle["text/html"]
    assert "step 2" in static and "data:image/png;base64," in static and "<svg" in static
    assert "<script" not in static


def test_the_decision_boundary_moves_as_the_model_learns():
    mt.random.set_seed(0)
    model = mt.layers.Sequential([mt.layers.Dense(8, activation="tanh"),
                                  mt.layers.Dense(1, activation="sigmoid")])
    view = TrainingView(model, X, Y, loss="binary_crossentropy",
                        optimizer=mt.optimizers.Adam(0.1))
    before = view.boundary.copy()
    assert before.shape == (60, 60, 1)
    view.step(3)
    assert np.abs(view.boundary - before).max() > 1e-3
    # the grid's outputs are the model's own
    grid = view._grid[:5]
    np.testing.assert_allclose(view.boundary.reshape(-1, 1)[:5], model(grid).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_one_feature_gives_a_regression_curve():
    x = np.linspace(-1, 1, 20, dtype=np.float32)[:, None]
    view = TrainingView(mt.layers.Dense(1), x, 2 * x, loss="mse",
                        optimizer=mt.optimizers.SGD(0.1))
    view.step(2)
    assert view.boundary.shape == (200, 1)


def test_bad_input_is_refused_at_once():
    with pytest.raises(ValueError, match="x has 5 samples but y has 2"):
        TrainingView(linear(), X, Y[:2], loss="mse", optimizer="sgd")
    with pytest.raises(ValueError, match="needs a loss"):
        TrainingView(linear(), X, Y, optimizer="sgd")
    with pytest.raises(ValueError, match="needs an optimizer"):
        TrainingView(linear(), X, Y, loss="mse")
    with pytest.raises(TypeError, match="must be callable"):
        TrainingView(3, X, Y, loss="mse", optimizer="sgd")
    view = TrainingView(linear(), X, Y, loss="mse", optimizer="sgd")
    with pytest.raises(TypeError, match="GradientTape"):
        view.record("tape", 1.0)
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(view.model(mt.constant(X)))
    with pytest.raises(ValueError, match="has not computed any gradient"):
        view.record(tape, loss)


def test_mini_batches_cover_the_data_each_epoch():
    mt.random.set_seed(1)
    view = TrainingView(linear(), X, Y, loss="mse", optimizer=mt.optimizers.SGD(0.1),
                        batch_size=2, redraw_every=100)
    seen = []
    for _ in range(3):
        xb, _ = view._next_batch()
        seen += [tuple(r) for r in xb.numpy()]
    assert sorted(seen) == sorted(tuple(r) for r in X)


def test_the_redraw_benchmark_runs():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import workloads
    result = workloads.WORKLOADS["training_view"](["numpy", "minitape"], repeats=1, quick=True)
    (row,) = result["rows"]
    assert row["values"]["minitape"] > 0 and row["cpu_ms"] > 0


def test_fit_calls_keras_callbacks_in_keras_order():
    calls = []

    class Log(mt.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            calls.append(("train_begin", self.params["epochs"], self.params["steps"]))

        def on_epoch_begin(self, epoch, logs=None):
            calls.append(("epoch_begin", epoch))

        def on_train_batch_begin(self, batch, logs=None):
            calls.append(("batch_begin", batch))

        def on_train_batch_end(self, batch, logs=None):
            calls.append(("batch_end", batch, sorted(logs)))

        def on_epoch_end(self, epoch, logs=None):
            calls.append(("epoch_end", epoch, sorted(logs)))

        def on_train_end(self, logs=None):
            calls.append(("train_end",))

    model = mt.keras.Sequential([mt.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    log = Log()
    history = model.fit(X, Y, batch_size=3, epochs=2, verbose=0, callbacks=[log],
                        validation_data=(X, Y))
    assert log.model is model
    batch = [("batch_begin", 0), ("batch_end", 0, ["loss"]),
             ("batch_begin", 1), ("batch_end", 1, ["loss"])]
    assert calls == ([("train_begin", 2, 2)]
                     + [("epoch_begin", 0)] + batch + [("epoch_end", 0, ["loss", "val_loss"])]
                     + [("epoch_begin", 1)] + batch + [("epoch_end", 1, ["loss", "val_loss"])]
                     + [("train_end",)])
    assert len(history.history["loss"]) == 2
    tape, loss = model.last_train_step
    assert isinstance(tape, mt.GradientTape) and loss.shape == ()
