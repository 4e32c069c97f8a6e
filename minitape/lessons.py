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

**Saved lessons reopen without "model not found".** A notebook that shows a widget stores, by
default, its view (``application/vnd.jupyter.widget-view+json``) and not the widget's state;
reopened without the kernel, JupyterLab then says "Error displaying widget: model not found"
(ipywidgets' behaviour). minitape's widgets (``TapePlayer``, the explorers, ``TrainingView``)
carry a static fallback next to their view (``text/html`` or ``image/png``) and mark their
output (metadata ``{"minitape": {"static_fallback": mime type}}``). ``pre_save_hook``, run by
the Jupyter server on every save, drops the view of such outputs whose widget state the
notebook does not store, so the reopened lesson shows the static player or picture; running
the cell again gives the live widget. Outputs of other libraries are left alone. Give it to
the server::

    jupyter lab my-lessons --ContentsManager.pre_save_hook=minitape.lessons.pre_save_hook

or, without replacing a ``pre_save_hook`` of your own, enable this module as a Jupyter server
extension (it registers the hook): ``{"ServerApp": {"jpserver_extensions":
{"minitape.lessons": true}}}`` in a ``jupyter_server_config.d/`` folder, as the repository's
``jupyter-config/`` does for ``make lab`` (``JUPYTER_CONFIG_PATH``) and Binder (``postBuild``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

DEFAULT_DIR = "minitape-lessons"
# As setup.py's LESSON_FILES: what the wheel carries.
PATTERNS = ("[0-9][0-9]_*.ipynb", "exercises/[0-9][0-9]_*.ipynb", "LICENSE", "sanitize.cfg")


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MARK = "minitape"          # the output metadata key of minitape's widget outputs
HOOK = "minitape.lessons.pre_save_hook"


def fallback_metadata(mime: str) -> dict:
    """The output metadata of a minitape widget whose bundle holds the static fallback
    ``mime`` (``"text/html"`` or ``"image/png"``): what ``pre_save_hook`` looks for."""
    return {MARK: {"static_fallback": mime}}


def drop_widget_views(notebook: dict) -> int:
    """Drop, in place, the widget view of every output minitape marked (``fallback_metadata``)
    that holds its static fallback, unless the notebook stores that widget's state.

    ``notebook`` is a notebook as a dict (nbformat 4, e.g. a contents model's ``content``).
    Returns how many views were dropped. Other outputs, and the widget state, are untouched.
    """
    widgets = notebook.get("metadata", {}).get("widgets") or {}
    stored = (widgets.get(WIDGET_STATE) or {}).get("state") or {}
    dropped = 0
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            mark = (output.get("metadata") or {}).get(MARK)
            if WIDGET_VIEW not in data or not isinstance(mark, dict) \
                    or mark.get("static_fallback") not in data:
                continue
            view = data[WIDGET_VIEW]
            if isinstance(view, dict) and view.get("model_id") in stored:
                continue           # the widget can be rebuilt from its stored state
            del data[WIDGET_VIEW]
            dropped += 1
    return dropped


def pre_save_hook(model, path=None, contents_manager=None, **kwargs):
    """A Jupyter server ``ContentsManager.pre_save_hook``: ``drop_widget_views`` on a notebook
    about to be saved (a saved minitape widget reopens as its static fallback, not as "model
    not found"). Other files are left alone."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        dropped = drop_widget_views(model["content"])
        if dropped and contents_manager is not None:
            contents_manager.log.debug("minitape: %d widget view(s) of %s saved as their "
                                       "static fallback", dropped, path)


def _jupyter_server_extension_points():
    """``jupyter server extension enable minitape.lessons``: this module is the extension."""
    return [{"module": "minitape.lessons"}]


def _load_jupyter_server_extension(serverapp):
    """Register ``pre_save_hook`` with the server's contents manager (after any configured
    ``pre_save_hook``, which it does not replace)."""
    serverapp.contents_manager.register_pre_save_hook(pre_save_hook)


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
          f"  jupyter lab {dest} --ContentsManager.pre_save_hook={HOOK}\n"
          f"(JupyterLab comes with pip install \"minitape[lab]\". The option makes a lesson you "
          f"have run and saved\nreopen with its players as pictures instead of \"model not "
          f"found\"; plain jupyter lab {dest} works too.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
