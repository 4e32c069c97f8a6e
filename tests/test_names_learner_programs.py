"""The learner's names on real programs, in the many ways learners write them (issue 30,
item 3): loops, augmented assignment, statements over several lines, tuples returned and
unpacked, lambdas, the walrus, a name rebound several times. Read through public output:
``tape_graph`` labels, ``TapePlayer`` sentences, ``check_tape`` rows, the drawing's text.
"""

import re

import numpy as np

import minitape as mt
from minitape.viz import check_tape, draw_tape, tape_graph
from minitape.viz.player import TapePlayer


def all_labels(tape, target=None, sources=None):
    return [n.label for n in tape_graph(tape, target, sources).tensors]


def op_labels(tape):
    """``[(op type, label of its output), ...]`` in the order the ops ran."""
    g = tape_graph(tape)
    return [(op.type, g.node(op.outputs[0]).label) for op in g.ops]


def test_a_loop_names_each_value_it_binds_and_numbers_the_earlier_ones():
    # Each run of ``y = y * x`` makes a new value of y: three Muls, not one op named y
    # and two called ``mul #1``, ``mul #2``.
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x
        for _ in range(3):
            y = y * x
    assert op_labels(tape) == [("Mul", "y₁"), ("Mul", "y₂"), ("Mul", "y")]
    sentences = [s.text for s in TapePlayer(tape, y, x).steps]
    assert "forward through Mul (#2): y₂ = y₁ * x = 8.0" in sentences
    assert sentences[-1].startswith("done: dy/dx = ")
    assert [r.label() for r in check_tape(tape, y, x).rows] == [
        "#1 Mul -> y₁", "#2 Mul -> y₂", "#3 Mul -> y"]


def test_the_same_name_rebound_draws_its_versions_apart():
    x = mt.constant(1.5)                     # ``x`` itself rebound: the constant is x₁
    with mt.GradientTape() as tape:
        tape.watch(x)
        u = x * 2.0
        u = u * 2.0
        x = u * 2.0
    assert all_labels(tape) == ["x₁", "2.0", "u₁", "2.0", "u", "2.0", "x"]
    dot = draw_tape(tape, x, legend=False).source
    names = re.findall(r"label=<<B>([^<]*)</B>", dot)
    assert {"x₁", "u₁", "u", "x"} <= set(names)


def test_a_loop_over_a_function_of_several_ops_names_each_run():
    # ``mt.nn.softmax`` records several ops from one instruction; three runs of it in a
    # loop are three values of p, each the last op of its run.
    x = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape() as tape:
        p = x
        for _ in range(3):
            p = mt.nn.softmax(p)
    g = tape_graph(tape)
    named = [g.node(op.outputs[0]).label for op in g.ops]
    assert named.count("p₁") == named.count("p₂") == named.count("p") == 1
    assert named[-1] == "p" and len(g.ops) % 3 == 0
    run = len(g.ops) // 3
    assert named[run - 1] == "p₁" and named[2 * run - 1] == "p₂"


def test_a_model_of_like_layers_called_once_is_one_value():
    # A Sequential of two identical layers repeats its op types within one call: the
    # first layer's output is not a version of ``out``.
    mt.random.set_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(2, activation="relu"),
                                 mt.keras.layers.Dense(2, activation="relu")])
    x = mt.random.normal((3, 2))
    with mt.GradientTape() as tape:
        out = model(x)
    assert [label for _, label in op_labels(tape)] == [
        "matmul #1", "add #2", model.layers[0].name, "matmul #4", "add #5", "out"]
    assert tape_graph(tape).label(out) == "out"


