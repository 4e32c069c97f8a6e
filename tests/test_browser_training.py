"""``mt.viz.TrainingView`` in a real browser: JupyterLab + headless Chromium (Playwright).

A small notebook builds a view of a network on two moons and shows it; the test presses
**play**, lets it train a few steps, presses pause, and checks in the page that the status
line counts the steps, and that both halves of the plots image changed: the loss curve (left)
and the decision boundary (right). Then **one step** moves it once more. Screenshots before and
after are saved under the test's ``tmp_path``.

Uses the JupyterLab server and Chromium fixtures of ``test_browser.py`` (skipped, as that file
is, without Debian's Chromium or Playwright).
"""

from __future__ import annotations

import io
import re

import nbformat
import numpy as np
import pytest

from test_browser import ALL_RAN_JS, PAGE_TIMEOUT, browser, lab, run_all  # noqa: F401

PIL = pytest.importorskip("PIL.Image")

CELLS = [
    "import numpy as np\n"
    "from sklearn.datasets import make_moons\n"
    "import minitape as mt\n"
    "x, y = make_moons(100, noise=0.15, random_state=0)\n"
    "mt.random.set_seed(1)\n"
    "model = mt.layers.Sequential([mt.layers.Dense(8, activation='tanh'),\n"
    "                              mt.layers.Dense(1, activation='sigmoid')])",
    "view = mt.viz.TrainingView(model, x.astype(np.float32), y.astype(np.float32)[:, None],\n"
    "                           loss='binary_crossentropy',\n"
    "                           optimizer=mt.optimizers.Adam(learning_rate=0.1))\n"
    "view",
]


def status(page) -> str:
    return page.locator(".minitape-training-view .widget-html").first.text_content()


def plots(page):
    """The plots image as an RGB array (decoded from the page's own ``<img>`` data)."""
    src = page.locator(".minitape-training-view img").first.get_attribute("src")
    data = page.evaluate("""async (src) => {
        const r = await fetch(src); const b = new Uint8Array(await r.arrayBuffer());
        return Array.from(b); }""", src)
    return np.asarray(PIL.open(io.BytesIO(bytes(data))).convert("RGB"), dtype=np.int16)


def test_training_view_plays_and_the_loss_and_boundary_change(lab, browser, tmp_path):  # noqa: F811
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "training.ipynb")
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(PAGE_TIMEOUT)
    page.goto(lab.url("lab/tree/training.ipynb"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    run_all(page)
    page.wait_for_function(ALL_RAN_JS, arg=len(CELLS), timeout=PAGE_TIMEOUT)
    view = page.locator(".minitape-training-view").first
    view.wait_for()
    assert page.locator(".jp-OutputArea-output", has_text="Traceback").count() == 0
    assert status(page).startswith("step 0")
    page.wait_for_function(
        "() => { const i = document.querySelector('.minitape-training-view img');"
        " return i && i.complete && i.naturalWidth > 0; }", timeout=PAGE_TIMEOUT)
    view.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "training_before.png"))
    before = plots(page)

    # play: the Play widget ticks in the browser, each tick trains a step in the kernel
    page.locator(".minitape-training-view .widget-play button").first.click()
    page.wait_for_function(
        "() => { const t = document.querySelector('.minitape-training-view .widget-html');"
        " const m = t && t.textContent.match(/^step (\\d+)/); return m && +m[1] >= 4; }",
        timeout=PAGE_TIMEOUT)
    page.locator(".minitape-training-view .widget-play button").nth(1).click()   # pause
    page.wait_for_timeout(1500)     # (a tick already on its way still lands)
    text = status(page)
    steps = int(re.match(r"step (\d+): loss ([\d.e-]+)", text).group(1))
    assert steps >= 4, text
    after = plots(page)
    page.screenshot(path=str(tmp_path / "training_after.png"))
    assert before.shape == after.shape
    half = before.shape[1] // 2
    loss_changed = np.abs(after[:, :half] - before[:, :half]).sum(axis=2) > 30
    boundary_changed = np.abs(after[:, half:] - before[:, half:]).sum(axis=2) > 30
    assert loss_changed.mean() > 0.002, "the loss curve did not change"
    assert boundary_changed.mean() > 0.01, "the decision boundary did not change"
    # the tape of the latest step is drawn inline, grouped by module
    assert page.locator(".minitape-training-view svg g.node").count() >= 3

    # one step: exactly one more
    page.get_by_role("button", name="one step").click()
    page.wait_for_function(
        "(n) => { const t = document.querySelector('.minitape-training-view .widget-html');"
        " const m = t && t.textContent.match(/^step (\\d+)/); return m && +m[1] > n; }",
        arg=int(re.match(r"step (\d+)", status(page)).group(1)), timeout=PAGE_TIMEOUT)
    page.close()
