"""The course site (``make site``) in a real browser, offline: headless Chromium, every
request that is not a file of the site blocked.

The site is built from the stored lessons (scripts/build_site.py: Sphinx and myst-nb, nothing
executed) into a temporary folder, then opened from disk. In the page: the navigation leads
from the index to every lesson; lesson 04's drawings and its players show with no kernel
(their static HTML, never an empty widget view), and a player steps to its next frame; an
exercise's hidden answer opens when asked; the lessons' formulas are plain text and TeX on a
page (the index's) is typeset by the site's own MathJax; and the page asked for nothing outside
the site (no CDN).

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
    for number in ("01", "02", "03", "05", "06", "07", "08"):
        assert sidebar.get_by_role("link", name=f"{number} ·").count() >= 1, number
    assert "05_training_loop.html" in page.locator('link[rel="next"]').get_attribute("href")

    # The stored drawings show (SVG inline, or as an image), and no widget view is empty.
    drawings = page.locator(".cell_output svg g.node, .cell_output img")
    assert drawings.count() > 10
    assert page.locator(".jupyter-widgets, .widget-area").count() == 0

    # The player, in its static form (TapePlayer.frames_html): one frame shown at a time,
    # the slider and back/next move through them, with the page's own inline script only.
    players = page.locator(".minitape-player")
    assert players.count() == 2                     # the player, then the quiz
    player, quiz = players.nth(0), players.nth(1)
    player.scroll_into_view_if_needed()
    frames = player.locator(".minitape-frame")
    assert frames.count() > 3
    slider = player.locator('input[type="range"]')
    slider.focus()
    slider.press("ArrowRight")
    shown = player.locator(".minitape-frame:not([hidden])")
    assert shown.count() == 1
    assert shown.locator("code").first.text_content().startswith("step 1 of ")
    box = shown.locator(".minitape-drawing img").first.bounding_box()
    assert box and box["width"] > 200
    player.locator(".minitape-back").click()
    assert player.locator(".minitape-frame:not([hidden]) code").first.text_content() \
        .startswith("step 0 of ")

    # The quiz asks before it tells: the question and a box, no answer until one is typed;
    # then the answer with its chain-rule product.
    quiz.scroll_into_view_if_needed()
    asking = quiz.locator(".minitape-frame:not([hidden])")
    assert asking.locator(".minitape-ask code").text_content().endswith(" = ?")
    answer = asking.locator(".minitape-answer")
    assert not answer.is_visible()
    rule = asking.locator(".minitape-ask").get_attribute("data-rule")
    assert rule.rsplit(" = ", 1)[1] not in asking.evaluate("e => e.innerText")
    typed = asking.locator(".minitape-quiz input")
    typed.fill("1234")
    typed.press("Enter")
    assert asking.locator(".minitape-feedback").text_content() == \
        f"not quite (you said 1234.0): {rule}"
    assert answer.is_visible() and rule in answer.text_content()

    # An exercise: its answer is hidden until asked for.
    answer = page.locator("details:not(.minitape-answer)",
                          has=page.locator("summary", has_text="Answer")).first
    answer.scroll_into_view_if_needed()
    body = answer.locator("p").first
    assert not body.is_visible()
    answer.locator("summary").click()
    assert body.is_visible() and len(body.inner_text()) > 20

    # The lessons' formulas are plain text (the same on every surface): no TeX left raw.
    text = page.locator("article, .body, main").first.inner_text()
    assert "\\cdot" not in text and "$" not in text
    page.screenshot(path=str(tmp_path / "lesson04.png"), full_page=False)
    shot = os.environ.get("MINITAPE_SITE_SCREENSHOT")
    if shot:
        page.screenshot(path=shot)
    assert page.blocked == [], f"the page asked for something outside the site: {page.blocked}"


def test_formulas_are_typeset_by_the_sites_own_mathjax(site, page):
    """TeX on a page of the site (the index's chain rule) is typeset offline, by the MathJax
    copy inside the site: no CDN."""
    page.goto(site.as_uri())
    page.wait_for_selector(".MathJax_CHTML, .MathJax, mjx-container", state="attached")
    assert "\\frac" not in page.locator(".body, main").first.inner_text()
    assert page.blocked == [], f"the page asked for something outside the site: {page.blocked}"


def test_drawings_stay_light_on_the_light_site_on_a_dark_desktop(site, page):
    """The site's theme is light: a drawing (an SVG image that follows the colour scheme, see
    minitape.viz.draw) stays a light card even where the desktop asks for dark."""
    from test_browser_dark import assert_light, card

    context = page.context.browser.new_context(viewport={"width": 1200, "height": 900},
                                               color_scheme="dark")
    try:
        context.route(lambda url: url.startswith(("http:", "https:", "ws:", "wss:")),
                      lambda route: route.abort())
        dark = context.new_page()
        dark.set_default_timeout(PAGE_TIMEOUT)
        dark.goto((site.parent / "lessons" / "04_inside_the_tape.html").as_uri())
        assert dark.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
        drawing = dark.locator(".cell_output .minitape-graph > img").first
        dark.wait_for_function("() => { const i = document.querySelector("
                               "'.cell_output .minitape-graph > img');"
                               " return i && i.complete && i.naturalWidth > 0; }")
        assert_light(card(drawing))
    finally:
        context.close()