def test_what_a_keras_layer_returned_is_called_by_the_layers_name():
    # The first layer's output was ``relu #3`` (and the loss of a training step was called
    # by the learner's line, ``history`` or ``view.step(1)``): each layer's result takes
    # the layer's name, as Keras names layers; the learner's own names still win.
    keras = mt.keras
    mt.random.set_seed(0)
    x = mt.constant(np.ones((2, 2), np.float32))
    model = keras.Sequential([keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(1, name="score")])
    with mt.GradientTape(persistent=True) as tape:
        y = model(x)
        loss = mt.reduce_mean(y)
    first = model.layers[0].name
    assert re.fullmatch(r"dense(_\d+)?", first)
    assert op_labels(tape) == [("MatMul", "matmul #1"), ("AddV2", "add #2"), ("Relu", first),
                               ("MatMul", "matmul #4"), ("AddV2", "y"), ("Mean", "loss")]
    texts = [s.text for s in TapePlayer(tape, loss, model.trainable_variables).steps]
    assert any(t.startswith(f"forward through MatMul (#4): matmul #4 = {first} @ kernel")
               for t in texts), texts
    assert any(t.startswith(f"backward through Relu (#3): dloss/d(add #2) = dloss/d{first}")
               for t in texts), texts
    for group in ("module", False):
        dot = draw_tape(tape, loss, model.trainable_variables, group=group,
                        legend=False).source
        assert f"label=<<B>{first}</B>" in dot, dot
    with mt.GradientTape() as tape:                    # not named by the learner: ``score``
        mt.reduce_mean(model(x + 1.0) * 2.0)
    assert ("AddV2", "score") in op_labels(tape)

    inputs = keras.Input((2,))                         # functional, with name=
    hidden = keras.layers.Dense(3, activation="tanh", name="hidden")(inputs)
    functional = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    with mt.GradientTape() as tape:
        out = functional(x)
    assert [label for _, label in op_labels(tape)][2:] == ["hidden", "matmul #4", "out"]

    class TwoLayers(keras.Model):                      # subclassed: the code's names win
        def __init__(self):
            super().__init__()
            self.d1 = keras.layers.Dense(3, activation="relu", name="first")
            self.d2 = keras.layers.Dense(3, activation="relu", name="second")
            self.d3 = keras.layers.Dense(1, name="third")

        def call(self, v):
            h = self.d1(v)
            return self.d3(self.d2(h))

    with mt.GradientTape() as tape:
        out = TwoLayers()(x)
    labels = [label for _, label in op_labels(tape)]
    assert [labels[2], labels[5], labels[-1]] == ["h", "self.d2(h)", "out"]
    assert tape_graph(tape).label(out) == "out"


