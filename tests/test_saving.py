"""mt.train.Checkpoint and mt.saved_model (issue #19 item 3): round trips and clear errors."""

import json
import os
import sys

import numpy as np
import pytest

import minitape as mt

sys.path.insert(0, os.path.dirname(__file__))
from saved_model_helpers import Callable, Outer  # noqa: E402  (found by name on load)


def values(module):
    return [v.numpy().tolist() for v in module.variables]


def test_saved_model_round_trips_a_nested_module_with_its_functions(tmp_path):
    model = Outer(scale=3.0)
    mt.saved_model.save(model, tmp_path / "sm",
                        options=mt.saved_model.SaveOptions(experimental_custom_gradients=True))
    assert sorted(os.listdir(tmp_path / "sm")) == ["saved_model.json", "variables.npz"]
    loaded = mt.saved_model.load(str(tmp_path / "sm"))
    assert values(loaded) == values(model)
    assert [v.trainable for v in loaded.variables] == [v.trainable for v in model.variables]
    assert loaded.shared is loaded.inner
    x = mt.constant([[1.0, 1.0]])
    np.testing.assert_array_equal(loaded.forward(x).numpy(), model.forward(x).numpy())
    np.testing.assert_array_equal(loaded.inner.apply(x).numpy(), model.inner.apply(x).numpy())
    with pytest.raises(TypeError, match="can not cast"):
        loaded.inner.apply(mt.constant([1.0, 1.0]))   # the signature survives loading


def test_loaded_custom_gradient_is_the_same(tmp_path):
    mt.saved_model.save(Outer(scale=3.0), tmp_path / "sm")
    loaded = mt.saved_model.load(tmp_path / "sm")
    v = mt.Variable(2.0)
    with mt.GradientTape() as tape:
        out = loaded.call_custom_grad(v * v)
    assert float(out) == 12.0
    # d out / d(v*v) = scale = 3, clipped to norm 0.5 by the custom gradient, times 2v = 4.
    assert float(tape.gradient(out, v)) == pytest.approx(0.5 * 4.0)


def test_loaded_variables_are_new_and_trainable(tmp_path):
    model = Outer()
    mt.saved_model.save(model, tmp_path / "sm")
    loaded = mt.saved_model.load(tmp_path / "sm")
    loaded.scale.assign(7.0)
    assert float(model.scale) == 3.0
    with mt.GradientTape() as tape:
        y = loaded.forward(mt.constant([[1.0, 0.0]]))
    used = [loaded.scale, loaded.inner.kernel, loaded.blocks[1]["a"]]
    assert all(g is not None for g in tape.gradient(y, used))


def test_a_missing_function_is_a_clear_error(tmp_path):
    mt.saved_model.save(Outer(), tmp_path / "sm")
    manifest = json.loads((tmp_path / "sm" / "saved_model.json").read_text())
    ref = manifest["root"]["object"]["functions"]["forward"]
    assert ref["module"] == "saved_model_helpers" and ref["qualname"] == "Outer.forward"
    ref["qualname"] = "Gone.forward"     # as after a restarted notebook kernel
    (tmp_path / "sm" / "saved_model.json").write_text(json.dumps(manifest))
    with pytest.raises(mt.errors.NotFoundError,
                       match=r"the function 'forward' refers to saved_model_helpers\.Gone\.forward"
                             r", which does not exist.*run the code that defines Gone\.forward"):
        mt.saved_model.load(tmp_path / "sm")


def test_functions_that_cannot_be_found_by_name_are_refused_at_save(tmp_path):
    model = mt.Module()
    model.v = mt.Variable(1.0)
    model.f = mt.function(lambda x: x * model.v)
    with pytest.raises(ValueError, match="lambda, so it cannot be found again by name"):
        mt.saved_model.save(model, tmp_path / "sm")


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved_model.json"):
        mt.saved_model.load(tmp_path)
    with pytest.raises(TypeError, match="expects a mt.Module"):
        mt.saved_model.save(3.0, tmp_path)


# -- Checkpoint ------------------------------------------------------------------------------

