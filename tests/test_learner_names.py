"""The learner's names everywhere, by default (issue 30, item 3).

A tensor bound to a Python name gets that name in drawings, player sentences, ``explain`` and
``check_tape``, wherever it was made: before the tape, inside a helper (the call site's name
for what it returns), in a training step, in a Keras layer's ``call``. An explicit ``name=``
wins, also on a non-persistent tape after ``gradient``. Long unnamed sub-expressions are
called by their op and number. Everything is read through public output.
"""

import numpy as np
import pytest

import minitape as mt
from minitape.viz import check_tape, draw_tape, explain, tape_graph
from minitape.viz.player import TapePlayer


def labels(tape, *tensors, target=None, sources=None):
    g = tape_graph(tape, target, sources)
    return [g.label(t) for t in tensors]


def test_tensors_made_before_the_tape_keep_their_names():
    x = mt.constant(3.0)
    c = mt.constant(2.0)
    w = mt.Variable(0.5)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * c + w
    assert labels(tape, x, c, w, y) == ["x", "c", "w", "y"]
    tape.gradient(y, [x, w])
    dot = draw_tape(tape, y, [x, w]).source
    for name in ("x", "c", "w", "y"):
        assert f"<B>{name}</B>" in dot


def loss_fn(y, y_hat):
    diff = y - y_hat
    return mt.reduce_mean(diff * diff)


def test_a_helper_names_its_own_tensors_and_the_call_site_names_its_result():
    w = mt.Variable(2.0)
    target = mt.constant(1.0)
    with mt.GradientTape() as tape:
        y_hat = w * 3.0
        loss = loss_fn(target, y_hat)
    tape.gradient(loss, w)           # (non-persistent: the names survive the release)
    g = tape_graph(tape, loss, w)
    assert [g.label(t) for t in (w, target, y_hat, loss)] == ["w", "target", "y_hat", "loss"]
    assert "diff" in [n.label for n in g.tensors]      # the helper's own name, inside it


def twice(v):
    return helper_square(v) * 2.0


def helper_square(v):
    return v * v


def test_a_result_returned_through_two_helpers_takes_the_outer_call_sites_name():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        doubled = twice(x)
    assert labels(tape, doubled) == ["doubled"]


def test_a_training_step_draws_its_loss_and_model_output_by_name():
    mt.random.set_seed(0)
    model = mt.layers.Sequential([mt.layers.Dense(3, activation="tanh"), mt.layers.Dense(1)])
    x, y = mt.random.normal((4, 2)), mt.random.normal((4, 1))
    optimizer = mt.optimizers.SGD(0.1)

    def mse(model, x, y):
        return mt.reduce_mean((model(x) - y) ** 2)

    def train_step(model, x, y):
        with mt.GradientTape(persistent=True) as tape:
            y_hat = model(x)
            loss = mse(model, x, y)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return tape, y_hat, loss

    tape, y_hat, loss = train_step(model, x, y)
    g = tape_graph(tape, loss, model.trainable_variables)
    assert g.label(loss) == "loss" and g.label(y_hat) == "y_hat"
    assert g.node(g.target_ids[0]).label == "loss"
    assert {g.label(v) for v in model.trainable_variables} == {"kernel", "bias"}


class Square(mt.keras.layers.Layer):
    def call(self, inputs):
        h = inputs * inputs
        return h + 1.0


def test_a_keras_layers_call_names_inside_it_and_at_the_call():
    layer = Square()
    v = mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        out = layer(v)
    g = tape_graph(tape, out, v)
    assert [n.label for n in g.tensors] == ["v", "h", "1.0", "out"]
    player = TapePlayer(tape, out, v)
    assert player.steps[1].text == "forward through AddV2 (#2): out = h + 1.0 = 10.0"
    assert player.steps[-1].text == "done: dout/dv = 6.0"


