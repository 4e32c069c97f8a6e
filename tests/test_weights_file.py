"""Weights files (issue #18 item 2): unique keys, one path, all-or-nothing loading, no pickle."""

import io
import os
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minitape as mt


def module(**attrs):
    m = mt.Module()
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def test_underscore_and_plain_attributes_do_not_collide(tmp_path):
    m = module(_scale=mt.Variable(1.0), scale=mt.Variable(2.0))
    m.save_weights(tmp_path / "w")
    other = module(_scale=mt.Variable(0.0), scale=mt.Variable(0.0))
    other.load_weights(tmp_path / "w")
    assert (float(other._scale), float(other.scale)) == (1.0, 2.0)


def test_names_that_would_flatten_to_one_key_stay_apart(tmp_path):
    inner = module(b=mt.Variable(1.0))
    m = module(a=inner, d={"a/b": mt.Variable(2.0)})
    m.__dict__["a/b"] = mt.Variable(3.0)
    m.save_weights(tmp_path / "w")
    keys = sorted(zipfile.ZipFile(tmp_path / "w.npz").namelist())
    assert keys == ["a%2Fb.npy", "a/b.npy", "d/a%2Fb.npy"]
    inner2 = module(b=mt.Variable(0.0))
    m2 = module(a=inner2, d={"a/b": mt.Variable(0.0)})
    m2.__dict__["a/b"] = mt.Variable(0.0)
    m2.load_weights(tmp_path / "w")
    assert [float(v) for v in m2.variables] == [1.0, 2.0, 3.0]


def test_a_real_collision_is_an_error_at_save_time_naming_both(tmp_path):
    m = module(d={1: mt.Variable(1.0), "1": mt.Variable(2.0)})
    with pytest.raises(ValueError, match=r"at d\[1\] and d\['1'\] would both be saved under "
                                         r"the key 'd/1'"):
        m.save_weights(tmp_path / "w")
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("save_as,load_as", [("w", "w"), ("w", "w.npz"), ("w.npz", "w"),
                                             ("w.npz", "w.npz")])
def test_the_path_given_to_save_is_the_path_load_accepts(tmp_path, save_as, load_as):
    m = module(a=mt.Variable([1.0, 2.0]))
    written = m.save_weights(tmp_path / save_as)
    assert written == str(tmp_path / "w.npz")
    other = module(a=mt.Variable([0.0, 0.0]))
    other.load_weights(str(tmp_path / load_as))
    assert other.a.numpy().tolist() == [1.0, 2.0]


def test_load_is_all_or_nothing(tmp_path):
    module(a=mt.Variable(1.0), b=mt.Variable([1.0, 2.0]), c=mt.Variable(3.0)).save_weights(
        tmp_path / "w")
    target = module(a=mt.Variable(7.0), b=mt.Variable([7.0, 7.0, 7.0]), c=mt.Variable(7.0))
    with pytest.raises(ValueError, match=r"nothing was loaded: 'b' has shape \(2,\) in .* but "
                                         r"\(3,\) here"):
        target.load_weights(tmp_path / "w")
    assert [v.numpy().tolist() for v in target.variables] == [7.0, [7.0, 7.0, 7.0], 7.0]


def test_dtype_mismatch_is_an_error(tmp_path):
    module(a=mt.Variable(np.float64(1.0))).save_weights(tmp_path / "w")
    target = module(a=mt.Variable(0.0))
    with pytest.raises(ValueError, match=r"'a' has dtype float64 in .* but float32 here"):
        target.load_weights(tmp_path / "w")
    assert float(target.a) == 0.0


def test_missing_and_extra_keys_are_listed(tmp_path):
    module(a=mt.Variable(1.0), x=mt.Variable(1.0), y=mt.Variable(1.0)).save_weights(
        tmp_path / "w")
    target = module(a=mt.Variable(0.0), b=mt.Variable(0.0), c=mt.Variable(0.0))
    with pytest.raises(ValueError) as info:
        target.load_weights(tmp_path / "w")
    msg = str(info.value)
    assert "has no entries 'b', 'c'" in msg
    assert "entries that this module lacks: ['x', 'y']" in msg
    assert float(target.a) == 0.0


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no weights file '.*nope.npz'"):
        module(a=mt.Variable(0.0)).load_weights(tmp_path / "nope")


def _npz(path, arrays):
    with zipfile.ZipFile(path, "w") as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr, allow_pickle=True)
            zf.writestr(key + ".npy", buf.getvalue())


def test_shapes_are_checked_before_decompressing(tmp_path, monkeypatch):
    # A small compressed file whose array would expand 1000-fold: refused from its header.
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.zeros((1000, 1000), np.float32))
        zf.writestr("a.npy", buf.getvalue())
    assert os.path.getsize(path) < 10_000
    read = []
    real = np.lib.format.read_array
    monkeypatch.setattr(np.lib.format, "read_array",
                        lambda *a, **k: read.append(1) or real(*a, **k))
    with pytest.raises(ValueError, match=r"'a' has shape \(1000, 1000\)"):
        module(a=mt.Variable(0.0)).load_weights(path)
    assert read == []


