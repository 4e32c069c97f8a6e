"""``mt.version``, as ``tf.version``: the version strings a program prints to say what it runs.

``VERSION`` is minitape's own version (the same as ``mt.__version__``), so a notebook that
prints ``tf.version.VERSION`` says which minitape ran it; ``TENSORFLOW_VERSION`` is the
TensorFlow release whose API minitape follows (``mt.tensorflow_version``).

>>> import minitape as tf
>>> tf.version.VERSION == tf.__version__
True
"""

VERSION = "0.1.0"
TENSORFLOW_VERSION = "2.21.0"
