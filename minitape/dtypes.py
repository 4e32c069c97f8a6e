"""Dtypes: minitape's dtypes are plain NumPy dtypes.

``mt.float32`` *is* ``np.dtype("float32")``, so ``t.dtype == mt.float32`` and
``t.dtype == np.float32`` both hold. Only floating dtypes carry gradients (complex values
compute but are not differentiated).
"""

import numpy as np

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
# TensorFlow's other integer dtypes (tf.uint8 holds image pixels): NumPy's, like the rest.
int8 = np.dtype("int8")
int16 = np.dtype("int16")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
bool_ = np.dtype("bool")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

#: The dtype of a Python float or a list of floats, as in TensorFlow.
DEFAULT_FLOAT = float32
#: The dtype of a Python int or a list of ints, as in TensorFlow.
DEFAULT_INT = int32
#: The dtype of a Python complex or a list holding one, as in TensorFlow.
DEFAULT_COMPLEX = complex128


# TensorFlow's ``DataType`` enum numbers (``types.proto``): ``tf.as_dtype(1)`` is tf.float32,
# so ``tf.zeros(1, 1)`` (the dtype given as a second positional 1, as in a Keras guide) is a
# float32 Tensor of shape (1,). Only the numbers of the dtypes minitape has.
_TF_ENUM = {1: float32, 2: float64, 3: int32, 4: uint8, 5: int16, 6: int8, 8: complex64,
            9: int64, 10: bool_, 17: uint16, 18: complex128, 19: float16, 22: uint32,
            23: uint64}


def as_dtype(dtype):
    """Turn ``dtype`` into an ``np.dtype``, as ``tf.as_dtype``.

    ``dtype``: an ``np.dtype``, a NumPy scalar type, a name (``"float32"``), or one of
    TensorFlow's ``DataType`` enum numbers (``1`` is float32, ``2`` float64, ``3`` int32,
    ``9`` int64, ``10`` bool, ...), which ``tf.as_dtype`` accepts too.

    >>> as_dtype(1)
    dtype('float32')

    Raises:
        TypeError: if ``dtype`` does not name a dtype.
    """
    if dtype is None or isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, (bool, np.bool_)):
        if int(dtype) in _TF_ENUM:
            return _TF_ENUM[int(dtype)]
        raise TypeError(f"expected a dtype such as mt.float32, got the int {dtype!r}: not one "
                        "of TensorFlow's DataType numbers that minitape has (1 float32, "
                        "2 float64, 3 int32, 9 int64, 10 bool, ...)")
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"expected a dtype such as mt.float32, got {dtype!r} of type {type(dtype).__name__}"
        ) from None


# TensorFlow's own names of dtypes in its messages ("a float tensor", "a double tensor").
_TF_MESSAGE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def tf_mismatch_message(op_type, expected, got, index=1):
    """TensorFlow's words for a dtype mismatch: ``cannot compute AddV2 as input
    #1(zero-based) was expected to be a float tensor but is a double tensor [Op:AddV2]``."""
    def name(dtype):
        return _TF_MESSAGE_NAMES.get(dtype.name, dtype.name)
    return (f"cannot compute {op_type} as input #{index}(zero-based) was expected to be a "
            f"{name(expected)} tensor but is a {name(got)} tensor [Op:{op_type}]")


def is_floating(dtype) -> bool:
    """True for float16, float32 and float64: the dtypes that carry gradients."""
    return dtype.kind == "f"


def complex_gradient_error(what, detail=""):
    """The ``TypeError`` for a gradient asked of, or through, a complex Tensor.

    TensorFlow differentiates complex functions (with the conjugate convention of
    ``tf.GradientTape``); minitape computes with complex numbers but does not differentiate
    them, and says so rather than returning a silent ``None``.
    """
    return TypeError(
        f"{what}: minitape does not differentiate complex numbers{detail}. Complex Tensors "
        "(mt.complex64, mt.complex128) can be created, printed and used in arithmetic, but "
        "no gradient flows through them; differentiate the real and imaginary parts as two "
        "float Tensors instead.")


def check_dtype(dtype, what, arg="dtype"):
    """``as_dtype``, then check it is one minitape computes with: bool, integer, floating or
    complex.

    Strings, objects and dates are refused with a ``TypeError`` naming ``what`` (the
    function) and ``arg`` (its argument); None stays None. (Complex dtypes are accepted here;
    gradients through them are not: see ``complex_gradient_error``.)

    >>> check_dtype("float64", "cast")
    dtype('float64')
    >>> check_dtype("complex64", "cast")
    dtype('complex64')
    """
    dtype = as_dtype(dtype)
    if dtype is not None and dtype.kind not in "biufc":
        raise TypeError(f"{what}: {arg}={dtype.name} is not supported: minitape Tensors hold "
                        "bool, integer or floating values (mt.bool, mt.int32, mt.int64, "
                        "mt.uint8, ..., mt.float16, mt.float32, mt.float64) or complex ones "
                        "(mt.complex64, mt.complex128); text (tf.string) is out of minitape's "
                        "scope (see docs/tensorflow_coverage.md)")
    return dtype


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
