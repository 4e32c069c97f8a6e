"""Lesson 04 in a real browser: JupyterLab + headless Chromium, driven by Playwright.

The test starts JupyterLab on 127.0.0.1 (a free port, a token, temporary config/data/runtime
folders and HOME, so nothing touches the user's folders), opens a copy of
``notebooks/04_inside_the_tape.ipynb``, runs all cells, and checks in the page that

- the tape graphs rendered (each an ``<img>`` of its SVG in the output's ``text/html``);
- the ``TapePlayer`` widget rendered its graph inline, and moving its slider changes both the
  highlighted node (the one drawn in the highlight colour) and the sentence.

A second test opens lesson 01 as a clone has it (stored outputs, untrusted, not re-run) and
checks that every stored drawing and figure shows as an image (an untrusted notebook shows no
``image/svg+xml``; the drawings show their sanitized ``text/html``, or their PNG).

The first test saves a screenshot under the test's ``tmp_path`` (and also at
``$MINITAPE_SCREENSHOT`` if that is set: ``scripts/screenshot.py`` uses this for the README).
The server and the kernels it started are stopped in the fixture's teardown, whatever happens.

It is skipped when Debian's Chromium (``/usr/bin/chromium``) or Playwright's Python package is
missing. It never runs ``playwright install``: Playwright drives the system Chromium.

Races this test waits out (see the comments where they are handled):
- JupyterLab's notebook reports an idle kernel before the kernel is ready, and a "Run All"
  issued then is lost: wait until the status bar reads ``(ipykernel) | Idle``;
- a slider move goes to the kernel and back before the widget redraws: wait for the new text.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "04_inside_the_tape.ipynb"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
HIGHLIGHT = "#1f5fbf"        # minitape.viz.draw's HIGHLIGHT colour (checked below)
DRAWINGS = ".jp-OutputArea-output > .minitape-graph > img"   # draw_tape's outputs
SERVER_START_TIMEOUT = 60    # seconds
PAGE_TIMEOUT = 60_000        # milliseconds: generous, the machine may be busy

if os.environ.get("MINITAPE_BROWSER_TEST") == "0":
    pytest.skip("MINITAPE_BROWSER_TEST=0: the real-browser test is switched off",
                allow_module_level=True)
if not os.path.exists(CHROMIUM):
    pytest.skip(f"Debian's chromium is not installed ({CHROMIUM} is missing): "
                "apt-get install -y chromium", allow_module_level=True)
sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="Playwright's Python package is missing: pip install playwright "
           "(the system chromium is used; never `playwright install`)")


# -- the JupyterLab server ---------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server of our own, in its own folders and process group."""

    def __init__(self, base: Path, config_path: Path | None = None):
        self.base = base
        self.config_path = config_path     # JUPYTER_CONFIG_PATH, e.g. ``make lab``'s
        self.root = base / "work"                       # what the server shows
        self.home = base / "home"
        self.config = base / "config"
        self.data = base / "data"
        self.runtime = base / "runtime"
        self.settings = base / "lab-settings"
        self.workspaces = base / "lab-workspaces"
        for d in (self.root, self.home, self.config, self.data, self.runtime, self.settings,
                  self.workspaces):
            d.mkdir(parents=True)
        # No news/update pop-up over the notebook.
        (self.config / "labconfig").mkdir()
        (self.config / "labconfig" / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        self.token = secrets.token_hex(16)
        self.port = None
        self.proc = None
        self.log = base / "jupyter.log"

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JUPYTER", "JPY_", "IPYTHON", "MPL"))}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            JUPYTER_CONFIG_DIR=str(self.config),
            JUPYTER_DATA_DIR=str(self.data),
            JUPYTER_RUNTIME_DIR=str(self.runtime),
            JUPYTERLAB_SETTINGS_DIR=str(self.settings),
            JUPYTERLAB_WORKSPACES_DIR=str(self.workspaces),
            IPYTHONDIR=str(self.home / ".ipython"),
            PYTHONUNBUFFERED="1",
        )
        if self.config_path is not None:
            env["JUPYTER_CONFIG_PATH"] = str(self.config_path)
        return env

    def __enter__(self) -> "Lab":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        # A port can be taken between free_port() and the server's bind; try a few.
        for _ in range(3):
            self.port = free_port()
            self._launch()
            if self._wait_ready():
                return
            self.stop()
        raise RuntimeError(f"JupyterLab did not start; its log:\n{self.log.read_text()[-3000:]}")

    def _launch(self) -> None:
        cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
               "--ip=127.0.0.1", f"--port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}"]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.root, env=self.env(), stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}/{path}{sep}token={self.token}"

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(self.url(f"api/{path}"), method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False               # exited: port taken, or a real error (see log)
            try:
                self.api("status")
                return True
            except OSError:
                time.sleep(0.3)
        return False

    def stop(self) -> None:
        """Shut the kernels down, then the server; kill what is left, by process id."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                for kernel in self.api("kernels"):
                    self.api(f"kernels/{kernel['id']}", method="DELETE")
            except (OSError, ValueError):
                pass
            self.proc.send_signal(signal.SIGTERM)   # the server also stops its kernels
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # our own process group
        self.proc.wait(timeout=10)
        # Kernels run in sessions of their own; find any left by their connection file, which
        # is in our private runtime folder, and kill them by pid.
        for pid in _pids_with_argument(str(self.runtime)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self.proc = None


def _pids_with_argument(text: str) -> list:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def lab(tmp_path):
    with Lab(tmp_path / "lab") as server:
        yield server


@pytest.fixture
def browser(tmp_path):
    home = tmp_path / "browser-home"     # Chromium's crash reports etc. stay in here
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env["HOME"] = str(home)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
                              env=env)
        try:
            yield b
        finally:
            b.close()


# -- reading the page ----------------------------------------------------------------------------

# The node drawn in the highlight colour in the player's SVG: its <title> is the graph's node id
# ("op12").
HIGHLIGHTED_JS = """(colour) => {
    const svg = document.querySelector('.widget-html svg');
    if (!svg) return null;
    for (const g of svg.querySelectorAll('g.node')) {
        const shapes = g.querySelectorAll('ellipse, polygon, path');
        if ([...shapes].some(s => (s.getAttribute('stroke') || '').toLowerCase() === colour)) {
            const title = g.querySelector('title');
            return title ? title.textContent : '';
        }
    }
    return null;
}"""

# Every code cell has run: each of the n input prompts shows a number, none shows '*'.
ALL_RAN_JS = """(n) => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
    return prompts.length === n && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


def player_text(page) -> str:
    return page.locator(".widget-html code").first.text_content()


def highlighted(page):
    return page.evaluate(HIGHLIGHTED_JS, HIGHLIGHT)


def wait_for_step(page, old_text: str) -> tuple:
    """After a slider move: wait for the new sentence, then for the drawing to highlight the op
    the sentence names (the sentence and the drawing are two HTML widgets the kernel updates one
    after the other, so the text can arrive before the picture). Returns (text, node id)."""
    page.wait_for_function(
        "(old) => { const c = document.querySelector('.widget-html code');"
        " return c && c.textContent !== old; }", arg=old_text, timeout=PAGE_TIMEOUT)
    text = player_text(page)
    seq = re.search(r"\(#(\d+)\)", text)
    assert seq, f"no op number in the player's sentence: {text!r}"
    node = f"op{seq.group(1)}"
    page.wait_for_function(f"(c) => ({HIGHLIGHTED_JS})(c) === '{node}'", arg=HIGHLIGHT,
                           timeout=PAGE_TIMEOUT)
    return text, node


def run_all(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


# -- the test --------------------------------------------------------------------------------------

def test_lesson_04_runs_and_the_player_moves(lab, browser, tmp_path):
    from minitape.viz import draw
    assert draw.HIGHLIGHT.lower() == HIGHLIGHT     # the colour the test looks for

    # A copy without outputs: everything the page shows below comes from this run.
    import nbformat
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code_cells:
        cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, lab.root / NOTEBOOK.name)
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT)
    page.goto(lab.url(f"lab/tree/{NOTEBOOK.name}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()

    # Race 1: the notebook's own indicator says idle before the kernel can take requests, and a
    # Run All issued then is lost. The status bar item says "(ipykernel) | Idle" only once the
    # kernel has started and answered.
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    run_all(page)
    page.wait_for_function(ALL_RAN_JS, arg=len(code_cells), timeout=PAGE_TIMEOUT)
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()

    # No cell raised.
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0

    # The tape graphs: an <img> of the SVG in each drawing's text/html; check they loaded.
    graphs = page.locator(DRAWINGS)
    graphs.first.wait_for()
    assert graphs.count() >= 5
    page.wait_for_function(
        f"() => [...document.querySelectorAll('{DRAWINGS}')]"
        ".every(i => i.complete && i.naturalWidth > 0)", timeout=PAGE_TIMEOUT)

    # The player: its graph is inline SVG inside the widget's HTML.
    widget_graph = page.locator(".widget-html svg").first
    widget_graph.wait_for()
    widget_graph.scroll_into_view_if_needed()
    assert page.locator(".widget-html svg g.node").count() >= 5
    text0 = player_text(page)
    assert text0.startswith("forward through Mul"), text0
    node0 = highlighted(page)
    assert node0 == "op" + re.search(r"\(#(\d+)\)", text0).group(1), (node0, text0)

    # Move the slider with the keyboard (noUiSlider's handle takes arrow keys): each move goes
    # to the kernel and back; wait for what it redraws rather than sleeping.
    handle = page.locator(".widget-slider .noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    text1, node1 = wait_for_step(page, text0)
    assert text1.startswith("forward through Sin"), text1
    assert node1 != node0

    # On to the backward pass: the sentences follow the chain rule, and the highlight moves
    # back down the graph (step 3 is the last Mul again, step 4 the Sin).
    steps = [(text1, node1)]
    for _ in range(3):
        handle.press("ArrowRight")
        steps.append(wait_for_step(page, steps[-1][0]))
    (t2, n2), (t3, n3), (t4, n4) = steps[1:]
    assert t2.startswith("forward through Mul") and n2 not in (node0, node1), t2
    assert t3.startswith("backward through Mul") and n3 == n2, t3
    assert t4.startswith("backward through Sin") and n4 == node1, t4
    assert "dz/dy = dz/ds * cos(y)" in t4
    assert page.locator(".widget-readout").first.text_content().strip() == "4"

    # The screenshot: the player's cell at the top, the file browser folded away for room.
    with contextlib.suppress(sync_api.Error):
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").first.click(
            timeout=5_000)
    page.locator(".jp-Cell", has=page.locator(".widget-vbox")).first.evaluate(
        "e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)    # let the layout settle after the sidebar folds (cosmetic)
    shot = tmp_path / "lesson04.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    target = os.environ.get("MINITAPE_SCREENSHOT")
    if target:   # for the README: from the top of the page down to the player's last line
        box = page.locator(".jp-Cell", has=page.locator(".widget-vbox")).first.bounding_box()
        height = min(page.viewport_size["height"], int(box["y"] + box["height"]) + 16)
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=target, clip={"x": 0, "y": 0,
                                           "width": page.viewport_size["width"],
                                           "height": height})
    page.close()


# -- a lesson as cloned ----------------------------------------------------------------------------

def test_lesson_as_cloned_shows_its_drawings(lab, browser):
    """Open lesson 01 exactly as a clone has it: stored outputs, not re-run, and untrusted
    (JupyterLab has never seen it). An untrusted notebook does not show SVG, so each drawing
    must also carry a PNG (``minitape.viz.draw``'s bundle): every stored image, drawing or
    figure, must load as an ``<img>``."""
    import nbformat
    name = "01_gradients_and_autodiff.ipynb"
    source = NOTEBOOK.parent / name
    nb = nbformat.read(source, as_version=4)
    images = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    drawings = [out for out in images if "image/svg+xml" in out.data]
    assert drawings, f"{name} stores no drawing with a PNG: re-run scripts/run_notebooks.py"
    (lab.root / name).write_bytes(source.read_bytes())
    # Render every cell, not only those scrolled into view.
    tracker = lab.settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT)
    page.goto(lab.url(f"lab/tree/{name}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    # Not trusted, so JupyterLab rendered no image/svg+xml output: what shows is each
    # drawing's (sanitized) text/html <img>, or its PNG.
    assert page.locator(".jp-RenderedSVG").count() == 0
    shown = page.locator(".jp-OutputArea-output img")
    page.wait_for_function(
        "(n) => { const im = [...document.querySelectorAll('.jp-OutputArea-output img')];"
        " return im.length >= n && im.every(i => i.complete && i.naturalWidth > 0); }",
        arg=len(images), timeout=PAGE_TIMEOUT)
    assert shown.count() == len(images)
    # No cell of the stored lesson shows an error.
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
    page.close()


# -- the quiz, the dark theme and an explorer ---------------------------------------------------

QUIZ_NOTEBOOK = [
    "import minitape as mt\n"
    "x = mt.Variable(3.0)\n"
    "with mt.GradientTape(persistent=True) as tape:\n"
    "    a = x * 2.0\n"
    "    b = x * 3.0\n"
    "    s = a + b\n"
    "quiz = mt.viz.TapePlayer(tape, s, x, quiz=True)\n"
    "quiz.step = next(k for k, st in enumerate(quiz.steps) if st.kind == 'backward'\n"
    "                 and st.op.type == 'Mul')\n"
    "quiz",
    "explorer = mt.viz.JacobianExplorer(lambda v: mt.math.sin(v) * v, mt.linspace(0.0, 1.0, 6),\n"
    "                                   repeat=0)\n"
    "explorer",
]


def test_quiz_dark_theme_and_explorer(lab, browser):
    """In the dark theme: the player asks, checks a wrong then a right answer, and its drawing
    keeps its own white background; an explorer's picture changes when its slider moves."""
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in QUIZ_NOTEBOOK])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "quiz.ipynb")
    themes = lab.settings / "@jupyterlab" / "apputils-extension"
    themes.mkdir(parents=True, exist_ok=True)
    (themes / "themes.jupyterlab-settings").write_text(json.dumps({"theme": "JupyterLab Dark"}))

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT)
    page.goto(lab.url("lab/tree/quiz.ipynb"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    assert page.evaluate("() => document.body.dataset.jpThemeLight") == "false"   # dark
    run_all(page)
    page.wait_for_function(ALL_RAN_JS, arg=len(QUIZ_NOTEBOOK), timeout=PAGE_TIMEOUT)
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0

    # The question, then the box: a wrong answer, then the right one (3.0, from b = x * 3).
    page.wait_for_function("() => [...document.querySelectorAll('.widget-html code')]"
                           ".some(c => c.textContent.endsWith('ds/dx = ?'))")
    box = page.locator(".widget-text input").first
    box.fill("7")
    box.press("Enter")
    page.get_by_text(re.compile(r"not quite \(you said 7\.0\)")).first.wait_for()
    box.fill("3")
    box.press("Enter")
    page.get_by_text(re.compile(r"^right: ds/dx = ")).first.wait_for()
    # The drawing brings its own opaque white background, and the dark theme turns it into a
    # dark card (a CSS filter that inverts the lightness and keeps the hues).
    fill = page.evaluate("() => document.querySelector('.widget-html svg g.graph > polygon')"
                         ".getAttribute('fill')")
    assert fill == "white"
    dark = page.evaluate("() => getComputedStyle(document.querySelector("
                         "'.widget-html .minitape-drawing > svg')).filter")
    assert "invert" in dark, dark

    # The explorer: one step of the pass slider redraws the picture (a new blob URL).
    image = page.locator("img.minitape-explorer-image").first
    image.scroll_into_view_if_needed()
    page.wait_for_function("() => { const i = document.querySelector("
                           "'img.minitape-explorer-image'); return i && i.complete"
                           " && i.naturalWidth > 0; }")
    before = image.get_attribute("src")
    assert "invert" in image.evaluate("i => getComputedStyle(i).filter")   # a dark card too
    text = page.locator(".minitape-explorer-text").first.text_content()
    handle = page.locator(".minitape-explorer .minitape-explorer-step .noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function("(old) => document.querySelector('.minitape-explorer-text')"
                           ".textContent !== old", arg=text)
    page.wait_for_function("(old) => document.querySelector('img.minitape-explorer-image')"
                           ".getAttribute('src') !== old", arg=before)
    assert "pass 4 of 6" in page.locator(".minitape-explorer-text").first.text_content()
    page.close()


# -- lesson 04 as a static page: jupyter nbconvert --to html, opened offline --------------------

def _nbconvert(notebook: Path, out_dir: Path) -> Path:
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html",
                    "--output-dir", str(out_dir), str(notebook)],
                   check=True, capture_output=True, timeout=300)
    return out_dir / notebook.with_suffix(".html").name


