"""TensorFlow's public names: dump them once, then write the coverage page from them.

minitape implements a teaching subset of TensorFlow. Two things need TensorFlow's own list of
public names: the message of ``mt.X`` for a name minitape lacks ("minitape does not implement
tf.X", see ``minitape/_tf_names.py``), and the page ``docs/tensorflow_coverage.md``, which says
module by module how much of TensorFlow minitape has. The list is data committed with minitape
(``minitape/_tf_names.json``: names only, with the TensorFlow version they came from), so
neither needs TensorFlow installed.

Commands (run from the repository's root):

    python scripts/tf_names.py dump          # needs TensorFlow; writes minitape/_tf_names.json
    python scripts/tf_names.py page          # writes docs/tensorflow_coverage.md
    python scripts/tf_names.py page --check  # exit status 1 if the page is out of date

``dump`` is run rarely, with a Python that has TensorFlow and never in minitape's own
environment, e.g.::

    python3 -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu
    /tmp/tfenv/bin/python scripts/tf_names.py dump

``page`` imports the minitape of this tree (not TensorFlow) and counts a TensorFlow name
``tf.<module>.<name>`` as implemented when ``mt.<module>.<name>`` exists *when the script
runs*: re-run it after adding ops. ``tests/test_tf_names.py`` fails when the page and the
package disagree.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # ``page`` reads the minitape of this tree
    sys.path.insert(0, str(ROOT))
DATA = ROOT / "minitape" / "_tf_names.json"
PAGE = ROOT / "docs" / "tensorflow_coverage.md"

# The TensorFlow modules whose names are dumped, in the order the page shows them: the ones a
# learner of the guides and textbooks meets, Keras included (``tf.keras`` is Keras 3).
TF_MODULES = [
    "tf", "tf.math", "tf.nn", "tf.linalg", "tf.random", "tf.image", "tf.autodiff", "tf.dtypes",
    "tf.errors", "tf.train", "tf.data", "tf.saved_model", "tf.nest", "tf.config", "tf.debugging",
    "tf.signal", "tf.strings", "tf.sparse", "tf.io", "tf.summary", "tf.bitwise",
    "tf.optimizers", "tf.losses", "tf.metrics", "tf.initializers",
    "tf.keras", "tf.keras.layers", "tf.keras.models", "tf.keras.optimizers", "tf.keras.losses",
    "tf.keras.activations", "tf.keras.initializers", "tf.keras.metrics", "tf.keras.callbacks",
    "tf.keras.regularizers", "tf.keras.utils",
]

KINDS = ("functions", "classes", "other", "modules")

# The most used names, kept by hand (the page lists those minitape lacks first): what the
# TensorFlow guides (tensors, variables, autodiff, training loops, Keras basics) and the first
# chapters of "Dive into Deep Learning" (TensorFlow edition: preliminaries, linear and MLP
# models, convolutions) call. Names TensorFlow does not have are ignored.
MOST_USED = {
    "tf": [
        "constant", "Variable", "Tensor", "GradientTape", "function", "convert_to_tensor",
        "cast", "reshape", "transpose", "concat", "stack", "unstack", "split", "squeeze",
        "expand_dims", "tile", "pad", "gather", "gather_nd", "boolean_mask", "where",
        "one_hot", "range", "linspace", "zeros", "ones", "zeros_like", "ones_like", "fill",
        "eye", "matmul", "tensordot", "einsum", "reduce_sum", "reduce_mean", "reduce_max",
        "reduce_min", "reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp",
        "argmax", "argmin", "argsort", "sort", "cumsum", "norm", "exp", "sqrt",
        "square", "abs", "maximum", "minimum", "clip_by_value", "clip_by_norm", "add",
        "subtract", "multiply", "divide", "pow", "sigmoid", "tanh", "equal", "greater",
        "less", "shape", "size", "rank", "identity", "stop_gradient", "custom_gradient",
        "RegisterGradient", "meshgrid", "repeat", "reverse", "roll", "unique",
        "sequence_mask", "scatter_nd", "tensor_scatter_nd_update", "broadcast_to",
        "float32", "float64", "int32", "int64", "bool", "newaxis", "print", "Module",
        "keras", "data", "train", "random", "math", "nn", "linalg",
    ],
    "tf.math": [
        "sin", "cos", "tanh", "sigmoid", "exp", "log", "log1p", "sqrt", "square", "abs",
        "reduce_sum", "reduce_mean", "reduce_max", "reduce_std", "reduce_variance",
        "reduce_logsumexp", "argmax", "argmin", "cumsum", "top_k", "softplus", "erf",
        "reciprocal", "equal", "greater", "less", "logical_and", "logical_or", "logical_not",
        "is_nan", "is_finite", "rsqrt", "pow", "maximum", "minimum", "in_top_k",
        "count_nonzero", "divide_no_nan", "l2_normalize",
    ],
    "tf.nn": [
        "relu", "sigmoid", "tanh", "softmax", "log_softmax", "elu", "leaky_relu", "softplus",
        "gelu", "silu", "relu6", "dropout", "conv2d", "max_pool2d", "avg_pool2d",
        "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
        "sigmoid_cross_entropy_with_logits", "l2_loss", "moments", "batch_normalization",
        "bias_add", "embedding_lookup",
    ],
    "tf.linalg": [
        "matmul", "matvec", "inv", "det", "solve", "norm", "eye", "matrix_transpose",
        "tensordot", "einsum", "trace", "diag", "diag_part", "cholesky", "qr", "svd", "eigh",
        "lstsq", "band_part", "logdet",
    ],
    "tf.random": [
        "normal", "uniform", "set_seed", "truncated_normal", "shuffle", "categorical",
        "Generator", "stateless_normal",
    ],
    "tf.keras": ["Sequential", "Model", "Input", "layers", "optimizers", "losses", "models"],
    "tf.keras.layers": [
        "Dense", "Conv2D", "MaxPooling2D", "AveragePooling2D", "Flatten", "Dropout",
        "BatchNormalization", "Activation", "Embedding", "Layer", "Input", "ReLU", "Reshape",
        "GlobalAveragePooling2D", "LSTM", "GRU", "SimpleRNN", "LayerNormalization",
    ],
    "tf.keras.optimizers": ["SGD", "Adam", "RMSprop", "Nadam", "Adagrad", "Adamax", "AdamW",
                            "Optimizer", "get"],
    "tf.keras.losses": [
        "MeanSquaredError", "SparseCategoricalCrossentropy", "CategoricalCrossentropy",
        "BinaryCrossentropy", "Huber", "MeanAbsoluteError",
    ],
    "tf.keras.activations": ["relu", "sigmoid", "softmax", "tanh", "gelu"],
    "tf.keras.initializers": ["GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform",
                              "RandomNormal", "RandomUniform", "TruncatedNormal", "Zeros",
                              "Ones", "Constant", "Identity", "Orthogonal"],
    "tf.keras.metrics": ["Mean", "Accuracy", "SparseCategoricalAccuracy"],
    "tf.data": ["Dataset"],
    "tf.train": ["Checkpoint", "CheckpointManager"],
    "tf.errors": ["InvalidArgumentError"],
    "tf.saved_model": ["save", "load"],
}


# -- dump: TensorFlow -> minitape/_tf_names.json ----------------------------------------------


def _kind(obj) -> str:
    if inspect.ismodule(obj) or type(obj).__name__.endswith("LazyLoader"):
        return "modules"
    if inspect.isclass(obj):
        return "classes"
    if callable(obj):
        return "functions"
    return "other"


def dump() -> dict:
    """Read the public names of ``TF_MODULES`` from the installed TensorFlow (names only)."""
    import tensorflow as tf  # noqa: F401 (only this command needs it)
    try:
        import keras
        keras_version = keras.__version__
    except ImportError:
        keras_version = None
    modules = {}
    for path in TF_MODULES:
        obj = tf
        try:
            for part in path.split(".")[1:]:
                obj = getattr(obj, part)
        except AttributeError:
            print(f"skipped {path}: not in this TensorFlow", file=sys.stderr)
            continue
        names = {kind: [] for kind in KINDS}
        for name in sorted(dir(obj)):
            if name.startswith("_"):
                continue
            try:
                kind = _kind(getattr(obj, name))
            except Exception:  # a lazy attribute that fails to load: still a public name
                kind = "other"
            names[kind].append(name)
        modules[path] = names
    return {
        "about": "The public names of TensorFlow modules (names only), for minitape's messages "
                 "and docs/tensorflow_coverage.md. Written by: python scripts/tf_names.py dump",
        "tensorflow_version": tf.__version__,
        "keras_version": keras_version,
        "modules": modules,
    }


def write_data(data: dict, path: Path = DATA) -> None:
    path.write_text(json.dumps(data, indent=1) + "\n")


# -- page: minitape/_tf_names.json + the live minitape -> docs/tensorflow_coverage.md ----------


def coverage(data: dict) -> dict:
    """For each TensorFlow module: its minitape module and which names minitape has now.

    Returns ``{tf_module: {"minitape": "minitape.math", "exists": bool, "kinds": {kind:
    (implemented, missing)}}}``; submodules are left out of the counts (each has its own row).
    """
    from minitape._tf_names import minitape_module_name

    out = {}
    for tf_module, names in data["modules"].items():
        mt_name = minitape_module_name(tf_module)
        module = resolve(mt_name)
        kinds = {}
        for kind in KINDS[:3]:
            have = [n for n in names[kind] if module is not None and hasattr(module, n)]
            kinds[kind] = (have, [n for n in names[kind] if n not in have])
        out[tf_module] = {"minitape": mt_name, "exists": module is not None, "kinds": kinds}
    return out


def _short(mt_name: str) -> str:
    return "mt" + mt_name[len("minitape"):]


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def render(data: dict) -> str:
    """The text of ``docs/tensorflow_coverage.md``."""
    from minitape._tf_names import OUT_OF_SCOPE

    cov = coverage(data)
    version = data["tensorflow_version"]
    keras = data.get("keras_version")
    lines = [
        "# TensorFlow coverage",
        "",
        "minitape implements the part of TensorFlow that teaching automatic differentiation "
        "needs. This page says, module by module, which of TensorFlow's public names minitape "
        f"has: `tf.X` of TensorFlow {version}" + (f" (with Keras {keras})" if keras else "")
        + " is `mt.X` in minitape (`import minitape as mt`). Asking minitape for a TensorFlow "
        "name it lacks raises an `AttributeError` that says so and names the closest minitape "
        "function, if there is one.",
        "",
        "Generated by `python scripts/tf_names.py page` from `minitape/_tf_names.json` (the "
        "names only, dumped from TensorFlow by `python scripts/tf_names.py dump`) and the "
        "minitape of this repository; do not edit it by hand. `tests/test_tf_names.py` fails "
        "when a name is implemented but listed here as missing, or the reverse. The "
        "\"most used\" names are a hand-kept list (`MOST_USED` in the script): what the "
        "TensorFlow guides and the first chapters of *Dive into Deep Learning* (TensorFlow "
        "edition) call.",
        "",
        "Counts leave out submodules (each has its own section); \"other\" is constants such "
        "as `tf.float32`.",
        "",
        "## Summary",
        "",
        "| TensorFlow | minitape | functions | classes | other | all |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for tf_module, row in cov.items():
        cells = []
        total_have = total = 0
        for kind in KINDS[:3]:
            have, missing = row["kinds"][kind]
            cells.append(f"{len(have)} of {len(have) + len(missing)}")
            total_have += len(have)
            total += len(have) + len(missing)
        mt_cell = f"`{_short(row['minitape'])}`" if row["exists"] else "—"
        anchor = tf_module.replace(".", "")
        lines.append(f"| [`{tf_module}`](#{anchor}) | {mt_cell} | " + " | ".join(cells)
                     + f" | {total_have} of {total} |")
    lines += out_of_scope_section()
    for tf_module, row in cov.items():
        have = sorted(n for kind in KINDS[:3] for n in row["kinds"][kind][0])
        missing = sorted(n for kind in KINDS[:3] for n in row["kinds"][kind][1])
        modules = data["modules"][tf_module]["modules"]
        most_used = [n for n in MOST_USED.get(tf_module, []) if n in missing]
        most_used_modules = [n for n in MOST_USED.get(tf_module, []) if n in modules
                             and not _module_exists(f"{row['minitape']}.{n}")]
        lines += ["", f"## `{tf_module}`", ""]
        if row["exists"]:
            lines.append(f"minitape: `{_short(row['minitape'])}`, {len(have)} of "
                         f"{len(have) + len(missing)} names.")
        else:
            lines.append(f"minitape has no `{_short(row['minitape'])}` module: none of its "
                         f"{len(missing)} names.")
        if tf_module in OUT_OF_SCOPE:
            lines[-1] += (" Out of minitape's scope: see [What minitape will not do]"
                          "(#what-minitape-will-not-do).")
        if tf_module in MOST_USED:
            shown = [f"`{n}`" for n in most_used] + [f"`{n}` (module)" for n in most_used_modules]
            lines += ["", f"Most used, missing ({len(shown)}): " + (", ".join(shown) or "none")]
        lines += ["", f"Implemented ({len(have)}): {_names(have)}"]
        lines += ["", "<details>", f"<summary>Missing ({len(missing)})</summary>", "",
                  f"Missing ({len(missing)}): {_names(missing)}", "", "</details>"]
    return "\n".join(lines) + "\n"


def out_of_scope_section() -> list:
    """The lines of the section "What minitape will not do", from ``minitape/_tf_names.py``'s
    ``OUT_OF_SCOPE_FAMILIES`` (the same words as the errors minitape raises for them)."""
    from minitape._tf_names import OUT_OF_SCOPE, OUT_OF_SCOPE_FAMILIES

    lines = [
        "", "## What minitape will not do", "",
        "minitape exists to teach the tape, the ops on numbers and their gradients. These "
        "families of TensorFlow lie outside that, and minitape will not implement them; asking "
        "for one (`mt.strings`, `mt.constant(\"café\")`, `mt.data.TextLineDataset`, "
        "`concrete_function.graph`, ...) fails at once with an error that says so, why, and "
        "what to do instead, and points here.", "",
        "| family | why not | instead | names refused |",
        "| --- | --- | --- | --- |",
    ]
    for key, (title, why, instead) in OUT_OF_SCOPE_FAMILIES.items():
        names = [f"`{n}`" for n, family in OUT_OF_SCOPE.items() if family == key]
        if key == "text":
            names.append("`tf.constant` of text")
        if key == "graphs":
            names += ["`concrete_function.graph`", "`concrete_function.function_def`"]
        lines.append(f"| {title} | {why}. | {instead}. | {', '.join(names)} |")
    return lines


def resolve(mt_name: str):
    """The minitape module ``mt_name`` (``"minitape.keras.optimizers"``) as a learner reaches
    it, attribute by attribute from ``import minitape`` (a subpackage not imported yet is
    imported), or None when minitape has no such module."""
    module = importlib.import_module("minitape")
    for part in mt_name.split(".")[1:]:
        try:
            module = getattr(module, part)
        except AttributeError:
            try:
                module = importlib.import_module(f"{module.__name__}.{part}")
            except ImportError:
                return None
        if not isinstance(module, types.ModuleType):
            return None
    return module


def _module_exists(mt_name: str) -> bool:
    return resolve(mt_name) is not None


def load_data(path: Path = DATA) -> dict:
    return json.loads(path.read_text())


def _rel(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (for messages)."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("dump", help="read TensorFlow's public names (needs TensorFlow) into "
                                f"{_rel(DATA)}")
    page = sub.add_parser("page", help=f"write {_rel(PAGE)} from the names and the "
                                       "minitape of this tree")
    page.add_argument("--check", action="store_true",
                      help="do not write: exit with status 1 if the page is out of date")
    args = parser.parse_args(argv)
    if args.command == "dump":
        data = dump()
        write_data(data)
        counts = {m: sum(len(v) for v in names.values()) for m, names in data["modules"].items()}
        print(f"TensorFlow {data['tensorflow_version']}: {sum(counts.values())} names in "
              f"{len(counts)} modules -> {_rel(DATA)}")
        return 0
    text = render(load_data())
    if args.check:
        if PAGE.exists() and PAGE.read_text() == text:
            print(f"{_rel(PAGE)} is up to date")
            return 0
        print(f"{_rel(PAGE)} is out of date: run python scripts/tf_names.py page")
        return 1
    PAGE.write_text(text)
    print(f"wrote {_rel(PAGE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
