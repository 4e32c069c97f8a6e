"""Offline check that environment.yml (conda) stays in step with pyproject.toml (pip)."""

import re
from pathlib import Path

import pytest
import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
# A plain conda MatchSpec: name, optionally one comparison and version.
MATCHSPEC = re.compile(r"^[A-Za-z0-9_.\-]+([<>=!]=?[0-9A-Za-z.*]+)?$")
# pip names whose conda-forge package is named differently
PIP_TO_CONDA = {"graphviz": "python-graphviz"}


def name_of(spec: str) -> str:
    return re.split(r"[<>=!~;\[\s]", spec, maxsplit=1)[0].strip().lower()


@pytest.fixture(scope="module")
def env():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


@pytest.fixture(scope="module")
def conda_specs(env):
    return [d for d in env["dependencies"] if isinstance(d, str)]


def test_parses_with_conda_forge(env):
    assert isinstance(env, dict)
    assert "conda-forge" in env["channels"]
    assert isinstance(env["dependencies"], list)


def test_specs_are_simple_matchspecs(conda_specs):
    bad = [s for s in conda_specs if not MATCHSPEC.match(s)]
    assert not bad, f"not a simple MatchSpec: {bad}"


def test_every_pyproject_dependency_is_listed(conda_specs):
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    conda_names = {name_of(s) for s in conda_specs}
    missing = [d for d in deps if PIP_TO_CONDA.get(name_of(d), name_of(d)) not in conda_names]
    assert not missing, f"in pyproject.toml but not environment.yml: {missing}"


def test_graphviz_binary_is_listed(conda_specs):
    # python-graphviz only wraps `dot`; conda's `graphviz` package provides it.
    assert "graphviz" in {name_of(s) for s in conda_specs}


def test_the_project_is_installed_after_the_repository_is_copied(env):
    # repo2docker (Binder) installs environment.yml before it copies the repository in, so a
    # pip `-e .` there fails; postBuild, run after the copy, installs minitape instead.
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert not any("-e ." in section or "." in section for section in pip_sections)
    post_build = ROOT / "postBuild"
    assert post_build.stat().st_mode & 0o111, "postBuild must be executable"
    lines = post_build.read_text().splitlines()
    assert lines[0].startswith("#!")
    assert any(line.startswith("python -m pip install") and line.endswith(" .")
               for line in lines)
    assert "pip install --no-deps -e ." in (ROOT / "environment.yml").read_text()  # for conda


def test_pygraphviz_comes_with_the_environment(conda_specs):
    # minitape's default way to draw (Graphviz in-process); conda-forge names it the same.
    assert "pygraphviz" in {name_of(s) for s in conda_specs}