def test_a_training_steps_loss_is_not_named_by_the_line_that_ran_the_step():
    keras = mt.keras
    mt.random.set_seed(0)
    model = keras.Sequential([keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(optimizer=mt.optimizers.SGD(0.1), loss="mse")
    X = np.ones((4, 2), np.float32)
    history = model.fit(X, np.zeros((4, 1), np.float32), epochs=1, verbose=0)
    tape, loss = model.last_train_step
    labels = all_labels(tape, loss, model.trainable_variables)
    assert "history" not in labels and history is not None, labels
    assert [layer.name for layer in model.layers] == [
        label for label in labels if label.startswith("dense")], labels

    from minitape.viz import TrainingView
    view = TrainingView(model, X, np.zeros((4, 1), np.float32), loss="mse",
                        optimizer=mt.optimizers.SGD(0.1))
    view.step(1)
    labels = all_labels(view.last_tape)
    assert not [label for label in labels if "view" in label], labels
    assert model.layers[0].name in labels and model.layers[1].name in labels
    # The view's drawing calls the step's loss ``loss`` (the code inside the step that
    # computed it is minitape's, not the learner's: it was ``mean #9``).
    texts = re.findall(r">([^<>]+)</text>", view.frames[-1].tape_svg)
    assert "loss" in texts and not [t for t in texts if "view" in t or "mean #9" in t], texts


def test_augmented_assignment_names_the_new_value_not_its_right_hand_side():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        loss = x * 0.5
        loss += x * x
    assert op_labels(tape) == [("Mul", "loss₁"), ("Mul", "x * x"), ("AddV2", "loss")]


def test_a_statement_over_several_lines_names_its_value():
    x = mt.Variable(0.5)
    with mt.GradientTape() as tape:
        e = (x * x
             + mt.math.sin(x))
        f = x * 2.0 + \
            x * 3.0
    g = tape_graph(tape)
    assert g.label(e) == "e" and g.label(f) == "f"


def pair(v):
    return v * 2.0, v * 3.0


def test_a_tuple_returned_takes_the_names_it_is_unpacked_to():
    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        a, b = pair(x)
        both = pair(x)
        c, d = x * 4.0, x * 5.0
    g = tape_graph(tape)
    assert [g.label(t) for t in (a, b, c, d)] == ["a", "b", "c", "d"]
    assert [g.label(t) for t in both] == ["both[0]", "both[1]"]


def test_a_lambda_and_a_walrus_name_their_results():
    square = lambda t: t * t      # noqa: E731 (a learner's lambda)
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        z = square(x)
        if (p := z + 1.0) is not None:
            q = p * 2.0
    g = tape_graph(tape)
    assert [g.label(t) for t in (z, p, q)] == ["z", "p", "q"]


def test_an_explicit_name_is_never_numbered():
    x = mt.Variable(np.float32(1.0), name="w")
    with mt.GradientTape() as tape:
        y = mt.math.square(x, name="sq")
        y = mt.math.square(y, name="sq")
    g = tape_graph(tape)
    assert [n.label for n in g.tensors] == ["w", "sq", "sq"]
    assert [n.name for n in g.tensors] == ["w", "sq", "sq"]


def test_a_value_returned_by_a_helper_into_an_expression_is_called_by_the_call():
    square = lambda t: t * t      # noqa: E731
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        e = square(x) + 1.0
    g = tape_graph(tape)
    assert [n.label for n in g.tensors] == ["x", "square(x)", "1.0", "e"]
    assert g.label(e) == "e"


def test_names_in_notebook_cells_with_a_loop_and_a_statement_over_two_lines():
    # A cell is its own file (IPython registers its text in linecache); a helper defined in
    # one cell and called from another names what it returns by the calling cell's line.
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import minitape as mt\n"
                       "def loss_fn(y, y_hat):\n"
                       "    diff = y - y_hat\n"
                       "    return mt.reduce_mean(diff * diff)\n", store_history=True)
        result = shell.run_cell(
            "x = mt.constant(2.0)\n"
            "with mt.GradientTape() as tape:\n"
            "    tape.watch(x)\n"
            "    y = x\n"
            "    for i in range(2):\n"
            "        y = y * x\n"
            "    y += x\n"
            "    e = (y * 2.0\n"
            "         + x)\n"
            "    loss = loss_fn(e, y)\n"
            "g = mt.viz.tape_graph(tape, loss, x)\n", store_history=True)
        assert result.success, result.error_in_exec
        g = shell.user_ns["g"]
        assert [t.label for t in g.tensors] == [
            "x", "y₁", "y₂", "y", "2.0", "y * 2.0", "e", "diff", "diff * diff", "loss"]
    finally:
        InteractiveShell.clear_instance()


def _smallest_label_px(svg):
    """The smallest node label of a graphviz SVG shown at its own size, in CSS px: its
    font-size (user units) times the scale from the viewBox to the width (pt, 4/3 px)."""
    width_pt = float(re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', svg).group(1))
    view_width = float(re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+)', svg).group(1))
    nodes = re.findall(r'<g id="node\d+" class="node">(.*?)</g>', svg, re.S)
    sizes = [float(f) for n in nodes for f in re.findall(r'font-size="([\d.]+)"', n)]
    return min(sizes) * width_pt / view_width * 4 / 3


def test_the_training_views_tape_is_legible_and_names_the_data():
    # Lesson 08's TrainingView drew its tape shrunk into 45% of the column (6.9 px labels)
    # and called the data t1, t2.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 2)).astype("float32")
    y = (x[:, :1] > 0).astype("float32")
    mt.random.set_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(8, activation="tanh", name="hidden"),
                                 mt.keras.layers.Dense(1, activation="sigmoid", name="output")])
    view = mt.viz.TrainingView(model, x, y, loss="binary_crossentropy",
                               optimizer=mt.optimizers.SGD(0.5), redraw_every=1)
    view.step(1)
    svg = view.frames[-1].tape_svg
    assert "max-width" not in svg[:svg.index(">")]          # not shrunk to a box
    assert _smallest_label_px(svg) >= 11
    html = view._repr_mimebundle_()[0]["text/html"]
    assert "max-width:45%" not in html and "overflow:auto" in html
    labels = [n.label for n in tape_graph(view.last_tape).tensors]
    assert "x" in labels and "y" in labels   # (the loss's own 1 - y, made off the tape: t1)


