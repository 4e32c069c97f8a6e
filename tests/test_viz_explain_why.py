"""explain: why a gradient is NaN or inf, and the real cause in four programs from TensorFlow's
issue threads where the old answer was wrong (where, a target made after the tape, an assign
inside the tape, argmax). Each test first checks the gradient itself, then the sentence."""

import os

import numpy as np
import pytest

import minitape as mt
from minitape.viz import explain
from minitape.viz.explain import diagnose

HERE = os.path.basename(__file__)


def line_of(text):
    with open(__file__) as f:
        hits = [n for n, line in enumerate(f, start=1)
                if text in line and "line_of(" not in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


@pytest.fixture(autouse=True)
def source_lines():
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(True)
    with np.errstate(all="ignore"):
        yield
    mt.config.record_source_lines(was)


@pytest.mark.parametrize("persistent", [False, True])
def test_nan_from_the_branch_where_does_not_choose(persistent):
    x = mt.Variable(0.0)
    with mt.GradientTape(persistent=persistent) as tape:
        y = mt.where(x > 0.0, mt.math.log(x), 0.0)  # the NaN line
    assert np.isnan(tape.gradient(y, x).numpy())
    code, text = diagnose(tape, y, x)
    assert code == "non_finite"
    assert "the gradient of the source x (a Variable) is nan" in text
    assert "log at x = 0.0 has derivative inf; where (op #3) sends it 0.0; inf * 0.0 = nan" in text
    assert f"(op #2, {HERE}:{line_of('# the NaN line')}: y = mt.where(" in text
    assert "double where" in text and "mt.math.log(mt.where(x > 0.0, x, 1.0))" in text


def test_the_double_where_fixes_it_and_explain_says_so():
    x = mt.Variable(0.0)
    with mt.GradientTape(persistent=True) as tape:
        safe = mt.where(x > 0.0, x, 1.0)
        y = mt.where(x > 0.0, mt.math.log(safe), 0.0)
    assert tape.gradient(y, x).numpy() == 0.0
    assert diagnose(tape, y, x)[0] == "connected"


def test_nan_from_the_norm_of_a_zero_vector():
    v = mt.Variable([0.0, 0.0])
    with mt.GradientTape() as tape:
        n = mt.norm(v)
    assert np.isnan(tape.gradient(n, v).numpy()).all()
    code, text = diagnose(tape, n, v)
    assert code == "non_finite"
    # sqrt at 0 has an infinite derivative and the target's seed is 1: inf, then nan later.
    assert "sqrt" in text and "has derivative inf" in text and "inf * 1.0 = inf" in text
    assert "epsilon" in text


def test_inf_from_a_division_by_zero_advises_divide_no_nan():
    x = mt.Variable([1.0, 2.0])
    mask = mt.constant([0.0, 0.0])
    with mt.GradientTape(persistent=True) as tape:
        mean = mt.reduce_sum(x * mask) / mt.reduce_sum(mask)
    assert not np.isfinite(tape.gradient(mean, x).numpy()).all()
    code, text = diagnose(tape, mean, x)
    assert code == "non_finite" and "divide (op #" in text
    assert "mt.math.divide_no_nan" in text


def test_a_finite_gradient_is_just_connected():
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = mt.math.log(x) * x
    assert np.isfinite(tape.gradient(y, x).numpy())
    assert diagnose(tape, y, x)[0] == "connected"


def test_explain_under_check_numerics_does_not_raise():
    x = mt.Variable(0.0)
    with mt.GradientTape(persistent=True) as tape:
        y = mt.where(x > 0.0, mt.math.log(x), 0.0)
    mt.debugging.enable_check_numerics()
    try:
        assert diagnose(tape, y, x)[0] == "non_finite"
    finally:
        mt.debugging.disable_check_numerics()


# -- the four programs ---------------------------------------------------------------------------

def test_where_passes_the_gradient_to_the_chosen_branch():
    x = mt.Variable([1.0, -1.0])
    with mt.GradientTape(persistent=True) as tape:
        y = mt.where(x > 0, x, 0.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 0.0])
    code, text = diagnose(tape, y, x)
    assert code == "connected"
    assert "passes the gradient to the branch it chose" in text
    assert "Greater" not in text and "no gradient by design" not in text


