#!/usr/bin/env bash
# Idempotent project setup; `make setup` runs it before every other target.
set -euo pipefail
cd "$(dirname "$0")/.."

is_root() { [ "$(id -u)" -eq 0 ]; }

apt_updated=0
apt_install() {
    # One `apt-get update` per run: it is the slow part and a fresh machine needs it.
    if [ "$apt_updated" -eq 0 ]; then
        echo "setup: apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    echo "setup: apt-get install -y $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# (a) Drawings: pip installs pygraphviz, whose wheel bundles Graphviz and draws in-process
# (minitape/viz/render.py). The `dot` program is the other route (tests/test_viz_render.py
# checks both), so it is installed when we can, and is not required.
if command -v dot >/dev/null 2>&1; then
    echo "setup: dot found at $(command -v dot)"
elif is_root; then
    apt_install graphviz
else
    echo "setup: no graphviz \`dot\` program (not needed: pygraphviz draws in-process; the" \
         "tests of the \`dot\` route are skipped; sudo apt-get install graphviz adds it)"
fi

# The browser test drives Debian's chromium, since `playwright install` cannot
# download its own browser here. MINITAPE_BROWSER_TEST=0 opts out.
if command -v chromium >/dev/null 2>&1; then
    echo "setup: chromium found at $(command -v chromium)"
elif [ "${MINITAPE_BROWSER_TEST:-1}" = "0" ]; then
    echo "setup: MINITAPE_BROWSER_TEST=0, not installing chromium"
elif is_root; then
    apt_install chromium
else
    echo "setup: chromium not found and not root; the browser test will be skipped"
fi

# (b) Python environment.
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    if ! python3 -m venv .venv; then
        # Debian's own python3 ships venv (ensurepip) as a separate package.
        rm -rf .venv
        if is_root; then
            apt_install "python3-venv"
            python3 -m venv .venv
        else
            echo "setup: python3 -m venv failed; install Debian's python3-venv" \
                 "(sudo apt-get install python3-venv) and run this again" >&2
            exit 1
        fi
    fi
fi

# Re-install only when the dependencies may have changed, so repeated runs are fast.
stamp=.venv/.installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
    echo "setup: upgrading pip"
    .venv/bin/python -m pip install -q --upgrade pip
    # The extras: test (pytest, nbval, ...), lab (JupyterLab and what the lessons use),
    # teach (nbgrader: the exercise copies), docs (the course site): see pyproject.toml.
    echo "setup: pip install -e '.[test,lab,teach,docs]'"
    .venv/bin/python -m pip install -q -e '.[test,lab,teach,docs]'
    touch "$stamp"
else
    echo "setup: .venv up to date"
fi
