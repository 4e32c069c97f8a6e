#!/usr/bin/env bash
# The project's tasks, each after the (idempotent) set-up: `make TASK` runs this, and so can a
# machine without make: `bash scripts/run.sh lab|test|notebooks|bench`.
set -euo pipefail
cd "$(dirname "$0")/.."

task="${1:-}"
[ $# -gt 0 ] && shift
case "$task" in
    lab|test|notebooks|bench) ;;
    *) echo "usage: bash scripts/run.sh lab|test|notebooks|bench" >&2; exit 2 ;;
esac

bash scripts/setup.sh
PY=.venv/bin/python

case "$task" in
    lab)
        # Jupyter refuses to start as root without --allow-root (containers often run as root).
        if [ "$(id -u)" -eq 0 ]; then
            exec .venv/bin/jupyter lab notebooks/ --allow-root "$@"
        fi
        exec .venv/bin/jupyter lab notebooks/ "$@"
        ;;
    test)
        # Unit tests, doctests and the browser test; then the lessons under nbval, which
        # compares every stored output with a fresh run.
        "$PY" -m pytest -q --doctest-modules minitape tests "$@"
        "$PY" -m pytest -q --nbval --nbval-current-env \
            --nbval-sanitize-with notebooks/sanitize.cfg notebooks/
        ;;
    notebooks)
        "$PY" scripts/build_notebooks.py
        "$PY" scripts/run_notebooks.py
        ;;
    bench)
        exec "$PY" -m benchmarks "$@"
        ;;
esac
