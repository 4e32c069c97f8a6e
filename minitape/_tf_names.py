"""What ``mt.X`` says when minitape has no ``X``: TensorFlow's names, and the closest of ours.

A learner who runs TensorFlow code with ``import minitape as tf`` meets names minitape does not
have. Python's bare ``AttributeError: module 'minitape' has no attribute 'tensordot'`` does not
say whether minitape lacks the function or the learner mistyped it. So the module-level
``__getattr__`` of ``minitape``, ``mt.math``, ``mt.nn``, ``mt.linalg``, ``mt.random``, the
``mt.keras`` modules (``mt.keras``, ``mt.keras.layers``, ``.models``, ``.losses``,
``.activations``; ``mt.keras.optimizers`` is ``mt.optimizers``, which speaks of
``tf.optimizers``) and the other modules mirroring TensorFlow's (``mt.train``, ``mt.data``,
``mt.errors``, ``mt.saved_model``, ``mt.image``, ``mt.autodiff``, ``mt.config``,
``mt.dtypes``) (Python
calls it only for a name the module does not have) raises the ``AttributeError`` that
``missing_attribute`` builds:

- a public TensorFlow name: minitape does not implement ``tf.X``; the closest minitape function
  where there is one; where the list of what minitape implements is;
- any other name: Python's usual message, with a "did you mean" from minitape's own names.

TensorFlow's public names are data, ``_tf_names.json`` (names only, with the TensorFlow version
they come from), written by ``scripts/tf_names.py dump`` from an installed TensorFlow; the file
is read on the first miss, never by ``import minitape``. ``hasattr(mt, "x")`` stays False for a
missing name: the error is an ``AttributeError``.

>>> import minitape as mt
>>> mt.reduce_summ
Traceback (most recent call last):
...
AttributeError: module 'minitape' has no attribute 'reduce_summ'. Did you mean: 'reduce_sum'?
"""

from __future__ import annotations

import __future__
import difflib
import functools
import json
import sys
import types
from pathlib import Path

DATA = Path(__file__).with_name("_tf_names.json")
COVERAGE_PAGE = "docs/tensorflow_coverage.md"

# minitape submodules that did-you-mean may suggest besides the ones mirroring a TensorFlow
# module (``mt.math`` for ``tf.math``, ...): the rest (``tape``, ``ops``, ...) are the engine.
_OTHER_PUBLIC_MODULES = ("minitape.layers", "minitape.viz", "minitape.testing")

# Hand-kept: TensorFlow names minitape lacks that a few minitape calls replace. Each hint is
# shown only while the name is missing; tests/test_tf_names.py checks that every ``mt.``
# name in a hint exists.
EQUIVALENTS = {
    "reduce_all": "mt.reduce_min(mt.cast(x, mt.int32)) > 0",
    "reduce_any": "mt.reduce_max(mt.cast(x, mt.int32)) > 0",
    "reduce_euclidean_norm": "mt.norm(x, axis=axis)",
    "count_nonzero": "mt.reduce_sum(mt.cast(mt.not_equal(x, 0), mt.int32))",
    "add_n": "mt.reduce_sum(mt.stack(inputs), axis=0)",
    "truediv": "mt.divide(x, y)",
    "softsign": "x / (1 + mt.abs(x))",
    "log_sigmoid": "-mt.nn.softplus(-x)",
    "is_nan": "mt.not_equal(x, x)",
    "relu6": "mt.clip_by_value(x, 0.0, 6.0)",
    "silu": "x * mt.sigmoid(x)",
    "swish": "x * mt.sigmoid(x)",
    "gelu": "0.5 * x * (1 + mt.math.erf(x / 2 ** 0.5))",
    "l2_loss": "mt.reduce_sum(x * x) / 2",
    "bias_add": "x + bias",
    "sigmoid_cross_entropy_with_logits": "mt.nn.softplus(logits) - labels * logits",
    "trace": "mt.einsum('...ii->...', a)",
    "diag_part": "mt.einsum('...ii->...i', a)",
    "adjoint": "mt.linalg.matrix_transpose(a) (minitape's matrices are real)",
    "truncated_normal": "mt.random.normal (not truncated)",
    "tensor_scatter_nd_update": "assigning into a slice of a Variable, v[index].assign(value), "
                                "or mt.where",
    "print": "Python's print(x)",
    "DType": "NumPy's dtypes (mt.float32 is np.dtype('float32'))",
    "as_dtype": "np.dtype",
    "gradients": "mt.GradientTape (tf.gradients is TensorFlow 1's graph API)",
    "numpy_function": "mt.primitive (a NumPy function as a new op)",
    "py_function": "mt.primitive (a NumPy function as a new op)",
}