def test_a_target_computed_after_the_tape_closed():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        h = x * x
    loss = h * 3.0                       # after the with block
    assert tape.gradient(loss, x) is None
    code, text = diagnose(tape, loss, x)
    assert code == "target_after_tape"
    assert "after the `with` block" in text and "NumPy" not in text
    # explain calls it by the learner's name even though no tape recorded it: the name the
    # calling code holds it under (issue 30: "explain names the target ... as the learner
    # wrote them"); a source only the code names (made with the record off) likewise
    assert str.__str__(explain(tape, loss, x)).startswith("the target loss was computed after")
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(False)
    try:
        weight = mt.Variable(1.0)
    finally:
        mt.config.record_source_lines(was)
    with mt.GradientTape() as tape2:
        out = weight * 2.0
    assert "to the source weight (a Variable)" in explain(tape2, out * 3.0, weight)


def test_an_assign_inside_the_tape_is_named():
    x = mt.constant(3.0)
    v = mt.Variable(0.0)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        v.assign_add(x)
        y = v * 2.0
    assert tape.gradient(y, x) is None
    code, text = diagnose(tape, y, x)
    assert code == "assign"
    assert ".assign_add(" in text and "not a recorded operation" in text
    assert "no recorded operation leads from it" not in text


def test_argmax_has_no_gradient_and_a_cast_does_not_help():
    x = mt.Variable([1.0, 3.0, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        i = mt.argmax(x)
        y = mt.cast(i, mt.float32) * 2.0
    assert tape.gradient(y, x) is None
    code, text = diagnose(tape, y, x)
    assert code == "no_gradient_op"
    assert "ArgMax (op #1, " in text and "i = mt.argmax(x)" in text
    assert "does not help" in text and "softmax" in text
    assert "NumPy" not in text


def test_a_comparison_cast_to_float_is_explained():
    x = mt.Variable([1.0, -3.0])
    with mt.GradientTape(persistent=True) as tape:
        y = mt.cast(x > 0.0, mt.float32) * 2.0
    assert tape.gradient(y, x) is None
    code, text = diagnose(tape, y, x)
    assert code == "no_gradient_op" and "Greater (op #1, " in text and "mt.where" in text


def test_a_none_answer_names_the_op_and_the_learners_line():
    x = mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        z = mt.stop_gradient(x * x) + 1.0  # blocked here
    assert tape.gradient(z, x) is None
    code, text = diagnose(tape, z, x)
    assert code == "stop_gradient"
    assert (f"stop_gradient (op #2, {HERE}:{line_of('# blocked here')}: "
            "z = mt.stop_gradient(x * x) + 1.0") in text


# -- printing -------------------------------------------------------------------------------------

def test_print_wraps_at_word_boundaries(capsys):
    x = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        y = mt.where(x > 0.0, mt.math.log(x), 0.0)
    tape.gradient(y, x)
    sentence = explain(tape, y, x)
    print(sentence)
    printed = capsys.readouterr().out.rstrip("\n")
    lines = printed.split("\n")
    assert len(lines) > 2 and all(len(line) <= 88 for line in lines)
    assert printed.split() == sentence.split()   # the same words, none broken
    assert "\n" not in sentence                  # the value itself is the one-line sentence


def test_an_op_in_a_loop_is_named_with_its_iteration_and_the_drawing_that_unfolds_it():
    # Issue 33: a loop's iterations are drawn folded, one shown; explain says which iteration
    # holds the op it names, and how to draw that one.
    x = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        y = x
        for _ in range(10):
            y = mt.where(y > 0.0, mt.math.log(y), 0.0) + y
    with np.errstate(all="ignore"):
        text = " ".join(str(mt.viz.explain(tape, y, x)).split())
    assert "log (op #38 in iteration 10 of 10 of a loop " \
        "[draw_tape(tape, fold=True, iteration=9) draws it]" in text, text
    with mt.GradientTape() as flat:            # no loop: no iteration named
        z = mt.where(x > 0.0, mt.math.log(x), 0.0)
    with np.errstate(all="ignore"):
        assert "iteration" not in str(mt.viz.explain(flat, z, x))


def test_a_variable_replaced_by_a_tensor_in_a_training_loop_is_called_by_its_name():
    # The classic: ``w = w - lr * g`` turns the Variable into a plain Tensor made outside any
    # tape (no line recorded for it), so the next step's gradient is None. explain calls it
    # ``w`` in its sentence and in the code it suggests, not ``t1`` and ``x``.
    w = mt.Variable(1.0)
    for _ in range(2):
        with mt.GradientTape() as tape:
            loss = (w * 3.0 - 2.0) ** 2
        g = tape.gradient(loss, w)
        if g is None:
            break
        w = w - 0.1 * g
    assert g is None
    text = str.__str__(explain(tape, loss, w))
    assert text.startswith("the source w is a plain Tensor, not a Variable"), text
    assert "tape.watch(w)" in text and "`w = w + 1`" in text and "w.assign_add(1)" in text


def test_a_numpy_function_on_the_source_inside_the_tape_is_named_with_its_line(source_lines):
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = np.square(x)  # NumPy reads the Variable
        z = mt.constant(y) * 2.0
    assert tape.gradient(z, x) is None
    code, text = diagnose(tape, z, x)
    assert code == "left_minitape"
    assert f"at {HERE}:{line_of('# NumPy reads the Variable')} (`y = np.square(x)`)" in text
    assert "never read" not in text and "branch not taken" not in text


def test_float_of_a_recorded_tensor_is_named_with_its_line(source_lines):
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
        z = mt.constant(float(y)) * 3.0  # float() leaves minitape
    code, text = diagnose(tape, z, x)
    assert code == "numpy_path"
    assert f"y was turned into a constant or a NumPy or Python value at {HERE}:" \
           f"{line_of('# float() leaves minitape')}" in text


def test_numpy_reads_outside_the_tape_or_by_minitape_itself_are_not_blamed(source_lines):
    from minitape.viz.record import left_at
    x = mt.Variable(2.0)
    np.square(x)                      # before the tape: not while it recorded
    with mt.GradientTape() as tape:
        w = mt.Variable(1.0)
        y = w * 2.0
        mt.viz.draw_tape(tape)        # minitape's own reads of the tensors
    assert left_at(w.id) == () and left_at(y.id) == ()
    code, _ = diagnose(tape, y, x)
    assert code == "not_read"


def test_the_double_where_fix_is_written_with_the_learners_name():
    w = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        loss = mt.where(w > 0.0, mt.math.log(w), 0.0)
    tape.gradient(loss, w)
    assert "e.g. mt.where(w > 0.0, mt.math.log(mt.where(w > 0.0, w, 1.0)), 0.0)" in \
        explain(tape, loss, w)


def test_a_watch_after_the_target_was_computed_is_named():
    x = mt.constant(3.0)
    with mt.GradientTape() as tape:
        y = x * x
        tape.watch(x)                  # too late: the multiply was not recorded
    assert tape.gradient(y, x) is None
    code, text = diagnose(tape, y, x)
    assert code == "watched_late"
    assert text.startswith("tape.watch(x) came after the target was computed")
    assert "NumPy" not in text
    # a watch before the computation, then another one after it, is not blamed
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.watch(x)
    assert diagnose(tape, y, x)[0] == "connected"


def test_a_numpy_function_written_in_python_is_blamed_at_the_learners_line(source_lines):
    # np.mean is Python code inside NumPy that calls np.asarray: the line named is the
    # learner's, not NumPy's _methods.py (the TensorFlow guide's "NumPy detour").
    x = mt.Variable([[1.0, 2.0], [3.0, 4.0]])
    with mt.GradientTape() as tape:
        x2 = x**2
        y = np.mean(x2, axis=0)  # the detour through NumPy
        y = mt.reduce_mean(y, axis=0)
    code, text = diagnose(tape, y, x)
    assert code == "numpy_path"
    assert f"x2 was turned into a constant or a NumPy or Python value at {HERE}:" \
           f"{line_of('# the detour through NumPy')} (`y = np.mean(x2, axis=0)" in text


def test_a_constant_made_from_tensors_inside_the_tape_is_named(source_lines):
    a, b = mt.Variable(1.0), mt.Variable(2.0)
    with mt.GradientTape() as tape:
        v = mt.constant([a, b])  # a constant: tf.constant too
        loss = mt.reduce_sum(v * v)
    assert tape.gradient(loss, a) is None
    code, text = diagnose(tape, loss, a)
    assert code == "left_minitape"
    assert f"at {HERE}:{line_of('# a constant: tf.constant too')} (`v = mt.constant([a, b])" \
        in text and "mt.stack" in text


def test_model_predict_inside_the_tape_is_named(source_lines):
    # Keras's predict returns NumPy: the TensorFlow forums' "No gradients provided" with
    # model.predict inside the tape. explain names the learner's line, not predict's inside.
    model = mt.keras.Sequential([mt.keras.layers.Dense(1)])
    x = np.ones((4, 3), "float32")
    model(x)
    with mt.GradientTape() as tape:
        pred = model.predict(x, verbose=0)  # NumPy out
        loss = mt.reduce_mean((pred - 1.0) ** 2)
    kernel = model.trainable_variables[0]
    assert tape.gradient(loss, kernel) is None
    code, text = diagnose(tape, loss, kernel)
    assert code == "numpy_path"
    assert f"at {HERE}:{line_of('# NumPy out')} (`pred = model.predict(x, verbose=0)" in text
    assert "model.predict" in text


def test_an_infinite_gradient_is_not_blamed_on_a_zero_it_never_met():
    x = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        r = mt.sqrt(x)
    assert np.isinf(tape.gradient(r, x).numpy())
    text = str.__str__(explain(tape, r, x))
    assert "sqrt at x = 0.0 has derivative inf" in text and "inf * 1.0 = inf" in text
    assert "An infinite derivative makes the gradient infinite" in text
    assert "A zero gradient times" not in text


def test_explain_takes_the_sources_given_to_gradient():
    # explain(tape, loss, model.trainable_variables), as a learner passes them to gradient:
    # a line per source; a reason already given above is not repeated in full.
    model = mt.keras.Sequential([mt.keras.layers.Dense(2), mt.keras.layers.Dense(1)])
    x = mt.constant(np.ones((4, 3), "float32"))
    with mt.GradientTape() as tape:
        out = model(x)
        loss = mt.reduce_mean(mt.cast(mt.argmax(out, axis=1), mt.float32))
    text = explain(tape, loss, model.trainable_variables)
    lines = str.__str__(text).split("\n")
    assert len(lines) == 4 and "ArgMax" in lines[0]
    first, *others = [v.path for v in model.trainable_variables]   # dense/kernel, ...
    assert lines[1:] == [f"the source {p} (a Variable): the same as for {first}"
                         for p in others]
    assert str(text).count("\n") > 4       # printed: each paragraph wrapped on its own
    assert str(text).endswith(lines[3]) and text._repr_html_().count("<p ") == 4


def test_a_target_of_none_is_named():
    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        x * 2.0
    assert str.__str__(explain(tape, None, x)).startswith("the target is None: pass the Tensor")


def test_a_print_after_the_target_is_not_blamed_for_the_detour(source_lines):
    x = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        y = x * x
        z = mt.constant(np.square(y)) * 3.0  # the square's detour
        print(float(y))                       # a harmless print, after the target
    code, text = diagnose(tape, z, x)
    assert code == "numpy_path"
    assert f"{HERE}:{line_of('# the square')}" in text, text
