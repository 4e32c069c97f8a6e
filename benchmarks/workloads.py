"""The workloads: data, the correctness check against the floor, and the timing loop.

Each workload is a function ``(contestants, repeats, quick) -> result dict`` that runs in its
own process (see ``worker.py``). A result holds ``rows``: one per measured quantity, with a
median per contestant, all measured side by side in this one process (the repeats go round
the contestants in turn, so a noisy moment of the machine hits them all alike), the API each
contestant's number is for (``apis``; where a peer has several APIs for the job, every one is
timed, ``variants`` holds them all and ``values`` the fastest), and ``notes``: why a
contestant has no number.

Before anything is timed, every contestant's gradient is compared with the hand-written NumPy
result; a contestant that disagrees fails the run (``AssertionError``), it is never timed.
"""

from __future__ import annotations

import gc
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from . import adapters

OPS_PER_STEP = 5   # sin, *1.0001, y*y, *0.001, +
CHAIN_STEPS = 1000


# -- helpers --------------------------------------------------------------------------------------

def _assert_close(name, what, got, want, rtol):
    if got is None:       # an adapter that cannot return this value (autograd's y for a vector)
        return
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{name}: {what} has shape {got.shape}, expected {want.shape}")
    scale = max(float(np.max(np.abs(want))), 1e-30)
    err = float(np.max(np.abs(got - want))) / scale
    if not err <= rtol:
        raise AssertionError(f"{name}: {what} differs from the hand-written NumPy result "
                             f"(max error {err:.2e} of the largest entry, allowed {rtol:.0e})")


def _prepare(contestants, function, *args, **kwargs):
    """``adapter.function(*args)`` of each contestant: ``({(name, API): run}, {name: note})``.

    A contestant whose adapter offers several APIs for the job (see ``adapters``) has one
    entry per API; each is checked and timed, and ``_row`` keeps the fastest.
    """
    runs, notes = {}, {}
    for name in contestants:
        module, note = adapters.load(name)
        if module is None:
            notes[name] = note
        elif not hasattr(module, function):
            notes[name] = f"n/a: no {function} (no such API in the library)"
        else:
            try:
                made = getattr(module, function)(*args, **kwargs)
            except NotImplementedError as e:
                notes[name] = f"n/a: {e}"
                continue
            for api, run in adapters.variants(module, function, made):
                runs[(name, api)] = run
    return runs, notes


def _floor(runs):
    """The hand-written NumPy run of ``runs`` (what every contestant is checked against)."""
    return next(run for (name, _), run in runs.items() if name == "numpy")


def _who(key):
    """``"torch (torch.func.jacrev)"``: a contestant and its API, for error messages."""
    return f"{key[0]} ({key[1]})"


BATCH_SECONDS = 0.02  # a timed sample runs a call enough times to last about this long


def time_side_by_side(runs, repeats, warmup=1):
    """Median seconds per call of each ``run``, round-robin over the contestants.

    Each sample times a *batch* of calls, enough of them to last ``BATCH_SECONDS`` (one
    call for anything slower), as ``timeit`` and ``pyperf`` do: a sample of a single 0.5 ms
    call would mostly measure how cold the caches are after the previous contestant.
    The garbage collector stays **on** while a batch is timed, as it is when a learner's code
    runs (issue 31: the Python objects a library makes per op are what the collector walks,
    and a library that makes many pays for them here); a ``gc.collect()`` between batches
    keeps one contestant from paying for another one's garbage.
    Returns ``({name: median seconds per call}, {name: [seconds per call of each sample]})``.
    """
    loops = {}
    for name, run in runs.items():
        for _ in range(warmup):
            run()
        t0 = time.perf_counter()
        run()
        once = time.perf_counter() - t0
        loops[name] = max(1, int(BATCH_SECONDS / max(once, 1e-9)))
    samples = {name: [] for name in runs}
    names = list(runs)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            run, n = runs[name], loops[name]
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(n):
                run()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: statistics.median(s) for name, s in samples.items()}, samples


