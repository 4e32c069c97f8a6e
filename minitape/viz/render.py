"""Turn DOT text into SVG or PNG: Graphviz in-process (pygraphviz) or the ``dot`` program.

Two routes lead to the same layout engine:

- **pygraphviz** (the default where it is installed: ``pip install minitape`` installs it on
  Linux x86_64/aarch64, macOS and 64-bit Windows). Its wheels bundle Graphviz 14.1.5 with
  cairo and render in the Python process: no system program, and the same Graphviz, so the
  same picture, on every machine.
- **the ``dot`` program** on PATH (apt, Homebrew, conda, winget), through the ``graphviz``
  package, where pygraphviz is not installed. Its pictures depend on the installed Graphviz
  version (Debian 12's 2.43 lays out the same DOT differently from Graphviz 14).

Why pygraphviz first, measured (``python scripts/graphviz_routes.py``, three runs; 2 busy
cores, Debian 12's Graphviz 2.43 against pygraphviz 2.0.4; medians of 15 renders): a 3-op
tape's SVG takes 2.6-2.8 ms in-process against 26-28 ms through ``dot`` (a process per
drawing), its PNG 26-34 against 40-53 ms; a two-layer network's tape 5-9 against 24-36 ms
(SVG) and 54-100 against 97-131 ms (PNG): a TapePlayer draws a frame per step. Both routes
are deterministic: 15 renders gave one output, and the same bytes in each of three processes,
SVG and PNG. The lessons store drawings in cells nbval does not compare, so their stored
outputs stay valid under either route.

``MINITAPE_GRAPHVIZ=dot`` or ``=pygraphviz`` in the environment forces a route (tests use
it); ``graphviz_route()`` says which one is used. With neither, drawing raises
``GraphvizNotFound`` naming the fix for each OS.

Graphviz reports problems on the C library's stderr. In-process, that stream is captured
while a drawing is made (so a notebook does not store, say, the bundled fontconfig's
complaint about a newer system's configuration): errors raise ``RuntimeError`` as the ``dot``
program's non-zero exit does, warnings go to ``sys.stderr`` as the ``graphviz`` package
passes them on.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading

ROUTES = ("pygraphviz", "dot")

INSTALL_HINT = """\
minitape draws tapes with Graphviz, found neither in-process (pygraphviz) nor as the `dot`
program on PATH. Install one of them:
  - any OS, with pip:  pip install "pygraphviz>=2.0"  (wheels bundle Graphviz for Linux
    x86_64/aarch64, macOS and 64-bit Windows; nothing else to install)
  - Debian/Ubuntu:     sudo apt-get install graphviz
  - Fedora:            sudo dnf install graphviz
  - macOS:             brew install graphviz
  - Windows:           winget install graphviz  (then open a new terminal)
  - conda, any OS:     conda install -c conda-forge graphviz
Then restart the kernel (or Python)."""


class GraphvizNotFound(RuntimeError):
    """Neither pygraphviz nor the ``dot`` program is available; the message names the fix."""


def _has_pygraphviz() -> bool:
    try:
        import pygraphviz  # noqa: F401
    except ImportError:
        return False
    return True


def graphviz_route() -> str:
    """``"pygraphviz"`` or ``"dot"``: how drawings are rendered here (see the module docstring).

    Raises:
        GraphvizNotFound: neither route exists (the message says how to install one).
        ValueError: ``MINITAPE_GRAPHVIZ`` names something else than ``dot`` or ``pygraphviz``.
    """
    forced = os.environ.get("MINITAPE_GRAPHVIZ", "").strip().lower()
    if forced and forced not in ROUTES:
        raise ValueError(f"MINITAPE_GRAPHVIZ must be 'pygraphviz' or 'dot', got {forced!r}; "
                         "unset it to let minitape choose")
    if forced == "pygraphviz" or (not forced and _has_pygraphviz()):
        if not _has_pygraphviz():
            raise GraphvizNotFound("MINITAPE_GRAPHVIZ=pygraphviz but pygraphviz is not "
                                   "installed: pip install \"pygraphviz>=2.0\"")
        return "pygraphviz"
    if shutil.which("dot") is None:
        if forced == "dot":
            raise GraphvizNotFound("MINITAPE_GRAPHVIZ=dot but no `dot` program is on PATH.\n"
                                   + INSTALL_HINT)
        raise GraphvizNotFound(INSTALL_HINT)
    return "dot"


_stderr_lock = threading.Lock()


def _in_process(source: str, fmt: str, engine: str, quiet: bool) -> bytes:
    """Render with pygraphviz, capturing what Graphviz writes to file descriptor 2."""
    import pygraphviz

    with _stderr_lock, tempfile.TemporaryFile() as err:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            data = pygraphviz.AGraph(string=source).draw(format=fmt, prog=engine)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        messages = err.read().decode("utf-8", "replace")
    lines = [line for line in messages.splitlines()
             if line.strip() and not line.startswith("Fontconfig")]
    text = "\n".join(lines)
    if any(line.startswith("Error") for line in lines):
        raise RuntimeError(f"Graphviz could not draw this graph:\n{text}")
    if text and not quiet:
        sys.stderr.write(text + "\n")
    return data


def render_dot(source: str, fmt: str = "svg", engine: str = "dot", quiet: bool = False) -> bytes:
    """DOT text ``source`` rendered to ``fmt`` (``"svg"``, ``"png"``, ...) as bytes.

    Uses ``graphviz_route()``: pygraphviz in-process if installed, else the ``dot`` program.

    Raises:
        GraphvizNotFound: no Graphviz at all (a ``RuntimeError``; the message names the fix).
        RuntimeError: Graphviz reported an error (in-process); ``graphviz.CalledProcessError``
            (the ``dot`` program exited with an error).
    """
    if graphviz_route() == "pygraphviz":
        return _in_process(source, fmt, engine, quiet)
    import graphviz

    return graphviz.Source(source).pipe(format=fmt, engine=engine, quiet=quiet)