def test_tensors_made_off_the_tape_are_named_by_the_operand_that_read_them():
    # Lesson 08's recurrent network: ``h = mt.zeros(...)`` and ``sequence[t]`` are made by
    # ops the tape does not record (nothing watched goes in): drawn t2, t13 before.
    w_xh = mt.Variable(np.full((1, 2), 0.5, np.float32), name="w_xh")
    w_hh = mt.Variable(np.eye(2, dtype=np.float32), name="w_hh")
    sequence = mt.constant(np.ones((3, 1, 1), np.float32))
    with mt.GradientTape() as tape:
        h = mt.zeros((1, 2))
        for t in range(3):
            h = mt.math.tanh(sequence[t] @ w_xh + h @ w_hh)
        loss = mt.reduce_sum(h)
    labels = all_labels(tape, loss)
    assert not [label for label in labels if re.fullmatch(r"t\d+", label)], labels
    assert labels.count("sequence[t]") == 3
    assert [label for label in labels if label.startswith("h") and "@" not in label] == [
        "h₁", "h₂", "h₃", "h"]                      # the zeros, then each tanh
    with mt.GradientTape() as tape:
        total = 0.0
        for k in range(2):
            total += w_xh * float(k + 1)
    assert op_labels(tape) == [("Mul", "mul #1"),
                               ("AddV2", "total₂"), ("Mul", "mul #3"), ("AddV2", "total")]
    assert "total₁" in all_labels(tape)             # (the 0.0 it started from)


def test_each_run_of_a_comprehension_is_its_own_value():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        parts = [x * float(k) for k in range(3)]
        total = parts[0] + parts[1] + parts[2]
    g = tape_graph(tape)
    assert [g.label(p) for p in parts] == ["parts[0]", "parts[1]", "parts[2]"]
    assert g.label(total) == "total"


def test_each_element_of_a_comprehension_bound_to_a_name_is_that_name_indexed():
    # Every element was drawn ``w * x`` (or ``mul #1``, ``mul #2`` and ``w * x``): the
    # learner reads ``ys[1]`` as the code would. Lists written out and lists of Variables
    # made by a comprehension are indexed the same way.
    w = mt.Variable(2.0)
    xs = [mt.constant(1.0), mt.constant(2.0), mt.constant(3.0)]
    vs = [mt.Variable(float(k)) for k in range(2)]
    with mt.GradientTape(persistent=True) as tape:
        ys = [w * x for x in xs]
        parts = [mt.square(v) for v in vs]
        probs = list(mt.nn.softmax(mt.stack([w, x])) for x in xs[:2])
        loss = mt.add_n(ys) + mt.add_n(parts)
    g = tape_graph(tape)
    assert [g.label(t) for t in xs + vs] == ["xs[0]", "xs[1]", "xs[2]", "vs[0]", "vs[1]"]
    assert [g.label(t) for t in ys + parts + probs] == [
        "ys[0]", "ys[1]", "ys[2]", "parts[0]", "parts[1]", "probs[0]", "probs[1]"]
    texts = [s.text for s in TapePlayer(tape, loss, [w] + vs).steps]
    assert "forward through Mul (#2): ys[1] = w * xs[1] = 4.0" in texts, texts
    assert "forward through Square (#5): parts[1] = Square(vs[1]) = 1.0" in texts, texts
    assert any(t.startswith("backward through Square (#5): dloss/dvs[1] = ") for t in texts)
    explanation = str(mt.viz.explain(tape, ys[1], vs))
    assert "the target ys[1] does not depend on the source vs[0]" in explanation, explanation


def test_an_unbound_comprehension_calls_each_element_by_its_op_and_number():
    w = mt.Variable(2.0)
    xs = [mt.constant(1.0), mt.constant(2.0)]
    with mt.GradientTape() as tape:
        total = mt.add_n([a * b for a, b in zip(xs, [w, w])])
        s = sum(w * x for x in xs)
        d = {k: w * x for k, x in zip("ab", xs)}
    assert op_labels(tape) == [("Mul", "mul #1"), ("Mul", "mul #2"), ("AddN", "total"),
                               ("Mul", "mul #4"), ("AddV2", "s₁"), ("Mul", "mul #6"),
                               ("AddV2", "s"), ("Mul", "mul #8"), ("Mul", "mul #9")]
    g = tape_graph(tape)
    assert [g.label(t) for t in (total, s, d["a"], d["b"])] == [
        "total", "s", "mul #8", "mul #9"]