def _row(metric, unit, values, scale=1.0, samples=None):
    """One table row from ``{(contestant, API): seconds}`` (or ``{contestant: value}``).

    ``values`` holds each contestant's fastest variant (times ``scale``) and ``apis`` its
    name; ``variants`` every API timed, for the contestants that have more than one.
    """
    best = {}
    for key, v in values.items():
        name = key[0] if isinstance(key, tuple) else key
        if name not in best or v < values[best[name]]:
            best[name] = key
    row = {"metric": metric, "unit": unit,
           "values": {name: values[key] * scale for name, key in best.items()},
           "apis": {name: key[1] for name, key in best.items() if isinstance(key, tuple)}}
    variants = {}
    for key, v in values.items():
        if isinstance(key, tuple):
            variants.setdefault(key[0], {})[key[1]] = v * scale
    row["variants"] = {name: v for name, v in variants.items() if len(v) > 1}
    if samples is not None:
        row["samples"] = {name: [s * scale for s in samples[key]] for name, key in best.items()}
    return row


# -- the chains -----------------------------------------------------------------------------------

def _chain_x0(vector):
    return np.linspace(0.1, 0.8, 8) if vector else np.array(0.5)


def _chain_workload(vector):
    def workload(contestants, repeats, quick):
        x0 = _chain_x0(vector)
        runs, notes = _prepare(contestants, "chain", x0, CHAIN_STEPS)
        y_ref, g_ref = _floor(runs)()
        for key, run in runs.items():
            y, g = run()
            _assert_close(_who(key), "y", y, y_ref, 1e-12)
            _assert_close(_who(key), "dy/dx", g, g_ref, 1e-9)
        medians, samples = time_side_by_side(runs, repeats)
        per_op = 1e6 / (CHAIN_STEPS * OPS_PER_STEP)
        return {"rows": [_row("forward+backward per op", "us", medians, per_op, samples)],
                "notes": notes}
    return workload


def no_tape(contestants, repeats, quick):
    rows, notes = [], {}
    for label, vector in (("scalar", False), ("(8,) vector", True)):
        x0 = _chain_x0(vector)
        runs, notes = _prepare(contestants, "chain_forward", x0, CHAIN_STEPS)
        y_ref = _floor(runs)()
        for key, run in runs.items():
            _assert_close(_who(key), "y", run(), y_ref, 1e-12)
        medians, samples = time_side_by_side(runs, repeats)
        rows.append(_row(f"{label} forward per op, no tape", "us", medians,
                         1e6 / (CHAIN_STEPS * OPS_PER_STEP), samples))
    return {"rows": rows, "notes": notes}


# -- the MLPs -------------------------------------------------------------------------------------

def mlp_data(sizes, batch, seed=0):
    """Glorot-scaled float32 weights, a float32 batch and its labels (int and one-hot)."""
    rng = np.random.default_rng(seed)
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((n_in, n_out)) * np.sqrt(2.0 / (n_in + n_out)))
        layers.append((w.astype(np.float32), (rng.standard_normal(n_out) * 0.1).astype(np.float32)))
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    onehot = np.eye(sizes[-1], dtype=np.float32)[labels]
    return layers, x, labels, onehot


def _check_mlp(runs):
    loss_ref, grads_ref = _floor(runs)()
    for key, run in runs.items():
        name = _who(key)
        loss, grads = run()
        _assert_close(name, "loss", loss, loss_ref, 1e-5)
        if len(grads) != len(grads_ref):
            raise AssertionError(f"{name}: {len(grads)} gradients, expected {len(grads_ref)}")
        for k, (g, g_ref) in enumerate(zip(grads, grads_ref)):
            _assert_close(name, f"gradient {k}", g, g_ref, 1e-4)


def _mlp_workload(sizes, batch):
    def workload(contestants, repeats, quick):
        data = mlp_data(sizes, batch)
        runs, notes = _prepare(contestants, "mlp", *data)
        _check_mlp(runs)
        medians, samples = time_side_by_side(runs, repeats)
        label = "-".join(map(str, sizes)) + f", batch {batch}"
        return {"rows": [_row(f"training step ({label})", "ms", medians, 1e3, samples)],
                "notes": notes}
    return workload


# -- Jacobians and the Hessian --------------------------------------------------------------------

def two_layer_data(n_in, hidden, n_out, batch, seed=1):
    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((n_in, hidden)) / np.sqrt(n_in)).astype(np.float32),
              (rng.standard_normal(hidden) * 0.1).astype(np.float32),
              (rng.standard_normal((hidden, n_out)) / np.sqrt(hidden)).astype(np.float32),
              (rng.standard_normal(n_out) * 0.1).astype(np.float32)]
    return params, rng.standard_normal((batch, n_in)).astype(np.float32)


