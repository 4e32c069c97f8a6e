"""The engine records; the tools observe (issue 31, item 3).

- The recorded ``Operation`` keeps at most 10 fields, all for the gradient.
- The engine's modules import nothing from the tools or the TensorFlow-compatibility modules,
  late imports inside functions included.
- A tape calls its observers as it records, at its events and at each backward step, and a
  tape with none attached does no work for them.
"""

import ast
import pathlib

import numpy as np
import pytest

import minitape as mt
from minitape import recording
from minitape.recording import Operation
from minitape.tape import TapeObserver
from minitape.viz.record import created

ROOT = pathlib.Path(mt.__file__).parent
ENGINE = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "engine").glob("*.py"))
ENGINE.append("custom.py")
TOOLS = ("viz", "keras", "function", "saved_model", "train", "data")


def test_the_recorded_operation_keeps_at_most_ten_fields():
    fields = [f for f in Operation.__slots__ if f != "__weakref__"]
    assert len(fields) <= 10, fields
    # nothing for the pictures: where the code made it, Module calls, small values, stamps
    for drawing_only in ("origin", "module_calls", "backward_of", "seq", "forward",
                         "_described", "input_values", "output_values"):
        assert drawing_only not in fields


def _imports(path, package=("minitape",)):
    """Every module ``path`` imports, at its top or inside functions, as dotted names."""
    package = list(package)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            yield module
            yield from (f"{module}.{a.name}" for a in node.names)


@pytest.mark.parametrize("name", ENGINE)
def test_the_engine_imports_no_tool(name):
    package = ("minitape",) + tuple(name.split("/")[:-1])
    forbidden = [m for m in _imports(ROOT / name, package)
                 if any(m == f"minitape.{t}" or m.startswith(f"minitape.{t}.") for t in TOOLS)]
    assert forbidden == [], f"minitape/{name} imports {forbidden}"


def test_the_import_check_sees_late_relative_imports(tmp_path):
    path = tmp_path / "late.py"
    path.write_text("def f():\n    from .viz import draw_tape\n    from . import keras\n")
    assert {"minitape.viz", "minitape.keras"} <= set(_imports(path))


class Log(TapeObserver):
    def __init__(self):
        self.calls = []

    def op_recorded(self, tape, op, inputs, outputs, forward, needs):
        self.calls.append(("op", op.type, tuple(t.id for t in inputs)))

    def event(self, tape, kind, seq, detail):
        self.calls.append(("event", kind))

    def backward_began(self, tape, seeds, source_ids, batch_ndim):
        self.calls.append(("began", tuple(seeds), batch_ndim))

    def backward_step(self, tape, op, out_grads, in_grads):
        self.calls.append(("step", op.type, tuple(None if g is None else float(np.sum(g))
                                                  for g in in_grads)))

    def backward_ended(self, tape, gradients):
        self.calls.append(("ended", None if gradients is None else len(gradients)))


def test_an_observer_sees_ops_events_and_every_step_of_the_walk():
    x = mt.Variable(3.0)
    log = Log()
    with mt.GradientTape() as tape:
        tape.add_observer(log)
        y = x * x
        z = mt.math.sin(y)
    assert log.calls[:2] == [("op", "Mul", (x.id, x.id)), ("op", "Sin", (y.id,))]
    dz = tape.gradient(z, x)
    kinds = [c[0] if c[0] != "event" else c[1] for c in log.calls[2:]]
    assert kinds == ["exited", "gradient", "began", "step", "step", "ended", "released"]
    began = log.calls[4]
    assert began == ("began", (z.id,), 0)
    (_, (sent_to_y,)), (_, (a, b)) = log.calls[5][1:], log.calls[6][1:]
    # dz/dy = cos(9); the Mul sends dz/dy * x to each of its two inputs (x * x)
    assert sent_to_y == pytest.approx(np.cos(9.0), rel=1e-6)
    assert a == b == pytest.approx(3.0 * np.cos(9.0), rel=1e-5)
    assert float(dz) == pytest.approx(a + b, rel=1e-6)


def test_an_observer_is_told_when_a_pass_raises():
    log = Log()
    x = mt.Variable(1.0)
    with mt.GradientTape() as tape:
        tape.add_observer(log)
        y = mt.image.adjust_contrast(mt.reshape(x, (1, 1, 1)) * mt.ones((2, 2, 1)), 2.0)
    with pytest.raises(LookupError):
        tape.gradient(y, x)
    assert log.calls[-1] == ("ended", None)


def test_observers_are_attached_removed_and_checked():
    tape = mt.GradientTape()
    default = tape.observers                     # mt.viz's record, on by default
    log = Log()
    tape.add_observer(log)
    tape.add_observer(log)                       # once only
    assert tape.observers == default + (log,)
    tape.remove_observer(log)
    assert tape.observers == default
    with pytest.raises(TypeError, match="expects a TapeObserver, got object"):
        tape.add_observer(object())


def test_every_new_tape_gets_the_factories_observers_from_its_first_op():
    from minitape import tape as tape_module
    made = []

    def factory(tape):
        made.append(Log())
        return made[-1]

    tape_module.observer_factories.append(factory)
    try:
        x = mt.constant(2.0)
        with mt.GradientTape() as tape:
            tape.watch(x)
            x * x
    finally:
        tape_module.observer_factories.remove(factory)
    (log,) = made
    assert log in tape.observers
    assert log.calls[:3] == [("event", "entered"), ("event", "watched"),
                             ("op", "Mul", (x.id, x.id))]


def test_without_observers_record_calls_nothing(monkeypatch):
    # The switch off: new tapes get no observer, constants note nothing, and the tools
    # draw with shapes and dtypes only.
    mt.config.record_source_lines(False)
    assert mt.tensor.on_creation is None
    x = mt.constant(2.0)
    with mt.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.observers == ()
    assert created(x.id) is None
    assert float(tape.gradient(y, x)) == 4.0
    labels = [t.label for t in mt.viz.tape_graph(tape).tensors]
    assert labels == ["t1", "mul #1"]
    mt.config.record_source_lines(True)
    assert recording.tapes_recording == set()
