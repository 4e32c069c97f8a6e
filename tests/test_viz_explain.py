"""minitape.viz.explain: why a gradient is None, one test per case.

The cases are the seeds' "Cases where gradient returns None" (001), the tape controls of the
advanced guide (003: stop_recording, reset, stop_gradient) and "controlling what the tape
watches" (001, 004). Each test first checks that ``gradient`` really is None, then the reason.
"""

import numpy as np
import pytest

import minitape as mt
from minitape.viz import explain
from minitape.viz.explain import diagnose


def reason(tape, target, source):
    return diagnose(tape, target, source)[0]


def test_unconnected_variable_never_read_001():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as tape:
        z = y * y
    assert tape.gradient(z, x) is None
    assert reason(tape, z, x) == "not_read"
    assert "never read" in explain(tape, z, x)
    assert reason(tape, z, y) == "connected"


def test_replaced_variable_with_a_tensor_001():
    x = mt.Variable(2.0)
    results = []
    for _ in range(2):
        with mt.GradientTape(persistent=True) as tape:
            y = x + 1
        results.append((tape.gradient(y, x), reason(tape, y, x), explain(tape, y, x)))
        x = x + 1          # should be x.assign_add(1)
    (g0, r0, _), (g1, r1, text1) = results
    assert g0.numpy() == 1.0 and r0 == "connected"
    assert g1 is None and r1 == "tensor_not_watched"
    assert "assign_add" in text1 and "x = x + 1" in text1   # (x: the drawing has no name for it)


def test_calculation_outside_minitape_numpy_001():
    x = mt.Variable([[1.0, 2.0], [3.0, 4.0]], dtype=mt.float32)
    with mt.GradientTape(persistent=True) as tape:
        x2 = x**2
        y = np.mean(x2, axis=0)          # this step is computed with NumPy
        y = mt.reduce_mean(y, axis=0)
    assert tape.gradient(y, x) is None
    assert reason(tape, y, x) == "numpy_path"
    assert "NumPy" in explain(tape, y, x)
    assert reason(tape, np.mean(x2), x) == "numpy_target"   # the ndarray itself as target


def test_integer_source_001():
    x = mt.constant(10)
    with pytest.warns(UserWarning, match="must be floating"):
        with mt.GradientTape(persistent=True) as g:
            g.watch(x)
            y = x * x
    assert g.gradient(y, x) is None
    assert reason(g, y, x) == "integer_source"
    assert "int32" in explain(g, y, x)


def test_stateful_assign_add_001():
    x0, x1 = mt.Variable(3.0), mt.Variable(0.0)
    with mt.GradientTape(persistent=True) as tape:
        x1.assign_add(x0)           # update x1 = x1 + x0: not recorded
        y = x1**2                   # y = (x1 + x0)**2
    assert tape.gradient(y, x0) is None
    assert reason(tape, y, x0) == "assign"
    assert "assign" in explain(tape, y, x0)


def test_stop_recording_003():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as t:
        x_sq = x * x
        with t.stop_recording():
            y_sq = y * y
        z = x_sq + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    assert grad["x"].numpy() == 4.0 and grad["y"] is None
    assert reason(t, z, y) == "stop_recording"
    assert "stop_recording" in explain(t, z, y)
    assert reason(t, z, x) == "connected"


def test_stop_recording_of_a_watched_tensor_003():
    x = mt.constant(2.0)
    w = mt.Variable(5.0)
    with mt.GradientTape(persistent=True) as t:
        t.watch(x)
        with t.stop_recording():
            h = x * 2.0
        z = h * w
    assert t.gradient(z, x) is None
    assert reason(t, z, x) == "stop_recording"


def test_reset_003():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as t:
        y_sq = y * y
        t.reset()
        z = x * x + y_sq
    grad = t.gradient(z, {"x": x, "y": y})
    assert grad["x"].numpy() == 4.0 and grad["y"] is None
    assert reason(t, z, y) == "reset"
    assert "reset" in explain(t, z, y)


