"""``mt.viz.check_tape``: every op's gradient rule against finite differences of its forward.

The independent values are the finite differences themselves (float64 central differences of
the op's NumPy forward), closed forms for the planted wrong rules, and the registry-driven
table of ``tests/op_specs.py``: every op type's cases must pass ``check_tape``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest
from op_specs import NO_GRADIENT_SPECS, SPECS

import minitape as mt
from minitape import registry
from minitape.viz import TapeCheck, check_tape

ROOT = Path(__file__).resolve().parent.parent


def _watched(*arrays, dtype=np.float64):
    return [mt.constant(np.asarray(a, dtype)) for a in arrays]


def twenty_op_program(x, w, b):
    """A small network and a few extras: 20 recorded ops, with broadcasting (the bias)."""
    h = mt.matmul(x, w) + b                       # 1 MatMul, 2 AddV2 (bias broadcast)
    h = mt.math.tanh(h)                           # 3
    h = h * mt.math.sigmoid(h)                    # 4 Sigmoid, 5 Mul
    s = mt.nn.softmax(h, axis=-1)                 # 6
    e = mt.exp(-(h * h))                          # 7 Mul, 8 Neg, 9 Exp
    t = mt.transpose(e) @ s                       # 10 Transpose, 11 MatMul
    r = mt.reshape(t, [-1])                       # 12
    q = mt.math.log1p(r * r)                      # 13 Mul, 14 Log1p
    v = mt.reduce_mean(q) + mt.reduce_sum(s * b)  # 15 Mean, 16 Mul, 17 Sum, 18 AddV2
    return mt.math.softplus(v) / 2.0 - 1.0        # 19 Softplus, 20 RealDiv, (21 Sub)


def _twenty_args(rng, dtype):
    return _watched(rng.standard_normal((4, 3)), rng.standard_normal((3, 5)),
                    rng.standard_normal((5,)), dtype=dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_correct_program_is_all_ok(dtype):
    x, w, b = _twenty_args(np.random.default_rng(0), dtype)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        y = twenty_op_program(x, w, b)
    check = check_tape(tape, y, [x, w, b])
    assert isinstance(check, TapeCheck)
    assert len(check.rows) == len(tape.operations) >= 20
    assert check.ok and check.failing == []
    assert [r.status for r in check.rows] == ["ok"] * len(check.rows)
    assert [r.index for r in check.rows] == list(range(1, len(check.rows) + 1))
    for r in check.rows:
        assert r.max_abs_error < 1e-6 and r.dtype == "float64"


def _planted_cube(op_type, factor):
    """``x**3`` as a new op whose registered gradient is ``factor * x**2`` (3 is right)."""
    @mt.primitive(op_type)
    def cube(x):
        return x ** 3

    @mt.RegisterGradient(op_type, override=True)
    def _cube_grad(op, dy):
        return dy * factor * op.inputs[0] ** 2

    return cube


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_wrong_registered_gradient_fails_exactly_that_op(dtype):
    cube = _planted_cube("CheckTestCube", 2.0)
    (x,) = _watched([0.5, -1.5, 2.0], dtype=dtype)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = mt.math.sin(x) * x          # 1 Sin, 2 Mul
        b = cube(a + 1.0)               # 3 AddV2, 4 CheckTestCube
        y = mt.reduce_sum(mt.exp(-b))   # 5 Neg, 6 Exp, 7 Sum
    check = check_tape(tape, y, x)
    assert not check.ok
    assert [(r.index, r.op_type) for r in check.failing] == [(4, "CheckTestCube")]
    row = check.failing[0]
    # The rule's VJP is 2/3 of the true one, element by element (u is the same for both).
    np.testing.assert_allclose(row.analytic[0] / row.numeric[0], np.full(3, 2 / 3), rtol=1e-4)
    assert row.max_abs_error > 0.1 and row.max_rel_error == pytest.approx(1 / 3, rel=1e-4)
    assert "wrong gradient in #4 CheckTestCube" in repr(check)
    # The right rule passes.
    _planted_cube("CheckTestCube", 3.0)
    assert check_tape(tape, y, x).ok


def test_a_wrong_custom_gradient_fails_that_function():
    @mt.custom_gradient
    def log1pexp(x):
        e = mt.exp(x)

        def grad(dy):
            return dy * (1 - 1 / e)   # wrong: should be 1 - 1 / (1 + e)

        return mt.math.log(1 + e), grad

    (x,) = _watched([[0.3, -2.0], [1.0, 4.0]])
    with mt.GradientTape() as tape:   # not persistent: checked before gradient()
        tape.watch(x)
        y = mt.reduce_sum(log1pexp(x * 2.0) ** 2)
    check = check_tape(tape, y, x)
    assert [r.label() for r in check.failing] == ["#5 CustomGradient log1pexp"]
    row = check.failing[0]
    xv = 2.0 * x.numpy()
    ratio = (1 - np.exp(-xv)) / (1 - 1 / (1 + np.exp(xv)))   # wrong rule / right rule
    np.testing.assert_allclose(row.analytic[0] / row.numeric[0], ratio, rtol=1e-5)
    assert tape.gradient(y, x) is not None   # the tape is still usable afterwards


def test_non_differentiable_points_are_reported_not_failed():
    x = mt.constant([0.0, 1.0, -2.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a = mt.abs(x)                   # kink at 0
        m = mt.maximum(x, x * 1.0)      # a tie everywhere
        r = mt.nn.relu(x)               # kink at 0
        s = mt.sign(x)                  # a jump at 0
        y = mt.reduce_sum(a + m + r + s)
    check = check_tape(tape, y, x)
    status = {r.op_type: r.status for r in check.rows}
    assert status["Abs"] == status["Maximum"] == status["Relu"] == status["Sign"] \
        == "not differentiable"
    assert status["Sum"] == "ok"
    assert check.ok and "kink" in check.rows[0].note
    # Away from the kinks the same ops are simply ok.
    x2 = mt.constant([0.5, 1.0, -2.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x2)
        y = mt.reduce_sum(mt.abs(x2) + mt.nn.relu(x2) + mt.maximum(x2, 0.7))
    assert {r.status for r in check_tape(tape, y, x2).rows} == {"ok"}


def test_a_long_note_wraps_within_a_notebook_column():
    # A static page (nbconvert, the course site) breaks a long line of text output in the
    # middle of a word; the check's text wraps its notes itself, each word kept whole.
    x = mt.constant([0.0, 1.5])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.reduce_sum(mt.abs(x) * mt.stop_gradient(x))
    check = check_tape(tape, y, x)
    lines = repr(check).splitlines()[1:]
    assert all(len(line) <= 92 for line in lines), lines
    note = check.rows[0].note
    assert len(note) > 60            # (a note long enough to wrap)
    abs_lines = lines[:next(i for i, line in enumerate(lines) if "StopGradient" in line)]
    assert len(abs_lines) >= 2 and " ".join(w for line in abs_lines for w in line.split()) \
        .endswith(f"({note})")


def test_ops_without_gradient_are_skipped():
    x = mt.constant(np.ones((2, 2, 1)))
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        k = mt.stop_gradient(x * 2.0)
        c = mt.image.adjust_contrast(x, 2.0)
        y = mt.reduce_sum(c) + mt.reduce_sum(x * k)
        i = mt.math.argmax(x * k, axis=0)
        n = mt.cast(x, mt.int32)
    check = check_tape(tape, y, x)
    status = {r.op_type: (r.status, r.note) for r in check.rows}
    assert status["StopGradient"] == ("skipped", "declared not differentiable (no_gradient)")
    assert status["AdjustContrastv2"][0] == "skipped" and "LookupError" in \
        status["AdjustContrastv2"][1]
    assert check.ok and {s for s, _ in status.values()} == {"ok", "skipped"}
    (row,) = check_tape(tape, i, x).rows[-1:]
    assert (row.op_type, row.status) == ("ArgMax", "skipped")
    (row,) = check_tape(tape, n, x).rows
    assert (row.op_type, row.status, row.note) == ("Cast", "skipped",
                                                   "integer or bool outputs: no gradient")


def test_sources_limit_the_check_and_constants_are_not_checked():
    x, c = _watched([1.0, 2.0], [3.0, 4.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch([x, c])
        unrelated = mt.math.sin(c)          # 1: not between x and y
        y = mt.reduce_sum(x ** 3.0) + mt.reduce_sum(unrelated)   # 2 Pow, 3 Sum, 4 Sum, 5 Add
    only_x = check_tape(tape, y, x)
    assert [r.op_type for r in only_x.rows] == ["Pow", "Sum", "AddV2"]
    assert only_x.rows[0].analytic[1] is None   # the exponent 3.0 is not a source
    everything = check_tape(tape, y)
    assert [r.op_type for r in everything.rows] == ["Sin", "Pow", "Sum", "Sum", "AddV2"]


def test_a_non_persistent_tape_is_checked_before_gradient_and_refused_after():
    rng = np.random.default_rng(1)
    x, b = _watched(rng.standard_normal((30, 3)), rng.standard_normal((3,)))
    with mt.GradientTape() as tape:
        tape.watch(x)
        h = x + b            # AddV2 keeps no inputs; its output is large: computed again
        y = mt.reduce_sum(mt.math.sin(h) * h)
    check = check_tape(tape, y, x)
    assert check.ok and [r.status for r in check.rows] == ["ok"] * 4
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent=True"):
        check_tape(tape, y, x)


def test_large_inputs_are_checked_along_random_directions():
    cube = _planted_cube("CheckTestCubeLarge", 2.5)
    (x,) = _watched(np.random.default_rng(2).uniform(0.5, 1.5, (20, 10)))
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.reduce_sum(cube(x) * x)
    check = check_tape(tape, y, x, directions=4)
    assert [r.op_type for r in check.failing] == ["CheckTestCubeLarge"]
    row = check.failing[0]
    assert row.directional and row.analytic[0].shape == (4,)
    # Mul is elementwise: all 200 elements are differenced at once, exactly; Sum is not.
    assert {r.op_type: r.directional for r in check.rows if r.ok} == {"Mul": False, "Sum": True}
    # Element by element when allowed: the 200 entries are then summarized (min, mean, max).
    row = check_tape(tape, y, x, max_elements=200).failing[0]
    assert not row.directional and len(row.analytic[0]) == len(row.numeric[0]) == 3
    xv = x.numpy()   # u is random, so compare the ratio of the means' signs only
    assert row.max_rel_error == pytest.approx(1 / 6, rel=1e-3) and xv.size == 200


def test_elementwise_ops_are_differenced_all_at_once_and_still_caught():
    right = registry.lookup("Sin")
    try:
        @mt.RegisterGradient("Sin", batched=True, override=True)
        def _wrong_sin_grad(op, dy):
            (x,) = op.inputs
            return dy * mt.math.cos(x) * mt.where(x > 1.0, 2.0 * mt.ones_like(x),
                                                  mt.ones_like(x))

        x = mt.constant(np.linspace(-2.0, 2.0, 30) + 0.01)
        with mt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = mt.reduce_sum(mt.nn.relu(mt.math.sin(x) * (x - x[15])))
        check = check_tape(tape, y, x)
    finally:
        mt.RegisterGradient("Sin", batched=True, override=True)(right)
    rows = {r.op_type: r for r in check.rows}
    assert [r.op_type for r in check.failing] == ["Sin"]
    sin = rows["Sin"]
    assert not sin.directional and len(sin.analytic[0]) == 3   # 30 values: (min, mean, max)
    assert rows["Relu"].status == "not differentiable"        # x - x[15] is 0 at element 15
    assert check_tape(tape, y, x).ok


def test_a_gradient_of_the_wrong_shape_fails_with_a_clear_note():
    @mt.custom_gradient
    def forgot_unbroadcast(x, b):
        def grad(dy):
            return dy, dy     # b's gradient should be summed over the batch axis
        return x + b, grad

    x, b = _watched(np.ones((3, 2)), [1.0, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch([x, b])
        y = mt.reduce_sum(forgot_unbroadcast(x, b))
    row = check_tape(tape, y, [x, b]).failing[0]
    assert "input 1: the rule returned shape (3, 2), the input has (2,)" in row.note


def test_a_custom_function_that_only_runs_in_float32_is_checked_in_float32():
    @mt.custom_gradient
    def scaled(x):
        two = mt.constant(2.0)            # float32: the function refuses float64 inputs
        return two * x * x, lambda dy: dy * 2.0 * two * x
    x = mt.constant([0.5, 1.5])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.reduce_sum(scaled(x))
    row = check_tape(tape, y, x).rows[0]
    assert row.status == "ok" and row.dtype == "float32" and "float32" in row.note


def test_a_custom_gradient_that_reads_a_variable():
    v = mt.Variable(np.float64(2.0))

    def make(factor):
        @mt.custom_gradient
        def scale(x):
            def grad(dy, variables=None):
                return dy * v * factor, [mt.reduce_sum(dy * x)]
            return x * v, grad
        return scale

    x = mt.constant(np.array([1.0, 3.0]))
    for factor, status in ((1.0, "ok"), (0.5, "failed")):
        scale = make(factor)
        with mt.GradientTape(persistent=True) as tape:
            tape.watch(x)
            z = mt.reduce_sum(scale(x) ** 2)
        row = check_tape(tape, z, [x, v]).rows[0]
        assert (row.name, row.status) == ("scale", status)
        if status == "ok":
            assert row.note == "the gradients of the Variables it reads are not checked"


def test_the_drawing_marks_failing_ops_in_red():
    cube = _planted_cube("CheckTestCubeDraw", 1.0)
    (x,) = _watched([0.5, 2.0])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.reduce_sum(cube(mt.math.sin(x)))
    check = check_tape(tape, y, x)
    source = check.draw().source
    assert "op2 [" in source and "#c0392b" in source.split("op2 [")[1].split("]")[0]
    assert "check2" in source and "finite diffs" in source
    assert "op1 [" in source and "#c0392b" not in source.split("op1 [")[1].split("]")[0]
    assert "failed" in check._repr_html_()


def test_an_unwritten_or_broken_rule_is_a_failed_row_and_assert_ok_says_why():
    @mt.primitive("CheckTestTodo")
    def todo(x):
        return np.tanh(x)

    @mt.RegisterGradient("CheckTestTodo", override=True)
    def _todo_grad(op, dy):
        raise NotImplementedError("write this gradient")

    @mt.custom_gradient
    def numpy_rule(x):
        return x * 3.0, lambda dy: dy.numpy() * 3.0     # an ndarray, not a Tensor

    x = mt.constant([0.1, 0.2])
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = mt.reduce_sum(todo(x) + numpy_rule(x))
    check = check_tape(tape, y, x)
    notes = {r.op_type: r.note for r in check.failing}
    assert notes["CheckTestTodo"] == ("its gradient function is not written yet (it raises "
                                      "NotImplementedError)")
    assert "returned ndarray for input 0; gradients must be minitape Tensors" in \
        notes["CustomGradient"]
    with pytest.raises(AssertionError, match=r"Exercise 1: check_tape: wrong gradient in "
                                             r"#1 CheckTestTodo -> todo\(x\), #\d CustomGradient "
                                             r"numpy_rule"):
        check.assert_ok("Exercise 1")
    assert "not written yet" in "\n".join(check.details())
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z = mt.reduce_sum(x * x)
    passing = check_tape(tape, z, x)
    assert passing.assert_ok("Exercise 2") is passing
    assert repr(passing).splitlines() == [
        "check_tape: every gradient agrees with finite differences (2 ops: 2 ok)",
        "  #1 Mul -> x * x              ok", "  #2 Sum -> z                  ok"]


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="GradientTape"):
        check_tape("tape", None)
    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="target must be a minitape Tensor"):
        check_tape(tape, np.float32(1.0), x)
    with pytest.raises(TypeError, match="sources must be"):
        check_tape(tape, y, [1.0])
    outside = x * 2.0   # not recorded: nothing lies between x and it
    assert check_tape(tape, outside, x).rows == []
    with pytest.raises(AssertionError, match="checked nothing"):
        check_tape(tape, outside, x).assert_ok()


def test_register_gradient_override_for_notebook_cells():
    @mt.primitive("CheckTestTwice")
    def twice(x):
        return 2 * x

    mt.RegisterGradient("CheckTestTwice", override=True)(lambda op, dy: dy * 2.0)
    with pytest.raises(KeyError, match="override=True"):
        mt.RegisterGradient("CheckTestTwice")(lambda op, dy: dy)
    mt.RegisterGradient("CheckTestTwice", override=True)(lambda op, dy: dy * 3.0)
    x = mt.constant(1.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = twice(x)
    assert float(tape.gradient(y, x)) == 3.0


# -- the registry: every op type passes, and has a forward ---------------------------------------


def _builtin_op_types():
    """The op types of a fresh ``import minitape`` (other tests register their own)."""
    import json
    import subprocess
    import sys
    code = ("import json, minitape, minitape.viz; from minitape import registry; "
            "print(json.dumps(registry.registered_op_types()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_every_differentiable_op_type_has_a_forward():
    missing = sorted(op for op in _builtin_op_types()
                     if registry.lookup(op) is not None and registry.lookup_forward(op) is None)
    assert not missing, ("op types with a gradient but no registry.register_forward entry "
                         f"(check_tape cannot run them again): {missing}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_every_spec_passes_check_tape(spec, dtype):
    xs = [mt.constant(a.astype(dtype)) for a in spec.args()]
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        out = spec.fn(*xs)
    check = check_tape(tape, out, xs)
    assert spec.op in {r.op_type for r in check.rows}
    bad = [(r.label(), r.status, r.note) for r in check.rows
           if r.status not in ("ok", "skipped") or "forward" in r.note]
    assert not bad, bad


@pytest.mark.parametrize("op_type", sorted(NO_GRADIENT_SPECS))
def test_no_gradient_ops_are_skipped_not_failed(op_type):
    x = mt.constant([-1.2, 0.4, 2.0], dtype=mt.float64)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = NO_GRADIENT_SPECS[op_type](x)
    assert op_type in {op.type for op in tape.operations}
    # (an op with integer or bool outputs is not even connected to a float target)
    statuses = {r.op_type: r.status for r in check_tape(tape, y).rows}
    assert statuses.get(op_type, "skipped") == "skipped"
    assert set(statuses.values()) <= {"ok", "skipped"}


# -- nothing imports another module's private names ----------------------------------------------


ENGINE = {f"minitape.engine.{m}": f"minitape/engine/{m}.py"
          for m in ("tensor", "recording", "registry", "tape", "backward", "forward", "jacobians")}
ENGINE.update({f"minitape.{m[len('minitape.engine.'):]}": path for m, path in ENGINE.items()})


def _python_files():
    for folder in ("minitape", "tests", "benchmarks", "scripts", "notebooks"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def _imported_module(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def test_no_private_name_is_imported_from_the_engine_modules():
    offenders = []
    for path in _python_files():
        if ".venv" in path.parts:
            continue
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = _imported_module(path, node)
                if module in ENGINE and ENGINE[module] != rel:
                    offenders += [f"{rel}:{node.lineno} imports {a.name} from {module}"
                                  for a in node.names if a.name.startswith("_")]
    assert not offenders, offenders


def test_the_private_import_check_sees_relative_imports():
    tree = ast.parse("from ..tape import _secret\nfrom .recording import state\n")
    path = ROOT / "minitape" / "viz" / "example.py"
    modules = [_imported_module(path, n) for n in tree.body]
    assert modules == ["minitape.tape", "minitape.viz.recording"]
    assert sys.modules["minitape"] is mt