def test_a_comprehension_run_again_in_a_loop_counts_its_elements_from_zero():
    w = mt.Variable(2.0)
    xs = [mt.constant(1.0), mt.constant(2.0)]
    with mt.GradientTape() as tape:
        for _ in range(2):
            qs = [w * x for x in xs]
            total = mt.add_n(qs)
    assert tape_graph(tape).label(total) == "total"
    assert [label for _, label in op_labels(tape)] == [
        "qs[0]₁", "qs[1]₁", "total₁", "qs[0]", "qs[1]", "total"]


def test_a_backward_pass_recorded_by_an_outer_tape_is_one_run_named_by_its_call():
    # The inner gradient's ops all come from the line ``g1 = inner.gradient(y, x)``; their
    # repeating pattern (Cos, Mul per sin) is not a loop, and the seed is not ``y``.
    x = mt.Variable(1.5)
    with mt.GradientTape() as outer:
        with mt.GradientTape() as inner:
            y = mt.math.sin(x)
            for _ in range(2):
                y = mt.math.sin(y)
        g1 = inner.gradient(y, x)
    outer.gradient(g1, x)
    assert all_labels([outer, inner], g1, x) == [
        "x", "y₁", "y₂", "y", "cos #4", "1.0", "mul #5", "cos #6", "mul #7", "cos #8", "g1"]


def test_player_sentences_put_labels_that_are_not_names_in_parentheses():
    # ``dz/dx * 2.0 * 2.0`` read as a product; a result labelled by its own text was said
    # twice (``x * 2.0 = x * 2.0 = 1.4``).
    x = mt.Variable(0.7)
    with mt.GradientTape(persistent=True) as tape:
        z = mt.math.sin(x) * mt.math.exp(x * 2.0)
    texts = [s.text for s in TapePlayer(tape, z, x).steps]
    assert "forward through Mul (#2): x * 2.0 = 1.4" in texts
    assert any(t.startswith("forward through Mul (#4): z = (sin #1) * (exp #3) = 2.6")
               for t in texts), texts
    assert any(t.startswith("backward through Mul (#2): dz/dx = dz/d(x * 2.0) * 2.0 = ")
               for t in texts), texts


def test_a_list_assigned_to_one_name_is_named_element_by_element():
    v = mt.Variable([1.0, 2.0, 3.0, 4.0])
    with mt.GradientTape() as tape:
        parts = mt.unstack(v)
        halves = mt.split(v, 2)
    g = tape_graph(tape)
    assert [g.label(t) for t in parts] == ["parts[0]", "parts[1]", "parts[2]", "parts[3]"]
    assert [g.label(t) for t in halves] == ["halves[0]", "halves[1]"]


def test_a_program_with_no_source_names_its_loop_and_unpacked_values_from_the_bytecode():
    import subprocess
    import sys
    program = ("import minitape as mt\n"
               "x = mt.constant(2.0)\n"
               "with mt.GradientTape() as tape:\n"
               "    tape.watch(x)\n"
               "    y = x\n"
               "    for i in range(2):\n"
               "        y = y * x\n"
               "    a, b = mt.split(mt.stack([y, y]), 2)\n"
               "print([n.label for n in mt.viz.tape_graph(tape).tensors])\n")
    proc = subprocess.run([sys.executable, "-"], input=program, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(["x", "y₁", "y", "stack #3", "a", "b"])


def test_a_keras_fit_steps_tape_names_the_batch_x_and_y():
    # fit's batches were t1 (and y took the name Y of fit's argument by accident: the ops
    # inside fit are not the operands of the learner's call).
    mt.random.set_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(1)])
    model.compile(optimizer=mt.optimizers.SGD(0.1), loss="mse")
    X = np.ones((4, 2), np.float32)
    Y = np.zeros((4, 1), np.float32)
    model.fit(X, Y, epochs=1, verbose=0)
    tape, loss = model.last_train_step
    labels = all_labels(tape, loss, model.trainable_variables)
    assert labels[:2] == ["x", "kernel"] and "y" in labels and "Y" not in labels, labels
    assert not [label for label in labels if re.fullmatch(r"t\d+", label)], labels


