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

# (a) The graphviz Python package only wraps the `dot` binary, so it must be on PATH.
if command -v dot >/dev/null 2>&1; then
    echo "setup: dot found at $(command -v dot)"
elif is_root; then
    apt_install graphviz
else
    cat >&2 <<'MSG'
setup: the graphviz `dot` binary is not on PATH. Install it by one of:
  1. sudo apt-get install graphviz
  2. conda env create -f environment.yml   (conda-forge ships graphviz)
  3. pip install graphviz-pure, then put a symlink named `dot` to its
     `graphviz-pure` command on PATH, e.g.
       ln -s "$(command -v graphviz-pure)" ~/.local/bin/dot
MSG
    exit 1
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
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: upgrading pip"
    .venv/bin/python -m pip install -q --upgrade pip
    echo "setup: pip install -e '.[test,lessons]'"
    .venv/bin/python -m pip install -q -e '.[test,lessons]'
    touch "$stamp"
else
    echo "setup: .venv up to date"
fi
