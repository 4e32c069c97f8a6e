"""Sphinx configuration of the course site: every lesson, from its stored outputs.

``make site`` (scripts/build_site.py) copies this file, docs/index.md and the lessons
(notebooks/NN_name.ipynb, the exercise copy) into build/site-src and runs Sphinx there; the
site is build/site/index.html. Nothing is executed (the stored outputs are the lessons'), and
the site needs no network to build or to read:

- widget views are never rendered: a stored widget output shows its ``text/html`` (or PNG)
  fallback, which needs no kernel (myst-nb would otherwise prefer the widget view, empty
  without a kernel, even when no widget state is stored);
- no widget manager or require.js from a CDN (myst-nb adds them for a notebook that stores
  widget state);
- MathJax, for the lessons' formulas, is served from the site itself (the copy that the
  ``jupyter-server-mathjax`` package ships), not from a CDN; without that package the
  formulas show as their TeX source.
"""

from pathlib import Path

project = "minitape: the lessons"
author = "the minitape authors"
copyright = "2026, the minitape authors. Lessons: CC BY 4.0; code: MIT"

extensions = ["myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
nb_execution_mode = "off"
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js = {}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 4     # GitHub's heading links (docs/tensorflow_coverage.md)
# A lesson stores outputs (e.g. a widget view) that the site does not show: no warning.
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "alabaster"
html_title = "minitape lessons"
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
html_theme_options = {
    "description": "TensorFlow's GradientTape on NumPy: read it, draw it, step through it",
    "show_relbar_bottom": True,
    "page_width": "1100px",
}
html_static_path = []

try:
    import jupyter_server_mathjax
except ImportError:
    mathjax_path = "MathJax.js"   # not there, and no CDN: the formulas stay TeX
else:
    html_static_path.append(str(Path(jupyter_server_mathjax.__file__).parent / "static"))
    mathjax_path = "MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
    # That copy has the STIX-Web fonts only (as Jupyter's classic notebook configured it).
    mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]],
                                   "displayMath": [["\\[", "\\]"]],
                                   "processEscapes": True,
                                   # Sphinx's pages: only the math spans (Sphinx's docs)
                                   "ignoreClass": "document", "processClass": "math|output_area"},
                       "HTML-CSS": {"availableFonts": [], "webFont": "STIX-Web",
                                    "imageFont": None, "preferredFont": None},
                       "SVG": {"font": "STIX-Web"}}