# What minitape will not do: TensorFlow's families of names that lie outside what minitape
# exists for (the tape, the ops on numbers and their gradients). Asking for one of them fails
# at once with the family's reason and where to read more; ``scripts/tf_names.py page``
# writes the same list into the coverage page's section "What minitape will not do".
# Each family: (title, why minitape leaves it out, what to do instead).
OUT_OF_SCOPE_FAMILIES = {
    "text": ("Text tensors (`tf.string`, `tf.strings`)",
             "minitape's Tensors hold numbers, the values gradients flow through; text has no "
             "gradient",
             "turn text into numbers (token ids, one-hot vectors) in Python before it reaches "
             "minitape"),
    "sparse": ("Sparse tensors (`tf.sparse`, `tf.SparseTensor`)",
               "minitape's Tensors are dense NumPy arrays, so that every op is one readable "
               "NumPy call",
               "use a dense Tensor that is mostly zeros"),
    "ragged": ("Ragged tensors (`tf.ragged`, `tf.RaggedTensor`)",
               "a Tensor is one rectangular NumPy array",
               "pad the rows to one length (mt.pad) or keep a Python list of Tensors"),
    "sets": ("Set operations (`tf.sets`)",
             "they are not differentiable and teach nothing about the tape",
             "use Python sets or NumPy (np.intersect1d, np.union1d)"),
    "queue": ("Queues (`tf.queue`)",
              "they feed TensorFlow 1's graph input pipelines, which minitape does not have",
              "use Python's queue module or mt.data.Dataset"),
    "files": ("Record and text-file datasets (`tf.data.TFRecordDataset`, "
              "`tf.data.TextLineDataset`, `tf.data.FixedLengthRecordDataset`)",
              "TFRecord is TensorFlow's file format and a line of text is a string Tensor; "
              "minitape reads no files into its pipelines",
              "read the file with Python, NumPy or pandas and use "
              "mt.data.Dataset.from_tensor_slices"),
    "graphs": ("Graph internals of a traced function (`concrete_function.graph`, "
               "`function_def`, `tf.Graph`)",
               "mt.function runs the Python function eagerly: there is no traced graph to "
               "inspect (the tape is minitape's record of a computation; draw it with "
               "mt.viz.draw_tape)",
               "record the computation on a GradientTape and draw it with mt.viz.draw_tape"),
}
OUT_OF_SCOPE = {
    "tf.strings": "text", "tf.string": "text", "tf.dtypes.string": "text",
    "tf.sparse": "sparse", "tf.SparseTensor": "sparse", "tf.SparseTensorSpec": "sparse",
    "tf.ragged": "ragged", "tf.RaggedTensor": "ragged", "tf.RaggedTensorSpec": "ragged",
    "tf.sets": "sets", "tf.queue": "queue",
    "tf.data.TFRecordDataset": "files", "tf.data.TextLineDataset": "files",
    "tf.data.FixedLengthRecordDataset": "files", "tf.Graph": "graphs",
}


def out_of_scope_message(what: str, family: str) -> str:
    """The sentence for ``what`` (``"tf.strings"``, ``"tf.constant('café')"``...), which
    belongs to an out-of-scope ``family`` (a key of ``OUT_OF_SCOPE_FAMILIES``)."""
    title, why, instead = OUT_OF_SCOPE_FAMILIES[family]
    return (f"{what} is outside minitape's scope, and minitape will not implement it: {why}. "
            f"Instead, {instead}. See \"What minitape will not do\" in {COVERAGE_PAGE} in "
            "minitape's repository")


def minitape_module_name(tf_module: str) -> str:
    """``"tf"`` -> ``"minitape"``, ``"tf.keras.layers"`` -> ``"minitape.keras.layers"``."""
    return "minitape" + tf_module[len("tf"):]


def tf_module_name(module_name: str) -> str:
    """``"minitape.math"`` -> ``"tf.math"`` (the inverse of ``minitape_module_name``)."""
    return "tf" + module_name[len("minitape"):]


def _short(module_name: str) -> str:
    return "mt" + module_name[len("minitape"):]


@functools.lru_cache(maxsize=None)
def tensorflow_names():
    """``(tensorflow_version, {tf_module: frozenset of its public names})`` from the data file."""
    data = json.loads(DATA.read_text())
    modules = {m: frozenset(n for names in kinds.values() for n in names)
               for m, kinds in data["modules"].items()}
    return data["tensorflow_version"], modules


def _public_names(module) -> list:
    """The names a learner may use in ``module``: not private, not an engine submodule."""
    mirrored = _mirrored_modules()
    names = list(getattr(module, "_LAZY_MODULES", ()))
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, __future__._Feature):
            continue
        if isinstance(value, types.ModuleType) and not (
                value.__name__ in mirrored or value.__name__ in _OTHER_PUBLIC_MODULES):
            continue
        names.append(name)
    return names