def test_an_explicit_name_wins_and_is_what_the_node_holds_after_gradient():
    first = mt.Variable(2.0)
    with mt.GradientTape() as tape:          # non-persistent: released after gradient
        named = mt.math.square(first, name="sq")
        total = named + 1.0
    assert float(tape.gradient(total, first)) == 4.0
    g = tape_graph(tape)                     # (the target given to no one: not live)
    node = g.node(g.node("op1").outputs[0])
    assert node.name == "sq" and node.label == "sq"
    assert g.label(first) == "first"


def test_a_long_unnamed_sub_expression_is_called_by_its_op_and_number():
    x = mt.Variable(0.5)
    with mt.GradientTape(persistent=True) as tape:
        z = mt.math.sin(mt.math.cos(x) * 2.0)
    g = tape_graph(tape, z, x)
    assert [n.label for n in g.tensors] == ["x", "cos #1", "2.0", "mul #2", "z"]
    player = TapePlayer(tape, z, x)
    assert all("mt.math" not in s.text for s in player.steps)
    assert player.steps[-1].text.startswith("done: dz/dx = ")
    short = [s.text for s in player.steps if "cos #1" in s.text]
    assert short


def test_explain_names_the_target_and_the_source_as_written():
    x = mt.constant(3.0)                     # a Tensor the tape never watched
    with mt.GradientTape() as tape:
        w = mt.Variable(1.0)
        loss = w * x
    sentence = str(explain(tape, loss, x))
    assert sentence.startswith("the source x is a plain Tensor")
    assert "t1" not in sentence and "t2" not in sentence
    assert "tape.watch(x)" in sentence
    # the target, by its name: a stop_gradient path
    v = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        out = mt.stop_gradient(v * v) + 1.0
    sentence = str(explain(tape, out, v))
    assert "the target out" in sentence and "the target " + "does" not in sentence


def test_check_tape_rows_name_what_each_op_made():
    x = mt.Variable(np.array([0.3, 0.7]))
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
        total = mt.reduce_sum(mt.math.sin(y))
    check = check_tape(tape, total, x)
    # (``mt.math.sin(y)`` is longer than a label: the row says only the op)
    assert [r.label() for r in check.rows] == ["#1 Mul -> y", "#2 Sin", "#3 Sum -> total"]


@pytest.mark.parametrize("persistent", [False, True])
def test_names_also_on_a_tape_drawn_after_gradient(persistent):
    x = mt.constant([1.0, 2.0])
    with mt.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        squared = x * x
        loss = loss_fn(squared, 0.0)
    tape.gradient(loss, x)
    assert labels(tape, x, squared, loss) == ["x", "squared", "loss"]


def test_a_program_with_no_source_file_gets_its_names_from_the_bytecode():
    # ``python -c``, standard input, ``exec`` of a string: no line to read, but the compiled
    # code still says where each value is stored (``sq = x * x``: the multiply, then
    # STORE_NAME sq), and a helper's returned value takes the caller's name (``loss``); a
    # sub-expression stored nowhere keeps its op's name (``sin #2``).
    import subprocess
    import sys
    program = ("import minitape as mt\n"
               "def shifted(a):\n"
               "    return mt.math.sin(a) + 1.0\n"
               "x = mt.constant(2.0)\n"
               "with mt.GradientTape() as tape:\n"
               "    tape.watch(x)\n"
               "    sq = x * x\n"
               "    loss = shifted(sq)\n"
               "c = mt.constant(3.0)\n"
               "import re\n"
               "dot = mt.viz.draw_tape(tape, legend=False).source\n"
               "found = re.findall('label=<<B>([^<]*)</B>((?:<BR/>[^<]*)*)>', dot)\n"
               "print(sorted({name for name, rest in found if 'float32' in rest}))\n"
               "print(mt.viz.explain(tape, loss, c).replace(chr(10), ' '))\n")
    proc = subprocess.run([sys.executable, "-"], input=program, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names, why = proc.stdout.splitlines()
    assert names == str(sorted(["x", "sq", "sin #2", "1.0", "loss"])), names
    # (c is named from the bytecode; made after the block, it cannot be on the tape)
    assert why.startswith("the source c was made after the `with` block"), why