def test_stop_gradient_003():
    x, y = mt.Variable(2.0), mt.Variable(3.0)
    with mt.GradientTape(persistent=True) as t:
        y_sq = y**2
        z = x**2 + mt.stop_gradient(y_sq)
    grad = t.gradient(z, {"x": x, "y": y})
    assert grad["x"].numpy() == 4.0 and grad["y"] is None
    assert reason(t, z, y) == "stop_gradient"
    assert "stop_gradient" in explain(t, z, y)


def test_non_trainable_variable_004():
    x = mt.Variable(3.0, trainable=False)
    with mt.GradientTape(persistent=True) as tape:
        y = x**2
    assert tape.gradient(y, x) is None
    assert reason(tape, y, x) == "non_trainable"
    assert "trainable=False" in explain(tape, y, x)


def test_watch_accessed_variables_false_001():
    x0, x1 = mt.Variable(0.0), mt.Variable(10.0)
    with mt.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(x1)
        y0 = mt.math.sin(x0)
        y1 = mt.nn.softplus(x1)
        y = y0 + y1
    assert tape.gradient(y, x0) is None
    assert reason(tape, y, x0) == "watch_accessed_false"
    assert reason(tape, y, x1) == "connected"


def test_plain_tensor_never_watched_001():
    x = mt.constant(3.0)
    with mt.GradientTape(persistent=True) as tape:
        y = x * x
    assert tape.gradient(y, x) is None
    assert reason(tape, y, x) == "tensor_not_watched"
    assert "tape.watch" in explain(tape, y, x)


def test_control_flow_branch_not_taken_001():
    x = mt.constant(1.0)
    v0, v1 = mt.Variable(2.0), mt.Variable(2.0)
    with mt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        result = v0 if x > 0.0 else v1**2
    dv0, dv1 = tape.gradient(result, [v0, v1])
    assert dv0.numpy() == 1.0 and dv1 is None
    assert reason(tape, result, v1) == "not_read"
    assert tape.gradient(result, x) is None
    assert reason(tape, result, x) == "unconnected"


def test_not_differentiable_and_integer_path():
    x = mt.Variable(2.5)
    with mt.GradientTape(persistent=True) as tape:
        r = mt.round(x) * 2.0
        i = mt.cast(x, mt.int32)
        s = mt.cast(i, mt.float32) + x   # x is also read directly, so this op is recorded
    assert tape.gradient(r, x) is None
    assert reason(tape, r, x) == "not_differentiable"
    assert "Round" in explain(tape, r, x)
    assert reason(tape, s, x) == "connected"


def test_missing_gradient_is_not_none_but_lookup_error_001():
    image = mt.Variable([[[0.5, 0.0, 0.0]]])
    delta = mt.Variable(0.1)
    with mt.GradientTape(persistent=True) as tape:
        new_image = mt.image.adjust_contrast(image, delta)
    with pytest.raises(LookupError, match="AdjustContrastv2"):
        tape.gradient(new_image, [image, delta])
    assert reason(tape, new_image, image) == "missing_gradient"
    assert "LookupError" in explain(tape, new_image, image)


def test_connected_after_a_non_persistent_release():
    x = mt.Variable(3.0)
    with mt.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x).numpy() == 6.0
    assert reason(tape, y, x) == "connected"


def test_explain_rejects_a_non_tape():
    with pytest.raises(TypeError, match="GradientTape"):
        explain(None, mt.constant(1.0), mt.constant(1.0))


def test_structured_target_is_connected_if_any_entry_is_001():
    x, w = mt.Variable(2.0), mt.Variable(1.0)
    with mt.GradientTape(persistent=True) as tape:
        y0 = x**2
        y1 = w * 3.0
    assert tape.gradient({"y0": y0, "y1": y1}, x).numpy() == 4.0
    assert reason(tape, {"y0": y0, "y1": y1}, x) == "connected"
    assert reason(tape, [y1], x) == "unconnected"   # x was read, but y1 does not use it