def _jacobian_workload(hidden, modes):
    """``elu(elu(x W1 + b1) W2 + b2)`` with ``x`` (64, 32), ``hidden`` units, ``y`` (64, 16):
    one row per mode (``vectorized``, ``looped``: the full Jacobian; ``batch``)."""
    labels = {"vectorized": "jacobian (64,16,64,32), vectorized",
              "looped": "jacobian (64,16,64,32), looped",
              "batch": "batch_jacobian (64,16,32)"}

    def workload(contestants, repeats, quick):
        params, x = two_layer_data(32, hidden, 16, 64)
        rows, notes = [], {}
        for mode in modes:
            label = f"{labels[mode]}, hidden {hidden}"
            runs, mode_notes = _prepare(contestants, "jacobian", params, x, mode)
            for name, note in mode_notes.items():
                notes.setdefault(name, note)
            ref = _floor(runs)()
            for key, run in runs.items():
                _assert_close(_who(key), label, run(), ref, 1e-4)
            # The looped Jacobian runs 1,024 backward passes: fewer repeats keep it short.
            n = max(1, repeats // 4) if mode == "looped" else repeats
            medians, samples = time_side_by_side(runs, n)
            rows.append(_row(label, "ms", medians, 1e3, samples))
        return {"rows": rows, "notes": notes}
    return workload


def hessian(contestants, repeats, quick):
    params, x = two_layer_data(5, 8, 6, 7, seed=2)
    runs, notes = _prepare(contestants, "hessian", params, x)
    ref = _floor(runs)()
    for key, run in runs.items():
        _assert_close(_who(key), "hessian (5,8,5,8)", run(), ref, 1e-4)
    medians, samples = time_side_by_side(runs, repeats)
    return {"rows": [_row("hessian of a 5x8 kernel (5,8,5,8)", "ms", medians, 1e3, samples)],
            "notes": notes}


# -- a convolutional network, check_tape, the lessons --------------------------------------------

def conv_data(batch=64, size=8, filters=16, classes=10, seed=3):
    """The digits shapes: ``batch`` ``size x size x 1`` images in [0, 1], 3x3 filters
    (Glorot-scaled), the Dense layer after them, and labels (int and one-hot), float32."""
    rng = np.random.default_rng(seed)
    flat = (size - 2) * (size - 2) * filters
    params = [(rng.standard_normal((3, 3, 1, filters)) * np.sqrt(2 / (9 + 9 * filters))),
              rng.standard_normal(filters) * 0.1,
              rng.standard_normal((flat, classes)) * np.sqrt(2 / (flat + classes)),
              rng.standard_normal(classes) * 0.1]
    x = rng.random((batch, size, size, 1))
    labels = rng.integers(0, classes, batch)
    onehot = np.eye(classes)[labels]
    return ([p.astype(np.float32) for p in params], x.astype(np.float32), labels,
            onehot.astype(np.float32))


def conv(contestants, repeats, quick):
    runs, notes = _prepare(contestants, "conv", *conv_data())
    _check_mlp(runs)
    medians, samples = time_side_by_side(runs, repeats)
    return {"rows": [_row("training step (conv 3x3x16 on 8x8x1, dense 576-10, batch 64)", "ms",
                          medians, 1e3, samples)],
            "notes": notes}


def train_step(contestants, repeats, quick):
    """Lesson 05's training step: a 1-32-32-1 tanh MLP on ``sin(x)`` (batch 64, float32),
    the mean squared error, and one SGD step through the model's trainable variables."""
    layers, x, _, _ = mlp_data([1, 32, 32, 1], 64)
    y = np.sin(x)
    runs, notes = _prepare(contestants, "train_step", layers, x, y, 0.02)
    # Each run changes its weights: the first step of every contestant is checked against
    # the hand-written one (copies, taken before the next step moves them again).
    first = {key: run() for key, run in runs.items()}
    first = {key: (loss, [np.array(w) for w in ws]) for key, (loss, ws) in first.items()}
    loss_ref, weights_ref = next(v for (name, _), v in first.items() if name == "numpy")
    for key, (loss, ws) in first.items():
        _assert_close(_who(key), "loss", loss, loss_ref, 1e-5)
        for k, (w, w_ref) in enumerate(zip(ws, weights_ref)):
            _assert_close(_who(key), f"weight {k} after the step", w, w_ref, 1e-5)
    medians, samples = time_side_by_side(runs, repeats)
    return {"rows": [_row("training step as lesson 05 writes it (1-32-32-1 tanh, batch 64)",
                          "us", medians, 1e6, samples)],
            "notes": notes}


CHECK_TAPE_STEPS = 200  # steps of the (8,) chain: 1,000 recorded ops


def check_tape(contestants, repeats, quick):
    """``mt.viz.check_tape`` (minitape's own tool, no peer has one) on a 1,000-op program."""
    notes = {name: "n/a: minitape's own tool" for name in contestants if name != "minitape"}
    if "minitape" not in contestants:
        return {"rows": [], "notes": notes}
    import minitape as mt
    from minitape.viz import check_tape as check

    x = mt.constant(_chain_x0(True))
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x
        for _ in range(CHECK_TAPE_STEPS):
            y = mt.math.sin(y) * 1.0001 + y * y * 0.001
    ops = len(tape._ops)
    result = check(tape, y, x)
    if not result.ok or len(result.rows) != ops:
        raise AssertionError(f"minitape: check_tape found {len(result.failing)} failing ops "
                             f"and {len(result.rows)} rows for {ops} recorded ops")
    medians, samples = time_side_by_side(
        {("minitape", "mt.viz.check_tape"): lambda: check(tape, y, x)}, max(1, repeats))
    return {"rows": [_row(f"check_tape of a {ops:,}-op program", "s", medians, 1.0, samples)],
            "notes": notes}


def training_view(contestants, repeats, quick):
    """One redraw of ``mt.viz.TrainingView`` (the tape of the latest step by module, the loss
    curve, the panels; issue 33's budget is 200 ms) for lesson 07's fully connected network
    (8x8 digits, Flatten, Dense(64, relu), Dense(10), Adam, batch 64). Digits have 64 features,
    so there is no decision boundary; ``training_view_moons`` below has one."""
    notes = {name: "n/a: minitape's own tool" for name in contestants if name != "minitape"}
    if "minitape" not in contestants:
        return {"rows": [], "notes": notes}
    import minitape as mt
    from minitape.viz import TrainingView
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    mt.random.set_seed(0)
    model = mt.layers.Sequential([mt.layers.Flatten(), mt.layers.Dense(64, activation="relu"),
                                  mt.layers.Dense(10)])
    loss = mt.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    view = TrainingView(model, x, y, loss=loss, optimizer=mt.optimizers.Adam(0.01),
                        batch_size=64, redraw_every=10**9)
    view.step(3)
    if len(view.history["loss"]) != 3 or not np.isfinite(view.history["loss"]).all():
        raise AssertionError(f"TrainingView recorded {view.history['loss']}")
    rows = [_timed_redraw(view, "TrainingView redraw, lesson 07's MLP (no boundary)",
                          max(1, repeats))]
    if not quick:
        from sklearn.datasets import make_moons
        xm, ym = make_moons(200, noise=0.15, random_state=0)
        mt.random.set_seed(1)
        moons = TrainingView(
            mt.layers.Sequential([mt.layers.Dense(16, activation="tanh"),
                                  mt.layers.Dense(1, activation="sigmoid")]),
            xm.astype(np.float32), ym.astype(np.float32)[:, None], loss="binary_crossentropy",
            optimizer=mt.optimizers.Adam(0.05), redraw_every=10**9)
        moons.step(3)
        rows.append(_timed_redraw(moons, "TrainingView redraw, lesson 08's moons (with the "
                                  "60x60 decision boundary)", max(1, repeats)))
    return {"rows": rows, "notes": notes}


def _timed_redraw(view, metric, repeats):
    """The redraw's wall time, and in the notes its CPU time (this process plus graphviz's
    ``dot``), which a machine busy with other work inflates much less."""
    view.redraw()   # warm-up: the figure is made once, graphviz's first run
    medians, samples = time_side_by_side({("minitape", "TrainingView.redraw"): view.redraw},
                                         repeats)
    cpu = []
    for _ in range(max(3, repeats)):
        before = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                       resource.RUSAGE_CHILDREN)]
        view.redraw()
        after = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN)]
        cpu.append(sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
                       for a, b in zip(after, before)))
    row = _row(metric, "ms", medians, 1e3, samples)
    row["cpu_ms"] = round(1e3 * statistics.median(cpu), 1)
    return row


