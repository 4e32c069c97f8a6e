"""The lessons, out of the installed package: ``python -m minitape.lessons [DIR]``.

A wheel of minitape carries the lessons (the notebooks with their stored outputs, the
exercise copies without solutions, their CC BY 4.0 licence). This copies them into ``DIR``
(default ``minitape-lessons`` in the current folder) and prints how to open them::

    pip install "minitape[lab]"
    python -m minitape.lessons my-lessons
    jupyter lab my-lessons

Files already in ``DIR`` are kept unless ``--force`` is given, so a learner's edits survive a
second run. In a source checkout (an editable install) the lessons are read from
``notebooks/`` instead.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

DEFAULT_DIR = "minitape-lessons"
# As setup.py's LESSON_FILES: what the wheel carries.
PATTERNS = ("[0-9][0-9]_*.ipynb", "exercises/[0-9][0-9]_*.ipynb", "LICENSE", "sanitize.cfg")


def lessons_folder() -> Path:
    """The folder the lessons are copied from: ``minitape/_lessons`` in an installed wheel,
    ``notebooks/`` in a source checkout.

    Raises:
        FileNotFoundError: neither holds a lesson (a broken install); the message says so.
    """
    here = Path(__file__).resolve().parent
    for folder in (here / "_lessons", here.parent / "notebooks"):
        if any(folder.glob(PATTERNS[0])):
            return folder
    raise FileNotFoundError(f"no lessons found in {here / '_lessons'} (nor in a source "
                            "checkout's notebooks/): reinstall with pip install \"minitape[lab]\"")


def copy_lessons(dest, force: bool = False) -> tuple[list[Path], list[Path]]:
    """Copy the lessons into the folder ``dest`` (created if needed).

    Args:
        dest: a folder path (str or Path).
        force: overwrite files that exist in ``dest`` (otherwise they are kept).

    Returns:
        ``(copied, kept)``: the paths written, and the existing paths left as they were.

    Raises:
        NotADirectoryError: ``dest`` exists and is a file.
    """
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} is a file; give a folder to copy the lessons into")
    source = lessons_folder()
    copied, kept = [], []
    for pattern in PATTERNS:
        for path in sorted(source.glob(pattern)):
            target = dest / path.relative_to(source)
            if target.exists() and not force:
                kept.append(target)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copied.append(target)
    return copied, kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minitape.lessons",
        description="Copy minitape's lessons (Jupyter notebooks) into a folder.")
    parser.add_argument("dir", nargs="?", default=DEFAULT_DIR,
                        help=f"where to put them (default: ./{DEFAULT_DIR})")
    parser.add_argument("--force", action="store_true",
                        help="overwrite lessons already in DIR (your edits there are lost)")
    args = parser.parse_args(argv)
    try:
        copied, kept = copy_lessons(args.dir, force=args.force)
    except (FileNotFoundError, NotADirectoryError) as e:
        print(f"minitape.lessons: {e}", file=sys.stderr)
        return 1
    dest = Path(args.dir)
    lessons = sorted(p.name for p in copied + kept if p.parent == dest and p.suffix == ".ipynb")
    print(f"{len(copied)} files copied to {dest}/" + (
        f" ({len(kept)} already there were kept; --force overwrites them)" if kept else ""))
    for name in lessons:
        print(f"  {name}")
    print(f"  exercises/: the exercise copies, without solutions\n"
          f"Open them in JupyterLab:\n"
          f"  jupyter lab {dest}\n"
          f"(JupyterLab comes with pip install \"minitape[lab]\". The stored drawings show once "
          f"the notebook is trusted: run its cells, or jupyter trust {dest}/*.ipynb)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
