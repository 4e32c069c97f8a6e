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


@pytest.mark.parametrize("name", ["scalar_chain", "mlp", "hessian"])
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
