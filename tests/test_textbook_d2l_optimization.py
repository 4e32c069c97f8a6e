# ruff: noqa: E111, E117, E701, E703, E731, E741, F541, F811  (the book's code as printed: two-space indents, one-line ifs, semicolons, lambdas, l, an f-string, redefined functions)
"""The TensorFlow code of "Dive into Deep Learning" (d2l.ai) chapter 12, optimization
algorithms, run with ``import minitape as tf``: one test per section, the section's code as
printed in its TensorFlow tab (and its ``#@tab all`` blocks), only the import switched.

``tests/d2l_minitape_ch12.py`` is the d2l library as the chapter has it (chapters 3-8's
``tests/d2l_minitape.py`` plus what chapter 12 adds). The airfoil data (``DATA_HUB['airfoil']``,
1503 rows of 6 tab-separated numbers) is replaced by a smaller synthetic file of the same
format (500 rows: every run of the chapter takes a third of the time) in a temporary
``../data``, which d2l's own ``download`` finds in its cache (its SHA-1 registered);
where the section registers the real file's SHA-1 again, the "download" is served from the same
synthetic bytes (``requests.get`` stands in for the network). Fashion-MNIST (12.11) is the
synthetic Keras cache of ``tests/test_textbook_d2l.py``.

Numbers are checked against independent values: what the book prints where it is
deterministic (closed forms: ``10 * 0.6**10`` for ``gd(0.2, f_grad)``, Newton's iterates in
float64); and every training run is replayed in NumPy float64 on the very batches it saw,
from the same initial weights, with the update rules written from the book's equations (the
scratch optimizers) or from Keras 3's documented rules (``train_concise_ch11`` with
``tf.keras.optimizers``): the final weights must agree. The last part tests, one by one, the
fixes the chapter needed in minitape.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
import types

import numpy as np
import pytest
import requests

import d2l_minitape_ch12 as d2l
import minitape as tf
from test_textbook_d2l import _no_rendering, write_fashion_mnist  # noqa: F401

plt = d2l.plt


@pytest.fixture(autouse=True)
def _no_animation(monkeypatch):
    """``Animator.add`` draws its figure as the book's; only showing it (IPython rendering an
    SVG at every point) is left out, as ``_no_rendering`` does for the ProgressBoard."""
    monkeypatch.setattr(d2l, "display", types.SimpleNamespace(
        display=lambda *args, **kwargs: None, clear_output=lambda *args, **kwargs: None))


# -- helpers: synthetic airfoil data, recording the training runs, NumPy replays -------------

AIRFOIL_URL = d2l.DATA_URL + 'airfoil_self_noise.dat'


def airfoil_bytes(n=500, seed=0):
    """NASA's airfoil self-noise table as d2l downloads it, synthetic: ``n`` rows of 6
    tab-separated numbers (frequency, angle, chord, velocity, thickness, sound pressure in dB),
    in the real columns' ranges; the last column is linear in the others plus noise, about
    half of its variance explained (as a linear fit of the real table: loss ~0.25)."""
    rng = np.random.default_rng(seed)
    features = np.column_stack([
        rng.choice([200, 250, 315, 400, 500, 630, 800, 1000, 1250, 1600, 2000, 2500, 3150,
                    4000, 5000, 6300, 8000, 10000, 12500, 16000, 20000], n),
        rng.uniform(0, 22.2, n).round(1),
        rng.choice([0.0254, 0.0508, 0.1016, 0.1524, 0.2286, 0.3048], n),
        rng.choice([31.7, 39.6, 55.5, 71.3], n),
        rng.uniform(0.0004, 0.058, n).round(6)])
    z = (features - features.mean(0)) / features.std(0)
    sound = 125 + z @ [-4.0, -2.5, -3.5, 2.0, -1.5] + rng.normal(0, 6.0, n)
    table = np.column_stack([features, sound.round(3)])
    return "".join("\t".join(f"{v:g}" for v in row) + "\n" for row in table).encode()


class Recorder:
    """Installed as ``d2l.load_array``: the Dataset it returns keeps the batches of every
    training pass over it, the passes not nested in another (``evaluate_loss`` runs its own
    passes inside the training loop's). ``scratch`` / ``concise`` wrap ``train_ch11`` /
    ``train_concise_ch11`` to keep each run's initial and final weights and its batches."""

    def __init__(self, load_array):
        self.load_array = load_array
        self.passes = []
        self.runs = []
        self._depth = 0

    def __call__(self, data_arrays, batch_size, is_train=True):
        dataset = self.load_array(data_arrays, batch_size, is_train)

        def iterate():
            outer = self._depth == 0
            self._depth += 1
            batches = []
            if outer:
                self.passes.append(batches)
            try:
                for X, y in dataset:
                    if outer:
                        batches.append((X.numpy().astype(np.float64),
                                        y.numpy().astype(np.float64)))
                    yield X, y
            finally:
                self._depth -= 1
        return tf.data.Dataset(iterate, len(dataset))

    def _run(self, train, keep, *args, **kwargs):
        run = types.SimpleNamespace(initial=None, variables=None)
        start = len(self.passes)
        result = train(*keep(run, args), **kwargs)
        run.batches = [batch for one_pass in self.passes[start:] for batch in one_pass]
        run.final = [v.numpy() for v in run.variables]
        self.runs.append(run)
        return result

    def scratch(self, train_ch11):
        def keep(run, args):
            trainer_fn, states, hyperparams, *rest = args
            run.hyperparams = dict(hyperparams)

            def recording(params, grads, states, hyperparams):
                if run.initial is None:
                    run.initial = [p.numpy().astype(np.float64) for p in params]
                    run.variables = list(params)
                return trainer_fn(params, grads, states, hyperparams)
            return (recording, states, hyperparams, *rest)
        return lambda *args, **kwargs: self._run(train_ch11, keep, *args, **kwargs)

    def concise(self, train_concise_ch11):
        def keep(run, args):
            trainer_fn, hyperparams, *rest = args
            run.hyperparams = dict(hyperparams)

            def make(**kwargs):
                optimizer = trainer_fn(**kwargs)
                apply = optimizer.apply_gradients

                def recording(grads_and_vars):
                    pairs = list(grads_and_vars)
                    if run.initial is None:
                        run.initial = [v.numpy().astype(np.float64) for _, v in pairs]
                        run.variables = [v for _, v in pairs]
                    return apply(pairs)
                optimizer.apply_gradients = recording
                run.optimizer = optimizer
                return optimizer
            return (make, hyperparams, *rest)
        return lambda *args, **kwargs: self._run(train_concise_ch11, keep, *args, **kwargs)


@pytest.fixture
def airfoil(tmp_path, monkeypatch):
    """``../data/airfoil_self_noise.dat`` (synthetic) in d2l's cache, registered in
    ``DATA_HUB`` with its SHA-1; ``requests.get`` serves the same bytes for the real URL and
    refuses any other. ``d2l.load_array``, ``d2l.train_ch11`` and ``d2l.train_concise_ch11``
    record what they do (see ``Recorder``); returns the Recorder, with ``.table`` the whole
    table in float64."""
    content = airfoil_bytes()
    (tmp_path / "data").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "data" / "airfoil_self_noise.dat").write_bytes(content)
    monkeypatch.chdir(tmp_path / "work")   # (d2l's folder is '../data')
    monkeypatch.setitem(d2l.DATA_HUB, 'airfoil',
                        (AIRFOIL_URL, hashlib.sha1(content).hexdigest()))

    def get(url, **kwargs):
        assert url == AIRFOIL_URL, f"no network in the tests: {url}"
        return types.SimpleNamespace(content=content)
    monkeypatch.setattr(requests, "get", get)
    rec = Recorder(d2l.load_array)
    monkeypatch.setattr(d2l, "load_array", rec)
    monkeypatch.setattr(d2l, "train_ch11", rec.scratch(d2l.train_ch11))
    monkeypatch.setattr(d2l, "train_concise_ch11", rec.concise(d2l.train_concise_ch11))
    rec.table = np.loadtxt(tmp_path / "data" / "airfoil_self_noise.dat")
    return rec


def standardized(table, n=1500):
    """``get_data_ch11``'s features and labels, in float64 (all 500 rows: ``n`` is 1500)."""
    data = (table - table.mean(0)) / table.std(0)
    return data[:n, :-1], data[:n, -1]


def half_mse(params, X, y):
    """The mean of ``(X w + b - y)**2 / 2``: ``evaluate_loss`` with ``squared_loss``."""
    w, b = params
    return float(np.mean((X @ w.reshape(-1) + b[0] - y) ** 2) / 2)


def linreg_grads(params, X, y, scale=1.0):
    """Gradients of ``scale * mean((X w + b - y)**2 / 2)`` (scale 2: Keras's MSE)."""
    w, b = params
    r = (X @ w + b - y[:, None]) * scale / len(X)
    return [X.T @ r, r.sum(0)]


def replay(run, step, scale=1.0):
    """The run's training in float64: from its initial weights over its batches, each
    ``step(i, params, grads, state)`` (``i`` counts from 1) updating ``params`` in place."""
    params = [p.copy() for p in run.initial]
    state = {}
    for i, (X, y) in enumerate(run.batches, start=1):
        step(i, params, linreg_grads(params, X, y, scale), state)
    return params