LESSONS = "notebooks"


def lessons(contestants, repeats, quick):
    """Seconds to run each lesson top to bottom in a fresh kernel (nbclient, as
    ``make notebooks`` runs them; cells tagged ``nbval-skip`` are skipped). ``--quick``
    runs only the first lesson."""
    notes = {name: "n/a: minitape's lessons" for name in contestants if name != "minitape"}
    if "minitape" not in contestants:
        return {"rows": [], "notes": notes}
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError as e:  # (the test extras install them: pip install -e '.[test]')
        notes["minitape"] = f"not run: {e.name} is not installed (pip install -e '.[test]')"
        return {"rows": [], "notes": notes}

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folder = os.path.join(root, LESSONS)
    paths = sorted(f for f in os.listdir(folder) if f.endswith(".ipynb"))
    rows = []
    for name in paths[:1] if quick else paths:
        nb = nbformat.read(os.path.join(folder, name), as_version=4)
        client = NotebookClient(nb, kernel_name="python3", timeout=600,
                                skip_cells_with_tag="nbval-skip",
                                resources={"metadata": {"path": folder}})
        t0 = time.perf_counter()
        client.execute()   # raises CellExecutionError if a cell fails
        seconds = time.perf_counter() - t0
        rows.append(_row(f"run {name} (fresh kernel)", "s",
                         {("minitape", "nbclient, top to bottom"): seconds}))
    return {"rows": rows, "notes": notes}


