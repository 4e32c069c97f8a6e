"""The course site (``make site``) in a real browser, offline: headless Chromium, every
request that is not a file of the site blocked.

The site is built from the stored lessons (scripts/build_site.py: Sphinx and myst-nb, nothing
executed) into a temporary folder, then opened from disk. In the page: the navigation leads
from the index to every lesson; lesson 04's drawings and its players show with no kernel
(their static HTML, never an empty widget view), and a player steps to its next frame; an
exercise's hidden answer opens when asked; the formulas are typeset by the site's own
MathJax; and the page asked for nothing outside the site (no CDN).

Skipped without Sphinx/myst-nb (the docs extra), Playwright or Debian's chromium.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAGE_TIMEOUT = 60_000        # milliseconds: the machine may be busy

if os.environ.get("MINITAPE_BROWSER_TEST") == "0":
    pytest.skip("MINITAPE_BROWSER_TEST=0", allow_module_level=True)
if not os.path.exists(CHROMIUM):
    pytest.skip(f"Debian's chromium is not installed ({CHROMIUM})", allow_module_level=True)
for module in ("sphinx", "myst_nb"):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[docs]')",
                    allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

_spec = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
build_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_site)

LESSONS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site.build(tmp_path_factory.mktemp("site") / "html")


@pytest.fixture(scope="module")
def page(site):
    """A Chromium page with the network blocked: every http(s)/ws request is aborted, and
    recorded (the site's own files load from disk)."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        blocked = []

        def block(route):
            blocked.append(route.request.url)
            route.abort()

        context.route(lambda url: url.startswith(("http:", "https:", "ws:", "wss:")), block)
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT)
        page.blocked = blocked
        yield page
        browser.close()


def test_every_lesson_is_built_and_listed(site):
    html = site.read_text()
    for stem in LESSONS:
        assert (site.parent / "lessons" / f"{stem}.html").exists(), stem
        assert f'href="lessons/{stem}.html"' in html, stem
    assert (site.parent / "lessons" / "exercises" / "06_write_your_own_gradients.html").exists()


def test_lesson_04_offline_navigation_drawings_player_answers_and_math(site, page, tmp_path):
    page.goto(site.as_uri())
    page.get_by_role("link", name="04 · Inside the tape").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("lessons/04_inside_the_tape.html")
    # navigation: the sidebar lists every lesson; "next" leads to lesson 05
    sidebar = page.locator(".sphinxsidebar")
    for number in ("01", "02", "03", "05", "06", "07"):
        assert sidebar.get_by_role("link", name=f"{number} ·").count() >= 1, number
    assert "05_training_loop.html" in page.locator('link[rel="next"]').get_attribute("href")

    # The stored drawings show (SVG inline, or as an image), and no widget view is empty.
    assert page.locator(".cell_output svg g.node").count() > 10
    assert page.locator(".jupyter-widgets, .widget-area").count() == 0

    # A player, in its static form: one frame shown, the next one shown when stepped to.
    player = page.locator(".minitape-player-static").first
    player.scroll_into_view_if_needed()
    slider = player.locator('input[type="range"]')
    frames = player.locator("details")
    if slider.count():      # a player page with a slider (TapePlayer.to_html's markup)
        slider.first.fill("1")
        slider.first.dispatch_event("input")
        assert player.get_by_text("step 1").first.is_visible()
    else:                   # one <details> per step: step 0 open, the others folded
        assert frames.count() > 2
        second = frames.nth(1)
        assert second.get_attribute("open") is None
        assert not second.locator("svg").first.is_visible()
        second.locator("summary").click()
        assert second.get_attribute("open") is not None
        assert second.locator("svg").first.is_visible()
        assert "step 1:" in second.locator("summary").inner_text()

    # An exercise: its answer is hidden until asked for.
    answer = page.locator("details", has=page.locator("summary", has_text="Answer")).first
    answer.scroll_into_view_if_needed()
    body = answer.locator("p").first
    assert not body.is_visible()
    answer.locator("summary").click()
    assert body.is_visible() and len(body.inner_text()) > 20

    # Formulas typeset by the site's own MathJax (no CDN).
    page.wait_for_selector(".MathJax_CHTML, .MathJax, mjx-container", state="attached")
    page.screenshot(path=str(tmp_path / "lesson04.png"), full_page=False)
    shot = os.environ.get("MINITAPE_SITE_SCREENSHOT")
    if shot:
        page.screenshot(path=shot)
    assert page.blocked == [], f"the page asked for something outside the site: {page.blocked}"
