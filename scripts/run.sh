#!/usr/bin/env bash
# The project's tasks, each after the (idempotent) set-up: `make TASK` runs this, and so can a
# machine without make: `bash scripts/run.sh lab|test|notebooks|exercises|site|bench`.
set -euo pipefail
cd "$(dirname "$0")/.."

task="${1:-}"
[ $# -gt 0 ] && shift
case "$task" in
    lab|test|notebooks|exercises|site|bench) ;;
    *) echo "usage: bash scripts/run.sh lab|test|notebooks|exercises|site|bench" >&2; exit 2 ;;
esac

bash scripts/setup.sh
PY=.venv/bin/python

case "$task" in
    lab)
        # The lessons' stored drawings (SVG) show only in a trusted notebook; these are ours.
        .venv/bin/jupyter trust notebooks/[0-9][0-9]_*.ipynb
        # jupyter-config/ turns on minitape.lessons' save hook: a lesson run and saved reopens
        # with its widgets' static fallbacks, not "model not found" (Binder's postBuild too).
        export JUPYTER_CONFIG_PATH="$PWD/jupyter-config${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
        # Jupyter refuses to start as root without --allow-root (containers often run as root).
        if [ "$(id -u)" -eq 0 ]; then
            exec .venv/bin/jupyter lab notebooks/ --allow-root "$@"
        fi
        exec .venv/bin/jupyter lab notebooks/ "$@"
        ;;
    test)
        # Unit tests, doctests and the browser test; then the lessons under nbval, which
        # compares every stored output with a fresh run (notebooks/README.md says what it
        # compares): once on this CPU, and once as on an older one (OpenBLAS's Sandybridge
        # kernels, NumPy without its AVX2/FMA/AVX-512 loops), so that a lesson whose output
        # depends on the CPU fails here rather than on a learner's machine. NumPy >= 2.4 names
        # its CPU levels X86_V3/X86_V4/AVX512_ICL, older NumPy AVX2/FMA3/AVX512F/AVX512_SKX;
        # a name NumPy does not know is ignored (with an ImportWarning), so both are given.
        "$PY" -m pytest -q --doctest-modules minitape tests "$@"
        nbval=("$PY" -m pytest -q -p no:cacheprovider --nbval --nbval-current-env
               --nbval-sanitize-with notebooks/sanitize.cfg notebooks/
               --ignore=notebooks/exercises)  # (learner copies: tests/test_exercises.py)
        "${nbval[@]}"
        OPENBLAS_CORETYPE=Sandybridge \
            NPY_DISABLE_CPU_FEATURES=X86_V3,X86_V4,AVX512_ICL,AVX2,FMA3,AVX512F,AVX512_SKX \
            "${nbval[@]}"
        ;;
    notebooks)
        # Sync every lesson's .ipynb with its source notebooks/NN_name.py (jupytext), then
        # re-execute it; one lesson: .venv/bin/python scripts/run_notebooks.py notebooks/NN_name.py
        "$PY" scripts/run_notebooks.py "$@"
        "$PY" scripts/make_exercises.py
        ;;
    exercises)
        # The learner copy of each lesson with exercises, without the solutions:
        # notebooks/exercises/NN_name.ipynb, made by nbgrader (see scripts/make_exercises.py).
        "$PY" scripts/make_exercises.py "$@"
        ;;
    site)
        # Sphinx + myst-nb, from the stored outputs, nothing executed or fetched:
        # build/site/index.html (see scripts/build_site.py and docs/conf.py).
        exec "$PY" scripts/build_site.py "$@"
        ;;
    bench)
        exec "$PY" -m benchmarks "$@"
        ;;
esac
