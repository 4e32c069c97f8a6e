"""A lesson the learner has run and saved reopens without "model not found" (real browser).

JupyterLab (headless Chromium, Playwright) runs a lesson-like notebook with a ``TapePlayer``,
saves it, its kernel is shut down, and the notebook is opened again: what a learner does when
they come back to a lesson the next day. ipywidgets stores a widget's view but not its state,
so the reopened output would say "Error displaying widget: model not found". The server here is
configured as ``make lab`` configures it (``JUPYTER_CONFIG_PATH`` holding the repository's
``jupyter-config/``, which turns on ``minitape.lessons``' save hook): the saved file keeps the
player's static frames and no widget view, and the reopened notebook shows those frames (one
at a time, with the inline slider, since the learner's own outputs are trusted) as dark cards
in the dark theme.

Uses the JupyterLab server and Chromium fixtures of ``test_browser.py`` (skipped, as that file
is, without Debian's Chromium or Playwright).
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from test_browser import ALL_RAN_JS, PAGE_TIMEOUT, ROOT, Lab, browser, run_all  # noqa: F401
from test_browser_dark import assert_dark, card, set_theme

CELLS = [
    "import minitape as mt\n"
    "import minitape.notebook\n"
    "mt.notebook.setup(seed=0)",
    "x = mt.Variable(2.0)\n"
    "with mt.GradientTape(persistent=True) as tape:\n"
    "    y = x * x\n"
    "    z = mt.math.sin(y)\n"
    "player = mt.viz.TapePlayer(tape, z, x)\n"
    "player",
    "len(player.steps)",
]
VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def lab(tmp_path):
    # The test server, with the configuration ``make lab`` (scripts/run.sh) adds.
    with Lab(tmp_path / "lab", config_path=ROOT / "jupyter-config") as server:
        yield server


def open_notebook(page, server, name):
    page.goto(server.url(f"lab/tree/{name}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()


def test_a_saved_lesson_reopens_with_its_static_player(lab, browser, tmp_path):  # noqa: F811
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = lab.root / "lesson.ipynb"
    nbformat.write(nb, path)
    set_theme(lab, "JupyterLab Dark")

    page = browser.new_page(viewport={"width": 1300, "height": 1000}, color_scheme="light")
    page.set_default_timeout(PAGE_TIMEOUT)
    open_notebook(page, lab, path.name)
    run_all(page)
    page.wait_for_function(ALL_RAN_JS, arg=len(CELLS), timeout=PAGE_TIMEOUT)
    page.locator(".widget-html svg").first.wait_for()          # the live widget
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
    steps = int(page.locator(".jp-OutputArea-output").last.text_content().strip())

    # Save, as File > Save (or autosave) does; then wait for the tab to be clean.
    page.locator(".jp-Notebook").first.click()
    page.keyboard.press("Control+s")
    tab = page.locator(".lm-TabBar-tab", has_text=path.name).first
    page.wait_for_function("(t) => ![...document.querySelectorAll('.lm-TabBar-tab')].some("
                           "e => e.textContent.includes(t) && e.classList.contains("
                           "'jp-mod-dirty'))", arg=path.name)
    assert "jp-mod-dirty" not in (tab.get_attribute("class") or "")

    # On disk: the player's output has its frames and no widget view (nor widget state).
    saved = json.loads(path.read_text())
    outputs = [o for c in saved["cells"] for o in c.get("outputs", [])
               if "text/html" in o.get("data", {})]
    assert len(outputs) == 1, outputs
    player_output = outputs[0]
    assert VIEW not in player_output["data"]
    assert player_output["metadata"] == {"minitape": {"static_fallback": "text/html"}}
    assert "minitape-player" in "".join(player_output["data"]["text/html"])

    # The kernel goes (the next day, the widget models are gone), and the lesson is reopened.
    for kernel in lab.api("kernels"):
        lab.api(f"kernels/{kernel['id']}", method="DELETE")
    page.close()
    page = browser.new_page(viewport={"width": 1300, "height": 1000}, color_scheme="light")
    page.set_default_timeout(PAGE_TIMEOUT)
    open_notebook(page, lab, path.name)
    player = page.locator(".minitape-player").first
    player.wait_for()
    page.wait_for_timeout(2000)              # every output rendered (a late error would show)
    assert page.get_by_text("model not found").count() == 0
    assert page.locator(".jupyter-widgets").count() == 0
    frames = player.locator(".minitape-frame")
    assert frames.count() == steps
    # The learner's own outputs are trusted: the inline script ran (one frame, a slider).
    assert player.get_attribute("data-ready") == "1"
    shown = player.locator(".minitape-frame:not([hidden])")
    assert shown.count() == 1
    assert shown.locator("code").first.text_content().startswith("step 0 of ")
    player.locator(".minitape-next").click()
    assert shown.locator("code").first.text_content().startswith("step 1 of ")
    image = shown.locator(".minitape-drawing img").first
    page.wait_for_function("(i) => i.complete && i.naturalWidth > 0", arg=image.element_handle())
    assert_dark(card(image))                 # a dark card in the dark theme, like the widget
    page.screenshot(path=str(tmp_path / "reopened.png"))
    page.close()