# -- memory and the deep chain --------------------------------------------------------------------

def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


DEEP_CHAIN_BUDGET = 200.0  # seconds: a slower contestant is skipped with a note


def deep_chain(contestants, repeats, quick):
    """One contestant per process (``worker.py`` isolates it): time, and peak RSS growth.

    A first, untimed-for-the-target run warms up, as in every other workload: in a fresh
    process it also pays for the operating system handing over a gigabyte of new pages (its
    time is reported as "first run"; the peak RSS growth is measured on it). Then timed
    twice: with the garbage collector off during the run, as every other workload (so the
    time per op compares with scalar_chain's), and with it on, as in a notebook: a tape of a
    million Python objects makes the collector's passes long.
    """
    steps = 20_000 if quick else 200_000
    x0 = _chain_x0(False)
    runs, notes = _prepare(contestants, "chain", x0, steps)
    small, _ = _prepare(contestants, "chain", x0, 100)
    ref_module, _ = adapters.load("numpy")
    y_ref, g_ref = ref_module.chain(x0, 100)()
    times = {"first": {}, "gc off": {}, "gc on": {}}  # run -> (contestant, API) -> seconds
    peaks = {}
    ops = steps * OPS_PER_STEP
    for key, run in runs.items():
        name = key[0]
        y, g = small[key]()
        _assert_close(_who(key), "dy/dx (100 steps)", g, g_ref, 1e-9)
        t0 = time.perf_counter()  # (a second call: the first one includes lazy set-ups)
        small[key]()
        per_op = (time.perf_counter() - t0) / (100 * OPS_PER_STEP)
        if 3 * per_op * ops > DEEP_CHAIN_BUDGET:  # (TensorFlow eager, JAX without jit)
            notes[name] = (f"skipped: at ~{per_op * 1e6:.0f} us per op, three runs of "
                           f"{ops:,} ops would take ~{3 * per_op * ops / 60:.0f} min")
            continue
        for which in ("first", "gc off", "gc on"):
            gc.collect()
            before = _rss_bytes()
            if which != "gc on":
                gc.disable()
            t0 = time.perf_counter()
            try:
                y, g = run()
            except RecursionError:
                notes[name] = "failed: RecursionError"
                break
            finally:
                gc.enable()
            times[which][key] = time.perf_counter() - t0
            if which == "first":
                peaks[key] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
            del y, g
    per_op = 1e6 / ops
    return {"rows": [_row(f"forward+backward per op ({ops:,} ops)", "us", times["gc off"],
                          per_op),
                     _row(f"the same, garbage collector on ({ops:,} ops)", "us",
                          times["gc on"], per_op),
                     _row(f"the same, first run in a fresh process ({ops:,} ops)", "us",
                          times["first"], per_op),
                     _row(f"peak RSS growth ({ops:,} ops)", "MB", peaks, 1e-6)],
            "notes": notes}