def _mirrored_modules() -> list:
    """The loaded minitape modules that mirror a TensorFlow module, ``minitape`` first."""
    try:
        tf_modules = tensorflow_names()[1]
    except (OSError, ValueError, KeyError):
        tf_modules = {"tf": ()}
    return [m for m in map(minitape_module_name, tf_modules) if m in sys.modules]


def _elsewhere(name: str, module_name: str, same_function: bool = False) -> list:
    """``mt.<module>.<name>`` for every other loaded minitape namespace that has ``name``.

    With ``same_function`` (a TensorFlow name: ``tf.sin`` is ``tf.math.sin``), ``mt.random``
    is left out on either side: ``tf.random.split`` splits a seed, ``tf.split`` a Tensor.
    """
    if same_function and module_name == "minitape.random":
        return []
    return [f"{_short(m)}.{name}" for m in _mirrored_modules()
            if m != module_name and not (same_function and m == "minitape.random")
            and name in _public_names(sys.modules[m])]


def _similar(name: str, module_name: str, cutoff: float) -> list:
    """Close matches for ``name`` among the public names of ``module_name``."""
    module = sys.modules.get(module_name)
    if module is None:
        return []
    return difflib.get_close_matches(name, _public_names(module), 1, cutoff)


def missing_attribute(module_name: str, name: str) -> AttributeError:
    """The ``AttributeError`` for ``<module_name>.<name>``, which Python did not find.

    Args:
        module_name: the minitape module asked (``"minitape"``, ``"minitape.nn"``, ...).
        name: the missing attribute.

    Returns:
        An ``AttributeError`` (for the module's ``__getattr__`` to raise). Its message says,
        for a public TensorFlow name, that minitape does not implement it, with the closest
        minitape function and the coverage page; for a name of a family minitape will not
        implement (``OUT_OF_SCOPE``: ``tf.strings``, ``tf.sparse``, ...), that it is outside
        minitape's scope, why, and what to do instead; for any other name, Python's usual
        message with a "did you mean". Private names (``_x``, ``__wrapped__``, ...), which
        tools probe for, get Python's message without any lookup.
    """
    message = f"module {module_name!r} has no attribute {name!r}"
    if name.startswith("_"):
        return AttributeError(message)
    family = OUT_OF_SCOPE.get(f"{tf_module_name(module_name)}.{name}")
    if family is not None:
        return AttributeError(f"{message}: "
                              + out_of_scope_message(f"{tf_module_name(module_name)}.{name}",
                                                     family))
    try:
        version, tf_modules = tensorflow_names()
    except (OSError, ValueError, KeyError):  # the data file is missing or broken
        version, tf_modules = None, {}
    tf_module = tf_module_name(module_name)
    if name in tf_modules.get(tf_module, ()):
        return AttributeError(
            f"{message}: minitape does not implement {tf_module}.{name} (TensorFlow {version} "
            f"has it; minitape implements the part of TensorFlow that teaching automatic "
            f"differentiation needs).{_closest(name, module_name)} What minitape implements, "
            f"module by module: {COVERAGE_PAGE} in minitape's repository.")
    return AttributeError(message + _did_you_mean(name, module_name, tf_modules))


def _closest(name: str, module_name: str) -> str:
    elsewhere = _elsewhere(name, module_name, same_function=True)
    if elsewhere:
        return f" minitape has it as {elsewhere[0]}."
    if name in EQUIVALENTS:
        return f" Closest in minitape: {EQUIVALENTS[name]}."
    similar = _similar(name, module_name, 0.8)
    if similar:
        return f" The nearest minitape name is {_short(module_name)}.{similar[0]} (check that it " \
               "does what you need)."
    return ""


def _did_you_mean(name: str, module_name: str, tf_modules: dict) -> str:
    # The surest first: the very name elsewhere in minitape, then a near name here, then the
    # very name elsewhere in TensorFlow, then a near name elsewhere in minitape.
    elsewhere = _elsewhere(name, module_name)
    if elsewhere:
        return f". Did you mean: {elsewhere[0]}?"
    similar = _similar(name, module_name, 0.7)
    if similar:
        return f". Did you mean: {similar[0]!r}?"
    tf_homes = [m for m, names in tf_modules.items() if name in names]
    if tf_homes:
        return (f". TensorFlow has {tf_homes[0]}.{name}, which minitape does not implement "
                f"(see {COVERAGE_PAGE} in minitape's repository)")
    for other in _mirrored_modules():
        if other != module_name:
            similar = _similar(name, other, 0.8)
            if similar:
                return f". Did you mean: {_short(other)}.{similar[0]}?"
    return ""
