"""Dtypes: minitape's dtypes are plain NumPy dtypes.

``mt.float32`` *is* ``np.dtype("float32")``, so ``t.dtype == mt.float32`` and
``t.dtype == np.float32`` both hold. Only floating dtypes carry gradients.
"""

import numpy as np

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")

#: The dtype of a Python float or a list of floats, as in TensorFlow.
DEFAULT_FLOAT = float32
#: The dtype of a Python int or a list of ints, as in TensorFlow.
DEFAULT_INT = int32


def as_dtype(dtype):
    """Turn ``dtype`` (an ``np.dtype``, a NumPy scalar type or a name) into an ``np.dtype``.

    Raises:
        TypeError: if ``dtype`` does not name a dtype.
    """
    if dtype is None or isinstance(dtype, np.dtype):
        return dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"expected a dtype such as mt.float32, got {dtype!r} of type {type(dtype).__name__}"
        ) from None


def is_floating(dtype) -> bool:
    """True for float16, float32 and float64: the dtypes that carry gradients."""
    return dtype.kind == "f"


def check_dtype(dtype, what, arg="dtype"):
    """``as_dtype``, then check it is one minitape computes with: bool, integer or floating.

    Strings, objects, complex numbers and dates are refused with a ``TypeError`` naming
    ``what`` (the function) and ``arg`` (its argument); None stays None.

    >>> check_dtype("float64", "cast")
    dtype('float64')
    """
    dtype = as_dtype(dtype)
    if dtype is not None and dtype.kind not in "biuf":
        extra = "; minitape has no complex numbers" if dtype.kind == "c" else ""
        raise TypeError(f"{what}: {arg}={dtype.name} is not supported: minitape Tensors hold "
                        "bool, integer or floating values (mt.bool, mt.int32, mt.int64, "
                        f"mt.float16, mt.float32, mt.float64){extra}")
    return dtype
