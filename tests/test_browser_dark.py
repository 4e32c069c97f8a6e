"""Drawings in a dark theme, in a real browser (headless Chromium, Playwright, network blocked).

A ``draw_tape`` output is an ``<img>`` of its SVG in ``text/html`` (``minitape.viz.draw``'s
``drawing_html``); the SVG makes itself a dark card where the page's CSS ``color-scheme`` is
dark. The tests look at the pixels of the drawing as shown (an element screenshot): its
background (the most common colour) and its ink (the pixels far from the background: labels,
borders, arrows). A dark card has a dark background and light ink; a light one the reverse.

- JupyterLab's dark theme (``data-jp-theme-light="false"``, which also sets the page's
  ``color-scheme``): a drawing the learner has just run (trusted), and a stored one in a
  notebook that is not trusted (JupyterLab sanitizes its HTML: the ``<style>`` goes, the
  ``<img>`` stays), are dark cards; the light theme shows the same drawing light.
- ``jupyter nbconvert --to html --theme dark``, opened offline: a dark card, though the desktop
  is light; the light page on a dark desktop keeps a light drawing.

Uses the JupyterLab server and Chromium fixtures of ``test_browser.py`` (skipped, as that file
is, without Debian's Chromium or Playwright).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import nbformat
import numpy as np
import pytest

from test_browser import (DRAWINGS, PAGE_TIMEOUT, _offline_page, browser,  # noqa: F401
                          lab, run_all, ALL_RAN_JS)

PIL = pytest.importorskip("PIL.Image")

PROGRAM = ("import minitape as mt\n"
           "x = mt.Variable(3.0, name='x')\n"
           "with mt.GradientTape() as tape:\n"
           "    y = x * x\n"
           "    z = mt.math.sin(y) - x\n"
           "tape.gradient(z, x)\n")
DRAW = "mt.viz.draw_tape(tape, z, x)"


def luminance(rgb):
    return rgb @ np.array([0.2126, 0.7152, 0.0722])


def card(locator) -> dict:
    """The background and ink lightness (0-255) of an element as shown on screen."""
    locator.scroll_into_view_if_needed()
    shot = PIL.open(io.BytesIO(locator.screenshot())).convert("RGB")
    pixels = np.asarray(shot, dtype=float).reshape(-1, 3)
    values, counts = np.unique(pixels.round(), axis=0, return_counts=True)
    background = luminance(values[counts.argmax()])
    lum = luminance(pixels)
    ink = lum[np.abs(lum - background) > 90]
    assert ink.size > 200, f"no ink found in the drawing ({ink.size} pixels)"
    return {"background": background, "ink": float(np.median(ink)),
            "size": shot.size}


def assert_dark(c):
    assert c["background"] < 60 and c["ink"] > 150, c


def assert_light(c):
    assert c["background"] > 200 and c["ink"] < 110, c


def stored_drawing_notebook() -> nbformat.NotebookNode:
    """A notebook storing a drawing's output as a kernel made it (no kernel needed to show)."""
    import minitape as mt
    namespace = {"mt": mt}
    exec(PROGRAM, namespace)
    data = eval(DRAW, namespace)._repr_mimebundle_()
    data = {k: v if isinstance(v, str) else __import__("base64").b64encode(v).decode()
            for k, v in data.items() if k in ("text/html", "image/svg+xml", "image/png")}
    data["text/plain"] = "<minitape tape drawing>"
    cell = nbformat.v4.new_code_cell(PROGRAM + DRAW, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def set_theme(server, theme: str) -> None:
    themes = server.settings / "@jupyterlab" / "apputils-extension"
    themes.mkdir(parents=True, exist_ok=True)
    (themes / "themes.jupyterlab-settings").write_text(json.dumps({"theme": theme}))


def open_notebook(server, chromium, name, **options):
    page = chromium.new_page(viewport={"width": 1300, "height": 1000}, **options)
    page.set_default_timeout(PAGE_TIMEOUT)
    # ?reset: a fresh workspace, so no notebook opened before sits in a hidden tab (whose
    # cells and drawings the locators below would find first).
    page.goto(server.url(f"lab/tree/{name}?reset"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.get_by_text(re.compile(r"\(ipykernel\) \| Idle")).first.wait_for()
    return page


def wait_loaded(page):
    page.locator(DRAWINGS).first.wait_for()
    page.wait_for_function(f"() => [...document.querySelectorAll('{DRAWINGS}')]"
                           ".every(i => i.complete && i.naturalWidth > 0)")


def test_drawings_are_dark_cards_in_jupyterlabs_dark_theme(lab, browser, tmp_path):  # noqa: F811
    # A learner's run (trusted output), and a stored drawing in an untrusted notebook.
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROGRAM + DRAW)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, lab.root / "run.ipynb")
    nbformat.write(stored_drawing_notebook(), lab.root / "stored.ipynb")

    set_theme(lab, "JupyterLab Dark")
    page = open_notebook(lab, browser, "run.ipynb", color_scheme="light")   # a light desktop
    assert page.evaluate("() => document.body.dataset.jpThemeLight") == "false"
    run_all(page)
    page.wait_for_function(ALL_RAN_JS, arg=1, timeout=PAGE_TIMEOUT)
    wait_loaded(page)
    drawing = page.locator(DRAWINGS).first
    ran = card(drawing)
    page.screenshot(path=str(tmp_path / "dark-run.png"))
    assert_dark(ran)
    page.close()

    page = open_notebook(lab, browser, "stored.ipynb", color_scheme="light")
    wait_loaded(page)
    # Untrusted: JupyterLab sanitized the HTML (no <style> left), and still shows the <img>.
    assert page.locator(".jp-OutputArea-output style").count() == 0
    assert page.locator(".jp-RenderedSVG").count() == 0
    stored = card(page.locator(DRAWINGS).first)
    page.screenshot(path=str(tmp_path / "dark-stored-untrusted.png"))
    assert_dark(stored)
    page.close()

    set_theme(lab, "JupyterLab Light")
    page = open_notebook(lab, browser, "stored.ipynb", color_scheme="dark")  # a dark desktop
    assert page.evaluate("() => document.body.dataset.jpThemeLight") == "true"
    wait_loaded(page)
    light = card(page.locator(DRAWINGS).first)
    page.screenshot(path=str(tmp_path / "light-stored-untrusted.png"))
    assert_light(light)
    # The same picture: the card's size does not change with the theme.
    assert light["size"] == stored["size"]
    page.close()


def nbconvert(notebook, out_dir, theme):
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html",
                    f"--theme={theme}", "--output", f"{notebook.stem}-{theme}",
                    "--output-dir", str(out_dir), str(notebook)],
                   check=True, capture_output=True, timeout=300)
    return out_dir / f"{notebook.stem}-{theme}.html"


def test_drawings_follow_nbconverts_theme_offline(browser, tmp_path):  # noqa: F811
    notebook = tmp_path / "stored.ipynb"
    nbformat.write(stored_drawing_notebook(), notebook)
    for theme, desktop, check in (("dark", "light", assert_dark),
                                  ("light", "dark", assert_light)):
        html_file = nbconvert(notebook, tmp_path, theme)
        requests = []
        page = _offline_page(browser, requests, color_scheme=desktop)
        page.goto(html_file.as_uri())
        img = page.locator(".jp-OutputArea-output .minitape-graph img").first
        page.wait_for_function("() => { const i = document.querySelector("
                               "'.minitape-graph img'); return i && i.complete"
                               " && i.naturalWidth > 0; }")
        assert page.evaluate("() => document.body.dataset.jpThemeLight") == \
            ("false" if theme == "dark" else "true")
        shown = card(img)
        page.screenshot(path=str(tmp_path / f"nbconvert-{theme}.png"))
        check(shown)
        assert not [u for u in requests if "minitape" in u], requests
        page.close()
