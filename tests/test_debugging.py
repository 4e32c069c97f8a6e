"""mt.debugging: check_numerics raises at the first op (forward or backward) that makes a NaN or
an infinity, naming the op and the learner's line; NumPy's RuntimeWarnings from ops point at
the learner's line (this file), not into minitape."""

import os
import warnings

import numpy as np
import pytest

import minitape as mt

HERE = os.path.abspath(__file__)


def line_of(text):
    """The line number in this file of the one line holding ``text``."""
    with open(HERE) as f:
        hits = [n for n, line in enumerate(f, start=1)
                if text in line and "line_of(" not in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


@pytest.fixture
def checking():
    mt.debugging.enable_check_numerics()
    yield
    mt.debugging.disable_check_numerics()


@pytest.fixture
def source_lines():
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(True)
    yield
    mt.config.record_source_lines(was)


def test_check_numerics_raises_at_the_forward_op_with_the_learners_line(checking):
    x = mt.constant([1.0, 0.0])
    with pytest.raises(mt.errors.InvalidArgumentError) as info, np.errstate(divide="ignore"):
        y = mt.math.log(x)  # the failing line
    message = str(info.value)
    assert message.startswith('!!! Detected Infinity or NaN in output 0 of op "Log"')
    assert "input 0: [1., 0.]" in message
    assert f"test_debugging.py:{line_of('# the failing line')}: y = mt.math.log(x)" in message
    assert "y" not in locals()      # it raised before returning


def test_check_numerics_passes_finite_ops_and_integers(checking):
    x = mt.Variable([1.0, 4.0])
    with mt.GradientTape() as tape:
        y = mt.reduce_sum(mt.sqrt(x) * mt.cast(mt.constant([1, 2]), mt.float32))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.5, 0.5])


def test_check_numerics_raises_in_the_backward_pass_naming_the_recorded_op(checking,
                                                                           source_lines):
    x = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        y = mt.sqrt(x)  # recorded here
    with pytest.raises(mt.errors.InvalidArgumentError) as info:
        tape.gradient(y, x)
    message = str(info.value)
    assert 'computed in the backward pass for op "Sqrt"' in message
    assert f"recorded at test_debugging.py:{line_of('# recorded here')}" in message


def test_check_numerics_checks_the_ops_a_gradient_rule_runs(checking):
    # Mul's rule runs ``dy * y``, a Mul whose output is checked as it is computed.
    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        y = x * 1e20
    with pytest.raises(mt.errors.InvalidArgumentError,
                       match=r'output 0 of op "Mul" .*computed in the backward pass for op "Mul"'):
        tape.gradient(y, x, output_gradients=mt.constant(1e20))


def test_check_numerics_checks_what_the_walk_sends(checking):
    # A custom gradient that makes its Tensor without an op: the walk checks what it sends.
    @mt.custom_gradient
    def f(x):
        return mt.identity(x), lambda dy: mt.constant(np.inf)

    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        y = f(x)
    with pytest.raises(mt.errors.InvalidArgumentError,
                       match=r'the gradient of input 0 of op "CustomGradient", computed in the'):
        tape.gradient(y, x)


def test_disable_check_numerics_lets_infinities_through():
    mt.debugging.enable_check_numerics()
    mt.debugging.disable_check_numerics()
    with np.errstate(all="ignore"):
        assert mt.math.log(mt.constant(0.0)).numpy() == -np.inf


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(os.path.abspath(w.filename), w.lineno, str(w.message)) for w in caught
            if issubclass(w.category, RuntimeWarning)]


def test_a_forward_warning_points_at_the_learners_line():
    def run():
        mt.math.log(mt.constant(0.0))  # forward warning
    assert _caught(run) == [(HERE, line_of("# forward warning"),
                             "divide by zero encountered in log")]


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_a_program_with_no_file_warns_at_its_line_and_goes_on(how):
    # ``python -c`` and ``python -`` (a heredoc, a teacher's pipe): the program's module has
    # a loader that cannot give its source, which ``warn_explicit`` must not ask for (it
    # raised ImportError "'__main__' is not a built-in module" instead of warning).
    import subprocess
    import sys
    program = ("import minitape as mt\n"
               "x = mt.Variable(0.0)\n"
               "with mt.GradientTape() as tape:\n"
               "    y = mt.math.log(x)\n"
               "print(float(y), float(tape.gradient(y, x)))\n"
               "print(mt.viz.explain(tape, y, x).replace(chr(10), ' '))\n")
    args = [sys.executable, "-W", "default::RuntimeWarning"]
    proc = subprocess.run(args + (["-c", program] if how == "-c" else ["-"]),
                          input=None if how == "-c" else program,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    numbers, why = proc.stdout.splitlines()
    assert numbers.split() == ["-inf", "inf"]
    where = "<string>" if how == "-c" else "<stdin>"
    # explain names the op's line, and no missing source text ("None") in its place
    assert f"is log (op #1, {where}:4): log at x = 0.0 has derivative inf" in why, why
    assert f"{where}:4: RuntimeWarning: divide by zero encountered in log" in proc.stderr
    assert f"{where}:4: RuntimeWarning: divide by zero encountered in the gradient of Log" \
        in proc.stderr


def test_an_operator_warning_names_the_operation():
    def run():
        return mt.constant(1.0) / 0.0  # operator warning
    assert _caught(run) == [(HERE, line_of("# operator warning"),
                             "divide by zero encountered in divide")]


def test_a_backward_warning_points_at_the_line_that_recorded_the_op(source_lines):
    x = mt.Variable(0.0)
    with mt.GradientTape() as tape:
        y = mt.where(x > 0.0, mt.math.log(x), 0.0)  # the op whose gradient warns
    caught = _caught(lambda: tape.gradient(y, x))
    assert caught == [(HERE, line_of("# the op whose gradient warns"),
                       "invalid value encountered in the gradient of Log")]


def test_without_source_lines_a_backward_warning_points_at_the_gradient_call():
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(False)
    try:
        x = mt.Variable(0.0)
        with mt.GradientTape() as tape:
            with np.errstate(all="ignore"):
                y = mt.sqrt(x)

        def run():
            tape.gradient(y, x)  # asks for the gradient
        caught = _caught(run)
    finally:
        mt.config.record_source_lines(was)
    assert caught == [(HERE, line_of("# asks for the gradient"),
                       "divide by zero encountered in the gradient of Sqrt")]


def test_numpy_outside_minitape_still_warns_at_its_own_line():
    def run():
        np.float64(1.0) / np.float64(0.0)  # plain numpy
    assert _caught(run) == [(HERE, line_of("# plain numpy"), "divide by zero encountered")]


def test_an_errstate_of_the_learner_still_wins():
    def run():
        with np.errstate(divide="ignore"):
            mt.math.log(mt.constant(0.0))
    assert _caught(run) == []
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            mt.math.log(mt.constant(0.0))