def _offline_page(browser, requests, **options):
    """A page whose every http(s) request is refused (and noted in ``requests``)."""
    page = browser.new_page(viewport={"width": 1200, "height": 1000}, **options)
    page.set_default_timeout(PAGE_TIMEOUT)

    def refuse(route):
        requests.append(route.request.url)
        route.abort()

    page.route(re.compile(r"^https?://"), refuse)
    return page


def _printed_walk(nb) -> list:
    """The player's sentences as lesson 04 prints them (``k text`` per line)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "print(k, player.text)" in cell.source:
            text = "".join(o.get("text", "") for o in cell.outputs)
            return [line.split(" ", 1)[1] for line in text.splitlines()]
    raise AssertionError("lesson 04 no longer prints its player's walk")


def test_lesson_04_as_a_static_page_offline(browser, tmp_path):
    """``jupyter nbconvert --to html`` of the stored lesson 04, opened with the network cut:
    the player shows each frame (sentence and drawing) as its slider moves, with inline
    JavaScript only, and the quiz shows its question and no answer until one is given."""
    import nbformat
    nb = nbformat.read(NOTEBOOK, as_version=4)
    walk = _printed_walk(nb)
    html_file = _nbconvert(NOTEBOOK, tmp_path)
    requests = []
    page = _offline_page(browser, requests)
    page.goto(html_file.as_uri())
    players = page.locator(".minitape-player")
    assert players.count() == 2                     # the player, then the quiz
    player, quiz = players.nth(0), players.nth(1)
    player.scroll_into_view_if_needed()
    frames = player.locator(".minitape-frame")
    assert frames.count() == len(walk)
    slider = player.locator("input[type=range]")
    slider.focus()
    seen = []
    for k, sentence in enumerate(walk):
        if k:
            slider.press("ArrowRight")
        shown = player.locator(".minitape-frame:not([hidden])")
        assert shown.count() == 1
        assert shown.locator("code").first.text_content() == f"step {k} of {len(walk) - 1}: " \
            + sentence
        box = shown.locator(".minitape-drawing img").first.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 50
        assert player.locator(".minitape-label").text_content() == \
            f"step {k} of {len(walk) - 1}"
        seen.append(sentence)
    assert sum(s.startswith("backward through") for s in seen) == 3   # Mul, Sin, Mul
    assert seen[-1].startswith("done: dz/dx = ")
    player.locator(".minitape-back").click()
    assert player.locator(".minitape-frame:not([hidden]) code").text_content().startswith(
        f"step {len(walk) - 2} of")
    page.screenshot(path=str(tmp_path / "lesson04-static-player.png"))

    # The quiz opens on its first backward step: the question, a box, and nothing that gives
    # the answer away (the answer's sentence and drawing stay hidden).
    quiz.scroll_into_view_if_needed()
    asking = quiz.locator(".minitape-frame:not([hidden])")
    question = asking.locator(".minitape-ask code").text_content()
    assert question.endswith(" = ?"), question
    answer = asking.locator(".minitape-answer")
    assert not answer.is_visible()
    rule = asking.locator(".minitape-ask").get_attribute("data-rule")
    visible_text = asking.evaluate("e => e.innerText")
    assert rule not in visible_text and rule.rsplit(" = ", 1)[1] not in visible_text
    page.screenshot(path=str(tmp_path / "lesson04-static-quiz-asking.png"))
    box = asking.locator(".minitape-quiz input")
    box.fill("1234")
    box.press("Enter")
    feedback = asking.locator(".minitape-feedback").text_content()
    assert feedback == f"not quite (you said 1234.0): {rule}"
    assert answer.is_visible() and rule in answer.text_content()
    page.screenshot(path=str(tmp_path / "lesson04-static-quiz-answered.png"))

    # Nothing came from the network, and no widget manager was even asked for (nbconvert's
    # own page asks for require.js and MathJax, which fail offline, harmlessly).
    assert not [u for u in requests if "jupyter-widgets" in u or "html-manager" in u], requests
    assert page.locator(".jupyter-widgets").count() == 0
    page.close()

    # With no JavaScript at all (GitHub's notebook view strips it), every frame shows.
    still = _offline_page(browser, [], java_script_enabled=False)
    still.goto(html_file.as_uri())
    shown = still.locator(".minitape-player").first.locator(".minitape-frame")
    assert shown.count() == len(walk)
    assert all(shown.nth(k).is_visible() for k in range(len(walk)))
    assert not still.locator(".minitape-answer[open]").count()
    assert not still.locator(".minitape-player input, .minitape-player button").count()
    still.close()


# -- a stored lesson in JupyterLab: not modified by opening, and reopens cleanly -----------------

def test_stored_lesson_opens_unmodified_and_reopens_without_model_not_found(lab, browser):
    """Lesson 04 as a clone has it (paired with its .py by jupytext, untrusted, not run): opening
    it does not mark it modified; its player shows its frames from the stored HTML fallback; and
    after a save (as autosave does) it reopens with no "model not found" (no widget view is
    stored, so there is no widget model to look for)."""
    for name in (NOTEBOOK.name, NOTEBOOK.with_suffix(".py").name, "jupytext.toml"):
        (lab.root / name).write_bytes((NOTEBOOK.parent / name).read_bytes())
    tracker = lab.settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT)
    for attempt in ("opened", "reopened"):
        page.goto(lab.url(f"lab/tree/{NOTEBOOK.name}"))
        page.locator(".jp-Notebook .jp-Cell").first.wait_for()
        page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
        page.locator(".minitape-player").first.wait_for()
        page.wait_for_timeout(3000)      # let every output render (a late change would show)
        tab = page.locator(".lm-TabBar-tab", has_text=NOTEBOOK.name).first
        assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), attempt
        assert page.get_by_text("model not found").count() == 0, attempt
        assert page.locator(".minitape-player").count() == 2, attempt
        frames = page.locator(".minitape-player").first.locator(".minitape-frame")
        assert frames.count() >= 7 and frames.first.locator("code").first.text_content() \
            .startswith("step 0 of ")
        if attempt == "opened":
            page.locator(".jp-Notebook").first.click()
            page.keyboard.press("Control+s")         # what autosave does
            page.wait_for_timeout(1500)
    player = page.locator(".minitape-player").first
    player.evaluate("e => e.scrollIntoView({block: 'start'})")
    print("img in player:", player.locator("img").count(), "scripts ran:",
          player.get_attribute("data-ready"))
    page.screenshot(path=str(lab.base / "lesson04-reopened.png"))
# -- legible at the size shown (issue 30) ----------------------------------------------------

COLUMN_PX = 950       # JupyterLab's default notebook column: what every drawing must fit
MIN_LABEL_PX = 11     # the smallest node label a learner may be shown

PLAYER_NOTEBOOK = [
    "import minitape as mt\n"
    "x = mt.Variable(2.0, name='x')\n"
    "with mt.GradientTape(persistent=True) as tape:\n"
    "    y = x * x\n"
    "    s = mt.math.sin(y)\n"
    "    z = s * x\n"
    "tape.gradient(z, x)\n"
    "player = mt.viz.TapePlayer(tape, z, x)\n"
    "player.step = len(player) - 1\n"
    "player",
]

# The smallest rendered font size, in CSS px, of the node labels of one inline <svg>: each
# label's font-size (graphviz's user units) times the scale from user units to the screen.
INLINE_LABELS_JS = """(svg) => {
    const sizes = [...svg.querySelectorAll('g.node text')].map(
        t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a);
    return {n: sizes.length, min: Math.min(...sizes),
            width: svg.getBoundingClientRect().width};
}"""

# The same for every drawing shown as <img> (draw_tape's output): the SVG is copied inline at
# the size the <img> has on the page, measured, and removed.
IMG_LABELS_JS = """() => [...document.querySelectorAll('%s')].map(img => {
    const body = img.src.slice(img.src.indexOf(',') + 1);
    const source = img.src.includes(';base64,')
        ? new TextDecoder().decode(Uint8Array.from(atob(body), c => c.charCodeAt(0)))
        : decodeURIComponent(body);
    const box = img.getBoundingClientRect();
    const holder = document.createElement('div');
    holder.style.cssText = 'position:absolute;left:0;top:0';
    holder.innerHTML = source.slice(source.indexOf('<svg'));
    const svg = holder.querySelector('svg');
    svg.setAttribute('width', box.width + 'px');
    svg.setAttribute('height', box.height + 'px');
    document.body.appendChild(holder);
    const sizes = [...svg.querySelectorAll('g.node text')].map(
        t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a);
    holder.remove();
    return {n: sizes.length, min: Math.min(...sizes), width: box.width,
            natural: img.naturalWidth};
})""" % DRAWINGS


def column_of_950_px(page) -> None:
    """Fold the file browser away and size the window so that a cell's output area (where the
    drawings go) is COLUMN_PX wide."""
    with contextlib.suppress(sync_api.Error):
        page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").first.click(
            timeout=5_000)
    page.locator(".jp-OutputArea-output").first.wait_for()
    for _ in range(3):
        width = page.evaluate("() => document.querySelector('.jp-OutputArea-output')"
                              ".getBoundingClientRect().width")
        if abs(width - COLUMN_PX) < 1:
            return
        size = page.viewport_size
        page.set_viewport_size({"width": int(round(size["width"] + COLUMN_PX - width)),
                                "height": size["height"]})
        page.wait_for_timeout(300)
    raise AssertionError(f"could not make the output column {COLUMN_PX} px wide ({width})")


def test_the_players_drawing_has_labels_of_11_px_or_more(lab, browser, tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in PLAYER_NOTEBOOK])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "player.ipynb")
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT)
    page.goto(lab.url("lab/tree/player.ipynb"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    run_all(page)
    page.wait_for_function(ALL_RAN_JS, arg=len(PLAYER_NOTEBOOK), timeout=PAGE_TIMEOUT)
    svg = page.locator(".widget-html svg").first
    svg.wait_for()
    column_of_950_px(page)
    svg.scroll_into_view_if_needed()
    labels = svg.evaluate(INLINE_LABELS_JS)
    page.screenshot(path=str(tmp_path / "player-950.png"))
    target = os.environ.get("MINITAPE_LEGIBLE_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / "player-950.png"))
    assert labels["n"] >= 5, labels
    assert labels["min"] >= MIN_LABEL_PX, labels
    # It fits the column: the learner sees it whole, without scrolling sideways.
    assert labels["width"] <= COLUMN_PX, labels
    page.close()


def test_lesson_05_drawings_have_labels_of_11_px_or_more(lab, browser, tmp_path):
    """Lesson 05's stored drawings (the training step, by layer and op by op), shown as a
    learner who trusts the notebook sees them, in a 950 px column."""
    name = "05_training_loop.ipynb"
    (lab.root / name).write_bytes((NOTEBOOK.parent / name).read_bytes())
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(lab.root / name)],
                   env=lab.env(), check=True, capture_output=True)
    tracker = lab.settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    page.set_default_timeout(PAGE_TIMEOUT)
    page.goto(lab.url(f"lab/tree/{name}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    page.locator(DRAWINGS).first.wait_for()
    page.wait_for_function(
        f"() => [...document.querySelectorAll('{DRAWINGS}')]"
        ".every(i => i.complete && i.naturalWidth > 0)", timeout=PAGE_TIMEOUT)
    column_of_950_px(page)
    drawings = page.evaluate(IMG_LABELS_JS)
    assert len(drawings) >= 2, drawings
    target = os.environ.get("MINITAPE_LEGIBLE_SCREENSHOTS")
    for k, img in enumerate(page.locator(DRAWINGS).all()):
        img.scroll_into_view_if_needed()
        shot = tmp_path / f"lesson05-drawing{k}.png"
        page.screenshot(path=str(shot))
        if target:
            page.screenshot(path=str(Path(target) / shot.name))
    for d in drawings:
        assert d["n"] >= 3 and d["min"] >= MIN_LABEL_PX, drawings
    page.close()