def trained_pair():
    model = mt.keras.Sequential([mt.keras.layers.Dense(2), mt.keras.layers.Dense(1)])
    opt = mt.optimizers.Adam(0.1)
    x = mt.constant([[1.0, 2.0, 3.0]])
    with mt.GradientTape() as tape:
        loss = mt.reduce_sum(model(x) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                            model.trainable_variables))
    return model, opt


def test_checkpoint_round_trips_model_optimizer_and_step(tmp_path):
    model, opt = trained_pair()
    step = mt.Variable(7)
    ckpt = mt.train.Checkpoint(step=step, model=model, optimizer=opt)
    path = ckpt.save(tmp_path / "ckpt")
    assert path == str(tmp_path / "ckpt-1")
    assert ckpt.save(tmp_path / "ckpt") == str(tmp_path / "ckpt-2")
    assert mt.train.latest_checkpoint(tmp_path) == str(tmp_path / "ckpt-2")
    keys = dict(mt.train.list_variables(path))
    assert keys["step"] == [] and keys["model/_layers/0/kernel"] == [3, 2]
    assert "optimizer/iterations" in keys and "optimizer/_momentums/0" in keys

    model2, opt2 = trained_pair()
    step2 = mt.Variable(0)
    ckpt2 = mt.train.Checkpoint(step=step2, model=model2, optimizer=opt2)
    status = ckpt2.restore(path)
    status.assert_consumed()
    assert int(step2) == 7 and int(ckpt2.save_counter) == 1
    assert values(model2) == values(model) and values(opt2) == values(opt)
    np.testing.assert_array_equal(mt.train.load_variable(path, "step"), 7)


def test_checkpoint_restore_is_all_or_nothing(tmp_path):
    model, opt = trained_pair()
    path = mt.train.Checkpoint(model=model).write(tmp_path / "w")
    assert path == str(tmp_path / "w")
    other = mt.keras.Sequential([mt.keras.layers.Dense(2), mt.keras.layers.Dense(2)])
    other(mt.ones((1, 3)))
    before = values(other)
    with pytest.raises(ValueError, match=r"nothing was loaded: 'model/_layers/1/kernel' has "
                                         r"shape \(2, 1\)"):
        mt.train.Checkpoint(model=other).read(path)
    assert values(other) == before
    with pytest.raises(mt.errors.NotFoundError, match="no checkpoint at"):
        mt.train.Checkpoint(model=other).restore(tmp_path / "nope")
    with pytest.raises(TypeError, match="is not trackable"):
        mt.train.Checkpoint(model="a string")


def test_checkpoint_manager_keeps_the_newest(tmp_path):
    step = mt.Variable(0)
    ckpt = mt.train.Checkpoint(step=step)
    manager = mt.train.CheckpointManager(ckpt, tmp_path / "ckpts", max_to_keep=2)
    assert manager.latest_checkpoint is None
    ckpt.restore(manager.latest_checkpoint).assert_consumed()   # nothing yet: from scratch
    for i in range(1, 5):
        step.assign(10 * i)
        path = manager.save()
        assert path == str(tmp_path / "ckpts" / f"ckpt-{i}")
    assert manager.checkpoints == [str(tmp_path / "ckpts" / "ckpt-3"),
                                   str(tmp_path / "ckpts" / "ckpt-4")]
    assert sorted(os.listdir(tmp_path / "ckpts")) == ["ckpt-3.npz", "ckpt-4.npz"]
    again = mt.train.CheckpointManager(ckpt, tmp_path / "ckpts", max_to_keep=2)
    assert again.latest_checkpoint == manager.latest_checkpoint
    step.assign(0)
    ckpt.restore(again.checkpoints[0])
    assert int(step) == 30


def test_a_call_decorated_with_function_survives_save_and_load(tmp_path):
    mt.saved_model.save(Callable(), tmp_path / "sm")
    loaded = mt.saved_model.load(tmp_path / "sm")
    assert float(loaded(mt.constant(3.0))) == 6.0
    mt.saved_model.save(Outer(), tmp_path / "outer")
    with pytest.raises(TypeError, match="is not callable"):
        mt.saved_model.load(tmp_path / "outer")(1.0)