def test_a_loop_calling_one_layer_names_each_call_and_a_layers_attribute_each_time():
    mt.random.set_seed(0)
    layer = mt.keras.layers.Dense(2, activation="tanh")
    x = mt.Variable(np.ones((1, 2), np.float32))
    with mt.GradientTape() as tape:
        h = x
        for _ in range(3):
            h = layer(h)
    assert [label for _, label in op_labels(tape)] == [
        "matmul #1", "add #2", "h₁", "matmul #4", "add #5", "h₂", "matmul #7", "add #8", "h"]

    class Square(mt.keras.layers.Layer):
        def call(self, v):
            self.h = v * v
            return self.h + 1.0

    square = Square()
    with mt.GradientTape() as tape:
        a = square(x)
        b = square(a)
    g = tape_graph(tape)
    assert [n.label for n in g.tensors] == ["x", "self.h₁", "1.0", "a", "self.h", "1.0", "b"]
    assert g.label(b) == "b"


def test_starred_nested_and_conditional_assignments_name_each_value():
    v = mt.Variable([1.0, 2.0, 3.0])
    with mt.GradientTape() as tape:
        first, *rest = mt.unstack(v)
    assert all_labels(tape) == ["v", "first", "rest[0]", "rest[1]"]
    with mt.GradientTape() as tape:
        (a, b), c = mt.split(v[:2], 2), v[2]
    g = tape_graph(tape)
    assert [n.label for n in g.tensors] == ["v", "v[:2]", "a", "b", "c"]
    assert [g.label(t) for t in (a, b, c)] == ["a", "b", "c"]
    with mt.GradientTape() as tape:
        y = v * 2.0 if len(rest) == 2 else v
    assert all_labels(tape) == ["v", "2.0", "y"] and tape_graph(tape).label(y) == "y"


# -- programs from TensorFlow issue threads (issue 30, item 4) ------------------------------------

def test_a_loop_over_a_list_of_variables_numbers_each_value_it_binds():
    # TensorFlow #25333 ("gradient only for the last variable"): each run reads other,
    # older tensors (w, x), so the runs were taken for one call: ``mul #1``, ``mul #2``, y.
    x = mt.constant(2.0)
    ws = [mt.Variable(1.0), mt.Variable(2.0), mt.Variable(3.0)]
    with mt.GradientTape() as tape:
        for w in ws:
            y = w * x
    assert all_labels(tape, y, ws) == ["ws[0]", "x", "y₁", "ws[1]", "y₂", "ws[2]", "y"]


def test_unnamed_results_are_called_by_the_function_the_learner_called():
    # ``selectv2 #3``, ``stopgradient #2``, ``addn #4``: the op types, not mt.where,
    # mt.stop_gradient, mt.add_n.
    x = mt.Variable([1.0, 4.0])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(mt.where(x > 2.0, mt.sqrt(x), 0.0) + mt.stop_gradient(x * x))
        z = mt.add_n([y, y]) * 2.0
    labels = [label for _, label in op_labels(tape)]
    assert labels[2] == "where #3" and labels[4] == "stop_gradient #5", labels
    assert labels[-2] == "add_n #8" and labels[-1] == "z" == tape_graph(tape).label(z), labels


def test_a_target_no_recorded_op_made_is_called_by_the_learners_variable():
    # A non-trainable Variable is not watched, so ``y = x ** 2`` is not recorded: the
    # target was drawn ``t1`` and the player said ``dt1/dx``.
    x = mt.Variable(3.0, trainable=False)
    with mt.GradientTape(persistent=True) as tape:
        y = x ** 2
    assert all_labels(tape, y, x) == ["y", "x"]
    assert TapePlayer(tape, y, x).steps[-1].text == "done: dy/dx = None"
    mt.random.set_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(1)])
    y_pred = model(np.ones((2, 3), np.float32))       # (called before the tape)
    with mt.GradientTape() as tape:
        loss = mt.reduce_mean(mt.square(y_pred - 1.0))
    assert all_labels(tape, loss, model.trainable_variables) == ["loss", "kernel", "bias"]


def test_the_data_a_model_and_a_loss_read_is_called_by_the_callers_argument():
    # The custom training loop of TensorFlow's guide: the NumPy batch becomes a tensor
    # inside ``model(X)`` and ``loss_fn(Y, logits)``; it was drawn t1 and t2.
    mt.random.set_seed(0)
    model = mt.keras.Sequential([mt.keras.layers.Dense(4, activation="relu"),
                                 mt.keras.layers.Dense(1)])
    loss_fn = mt.keras.losses.MeanSquaredError()
    X = np.ones((3, 2), np.float32)
    Y = np.zeros((3, 1), np.float32)
    with mt.GradientTape() as tape:
        logits = model(X, training=True)
        loss_value = loss_fn(Y, logits)
    labels = all_labels(tape)
    assert labels[0] == "X" and "Y" in labels and "logits" in labels, labels
    assert tape_graph(tape).label(loss_value) == "loss_value"
    assert not [label for label in labels if re.fullmatch(r"t\d+", label)], labels


