"""``mt.image``: ``adjust_contrast`` (as ``tf.image``), whose gradient is not registered;
``resize`` and ``resize_with_pad`` (bilinear and nearest, TensorFlow 2's rules), which "Dive
into Deep Learning" uses on Fashion-MNIST."""

from .ops.image_ops import ResizeMethod, adjust_contrast, resize, resize_with_pad  # noqa: F401


def __getattr__(name):
    # Only for a name this module lacks: say whether TensorFlow has it (see ``_tf_names``).
    if name.startswith("_"):  # ``__path__`` (asked by ``from .x import y``), ...
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._tf_names import missing_attribute
    raise missing_attribute(__name__, name)
