"""Save the README's screenshot of lesson 04 (the tape graph and the TapePlayer).

Usage: python scripts/screenshot.py [OUTPUT.png]   (default: docs/lesson04.png)

It runs the real-browser test (tests/test_browser.py) with MINITAPE_SCREENSHOT set, so the
picture is exactly what that test sees: JupyterLab in headless Chromium, all cells run, the
player moved to its first backward step. Needs what the test needs (/usr/bin/chromium and
Playwright's Python package); it fails instead of skipping when they are missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else ROOT / "docs" / "lesson04.png").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        shot = Path(tmp) / "lesson04.png"   # the old picture stays until a new one exists
        env = dict(os.environ, MINITAPE_SCREENSHOT=str(shot))
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs",
                                 "-p", "no:cacheprovider", "tests/test_browser.py"],
                                cwd=ROOT, env=env)
        if result.returncode != 0 or not shot.exists():
            print(f"screenshot: nothing written to {out} (see the test output above)",
                  file=sys.stderr)
            return 1
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(shot.read_bytes())
    print(f"screenshot: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
