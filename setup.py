"""Everything but one step is in pyproject.toml: the lessons go into the package.

The lessons live in notebooks/ (their sources and stored outputs are edited there); a wheel
carries a copy as ``minitape/_lessons/`` so that ``python -m minitape.lessons DIR`` can copy
them out after ``pip install "minitape[lab]"``. An editable install has no copy: there
minitape.lessons reads notebooks/ itself. MANIFEST.in puts the same files in the sdist.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# What a learner gets: the lessons with their outputs, the exercise copies, the licence, and
# nbval's replacements (to test the copies as `make test` tests the originals).
LESSON_FILES = ["[0-9][0-9]_*.ipynb", "exercises/[0-9][0-9]_*.ipynb", "LICENSE", "sanitize.cfg"]


class BuildPyWithLessons(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        root = Path(__file__).resolve().parent / "notebooks"
        dest = Path(self.build_lib, "minitape", "_lessons")
        for pattern in LESSON_FILES:
            for path in sorted(root.glob(pattern)):
                target = dest / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                self.copy_file(str(path), str(target))


setup(cmdclass={"build_py": BuildPyWithLessons})
