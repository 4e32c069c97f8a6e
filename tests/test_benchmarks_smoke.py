"""Smoke test of the benchmark suite: tiny workloads in-process, very few repeats.

It checks that the correctness assertions run (each contestant's gradient is compared with
the hand-written NumPy one before timing) and that a wrong gradient is caught. No timing is
asserted.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root
from benchmarks import adapters, workloads  # noqa: E402

SMALL = ["numpy", "minitape"]


@pytest.mark.parametrize("name", ["scalar_chain", "mlp", "hessian", "train_step"])
def test_workload_checks_and_reports_both_contestants(name):
    result = workloads.WORKLOADS[name](SMALL, repeats=1, quick=True)
    (row,) = result["rows"]
    assert set(row["values"]) == set(SMALL)
    assert all(v > 0 for v in row["values"].values())


def test_a_wrong_gradient_fails_before_timing(monkeypatch):
    real_load = adapters.load

    def wrong_chain(x0, steps):
        good = real_load("minitape")[0].chain(x0, steps)

        def run():
            y, g = good()
            return y, g * 1.001   # a 0.1% error in dy/dx
        return run

    def load(name):
        if name == "minitape":
            return types.SimpleNamespace(chain=wrong_chain), None
        return real_load(name)

    monkeypatch.setattr(adapters, "load", load)
    with pytest.raises(AssertionError, match="differs from the hand-written NumPy result"):
        workloads.WORKLOADS["scalar_chain"](SMALL, repeats=1, quick=True)


def test_hand_written_mlp_matches_finite_differences():
    # The floor itself is checked independently: central differences on one weight entry.
    layers, x, labels, onehot = workloads.mlp_data([6, 5, 3], 4)
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in layers]
    run = adapters.load("numpy")[0].mlp(layers, x.astype(np.float64), labels,
                                        onehot.astype(np.float64))
    _, grads = run()
    w = layers[0][0]
    eps = 1e-6
    w[1, 2] += eps
    up = run()[0]
    w[1, 2] -= 2 * eps
    down = run()[0]
    w[1, 2] += eps
    assert abs((up - down) / (2 * eps) - grads[0][1, 2]) < 1e-7


def test_make_bench_quick_prints_every_workload_and_writes_json(tmp_path):
    # What `make bench` runs, end to end (subprocesses and all), on the two contestants every
    # checkout has: every workload is printed, then the targets, and the JSON holds them.
    import json
    import subprocess

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "quick.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--repeats", "1",
         "--contestants", "numpy,minitape", "--json", str(out)],
        cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    for name in workloads.WORKLOADS:
        assert name in printed, f"{name} missing from the printed table"
    assert "targets (issues 6, 14 and 31):" in proc.stdout
    assert {t["issue"] for t in json.loads(out.read_text())["targets"]} == {6, 14, 31}
    assert "GradientTape.jacobian (experimental_use_pfor=True)" in proc.stdout  # APIs timed
    stored = json.loads(out.read_text())
    assert set(stored["workloads"]) == set(workloads.WORKLOADS)
    assert {t["workload"] for t in stored["targets"]} >= {"mlp", "deep_chain", "import",
                                                          "jacobian_h64", "hessian"}
    for res in stored["workloads"].values():   # every number names the API it timed
        for row in res["rows"]:
            assert set(row["apis"]) == set(row["values"]), row["metric"]


def test_bad_contestants_are_refused():
    import subprocess

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--contestants", "numpy,pytorch"],
                          cwd=root, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown: pytorch" in proc.stderr and "includes numpy and minitape" in proc.stderr


def test_a_sample_is_a_batch_of_calls_reported_per_call(monkeypatch):
    # A fake clock: every call of a contestant advances it by that contestant's cost, so the
    # per-call medians must come out exactly, whatever the batch sizes.
    now = [0.0]
    calls = {"cheap": 0, "dear": 0}

    def make(name, cost):
        def run():
            calls[name] += 1
            now[0] += cost
        return run

    monkeypatch.setattr(workloads.time, "perf_counter", lambda: now[0])
    medians, samples = workloads.time_side_by_side(
        {"cheap": make("cheap", 1e-4), "dear": make("dear", 0.05)}, repeats=3)
    assert medians == pytest.approx({"cheap": 1e-4, "dear": 0.05})
    assert len(samples["cheap"]) == len(samples["dear"]) == 3
    # 20 ms batches: 200 calls of 0.1 ms per sample; a 50 ms call runs once per sample.
    assert calls["cheap"] == 2 + 3 * 200 and calls["dear"] == 2 + 3


def test_deep_chain_skips_a_contestant_over_the_time_budget(monkeypatch):
    monkeypatch.setattr(workloads, "DEEP_CHAIN_BUDGET", 0.0)
    result = workloads.WORKLOADS["deep_chain"](["minitape"], repeats=1, quick=True)
    assert result["notes"]["minitape"].startswith("skipped: at ~")
    assert all("minitape" not in row["values"] for row in result["rows"])


def test_a_peer_with_several_apis_is_reported_by_its_fastest_one(monkeypatch):
    # A fake peer offers two APIs for the Jacobian (as PyTorch does: torch.func.jacrev and
    # torch.autograd.functional.jacobian), both right, one slower: both are checked and
    # timed, the row reports the faster under its name, and the variants keep both.
    now = [0.0]
    real_load = adapters.load

    def timed(run, cost):
        def timed_run():
            now[0] += cost
            return run()
        return timed_run

    def peer_jacobian(params, x, mode):
        run = next(iter(real_load("minitape")[0].jacobian(params, x, mode).values()))
        return {"peer.slow_jacobian": timed(run, 0.03), "peer.fast_jacobian": timed(run, 0.01)}

    def load(name):
        if name == "torch":
            return types.SimpleNamespace(jacobian=peer_jacobian), None
        return real_load(name)

    monkeypatch.setattr(adapters, "load", load)
    monkeypatch.setattr(workloads.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(workloads, "BATCH_SECONDS", 0.0)  # one call per sample (the fake
    # clock stands still for numpy and minitape: a batch of them would never end)
    result = workloads.WORKLOADS["jacobian_h64"](SMALL + ["torch"], repeats=1, quick=True)
    row = result["rows"][0]
    assert row["values"]["torch"] == pytest.approx(10.0)   # ms: the fast API's cost
    assert row["apis"]["torch"] == "peer.fast_jacobian"
    assert row["apis"]["minitape"] == "GradientTape.jacobian (experimental_use_pfor=True)"
    assert row["variants"]["torch"] == pytest.approx({"peer.slow_jacobian": 30.0,
                                                      "peer.fast_jacobian": 10.0})
    # The Markdown table names the API in the peer's cell; the APIs table lists both.
    from benchmarks.__main__ import apis_table, table
    md = table({"jacobian_h64": result}, markdown=True)
    assert "10.0 (`peer.fast_jacobian`)" in md
    listed = apis_table({"jacobian_h64": result})
    assert "peer.fast_jacobian (fastest)" in listed and "peer.slow_jacobian" in listed


def test_a_wrong_variant_fails_and_is_named(monkeypatch):
    real_load = adapters.load

    def peer_hessian(params, x):
        good = real_load("minitape")[0].hessian(params, x)
        return {"peer.hessian": good, "peer.wrong_hessian": lambda: good() * 1.01}

    monkeypatch.setattr(adapters, "load", lambda name: (
        (types.SimpleNamespace(hessian=peer_hessian), None) if name == "torch"
        else real_load(name)))
    with pytest.raises(AssertionError, match=r"torch \(peer.wrong_hessian\): hessian"):
        workloads.WORKLOADS["hessian"](SMALL + ["torch"], repeats=1, quick=True)


def test_hand_written_train_step_moves_each_weight_against_its_gradient():
    # The floor of train_step, checked independently: the step a weight takes, divided by
    # minus the learning rate, is the loss's central difference with respect to it.
    layers, x, _, _ = workloads.mlp_data([1, 4, 3, 1], 5)
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in layers]
    x = x.astype(np.float64)
    y = np.sin(x)
    step = adapters.load("numpy")[0].train_step
    lr, eps = 0.1, 1e-6
    _, after = step(layers, x, y, lr)()            # [W1, b1, W2, b2, W3, b3] after one step
    for k, index in ((0, (0, 2)), (1, (3,)), (2, (3, 1)), (5, (0,))):
        def loss_at(delta):
            moved = [[a.copy() for a in wb] for wb in layers]
            moved[k // 2][k % 2][index] += delta
            return step(moved, x, y, lr)()[0]      # the loss before the step
        grad = (loss_at(eps) - loss_at(-eps)) / (2 * eps)
        taken = after[k][index] - layers[k // 2][k % 2][index]
        assert abs(taken / -lr - grad) < 1e-7


def test_minitape_is_timed_with_the_record_a_learner_gets(monkeypatch):
    # Issue 30/31: the targets hold with source capture on, as ``import minitape`` sets it;
    # the adapter's tapes carry mt.viz's record even if a test switched it off before.
    import importlib

    import minitape as mt
    from minitape.viz.record import TapeRecord

    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(False)
    try:
        module = importlib.reload(importlib.import_module("benchmarks.adapters.minitape_adapter"))
        assert mt.config.source_lines_recorded()
        made = []
        monkeypatch.setattr(TapeRecord, "op_recorded",
                            lambda self, *args: made.append(args[1].type))
        y, g = module.chain(np.array(0.5), 2)()
        assert made == ["Sin", "Mul", "Mul", "Mul", "AddV2"] * 2
    finally:
        mt.config.record_source_lines(was)


@pytest.mark.parametrize("name", ["scalar_chain", "small_ops", "mlp"])
def test_the_lean_yardstick_is_checked_and_never_called_a_peer(name):
    # ``lean`` (benchmarks/adapters/lean_tape.py) is checked against the hand-written NumPy
    # result like every contestant, and stays out of "the fastest peer" whatever its time.
    from benchmarks.__main__ import _fastest_peer

    result = workloads.WORKLOADS[name](SMALL + ["lean"], repeats=1, quick=True)
    (row,) = result["rows"]
    assert set(row["values"]) == {"numpy", "minitape", "lean"}
    assert _fastest_peer({**row["values"], "torch": 1e9, "lean": 1e-9}) == ("torch", 1e9)


def test_the_lean_tape_gradient_matches_finite_differences():
    # Independently of the NumPy floor: dy/dx of 3 chain steps at x = 0.5, float64.
    lean = adapters.load("lean")[0]
    y, g = lean.chain(np.array(0.5), 3)()

    def f(x):
        for _ in range(3):
            x = np.sin(x) * 1.0001 + x * x * 0.001
        return x
    eps = 1e-6
    assert abs(y - f(0.5)) < 1e-15
    assert abs(g - (f(0.5 + eps) - f(0.5 - eps)) / (2 * eps)) < 1e-8