def test_object_arrays_are_refused_without_unpickling(tmp_path):
    _npz(tmp_path / "evil.npz", {"a": np.array([object()], dtype=object)})
    with pytest.raises(ValueError, match="holds Python objects.*never unpickles"):
        module(a=mt.Variable([0.0])).load_weights(tmp_path / "evil.npz")


def test_a_module_that_contains_itself():
    m = module(a=mt.Variable(1.0))
    child = module(b=mt.Variable(2.0), parent=m)
    m.me = m
    m.child = child
    m.items = [m, child]
    assert [float(v) for v in m.variables] == [1.0, 2.0]
    assert m.submodules == (child,)
    assert [float(v) for v in child.variables] == [2.0, 1.0]


def _trainable_by_definition(m):
    """``trainable_variables`` as its docstring defines it, from ``variables`` and
    ``submodules`` (the property itself walks the tree once)."""
    frozen = {id(v) for sub in m.submodules if getattr(sub, "trainable", True) is False
              for v in sub.variables}
    return tuple(v for v in m.variables if v.trainable and id(v) not in frozen)


def test_trainable_variables_leave_out_frozen_submodules_and_untrainable_variables():
    shared = mt.Variable(1.0, name="shared")
    frozen = module(w=mt.Variable(2.0, name="frozen_w"), shared=shared)
    frozen.trainable = False
    open_ = module(shared=shared, v=mt.Variable(3.0, name="open_v"),
                   fixed=mt.Variable(4.0, trainable=False))
    root = module(a=open_, b=frozen, c=[open_, {"k": mt.Variable(5.0, name="k")}])
    root.me = root
    root.trainable = False        # the root's own flag: only sub-Modules are left out
    assert [v.name for v in root.trainable_variables] == ["open_v", "k"]
    assert root.trainable_variables == _trainable_by_definition(root)
    for m in (open_, frozen):
        assert m.trainable_variables == _trainable_by_definition(m)
    frozen.trainable = True       # read again on every call: nothing is cached
    assert [v.name for v in root.trainable_variables] == ["shared", "open_v", "frozen_w", "k"]
    assert root.trainable_variables == _trainable_by_definition(root)


class _Skips(mt.Module):
    _walk_skip = ("hidden",)
    _walk_last = ("tail",)


class _SkipsMore(_Skips):
    _walk_skip = ("also_hidden",)


def test_walk_rules_gather_over_the_bases():
    # ``_walk_skip`` names are left out and ``_walk_last`` names come last, a base's too.
    m = _SkipsMore()
    m.tail = mt.Variable(1.0, name="tail")
    m.hidden = mt.Variable(2.0, name="hidden")
    m.also_hidden = mt.Variable(3.0, name="also_hidden")
    m.head = mt.Variable(4.0, name="head")
    assert [v.name for v in m.variables] == ["head", "tail"]
    assert [v.name for v in m.trainable_variables] == ["head", "tail"]
    assert _SkipsMore._walk_rules == (frozenset({"name", "hidden", "also_hidden"}),
                                      frozenset({"tail"}))


def test_a_list_that_contains_itself():
    m = module(a=mt.Variable(1.0))
    loop = [mt.Variable(2.0)]
    loop.append(loop)
    m.loop = loop
    assert [float(v) for v in m.variables] == [1.0, 2.0]


# -- the round-trip property: any Module tree, random names included ------------------------

names = st.text(min_size=1, max_size=6)
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)


@st.composite
def trees(draw, depth=0):
    m = mt.Module()
    for name in draw(st.lists(names, max_size=4, unique=True)):
        kind = draw(st.sampled_from(["var", "var", "module", "list", "dict"] if depth < 2
                                    else ["var"]))
        if kind == "var":
            shape = draw(shapes)
            dtype = draw(st.sampled_from([np.float32, np.float64]))
            value = mt.Variable(np.arange(np.prod(shape), dtype=dtype).reshape(shape) + 0.5)
        elif kind == "module":
            value = draw(trees(depth + 1))
        elif kind == "list":
            value = [mt.Variable(float(i)) for i in range(draw(st.integers(0, 3)))]
        else:
            value = {k: mt.Variable(1.5) for k in draw(st.lists(names, max_size=3, unique=True))}
        m.__dict__[name] = value
    return m


def _zeroed_copy(m):
    copy = mt.Module.__new__(type(m))
    for key, value in vars(m).items():
        if isinstance(value, mt.Variable):
            value = mt.Variable(np.zeros(value.shape, value.dtype))
        elif isinstance(value, mt.Module):
            value = _zeroed_copy(value)
        elif isinstance(value, list):
            value = [mt.Variable(np.zeros(v.shape, v.dtype)) for v in value]
        elif isinstance(value, dict):
            value = {k: mt.Variable(np.zeros(v.shape, v.dtype)) for k, v in value.items()}
        copy.__dict__[key] = value
    return copy


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(tree=trees())
def test_save_load_round_trips_any_module_tree(tree, tmp_path):
    path = tree.save_weights(tmp_path / "tree")
    copy = _zeroed_copy(tree)
    copy.load_weights(tmp_path / "tree")
    before = [v.numpy() for v in tree.variables]
    after = [v.numpy() for v in copy.variables]
    assert len(before) == len(after)
    for a, b in zip(before, after):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    os.remove(path)