def assert_final(run, expected, rtol=1e-4, atol=2e-5):
    assert [f.shape for f in run.final] == [e.shape for e in expected]
    for got, want in zip(run.final, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def printed_loss(out):
    """The losses of ``train_ch11``'s last lines, ``loss: 0.245, 0.030 sec/epoch``."""
    return [float(v) for v in re.findall(r"^loss: (\d\.\d{3}), \d+\.\d{3} sec/epoch$", out, re.M)]


def check_run(run, table, expected, out_loss):
    """The final weights are ``expected`` (the replay) and the printed loss is the loss of
    the replayed weights on the 500 examples (``train_concise_ch11`` prints MSE / 2)."""
    assert_final(run, expected)
    X, y = standardized(table)
    assert out_loss == pytest.approx(half_mse(expected, X, y), abs=5.1e-4)   # (3 decimals)


# Keras 3's update rules (keras/src/optimizers/*.py), one step for every weight, in float64.

def keras_sgd(lr, momentum=0.0):
    def step(i, params, grads, state):
        for k, (p, g) in enumerate(zip(params, grads)):
            if momentum:
                v = state[k] = momentum * state.get(k, 0.0) - lr * g
                p += v
            else:
                p -= lr * g
    return step


def keras_adagrad(lr, initial_accumulator_value=0.1, epsilon=1e-7):
    def step(i, params, grads, state):
        for k, (p, g) in enumerate(zip(params, grads)):
            s = state[k] = state.get(k, initial_accumulator_value) + g * g
            p -= lr * g / np.sqrt(s + epsilon)
    return step


def keras_rmsprop(lr, rho=0.9, epsilon=1e-7):
    def step(i, params, grads, state):
        for k, (p, g) in enumerate(zip(params, grads)):
            v = state[k] = rho * state.get(k, 0.0) + (1 - rho) * g * g
            p -= lr * g / np.sqrt(v + epsilon)
    return step


def keras_adadelta(lr, rho=0.95, epsilon=1e-7):
    def step(i, params, grads, state):
        for k, (p, g) in enumerate(zip(params, grads)):
            s, d = state.get(k, (0.0, 0.0))
            s = rho * s + (1 - rho) * g * g
            delta = np.sqrt(d + epsilon) / np.sqrt(s + epsilon) * g
            d = rho * d + (1 - rho) * delta * delta
            state[k] = (s, d)
            p -= lr * delta
    return step


def keras_adam(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    def step(i, params, grads, state):
        for k, (p, g) in enumerate(zip(params, grads)):
            m, v = state.get(k, (0.0, 0.0))
            m = m + (g - m) * (1 - beta_1)
            v = v + (g * g - v) * (1 - beta_2)
            state[k] = (m, v)
            alpha = lr * math.sqrt(1 - beta_2 ** i) / (1 - beta_1 ** i)
            p -= alpha * m / (np.sqrt(v) + epsilon)
    return step


def concise_weights(run):
    """The Dense layer's ``[kernel (5, 1), bias (1,)]``, as ``linreg``'s ``[w, b]``."""
    assert [v.shape for v in run.variables] == [(5, 1), (1,)]
    return run


def line_data(ax=None):
    ax = ax or plt.gca()
    return [(np.asarray(line.get_xdata(), np.float64), np.asarray(line.get_ydata(), np.float64))
            for line in ax.get_lines()]


# == 12.1 Optimization and deep learning ====================================================

def test_12_1_optimization_and_deep_learning():
    from mpl_toolkits import mplot3d  # noqa: F401

    def f(x):
        return x * d2l.cos(np.pi * x)

    def g(x):
        return f(x) + 0.2 * d2l.cos(5 * np.pi * x)

    def annotate(text, xy, xytext):  #@save
        d2l.plt.gca().annotate(text, xy=xy, xytext=xytext,
                               arrowprops=dict(arrowstyle='->'))

    x = d2l.arange(0.5, 1.5, 0.01)
    d2l.set_figsize((4.5, 2.5))
    d2l.plot(x, [f(x), g(x)], 'x', 'risk')
    annotate('min of\nempirical risk', (1.0, -1.2), (0.5, -1.1))
    annotate('min of risk', (1.1, -1.05), (0.95, -0.5))
    (x1, risk), (x2, empirical) = line_data()
    xs = np.arange(0.5, 1.5, 0.01)
    assert x.dtype == tf.float32 and len(x1) == len(xs) == 100
    np.testing.assert_allclose(x1, xs, atol=2e-5)   # (tf.range: a running sum in float32)
    np.testing.assert_allclose(risk, x1 * np.cos(np.pi * x1), atol=1e-5)
    np.testing.assert_allclose(empirical, risk + 0.2 * np.cos(5 * np.pi * x1), atol=1e-5)
    assert [t.get_text() for t in plt.gca().texts] == ['min of\nempirical risk', 'min of risk']

    x = d2l.arange(-1.0, 2.0, 0.01)
    d2l.plot(x, [f(x), ], 'x', 'f(x)')
    annotate('local minimum', (-0.3, -0.25), (-0.77, -1.0))
    annotate('global minimum', (1.1, -0.95), (0.6, 0.8))
    (xs, ys), = line_data()
    # the annotated minima: a local one near -0.3, the global one near 1.1
    assert xs[np.argmin(ys)] == pytest.approx(1.1, abs=0.02)
    left = xs < 0.2
    assert xs[left][np.argmin(ys[left])] == pytest.approx(-0.3, abs=0.05)

    x = d2l.arange(-2.0, 2.0, 0.01)
    d2l.plot(x, [x**3], 'x', 'f(x)')
    annotate('saddle point', (0, -0.2), (-0.52, -5.0))
    (xs, ys), = line_data()
    np.testing.assert_allclose(ys, xs ** 3, rtol=1e-5, atol=1e-6)

    x, y = d2l.meshgrid(
        d2l.linspace(-1.0, 1.0, 101), d2l.linspace(-1.0, 1.0, 101))
    z = x**2 - y**2

    ax = d2l.plt.figure().add_subplot(111, projection='3d')
    ax.plot_wireframe(x, y, z, **{'rstride': 10, 'cstride': 10})
    ax.plot([0], [0], [0], 'rx')
    ticks = [-1, 0, 1]
    d2l.plt.xticks(ticks)
    d2l.plt.yticks(ticks)
    ax.set_zticks(ticks)
    d2l.plt.xlabel('x')
    d2l.plt.ylabel('y');
    X, Y = np.meshgrid(np.linspace(-1, 1, 101), np.linspace(-1, 1, 101))
    np.testing.assert_allclose(z.numpy(), X ** 2 - Y ** 2, atol=1e-6)
    assert z.shape == (101, 101) and len(ax.collections) == 1

    x = d2l.arange(-2.0, 5.0, 0.01)
    d2l.plot(x, [d2l.tanh(x)], 'x', 'f(x)')
    annotate('vanishing gradient', (4, 1), (2, 0.0))
    (xs, ys), = line_data()
    np.testing.assert_allclose(ys, np.tanh(xs), atol=1e-6)


# == 12.2 Convexity ===========================================================================

def test_12_2_convexity():
    from mpl_toolkits import mplot3d  # noqa: F401

    f = lambda x: 0.5 * x**2  # Convex
    g = lambda x: d2l.cos(np.pi * x)  # Nonconvex
    h = lambda x: d2l.exp(0.5 * x)  # Convex

    x, segment = d2l.arange(-2, 2, 0.01), d2l.tensor([-1.5, 1])
    d2l.use_svg_display()
    _, axes = d2l.plt.subplots(1, 3, figsize=(9, 3))
    for ax, func in zip(axes, [f, g, h]):
        d2l.plot([x, segment], [func(x), func(segment)], axes=ax)

    # d2l.arange(-2, 2, 0.01): TensorFlow's range of an int and a float is float32, of
    # ceil(4 / 0.01) elements computed in float32 (400; float64 arithmetic would give 401)
    assert x.dtype == tf.float32 and x.shape == (400,) and segment.dtype == tf.float32
    xs = x.numpy().astype(np.float64)
    np.testing.assert_allclose(xs, np.arange(400) * 0.01 - 2, atol=1e-4)
    for ax, fn, convex in zip(axes, [lambda t: 0.5 * t ** 2, lambda t: np.cos(np.pi * t),
                                     lambda t: np.exp(0.5 * t)], [True, False, True]):
        (cx, cy), (sx, sy) = line_data(ax)
        np.testing.assert_allclose(cy, fn(xs), atol=1e-5)
        np.testing.assert_allclose(sx, [-1.5, 1.0])
        np.testing.assert_allclose(sy, fn(np.array([-1.5, 1.0])), rtol=1e-6, atol=1e-7)
        # the chord lies above the curve between its ends exactly for the convex functions
        inside = (xs > -1.5) & (xs < 1.0)
        chord = np.interp(xs[inside], sx, sy)
        assert bool(np.all(chord >= fn(xs[inside]) - 1e-9)) == convex

    f = lambda x: (x - 1) ** 2
    d2l.set_figsize()
    d2l.plot([x, segment], [f(x), f(segment)], 'x', 'f(x)')
    (cx, cy), (sx, sy) = line_data()
    np.testing.assert_allclose(cy, (xs - 1) ** 2, atol=1e-5)
    np.testing.assert_allclose(sy, [6.25, 0.0])


# == 12.3 Gradient descent ====================================================================

def test_12_3_gradient_descent(capsys):
    def f(x):  # Objective function
        return x ** 2

    def f_grad(x):  # Gradient (derivative) of the objective function
        return 2 * x

    def gd(eta, f_grad):
        x = 10.0
        results = [x]
        for i in range(10):
            x -= eta * f_grad(x)
            results.append(float(x))
        print(f'epoch 10, x: {x:f}')
        return results

    results = gd(0.2, f_grad)
    # x_{t+1} = (1 - 2 eta) x_t: 10 * 0.6**10, as the book prints
    assert capsys.readouterr().out == 'epoch 10, x: 0.060466\n'
    assert results[-1] == pytest.approx(10 * 0.6 ** 10, rel=1e-12)

    def show_trace(results, f):
        n = max(abs(min(results)), abs(max(results)))
        f_line = d2l.arange(-n, n, 0.01)
        d2l.set_figsize()
        d2l.plot([f_line, results], [[f(x) for x in f_line], [
            f(x) for x in results]], 'x', 'f(x)', fmts=['-', '-o'])

    show_trace(results, f)
    (lx, ly), (px, py) = line_data()
    np.testing.assert_allclose(ly, lx ** 2, rtol=1e-5, atol=1e-6)
    # tf.range(-10, 10, 0.01): 2000 elements, the last 9.990267 (a running sum in float32:
    # TensorFlow's CPU output, quoted in tensorflow/tensorflow#58133)
    assert len(lx) == 2000 and lx[0] == -10.0 and lx[-1] == pytest.approx(9.990267, abs=1e-6)
    np.testing.assert_allclose(py, np.asarray(results) ** 2)

    show_trace(gd(0.05, f_grad), f)
    assert capsys.readouterr().out == f'epoch 10, x: {10 * 0.9 ** 10:f}\n' == \
        'epoch 10, x: 3.486784\n'

    show_trace(gd(1.1, f_grad), f)
    assert capsys.readouterr().out == f'epoch 10, x: {10 * 1.2 ** 10:f}\n' == \
        'epoch 10, x: 61.917364\n'

    c = d2l.tensor(0.15 * np.pi)

    def f(x):  # Objective function
        return x * d2l.cos(c * x)

    def f_grad(x):  # Gradient of the objective function
        return d2l.cos(c * x) - c * x * d2l.sin(c * x)

    show_trace(gd(2, f_grad), f)
    # float64 replay of the iterates (x becomes a float32 Tensor after the first step)
    c64, x = np.float32(0.15 * np.pi).astype(np.float64), 10.0
    for _ in range(10):
        x -= 2 * (np.cos(c64 * x) - c64 * x * np.sin(c64 * x))
    out = capsys.readouterr().out
    assert re.fullmatch(r'epoch 10, x: -?\d+\.\d{6}\n', out), out
    assert float(out.split()[-1]) == pytest.approx(x, abs=2e-5)
    assert x == pytest.approx(-1.528165, abs=2e-6)    # the book's value

    def train_2d(trainer, steps=20, f_grad=None):  #@save
        """Optimize a 2D objective function with a customized trainer."""
        # `s1` and `s2` are internal state variables that will be used in Momentum, adagrad, RMSProp
        x1, x2, s1, s2 = -5, -2, 0, 0
        results = [(x1, x2)]
        for i in range(steps):
            if f_grad:
                x1, x2, s1, s2 = trainer(x1, x2, s1, s2, f_grad)
            else:
                x1, x2, s1, s2 = trainer(x1, x2, s1, s2)
            results.append((x1, x2))
        print(f'epoch {i + 1}, x1: {float(x1):f}, x2: {float(x2):f}')
        return results

    def show_trace_2d(f, results):  #@save
        """Show the trace of 2D variables during optimization."""
        d2l.set_figsize()
        d2l.plt.plot(*zip(*results), '-o', color='#ff7f0e')
        x1, x2 = d2l.meshgrid(d2l.arange(-5.5, 1.0, 0.1),
                              d2l.arange(-3.0, 1.0, 0.1))
        d2l.plt.contour(x1, x2, f(x1, x2), colors='#1f77b4')
        d2l.plt.xlabel('x1')
        d2l.plt.ylabel('x2')

    def f_2d(x1, x2):  # Objective function
        return x1 ** 2 + 2 * x2 ** 2

    def f_2d_grad(x1, x2):  # Gradient of the objective function
        return (2 * x1, 4 * x2)

    def gd_2d(x1, x2, s1, s2, f_grad):
        g1, g2 = f_grad(x1, x2)
        return (x1 - eta * g1, x2 - eta * g2, 0, 0)

    plt.figure()
    eta = 0.1
    show_trace_2d(f_2d, train_2d(gd_2d, f_grad=f_2d_grad))
    # x1 *= 0.8 and x2 *= 0.6 at each step
    assert capsys.readouterr().out == \
        f'epoch 20, x1: {-5 * 0.8 ** 20:f}, x2: {-2 * 0.6 ** 20:f}\n' == \
        'epoch 20, x1: -0.057646, x2: -0.000073\n'
    (tx, ty), = line_data()
    np.testing.assert_allclose(tx, -5 * 0.8 ** np.arange(21))
    assert len(plt.gca().collections) >= 1    # the contour lines
    g1, g2 = d2l.meshgrid(d2l.arange(-5.5, 1.0, 0.1), d2l.arange(-3.0, 1.0, 0.1))
    G1, G2 = np.meshgrid(np.arange(-5.5, 1.0, 0.1), np.arange(-3.0, 1.0, 0.1))
    assert g1.shape == G1.shape == (40, 65)
    np.testing.assert_allclose(f_2d(g1, g2).numpy(), G1 ** 2 + 2 * G2 ** 2, atol=1e-4)

    c = d2l.tensor(0.5)

    def f(x):  # Objective function
        return d2l.cosh(c * x)

    def f_grad(x):  # Gradient of the objective function
        return c * d2l.sinh(c * x)

    def f_hess(x):  # Hessian of the objective function
        return c**2 * d2l.cosh(c * x)

    def newton(eta=1):
        x = 10.0
        results = [x]
        for i in range(10):
            x -= eta * f_grad(x) / f_hess(x)
            results.append(float(x))
        print('epoch 10, x:', x)
        return results

    plt.figure()
    results = newton()
    show_trace(results, f)
    # x - tanh(x / 2) / (1 / 2): from 10 to the minimum 0 (quadratically once near it)
    x = 10.0
    for _ in range(10):
        x -= np.tanh(0.5 * x) / 0.5
    assert abs(x) < 1e-30
    assert capsys.readouterr().out == 'epoch 10, x: mt.Tensor(0.0, shape=(), dtype=float32)\n'
    assert results[1] == pytest.approx(10 - 2 * np.tanh(5.0), rel=1e-6)

    c = d2l.tensor(0.15 * np.pi)

    def f(x):  # Objective function
        return x * d2l.cos(c * x)

    def f_grad(x):  # Gradient of the objective function
        return d2l.cos(c * x) - c * x * d2l.sin(c * x)

    def f_hess(x):  # Hessian of the objective function
        return - 2 * c * d2l.sin(c * x) - x * c**2 * d2l.cos(c * x)

    def newton64(eta):
        x = 10.0
        for _ in range(10):
            x -= eta * ((np.cos(c64 * x) - c64 * x * np.sin(c64 * x))
                        / (-2 * c64 * np.sin(c64 * x) - x * c64 ** 2 * np.cos(c64 * x)))
        return x

    show_trace(newton(), f)
    out = capsys.readouterr().out
    value = float(re.fullmatch(r'epoch 10, x: mt\.Tensor\((\S+), shape=\(\), '
                               r'dtype=float32\)\n', out).group(1))
    assert value == pytest.approx(newton64(1), rel=1e-5)
    assert newton64(1) == pytest.approx(26.834133, abs=1e-5)     # the book's value

    show_trace(newton(0.5), f)
    out = capsys.readouterr().out
    value = float(re.search(r'mt\.Tensor\((\S+),', out).group(1))
    assert value == pytest.approx(newton64(0.5), rel=1e-5)
    assert newton64(0.5) == pytest.approx(7.26986, abs=1e-5)    # the book's value


# == 12.4 Stochastic gradient descent ========================================================

def test_12_4_stochastic_gradient_descent(capsys):
    global t   # (the book's t is a notebook global, which exponential_lr updates)

    def f(x1, x2):  # Objective function
        return x1 ** 2 + 2 * x2 ** 2

    def f_grad(x1, x2):  # Gradient of the objective function
        return 2 * x1, 4 * x2

    def sgd(x1, x2, s1, s2, f_grad):
        g1, g2 = f_grad(x1, x2)
        # Simulate noisy gradient
        g1 += d2l.normal([1], 0.0, 1)
        g2 += d2l.normal([1], 0.0, 1)
        eta_t = eta * lr()
        return (x1 - eta_t * g1, x2 - eta_t * g2, 0, 0)

    def replay64(seed, steps, lrs):
        """The same run in float64, with the same normal draws (the same seed)."""
        tf.random.set_seed(seed)
        noise = [float(d2l.normal([1], 0.0, 1)[0]) for _ in range(2 * steps)]
        x1, x2 = -5.0, -2.0
        for i, lr_i in zip(range(steps), lrs):
            eta_t = 0.1 * lr_i
            x1, x2 = x1 - eta_t * (2 * x1 + noise[2 * i]), x2 - eta_t * (4 * x2 + noise[2 * i + 1])
        return x1, x2

    def check(results, seed, steps, lrs):
        x1, x2 = replay64(seed, steps, lrs)
        out = capsys.readouterr().out
        match = re.fullmatch(rf'epoch {steps}, x1: (\S+), x2: (\S+)\n', out)
        assert match, out
        assert float(match.group(1)) == pytest.approx(x1, abs=2e-5)
        assert float(match.group(2)) == pytest.approx(x2, abs=2e-5)
        assert len(results) == steps + 1 and results[-1][0].shape == (1,)

    def traced(f, results):
        """``d2l.show_trace_2d(f, results)`` as printed fails with NumPy >= 1.24, in TensorFlow
        as here: the trace mixes the start, Python ints, with the iterates, Tensors of shape
        (1,) (``d2l.normal([1], ...)``), and ``plt.plot`` makes one array of them. NumPy
        arrays in their place fail alike. The trace is then plotted as floats."""
        with pytest.raises(ValueError, match="inhomogeneous"):
            d2l.show_trace_2d(f, results)
        with pytest.raises(ValueError, match="inhomogeneous"):
            plt.plot(*zip(*[(x1 if isinstance(x1, int) else np.asarray(x1),
                             x2 if isinstance(x2, int) else np.asarray(x2))
                            for x1, x2 in results]))
        d2l.show_trace_2d(f, [(float(x1), float(x2)) for x1, x2 in results])

    def constant_lr():
        return 1

    eta = 0.1
    lr = constant_lr  # Constant learning rate
    tf.random.set_seed(1)
    results = d2l.train_2d(sgd, steps=50, f_grad=f_grad)
    traced(f, results)          # d2l.show_trace_2d(f, d2l.train_2d(sgd, steps=50, f_grad=f_grad))
    check(results, 1, 50, [1] * 50)

    def exponential_lr():
        # Global variable that is defined outside this function and updated inside
        global t
        t += 1
        return math.exp(-0.1 * t)

    t = 1
    lr = exponential_lr
    tf.random.set_seed(2)
    results = d2l.train_2d(sgd, steps=1000, f_grad=f_grad)
    traced(f, results)
    check(results, 2, 1000, [math.exp(-0.1 * t) for t in range(2, 1002)])
    assert t == 1001

    def polynomial_lr():
        # Global variable that is defined outside this function and updated inside
        global t
        t += 1
        return (1 + 0.1 * t) ** (-0.5)

    t = 1
    lr = polynomial_lr
    tf.random.set_seed(3)
    results = d2l.train_2d(sgd, steps=50, f_grad=f_grad)
    traced(f, results)
    check(results, 3, 50, [(1 + 0.1 * t) ** (-0.5) for t in range(2, 52)])


# == 12.5 Minibatch stochastic gradient descent ==============================================

def test_12_5_minibatch_stochastic_gradient_descent(airfoil, capsys):
    tf.random.set_seed(5)
    A = tf.Variable(d2l.zeros((256, 256)))
    B = tf.Variable(d2l.normal([256, 256], 0, 1))
    C = tf.Variable(d2l.normal([256, 256], 0, 1))

    class Timer:  #@save
        """Record multiple running times."""
        def __init__(self):
            self.times = []
            self.start()

        def start(self):
            """Start the timer."""
            self.tik = time.time()

        def stop(self):
            """Stop the timer and record the time in a list."""
            self.times.append(time.time() - self.tik)
            return self.times[-1]

        def avg(self):
            """Return the average time."""
            return sum(self.times) / len(self.times)

        def sum(self):
            """Return the sum of time."""
            return sum(self.times)

        def cumsum(self):
            """Return the accumulated time."""
            return np.array(self.times).cumsum().tolist()

    timer = Timer()
    product = B.numpy().astype(np.float64) @ C.numpy().astype(np.float64)

    # Compute A = BC one element at a time
    timer.start()
    for i in range(256):
        for j in range(256):
            A[i, j].assign(tf.tensordot(B[i, :], C[:, j], axes=1))
    timer.stop()
    np.testing.assert_allclose(A.numpy(), product, rtol=1e-4, atol=1e-4)

    A.assign(d2l.zeros((256, 256)))
    timer.start()
    for j in range(256):
        A[:, j].assign(tf.tensordot(B, C[:, j], axes=1))
    timer.stop()
    np.testing.assert_allclose(A.numpy(), product, rtol=1e-4, atol=1e-4)

    timer.start()
    A.assign(tf.tensordot(B, C, axes=1))
    timer.stop()
    np.testing.assert_allclose(A.numpy(), product, rtol=1e-4, atol=1e-4)

    gigaflops = [0.03 / i for i in timer.times]
    print(f'performance in Gigaflops: element {gigaflops[0]:.3f}, '
          f'column {gigaflops[1]:.3f}, full {gigaflops[2]:.3f}')

    A.assign(d2l.zeros((256, 256)))
    timer.start()
    for j in range(0, 256, 64):
        A[:, j:j+64].assign(tf.tensordot(B, C[:, j:j+64], axes=1))
    timer.stop()
    print(f'performance in Gigaflops: block {0.03 / timer.times[3]:.3f}')
    np.testing.assert_allclose(A.numpy(), product, rtol=1e-4, atol=1e-4)
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r'performance in Gigaflops: element \d+\.\d{3}, column \d+\.\d{3}, '
                        r'full \d+\.\d{3}', out[0]), out
    assert re.fullmatch(r'performance in Gigaflops: block \d+\.\d{3}', out[1]), out
    assert len(timer.times) == 4 and timer.cumsum()[-1] == pytest.approx(timer.sum())

    #@save
    d2l.DATA_HUB['airfoil'] = (d2l.DATA_URL + 'airfoil_self_noise.dat',
                               '76e5be1548fd8222e5074cf0faae75edff8cf93f')

    #@save
    def get_data_ch11(batch_size=10, n=1500):
        data = np.genfromtxt(d2l.download('airfoil'),
                             dtype=np.float32, delimiter='\t')
        data = (data - data.mean(axis=0)) / data.std(axis=0)
        data_iter = d2l.load_array((data[:n, :-1], data[:n, -1]),
                                   batch_size, is_train=True)
        return data_iter, data.shape[1]-1

    def sgd(params, grads, states, hyperparams):
        for param, grad in zip(params, grads):
            param.assign_sub(hyperparams['lr']*grad)

    #@save
    def train_ch11(trainer_fn, states, hyperparams, data_iter,
                   feature_dim, num_epochs=2):
        # Initialization
        w = tf.Variable(tf.random.normal(shape=(feature_dim, 1),
                                       mean=0, stddev=0.01),trainable=True)
        b = tf.Variable(tf.zeros(1), trainable=True)

        # Train
        net, loss = lambda X: d2l.linreg(X, w, b), d2l.squared_loss
        animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                                xlim=[0, num_epochs], ylim=[0.22, 0.35])
        n, timer = 0, d2l.Timer()

        for _ in range(num_epochs):
            for X, y in data_iter:
              with tf.GradientTape() as g:
                l = tf.math.reduce_mean(loss(net(X), y))

              dw, db = g.gradient(l, [w, b])
              trainer_fn([w, b], [dw, db], states, hyperparams)
              n += X.shape[0]
              if n % 200 == 0:
                  timer.stop()
                  p = n/X.shape[0]
                  q = p/tf.data.experimental.cardinality(data_iter).numpy()
                  r = (d2l.evaluate_loss(net, data_iter, loss),)
                  animator.add(q, r)
                  timer.start()
        print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')
        return timer.cumsum(), animator.Y[0]

    train_ch11 = airfoil.scratch(train_ch11)   # (the test's record of each run)

    def train_sgd(lr, batch_size, num_epochs=2):
        data_iter, feature_dim = get_data_ch11(batch_size)
        return train_ch11(
            sgd, None, {'lr': lr}, data_iter, feature_dim, num_epochs)

    gd_res = train_sgd(1, 1500, 10)
    # The section registered the real file's SHA-1 again: d2l "downloads" it (the same bytes)
    out = capsys.readouterr().out
    assert out.startswith('Downloading ../data/airfoil_self_noise.dat from '
                          'http://d2l-data.s3-accelerate.amazonaws.com/airfoil_self_noise.dat...\n')

    sgd_res = train_sgd(0.005, 1)
    out += capsys.readouterr().out
    mini1_res = train_sgd(.4, 100)
    out += capsys.readouterr().out
    mini2_res = train_sgd(.05, 10)
    out += capsys.readouterr().out

    losses = printed_loss(out)
    assert len(losses) == 4 and len(airfoil.runs) == 4
    X_all, y_all = standardized(airfoil.table)
    for run, lr, batch_size, epochs, res, loss in zip(
            airfoil.runs, [1, 0.005, .4, .05], [1500, 1, 100, 10], [10, 2, 2, 2],
            [gd_res, sgd_res, mini1_res, mini2_res], losses):
        assert run.initial[0].shape == (5, 1) and run.initial[1].tolist() == [0.0]
        assert abs(run.initial[0]).max() < 0.05        # N(0, 0.01) initial weights
        size = min(batch_size, 500)      # (the synthetic table has 500 rows)
        assert len(run.batches) == 500 // size * epochs
        assert all(len(X) == size for X, _ in run.batches)
        # each epoch sees all 500 examples, shuffled (a buffer of 1000, as load_array)
        first_epoch = np.concatenate([X for X, _ in run.batches[:500 // size]])
        np.testing.assert_allclose(np.sort(first_epoch, axis=0), np.sort(X_all, axis=0),
                                   atol=1e-4)
        assert not np.allclose(first_epoch, X_all, atol=1e-4)
        expected = replay(run, keras_sgd(lr))
        check_run(run, airfoil.table, expected, loss)
        # a point every 200 examples: the loss on all the data then; the last is the final one
        times, curve = res
        assert len(curve) == len(times) == 5
        assert curve[-1] == pytest.approx(half_mse(expected, X_all, y_all), rel=1e-4)
        assert times == sorted(times)
    # (gd: n = 1000, 2000, ..., 5000, every other epoch; the others: n = 200, 400, ..., 1000)
    # the minibatch runs reach about the least-squares loss; sgd with batch 1 is noisier
    design = np.c_[X_all, np.ones(len(X_all))]
    w_ls, *_ = np.linalg.lstsq(design, y_all, rcond=None)
    best = float(np.mean((design @ w_ls - y_all) ** 2) / 2)
    assert all(best <= loss + 5e-4 for loss in losses) and losses[3] < best + 0.01

    d2l.set_figsize([6, 3])
    d2l.plot(*list(map(list, zip(gd_res, sgd_res, mini1_res, mini2_res))),
             'time (sec)', 'loss', xlim=[1e-2, 10],
             legend=['gd', 'sgd', 'batch size=100', 'batch size=10'])
    d2l.plt.gca().set_xscale('log')
    lines = line_data()
    assert len(lines) == 4 and [len(y) for _, y in lines] == [5, 5, 5, 5]
    np.testing.assert_allclose(lines[3][1], mini2_res[1])

    #@save
    def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=2):
        # Initialization
        net = tf.keras.Sequential()
        net.add(tf.keras.layers.Dense(1,
                kernel_initializer=tf.random_normal_initializer(stddev=0.01)))
        optimizer = trainer_fn(**hyperparams)
        loss = tf.keras.losses.MeanSquaredError()
        animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                                xlim=[0, num_epochs], ylim=[0.22, 0.35])
        n, timer = 0, d2l.Timer()
        for _ in range(num_epochs):
            for X, y in data_iter:
                with tf.GradientTape() as g:
                    out = net(X)
                    l = loss(y, out)
                    params = net.trainable_variables
                    grads = g.gradient(l, params)
                optimizer.apply_gradients(zip(grads, params))
                n += X.shape[0]
                if n % 200 == 0:
                    timer.stop()
                    p = n/X.shape[0]
                    q = p/tf.data.experimental.cardinality(data_iter).numpy()
                    # `MeanSquaredError` computes squared error without the 1/2
                    # factor
                    r = (d2l.evaluate_loss(net, data_iter, loss) / 2,)
                    animator.add(q, r)
                    timer.start()
        print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')

    train_concise_ch11 = airfoil.concise(train_concise_ch11)   # (the test's record)

    data_iter, _ = get_data_ch11(10)
    trainer = tf.keras.optimizers.SGD
    train_concise_ch11(trainer, {'learning_rate': 0.05}, data_iter)
    run = concise_weights(airfoil.runs[-1])
    # Keras's MeanSquaredError of y (10,) and the Dense output (10, 1): one squared error per
    # example (Keras squeezes the extra axis), not a (10, 10) broadcast
    check_run(run, airfoil.table, replay(run, keras_sgd(0.05), scale=2.0),
              printed_loss(capsys.readouterr().out)[-1])


# == 12.6 Momentum ============================================================================

def test_12_6_momentum(airfoil, capsys):
    eta = 0.4
    def f_2d(x1, x2):
        return 0.1 * x1 ** 2 + 2 * x2 ** 2
    def gd_2d(x1, x2, s1, s2):
        return (x1 - eta * 0.2 * x1, x2 - eta * 4 * x2, 0, 0)

    d2l.show_trace_2d(f_2d, d2l.train_2d(gd_2d))
    # x1 *= 1 - 0.2 eta, x2 *= 1 - 4 eta at each of the 20 steps
    assert capsys.readouterr().out == \
        f'epoch 20, x1: {-5 * 0.92 ** 20:f}, x2: {-2 * (-0.6) ** 20:f}\n' == \
        'epoch 20, x1: -0.943467, x2: -0.000073\n'

    eta = 0.6
    d2l.show_trace_2d(f_2d, d2l.train_2d(gd_2d))
    assert capsys.readouterr().out == \
        f'epoch 20, x1: {-5 * 0.88 ** 20:f}, x2: {-2 * (-1.4) ** 20:f}\n' == \
        'epoch 20, x1: -0.387814, x2: -1673.365109\n'

    def momentum_2d(x1, x2, v1, v2):
        v1 = beta * v1 + 0.2 * x1
        v2 = beta * v2 + 4 * x2
        return x1 - eta * v1, x2 - eta * v2, v1, v2

    def momentum_closed_form(eta, beta, steps=20):
        """(x, v) -> (x - eta (beta v + a x), beta v + a x) is linear: a matrix power."""
        result = []
        for a, x0 in ((0.2, -5.0), (4.0, -2.0)):
            M = np.array([[1 - eta * a, -eta * beta], [a, beta]])
            result.append((np.linalg.matrix_power(M, steps) @ [x0, 0.0])[0])
        return 'epoch 20, x1: {:f}, x2: {:f}\n'.format(*result)

    eta, beta = 0.6, 0.5
    d2l.show_trace_2d(f_2d, d2l.train_2d(momentum_2d))
    assert capsys.readouterr().out == momentum_closed_form(0.6, 0.5) == \
        'epoch 20, x1: 0.007188, x2: 0.002553\n'

    eta, beta = 0.6, 0.25
    d2l.show_trace_2d(f_2d, d2l.train_2d(momentum_2d))
    assert capsys.readouterr().out == momentum_closed_form(0.6, 0.25) == \
        'epoch 20, x1: -0.126340, x2: -0.186632\n'

    d2l.set_figsize()
    betas = [0.95, 0.9, 0.6, 0]
    for beta in betas:
        x = d2l.numpy(d2l.arange(40))
        d2l.plt.plot(x, beta ** x, label=f'beta = {beta:.2f}')
    d2l.plt.xlabel('time')
    d2l.plt.legend();
    lines = line_data()[-4:]
    for (xs, ys), beta in zip(lines, betas):
        np.testing.assert_allclose(ys, float(beta) ** np.arange(40.0), rtol=1e-6)

    def init_momentum_states(features_dim):
        v_w = tf.Variable(d2l.zeros((features_dim, 1)))
        v_b = tf.Variable(d2l.zeros(1))
        return (v_w, v_b)

    def sgd_momentum(params, grads, states, hyperparams):
        for p, v, g in zip(params, states, grads):
                v[:].assign(hyperparams['momentum'] * v + g)
                p[:].assign(p - hyperparams['lr'] * v)

    def train_momentum(lr, momentum, num_epochs=2):
        d2l.train_ch11(sgd_momentum, init_momentum_states(feature_dim),
                       {'lr': lr, 'momentum': momentum}, data_iter,
                       feature_dim, num_epochs)

    def momentum_rule(lr, momentum):
        """The book's (12.6.x): v <- beta v + g, x <- x - eta v."""
        def step(i, params, grads, state):
            for k, (p, g) in enumerate(zip(params, grads)):
                v = state[k] = momentum * state.get(k, 0.0) + g
                p -= lr * v
        return step

    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
    train_momentum(0.02, 0.5)
    train_momentum(0.01, 0.9)
    train_momentum(0.005, 0.9)
    losses = printed_loss(capsys.readouterr().out)
    for run, (lr, momentum), loss in zip(airfoil.runs, [(0.02, 0.5), (0.01, 0.9),
                                                        (0.005, 0.9)], losses):
        assert len(run.batches) == 100
        check_run(run, airfoil.table, replay(run, momentum_rule(lr, momentum)), loss)

    trainer = tf.keras.optimizers.SGD
    d2l.train_concise_ch11(trainer, {'learning_rate': 0.005, 'momentum': 0.9},
                           data_iter)
    run = concise_weights(airfoil.runs[-1])
    assert run.optimizer.momentum == 0.9
    # Keras's momentum: v <- 0.9 v - lr g, w <- w + v (the book's rule with v scaled by -lr)
    check_run(run, airfoil.table, replay(run, keras_sgd(0.005, 0.9), scale=2.0),
              printed_loss(capsys.readouterr().out)[-1])

    lambdas = [0.1, 1, 10, 19]
    eta = 0.1
    d2l.set_figsize((6, 4))
    for lam in lambdas:
        t = d2l.numpy(d2l.arange(20))
        d2l.plt.plot(t, (1 - eta * lam) ** t, label=f'lambda = {lam:.2f}')
    d2l.plt.xlabel('time')
    d2l.plt.legend();
    for (xs, ys), lam in zip(line_data()[-4:], lambdas):
        np.testing.assert_allclose(ys, (1 - 0.1 * lam) ** np.arange(20.0), rtol=1e-5, atol=1e-7)


# == 12.7 Adagrad =============================================================================

def test_12_7_adagrad(airfoil, capsys):
    def adagrad_2d(x1, x2, s1, s2):
        eps = 1e-6
        g1, g2 = 0.2 * x1, 4 * x2
        s1 += g1 ** 2
        s2 += g2 ** 2
        x1 -= eta / math.sqrt(s1 + eps) * g1
        x2 -= eta / math.sqrt(s2 + eps) * g2
        return x1, x2, s1, s2

    def f_2d(x1, x2):
        return 0.1 * x1 ** 2 + 2 * x2 ** 2

    eta = 0.4
    d2l.show_trace_2d(f_2d, d2l.train_2d(adagrad_2d))
    assert capsys.readouterr().out == 'epoch 20, x1: -2.382563, x2: -0.158591\n'

    eta = 2
    d2l.show_trace_2d(f_2d, d2l.train_2d(adagrad_2d))
    assert capsys.readouterr().out == 'epoch 20, x1: -0.002295, x2: -0.000000\n'

    def init_adagrad_states(feature_dim):
        s_w = tf.Variable(d2l.zeros((feature_dim, 1)))
        s_b = tf.Variable(d2l.zeros(1))
        return (s_w, s_b)

    def adagrad(params, grads, states, hyperparams):
        eps = 1e-6
        for p, s, g in zip(params, states, grads):
            s[:].assign(s + tf.math.square(g))
            p[:].assign(p - hyperparams['lr'] * g / tf.math.sqrt(s + eps))

    def adagrad_rule(lr, eps=1e-6):
        """The book's (12.7.5): s <- s + g^2, x <- x - eta / sqrt(s + eps) g."""
        def step(i, params, grads, state):
            for k, (p, g) in enumerate(zip(params, grads)):
                s = state[k] = state.get(k, 0.0) + g * g
                p -= lr * g / np.sqrt(s + eps)
        return step

    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
    d2l.train_ch11(adagrad, init_adagrad_states(feature_dim),
                   {'lr': 0.1}, data_iter, feature_dim);
    run = airfoil.runs[-1]
    check_run(run, airfoil.table, replay(run, adagrad_rule(0.1)),
              printed_loss(capsys.readouterr().out)[-1])

    trainer = tf.keras.optimizers.Adagrad
    d2l.train_concise_ch11(trainer, {'learning_rate' : 0.1}, data_iter)
    run = concise_weights(airfoil.runs[-1])
    # Keras's Adagrad starts its accumulator at 0.1 (initial_accumulator_value), epsilon 1e-7
    check_run(run, airfoil.table, replay(run, keras_adagrad(0.1), scale=2.0),
              printed_loss(capsys.readouterr().out)[-1])


# == 12.8 RMSProp =============================================================================

def test_12_8_rmsprop(airfoil, capsys):
    d2l.set_figsize()
    gammas = [0.95, 0.9, 0.8, 0.7]
    for gamma in gammas:
        x = d2l.numpy(d2l.arange(40))
        d2l.plt.plot(x, (1-gamma) * gamma ** x, label=f'gamma = {gamma:.2f}')
    d2l.plt.xlabel('time');
    for (xs, ys), gamma in zip(line_data(), gammas):
        np.testing.assert_allclose(ys, (1 - gamma) * gamma ** np.arange(40.0), rtol=1e-5)
        # the weights of the moving average sum to 1 - gamma**40
        assert ys.sum() == pytest.approx(1 - gamma ** 40, rel=1e-5)

    def rmsprop_2d(x1, x2, s1, s2):
        g1, g2, eps = 0.2 * x1, 4 * x2, 1e-6
        s1 = gamma * s1 + (1 - gamma) * g1 ** 2
        s2 = gamma * s2 + (1 - gamma) * g2 ** 2
        x1 -= eta / math.sqrt(s1 + eps) * g1
        x2 -= eta / math.sqrt(s2 + eps) * g2
        return x1, x2, s1, s2

    def f_2d(x1, x2):
        return 0.1 * x1 ** 2 + 2 * x2 ** 2

    eta, gamma = 0.4, 0.9
    d2l.show_trace_2d(f_2d, d2l.train_2d(rmsprop_2d))
    assert capsys.readouterr().out == 'epoch 20, x1: -0.010599, x2: 0.000000\n'

    def init_rmsprop_states(feature_dim):
        s_w = tf.Variable(d2l.zeros((feature_dim, 1)))
        s_b = tf.Variable(d2l.zeros(1))
        return (s_w, s_b)

    def rmsprop(params, grads, states, hyperparams):
        gamma, eps = hyperparams['gamma'], 1e-6
        for p, s, g in zip(params, states, grads):
            s[:].assign(gamma * s + (1 - gamma) * tf.math.square(g))
            p[:].assign(p - hyperparams['lr'] * g / tf.math.sqrt(s + eps))

    def rmsprop_rule(lr, gamma, eps=1e-6):
        """The book's (12.8.1): s <- gamma s + (1 - gamma) g^2, x <- x - eta g / sqrt(s + eps)."""
        def step(i, params, grads, state):
            for k, (p, g) in enumerate(zip(params, grads)):
                s = state[k] = gamma * state.get(k, 0.0) + (1 - gamma) * g * g
                p -= lr * g / np.sqrt(s + eps)
        return step

    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
    d2l.train_ch11(rmsprop, init_rmsprop_states(feature_dim),
                   {'lr': 0.01, 'gamma': 0.9}, data_iter, feature_dim);
    run = airfoil.runs[-1]
    check_run(run, airfoil.table, replay(run, rmsprop_rule(0.01, 0.9)),
              printed_loss(capsys.readouterr().out)[-1])

    trainer = tf.keras.optimizers.RMSprop
    d2l.train_concise_ch11(trainer, {'learning_rate': 0.01, 'rho': 0.9},
                           data_iter)
    run = concise_weights(airfoil.runs[-1])
    check_run(run, airfoil.table, replay(run, keras_rmsprop(0.01, 0.9), scale=2.0),
              printed_loss(capsys.readouterr().out)[-1])


# == 12.9 Adadelta ============================================================================

def test_12_9_adadelta(airfoil, capsys):
    def init_adadelta_states(feature_dim):
        s_w = tf.Variable(d2l.zeros((feature_dim, 1)))
        s_b = tf.Variable(d2l.zeros(1))
        delta_w = tf.Variable(d2l.zeros((feature_dim, 1)))
        delta_b = tf.Variable(d2l.zeros(1))
        return ((s_w, delta_w), (s_b, delta_b))

    def adadelta(params, grads, states, hyperparams):
        rho, eps = hyperparams['rho'], 1e-5
        for p, (s, delta), grad in zip(params, states, grads):
            s[:].assign(rho * s + (1 - rho) * tf.math.square(grad))
            g = (tf.math.sqrt(delta + eps) / tf.math.sqrt(s + eps)) * grad
            p[:].assign(p - g)
            delta[:].assign(rho * delta + (1 - rho) * g * g)

    def adadelta_rule(rho, eps=1e-5):
        """The book's (12.9.1-4): s <- rho s + (1 - rho) g^2, g' = sqrt(d + eps) / sqrt(s +
        eps) g, x <- x - g', d <- rho d + (1 - rho) g'^2."""
        def step(i, params, grads, state):
            for k, (p, g) in enumerate(zip(params, grads)):
                s, d = state.get(k, (0.0, 0.0))
                s = rho * s + (1 - rho) * g * g
                rescaled = np.sqrt(d + eps) / np.sqrt(s + eps) * g
                p -= rescaled
                state[k] = (s, rho * d + (1 - rho) * rescaled * rescaled)
        return step

    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
    d2l.train_ch11(adadelta, init_adadelta_states(feature_dim),
                   {'rho': 0.9}, data_iter, feature_dim);
    run = airfoil.runs[-1]
    check_run(run, airfoil.table, replay(run, adadelta_rule(0.9)),
              printed_loss(capsys.readouterr().out)[-1])

    # adadelta is not converging at default learning rate
    # but it is converging at lr = 5.0
    trainer = tf.keras.optimizers.Adadelta
    d2l.train_concise_ch11(trainer, {'learning_rate':5.0, 'rho': 0.9}, data_iter)
    run = concise_weights(airfoil.runs[-1])
    check_run(run, airfoil.table, replay(run, keras_adadelta(5.0, 0.9), scale=2.0),
              printed_loss(capsys.readouterr().out)[-1])


# == 12.10 Adam ===============================================================================

def test_12_10_adam(airfoil, capsys):
    def init_adam_states(feature_dim):
        v_w = tf.Variable(d2l.zeros((feature_dim, 1)))
        v_b = tf.Variable(d2l.zeros(1))
        s_w = tf.Variable(d2l.zeros((feature_dim, 1)))
        s_b = tf.Variable(d2l.zeros(1))
        return ((v_w, s_w), (v_b, s_b))

    def adam(params, grads, states, hyperparams):
        beta1, beta2, eps = 0.9, 0.999, 1e-6
        for p, (v, s), grad in zip(params, states, grads):
            v[:].assign(beta1 * v  + (1 - beta1) * grad)
            s[:].assign(beta2 * s + (1 - beta2) * tf.math.square(grad))
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:].assign(p - hyperparams['lr'] * v_bias_corr
                        / tf.math.sqrt(s_bias_corr) + eps)

    def adam_rule(lr, counts_steps, sign=False, beta1=0.9, beta2=0.999, eps=1e-6):
        """The book's (12.10.1-3) as its TensorFlow code computes them: v <- beta1 v + (1 -
        beta1) g; s <- beta2 s + (1 - beta2) g^2 (Yogi, 12.10.5: s <- s + (1 - beta2)
        sign(g^2 - s) g^2); the bias corrections with t; x <- x - eta v^ / sqrt(s^) + eps
        (the code adds eps to x, not to sqrt(s^) as the equation does). The TensorFlow tab's
        ``adam`` never increments ``hyperparams['t']`` (t stays 1); its ``yogi`` does, once
        per minibatch."""
        def step(i, params, grads, state):
            t = i if counts_steps else 1
            for k, (p, g) in enumerate(zip(params, grads)):
                v, s = state.get(k, (0.0, 0.0))
                v = beta1 * v + (1 - beta1) * g
                if sign:
                    s = s + (1 - beta2) * np.sign(g * g - s) * g * g
                else:
                    s = beta2 * s + (1 - beta2) * g * g
                state[k] = (v, s)
                p[...] = p - lr * (v / (1 - beta1 ** t)) / np.sqrt(s / (1 - beta2 ** t)) + eps
        return step

    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
    d2l.train_ch11(adam, init_adam_states(feature_dim),
                   {'lr': 0.01, 't': 1}, data_iter, feature_dim);
    run = airfoil.runs[-1]
    check_run(run, airfoil.table, replay(run, adam_rule(0.01, counts_steps=False)),
              printed_loss(capsys.readouterr().out)[-1])

    trainer = tf.keras.optimizers.Adam
    d2l.train_concise_ch11(trainer, {'learning_rate': 0.01}, data_iter)
    run = concise_weights(airfoil.runs[-1])
    # Keras's Adam: epsilon 1e-7 added to sqrt(v), the bias corrections folded into alpha
    check_run(run, airfoil.table, replay(run, keras_adam(0.01), scale=2.0),
              printed_loss(capsys.readouterr().out)[-1])
    assert int(run.optimizer.iterations) == 100

    def yogi(params, grads, states, hyperparams):
        beta1, beta2, eps = 0.9, 0.999, 1e-6
        for p, (v, s), grad in zip(params, states, grads):
            v[:].assign(beta1 * v  + (1 - beta1) * grad)
            s[:].assign(s + (1 - beta2) * tf.math.sign(
                       tf.math.square(grad) - s) * tf.math.square(grad))
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:].assign(p - hyperparams['lr'] * v_bias_corr
                        / tf.math.sqrt(s_bias_corr) + eps)
        hyperparams['t'] += 1

    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
    hyperparams = {'lr': 0.01, 't': 1}
    d2l.train_ch11(yogi, init_adam_states(feature_dim),
                   hyperparams, data_iter, feature_dim);   # (the book: {'lr': 0.01, 't': 1})
    run = airfoil.runs[-1]
    assert hyperparams['t'] == 101
    check_run(run, airfoil.table, replay(run, adam_rule(0.01, counts_steps=True, sign=True)),
              printed_loss(capsys.readouterr().out)[-1])


