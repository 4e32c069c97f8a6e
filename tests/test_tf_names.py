"""TensorFlow's names (issue #20): the data file, the messages of ``mt.X``, the coverage page.

- ``minitape/_tf_names.json`` holds TensorFlow's public names (names only) and the version;
- ``mt.X``, ``mt.math.X``, ``mt.nn.X``, ``mt.linalg.X``, ``mt.random.X``, ``mt.keras.X``,
  ``mt.keras.layers.X`` (and the other modules mirroring TensorFlow's) for a TensorFlow
  name minitape lacks raise an ``AttributeError`` naming ``tf.X``, the closest minitape
  function and the coverage page; another name gets a "did you mean" from minitape's names;
- ``docs/tensorflow_coverage.md`` agrees with the package as it is now: a name implemented
  but listed as missing, or the reverse, fails here (the fix: ``python scripts/tf_names.py
  page``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import minitape as mt
from minitape import _tf_names

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tensorflow_coverage.md"


def _script():
    spec = importlib.util.spec_from_file_location("tf_names_script",
                                                  ROOT / "scripts" / "tf_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()
DATA = json.loads(_tf_names.DATA.read_text())
HOOKED = ["minitape", "minitape.math", "minitape.nn", "minitape.linalg", "minitape.random"]


def _tf(module):
    return {n for names in DATA["modules"][module].values() for n in names}


# -- the data file ---------------------------------------------------------------------------


def test_data_file_has_the_version_and_names_only():
    assert re.fullmatch(r"2\.\d+\.\d+", DATA["tensorflow_version"])
    assert set(SCRIPT.TF_MODULES) == set(DATA["modules"])
    for module, kinds in DATA["modules"].items():
        assert set(kinds) == set(SCRIPT.KINDS), module
        for names in kinds.values():
            assert names == sorted(names)
            assert all(re.fullmatch(r"[A-Za-z]\w*", n) for n in names), module
    assert {"tensordot", "GradientTape", "reduce_sum", "function"} <= _tf("tf")
    assert "matvec" in _tf("tf.linalg") and "Dense" in _tf("tf.keras.layers")


def test_import_minitape_does_not_read_the_names():
    code = ("import sys, minitape; assert 'minitape._tf_names' not in sys.modules; "
            "assert 'minitape.viz' not in sys.modules; minitape.viz; minitape.testing; "
            "assert not hasattr(minitape, 'tensor_scatter_nd_update'); "
            "assert 'minitape._tf_names' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- the messages ----------------------------------------------------------------------------


def test_a_tensorflow_name_minitape_lacks():
    assert "tensor_scatter_nd_update" in _tf("tf")
    with pytest.raises(AttributeError) as info:
        mt.tensor_scatter_nd_update
    message = str(info.value)
    assert message.startswith("module 'minitape' has no attribute 'tensor_scatter_nd_update'")
    assert "minitape does not implement tf.tensor_scatter_nd_update" in message
    assert f"TensorFlow {DATA['tensorflow_version']}" in message
    assert "v[index].assign(value)" in message  # the closest minitape way
    assert "docs/tensorflow_coverage.md" in message
    assert not hasattr(mt, "tensor_scatter_nd_update")


@pytest.mark.parametrize("module_name", HOOKED)
def test_every_hooked_module_names_the_tensorflow_function(module_name):
    module = sys.modules[module_name]
    tf_module = _tf_names.tf_module_name(module_name)
    missing = sorted(n for n in DATA["modules"][tf_module]["functions"] if not hasattr(module, n))
    assert missing, f"{module_name} implements every function of {tf_module}"
    name = missing[0]
    with pytest.raises(AttributeError, match=rf"does not implement {re.escape(tf_module)}\.{name}"
                       r" .*docs/tensorflow_coverage\.md"):
        getattr(module, name)


# Every other minitape module that mirrors a TensorFlow module, as a learner reaches it
# (``mt.keras.optimizers`` is ``minitape.optimizers``, so it speaks of ``tf.optimizers``).
OTHER_HOOKED = ["minitape.keras", "minitape.keras.layers", "minitape.keras.models",
                "minitape.keras.losses", "minitape.keras.activations",
                "minitape.keras.optimizers", "minitape.optimizers", "minitape.train",
                "minitape.data", "minitape.errors", "minitape.saved_model", "minitape.image",
                "minitape.autodiff", "minitape.config", "minitape.dtypes"]


@pytest.mark.parametrize("module_name", OTHER_HOOKED)
def test_keras_names_minitape_lacks(module_name):
    module = SCRIPT.resolve(module_name)
    assert module is not None, f"{module_name} does not exist"
    assert "__getattr__" in vars(module), f"{module.__name__} has no module __getattr__ hook"
    tf_module = _tf_names.tf_module_name(module.__name__)
    name = sorted(n for kind in ("classes", "functions", "other")
                  for n in DATA["modules"][tf_module][kind] if not hasattr(module, n))[0]
    expected = (rf"^module {re.escape(repr(module.__name__))} has no attribute {name!r}: "
                rf"minitape does not implement {re.escape(tf_module)}\.{name} .*"
                r"docs/tensorflow_coverage\.md")
    with pytest.raises(AttributeError, match=expected):
        getattr(module, name)
    assert not hasattr(module, name)
    # A name TensorFlow lacks gets Python's message and a did-you-mean, not "does not implement".
    with pytest.raises(AttributeError) as info:
        getattr(module, "qwxz_not_a_name")
    assert "does not implement" not in str(info.value)


@pytest.mark.parametrize("expr, expected", [
    ("mt.keras.layers.Dens", "Did you mean: 'Dense'?"),
    ("mt.keras.Sequentil", "Did you mean: 'Sequential'?"),
])
def test_keras_typos_get_did_you_mean(expr, expected):
    with pytest.raises(AttributeError) as info:
        eval(expr)
    assert expected in str(info.value)
    assert "does not implement" not in str(info.value)


@pytest.mark.parametrize("expr, expected", [
    ("mt.reduce_summ", "module 'minitape' has no attribute 'reduce_summ'. Did you mean: "
                       "'reduce_sum'?"),
    ("mt.math.reduce_meen", "Did you mean: 'reduce_mean'?"),
    ("mt.nn.reul", "Did you mean: 'relu'?"),
    ("mt.relu", "Did you mean: mt.nn.relu?"),  # not tf.relu: tf.nn.relu
    ("mt.nn.matmul", "Did you mean: mt.matmul?"),
    ("mt.linalg.reduce_sum", "Did you mean: mt.reduce_sum?"),
])
def test_a_name_tensorflow_lacks_gets_did_you_mean(expr, expected):
    with pytest.raises(AttributeError) as info:
        eval(expr)
    message = str(info.value)
    assert expected in message
    assert "does not implement" not in message


def test_a_name_of_another_tensorflow_module():
    name = "conv3d"  # tf.nn.conv3d, not tf.conv3d
    assert name in _tf("tf.nn") and name not in _tf("tf")
    with pytest.raises(AttributeError, match="TensorFlow has tf.nn.conv3d, which minitape does "
                                             "not implement"):
        mt.conv3d


def test_unknown_and_private_names_get_pythons_message():
    with pytest.raises(AttributeError, match=r"^module 'minitape' has no attribute 'qwxz'$"):
        mt.qwxz
    with pytest.raises(AttributeError, match=r"^module 'minitape.nn' has no attribute "
                                             r"'__wrapped__'$"):
        mt.nn.__wrapped__
    assert not hasattr(mt.random, "_private")


def test_the_same_name_in_another_minitape_module_is_named():
    # (Called directly: every such name may be exported by the time this runs.)
    message = str(_tf_names.missing_attribute("minitape.nn", "sigmoid"))
    assert "does not implement tf.nn.sigmoid" in message
    assert "minitape has it as mt.sigmoid." in message
    # tf.random.split splits a seed, tf.split a Tensor: not offered as the same function.
    assert "split" in _tf("tf.random") and hasattr(mt, "split")
    message = str(_tf_names.missing_attribute("minitape.random", "split"))
    assert "does not implement tf.random.split" in message and "mt.split" not in message


def test_lazy_modules_still_load():
    assert mt.viz.__name__ == "minitape.viz"
    assert mt.testing.check_grads is not None


@pytest.mark.parametrize("name, hint", sorted(_tf_names.EQUIVALENTS.items()))
def test_equivalents_are_tensorflow_names_and_name_existing_minitape_functions(name, hint):
    assert any(name in _tf(m) for m in DATA["modules"]), f"{name} is not a TensorFlow name"
    for dotted in re.findall(r"\bmt(?:\.\w+)+", hint):
        obj = mt
        for part in dotted.split(".")[1:]:
            assert hasattr(obj, part), f"the hint for {name} names {dotted}, which is missing"
            obj = getattr(obj, part)


def test_an_equivalent_is_shown_while_the_name_is_missing():
    assert "l2_loss" in _tf("tf.nn")
    if hasattr(mt.nn, "l2_loss"):
        pytest.skip("mt.nn.l2_loss exists now")
    with pytest.raises(AttributeError, match=r"Closest in minitape: mt\.reduce_sum\(x \* x\)"):
        mt.nn.l2_loss
    # (a name that minitape has elsewhere is pointed there instead)
    with pytest.raises(AttributeError, match=r"minitape has it as mt\.keras\.activations\.gelu"):
        mt.nn.gelu


# -- the coverage page -----------------------------------------------------------------------


def _page_sections(text):
    """``{tf_module: (implemented names, missing names)}`` as the page lists them."""
    out = {}
    for section in text.split("\n## `")[1:]:
        module = section[:section.index("`")]
        lists = {}
        for label in ("Implemented", "Missing"):
            m = re.search(rf"^{label} \((\d+)\): (.*)$", section, re.MULTILINE)
            assert m, f"the section of {module} has no '{label} (n): ...' line"
            names = [] if m.group(2) == "none" else re.findall(r"`([^`]+)`", m.group(2))
            assert len(names) == int(m.group(1)), f"{module}: {label} count"
            lists[label] = set(names)
        out[module] = (lists["Implemented"], lists["Missing"])
    return out


def test_the_page_agrees_with_the_package_now():
    text = PAGE.read_text()
    assert f"TensorFlow {DATA['tensorflow_version']}" in text
    listed = _page_sections(text)
    live = SCRIPT.coverage(DATA)
    assert set(listed) == set(live)
    problems = []
    for module, row in live.items():
        have = {n for kind in row["kinds"].values() for n in kind[0]}
        lack = {n for kind in row["kinds"].values() for n in kind[1]}
        page_have, page_lack = listed[module]
        for name in sorted(have & page_lack):
            problems.append(f"{module}.{name} is implemented but the page says missing")
        for name in sorted(lack & page_have):
            problems.append(f"{module}.{name} is missing but the page says implemented")
        for name in sorted((have | lack) ^ (page_have | page_lack)):
            problems.append(f"{module}.{name}: the page and the data file disagree")
    assert not problems, ("docs/tensorflow_coverage.md is out of date (run python "
                          "scripts/tf_names.py page):\n" + "\n".join(problems))


def test_the_page_summary_counts_match_its_sections():
    text = PAGE.read_text()
    listed = _page_sections(text)
    for module, (have, lack) in listed.items():
        row = re.search(rf"^\| \[`{re.escape(module)}`\].* \| (\d+) of (\d+) \|$", text,
                        re.MULTILINE)
        assert row, module
        assert (int(row.group(1)), int(row.group(2))) == (len(have), len(have) + len(lack))


def test_the_page_names_the_most_used_missing_names():
    text = PAGE.read_text()
    live = SCRIPT.coverage(DATA)
    for module, names in SCRIPT.MOST_USED.items():
        unknown = [n for n in names if n not in _tf(module)]
        assert not unknown, f"MOST_USED[{module!r}] has names TensorFlow lacks: {unknown}"
        lack = {n for kind in live[module]["kinds"].values() for n in kind[1]}
        section = text.split(f"\n## `{module}`\n")[1].split("\n## ")[0]
        line = re.search(r"^Most used, missing \(\d+\): (.*)$", section, re.MULTILINE).group(1)
        shown = set(re.findall(r"`([^` ]+)", line))
        assert {n for n in names if n in lack} <= shown, module


def test_the_readme_links_the_page():
    assert "(docs/tensorflow_coverage.md)" in (ROOT / "README.md").read_text()


def test_the_page_is_made_without_tensorflow():
    assert "tensorflow" not in sys.modules
    assert SCRIPT.render(DATA).startswith("# TensorFlow coverage\n")


# -- the script's commands, without TensorFlow -------------------------------------------------


def test_dump_reads_public_names_by_kind(monkeypatch, tmp_path):
    import types

    fake = types.ModuleType("tensorflow")
    fake.__version__ = "2.99.0"
    fake.reduce_sum = lambda x: x
    fake.Variable = type("Variable", (), {})
    fake.float32 = object()
    fake._private = lambda: None
    fake.math = types.ModuleType("tensorflow.math")
    fake.math.sin = lambda x: x
    monkeypatch.setitem(sys.modules, "tensorflow", fake)
    monkeypatch.setitem(sys.modules, "keras", None)  # "no Keras": import keras fails
    monkeypatch.setattr(SCRIPT, "TF_MODULES", ["tf", "tf.math", "tf.nothere"])
    data = SCRIPT.dump()
    assert data["tensorflow_version"] == "2.99.0" and data["keras_version"] is None
    assert data["modules"] == {
        "tf": {"functions": ["reduce_sum"], "classes": ["Variable"], "other": ["float32"],
               "modules": ["math"]},
        "tf.math": {"functions": ["sin"], "classes": [], "other": [], "modules": []},
    }
    path = tmp_path / "names.json"
    SCRIPT.write_data(data, path)
    assert SCRIPT.load_data(path) == data


def test_page_command_writes_and_checks(monkeypatch, tmp_path):
    page = tmp_path / "coverage.md"
    monkeypatch.setattr(SCRIPT, "PAGE", page)
    assert SCRIPT.main(["page", "--check"]) == 1  # no page yet
    assert SCRIPT.main(["page"]) == 0
    assert page.read_text() == SCRIPT.render(DATA)
    assert SCRIPT.main(["page", "--check"]) == 0
    page.write_text(page.read_text().replace("`tensordot`", "`tensordoot`"))
    assert SCRIPT.main(["page", "--check"]) == 1
