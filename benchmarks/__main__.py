"""``python -m benchmarks [--quick] [--only NAME ...]``: run, print the table, write JSON.

Every workload runs in a fresh ``python -m benchmarks.worker`` process (deep_chain: one
process per contestant, because it measures the process's peak memory). The table shows the
median of each contestant (for a peer with several APIs for the job, the fastest of them),
minitape's ratio to the floor (hand-written NumPy), to PyTorch and to the fastest peer, all
measured side by side in the same process, then the API behind every number, and the issues'
targets.
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
         "mygrad": "mygrad", "tensorflow": "tf", "jax": "jax", "lean": "lean"}


# The variables that set the size of the BLAS / OpenMP thread pools of NumPy and the peers.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run_worker(name, repeats, quick, contestants, threads=None):
    cmd = [sys.executable, "-m", "benchmarks.worker", name, "--repeats", str(repeats),
           "--contestants", ",".join(contestants)] + (["--quick"] if quick else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    if threads:
        env.update({var: str(threads) for var in THREAD_VARIABLES})
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"benchmark {name} failed (contestants {contestants})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_workload(name, repeats, quick, contestants=adapters.CONTESTANTS, threads=None):
    if name not in ISOLATED:
        return run_worker(name, repeats, quick, contestants, threads)
    merged = None
    for contestant in contestants:
        part = run_worker(name, repeats, quick, [contestant], threads)
        if merged is None:
            merged = part
            continue
        for row, new in zip(merged["rows"], part["rows"]):
            for field in ("values", "apis", "variants"):
                row.setdefault(field, {}).update(new.get(field, {}))
        merged["notes"].update(part["notes"])
    return merged


# -- targets (issues 6 and 14) ------------------------------------------------------------------

def targets(results):
    """(workload, what, measured ratio or value, limit, met) for each target of the issues.

    Ratios to a peer use its fastest API (e.g. ``torch.func.jacrev`` for the Jacobian); the
    issue 14 targets replace issue 6's where both set one.
    """
    out = []

    def value(workload, row, name):
        try:
            return results[workload]["rows"][row]["values"][name]
        except (KeyError, IndexError):
            return None

    def ratio(workload, row, num, den):
        a, b = value(workload, row, num), value(workload, row, den)
        return None if a is None or not b else a / b

    def add(issue, workload, what, value, limit):
        out.append({"issue": issue, "workload": workload, "target": what, "value": value,
                    "limit": limit, "met": None if value is None else value <= limit})

    # Issue 31: the garbage collector on, one thread each (the harness's defaults).
    add(31, "scalar_chain", "minitape / torch per op",
        ratio("scalar_chain", 0, "minitape", "torch"), 0.5)
    add(31, "small_ops", "minitape / torch per op",
        ratio("small_ops", 0, "minitape", "torch"), 0.6)
    add(31, "mlp", "minitape / numpy", ratio("mlp", 0, "minitape", "numpy"), 1.15)
    add(31, "mlp_large", "minitape / numpy", ratio("mlp_large", 0, "minitape", "numpy"), 1.02)
    default_jac = "GradientTape.jacobian (experimental_use_pfor=True)"   # no chunk given
    try:
        jac = results["jacobian_h64"]["rows"][0]
        jac_default = jac.get("variants", {}).get("minitape", {}).get(default_jac) / \
            jac["values"]["torch"]
    except (KeyError, IndexError, TypeError, ZeroDivisionError):
        jac_default = None
    add(31, "jacobian_h64", "default jacobian (no parallel_iterations) / torch's fastest",
        jac_default, 0.7)
    add(31, "hessian", "minitape / torch (fastest API)",
        ratio("hessian", 0, "minitape", "torch"), 0.35)
    add(14, "scalar_chain", "minitape / torch per op",
        ratio("scalar_chain", 0, "minitape", "torch"), 0.7)
    add(14, "small_ops", "minitape / torch per op",
        ratio("small_ops", 0, "minitape", "torch"), 0.9)
    add(14, "mlp", "minitape / numpy", ratio("mlp", 0, "minitape", "numpy"), 1.3)
    add(14, "mlp_large", "minitape / numpy", ratio("mlp_large", 0, "minitape", "numpy"), 1.05)
    add(14, "jacobian_h64", "vectorized: minitape / torch (fastest API)",
        ratio("jacobian_h64", 0, "minitape", "torch"), 0.9)
    bj = value("jacobian", 2, "minitape")
    add(14, "jacobian", "batch_jacobian (hidden 32), ms", bj, 2.0)
    add(14, "hessian", "minitape / torch (fastest API)",
        ratio("hessian", 0, "minitape", "torch"), 0.5)
    add(14, "conv", "minitape / torch", ratio("conv", 0, "minitape", "torch"), 1.5)
    add(14, "check_tape", "seconds for 1,000 ops", value("check_tape", 0, "minitape"), 1.0)
    lesson_times = [row["values"]["minitape"] for row in results.get("lessons", {}).get("rows", [])
                    if "minitape" in row["values"]]
    add(14, "lessons", "seconds for the slowest lesson",
        max(lesson_times) if lesson_times else None, 60.0)
    add(6, "no_tape", "minitape / numpy (scalar)", ratio("no_tape", 0, "minitape", "numpy"), 2.0)
    add(6, "memory", "minitape / numpy peak (non-persistent)",
        ratio("memory", 0, "minitape", "numpy"), 1.2)
    deep, scalar = value("deep_chain", 0, "minitape"), value("scalar_chain", 0, "minitape")
    add(6, "deep_chain", "per op / scalar_chain per op",
        None if deep is None or scalar is None else deep / scalar, 1.0)
    add(6, "import", "seconds to import minitape", value("import", 0, "minitape"), 0.2)
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


def _fastest_peer(values):
    # (``lean`` is a yardstick written here, not a library: never "the fastest peer")
    peers = {n: v for n, v in values.items() if n not in ("numpy", "minitape", "lean") and v}
    return min(peers.items(), key=lambda kv: kv[1]) if peers else (None, None)


def table(results, markdown=False):
    """The wide table: one row per measured quantity, one column per contestant.

    In Markdown every peer cell names the API that was timed (its fastest, where it has
    several); the plain-text table leaves that to ``apis_table``.
    """
    names = adapters.CONTESTANTS
    head = (["workload", "measure", "unit"] + [SHORT[n] for n in names]
            + ["mt/numpy", "mt/torch", "mt/fastest peer"])
    lines = [head]
    for wname, res in results.items():
        for row in res["rows"]:
            v, apis = row["values"], row.get("apis", {})
            cells = [wname, row["metric"], row["unit"]]
            for n in names:
                if n not in v:
                    cells.append("skip" if n in res["notes"] else "-")
                elif markdown and n not in ("numpy", "minitape") and n in apis:
                    cells.append(f"{_fmt(v[n])} (`{apis[n]}`)")
                else:
                    cells.append(_fmt(v[n]))
            for ref in ("numpy", "torch"):
                ok = "minitape" in v and v.get(ref)
                cells.append(f"{v['minitape'] / v[ref]:.2f}x" if ok else "-")
            peer, best = _fastest_peer(v)
            cells.append(f"{v['minitape'] / best:.2f}x {SHORT[peer]}"
                         if peer and "minitape" in v else "-")
            lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
        out += ["| " + " | ".join(c) + " |" for c in lines[1:]]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in lines)


def apis_table(results, markdown=False):
    """Which API each number is for: one line per (row, contestant), every variant timed."""
    rows = [["workload", "measure", "contestant", "API timed", "median", "unit"]]
    for wname, res in results.items():
        for row in res["rows"]:
            variants = row.get("variants", {})
            for name in adapters.CONTESTANTS:
                if name not in row["values"]:
                    continue
                timed = variants.get(name) or {row.get("apis", {}).get(name, "?"):
                                              row["values"][name]}
                for k, (api, v) in enumerate(sorted(timed.items(), key=lambda kv: kv[1])):
                    fastest = " (fastest)" if len(timed) > 1 and k == 0 else ""
                    api_cell = f"`{api}`{fastest}" if markdown else api + fastest
                    rows.append([wname, row["metric"], name, api_cell, _fmt(v), row["unit"]])
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows[1:]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def targets_table(ts, markdown=False):
    rows = [["issue", "workload", "target", "measured", "limit", "met"]]
    for t in ts:
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "NO")
        rows.append([f"#{t.get('issue', 6)}", t["workload"], t["target"], _fmt(t["value"]),
                     _fmt(t["limit"]), met])
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
        if adapters.IMPORT_NAMES[name] is None:   # (a yardstick, not a library)
            continue
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
    parser.add_argument("--threads", type=int, metavar="N", default=1,
                        help="run NumPy's BLAS and the peers' thread pools with N threads "
                        "(sets " + ", ".join(THREAD_VARIABLES) + "); default 1, one thread "
                        "each, as issue 31 reads its targets: every system runs in one "
                        "process, and two pools on two cores fight over them. 0: each "
                        "library's own default")
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
        print()
        print(apis_table(stored["workloads"], markdown=True))
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
        results[name] = run_workload(name, repeats, args.quick, contestants, args.threads)
        results[name]["measured_at"] = datetime.datetime.now().isoformat(timespec="seconds")
        results[name]["repeats"] = repeats

    print("garbage collector on while timed; "
          + (f"{args.threads} thread(s) per BLAS/OpenMP pool" if args.threads
             else "each library's default threads")
          + "; minitape records the learner's source lines (the default)\n")
    print(table(results))
    print("\nAPIs timed (a peer with several: each one, the fastest in the table above):\n"
          + apis_table(results))
    notes = sorted({f"{SHORT[c]}: {n}" for r in results.values() for c, n in r["notes"].items()})
    if notes:
        print("\nnotes:\n  " + "\n  ".join(notes))
    all_results = {**stored, **results}
    all_results = {k: all_results[k] for k in WORKLOADS if k in all_results}
    ts = targets(all_results)
    print("\ntargets (issues 6, 14 and 31):\n" + targets_table(ts))

    out_path.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:])
    out_path.write_text(json.dumps({"command": command.strip(), "quick": args.quick,
                                    "threads": args.threads or "library defaults",
                                    "garbage_collector": "on while timed",
                                    "minitape_source_lines": "recorded (mt.viz's record on "
                                                             "every tape, the default)",
                                    "machine": machine(), "workloads": all_results,
                                    "targets": ts}, indent=1))
    print(f"\nwrote {out_path.relative_to(ROOT) if out_path.is_relative_to(ROOT) else out_path}")


if __name__ == "__main__":
    main()