# == 12.11 Learning rate scheduling ===========================================================

@pytest.fixture
def small_fashion(tmp_path, monkeypatch):
    """A Keras cache with synthetic Fashion-MNIST, 24 training and 16 test images: one batch
    of ``batch_size = 256`` per epoch (the five runs of 30 epochs take a quarter of a minute)."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    return write_fashion_mnist(str(tmp_path / "keras"), n_train=24, n_test=16)


def test_12_11_learning_rate_scheduling(small_fashion, monkeypatch, capsys):
    from minitape.keras.callbacks import LearningRateScheduler

    # (the test's record: the learning rate of every SGD step)
    used = []
    apply_gradients = tf.keras.optimizers.SGD.apply_gradients

    def recording(self, grads_and_vars):
        used.append(float(self.learning_rate))
        return apply_gradients(self, grads_and_vars)
    monkeypatch.setattr(tf.keras.optimizers.SGD, "apply_gradients", recording)

    def net():
        return tf.keras.models.Sequential([
            tf.keras.layers.Conv2D(filters=6, kernel_size=5, activation='relu',
                                   padding='same'),
            tf.keras.layers.AvgPool2D(pool_size=2, strides=2),
            tf.keras.layers.Conv2D(filters=16, kernel_size=5,
                                   activation='relu'),
            tf.keras.layers.AvgPool2D(pool_size=2, strides=2),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(120, activation='relu'),
            tf.keras.layers.Dense(84, activation='sigmoid'),
            tf.keras.layers.Dense(10)])


    batch_size = 256
    train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size=batch_size)

    # The code is almost identical to `d2l.train_ch6` defined in the
    # lenet section of chapter convolutional neural networks
    def train(net_fn, train_iter, test_iter, num_epochs, lr,
                  device=d2l.try_gpu(), custom_callback = False):
        device_name = device._device_name
        strategy = tf.distribute.OneDeviceStrategy(device_name)
        with strategy.scope():
            optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
            loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            net = net_fn()
            net.compile(optimizer=optimizer, loss=loss, metrics=['accuracy'])
        callback = d2l.TrainCallback(net, train_iter, test_iter, num_epochs,
                                 device_name)
        if custom_callback is False:
            net.fit(train_iter, epochs=num_epochs, verbose=0,
                    callbacks=[callback])
        else:
             net.fit(train_iter, epochs=num_epochs, verbose=0,
                     callbacks=[callback, custom_callback])
        return net

    def check_training(model, lrs):
        """One SGD step an epoch (24 images, batches of 256) at the scheduled rates; the
        callback's last lines; its test accuracy is the model's on the test images."""
        np.testing.assert_allclose(used, np.float32(lrs), rtol=1e-6)
        used.clear()
        out = capsys.readouterr().out.splitlines()
        match = re.fullmatch(r'loss (\d+\.\d{3}), train acc (\d\.\d{3}), test acc (\d\.\d{3})',
                             out[-2])
        assert match, out
        assert re.fullmatch(r'\d+\.\d examples/sec on /CPU:0', out[-1]), out
        X_test, y_test = small_fashion[1]
        logits = model(tf.constant(X_test[..., None] / np.float32(255))).numpy()
        assert float(match.group(3)) == pytest.approx(np.mean(logits.argmax(1) == y_test),
                                                      abs=5.1e-4)   # (3 decimals)
        assert float(model.optimizer.learning_rate) == pytest.approx(lrs[-1], rel=1e-6)

    lr, num_epochs = 0.3, 30
    model = train(net, train_iter, test_iter, num_epochs, lr)
    check_training(model, [0.3] * 30)

    lr = 0.1
    dummy_model = tf.keras.models.Sequential([tf.keras.layers.Dense(10)])
    dummy_model.compile(tf.keras.optimizers.SGD(learning_rate=lr), loss='mse')
    print(f'learning rate is now ,', dummy_model.optimizer.lr.numpy())
    assert capsys.readouterr().out == 'learning rate is now , 0.1\n'

    class SquareRootScheduler:
        def __init__(self, lr=0.1):
            self.lr = lr

        def __call__(self, num_update):
            return self.lr * pow(num_update + 1.0, -0.5)

    scheduler = SquareRootScheduler(lr=0.1)
    d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
    expected = [0.1 / math.sqrt(t + 1) for t in range(30)]
    np.testing.assert_allclose(line_data()[0][1], expected)

    model = train(net, train_iter, test_iter, num_epochs, lr,
                  custom_callback=LearningRateScheduler(scheduler))
    check_training(model, expected)

    class FactorScheduler:
        def __init__(self, factor=1, stop_factor_lr=1e-7, base_lr=0.1):
            self.factor = factor
            self.stop_factor_lr = stop_factor_lr
            self.base_lr = base_lr

        def __call__(self, num_update):
            self.base_lr = max(self.stop_factor_lr, self.base_lr * self.factor)
            return self.base_lr

    scheduler = FactorScheduler(factor=0.9, stop_factor_lr=1e-2, base_lr=2.0)
    d2l.plot(d2l.arange(50), [scheduler(t) for t in range(50)])
    np.testing.assert_allclose(line_data()[0][1],
                               [max(0.01, 2.0 * 0.9 ** (t + 1)) for t in range(50)])

    class MultiFactorScheduler:
        def __init__(self, step, factor, base_lr):
            self.step = step
            self.factor = factor
            self.base_lr = base_lr

        def __call__(self, epoch):
            if epoch in self.step:
                self.base_lr = self.base_lr * self.factor
                return self.base_lr
            else:
                return self.base_lr

    scheduler = MultiFactorScheduler(step=[15, 30], factor=0.5, base_lr=0.5)
    d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
    np.testing.assert_allclose(line_data()[0][1], [0.5] * 15 + [0.25] * 15)

    model = train(net, train_iter, test_iter, num_epochs, lr,
          custom_callback=LearningRateScheduler(scheduler))
    # (the scheduler keeps its state: the plot above already halved it once)
    check_training(model, [0.25] * 15 + [0.125] * 15)

    class CosineScheduler:
        def __init__(self, max_update, base_lr=0.01, final_lr=0,
                   warmup_steps=0, warmup_begin_lr=0):
            self.base_lr_orig = base_lr
            self.max_update = max_update
            self.final_lr = final_lr
            self.warmup_steps = warmup_steps
            self.warmup_begin_lr = warmup_begin_lr
            self.max_steps = self.max_update - self.warmup_steps

        def get_warmup_lr(self, epoch):
            increase = (self.base_lr_orig - self.warmup_begin_lr) \
                           * float(epoch) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase

        def __call__(self, epoch):
            if epoch < self.warmup_steps:
                return self.get_warmup_lr(epoch)
            if epoch <= self.max_update:
                self.base_lr = self.final_lr + (
                    self.base_lr_orig - self.final_lr) * (1 + math.cos(
                    math.pi * (epoch - self.warmup_steps) / self.max_steps)) / 2
            return self.base_lr

    scheduler = CosineScheduler(max_update=20, base_lr=0.3, final_lr=0.01)
    d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
    expected = [0.01 + 0.29 * (1 + math.cos(math.pi * min(t, 20) / 20)) / 2 for t in range(30)]
    np.testing.assert_allclose(line_data()[0][1], expected)

    model = train(net, train_iter, test_iter, num_epochs, lr,
          custom_callback=LearningRateScheduler(scheduler))
    check_training(model, expected)

    scheduler = CosineScheduler(20, warmup_steps=5, base_lr=0.3, final_lr=0.01)
    d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
    expected = [0.3 * t / 5 if t < 5 else
                0.01 + 0.29 * (1 + math.cos(math.pi * (min(t, 20) - 5) / 15)) / 2
                for t in range(30)]
    np.testing.assert_allclose(line_data()[0][1], expected)

    model = train(net, train_iter, test_iter, num_epochs, lr,
          custom_callback=LearningRateScheduler(scheduler))
    check_training(model, expected)


# == The fixes chapter 12 needed ==============================================================

def test_range_of_floats_is_computed_in_its_dtype_as_tensorflows_kernel():
    # d2l.arange(-2, 2, 0.01) (12.2): TensorFlow's RangeOp casts the arguments to the result's
    # dtype, counts ceil(|(limit - start) / delta|) in that dtype and fills a running sum;
    # minitape used np.arange in float64 (401 elements, TensorFlow has 400).
    x = tf.range(-2, 2, 0.01)
    assert x.dtype == tf.float32 and x.shape == (400,)
    expected = np.add.accumulate(np.r_[np.float32(-2), np.full(399, np.float32(0.01))],
                                 dtype=np.float32)
    np.testing.assert_array_equal(x.numpy(), expected)
    # TensorFlow's CPU output, quoted in tensorflow/tensorflow#58133
    y = tf.range(-10, 10, 0.01).numpy()
    assert y.shape == (2000,)
    np.testing.assert_allclose(y[-3:], [9.970266, 9.980267, 9.990267], atol=1e-6)
    # float64 and integer ranges count in their own dtype; empty and downward ranges
    assert tf.range(-2, 2, 0.01, dtype=tf.float64).shape == (400,)
    assert tf.range(0.0, 1.0, 0.1, dtype=tf.float64).numpy()[-1] == pytest.approx(0.9)
    assert tf.range(10, 0, -3).numpy().tolist() == [10, 7, 4, 1]
    assert tf.range(1, 2, 0.25).numpy().tolist() == [1.0, 1.25, 1.5, 1.75]
    assert tf.range(2, 1).shape == (0,) and tf.range(0, 1, -1).shape == (0,)


def test_data_experimental_cardinality_is_a_scalar_int64_tensor():
    # train_ch11: q = p / tf.data.experimental.cardinality(data_iter).numpy()
    ds = tf.data.Dataset.from_tensor_slices(np.zeros((1500, 5), np.float32)).batch(10)
    n = tf.data.experimental.cardinality(ds)
    assert isinstance(n, tf.Tensor) and n.dtype == tf.int64 and n.shape == ()
    assert n.numpy() == 150 and int(ds.cardinality()) == 150
    assert int(tf.data.experimental.cardinality(ds.shuffle(1000).batch(7))) == 22
    assert int(tf.data.experimental.cardinality(ds.repeat())) == \
        tf.data.INFINITE_CARDINALITY == tf.data.experimental.INFINITE_CARDINALITY == -1
    assert tf.data.UNKNOWN_CARDINALITY == -2
    with pytest.raises(TypeError, match="expected an mt.data.Dataset, got list"):
        tf.data.experimental.cardinality([1, 2, 3])


def test_adadelta_follows_keras_update_rule():
    # 12.9: tf.keras.optimizers.Adadelta(learning_rate=5.0, rho=0.9); Keras 3's adadelta.py
    opt = tf.keras.optimizers.Adadelta(learning_rate=5.0, rho=0.9)
    assert (opt.rho, opt.epsilon, opt.name) == (0.9, 1e-7, "adadelta")
    defaults = tf.keras.optimizers.get("adadelta")
    assert type(defaults) is tf.keras.optimizers.Adadelta
    assert (float(defaults.learning_rate), defaults.rho, defaults.epsilon) == \
        (pytest.approx(0.001), 0.95, 1e-7)
    w = tf.Variable([[1.0], [-2.0]])
    b = tf.Variable([0.5])
    rng = np.random.default_rng(0)
    params = [np.array([[1.0], [-2.0]]), np.array([0.5])]
    step, state = keras_adadelta(5.0, rho=0.9), {}
    for i in range(1, 6):
        grads = [rng.standard_normal((2, 1)), rng.standard_normal(1)]
        opt.apply_gradients(zip([tf.constant(g, tf.float32) for g in grads], [w, b]))
        step(i, params, [g.astype(np.float32).astype(np.float64) for g in grads], state)
    np.testing.assert_allclose(w.numpy(), params[0], rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), params[1], rtol=1e-5)
    # the first step by hand: s = 0.1 g^2, step = sqrt(eps) / sqrt(s + eps) * g
    v = tf.Variable(1.0)
    tf.keras.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-6).apply_gradients(
        [(tf.constant(2.0), v)])
    assert float(v) == pytest.approx(1 - 1e-3 / math.sqrt(0.4 + 1e-6) * 2, rel=1e-6)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="adadelta", loss="mse")
    assert type(model.optimizer) is tf.keras.optimizers.Adadelta
    with pytest.raises(ValueError, match="rho must be between 0 and 1"):
        tf.keras.optimizers.Adadelta(rho=1.5)
    config = opt.get_config()
    assert (config["rho"], config["epsilon"], config["learning_rate"]) == (0.9, 1e-7, 5.0)
    assert tf.keras.optimizers.Adadelta.from_config(config).rho == 0.9


def test_optimizer_lr_is_keras_2s_alias_of_learning_rate():
    # 12.11: print(f'learning rate is now ,', dummy_model.optimizer.lr.numpy())
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)
    assert opt.lr is opt.learning_rate and opt.lr.numpy() == np.float32(0.1)
    opt.lr = 0.05
    assert float(opt.learning_rate) == pytest.approx(0.05)
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    decayed = tf.keras.optimizers.Adam(learning_rate=schedule)
    assert float(decayed.lr) == pytest.approx(0.1)
    with pytest.raises(TypeError, match="not settable"):
        decayed.lr = 0.01


def test_device_keeps_the_name_as_given_in__device_name():
    # 12.11's train (d2l's train_ch6): device_name = device._device_name, then
    # tf.distribute.OneDeviceStrategy(device_name), as TensorFlow's device context has it
    assert d2l.try_gpu()._device_name == '/CPU:0'
    assert tf.device('/GPU:1')._device_name == '/GPU:1' and tf.device(None)._device_name is None
    strategy = tf.distribute.OneDeviceStrategy(d2l.try_gpu()._device_name)
    with strategy.scope():
        v = tf.Variable(1.0)
    assert float(v) == 1.0
