"""Build the course site: ``make site`` (``python scripts/build_site.py [OUTDIR]``).

Copies docs/conf.py, docs/index.md, docs/tensorflow_coverage.md and the lessons
(notebooks/NN_name.ipynb and notebooks/exercises/NN_name.ipynb) into build/site-src, then runs
Sphinx with myst-nb on it: the site, build/site/index.html by default, shows every lesson from
its stored outputs. Nothing is executed and nothing is fetched (docs/conf.py says how).
Needs the docs extra (``pip install -e '.[docs]'``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "build" / "site-src"


def stage(source: Path = SOURCE) -> Path:
    """Fill ``source`` with the site's pages (removing what was there); returns it."""
    if source.exists():
        shutil.rmtree(source)
    (source / "lessons" / "exercises").mkdir(parents=True)
    for name in ("conf.py", "index.md", "tensorflow_coverage.md"):
        shutil.copyfile(ROOT / "docs" / name, source / name)
    notebooks = ROOT / "notebooks"
    for pattern in ("[0-9][0-9]_*.ipynb", "exercises/[0-9][0-9]_*.ipynb"):
        for path in sorted(notebooks.glob(pattern)):
            shutil.copyfile(path, source / "lessons" / path.relative_to(notebooks))
    return source


def build(outdir: Path) -> Path:
    """Build the site into ``outdir``; returns the path of its index.html.

    Raises ``subprocess.CalledProcessError`` (Sphinx's output is printed) if Sphinx fails.
    """
    source = stage()
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E",
                    str(source), str(outdir)], check=True)
    return outdir / "index.html"


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "site"
    print(f"build_site: {build(out)}")
