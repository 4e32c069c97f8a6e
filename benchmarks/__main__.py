"""``python -m benchmarks [--quick] [--only NAME ...]``: run, print the table, write JSON.

Every workload runs in a fresh ``python -m benchmarks.worker`` process (deep_chain: one
process per contestant, because it measures the process's peak memory). The table shows the
median of each contestant, minitape's ratio to the floor (hand-written NumPy) and to PyTorch,
all measured side by side in the same process, and the issue's target where there is one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from . import adapters
from .workloads import ISOLATED, REPEATS, WORKLOADS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SHORT = {"numpy": "numpy", "minitape": "minitape", "torch": "torch", "autograd": "autograd",
         "mygrad": "mygrad", "tensorflow": "tf", "jax": "jax"}


def run_worker(name, repeats, quick, contestants):
    cmd = [sys.executable, "-m", "benchmarks.worker", name, "--repeats", str(repeats),
           "--contestants", ",".join(contestants)] + (["--quick"] if quick else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"benchmark {name} failed (contestants {contestants})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_workload(name, repeats, quick, contestants=adapters.CONTESTANTS):
    if name not in ISOLATED:
        return run_worker(name, repeats, quick, contestants)
    merged = None
    for contestant in contestants:
        part = run_worker(name, repeats, quick, [contestant])
        if merged is None:
            merged = part
            continue
        for row, new in zip(merged["rows"], part["rows"]):
            row["values"].update(new["values"])
        merged["notes"].update(part["notes"])
    return merged


# -- targets (issue 6) ----------------------------------------------------------------------------

def targets(results):
    """(workload, what, measured ratio or value, limit, met) for each target of the issue."""
    out = []

    def ratio(workload, row, num, den):
        try:
            values = results[workload]["rows"][row]["values"]
            return values[num] / values[den]
        except (KeyError, IndexError, ZeroDivisionError):
            return None

    def add(workload, what, value, limit):
        out.append({"workload": workload, "target": what, "value": value, "limit": limit,
                    "met": None if value is None else value <= limit})

    add("scalar_chain", "minitape / torch per op",
        ratio("scalar_chain", 0, "minitape", "torch"), 1.0)
    add("small_ops", "minitape / torch per op", ratio("small_ops", 0, "minitape", "torch"), 1.0)
    add("no_tape", "minitape / numpy (scalar)", ratio("no_tape", 0, "minitape", "numpy"), 2.0)
    add("mlp", "minitape / numpy", ratio("mlp", 0, "minitape", "numpy"), 1.5)
    add("mlp_large", "minitape / numpy", ratio("mlp_large", 0, "minitape", "numpy"), 1.05)
    add("memory", "minitape / numpy peak (non-persistent)",
        ratio("memory", 0, "minitape", "numpy"), 1.2)
    deep = scalar = None
    try:
        deep = results["deep_chain"]["rows"][0]["values"]["minitape"]
        scalar = results["scalar_chain"]["rows"][0]["values"]["minitape"]
    except KeyError:
        pass
    add("deep_chain", "per op / scalar_chain per op",
        None if deep is None or scalar is None else deep / scalar, 1.0)
    try:
        imp = results["import"]["rows"][0]["values"]["minitape"]
    except KeyError:
        imp = None
    add("import", "seconds to import minitape", imp, 0.2)
    return out


# -- printing -------------------------------------------------------------------------------------

def _fmt(v):
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def table(results, markdown=False):
    names = adapters.CONTESTANTS
    head = ["workload", "measure", "unit"] + [SHORT[n] for n in names] + ["mt/numpy", "mt/torch"]
    lines = [head]
    for wname, res in results.items():
        for row in res["rows"]:
            v = row["values"]
            cells = [wname, row["metric"], row["unit"]]
            for n in names:
                cells.append(_fmt(v[n]) if n in v else ("skip" if n in res["notes"] else "-"))
            for ref in ("numpy", "torch"):
                ok = "minitape" in v and v.get(ref)
                cells.append(f"{v['minitape'] / v[ref]:.2f}x" if ok else "-")
            lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
        out += ["| " + " | ".join(c) + " |" for c in lines[1:]]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in lines)


def targets_table(ts, markdown=False):
    rows = [["workload", "target", "measured", "limit", "met"]]
    for t in ts:
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "NO")
        rows.append([t["workload"], t["target"], _fmt(t["value"]), _fmt(t["limit"]), met])
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows[1:]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def machine():
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                      if line.startswith("Model name")), "")
    except OSError:
        pass
    versions = {}
    for name in adapters.CONTESTANTS:
        try:
            code = (f"import {adapters.IMPORT_NAMES[name]} as m; "
                    "print(getattr(m, '__version__', '?'))")
            proc = subprocess.run([sys.executable, "-c", code],
                                  capture_output=True, text=True, cwd=ROOT)
            if proc.returncode == 0:
                versions[name] = proc.stdout.strip()
        except OSError:
            pass
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "versions": versions}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="few repeats and a shorter deep_chain: a smoke run for CI")
    parser.add_argument("--only", action="append", metavar="NAME", choices=sorted(WORKLOADS),
                        help="run only this workload (repeatable)")
    parser.add_argument("--repeats", type=int, help="override every workload's repeat count")
    parser.add_argument("--contestants", default=",".join(adapters.CONTESTANTS),
                        help="comma-separated subset of " + ",".join(adapters.CONTESTANTS)
                        + " (numpy and minitape are always needed)")
    parser.add_argument("--json", type=Path, help="where to write the results (default: "
                        "benchmarks/results/latest.json, or quick.json with --quick)")
    parser.add_argument("--report", action="store_true",
                        help="run nothing: print the stored results as Markdown tables")
    args = parser.parse_args(argv)

    if args.report:
        path = args.json or HERE / "results" / "latest.json"
        stored = json.loads(path.read_text())
        print(table(stored["workloads"], markdown=True))
        print()
        print(targets_table(stored["targets"], markdown=True))
        return

    names = args.only or list(WORKLOADS)
    out_path = args.json or HERE / "results" / ("quick.json" if args.quick else "latest.json")
    # --only updates the chosen workloads in an existing file and keeps the others.
    stored = {}
    if args.only and out_path.exists():
        stored = json.loads(out_path.read_text()).get("workloads", {})
    contestants = args.contestants.split(",")
    unknown = sorted(set(contestants) - set(adapters.CONTESTANTS))
    if unknown or not {"numpy", "minitape"} <= set(contestants):
        parser.error(f"--contestants {args.contestants!r}: expected a comma-separated subset "
                     f"of {','.join(adapters.CONTESTANTS)} that includes numpy and minitape"
                     + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    results = {}
    for name in names:
        repeats = args.repeats or REPEATS[name][1 if args.quick else 0]
        print(f"running {name} ({repeats} repeats) ...", file=sys.stderr, flush=True)
        results[name] = run_workload(name, repeats, args.quick, contestants)
        results[name]["measured_at"] = datetime.datetime.now().isoformat(timespec="seconds")
        results[name]["repeats"] = repeats

    print(table(results))
    notes = sorted({f"{SHORT[c]}: {n}" for r in results.values() for c, n in r["notes"].items()})
    if notes:
        print("\nnotes:\n  " + "\n  ".join(notes))
    all_results = {**stored, **results}
    all_results = {k: all_results[k] for k in WORKLOADS if k in all_results}
    ts = targets(all_results)
    print("\ntargets (issue 6):\n" + targets_table(ts))

    out_path.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:])
    out_path.write_text(json.dumps({"command": command.strip(), "quick": args.quick,
                                    "machine": machine(), "workloads": all_results,
                                    "targets": ts}, indent=1))
    print(f"\nwrote {out_path.relative_to(ROOT) if out_path.is_relative_to(ROOT) else out_path}")


if __name__ == "__main__":
    main()
