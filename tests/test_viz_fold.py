"""Folding repeated structure: ``draw_tape(tape, fold=True)`` draws a loop's body once, ×N."""

import re
import shutil

import numpy as np
import pytest

import minitape as mt
from minitape.viz import draw_tape, tape_graph
from minitape.viz.fold import find_folds

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="graphviz 'dot' is not installed")


def node_names(dot):
    names = re.findall(r"^\s+(\w+) \[", dot.source, flags=re.M)
    return [n for n in names if n not in ("graph", "node", "edge")]


def loop(n=50, x0=0.5):
    x = mt.Variable(x0, name="x")
    with mt.GradientTape(persistent=True) as tape:
        y = x
        for _ in range(n):
            y = mt.math.sin(y) * 1.01 + 0.1
    return tape, x, y


def test_a_50_iteration_loop_folds_to_its_three_ops_in_one_box():
    tape, x, y = loop()
    dot = draw_tape(tape, y, x, fold=True)
    ops = [n for n in node_names(dot) if n.startswith("op")]
    assert len(ops) == 3 and len(ops) <= 10
    types = re.findall(r"^\s+op\d+ \[label=<<B>(\w+)</B>", dot.source, flags=re.M)
    assert types == ["Sin", "Mul", "AddV2"]
    boxes = re.findall(r"subgraph (cluster_fold\w*)", dot.source)
    assert len(boxes) == 1
    box = dot.source.split("subgraph cluster_fold", 1)[1].split("}", 1)[0]
    assert "×50" in box and all(op in box for op in ops)    # the three ops are in the box
    assert "150 ops drawn as 3" in dot.source               # it says what it hides
    assert dot.source.count("next iteration (×49)") == 1     # the carried edge, once


def test_unfolded_the_loop_has_all_150_ops():
    tape, x, y = loop()
    dot = draw_tape(tape, y, x, fold=False, max_nodes=None, collapse=False)
    ops = [n for n in node_names(dot) if n.startswith("op")]
    assert len(ops) == 150
    assert "×" not in dot.source


def test_fold_is_the_default_past_max_nodes_and_not_below():
    tape, x, y = loop(20)
    small = draw_tape(tape, y, x, collapse=False)              # 60 ops fit in 300 nodes
    assert "cluster_fold" not in small.source
    big = draw_tape(tape, y, x, collapse=False, max_nodes=40)   # they do not fit in 40
    assert "cluster_fold" in big.source and "×20" in big.source


def test_a_folded_gradient_arrow_is_the_sum_of_the_iterations_contributions():
    tape, x, y = loop(5)
    tape.gradient(y, x)
    graph = tape_graph(tape, y, x)
    (fold,) = find_folds(graph.ops)
    # The Mul op's edge from the Sin output: one contribution per iteration.
    muls = [it[1] for it in fold.iterations]
    values = [e.gradient for e in graph.edges
              if e.kind == "input" and e.index == 0 and e.head in {m.id for m in muls}]
    assert len(values) == 5
    total = float(np.sum(values))
    dot = draw_tape(tape, y, x, fold=True)
    labels = re.findall(r'label="Σ 5 iterations: ([-\d.e]+)"', dot.source)
    assert any(abs(float(v) - total) < 1e-3 * abs(total) for v in labels)
    # Each contribution is 1.01 (d(1.01 * s)/ds) times what reached the Mul's output:
    # check against the chain rule by hand.
    ys, v = [], 0.5
    for _ in range(5):
        ys.append(v)
        v = np.sin(v) * 1.01 + 0.1
    upstream, by_hand = 1.0, []
    for yk in reversed(ys):
        by_hand.append(upstream * 1.01)
        upstream *= np.cos(yk) * 1.01
    assert total == pytest.approx(sum(by_hand), rel=1e-5)


def test_iteration_chooses_the_iteration_shown_and_highlight_follows_it():
    tape, x, y = loop(4)
    first = draw_tape(tape, y, x, fold=True, iteration=0)
    assert re.findall(r"^\s+(op\d+) \[", first.source, flags=re.M) == ["op1", "op2", "op3"]
    assert "iteration 1 of 4 shown" in first.source
    last = draw_tape(tape, y, x, fold=True)
    assert "iteration 4 of 4 shown" in last.source
    third = draw_tape(tape, y, x, fold=True, highlight="op8")     # the Mul of iteration 3
    assert "iteration 3 of 4 shown" in third.source
    with pytest.raises(ValueError, match="iteration=7 is out of range"):
        draw_tape(tape, y, x, fold=True, iteration=7)


def test_module_calls_fold_and_shared_weights_are_drawn_once():
    cell = mt.layers.Dense(3, activation="tanh", name="cell")
    w = mt.Variable(np.eye(3, dtype=np.float32), name="w")
    h = mt.zeros((1, 3))
    xs = mt.constant(np.arange(18, dtype=np.float32).reshape(6, 1, 3) / 18)
    with mt.GradientTape() as tape:
        for t in range(6):
            h = cell(xs[t] + h @ w)
        loss = mt.reduce_sum(h)
    tape.gradient(loss, [w, *cell.trainable_variables])
    dot = draw_tape(tape, loss, [w], fold=True)
    assert "×6" in dot.source
    assert dot.source.count("<B>w</B>") == 1                 # the shared weight, once
    assert "read by 6 iterations" in dot.source or "read by 5 iterations" in dot.source


def test_find_folds_leaves_different_lines_alone():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
        z = y * y
    assert find_folds(tape_graph(tape).ops) == []
    dot = draw_tape(tape, z, x, fold=True)
    assert "cluster_fold" not in dot.source
    del z


@needs_dot
def test_the_folded_drawing_renders():
    tape, x, y = loop()
    tape.gradient(y, x)
    svg = draw_tape(tape, y, x, fold=True).pipe(format="svg", encoding="utf-8")
    assert "×50" in svg and svg.count('class="node"') <= 10


def test_the_player_passes_fold_on():
    from minitape.viz import TapePlayer
    tape, x, y = loop(10)
    player = TapePlayer(tape, y, x, fold=True, iteration=0)
    player.step = 4                     # forward through op #5: iteration 2's Mul
    assert player.highlighted == "op5"
    if shutil.which("dot"):
        assert "iteration 2 of 10 shown" in player.svg()