def test_a_layer_called_twice_numbers_its_results():
    # TensorFlow's DCGAN tutorial calls the discriminator on real and on generated data:
    # its hidden layer's two results were both drawn with the layer's name.
    keras = mt.keras
    mt.random.set_seed(0)
    discriminator = keras.Sequential([keras.layers.Dense(3, activation="relu"),
                                      keras.layers.Dense(1)])
    images, generated = mt.random.normal([5, 2]), mt.random.normal([5, 2])
    with mt.GradientTape() as disc_tape:
        real_output = discriminator(images, training=True)
        fake_output = discriminator(generated, training=True)
        disc_loss = mt.reduce_mean(real_output) - mt.reduce_mean(fake_output)
    hidden = discriminator.layers[0].name
    labels = all_labels(disc_tape, disc_loss, discriminator.trainable_variables)
    assert labels.count(hidden + "₁") == 1 and labels.count(hidden) == 1, labels
    assert labels.index(hidden + "₁") < labels.index("real_output") < labels.index(hidden)


def test_a_comprehension_calling_a_layer_names_each_call_by_its_element():
    mt.random.set_seed(0)
    cell = mt.keras.layers.Dense(2, activation="tanh")
    xs = [mt.constant(np.ones((1, 2), np.float32) * k) for k in range(3)]
    with mt.GradientTape() as tape:
        outputs = [cell(x_t) for x_t in xs]
        total = mt.add_n(outputs)
    g = tape_graph(tape)
    assert [g.label(t) for t in xs + outputs + [total]] == [
        "xs[0]", "xs[1]", "xs[2]", "outputs[0]", "outputs[1]", "outputs[2]", "total"]


def test_a_tensor_made_inline_by_a_long_call_is_called_by_the_function():
    # The GAN losses of TensorFlow's DCGAN tutorial: ``mt.ones_like(fake_output)`` makes a
    # tensor no tape records (drawn t1 before); its text is too long for a label, so the
    # drawing calls it by the function that made it.
    cross_entropy = mt.keras.losses.BinaryCrossentropy(from_logits=True)
    w = mt.Variable([[0.5], [-0.3]], name="w")
    x = mt.constant(np.array([[1.0, 2.0], [0.5, -1.0]], np.float32))
    with mt.GradientTape() as tape:
        fake_output = mt.matmul(x, w)
        gen_loss = cross_entropy(mt.ones_like(fake_output), fake_output)
        shifted = mt.zeros_like(fake_output) + fake_output   # read by one op directly
    labels = all_labels(tape)
    assert "ones_like(…)" in labels and "zeros_like(…)" in labels, labels
    assert "fake_output" in labels and tape_graph(tape).label(gen_loss) == "gen_loss"
    assert tape_graph(tape).label(shifted) == "shifted"
    assert not [label for label in labels if re.fullmatch(r"t\d+", label)], labels
    with mt.GradientTape() as tape:
        y = mt.ones_like(w) * w
    assert all_labels(tape) == ["ones_like(…)", "w", "y"] and tape_graph(tape).label(y) == "y"


def test_a_sub_expression_run_in_a_loop_calls_each_value_by_its_op_and_number():
    # ``mt.sin(y)`` in a loop made three values; its text called all three the same, and a
    # sentence read "mt.sin(y) = Sin(x)" though y was x only the first time.
    x = mt.Variable(0.5)
    with mt.GradientTape() as tape:
        y = x
        for _ in range(3):
            y = mt.sin(y) * 2.0
    assert all_labels(tape) == ["x", "sin #1", "2.0", "y₁", "sin #3", "2.0", "y₂", "sin #5",
                                "2.0", "y"]
    sentences = [s.text for s in TapePlayer(tape, y, x).steps]
    assert "forward through Sin (#3): sin #3 = Sin(y₁) = 0.8185" in sentences
    with mt.GradientTape() as tape:                  # once: the text is the label
        z = mt.sin(x) * 2.0
    assert all_labels(tape) == ["x", "mt.sin(x)", "2.0", "z"] and z.numpy() > 0