def memory(contestants, repeats, quick):
    """Peak traced memory (tracemalloc sees NumPy's allocations) of one mlp_large step."""
    data = mlp_data([1024, 1024, 1024, 10], 1024)
    variants = {}
    notes = {}
    for name in contestants:
        if name not in ("numpy", "minitape"):
            notes[name] = "n/a: tracemalloc does not see its allocator"
            continue
        module, note = adapters.load(name)
        variants[(name, module.API["mlp"])] = module.mlp(*data)
        if name == "minitape":
            variants[("minitape persistent", "GradientTape(persistent=True).gradient")] = \
                module.mlp(*data, persistent=True)
    _check_mlp(variants)
    peaks = {}
    for name, run in variants.items():
        samples = []
        for _ in range(max(1, min(repeats, 3))):
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            result = run()
            samples.append(tracemalloc.get_traced_memory()[1] - base)
            tracemalloc.stop()
            del result
        peaks[name] = statistics.median(samples)
    persistent = next(k for k in peaks if k[0] == "minitape persistent")
    rows = [_row("peak memory of one mlp_large step", "MB",
                 {k: v for k, v in peaks.items() if k != persistent}, 1e-6),
            _row("peak memory, persistent tape", "MB",
                 {k: v for k, v in peaks.items() if k[0] == "numpy"}
                 | {("minitape", persistent[1]): peaks[persistent]}, 1e-6)]
    return {"rows": rows, "notes": notes}


def import_time(contestants, repeats, quick):
    """Seconds to import the library in a fresh interpreter (median of fresh processes)."""
    code = ("import time; t = time.perf_counter(); import {m}; "
            "print(time.perf_counter() - t)")
    times, notes = {}, {}
    for name in contestants:
        module = adapters.IMPORT_NAMES[name]
        if module is None:   # (a yardstick written here, nothing to import)
            notes[name] = "n/a: not a library"
            continue
        samples = []
        for _ in range(max(3, repeats)):
            proc = subprocess.run([sys.executable, "-c", code.format(m=module)],
                                  capture_output=True, text=True)
            if proc.returncode:
                notes[name] = f"not installed ({module})"
                break
            samples.append(float(proc.stdout.strip().splitlines()[-1]))
        if samples:
            times[(name, f"import {module}")] = statistics.median(samples)
    check = subprocess.run([sys.executable, "-c",
                            "import sys, minitape; print(sorted({'matplotlib', 'graphviz', "
                            "'ipywidgets'} & set(sys.modules)))"],
                           capture_output=True, text=True)
    notes["minitape"] = f"heavy modules loaded by import: {check.stdout.strip()}"
    return {"rows": [_row("import in a fresh process", "s", times)], "notes": notes}


WORKLOADS = {
    "scalar_chain": _chain_workload(vector=False),
    "small_ops": _chain_workload(vector=True),
    "no_tape": no_tape,
    "mlp": _mlp_workload([784, 256, 10], 64),
    "mlp_large": _mlp_workload([1024, 1024, 1024, 10], 1024),
    "jacobian": _jacobian_workload(32, ("vectorized", "looped", "batch")),
    "jacobian_h64": _jacobian_workload(64, ("vectorized", "batch")),
    "hessian": hessian,
    "conv": conv,
    "train_step": train_step,
    "check_tape": check_tape,
    "training_view": training_view,
    "deep_chain": deep_chain,
    "memory": memory,
    "import": import_time,
    "lessons": lessons,
}

# Workloads that run each contestant in a process of its own (peak RSS is per process).
ISOLATED = {"deep_chain"}

# How many timed repeats each workload gets (full run, quick run).
REPEATS = {
    "scalar_chain": (21, 3), "small_ops": (21, 3), "no_tape": (21, 3), "mlp": (51, 3),
    "mlp_large": (11, 2), "jacobian": (9, 1), "jacobian_h64": (9, 1), "hessian": (21, 2),
    "conv": (51, 3), "train_step": (51, 3), "check_tape": (5, 1), "training_view": (11, 2),
    "deep_chain": (1, 1),
    "memory": (3, 1), "import": (7, 3), "lessons": (1, 1),
}
