"""minitape.viz.render: drawings through pygraphviz in-process or the `dot` program."""

import os
import shutil
import subprocess
import sys

import pytest

import minitape as mt
from minitape.viz import draw_tape
from minitape.viz import render as render_mod
from minitape.viz.render import GraphvizNotFound, graphviz_route, render_dot

HAS_PYGRAPHVIZ = render_mod._has_pygraphviz()
HAS_DOT = shutil.which("dot") is not None
ROUTES = [pytest.param("pygraphviz", marks=pytest.mark.skipif(not HAS_PYGRAPHVIZ,
                                                              reason="no pygraphviz")),
          pytest.param("dot", marks=pytest.mark.skipif(not HAS_DOT, reason="no `dot`"))]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def square_tape():
    x = mt.Variable(3.0, name="x")
    with mt.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    return tape, y, x


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_draws_svg_and_png_with_every_node(route, monkeypatch):
    monkeypatch.setenv("MINITAPE_GRAPHVIZ", route)
    assert graphviz_route() == route
    tape, y, x = square_tape()
    dot = draw_tape(tape, y, x)
    bundle = dot._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    # One <g class="node"> per node of the DOT source: x, Mul, y (and no legend: one tape).
    assert svg.count('class="node"') == 3
    assert ">Mul<" in svg and ">x<" in svg
    assert bundle["image/png"].startswith(PNG_SIGNATURE)
    assert dot.pipe(format="png").startswith(PNG_SIGNATURE)
    assert dot.pipe(format="svg", encoding="utf-8") == svg


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_is_deterministic(route, monkeypatch):
    monkeypatch.setenv("MINITAPE_GRAPHVIZ", route)
    source = draw_tape(*square_tape()).source
    for fmt in ("svg", "png"):
        assert render_dot(source, fmt) == render_dot(source, fmt)


@pytest.mark.parametrize("route", ROUTES)
def test_render_writes_the_source_and_the_picture(route, monkeypatch, tmp_path):
    monkeypatch.setenv("MINITAPE_GRAPHVIZ", route)
    dot = draw_tape(*square_tape())
    out = dot.render(tmp_path / "tape", format="png")
    assert out.replace("\\", "/").endswith("tape.png")
    assert open(out, "rb").read().startswith(PNG_SIGNATURE)
    assert (tmp_path / "tape").read_text() == dot.source
    svg = dot.render(outfile=tmp_path / "drawing.svg", cleanup=True)
    assert "<svg" in open(svg).read()
    assert not (tmp_path / "drawing.gv").exists()


def test_pygraphviz_is_preferred_when_both_exist(monkeypatch):
    monkeypatch.delenv("MINITAPE_GRAPHVIZ", raising=False)
    monkeypatch.setattr(render_mod, "_has_pygraphviz", lambda: True)
    assert graphviz_route() == "pygraphviz"
    monkeypatch.setattr(render_mod, "_has_pygraphviz", lambda: False)
    monkeypatch.setattr(render_mod.shutil, "which", lambda name: "/usr/bin/dot")
    assert graphviz_route() == "dot"


def test_no_graphviz_at_all_names_the_fix_for_each_os(monkeypatch):
    monkeypatch.delenv("MINITAPE_GRAPHVIZ", raising=False)
    monkeypatch.setattr(render_mod, "_has_pygraphviz", lambda: False)
    monkeypatch.setattr(render_mod.shutil, "which", lambda name: None)
    with pytest.raises(GraphvizNotFound) as info:
        draw_tape(*square_tape()).pipe(format="svg")
    message = str(info.value)
    for fix in ("pip install", "apt-get install graphviz", "brew install graphviz",
                "winget install graphviz", "conda install"):
        assert fix in message
    assert isinstance(info.value, RuntimeError)      # what GradientTape's display catches
    tape = square_tape()[0]
    assert "cannot draw it" in tape._repr_mimebundle_()["text/plain"]


def test_a_wrong_route_name_is_refused(monkeypatch):
    monkeypatch.setenv("MINITAPE_GRAPHVIZ", "neato")
    with pytest.raises(ValueError, match="'pygraphviz' or 'dot'"):
        graphviz_route()


@pytest.mark.skipif(not HAS_PYGRAPHVIZ, reason="no pygraphviz")
def test_in_process_errors_raise_and_c_level_stderr_stays_quiet(monkeypatch):
    monkeypatch.setenv("MINITAPE_GRAPHVIZ", "pygraphviz")
    with pytest.raises(RuntimeError, match="mismatched tag"):
        render_dot("digraph { a [label=<<B>x</b>>] }", "svg")
    # A fresh process: nothing from Graphviz or its fontconfig reaches file descriptor 2 (a
    # notebook would store it as the cell's stderr).
    code = ("import minitape as mt; from minitape.viz import draw_tape\n"
            "x = mt.Variable(1.0)\n"
            "with mt.GradientTape() as t:\n    y = x * x\n"
            "d = draw_tape(t, y, x); d.pipe(format='png'); d.pipe(format='svg')\n")
    env = {**os.environ, "MINITAPE_GRAPHVIZ": "pygraphviz",
           "PYTHONPATH": os.path.dirname(os.path.dirname(mt.__file__))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True)
    assert done.stderr == ""
