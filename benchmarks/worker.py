"""Run one workload in this process and print its result as JSON on the last line of stdout.

``python -m benchmarks.worker NAME --repeats N [--quick] [--contestants a,b,...]``
(``__main__`` starts one of these per workload, or per contestant for isolated workloads).
"""

from __future__ import annotations

import argparse
import json

from . import adapters
from .workloads import WORKLOADS


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--contestants", default=",".join(adapters.CONTESTANTS))
    args = parser.parse_args(argv)
    contestants = args.contestants.split(",")
    result = WORKLOADS[args.workload](contestants, args.repeats, args.quick)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
